"""tf.data.experimental: the constants TF1 programs pass to tf.data."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
