"""tf.linalg.LinearOperatorBlockDiag: the direct sum of operators, a block-diagonal matrix;
products and solves act block by block on slices of the argument."""
from __future__ import annotations

from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, split, stack
from tensorweave.ops.array.core import expand_dims, squeeze
from tensorweave.ops.array.pad import pad
from tensorweave.ops.grouping import group
from tensorweave.ops.linalg.composition import all_hint, check_operators
from tensorweave.ops.linalg.linear_operator import (
    LinearOperator, broadcast_batch, broadcast_static_shapes, dim_value, operators_batch_shape)
from tensorweave.ops.math.matrix_functions import adjoint as adjoint_matrix


def dims_sum(dims):
    values = [dim_value(d) for d in dims]
    return None if any(v is None for v in values) else sum(values)


def concat_broadcast(tensors, axis: int):
    """`tensors` ([..., M, N] each) with their batch dims broadcast, concatenated along `axis`."""
    return concat(broadcast_batch(*tensors), axis)


def concat_vectors(vectors):
    """[..., n_i] vectors with their batch dims broadcast, concatenated along the last axis."""
    return squeeze(concat_broadcast([expand_dims(v, -2) for v in vectors], -1), axis=[-2])


def pad_columns(matrix, before: int, after: int):
    """[..., M, N] matrix with `before` and `after` columns of zeros around it."""
    if matrix.shape.ndims is None:
        raise ValueError(f"Assembling a block matrix needs blocks of known rank, got {matrix}")
    return pad(matrix, [[0, 0]] * (matrix.shape.ndims - 1) + [[before, after]])


def split_rows(x, operators, use_range: bool):
    """x [..., sum of the operators' range (or domain) dims, R] split along its rows, one part each."""
    static = [dim_value(op.range_dimension if use_range else op.domain_dimension) for op in operators]
    if None in static:
        static = stack([op.range_dimension_tensor() if use_range else op.domain_dimension_tensor()
                        for op in operators])
    return split(x, static, axis=-2, num=len(operators))


@tf_export("linalg.LinearOperatorBlockDiag")
class LinearOperatorBlockDiag(LinearOperator):
    """tf.linalg.LinearOperatorBlockDiag(operators, is_non_singular=None, is_self_adjoint=None,
    is_positive_definite=None, is_square=True, name=None): the block-diagonal matrix of
    `operators`, whose batch shapes broadcast."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=True, name=None):
        self._operators = ops = check_operators(operators, "LinearOperatorBlockDiag")
        is_non_singular = all_hint(ops, "is_non_singular", is_non_singular,
                                   "The direct sum of non-singular operators is always non-singular.")
        is_self_adjoint = all_hint(ops, "is_self_adjoint", is_self_adjoint,
                                   "The direct sum of self-adjoint operators is always self-adjoint.")
        is_positive_definite = all_hint(ops, "is_positive_definite", is_positive_definite,
                                        "The direct sum of positive definite operators is always positive definite.")
        if is_square and not all(op.is_square for op in ops):
            is_square = None   # non-square blocks: the shape decides
        super().__init__(ops[0].dtype, sum((op.graph_parents for op in ops), []), is_non_singular,
                         is_self_adjoint, is_positive_definite, is_square, name or "_ds_".join(op.name for op in ops))

    operators = property(lambda self: list(self._operators))

    def _shape(self):
        batch = broadcast_static_shapes(*(op.batch_shape for op in self._operators))
        return batch.concatenate([dims_sum(op.range_dimension for op in self._operators),
                                  dims_sum(op.domain_dimension for op in self._operators)])

    def _shape_tensor(self):
        rows = sum(op.range_dimension_tensor() for op in self._operators)
        cols = sum(op.domain_dimension_tensor() for op in self._operators)
        return concat([operators_batch_shape(self._operators), [rows, cols]], 0)

    def _blockwise(self, method: str, x, adjoint: bool, adjoint_arg: bool):
        x = adjoint_matrix(x) if adjoint_arg else x
        parts = split_rows(x, self._operators, use_range=(method == "matmul") == adjoint)   # solve, matmul^H: rows
        return concat_broadcast([getattr(op, method)(p, adjoint=adjoint) for op, p in zip(self._operators, parts)],
                                -2)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return self._blockwise("matmul", x, adjoint, adjoint_arg)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._blockwise("solve", rhs, adjoint, adjoint_arg)

    def _determinant(self):
        out = self._operators[0].determinant()
        for op in self._operators[1:]:
            out = out * op.determinant()
        return out

    def _log_abs_determinant(self):
        return sum(op.log_abs_determinant() for op in self._operators[1:]) + self._operators[0].log_abs_determinant()

    def _trace(self):
        return sum(op.trace() for op in self._operators[1:]) + self._operators[0].trace()

    def _diag_part(self):
        if not all(op.is_square for op in self._operators):
            return super()._diag_part()
        return concat_vectors([op.diag_part() for op in self._operators])

    def _eigvals(self):
        return concat_vectors([op.eigvals() for op in self._operators])

    def _to_dense(self):
        cols = [dim_value(op.domain_dimension) for op in self._operators]
        if any(c is None for c in cols):
            return super()._to_dense()
        return concat_broadcast([pad_columns(op.to_dense(), sum(cols[:i]), sum(cols[i + 1:]))
                                 for i, op in enumerate(self._operators)], -2)

    def _each(self, method: str, **hints):
        return LinearOperatorBlockDiag([getattr(op, method)() for op in self._operators], **hints)

    def _adjoint(self):
        return self._each("adjoint", is_non_singular=self.is_non_singular, is_self_adjoint=self.is_self_adjoint,
                          is_positive_definite=self.is_positive_definite, is_square=True)

    def _inverse(self):
        return self._each("inverse", is_non_singular=self.is_non_singular, is_self_adjoint=self.is_self_adjoint,
                          is_positive_definite=self.is_positive_definite, is_square=True)

    def _cholesky(self):
        return self._each("cholesky", is_non_singular=True, is_self_adjoint=None, is_square=True)

    def _assert_non_singular(self):
        return group(*(op.assert_non_singular() for op in self._operators))

    def _assert_positive_definite(self):
        return group(*(op.assert_positive_definite() for op in self._operators))

    def _assert_self_adjoint(self):
        return group(*(op.assert_self_adjoint() for op in self._operators))
