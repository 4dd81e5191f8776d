"""tf.debugging namespace: the TF1 `tf.debugging.*` checks and Assert."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
