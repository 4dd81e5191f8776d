"""tf.gradients machinery (fan-out, unconnected, stop_gradients, grad_ys, IndexedSlices,
central broadcast reduction, colocation, custom_gradient, override map, hessians) and a
table of float64 finite-difference checks of op gradients."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.indexed_slices import IndexedSlices


pytestmark = pytest.mark.usefixtures("graph")


def run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


# -- machinery ---------------------------------------------------------------------------------
def test_fan_out_sums_with_add_n(graph):
    x = tf.constant([1.0, 2.0])
    y = x * x + x * 3.0            # x reaches y along three paths
    (g,) = tf.gradients(y, [x])
    np.testing.assert_allclose(run(g), 2 * np.array([1.0, 2.0]) + 3.0)
    assert any(op.type == "AddN" and op.name.startswith("gradients/") for op in graph.get_operations())
    assert g.dtype == tf.float32 and g.shape.as_list() == [2]


def test_names_live_under_gradients_scope(graph):
    x = tf.constant(2.0, name="x")
    y = tf.multiply(x, x, name="sq")
    tf.gradients(y, x)
    tf.gradients(y, x)
    names = [op.name for op in graph.get_operations()]
    assert any(n.startswith("gradients/sq_grad/") for n in names)
    assert any(n.startswith("gradients_1/sq_grad/") for n in names)


def test_multiple_ys_sum(graph):
    x = tf.constant(3.0)
    g = tf.gradients([x * x, 2.0 * x], x)[0]
    assert run(g) == pytest.approx(8.0)


def test_unconnected_none_and_zero(graph):
    x = tf.constant([1.0, 2.0])
    z = tf.constant([5.0, 6.0, 7.0])
    y = x * 2.0
    assert tf.gradients(y, [z]) == [None]
    (gz,) = tf.gradients(y, [z], unconnected_gradients=tf.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(run(gz), np.zeros(3, np.float32))
    (gz2,) = tf.gradients(y, [z], unconnected_gradients="zero")
    assert run(gz2).shape == (3,)
    with pytest.raises(ValueError, match="Unknown value for unconnected_gradients"):
        tf.gradients(y, [z], unconnected_gradients="bogus")


def test_integer_path_is_not_differentiated(graph):
    x = tf.constant([1.0, 2.0])
    i = tf.cast(x, tf.int32)
    y = tf.cast(i, tf.float32) * x
    (g,) = tf.gradients(y, x)
    np.testing.assert_allclose(run(g), [1.0, 2.0])   # only the float path


def test_stop_gradients_argument_and_op(graph):
    a = tf.constant(1.0)
    b = a * 2.0
    c = a + b
    ga, gb = tf.gradients(c, [a, b], stop_gradients=[a, b])
    assert run([ga, gb]) == [pytest.approx(1.0), pytest.approx(1.0)]
    ga2, = tf.gradients(c, [a])
    assert run(ga2) == pytest.approx(3.0)
    d = a + tf.stop_gradient(b)
    assert run(tf.gradients(d, a)[0]) == pytest.approx(1.0)
    assert tf.gradients(tf.stop_gradient(a * a), a) == [None]


def test_grad_ys_weights(graph):
    x = tf.constant([1.0, 2.0, 3.0])
    y = x * x
    (g,) = tf.gradients(y, x, grad_ys=tf.constant([1.0, 0.5, -1.0]))
    np.testing.assert_allclose(run(g), [2.0, 2.0, -6.0])
    with pytest.raises(ValueError, match="Passed 2 grad_ys for 1 ys"):
        tf.gradients(y, x, grad_ys=[tf.constant(1.0), tf.constant(2.0)])
    with pytest.raises(TypeError, match="must be real or integer"):
        tf.gradients(y, x, grad_ys=tf.constant([True, False, True]))


def test_default_grad_ys_for_unknown_shape(graph):
    x = tf.placeholder(tf.float32, [None])
    (g,) = tf.gradients(x * 3.0, x)
    np.testing.assert_allclose(run(g, {x: [1.0, 2.0, 5.0]}), [3.0, 3.0, 3.0])


def test_missing_gradient_is_lookup_error_naming_op(graph):
    from tensorweave.ops import registry
    x = tf.constant([1.0])
    with graph.gradient_override_map({"Identity": "NoSuchGradientRegistered"}):
        y = tf.identity(x, name="odd_op")
    with pytest.raises(LookupError, match="odd_op"):
        tf.gradients(y, x)
    assert "NoSuchGradientRegistered" not in registry.GRADIENTS


def test_wrong_number_of_gradients(graph):
    @tf.RegisterGradient("TwGradTestBadCount")
    def _bad(op, grad):
        return [grad, grad]

    x = tf.constant([1.0])
    with graph.gradient_override_map({"Identity": "TwGradTestBadCount"}):
        y = tf.identity(x, name="bad")
    with pytest.raises(ValueError, match="Num gradients 2 generated for op"):
        tf.gradients(y, x)


def test_override_map_uses_registered_gradient(graph):
    @tf.RegisterGradient("TwGradTestTimesTen")
    def _ten(op, grad):
        return [grad * 10.0]

    x = tf.constant([1.0, 2.0])
    with graph.gradient_override_map({"Identity": "TwGradTestTimesTen"}):
        y = tf.identity(x)
    y2 = tf.identity(x)   # outside the map: the normal gradient
    np.testing.assert_allclose(run(tf.gradients(y, x)[0]), [10.0, 10.0])
    np.testing.assert_allclose(run(tf.gradients(y2, x)[0]), [1.0, 1.0])


def test_custom_gradient(graph):
    @tf.custom_gradient
    def log1pexp(x):
        e = tf.exp(x)

        def grad(dy):
            return dy * (1 - 1 / (1 + e))
        return tf.log(1 + e), grad

    x = tf.constant([0.0, 100.0])
    y = log1pexp(x)
    (g,) = tf.gradients(y, x)
    yv, gv = run([y, g])
    np.testing.assert_allclose(gv, [0.5, 1.0])
    assert np.isfinite(gv).all()


def test_custom_gradient_two_inputs(graph):
    @tf.custom_gradient
    def f(a, b):
        def grad(dy):
            return dy * 2.0, dy * 3.0
        return a * b, grad

    a, b = tf.constant(2.0), tf.constant(5.0)
    ga, gb = tf.gradients(f(a, b), [a, b])
    assert run([ga, gb]) == [pytest.approx(2.0), pytest.approx(3.0)]


def test_broadcast_reduction_static(graph):
    x = tf.constant(np.ones((2, 3)))
    b = tf.constant(np.ones((3,)))
    s = tf.constant(2.0, dtype=tf.float64)
    y = (x + b) * s
    gx, gb, gs = tf.gradients(y, [x, b, s])
    assert gb.shape.as_list() == [3] and gs.shape.as_list() == []
    vx, vb, vs = run([gx, gb, gs])
    np.testing.assert_allclose(vx, np.full((2, 3), 2.0))
    np.testing.assert_allclose(vb, [4.0, 4.0, 4.0])
    assert vs == pytest.approx(12.0)


def test_broadcast_reduction_keepdims_axis(graph):
    x = tf.constant(np.arange(6.0).reshape(2, 3))
    c = tf.constant(np.array([[1.0], [2.0]]))     # broadcast along axis 1
    (gc,) = tf.gradients(x * c, [c])
    assert gc.shape.as_list() == [2, 1]
    np.testing.assert_allclose(run(gc), [[3.0], [12.0]])


def test_broadcast_reduction_dynamic(graph):
    x = tf.placeholder(tf.float32, [None, None])
    b = tf.placeholder(tf.float32, [None])
    y = x * b
    gx, gb = tf.gradients(y, [x, b])
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    vx, vb = run([gx, gb], {x: xv, b: [1.0, 2.0, 3.0]})
    np.testing.assert_allclose(vb, xv.sum(0))
    np.testing.assert_allclose(vx, np.tile([1.0, 2.0, 3.0], (2, 1)))
    # the same graph with a size-1 runtime dimension broadcast: summed at runtime
    vx, vb = run([gx, gb], {x: xv, b: [2.0]})
    np.testing.assert_allclose(vb, [xv.sum()])
    assert vx.shape == (2, 3)


def test_sum_to_shape_kernel_error_names_op(graph):
    from tensorweave.ops.gradients import sum_to_shape as gradient_util
    g = tf.placeholder(tf.float32, [None])
    out = gradient_util.sum_to_shape(g, tf.constant([2], dtype=tf.int32), name="reduce_me")
    with pytest.raises(tf.errors.InvalidArgumentError, match="reduce_me"):
        run(out, {g: [1.0, 2.0, 3.0]})


def test_incompatible_static_gradient_shape(graph):
    @tf.RegisterGradient("TwGradTestWrongShape")
    def _wrong(op, grad):
        return [tf.constant(np.ones((4, 3), np.float32))]

    x = tf.constant(np.ones((3, 4), np.float32))
    with graph.gradient_override_map({"Identity": "TwGradTestWrongShape"}):
        y = tf.identity(x, name="shape_liar")
    with pytest.raises(ValueError, match="Incompatible shapes between op input and calculated input gradient"):
        tf.gradients(y, x)


def test_variable_gradient_sums_reads_and_gathers(graph):
    v = tf.Variable(np.arange(8.0).reshape(4, 2), name="emb")
    rows = tf.gather(v, [0, 2, 0])                 # ResourceGather: sparse
    loss = tf.reduce_sum(rows) + tf.reduce_sum(v * 0.5)
    (g,) = tf.gradients(loss, [v])
    assert isinstance(g, tf.Tensor)                # dense + sparse -> dense
    expect = np.full((4, 2), 0.5)
    expect[0] += 2
    expect[2] += 1
    np.testing.assert_allclose(run(g), expect)


def test_variable_only_gathered_is_indexed_slices(graph):
    v = tf.Variable(np.zeros((5, 3), np.float32))
    a = tf.gather(v, [1, 3])
    b = tf.gather(v, [3])
    (g,) = tf.gradients(tf.reduce_sum(a) + 2.0 * tf.reduce_sum(b), v)
    assert isinstance(g, IndexedSlices)
    vals, idx = run([g.values, g.indices])
    dense = np.zeros((5, 3), np.float32)
    np.add.at(dense, idx, vals)
    expect = np.zeros((5, 3), np.float32)
    expect[1] = 1
    expect[3] = 3
    np.testing.assert_allclose(dense, expect)
    np.testing.assert_allclose(run(tf.convert_to_tensor(g)), expect)   # conversion to dense


def test_unconnected_variable_zero(graph):
    v = tf.Variable(np.ones((2, 2), np.float32))
    w = tf.Variable(1.0)
    (g,) = tf.gradients(w * 2.0, v, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(run(g), np.zeros((2, 2), np.float32))


def test_aggregation_methods(graph):
    x = tf.constant([1.0, 2.0])
    y = x * 1.0 + x * 2.0 + x * 3.0
    for method in (tf.AggregationMethod.ADD_N, tf.AggregationMethod.EXPERIMENTAL_TREE,
                   tf.AggregationMethod.EXPERIMENTAL_ACCUMULATE_N):
        (g,) = tf.gradients(y, x, aggregation_method=method)
        np.testing.assert_allclose(run(g), [6.0, 6.0])
    with pytest.raises(ValueError, match="Invalid aggregation_method"):
        tf.gradients(y, x, aggregation_method=7)


def test_colocate_gradients_with_ops(graph):
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.ones((3, 2), np.float32), name="w")
    with tf.device("/job:worker/task:1"):
        x = tf.constant(np.ones((4, 3), np.float32))
        loss = tf.reduce_sum(tf.matmul(x, w))
    tf.gradients(loss, [w], colocate_gradients_with_ops=True)
    grad_ops = [op for op in graph.get_operations() if op.name.startswith("gradients/")]
    read_grads = [op for op in grad_ops if "MatMul_grad" in op.name]
    assert read_grads and all(op.device == "/job:worker/task:1" for op in read_grads)
    assert all("loc:@" in " ".join(op.colocation_groups()) for op in grad_ops)
    tf.gradients(loss, [w], colocate_gradients_with_ops=False, name="plain")
    plain = [op for op in graph.get_operations() if op.name.startswith("plain/")]
    assert all(op.device == "" for op in plain)


def test_gate_gradients(graph):
    a, b = tf.constant(2.0), tf.constant(3.0)
    ga, gb = tf.gradients(a * b, [a, b], gate_gradients=True)
    assert run([ga, gb]) == [pytest.approx(3.0), pytest.approx(2.0)]


def test_hessians(graph):
    x = tf.constant([1.0, 2.0, 3.0], dtype=tf.float64)
    y = tf.reduce_sum(x * x * x)
    (h,) = tf.hessians(y, x)
    assert h.shape.as_list() == [3, 3]
    np.testing.assert_allclose(run(h), np.diag(6 * np.array([1.0, 2.0, 3.0])))


def test_hessians_matrix_quadratic(graph):
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    x = tf.constant([[0.5], [1.5]], dtype=tf.float64)
    y = tf.matmul(tf.transpose(x), tf.matmul(tf.constant(a), x))
    (h,) = tf.hessians(y, x)
    np.testing.assert_allclose(run(h).reshape(2, 2), 2 * a)


def test_second_derivative_via_gradients(graph):
    x = tf.constant(1.5, dtype=tf.float64)
    y = tf.sin(x) * x
    (g,) = tf.gradients(y, x)
    (g2,) = tf.gradients(g, x)
    assert run(g2) == pytest.approx(2 * np.cos(1.5) - 1.5 * np.sin(1.5))


# -- tf.test.compute_gradient ------------------------------------------------------------------
def test_compute_gradient_shapes_and_error(graph):
    x = tf.placeholder(tf.float64, [2, 3])
    y = tf.reduce_sum(x * x, axis=1)
    with tf.Session():
        jt, jn = tf.test.compute_gradient(x, [2, 3], y, [2], x_init_value=np.arange(6.0).reshape(2, 3))
        assert jt.shape == (6, 2) and jn.shape == (6, 2)
        np.testing.assert_allclose(jt, jn, atol=1e-8)
        assert tf.test.compute_gradient_error(x, [2, 3], y, [2]) < 1e-8


def test_compute_gradient_list_and_wrong_gradient(graph):
    @tf.RegisterGradient("TwGradTestDoubled")
    def _doubled(op, grad):
        return [grad * 2.0]

    a = tf.placeholder(tf.float64, [2])
    b = tf.placeholder(tf.float64, [2])
    with graph.gradient_override_map({"Identity": "TwGradTestDoubled"}):
        bad = tf.identity(a)
    with tf.Session():
        init = [np.array([1.0, 2.0]), np.array([3.0, 4.0])]
        pairs = tf.test.compute_gradient([a, b], [[2], [2]], a * b, [2], x_init_value=init,
                                         extra_feed_dict={a: init[0], b: init[1]})
        assert len(pairs) == 2
        np.testing.assert_allclose(pairs[0][0], np.diag([3.0, 4.0]))
        assert tf.test.compute_gradient_error(a, [2], bad, [2]) == pytest.approx(1.0, abs=1e-6)


def test_test_case_helpers():
    class T(tf.test.TestCase):
        def test_it(self):
            c = tf.constant([1.0, 2.0])
            with self.cached_session() as sess:
                self.assertAllClose(sess.run(c * 2.0), [2.0, 4.0])
                self.assertAllEqual(c, [1.0, 2.0])
            with self.assertRaises(AssertionError):
                self.assertAllClose([1.0], [1.1])

    import unittest
    result = unittest.TextTestRunner(stream=open("/dev/null", "w")).run(T("test_it"))
    assert result.wasSuccessful(), result.failures + result.errors


# -- table: float64 finite-difference checks of op gradients ---------------------------------
def _rng(shape, lo=-1.0, hi=1.0, seed=0):
    return np.random.RandomState(seed).uniform(lo, hi, size=shape)


_W = _rng((3, 4), seed=1)
_B = _rng((4,), seed=2)

# (name, f(x) -> y, x shape, x init[, tolerance]): x inits keep kinks (max, relu, abs) > delta away
GRAD_TABLE = [
    ("add_broadcast", lambda x: x + tf.constant(_B), (3, 4), _rng((3, 4))),
    ("add_into_broadcast", lambda x: tf.constant(_W) + x, (4,), _rng((4,))),
    ("sub_scalar", lambda x: tf.constant(_W) - x, (), np.array(0.3)),
    ("mul", lambda x: x * tf.constant(_W), (3, 4), _rng((3, 4))),
    ("mul_column", lambda x: x * tf.constant(_W), (3, 1), _rng((3, 1))),
    ("div_numerator", lambda x: x / tf.constant(_W + 3.0), (3, 4), _rng((3, 4))),
    ("div_denominator", lambda x: tf.constant(_W) / x, (3, 4), _rng((3, 4), 1.0, 2.0)),
    ("pow", lambda x: tf.pow(x, tf.constant(2.5, tf.float64)), (3,), _rng((3,), 0.5, 2.0)),
    ("maximum", lambda x: tf.maximum(x, tf.constant(_W)), (3, 4), _W + np.where(_rng((3, 4)) > 0, 0.2, -0.2)),
    ("minimum", lambda x: tf.minimum(x, tf.constant(0.1, tf.float64)), (5,), np.array([-1, -.5, .5, .8, 1.])),
    ("squared_difference", lambda x: tf.squared_difference(x, tf.constant(_B)), (4,), _rng((4,))),
    ("neg", lambda x: -x, (3,), _rng((3,))),
    ("exp", tf.exp, (3, 2), _rng((3, 2))),
    ("log", tf.log, (3,), _rng((3,), 0.5, 2.0)),
    ("sqrt", tf.sqrt, (3,), _rng((3,), 0.5, 2.0)),
    ("rsqrt", tf.rsqrt, (3,), _rng((3,), 0.5, 2.0)),
    ("square", tf.square, (3,), _rng((3,))),
    ("reciprocal", tf.reciprocal, (3,), _rng((3,), 0.5, 2.0)),
    ("tanh", tf.tanh, (3,), _rng((3,))),
    ("sigmoid", tf.sigmoid, (3,), _rng((3,))),
    ("sin", tf.sin, (3,), _rng((3,))),
    ("cos", tf.cos, (3,), _rng((3,))),
    ("abs", tf.abs, (4,), np.array([-1.0, -0.2, 0.3, 2.0])),
    ("relu", tf.nn.relu, (4,), np.array([-1.0, -0.2, 0.3, 2.0])),
    ("relu6", tf.nn.relu6, (4,), np.array([-1.0, 0.2, 3.0, 7.0])),
    ("elu", tf.nn.elu, (4,), np.array([-1.0, -0.2, 0.3, 2.0])),
    ("softplus", tf.nn.softplus, (3,), _rng((3,))),
    ("leaky_relu", lambda x: tf.nn.leaky_relu(x, 0.1), (4,), np.array([-1.0, -0.2, 0.3, 2.0])),
    ("matmul_a", lambda x: tf.matmul(x, tf.constant(_W)), (2, 3), _rng((2, 3))),
    ("matmul_b", lambda x: tf.matmul(tf.constant(_W.T), x), (3, 2), _rng((3, 2))),
    ("matmul_transpose", lambda x: tf.matmul(x, tf.constant(_W), transpose_a=True), (3, 2), _rng((3, 2))),
    ("reduce_sum_axis", lambda x: tf.reduce_sum(x, axis=1), (3, 4), _rng((3, 4))),
    ("reduce_sum_all", tf.reduce_sum, (3, 4), _rng((3, 4))),
    ("reduce_mean_keepdims", lambda x: tf.reduce_mean(x, axis=0, keepdims=True), (3, 4), _rng((3, 4))),
    ("reduce_max", lambda x: tf.reduce_max(x, axis=1), (3, 4), _rng((3, 4))),
    ("reduce_prod", lambda x: tf.reduce_prod(x, axis=0), (3, 2), _rng((3, 2), 0.5, 1.5)),
    ("reshape", lambda x: tf.reshape(x, [4, 3]) * tf.constant(_W.T), (3, 4), _rng((3, 4))),
    ("transpose", lambda x: tf.transpose(x) * tf.constant(_W.T), (3, 4), _rng((3, 4))),
    ("expand_squeeze", lambda x: tf.squeeze(tf.expand_dims(x, 0)) * 2.0, (3,), _rng((3,))),
    ("concat", lambda x: tf.concat([x, x * 2.0], axis=0), (2, 3), _rng((2, 3))),
    ("stack_unstack", lambda x: tf.stack(tf.unstack(x, axis=1)[::-1], axis=0), (2, 3), _rng((2, 3))),
    ("split", lambda x: tf.split(x, 2, axis=1)[1] * 3.0, (2, 4), _rng((2, 4))),
    ("gather", lambda x: tf.gather(x, [2, 0, 2]), (3, 2), _rng((3, 2))),
    ("slice", lambda x: tf.slice(x, [1, 0], [2, 2]), (3, 3), _rng((3, 3))),
    ("strided_slice", lambda x: x[1:, ::2], (3, 4), _rng((3, 4))),
    ("pad", lambda x: tf.pad(x, [[1, 0], [0, 2]]), (2, 2), _rng((2, 2))),
    ("tile", lambda x: tf.tile(x, [2, 3]), (2, 2), _rng((2, 2))),
    ("cast_roundtrip", lambda x: tf.cast(tf.cast(x, tf.float32), tf.float64), (3,), _rng((3,)), 1e-4),
    ("softmax", tf.nn.softmax, (2, 4), _rng((2, 4))),
    ("log_softmax", tf.nn.log_softmax, (2, 4), _rng((2, 4))),
    ("bias_add", lambda x: tf.nn.bias_add(tf.constant(_W), x), (4,), _rng((4,))),
    ("l2_loss", tf.nn.l2_loss, (3, 2), _rng((3, 2))),
    ("softmax_xent", lambda x: tf.nn.softmax_cross_entropy_with_logits_v2(
        labels=tf.constant([[0.0, 1.0, 0.0], [0.2, 0.3, 0.5]], tf.float64), logits=x), (2, 3), _rng((2, 3))),
    ("sparse_softmax_xent", lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.constant([2, 0]), logits=x), (2, 3), _rng((2, 3))),
    ("sigmoid_xent", lambda x: tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.constant([0.0, 1.0, 0.3], tf.float64), logits=x), (3,), _rng((3,))),
    ("conv2d", lambda x: tf.nn.conv2d(x, tf.constant(_rng((2, 2, 2, 3), seed=3)), [1, 1, 1, 1], "SAME"),
     (1, 3, 3, 2), _rng((1, 3, 3, 2))),
    ("conv2d_filter", lambda x: tf.nn.conv2d(tf.constant(_rng((1, 4, 4, 2), seed=4)), x, [1, 2, 2, 1], "VALID"),
     (2, 2, 2, 3), _rng((2, 2, 2, 3))),
    ("max_pool", lambda x: tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"), (1, 4, 4, 1),
     np.random.RandomState(5).permutation(16).reshape(1, 4, 4, 1) / 10.0),
    ("avg_pool", lambda x: tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 1, 1, 1], "SAME"), (1, 3, 3, 2),
     _rng((1, 3, 3, 2))),
    ("where", lambda x: tf.where(tf.constant([True, False, True]), x, x * 3.0), (3,), _rng((3,))),
    ("clip_by_value", lambda x: tf.clip_by_value(x, -0.5, 0.5), (4,), np.array([-1.0, -0.2, 0.3, 2.0])),
    ("unsorted_segment_sum", lambda x: tf.unsorted_segment_sum(x, tf.constant([1, 0, 1]), 2), (3, 2),
     _rng((3, 2))),
    ("cumsum", lambda x: tf.cumsum(x, axis=1), (2, 3), _rng((2, 3))),
    ("identity_n", lambda x: tf.identity_n([x, x * 2.0])[1], (3,), _rng((3,))),
    ("asin", tf.asin, (3,), _rng((3,), -0.8, 0.8)),
    ("acos", tf.acos, (3,), _rng((3,), -0.8, 0.8)),
    ("atan", tf.atan, (3,), _rng((3,))),
    ("tan", tf.tan, (3,), _rng((3,))),
    ("sinh", tf.sinh, (3,), _rng((3,))),
    ("cosh", tf.cosh, (3,), _rng((3,))),
    ("erf", tf.erf, (3,), _rng((3,))),
    ("expm1", tf.expm1, (3,), _rng((3,))),
    ("log1p", tf.log1p, (3,), _rng((3,), 0.0, 1.0)),
    ("softsign", tf.nn.softsign, (3,), _rng((3,))),
    ("selu", tf.nn.selu, (4,), np.array([-1.0, -0.2, 0.3, 2.0])),
    ("sign_times_x", lambda x: tf.sign(x) * x, (3,), np.array([-1.0, 0.5, 2.0])),
    ("reduce_min", lambda x: tf.reduce_min(x, axis=0), (3, 4), _rng((3, 4))),
    ("cumprod", lambda x: tf.cumprod(x, axis=1), (2, 3), _rng((2, 3), 0.5, 1.5)),
    ("div_no_nan", lambda x: tf.div_no_nan(tf.constant(_W), x), (3, 4), _rng((3, 4), 1.0, 2.0)),
    ("batch_matmul", lambda x: tf.matmul(x, tf.constant(_rng((2, 3, 2), seed=6))), (2, 4, 3),
     _rng((2, 4, 3))),
    ("einsum", lambda x: tf.einsum("ij,jk->ik", x, tf.constant(_W)), (2, 3), _rng((2, 3))),
    ("broadcast_to", lambda x: tf.broadcast_to(x, [2, 3, 4]) * tf.constant(_rng((2, 3, 4), seed=7)), (3, 1),
     _rng((3, 1))),
    ("gather_nd", lambda x: tf.gather_nd(x, [[0, 1], [2, 0], [0, 1]]), (3, 2), _rng((3, 2))),
    ("mirror_pad", lambda x: tf.pad(x, [[1, 1], [2, 0]], mode="REFLECT"), (3, 3), _rng((3, 3))),
    ("pad_constant", lambda x: tf.pad(x, [[1, 0], [0, 1]], constant_values=2.0), (2, 2), _rng((2, 2))),
    ("reverse", lambda x: tf.reverse(x, [1]) * tf.constant(_W), (3, 4), _rng((3, 4))),
    ("scatter_nd", lambda x: tf.scatter_nd([[1], [3]], x, [5, 2]), (2, 2), _rng((2, 2))),
    ("segment_sum", lambda x: tf.segment_sum(x, tf.constant([0, 0, 1])), (3, 2), _rng((3, 2))),
    ("split_v", lambda x: tf.split(x, [1, 3], axis=1)[1], (2, 4), _rng((2, 4))),
    ("top_k", lambda x: _sort_ops().top_k(x, k=2).values, (2, 4), np.array([[0.1, 0.9, 0.5, -0.3], [2., 1., 3., 0.]])),
    ("depthwise_conv2d", lambda x: tf.nn.depthwise_conv2d(x, tf.constant(_rng((2, 2, 2, 2), seed=8)),
                                                          [1, 1, 1, 1], "SAME"), (1, 3, 3, 2), _rng((1, 3, 3, 2))),
    ("conv2d_transpose", lambda x: tf.nn.conv2d_transpose(x, tf.constant(_rng((2, 2, 3, 2), seed=9)),
                                                          [1, 4, 4, 3], [1, 2, 2, 1], "SAME"),
     (1, 2, 2, 2), _rng((1, 2, 2, 2))),
    ("lrn_float32", lambda x: tf.cast(tf.nn.lrn(tf.cast(x, tf.float32), depth_radius=1, bias=1.0, alpha=0.5,
                                                beta=0.75), tf.float64), (1, 2, 2, 3), _rng((1, 2, 2, 3)), 2e-3),
    ("fused_batch_norm", lambda x: tf.nn.fused_batch_norm(x, tf.constant([1.0, 2.0], tf.float64),
                                                          tf.constant([0.5, -0.5], tf.float64))[0],
     (2, 2, 2, 2), _rng((2, 2, 2, 2))),
    ("relu_second_order", lambda x: tf.gradients(tf.nn.relu(x) * x, x)[0], (4,),
     np.array([-1.0, -0.2, 0.3, 2.0])),
    ("sum_to_shape_second_order", lambda x: tf.gradients(tf.reduce_sum(tf.square(x + tf.constant(_W))), x)[0],
     (4,), _rng((4,))),
    ("avg_pool_second_order", lambda x: tf.gradients(tf.reduce_sum(tf.square(
        tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 1, 1, 1], "VALID"))), x)[0], (1, 3, 3, 1), _rng((1, 3, 3, 1))),
]


def _sort_ops():
    from tensorweave.ops.array import sort as sort_ops
    return sort_ops


@pytest.mark.parametrize("name,fn,shape,init,tol", [e if len(e) == 5 else e + (1e-6,) for e in GRAD_TABLE],
                         ids=[e[0] for e in GRAD_TABLE])
def test_op_gradient_finite_difference(graph, name, fn, shape, init, tol):
    x = tf.placeholder(tf.float64, shape, name="x")
    y = fn(x)
    with tf.Session() as sess:
        y_shape = list(sess.run(y, {x: np.asarray(init)}).shape)
        err = tf.test.compute_gradient_error(x, list(shape), y, y_shape, x_init_value=np.asarray(init))
    assert err < tol, f"{name}: gradient error {err}"


def test_custom_gradient_with_variables(graph):
    w = tf.Variable(3.0, name="w")

    @tf.custom_gradient
    def scaled(x):
        def grad(dy, variables=None):
            assert variables == [w]
            return dy * 10.0, [dy * 100.0]
        return x * w, grad

    x = tf.constant(2.0)
    gx, gw = tf.gradients(scaled(x), [x, w])
    assert run([gx, gw]) == [pytest.approx(10.0), pytest.approx(100.0)]

    @tf.custom_gradient
    def no_kwarg(x):
        return x * w, lambda dy: dy
    with pytest.raises(TypeError, match="must accept a keyword argument 'variables'"):
        no_kwarg(x)


# -- regressions from the audit against TF -----------------------------------------------------
def test_invalid_aggregation_method_uses_up_its_name_scope_like_tf():
    a = tf.constant([1.0, 2.0])
    with pytest.raises(ValueError, match="Invalid aggregation_method specified 7"):
        tf.gradients(a * a, a, aggregation_method=7)
    g = tf.gradients(a * a, a)[0]
    assert g.name.startswith("gradients_1/")
