"""Chrome-trace timelines of a traced step (tensorflow.python.client.timeline)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
