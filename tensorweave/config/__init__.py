"""tf.config: the process's devices and the placement default of Sessions (client/device_config.py)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
