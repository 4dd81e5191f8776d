"""Array ops: shape ops, reshape/expand/squeeze/transpose, fill family, range/linspace, concat,
stack/unstack, split, tile, pad, reverse, broadcast_to, meshgrid, against numpy."""
import numpy as np
import pytest

import tensorweave as tf

from unit_helpers import check


def ph(shape, dtype=tf.float32):
    return tf.placeholder(dtype, shape)


X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


# -- shape family ------------------------------------------------------------------------------
def test_shape_size_rank_static_and_runtime(sess):
    p = ph([None, 3, None])
    feed = {p: X}
    check(sess, tf.shape(p), [2, 3, 4], tf.int32, feed)
    check(sess, tf.shape(p, out_type=tf.int64), [2, 3, 4], tf.int64, feed)
    check(sess, tf.size(p), 24, tf.int32, feed)
    check(sess, tf.size(p, out_type=tf.int64), 24, tf.int64, feed)
    u = tf.placeholder(tf.float32)
    assert tf.rank(u).op.type == "Rank"
    check(sess, tf.rank(u), 3, tf.int32, feed={u: X})
    assert tf.shape(p).shape.as_list() == [3]
    assert tf.shape(p).op.type == "Shape" and tf.size(p).op.type == "Size"
    c = tf.constant(X)
    assert tf.shape(c).op.type == "Const" and tf.rank(c).op.type == "Const"
    check(sess, tf.shape(c), [2, 3, 4])
    a, b = tf.shape_n([p, tf.constant([1, 2])])
    assert a.op.type == "ShapeN" and a.dtype == tf.int32 and a.shape.as_list() == [3]
    va, vb = sess.run([a, b], feed)
    assert va.tolist() == [2, 3, 4] and vb.tolist() == [2]


# -- reshape -----------------------------------------------------------------------------------
def test_reshape_static_and_minus_one(sess):
    c = tf.constant(X)
    check(sess, tf.reshape(c, [6, -1]), X.reshape(6, -1), tf.float32)
    assert tf.reshape(c, [6, -1]).shape.as_list() == [6, 4]
    p = ph([None, 4])
    r = tf.reshape(p, [-1, 2, 2])
    assert r.shape.as_list() == [None, 2, 2]
    check(sess, r, X.reshape(-1, 2, 2), feed={p: X.reshape(6, 4)})
    r2 = tf.reshape(p, tf.shape(p))   # shape from a Shape op
    assert r2.shape.as_list() == [None, 4]
    r3 = tf.reshape(c, tf.stack([tf.placeholder(tf.int32, []), 4]))
    assert r3.shape.as_list() == [6, 4]   # the one unknown dim is inferred from 24 elements


def test_reshape_errors(sess):
    c = tf.constant(X)
    with pytest.raises(ValueError, match="Reshape"):
        tf.reshape(c, [5])
    with pytest.raises(ValueError, match="Reshape"):
        tf.reshape(c, [5, -1])
    p = ph(None)
    r = tf.reshape(p, [5])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Reshape"):
        sess.run(r, {p: X})


# -- expand_dims, squeeze ----------------------------------------------------------------------
def test_expand_dims_and_squeeze(sess):
    c = tf.constant(X)
    for ax in (0, 1, 3, -1, -4):
        check(sess, tf.expand_dims(c, ax), np.expand_dims(X, ax))
    check(sess, tf.expand_dims(c, dim=2), np.expand_dims(X, 2))
    with pytest.raises(ValueError, match="ExpandDims"):
        tf.expand_dims(c, 4)
    y = np.zeros((1, 3, 1, 2), np.int32)
    cy = tf.constant(y)
    check(sess, tf.squeeze(cy), np.squeeze(y), tf.int32)
    check(sess, tf.squeeze(cy, [2]), np.squeeze(y, 2))
    check(sess, tf.squeeze(cy, squeeze_dims=[0, -2]), np.squeeze(y, (0, 2)))
    with pytest.raises(ValueError, match="Squeeze"):
        tf.squeeze(cy, [1])
    p = ph([None, 3])
    s = tf.squeeze(p, [0])
    assert s.shape.as_list() == [3]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Squeeze"):
        sess.run(s, {p: np.zeros((2, 3))})
    assert tf.squeeze(p).shape.ndims is None


# -- transpose ---------------------------------------------------------------------------------
def test_transpose(sess):
    c = tf.constant(X)
    t = tf.transpose(c)
    check(sess, t, X.T)
    assert t.op.name == "transpose" and t.op.type == "Transpose"
    check(sess, tf.transpose(c, [1, 0, 2]), X.transpose(1, 0, 2))
    p = tf.placeholder(tf.float32)
    check(sess, tf.transpose(p), X.T, feed={p: X})
    z = np.array([[1 + 2j, 3j]], np.complex64)
    check(sess, tf.transpose(tf.constant(z), conjugate=True), np.conj(z.T))
    check(sess, tf.matrix_transpose(c), X.transpose(0, 2, 1))
    with pytest.raises(ValueError, match="Transpose"):
        tf.transpose(c, [0, 0, 1])
    with pytest.raises(ValueError, match="Transpose"):
        tf.transpose(c, [1, 0])
    q = tf.placeholder(tf.int32, [3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="transpose"):
        sess.run(tf.transpose(c, q), {q: [0, 0, 1]})
    check(sess, tf.invert_permutation([2, 0, 1]), [1, 2, 0], tf.int32)


def test_stop_gradient_identity(sess):
    c = tf.constant([1.0, 2.0])
    s = tf.stop_gradient(c)
    assert s.op.type == "StopGradient"
    check(sess, s, [1.0, 2.0])


# -- fill family -------------------------------------------------------------------------------
def test_fill_zeros_ones(sess):
    check(sess, tf.fill([2, 3], 7), np.full((2, 3), 7, np.int32), tf.int32)
    z = tf.zeros([2, 3])
    assert z.op.type == "Const" and z.op.name == "zeros"
    check(sess, z, np.zeros((2, 3), np.float32), tf.float32)
    check(sess, tf.ones([2], tf.int64), [1, 1], tf.int64)
    check(sess, tf.zeros([2], tf.bool), [False, False], tf.bool)
    big = tf.zeros([100, 100])
    assert big.op.type == "Fill"
    assert sess.run(big).shape == (100, 100)
    n = tf.placeholder(tf.int32, [])
    dyn = tf.ones(tf.stack([n, 2]))
    assert dyn.shape.as_list() == [None, 2]
    check(sess, dyn, np.ones((3, 2), np.float32), feed={n: 3})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Fill"):
        sess.run(tf.fill(tf.stack([n]), 1.0), {n: -1})


def test_zeros_like_ones_like(sess):
    p = ph([None, 2])
    zl = tf.zeros_like(p)
    assert zl.op.type == "ZerosLike"
    check(sess, zl, np.zeros((3, 2), np.float32), feed={p: np.ones((3, 2))})
    check(sess, tf.ones_like(p, dtype=tf.int32), np.ones((3, 2), np.int32), tf.int32, feed={p: np.ones((3, 2))})
    check(sess, tf.zeros_like(tf.constant([1, 2]), dtype=tf.float64), [0.0, 0.0], tf.float64)
    check(sess, tf.zeros_like(p, dtype=tf.int64), np.zeros((1, 2), np.int64), tf.int64, feed={p: np.ones((1, 2))})
    ol = tf.ones_like(tf.constant([[1.5]]))
    check(sess, ol, [[1.0]], tf.float32)


def test_zeros_like_of_variable(sess):
    v = tf.Variable(np.ones((2, 3), np.float32))
    check(sess, tf.zeros_like(v), np.zeros((2, 3), np.float32), tf.float32)


# -- range, linspace ---------------------------------------------------------------------------
@pytest.mark.parametrize("args,kw,dtype", [
    ((5,), {}, tf.int32), ((5.0,), {}, tf.float32), ((1, 5, 0.5), {}, tf.float32), ((10, 2, -3), {}, tf.int32),
    ((0, 1, 0.1), {}, tf.float32), ((3,), {"dtype": tf.float64}, tf.float64)])
def test_range(sess, args, kw, dtype):
    r = tf.range(*args, **kw)
    dt = dtype.as_numpy_dtype
    expected = np.arange(*args).astype(dt)
    if len(args) == 3 and dtype.is_floating:   # TF computes start + i * delta in the output dtype
        expected = (np.float64(dt(args[0])) + np.arange(expected.size) * np.float64(dt(args[2]))).astype(dt)
    assert r.op.name == "range"
    out = check(sess, r, expected, dtype)
    assert r.shape.as_list() == [out.size]


def test_range_dtype_inference_and_errors(sess):
    r = tf.range(tf.constant(3, tf.int64))
    check(sess, r, [0, 1, 2], tf.int64)
    with pytest.raises(ValueError, match="Range"):
        tf.range(5, 1, 1)
    with pytest.raises(ValueError, match="Range"):
        tf.range(0, 5, 0)
    d = tf.placeholder(tf.int32, [])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Range"):
        sess.run(tf.range(0, 5, d), {d: 0})


def test_linspace(sess):
    check(sess, tf.linspace(0.0, 1.0, 5), np.linspace(0, 1, 5).astype(np.float32), tf.float32)
    # TF's values (start + i * step in float32), recorded from TensorFlow
    check(sess, tf.linspace(0.0, 1.0, 7), np.array([0., 0.16666667, 0.33333334, 0.5, 0.6666667, 0.8333334, 1.],
                                                   np.float32))
    assert tf.lin_space is tf.linspace
    check(sess, tf.linspace(tf.constant(2.0, tf.float64), 3.0, 1), [2.0], tf.float64)


# -- concat, stack, unstack, split -------------------------------------------------------------
def test_concat(sess):
    a, b = np.ones((2, 3), np.float32), np.zeros((2, 5), np.float32)
    c = tf.concat([a, b], 1)
    assert c.op.type == "ConcatV2" and c.op.name == "concat" and c.op.get_attr("N") == 2
    check(sess, c, np.concatenate([a, b], 1))
    check(sess, tf.concat([a, b], -1), np.concatenate([a, b], 1))
    p = ph([None, 3])
    c2 = tf.concat([p, a], 0)
    assert c2.shape.as_list() == [None, 3]
    check(sess, c2, np.concatenate([a, a]), feed={p: a})
    check(sess, tf.concat([a], 0), a)
    with pytest.raises(ValueError, match="ConcatV2"):
        tf.concat([a, b], 0)
    with pytest.raises(TypeError, match="ConcatV2"):
        tf.concat([tf.constant([1]), tf.constant([1.0])], 0)
    q = ph([None, None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="ConcatOp"):
        sess.run(tf.concat([q, a], 0), {q: b})


def test_stack_unstack(sess):
    xs = [np.full((2, 3), i, np.float32) for i in range(4)]
    for axis in (0, 1, 2, -1):
        s = tf.stack(xs, axis=axis) if axis else tf.stack([tf.constant(x) for x in xs])
        check(sess, s, np.stack(xs, axis=axis), tf.float32)
    s = tf.stack([tf.constant(x) for x in xs], axis=1)
    assert s.op.type == "Pack" and s.op.get_attr("axis") == 1
    assert tf.stack([1, 2]).op.type == "Const"
    n = tf.placeholder(tf.int32, [])
    check(sess, tf.stack([n, 2]), [5, 2], tf.int32, feed={n: 5})
    with pytest.raises(ValueError, match="Pack"):
        tf.stack([tf.zeros([2]), tf.zeros([3])])
    with pytest.raises(ValueError, match="Pack"):
        tf.stack([tf.zeros([2])], axis=3)
    parts = tf.unstack(tf.constant(X), axis=1)
    assert len(parts) == 3
    for i, t in enumerate(parts):
        check(sess, t, X[:, i])
    with pytest.raises(ValueError, match="Unpack"):
        tf.unstack(ph([None, 2]))
    assert len(tf.unstack(ph([None, 2]), num=4)) == 4


def test_split(sess):
    c = tf.constant(X)
    parts = tf.split(c, 2, axis=2)
    assert parts[0].op.type == "Split" and parts[0].op.name == "split"
    for t, e in zip(parts, np.split(X, 2, axis=2)):
        check(sess, t, e)
    parts = tf.split(c, [1, -1, 1], axis=2)
    assert [p.shape.as_list() for p in parts] == [[2, 3, 1], [2, 3, 2], [2, 3, 1]]
    assert parts[0].op.type == "SplitV"
    for t, e in zip(parts, np.split(X, [1, 3], axis=2)):
        check(sess, t, e)
    with pytest.raises(ValueError, match="Split"):
        tf.split(c, 3, axis=2)
    with pytest.raises(ValueError, match="SplitV"):
        tf.split(c, [1, 1], axis=2)
    p = ph([2, None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="split"):
        sess.run(tf.split(p, 2, axis=1), {p: np.zeros((2, 3))})


# -- tile, pad, reverse, broadcast_to, meshgrid ------------------------------------------------
def test_tile(sess):
    c = tf.constant(X)
    check(sess, tf.tile(c, [2, 1, 3]), np.tile(X, (2, 1, 3)))
    p = ph([None, 3, 4])
    t = tf.tile(p, [2, 1, 1])
    assert t.shape.as_list() == [None, 3, 4]
    with pytest.raises(ValueError, match="Tile"):
        tf.tile(c, [2, 2])
    m = tf.placeholder(tf.int32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Tile"):
        sess.run(tf.tile(c, m), {m: [1, 1]})


@pytest.mark.parametrize("mode", ["CONSTANT", "reflect", "Symmetric"])
def test_pad(sess, mode):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    pads = [[1, 2], [2, 1]]
    t = tf.pad(x, pads, mode=mode)
    check(sess, t, np.pad(x, pads, mode=mode.lower()), tf.float32)
    assert t.shape.as_list() == [6, 7]


def test_pad_constant_values_and_errors(sess):
    x = np.ones((2, 2), np.int32)
    t = tf.pad(x, [[1, 0], [0, 1]], constant_values=9)
    assert t.op.type == "PadV2"
    check(sess, t, np.pad(x, [[1, 0], [0, 1]], constant_values=9), tf.int32)
    # As in TF, MirrorPad's size limit is a run-time check (its shape function only adds paddings).
    bad = tf.pad(x, [[2, 0], [0, 0]], mode="REFLECT")
    assert bad.shape.as_list() == [4, 2]
    with pytest.raises(tf.errors.InvalidArgumentError, match="MirrorPad"):
        sess.run(bad)
    with pytest.raises(ValueError, match="Pad"):
        tf.pad(x, [[1, 0]])
    with pytest.raises(ValueError, match="Unknown padding mode"):
        tf.pad(x, [[1, 0], [0, 0]], mode="WRAP")
    p = tf.placeholder(tf.int32, [2, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="MirrorPad"):
        sess.run(tf.pad(x, p, mode="SYMMETRIC"), {p: [[3, 0], [0, 0]]})


def test_reverse_broadcast_to_meshgrid(sess):
    c = tf.constant(X)
    check(sess, tf.reverse(c, [0, 2]), X[::-1, :, ::-1])
    check(sess, tf.reverse_v2(c, [-2]), X[:, ::-1])
    with pytest.raises(ValueError, match="ReverseV2"):
        tf.reverse(c, [3])
    b = tf.broadcast_to(tf.constant([1, 2, 3]), [2, 3])
    check(sess, b, np.broadcast_to([1, 2, 3], (2, 3)), tf.int32)
    with pytest.raises(ValueError, match="BroadcastTo"):
        tf.broadcast_to(tf.constant([1, 2, 3]), [2, 4])
    s = tf.placeholder(tf.int32, [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="BroadcastTo"):
        sess.run(tf.broadcast_to(tf.constant([1, 2, 3]), s), {s: [2, 4]})
    x, y = np.arange(3), np.arange(4) * 10
    for indexing in ("xy", "ij"):
        gx, gy = tf.meshgrid(x, y, indexing=indexing)
        ex, ey = np.meshgrid(x, y, indexing=indexing)
        check(sess, gx, ex)
        check(sess, gy, ey)
