"""tf.linalg.LinearOperatorInversion: the inverse A^-1 of an operator, whose products are the
operator's solves and solves its products; what LinearOperator.inverse() gives by default."""
from __future__ import annotations

from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.linalg.linear_operator import WrappingOperator


@tf_export("linalg.LinearOperatorInversion")
class LinearOperatorInversion(WrappingOperator):
    """tf.linalg.LinearOperatorInversion(operator, is_non_singular=None, is_self_adjoint=None,
    is_positive_definite=None, is_square=None, name=None): the inverse of a square,
    non-singular `operator`."""

    def __init__(self, operator, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name=None):
        if operator.is_non_singular is False or is_non_singular is False:
            raise ValueError("operator and supplied hints must be non-singular: an inverse needs one")
        if operator.is_square is False or is_square is False:
            raise ValueError("operator and supplied hints must be square: an inverse needs one")
        super().__init__(operator, is_non_singular, is_self_adjoint, is_positive_definite, True,
                         name or operator.name + "_inv")

    def _shape(self):
        return self._operator.shape

    def _shape_tensor(self):
        return self._operator.shape_tensor()

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return self._operator.solve(x, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._operator.matmul(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _determinant(self):
        return 1.0 / self._operator.determinant()

    def _log_abs_determinant(self):
        return -1.0 * self._operator.log_abs_determinant()

    def _eigvals(self):
        return 1.0 / self._operator.eigvals()

    def _inverse(self):
        return self._operator
