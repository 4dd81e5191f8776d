"""tf.math namespace: the TF1 `tf.math.*` names of the math op family."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
