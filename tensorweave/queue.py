"""tf.queue namespace (TF 1.15): the queue classes under their tf.queue names."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
