"""Mirror of tensorflow.python.client for `from tensorweave.python.client import timeline`."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
