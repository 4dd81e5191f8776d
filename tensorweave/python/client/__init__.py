"""tensorweave.python.client: timeline, as under tensorflow.python.client."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
