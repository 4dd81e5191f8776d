"""tf.RaggedTensor and tf.ragged: TensorFlow's recorded results (fixtures/tf_ragged.json), the
methods against numpy references, run-time validation errors, gradients through to_tensor."""
from __future__ import annotations

import numpy as np
import pytest
from ragged_cases import case_id, cases, check_case
from unit_helpers import run

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")

ROWS = [[1.0, 2.0], [], [3.0, 4.0, 5.0], [6.0]]


@pytest.mark.parametrize("case", cases("ragged."), ids=case_id)
def test_matches_tensorflow(case):
    check_case(case)


def _reference_dense(rows, default=0.0) -> np.ndarray:
    width = max((len(r) for r in rows), default=0)
    return np.array([r + [default] * (width - len(r)) for r in rows], np.float32).reshape(len(rows), width)


def test_parts_and_methods_against_numpy():
    rt = tf.ragged.constant(ROWS)
    assert rt.ragged_rank == 1 and rt.dtype == tf.float32 and rt.shape.as_list() == [4, None]
    assert rt.row_splits.dtype == tf.int64
    lengths = [len(r) for r in ROWS]
    splits = np.concatenate([[0], np.cumsum(lengths)])
    got = run({"values": rt.values, "splits": rt.row_splits, "lengths": rt.row_lengths(), "nrows": rt.nrows(),
               "rowids": rt.value_rowids(), "starts": rt.row_starts(), "limits": rt.row_limits(),
               "dense": rt.to_tensor(), "padded": rt.to_tensor(default_value=-7.0), "sparse": rt.to_sparse()})
    np.testing.assert_array_equal(got["values"], np.concatenate([r for r in ROWS if r]).astype(np.float32))
    np.testing.assert_array_equal(got["splits"], splits)
    np.testing.assert_array_equal(got["lengths"], lengths)
    assert got["nrows"] == 4
    np.testing.assert_array_equal(got["rowids"], np.repeat(np.arange(4), lengths))
    np.testing.assert_array_equal(got["starts"], splits[:-1])
    np.testing.assert_array_equal(got["limits"], splits[1:])
    np.testing.assert_array_equal(got["dense"], _reference_dense(ROWS))
    np.testing.assert_array_equal(got["padded"], _reference_dense(ROWS, -7.0))
    dense_from_sparse = np.zeros(got["sparse"].dense_shape, np.float32)
    dense_from_sparse[tuple(got["sparse"].indices.T)] = got["sparse"].values
    np.testing.assert_array_equal(dense_from_sparse, _reference_dense(ROWS))


def test_fetch_gives_a_ragged_tensor_value():
    rt = tf.ragged.constant([[[1, 2], [3]], [], [[4]]])
    value = run(rt)
    assert isinstance(value, tf.ragged.RaggedTensorValue)
    assert value.ragged_rank == 2 and value.to_list() == [[[1, 2], [3]], [], [[4]]]
    assert isinstance(value.values, tf.ragged.RaggedTensorValue)
    np.testing.assert_array_equal(value.row_splits, [0, 2, 2, 3])
    np.testing.assert_array_equal(value.flat_values, [1, 2, 3, 4])
    assert [s.tolist() for s in value.nested_row_splits] == [[0, 2, 2, 3], [0, 2, 3, 4]]
    assert value.shape == (3, None, None)
    # fetch structures hold ragged values like any other
    pair = run({"a": [rt, rt.flat_values]})
    assert pair["a"][0].to_list() == value.to_list()


def test_factories_agree():
    values = tf.constant([3, 1, 4, 1, 5, 9, 2])
    expected = [[3, 1], [], [4, 1, 5], [9, 2], []]
    made = [tf.RaggedTensor.from_row_splits(values, [0, 2, 2, 5, 7, 7]),
            tf.RaggedTensor.from_row_lengths(values, [2, 0, 3, 2, 0]),
            tf.RaggedTensor.from_value_rowids(values, [0, 0, 2, 2, 2, 3, 3], nrows=5),
            tf.RaggedTensor.from_row_starts(values, [0, 2, 2, 5, 7]),
            tf.RaggedTensor.from_row_limits(values, [2, 2, 5, 7, 7]),
            tf.RaggedTensor.from_nested_row_splits(values, [[0, 2, 2, 5, 7, 7]])]
    for value in run(made):
        assert value.to_list() == expected
    nested = tf.RaggedTensor.from_nested_row_lengths(values, [[2, 1], [2, 0, 5]])
    assert run(nested).to_list() == [[[3, 1], []], [[4, 1, 5, 9, 2]]]
    by_ids = tf.RaggedTensor.from_nested_value_rowids(values, [[0, 0, 1], [0, 0, 2, 2, 2, 2, 2]], [2, 3])
    assert run(by_ids).to_list() == [[[3, 1], []], [[4, 1, 5, 9, 2]]]


def test_from_tensor_with_unknown_shape_and_roundtrip():
    x = tf.placeholder(tf.int32, [None, None])
    rt = tf.RaggedTensor.from_tensor(x, padding=0)
    assert rt.shape.as_list() == [None, None]
    data = np.array([[5, 0, 0], [1, 0, 2], [0, 0, 0]], np.int32)
    with tf.Session() as sess:
        value, back = sess.run([rt, rt.to_tensor()], {x: data})
    assert value.to_list() == [[5], [1, 0, 2], []]
    np.testing.assert_array_equal(back, data)


def test_strings_to_tensor_pads_with_empty_bytes():
    rt = tf.ragged.constant([["a", "b"], ["c"]])
    np.testing.assert_array_equal(run(rt.to_tensor()).astype(bytes), np.array([[b"a", b"b"], [b"c", b""]]))


@pytest.mark.parametrize("splits,what", [([1, 2, 3], "must start at 0"), ([0, 3, 2, 3], "non-decreasing"),
                                         ([0, 1, 2], "end at the number of values")])
def test_invalid_row_splits_fail_at_run_time_naming_the_factory(splits, what):
    row_splits = tf.placeholder(tf.int64, [None])
    rt = tf.RaggedTensor.from_row_splits(tf.constant([1, 2, 3]), row_splits)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError) as err:
        sess.run(rt, {row_splits: splits})
    assert "from_row_splits" in str(err.value) and what in str(err.value)
    assert "RaggedFromRowSplits" in str(err.value)


def test_invalid_constant_splits_fail():
    rt = tf.RaggedTensor.from_row_splits([1, 2, 3], [1, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="must start at 0"):
        run(rt)


def test_invalid_row_lengths_and_rowids():
    lengths = tf.placeholder(tf.int64, [None])
    rowids = tf.placeholder(tf.int64, [None])
    by_lengths = tf.RaggedTensor.from_row_lengths(tf.constant([1, 2, 3]), lengths)
    by_ids = tf.RaggedTensor.from_value_rowids(tf.constant([1, 2, 3]), rowids)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="from_row_lengths"):
            sess.run(by_lengths, {lengths: [2, 2]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="value_rowids must be sorted"):
            sess.run(by_ids, {rowids: [0, 2, 1]})


def test_to_sparse_rejects_bad_splits_naming_the_op():
    splits = tf.placeholder(tf.int64, [None])
    rt = tf.RaggedTensor.from_row_splits(tf.constant([1, 2]), splits, validate=False)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="RaggedTensorToSparse"):
        sess.run(rt.to_sparse(), {splits: [0, 3]})


def test_constructor_is_private_and_constant_errors():
    with pytest.raises(ValueError, match="private"):
        tf.RaggedTensor(tf.constant([1]), tf.constant([0, 1], tf.int64))
    with pytest.raises(ValueError, match="same nesting depth"):
        tf.ragged.constant([[1, [2]], [3]])
    with pytest.raises(ValueError, match="inconsistent shape"):
        tf.ragged.constant([[[1, 2]], [[3]]], ragged_rank=1)


def test_constant_value_and_dense_results():
    value = tf.ragged.constant_value([[1, 2], [3]])
    assert isinstance(value, tf.ragged.RaggedTensorValue)
    assert value.to_list() == [[1, 2], [3]] and value.row_splits.dtype == np.int64
    assert isinstance(tf.ragged.constant([1, 2]), tf.Tensor)   # not nested: a dense tensor, as TF's
    inner = tf.ragged.constant([[[1, 2]], []], inner_shape=(2,))
    assert inner.ragged_rank == 1 and inner.shape.as_list() == [2, None, 2]


def test_segment_ids_roundtrip_against_numpy():
    ids = np.array([0, 0, 1, 3, 3, 3, 6])
    splits = tf.ragged.segment_ids_to_row_splits(ids, num_segments=8)
    back = tf.ragged.row_splits_to_segment_ids(splits)
    got_splits, got_ids = run([splits, back])
    np.testing.assert_array_equal(got_splits, np.concatenate([[0], np.cumsum(np.bincount(ids, minlength=8))]))
    np.testing.assert_array_equal(got_ids, ids)


def test_map_flat_values():
    rt = tf.ragged.constant([[1.0, 2.0], [], [3.0]])
    doubled = tf.ragged.map_flat_values(tf.multiply, rt, 2.0)
    summed = tf.ragged.map_flat_values(tf.add, rt, rt)
    assert run(doubled).to_list() == [[2.0, 4.0], [], [6.0]]
    assert run(summed).to_list() == [[2.0, 4.0], [], [6.0]]
    other = tf.ragged.constant([[1.0], [2.0, 3.0], []])
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="identical ragged splits"):
        sess.run(tf.ragged.map_flat_values(tf.add, rt, other))


def test_range_rejects_zero_delta():
    with pytest.raises(tf.errors.InvalidArgumentError, match="RaggedRange"):
        run(tf.ragged.range([1, 2], [3, 4], [1, 0]))


def test_gradient_through_to_tensor_and_to_sparse_matches_numpy():
    values = tf.constant([1.0, 2.0, 3.0, 4.0])
    rt = tf.RaggedTensor.from_row_lengths(values, [1, 0, 3])
    weights = np.arange(9, dtype=np.float32).reshape(3, 3)
    loss = tf.reduce_sum(rt.to_tensor(default_value=5.0) * weights)
    sparse_loss = tf.reduce_sum(rt.to_sparse().values ** 2)
    grad, sparse_grad = run(tf.gradients([loss], [values])[0]), run(tf.gradients(sparse_loss, values)[0])
    # value j sits at (row, col) of the dense tensor: its gradient is that cell's weight
    np.testing.assert_array_equal(grad, [weights[0, 0], weights[2, 0], weights[2, 1], weights[2, 2]])
    np.testing.assert_array_equal(sparse_grad, 2 * np.array([1.0, 2.0, 3.0, 4.0]))


def test_eval_and_strings_split_ragged_result():
    rt = tf.strings.split(["a b", "", "c d e"], result_type="RaggedTensor")
    with tf.Session():
        assert rt.eval().to_list() == [[b"a", b"b"], [], [b"c", b"d", b"e"]]
    with pytest.raises(ValueError, match="result_type"):
        tf.string_split(["a"], result_type="Dense")


def test_placeholder_is_fed_a_ragged_tensor_value():
    rt = tf.ragged.placeholder(tf.float32, ragged_rank=2, value_shape=[2])
    assert rt.ragged_rank == 2 and rt.shape.as_list() == [None, None, None, 2]
    value = tf.ragged.constant_value([[[[1.0, 2.0]], []], [[[3.0, 4.0], [5.0, 6.0]]]], ragged_rank=2, dtype=np.float32)
    doubled = tf.ragged.map_flat_values(tf.multiply, rt, 2.0)
    with tf.Session() as sess:
        got = sess.run(doubled, {rt: value})
        assert got.to_list() == [[[[2.0, 4.0]], []], [[[6.0, 8.0], [10.0, 12.0]]]]
        with pytest.raises(ValueError, match="ragged_rank"):
            sess.run(doubled, {rt: tf.ragged.constant_value([[[1.0, 2.0]]], ragged_rank=1)})
        with pytest.raises(TypeError, match="RaggedTensorValue"):
            sess.run(doubled, {rt: [[1.0]]})
