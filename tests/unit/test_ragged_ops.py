"""tf.ragged.boolean_mask, stack, stack_dynamic_partitions, cross and cross_hashed against
TensorFlow's values (fixtures/tf_ragged_ops.json, recorded by fixtures/record_tf_ragged_ops.py):
the same cases built through tensorweave give the same values, row splits (and their dtype) and
errors; hashed crosses are bit-equal. Gradients reach the values through the masks and stacks."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from fixtures.record_tf_ragged_ops import run
from ragged_cases import as_json

import tensorweave as tf

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_ragged_ops.json")) as _f:
    CASES = json.load(_f)["cases"]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['fn']}-{i}" for i, c in enumerate(CASES)])
def test_matches_tensorflow(case):
    got = run(tf, case["fn"], case["args"], case["kwargs"])
    if "error" in case["result"]:
        assert isinstance(got, dict) and got.get("error") == case["result"]["error"], got
    else:
        assert as_json(got) == case["result"]


def test_boolean_mask_against_numpy_with_gradient():
    rng = np.random.RandomState(0)
    data = rng.randn(4, 5).astype(np.float32)
    mask = rng.rand(4, 5) > 0.5
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.constant(data)
        masked = tf.ragged.boolean_mask(x, mask)
        loss = tf.reduce_sum(masked.flat_values * masked.flat_values)
        value, grad = sess.run([masked, tf.gradients(loss, x)[0]])
    assert value.to_list() == [row[m].tolist() for row, m in zip(data, mask)]
    np.testing.assert_allclose(grad, 2 * data * mask, rtol=1e-6)


def test_stack_axis_1_gradient_reaches_each_input():
    with tf.Graph().as_default(), tf.Session() as sess:
        a = tf.constant([1.0, 2.0, 3.0])
        b = tf.constant([4.0, 5.0])
        ra = tf.RaggedTensor.from_row_splits(a, [0, 2, 3])
        rb = tf.RaggedTensor.from_row_splits(b, [0, 1, 2])
        stacked = tf.ragged.stack([ra, rb], axis=1)
        weights = tf.constant([1.0, 10.0, 100.0, 1000.0, 10000.0])   # flat order: a0 a1 b0 a2 b1
        ga, gb = sess.run(tf.gradients(tf.reduce_sum(stacked.flat_values * weights), [a, b]))
    np.testing.assert_allclose(ga, [1.0, 10.0, 1000.0])
    np.testing.assert_allclose(gb, [100.0, 10000.0])


def test_stack_dynamic_partitions_matches_dynamic_partition():
    rng = np.random.RandomState(1)
    data = rng.randn(20).astype(np.float32)
    parts = rng.randint(0, 4, size=20).astype(np.int32)
    with tf.Graph().as_default(), tf.Session() as sess:
        rt = tf.ragged.stack_dynamic_partitions(data, parts, 4)
        dense = tf.dynamic_partition(data, parts, 4)
        got, want = sess.run([rt, dense])
    assert got.to_list() == [w.tolist() for w in want]


def test_cross_hashed_equals_sparse_cross_hashed():
    with tf.Graph().as_default(), tf.Session() as sess:
        words = tf.ragged.constant([[b"a", b"b"], [b"c"], []])
        ids = tf.constant([[1], [2], [3]], dtype=tf.int64)
        ragged = tf.ragged.cross_hashed([words, ids], num_buckets=97)
        sparse = tf.sparse.cross_hashed([words.to_sparse(), ids], num_buckets=97)
        r, s = sess.run([ragged, sparse])
    assert r.flat_values.tolist() == s.values.tolist() and r.to_list()[2] == []


def test_bad_inputs_name_the_problem():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="mask cannot be scalar"):
            tf.ragged.boolean_mask([1, 2], True)
        with pytest.raises(ValueError, match="rank=2"):
            tf.ragged.cross([tf.ragged.constant([[[b"a"]]])])
        with pytest.raises(ValueError, match="same number of rows"):
            tf.ragged.cross([tf.ragged.constant([[b"a"]]), tf.constant([[b"b"], [b"c"]])])
        with pytest.raises(ValueError, match="axis=3 out of bounds"):
            tf.ragged.stack([tf.ragged.constant([[1]]), tf.ragged.constant([[2]])], axis=3)
        with pytest.raises(TypeError, match="Inputs must be a list"):
            tf.ragged.cross(tf.constant([[b"a"]]))
