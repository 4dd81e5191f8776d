"""tf.linalg.LinearOperatorDiag: a [batch] diagonal matrix, held as its diagonal; products and
solves are elementwise (solve is a division), determinants are products of the diagonal."""
from __future__ import annotations

from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import expand_dims, shape
from tensorweave.ops.array.diag import matrix_diag, matrix_diag_part, matrix_set_diag
from tensorweave.ops.debugging.asserts import assert_equal, assert_positive
from tensorweave.ops.grouping import no_op
from tensorweave.ops.linalg.full_matrix import checked_tensor
from tensorweave.ops.linalg.linear_operator import (
    LinearOperator, abs_, assert_no_entries_with_modulus_zero, forced_hint)
from tensorweave.ops.math.complex_parts import imag, real
from tensorweave.ops.math.linalg import conj
from tensorweave.ops.math.matrix_functions import adjoint as adjoint_matrix
from tensorweave.ops.math.reduction import reduce_max, reduce_min, reduce_prod, reduce_sum
from tensorweave.ops.math.unary import log, sqrt


@tf_export("linalg.LinearOperatorDiag")
class LinearOperatorDiag(LinearOperator):
    """tf.linalg.LinearOperatorDiag(diag, is_non_singular=None, is_self_adjoint=None,
    is_positive_definite=None, is_square=True, name='LinearOperatorDiag'): the [..., N, N]
    matrix with `diag` [..., N] on its diagonal (real ones are self-adjoint)."""

    def __init__(self, diag, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=True, name="LinearOperatorDiag"):
        self._diag = checked_tensor(diag, "diag", min_rank=1)
        if not self._diag.dtype.is_complex:
            is_self_adjoint = forced_hint(is_self_adjoint, True, "A real diagonal operator is always self adjoint.")
        if is_square is False:
            raise ValueError("Only square diagonal operators currently supported.")
        super().__init__(self._diag.dtype, [self._diag], is_non_singular, is_self_adjoint, is_positive_definite,
                         True, name)

    diag = property(lambda self: self._diag)

    def _shape(self):
        d = self._diag.shape
        return TensorShape(None) if d.ndims is None else d.concatenate(d[-1:])

    def _shape_tensor(self):
        s = shape(self._diag)
        return concat([s, s[-1:]], 0)

    def _diag_for(self, adjoint: bool):
        return conj(self._diag) if adjoint else self._diag

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = adjoint_matrix(x) if adjoint_arg else x
        return expand_dims(self._diag_for(adjoint), -1) * x

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = adjoint_matrix(rhs) if adjoint_arg else rhs
        return rhs / expand_dims(self._diag_for(adjoint), -1)

    def _determinant(self):
        return reduce_prod(self._diag, axis=[-1])

    def _log_abs_determinant(self):
        return reduce_sum(log(abs_(self._diag)), axis=[-1])

    def _trace(self):
        return reduce_sum(self._diag, axis=-1)

    def _diag_part(self):
        return self._diag

    def _to_dense(self):
        return matrix_diag(self._diag)

    def _add_to_tensor(self, x):
        return matrix_set_diag(x, matrix_diag_part(x) + self._diag)

    def _eigvals(self):
        return self._diag

    def _cond(self):
        magnitude = abs_(self._diag)
        return reduce_max(magnitude, axis=-1) / reduce_min(magnitude, axis=-1)

    def _assert_non_singular(self):
        return assert_no_entries_with_modulus_zero(self._diag, "Singular operator:  Diagonal contained zero values.")

    def _assert_positive_definite(self):
        return assert_positive(real(self._diag) if self._diag.dtype.is_complex else self._diag,
                               message="This diagonal operator contained non-positive entries.")

    def _assert_self_adjoint(self):
        if not self._diag.dtype.is_complex:
            return no_op("assert_self_adjoint")
        return assert_equal(imag(self._diag), 0.0, message="This diagonal operator contained non-real entries.")

    def _adjoint(self):
        return LinearOperatorDiag(conj(self._diag), self.is_non_singular, self.is_self_adjoint,
                                  self.is_positive_definite, True)

    def _inverse(self):
        return LinearOperatorDiag(1.0 / self._diag, self.is_non_singular, self.is_self_adjoint,
                                  self.is_positive_definite, True)

    def _cholesky(self):
        return LinearOperatorDiag(sqrt(self._diag), True, True, True, True)

    def _matmul_operator(self, other):
        if isinstance(other, LinearOperatorDiag):
            return LinearOperatorDiag(self._diag * other.diag, is_square=True)
        return super()._matmul_operator(other)
