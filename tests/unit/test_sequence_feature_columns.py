"""The sequence feature columns (tf.feature_column.sequence_*, tf.contrib.feature_column's
sequence_input_layer and concatenate_context_input): every case of
fixtures/sequence_feature_column_cases.py rebuilt with tensorweave gives the outputs TF 2.15
recorded (its SequenceFeatures, and TF 1.15's contrib sequence_input_layer over TF's v1 columns,
whose variables ours name alike); values against numpy from the same sparse inputs; the parse spec;
bad input failing with TF's error class and a message naming the column.
Fixtures: fixtures/tf_sequence_feature_columns.json (fixtures/record_tf_sequence_feature_columns.py)."""
from __future__ import annotations

import json
import os
import types

import numpy as np
import pytest

import tensorweave as tf
from fixtures.recorded import decode
from fixtures.sequence_feature_column_cases import (CASES, ERRORS, RUN_ERRORS, features, parse_spec_columns,
                                                    spec_table)

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "tf_sequence_feature_columns.json")) as f:
    RECORDED = json.load(f)
fc = tf.feature_column
contrib = tf.contrib.feature_column
# The cases through tf.keras.experimental.SequenceFeatures, as TF 2.15 recorded them.
keras_layer = types.SimpleNamespace(
    sequence_input_layer=lambda features, columns: tf.keras.experimental.SequenceFeatures(columns)(features),
    concatenate_context_input=contrib.concatenate_context_input)


def _variables() -> list:
    trainable = {v.op.name for v in tf.trainable_variables()}
    model = {v.op.name for v in tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)}
    return sorted([v.op.name, v.shape.as_list(), v.op.name in trainable, v.op.name in model]
                  for v in tf.global_variables())


def _run_case(name, api=contrib):
    with tf.Graph().as_default():
        outputs = CASES[name](tf, features(tf), api)
        variables = _variables()
        with tf.Session() as s:
            s.run([tf.global_variables_initializer(), tf.tables_initializer()])
            return s.run(outputs), variables


def _assert_outputs(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        value = decode(value)
        out = np.asarray(got[key])
        assert (out.dtype, out.shape) == (value.dtype, value.shape), (key, out.dtype, out.shape)
        np.testing.assert_allclose(out, value, rtol=1e-5, atol=1e-6, err_msg=key)


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_outputs_equal_tf(name):
    outputs, variables = _run_case(name)
    assert name in RECORDED["cases"] or name in RECORDED["contrib_cases"]
    if name in RECORDED["cases"]:   # TF 2.15's SequenceFeatures: all but the (TF1) shared embeddings
        _assert_outputs(outputs, RECORDED["cases"][name]["outputs"])
    if name in RECORDED["contrib_cases"]:   # TF1's contrib: all but TF 2.15's (TF 2 only) sequence_numeric_column
        _assert_outputs(outputs, RECORDED["contrib_cases"][name]["outputs"])
        assert variables == RECORDED["contrib_cases"][name]["variables"]


@pytest.mark.parametrize("name", sorted(RECORDED["cases"]))
def test_sequence_features_layer_equals_tf(name):
    outputs, variables = _run_case(name, keras_layer)
    _assert_outputs(outputs, RECORDED["cases"][name]["outputs"])
    assert variables == RECORDED["cases"][name]["variables"]


def test_sequence_features_layer_owns_and_shares_its_variables():
    with tf.Graph().as_default():
        column = fc.embedding_column(fc.sequence_categorical_column_with_identity("ids", 4), 2)
        layer = tf.keras.experimental.SequenceFeatures([column, fc.sequence_numeric_column("temp")])
        f = features(tf)
        first, length = layer(f)
        second, _ = layer(f)
        assert [v.op.name for v in layer.trainable_weights] == ["sequence_features/ids_embedding/embedding_weights"]
        assert len(tf.global_variables()) == 1
        session = tf.keras.backend.get_session()   # initializes the layer's weights
        a, b, got_length = session.run([first, second, length])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(got_length, [2, 0, 3, 0])
    with pytest.raises(ValueError, match="dictionary"):
        layer([f["temp_dense"]])


def test_make_parse_example_spec_gives_var_len_features_as_tf():
    with tf.Graph().as_default():
        spec = fc.make_parse_example_spec(parse_spec_columns(tf))
    assert spec_table(spec) == RECORDED["parse_spec"]


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_input_raises_tf_error_naming_the_column(name):
    build, column_name = ERRORS[name]
    with tf.Graph().as_default():
        with pytest.raises(Exception) as info:
            build(tf, features(tf), contrib)
    assert type(info.value).__name__ == RECORDED["errors"][name].partition(":")[0]
    assert column_name in str(info.value)


def test_columns_disagreeing_on_lengths_fail_when_run():
    cls = RECORDED["run_errors"]["lengths_differ"].partition(":")[0]
    with tf.Graph().as_default():
        length = RUN_ERRORS["lengths_differ"](tf, features(tf), contrib)
        with tf.Session() as s, pytest.raises(getattr(tf.errors, cls)):
            s.run(length)


# -- against numpy ----------------------------------------------------------------------------------
def _ragged_batch(rng, batch, longest, empty_rows):
    """Random sequences of ids in [0, 6), rows `empty_rows` empty: (indices, values, lengths)."""
    lengths = rng.integers(1, longest + 1, size=batch)
    lengths[list(empty_rows)] = 0
    indices = np.array([[b, t] for b in range(batch) for t in range(lengths[b])], np.int64).reshape(-1, 2)
    return indices, rng.integers(0, 6, size=len(indices)).astype(np.int64), lengths


def test_embedding_indicator_and_numeric_sequences_equal_numpy():
    rng = np.random.default_rng(7)
    batch, longest, dimension = 5, 4, 3
    indices, ids, lengths = _ragged_batch(rng, batch, longest, empty_rows=(1, 4))
    values = rng.normal(size=(len(indices), 2)).astype(np.float32)   # 2 numbers a step
    numeric_indices = np.array([[b, 2 * t + j] for b, t in indices for j in range(2)], np.int64).reshape(-1, 2)
    table = rng.normal(size=(6, dimension)).astype(np.float32)
    with tf.Graph().as_default():
        column = fc.sequence_categorical_column_with_identity("ids", 6)
        columns = [fc.embedding_column(column, dimension, initializer=tf.constant_initializer(table.ravel().tolist())),
                   fc.indicator_column(column), fc.sequence_numeric_column("x", shape=(2,), default_value=9.0)]
        feats = {"ids": tf.SparseTensor(indices, ids, [batch, longest]),
                 "x": tf.SparseTensor(numeric_indices, values.ravel(), [batch, 2 * longest])}
        out, length = contrib.sequence_input_layer(feats, columns)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got, got_length = s.run([out, length])
    steps = lengths.max()
    embedded = np.zeros((batch, steps, dimension), np.float32)
    one_hot = np.zeros((batch, steps, 6), np.float32)
    numeric = np.full((batch, steps, 2), 9.0, np.float32)
    for (b, t), i, v in zip(indices, ids, values):
        embedded[b, t], one_hot[b, t, i], numeric[b, t] = table[i], 1.0, v
    # Columns in the order of their names: ids_embedding, ids_indicator, x.
    np.testing.assert_allclose(got, np.concatenate([embedded, one_hot, numeric], -1), rtol=1e-6)
    np.testing.assert_array_equal(got_length, lengths)
    assert got_length.dtype == np.int64


def test_several_ids_a_step_combine_per_step():
    """A [batch, T, k] SparseTensor (parse_sequence_example's shape) combines each step's ids."""
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    indices = [[0, 0, 0], [0, 0, 1], [0, 1, 0], [2, 0, 0], [2, 0, 1], [2, 0, 2]]
    ids = [0, 3, 2, 1, 1, 2]
    with tf.Graph().as_default():
        column = fc.sequence_categorical_column_with_identity("ids", 4)
        columns = [fc.embedding_column(column, 3, combiner="sqrtn",
                                       initializer=tf.constant_initializer(table.ravel().tolist())),
                   fc.indicator_column(column)]
        out, length = contrib.sequence_input_layer({"ids": tf.SparseTensor(indices, tf.constant(ids, tf.int64),
                                                                           [3, 2, 3])}, columns)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got, got_length = s.run([out, length])
    want = np.zeros((3, 2, 7), np.float32)
    want[0, 0, :3] = (table[0] + table[3]) / np.sqrt(2)
    want[0, 1, :3] = table[2]
    want[2, 0, :3] = (2 * table[1] + table[2]) / np.sqrt(3)
    for (b, t, _), i in zip(indices, ids):
        want[b, t, 3 + i] += 1.0
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_array_equal(got_length, [2, 0, 1])


def test_parse_sequence_example_feeds_sequence_columns():
    """Serialized SequenceExamples parsed with the columns' own parse spec feed them."""
    examples = [[[b"b"], [b"a", b"c"], [b"zz"]], [], [[b"c"]]]
    serialized = []
    for steps in examples:
        proto = tf.train.SequenceExample()
        for step in steps:
            proto.feature_lists.feature_list["w"].feature.add().bytes_list.value.extend(step)
        serialized.append(proto.SerializeToString())
    with tf.Graph().as_default():
        column = fc.indicator_column(fc.sequence_categorical_column_with_vocabulary_list("w", ["a", "b", "c"],
                                                                                        num_oov_buckets=1))
        spec = fc.make_parse_example_spec([column])
        assert spec == {"w": tf.VarLenFeature(tf.string)}
        _, sequences, _ = tf.io.parse_sequence_example(tf.constant(serialized), sequence_features=spec)
        out, length = contrib.sequence_input_layer(sequences, [column])
        with tf.Session() as s:
            s.run(tf.tables_initializer())
            got, got_length = s.run([out, length])
    want = np.zeros((3, 3, 4), np.float32)
    vocabulary = {b"a": 0, b"b": 1, b"c": 2}
    for b, steps in enumerate(examples):
        for t, step in enumerate(steps):
            for word in step:
                want[b, t, vocabulary.get(word, 3)] += 1.0
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_length, [3, 0, 1])


def test_sequence_embedding_gradient_counts_each_step():
    """d sum(input) / d embedding_weights: each id's row gets 1 per step it appears in (mean of 1)."""
    ids = [2, 0, 2, 3]
    with tf.Graph().as_default():
        column = fc.embedding_column(fc.sequence_categorical_column_with_identity("ids", 4), 2)
        out, _ = contrib.sequence_input_layer(
            {"ids": tf.SparseTensor([[0, 0], [0, 1], [1, 0], [1, 2]], tf.constant(ids, tf.int64), [2, 3])}, [column])
        weights, = tf.trainable_variables()
        assert weights.op.name == "sequence_input_layer/ids_embedding/embedding_weights"
        grad = tf.gradients(tf.reduce_sum(out), weights)[0]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got = s.run(tf.convert_to_tensor(grad))
    np.testing.assert_allclose(got, np.array([[1, 1], [0, 0], [2, 2], [1, 1]], np.float32))


def test_concatenate_context_input_checks_ranks():
    with tf.Graph().as_default():
        sequence_input = tf.placeholder(tf.float32, [None, None, 2])
        with pytest.raises(ValueError, match="rank"):
            contrib.concatenate_context_input(tf.constant([1.0, 2.0]), sequence_input)
