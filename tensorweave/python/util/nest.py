"""`from tensorweave.python.util import nest`, as TF1 programs import tensorflow.python.util.nest
(framework/nest.py)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
