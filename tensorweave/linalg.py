"""tf.linalg namespace: matmul, einsum, tensordot, norm, trace (TF1 names)."""
from __future__ import annotations

from tensorweave.ops.array.core import matrix_transpose  # noqa: F401
from tensorweave.ops.math.clip import global_norm  # noqa: F401
from tensorweave.ops.math.linalg import einsum, matmul, norm, tensordot, trace  # noqa: F401
from tensorweave.ops.nn.impl import l2_normalize  # noqa: F401

transpose = matrix_transpose

__all__ = ["matmul", "einsum", "tensordot", "norm", "trace", "transpose", "matrix_transpose", "global_norm",
           "l2_normalize"]
