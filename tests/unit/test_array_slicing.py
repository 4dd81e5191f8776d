"""slice, strided_slice and Tensor.__getitem__, gather/gather_nd/scatter_nd, one_hot,
boolean_mask, where/select, unique, top_k, sort/argsort, sequence_mask, against numpy."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.array.sort import top_k

from unit_helpers import check


X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

INDEXES = [1, -1, (1, 2), (slice(None), 1), slice(1, None), slice(None, -1), slice(None, None, 2),
           slice(None, None, -1), slice(-2, 0, -1), (Ellipsis, 1), (Ellipsis, slice(1, 3)), (None, 1),
           (1, None, Ellipsis, None), (slice(0, 100),), (slice(-100, 2),), (2, slice(3, 0, -2), Ellipsis),
           (), Ellipsis, (0, 1, 2), (slice(None), None, slice(None), 1)]


@pytest.mark.parametrize("idx", INDEXES, ids=[repr(i) for i in INDEXES])
def test_getitem_matches_numpy(sess, idx):
    c = tf.constant(X)
    t = c[idx]
    assert t.op.type == "StridedSlice" and t.op.name == "strided_slice"
    out = check(sess, t, X[idx], tf.float32)
    assert t.shape.as_list() == list(out.shape)   # fully static from a fully known input
    p = tf.placeholder(tf.float32, [None, 4, None])
    tp = p[idx]
    check(sess, tp, X[idx], feed={p: X})
    assert tp.shape.ndims == out.ndim


def test_getitem_tensor_indices_and_partial_static_shape(sess):
    c = tf.constant(X)
    i = tf.placeholder(tf.int32, [])
    t = c[i, 1:3]
    assert t.shape.as_list() == [2, 5]
    check(sess, t, X[2, 1:3], feed={i: 2})
    j = tf.constant(1, tf.int64)
    check(sess, c[:, j], X[:, 1])
    check(sess, c[i:, ::2], X[1:, ::2], feed={i: 1})
    check(sess, c[tf.newaxis, 0], X[None, 0])
    v = tf.constant([1, 2, 3])
    check(sess, v[np.int64(-1)], 3, tf.int32)


def test_getitem_errors(sess):
    c = tf.constant(X)
    with pytest.raises(TypeError, match="valid indices"):
        c[[1, 2], 0.5]
    with pytest.raises(TypeError, match="valid indices"):
        c[tf.constant([True])]
    with pytest.raises(ValueError, match="StridedSlice"):
        c[5]
    with pytest.raises(ValueError, match="StridedSlice"):
        tf.constant(1.0)[0]
    with pytest.raises(ValueError, match="StridedSlice"):
        c[0, 0, 0, 0]
    i = tf.placeholder(tf.int32, [])
    with pytest.raises(tf.errors.InvalidArgumentError, match="strided_slice"):
        sess.run(c[i], {i: 3})
    s = tf.placeholder(tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="strided_slice"):
        sess.run(s[0], {s: 1.0})


def test_strided_slice_masks(sess):
    c = tf.constant(X)
    t = tf.strided_slice(c, [0, 1, 0], [0, 3, 4], [1, 1, 2], begin_mask=1, end_mask=5)
    check(sess, t, X[:, 1:3, ::2])
    t = tf.strided_slice(c, [1, 0], [2, 0], [1, 1], shrink_axis_mask=1, ellipsis_mask=2)
    check(sess, t, X[1, ...])
    t = tf.strided_slice(c, [0, 0], [1, 0], new_axis_mask=2, shrink_axis_mask=1)
    check(sess, t, X[0, None])
    assert tf.strided_slice(c, [0], [1]).op.type == "StridedSlice"


def test_slice(sess):
    c = tf.constant(X)
    t = tf.slice(c, [1, 0, 2], [2, -1, 3])
    assert t.op.type == "Slice" and t.shape.as_list() == [2, 4, 3]
    check(sess, t, X[1:3, :, 2:5])
    p = tf.placeholder(tf.float32, [None, 4, 5])
    tp = tf.slice(p, [1, 0, 2], [-1, 2, 3])
    assert tp.shape.as_list() == [None, 2, 3]
    check(sess, tp, X[1:, :2, 2:], feed={p: X})
    # TF's Slice shape function does no bounds check: a too-large size fails at run time.
    big = tf.slice(c, [0, 0, 0], [4, 1, 1])
    assert big.shape.as_list() == [4, 1, 1]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Slice"):
        sess.run(big)
    with pytest.raises(ValueError, match="Slice"):
        tf.slice(c, [9, 0, 0], [-1, 1, 1])   # dim - begin < 0
    with pytest.raises(ValueError, match="Slice"):
        tf.slice(c, [0, 0, 0], [-2, 1, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Slice"):
        sess.run(tf.slice(p, [0, 0, 0], [4, 1, 1]), {p: X})


# -- gather family -----------------------------------------------------------------------------
def test_gather(sess):
    c = tf.constant(X)
    idx = np.array([[2, 0], [1, 1]], np.int32)
    g = tf.gather(c, idx)
    assert g.op.type == "GatherV2" and g.shape.as_list() == [2, 2, 4, 5]
    check(sess, g, np.take(X, idx, axis=0), tf.float32)
    check(sess, tf.gather(c, idx, axis=1), np.take(X, idx, axis=1))
    check(sess, tf.gather(c, [4, 0], axis=-1), np.take(X, [4, 0], axis=-1))
    check(sess, tf.gather(c, tf.constant(1, tf.int64)), X[1])
    b = np.array([[0, 3], [1, 1], [2, 0]], np.int32)
    gb = tf.gather(c, b, axis=1, batch_dims=1)
    check(sess, gb, np.stack([np.take(X[k], b[k], axis=0) for k in range(3)]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="GatherV2"):
        sess.run(tf.gather(c, [0, 3]))
    with pytest.raises(TypeError, match="GatherV2"):
        tf.gather(c, [0.5])


def test_gather_nd_and_scatter_nd(sess):
    c = tf.constant(X)
    idx = np.array([[0, 1], [2, 3], [0, 1]], np.int32)
    g = tf.gather_nd(c, idx)
    assert g.shape.as_list() == [3, 5]
    check(sess, g, X[idx[:, 0], idx[:, 1]], tf.float32)
    check(sess, tf.gather_nd(c, [[[0, 1, 2]]]), [[X[0, 1, 2]]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="GatherNd"):
        sess.run(tf.gather_nd(c, [[3, 0]]))
    with pytest.raises(ValueError, match="GatherNd"):
        tf.gather_nd(c, [[0, 0, 0, 0]])
    s = tf.scatter_nd(idx, np.ones((3, 5), np.float32), [3, 4, 5])
    expected = np.zeros((3, 4, 5), np.float32)
    np.add.at(expected, (idx[:, 0], idx[:, 1]), 1.0)
    check(sess, s, expected, tf.float32)
    with pytest.raises(ValueError, match="ScatterNd"):
        tf.scatter_nd(idx, np.ones((3, 4), np.float32), [3, 4, 5])
    with pytest.raises(tf.errors.InvalidArgumentError, match="ScatterNd"):
        sess.run(tf.scatter_nd([[5]], [1.0], [3]))


def test_one_hot(sess):
    idx = np.array([[0, 2], [1, -1]], np.int32)
    eye = np.eye(3, dtype=np.float32)
    ref = np.where((idx[..., None] == np.arange(3)), 1.0, 0.0).astype(np.float32)
    t = tf.one_hot(idx, 3)
    assert t.op.type == "OneHot" and t.op.name == "one_hot"
    check(sess, t, ref, tf.float32)
    check(sess, tf.one_hot(idx, 3, axis=0), np.moveaxis(ref, -1, 0))
    check(sess, tf.one_hot([1], 3, on_value=5, off_value=-1), [[-1, 5, -1]], tf.int32)
    check(sess, tf.one_hot([2], 3, dtype=tf.float64), eye[[2]].astype(np.float64), tf.float64)
    with pytest.raises(TypeError, match="one_hot"):
        tf.one_hot([1], 3, on_value=tf.constant(1.0), off_value=tf.constant(0))


def test_boolean_mask(sess):
    mask = np.array([[True, False, True, True, False]] * 4)
    check(sess, tf.boolean_mask(X, mask, axis=1), np.stack([X[k][mask] for k in range(3)]))
    m1 = np.array([True, False, True])
    check(sess, tf.boolean_mask(X, m1), X[m1])
    p = tf.placeholder(tf.float32, [None, 4, 5])
    mp = tf.placeholder(tf.bool, [None])
    check(sess, tf.boolean_mask(p, mp), X[m1], feed={p: X, mp: m1})
    with pytest.raises(ValueError, match="boolean_mask"):
        tf.boolean_mask(X, True)


# -- where, unique, top_k, sort ----------------------------------------------------------------
def test_where_and_select(sess):
    cond = np.array([[True, False], [False, True]])
    w = tf.where(cond)
    assert w.op.type == "Where" and w.dtype == tf.int64 and w.shape.as_list() == [None, 2]
    check(sess, w, np.argwhere(cond), tf.int64)
    a, b = np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32)
    s = tf.where(cond, a, b)
    assert s.op.type == "Select"
    check(sess, s, np.where(cond, a, b), tf.float32)
    check(sess, tf.where([True, False], a, b), np.where([[True], [False]], a, b))
    with pytest.raises(ValueError, match="Select"):
        tf.where([True, False, True], a, b)
    with pytest.raises(ValueError, match="both"):
        tf.where(cond, a)
    v2 = tf.where_v2(np.array([True, False]), 1.0, np.zeros((3, 2), np.float32))
    assert v2.op.type == "SelectV2"
    check(sess, v2, np.where([True, False], 1.0, np.zeros((3, 2))).astype(np.float32))
    c = tf.placeholder(tf.bool, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Select"):
        sess.run(tf.where(c, a, b), {c: [True, False, True]})


def test_unique(sess):
    x = np.array([4, 1, 4, 2, 1, 7], np.int32)
    y, idx = tf.unique(x)
    vy, vi = sess.run([y, idx])
    assert vy.tolist() == [4, 1, 2, 7] and vi.tolist() == [0, 1, 0, 2, 1, 3]
    assert y.dtype == tf.int32 and idx.dtype == tf.int32
    _, i64 = tf.unique(x, out_idx=tf.int64)
    assert sess.run(i64).dtype == np.int64


def test_top_k_sort_argsort(sess):
    rng = np.random.RandomState(0)
    x = rng.randint(0, 5, size=(3, 7)).astype(np.float32)   # many ties: order must be stable
    vals, idx = top_k(x, k=4)
    assert vals.shape.as_list() == [3, 4] and idx.dtype == tf.int32
    order = np.argsort(-x, axis=-1, kind="stable")[:, :4]
    check(sess, idx, order, tf.int32)
    check(sess, vals, np.take_along_axis(x, order, -1))
    with pytest.raises(ValueError, match="TopKV2"):
        top_k(x, k=8)
    k = tf.placeholder(tf.int32, [])
    with pytest.raises(tf.errors.InvalidArgumentError, match="TopKV2"):
        sess.run(top_k(x, k=k).values, {k: 8})
    check(sess, tf.sort(x), np.sort(x, axis=-1))
    check(sess, tf.sort(x, axis=0, direction="DESCENDING"), -np.sort(-x, axis=0))
    check(sess, tf.argsort(x), np.argsort(x, kind="stable"), tf.int32)
    check(sess, tf.argsort(x, axis=0, direction="DESCENDING"), np.argsort(-x, axis=0, kind="stable"))
    with pytest.raises(ValueError, match="direction"):
        tf.sort(x, direction="UP")


def test_sequence_mask(sess):
    m = tf.sequence_mask([1, 3, 0], 4)
    check(sess, m, np.arange(4) < np.array([[1], [3], [0]]), tf.bool)
    check(sess, tf.sequence_mask([2, 1]), [[True, True], [True, False]])
    check(sess, tf.sequence_mask([2], 3, dtype=tf.float32), [[1.0, 1.0, 0.0]], tf.float32)
