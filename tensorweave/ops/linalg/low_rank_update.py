"""tf.linalg.LinearOperatorLowRankUpdate: A = L + U D V^H for an operator L, [..., M, K] U and V
and a diagonal D (the identity by default): products apply the K-rank term, solves use the
Woodbury identity and determinants the matrix determinant lemma, through the K x K capacitance
C = D^-1 + V^H L^-1 U."""
from __future__ import annotations

from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import shape
from tensorweave.ops.array.fill import zeros
from tensorweave.ops.linalg.diag import LinearOperatorDiag
from tensorweave.ops.linalg.full_matrix import checked_tensor
from tensorweave.ops.linalg.identity import LinearOperatorIdentity
from tensorweave.ops.linalg.linear_operator import (
    LinearOperator, batch_shape_of, broadcast_batch, broadcast_static_shapes)
from tensorweave.ops.math.linalg import matmul
from tensorweave.ops.math.matrix_functions import adjoint as adjoint_matrix, matrix_determinant, slogdet
from tensorweave.ops.math.solvers import matrix_solve


@tf_export("linalg.LinearOperatorLowRankUpdate")
class LinearOperatorLowRankUpdate(LinearOperator):
    """tf.linalg.LinearOperatorLowRankUpdate(base_operator, u, diag_update=None, v=None,
    is_diag_update_positive=None, is_non_singular=None, is_self_adjoint=None,
    is_positive_definite=None, is_square=None, name='LinearOperatorLowRankUpdate'): the operator
    base_operator + u diag(diag_update) v^H (v defaults to u, diag_update to ones)."""

    def __init__(self, base_operator, u, diag_update=None, v=None, is_diag_update_positive=None,
                 is_non_singular=None, is_self_adjoint=None, is_positive_definite=None, is_square=None,
                 name="LinearOperatorLowRankUpdate"):
        if diag_update is None and is_diag_update_positive is False:
            raise ValueError("Default diagonal is the identity, which is positive.  However, user set "
                             "`is_diag_update_positive` to False.")
        self._u = checked_tensor(u, "u", min_rank=2)
        if self._u.dtype != base_operator.dtype:
            raise TypeError(f"Expected u to have dtype {base_operator.dtype.name}, found {self._u.dtype.name}")
        self._v = self._u if v is None else checked_tensor(v, "v", min_rank=2)
        self._base = base_operator
        self._is_diag_update_positive = True if diag_update is None else is_diag_update_positive
        if diag_update is None:
            k = self._u.shape.dims[-1].value if self._u.shape.ndims else None
            self._diag_operator = LinearOperatorIdentity(shape(self._u)[-1] if k is None else k, dtype=self._u.dtype)
            self._diag_update = None
        else:
            self._diag_update = checked_tensor(diag_update, "diag_update", min_rank=1)
            self._diag_operator = LinearOperatorDiag(self._diag_update,
                                                     is_positive_definite=is_diag_update_positive)
        symmetric = v is None and base_operator.is_self_adjoint and (
            diag_update is None or not self._diag_update.dtype.is_complex)
        if symmetric and is_self_adjoint is None:
            is_self_adjoint = True
        if symmetric and base_operator.is_positive_definite and self._is_diag_update_positive:
            if is_positive_definite is False:
                raise ValueError("A positive definite base updated by u diag(positive) u^H is positive definite.")
            is_positive_definite = True
        super().__init__(base_operator.dtype, base_operator.graph_parents + [self._u], is_non_singular,
                         is_self_adjoint, is_positive_definite, is_square, name)

    base_operator = property(lambda self: self._base)
    u = property(lambda self: self._u)
    v = property(lambda self: self._v)
    diag_update = property(lambda self: self._diag_update)
    diag_operator = property(lambda self: self._diag_operator)
    is_diag_update_positive = property(lambda self: self._is_diag_update_positive)

    def _shape(self):
        batch = broadcast_static_shapes(self._base.batch_shape, self._u.shape[:-2], self._v.shape[:-2])
        return batch.concatenate(self._base.shape[-2:])

    def _shape_tensor(self):
        probe = zeros(concat([self._base.batch_shape_tensor(), [1, 1]], 0), dtype=self.dtype)
        return concat([batch_shape_of(probe, self._u, self._v), self._base.shape_tensor()[-2:]], 0)

    def _parts(self, adjoint: bool):
        """(U, V, D) of A, or of A^H = L^H + V D^H U^H."""
        if adjoint:
            return self._v, self._u, self._diag_operator.adjoint()
        return self._u, self._v, self._diag_operator

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = adjoint_matrix(x) if adjoint_arg else x
        left, right, diag = self._parts(adjoint)
        return self._base.matmul(x, adjoint=adjoint) + matmul(left, diag.matmul(matmul(right, x, adjoint_a=True)))

    def _capacitance(self, adjoint: bool = False):
        """C = D^-1 + V^H L^-1 U (of A^H for `adjoint`)."""
        left, right, diag = self._parts(adjoint)
        return diag.inverse().add_to_tensor(matmul(right, self._base.solve(left, adjoint=adjoint), adjoint_a=True))

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        # Woodbury: A^-1 b = L^-1 b - L^-1 U C^-1 V^H L^-1 b
        rhs = adjoint_matrix(rhs) if adjoint_arg else rhs
        left, right, _ = self._parts(adjoint)
        linv_rhs = self._base.solve(rhs, adjoint=adjoint)
        cap, small = broadcast_batch(self._capacitance(adjoint), matmul(right, linv_rhs, adjoint_a=True))
        return linv_rhs - self._base.solve(matmul(left, matrix_solve(cap, small)), adjoint=adjoint)

    def _determinant(self):
        # the matrix determinant lemma: det(L + U D V^H) = det(C) det(D) det(L)
        return matrix_determinant(self._capacitance()) * self._diag_operator.determinant() * self._base.determinant()

    def _log_abs_determinant(self):
        return (slogdet(self._capacitance())[1] + self._diag_operator.log_abs_determinant()
                + self._base.log_abs_determinant())

    def _to_dense(self):
        return self._base.to_dense() + matmul(self._u, self._diag_operator.matmul(self._v, adjoint_arg=True))
