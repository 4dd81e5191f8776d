"""tf.sparse names of tf.compat.v1 added in issue 28. tf.sparse.bincount (TF 2.x): counts of a
Tensor's or SparseTensor's values as a SparseTensor, over all values or per row, weighted or
binary, sized by minlength/maxlength; against numpy and TensorFlow's recorded values; bad input
named. tf.sparse.SparseConditionalAccumulator: tf.SparseConditionalAccumulator by its other name."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.tf_additions_cases import CASES, replay
from fixtures.tf_values_cases import case_fetches
from unit_helpers import run

RECORDED = json.load(open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_additions.json")))["cases"]
R = np.random.RandomState(2)


@pytest.mark.parametrize("name", sorted(n for n in CASES if n.startswith("sparse/")))
def test_matches_tensorflow(name):
    replay(tf, RECORDED, name, case_fetches)


def _dense(sp) -> np.ndarray:
    out = np.zeros(sp.dense_shape, np.asarray(sp.values).dtype)
    out[tuple(np.asarray(sp.indices).T)] = sp.values
    return out


def test_flat_counts_are_numpys_bincount():
    values = R.randint(0, 12, size=(5, 7)).astype(np.int64)
    weights = R.rand(5, 7)
    out = run(tf.sparse.bincount(values))
    np.testing.assert_array_equal(_dense(out), np.bincount(values.reshape(-1)))
    assert np.asarray(out.values).dtype == np.int64   # the values' dtype without weights
    np.testing.assert_allclose(_dense(run(tf.sparse.bincount(values, weights=weights, minlength=20))),
                               np.bincount(values.reshape(-1), weights.reshape(-1), minlength=20))
    binary = run(tf.sparse.bincount(values, binary_output=True, maxlength=5))
    np.testing.assert_array_equal(_dense(binary), (np.bincount(values.reshape(-1), minlength=12) > 0)[:5])


def test_per_row_counts_of_a_sparse_tensor_match_each_rows_bincount():
    dense = R.randint(0, 6, size=(4, 5)).astype(np.int32)
    present = R.rand(4, 5) < 0.6
    indices = np.argwhere(present)
    sp = tf.SparseTensor(indices, dense[present], [4, 5])
    out = run(tf.sparse.bincount(sp, axis=-1, minlength=8))
    assert out.dense_shape.tolist() == [4, 8]
    expected = np.stack([np.bincount(dense[r][present[r]], minlength=8) for r in range(4)])
    np.testing.assert_array_equal(_dense(out), expected)
    assert np.all(np.diff(out.indices[:, 0] * 8 + out.indices[:, 1]) > 0)   # row-major, as TF's


def test_bincount_bad_input_is_named():
    with pytest.raises(ValueError, match="mutually exclusive"):
        tf.sparse.bincount([1, 2], weights=[1.0, 2.0], binary_output=True)
    with pytest.raises(ValueError, match="axis=1"):
        tf.sparse.bincount([[1, 2]], axis=1)
    with pytest.raises(ValueError, match="must be a SparseTensor"):
        tf.sparse.bincount(tf.SparseTensor([[0, 0]], [1], [1, 1]), weights=[1.0], axis=-1)
    with pytest.raises(ValueError, match="must have the same indices"):
        tf.sparse.bincount(tf.SparseTensor([[0, 0]], [1], [1, 2]), weights=tf.SparseTensor([[0, 0], [0, 1]], [1.0, 2.0],
                                                                                          [1, 2]), axis=-1)
    with pytest.raises(ValueError, match="DenseCountSparseOutput: input must be a 1 or 2-dimensional"):
        tf.sparse.bincount(tf.zeros([2, 2, 2], tf.int32), axis=-1)
    values = tf.placeholder(tf.int32, None)
    counts = tf.sparse.bincount(values, axis=-1)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="DenseCountSparseOutput.*must all be non-negative"):
            sess.run(counts, {values: [1, -2]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="DenseCountSparseOutput.*1 or 2-dimensional"):
            sess.run(counts, {values: np.zeros([1, 1, 1])})
    weights = tf.placeholder(tf.float32, None)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="Weights and data must have"):
        sess.run(tf.sparse.bincount(values, weights=weights, axis=-1), {values: [[1, 2]], weights: [[1.0]]})


def test_sparse_conditional_accumulator_is_also_a_tf_sparse_name():
    assert tf.sparse.SparseConditionalAccumulator is tf.SparseConditionalAccumulator
    acc = tf.sparse.SparseConditionalAccumulator(tf.float32, shape=[3, 2])
    with tf.Session() as sess:
        sess.run(acc.apply_grad([0, 2], [[2.0, 4.0], [1.0, 1.0]], [3, 2], local_step=0))
        sess.run(acc.apply_grad([2], [[3.0, 5.0]], [3, 2], local_step=0))
        got = sess.run(acc.take_indexed_slices_grad(2))
    assert got.indices.tolist() == [0, 2] and got.values.tolist() == [[2.0, 4.0], [2.0, 3.0]]
