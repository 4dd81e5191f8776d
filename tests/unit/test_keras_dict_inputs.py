"""tf.keras models taking a dict of inputs (TF 1.15's Keras, graph mode): functional models on a
dict of Inputs, list-input models fed dicts keyed by the Inputs' names, Sequential (DenseFeatures
first) and subclassed models built by their first dict of features, fed numpy dicts and tf.data
datasets of (dict, label). The structured-data tutorial's histories, evaluations, predictions and
weight names are TF 2.15's (fixtures/keras_dict_inputs.json, recorded by
fixtures/record_keras_dict_inputs.py from fixtures/keras_dict_inputs_cases.py); the rest is
checked against numpy."""
import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.keras_dict_inputs_cases import CASES, nested_dict_model, saved_features, saved_model, start

keras = tf.keras
K = keras.backend
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
with open(os.path.join(FIXTURES, "keras_dict_inputs.json")) as f:
    RECORDED = json.load(f)

RNG = np.random.RandomState(7)
A, B, Y = RNG.uniform(-1, 1, (10, 1)), RNG.uniform(-1, 1, (10, 2)), RNG.uniform(-1, 1, (10, 1))
KERNEL, BIAS = np.array([[0.5], [-1.0], [2.0]], np.float32), np.array([0.25], np.float32)


@pytest.fixture(autouse=True)
def fresh_graph():
    K.clear_session()
    yield
    K.clear_session()


def expected(a, b):
    """Dense(1) over concatenate([a, b]) with KERNEL and BIAS."""
    return np.concatenate([a, b], axis=1) @ KERNEL + BIAS


def dict_model(keys=("a", "b"), names=("a", "b")):
    """Model(inputs={keys[0]: Input((1,), name=names[0]), keys[1]: Input((2,), name=names[1])})."""
    inputs = {keys[0]: keras.Input((1,), name=names[0]), keys[1]: keras.Input((2,), name=names[1])}
    dense = keras.layers.Dense(1)
    model = keras.Model(inputs=inputs, outputs=dense(keras.layers.concatenate([inputs[keys[0]], inputs[keys[1]]])))
    dense.set_weights([KERNEL, BIAS])
    return model


# -- the tutorial against TF ----------------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(CASES))
def test_structured_data_tutorial_trains_as_tf(case):
    """DenseFeatures over numeric, bucketized, vocabulary-list (indicator, embedding) and crossed
    columns: fit on dict datasets / numpy dicts, evaluate and predict equal TF 2.15's."""
    model, fit_kwargs, evaluate_data = CASES[case](tf)
    history = model.fit(verbose=0, callbacks=[start(tf, model)], **fit_kwargs)
    recorded = RECORDED[case]
    assert sorted(history.history) == sorted(recorded["history"])
    for key, values in recorded["history"].items():
        np.testing.assert_allclose(history.history[key], values, rtol=2e-5, atol=1e-6, err_msg=key)
    np.testing.assert_allclose(model.evaluate(verbose=0, **evaluate_data), recorded["evaluate"], rtol=2e-5)
    np.testing.assert_allclose(model.predict(evaluate_data["x"]).reshape(-1), recorded["predict"], rtol=2e-5)
    assert model.input_names == recorded["input_names"]
    assert [w.name for w in model.weights] == recorded["weight_names"]


# -- functional models on a dict of Inputs --------------------------------------------------------
def test_functional_dict_model_fits_evaluates_and_predicts_on_numpy_dicts_and_datasets():
    model = dict_model()
    assert model.input_names == ["a", "b"] and [t.name for t in model.inputs] == ["a:0", "b:0"]
    model.compile(keras.optimizers.SGD(0.0), "mse")   # lr 0: the weights stay, the loss is numpy's
    want = np.mean((expected(A, B) - Y) ** 2)
    np.testing.assert_allclose(model.predict({"b": B, "a": A}), expected(A, B), rtol=1e-6)
    np.testing.assert_allclose(model.predict([A, B]), expected(A, B), rtol=1e-6)   # the flat order: sorted keys
    np.testing.assert_allclose(model.evaluate({"a": A, "b": B}, Y, batch_size=4, verbose=0), want, rtol=1e-5)
    np.testing.assert_allclose(model.test_on_batch({"a": A, "b": B}, Y), want, rtol=1e-5)
    np.testing.assert_allclose(model.predict_on_batch({"a": A, "b": B}), expected(A, B), rtol=1e-6)
    dataset = tf.data.Dataset.from_tensor_slices(({"a": A, "b": B}, Y)).batch(5)
    np.testing.assert_allclose(model.evaluate(dataset, verbose=0), want, rtol=1e-5)
    np.testing.assert_allclose(model.predict(tf.data.Dataset.from_tensor_slices({"a": A, "b": B}).batch(3)),
                               expected(A, B), rtol=1e-6)
    # training: one SGD step of a batch on a dict equals the step on the same arrays as a list
    model.compile(keras.optimizers.SGD(0.1), "mse")
    loss = model.train_on_batch({"a": A, "b": B}, Y)
    np.testing.assert_allclose(loss, want, rtol=1e-5)
    x = np.concatenate([A, B], axis=1)
    grad = 2 * x.T @ (expected(A, B) - Y) / len(Y)
    np.testing.assert_allclose(model.get_weights()[0], KERNEL - 0.1 * grad, rtol=1e-5)
    history = model.fit(dataset, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2 and history.history["loss"][1] < history.history["loss"][0]


def test_model_input_and_output_are_the_dicts_it_was_built_from():
    """As TF 2.15's Keras: `inputs`/`outputs` are flat lists, `input`/`output` and their shapes the dicts."""
    a, b = keras.Input((2,), name="a"), keras.Input((3,), name="b")
    o, p = keras.layers.Dense(1)(a), keras.layers.Dense(2)(b)
    model = keras.Model({"b": b, "a": a}, {"o": o, "p": p})
    assert model.inputs == [a, b] and model.outputs == [o, p]
    assert model.input == {"a": a, "b": b} and model.output == {"o": o, "p": p}
    assert model.input_shape == {"a": (None, 2), "b": (None, 3)}
    assert model.output_shape == {"o": (None, 1), "p": (None, 2)}
    assert keras.Model([a, b], o).input == [a, b] and keras.Model(a, o).input is a


def test_dict_keys_other_than_input_names_feed_by_name_and_map_calls_by_key():
    """As Keras: the flat inputs follow the sorted keys, data dicts are keyed by the Inputs' names,
    and calling the model on a dict of tensors maps them by the model's own keys."""
    model = dict_model(keys=("x", "w"), names=("a", "b"))
    assert model.input_names == ["b", "a"]   # sorted keys: "w" (Input b), "x" (Input a)
    np.testing.assert_allclose(model.predict({"a": A, "b": B}), expected(A, B), rtol=1e-6)
    with pytest.raises(ValueError, match='No data provided for "b". Need data for each key in: \\[\'b\', \'a\'\\]'):
        model.predict({"x": A, "w": B})
    a, b = keras.Input((1,)), keras.Input((2,))
    outer = keras.Model([a, b], model({"w": b, "x": a}))
    np.testing.assert_allclose(outer.predict([A, B]), expected(A, B), rtol=1e-6)


def test_list_input_model_takes_dicts_keyed_by_input_names():
    p, q = keras.Input((1,), name="p"), keras.Input((2,), name="q")
    dense = keras.layers.Dense(1)
    model = keras.Model([q, p], dense(keras.layers.concatenate([p, q])))
    dense.set_weights([KERNEL, BIAS])
    model.compile(keras.optimizers.SGD(0.0), "mse")
    np.testing.assert_allclose(model.predict({"p": A, "q": B}), expected(A, B), rtol=1e-6)
    dataset = tf.data.Dataset.from_tensor_slices(({"q": B, "p": A}, Y)).batch(5)   # (a dataset's loss: per step)
    np.testing.assert_allclose(model.evaluate(dataset, verbose=0), np.mean((expected(A, B) - Y) ** 2), rtol=1e-5)
    called = model({"p": tf.constant(A, tf.float32), "q": tf.constant(B, tf.float32)})   # by name, not by order
    np.testing.assert_allclose(K.get_session().run(called), expected(A, B), rtol=1e-6)


def test_dict_model_config_is_keras_s_and_round_trips():
    """input_layers and a dict call's inbound node are written as TF 2.15 writes them (a dict by
    key); from_config / model_from_json rebuild a model on a dict of Inputs."""
    outer = nested_dict_model(keras)
    recorded = RECORDED["nested_dict_model"]
    config = outer.get_config()
    assert config["input_layers"] == recorded["config"]["input_layers"]
    assert config["output_layers"] == recorded["config"]["output_layers"]
    inner_of = {layer["name"]: layer for layer in config["layers"]}
    want_of = {layer["name"]: layer for layer in recorded["config"]["layers"]}
    assert inner_of["inner"]["inbound_nodes"] == want_of["inner"]["inbound_nodes"]
    assert inner_of["inner"]["config"]["input_layers"] == want_of["inner"]["config"]["input_layers"]
    assert outer.input_names == recorded["input_names"]
    assert outer.get_layer("inner").input_names == recorded["inner_input_names"]
    again = keras.models.model_from_json(outer.to_json())
    assert again.input_names == recorded["input_names"] and sorted(again._nested_inputs) == ["w", "x"]
    again.set_weights(outer.get_weights())
    feed = {"ox": A, "ow": B}
    np.testing.assert_allclose(again.predict(feed), outer.predict(feed), rtol=1e-6)


def test_dict_model_saves_to_hdf5_and_loads(tmp_path):
    model = dict_model(keys=("x", "w"), names=("a", "b"))
    model.compile(keras.optimizers.SGD(0.1), "mse")
    model.fit({"a": A, "b": B}, Y, epochs=2, verbose=0)
    path = str(tmp_path / "dict_model.h5")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.input_names == ["b", "a"] and sorted(loaded._nested_inputs) == ["w", "x"]
    np.testing.assert_allclose(loaded.predict({"a": A, "b": B}), model.predict({"a": A, "b": B}), rtol=1e-6)
    np.testing.assert_allclose(loaded.evaluate({"a": A, "b": B}, Y, verbose=0),
                               model.evaluate({"a": A, "b": B}, Y, verbose=0), rtol=1e-6)


def test_clone_of_a_dict_model_keeps_its_dict_inputs():
    clone = keras.models.clone_model(dict_model(keys=("x", "w"), names=("a", "b")))
    assert sorted(clone._nested_inputs) == ["w", "x"] and clone.input_names == ["b", "a"]
    clone.set_weights([KERNEL, BIAS])
    np.testing.assert_allclose(clone.predict({"a": A, "b": B}), expected(A, B), rtol=1e-6)


def _without_later_fields(config):
    """TF 2.15's column configs less its `use_safe_embedding_lookup` (TF 1.15's have none)."""
    if isinstance(config, dict):
        return {k: _without_later_fields(v) for k, v in config.items() if k != "use_safe_embedding_lookup"}
    return [_without_later_fields(v) for v in config] if isinstance(config, list) else config


def test_dense_features_model_saved_by_tf_loads_and_ours_is_written_as_tf_s(tmp_path):
    """keras_dict_inputs.h5 (TF 2.15: DenseFeatures over numeric, bucketized, vocabulary-list,
    crossed, hashed, identity and weighted columns on a dict of Inputs) loads and predicts as TF;
    our config of the same model holds the columns as TF's does; ours saves and loads back."""
    recorded = RECORDED["saved_model"]
    loaded = keras.models.load_model(os.path.join(FIXTURES, "keras_dict_inputs.h5"))
    K.get_session().run(tf.tables_initializer())
    np.testing.assert_allclose(loaded.predict(saved_features()).reshape(-1), recorded["predict"], rtol=1e-5)
    ours = saved_model(tf)
    layer_config = {layer["name"]: layer for layer in ours.get_config()["layers"]}["dense_features"]
    want = {layer["name"]: layer for layer in recorded["config"]["layers"]}["dense_features"]
    assert json.loads(json.dumps(layer_config["config"])) == _without_later_fields(want["config"])
    assert json.loads(json.dumps(layer_config["inbound_nodes"])) == want["inbound_nodes"]
    path = str(tmp_path / "ours.h5")
    ours.save(path)
    again = keras.models.load_model(path)
    K.get_session().run(tf.tables_initializer())
    np.testing.assert_allclose(again.predict(saved_features()).reshape(-1), recorded["predict"], rtol=1e-5)


def test_feature_column_configs_that_cannot_load_are_named():
    fc = tf.feature_column
    layer = keras.layers.DenseFeatures([fc.numeric_column("a", normalizer_fn=lambda x: x * 2)])
    config = layer.get_config()
    with pytest.raises(ValueError, match="normalizer_fn.*<lambda>"):
        keras.layers.DenseFeatures.from_config(config)
    scaled = keras.layers.DenseFeatures.from_config(config, custom_objects={"<lambda>": lambda x: x * 3})
    assert scaled._feature_columns[0].normalizer_fn(1) == 3
    config["feature_columns"][0]["class_name"] = "NoSuchColumn"
    with pytest.raises(ValueError, match="Unknown feature column class: 'NoSuchColumn'"):
        keras.layers.DenseFeatures.from_config(config)


def test_dict_model_to_estimator_predicts_as_the_keras_model(tmp_path):
    """model_to_estimator of a DenseFeatures model on a dict of Inputs: the estimator's model_fn
    clones it on the input_fn's features dict and starts from its weights."""
    fc = tf.feature_column
    thal = fc.categorical_column_with_vocabulary_list("thal", ["fixed", "normal", "reversible"])
    inputs = {"age": keras.Input((1,), name="age"), "thal": keras.Input((1,), name="thal", dtype=tf.string)}
    features = keras.layers.DenseFeatures([fc.numeric_column("age"), fc.embedding_column(thal, 3)])(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(features))
    model.compile("adam", "binary_crossentropy")
    x = {"age": np.array([[0.2], [0.4], [0.6]], np.float32), "thal": np.array([["fixed"], ["normal"], ["x"]])}
    K.get_session().run(tf.tables_initializer())
    want = model.predict(x)
    estimator = keras.estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path))
    predictions = estimator.predict(lambda: tf.data.Dataset.from_tensor_slices(x).batch(3))
    got = np.array([list(p.values())[0] for p in predictions])
    np.testing.assert_allclose(got, want, rtol=1e-5)


# -- Sequential and subclassed models built by a dict ---------------------------------------------
def test_sequential_dense_features_builds_on_a_numpy_dict():
    fc = tf.feature_column
    model = keras.Sequential([keras.layers.DenseFeatures([fc.numeric_column("a"), fc.numeric_column("b", (2,))]),
                              keras.layers.Dense(1)])
    features = {"b": B, "a": A[:, 0], "unused": np.arange(10.0)}   # 1-D columns become (batch, 1), as Keras
    predicted = model.predict(features)   # the first data builds the model
    assert model.input_names == ["a", "b", "unused"]
    assert [t.shape.as_list() for t in model.inputs] == [[None, 1], [None, 2], [None, 1]]
    assert [w.name for w in model.weights] == ["sequential/dense/kernel:0", "sequential/dense/bias:0"]
    model.set_weights([KERNEL, BIAS])
    np.testing.assert_allclose(model.predict(features), expected(A, B), rtol=1e-6)
    assert predicted.shape == (10, 1)
    model.compile(keras.optimizers.SGD(0.0), "mse")
    np.testing.assert_allclose(model.evaluate(features, Y, verbose=0), np.mean((expected(A, B) - Y) ** 2), rtol=1e-5)
    with pytest.raises(ValueError, match='No data provided for "unused"'):
        model.predict({"a": A, "b": B})
    # its config (no input shape: a dict builds it again on data, as TF) rebuilds it
    again = keras.Sequential.from_config(model.get_config())
    assert not again.inputs and again.layers[0]._feature_columns == model.layers[0]._feature_columns
    assert again.predict({"a": A, "b": B}).shape == (10, 1)


def test_subclassed_model_with_a_custom_layer_on_a_dict_dataset():
    class Sum(keras.layers.Layer):
        def call(self, inputs):
            return inputs["u"] + 2.0 * inputs["v"]

    class Model(keras.Model):
        def __init__(self):
            super().__init__()
            self.sum, self.dense = Sum(), keras.layers.Dense(1, kernel_initializer="ones")

        def call(self, inputs):
            return self.dense(self.sum(inputs))

    model = Model()
    model.compile(keras.optimizers.SGD(0.0), "mse")
    u, v = RNG.uniform(size=(8, 3)), RNG.uniform(size=(8, 3))
    dataset = tf.data.Dataset.from_tensor_slices(({"v": v, "u": u}, Y[:8])).batch(4)
    want = (u + 2 * v).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(model.evaluate(dataset, verbose=0), np.mean((want - Y[:8]) ** 2), rtol=1e-5)
    assert model.input_names == ["u", "v"]
    np.testing.assert_allclose(model.predict({"u": u, "v": v}), want, rtol=1e-5)


def test_subclassed_model_over_sequence_features_on_a_dict_dataset():
    """SequenceFeatures (an embedding of a sequence vocabulary column, "" padding) in a subclassed
    model: built by the dataset's (dict, label) structure, its output the tokens' mean embedding."""
    fc = tf.feature_column
    table = np.arange(12.0).reshape(4, 3) / 10
    words = fc.sequence_categorical_column_with_vocabulary_list("words", ["a", "b", "c", "d"])

    class MeanEmbedding(keras.Model):
        def __init__(self):
            super().__init__()
            self.sequence = keras.experimental.SequenceFeatures(
                [fc.embedding_column(words, 3, initializer=tf.constant_initializer(table))])
            self.dense = keras.layers.Dense(1, kernel_initializer="ones")

        def call(self, inputs):
            x, length = self.sequence(inputs)
            return self.dense(tf.reduce_sum(x, axis=1) / tf.expand_dims(tf.cast(length, tf.float32), 1))

    model = MeanEmbedding()
    model.compile(keras.optimizers.SGD(0.0), "mse")
    x = {"words": np.array([["a", "b", ""], ["c", "", ""], ["d", "a", "c"], ["b", "b", ""]])}
    dataset = tf.data.Dataset.from_tensor_slices((x, np.ones((4, 1)))).batch(2)
    init = keras.callbacks.LambdaCallback(on_train_begin=lambda logs: K.get_session().run(tf.tables_initializer()))
    model.fit(dataset, verbose=0, callbacks=[init])
    want = [table[ids].mean(axis=0).sum() for ids in ([0, 1], [2], [3, 0, 2], [1, 1])]
    np.testing.assert_allclose(model.predict(x).reshape(-1), want, rtol=1e-6)
    assert model.input_names == ["words"]
    assert [w.name for w in model.weights][0] == "mean_embedding/sequence_features/words_embedding/embedding_weights:0"


def test_sequential_dense_features_fits_on_a_generator_of_dicts():
    """A generator's first (dict, y) builds the model (Keras trains batch by batch there)."""
    fc = tf.feature_column
    model = keras.Sequential([keras.layers.DenseFeatures([fc.numeric_column("a"), fc.numeric_column("b", (2,))]),
                              keras.layers.Dense(1, kernel_initializer="zeros")])
    model.compile(keras.optimizers.SGD(0.1), "mse")

    def batches():
        while True:
            for first in (0, 5):
                yield {"a": A[first:first + 5], "b": B[first:first + 5]}, Y[first:first + 5]

    history = model.fit(batches(), steps_per_epoch=2, epochs=1, verbose=0)
    # the first step from zero weights: loss mean(y^2), then kernel -= 0.1 * grad
    x = np.concatenate([A, B], axis=1)
    first = -2 * x[:5].T @ Y[:5] / 5
    kernel = -0.1 * first
    bias = -0.1 * (-2 * Y[:5].mean())
    second = np.mean((x[5:] @ kernel + bias - Y[5:]) ** 2)
    np.testing.assert_allclose(history.history["loss"], [(np.mean(Y[:5] ** 2) + second) / 2], rtol=1e-5)
    assert model.input_names == ["a", "b"]


# -- bad input ------------------------------------------------------------------------------------
def test_a_missing_key_is_named():
    model = dict_model()
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match='No data provided for "b". Need data for each key in: \\[\'a\', \'b\'\\]'):
        model.fit({"a": A}, Y, verbose=0)
    dataset = tf.data.Dataset.from_tensor_slices(({"a": A}, Y)).batch(5)
    with pytest.raises(ValueError, match='No data provided for "b"'):
        model.evaluate(dataset, verbose=0)


def test_a_dict_for_one_unnamed_input_needs_its_generated_name():
    x = keras.Input((1,))
    dense = keras.layers.Dense(1, kernel_initializer="ones")
    model = keras.Model(x, dense(x))
    with pytest.raises(ValueError, match='No data provided for "input_1". Need data for each key in: '
                                         "\\['input_1'\\]"):
        model.predict({"x": A})
    np.testing.assert_allclose(model.predict({"input_1": A}), A, rtol=1e-6)


def test_sequential_refuses_a_dict_without_a_features_layer_first():
    class Sum(keras.layers.Layer):
        def call(self, inputs):
            return inputs["u"] + inputs["v"]

    model = keras.Sequential([Sum(), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match="Passing a dictionary input to a Sequential Model which doesn't have "
                                         "FeatureLayer as the first layer is an error."):
        model.fit({"u": B, "v": B}, Y, verbose=0)
