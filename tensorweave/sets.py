"""tf.sets namespace: size, intersection, union and difference of the sets in the last dimension
of dense or sparse tensors (ops/sparse/sets.py)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
