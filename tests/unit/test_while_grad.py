"""Gradients of tf.while_loop (and of scan/map_fn/foldl built on it), against finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")
XV = np.array([0.3, -0.7, 1.1])


def grad_error(x, y, x_value):
    with tf.Session():
        return tf.test.compute_gradient_error(x, list(x_value.shape), y, y.shape.as_list(), x_init_value=x_value)


def test_simple_loop_and_loop_var_passthrough():
    x = tf.placeholder(tf.float64, [3])
    i, y, z = tf.while_loop(lambda i, v, u: i < 4, lambda i, v, u: (i + 1, tf.sin(v) * x, u), [0, x, 2.0 * x])
    assert grad_error(x, y, XV) < 1e-5
    assert grad_error(x, z, XV) < 1e-8
    assert tf.gradients(i, x) == [None]   # the int counter carries no gradient


def test_maximum_iterations_stops_the_gradient_too():
    x = tf.placeholder(tf.float64, [3])
    y = tf.while_loop(lambda v: tf.reduce_sum(v) < 1e9, lambda v: v * x + 1.0, [x], maximum_iterations=3)
    assert grad_error(x, y, XV) < 1e-5
    g = tf.gradients(tf.reduce_sum(y), x)[0]
    with tf.Session() as sess:
        # y = x^4 + x^2 + x after three iterations
        np.testing.assert_allclose(sess.run(g, {x: XV}), 4 * XV ** 3 + 2 * XV + 1, rtol=1e-12)


def test_zero_iterations_pass_the_gradient_through():
    x = tf.placeholder(tf.float64, [3])
    w = tf.constant(3.0, tf.float64)
    y = tf.while_loop(lambda v: tf.reduce_sum(v) > 100.0, lambda v: v * w, [x])
    gx, gw = tf.gradients(tf.reduce_sum(y), [x, w])
    with tf.Session() as sess:
        a, b = sess.run([gx, gw], {x: XV})
    np.testing.assert_array_equal(a, np.ones(3))
    assert b == 0.0


def test_nested_loops_three_deep_with_captured_outer_loop_vars():
    x = tf.placeholder(tf.float64, [3])

    def level3(k, u):
        return k + 1, tf.sin(u) * x

    def level2(j, w, i):
        _, u = tf.while_loop(lambda k, u: k < i + 1, level3, [0, w])
        return j + 1, u + w, i

    def level1(i, v):
        _, w, _ = tf.while_loop(lambda j, w, i_: j < 2, level2, [0, v, i])
        return i + 1, w * 0.5

    _, y = tf.while_loop(lambda i, v: i < 2, level1, [0, x])
    assert grad_error(x, y, XV) < 1e-5


def test_variable_in_body_gets_its_gradient_and_trains():
    rng = np.random.RandomState(0)
    w0 = rng.randn(3, 3) * 0.5
    w = tf.Variable(w0, name="W")
    x = tf.placeholder(tf.float64, [2, 3])
    _, h = tf.while_loop(lambda i, h: i < 4, lambda i, h: (i + 1, tf.tanh(tf.matmul(h, w))), [0, x])
    loss = tf.reduce_sum(h * h)
    gw = tf.gradients(loss, w)[0]
    xv = rng.randn(2, 3)

    def f(wm):
        hh = xv
        for _ in range(4):
            hh = np.tanh(hh @ wm)
        return (hh * hh).sum()
    eps = 1e-6
    numeric = np.zeros_like(w0)
    for idx in np.ndindex(3, 3):
        d = np.zeros_like(w0)
        d[idx] = eps
        numeric[idx] = (f(w0 + d) - f(w0 - d)) / (2 * eps)
    train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(gw, {x: xv}), numeric, atol=1e-8)
        before = sess.run(loss, {x: xv})
        for _ in range(5):
            sess.run(train, {x: xv})
        assert sess.run(loss, {x: xv}) < before


def test_backward_pass_sees_the_forward_random_values():
    # dropout inside the body: the gradient must use the forward pass's masks, not fresh ones
    x = tf.placeholder(tf.float64, [200])
    y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, tf.nn.dropout(v, rate=0.5)), [0, x])[1]
    g = tf.gradients(tf.reduce_sum(y), x)[0]
    with tf.Session() as sess:
        yv, gv = sess.run([y, g], {x: np.ones(200)})
    assert 0 < np.count_nonzero(yv) < 200
    np.testing.assert_array_equal(gv, yv)   # y = x * (product of masks) / keep^3


def test_gradient_built_after_the_forward_loop_ran():
    x = tf.placeholder(tf.float64, [3])
    _, y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, tf.tanh(v) * x), [0, x])
    with tf.Session() as sess:
        first = sess.run(y, {x: XV})
        g = tf.gradients(tf.reduce_sum(y), x)[0]
        again, gv = sess.run([y, g], {x: XV})
        np.testing.assert_array_equal(first, again)
        eps = 1e-6
        numeric = [(sess.run(tf.reduce_sum(y), {x: XV + eps * e}) - sess.run(tf.reduce_sum(y), {x: XV - eps * e}))
                   / (2 * eps) for e in np.eye(3)]
        np.testing.assert_allclose(gv, numeric, atol=1e-7)


def test_second_derivative_through_a_loop():
    x = tf.placeholder(tf.float64, [])
    y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x), [0, tf.constant(1.0, tf.float64)])[1]
    g = tf.gradients(y, x)[0]
    h = tf.gradients(g, x)[0]
    with tf.Session() as sess:
        assert sess.run([y, g, h], {x: 2.0}) == [8.0, 12.0, 12.0]   # x^3, 3x^2, 6x


def test_cond_inside_while_and_while_inside_cond():
    x = tf.placeholder(tf.float64, [3])
    y = tf.while_loop(lambda i, v: i < 4,
                      lambda i, v: (i + 1, tf.cond(i % 2 > 0, lambda: v * x, lambda: tf.sin(v))), [0, x])[1]
    assert grad_error(x, y, XV) < 1e-5
    z = tf.cond(tf.reduce_sum(x) > 0,
                lambda: tf.while_loop(lambda v: tf.reduce_sum(v) < 10, lambda v: v * 2 + x, [x]), lambda: x)
    assert grad_error(x, z, np.array([0.3, 0.7, 1.1])) < 1e-6


def test_scan_map_fn_and_folds_are_differentiable():
    x = tf.placeholder(tf.float64, [4, 3])
    xv = np.random.RandomState(1).randn(4, 3)
    scanned = tf.scan(lambda a, e: a * e + tf.sin(e), x, initializer=tf.ones([3], tf.float64))
    assert grad_error(x, scanned, xv) < 1e-5
    assert grad_error(x, tf.map_fn(lambda e: e * e, x), xv) < 1e-6
    assert grad_error(x, tf.foldl(lambda a, e: a * e, x), xv) < 1e-6
    assert grad_error(x, tf.foldr(lambda a, e: a * tf.cos(e), x), xv) < 1e-6
    assert grad_error(x, tf.scan(lambda a, e: a + e, x, reverse=True), xv) < 1e-6


def test_back_prop_false_stops_the_gradient():
    x = tf.placeholder(tf.float64, [3])
    y = tf.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, v * x), [0, x], back_prop=False)[1]
    z = tf.map_fn(lambda e: e * e, tf.reshape(x, [3, 1]), back_prop=False)
    assert tf.gradients(tf.reduce_sum(y), x) == [None]
    assert tf.gradients(tf.reduce_sum(z), x) == [None]
    assert tf.gradients(tf.reduce_sum(y) + tf.reduce_sum(x * x), x)[0] is not None


def test_a_loop_variable_nobody_reads_is_left_out_and_the_rest_keep_their_values():
    # the gradient loop of y * mask sums the mask's gradient too; fetched without it, that sum is
    # not computed (runtime/executor.py tells the While which outputs are read), and the input's
    # gradient is the same bits either way
    x = tf.placeholder(tf.float32, [None, 4])
    mask = tf.placeholder(tf.float32, [None, 4])
    w = np.linspace(-1.0, 1.0, 16, dtype=np.float32).reshape(4, 4)
    _, y = tf.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, tf.tanh(tf.matmul(v * mask, w))), [0, x])
    gx, gmask = tf.gradients(tf.reduce_sum(y), [x, mask])
    feeds = {x: np.random.RandomState(0).randn(3, 4).astype(np.float32),
             mask: (np.random.RandomState(1).rand(3, 4) > 0.2).astype(np.float32) / 0.8}
    with tf.Session() as sess:
        alone = sess.run(gx, feeds)
        both = sess.run([gx, gmask], feeds)
    assert alone.tobytes() == both[0].tobytes()
    v, m, g = feeds[x], feeds[mask], np.ones((3, 4), np.float32)
    vs = [v]
    for _ in range(5):
        vs.append(np.tanh((vs[-1] * m) @ w))
    for k in reversed(range(5)):
        g = ((g * (1 - vs[k + 1] ** 2)) @ w.T) * m
    np.testing.assert_allclose(alone, g, rtol=1e-5, atol=1e-6)


def test_a_stateful_op_of_an_unread_loop_variable_still_runs():
    counter = tf.Variable(0, dtype=tf.int32)
    i, ticks = tf.while_loop(lambda i, t: i < 3, lambda i, t: (i + 1, t + counter.assign_add(1)), [0, 0])
    with tf.Session() as sess:
        sess.run(counter.initializer)
        assert sess.run(i) == 3   # (ticks is not fetched)
        assert sess.run(counter) == 3


def test_a_loop_variable_that_feeds_only_itself_and_gets_no_gradient_stays_out_of_the_gradient_loop():
    # dynamic_rnn's list of every step's output where only the last output is used: its gradient is
    # zero at every iteration, and the gradient loop neither carries it nor reads and writes its list
    x = tf.placeholder(tf.float32, [3, 4])
    w = np.linspace(-1.0, 1.0, 16, dtype=np.float32).reshape(4, 4)
    steps = tf.TensorArray(tf.float32, size=5)
    _, y, steps = tf.while_loop(lambda i, v, s: i < 5,
                                lambda i, v, s: (i + 1, tf.tanh(tf.matmul(v, w)), s.write(i, v)), [0, x, steps])
    gx = tf.gradients(tf.reduce_sum(y), x)[0]
    backward = [op for op in tf.get_default_graph().get_operations() if op.type == "While" and op is not y.op]
    assert len(backward) == 1
    # (its reads of the forward iterations' recorded values stay)
    assert "TensorListSetItem" not in [op.type for op in backward[0].get_attr("body").get_operations()]
    xv = np.random.RandomState(0).randn(3, 4).astype(np.float32)
    with tf.Session() as sess:
        got = sess.run(gx, {x: xv})
    vs = [xv]
    for _ in range(5):
        vs.append(np.tanh(vs[-1] @ w))
    g = np.ones((3, 4), np.float32)
    for k in reversed(range(5)):
        g = (g * (1 - vs[k + 1] ** 2)) @ w.T
    np.testing.assert_allclose(got, g, rtol=1e-5, atol=1e-6)
