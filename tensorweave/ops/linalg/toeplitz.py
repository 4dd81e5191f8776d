"""tf.linalg.LinearOperatorToeplitz: a Toeplitz matrix held as its first column and row; a
product embeds it in a 2N x 2N circulant and runs through the FFT (LinearOperatorCirculant)."""
from __future__ import annotations

from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import expand_dims, shape
from tensorweave.ops.array.fill import ones, zeros_like
from tensorweave.ops.array.gather import gather
from tensorweave.ops.array.pad import reverse
from tensorweave.ops.linalg.circulant import LinearOperatorCirculant, to_complex
from tensorweave.ops.linalg.full_matrix import checked_tensor
from tensorweave.ops.linalg.linear_operator import (
    LinearOperator, batch_shape_of, broadcast_batch, broadcast_static_shapes)
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.matrix_functions import adjoint as adjoint_matrix
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.signal.fft_ops import fft


@tf_export("linalg.LinearOperatorToeplitz")
class LinearOperatorToeplitz(LinearOperator):
    """tf.linalg.LinearOperatorToeplitz(col, row, is_non_singular=None, is_self_adjoint=None,
    is_positive_definite=None, is_square=None, name='LinearOperatorToeplitz'): T[i, j] =
    col[i - j] for i >= j, row[j - i] above (col[0] is the diagonal; row[0] is ignored)."""

    def __init__(self, col, row, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name="LinearOperatorToeplitz"):
        self._col = checked_tensor(col, "col", min_rank=1)
        self._row = checked_tensor(row, "row", min_rank=1)
        if self._col.dtype != self._row.dtype:
            raise TypeError(f"col and row must have one dtype, got {self._col.dtype.name} and {self._row.dtype.name}")
        if is_square is False:
            raise ValueError("Only square Toeplitz operators currently supported.")
        super().__init__(self._col.dtype, [self._col, self._row], is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name)

    col = property(lambda self: self._col)
    row = property(lambda self: self._row)

    def _shape(self):
        n = self._row.shape[-1:] if self._row.shape.ndims else self._col.shape[-1:]
        return broadcast_static_shapes(self._col.shape[:-1], self._row.shape[:-1]).concatenate(n).concatenate(n)

    def _shape_tensor(self):
        n = shape(self._row)[-1:]
        return concat([batch_shape_of(expand_dims(self._col, -1), expand_dims(self._row, -1)), n, n], 0)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = adjoint_matrix(x) if adjoint_arg else x
        padded = concat([x, zeros_like(x)], -2)
        kernel = concat([self._col, zeros_like(self._col[..., :1]), reverse(self._row[..., 1:], [-1])], -1)
        circulant = LinearOperatorCirculant(fft(to_complex(kernel)), input_output_dtype=self.dtype)
        return circulant.matmul(padded, adjoint=adjoint)[..., :shape(x)[-2], :]

    def _elements(self):
        """[reverse(col), row[1:]]: the i-th row of T is its n entries from n - 1 - i on."""
        col, row = (t[..., 0, :] for t in broadcast_batch(expand_dims(self._col, -2), expand_dims(self._row, -2)))
        return concat([reverse(col, [-1]), row[..., 1:]], -1)

    def _to_dense(self):
        n = shape(self._row)[-1]
        index = (n - 1) - expand_dims(range_(n), -1) + expand_dims(range_(n), 0)
        return gather(self._elements(), index, axis=-1)

    def _diag_part(self):
        diagonal = self._col[..., :1] * ones(shape(self._row)[-1:], dtype=self.dtype)
        return diagonal + zeros_like(self._row)

    def _trace(self):
        return cast(shape(self._row)[-1], self.dtype) * self._col[..., 0] + zeros_like(self._row[..., 0])
