"""Special functions and the other elementwise math additions against scipy/numpy, with
gradients against central finite differences (float64)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import tensorweave as tf
from unit_helpers import check_grad, run

R = np.random.RandomState(11)
POS = R.uniform(0.5, 3.0, (3, 4))
UNIT = R.uniform(0.05, 0.95, (3, 4))
SIGNED = R.uniform(-2.0, 2.0, (3, 4))


@pytest.mark.parametrize("fn,ref,x", [
    (tf.lgamma, sp.gammaln, POS), (tf.digamma, sp.digamma, POS), (tf.erfc, sp.erfc, SIGNED),
    (tf.math.erfinv, sp.erfinv, UNIT * 2 - 1), (tf.math.ndtri, sp.ndtri, UNIT), (tf.math.bessel_i0e, sp.i0e, SIGNED),
    (tf.math.bessel_i1e, sp.i1e, SIGNED), (tf.math.bessel_i0, sp.i0, SIGNED), (tf.math.bessel_i1, sp.i1, SIGNED),
    (tf.asinh, np.arcsinh, SIGNED), (tf.acosh, np.arccosh, POS + 1), (tf.atanh, np.arctanh, UNIT * 2 - 1),
], ids=lambda v: getattr(v, "__name__", ""))
def test_unary_values_and_gradients(fn, ref, x):
    out = run(fn(x.astype(np.float32)))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ref(x).astype(np.float32), rtol=2e-6, atol=1e-6)
    check_grad(fn, x, tol=1e-5)


@pytest.mark.parametrize("fn,ref,a,b", [
    (tf.igamma, sp.gammainc, POS, POS[0]), (tf.igammac, sp.gammaincc, POS, UNIT * 4),
    (tf.zeta, sp.zeta, POS + 1.5, POS),
    (tf.polygamma, lambda n, x: sp.polygamma(n.astype(int), x), np.array([0.0, 1.0, 2.0, 3.0]), POS),
    (tf.atan2, np.arctan2, SIGNED, SIGNED[::-1]), (tf.math.xlogy, sp.xlogy, SIGNED * (SIGNED > 0), POS),
    (tf.math.xdivy, lambda x, y: np.where(x == 0, 0, x / y), SIGNED * (SIGNED > 0), POS),
    (tf.math.xlog1py, sp.xlog1py, SIGNED * (SIGNED > 0), POS),
    (tf.math.multiply_no_nan, lambda x, y: np.where(y == 0, 0, x * y), SIGNED, SIGNED * (SIGNED > 0)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_binary_values(fn, ref, a, b):
    np.testing.assert_allclose(run(fn(a, b)), ref(*np.broadcast_arrays(a, b)), rtol=1e-10)


def test_x_zero_ops_are_zero_where_x_is_zero_even_at_singular_y():
    out = run([tf.math.xlogy(0.0, 0.0), tf.math.xdivy(0.0, 0.0), tf.math.multiply_no_nan(np.inf, 0.0)])
    assert out == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("build,values", [
    (lambda a, x: tf.igamma(a, x), (POS, UNIT * 4)),
    (lambda a, x: tf.igammac(a, x), (POS, UNIT * 4)),
    (lambda a, x: tf.igamma(a, x), (POS * 20, POS * 80)),    # the large-x branch of d/da
    (lambda q: tf.zeta(3.5, q), (POS,)),
    (lambda x: tf.polygamma(2.0, x), (POS,)),
    (lambda x: tf.betainc(2.5, 1.5, x), (UNIT,)),
    (tf.atan2, (SIGNED, SIGNED[::-1] + 0.1)),
    (tf.math.xlogy, (SIGNED, POS)),
    (tf.math.xdivy, (SIGNED, POS)),
    (tf.math.xlog1py, (SIGNED, POS)),
    (tf.math.multiply_no_nan, (SIGNED, POS)),
    (lambda x: tf.lbeta(x), (POS,)),
])
def test_binary_gradients(build, values):
    check_grad(build, *values, tol=1e-5)


def test_betainc_lbeta_and_reductions_match_scipy():
    a, b, x = POS, POS[::-1], UNIT
    out = run([tf.betainc(a, b, x), tf.lbeta(POS), tf.lbeta(np.zeros((2, 0))), tf.math.reduce_std(SIGNED, 1),
               tf.math.reduce_variance(SIGNED), tf.math.reduce_euclidean_norm(SIGNED, 0, keepdims=True),
               tf.math.reduce_euclidean_norm([3, 4])])
    np.testing.assert_allclose(out[0], sp.betainc(a, b, x), rtol=1e-10)
    np.testing.assert_allclose(out[1], sp.gammaln(POS).sum(-1) - sp.gammaln(POS.sum(-1)), rtol=1e-10)
    assert np.all(out[2] == -np.inf)
    np.testing.assert_allclose(out[3], SIGNED.std(1))
    np.testing.assert_allclose(out[4], SIGNED.var())
    np.testing.assert_allclose(out[5], np.sqrt((SIGNED ** 2).sum(0, keepdims=True)))
    assert out[6] == 5 and out[6].dtype == np.int32


def test_polygamma_of_non_integer_order_is_nan():
    assert np.isnan(run(tf.polygamma(0.5, 1.0)))


def test_i1e_gradient_at_zero_is_one_half():
    x = tf.constant([0.0, 1e-30])
    np.testing.assert_allclose(run(tf.gradients(tf.reduce_sum(tf.math.bessel_i1e(x)), x)[0]), [0.5, 0.5])


def test_histograms_and_confusion_matrix():
    values = np.array([-1.0, 0.0, 1.5, 2.0, 5.0, 15.0])
    hist, bins, cm, cm_w = run([tf.histogram_fixed_width(values, [0.0, 5.0], nbins=5),
                                tf.histogram_fixed_width_bins(values, [0.0, 5.0], nbins=5),
                                tf.confusion_matrix([1, 2, 4], [2, 2, 4]),
                                tf.confusion_matrix([0, 0, 1], [0, 1, 1], num_classes=3, weights=[0.5, 1.0, 2.0],
                                                    dtype=tf.float32)])
    np.testing.assert_array_equal(hist, [2, 1, 1, 0, 2])
    np.testing.assert_array_equal(bins, [0, 0, 1, 2, 4, 4])
    expect = np.zeros((5, 5), np.int32)
    expect[1, 2] = expect[2, 2] = expect[4, 4] = 1
    np.testing.assert_array_equal(cm, expect)
    np.testing.assert_array_equal(cm_w, [[0.5, 1, 0], [0, 2, 0], [0, 0, 0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="value_range"):
        run(tf.histogram_fixed_width(values, [5.0, 0.0]))


def test_setdiff1d_keeps_order_and_duplicates():
    out, idx = run(tf.setdiff1d([1, 2, 3, 4, 3, 6], [1, 4]))
    np.testing.assert_array_equal(out, [2, 3, 3, 6])
    np.testing.assert_array_equal(idx, [1, 2, 4, 5])
