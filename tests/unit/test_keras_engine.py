"""tf.keras engine in graph mode: Sequential, functional and nested models, shared layers,
summary() text, configs and JSON, weights, a model called in a graph twice, gradients; values
recorded from TF 2.15 (fixtures/record_keras_engine.py -> keras_engine.json)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.recorded import assert_same, decode

keras = tf.keras
K = tf.keras.backend

with open(os.path.join(os.path.dirname(__file__), "fixtures", "keras_engine.json"), encoding="utf-8") as f:
    RECORDED = json.load(f)
X4 = decode(RECORDED["x4"])


def ramp_weights(model) -> list:
    """The recorder's weights: each variable a ramp from -0.5 to 0.7."""
    return [np.linspace(-0.5, 0.7, int(np.prod(w.shape)), dtype=np.float32).reshape(w.shape)
            for w in model.get_weights()]


def summary_text(model) -> str:
    lines = []
    model.summary(print_fn=lines.append)
    return "\n".join(lines)


def variables(model) -> list:
    return [[v.name, v.shape.as_list()] for v in model.weights]


def test_sequential_with_input_shape_matches_tf():
    want = RECORDED["sequential"]
    model = keras.Sequential([keras.layers.Dense(3, activation="relu", input_shape=(4,)),
                              keras.layers.Dense(2, activation="softmax")])
    model.set_weights(ramp_weights(model))
    assert variables(model) == want["variables"]
    assert summary_text(model) == want["summary"]
    assert_same([K.get_session().run(model.output, {model.input: X4})], [want["y"]])
    assert [layer.name for layer in model.layers] == ["dense", "dense_1"]
    assert model.inputs[0].name == "dense_input:0"


def test_two_inputs_and_a_shared_layer_match_tf():
    want = RECORDED["two_inputs_shared"]
    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    shared = keras.layers.Dense(3, activation="tanh", name="shared")
    out_a = keras.layers.Dense(2, name="out_a")(shared(a))
    out_b = keras.layers.Dense(1, use_bias=False, name="out_b")(shared(b))
    model = keras.Model([a, b], [out_a, out_b])
    model.set_weights(ramp_weights(model))
    assert variables(model) == want["variables"]      # the shared layer's weights once
    assert summary_text(model) == want["summary"]
    ya, yb = K.get_session().run(model.outputs, {a: X4, b: X4[::-1] * 2})
    assert_same([ya, yb], [want["ya"], want["yb"]])
    assert model.input_names == ["a", "b"] and model.output_names == ["out_a", "out_b"]
    assert [layer.name for layer in model.layers] == ["a", "b", "shared", "out_a", "out_b"]
    assert model.get_layer("shared") is shared and model.get_layer(index=2) is shared
    assert shared.get_output_at(1).shape.as_list() == [None, 3]
    with pytest.raises(AttributeError, match="multiple inbound nodes"):
        shared.output
    with pytest.raises(ValueError, match="No such layer: nope"):
        model.get_layer("nope")


def test_nested_models_match_tf():
    want = RECORDED["nested"]
    inner = keras.Sequential([keras.layers.Dense(3, input_shape=(4,)), keras.layers.Activation("relu")],
                             name="inner")
    x = keras.Input((4,))
    y = keras.layers.Dense(2)(inner(x))
    model = keras.Model(x, y, name="outer")
    model.set_weights(ramp_weights(model))
    assert variables(model) == want["variables"]
    assert summary_text(model) == want["summary"]
    assert_same([K.get_session().run(y, {x: X4})], [want["y"]])
    assert model.layers[1] is inner and inner.count_params() == 15


def test_sequential_deferred_build_matches_tf():
    want = RECORDED["deferred_sequential"]
    model = keras.Sequential()
    model.add(keras.layers.Dense(5))
    model.add(keras.layers.Dense(2))
    assert not model.built and model.weights == []
    with pytest.raises(ValueError, match="not yet been built"):
        model.summary()
    x = tf.placeholder(tf.float32, [None, 4])
    y = model(x)
    model.set_weights(ramp_weights(model))
    assert variables(model) == want["variables"]
    assert summary_text(model) == want["summary"]
    assert_same([K.get_session().run(y, {x: X4})], [want["y"]])


def test_summary_of_a_frozen_layer_and_long_names_matches_tf():
    x = keras.Input((4,), name="an_input_with_a_rather_long_name")
    frozen = keras.layers.Dense(3, name="a_very_long_layer_name_that_wraps_around_the_column")
    frozen.trainable = False
    h = frozen(x)
    y = keras.layers.Dense(2, name="head")(keras.layers.Dense(3, name="side")(x))
    model = keras.Model(x, [h, y], name="frozen")
    assert summary_text(model) == RECORDED["frozen"]["summary"]
    assert [v.name for v in model.weights] == RECORDED["frozen"]["weights"]      # layer by layer
    assert [v.name for v in model.trainable_weights] == RECORDED["frozen"]["trainable_weights"]


def test_model_called_twice_in_a_graph_shares_its_variables():
    want = RECORDED["graph_twice"]
    inp = keras.Input((4,))
    model = keras.Model(inp, keras.layers.Dense(2)(inp))
    x1 = tf.placeholder(tf.float32, [None, 4])
    x2 = tf.placeholder(tf.float32, [None, 4])
    with tf.name_scope("tower"):
        y1 = model(x1)
    y2 = model(x2)
    assert [v.name for v in tf.global_variables()] == want["variables"]
    assert [y1.name, y2.name] == [want["y1"], want["y2"]]
    v1, v2 = K.get_session().run([y1, y2], {x1: X4, x2: X4})
    np.testing.assert_array_equal(v1, v2)


def test_model_in_an_estimator_style_model_fn_builds_once():
    """A subclassed model made outside and called inside a graph: one set of variables, created
    under the model's scope on the first call."""

    class TwoLayer(keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = keras.layers.Dense(3, activation="relu")
            self.out = keras.layers.Dense(1)

        def call(self, inputs):
            return self.out(self.hidden(inputs))

    model = TwoLayer()
    features = tf.placeholder(tf.float32, [None, 4])
    first = model(features)
    second = model(features * 2.0)
    assert [v.name for v in model.weights] == ["two_layer/dense/kernel:0", "two_layer/dense/bias:0",
                                               "two_layer/dense_1/kernel:0", "two_layer/dense_1/bias:0"]
    assert len(tf.trainable_variables()) == 4
    sess = K.get_session()
    k1, b1, k2, b2 = model.get_weights()
    got1, got2 = sess.run([first, second], {features: X4})
    np.testing.assert_allclose(got1, np.maximum(X4 @ k1 + b1, 0) @ k2 + b2, rtol=1e-5)
    np.testing.assert_allclose(got2, np.maximum(2 * X4 @ k1 + b1, 0) @ k2 + b2, rtol=1e-5)
    assert summary_text(model).splitlines()[4].split() == ["dense", "(Dense)", "multiple", "15"]


def test_get_config_from_config_and_json_round_trip():
    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    shared = keras.layers.Dense(3, activation="tanh", name="shared", kernel_regularizer=keras.regularizers.l2(0.1))
    out = keras.layers.Dense(1, name="out", kernel_constraint="max_norm")(shared(b))
    model = keras.Model([a, b], [keras.layers.Dropout(0.5, name="drop")(shared(a)), out], name="twin")
    config = model.get_config()
    assert config["input_layers"] == [["a", 0, 0], ["b", 0, 0]]
    assert config["output_layers"] == [["drop", 0, 0], ["out", 0, 0]]
    assert [layer["inbound_nodes"] for layer in config["layers"] if layer["name"] == "shared"] == \
        [[[["b", 0, 0, {}]], [["a", 0, 0, {}]]]]
    text = model.to_json()
    assert json.loads(text)["class_name"] == "Model"
    for clone in (keras.Model.from_config(config), keras.models.model_from_json(text)):
        assert clone.get_config() == config
        assert clone.name == "twin" and len(clone.losses) == 1
        assert isinstance(clone.get_layer("out").kernel_constraint, keras.constraints.MaxNorm)
        clone.set_weights(model.get_weights())
        feeds = {model.inputs[0]: X4, model.inputs[1]: -X4, clone.inputs[0]: X4, clone.inputs[1]: -X4}
        want, got = K.get_session().run([model.outputs, clone.outputs], feeds)
        for w, g in zip(want, got):
            np.testing.assert_allclose(g, w, rtol=1e-6)


def test_configs_recorded_from_tf_load_and_serialize_back():
    """TF's functional configs load; ours equal them but for what TF 2 added: the model's
    `trainable` key and the InputLayer a Sequential's config lists first (TF 1.15 leaves it out)."""
    for case in ("two_inputs_shared", "nested"):
        tf.reset_default_graph()
        config = RECORDED[case]["config"]
        model = keras.Model.from_config(config)
        want = {k: v for k, v in config.items() if k != "trainable"}
        for layer in want["layers"]:
            if layer["class_name"] == "Sequential":
                layer["config"]["layers"] = [c for c in layer["config"]["layers"] if c["class_name"] != "InputLayer"]
        assert json.loads(model.to_json())["config"] == want
        model.set_weights(ramp_weights(model))
        if case == "nested":
            assert_same([K.get_session().run(model.output, {model.input: X4})], [RECORDED[case]["y"]])


def test_sequential_and_nested_configs_round_trip():
    inner = keras.Sequential([keras.layers.Dense(3, input_shape=(4,)), keras.layers.Activation("relu")],
                             name="inner")
    x = keras.Input((4,), name="x")
    model = keras.Model(x, keras.layers.Dense(2, name="head")(inner(x)), name="outer")
    config = json.loads(model.to_json())
    clone = keras.models.model_from_json(model.to_json())
    assert json.loads(clone.to_json()) == config
    assert isinstance(clone.get_layer("inner"), keras.Sequential)
    clone.set_weights(model.get_weights())
    want, got = K.get_session().run([model.output, clone.output], {model.input: X4, clone.input: X4})
    np.testing.assert_allclose(got, want, rtol=1e-6)
    seq_config = inner.get_config()
    assert seq_config["layers"][0]["config"]["batch_input_shape"] == (None, 4)
    assert keras.Sequential.from_config(seq_config).get_config() == {**seq_config,
                                                                     "name": seq_config["name"]}


def test_get_weights_and_set_weights():
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(3,))])
    kernel, bias = model.get_weights()
    assert kernel.shape == (3, 2) and np.all(bias == 0)
    limit = np.sqrt(6 / 5)    # glorot_uniform
    assert np.all(np.abs(kernel) <= limit)
    new = [np.ones((3, 2), np.float32), np.array([1.0, -1.0], np.float32)]
    model.set_weights(new)
    for got, want in zip(model.get_weights(), new):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="expecting 2 weights"):
        model.set_weights(new[:1])
    with pytest.raises(ValueError, match=r"not compatible with provided weight shape \(2, 3\)"):
        model.layers[0].set_weights([np.ones((2, 3)), np.ones(2)])


def test_gradient_through_a_model_matches_finite_differences():
    model = keras.Sequential([keras.layers.Dense(3, activation="tanh", input_shape=(4,)), keras.layers.Dense(1)])
    model.set_weights(ramp_weights(model))
    loss = K.sum(K.square(model.output))
    grads = K.gradients(loss, model.trainable_weights)
    sess = K.get_session()
    analytic = sess.run(grads, {model.input: X4})
    weights = model.get_weights()

    def loss_at(ws):
        h = np.tanh(X4.astype(np.float64) @ ws[0] + ws[1])
        return float(np.sum((h @ ws[2] + ws[3]) ** 2))

    eps = 1e-5
    for i, w in enumerate(weights):
        numeric = np.zeros_like(w, dtype=np.float64)
        for idx in np.ndindex(w.shape):
            up = [x.astype(np.float64) for x in weights]
            down = [x.astype(np.float64) for x in weights]
            up[i][idx] += eps
            down[i][idx] -= eps
            numeric[idx] = (loss_at(up) - loss_at(down)) / (2 * eps)
        np.testing.assert_allclose(analytic[i], numeric, rtol=1e-3, atol=1e-4)


def test_unreachable_outputs_raise_graph_disconnected():
    want = RECORDED["errors"]["unreachable"]
    a, b = keras.Input((4,)), keras.Input((4,))
    with pytest.raises(ValueError) as err:
        keras.Model(a, keras.layers.Dense(1)(b))
    assert str(err.value).split(" for tensor ")[0] == want.split(" for tensor ")[0]
    assert b.name in str(err.value) and 'at layer "dense"' in str(err.value)
    with pytest.raises(ValueError, match="must come from `tf.keras.Input`"):
        keras.Model(tf.placeholder(tf.float32, [None, 4]), keras.layers.Dense(1)(a))


def test_bad_input_names_the_layer_and_the_shapes():
    dense = keras.layers.Dense(2, name="d")
    dense(keras.Input((4,)))
    with pytest.raises(ValueError) as err:
        dense(keras.Input((5,)))
    assert "d" in str(err.value) and "expected axis -1 of input shape to have value 4" in str(err.value)
    assert "[None, 5]" in str(err.value)
    with pytest.raises(ValueError, match="expected min_ndim=2, found ndim=1"):
        dense(keras.Input(()))


def test_layer_names_count_per_graph_and_reset():
    assert keras.layers.Dense(1).name == "dense"
    assert keras.layers.Dense(1).name == "dense_1"
    assert keras.layers.ActivityRegularization().name == "activity_regularization"
    with tf.Graph().as_default():
        assert keras.layers.Dense(1).name == "dense"
    K.reset_uids()
    assert keras.layers.Dense(1).name == "dense"


def test_sequential_pop_and_add_errors():
    model = keras.Sequential([keras.layers.Dense(3, input_shape=(4,)), keras.layers.Dense(2)])
    model.pop()
    assert [layer.name for layer in model.layers] == ["dense"]
    assert model.output.shape.as_list() == [None, 3]
    model.add(keras.layers.Dense(5, name="wide"))
    assert model.output_shape == (None, 5)
    with pytest.raises(TypeError, match="must be an instance of class Layer"):
        model.add("dense")
    model.pop()
    model.pop()
    with pytest.raises(TypeError, match="no layers"):
        model.pop()


def test_custom_layer_with_add_weight_losses_and_updates():
    class Scale(keras.layers.Layer):
        def build(self, input_shape):
            self.scale = self.add_weight("scale", shape=(int(input_shape[-1]),), initializer="ones",
                                         regularizer=keras.regularizers.l1(0.5))
            self.count = self.add_weight("count", shape=(), initializer="zeros", trainable=False)
            super().build(input_shape)

        def call(self, inputs):
            self.add_update(self.count.assign_add(1.0))
            return inputs * self.scale

    layer = Scale()
    x = keras.Input((3,))
    y = layer(x)
    assert [w.name for w in layer.trainable_weights] == ["scale/scale:0"]
    assert [w.name for w in layer.non_trainable_weights] == ["scale/count:0"]
    sess = K.get_session()
    assert sess.run(layer.losses) == [1.5]
    out = sess.run([y] + layer.updates, {x: np.ones((2, 3))})[0]
    np.testing.assert_array_equal(out, np.ones((2, 3)))
    assert K.get_value(layer.count) == 1.0
    layer.trainable = False
    assert layer.trainable_weights == [] and len(layer.non_trainable_weights) == 2
    assert keras.layers.deserialize(keras.layers.serialize(layer), custom_objects={"Scale": Scale}).name == "scale"


def test_a_keras_model_inside_an_estimator_model_fn_trains(tmp_path):
    """The TF1 pattern: a Sequential built in model_fn on the features tensor; its variables are
    the graph's, trained by a tf.train optimizer and saved under the model's scope."""
    rng = np.random.RandomState(0)
    data = rng.randn(64, 4).astype(np.float32)
    labels = (data @ np.array([[1.0], [-2.0], [0.5], [0.0]], np.float32)).astype(np.float32)

    def model_fn(features, labels, mode):
        model = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dropout(0.1),
                                  keras.layers.Dense(1)])
        predictions = model(features["x"], training=mode == tf.estimator.ModeKeys.TRAIN)
        loss = tf.losses.mean_squared_error(labels, predictions)
        train_op = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=tf.train.get_or_create_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, predictions=predictions)

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": data}, labels)).repeat().batch(16)

    estimator = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    before = estimator.train(input_fn, steps=1).evaluate(input_fn, steps=4)["loss"]
    after = estimator.train(input_fn, steps=150).evaluate(input_fn, steps=4)["loss"]
    assert after < before / 4
    names = {name for name, _ in tf.train.list_variables(str(tmp_path))}
    assert {"sequential/dense/kernel", "sequential/dense/bias", "sequential/dense_1/kernel"} <= names


def test_updates_and_losses_are_conditional_on_the_inputs_of_their_call():
    class Tracker(keras.layers.Layer):
        """Counts calls per input (a conditional update) and penalises its weight (unconditional)."""

        def build(self, input_shape):
            self.total = self.add_weight("total", shape=(), initializer="zeros", trainable=False)
            self.w = self.add_weight("w", shape=(), initializer="ones", regularizer=keras.regularizers.l2(1.0))

        def call(self, inputs):
            self.add_update(self.total.assign_add(K.sum(inputs)))
            self.add_loss(K.mean(inputs))
            return inputs * self.w

    tracker = Tracker()
    x1, x2 = keras.Input((2,)), keras.Input((2,))
    tracker(x1)
    tracker(x2)
    assert len(tracker.updates) == 2 and len(tracker.losses) == 3
    assert tracker.get_updates_for(None) == [] and len(tracker.get_losses_for(None)) == 1
    (update_1,) = tracker.get_updates_for(x1)
    assert tracker.get_updates_for([x2]) == [tracker.updates[1]] and update_1 is tracker.updates[0]
    assert tracker.get_losses_for(x2) == [tracker.losses[2]]
    model = keras.Model(x1, tracker.get_output_at(0))
    assert model.get_updates_for(model.inputs) == [update_1]
    K.get_session().run(model.get_updates_for(model.inputs), {x1: np.ones((3, 2))})
    assert K.get_value(tracker.total) == 6.0


def test_compute_output_shape_of_models_and_custom_layers():
    class Halve(keras.layers.Layer):
        def call(self, inputs):
            return inputs[:, : int(inputs.shape[1]) // 2]

    assert Halve().compute_output_shape((None, 6)).as_list() == [None, 3]
    inp = keras.Input((4,))
    model = keras.Model(inp, keras.layers.Dense(3)(keras.layers.RepeatVector(2)(inp)))
    assert model.compute_output_shape((None, 4)).as_list() == [None, 2, 3]
    seq = keras.Sequential([keras.layers.Dense(5), keras.layers.Reshape((5, 1))])
    assert seq.compute_output_shape((7, 2)).as_list() == [7, 5, 1]

    class Weighted(keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", shape=(2,))

    layer = Weighted()
    layer(keras.Input((2,)))
    with pytest.raises(NotImplementedError, match="implement `compute_output_shape`"):
        layer.compute_output_shape((None, 2))


def test_sequential_build_and_models_as_its_first_layer():
    model = keras.Sequential([keras.layers.Dense(2)])
    model.build((None, 3))
    assert model.built and model.inputs is None
    assert [v.name for v in model.weights] == ["dense/kernel:0", "dense/bias:0"]     # as TF: not under the model
    inp = keras.Input((4,), name="features")
    inner = keras.Model(inp, keras.layers.Dense(3, name="inner_dense")(inp), name="inner")
    outer = keras.Sequential([inner, keras.layers.Dense(1, name="head")])
    assert outer.inputs[0].shape.as_list() == [None, 4] and outer.output_shape == (None, 1)
    assert [layer.name for layer in outer.layers] == ["inner", "head"]
    outer.set_weights([np.ones((4, 3)), np.zeros(3), np.ones((3, 1)), np.zeros(1)])
    np.testing.assert_allclose(K.get_session().run(outer.output, {outer.input: X4}), X4.sum(1, keepdims=True) * 3,
                               rtol=1e-6)


def test_input_variants():
    x = keras.Input((3,), batch_size=8, dtype="int32", name="ids")
    assert x.name == "ids:0" and x.shape.as_list() == [8, 3] and x.dtype == tf.int32
    assert keras.Input(batch_shape=(None, 2, 5)).shape.as_list() == [None, 2, 5]
    assert keras.Input((2,)).name == "input_2:0" and keras.Input((2,)).name == "input_3:0"   # after input_1 above
    features = tf.placeholder(tf.float32, [None, 4], name="features")
    adopted = keras.Input(tensor=features)
    assert adopted is features and K.is_keras_tensor(features)
    model = keras.Model(adopted, keras.layers.Dense(1, kernel_initializer="ones")(adopted))
    assert model.layers[0].get_config()["batch_input_shape"] == (None, 4)
    assert K.get_session().run(model.output, {features: X4}).shape == (2, 1)
    with pytest.raises(ValueError, match="either a `shape` or a `tensor`"):
        keras.Input()
    with pytest.raises(ValueError, match="`input_tensor.dtype` differs from `dtype`"):
        keras.Input(tensor=features, dtype="int32")


def test_get_source_inputs():
    a, b = keras.Input((2,)), keras.Input((2,))
    shared = keras.layers.Dense(2)
    y = keras.layers.Dense(1)(shared(b))
    assert keras.utils.get_source_inputs(y) == [b]
    z = keras.Model([a, b], [shared(a), y])([a, b])[0]
    assert keras.utils.get_source_inputs(z) == [a, b]


def test_a_subclassed_model_with_its_own_build_and_weights():
    class Affine(keras.Model):
        def __init__(self):
            super().__init__(name="affine")
            self.proj = keras.layers.Dense(2, kernel_initializer="ones", name="proj")

        def build(self, input_shape):
            self.offset = self.add_weight("offset", shape=(2,), initializer="ones")
            super().build(input_shape)

        def call(self, inputs):
            return self.proj(inputs) + self.offset

    model = Affine()
    x = tf.placeholder(tf.float32, [None, 3])
    y = model(x)
    assert [v.name for v in model.weights] == ["affine/proj/kernel:0", "affine/proj/bias:0", "affine/offset:0"]
    np.testing.assert_allclose(K.get_session().run(y, {x: np.ones((1, 3))}), [[4.0, 4.0]])


def test_a_custom_layer_with_init_arguments_must_write_get_config():
    class Scaled(keras.layers.Layer):
        def __init__(self, factor, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

    with pytest.raises(NotImplementedError, match="must override `get_config`"):
        Scaled(2.0).get_config()
    assert keras.layers.Layer(name="plain").get_config() == {"name": "plain", "trainable": True, "dtype": None}


def split_halves(t):
    return [t[:, :2], t[:, 2:]]


def test_initial_weights_and_a_layer_with_two_outputs():
    kernel, bias = np.arange(6, dtype=np.float32).reshape(3, 2), np.array([1.0, -1.0], np.float32)
    dense = keras.layers.Dense(2, weights=[kernel, bias], input_shape=(3,))
    model = keras.Sequential([dense])
    for got, want in zip(model.get_weights(), [kernel, bias]):
        np.testing.assert_array_equal(got, want)
    x = keras.Input((4,), name="x")
    left, right = keras.layers.Lambda(split_halves, name="split")(x)
    two = keras.Model(x, [keras.layers.Dense(1, name="l")(left), right], name="two")
    config = two.get_config()
    assert config["output_layers"] == [["l", 0, 0], ["split", 0, 1]]
    clone = keras.Model.from_config(config, custom_objects={"split_halves": split_halves})
    assert [t.shape.as_list() for t in clone.outputs] == [[None, 1], [None, 2]]
    assert clone.get_config() == config
