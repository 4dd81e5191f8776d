"""tf.io.gfile: the lower-case spellings of tf.gfile's functions."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
