"""tf.linalg.LinearOperatorFullMatrix: an operator holding its [..., M, N] matrix."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import shape
from tensorweave.ops.linalg.linear_operator import LinearOperator
from tensorweave.ops.math.linalg import matmul

ALLOWED_DTYPES = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


def checked_tensor(value, name: str, allowed=ALLOWED_DTYPES, min_rank: int = 0):
    """`value` as a tensor of one of the `allowed` dtypes and at least `min_rank` dims."""
    t = convert_to_tensor(value, name=name)
    if t.dtype.base_dtype not in allowed:
        raise TypeError(f"Argument {name} must have dtype in {[d.name for d in allowed]}. Found: {t.dtype.name}")
    if t.shape.ndims is not None and t.shape.ndims < min_rank:
        raise ValueError(f"Argument {name} must have at least {min_rank} dimensions.  Found: {t.shape}")
    return t


@tf_export("linalg.LinearOperatorFullMatrix")
class LinearOperatorFullMatrix(LinearOperator):
    """tf.linalg.LinearOperatorFullMatrix(matrix, is_non_singular=None, is_self_adjoint=None,
    is_positive_definite=None, is_square=None, name='LinearOperatorFullMatrix'): the operator of
    a [..., M, N] matrix (float16/32/64 or complex)."""

    def __init__(self, matrix, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name="LinearOperatorFullMatrix"):
        self._matrix = checked_tensor(matrix, "matrix", min_rank=2)
        super().__init__(self._matrix.dtype, [self._matrix], is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square, name)

    def _shape(self):
        return self._matrix.shape

    def _shape_tensor(self):
        return shape(self._matrix)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return matmul(self._matrix, x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    def _to_dense(self):
        return self._matrix
