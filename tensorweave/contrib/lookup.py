"""tf.contrib.lookup (TF1.15 names): the tables of tensorweave/ops/lookup/ (HashTable is
tf.lookup.StaticHashTable; MutableHashTable and MutableDenseHashTable; vocabulary tables)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
