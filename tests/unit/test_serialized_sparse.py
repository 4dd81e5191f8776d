"""tf.io.serialize_sparse / serialize_many_sparse write TF's bytes (compared with TF 2.21's, recorded
by fixtures/record_serialized_sparse.py), and deserialize_many_sparse reads them back to the
SparseTensor TF gives, the batch's shape the largest of its members'; clear errors for a rank-1
input, a dtype other than the serialized one, and bytes that are no TensorProto."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.recorded import decode

with open(os.path.join(os.path.dirname(__file__), "fixtures", "serialized_sparse.json")) as _f:
    RECORDED = json.load(_f)
CASES = {name: r["case"] for name, r in RECORDED.items() if "case" in r}


def _assert_sparse(got, recorded):
    for part, want in zip((got.indices, got.values, got.dense_shape), recorded):
        want = decode(want)
        assert np.asarray(part).shape == want.shape
        assert np.asarray(part).tolist() == want.tolist()


@pytest.mark.parametrize("case", sorted(CASES))
def test_bytes_and_round_trip_equal_tf(case):
    indices, values, shape, dtype = CASES[case]
    with tf.Graph().as_default():
        sp = tf.SparseTensor(tf.constant(indices, tf.int64), tf.constant(values, dtype), tf.constant(shape, tf.int64))
        one, many = tf.io.serialize_sparse(sp), tf.serialize_many_sparse(sp)
        back = tf.io.deserialize_many_sparse(many, dtype, rank=len(shape))
        assert one.shape.as_list() == [3] and back.indices.shape.as_list() == [None, len(shape)]
        with tf.Session() as s:
            one_v, many_v, back_v = s.run([one, many, back])
    assert one_v.tolist() == decode(RECORDED[case]["serialize_sparse"]).tolist()
    assert many_v.tolist() == decode(RECORDED[case]["serialize_many_sparse"]).tolist()
    _assert_sparse(back_v, RECORDED[case]["deserialized"])


def test_deserialize_stacks_sparse_tensors_of_different_shapes():
    with tf.Graph().as_default():
        a = tf.serialize_sparse(tf.SparseTensor([[0, 1]], [1.0], [2, 3]))
        b = tf.io.serialize_sparse(tf.SparseTensor([[3, 0], [4, 1]], [2.0, 3.0], [5, 2]))
        back = tf.deserialize_many_sparse(tf.stack([a, b]), tf.float32)
        with tf.Session() as s:
            _assert_sparse(s.run(back), RECORDED["mixed_shapes"])


def test_errors():
    with tf.Graph().as_default():
        rank1 = tf.io.serialize_many_sparse(tf.SparseTensor([[1]], [1.0], [3]))
        many = tf.io.serialize_many_sparse(tf.SparseTensor([[0, 1]], [1.0], [2, 3]))
        wrong_dtype = tf.io.deserialize_many_sparse(many, tf.int32)
        garbage = tf.io.deserialize_many_sparse([["x", "y", "z"]], tf.float32)
        with tf.Session() as s:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Rank of input SparseTensor should be > 1"):
                s.run(rank1)
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"DeserializeManySparse.*Type mismatch"):
                s.run(wrong_dtype)
            with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse"):
                s.run(garbage)
    with pytest.raises(TypeError, match="SparseTensor"):
        tf.io.serialize_sparse(tf.constant([1.0]))
