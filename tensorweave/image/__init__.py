"""tf.image: the image ops (ops/image/)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
