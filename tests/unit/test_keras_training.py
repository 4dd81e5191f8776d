"""tf.keras training in graph mode (Model.compile / fit / evaluate / predict / *_on_batch /
*_generator): histories, evaluations, predictions and trained weights against TF 2.15's
(fixtures/keras_training.json, recorded by fixtures/record_keras_training.py from the models of
fixtures/keras_training_cases.py), and the other inputs (datasets, Sequences, generators) against
the same training over numpy arrays."""
import json
import os
import re

import numpy as np
import pytest

import tensorweave as tf
from fixtures.keras_training_cases import CASES, data, weights_for
from fixtures.recorded import decode

keras = tf.keras
K = keras.backend
HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "keras_training.json")) as f:
    RECORDED = json.load(f)


@pytest.fixture(autouse=True)
def fresh_graph():
    K.clear_session()
    yield
    K.clear_session()


def built(case):
    model, compile_kwargs, fit_kwargs = CASES[case](keras)
    model.set_weights(weights_for(model))
    model.compile(**compile_kwargs)
    return model, fit_kwargs


@pytest.mark.parametrize("case", sorted(CASES))
def test_fit_history_evaluate_predict_and_weights_are_tf_s(case):
    model, fit_kwargs = built(case)
    d, want = data(case), RECORDED[case]
    history = model.fit(d["x"], d["y"], verbose=0, **fit_kwargs)
    assert model.metrics_names == want["metrics_names"]
    assert sorted(history.history) == sorted(want["history"])
    for name, values in want["history"].items():
        np.testing.assert_allclose(history.history[name], values, rtol=1e-4, atol=1e-6, err_msg=name)
    assert history.epoch == list(range(fit_kwargs["epochs"]))
    np.testing.assert_allclose(model.evaluate(d["x"], d["y"], batch_size=7, verbose=0), want["evaluate"],
                               rtol=1e-4, atol=1e-6)
    predicted = model.predict(d["x"], batch_size=7)
    for got, recorded in zip(predicted if isinstance(predicted, list) else [predicted], want["predict"]):
        np.testing.assert_allclose(got, decode(recorded), rtol=1e-4, atol=1e-6)
    for got, recorded in zip(model.get_weights(), want["weights"]):
        np.testing.assert_allclose(got, decode(recorded), rtol=1e-4, atol=1e-6)


def small_model(optimizer="sgd", loss="mse", metrics=("mae",)):
    model = keras.Sequential([keras.layers.Dense(2, activation="tanh", input_shape=(3,)), keras.layers.Dense(1)])
    model.set_weights(weights_for(model))
    model.compile(optimizer, loss, metrics=list(metrics))
    return model


def xy(n=12, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
    return x, (x[:, :1] - 2 * x[:, 1:2]).astype(np.float32)


def trained_on_arrays(epochs=2, batch_size=4, **kwargs):
    x, y = xy()
    model = small_model()
    history = model.fit(x, y, batch_size=batch_size, epochs=epochs, shuffle=False, verbose=0, **kwargs)
    return model.get_weights(), history.history


def test_dataset_with_steps_trains_as_the_same_batches_of_arrays():
    want, _ = trained_on_arrays()
    K.clear_session()
    x, y = xy()
    model = small_model()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(4).repeat()
    history = model.fit(dataset, steps_per_epoch=3, epochs=2, verbose=0)
    for got, w in zip(model.get_weights(), want):
        np.testing.assert_allclose(got, w, rtol=1e-6)
    assert len(history.history["loss"]) == 2


def test_finite_dataset_without_steps_runs_to_its_end_each_epoch():
    want, want_history = trained_on_arrays()
    K.clear_session()
    x, y = xy()
    model = small_model()
    history = model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(4), epochs=2, verbose=0)
    for got, w in zip(model.get_weights(), want):
        np.testing.assert_allclose(got, w, rtol=1e-6)
    # three equal batches: the per-step mean is the per-sample one
    np.testing.assert_allclose(history.history["loss"], want_history["loss"], rtol=1e-5)
    loss, mae = model.evaluate(tf.data.Dataset.from_tensor_slices((x, y)).batch(5), verbose=0)
    np.testing.assert_allclose(mae, np.mean(np.abs(model.predict(x) - y)), rtol=1e-5)


class Batches(keras.utils.Sequence):
    def __init__(self, x, y, batch_size):
        self.x, self.y, self.batch_size = x, y, batch_size
        self.epochs_ended = 0

    def __len__(self):
        return int(np.ceil(len(self.x) / self.batch_size))

    def __getitem__(self, i):
        s = slice(i * self.batch_size, (i + 1) * self.batch_size)
        return self.x[s], self.y[s]

    def on_epoch_end(self):
        self.epochs_ended += 1


@pytest.mark.parametrize("workers", [0, 1])
def test_sequence_and_fit_generator_train_as_arrays(workers):
    want, want_history = trained_on_arrays(batch_size=5)
    K.clear_session()
    x, y = xy()
    model = small_model()
    sequence = Batches(x, y, 5)
    history = model.fit_generator(sequence, epochs=2, shuffle=False, verbose=0, workers=workers)
    for got, w in zip(model.get_weights(), want):
        np.testing.assert_allclose(got, w, rtol=1e-6)
    # a generator's epoch loss is weighted by batch size (5, 5, 2), as the arrays'
    np.testing.assert_allclose(history.history["loss"], want_history["loss"], rtol=1e-5)
    assert sequence.epochs_ended >= 1
    np.testing.assert_allclose(model.predict_generator(Batches(x, y, 5), workers=workers), model.predict(x),
                               rtol=1e-6)


def test_python_generator_needs_steps_and_yields_tuples():
    x, y = xy()
    model = small_model()

    def forever():
        while True:
            for i in range(0, 12, 4):
                yield x[i:i + 4], y[i:i + 4]

    with pytest.raises(ValueError, match="`steps_per_epoch=None` is only valid for a generator based on the "
                                         "`keras.utils.Sequence`"):
        model.fit(forever(), epochs=1, verbose=0)
    history = model.fit(forever(), steps_per_epoch=3, epochs=2, verbose=0, workers=0)
    assert len(history.history["loss"]) == 2
    result = model.evaluate_generator(forever(), steps=3, workers=0)
    np.testing.assert_allclose(result, model.evaluate(x, y, batch_size=4, verbose=0), rtol=1e-5)

    def bad():
        while True:
            yield [x, y, None, None]

    with pytest.raises(ValueError, match="Output of generator should be a tuple"):
        model.fit(bad(), steps_per_epoch=1, verbose=0, workers=0)


def test_on_batch_methods():
    x, y = xy()
    model = small_model()
    before = model.predict_on_batch(x)
    kernel, bias, kernel2, bias2 = weights_for(model)
    np.testing.assert_allclose(before, np.tanh(x @ kernel + bias) @ kernel2 + bias2, rtol=1e-5)
    loss, mae = model.test_on_batch(x, y)
    np.testing.assert_allclose(loss, np.mean((before - y) ** 2), rtol=1e-5)
    np.testing.assert_allclose(mae, np.mean(np.abs(before - y)), rtol=1e-5)
    # the loss of the batch before the step; the step then lowers it
    np.testing.assert_allclose(model.train_on_batch(x, y), [loss, mae], rtol=1e-5)
    assert model.test_on_batch(x, y)[0] < loss
    # metrics accumulate over batches unless reset
    model.test_on_batch(x[:6], y[:6], reset_metrics=False)
    _, mae_both = model.test_on_batch(x[6:], y[6:], reset_metrics=False)
    np.testing.assert_allclose(mae_both, model.evaluate(x, y, verbose=0)[1], rtol=1e-5)
    model.reset_metrics()
    _, mae_last = model.test_on_batch(x[6:], y[6:])
    np.testing.assert_allclose(mae_last, np.mean(np.abs(model.predict(x[6:]) - y[6:])), rtol=1e-5)


def test_shuffle_draws_numpy_s_permutation_each_epoch():
    x, y = xy()
    np.random.seed(3)
    model = small_model()
    model.fit(x, y, batch_size=4, epochs=1, shuffle=True, verbose=0)
    shuffled = model.get_weights()
    K.clear_session()
    order = np.random.RandomState(3).permutation(12)
    model = small_model()
    model.fit(x[order], y[order], batch_size=4, epochs=1, shuffle=False, verbose=0)
    for got, w in zip(shuffled, model.get_weights()):
        np.testing.assert_allclose(got, w, rtol=1e-6)
    K.clear_session()
    np.random.seed(3)
    model = small_model()
    model.fit(x, y, batch_size=4, epochs=1, shuffle="batch", verbose=0)   # whole batches permuted
    batches = np.arange(12).reshape(3, 4)
    np.random.RandomState(3).shuffle(batches)
    by_batch = model.get_weights()
    K.clear_session()
    model = small_model()
    model.fit(x[batches.ravel()], y[batches.ravel()], batch_size=4, epochs=1, shuffle=False, verbose=0)
    for got, w in zip(by_batch, model.get_weights()):
        np.testing.assert_allclose(got, w, rtol=1e-6)


def test_sample_weight_and_class_weight_multiply():
    x = np.eye(3, dtype=np.float32)[[0, 1, 2, 1]]
    y = np.eye(3, dtype=np.float32)[[0, 1, 2, 2]]
    model = keras.Sequential([keras.layers.Dense(3, activation="softmax", input_shape=(3,))])
    model.set_weights(weights_for(model))
    model.compile("sgd", "categorical_crossentropy")
    p = model.predict(x)
    per_sample = -np.log(np.sum(p * y, axis=1))
    w = np.array([1.0, 0.5, 2.0, 3.0], np.float32)
    cw = {0: 1.0, 1: 1.0, 2: 0.25}
    np.testing.assert_allclose(model.evaluate(x, y, sample_weight=w, verbose=0), np.mean(per_sample * w), rtol=1e-5)
    class_w = np.array([cw[c] for c in np.argmax(y, 1)])
    np.testing.assert_allclose(model.test_on_batch(x, y, sample_weight=w), np.mean(per_sample * w), rtol=1e-5)
    np.testing.assert_allclose(model.train_on_batch(x, y, sample_weight=w, class_weight=cw),
                               np.mean(per_sample * w * class_w), rtol=1e-5)
    with pytest.raises(ValueError, match=r"`class_weight` must contain all classes in the data. The classes \{2\}"):
        model.fit(x, y, class_weight={0: 1.0, 1: 1.0}, verbose=0)


def test_model_updates_and_learning_phase_run_in_training_only():
    class CountSamples(keras.layers.Layer):
        def build(self, input_shape):
            self.count = self.add_weight("count", (), initializer="zeros", trainable=False)

        def call(self, inputs):
            self.add_update(K.update_add(self.count, K.cast(K.shape(inputs)[0], "float32")))
            return inputs

    counter = CountSamples()
    inputs = keras.Input((3,))
    hidden = keras.layers.Dropout(0.5)(counter(inputs))
    model = keras.Model(inputs, keras.layers.Dense(1)(hidden))
    model.compile("sgd", "mse")
    x, y = xy()
    model.fit(x, y, batch_size=5, epochs=2, verbose=0)
    assert K.get_value(counter.count) == 24
    first = model.predict(x)
    np.testing.assert_allclose(model.predict(x), first)   # no dropout at inference
    assert K.get_value(counter.count) == 24
    kernel, bias = model.layers[-1].get_weights()
    np.testing.assert_allclose(first, x @ kernel + bias, rtol=1e-5)


def test_batch_normalization_moving_statistics_update_in_fit():
    model = keras.Sequential([keras.layers.BatchNormalization(input_shape=(3,), momentum=0.5),
                              keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x, y = xy()
    model.fit(x, y, batch_size=12, epochs=1, verbose=0)
    moving_mean = model.layers[0].get_weights()[2]
    np.testing.assert_allclose(moving_mean, 0.5 * x.mean(axis=0), rtol=1e-4, atol=1e-6)


def test_subclassed_model_builds_on_its_first_data():
    class TwoDense(keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = keras.layers.Dense(2, activation="tanh")
            self.out = keras.layers.Dense(1)

        def call(self, inputs):
            return self.out(self.hidden(inputs))

    model = TwoDense()
    model.compile(keras.optimizers.SGD(0.1), "mse")
    x, y = xy()
    history = model.fit(x, y, batch_size=4, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert model.predict(x).shape == (12, 1)


def test_tf_train_optimizer_trains_as_keras_sgd():
    want, _ = trained_on_arrays()
    K.clear_session()
    x, y = xy()
    model = small_model(optimizer=tf.train.GradientDescentOptimizer(0.01))
    model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    for got, w in zip(model.get_weights(), want):
        np.testing.assert_allclose(got, w, rtol=1e-5)


def test_validation_data_and_initial_epoch():
    x, y = xy()
    model = small_model()
    history = model.fit(x[:8], y[:8], validation_data=(x[8:], y[8:]), epochs=3, initial_epoch=1, verbose=0)
    assert history.epoch == [1, 2]
    np.testing.assert_allclose(history.history["val_loss"][-1], model.evaluate(x[8:], y[8:], verbose=0)[0],
                               rtol=1e-5)
    with pytest.raises(ValueError, match="When passing validation_data, it must contain 2 "):
        model.fit(x, y, validation_data=(x,), verbose=0)


def progbar_text(capsys, verbose):
    x, y = xy()
    model = small_model()
    model.fit(x, y, batch_size=5, epochs=2, validation_split=0.25, verbose=verbose)
    return capsys.readouterr().out


def test_progress_bar_verbose_1(capsys):
    out = progbar_text(capsys, 1)
    assert out.startswith("Train on 9 samples, validate on 3 samples\nEpoch 1/2\n")
    final = [line.split("\r")[-1] for line in out.split("\n") if "9/9" in line]
    assert len(final) == 2
    number = r"\d\.\d{4}(e-\d\d)?"
    assert re.fullmatch(rf"9/9 \[=+\] - \d+s \d+[mu]?s/sample - loss: {number} - mean_absolute_error: {number} "
                        rf"- val_loss: {number} - val_mean_absolute_error: {number}", final[0].split("\b")[-1]), final
    assert len(re.search(r"\[(=+)\]", final[0]).group(1)) == 30
    assert "\r5/9 [===============>..............] - ETA: " in out   # the first update is always drawn


def test_progress_bar_verbose_2(capsys):
    out = progbar_text(capsys, 2)
    lines = out.strip().split("\n")
    assert lines[0] == "Train on 9 samples, validate on 3 samples"
    assert lines[1] == "Epoch 1/2" and lines[3] == "Epoch 2/2"
    assert re.match(r"9/9 - \d+s - loss: \d\.\d{4} - mean_absolute_error: \d\.\d{4} - val_loss: \d\.\d{4} - "
                    r"val_mean_absolute_error: \d\.\d{4}", lines[2]), lines[2]
    assert "\b" not in out and "[" not in out


def test_bad_input_errors():
    x, y = xy()
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,))])
    with pytest.raises(RuntimeError, match=r"You must compile your model before training/testing. Use "
                                           r"`model.compile\(optimizer, loss\)`."):
        model.fit(x, y)
    with pytest.raises(ValueError, match="Unknown loss function: mean_sqared_error"):
        model.compile("sgd", "mean_sqared_error")
    with pytest.raises(ValueError, match="Unknown optimizer: adamm"):
        model.compile("adamm", "mse")
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match="Input arrays should have the same number of samples as target arrays. "
                                         "Found 12 input samples and 11 target samples."):
        model.fit(x, y[:11], verbose=0)
    with pytest.raises(ValueError, match=r"Error when checking input: expected dense_input to have shape \(3,\) but "
                                         r"got array with shape \(4,\)"):
        model.fit(np.zeros((12, 4)), y, verbose=0)
    with pytest.raises(ValueError, match="When passing a list as loss, it should have one entry per model outputs"):
        model.compile("sgd", ["mse", "mae"])


def test_loss_dict_missing_output_takes_no_targets_and_loss_weights():
    a = keras.Input((3,), name="a")
    hidden = keras.layers.Dense(2, name="hidden")(a)
    one, two = keras.layers.Dense(1, name="one")(hidden), keras.layers.Dense(1, name="two")(hidden)
    model = keras.Model(a, [one, two])
    model.compile("sgd", loss={"one": "mse"})
    assert model.metrics_names == ["loss", "one_loss"]
    x, y = xy()
    loss, one_loss = model.evaluate(x, {"one": y}, verbose=0)
    np.testing.assert_allclose(loss, np.mean((model.predict(x)[0] - y) ** 2), rtol=1e-5)
    model.compile("sgd", loss="mse", loss_weights=[2.0, 0.5])
    p1, p2 = model.predict(x)
    loss, l1, l2 = model.evaluate(x, [y, -y], verbose=0)
    np.testing.assert_allclose([l1, l2], [np.mean((p1 - y) ** 2), np.mean((p2 + y) ** 2)], rtol=1e-5)
    np.testing.assert_allclose(loss, 2 * l1 + 0.5 * l2, rtol=1e-5)
    with pytest.raises(ValueError, match=r"Unknown entries in loss dictionary: \['three'\]"):
        model.compile("sgd", loss={"three": "mse"})


def test_evaluate_prints_its_progress_bar_by_default(capsys):
    x, y = xy()
    model = small_model()
    loss, mae = model.evaluate(x, y, batch_size=5)
    out = capsys.readouterr().out
    last = out.split("\n")[-2].split("\r")[-1]
    assert re.fullmatch(r"12/12 \[=+\] - \d+s \d+[mu]?s/sample - loss: (\d\.\d{4}) - mean_absolute_error: "
                        r"(\d\.\d{4})", last), out
    assert float(re.search(r"mean_absolute_error: (\S+)", last).group(1)) == pytest.approx(mae, abs=1e-4)
    assert model.predict(x, batch_size=5).shape == (12, 1) and capsys.readouterr().out == ""


def test_dict_inputs_dataset_validation_and_validation_freq():
    a, b = keras.Input((3,), name="a"), keras.Input((1,), name="b")
    out = keras.layers.Dense(1, name="out")(keras.layers.Lambda(lambda t: t[0] * t[1])([a, b]))
    model = keras.Model([a, b], out)
    model.compile("sgd", "mse", metrics=[keras.metrics.MeanSquaredError(name="sq")])
    assert model.metrics_names == ["loss", "sq"]
    x, y = xy()
    inputs = {"b": np.full((12, 1), 2.0, np.float32), "a": x}
    val = tf.data.Dataset.from_tensor_slices(({"a": x[:4], "b": inputs["b"][:4]}, y[:4])).batch(2)
    history = model.fit(inputs, y, epochs=4, verbose=0, validation_data=val, validation_freq=2)
    assert len(history.history["val_loss"]) == 2 and len(history.history["loss"]) == 4
    np.testing.assert_allclose(history.history["val_loss"][-1],
                               np.mean((model.predict({"a": x[:4], "b": inputs["b"][:4]}) - y[:4]) ** 2), rtol=1e-5)
    np.testing.assert_allclose(history.history["val_sq"], history.history["val_loss"], rtol=1e-6)
    with pytest.raises(ValueError, match='No data provided for "b"'):
        model.fit({"a": x}, y, verbose=0)
    with pytest.raises(ValueError, match="`y` argument is not supported when using dataset as input."):
        model.fit(val, y, verbose=0)


def test_deferred_sequential_and_target_tensors():
    model = keras.Sequential([keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    x, y = xy()
    history = model.fit(x, y, epochs=3, batch_size=4, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    K.clear_session()
    inputs = keras.Input(tensor=tf.constant(x))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile("sgd", "mse", target_tensors=[tf.constant(y)])
    kernel, bias = model.get_weights()
    np.testing.assert_allclose(model.train_on_batch(None), np.mean((x @ kernel + bias - y) ** 2), rtol=1e-5)


def test_temporal_sample_weights_weight_each_timestep():
    inputs = keras.Input((4, 2))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile("sgd", "mse", sample_weight_mode="temporal")
    rng = np.random.RandomState(1)
    x, y = rng.normal(size=(3, 4, 2)).astype(np.float32), rng.normal(size=(3, 4, 1)).astype(np.float32)
    w = rng.uniform(size=(3, 4)).astype(np.float32)
    per_step = np.mean((model.predict(x) - y) ** 2, axis=-1)
    np.testing.assert_allclose(model.test_on_batch(x, y, sample_weight=w), np.mean(per_step * w), rtol=1e-5)
    with pytest.raises(ValueError, match="you should pass a 2D sample_weight array"):
        model.test_on_batch(x, y, sample_weight=w[:, 0])


def test_dataset_size_from_its_cardinality(capsys):
    x, y = xy()
    model = small_model()
    model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(5), epochs=2, verbose=2)
    lines = capsys.readouterr().out.split("\n")
    assert lines[:2] == ["Train on 3 steps", "Epoch 1/2"] and lines[2].startswith("3/3 - ")
    with pytest.raises(ValueError, match="When passing an infinitely repeating dataset, you must specify the "
                                         "`steps_per_epoch` argument."):
        model.fit(tf.data.Dataset.from_tensor_slices((x, y)).repeat(), verbose=0)
    with pytest.raises(ValueError, match=r"Your dataset ran out of data after 3 steps"):
        model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(5), steps_per_epoch=4, verbose=0)


def test_layer_losses_join_the_total_loss_and_dropout_trains_only():
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(3,), kernel_regularizer=keras.regularizers.l2(0.1)),
                              keras.layers.Dropout(0.9, seed=3), keras.layers.Dense(1)])
    model.set_weights(weights_for(model))
    model.compile(keras.optimizers.SGD(0.0), "mse")   # a step that leaves the weights as they are
    x, y = xy()
    kernel = model.get_weights()[0]
    mse = np.mean((model.predict(x) - y) ** 2)
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), mse + 0.1 * np.sum(kernel ** 2), rtol=1e-5)
    assert model.train_on_batch(x, y) != pytest.approx(model.evaluate(x, y, verbose=0), rel=1e-3)
    np.testing.assert_allclose(model.get_weights()[0], kernel)


def test_epoch_loss_per_step_for_datasets_per_sample_for_arrays_and_generators():
    """As TF 1.15 (checked against TF 2.15's graph-mode loop): a dataset's batches count one
    each, arrays' and a Sequence's count by their size; evaluate over steps averages per step."""
    x, y = xy()
    model = small_model(optimizer=keras.optimizers.SGD(0.0))
    errors = (model.predict(x) - y) ** 2
    batch_losses = [np.mean(errors[i:i + 5]) for i in (0, 5, 10)]
    per_step, per_sample = np.mean(batch_losses), np.mean(errors)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(5)
    np.testing.assert_allclose(model.fit(dataset, verbose=0).history["loss"], [per_step], rtol=1e-5)
    np.testing.assert_allclose(model.fit(Batches(x, y, 5), verbose=0).history["loss"], [per_sample], rtol=1e-5)
    np.testing.assert_allclose(model.fit(x, y, batch_size=5, verbose=0).history["loss"], [per_sample], rtol=1e-5)
    np.testing.assert_allclose(model.evaluate(dataset, verbose=0)[0], per_step, rtol=1e-5)
    np.testing.assert_allclose(model.evaluate(Batches(x, y, 5), verbose=0)[0], per_step, rtol=1e-5)
    np.testing.assert_allclose(model.evaluate(x, y, batch_size=5, verbose=0)[0], per_sample, rtol=1e-5)


def test_trainable_changes_take_effect_at_the_next_compile():
    x, y = xy()
    model = small_model()
    first = model.layers[0]
    first.trainable = False           # after compile: still trained, as Keras
    model.fit(x, y, epochs=1, verbose=0)
    assert not np.allclose(first.get_weights()[0], weights_for(model)[0])
    frozen, second = first.get_weights(), model.layers[1].get_weights()
    model.compile("sgd", "mse")
    model.fit(x, y, epochs=1, verbose=0)
    for got, want in zip(first.get_weights(), frozen):
        np.testing.assert_allclose(got, want)
    assert not np.allclose(model.layers[1].get_weights()[0], second[0])


def test_numpy_data_with_steps_feeds_the_whole_arrays_each_step():
    x, y = xy()
    model = small_model(optimizer=keras.optimizers.SGD(0.1))
    history = model.fit(x, y, steps_per_epoch=3, epochs=1, verbose=0, validation_data=(x, y),
                        validation_freq=[1])
    trained = model.get_weights()
    K.clear_session()
    again = small_model(optimizer=keras.optimizers.SGD(0.1))
    losses = [again.train_on_batch(x, y)[0] for _ in range(3)]
    np.testing.assert_allclose(history.history["loss"], [np.mean(losses)], rtol=1e-5)
    for got, want in zip(trained, again.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5)
    assert "val_loss" in history.history


def test_per_output_sample_and_class_weights():
    a = keras.Input((3,), name="a")
    reg = keras.layers.Dense(1, name="reg")(a)
    cls = keras.layers.Dense(2, activation="softmax", name="cls")(a)
    model = keras.Model(a, [reg, cls])
    model.compile("sgd", {"reg": "mse", "cls": "categorical_crossentropy"})
    x, y = xy()
    labels = np.eye(2, dtype=np.float32)[(x[:, 0] > 0).astype(int)]
    p_reg, p_cls = model.predict(x)
    w = np.linspace(0.5, 2.0, 12).astype(np.float32)
    cw = {0: 2.0, 1: 0.5}
    loss, reg_loss, cls_loss = model.test_on_batch(x, {"reg": y, "cls": labels}, sample_weight={"reg": w})
    np.testing.assert_allclose(reg_loss, np.mean((p_reg - y)[:, 0] ** 2 * w), rtol=1e-5)
    ce = -np.log(np.sum(p_cls * labels, axis=1))
    np.testing.assert_allclose(cls_loss, np.mean(ce), rtol=1e-5)
    _, reg_loss, cls_loss = model.test_on_batch(x, [y, labels], sample_weight=[None, w])
    np.testing.assert_allclose([reg_loss, cls_loss], [np.mean((p_reg - y) ** 2), np.mean(ce * w)], rtol=1e-5)
    _, _, cls_loss = model.train_on_batch(x, [y, labels], class_weight={"cls": cw})
    np.testing.assert_allclose(cls_loss, np.mean(ce * np.array([cw[c] for c in labels.argmax(1)])), rtol=1e-5)


def test_masked_timesteps_count_in_the_mean_as_tf_1_15():
    """TF 1.15 multiplies the loss by the output's mask and divides by every element (masked ones
    too: tensorflow/tensorflow#26784); Keras 2.15's v1 loop divides by the unmasked ones."""
    model = keras.Sequential([keras.layers.Embedding(10, 2, mask_zero=True, input_length=5), keras.layers.Dense(1)])
    model.compile("sgd", "mse", sample_weight_mode="temporal")
    rng = np.random.RandomState(2)
    x = rng.randint(1, 10, (4, 5))
    x[:, 3:] = 0
    y = rng.normal(size=(4, 5, 1)).astype(np.float32)
    per_step = np.mean((model.predict(x) - y) ** 2, axis=-1)
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), np.sum(per_step * (x != 0)) / x.size, rtol=1e-5)
