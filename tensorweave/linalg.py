"""tf.linalg namespace (TF1 names): products, decompositions, solvers, functions of matrices and
the diagonal/band helpers."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
