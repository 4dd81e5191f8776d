"""tf.keras.callbacks in Model.fit (graph mode): what each callback does to training and what it
writes (CSV rows, checkpoints, TensorBoard event files read back)."""
import glob
import json
import os

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.summary.writer import summary_iterator
from fixtures import keras_tensorboard_cases as tensorboard_case
from fixtures.keras_training_cases import weights_for

keras = tf.keras
with open(os.path.join(os.path.dirname(__file__), "fixtures", "keras_tensorboard.json"), encoding="utf-8") as f:
    TENSORBOARD_RECORDED = json.load(f)
K = keras.backend
cb = keras.callbacks


@pytest.fixture(autouse=True)
def fresh_graph():
    K.clear_session()
    yield
    K.clear_session()


def xy(n=12):
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
    return x, (x[:, :1] - 2 * x[:, 1:2]).astype(np.float32)


def model_for(lr=0.05, metrics=("mae",)):
    model = keras.Sequential([keras.layers.Dense(2, activation="tanh", input_shape=(3,)), keras.layers.Dense(1)])
    model.set_weights(weights_for(model))
    model.compile(keras.optimizers.SGD(lr), "mse", metrics=list(metrics))
    return model


def fit(model, callbacks, epochs=4, **kwargs):
    x, y = xy()
    kwargs.setdefault("batch_size", 4)
    return model.fit(x, y, epochs=epochs, shuffle=False, verbose=0, callbacks=callbacks, **kwargs)


def test_lambda_callback_sees_every_hook_in_order():
    events = []
    hooks = cb.LambdaCallback(on_train_begin=lambda logs: events.append("train_begin"),
                              on_epoch_begin=lambda epoch, logs: events.append(f"epoch_begin {epoch}"),
                              on_batch_end=lambda batch, logs: events.append(f"batch_end {batch} {logs['size']}"),
                              on_epoch_end=lambda epoch, logs: events.append(f"epoch_end {epoch} {sorted(logs)}"),
                              on_train_end=lambda logs: events.append("train_end"))
    fit(model_for(), [hooks], epochs=2, batch_size=5, validation_split=0.25)
    epoch = ["batch_end 0 5", "batch_end 1 4", "epoch_end {} ['loss', 'mean_absolute_error', 'val_loss', "
             "'val_mean_absolute_error']"]
    assert events == (["train_begin", "epoch_begin 0"] + epoch[:2] + [epoch[2].format(0), "epoch_begin 1"]
                      + epoch[:2] + [epoch[2].format(1), "train_end"])


def test_history_is_per_epoch_logs_and_batches_average_into_the_epoch():
    batch_losses = []
    record = cb.LambdaCallback(on_batch_end=lambda batch, logs: batch_losses.append((logs["loss"], logs["size"])))
    history = fit(model_for(), [record], epochs=1, batch_size=5)
    losses, sizes = np.array(batch_losses).T
    np.testing.assert_allclose(history.history["loss"], [np.sum(losses * sizes) / 12], rtol=1e-6)
    assert list(sizes) == [5, 5, 2]


def test_early_stopping_stops_after_patience_and_restores_best_weights():
    weights_at_end = []
    record = cb.LambdaCallback(on_epoch_end=lambda epoch, logs: weights_at_end.append(model.get_weights()))
    model = model_for()
    # every epoch improves the loss by less than min_delta: the first epoch is the best
    stop = cb.EarlyStopping(monitor="loss", min_delta=100.0, patience=2, restore_best_weights=True)
    history = fit(model, [record, stop], epochs=10)
    assert history.epoch == [0, 1, 2]
    assert stop.stopped_epoch == 2
    for got, want in zip(model.get_weights(), weights_at_end[0]):
        np.testing.assert_allclose(got, want)
    assert not np.allclose(weights_at_end[2][0], weights_at_end[0][0])


def test_early_stopping_modes_and_baseline():
    assert cb.EarlyStopping(monitor="val_acc").monitor_op is np.greater
    assert cb.EarlyStopping(monitor="val_loss").monitor_op is np.less
    stop = cb.EarlyStopping(monitor="loss", baseline=0.0, patience=1)
    history = fit(model_for(), [stop], epochs=5)
    assert history.epoch == [0]


def test_learning_rate_scheduler_sets_the_optimizer_s_rate_each_epoch():
    seen = []
    model = model_for()
    schedule = cb.LearningRateScheduler(lambda epoch, lr: 0.1 if epoch == 0 else 0.0)
    record = cb.LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append(model.get_weights()))
    history = fit(model, [schedule, record], epochs=3)
    np.testing.assert_allclose(history.history["lr"], [0.1, 0.0, 0.0])
    np.testing.assert_allclose(K.get_value(model.optimizer.lr), 0.0)
    assert not np.allclose(seen[0][0], weights_for(model)[0])
    for a, b in zip(seen[0], seen[2]):   # a zero rate leaves the weights where they were
        np.testing.assert_allclose(a, b)
    with pytest.raises(ValueError, match='The output of the "schedule" function should be float.'):
        fit(model_for(), [cb.LearningRateScheduler(lambda epoch: "fast")], epochs=1)


def test_reduce_lr_on_plateau_multiplies_the_rate_after_patience():
    model = model_for(lr=0.05)
    reduce = cb.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=2, min_delta=100.0, min_lr=0.01)
    history = fit(model, [reduce], epochs=6)
    # epoch 0 sets the best; no later epoch improves by min_delta: halved after every 2 epochs, not below min_lr
    np.testing.assert_allclose(history.history["lr"], [0.05, 0.05, 0.05, 0.025, 0.025, 0.0125], rtol=1e-6)
    with pytest.raises(ValueError, match="does not support a factor >= 1.0"):
        cb.ReduceLROnPlateau(factor=1.5)


def test_terminate_on_nan_stops_at_the_first_bad_batch(capsys):
    batches = []
    record = cb.LambdaCallback(on_batch_end=lambda batch, logs: batches.append(batch))
    history = fit(model_for(lr=1e30), [cb.TerminateOnNaN(), record], epochs=5)
    assert "Invalid loss, terminating training" in capsys.readouterr().out
    assert history.epoch == [0] and len(batches) <= 3
    assert not np.isfinite(history.history["loss"][0])


def test_csv_logger_writes_one_row_per_epoch_and_appends(tmp_path):
    path = str(tmp_path / "log.csv")
    history = fit(model_for(), [cb.CSVLogger(path)], epochs=2, validation_split=0.25)
    rows = open(path).read().splitlines()
    assert rows[0] == "epoch,loss,mean_absolute_error,val_loss,val_mean_absolute_error"
    assert [float(v) for v in rows[2].split(",")[1:]] == pytest.approx(
        [history.history[k][1] for k in ("loss", "mean_absolute_error", "val_loss", "val_mean_absolute_error")],
        rel=1e-6)
    fit(model_for(), [cb.CSVLogger(path, separator=";", append=True)], epochs=1, validation_split=0.25)
    rows = open(path).read().splitlines()
    assert len(rows) == 4 and rows[3].startswith("0;")


def events_of(log_dir):
    found = {}
    graph = False
    for path in sorted(glob.glob(os.path.join(log_dir, "events.out.tfevents.*"))):
        for event in summary_iterator(path):
            graph = graph or bool(event.graph_def)
            for value in event.summary.value:
                found.setdefault(value.tag, []).append((event.step, value))
    return found, graph


def test_tensorboard_writes_epoch_scalars_histograms_and_the_graph(tmp_path):
    log_dir = str(tmp_path / "tb")
    history = fit(model_for(), [cb.TensorBoard(log_dir, histogram_freq=2)], epochs=3, validation_split=0.25)
    found, graph = events_of(log_dir)
    assert graph
    assert [step for step, _ in found["epoch_loss"]] == [0, 1, 2]
    np.testing.assert_allclose([v.simple_value for _, v in found["epoch_val_mean_absolute_error"]],
                               history.history["val_mean_absolute_error"], rtol=1e-6)
    kernel = found["dense/kernel_0"]
    # on the validation batches (one an epoch here) of epochs 0 and 2: steps count those batches
    assert [step for step, _ in kernel if step is not None and _.HasField("histo")] == [0, 1]
    assert kernel[0][1].histo.num == 6
    assert [v.histo.num for _, v in found["dense_1_out"]] == [3, 3]   # the 3 validation samples' outputs


def test_tensorboard_weight_images(tmp_path):
    log_dir = str(tmp_path / "tb")
    fit(model_for(), [cb.TensorBoard(log_dir, histogram_freq=1, write_images=True)], epochs=1, validation_split=0.25)
    found, _ = events_of(log_dir)
    images = {tag: v[0][1].image for tag, v in found.items() if v[0][1].HasField("image")}
    # the kernel [3, 2] drawn as 2 x 3 (the longer side across), the bias [2] as 2 x 1, the [1] bias not at all
    sizes = {tag: (image.height, image.width) for tag, image in images.items()}
    assert sizes == {"dense/kernel_0_1/image/0": (2, 3), "dense/bias_0_1/image/0": (2, 1),
                     "dense_1/kernel_0_1/image/0": (2, 1)}   # [2, 1] squeezes to a column too
    # without validation data there is nothing to compute the histograms on (as TF 1.15)
    other_dir = str(tmp_path / "tb2")
    fit(model_for(), [cb.TensorBoard(other_dir, histogram_freq=1, write_images=True)], epochs=1)
    found, _ = events_of(other_dir)
    assert sorted(found) == ["epoch_loss", "epoch_mean_absolute_error"]


def _tensorboard_case_run(log_dir):
    """Fits keras_tensorboard_cases' model with its TensorBoard callback; returns the event files' histograms
    as {(tag, step): (num, sum, min, max)}."""
    d = tensorboard_case.data()
    model = keras.Sequential(tensorboard_case.layers(keras.layers))
    model.compile(keras.optimizers.SGD(0.1), "mse")
    model.set_weights(tensorboard_case.weight_values([w.shape.as_list() for w in model.weights]))
    board = cb.TensorBoard(log_dir, embeddings_data=d["embeddings_data"], **tensorboard_case.TENSORBOARD_ARGS)
    model.fit(d["x"], d["y"], batch_size=tensorboard_case.BATCH_SIZE, epochs=tensorboard_case.EPOCHS, shuffle=False,
              verbose=0, validation_data=(d["x_val"], d["y_val"]), callbacks=[board])
    found, _ = events_of(log_dir)
    return {(tag, step): (v.histo.num, v.histo.sum, v.histo.min, v.histo.max)
            for tag, values in found.items() for step, v in values if v.HasField("histo")}


def test_tensorboard_gradient_and_output_histograms_match_tf(tmp_path):
    got = _tensorboard_case_run(str(tmp_path / "tb"))
    want = {(tag, step): tuple(stats) for tag, step, *stats in TENSORBOARD_RECORDED["histograms"]}
    assert sorted(got) == sorted(want)   # weights, "<layer>_out" and "<weight>_grad" at each validation batch
    for key, stats in want.items():
        assert got[key][0] == stats[0], key
        np.testing.assert_allclose(got[key][1:], stats[1:], rtol=1e-5, atol=1e-6, err_msg=str(key))


def test_tensorboard_gradient_histograms_with_a_tf_optimizer(tmp_path):
    log_dir = str(tmp_path / "tb")
    model = keras.Sequential([keras.layers.Dense(2, activation="tanh", input_shape=(3,)), keras.layers.Dense(1)])
    model.compile(tf.train.GradientDescentOptimizer(0.05), "mse")
    fit(model, [cb.TensorBoard(log_dir, histogram_freq=1, write_grads=True)], epochs=2, validation_split=0.25)
    found, _ = events_of(log_dir)
    assert [(step, v.histo.num) for step, v in found["dense/kernel_0_grad"]] == [(0, 6), (1, 6)]
    assert [(step, v.histo.num) for step, v in found["dense_1/bias_0_grad"]] == [(0, 1), (1, 1)]


def test_tensorboard_embeddings_write_the_projector_config_and_checkpoint_tf_writes(tmp_path):
    log_dir = str(tmp_path / "tb")
    _tensorboard_case_run(log_dir)
    with open(os.path.join(log_dir, "projector_config.pbtxt"), encoding="utf-8") as f:
        assert f.read() == TENSORBOARD_RECORDED["projector_config"]
    # TF's also holds plugins/profile (profile_batch's trace), which tensorweave does not write
    assert sorted(f for f in os.listdir(log_dir) if not f.startswith("events.out")) == \
        [f for f in TENSORBOARD_RECORDED["files"] if f != "plugins"]
    checkpoint = tf.train.latest_checkpoint(log_dir)
    assert os.path.basename(checkpoint) == TENSORBOARD_RECORDED["checkpoint"]
    assert [[n, s] for n, s in tf.train.list_variables(checkpoint)] == TENSORBOARD_RECORDED["checkpoint_variables"]
    np.testing.assert_allclose(tf.train.load_variable(checkpoint, "embedding_embedding"),
                               TENSORBOARD_RECORDED["embedding"], rtol=1e-6)


def test_tensorboard_embedding_arguments_are_checked(tmp_path):
    log_dir = str(tmp_path / "tb")
    d = tensorboard_case.data()
    model = keras.Sequential(tensorboard_case.layers(keras.layers))
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match="To visualize embeddings, embeddings_data must be provided."):
        model.fit(d["x"], d["y"], epochs=1, verbose=0, callbacks=[cb.TensorBoard(log_dir, embeddings_freq=1)])
    with pytest.raises(ValueError, match=r"embeddings_layer_names \['dense_9'\] are not layers of the model"):
        cb.TensorBoard(log_dir, embeddings_freq=1, embeddings_layer_names=["dense_9"],
                       embeddings_data=d["x"]).set_model(model)
    with pytest.raises(ValueError, match="embeddings_data holds 2 array\\(s\\), but the model has 1 input"):
        cb.TensorBoard(log_dir, embeddings_freq=1, embeddings_data=[d["x"], d["x"]]).set_model(model)
    # a metadata file for every layer, and names in protobuf's text escaping
    cb.TensorBoard(log_dir, embeddings_freq=1, embeddings_layer_names=["embedding", "flatten"],
                   embeddings_metadata='m "1".tsv', embeddings_data={model.input_names[0]: d["x"]}).set_model(model)
    with open(os.path.join(log_dir, "projector_config.pbtxt"), encoding="utf-8") as f:
        escaped = r'"m \"1\".tsv"'
        assert f.read() == "".join(f'embeddings {{\n  tensor_name: "{name}:0"\n  metadata_path: {escaped}\n}}\n'
                                   for name in ("embedding_embedding", "flatten_embedding"))


def test_tensorboard_batch_scalars_every_so_many_samples(tmp_path):
    log_dir = str(tmp_path / "tb")
    batch_losses = []
    record = cb.LambdaCallback(on_batch_end=lambda batch, logs: batch_losses.append(logs["loss"]))
    fit(model_for(), [cb.TensorBoard(log_dir, update_freq="batch", write_graph=False), record], epochs=2)
    found, graph = events_of(log_dir)
    assert not graph
    assert [step for step, _ in found["batch_loss"]] == list(range(6))
    np.testing.assert_allclose([v.simple_value for _, v in found["batch_loss"]], batch_losses, rtol=1e-6)
    assert [step for step, _ in found["epoch_loss"]] == [12, 24]   # the samples seen, when not per epoch


def test_progbar_logger_prints_epochs_for_fit_with_verbose(capsys):
    x, y = xy()
    model_for().fit(x, y, epochs=2, batch_size=6, verbose=2)
    out = capsys.readouterr().out
    assert out.count("Epoch ") == 2 and out.count("12/12 - ") == 2
    with pytest.raises(ValueError, match="Unknown `count_mode`: lines"):
        cb.ProgbarLogger("lines")


def test_evaluate_and_predict_call_test_and_predict_hooks():
    events = []
    hooks = cb.LambdaCallback(on_test_begin=lambda logs: events.append("test_begin"),
                              on_test_batch_end=lambda batch, logs: events.append(("test", batch, logs["loss"])),
                              on_test_end=lambda logs: events.append("test_end"),
                              on_predict_batch_end=lambda batch, logs: events.append(("predict", batch)))
    model = model_for()
    x, y = xy()
    model.evaluate(x, y, batch_size=6, verbose=0, callbacks=[hooks])
    model.predict(x, batch_size=6, callbacks=[hooks])
    assert [e if isinstance(e, str) else e[:2] for e in events] == [
        "test_begin", ("test", 0), ("test", 1), "test_end", ("predict", 0), ("predict", 1)]


def checkpointed_model(lr=0.05):
    model = keras.Sequential([keras.layers.Dense(2, activation="tanh", input_shape=(3,)), keras.layers.Dense(1)])
    model.set_weights(weights_for(model))
    model.compile(keras.optimizers.SGD(lr), "mse", metrics=["mae"])
    return model


def saved(path):
    """The weights save_weights wrote at `path` (a TF-format prefix or an HDF5 file), read into a
    fresh model of the same layers."""
    model = checkpointed_model()
    model.load_weights(str(path))
    return model.get_weights()


def checkpoints(folder, suffix=".index"):
    return sorted(name[:-len(suffix)] for name in os.listdir(folder) if name.endswith(suffix))


def test_model_checkpoint_formats_the_path_with_epoch_and_logs(tmp_path):
    weights = []
    model = checkpointed_model()
    record = cb.LambdaCallback(on_epoch_end=lambda epoch, logs: weights.append(model.get_weights()))
    path = str(tmp_path / "w.{epoch:02d}-{loss:.4f}")
    history = fit(model, [cb.ModelCheckpoint(path, save_weights_only=True), record], epochs=3)
    names = checkpoints(tmp_path)   # TF-format weights: <prefix>.index and <prefix>.data-...
    assert names == [f"w.{e + 1:02d}-{loss:.4f}" for e, loss in enumerate(history.history["loss"])]
    for name, want in zip(names, weights):
        for got, w in zip(saved(tmp_path / name), want):
            np.testing.assert_allclose(got, w)
    whole = tmp_path / "whole"
    whole.mkdir()
    fit(checkpointed_model(), [cb.ModelCheckpoint(str(whole / "m{epoch}.h5"), period=2)], epochs=4)
    assert sorted(os.listdir(whole)) == ["m2.h5", "m4.h5"]
    K.clear_session()
    restored = keras.models.load_model(str(whole / "m4.h5"))   # the whole model, compiled as it was
    assert restored.metrics_names == ["loss", "mean_absolute_error"]
    with pytest.raises(KeyError, match="Failed to format this callback filepath"):
        fit(checkpointed_model(), [cb.ModelCheckpoint(str(tmp_path / "{val_loss}"))], epochs=1)


def test_model_checkpoint_save_best_only_keeps_the_best_epoch(tmp_path, capsys):
    weights = []
    model = checkpointed_model()
    record = cb.LambdaCallback(on_epoch_end=lambda epoch, logs: weights.append(model.get_weights()))
    path = str(tmp_path / "best")
    history = fit(model, [cb.ModelCheckpoint(path, monitor="loss", save_best_only=True, save_weights_only=True,
                                             verbose=1),
                          cb.LearningRateScheduler(lambda epoch, lr: 0.05 if epoch == 0 else 3.0), record],
                  epochs=4)
    losses = history.history["loss"]
    best = int(np.argmin(losses))
    for got, w in zip(saved(path), weights[best]):
        np.testing.assert_allclose(got, w)
    out = capsys.readouterr().out
    assert f"Epoch 00001: loss improved from inf to {losses[0]:0.5f}, saving model to {path}" in out
    assert out.count("did not improve") == 4 - 1 - sum(np.diff(np.minimum.accumulate(losses)) < 0)


def test_model_checkpoint_every_so_many_samples(tmp_path):
    path = str(tmp_path / "s{epoch}")
    fit(checkpointed_model(), [cb.ModelCheckpoint(path, save_weights_only=True, save_freq=8)], epochs=2)
    # batches of 4, 4, 4 per epoch: a save after every 8 samples seen, named by the epoch it falls in
    assert checkpoints(tmp_path) == ["s1", "s2"]
    with pytest.raises(ValueError, match="Unrecognized save_freq: batch"):
        cb.ModelCheckpoint(path, save_freq="batch")


def test_model_checkpoint_loads_the_newest_file_on_restart(tmp_path):
    path = str(tmp_path / "ckpt-{epoch:02d}")
    model = checkpointed_model()
    fit(model, [cb.ModelCheckpoint(path, save_weights_only=True)], epochs=2)
    trained = model.get_weights()
    restarted = checkpointed_model(lr=0.0)
    fit(restarted, [cb.ModelCheckpoint(path, save_weights_only=True, load_weights_on_restart=True)], epochs=1)
    for got, want in zip(restarted.get_weights(), trained):   # a zero rate: what it loaded is what it has
        np.testing.assert_allclose(got, want)
