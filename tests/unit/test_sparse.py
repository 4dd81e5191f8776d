"""SparseTensor: feeding and fetching, the tf.sparse ops against dense numpy references, and
their gradients against central finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from unit_helpers import check_grad, run

R = np.random.RandomState(2)
IDX = np.array([[0, 1], [0, 3], [1, 0], [2, 2]], np.int64)
VALS = np.array([1.0, -2.0, 3.0, 4.0])
SHAPE = np.array([3, 4], np.int64)


def _dense(indices, values, shape):
    out = np.zeros(shape, np.asarray(values).dtype)
    for i, v in zip(np.asarray(indices), values):
        out[tuple(i)] += v
    return out


def _sp():
    return tf.SparseTensor(IDX, VALS, SHAPE)


def _value_dense(v):
    return _dense(v.indices, v.values, v.dense_shape)


# -- the SparseTensor object, feeding and fetching -------------------------------------------------
def test_sparse_tensor_fetches_as_value_and_knows_its_shape():
    sp = _sp()
    assert sp.dtype == tf.float64 and sp.get_shape().as_list() == [3, 4]
    value = run(sp)
    assert isinstance(value, tf.SparseTensorValue)
    np.testing.assert_array_equal(value.indices, IDX)
    np.testing.assert_array_equal(value.values, VALS)
    np.testing.assert_array_equal(value.dense_shape, SHAPE)
    with pytest.raises(TypeError, match="int64"):
        tf.SparseTensor(tf.constant([[0]], tf.int32), [1.0], [2])


def test_sparse_placeholder_is_fed_a_value_or_a_tuple():
    sp = tf.sparse_placeholder(tf.float32)
    assert sp.get_shape().ndims is None
    dense = tf.sparse_tensor_to_dense(sp)
    total = tf.sparse_reduce_sum(sp)
    with tf.Session() as sess:
        d1 = sess.run(dense, {sp: tf.SparseTensorValue(IDX, VALS.astype(np.float32), SHAPE)})
        d2, t2 = sess.run([dense, total], {sp: (IDX, VALS.astype(np.float32), SHAPE)})
    np.testing.assert_array_equal(d1, _dense(IDX, VALS, SHAPE))
    np.testing.assert_array_equal(d2, d1)
    assert t2 == pytest.approx(VALS.sum())
    shaped = tf.sparse_placeholder(tf.float32, shape=[3, 4])
    assert shaped.get_shape().as_list() == [3, 4]
    partial = tf.sparse_placeholder(tf.float32, shape=[None, 4])
    assert partial.get_shape().ndims == 2
    with tf.Session() as sess:
        out = sess.run(tf.sparse_tensor_to_dense(partial), {partial: (IDX, VALS.astype(np.float32), SHAPE)})
    np.testing.assert_array_equal(out, _dense(IDX, VALS, SHAPE))
    with pytest.raises(TypeError, match="SparseTensorValue"):
        with tf.Session() as sess:
            sess.run(dense, {sp: np.zeros((3, 4))})


def test_from_dense_to_dense_round_trip_and_sparse_to_dense_checks():
    x = np.array([[0, 5, 0], [7, 0, 0]], np.int32)
    sp = tf.sparse.from_dense(x)
    value, back = run([sp, tf.sparse.to_dense(sp)])
    np.testing.assert_array_equal(value.indices, [[0, 1], [1, 0]])
    np.testing.assert_array_equal(back, x)
    np.testing.assert_array_equal(run(tf.sparse_to_dense([1, 3], [5], [10, 20], default_value=-1)),
                                  [-1, 10, -1, 20, -1])
    np.testing.assert_array_equal(run(tf.sparse_to_dense([[0, 0], [1, 2]], [2, 3], 7)), [[7, 0, 0], [0, 0, 7]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of order"):
        run(tf.sparse_to_dense([3, 1], [5], [1, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
        run(tf.sparse_to_dense([7], [5], [1]))


# -- ops against dense references ------------------------------------------------------------------
def test_reorder_reshape_transpose_expand_dims_retain_reset_shape():
    shuffled = tf.SparseTensor(IDX[::-1], VALS[::-1], SHAPE)
    out = run({"reorder": tf.sparse_reorder(shuffled), "reshape": tf.sparse_reshape(_sp(), [2, -1]),
               "transpose": tf.sparse.transpose(_sp()), "expand": tf.sparse.expand_dims(_sp(), 1),
               "retain": tf.sparse_retain(_sp(), [True, False, True, False]),
               "reset": tf.sparse_reset_shape(_sp()), "reset_to": tf.sparse_reset_shape(_sp(), [5, 6])})
    np.testing.assert_array_equal(out["reorder"].indices, IDX)
    np.testing.assert_array_equal(out["reorder"].values, VALS)
    np.testing.assert_array_equal(_value_dense(out["reshape"]), _dense(IDX, VALS, SHAPE).reshape(2, 6))
    np.testing.assert_array_equal(_value_dense(out["transpose"]), _dense(IDX, VALS, SHAPE).T)
    np.testing.assert_array_equal(_value_dense(out["expand"]), _dense(IDX, VALS, SHAPE)[:, None])
    np.testing.assert_array_equal(out["retain"].values, [1.0, 3.0])
    np.testing.assert_array_equal(out["reset"].dense_shape, [3, 4])
    np.testing.assert_array_equal(out["reset_to"].dense_shape, [5, 6])


def test_slice_split_concat():
    dense = _dense(IDX, VALS, SHAPE)
    sliced, parts, cat, cat_expand = run([
        tf.sparse_slice(_sp(), [1, 1], [5, 5]), tf.sparse_split(sp_input=_sp(), num_split=3, axis=1),
        tf.sparse_concat(1, [_sp(), _sp()]),
        tf.sparse_concat(0, [_sp(), tf.SparseTensor([[0, 5]], [9.0], [1, 6])], expand_nonconcat_dim=True)])
    np.testing.assert_array_equal(_value_dense(sliced), dense[1:, 1:])
    assert [list(p.dense_shape) for p in parts] == [[3, 2], [3, 1], [3, 1]]
    np.testing.assert_array_equal(np.concatenate([_value_dense(p) for p in parts], 1), dense)
    np.testing.assert_array_equal(_value_dense(cat), np.concatenate([dense, dense], 1))
    assert np.all(np.diff(np.ravel_multi_index(cat.indices.T, cat.dense_shape)) > 0)   # row-major
    expect = np.zeros((4, 6))
    expect[:3, :4] = dense
    expect[3, 5] = 9
    np.testing.assert_array_equal(_value_dense(cat_expand), expect)


def test_add_maximum_minimum_fill_empty_rows():
    other = tf.SparseTensor([[0, 1], [1, 1], [2, 2]], [-1.0, 5.0, -4.0], SHAPE)
    dense = _dense(IDX, VALS, SHAPE)
    other_dense = _dense([[0, 1], [1, 1], [2, 2]], [-1.0, 5.0, -4.0], SHAPE)
    added, thresholded, with_dense, mx, mn, (filled, empty) = run([
        tf.sparse_add(_sp(), other), tf.sparse_add(_sp(), other, threshold=0.5), tf.sparse_add(_sp(), np.ones((3, 4))),
        tf.sparse_maximum(_sp(), other), tf.sparse_minimum(_sp(), other),
        tf.sparse_fill_empty_rows(tf.SparseTensor([[1, 0], [3, 2]], [1.0, 2.0], [5, 3]), -7.0)])
    np.testing.assert_array_equal(_value_dense(added), dense + other_dense)
    assert len(added.values) == 5 and len(thresholded.values) == 3   # sums 1 - 1 and 4 - 4 are dropped
    np.testing.assert_array_equal(with_dense, dense + 1)
    np.testing.assert_array_equal(_value_dense(mx), np.maximum(dense, other_dense))
    np.testing.assert_array_equal(_value_dense(mn), np.minimum(dense, other_dense))
    np.testing.assert_array_equal(filled.indices, [[0, 0], [1, 0], [2, 0], [3, 2], [4, 0]])
    np.testing.assert_array_equal(filled.values, [-7, 1, -7, 2, -7])
    np.testing.assert_array_equal(empty, [True, False, True, False, True])


def test_matmul_reductions_softmax_and_dense_products():
    b = R.randn(4, 2)
    dense = _dense(IDX, VALS, SHAPE)
    three = tf.SparseTensor([[0, 0, 1], [0, 1, 0], [1, 1, 1], [1, 1, 2]], [1.0, 2.0, -3.0, 4.0], [2, 2, 3])
    three_dense = _dense([[0, 0, 1], [0, 1, 0], [1, 1, 1], [1, 1, 2]], [1.0, 2.0, -3.0, 4.0], [2, 2, 3])
    out = run({"mm": tf.sparse_tensor_dense_matmul(_sp(), b),
               "mm_adj": tf.sparse_tensor_dense_matmul(_sp(), dense[:3, :2], adjoint_a=True),
               "sum": tf.sparse_reduce_sum(three, 1), "sum_keep": tf.sparse_reduce_sum(three, [0, 2], keepdims=True),
               "sum_sparse": tf.sparse_reduce_sum_sparse(three, 2), "max": tf.sparse_reduce_max(three, 2),
               "softmax": tf.sparse_softmax(three), "mul": _sp() * np.arange(4.0), "div": _sp() / 2.0})
    np.testing.assert_allclose(out["mm"], dense @ b)
    np.testing.assert_allclose(out["mm_adj"], dense.T @ dense[:3, :2])
    np.testing.assert_allclose(out["sum"], three_dense.sum(1))
    np.testing.assert_allclose(out["sum_keep"], three_dense.sum((0, 2), keepdims=True))
    np.testing.assert_allclose(_value_dense(out["sum_sparse"]), three_dense.sum(2))
    np.testing.assert_allclose(out["max"], [[1.0, 2.0], [0.0, 4.0]])   # only present entries count
    np.testing.assert_allclose(out["softmax"].values, [1.0, 1.0, np.exp(-3) / (np.exp(-3) + np.exp(4)),
                                                       np.exp(4) / (np.exp(-3) + np.exp(4))])
    np.testing.assert_allclose(out["mul"].values, VALS * IDX[:, 1])
    np.testing.assert_allclose(out["div"].values, VALS / 2)


def test_to_indicator_merge_mask_eye():
    ids = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], np.array([3, 1, 2], np.int64), [2, 2])
    weights = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], [0.5, 0.25, 2.0], [2, 2])
    indicator, merged, eye = run([tf.sparse_to_indicator(ids, 4), tf.sparse_merge(ids, weights, 4),
                                  tf.sparse.eye(2, 3)])
    np.testing.assert_array_equal(indicator, [[False, True, False, True], [False, False, True, False]])
    np.testing.assert_array_equal(_value_dense(merged), [[0, 0.25, 0, 0.5], [0, 0, 2.0, 0]])
    np.testing.assert_array_equal(_value_dense(eye), np.eye(2, 3))
    masked = tf.sparse_mask(tf.IndexedSlices(tf.constant([[1.0], [2.0], [3.0]]), tf.constant([12, 26, 37]),
                                             tf.constant([50, 1])), [12, 37])
    values, indices = run([masked.values, masked.indices])
    np.testing.assert_array_equal(values, [[2.0]])
    np.testing.assert_array_equal(indices, [26])


# -- gradients -------------------------------------------------------------------------------------
@pytest.mark.parametrize("build", [
    lambda v: tf.sparse_tensor_to_dense(tf.SparseTensor(IDX, v, SHAPE)),
    lambda v: tf.sparse_tensor_dense_matmul(tf.SparseTensor(IDX, v, SHAPE), np.arange(8.0).reshape(4, 2)),
    lambda v: tf.sparse_tensor_dense_matmul(tf.SparseTensor(IDX, v, SHAPE), np.arange(6.0).reshape(3, 2),
                                            adjoint_a=True),
    lambda v: tf.sparse_reduce_sum(tf.SparseTensor(IDX, v, SHAPE), 0),
    lambda v: tf.sparse_softmax(tf.SparseTensor(IDX, v, SHAPE)).values,
    lambda v: tf.sparse_reorder(tf.SparseTensor(IDX[::-1], v, SHAPE)).values,
    lambda v: tf.sparse_slice(tf.SparseTensor(IDX, v, SHAPE), [0, 1], [2, 3]).values,
    lambda v: tf.sparse_concat(1, [tf.SparseTensor(IDX, v, SHAPE), tf.SparseTensor(IDX, v * 2, SHAPE)]).values,
    lambda v: tf.sparse_add(tf.SparseTensor(IDX, v, SHAPE), tf.SparseTensor(IDX[1:3], v[:2] * 3, SHAPE)).values,
    lambda v: tf.sparse_add(tf.SparseTensor(IDX, v, SHAPE), tf.reshape(tf.tile(v[:3], [4]), [3, 4])),
    lambda v: tf.sparse_fill_empty_rows(tf.SparseTensor(IDX[[0, 2]] * [1, 1] + [[0, 0], [1, 0]], v[:2], [4, 4]),
                                        v[3])[0].values,
    lambda v: (tf.SparseTensor(IDX, v, SHAPE) * v[:1]).values,
    lambda v: tf.sparse_retain(tf.SparseTensor(IDX, v, SHAPE), [True, False, True, True]).values,
], ids=["to_dense", "matmul", "matmul_adjoint", "reduce_sum", "softmax", "reorder", "slice", "concat", "add",
        "add_dense", "fill_empty_rows", "mul_dense", "retain"])
def test_sparse_gradients(build):
    check_grad(build, VALS)


def test_sparse_matmul_gradient_wrt_dense_operand():
    check_grad(lambda b: tf.sparse_tensor_dense_matmul(tf.SparseTensor(IDX, VALS, SHAPE), b), R.randn(4, 2))
    check_grad(lambda b: tf.sparse_tensor_dense_matmul(tf.SparseTensor(IDX, VALS, SHAPE), b, adjoint_b=True),
               R.randn(2, 4))


# -- embeddings ------------------------------------------------------------------------------------
PARAMS = R.randn(6, 3)
SP_IDS = tf.SparseTensorValue(np.array([[0, 0], [0, 1], [2, 0], [2, 1], [2, 2]], np.int64),
                              np.array([1, 3, 3, 0, 3], np.int64), np.array([4, 3], np.int64))
SP_W = tf.SparseTensorValue(SP_IDS.indices, np.array([0.5, 2.0, 1.0, 1.0, -1.0]), SP_IDS.dense_shape)


def _lookup_reference(combiner, weights=None):
    rows = {}
    for (r, _), i, w in zip(SP_IDS.indices, SP_IDS.values, weights if weights is not None else [1.0] * 5):
        rows.setdefault(r, []).append((i, w))
    out = np.zeros((3, 3))   # a row without ids is 0
    for r, pairs in rows.items():
        emb = sum(w * PARAMS[i] for i, w in pairs)
        if combiner == "mean":
            emb = emb / sum(w for _, w in pairs)
        elif combiner == "sqrtn":
            emb = emb / np.sqrt(sum(w * w for _, w in pairs))
        out[r] = emb
    return out


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_embedding_lookup_sparse_matches_reference(combiner):
    plain = tf.nn.embedding_lookup_sparse(PARAMS, SP_IDS, None, combiner=combiner)
    weighted = tf.nn.embedding_lookup_sparse(PARAMS, SP_IDS, SP_W, combiner=combiner)
    sharded = tf.nn.embedding_lookup_sparse([PARAMS[0::2], PARAMS[1::2]], SP_IDS, None, combiner=combiner)
    p, w, s = run([plain, weighted, sharded])
    np.testing.assert_allclose(p, _lookup_reference(combiner))   # 3 rows: max(row) + 1, as TF
    np.testing.assert_allclose(w, _lookup_reference(combiner, SP_W.values))
    np.testing.assert_allclose(s, p)
    check_grad(lambda params: tf.nn.embedding_lookup_sparse(params, SP_IDS, None, combiner=combiner), PARAMS)
    check_grad(lambda params: tf.nn.embedding_lookup_sparse(params, SP_IDS, SP_W, combiner=combiner), PARAMS)


def test_safe_embedding_lookup_sparse_drops_invalid_ids_and_fills_empty_rows():
    ids = tf.SparseTensorValue(np.array([[0, 0, 0], [0, 0, 1], [0, 2, 0], [1, 1, 0]], np.int64),
                               np.array([1, -1, 4, 2], np.int64), np.array([2, 3, 2], np.int64))
    out, with_default = run([tf.nn.safe_embedding_lookup_sparse(PARAMS, ids),
                             tf.nn.safe_embedding_lookup_sparse(PARAMS, ids, default_id=5)])
    assert out.shape == (2, 3, 3)
    expect = np.zeros((2, 3, 3))
    expect[0, 0], expect[0, 2], expect[1, 1] = PARAMS[1], PARAMS[4], PARAMS[2]
    np.testing.assert_allclose(out, expect)
    expect_default = expect.copy()
    for r, c in [(0, 1), (1, 0), (1, 2)]:
        expect_default[r, c] = PARAMS[5]
    np.testing.assert_allclose(with_default, expect_default)
    check_grad(lambda p: tf.nn.safe_embedding_lookup_sparse(p, ids, combiner="sqrtn"), PARAMS)


def test_embedding_lookup_sparse_trains_a_variable():
    emb = tf.Variable(PARAMS.astype(np.float32))
    sp = tf.sparse_placeholder(tf.int64)
    loss = tf.reduce_sum(tf.nn.embedding_lookup_sparse(emb, sp, None, combiner="sum"))
    step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step, {sp: SP_IDS})
        after = sess.run(emb)
    counts = np.bincount(SP_IDS.values, minlength=6)[:, None]
    np.testing.assert_allclose(after, PARAMS - 0.5 * counts, rtol=1e-6)
