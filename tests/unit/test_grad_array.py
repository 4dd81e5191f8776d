"""Gradients of the array ops against central finite differences in float64, with static
shapes and with shapes known only at run time."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.array.sort import top_k

RNG = np.random.RandomState(42)


def _dense(v, shape):
    if hasattr(v, "indices"):   # IndexedSlicesValue
        out = np.zeros(shape)
        np.add.at(out, v.indices, v.values)
        return out
    return np.asarray(v)


def grad_check(build, x0, dynamic=False, tol=1e-6):
    """Compares d(sum(w * build(x)))/dx from tf.gradients with central differences."""
    g = tf.Graph()
    with g.as_default(), tf.Session(graph=g) as sess:
        x = tf.placeholder(tf.float64, None if dynamic else x0.shape)
        y = build(x)
        y0 = sess.run(y, {x: x0})
        w = RNG.randn(*np.shape(y0))
        loss = tf.reduce_sum(y * tf.constant(w))
        (gx,) = tf.gradients(loss, [x])
        analytic = _dense(sess.run(gx, {x: x0}), x0.shape)
        numeric = np.zeros_like(x0)
        eps = 1e-6
        for i in np.ndindex(*x0.shape):
            xp, xm = x0.copy(), x0.copy()
            xp[i] += eps
            xm[i] -= eps
            numeric[i] = (sess.run(loss, {x: xp}) - sess.run(loss, {x: xm})) / (2 * eps)
        assert analytic.shape == x0.shape
        np.testing.assert_allclose(analytic, numeric, atol=tol, rtol=1e-5)


X = RNG.randn(2, 3, 4)

CASES = {
    "identity": lambda x: tf.identity(x),
    "reshape": lambda x: tf.reshape(x, [4, -1]),
    "expand_dims": lambda x: tf.expand_dims(x, 1),
    "squeeze": lambda x: tf.squeeze(tf.expand_dims(x, 0)),
    "transpose": lambda x: tf.transpose(x, [2, 0, 1]),
    "transpose_default": lambda x: tf.transpose(x),
    "concat": lambda x: tf.concat([x, 2.0 * x, x[:, :1]], 1),
    "stack": lambda x: tf.stack([x, x * x], axis=2),
    "unstack": lambda x: tf.unstack(x, axis=1)[1] * 3.0 + tf.unstack(x, axis=1)[2],
    "split": lambda x: tf.split(x, 2, axis=2)[1],
    "splitv": lambda x: tf.split(x, [1, -1], axis=1)[1],
    "slice": lambda x: tf.slice(x, [1, 0, 1], [1, -1, 2]),
    "strided_slice": lambda x: x[:, ::-2, tf.newaxis, 1:],
    "strided_slice_shrink": lambda x: x[1, ..., -1],
    "pad": lambda x: tf.pad(x, [[1, 0], [0, 2], [1, 1]]),
    "pad_values": lambda x: tf.pad(x, [[1, 0], [0, 2], [1, 1]], constant_values=3.0),
    "pad_reflect": lambda x: tf.pad(x, [[1, 1], [2, 1], [3, 2]], mode="REFLECT"),
    "pad_symmetric": lambda x: tf.pad(x, [[2, 1], [0, 3], [1, 4]], mode="SYMMETRIC"),
    "tile": lambda x: tf.tile(x, [2, 1, 3]),
    "gather0": lambda x: tf.gather(x, [1, 0, 1]),
    "gather1": lambda x: tf.gather(x, [[2, 0], [2, 2]], axis=1),
    "gather_last": lambda x: tf.gather(x, [3, 3, 0], axis=-1),
    "gather_nd": lambda x: tf.gather_nd(x, [[0, 1], [1, 2], [0, 1]]),
    "reverse": lambda x: tf.reverse(x, [0, 2]),
    "broadcast_to": lambda x: tf.broadcast_to(x[:, :1], [5, 2, 3, 4]),
    "where": lambda x: tf.where(x > 0.0, x, 2.0 * x),
    "where_vec": lambda x: tf.where(tf.constant([True, False]), x, -x),
    "placeholder_with_default": lambda x: tf.placeholder_with_default(x, x.shape) * 2.0,
    "boolean_mask": lambda x: tf.boolean_mask(x, np.array([[True, False, True]] * 2)),
    "top_k": lambda x: top_k(tf.reshape(x, [6, 4]), k=2).values,
    "sort": lambda x: tf.sort(x, axis=1),
}

DYNAMIC_OK = {"identity", "reshape", "expand_dims", "transpose_default", "concat", "split", "splitv", "slice",
              "strided_slice", "strided_slice_shrink", "pad", "pad_values", "pad_reflect", "tile", "gather0",
              "gather_nd", "reverse", "where", "top_k"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_static(name):
    grad_check(CASES[name], X)


@pytest.mark.parametrize("name", sorted(DYNAMIC_OK))
def test_gradient_runtime_shapes(name):
    grad_check(CASES[name], X, dynamic=True)


def test_scatter_nd_gradient():
    grad_check(lambda u: tf.scatter_nd([[1], [3], [1]], u, [5, 4]), RNG.randn(3, 4))


def test_gather_axis0_gives_indexed_slices():
    from tensorweave.ops.registry import gradient_for
    with tf.Graph().as_default(), tf.Session() as sess:
        p = tf.constant(X)
        y = tf.gather(p, [[1, 0]])
        g = tf.constant(np.ones((1, 2, 3, 4)))
        dp, di, da = gradient_for(y.op)(y.op, g)
        assert isinstance(dp, tf.IndexedSlices) and di is None and da is None
        values, indices, dense_shape = sess.run([dp.values, dp.indices, dp.dense_shape])
        assert values.shape == (2, 3, 4) and indices.tolist() == [1, 0] and dense_shape.tolist() == [2, 3, 4]


def test_not_differentiable_ops():
    from tensorweave.ops.registry import GRADIENTS, load
    for op_type in ("StopGradient", "Shape", "Size", "Rank", "OneHot", "Where", "Unique", "Range", "ZerosLike"):
        load(op_type)
        assert op_type in GRADIENTS and GRADIENTS[op_type] is None, op_type
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0])
        y = tf.stop_gradient(x) * x
        assert tf.gradients(tf.reduce_sum(y), x)[0] is not None
        assert tf.gradients(tf.reduce_sum(tf.stop_gradient(x)), x)[0] is None
