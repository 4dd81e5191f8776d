"""tf.keras model and weight files: Keras's HDF5 layout (Model.save, keras.models.save_model /
load_model, save_weights / load_weights by topology, by name, skip_mismatch), TensorFlow-format
weights (checkpoint keys as Keras writes them), files written by TF 2.15's Keras
(fixtures/keras_h5/record_keras_h5.py) loading with TF's predictions, cuDNN and plain recurrent weights
converted into each other as TF converts them (record_keras_cudnn_h5.py), custom objects, and bad
files."""
from __future__ import annotations

import json
import os

import h5py
import numpy as np
import pytest

import tensorweave as tf
from fixtures.keras_h5 import weight_conversion_cases
from tensorweave.keras.saving import hdf5

keras = tf.keras
K = tf.keras.backend
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "keras_h5")
RECORDED = np.load(os.path.join(FIXTURES, "predictions.npz"))
RNG = np.random.RandomState(5)
X = RNG.randn(3, 5).astype(np.float32)


def predict(model, *inputs):
    outputs = K.get_session().run(model.outputs, dict(zip(model.inputs, inputs)))
    return outputs[0] if len(outputs) == 1 else outputs


def texts(attribute) -> list:
    """An HDF5 string-list attribute as str (h5py reads it as str or bytes by how it was stored)."""
    return [x.decode() if isinstance(x, bytes) else str(x) for x in attribute]


def randomize(model) -> list:
    """Gives every weight fresh random values (so a load that does nothing is seen); returns them."""
    values = [RNG.randn(*w.shape).astype(np.float32) for w in model.get_weights()]
    model.set_weights(values)
    return values


def mlp(name=None):
    model = keras.Sequential([keras.layers.Dense(4, activation="relu", input_shape=(5,)), keras.layers.Dropout(0.5),
                              keras.layers.Dense(3, activation="softmax")], name=name)
    randomize(model)
    return model


def two_inputs():
    a, b = keras.Input((3,), name="a"), keras.Input((2,), name="b")
    model = keras.Model([a, b], [keras.layers.Dense(2, activation="tanh", name="head_a")(a),
                                 keras.layers.Dense(2, name="head_b")(b)])
    randomize(model)
    return model


# -- files TF 2.15 wrote ----------------------------------------------------------------------------------
def test_tf215_sequential_file_loads_with_tf_predictions():
    model = keras.models.load_model(os.path.join(FIXTURES, "mlp.h5"))
    assert [layer.name for layer in model.layers] == ["dense", "dropout", "dense_1"]
    np.testing.assert_allclose(predict(model, RECORDED["x"]), RECORDED["mlp"], rtol=1e-5, atol=1e-6)


def test_tf215_functional_two_input_file_loads_with_tf_predictions():
    model = keras.models.load_model(os.path.join(FIXTURES, "two_input.h5"))
    assert model.input_names == ["a", "b"] and model.output_names == ["head_a", "head_b"]
    out_a, out_b = predict(model, RECORDED["xa"], RECORDED["xb"])
    np.testing.assert_allclose(out_a, RECORDED["two_a"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out_b, RECORDED["two_b"], rtol=1e-5, atol=1e-6)


def test_tf215_weights_file_loads_into_the_same_architecture():
    model = mlp()
    model.load_weights(os.path.join(FIXTURES, "mlp_weights.h5"))
    np.testing.assert_allclose(predict(model, RECORDED["x"]), RECORDED["mlp"], rtol=1e-5, atol=1e-6)


def test_tf215_tf_format_weights_load_into_the_same_architecture():
    model = mlp()
    model.load_weights(os.path.join(FIXTURES, "mlp_tf"))
    np.testing.assert_allclose(predict(model, RECORDED["x"]), RECORDED["mlp"], rtol=1e-5, atol=1e-6)


def test_tf215_training_config_gives_the_compile_arguments():
    with h5py.File(os.path.join(FIXTURES, "mlp.h5"), "r") as f:
        config = hdf5.loads_config(f.attrs["training_config"])
        optimizer_names = hdf5.load_attributes_from_hdf5_group(f["optimizer_weights"], "weight_names")
    args = hdf5.compile_args_from_training_config(config)
    assert isinstance(args["optimizer"], keras.optimizers.SGD)
    assert args["optimizer"].get_config()["momentum"] == pytest.approx(0.9)
    assert args["optimizer"].get_config()["learning_rate"] == pytest.approx(0.1)
    assert args["loss"] == "categorical_crossentropy" and args["metrics"] == ["accuracy"]
    assert optimizer_names[0] == "training/SGD/iter:0" and len(optimizer_names) == 5


# -- the layout written here ------------------------------------------------------------------------------
def test_save_writes_keras_layout_and_load_model_round_trips(tmp_path):
    model = mlp()
    want = predict(model, X)
    path = str(tmp_path / "m.h5")
    model.save(path)
    with h5py.File(path, "r") as f:
        assert f.attrs["keras_version"] == "2.2.4-tf" and f.attrs["backend"] == "tensorflow"
        config = json.loads(f.attrs["model_config"])
        assert config["class_name"] == "Sequential"
        assert [layer["class_name"] for layer in config["config"]["layers"]] == ["Dense", "Dropout", "Dense"]
        group = f["model_weights"]
        assert texts(group.attrs["layer_names"]) == ["dense", "dropout", "dense_1"]
        assert texts(group["dense"].attrs["weight_names"]) == ["dense/kernel:0", "dense/bias:0"]
        assert texts(group["dropout"].attrs["weight_names"]) == []
        np.testing.assert_array_equal(group["dense/dense/kernel:0"][()], model.layers[0].get_weights()[0])
        assert "training_config" not in f.attrs and "optimizer_weights" not in f
    tf.reset_default_graph()
    loaded = keras.models.load_model(path)
    np.testing.assert_array_equal(predict(loaded, X), want)


def test_functional_model_round_trips_through_save_model(tmp_path):
    model = two_inputs()
    xa, xb = RNG.randn(2, 3).astype(np.float32), RNG.randn(2, 2).astype(np.float32)
    want = predict(model, xa, xb)
    keras.models.save_model(model, str(tmp_path / "two.keras"))
    with h5py.File(str(tmp_path / "two.keras"), "r") as f:   # input layers have (empty) groups too
        assert texts(f["model_weights"].attrs["layer_names"]) == ["a", "b", "head_a", "head_b"]
    tf.reset_default_graph()
    loaded = keras.models.load_model(str(tmp_path / "two.keras"))
    for got, expected in zip(predict(loaded, xa, xb), want):
        np.testing.assert_array_equal(got, expected)


def test_overwrite_false_keeps_the_existing_file(tmp_path):
    path = str(tmp_path / "m.h5")
    mlp().save(path)
    before = open(path, "rb").read()
    mlp(name="other").save(path, overwrite=False)
    assert open(path, "rb").read() == before


def set_as_compile_would(model, optimizer):
    """The attributes compile() sets (Keras 2.2.4-tf), which training_config is made from."""
    model.optimizer = optimizer
    model.loss = "mse"
    model._compile_metrics = ["mae"]
    model._compile_weighted_metrics = None
    model.sample_weight_mode = None
    model.loss_weights = [0.5]


def test_training_config_and_optimizer_state_are_saved(tmp_path):
    model = mlp()
    optimizer = keras.optimizers.SGD(0.05, momentum=0.9)
    set_as_compile_would(model, optimizer)
    loss = tf.reduce_mean(tf.square(model.outputs[0]))
    step = optimizer.get_updates(loss, model.trainable_weights)
    session = K.get_session()
    session.run(tf.variables_initializer([v for v in tf.global_variables() if v.name.startswith("SGD/")]))
    session.run(step, {model.inputs[0]: X})
    session.run(step, {model.inputs[0]: X})
    path = str(tmp_path / "m.h5")
    model.save(path)
    with h5py.File(path, "r") as f:
        config = json.loads(f.attrs["training_config"])
        assert config["loss"] == "mse" and config["metrics"] == ["mae"] and config["loss_weights"] == [0.5]
        assert config["optimizer_config"]["class_name"] == "SGD"
        assert config["optimizer_config"]["config"]["momentum"] == pytest.approx(0.9)
        names = texts(f["optimizer_weights"].attrs["weight_names"])
        assert names == [w.name for w in optimizer.weights]
        assert names[0] == "SGD/iter:0"
        assert f["optimizer_weights"]["SGD/iter:0"][()] == 2
        for weight, value in zip(optimizer.weights, session.run(optimizer.weights)):
            np.testing.assert_array_equal(f["optimizer_weights"][weight.name][()], value)
    loaded_config = hdf5.compile_args_from_training_config(config)
    assert loaded_config["optimizer"].get_config() == optimizer.get_config()


def test_include_optimizer_false_writes_no_training_state(tmp_path):
    model = mlp()
    set_as_compile_would(model, keras.optimizers.Adam())
    keras.models.save_model(model, str(tmp_path / "m.h5"), include_optimizer=False)
    with h5py.File(str(tmp_path / "m.h5"), "r") as f:
        assert "training_config" not in f.attrs and "optimizer_weights" not in f


def test_long_attribute_lists_are_split_as_keras_splits_them(tmp_path):
    names = [f"layer_{i:05d}_{'x' * 40}".encode() for i in range(2000)]   # ~100 KB > the 64 KB header
    with h5py.File(str(tmp_path / "a.h5"), "w") as f:
        hdf5.save_attributes_to_hdf5_group(f, "layer_names", names)
        assert "layer_names" not in f.attrs and "layer_names0" in f.attrs and "layer_names1" in f.attrs
        assert hdf5.load_attributes_from_hdf5_group(f, "layer_names") == [n.decode() for n in names]


# -- weights ----------------------------------------------------------------------------------------
def test_save_weights_h5_and_load_by_topology(tmp_path):
    model = mlp()
    want = predict(model, X)
    model.save_weights(str(tmp_path / "w.h5"))
    other = mlp()   # different layer names (dense_2, ...): topology is what matters
    assert predict(other, X).tolist() != want.tolist()
    other.load_weights(str(tmp_path / "w.h5"))
    np.testing.assert_array_equal(predict(other, X), want)


def test_load_weights_by_name_and_skip_mismatch(tmp_path):
    a = keras.Input((3,), name="x")
    source = keras.Model(a, keras.layers.Dense(2, name="out")(keras.layers.Dense(4, name="hidden")(a)))
    randomize(source)
    source.save_weights(str(tmp_path / "w.h5"))
    b = keras.Input((3,), name="x")
    # "hidden" matches, "out" has another shape, "extra" is not in the file
    target = keras.Model(b, keras.layers.Dense(5, name="out")(keras.layers.Dense(4, name="extra")(
        keras.layers.Dense(4, name="hidden")(b))))
    before = target.get_layer("out").get_weights()
    with pytest.raises(ValueError, match=r'named "out"\), weight out_1/kernel:0 has shape \(4, 5\), but the saved '
                                         r"weight has shape \(4, 2\)"):
        target.load_weights(str(tmp_path / "w.h5"), by_name=True)
    target.load_weights(str(tmp_path / "w.h5"), by_name=True, skip_mismatch=True)
    for got, want in zip(target.get_layer("hidden").get_weights(), source.get_layer("hidden").get_weights()):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(target.get_layer("out").get_weights(), before):
        np.testing.assert_array_equal(got, want)


def test_weights_of_another_architecture_are_a_value_error_naming_layer_and_shapes(tmp_path):
    mlp().save_weights(str(tmp_path / "w.h5"))
    wider = keras.Sequential([keras.layers.Dense(6, input_shape=(5,), name="wide"), keras.layers.Dense(3)])
    with pytest.raises(ValueError, match=r'Layer #0 \(named "wide"\), weight wide/kernel:0 has shape \(5, 6\), but '
                                         r"the saved weight has shape \(5, 4\)"):
        wider.load_weights(str(tmp_path / "w.h5"))
    deeper = keras.Sequential([keras.layers.Dense(4, input_shape=(5,)), keras.layers.Dense(3), keras.layers.Dense(3)])
    with pytest.raises(ValueError, match="weight file containing 2 layers into a model with 3 layers"):
        deeper.load_weights(str(tmp_path / "w.h5"))


def test_save_weights_tf_format_uses_keras_checkpoint_keys(tmp_path):
    model = two_inputs()
    xa, xb = RNG.randn(2, 3).astype(np.float32), RNG.randn(2, 2).astype(np.float32)
    want = predict(model, xa, xb)
    prefix = str(tmp_path / "ckpt" / "weights")
    model.save_weights(prefix)
    assert tf.train.latest_checkpoint(str(tmp_path / "ckpt")) == prefix
    keys = dict(tf.train.list_variables(prefix))
    assert keys == {"_CHECKPOINTABLE_OBJECT_GRAPH": [],
                    "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE": [3, 2],
                    "layer_with_weights-0/bias/.ATTRIBUTES/VARIABLE_VALUE": [2],
                    "layer_with_weights-1/kernel/.ATTRIBUTES/VARIABLE_VALUE": [2, 2],
                    "layer_with_weights-1/bias/.ATTRIBUTES/VARIABLE_VALUE": [2]}
    randomize(model)
    model.load_weights(prefix)
    for got, expected in zip(predict(model, xa, xb), want):
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(NotImplementedError, match="by_name=True"):
        model.load_weights(prefix, by_name=True)


def test_load_weights_tf_format_of_a_name_based_tf1_checkpoint(tmp_path):
    model = mlp()
    want = predict(model, X)
    prefix = tf.train.Saver(model.weights).save(K.get_session(), str(tmp_path / "tf1"))
    randomize(model)
    model.load_weights(prefix)
    np.testing.assert_array_equal(predict(model, X), want)


def test_tf_format_weights_of_another_architecture_name_the_weight(tmp_path):
    mlp().save_weights(str(tmp_path / "w"))
    wider = keras.Sequential([keras.layers.Dense(6, input_shape=(5,), name="wide"), keras.layers.Dense(3)])
    with pytest.raises(ValueError, match=r"weight wide/kernel:0 has shape \(5, 6\), but the saved value of "
                                         r"'layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE' has "
                                         r"shape \(5, 4\)"):
        wider.load_weights(str(tmp_path / "w"))


def test_save_format_arguments():
    model = mlp()
    with pytest.raises(ValueError, match="looks like an HDF5 file"):
        model.save_weights("/tmp/x.h5", save_format="tf")
    with pytest.raises(ValueError, match='Unknown format "pickle"'):
        model.save_weights("/tmp/x", save_format="pickle")


# -- custom objects and configs ---------------------------------------------------------------------------
class Scale(keras.layers.Layer):
    """A custom layer with a weight and a config entry."""

    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.offset = self.add_weight("offset", shape=(int(input_shape[-1]),), initializer="zeros")
        super().build(input_shape)

    def call(self, inputs):
        return inputs * self.factor + self.offset

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


def custom_model():
    x = keras.Input((3,), name="x")
    model = keras.Model(x, Scale(3.0, name="scale")(keras.layers.Dense(3, name="d")(x)))
    randomize(model)
    return model


def test_load_model_with_custom_objects(tmp_path):
    model = custom_model()
    x = RNG.randn(2, 3).astype(np.float32)
    want = predict(model, x)
    model.save(str(tmp_path / "c.h5"))
    tf.reset_default_graph()
    with pytest.raises(ValueError, match="Unknown layer: Scale"):
        keras.models.load_model(str(tmp_path / "c.h5"))
    loaded = keras.models.load_model(str(tmp_path / "c.h5"), custom_objects={"Scale": Scale})
    assert loaded.get_layer("scale").factor == 3.0
    np.testing.assert_allclose(predict(loaded, x), want, rtol=1e-6)
    tf.reset_default_graph()
    with keras.utils.CustomObjectScope({"Scale": Scale}):
        loaded = keras.models.load_model(str(tmp_path / "c.h5"))
    np.testing.assert_allclose(predict(loaded, x), want, rtol=1e-6)


def test_json_and_config_round_trips_with_custom_objects():
    model = custom_model()
    text = model.to_json()
    rebuilt = keras.models.model_from_json(text, custom_objects={"Scale": Scale})
    assert rebuilt.to_json() == text
    assert keras.models.model_from_config(json.loads(text), custom_objects={"Scale": Scale}).get_config() == \
        model.get_config()
    rebuilt.set_weights(model.get_weights())
    x = RNG.randn(2, 3).astype(np.float32)
    np.testing.assert_array_equal(predict(rebuilt, x), predict(model, x))


# -- bad files ------------------------------------------------------------------------------------------
def test_corrupt_and_truncated_files_are_errors_naming_the_file(tmp_path):
    path = str(tmp_path / "m.h5")
    mlp().save(path)
    data = open(path, "rb").read()
    truncated = str(tmp_path / "truncated.h5")
    with open(truncated, "wb") as f:
        f.write(data[:len(data) // 3])
    with pytest.raises(OSError, match="truncated.h5"):
        keras.models.load_model(truncated)
    with pytest.raises(OSError, match="truncated.h5"):
        mlp().load_weights(truncated)
    garbage = str(tmp_path / "garbage.h5")
    with open(garbage, "wb") as f:
        f.write(b"not an hdf5 file at all" * 10)
    with pytest.raises(OSError, match="garbage.h5"):
        keras.models.load_model(garbage)
    with pytest.raises(OSError, match="missing.h5"):
        keras.models.load_model(str(tmp_path / "missing.h5"))


def test_missing_or_corrupt_tf_format_weights_name_the_file(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="no .*nothere.index"):
        mlp().load_weights(str(tmp_path / "nothere"))
    (tmp_path / "junk.index").write_bytes(b"garbage" * 20)
    with pytest.raises(tf.errors.DataLossError, match="junk.index is neither"):
        mlp().load_weights(str(tmp_path / "junk"))


def test_a_weights_file_is_not_a_model_file(tmp_path):
    mlp().save_weights(str(tmp_path / "w.h5"))
    with pytest.raises(ValueError, match="No model found in config file"):
        keras.models.load_model(str(tmp_path / "w.h5"))


def test_missing_h5py_is_a_clear_import_error(tmp_path, monkeypatch):
    monkeypatch.setattr(hdf5, "h5py", None)
    with pytest.raises(ImportError, match=r"requires h5py.*pip install 'tensorweave\[keras\]'"):
        mlp().save(str(tmp_path / "m.h5"))
    with pytest.raises(ImportError, match="requires h5py"):
        mlp().save_weights(str(tmp_path / "w.h5"))
    with pytest.raises(ImportError, match="requires h5py"):
        keras.models.load_model(str(tmp_path / "m.h5"))


# -- with compile() ----------------------------------------------------------------------------------------
needs_compile = pytest.mark.skipif(not hasattr(keras.Model, "compile"), reason="keras training (compile) not merged")


@needs_compile
def test_tf215_compiled_file_loads_compiled_with_its_optimizer_state():
    path = os.path.join(FIXTURES, "mlp.h5")
    model = keras.models.load_model(path)
    assert isinstance(model.optimizer, keras.optimizers.SGD)
    assert model.optimizer.get_config()["momentum"] == pytest.approx(0.9)
    with h5py.File(path, "r") as f:
        group = f["optimizer_weights"]
        saved = [group[name][()] for name in hdf5.load_attributes_from_hdf5_group(group, "weight_names")]
    with K.get_session().as_default():
        state = model.optimizer.get_weights()
    assert state[0] == 2 and len(state) == len(saved)
    for got, want in zip(state, saved):
        np.testing.assert_array_equal(got, want)


@needs_compile
def test_compiled_model_round_trips_and_trains_on_identically(tmp_path):
    model = keras.Sequential([keras.layers.Dense(4, activation="relu", input_shape=(5,)),
                              keras.layers.Dense(3, activation="softmax")])
    model.compile(keras.optimizers.SGD(0.1, momentum=0.9), "categorical_crossentropy", metrics=["accuracy"])
    x, y = RNG.randn(8, 5).astype(np.float32), np.eye(3, dtype=np.float32)[RNG.randint(0, 3, 8)]
    model.train_on_batch(x, y)
    path = str(tmp_path / "m.h5")
    model.save(path)
    with h5py.File(path, "r") as f:
        config = json.loads(f.attrs["training_config"])
    assert config["loss"] == "categorical_crossentropy" and config["metrics"] == ["accuracy"]
    loaded = keras.models.load_model(path)
    assert loaded.metrics_names == model.metrics_names
    for _ in range(2):
        np.testing.assert_allclose(loaded.train_on_batch(x, y), model.train_on_batch(x, y), rtol=1e-5)
    for got, want in zip(loaded.get_weights(), model.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- cuDNN and plain recurrent weights (fixtures/keras_h5/record_keras_cudnn_h5.py) ----------------------------
CONVERSIONS = np.load(os.path.join(FIXTURES, "cudnn_conversions.npz"))


def cudnn_model(names=(None, None)):
    return keras.Sequential([keras.layers.Bidirectional(keras.layers.CuDNNLSTM(3, return_sequences=True),
                                                        input_shape=(4, 2), name=names[0]),
                             keras.layers.CuDNNGRU(2, name=names[1])])


def plain_model(reset_after=True, names=(None, None)):
    return keras.Sequential([
        keras.layers.Bidirectional(keras.layers.LSTM(3, recurrent_activation="sigmoid", return_sequences=True),
                                   input_shape=(4, 2), name=names[0]),
        keras.layers.GRU(2, reset_after=reset_after, recurrent_activation="sigmoid", name=names[1])])


def recorded_weights(prefix) -> list:
    return [CONVERSIONS[f"{prefix}_{i}"] for i in range(9)]


def test_tf215_cudnn_weights_load_into_lstm_and_gru_as_tf_converts_them():
    model = plain_model()
    randomize(model)
    model.load_weights(os.path.join(FIXTURES, "cudnn_weights.h5"))
    for got, want in zip(model.get_weights(), recorded_weights("cudnn_as_plain")):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(model.predict(CONVERSIONS["x"]), CONVERSIONS["cudnn_as_plain_predictions"],
                               rtol=1e-5, atol=1e-6)


def test_tf215_lstm_and_gru_weights_load_into_cudnn_layers_as_tf_converts_them():
    model = cudnn_model()
    randomize(model)
    model.load_weights(os.path.join(FIXTURES, "plain_weights.h5"))
    for got, want in zip(model.get_weights(), recorded_weights("plain_as_cudnn")):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    # the cuDNN arithmetic (here on any device) on the converted weights gives the plain layers' outputs
    np.testing.assert_allclose(model.predict(CONVERSIONS["x"]), CONVERSIONS["plain_predictions"], rtol=1e-5,
                               atol=1e-6)


def test_cudnn_weights_round_trip_through_plain_layers_by_name_and_inside_nested_models(tmp_path):
    cudnn = cudnn_model(names=("bi", "gru"))
    values = randomize(cudnn)
    path = str(tmp_path / "cudnn.h5")
    cudnn.save_weights(path)
    plain = plain_model(names=("bi", "gru"))
    plain.load_weights(path, by_name=True)
    np.testing.assert_allclose(plain.layers[0].get_weights()[2], values[2][:12] + values[2][12:], rtol=1e-6)
    x = CONVERSIONS["x"]
    np.testing.assert_allclose(plain.predict(x), cudnn.predict(x), rtol=1e-5, atol=1e-6)
    # a model nested in another converts each of its layers
    outer_plain = keras.Sequential([plain_model()])
    outer_plain.build((None, 4, 2))
    outer_cudnn = keras.Sequential([cudnn])
    outer_cudnn.save_weights(path)
    outer_plain.load_weights(path)
    np.testing.assert_allclose(outer_plain.predict(x), cudnn.predict(x), rtol=1e-5, atol=1e-6)
    outer_plain.save_weights(path)
    cudnn_again = keras.Sequential([cudnn_model()])
    cudnn_again.build((None, 4, 2))
    cudnn_again.load_weights(path)
    np.testing.assert_allclose(cudnn_again.predict(x), cudnn.predict(x), rtol=1e-5, atol=1e-6)


def test_cudnn_gru_weights_do_not_fit_a_gru_without_reset_after(tmp_path):
    path = str(tmp_path / "cudnn.h5")
    cudnn_model().save_weights(path)
    with pytest.raises(ValueError, match=r"CuDNNGRU is not compatible with GRU\(reset_after=False\)"):
        plain_model(reset_after=False).load_weights(path)
    with pytest.raises(ValueError, match=r"Invalid bias shape: \(5,\)"):
        hdf5.preprocess_weights_for_loading(keras.layers.LSTM(3), [np.zeros((2, 12)), np.zeros((3, 12)),
                                                                   np.zeros(5)])


# -- Keras 1 and Theano-ordered weights (fixtures/keras_h5/record_keras_weight_conversions.py) --------------
CONVERTED = np.load(os.path.join(FIXTURES, "weight_conversions.npz"))


@pytest.mark.parametrize("name", sorted(weight_conversion_cases.CASES))
def test_older_weight_layouts_convert_as_keras_converts_them(name):
    make, shape, _, version = weight_conversion_cases.CASES[name]
    layer = make(keras.layers)
    layer(keras.Input(shape))
    converted = hdf5.preprocess_weights_for_loading(layer, weight_conversion_cases.saved_values(name), version,
                                                    "theano")
    assert len(converted) == len(layer.weights)
    for i, got in enumerate(converted):
        np.testing.assert_array_equal(got, CONVERTED[f"{name}_{i}"])


def test_a_keras_1_weights_file_loads_converted(tmp_path):
    # Keras 1's layout: no keras_version attribute, an LSTM's weights gate by gate
    path = str(tmp_path / "keras1.h5")
    saved = weight_conversion_cases.saved_values("lstm_keras1")
    with h5py.File(path, "w") as f:
        f.attrs["layer_names"] = [b"lstm_1"]
        group = f.create_group("lstm_1")
        names = [f"lstm_1_{part}_{gate}".encode() for gate in "icfo" for part in ("W", "U", "b")]
        group.attrs["weight_names"] = names
        for name, value in zip(names, saved):
            group.create_dataset(name.decode(), data=value)
    model = keras.Sequential([keras.layers.LSTM(3, input_shape=(5, 2))])
    model.load_weights(path)
    for i, got in enumerate(model.get_weights()):
        np.testing.assert_array_equal(got, CONVERTED[f"lstm_keras1_{i}"])
