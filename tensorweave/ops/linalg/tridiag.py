"""tf.linalg.LinearOperatorTridiag: a tridiagonal matrix held as its three diagonals, through the
tridiagonal_matmul and tridiagonal_solve ops (kept in TF's compact form [..., 3, N]: superdiagonal
with a trailing pad, diagonal, subdiagonal with a leading pad), and tf.linalg.eigh_tridiagonal."""
from __future__ import annotations

from tensorweave.framework.api import control_dependencies, name_scope
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, stack
from tensorweave.ops.array.core import shape
from tensorweave.ops.array.diag import matrix_diag, matrix_diag_part
from tensorweave.ops.array.fill import zeros_like
from tensorweave.ops.array.pad import pad
from tensorweave.ops.array.slicing import slice as slice_
from tensorweave.ops.debugging.asserts import assert_less, assert_less_equal
from tensorweave.ops.linalg.full_matrix import checked_tensor
from tensorweave.ops.linalg.linear_operator import LinearOperator, broadcast_batch
from tensorweave.ops.math.array_composites import boolean_mask
from tensorweave.ops.math.binary import add, greater, less_equal, logical_and, subtract
from tensorweave.ops.math.complex_parts import real
from tensorweave.ops.math.decompositions import self_adjoint_eig
from tensorweave.ops.math.linalg import conj
from tensorweave.ops.math.matrix_functions import adjoint as adjoint_matrix
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.math.solvers import tridiagonal_matmul, tridiagonal_solve

_FORMATS = ("compact", "matrix", "sequence")


@tf_export("linalg.LinearOperatorTridiag")
class LinearOperatorTridiag(LinearOperator):
    """tf.linalg.LinearOperatorTridiag(diagonals, diagonals_format='compact',
    is_non_singular=None, is_self_adjoint=None, is_positive_definite=None, is_square=None,
    name='LinearOperatorTridiag'): `diagonals` as [..., 3, N] (compact), [..., N, N] (matrix) or a
    list of the super-, main and subdiagonal [..., N] (sequence)."""

    def __init__(self, diagonals, diagonals_format="compact", is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name="LinearOperatorTridiag"):
        if diagonals_format not in _FORMATS:
            raise ValueError(f"Diagonals Format must be one of compact, matrix, sequence, got: {diagonals_format}")
        if diagonals_format == "sequence":
            parts = [checked_tensor(d, "diagonals", min_rank=1) for d in diagonals]
            if len(parts) != 3:
                raise ValueError(f"Expected three diagonals in sequence format, got {len(parts)}")
            self._compact = stack(broadcast_batch(*(t[..., None, :] for t in parts)), -2)[..., 0, :]
        elif diagonals_format == "matrix":
            m = checked_tensor(diagonals, "diagonals", min_rank=2)
            zero = zeros_like(m[..., :1, 0])
            self._compact = stack([concat([matrix_diag_part(m, k=1), zero], -1), matrix_diag_part(m),
                                   concat([zero, matrix_diag_part(m, k=-1)], -1)], -2)
        else:
            self._compact = checked_tensor(diagonals, "diagonals", min_rank=2)
        self._diagonals, self._format = diagonals, diagonals_format
        if is_square is False:
            raise ValueError("Only square tridiagonal operators currently supported.")
        super().__init__(self._compact.dtype, [self._compact], is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name)

    diagonals = property(lambda self: self._diagonals)
    diagonals_format = property(lambda self: self._format)

    def _shape(self):
        s = self._compact.shape
        return s[:-2].concatenate([s[-1], s[-1]])

    def _shape_tensor(self):
        s = shape(self._compact)
        return concat([s[:-2], s[-1:], s[-1:]], 0)

    def _compact_for(self, adjoint: bool):
        """The compact diagonals of A, or of A^H (super' = conj(sub) shifted left, sub' right)."""
        if not adjoint:
            return self._compact
        sup, diag, sub = (self._compact[..., i, :] for i in range(3))
        zero = zeros_like(diag[..., :1])
        return stack([conj(concat([sub[..., 1:], zero], -1)), conj(diag), conj(concat([zero, sup[..., :-1]], -1))],
                     -2)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = adjoint_matrix(x) if adjoint_arg else x
        diagonals, x = broadcast_batch(self._compact_for(adjoint), x)
        return tridiagonal_matmul(diagonals, x)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = adjoint_matrix(rhs) if adjoint_arg else rhs
        diagonals, rhs = broadcast_batch(self._compact_for(adjoint), rhs)
        return tridiagonal_solve(diagonals, rhs)

    def _diag_part(self):
        return self._compact[..., 1, :]

    def _trace(self):
        return reduce_sum(self._compact[..., 1, :], axis=-1)

    def _to_dense(self):
        sup, diag, sub = (self._compact[..., i, :] for i in range(3))
        return matrix_diag(sup[..., :-1], k=1) + matrix_diag(diag) + matrix_diag(sub[..., 1:], k=-1)




@tf_export("linalg.eigh_tridiagonal")
def eigh_tridiagonal(alpha, beta, eigvals_only=True, select="a", select_range=None, tol=None, name=None):
    """tf.linalg.eigh_tridiagonal(alpha, beta, eigvals_only=True, select='a', select_range=None,
    tol=None, name=None): the eigenvalues (ascending, real) of the Hermitian tridiagonal matrix
    with diagonal alpha [n] (its real part) and superdiagonal beta [n - 1] (conj(beta) below),
    and with eigvals_only=False its eigenvectors (the columns of [n, k]); select 'a' all, 'v'
    those in (select_range[0], select_range[1]], 'i' those of indices select_range[0] through
    select_range[1]. TF bisects to within `tol`; here the dense matrix's self_adjoint_eig gives
    them to machine precision. As TF, a matrix of size 0 or 1 gives real(alpha) alone."""
    with name_scope(name or "eigh_tridiagonal"):
        if select not in ("a", "v", "i"):
            raise ValueError("'select must have a value in {'a', 'i', 'v'}.")
        alpha = convert_to_tensor(alpha, name="alpha")
        n = alpha.shape[0].value
        if n is not None and n <= 1:
            return real(alpha)
        beta = convert_to_tensor(beta, name="beta")
        if alpha.dtype != beta.dtype:
            raise ValueError("'alpha' and 'beta' must have the same type.")
        below = pad(matrix_diag(conj(beta)), [[1, 0], [0, 1]])   # self_adjoint_eig reads the lower triangle
        values, vectors = self_adjoint_eig(add(matrix_diag(alpha), add(below, adjoint_matrix(below))))
        values = real(values)
        if select == "i":
            lo, hi = select_range
            with control_dependencies([assert_less_equal(lo, hi, message="Got empty index range in select_range.")]):
                size = add(subtract(hi, lo), 1)
            values, vectors = slice_(values, [lo], [size]), slice_(vectors, [0, lo], [-1, size])
        elif select == "v":
            lo, hi = (convert_to_tensor(v, dtype=values.dtype) for v in select_range)
            with control_dependencies([assert_less(lo, hi, message="Got empty interval in select_range.")]):
                keep = logical_and(greater(values, lo), less_equal(values, hi))
            values, vectors = boolean_mask(values, keep), boolean_mask(vectors, keep, axis=1)
        return values if eigvals_only else (values, vectors)
