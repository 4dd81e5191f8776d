"""tf.linalg.LinearOperatorComposition: the product A1 A2 ... An of operators, applied one at a
time (never multiplied out); determinants multiply, solves run in reverse order."""
from __future__ import annotations

from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.linalg.linear_operator import (
    LinearOperator, broadcast_static_shapes, dim_value, operators_batch_shape)
from tensorweave.ops.math.matrix_functions import adjoint as adjoint_matrix


def check_operators(operators, what: str) -> list:
    """A non-empty list of operators of one dtype, else TF's errors."""
    operators = list(operators)
    if not operators:
        raise ValueError(f"Expected a non-empty list of operators. Found: {operators}")
    if not all(isinstance(op, LinearOperator) for op in operators):
        raise TypeError(f"{what} takes a list of LinearOperators, got {operators}")
    if len({op.dtype for op in operators}) > 1:
        raise TypeError("Expected all operators to have the same dtype.  Found "
                        + "   ".join(f"{op.name}: {op.dtype.name}" for op in operators))
    return operators


def all_hint(operators, hint: str, given, message: str):
    """A hint every operator has makes the combination have it; a given False then contradicts."""
    if all(getattr(op, hint) for op in operators):
        if given is False:
            raise ValueError(message)
        return True
    return given


@tf_export("linalg.LinearOperatorComposition")
class LinearOperatorComposition(LinearOperator):
    """tf.linalg.LinearOperatorComposition(operators, is_non_singular=None, is_self_adjoint=None,
    is_positive_definite=None, is_square=None, name=None): the product of `operators`, whose
    batch shapes broadcast."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name=None):
        self._operators = check_operators(operators, "LinearOperatorComposition")
        for left, right in zip(self._operators, self._operators[1:]):
            if not left.domain_dimension.is_compatible_with(right.range_dimension):
                raise ValueError(f"Operators are incompatible. Expected `x` to have dimension "
                                 f"{dim_value(left.domain_dimension)} but got {dim_value(right.range_dimension)}.")
        is_non_singular = all_hint(self._operators, "is_non_singular", is_non_singular,
                                   "The composition of non-singular operators is always non-singular.")
        super().__init__(self._operators[0].dtype, sum((op.graph_parents for op in self._operators), []),
                         is_non_singular, is_self_adjoint, is_positive_definite, is_square,
                         name or "_o_".join(op.name for op in self._operators))

    operators = property(lambda self: list(self._operators))

    def _shape(self):
        batch = broadcast_static_shapes(*(op.batch_shape for op in self._operators))
        return batch.concatenate([self._operators[0].range_dimension, self._operators[-1].domain_dimension])

    def _shape_tensor(self):
        batch = operators_batch_shape(self._operators)
        return concat([batch, self._operators[0].shape_tensor()[-2:-1], self._operators[-1].shape_tensor()[-1:]], 0)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = adjoint_matrix(x) if adjoint_arg else x
        order = self._operators if adjoint else self._operators[::-1]   # A^H = An^H ... A1^H
        for op in order:
            x = op.matmul(x, adjoint=adjoint)
        return x

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = adjoint_matrix(rhs) if adjoint_arg else rhs
        order = self._operators[::-1] if adjoint else self._operators   # A^-1 = An^-1 ... A1^-1
        for op in order:
            rhs = op.solve(rhs, adjoint=adjoint)
        return rhs

    def _square_parts(self) -> bool:
        return all(op.is_square for op in self._operators)

    def _determinant(self):
        if not self._square_parts():
            return super()._determinant()
        out = self._operators[0].determinant()
        for op in self._operators[1:]:
            out = out * op.determinant()
        return out

    def _log_abs_determinant(self):
        if not self._square_parts():
            return super()._log_abs_determinant()
        out = self._operators[0].log_abs_determinant()
        for op in self._operators[1:]:
            out = out + op.log_abs_determinant()
        return out

    def _inverse(self):
        if self._square_parts():
            return LinearOperatorComposition([op.inverse() for op in self._operators[::-1]],
                                             is_non_singular=self.is_non_singular, is_square=True)
        return super()._inverse()

    def _adjoint(self):
        return LinearOperatorComposition([op.adjoint() for op in self._operators[::-1]],
                                         is_non_singular=self.is_non_singular, is_self_adjoint=self.is_self_adjoint,
                                         is_positive_definite=self.is_positive_definite)

