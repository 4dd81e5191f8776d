"""tf.feature_column against TensorFlow 2.15's tf.compat.v1.feature_column: every case of
fixtures/feature_column_cases.py rebuilt with tensorweave gives the recorded outputs (hash and
cross bucket ids included) and creates the recorded variables (names, shapes, trainable, model
variables), so checkpoints line up; parse specs, cols_to_vars and bad-input errors are TF's.
Fixtures: fixtures/tf_feature_columns.json (fixtures/record_tf_feature_columns.py)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.feature_column_cases import (CASES, CHECKPOINT, CHECKPOINT_CASE, DEFAULT_VALUES, ERRORS, RUN_ERRORS,
                                           default_value, features, fixed_values, parse_spec_columns, spec_table)
from fixtures.recorded import decode

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "tf_feature_columns.json")) as f:
    RECORDED = json.load(f)
fc = tf.feature_column


def _variables() -> list:
    trainable = {v.op.name for v in tf.trainable_variables()}
    model = {v.op.name for v in tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)}
    return sorted([v.op.name, v.shape.as_list(), v.op.name in trainable, v.op.name in model]
                  for v in tf.global_variables())


def _run_case(name):
    with tf.Graph().as_default():
        outputs = CASES[name](tf, features(tf))
        variables = _variables()
        assigns = [tf.assign(v, fixed_values(v.shape.as_list())) for v in tf.global_variables()
                   if "linear_model" in v.op.name]
        with tf.Session() as s:
            s.run([tf.global_variables_initializer(), tf.tables_initializer()])
            s.run(assigns)
            return s.run(outputs), variables


def _assert_value(got, want, what):
    if "indices" in want:   # a SparseTensorValue
        for part in ("indices", "values", "dense_shape"):
            np.testing.assert_array_equal(np.asarray(getattr(got, part)), decode(want[part]), err_msg=f"{what}.{part}")
        return
    want = decode(want)
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=what)


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_outputs_and_variables_equal_tf(name):
    values, variables = _run_case(name)
    recorded = RECORDED["cases"][name]
    assert variables == recorded["variables"]
    assert sorted(values) == sorted(recorded["outputs"])
    for key, want in recorded["outputs"].items():
        _assert_value(values[key], want, f"{name}/{key}")


def test_tf_checkpoint_of_feature_column_model_restores_into_ours():
    with tf.Graph().as_default():
        outputs = CASES[CHECKPOINT_CASE](tf, features(tf))
        with tf.Session() as s:
            s.run(tf.tables_initializer())
            tf.train.Saver().restore(s, CHECKPOINT)   # TF 2.15 wrote it; every variable is found by its TF name
            values = s.run(outputs)
    for key, want in RECORDED["cases"][CHECKPOINT_CASE]["outputs"].items():
        _assert_value(values[key], want, key)


def test_cols_to_vars_name_tf_variables():
    with tf.Graph().as_default():
        f = features(tf)
        emb = fc.embedding_column(fc.categorical_column_with_hash_bucket("tags", 4), 2)
        shared = fc.shared_embedding_columns([fc.categorical_column_with_identity("ids", 4),
                                              fc.categorical_column_with_identity("code", 4)], 2)
        numeric = fc.numeric_column("price")
        layer, linear = {}, {}
        fc.input_layer(f, [emb, numeric] + shared, cols_to_vars=layer)
        fc.linear_model(f, [numeric, fc.categorical_column_with_identity("ids", 4)], cols_to_vars=linear, units=2)

        def names(d):
            return {c if isinstance(c, str) else c.name: [v.op.name for v in vs] for c, vs in d.items()}
        assert {"input_layer": names(layer), "linear_model": names(linear)} == RECORDED["cols_to_vars"]


def test_make_parse_example_spec_equals_tf():
    assert spec_table(fc.make_parse_example_spec(parse_spec_columns(tf))) == RECORDED["parse_spec"]


def test_numeric_default_values_are_tf_nested_tuples():
    assert [default_value(tf, *args) for args in DEFAULT_VALUES] == RECORDED["default_values"]


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_input_raises_tf_error(name):
    with tf.Graph().as_default():
        with pytest.raises(Exception) as info:
            ERRORS[name](tf, features(tf))
    cls, _, message = RECORDED["errors"][name].partition(": ")
    assert type(info.value).__name__ == cls
    assert str(info.value) == message


def test_numeric_column_fed_strings_fails_at_its_cast_as_tf():
    cls, message, node = RECORDED["run_errors"]["numeric_fed_strings"]
    with tf.Graph().as_default():
        out = RUN_ERRORS["numeric_fed_strings"](tf, features(tf))
        with tf.Session() as s, pytest.raises(getattr(tf.errors, cls)) as info:
            s.run(out)
    assert message in str(info.value) and node in str(info.value)


def test_vocabulary_table_needs_tables_initializer():
    with tf.Graph().as_default():
        column = fc.indicator_column(fc.categorical_column_with_vocabulary_list("w", ["a", "b"]))
        out = fc.input_layer({"w": tf.constant([["b"], ["a"]])}, [column])
        with tf.Session() as s:
            with pytest.raises(tf.errors.FailedPreconditionError, match="Table not initialized"):
                s.run(out)
            s.run(tf.tables_initializer())
            np.testing.assert_array_equal(s.run(out), [[0, 1], [1, 0]])


def test_monitored_session_initializes_tables():
    with tf.Graph().as_default():
        column = fc.indicator_column(fc.categorical_column_with_vocabulary_list("w", ["a", "b"], num_oov_buckets=1))
        out = fc.input_layer({"w": tf.constant([["b"], ["zz"]])}, [column])
        tf.train.get_or_create_global_step()
        with tf.train.MonitoredTrainingSession() as s:
            np.testing.assert_array_equal(s.run(out), [[0, 1, 0], [0, 0, 1]])


def test_fed_sparse_placeholder_and_rank1_dense_inputs():
    with tf.Graph().as_default():
        ids = tf.sparse_placeholder(tf.int64, name="ids")
        price = tf.placeholder(tf.float32, [None], name="price")
        columns = [fc.indicator_column(fc.categorical_column_with_identity("ids", 3)), fc.numeric_column("price")]
        out = fc.input_layer({"ids": ids, "price": price}, columns)
        with tf.Session() as s:
            got = s.run(out, {ids: tf.SparseTensorValue([[0, 0], [0, 1], [2, 0]], [2, 0, 1], [3, 2]),
                              price: [1.0, 2.0, 3.0]})
    np.testing.assert_array_equal(got, [[1, 0, 1, 1], [0, 0, 0, 2], [0, 1, 0, 3]])


def test_linear_model_trains_and_checkpoints_under_tf_names(tmp_path):
    with tf.Graph().as_default():
        f = {"price": tf.constant([[1.0], [2.0]]), "tags": tf.constant([["a"], ["b"]])}
        columns = [fc.numeric_column("price"), fc.categorical_column_with_hash_bucket("tags", 3)]
        logits = fc.linear_model(f, columns)
        loss = tf.reduce_sum(tf.square(logits - tf.constant([[1.0], [-1.0]])))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        saver = tf.train.Saver()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            before = s.run(loss)
            for _ in range(5):
                s.run(train)
            assert s.run(loss) < before
            path = saver.save(s, str(tmp_path / "model"))
    names = dict(tf.train.list_variables(path))
    assert names == {"linear_model/bias_weights": [1], "linear_model/price/weights": [1, 1],
                     "linear_model/tags/weights": [3, 1]}


def test_embedding_column_loads_from_checkpoint(tmp_path):
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    with tf.Graph().as_default():
        v = tf.get_variable("old/emb", initializer=table)
        with tf.Session() as s:
            s.run(v.initializer)
            path = tf.train.Saver([v]).save(s, str(tmp_path / "ckpt"))
    with tf.Graph().as_default():
        column = fc.embedding_column(fc.categorical_column_with_identity("ids", 4), 3, combiner="sum",
                                     ckpt_to_load_from=path, tensor_name_in_ckpt="old/emb")
        out = fc.input_layer({"ids": tf.constant([[1, 3], [2, -1]], dtype=tf.int64)}, [column])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            np.testing.assert_allclose(s.run(out), [table[1] + table[3], table[2]])


def test_features_of_unknown_rank_are_expanded_at_run_time():
    with tf.Graph().as_default():
        price, words = tf.placeholder(tf.float32, None), tf.placeholder(tf.string, None)
        columns = [fc.numeric_column("price"),
                   fc.indicator_column(fc.categorical_column_with_vocabulary_list("w", ["a", "b"]))]
        out = fc.input_layer({"price": price, "w": words}, columns)
        with tf.Session() as s:
            s.run(tf.tables_initializer())
            np.testing.assert_array_equal(s.run(out, {price: [1.0, 2.0], words: ["b", "a"]}), [[1, 0, 1], [2, 1, 0]])
            np.testing.assert_array_equal(s.run(out, {price: [[3.0]], words: [["a"]]}), [[3, 1, 0]])
            with pytest.raises(tf.errors.InvalidArgumentError, match="cannot have rank 0"):
                s.run(out, {price: 1.0, words: [["a"]]})


def test_weight_collections_and_trainable_false():
    with tf.Graph().as_default():
        f = {"price": np.array([[1.0], [2.0]], np.float32), "ids": np.array([[0], [2]], np.int64)}
        ids = fc.categorical_column_with_identity("ids", 3)
        fc.linear_model(f, [fc.numeric_column("price"), ids], weight_collections=["mine"], trainable=False)
        fc.input_layer(f, [fc.embedding_column(ids, 2)], weight_collections=["mine"])
        mine = sorted(v.op.name for v in tf.get_collection("mine"))
        assert mine == ["input_layer/ids_embedding/embedding_weights", "linear_model/bias_weights",
                        "linear_model/ids/weights", "linear_model/price/weights"]
        assert [v.op.name for v in tf.trainable_variables()] == ["input_layer/ids_embedding/embedding_weights"]
