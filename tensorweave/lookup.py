"""tf.lookup namespace (TF1.15 names): the tables of tensorweave/ops/lookup/tables.py."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
