"""tf.linalg.LinearOperatorLowerTriangular: the lower triangle of a [..., N, N] matrix (the upper
is ignored); solves are triangular solves, the determinant the product of the diagonal."""
from __future__ import annotations

from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import shape
from tensorweave.ops.array.diag import matrix_band_part, matrix_diag_part
from tensorweave.ops.linalg.full_matrix import checked_tensor
from tensorweave.ops.linalg.linear_operator import (
    LinearOperator, abs_, assert_no_entries_with_modulus_zero, broadcast_batch)
from tensorweave.ops.math.linalg import matmul
from tensorweave.ops.math.matrix_functions import adjoint as adjoint_matrix
from tensorweave.ops.math.reduction import reduce_prod, reduce_sum
from tensorweave.ops.math.solvers import matrix_triangular_solve
from tensorweave.ops.math.unary import log


@tf_export("linalg.LinearOperatorLowerTriangular")
class LinearOperatorLowerTriangular(LinearOperator):
    """tf.linalg.LinearOperatorLowerTriangular(tril, is_non_singular=None, is_self_adjoint=None,
    is_positive_definite=None, is_square=None, name='LinearOperatorLowerTriangular'): the
    operator of the lower triangle of `tril` [..., N, N]."""

    def __init__(self, tril, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name="LinearOperatorLowerTriangular"):
        if is_square is False:
            raise ValueError("Only square lower triangular operators supported at this time.")
        tril = checked_tensor(tril, "tril", min_rank=2)
        self._tril = matrix_band_part(tril, -1, 0)
        super().__init__(tril.dtype, [tril], is_non_singular, is_self_adjoint, is_positive_definite, True, name)

    def _shape(self):
        return self._tril.shape

    def _shape_tensor(self):
        return shape(self._tril)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return matmul(self._tril, x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = adjoint_matrix(rhs) if adjoint_arg else rhs
        tril, rhs = broadcast_batch(self._tril, rhs)
        return matrix_triangular_solve(tril, rhs, lower=True, adjoint=adjoint)

    def _determinant(self):
        return reduce_prod(matrix_diag_part(self._tril), axis=[-1])

    def _log_abs_determinant(self):
        return reduce_sum(log(abs_(matrix_diag_part(self._tril))), axis=[-1])

    def _diag_part(self):
        return matrix_diag_part(self._tril)

    def _eigvals(self):
        return matrix_diag_part(self._tril)

    def _to_dense(self):
        return self._tril

    def _assert_non_singular(self):
        return assert_no_entries_with_modulus_zero(matrix_diag_part(self._tril),
                                                   "Singular operator:  Diagonal contained zero values.")
