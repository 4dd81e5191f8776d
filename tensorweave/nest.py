"""tf.nest namespace: nested structures of lists, tuples, namedtuples and dicts (framework/nest.py)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
