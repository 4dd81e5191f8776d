"""tf.linalg.LinearOperatorAdjoint: the adjoint A^H of an operator, by flipping the `adjoint`
argument of its methods; what LinearOperator.adjoint() gives where no cheaper form exists."""
from __future__ import annotations

from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.linalg.linear_operator import WrappingOperator
from tensorweave.ops.math.linalg import conj
from tensorweave.ops.math.matrix_functions import adjoint as adjoint_matrix


@tf_export("linalg.LinearOperatorAdjoint")
class LinearOperatorAdjoint(WrappingOperator):
    """tf.linalg.LinearOperatorAdjoint(operator, is_non_singular=None, is_self_adjoint=None,
    is_positive_definite=None, is_square=None, name=None): the adjoint of `operator`."""

    def __init__(self, operator, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name=None):
        super().__init__(operator, is_non_singular, is_self_adjoint, is_positive_definite, is_square,
                         name or operator.name + "_adjoint")

    def _shape(self):
        s = self._operator.shape
        return s if s.ndims is None else s[:-2].concatenate([s.dims[-1], s.dims[-2]])

    def _shape_tensor(self):
        s = self._operator.shape_tensor()
        return concat([s[:-2], s[-1:], s[-2:-1]], 0)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return self._operator.matmul(x, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._operator.solve(rhs, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _determinant(self):
        return conj(self._operator.determinant())

    def _log_abs_determinant(self):
        return self._operator.log_abs_determinant()

    def _trace(self):
        return conj(self._operator.trace())

    def _diag_part(self):
        return conj(self._operator.diag_part())

    def _eigvals(self):
        return conj(self._operator.eigvals())

    def _to_dense(self):
        return adjoint_matrix(self._operator.to_dense())

    def _adjoint(self):
        return self._operator
