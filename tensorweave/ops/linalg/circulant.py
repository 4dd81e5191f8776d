"""tf.linalg.LinearOperatorCirculant, ...Circulant2D and ...Circulant3D: circulant matrices (and
block-circulant ones with circulant blocks, two or three levels deep) held as their spectrum,
the DFT of their convolution kernel. A product is a convolution done through the FFT ops
(ifft(spectrum * fft(x))), a solve the same with a division; the spectrum is the eigenvalues."""
from __future__ import annotations

import functools
import operator as py_operator

from tensorweave.framework import dtypes
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import expand_dims, matrix_transpose, reshape, shape
from tensorweave.ops.array.fill import ones
from tensorweave.ops.debugging.asserts import assert_equal, assert_positive
from tensorweave.ops.linalg.full_matrix import checked_tensor
from tensorweave.ops.linalg.linear_operator import (
    LinearOperator, abs_, assert_no_entries_with_modulus_zero, dim_value)
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.complex_parts import complex as complex_, imag, real
from tensorweave.ops.math.linalg import conj
from tensorweave.ops.math.matrix_functions import adjoint as adjoint_matrix
from tensorweave.ops.math.reduction import reduce_prod, reduce_sum
from tensorweave.ops.math.unary import log, sqrt
from tensorweave.ops.signal.fft_ops import fft, fft2d, fft3d, ifft, ifft2d, ifft3d

_FFTS = {1: (fft, ifft), 2: (fft2d, ifft2d), 3: (fft3d, ifft3d)}
_COMPLEX_OF = {dtypes.float16: dtypes.complex64, dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128}


def to_complex(x):
    """A float tensor as complex (zero imaginary part); complex ones unchanged."""
    if x.dtype.is_complex:
        return x
    real_dtype = dtypes.float32 if x.dtype == dtypes.float16 else x.dtype
    x = cast(x, real_dtype)
    return complex_(x, x * 0)


class _BaseCirculant(LinearOperator):
    """A circulant of `block_depth` levels: spectrum [..., N0, (N1, (N2))]."""

    def __init__(self, spectrum, block_depth, input_output_dtype, is_non_singular, is_self_adjoint,
                 is_positive_definite, is_square, name):
        if is_square is False:
            raise ValueError("A circulant operator is always square.")
        spectrum = checked_tensor(spectrum, "spectrum", min_rank=block_depth)
        self._spectrum = to_complex(spectrum)
        self._block_depth = block_depth
        super().__init__(input_output_dtype, [spectrum], is_non_singular, is_self_adjoint, is_positive_definite,
                         True, name)

    spectrum = property(lambda self: self._spectrum)
    block_depth = property(lambda self: self._block_depth)

    @property
    def block_shape(self):
        return self._spectrum.shape[-self._block_depth:]

    def block_shape_tensor(self):
        return shape(self._spectrum)[-self._block_depth:]

    def _size(self):
        dims = [dim_value(d) for d in self.block_shape.dims] if self._spectrum.shape.ndims is not None else [None]
        return None if None in dims else functools.reduce(py_operator.mul, dims, 1)

    def _shape(self):
        s = self._spectrum.shape
        if s.ndims is None:
            return s
        return s[:-self._block_depth].concatenate([self._size(), self._size()])

    def _shape_tensor(self):
        n = reduce_prod(self.block_shape_tensor(), keepdims=True)
        return concat([shape(self._spectrum)[:-self._block_depth], n, n], 0)

    def _output(self, y):
        """A complex result in the operator's dtype (the real part for a real dtype)."""
        return y if self.dtype.is_complex else cast(real(y), self.dtype)

    def _convolve(self, x, spectrum):
        """ifft(spectrum * fft(x)) over x's rows, read as blocks of the block shape."""
        forward, inverse = _FFTS[self._block_depth]
        rows = matrix_transpose(to_complex(x))                       # [..., R, N]
        blocks = reshape(rows, concat([shape(rows)[:-1], self.block_shape_tensor()], 0))
        spectrum = cast(spectrum, blocks.dtype)
        out = inverse(expand_dims(spectrum, -self._block_depth - 1) * forward(blocks))
        out = reshape(out, concat([shape(out)[:-self._block_depth], [-1]], 0))
        return self._output(matrix_transpose(out))

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = adjoint_matrix(x) if adjoint_arg else x
        return self._convolve(x, conj(self._spectrum) if adjoint else self._spectrum)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = adjoint_matrix(rhs) if adjoint_arg else rhs
        return self._convolve(rhs, 1.0 / (conj(self._spectrum) if adjoint else self._spectrum))

    def _block_axes(self):
        return list(range(-self._block_depth, 0))

    def _determinant(self):
        return self._output(reduce_prod(self._spectrum, axis=self._block_axes()))

    def _log_abs_determinant(self):
        return cast(reduce_sum(log(abs_(self._spectrum)), axis=self._block_axes()), self.dtype.real_dtype)

    def _trace(self):
        return self._output(reduce_sum(self._spectrum, axis=self._block_axes()))

    def _diag_part(self):
        # every diagonal entry is the kernel's first entry, the spectrum's mean
        n = cast(reduce_prod(self.block_shape_tensor()), self._spectrum.dtype)
        mean = self._output(reduce_sum(self._spectrum, axis=self._block_axes()) / n)
        return expand_dims(mean, -1) * ones(reduce_prod(self.block_shape_tensor(), keepdims=True), dtype=self.dtype)

    def _eigvals(self):
        flat = reshape(self._spectrum, concat([shape(self._spectrum)[:-self._block_depth], [-1]], 0))
        return self._output(flat)

    def convolution_kernel(self, name="convolution_kernel"):
        """The kernel whose circular convolution this operator is: ifft of the spectrum."""
        with self._name_scope(name):
            return self._output(_FFTS[self._block_depth][1](self._spectrum))

    def _assert_non_singular(self):
        return assert_no_entries_with_modulus_zero(self._spectrum,
                                                   "Singular operator:  Spectrum contained zero values.")

    def _assert_positive_definite(self):
        return assert_positive(real(self._spectrum), message="Not positive definite:  Real(spectrum) was not positive.")

    def _assert_self_adjoint(self):
        return assert_equal(imag(self._spectrum), 0.0, message="Not self-adjoint:  The spectrum contained non-real "
                                                               "values.")

    def _with(self, spectrum, **hints):
        return type(self)(spectrum, input_output_dtype=self.dtype, **hints)

    def _adjoint(self):
        return self._with(conj(self._spectrum), is_non_singular=self.is_non_singular,
                          is_self_adjoint=self.is_self_adjoint, is_positive_definite=self.is_positive_definite)

    def _inverse(self):
        return self._with(1.0 / self._spectrum, is_non_singular=self.is_non_singular,
                          is_self_adjoint=self.is_self_adjoint, is_positive_definite=self.is_positive_definite)

    def _cholesky(self):
        return self._with(sqrt(self._spectrum), is_non_singular=True, is_self_adjoint=True, is_positive_definite=True)


class _CirculantOfDepth(_BaseCirculant):
    _depth = 1

    def __init__(self, spectrum, input_output_dtype=dtypes.complex64, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=True, name=None):
        super().__init__(spectrum, self._depth, input_output_dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square, name or type(self).__name__)


@tf_export("linalg.LinearOperatorCirculant")
class LinearOperatorCirculant(_CirculantOfDepth):
    """tf.linalg.LinearOperatorCirculant(spectrum, input_output_dtype=tf.complex64,
    is_non_singular=None, is_self_adjoint=None, is_positive_definite=None, is_square=True,
    name='LinearOperatorCirculant'): the N x N circulant matrix of eigenvalues `spectrum` [..., N]
    (a real operator for a Hermitian spectrum)."""


@tf_export("linalg.LinearOperatorCirculant2D")
class LinearOperatorCirculant2D(_CirculantOfDepth):
    """tf.linalg.LinearOperatorCirculant2D(spectrum, input_output_dtype=tf.complex64, ...): block
    circulant with circulant blocks, spectrum [..., N0, N1] (the fft2d of the kernel)."""
    _depth = 2


@tf_export("linalg.LinearOperatorCirculant3D")
class LinearOperatorCirculant3D(_CirculantOfDepth):
    """tf.linalg.LinearOperatorCirculant3D(spectrum, input_output_dtype=tf.complex64, ...): three
    levels of circulant blocks, spectrum [..., N0, N1, N2] (the fft3d of the kernel)."""
    _depth = 3
