"""tf.compat: `tf.compat.v1` is the same namespace as `tensorweave` itself."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
