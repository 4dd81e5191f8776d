"""tf.sparse namespace (TF1.15 names): SparseTensor and the ops of tensorweave/ops/sparse/."""
from __future__ import annotations

from tensorweave.framework.sparse_tensor import SparseTensor  # noqa: F401
from tensorweave.ops.math.segment import (  # noqa: F401
    sparse_segment_mean as segment_mean, sparse_segment_sqrt_n as segment_sqrt_n, sparse_segment_sum as segment_sum)
from tensorweave.ops.sparse.combine import (  # noqa: F401
    sparse_add as add, sparse_concat as concat, sparse_maximum as maximum, sparse_minimum as minimum,
    sparse_slice as slice, sparse_split as split)
from tensorweave.ops.sparse.core import (  # noqa: F401
    from_dense, sparse_expand_dims as expand_dims, sparse_eye as eye, sparse_fill_empty_rows as fill_empty_rows,
    sparse_mask as mask, sparse_merge as merge, sparse_placeholder as placeholder, sparse_reorder as reorder,
    sparse_reset_shape as reset_shape, sparse_reshape as reshape, sparse_retain as retain,
    sparse_tensor_to_dense as to_dense, sparse_to_indicator as to_indicator, sparse_transpose as transpose)
from tensorweave.ops.sparse.math import (  # noqa: F401
    sparse_reduce_max as reduce_max, sparse_reduce_max_sparse as reduce_max_sparse, sparse_reduce_sum as reduce_sum,
    sparse_reduce_sum_sparse as reduce_sum_sparse, sparse_softmax as softmax,
    sparse_tensor_dense_matmul as sparse_dense_matmul)

matmul = sparse_dense_matmul

__all__ = [n for n in dir() if not n.startswith("_") and n != "annotations"]
