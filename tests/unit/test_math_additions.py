"""TF 2.x names of tf.compat.v1's tf.math (issue 28): cumulative_logsumexp, nextafter, erfcinv,
reciprocal_no_nan, sobol_sample, approx_max_k/approx_min_k; values against numpy/scipy and
against TensorFlow's (recorded by fixtures/record_tf_additions.py), gradients against finite
differences, bad input named by op."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
import scipy.special
from scipy.stats import qmc

import tensorweave as tf
from fixtures.tf_additions_cases import CASES, replay
from fixtures.tf_values_cases import case_fetches
from unit_helpers import check_grad, run

RECORDED = json.load(open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_additions.json")))["cases"]
R = np.random.RandomState(0)


@pytest.mark.parametrize("name", sorted(n for n in CASES if n.startswith("math/")))
def test_matches_tensorflow(name):
    replay(tf, RECORDED, name, case_fetches)


# -- cumulative_logsumexp ---------------------------------------------------------------------------
def _cumulative_logsumexp(x, axis, exclusive, reverse):
    x = np.moveaxis(x, axis, 0)
    x = x[::-1] if reverse else x
    out = np.logaddexp.accumulate(x, axis=0)
    if exclusive:
        out = np.concatenate([np.full_like(out[:1], -np.inf), out[:-1]])
    out = out[::-1] if reverse else out
    return np.moveaxis(out, 0, axis)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, -1])
def test_cumulative_logsumexp_matches_numpy_and_its_gradient_finite_differences(axis, exclusive, reverse):
    x = R.randn(3, 4)
    got = run(tf.math.cumulative_logsumexp(x, axis=axis, exclusive=exclusive, reverse=reverse))
    np.testing.assert_allclose(got, _cumulative_logsumexp(x, axis, exclusive, reverse), rtol=1e-12)

    def finite_part(t):   # an exclusive result starts at -inf: its sum has no derivative
        y = tf.math.cumulative_logsumexp(t, axis=axis, exclusive=exclusive, reverse=reverse)
        return tf.where(tf.is_finite(y), y, tf.zeros_like(y))
    check_grad(finite_part, x)


def test_cumulative_logsumexp_does_not_overflow_and_keeps_float32():
    x = np.array([1000.0, 1000.0, -1000.0], np.float32)
    out = tf.math.cumulative_logsumexp(x)
    assert out.dtype == tf.float32 and out.shape.as_list() == [3]
    np.testing.assert_allclose(run(out), [1000.0, 1000.0 + np.log(2.0), 1000.0 + np.log(2.0)], rtol=1e-6)


def test_cumulative_logsumexp_bad_input_names_the_op():
    with pytest.raises(TypeError, match="CumulativeLogsumexp"):
        tf.math.cumulative_logsumexp(tf.constant([1, 2]))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        tf.math.cumulative_logsumexp(tf.zeros([2, 3]), axis=2)
    axis = tf.placeholder(tf.int32, [])
    out = tf.math.cumulative_logsumexp(tf.zeros([2, 3]), axis=axis)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="CumulativeLogsumexp"):
        sess.run(out, {axis: 5})


# -- nextafter, erfcinv, reciprocal_no_nan --------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nextafter_is_numpys_with_broadcasting(dtype):
    x1 = np.array([[1.0, 0.0, -1.0], [np.inf, 5.0, 2.0]], dtype)
    x2 = np.array([2.0, -1.0, -1.0], dtype)
    out = tf.math.nextafter(x1, x2)
    assert out.dtype.as_numpy_dtype == dtype and out.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(run(out), np.nextafter(x1, x2))


def test_nextafter_gradient_is_ones_for_x1_and_zeros_for_x2():
    x1, x2 = tf.constant([[1.0, 2.0], [3.0, 4.0]], tf.float64), tf.constant([0.0, 9.0], tf.float64)
    g1, g2 = run(tf.gradients(tf.reduce_sum(tf.math.nextafter(x1, x2) * [[1.0, 2.0], [3.0, 4.0]]), [x1, x2]))
    assert g1.tolist() == [[1.0, 2.0], [3.0, 4.0]] and g2.tolist() == [0.0, 0.0]


def test_nextafter_refuses_integers():
    with pytest.raises(TypeError, match="NextAfter"):
        tf.math.nextafter(tf.constant([1]), tf.constant([2]))


def test_erfcinv_inverts_erfc_and_its_gradient_finite_differences():
    x = np.array([0.01, 0.3, 1.0, 1.7, 1.99])
    np.testing.assert_allclose(run(tf.math.erfcinv(x)), scipy.special.erfcinv(x), rtol=1e-12)
    np.testing.assert_allclose(run(tf.math.erfc(tf.math.erfcinv(x))), x, rtol=1e-12)
    check_grad(tf.math.erfcinv, x, tol=1e-5)


def test_reciprocal_no_nan_is_zero_at_zero_with_div_no_nans_gradient():
    x = np.array([0.0, 2.0, -4.0, 0.25])
    assert run(tf.math.reciprocal_no_nan(x)).tolist() == [0.0, 0.5, -0.25, 4.0]
    assert run(tf.math.reciprocal_no_nan(np.array([0j, 2j]))).tolist() == [0j, -0.5j]
    check_grad(tf.math.reciprocal_no_nan, x[1:])
    with pytest.raises(TypeError, match="DivNoNan"):
        tf.math.reciprocal_no_nan(tf.constant([1, 0]))


# -- sobol_sample --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim,num,skip", [(1, 5, 0), (4, 17, 3), (40, 8, 1000)])
def test_sobol_sample_is_the_sobol_sequence_after_its_zero_point(dim, num, skip):
    engine = qmc.Sobol(dim, scramble=False)
    with pytest.warns(UserWarning, match="power of 2"):   # scipy's note on balance; TF takes any count
        expected = engine.random(skip + num + 1)[skip + 1:]
    out = tf.math.sobol_sample(dim, num, skip=skip)
    assert out.dtype == tf.float32 and out.shape.as_list() == [num, dim]
    np.testing.assert_array_equal(run(out), expected.astype(np.float32))
    assert run(tf.math.sobol_sample(dim, num, skip, dtype=tf.float64)).tolist() == expected.tolist()


@pytest.mark.parametrize("args,message", [((0, 3, 0), "dim must be at least one"),
                                          ((2, 0, 0), "num_results must be at least one"),
                                          ((2, 3, -1), "skip must be non-negative"),
                                          ((21201, 1, 0), "dim must be at most 21200")])
def test_sobol_sample_bad_arguments_name_the_op(args, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"SobolSample .*{message}"):
        run(tf.math.sobol_sample(*args))
    with pytest.raises(ValueError, match="float32 or float64"):
        tf.math.sobol_sample(2, 3, dtype=tf.int32)


# -- approx_max_k / approx_min_k ------------------------------------------------------------------------
def test_approx_max_and_min_k_are_the_exact_top_k_along_any_dimension():
    x = R.randn(4, 6, 5).astype(np.float32)
    for axis in (0, 1, -1):
        values, indices = run(tf.math.approx_max_k(x, 3, reduction_dimension=axis))
        order = np.argsort(-x, axis=axis, kind="stable")
        expected = np.take(order, np.arange(3), axis=axis)
        np.testing.assert_array_equal(indices, expected)
        np.testing.assert_array_equal(values, np.take_along_axis(x, expected, axis=axis))
        values, indices = run(tf.math.approx_min_k(x, 2, reduction_dimension=axis))
        expected = np.take(np.argsort(x, axis=axis, kind="stable"), np.arange(2), axis=axis)
        np.testing.assert_array_equal(indices, expected)
        np.testing.assert_array_equal(values, np.take_along_axis(x, expected, axis=axis))


def test_approx_max_k_gradient_reaches_the_chosen_entries_along_dimension_0():
    x = tf.constant([[1.0, 5.0], [3.0, 2.0], [2.0, 4.0]])
    values, _ = tf.math.approx_max_k(x, 2, reduction_dimension=0)
    grad = run(tf.gradients(tf.reduce_sum(values * [[1.0, 2.0], [3.0, 4.0]]), x)[0])
    assert grad.tolist() == [[0.0, 2.0], [1.0, 0.0], [3.0, 4.0]]


def test_approx_top_k_bad_input_names_the_op():
    with pytest.raises(ValueError, match="ApproxTopK.*fewer than k = 4"):
        tf.math.approx_max_k(tf.zeros([2, 3]), 4)
    with pytest.raises(ValueError, match="ApproxTopK: reduction_dimension 2 is out of range"):
        tf.math.approx_min_k(tf.zeros([2, 3]), 1, reduction_dimension=2)
    with pytest.raises(TypeError, match="ApproxTopK"):
        tf.math.approx_max_k(tf.zeros([2, 3], tf.float64), 1)
    x = tf.placeholder(tf.float32, None)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="ApproxTopK"):
        sess.run(tf.math.approx_max_k(x, 4)[0], {x: np.zeros([2, 3])})
