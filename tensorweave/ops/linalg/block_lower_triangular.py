"""tf.linalg.LinearOperatorBlockLowerTriangular: a block lower triangular matrix of operators
(row i holds i + 1 blocks, the diagonal ones square); solves are block forward (adjoint:
backward) substitution with the diagonal blocks' solves."""
from __future__ import annotations

from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.grouping import group
from tensorweave.ops.linalg.block_diag import concat_broadcast, concat_vectors, dims_sum, pad_columns, split_rows
from tensorweave.ops.linalg.composition import all_hint, check_operators
from tensorweave.ops.linalg.linear_operator import (
    LinearOperator, broadcast_static_shapes, dim_value, operators_batch_shape)
from tensorweave.ops.math.matrix_functions import adjoint as adjoint_matrix


@tf_export("linalg.LinearOperatorBlockLowerTriangular")
class LinearOperatorBlockLowerTriangular(LinearOperator):
    """tf.linalg.LinearOperatorBlockLowerTriangular(operators, is_non_singular=None,
    is_self_adjoint=None, is_positive_definite=None, is_square=None, name=...): `operators` a
    list of rows, row i a list of i + 1 operators, the last of each row on the diagonal."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name="LinearOperatorBlockLowerTriangular"):
        rows = [list(row) for row in operators]
        if not rows or any(len(row) != i + 1 for i, row in enumerate(rows)):
            raise ValueError("Argument `operators` must be a list of lists of operators, row i holding i + 1 "
                             f"operators; got rows of lengths {[len(r) for r in rows]}")
        flat = check_operators([op for row in rows for op in row], "LinearOperatorBlockLowerTriangular")
        diag = [row[-1] for row in rows]
        if not all(op.is_square is not False for op in diag):
            raise ValueError("The diagonal operators of a block lower triangular operator must be square.")
        for i, row in enumerate(rows):
            for j, op in enumerate(row):
                if not (op.range_dimension.is_compatible_with(diag[i].range_dimension)
                        and op.domain_dimension.is_compatible_with(diag[j].domain_dimension)):
                    raise ValueError(f"Operator {op.name} at row {i}, column {j} has shape {op.shape}, which does not "
                                     f"fit the diagonal blocks {diag[i].shape} and {diag[j].shape}")
        if is_square is False:
            raise ValueError("A block lower triangular operator is always square.")
        is_non_singular = all_hint(diag, "is_non_singular", is_non_singular,
                                   "An operator of this form with non-singular diagonal blocks is non-singular.")
        self._rows, self._diag = rows, diag
        super().__init__(flat[0].dtype, sum((op.graph_parents for op in flat), []), is_non_singular,
                         is_self_adjoint, is_positive_definite, True, name)

    operators = property(lambda self: [list(row) for row in self._rows])

    def _shape(self):
        n = dims_sum(op.domain_dimension for op in self._diag)
        return broadcast_static_shapes(*(op.batch_shape for row in self._rows for op in row)).concatenate([n, n])

    def _shape_tensor(self):
        n = sum(op.domain_dimension_tensor() for op in self._diag)
        return concat([operators_batch_shape([op for row in self._rows for op in row]), [n, n]], 0)

    def _sizes(self):
        return [dim_value(op.domain_dimension) for op in self._diag]

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = adjoint_matrix(x) if adjoint_arg else x
        parts, n = split_rows(x, self._diag, use_range=False), len(self._rows)
        if adjoint:   # block j of A^H x: the sum over rows i >= j of L_ij^H x_i
            out = [sum(self._rows[i][j].matmul(parts[i], adjoint=True) for i in range(j, n)) for j in range(n)]
        else:
            out = [sum(op.matmul(parts[j]) for j, op in enumerate(self._rows[i])) for i in range(n)]
        return concat_broadcast(out, -2)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = adjoint_matrix(rhs) if adjoint_arg else rhs
        parts, n = split_rows(rhs, self._diag, use_range=False), len(self._rows)
        out = [None] * n
        order = range(n - 1, -1, -1) if adjoint else range(n)
        for i in order:
            if adjoint:
                known = [self._rows[k][i].matmul(out[k], adjoint=True) for k in range(i + 1, n)]
            else:
                known = [self._rows[i][j].matmul(out[j]) for j in range(i)]
            residual = parts[i] - sum(known[1:], known[0]) if known else parts[i]
            out[i] = self._diag[i].solve(residual, adjoint=adjoint)
        return concat_broadcast(out, -2)

    def _determinant(self):
        out = self._diag[0].determinant()
        for op in self._diag[1:]:
            out = out * op.determinant()
        return out

    def _log_abs_determinant(self):
        return sum(op.log_abs_determinant() for op in self._diag[1:]) + self._diag[0].log_abs_determinant()

    def _trace(self):
        return sum(op.trace() for op in self._diag[1:]) + self._diag[0].trace()

    def _diag_part(self):
        return concat_vectors([op.diag_part() for op in self._diag])

    def _to_dense(self):
        sizes = self._sizes()
        if any(s is None for s in sizes):
            return super()._to_dense()
        return concat_broadcast([pad_columns(concat_broadcast([op.to_dense() for op in row], -1), 0,
                                             sum(sizes[len(row):])) for row in self._rows], -2)

    def _assert_non_singular(self):
        return group(*(op.assert_non_singular() for op in self._diag))
