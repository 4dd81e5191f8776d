"""tf.linalg.LinearOperatorHouseholder: the reflection I - 2 v v^H / |v|^2 about the hyperplane
orthogonal to v, held as v: products are rank-one updates, the operator is its own inverse."""
from __future__ import annotations

from tensorweave.framework import errors
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import expand_dims, shape
from tensorweave.ops.array.fill import ones
from tensorweave.ops.grouping import no_op
from tensorweave.ops.linalg.full_matrix import checked_tensor
from tensorweave.ops.linalg.linear_operator import LinearOperator, abs_, forced_hint
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.linalg import conj, eye, matmul
from tensorweave.ops.math.matrix_functions import adjoint as adjoint_matrix
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.math.unary import sqrt


@tf_export("linalg.LinearOperatorHouseholder")
class LinearOperatorHouseholder(LinearOperator):
    """tf.linalg.LinearOperatorHouseholder(reflection_axis, is_non_singular=None,
    is_self_adjoint=None, is_positive_definite=None, is_square=None,
    name='LinearOperatorHouseholder'): the Householder reflection of `reflection_axis` [..., N]."""

    def __init__(self, reflection_axis, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name="LinearOperatorHouseholder"):
        self._axis = checked_tensor(reflection_axis, "reflection_axis", min_rank=1)
        is_self_adjoint = forced_hint(is_self_adjoint, True, "A Householder operator is always self adjoint.")
        if is_positive_definite:
            raise ValueError("A Householder operator is always non-positive definite.")
        is_square = forced_hint(is_square, True, "A Householder operator is always square.")
        super().__init__(self._axis.dtype, [self._axis], is_non_singular, is_self_adjoint, False, is_square, name)

    reflection_axis = property(lambda self: self._axis)

    def _shape(self):
        s = self._axis.shape
        return s.concatenate(s[-1:])

    def _shape_tensor(self):
        s = shape(self._axis)
        return concat([s, s[-1:]], 0)

    def _unit(self):
        """v / |v|, as [..., N, 1]."""
        norm = sqrt(reduce_sum(cast(abs_(self._axis) ** 2, self.dtype), axis=-1, keepdims=True))
        return expand_dims(self._axis / norm, -1)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = adjoint_matrix(x) if adjoint_arg else x
        unit = self._unit()
        return x - 2 * unit * matmul(unit, x, adjoint_a=True)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._matmul(rhs, adjoint_arg=adjoint_arg)   # a reflection is its own inverse

    def _batch_ones(self):
        return ones(shape(self._axis)[:-1], dtype=self.dtype)

    def _determinant(self):
        return -self._batch_ones()

    def _log_abs_determinant(self):
        return 0 * cast(abs_(self._batch_ones()), self.dtype.real_dtype)

    def _trace(self):
        return cast(shape(self._axis)[-1] - 2, self.dtype) * self._batch_ones()

    def _diag_part(self):
        unit = self._unit()[..., 0]
        return 1 - 2 * unit * conj(unit)

    def _eigvals(self):
        s = shape(self._axis)
        return concat([-ones(concat([s[:-1], [1]], 0), dtype=self.dtype),
                       ones(concat([s[:-1], s[-1:] - 1], 0), dtype=self.dtype)], -1)

    def _cond(self):
        return cast(abs_(self._batch_ones()), self.dtype.real_dtype)

    def _to_dense(self):
        unit = self._unit()
        return eye(shape(self._axis)[-1], dtype=self.dtype) - 2 * matmul(unit, unit, adjoint_b=True)

    def _assert_non_singular(self):
        return no_op("assert_non_singular")

    def _assert_positive_definite(self):
        raise errors.InvalidArgumentError(None, None, "Householder operators are always non-positive definite.")

    def _assert_self_adjoint(self):
        return no_op("assert_self_adjoint")

    def _inverse(self):
        return self
