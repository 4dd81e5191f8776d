"""Gradients of the math op family against central finite differences in float64, with static
and run-time-only shapes, plus TF's conventions at ties and singular points."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from unit_helpers import check_grad

R = np.random.RandomState(3)


M23 = R.uniform(0.5, 2.0, (2, 3))
V3 = R.uniform(0.5, 2.0, (3,))
S = np.float64(1.3)


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("fn", [
    tf.add, tf.subtract, tf.multiply, tf.realdiv, tf.truediv, tf.pow, tf.squared_difference, tf.maximum,
    tf.minimum, tf.div_no_nan, lambda x, y: x + y, lambda x, y: x * y - y / x, lambda x, y: x ** y,
    lambda x, y: tf.floormod(x, y),
], ids=lambda f: getattr(f, "__name__", "lambda"))
def test_binary_grads_broadcasting(fn, dynamic):
    check_grad(fn, M23, V3, dynamic=dynamic)
    check_grad(fn, S, M23, dynamic=dynamic)


def test_maximum_minimum_ties_go_to_x():
    with tf.Graph().as_default():
        x, y = tf.constant([1.0, 2.0, 3.0]), tf.constant([2.0, 2.0, 2.0])
        gmax = tf.gradients(tf.maximum(x, y), [x, y])
        gmin = tf.gradients(tf.minimum(x, y), [x, y])
        with tf.Session() as sess:
            out = sess.run(gmax + gmin)
    np.testing.assert_array_equal(out[0], [0, 1, 1])
    np.testing.assert_array_equal(out[1], [1, 0, 0])
    np.testing.assert_array_equal(out[2], [1, 1, 0])
    np.testing.assert_array_equal(out[3], [0, 0, 1])


def test_pow_grad_at_nonpositive_base():
    with tf.Graph().as_default():
        x, y = tf.constant([0.0, -2.0, 2.0], tf.float64), tf.constant([2.0, 2.0, 2.0], tf.float64)
        gx, gy = tf.gradients(tf.pow(x, y), [x, y])
        with tf.Session() as sess:
            gx, gy = sess.run([gx, gy])
    np.testing.assert_allclose(gx, [0.0, -4.0, 4.0])
    np.testing.assert_allclose(gy, [0.0, 0.0, 4 * np.log(2.0)])


POS = R.uniform(0.2, 0.9, (2, 3))
ANY = R.uniform(-1.5, 1.5, (2, 3))


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("name,data", [
    ("abs", ANY), ("negative", ANY), ("square", ANY), ("sqrt", POS), ("rsqrt", POS), ("reciprocal", POS),
    ("exp", ANY), ("expm1", ANY), ("log", POS), ("log1p", POS), ("sin", ANY), ("cos", ANY), ("tan", ANY),
    ("asin", POS), ("acos", POS), ("atan", ANY), ("sinh", ANY), ("cosh", ANY), ("tanh", ANY),
    ("sigmoid", ANY), ("log_sigmoid", ANY), ("erf", ANY),
])
def test_unary_grads(name, data, dynamic):
    check_grad(getattr(tf, name), data, dynamic=dynamic)


def test_sign_and_rounding_grads():
    with tf.Graph().as_default():
        x = tf.constant([-1.5, 0.5, 2.0])
        g_sign = tf.gradients(tf.sign(x), x)[0]
        assert tf.gradients(tf.floor(x), x) == [None]
        assert tf.gradients(tf.round(x), x) == [None]
        assert tf.gradients(tf.argmax(x), x) == [None]
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(g_sign), [0, 0, 0])


def test_cast_grad():
    with tf.Graph().as_default():
        x64 = tf.constant([1.0, 2.0], tf.float64)
        g = tf.gradients(tf.reduce_sum(tf.cast(x64, tf.float32) * 3.0), x64)[0]
        assert g.dtype == tf.float64
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(g), [3.0, 3.0])
        x = tf.constant([1.0])
        assert tf.gradients(tf.cast(tf.cast(x, tf.int32), tf.float32), x) == [None]


def test_add_n_grad():
    check_grad(lambda a, b: tf.add_n([a, b, a * b]), M23, M23 + 1)


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("name", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
                                  "reduce_logsumexp"])
@pytest.mark.parametrize("axis,keep", [(None, False), (0, False), (-1, True), ([0, 2], False), ([1], True)])
def test_reduction_grads(name, axis, keep, dynamic):
    data = R.permutation(24).reshape(2, 3, 4) / 10.0 + 0.5  # distinct values: max/min differentiable
    check_grad(lambda x: getattr(tf, name)(x, axis=axis, keepdims=keep), data, dynamic=dynamic)


def test_prod_grad_with_zeros():
    check_grad(lambda x: tf.reduce_prod(x, 1), np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]]))


def test_max_grad_splits_ties_equally():
    with tf.Graph().as_default():
        x = tf.constant([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
        g = tf.gradients(tf.reduce_max(x, 1), x)[0]
        g2 = tf.gradients(tf.reduce_min(x), x)[0]
        with tf.Session() as sess:
            out = sess.run([g, g2])
    np.testing.assert_allclose(out[0], [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(out[1], [[1, 0, 0], [0, 0, 0]])


def test_mean_grad_of_runtime_shape_divides_by_count():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, None])
        g = tf.gradients(tf.reduce_mean(x, 1), x)[0]
        with tf.Session() as sess:
            out = sess.run(g, {x: np.ones((2, 4), np.float32)})
    np.testing.assert_allclose(out, np.full((2, 4), 0.25))
    assert out.dtype == np.float32


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_grads(exclusive, reverse):
    check_grad(lambda x: tf.cumsum(x, 1, exclusive=exclusive, reverse=reverse), M23)
    check_grad(lambda x: tf.cumprod(x, 0, exclusive=exclusive, reverse=reverse), M23)


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_grads(ta, tb, dynamic):
    a = R.randn(3, 2) if ta else R.randn(2, 3)
    b = R.randn(4, 3) if tb else R.randn(3, 4)
    if dynamic:
        check_grad(lambda x, y: tf.matmul(tf.reshape(x, a.shape), tf.reshape(y, b.shape), transpose_a=ta,
                                          transpose_b=tb), a, b, dynamic=True)
    else:
        check_grad(lambda x, y: tf.matmul(x, y, transpose_a=ta, transpose_b=tb), a, b)


@pytest.mark.parametrize("adj_a,adj_b", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_matmul_grads_with_broadcast(adj_a, adj_b):
    a = R.randn(2, 1, 3, 2) if adj_a else R.randn(2, 1, 2, 3)
    b = R.randn(3, 4, 3) if adj_b else R.randn(3, 3, 4)
    check_grad(lambda x, y: tf.matmul(x, y, adjoint_a=adj_a, adjoint_b=adj_b), a, b)
    check_grad(lambda x, y: tf.matmul(x, y, transpose_a=adj_a, transpose_b=adj_b), a, b, dynamic=True)


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij->j", [(2, 3)]), ("i,j->ij", [(3,), (2,)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]), ("ij,k->i", [(2, 3), (2,)]),
])
def test_einsum_grads(eq, shapes):
    check_grad(lambda *xs: tf.einsum(eq, *xs), *[R.randn(*s) for s in shapes])


def test_tensordot_and_norm_grads():
    check_grad(lambda x, y: tf.tensordot(x, y, [[0, 1], [1, 0]]), R.randn(2, 3, 2), R.randn(3, 2))
    check_grad(lambda x: tf.norm(x), ANY)
    check_grad(lambda x: tf.norm(x, ord=1, axis=1), ANY)
    check_grad(lambda x: tf.norm(x, ord=3, axis=0), ANY)


def test_clip_grads():
    check_grad(lambda x: tf.clip_by_value(x, -0.7, 0.9), ANY)
    check_grad(lambda x: tf.clip_by_norm(x, 1.0), ANY)
    check_grad(lambda x: tf.clip_by_norm(x, 100.0), ANY)
    check_grad(lambda x, y: tf.global_norm([x, y]), ANY, V3)
    check_grad(lambda x, y: tf.clip_by_global_norm([x, y], 1.0)[0][0], ANY, V3)


def test_segment_sum_grads():
    check_grad(lambda x: tf.unsorted_segment_sum(x, tf.constant([1, -1, 1]), 3), R.randn(3, 2))
    check_grad(lambda x: tf.segment_sum(x, tf.constant([0, 0, 2])), R.randn(3, 2))


def test_gradient_op_names_are_scoped():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [2])
        tf.gradients(tf.reduce_sum(x * x), x)
        names = [op.name for op in g.get_operations()]
    assert any(n.startswith("gradients/mul_grad/") for n in names)
