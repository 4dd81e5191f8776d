"""TF 2.16's N-D FFTs over chosen axes (tf.signal.fftnd, ifftnd, rfftnd, irfftnd with fft_length,
axes and norm; tf.fftnd ... the bare FFTND ... IRFFTND ops) against numpy.fft, whose fftn they
equal (TF 2.21's CPU has no kernel for them to record); their gradients against finite
differences."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from unit_helpers import check_grad, run

R = np.random.RandomState(16)
s = tf.signal
X = (R.randn(3, 4, 5) + 1j * R.randn(3, 4, 5)).astype(np.complex64)
XR = R.randn(3, 4, 5).astype(np.float32)
NORMS = [None, "backward", "ortho", "forward"]


def _close(t, want, atol=1e-4):
    got = run(t)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=atol)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("fft_length,axes", [(None, None), (None, [0, 2]), ([4, 6], [0, 2]), ([2, 7], [-1, 0]),
                                             ([3], [1])])
def test_complex_nd_ffts_equal_numpy(fft_length, axes, norm):
    _close(s.fftnd(X, fft_length, axes, norm), np.fft.fftn(X, fft_length, axes, norm).astype(np.complex64))
    _close(s.ifftnd(X, fft_length, axes, norm), np.fft.ifftn(X, fft_length, axes, norm).astype(np.complex64))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("fft_length,axes", [(None, None), (None, [1, 2]), ([4, 7], [0, 1]), ([6, 3], [2, 1]),
                                             ([2, 3], [1, 2])])
def test_real_nd_ffts_equal_numpy(fft_length, axes, norm):
    _close(s.rfftnd(XR, fft_length, axes, norm), np.fft.rfftn(XR, fft_length, axes, norm).astype(np.complex64))
    _close(s.irfftnd(X, fft_length, axes, norm), np.fft.irfftn(X, fft_length, axes, norm).astype(np.float32))


def test_irfftnd_inverts_rfftnd_and_doubles_precision():
    x = R.randn(2, 6, 7)
    half = s.rfftnd(tf.constant(x), axes=[1, 2])
    assert half.dtype == tf.complex128 and half.shape.as_list() == [2, 6, 4]
    np.testing.assert_allclose(run(s.irfftnd(half, [6, 7], axes=[1, 2])), x, atol=1e-12)


def test_bare_ops_take_fft_length_and_axes():
    _close(tf.fftnd(X, [3, 4, 5], [0, 1, 2]), np.fft.fftn(X))
    _close(tf.ifftnd(X, [6], [1]), np.fft.ifftn(X, [6], [1]).astype(np.complex64))
    _close(tf.rfftnd(XR.astype(np.float64), [4, 5], [1, 2], Tcomplex=tf.complex128),
           np.fft.rfftn(XR.astype(np.float64), axes=[1, 2]), atol=1e-10)
    _close(tf.irfftnd(X, [4, 8], [1, 2]), np.fft.irfftn(X, [4, 8], [1, 2]).astype(np.float32))
    op = tf.rfftnd(XR, [4, 5], [1, 2]).op
    assert op.type == "RFFTND" and [t.op.type for t in op.inputs] == ["Const"] * 3
    assert op.get_attr("Treal") == tf.float32 and op.get_attr("Tcomplex") == tf.complex64


def test_static_shapes_and_unknown_lengths():
    p = tf.placeholder(tf.complex64, [None, 4, 5])
    assert s.fftnd(p, [4, 6], axes=[1, 2]).shape.as_list() == [None, 4, 6]
    assert s.irfftnd(p, [4, 6], axes=[1, 2]).shape.as_list() == [None, 4, 6]
    assert s.irfftnd(p, axes=[1, 2]).shape.as_list() == [None, 4, 8]
    n = tf.placeholder(tf.int32, [2])
    y = s.fftnd(p, n, axes=[1, 2], norm="ortho")
    assert y.shape.as_list() == [None, None, None]
    got = run(y, {p: X, n: [3, 7]})
    np.testing.assert_allclose(got, np.fft.fftn(X, [3, 7], [1, 2], norm="ortho"), rtol=1e-4, atol=1e-4)


def test_bad_arguments_name_the_op():
    with pytest.raises(ValueError, match="norm must be one of"):
        s.fftnd(X, norm="half")
    with pytest.raises(ValueError, match="same length"):
        tf.fftnd(X, [3, 4], [0])
    with pytest.raises(ValueError, match="out of range"):
        s.fftnd(X, axes=[3])
    with pytest.raises(TypeError, match="input"):
        tf.fftnd(XR, [5], [2])
    n, a = tf.placeholder(tf.int32, [None]), tf.placeholder(tf.int32, [None])
    y = tf.fftnd(X, n, a)
    with pytest.raises(tf.errors.InvalidArgumentError, match="FFTND.*distinct dimensions"):
        run(y, {n: [3, 3], a: [0, 0]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="FFTND.*non-negative"):
        run(y, {n: [-3], a: [0]})


def _parts(z):
    return tf.concat([tf.real(z), tf.imag(z)], -1)


@pytest.mark.parametrize("fft_length,axes,norm", [(None, None, None), ([4, 3], [0, 2], None), ([2, 6], [2, 1], "ortho"),
                                                  ([5], [-2], "forward")])
def test_complex_nd_fft_gradients_match_finite_differences(fft_length, axes, norm):
    for fn in (s.fftnd, s.ifftnd):
        check_grad(lambda re, im: _parts(fn(tf.complex(re, im), fft_length, axes, norm)),
                   R.randn(2, 3, 4), R.randn(2, 3, 4))


@pytest.mark.parametrize("fft_length,axes,norm", [(None, None, None), ([4, 5], [0, 2], None), ([2, 7], [2, 1], "ortho"),
                                                  ([3, 2], [1, 0], "forward")])
def test_real_nd_fft_gradients_match_finite_differences(fft_length, axes, norm):
    check_grad(lambda x: _parts(s.rfftnd(x, fft_length, axes, norm)), R.randn(2, 3, 4))
    # the imaginary parts that the inverse ignores (DC and Nyquist along the last axis) get 0
    check_grad(lambda re, im: s.irfftnd(tf.complex(re, im), fft_length, axes, norm), R.randn(2, 3, 4),
               R.randn(2, 3, 4))


def test_gradients_with_unknown_shapes():
    check_grad(lambda x: _parts(s.rfftnd(x, [3, 6], [0, 1])), R.randn(2, 4), dynamic=True)
    check_grad(lambda re, im: _parts(s.fftnd(tf.complex(re, im), [3, 2], [1, 0])), R.randn(2, 4), R.randn(2, 4),
               dynamic=True)
