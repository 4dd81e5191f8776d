"""tf.linalg.LinearOperatorKronecker: the Kronecker product A1 (x) A2 (x) ... of operators,
never formed: a product applies each factor to its own axis of the argument reshaped to
[..., n1, n2, ..., R] (and a solve each factor's solve, as (A (x) B)^-1 = A^-1 (x) B^-1);
determinants, traces and diagonals combine the factors'."""
from __future__ import annotations

import functools
import operator as py_operator

from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import expand_dims, reshape, shape, transpose
from tensorweave.ops.array.fill import zeros
from tensorweave.ops.grouping import group
from tensorweave.ops.linalg.composition import all_hint, check_operators
from tensorweave.ops.linalg.linear_operator import (
    LinearOperator, broadcast_static_shapes, dim_value, operators_batch_shape)
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.matrix_functions import adjoint as adjoint_matrix


def _product(values):
    return None if any(v is None for v in values) else functools.reduce(py_operator.mul, values, 1)


def outer_flat(a, b):
    """The Kronecker product of [..., m] vectors: [..., m_a * m_b], batch dims broadcast."""
    out = expand_dims(a, -1) * expand_dims(b, -2)
    return reshape(out, concat([shape(out)[:-2], [-1]], 0))


@tf_export("linalg.LinearOperatorKronecker")
class LinearOperatorKronecker(LinearOperator):
    """tf.linalg.LinearOperatorKronecker(operators, is_non_singular=None, is_self_adjoint=None,
    is_positive_definite=None, is_square=None, name=None): the Kronecker product of
    `operators` (row-major: (A (x) B)[i1 m2 + i2, j1 n2 + j2] = A[i1, j1] B[i2, j2])."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name=None):
        self._operators = ops = check_operators(operators, "LinearOperatorKronecker")
        is_non_singular = all_hint(ops, "is_non_singular", is_non_singular,
                                   "The Kronecker product of non-singular operators is always non-singular.")
        is_self_adjoint = all_hint(ops, "is_self_adjoint", is_self_adjoint,
                                   "The Kronecker product of self-adjoint operators is always self-adjoint.")
        is_positive_definite = all_hint(ops, "is_positive_definite", is_positive_definite,
                                        "The Kronecker product of positive-definite operators is always "
                                        "positive-definite.")
        super().__init__(ops[0].dtype, sum((op.graph_parents for op in ops), []), is_non_singular,
                         is_self_adjoint, is_positive_definite, is_square, name or "_x_".join(op.name for op in ops))

    operators = property(lambda self: list(self._operators))

    def _shape(self):
        batch = broadcast_static_shapes(*(op.batch_shape for op in self._operators))
        return batch.concatenate([_product([dim_value(op.range_dimension) for op in self._operators]),
                                  _product([dim_value(op.domain_dimension) for op in self._operators])])

    def _shape_tensor(self):
        rows = functools.reduce(py_operator.mul, [op.range_dimension_tensor() for op in self._operators])
        cols = functools.reduce(py_operator.mul, [op.domain_dimension_tensor() for op in self._operators])
        return concat([operators_batch_shape(self._operators), [rows, cols]], 0)

    def _factorwise(self, method: str, x, adjoint: bool, adjoint_arg: bool):
        """Each factor's `method` on its axis of x [..., n1 * ... * nk, R] as [..., n1, ..., nk, R]."""
        x = adjoint_matrix(x) if adjoint_arg else x
        batch = self.batch_shape
        if x.shape.ndims is None or batch.ndims is None:
            raise ValueError(f"{self.name}: a Kronecker product needs arguments of known rank")
        if x.shape.ndims - 2 < batch.ndims or not batch.is_fully_defined() or any(d != 1 for d in batch.as_list()):
            x = x + zeros(concat([self.batch_shape_tensor(), [1, 1]], 0), dtype=x.dtype)   # align the batch dims
        b, k = x.shape.ndims - 2, len(self._operators)
        in_adjoint = (method == "matmul") == adjoint
        sizes = [op.range_dimension_tensor() if in_adjoint else op.domain_dimension_tensor() for op in self._operators]
        t = reshape(x, concat([shape(x)[:b], sizes, shape(x)[-1:]], 0))
        for i in range(k - 1, -1, -1):
            axis = b + i
            others = [a for a in range(b, b + k + 1) if a != axis]
            perm = list(range(b)) + [axis] + others
            moved = transpose(t, perm)
            moved_shape = shape(moved)
            flat = reshape(moved, concat([moved_shape[:b + 1], [-1]], 0))
            done = getattr(self._operators[i], method)(flat, adjoint=adjoint)
            done = reshape(done, concat([shape(done)[:b + 1], moved_shape[b + 1:]], 0))
            t = transpose(done, [perm.index(a) for a in range(b + k + 1)])
        return reshape(t, concat([shape(t)[:b], [-1], shape(t)[-1:]], 0))

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return self._factorwise("matmul", x, adjoint, adjoint_arg)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._factorwise("solve", rhs, adjoint, adjoint_arg)

    def _sizes(self):
        return [cast(op.domain_dimension_tensor(), self.dtype) for op in self._operators]

    def _determinant(self):
        # det(A1 (x) ... (x) Ak) = prod_i det(A_i) ** (N / n_i)
        sizes = self._sizes()
        total = functools.reduce(py_operator.mul, sizes)
        return functools.reduce(py_operator.mul, [op.determinant() ** (total / n)
                                                  for op, n in zip(self._operators, sizes)])

    def _log_abs_determinant(self):
        sizes = [cast(s, self.dtype.real_dtype) for s in (op.domain_dimension_tensor() for op in self._operators)]
        total = functools.reduce(py_operator.mul, sizes)
        return functools.reduce(py_operator.add, [op.log_abs_determinant() * (total / n)
                                                  for op, n in zip(self._operators, sizes)])

    def _trace(self):
        return functools.reduce(py_operator.mul, [op.trace() for op in self._operators])

    def _diag_part(self):
        if not all(op.is_square for op in self._operators):
            return super()._diag_part()
        return functools.reduce(outer_flat, [op.diag_part() for op in self._operators])

    def _eigvals(self):
        return functools.reduce(outer_flat, [op.eigvals() for op in self._operators])

    def _to_dense(self):
        def kron(a, b):
            out = expand_dims(expand_dims(a, -1), -3) * expand_dims(expand_dims(b, -2), -4)
            s = shape(out)   # [..., m_a, m_b, n_a, n_b]
            return reshape(out, concat([s[:-4], [s[-4] * s[-3], s[-2] * s[-1]]], 0))
        return functools.reduce(kron, [op.to_dense() for op in self._operators])

    def _each(self, method: str, **hints):
        return LinearOperatorKronecker([getattr(op, method)() for op in self._operators], **hints)

    def _adjoint(self):
        return self._each("adjoint", is_non_singular=self.is_non_singular, is_self_adjoint=self.is_self_adjoint,
                          is_positive_definite=self.is_positive_definite, is_square=self._is_square_hint)

    def _inverse(self):
        return self._each("inverse", is_non_singular=self.is_non_singular, is_self_adjoint=self.is_self_adjoint,
                          is_positive_definite=self.is_positive_definite, is_square=True)

    def _cholesky(self):
        return self._each("cholesky", is_non_singular=True, is_square=True)

    def _assert_non_singular(self):
        return group(*(op.assert_non_singular() for op in self._operators))

    def _assert_positive_definite(self):
        return group(*(op.assert_positive_definite() for op in self._operators))

    def _assert_self_adjoint(self):
        return group(*(op.assert_self_adjoint() for op in self._operators))
