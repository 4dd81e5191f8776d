"""A sliver of tf.keras that TF1 graph programs reach for: regularizers."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
