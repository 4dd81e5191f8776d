"""tf.sparse namespace (TF1.15 names): SparseTensor and the ops of tensorweave/ops/sparse/."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
