"""Complex parts, bitwise ops, roll, tensor_scatter_*, polyval, monotonicity tests and
linalg.normalize: values against numpy, gradients against central finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from unit_helpers import check_grad, run

R = np.random.RandomState(8)


def test_complex_parts_and_their_gradients():
    re, im = R.randn(3, 2), R.randn(3, 2)
    z = re + 1j * im
    c, r, i, a, r_real, i_real, a_real = run([tf.complex(re, im), tf.real(z), tf.imag(z), tf.angle(z), tf.real(re),
                                               tf.imag(re), tf.angle(np.array([-2.0, 0.0, 3.0]))])
    assert c.dtype == np.complex128
    np.testing.assert_allclose(c, z)
    np.testing.assert_allclose(r, re)
    np.testing.assert_allclose(i, im)
    np.testing.assert_allclose(a, np.angle(z))
    np.testing.assert_allclose(r_real, re)
    np.testing.assert_allclose(i_real, 0 * re)
    np.testing.assert_allclose(a_real, [np.pi, 0, 0])
    assert tf.complex(tf.zeros([2]), tf.zeros([2])).dtype == tf.complex64
    check_grad(lambda x, y: tf.real(tf.complex(x, y) * tf.complex(y, x)), re, im)
    check_grad(lambda x, y: tf.imag(tf.complex(x, y) * tf.complex(y, x)), re, im)
    check_grad(lambda x, y: tf.angle(tf.complex(x, y)), re, im)


def test_bitwise_ops():
    x = np.array([5, -3, 12, 0], np.int32)
    y = np.array([3, 1, 2, 40], np.int32)
    out = run([tf.bitwise.bitwise_and(x, y), tf.bitwise.bitwise_or(x, y), tf.bitwise.bitwise_xor(x, y),
               tf.bitwise.invert(x), tf.bitwise.left_shift(x, y), tf.bitwise.right_shift(x, y)])
    np.testing.assert_array_equal(out[0], x & y)
    np.testing.assert_array_equal(out[1], x | y)
    np.testing.assert_array_equal(out[2], x ^ y)
    np.testing.assert_array_equal(out[3], ~x)
    np.testing.assert_array_equal(out[4], [40, -6, 48, 0])
    np.testing.assert_array_equal(out[5], [0, -2, 3, 0])
    with pytest.raises(TypeError, match="float32 not in list"):
        tf.bitwise.bitwise_and(tf.ones([2]), tf.ones([2]))


def test_roll_and_tensor_scatter():
    x = np.arange(12.0).reshape(3, 4)
    rolled, both = run([tf.roll(x, 1, 0), tf.manip.roll(x, [1, -1], [0, 1])])
    np.testing.assert_array_equal(rolled, np.roll(x, 1, 0))
    np.testing.assert_array_equal(both, np.roll(x, (1, -1), (0, 1)))
    check_grad(lambda v: tf.roll(v, [2, 1], [1, 0]), x)
    idx = np.array([[0], [2], [0]])
    upd = R.randn(3, 4)
    up, add, sub = run([tf.tensor_scatter_update(x, idx[:2], upd[:2]), tf.tensor_scatter_add(x, idx, upd),
                        tf.tensor_scatter_sub(x, idx, upd)])
    expect = x.copy()
    expect[[0, 2]] = upd[:2]
    np.testing.assert_allclose(up, expect)
    expect = x.copy()
    np.add.at(expect, idx[:, 0], upd)
    np.testing.assert_allclose(add, expect)
    expect = x.copy()
    np.add.at(expect, idx[:, 0], -upd)
    np.testing.assert_allclose(sub, expect)
    check_grad(lambda t, u: tf.tensor_scatter_update(t, idx[:2], u), x, upd[:2])
    check_grad(lambda t, u: tf.tensor_scatter_add(t, idx, u), x, upd)
    check_grad(lambda t, u: tf.tensor_scatter_sub(t, idx, u), x, upd)


def test_polyval_monotonicity_and_normalize():
    x = R.randn(4)
    p, flat, inc, strict, eq_strict = run([tf.math.polyval([2.0, -1.0, 3.0], x), tf.math.polyval([], x),
                                           tf.is_non_decreasing([1, 1, 2]), tf.is_strictly_increasing([[1, 2], [3, 4]]),
                                           tf.is_strictly_increasing([1, 1, 2])])
    np.testing.assert_allclose(p, 2 * x ** 2 - x + 3)
    np.testing.assert_allclose(flat, 0 * x)
    assert inc and strict and not eq_strict
    check_grad(lambda v: tf.math.polyval([2.0, -1.0, 3.0], v), x)
    m = R.randn(3, 4)
    normalized, norm = run(tf.linalg.normalize(m, axis=1))
    np.testing.assert_allclose(norm, np.linalg.norm(m, axis=1, keepdims=True))
    np.testing.assert_allclose(normalized, m / norm)
