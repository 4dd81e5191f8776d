"""tf.distribute strategies where users use them (TF 1.15, graph mode, in one process): Keras
compile/fit/evaluate/predict under `strategy.scope()`, and the Estimator's
RunConfig(train_distribute=..., eval_distribute=...) with a model_fn and a premade Estimator.
Numbers are checked against TF 2.15 recordings (fixtures/record_tf_strategy_use.py) and against
the same program without a strategy (the whole batch on one device)."""
import contextlib
import json
import os
import tempfile

import numpy as np
import pytest

import tensorweave as tf
from fixtures import strategy_use_cases as cases
from fixtures.recorded import decode

HERE = os.path.dirname(os.path.abspath(__file__))


def _recorded(name):
    with open(os.path.join(HERE, "fixtures", "tf_strategy_use.json")) as f:
        return [decode(a) for a in json.load(f)[name]]


def _assert_close(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


def _assert_copies_equal(copies):
    for copy in copies:
        for replica in copy:
            np.testing.assert_array_equal(replica, copy[0])


# -- Keras --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(cases.KERAS_CASES))
def test_keras_fit_evaluate_predict_under_a_strategy_match_tf(case):
    got = cases.keras_fit(tf, *cases.KERAS_CASES[case])
    want = _recorded(case)
    _assert_close(got, want)   # the copies too: one per replica device, as TF's
    _assert_copies_equal(got[7:])


@pytest.mark.parametrize("strategy", ["mirrored2", "mirrored3", "central2", "ps", "one_device"])
def test_keras_under_each_strategy_trains_like_the_whole_batch_on_one_device(strategy):
    """Momentum SGD, batches of 8: mirrored3 splits them 3/3/2 (each replica's mean loss is
    weighted by its share of the batch, so uneven shares train like the whole batch too)."""
    plain = cases.keras_fit(tf, None, "momentum")
    got = cases.keras_fit(tf, strategy, "momentum")
    _assert_close(got[:7], plain[:7])
    replicas = {"mirrored2": 2, "mirrored3": 3}.get(strategy, 1)
    assert [len(c) for c in got[7:]] == [replicas] * 4
    _assert_copies_equal(got[7:])


@pytest.mark.parametrize("case", sorted(cases.BATCH_NORM_CASES))
def test_keras_batch_norm_under_a_strategy_matches_tf(case):
    """Each replica normalizes by its share's statistics and keeps its own moving statistics
    (the last output: every copy); get_weights reads their mean, as TF's."""
    got = cases.keras_batch_norm(tf, cases.BATCH_NORM_CASES[case])
    _assert_close(got, _recorded(case))


def test_sync_on_read_variables_read_and_checkpoint_their_aggregate():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    on_read = dict(trainable=False, synchronization=tf.VariableSynchronization.ON_READ)
    with tf.Graph().as_default(), strategy.scope():
        mean = tf.Variable([1.0, 2.0], aggregation=tf.VariableAggregation.MEAN, name="mean", **on_read)
        total = tf.Variable([1.0, 2.0], aggregation=tf.VariableAggregation.SUM, name="total", **on_read)
        saver = tf.train.Saver()
        with tf.Session(config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run([mean.values[1].assign([3.0, 6.0]), total.values[1].assign([3.0, 6.0])])
            assert sess.run(mean).tolist() == [2.0, 4.0] and sess.run(total).tolist() == [4.0, 8.0]
            path = saver.save(sess, os.path.join(tempfile.mkdtemp(), "model.ckpt"))
            assert tf.train.load_variable(path, "mean").tolist() == [2.0, 4.0]
            assert tf.train.load_variable(path, "total").tolist() == [4.0, 8.0]
            saver.restore(sess, path)
            # every copy gets the saved value (a SUM's copies a share each, so they sum to it)
            assert [c.tolist() for c in sess.run(list(mean.values))] == [[2.0, 4.0]] * 2
            assert [c.tolist() for c in sess.run(list(total.values))] == [[2.0, 4.0]] * 2


def _mirrored_model(strategy, **compile_kwargs):
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(3,), kernel_initializer="ones")])
        model.compile(compile_kwargs.pop("optimizer", tf.keras.optimizers.SGD(0.05)), "mse", metrics=["mae"],
                      **compile_kwargs)
    return model


def test_keras_replicas_each_evaluate_their_share_of_the_batch():
    tf.keras.backend.clear_session()
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    model = _mirrored_model(strategy)
    loss, mae = model.evaluate(cases.X, cases.Y, batch_size=8, verbose=0)
    errors = np.abs(cases.X @ np.ones((3, 1), np.float32) - cases.Y)
    np.testing.assert_allclose([loss, mae], [np.mean(errors ** 2), np.mean(errors)], rtol=1e-6)
    # the metric's state: one copy per replica, each summed over that replica's rows of each batch
    sess = tf.keras.backend.get_session()
    total, count = [sess.run(list(strategy.experimental_local_results(v))) for v in model.metrics[0].variables]
    rows = [np.r_[0:4, 8:12], np.r_[4:8, 12:16]]
    np.testing.assert_allclose(total, [errors[r].sum() for r in rows], rtol=1e-6)
    assert [float(c) for c in count] == [8.0, 8.0]


def test_keras_fit_on_a_dataset_and_with_a_tf_train_optimizer_under_mirrored():
    def run(strategy, data, optimizer):
        tf.keras.backend.clear_session()
        model = _mirrored_model(strategy, optimizer=optimizer()) if strategy else None
        if model is None:
            model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(3,), kernel_initializer="ones")])
            model.compile(optimizer(), "mse", metrics=["mae"])
        kwargs = dict(steps_per_epoch=2) if data == "dataset" else dict(batch_size=8, shuffle=False)
        x = tf.data.Dataset.from_tensor_slices((cases.X, cases.Y)).batch(8).repeat() if data == "dataset" else cases.X
        history = model.fit(x, None if data == "dataset" else cases.Y, epochs=2, verbose=0, **kwargs).history
        return [history["loss"], history["mean_absolute_error"]] + model.get_weights()

    def train_sgd():
        return tf.train.GradientDescentOptimizer(0.05)

    def keras_adam():
        return tf.keras.optimizers.Adam(0.05)

    for optimizer in (train_sgd, keras_adam):
        plain = run(None, "arrays", optimizer)
        for data in ("arrays", "dataset"):
            got = run(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]), data, optimizer)
            for g, w in zip(got, plain):
                np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


def test_keras_multi_output_model_under_mirrored_equals_no_strategy():
    def run(strategy):
        tf.keras.backend.clear_session()
        with strategy.scope() if strategy else contextlib.nullcontext():
            inputs = tf.keras.Input((3,))
            hidden = tf.keras.layers.Dense(4, activation="tanh", kernel_initializer="ones", name="hidden")(inputs)
            a = tf.keras.layers.Dense(1, kernel_initializer="ones", name="a")(hidden)
            b = tf.keras.layers.Dense(2, activation="softmax", kernel_initializer="zeros", name="b")(hidden)
            model = tf.keras.Model(inputs, [a, b])
            model.compile(tf.keras.optimizers.RMSprop(0.01), ["mse", "sparse_categorical_crossentropy"],
                          loss_weights=[1.0, 0.5], metrics={"b": ["accuracy"]})
        history = model.fit(cases.X, [cases.Y, cases.LABELS], batch_size=4, epochs=2, verbose=0, shuffle=False)
        return ([history.history[k] for k in sorted(history.history)] + model.get_weights()
                + model.evaluate(cases.X, [cases.Y, cases.LABELS], batch_size=4, verbose=0)
                + model.predict(cases.X, batch_size=6))
    plain = run(None)
    got = run(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
    assert len(got) == len(plain)
    for g, w in zip(got, plain):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


def test_keras_weights_of_a_mirrored_model_save_and_load_into_every_copy(tmp_path):
    tf.keras.backend.clear_session()
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    model = _mirrored_model(strategy, optimizer=tf.keras.optimizers.Adam(0.05))
    checkpoint = tf.keras.callbacks.ModelCheckpoint(str(tmp_path / "weights.h5"), save_weights_only=True)
    model.fit(cases.X, cases.Y, batch_size=8, epochs=2, verbose=0, validation_data=(cases.X, cases.Y),
              callbacks=[checkpoint])
    trained = model.get_weights()
    model.save_weights(str(tmp_path / "tf_format"))
    model.save(str(tmp_path / "model.h5"))
    sess = tf.keras.backend.get_session()
    for path in ("weights.h5", "tf_format"):
        model.set_weights([np.zeros_like(w) for w in trained])
        model.load_weights(str(tmp_path / path))
        for weight, want in zip(model.weights, trained):
            for copy in sess.run(list(strategy.experimental_local_results(weight))):
                np.testing.assert_array_equal(copy, want)
    tf.keras.backend.clear_session()
    loaded = tf.keras.models.load_model(str(tmp_path / "model.h5"))   # no strategy now
    for got, want in zip(loaded.get_weights(), trained):
        np.testing.assert_array_equal(got, want)


def test_keras_model_built_outside_the_scope_is_refused_at_compile():
    tf.keras.backend.clear_session()
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(3,))])
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope(), pytest.raises(ValueError, match=r"Variable \(dense/kernel:0\) was not created in the "
                                                           "distribution strategy scope"):
        model.compile("sgd", "mse")
    with strategy.scope(), pytest.raises(NotImplementedError, match="sample_weight_mode is not supported with "
                                                                    "tf.distribute.Strategy"):
        _mirrored_model(strategy, sample_weight_mode="temporal")


# -- Estimator ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(cases.ESTIMATOR_CASES))
def test_estimator_eval_distribute_matches_tf(case):
    got = cases.estimator_evaluate(tf, cases.ESTIMATOR_CASES[case])
    want = _recorded(case)
    _assert_close(got[:2], want[:2])
    assert got[2].tolist() == want[2].tolist()


@pytest.mark.parametrize("strategy", ["mirrored2", "central2", "one_device", "ps"])
def test_estimator_eval_distribute_aggregates_the_replicas_metrics(strategy):
    """The whole input: the same metrics as without a strategy. One step: each of N replicas
    evaluated its own batch, as N steps without a strategy do."""
    got = cases.estimator_evaluate(tf, strategy)
    plain = cases.estimator_evaluate(tf, None)
    _assert_close(got[:1], plain[:1])
    if strategy.startswith("one") or strategy == "ps":
        _assert_close(got[1:2], plain[1:2])
    else:
        assert not np.allclose(got[1], plain[1])
        np.testing.assert_allclose(got[1], _two_batches(), rtol=1e-5)


def _two_batches():
    """The metrics of an undistributed evaluation of the first two batches (steps=2)."""
    model_dir = tempfile.mkdtemp()
    quiet = dict(save_summary_steps=None, log_step_count_steps=None)
    est = tf.estimator.Estimator(cases.model_fn(tf), model_dir=model_dir, config=tf.estimator.RunConfig(**quiet))
    est.train(lambda: cases.input_fn(tf, 4)().repeat(), steps=3)
    result = est.evaluate(cases.input_fn(tf, 4), steps=2)
    return np.array([result[k] for k in cases.ESTIMATOR_KEYS], np.float32)


def _premade(strategy, batch_size, init_dir, eval_strategy=None, experimental_distribute=False):
    columns = [tf.feature_column.numeric_column("x", shape=[3])]
    strategies = (strategy, strategy if eval_strategy is None else eval_strategy)
    distribute = (dict(experimental_distribute=tf.contrib.distribute.DistributeConfig(*strategies))
                  if experimental_distribute else dict(zip(("train_distribute", "eval_distribute"), strategies)))
    config = tf.estimator.RunConfig(save_summary_steps=None, log_step_count_steps=None, **distribute)
    est = tf.estimator.DNNClassifier([4], columns, model_dir=tempfile.mkdtemp(), config=config,
                                     optimizer=lambda: tf.train.AdagradOptimizer(0.3), warm_start_from=init_dir)
    est.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": cases.X}, cases.LABELS)).repeat().batch(batch_size),
              steps=4)
    weights = {n: est.get_variable_value(n) for n in est.get_variable_names()}
    return weights, est.evaluate(lambda: tf.data.Dataset.from_tensor_slices(({"x": cases.X}, cases.LABELS)).batch(4))


@pytest.mark.parametrize("strategy", ["mirrored2", "central2", "one_device", "ps"])
def test_premade_estimator_under_train_and_eval_distribute_trains_like_the_concatenated_batch(strategy):
    """DNNClassifier (a SUM loss) warm-started from the same checkpoint: N replicas drawing
    batches of 8/N train like one device on batches of 8; checkpoints name each variable once,
    as without a strategy."""
    init_dir = tempfile.mkdtemp()
    columns = [tf.feature_column.numeric_column("x", shape=[3])]
    init = tf.estimator.DNNClassifier([4], columns, model_dir=init_dir,
                                      optimizer=lambda: tf.train.GradientDescentOptimizer(0.0))
    init.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": cases.X}, cases.LABELS)).batch(8), steps=1)
    plain_weights, plain_metrics = _premade(None, 8, init_dir)
    replicas = 2 if strategy in ("mirrored2", "central2") else 1
    weights, metrics = _premade(cases.make_strategy(tf, strategy), 8 // replicas, init_dir)
    assert sorted(weights) == sorted(plain_weights)
    for name in plain_weights:
        np.testing.assert_allclose(weights[name], plain_weights[name], rtol=1e-5, atol=1e-6)
    assert sorted(metrics) == sorted(plain_metrics)
    for name in plain_metrics:
        np.testing.assert_allclose(metrics[name], plain_metrics[name], rtol=1e-5, atol=1e-6)
    assert not np.allclose(weights["dnn/logits/kernel"], init.get_variable_value("dnn/logits/kernel"))


def test_experimental_distribute_config_trains_and_evaluates_as_train_and_eval_distribute():
    """RunConfig(experimental_distribute=tf.contrib.distribute.DistributeConfig(train, eval)) is
    RunConfig(train_distribute=train, eval_distribute=eval): the same weights and metrics (a
    mirrored training of 2 replicas, a central-storage evaluation), unlike training without it.
    The metrics' totals take the two replicas' updates in whichever order their ops run (TF's
    executor runs them concurrently too), which a loaded machine changes: equal to 1 ulp."""
    init_dir = tempfile.mkdtemp()
    columns = [tf.feature_column.numeric_column("x", shape=[3])]
    init = tf.estimator.DNNClassifier([4], columns, model_dir=init_dir,
                                      optimizer=lambda: tf.train.GradientDescentOptimizer(0.0))
    init.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": cases.X}, cases.LABELS)).batch(8), steps=1)
    runs = [_premade(cases.make_strategy(tf, "mirrored2"), 4, init_dir, cases.make_strategy(tf, "central2"), via)
            for via in (False, True)]
    undistributed_weights, _ = _premade(None, 4, init_dir)
    (weights, metrics), (config_weights, config_metrics) = runs
    assert sorted(config_weights) == sorted(weights) and sorted(config_metrics) == sorted(metrics)
    for name in weights:
        np.testing.assert_array_equal(config_weights[name], weights[name])
    for name in metrics:   # (the replicas add into the metrics' shared totals in the order they run: 1 ulp apart)
        np.testing.assert_allclose(config_metrics[name], metrics[name], rtol=1e-6)
    assert not np.allclose(config_weights["dnn/logits/kernel"], undistributed_weights["dnn/logits/kernel"])


@pytest.mark.parametrize("strategy", ["central2", "one_device", "ps"])
def test_model_fn_estimator_train_distribute_with_each_strategy(strategy):
    """A mean loss: each replica's is scaled by 1/N (tf.distribute.get_loss_reduction), so N
    replicas of batch b train like one device on batch N*b."""
    def weights(train_distribute, batch_size):
        def model_fn(features, labels, mode):
            w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
            loss = tf.losses.mean_squared_error(labels, tf.matmul(features["x"], w))
            train = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss, tf.train.get_global_step())
            return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train)
        config = tf.estimator.RunConfig(train_distribute=train_distribute, save_summary_steps=None,
                                        log_step_count_steps=None)
        est = tf.estimator.Estimator(model_fn, model_dir=tempfile.mkdtemp(), config=config)
        est.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": cases.X}, cases.Y)).repeat().batch(batch_size),
                  steps=5)
        assert est.get_variable_names() == ["global_step", "w", "w/Momentum"]
        return est.get_variable_value("w")
    replicas = 2 if strategy == "central2" else 1
    np.testing.assert_allclose(weights(cases.make_strategy(tf, strategy), 8 // replicas), weights(None, 8),
                               rtol=1e-5, atol=1e-6)


def _categorical_input_fn(batch_size, repeat):
    colors = np.array([b"a", b"b", b"c", b"a"] * 4)

    def input_fn():
        data = tf.data.Dataset.from_tensor_slices(({"x": cases.X, "c": colors}, cases.LABELS))
        return (data.repeat() if repeat else data).batch(batch_size)
    return input_fn


def _linear_or_combined(kind, model_dir, config, warm_start_from, learning_rate):
    columns = [tf.feature_column.numeric_column("x", shape=[3]),
               tf.feature_column.categorical_column_with_vocabulary_list("c", ["a", "b", "c"])]
    ftrl = lambda: tf.train.FtrlOptimizer(learning_rate)   # noqa: E731
    if kind == "linear":
        return tf.estimator.LinearClassifier(columns, model_dir=model_dir, config=config, optimizer=ftrl,
                                             warm_start_from=warm_start_from)
    return tf.estimator.DNNLinearCombinedClassifier(
        linear_feature_columns=columns, linear_optimizer=ftrl,
        dnn_feature_columns=[columns[0], tf.feature_column.embedding_column(columns[1], 2)], dnn_hidden_units=[3],
        dnn_optimizer=lambda: tf.train.AdagradOptimizer(learning_rate), model_dir=model_dir, config=config,
        warm_start_from=warm_start_from)


@pytest.mark.parametrize("kind", ["linear", "combined"])
def test_train_and_evaluate_with_train_and_eval_distribute(kind):
    """train_and_evaluate (local) of a LinearClassifier / DNNLinearCombinedClassifier with a
    categorical column (sparse gradients; the combined one steps the global step once per step,
    not once per replica) under MirroredStrategy equals it without a strategy on twice the batch."""
    init_dir = tempfile.mkdtemp()
    _linear_or_combined(kind, init_dir, None, None, 0.0).train(_categorical_input_fn(8, True), steps=1)

    def run(strategy, batch_size):
        config = tf.estimator.RunConfig(train_distribute=strategy, eval_distribute=strategy, save_summary_steps=None,
                                        log_step_count_steps=None, save_checkpoints_steps=2)
        est = _linear_or_combined(kind, tempfile.mkdtemp(), config, init_dir, 0.3)
        metrics, _ = tf.estimator.train_and_evaluate(
            est, tf.estimator.TrainSpec(_categorical_input_fn(batch_size, True), max_steps=4),
            tf.estimator.EvalSpec(_categorical_input_fn(4, False), steps=None, throttle_secs=0))
        return {n: est.get_variable_value(n) for n in est.get_variable_names()}, metrics
    plain_weights, plain_metrics = run(None, 8)
    weights, metrics = run(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]), 4)
    assert sorted(weights) == sorted(plain_weights)
    for name in plain_weights:
        np.testing.assert_allclose(weights[name], plain_weights[name], rtol=1e-5, atol=1e-6)
    assert metrics["global_step"] == plain_metrics["global_step"] == 4
    for name in plain_metrics:
        np.testing.assert_allclose(metrics[name], plain_metrics[name], rtol=1e-5, atol=1e-6)


def test_keras_model_to_estimator_under_train_and_eval_distribute():
    """model_to_estimator's model_fn in each replica: the Keras optimizer sums the replicas'
    gradients of their mean losses scaled by 1/N; the metrics read every replica's state."""
    def run(strategy, batch_size):
        tf.keras.backend.clear_session()
        inputs = tf.keras.Input((3,), name="x")
        hidden = tf.keras.layers.Dense(4, activation="tanh", kernel_initializer="ones")(inputs)
        model = tf.keras.Model(inputs, tf.keras.layers.Dense(1, kernel_initializer="ones", name="out")(hidden))
        model.compile(tf.keras.optimizers.SGD(0.05, momentum=0.5), "mse", metrics=["mae"])
        config = tf.estimator.RunConfig(train_distribute=strategy, eval_distribute=strategy, save_summary_steps=None,
                                        log_step_count_steps=None)
        est = tf.keras.estimator.model_to_estimator(model, config=config, model_dir=tempfile.mkdtemp())
        est.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": cases.X}, cases.Y)).repeat().batch(batch_size),
                  steps=4)
        metrics = est.evaluate(lambda: tf.data.Dataset.from_tensor_slices(({"x": cases.X}, cases.Y)).batch(4))
        return {n: est.get_variable_value(n) for n in est.get_variable_names()}, metrics
    plain_weights, plain_metrics = run(None, 8)
    weights, metrics = run(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]), 4)
    assert sorted(weights) == sorted(plain_weights)
    for name in plain_weights:
        np.testing.assert_allclose(weights[name], plain_weights[name], rtol=1e-5, atol=1e-6)
    assert sorted(metrics) == ["global_step", "loss", "mean_absolute_error"]
    for name in plain_metrics:
        np.testing.assert_allclose(metrics[name], plain_metrics[name], rtol=1e-5, atol=1e-6)


def test_keras_sample_and_class_weights_and_on_batch_methods_over_uneven_shares():
    """Three replicas, batches of 8, 6, 5, 7 rows (uneven shares), sample and class weights, a
    validation split, AUC: the same numbers as without a strategy."""
    weights = np.linspace(0.5, 2.0, 16).astype(np.float32)
    labels = cases.LABELS.astype(np.float32)

    def run(strategy):
        tf.keras.backend.clear_session()
        with strategy.scope() if strategy else contextlib.nullcontext():
            model = tf.keras.Sequential([
                tf.keras.layers.Dense(3, activation="tanh", input_shape=(3,), kernel_initializer="ones"),
                tf.keras.layers.Dense(1, activation="sigmoid", kernel_initializer="ones")])
            model.compile(tf.keras.optimizers.Adam(0.05), "binary_crossentropy",
                          metrics=["accuracy", tf.keras.metrics.AUC()])
        history = model.fit(cases.X, labels, batch_size=8, epochs=2, verbose=0, shuffle=False,
                            sample_weight=weights, validation_split=0.25).history
        out = [history[k] for k in sorted(history)]
        history = model.fit(cases.X, labels, batch_size=6, verbose=0, shuffle=False,
                            class_weight={0: 2.0, 1: 0.5}).history
        out += [history[k] for k in sorted(history)]
        out += [model.train_on_batch(cases.X[:5], labels[:5], sample_weight=weights[:5]),
                model.test_on_batch(cases.X[5:12], labels[5:12]), model.predict_on_batch(cases.X[:3]),
                model.evaluate(cases.X, labels, batch_size=5, verbose=0, sample_weight=weights)]
        return out + model.get_weights()
    plain = run(None)
    got = run(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1", "/cpu:2"]))
    assert len(got) == len(plain)
    for g, w in zip(got, plain):
        np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(w, np.float32), rtol=2e-5, atol=2e-6)


class _Linear(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(1, kernel_initializer="ones")

    def call(self, inputs, training=None, mask=None):
        return self.dense(inputs)


def test_keras_subclassed_model_compiled_in_the_scope_builds_mirrored_weights_on_its_first_data():
    def run(strategy):
        tf.keras.backend.clear_session()
        with strategy.scope() if strategy else contextlib.nullcontext():
            model = _Linear()
            model.compile(tf.keras.optimizers.SGD(0.1), "mse")
        history = model.fit(cases.X, cases.Y, batch_size=8, epochs=2, verbose=0, shuffle=False).history
        return model, history["loss"] + model.get_weights()
    _, plain = run(None)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    model, got = run(strategy)
    for g, w in zip(got, plain):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)
    copies = tf.keras.backend.get_session().run(list(strategy.experimental_local_results(model.weights[0])))
    assert len(copies) == 2
    np.testing.assert_array_equal(copies[0], copies[1])
