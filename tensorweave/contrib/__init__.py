"""The few tf.contrib names TF1 programs commonly use, without tf.contrib itself."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
