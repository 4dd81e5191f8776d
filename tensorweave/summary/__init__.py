"""tf.summary: summary ops (each outputs a serialized Summary protocol buffer), merging, and the
event-file writers TensorBoard reads."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
