"""tf.contrib.training: the ps load-balancing strategy for replica_device_setter."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
