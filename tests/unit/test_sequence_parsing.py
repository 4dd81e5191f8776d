"""tf.io.parse_single_sequence_example and parse_sequence_example: context features (dense with a
default, sparse) and feature lists (FixedLenSequenceFeature, VarLenFeature), values equal to TF
2.21's (recorded by fixtures/record_sequence_examples.py, from the serialized SequenceExamples
stored beside them), a batch padded to its longest list with each example's length; TF's errors
for a required feature list that is absent and a step of the wrong size."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.recorded import decode

with open(os.path.join(os.path.dirname(__file__), "fixtures", "sequence_examples.json")) as _f:
    RECORDED = json.load(_f)
SERIALIZED = decode(RECORDED["serialized"])

CONTEXT = {"length": tf.FixedLenFeature([], tf.int64), "tags": tf.VarLenFeature(tf.string),
           "weight": tf.FixedLenFeature([2], tf.float32, default_value=[0.25, 0.5])}
SEQUENCE = {"pos": tf.FixedLenSequenceFeature([2], tf.float32, allow_missing=True),
            "ids": tf.FixedLenSequenceFeature([], tf.int64, allow_missing=True),
            "words": tf.VarLenFeature(tf.string)}


def _assert_equal(got: dict, recorded: dict):
    assert sorted(got) == sorted(recorded)
    for key, want in recorded.items():
        value = got[key]
        parts = [value.indices, value.values, value.dense_shape] if hasattr(value, "indices") else [value]
        for part, w in zip(parts, want if isinstance(want, list) else [want]):
            w = decode(w)
            assert np.asarray(part).shape == w.shape, key
            assert np.asarray(part).tolist() == w.tolist(), key


@pytest.mark.parametrize("i", range(3))
def test_single_sequence_example_equals_tf(i):
    with tf.Graph().as_default():
        context, lists = tf.io.parse_single_sequence_example(SERIALIZED[i], CONTEXT, SEQUENCE)
        assert lists["pos"].shape.as_list() == [None, 2] and context["weight"].shape.as_list() == [2]
        with tf.Session() as s:
            got_context, got_lists = s.run([context, lists])
    _assert_equal(got_context, RECORDED["single"][i][0])
    _assert_equal(got_lists, RECORDED["single"][i][1])


def test_batch_of_sequence_examples_equals_tf():
    with tf.Graph().as_default():
        context, lists, lengths = tf.parse_sequence_example(tf.constant(SERIALIZED), CONTEXT, SEQUENCE)
        assert lists["pos"].shape.as_list() == [3, None, 2] and lengths["ids"].shape.as_list() == [3]
        with tf.Session() as s:
            got = s.run([context, lists, lengths])
    for g, want in zip(got, RECORDED["batch"]):
        _assert_equal(g, want)


def test_errors():
    with tf.Graph().as_default():
        required = tf.parse_single_sequence_example(
            SERIALIZED[1], sequence_features={"ids": tf.FixedLenSequenceFeature([], tf.int64)})[1]["ids"]
        wrong_size = tf.io.parse_sequence_example(
            SERIALIZED, sequence_features={"pos": tf.FixedLenSequenceFeature([3], tf.float32, allow_missing=True)}
        )[1]["pos"]
        with tf.Session() as s:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Feature list 'ids' is required"):
                s.run(required)
            with pytest.raises(tf.errors.InvalidArgumentError, match="Key: pos, Index: 0.  Number of float values"):
                s.run(wrong_size)
    with pytest.raises(ValueError, match="Missing features"):
        tf.io.parse_single_sequence_example(SERIALIZED[0])
