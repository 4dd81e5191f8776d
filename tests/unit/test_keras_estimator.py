"""tf.keras.estimator.model_to_estimator: the Estimator starts from the Keras model's weights, trains
with its compiled loss and optimizer (weights equal to the same SGD steps run on the Keras model
itself), evaluates its compile metrics under Keras's names, predicts and exports a SavedModel that
computes the model's outputs; train_and_evaluate locally. The compile attributes are set as
Keras's compile sets them (optimizer, loss, loss_weights, _compile_metrics)."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tensorweave as tf

keras = tf.keras
K = tf.keras.backend
RNG = np.random.RandomState(0)
X = RNG.randn(64, 5).astype(np.float32)
Y = (X @ RNG.randn(5, 1) + 0.3).astype(np.float32)
BATCH = 16


def compiled_as_keras_does(model, optimizer, loss, metrics=None, loss_weights=None):
    model.optimizer, model.loss, model.loss_weights, model._compile_metrics = optimizer, loss, loss_weights, metrics
    return model


def regression_model():
    model = keras.Sequential([keras.layers.Dense(8, activation="tanh", input_shape=(5,)), keras.layers.Dropout(0.3),
                              keras.layers.Dense(1)])
    model.set_weights([RNG.randn(*w.shape).astype(np.float32) * 0.5 for w in model.get_weights()])
    return compiled_as_keras_does(model, keras.optimizers.SGD(0.05, momentum=0.5), "mse", metrics=["mae"])


def train_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"dense_input": X}, Y)).batch(BATCH).repeat()


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"dense_input": X}, Y)).batch(BATCH)


def reference_run(model, steps: int) -> list:
    """The weights after `steps` SGD steps run on the Keras model itself, on the same batches
    (dropout active, as in training: the reference feeds the learning phase 1 but its Dropout
    draws differ, so these models use Dropout rate 0 where weights are compared)."""
    optimizer = type(model.optimizer).from_config(model.optimizer.get_config())
    target = tf.placeholder(tf.float32, [None, 1])
    loss = tf.reduce_mean(tf.square(model.outputs[0] - target))
    step = optimizer.get_updates(loss, model.trainable_weights)
    session = K.get_session()
    session.run(tf.variables_initializer([v for v in tf.global_variables() if v.name.startswith("SGD")]))
    for i in range(steps):
        start = (i * BATCH) % len(X)
        session.run(step, {model.inputs[0]: X[start:start + BATCH], target: Y[start:start + BATCH]})
    return model.get_weights()


def mse(model) -> float:
    return float(np.mean((K.get_session().run(model.outputs[0], {model.inputs[0]: X}) - Y) ** 2))


def test_estimator_starts_from_the_keras_weights_and_trains_as_keras_would(tmp_path):
    model = regression_model()
    model.layers[1].rate = 0.0   # deterministic training, so the weights can be compared
    start_loss = mse(model)
    est = keras.estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path))
    assert os.path.exists(str(tmp_path / "keras" / "keras_model.ckpt.index"))
    first = est.evaluate(eval_input_fn)
    assert first["global_step"] == 0
    assert first["loss"] == pytest.approx(start_loss, rel=1e-5)
    est.train(train_input_fn, steps=12)
    trained = est.evaluate(eval_input_fn)
    assert trained["global_step"] == 12 and trained["loss"] < first["loss"] / 2
    assert set(trained) == {"loss", "mean_absolute_error", "global_step"}
    assert [w.name for w in model.weights] == ["dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "dense_1/bias:0"]
    want = reference_run(model, 12)
    for weight, value in zip(["dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"], want):
        np.testing.assert_allclose(est.get_variable_value(weight), value, rtol=1e-4, atol=1e-5)


def test_train_and_evaluate_locally_lowers_the_loss(tmp_path):
    model = regression_model()
    start_loss = mse(model)
    est = keras.estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path),
                                             config=tf.estimator.RunConfig(save_checkpoints_steps=10))
    metrics, _ = tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(train_input_fn, max_steps=30),
                                                 tf.estimator.EvalSpec(eval_input_fn, steps=None, throttle_secs=0))
    assert metrics["global_step"] == 30 and metrics["loss"] < start_loss / 2


def test_predictions_use_inference_mode_and_export_serves_them(tmp_path):
    model = regression_model()
    want = K.get_session().run(model.outputs[0], {model.inputs[0]: X})   # Dropout inactive
    est = keras.estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path))
    predicted = np.array([p["dense_1"] for p in est.predict(
        lambda: tf.data.Dataset.from_tensor_slices({"dense_input": X}).batch(BATCH))])
    np.testing.assert_allclose(predicted, want, rtol=1e-5, atol=1e-6)
    receiver_fn = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"dense_input": tf.placeholder(tf.float32, [None, 5], name="dense_input")})
    export_dir = est.export_saved_model(str(tmp_path / "export"), receiver_fn).decode()
    graph = tf.Graph()
    with graph.as_default(), tf.Session(graph=graph) as session:
        signature = tf.saved_model.loader.load(session, ["serve"], export_dir).signature_def["serving_default"]
        served = session.run(graph.get_tensor_by_name(signature.outputs["dense_1"].name),
                             {graph.get_tensor_by_name(signature.inputs["dense_input"].name): X})
    np.testing.assert_allclose(served, want, rtol=1e-5, atol=1e-6)


def two_input_classifier():
    a, b = keras.Input((3,), name="a"), keras.Input((2,), name="b")
    merged = keras.layers.Dense(4, activation="relu", name="hidden")(a)
    out_a = keras.layers.Dense(1, activation="sigmoid", name="out_a")(merged)
    out_b = keras.layers.Dense(1, name="out_b")(b)
    model = keras.Model([a, b], [out_a, out_b])
    return compiled_as_keras_does(model, keras.optimizers.Adam(0.01), {"out_a": "binary_crossentropy", "out_b": "mse"},
                                  metrics=["accuracy"], loss_weights=[1.0, 0.5])


def test_two_inputs_two_outputs_with_dict_features_and_labels(tmp_path):
    model = two_input_classifier()
    xa, xb = RNG.randn(32, 3).astype(np.float32), RNG.randn(32, 2).astype(np.float32)
    ya = (xa[:, :1] > 0).astype(np.float32)
    yb = xb[:, :1] * 2.0
    pa, pb = K.get_session().run(model.outputs, {model.inputs[0]: xa, model.inputs[1]: xb})
    eps = 1e-7
    bce = -np.mean(ya * np.log(np.clip(pa, eps, 1 - eps)) + (1 - ya) * np.log(np.clip(1 - pa, eps, 1 - eps)))
    want_loss = bce + 0.5 * np.mean((pb - yb) ** 2)

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"a": xa, "b": xb}, {"out_a": ya, "out_b": yb})).batch(32)

    est = keras.estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path), checkpoint_format="checkpoint")
    assert "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE" in dict(
        tf.train.list_variables(str(tmp_path / "keras" / "keras_model.ckpt")))
    first = est.evaluate(input_fn)
    assert set(first) == {"loss", "out_a_acc", "out_b_acc", "global_step"}
    assert first["loss"] == pytest.approx(want_loss, rel=1e-4)
    assert first["out_a_acc"] == pytest.approx(np.mean((pa > 0.5) == ya))
    est.train(lambda: input_fn().repeat(), steps=30)
    assert est.evaluate(input_fn)["loss"] < first["loss"]


def test_bad_arguments_are_errors():
    model = regression_model()
    with pytest.raises(ValueError, match="Either `keras_model` or `keras_model_path`"):
        keras.estimator.model_to_estimator()
    with pytest.raises(ValueError, match="but not both"):
        keras.estimator.model_to_estimator(keras_model=model, keras_model_path="/tmp/m.h5")
    with pytest.raises(ValueError, match='one of "checkpoint" or "saver". Got ckpt'):
        keras.estimator.model_to_estimator(keras_model=model, checkpoint_format="ckpt")
    uncompiled = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    with pytest.raises(ValueError, match="has not been compiled yet"):
        keras.estimator.model_to_estimator(keras_model=uncompiled)


def test_features_missing_an_input_name_the_inputs(tmp_path):
    est = keras.estimator.model_to_estimator(keras_model=two_input_classifier(), model_dir=str(tmp_path))
    with pytest.raises(ValueError, match=r"has keys \['a'\], but the Keras model expects \['a', 'b'\]"):
        est.evaluate(lambda: tf.data.Dataset.from_tensor_slices(({"a": X[:, :3]}, {"out_a": Y, "out_b": Y})).batch(8))


@pytest.mark.skipif(not hasattr(keras.Model, "compile"), reason="keras training (compile) not merged")
def test_a_compiled_model_trains_in_the_estimator_as_fit_trains_it(tmp_path):
    model = keras.Sequential([keras.layers.Dense(8, activation="tanh", input_shape=(5,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.05, momentum=0.5), "mse", metrics=["mae"])
    start = model.evaluate(X, Y, verbose=0)
    est = keras.estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path))
    first = est.evaluate(eval_input_fn)
    assert first["loss"] == pytest.approx(start[0], rel=1e-5)
    assert first["mean_absolute_error"] == pytest.approx(start[1], rel=1e-5)
    metrics, _ = tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(train_input_fn, max_steps=8),
                                                 tf.estimator.EvalSpec(eval_input_fn, steps=None, throttle_secs=0))
    model.fit(X, Y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0)   # the same 8 batches
    for name, value in zip(["dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"], model.get_weights()):
        np.testing.assert_allclose(est.get_variable_value(name), value, rtol=1e-4, atol=1e-5)
    assert metrics["loss"] == pytest.approx(model.evaluate(X, Y, verbose=0)[0], rel=1e-4)


@pytest.mark.skipif(not hasattr(keras.Model, "compile"), reason="keras training (compile) not merged")
def test_keras_model_path_with_a_custom_layer(tmp_path):
    class Shift(keras.layers.Layer):
        def call(self, inputs):
            return inputs + 1.0

    model = keras.Sequential([keras.layers.Dense(4, input_shape=(5,)), Shift(name="shift"), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    start = model.evaluate(X, Y, verbose=0)
    model.save(str(tmp_path / "model.h5"))
    tf.reset_default_graph()
    est = keras.estimator.model_to_estimator(keras_model_path=str(tmp_path / "model.h5"),
                                             custom_objects={"Shift": Shift}, model_dir=str(tmp_path / "est"))
    assert est.evaluate(eval_input_fn)["loss"] == pytest.approx(start, rel=1e-5)
