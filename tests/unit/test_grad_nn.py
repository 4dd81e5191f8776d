"""Gradients of the nn ops against central finite differences in float64 at small sizes."""
import numpy as np
import pytest

import tensorweave as tf

rng = np.random.RandomState(11)


pytestmark = pytest.mark.usefixtures("graph", "kernels")


def check(build, *inputs, tol=1e-6, delta=1e-6):
    """build(*placeholders) -> tensor; compares tf.gradients of sum(y * r) with central
    differences of the same scalar, for every input."""
    phs = [tf.placeholder(tf.float64, x.shape) for x in inputs]
    y = build(*phs)
    with tf.Session() as s:
        r = rng.randn(*s.run(y, dict(zip(phs, inputs))).shape)
        loss = tf.reduce_sum(y * tf.constant(np.asarray(r, np.float64)))
        grads = tf.gradients(loss, phs)
        feed = dict(zip(phs, inputs))
        analytic = s.run(grads, feed)
        for i, x in enumerate(inputs):
            num = np.zeros_like(x)
            for idx in np.ndindex(*x.shape):
                xp, xm = x.copy(), x.copy()
                xp[idx] += delta
                xm[idx] -= delta
                num[idx] = (s.run(loss, {**feed, phs[i]: xp}) - s.run(loss, {**feed, phs[i]: xm})) / (2 * delta)
            np.testing.assert_allclose(analytic[i], num, rtol=tol, atol=tol, err_msg=f"input {i}")


def away_from_kinks(shape):
    x = rng.randn(*shape)
    return np.where(np.abs(x) < 0.05, 0.3, x)


@pytest.mark.parametrize("fn", [tf.nn.relu, tf.nn.relu6, tf.nn.elu, tf.nn.selu, tf.nn.leaky_relu,
                                tf.nn.softplus, tf.nn.softsign, tf.nn.softmax, tf.nn.log_softmax, tf.nn.l2_loss])
def test_unary(fn):
    x = away_from_kinks((3, 4)) * 4
    x = np.where(np.abs(x - 6) < 0.05, 5.0, x)
    check(fn, x)


def test_softmax_axis():
    check(lambda x: tf.nn.softmax(x, axis=0), rng.randn(3, 4))


def test_bias_add():
    check(lambda x, b: tf.nn.bias_add(x, b), rng.randn(2, 3, 4), rng.randn(4))
    check(lambda x, b: tf.nn.bias_add(x, b, data_format="NCHW"), rng.randn(2, 3, 2, 2), rng.randn(3))


@pytest.mark.parametrize("fmt,strides,padding,dil", [
    ("NHWC", [1, 1, 1, 1], "SAME", [1, 1, 1, 1]), ("NHWC", [1, 2, 1, 1], "VALID", [1, 1, 1, 1]),
    ("NCHW", [1, 1, 2, 2], "SAME", [1, 1, 1, 1]), ("NHWC", [1, 1, 1, 1], "SAME", [1, 2, 2, 1])])
def test_conv2d(fmt, strides, padding, dil):
    xs = (1, 5, 4, 2) if fmt == "NHWC" else (1, 2, 5, 4)
    check(lambda x, w: tf.nn.conv2d(x, w, strides, padding, data_format=fmt, dilations=dil),
          rng.randn(*xs), rng.randn(2, 2, 2, 3))


def test_conv2d_backprop_ops_are_differentiable():
    check(lambda w, dy: tf.nn.conv2d_backprop_input([1, 4, 4, 2], w, dy, [1, 2, 2, 1], "SAME"),
          rng.randn(3, 3, 2, 2), rng.randn(1, 2, 2, 2))
    check(lambda x, dy: tf.nn.conv2d_backprop_filter(x, [2, 2, 2, 2], dy, [1, 1, 1, 1], "VALID"),
          rng.randn(1, 3, 3, 2), rng.randn(1, 2, 2, 2))


def test_conv2d_transpose():
    check(lambda x, w: tf.nn.conv2d_transpose(x, w, [1, 4, 4, 2], [1, 2, 2, 1], "SAME"),
          rng.randn(1, 2, 2, 3), rng.randn(3, 3, 2, 3))


def test_depthwise_and_separable():
    check(lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME"), rng.randn(1, 3, 3, 2),
          rng.randn(2, 2, 2, 2))
    check(lambda x, d, p: tf.nn.separable_conv2d(x, d, p, [1, 1, 1, 1], "VALID"), rng.randn(1, 3, 3, 2),
          rng.randn(2, 2, 2, 1), rng.randn(1, 1, 2, 2))


def test_pools():
    x = rng.permutation(2 * 5 * 4 * 2).reshape(2, 5, 4, 2) / 7.0  # distinct values: max is smooth
    check(lambda t: tf.nn.max_pool(t, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"), x)
    check(lambda t: tf.nn.avg_pool(t, [1, 3, 2, 1], [1, 2, 1, 1], "SAME"), x)
    check(lambda t: tf.nn.avg_pool(t, [1, 1, 2, 2], [1, 1, 2, 2], "VALID", data_format="NCHW"), x)


def test_fused_batch_norm():
    x = rng.randn(2, 2, 3, 3)
    check(lambda t, s, o: tf.nn.fused_batch_norm(t, s, o, epsilon=1e-3)[0], x, rng.rand(3) + 0.5, rng.randn(3),
          tol=1e-5)
    mu, var = rng.randn(3), rng.rand(3) + 0.5
    check(lambda t, s, o: tf.nn.fused_batch_norm(t, s, o, mean=mu, variance=var, is_training=False)[0],
          x, rng.rand(3) + 0.5, rng.randn(3))


def test_cross_entropies():
    labels = np.exp(rng.randn(3, 4))
    labels /= labels.sum(1, keepdims=True)
    check(lambda lg, lb: tf.nn.softmax_cross_entropy_with_logits_v2(labels=lb, logits=lg), rng.randn(3, 4), labels)
    check(lambda lg: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([1, 0, 3]), logits=lg),
          rng.randn(3, 4))
    check(lambda lg, lb: tf.nn.sigmoid_cross_entropy_with_logits(labels=lb, logits=lg), away_from_kinks((2, 3)),
          rng.rand(2, 3))
    check(lambda lg: tf.nn.weighted_cross_entropy_with_logits(tf.constant(rng.rand(2, 3)), lg, 2.5),
          away_from_kinks((2, 3)))


def test_v1_xent_stops_label_gradient():
    lg, lb = tf.constant(rng.randn(2, 3)), tf.constant(np.full((2, 3), 1 / 3))
    y = tf.nn.softmax_cross_entropy_with_logits(labels=lb, logits=lg)
    assert tf.gradients(y, [lb]) == [None]


def test_lrn():
    check(lambda t: tf.cast(tf.nn.lrn(tf.cast(t, tf.float32), 1, 1.0, 0.5, 0.75), tf.float64), rng.randn(1, 1, 2, 4),
          tol=2e-3,
          delta=1e-3)


def test_l2_normalize_and_moments():
    check(lambda t: tf.nn.l2_normalize(t, axis=1), rng.randn(3, 4))
    check(lambda t: tf.nn.moments(t, [0])[1], rng.randn(4, 3))
