"""tf.linalg.LinearOperatorPermutation: the permutation matrix P with P[i, perm[i]] = 1, held as
perm: a product gathers rows (P x = x[perm]), the adjoint and inverse gather by argsort(perm),
the determinant is the permutation's sign."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import expand_dims, shape
from tensorweave.ops.array.diag import matrix_band_part
from tensorweave.ops.array.fill import zeros
from tensorweave.ops.array.gather import gather, one_hot
from tensorweave.ops.grouping import no_op
from tensorweave.ops.linalg.linear_operator import LinearOperator, broadcast_batch, forced_hint
from tensorweave.ops.math.array_composites import argsort
from tensorweave.ops.math.binary import equal, floormod, greater
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.matrix_functions import adjoint as adjoint_matrix
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.math.sequences import range as range_


@tf_export("linalg.LinearOperatorPermutation")
class LinearOperatorPermutation(LinearOperator):
    """tf.linalg.LinearOperatorPermutation(perm, dtype=tf.float32, is_non_singular=None,
    is_self_adjoint=None, is_positive_definite=None, is_square=None,
    name='LinearOperatorPermutation'): the [batch of] permutation matrices of `perm` [..., N]."""

    def __init__(self, perm, dtype=dtypes.float32, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name="LinearOperatorPermutation"):
        self._perm = convert_to_tensor(perm, name="perm")
        if not self._perm.dtype.is_integer:
            raise TypeError(f"Argument perm must be integer dtype. Found: {self._perm.dtype.name}")
        if self._perm.shape.ndims is not None and self._perm.shape.ndims < 1:
            raise ValueError(f"Argument perm must have at least 1 dimension.  Found: {self._perm.shape}")
        is_non_singular = forced_hint(is_non_singular, True, "A Permutation operator is always non-singular.")
        is_square = forced_hint(is_square, True, "A Permutation operator is always square.")
        super().__init__(dtype, [self._perm], is_non_singular, is_self_adjoint, is_positive_definite, is_square,
                         name)

    perm = property(lambda self: self._perm)

    def _shape(self):
        s = self._perm.shape
        return s.concatenate(s[-1:])

    def _shape_tensor(self):
        s = shape(self._perm)
        return concat([s, s[-1:]], 0)

    def _gather_rows(self, x, perm):
        """x[..., perm[i], :] for each row i, perm's batch and x's broadcast."""
        x = x + zeros(concat([shape(perm)[:-1], [1, 1]], 0), dtype=x.dtype)
        perm, _ = broadcast_batch(expand_dims(perm, -1), x[..., :1])
        return gather(x, perm[..., 0], axis=-2, batch_dims=x.shape.ndims - 2)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = adjoint_matrix(x) if adjoint_arg else x
        return self._gather_rows(x, argsort(self._perm, axis=-1) if adjoint else self._perm)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._matmul(rhs, adjoint=not adjoint, adjoint_arg=adjoint_arg)   # P^-1 = P^T

    def _fixed(self):
        return cast(equal(self._perm, cast(range_(shape(self._perm)[-1]), self._perm.dtype)), self.dtype)

    def _determinant(self):
        # the sign: (-1) ** (number of inversions, pairs i < j with perm[i] > perm[j])
        pairs = cast(greater(expand_dims(self._perm, -1), expand_dims(self._perm, -2)), dtypes.int32)
        inversions = reduce_sum(matrix_band_part(pairs, 0, -1), axis=[-2, -1])
        return cast(1 - 2 * floormod(inversions, 2), self.dtype)

    def _log_abs_determinant(self):
        return zeros(shape(self._perm)[:-1], dtype=self.dtype)

    def _diag_part(self):
        return self._fixed()

    def _trace(self):
        return reduce_sum(self._fixed(), axis=-1)

    def _to_dense(self):
        return one_hot(self._perm, shape(self._perm)[-1], dtype=self.dtype)

    def _assert_non_singular(self):
        return no_op("assert_non_singular")

    def _inverse(self):
        return LinearOperatorPermutation(argsort(self._perm, axis=-1), dtype=self.dtype,
                                         is_self_adjoint=self.is_self_adjoint)

    _adjoint = _inverse
