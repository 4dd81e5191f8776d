"""tensorweave.python.util: nest, as under tensorflow.python.util."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
