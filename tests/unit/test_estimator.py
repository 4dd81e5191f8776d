"""tf.estimator.Estimator with a linear model_fn (estimator_cases.py): each training step's loss,
the checkpoints, variables, evaluate() and predict() results, warm starts and local
train_and_evaluate equal what TensorFlow 2.15's tf.compat.v1.estimator recorded
(fixtures/tf_estimator.json, fixtures/record_tf_estimator.py); TF's errors for bad model_fns,
input_fns, EstimatorSpecs and specs; the eval summaries TensorBoard reads."""
from __future__ import annotations

import glob
import json
import os
import shutil

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import tensorweave as tf
import estimator_cases as cases
from tensorweave.estimator.early_stopping import read_eval_metrics
from tensorweave.ops.checkpoint.reader import TENSORFLOW, checkpoint_format
from fixtures.recorded import error

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_estimator.json")) as f:
    RECORDINGS = json.load(f)
RECORDED = RECORDINGS["estimator"]
NUMPY_RECORDED = RECORDINGS["numpy_input_fn"]


def close(got, want) -> None:
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=2e-6, atol=1e-7)


def assert_metrics(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    assert int(got["global_step"]) == want["global_step"]
    for k in want:
        close(got[k], want[k])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The recorded scenario: train 7 steps, 3 more, then max_steps=5 (already reached)."""
    model_dir = str(tmp_path_factory.mktemp("estimator") / "model")
    losses = []
    config = tf.estimator.RunConfig(save_checkpoints_steps=5, save_summary_steps=2, log_step_count_steps=5,
                                    keep_checkpoint_max=10)
    est = tf.estimator.Estimator(cases.linear_model_fn(tf, losses), model_dir=model_dir, config=config,
                                 params={"learning_rate": 0.1})
    out = {"est": est, "model_dir": model_dir, "losses": losses}
    assert est.train(cases.train_input_fn(tf), steps=7) is est
    out["losses_7"] = list(losses)
    out["variable_names"] = est.get_variable_names()
    out["w_7"], out["b_7"] = est.get_variable_value("w"), est.get_variable_value("b")
    out["checkpoints_7"] = [os.path.basename(p) for p in
                            tf.train.get_checkpoint_state(model_dir).all_model_checkpoint_paths]
    est.train(cases.train_input_fn(tf), steps=3)
    out["latest_10"] = os.path.basename(est.latest_checkpoint())
    est.train(cases.train_input_fn(tf), max_steps=5)
    out["after_max_steps_5"] = int(est.get_variable_value("global_step"))
    out["losses_after_max_steps_5"] = len(losses)
    return out


def test_training_losses_variables_and_checkpoints_match_tensorflow(trained):
    close(trained["losses_7"], RECORDED["losses_7"])
    close(trained["losses"], RECORDED["losses_10"])
    assert trained["variable_names"] == RECORDED["variable_names"]
    close(trained["w_7"], RECORDED["w_7"])
    close(trained["b_7"], RECORDED["b_7"])
    assert trained["checkpoints_7"] == RECORDED["checkpoints_7"]
    assert trained["latest_10"] == RECORDED["latest_10"]


def test_max_steps_already_reached_returns_at_once(trained):
    assert trained["after_max_steps_5"] == RECORDED["after_max_steps_5"] == 10
    assert trained["losses_after_max_steps_5"] == RECORDED["losses_after_max_steps_5"]


def test_training_summaries_hold_loss_and_steps_per_second(trained):
    acc = EventAccumulator(trained["model_dir"], size_guidance={"scalars": 0})
    acc.Reload()
    tags = acc.Tags()["scalars"]
    assert "loss" in tags and "global_step/sec" in tags
    loss_events = acc.Scalars("loss")
    # save_summary_steps=2: the loss of steps 1, 3, 5, 7 (first run), then 8 and 10 (second run)
    by_step = {e.step: e.value for e in loss_events}
    for step in (1, 3, 5, 7):
        close(by_step[step], RECORDED["losses_10"][step - 1])


def test_evaluate_matches_tensorflow_and_writes_the_eval_summary(trained):
    est = trained["est"]
    assert_metrics(est.evaluate(cases.eval_input_fn(tf)), RECORDED["evaluate"])
    assert_metrics(est.evaluate(cases.eval_input_fn(tf), steps=2, name="two"), RECORDED["evaluate_2_steps"])
    first = os.path.join(trained["model_dir"], "model.ckpt-5")
    assert_metrics(est.evaluate(cases.eval_input_fn(tf), checkpoint_path=first), RECORDED["evaluate_ckpt_5"])
    for sub, want in (("eval", RECORDED["evaluate_ckpt_5"]), ("eval_two", RECORDED["evaluate_2_steps"])):
        acc = EventAccumulator(os.path.join(trained["model_dir"], sub), size_guidance={"scalars": 0, "tensors": 0})
        acc.Reload()
        assert {"loss", "mae", "rmse"} <= set(acc.Tags()["scalars"])
        last = acc.Scalars("mae")[-1]
        assert last.step == want["global_step"]
        close(last.value, want["mae"])
        path = acc.Tensors("checkpoint_path")[-1].tensor_proto.string_val[0].decode()
        assert os.path.basename(path) == f"model.ckpt-{want['global_step']}"
    assert est.eval_dir("two") == os.path.join(trained["model_dir"], "eval_two")


def test_predict_matches_tensorflow(trained):
    est = trained["est"]
    got = [{k: v.tolist() for k, v in sorted(p.items())} for p in est.predict(cases.predict_input_fn(tf))]
    assert len(got) == len(RECORDED["predict"]) == 16
    for g, w in zip(got, RECORDED["predict"]):
        assert sorted(g) == sorted(w)
        for k in w:
            close(g[k], w[k])
    keys = [sorted(p) for p in est.predict(cases.predict_input_fn(tf), predict_keys=["y"])]
    assert keys[:1] == RECORDED["predict_keys"] and len(keys) == 16
    batches = [{k: list(v.shape) for k, v in sorted(p.items())}
               for p in est.predict(cases.predict_input_fn(tf), yield_single_examples=False)]
    assert batches == RECORDED["predict_batches"]


def test_warm_start_from_a_directory_and_from_settings(trained, tmp_path):
    warm = tf.estimator.Estimator(cases.linear_model_fn(tf), model_dir=str(tmp_path / "warm"),
                                  params={"learning_rate": 0.1}, warm_start_from=trained["model_dir"])
    assert_metrics(warm.evaluate(cases.eval_input_fn(tf)), RECORDED["warm_evaluate"])
    warm_w = tf.estimator.Estimator(
        cases.linear_model_fn(tf), model_dir=str(tmp_path / "warm_w"), params={"learning_rate": 0.1},
        warm_start_from=tf.estimator.WarmStartSettings(trained["model_dir"], vars_to_warm_start="w"))
    warm_w.train(cases.train_input_fn(tf), steps=1)
    close(warm_w.get_variable_value("b"), RECORDED["warm_w_b"])
    assert int(warm_w.get_variable_value("global_step")) == RECORDED["warm_w_gs"]


def test_input_fn_of_tensors_taking_params_and_mode(tmp_path):
    losses = []
    est = tf.estimator.Estimator(cases.linear_model_fn(tf, losses), model_dir=str(tmp_path),
                                 params={"learning_rate": 0.1})
    est.train(cases.tensor_input_fn(tf), max_steps=3)
    close(losses, RECORDED["tensor_input_losses"])


def test_model_fn_with_a_subset_of_arguments_and_a_temporary_model_dir(caplog):
    seen = {}

    def model_fn(features, mode, config):
        seen["mode"], seen["config"] = mode, config
        v = tf.get_variable("v", initializer=tf.constant(2.0))
        return tf.estimator.EstimatorSpec(mode, predictions=features * v)

    with caplog.at_level("WARNING", logger="tensorweave"):
        est = tf.estimator.Estimator(model_fn)
    assert os.path.isdir(est.model_dir)
    assert "Using temporary folder as model directory: " + est.model_dir in caplog.text
    got = list(est.predict(lambda: tf.data.Dataset.from_tensor_slices(np.array([1.0, 3.0], np.float32)).batch(2)))
    assert [float(g) for g in got] == [2.0, 6.0]
    assert seen["mode"] == tf.estimator.ModeKeys.PREDICT == "infer"
    assert isinstance(seen["config"], tf.estimator.RunConfig) and seen["config"].model_dir == est.model_dir


def test_train_and_evaluate_locally_matches_tensorflow(tmp_path):
    est = tf.estimator.Estimator(cases.linear_model_fn(tf), model_dir=str(tmp_path),
                                 config=tf.estimator.RunConfig(save_checkpoints_steps=4),
                                 params={"learning_rate": 0.1})
    metrics, exports = tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(cases.train_input_fn(tf), max_steps=10),
        tf.estimator.EvalSpec(cases.eval_input_fn(tf), steps=None, throttle_secs=0))
    assert_metrics(metrics, RECORDED["train_and_evaluate"])
    assert exports == RECORDED["train_and_evaluate_exports"]
    acc = EventAccumulator(os.path.join(str(tmp_path), "eval"), size_guidance={"scalars": 0})
    acc.Reload()
    assert sorted(e.step for e in acc.Scalars("mae")) == RECORDED["train_and_evaluate_eval_steps"]


def test_saving_listeners_are_called_and_can_stop_training(tmp_path):
    class StopAtSecondSave(tf.train.CheckpointSaverListener):
        def __init__(self):
            self.calls = []

        def after_save(self, session, global_step_value):
            self.calls.append(global_step_value)
            return len(self.calls) == 2

    listener = StopAtSecondSave()
    est = tf.estimator.Estimator(cases.linear_model_fn(tf), model_dir=str(tmp_path),
                                 config=tf.estimator.RunConfig(save_checkpoints_steps=3),
                                 params={"learning_rate": 0.1})
    est.train(cases.train_input_fn(tf), max_steps=100, saving_listeners=[listener])
    assert listener.calls == [0, 3]
    assert int(est.get_variable_value("global_step")) == 3
    assert len(glob.glob(os.path.join(str(tmp_path), "model.ckpt-*.index"))) == 2


# -- errors, as TF's ------------------------------------------------------------------------------
def model_fn_no_features(labels, mode):
    pass


def model_fn_extra(features, labels, mode, extra):
    pass


def model_fn_no_params(features, labels):
    pass


def spec_without_loss(features, labels, mode):
    tf.get_variable("v", initializer=1.0)
    return tf.estimator.EstimatorSpec(mode, train_op=tf.no_op())


def spec_without_train_op(features, labels, mode):
    return tf.estimator.EstimatorSpec(mode, loss=tf.constant(1.0))


def not_a_spec(features, labels, mode):
    return {"loss": tf.constant(1.0)}


def model_fn_without_labels(features, mode):
    return tf.estimator.EstimatorSpec(mode, loss=tf.constant(1.0), train_op=tf.no_op())


def vector_loss(features, labels, mode):
    return tf.estimator.EstimatorSpec(mode, loss=tf.constant([1.0, 2.0]), train_op=tf.no_op())


def test_errors_match_tensorflow(trained, tmp_path):
    est = trained["est"]
    tmp = str(tmp_path)

    def train_with(fn, input_fn=cases.train_input_fn(tf), **kwargs):
        return error(lambda: tf.estimator.Estimator(fn, model_dir=os.path.join(tmp, "e")).train(input_fn, **kwargs))

    got = {
        "no_features": error(lambda: tf.estimator.Estimator(model_fn_no_features)),
        "extra_arg": error(lambda: tf.estimator.Estimator(model_fn_extra)),
        "params_not_taken": error(lambda: tf.estimator.Estimator(model_fn_no_params, params={"a": 1})),
        "no_model_fn": error(lambda: tf.estimator.Estimator(None)),
        "bad_config": error(lambda: tf.estimator.Estimator(model_fn_no_params, config={"a": 1})),
        "bad_warm_start": error(lambda: tf.estimator.Estimator(model_fn_no_params, warm_start_from=3)),
        "model_dir_conflict": error(lambda: tf.estimator.Estimator(
            model_fn_no_params, model_dir="/tmp/a", config=tf.estimator.RunConfig(model_dir="/tmp/b"))),
        "warm_start_settings_empty": error(lambda: tf.estimator.WarmStartSettings("")),
        "missing_loss": train_with(spec_without_loss, steps=1),
        "missing_train_op": train_with(spec_without_train_op, steps=1),
        "not_a_spec": train_with(not_a_spec, steps=1),
        "labels_not_taken": train_with(model_fn_without_labels, steps=1),
        "steps_and_max_steps": train_with(spec_without_train_op, steps=1, max_steps=2),
        "steps_zero": train_with(spec_without_train_op, steps=0),
        "max_steps_zero": train_with(spec_without_train_op, max_steps=0),
        "hook_not_hook": train_with(spec_without_train_op, steps=1, hooks=[3]),
        "listener_not_listener": train_with(spec_without_train_op, steps=1, saving_listeners=[3]),
        "input_fn_three_tuple": train_with(
            spec_without_train_op, input_fn=lambda: (tf.constant(1.0), tf.constant(1.0), tf.constant(1.0)), steps=1),
        "no_checkpoint_variable": error(lambda: tf.estimator.Estimator(
            model_fn_no_params, model_dir=os.path.join(tmp, "empty")).get_variable_value("w")),
        "predict_keys_missing": error(lambda: list(est.predict(cases.predict_input_fn(tf), predict_keys=["nope"]))),
        "evaluate_steps_zero": error(lambda: est.evaluate(cases.eval_input_fn(tf), steps=0)),
        "eval_spec_steps_zero": error(lambda: tf.estimator.EvalSpec(cases.eval_input_fn(tf), steps=0)),
        "eval_spec_name": error(lambda: tf.estimator.EvalSpec(cases.eval_input_fn(tf), name=3)),
        "eval_spec_throttle": error(lambda: tf.estimator.EvalSpec(cases.eval_input_fn(tf), throttle_secs=-1)),
        "train_spec_input_fn": error(lambda: tf.estimator.TrainSpec(3)),
        "train_spec_max_steps": error(lambda: tf.estimator.TrainSpec(cases.train_input_fn(tf), max_steps=0)),
        "tae_not_estimator": error(lambda: tf.estimator.train_and_evaluate(
            3, tf.estimator.TrainSpec(cases.train_input_fn(tf)), tf.estimator.EvalSpec(cases.eval_input_fn(tf)))),
        "tae_not_eval_spec": error(lambda: tf.estimator.train_and_evaluate(
            est, tf.estimator.TrainSpec(cases.train_input_fn(tf)), 3)),
    }
    for name, message in got.items():
        assert cases.clean_message(message).replace(tmp, "TMP") == RECORDED["errors"][name], name
    vector = train_with(vector_loss, steps=1)
    assert vector.startswith("ValueError: Loss must be scalar, given: ") and "shape=(2,)" in vector


# -- tf.estimator.inputs.numpy_input_fn -----------------------------------------------------------
def _read_batches(input_fn, limit=None) -> list:
    with tf.Graph().as_default():
        tensors = input_fn()
        batches = []
        with tf.train.MonitoredSession() as session:
            while not session.should_stop() and (limit is None or len(batches) < limit):
                values = session.run(tensors)
                batches.append(json.loads(json.dumps(values, default=lambda v: np.asarray(v).tolist())))
    return batches


@pytest.mark.parametrize("name", sorted(cases.numpy_input_cases(tf)))
def test_numpy_input_fn_batches_match_tensorflow(name):
    input_fn = cases.numpy_input_cases(tf)[name]
    got = _read_batches(input_fn, limit=4 if name.endswith("forever") else None)
    assert got == NUMPY_RECORDED[name]


def test_numpy_input_fn_keeps_dtypes_and_shuffles_within_epochs():
    fn = tf.estimator.inputs.numpy_input_fn(cases.NP_X, cases.NP_Y, batch_size=7, num_epochs=2, shuffle=True)
    with tf.Graph().as_default():
        features, labels = fn()
        assert (features["a"].dtype, features["b"].dtype, labels.dtype) == (tf.int64, tf.float32, tf.float64)
        assert features["b"].shape.as_list() == [None, 2]
    epochs = _read_batches(fn)
    assert len(epochs) == 2
    for f, lab in epochs:
        assert sorted(f["a"]) == list(range(7))
        np.testing.assert_array_equal(lab, np.array(f["a"]) * 10.0)
        np.testing.assert_array_equal(f["b"], cases.NP_X["b"][f["a"]])


def test_numpy_input_fn_errors_match_tensorflow():
    for name, fn in cases.numpy_input_errors(tf).items():
        assert error(fn) == NUMPY_RECORDED["errors"][name], name


def test_estimator_trained_on_numpy_input_fn_matches_tensorflow(tmp_path):
    losses = []
    est = tf.estimator.Estimator(cases.linear_model_fn(tf, losses), model_dir=str(tmp_path),
                                 params={"learning_rate": 0.1})
    est.train(tf.estimator.inputs.numpy_input_fn({"x": cases.X}, cases.Y, batch_size=5, num_epochs=None,
                                                 shuffle=False), steps=6)
    close(losses, NUMPY_RECORDED["estimator_losses"])


# -- tf.estimator.experimental early stopping -----------------------------------------------------
def test_early_stopping_hooks_read_the_eval_metrics(tmp_path):
    est = tf.estimator.Estimator(cases.linear_model_fn(tf), model_dir=str(tmp_path / "m"),
                                 config=tf.estimator.RunConfig(save_checkpoints_steps=5, keep_checkpoint_max=10),
                                 params={"learning_rate": 0.1})
    never = tf.estimator.experimental.stop_if_lower_hook(est, "loss", -1.0, run_every_secs=None, run_every_steps=1)
    est.train(cases.train_input_fn(tf), steps=10, hooks=[never])   # its STOP variable goes into the checkpoints
    for step in (5, 10):   # eval loss: 0.295 at step 5, 0.084 at step 10 (TF's, as recorded)
        est.evaluate(cases.eval_input_fn(tf), checkpoint_path=os.path.join(est.model_dir, f"model.ckpt-{step}"))
    metrics = read_eval_metrics(est.eval_dir())
    assert list(metrics) == [5, 10]
    close(metrics[5]["loss"], RECORDED["evaluate_ckpt_5"]["loss"])
    close(metrics[10]["loss"], RECORDED["train_and_evaluate"]["loss"])

    def train_with(hook, steps=4) -> int:
        before = int(est.get_variable_value("global_step"))
        est.train(cases.train_input_fn(tf), steps=steps, hooks=[hook])
        return int(est.get_variable_value("global_step")) - before

    experimental = tf.estimator.experimental
    assert train_with(experimental.stop_if_lower_hook(est, "loss", 0.1, run_every_secs=None, run_every_steps=1)) == 1
    assert train_with(experimental.stop_if_lower_hook(est, "loss", 0.01, run_every_secs=None, run_every_steps=1)) == 4
    assert train_with(experimental.stop_if_higher_hook(est, "mae", 0.4, run_every_secs=None, run_every_steps=1)) == 1
    assert train_with(experimental.stop_if_higher_hook(est, "mae", 0.4, min_steps=6, run_every_secs=None,
                                                       run_every_steps=1)) == 4
    assert train_with(experimental.stop_if_no_increase_hook(est, "loss", 5, run_every_secs=None,
                                                            run_every_steps=1)) == 1
    assert train_with(experimental.stop_if_no_decrease_hook(est, "loss", 5, run_every_secs=None,
                                                            run_every_steps=1)) == 4
    with pytest.raises(ValueError, match="Only one of `run_every_secs` and `run_every_steps` must be set."):
        experimental.stop_if_lower_hook(est, "loss", 0.1, run_every_secs=1, run_every_steps=1)
    with pytest.raises(TypeError, match="`estimator` must have type `tf.estimator.Estimator`"):
        experimental.make_early_stopping_hook(3, lambda: True)


def test_add_metrics_adds_to_the_evaluation(trained):
    def metric_fn(labels, predictions):
        return {"mse": tf.metrics.mean_squared_error(labels, predictions["y"])}

    extended = tf.estimator.add_metrics(trained["est"], metric_fn)
    assert extended.model_dir == trained["model_dir"]
    got = extended.evaluate(cases.eval_input_fn(tf), name="extended")
    assert_metrics({k: v for k, v in got.items() if k != "mse"}, RECORDED["evaluate"])
    close(got["mse"], RECORDED["evaluate"]["rmse"] ** 2)
    with pytest.raises(ValueError, match=r"has following not expected args: \['weights'\]"):
        tf.estimator.add_metrics(trained["est"], lambda labels, weights: {})


def test_training_logs_loss_and_steps_per_second_every_log_step_count_steps(tmp_path, caplog):
    seen = {}

    def input_fn(config):
        seen["config"] = config
        return cases.train_input_fn(tf)()

    est = tf.estimator.Estimator(cases.linear_model_fn(tf), model_dir=str(tmp_path),
                                 config=tf.estimator.RunConfig(log_step_count_steps=3),
                                 params={"learning_rate": 0.1})
    with caplog.at_level("INFO", logger="tensorweave"):
        est.train(input_fn, steps=7)
    assert seen["config"].log_step_count_steps == 3
    logged = [r.getMessage() for r in caplog.records]
    steps = [m.split("step = ")[1].split(" ")[0] for m in logged if m.startswith("loss = ")]
    assert steps == ["0", "3", "6"]   # the step read in the run, before its update: TF 2.15 logs the same
    assert sum(m.startswith("global_step/sec: ") for m in logged) == 2
    assert any(m.startswith("Loss for final step: ") for m in logged)


def test_an_input_fn_of_unknown_arguments_fails_naming_them(tmp_path):
    est = tf.estimator.Estimator(cases.linear_model_fn(tf), model_dir=str(tmp_path), params={"learning_rate": 0.1})
    with pytest.raises(TypeError, match="batch_size"):
        est.train(lambda batch_size: cases.train_input_fn(tf)(), steps=1)


def test_a_model_fn_reading_features_through_feature_columns(tmp_path):
    losses = []
    linear = cases.linear_model_fn(tf, losses)
    columns = [tf.feature_column.numeric_column("x", shape=[2])]

    def model_fn(features, labels, mode, params):
        return linear({"x": tf.feature_column.input_layer(features, columns)}, labels, mode, params)

    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path), params={"learning_rate": 0.1})
    est.train(cases.train_input_fn(tf), steps=7)
    close(losses, RECORDED["losses_7"])   # the numeric column hands x through: TF's losses
    close(est.get_variable_value("w"), RECORDED["w_7"])


def test_train_and_evaluate_refuses_a_second_evaluator_and_a_ps_or_evaluator_that_trains(tmp_path, monkeypatch):
    cluster = {"chief": ["localhost:1"], "ps": ["localhost:2"]}
    spec = (tf.estimator.TrainSpec(cases.train_input_fn(tf), max_steps=1),
            tf.estimator.EvalSpec(cases.eval_input_fn(tf)))
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "evaluator", "index": 1}}))
    est = tf.estimator.Estimator(cases.linear_model_fn(tf), model_dir=str(tmp_path), params={"learning_rate": 0.1})
    with pytest.raises(ValueError, match="there can only be one `evaluator` task .* Given task id 1"):
        tf.estimator.train_and_evaluate(est, *spec)
    with pytest.raises(ValueError, match="Train has been called wrong configuration"):
        est.train(cases.train_input_fn(tf), steps=1)
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "ps", "index": 0}}))
    ps = tf.estimator.Estimator(cases.linear_model_fn(tf), model_dir=str(tmp_path), params={"learning_rate": 0.1})
    with pytest.raises(ValueError, match="Train has been called wrong configuration"):
        ps.train(cases.train_input_fn(tf), steps=1)


def test_in_memory_evaluator_hook_evaluates_the_model_being_trained(tmp_path):
    est = tf.estimator.Estimator(cases.linear_model_fn(tf), model_dir=str(tmp_path),
                                 config=tf.estimator.RunConfig(save_checkpoints_steps=None, save_checkpoints_secs=None),
                                 params={"learning_rate": 0.1})
    hook = tf.estimator.experimental.InMemoryEvaluatorHook(est, cases.eval_input_fn(tf), name="in_memory",
                                                           every_n_iter=5)
    est.train(cases.train_input_fn(tf), steps=10, hooks=[hook])
    assert est.latest_checkpoint() is None   # no checkpoint: the values came from the training session
    metrics = read_eval_metrics(est.eval_dir("in_memory"))
    assert list(metrics) == [0, 5, 10]
    close(metrics[5]["loss"], RECORDED["evaluate_ckpt_5"]["loss"])
    close(metrics[5]["mae"], RECORDED["evaluate_ckpt_5"]["mae"])
    close(metrics[10]["loss"], RECORDED["train_and_evaluate"]["loss"])
    with pytest.raises(ValueError, match="invalid every_n_iter=0."):
        tf.estimator.experimental.InMemoryEvaluatorHook(est, cases.eval_input_fn(tf), every_n_iter=0)


def test_stop_at_checkpoint_step_hook_is_a_stop_at_step_hook_on_the_chief(tmp_path):
    est = tf.estimator.Estimator(cases.linear_model_fn(tf), model_dir=str(tmp_path), params={"learning_rate": 0.1})
    hook = tf.estimator.experimental.make_stop_at_checkpoint_step_hook(est, 4)
    assert isinstance(hook, tf.train.StopAtStepHook)
    est.train(cases.train_input_fn(tf), hooks=[hook])
    assert int(est.get_variable_value("global_step")) == 4
    # a worker's hook: stops once the chief's checkpoint in model_dir (step 4 here) has reached last_step
    os.environ["TF_CONFIG"] = json.dumps({"cluster": {"chief": ["localhost:1"], "worker": ["localhost:2"]},
                                          "task": {"type": "worker", "index": 0}})
    try:
        worker = tf.estimator.Estimator(cases.linear_model_fn(tf), model_dir=str(tmp_path),
                                        params={"learning_rate": 0.1})
    finally:
        del os.environ["TF_CONFIG"]
    for last_step, runs in ((4, (3, 4)), (6, (8,))):
        hook = tf.estimator.experimental.make_stop_at_checkpoint_step_hook(worker, last_step,
                                                                         wait_after_file_check_secs=0)
        with tf.Graph().as_default():
            step = tf.train.create_global_step()
            increment = tf.assign_add(step, 1)
            count = 0
            with tf.train.MonitoredSession(hooks=[hook]) as session:
                while not session.should_stop() and count < 8:
                    session.run(increment)
                    count += 1
        # the step read is not ordered with the run's increment (as in TF): it stops after run 3 or 4;
        # with last_step 6 the checkpoint never reaches it, and the worker runs on
        assert count in runs


def test_the_loss_is_logged_as_tensorflow_prints_it(tmp_path, caplog):
    est = tf.estimator.Estimator(cases.linear_model_fn(tf), model_dir=str(tmp_path),
                                 config=tf.estimator.RunConfig(log_step_count_steps=3),
                                 params={"learning_rate": 0.1})
    with caplog.at_level("INFO", logger="tensorweave"):
        est.train(cases.train_input_fn(tf), steps=4)
    logged = [r.getMessage() for r in caplog.records]
    # TF 2.15 logs "loss = 4.2130604, step = 0" (a float32's str) for this model's first step
    assert "loss = 4.2130604, step = 0" in logged


def test_call_logit_fn_passes_what_the_logit_fn_takes():
    with tf.Graph().as_default():
        x = tf.constant([[1.0, 2.0]])
        got = tf.estimator.experimental.call_logit_fn(lambda features, params: features * params["k"], x,
                                                      tf.estimator.ModeKeys.TRAIN, {"k": 3.0}, None)
        with tf.Session() as s:
            np.testing.assert_array_equal(s.run(got), [[3.0, 6.0]])
        with pytest.raises(ValueError, match="logit_fn should return a Tensor or a dictionary mapping strings"):
            tf.estimator.experimental.call_logit_fn(lambda features: [features], x, "train", None, None)


def test_a_model_dir_tensorflow_trained_is_evaluated_and_trained_on(tmp_path):
    """fixtures/tf_estimator_model/: TF 2.15's Estimator's checkpoint after 5 steps (TF's V2 format)."""
    model_dir = str(tmp_path / "model")
    shutil.copytree(os.path.join(os.path.dirname(__file__), "fixtures", "tf_estimator_model"), model_dir)
    losses = []
    est = tf.estimator.Estimator(cases.linear_model_fn(tf, losses), model_dir=model_dir,
                                 params={"learning_rate": 0.1})
    assert est.get_variable_names() == RECORDED["variable_names"]
    assert_metrics(est.evaluate(cases.eval_input_fn(tf)), RECORDED["evaluate_ckpt_5"])
    est.train(cases.train_input_fn(tf), steps=5)
    close(losses, RECORDINGS["continued_from_tf_checkpoint"])
    assert os.path.basename(est.latest_checkpoint()) == "model.ckpt-10"


def test_a_model_dir_written_in_tensorflows_format_is_what_tensorflow_trained_on(tmp_path, monkeypatch):
    """With TENSORWEAVE_CHECKPOINT_FORMAT=tensorflow the Estimator's checkpoints are TF's V2 files;
    TF 2.15's Estimator went on training from such a model_dir exactly as from its own
    (fixtures/record_tf_estimator.py), and so does ours."""
    monkeypatch.setenv("TENSORWEAVE_CHECKPOINT_FORMAT", "tensorflow")
    losses = []
    est = tf.estimator.Estimator(cases.linear_model_fn(tf, losses), model_dir=str(tmp_path),
                                 params={"learning_rate": 0.1})
    est.train(cases.train_input_fn(tf), steps=5)
    assert checkpoint_format(est.latest_checkpoint(), "test") == TENSORFLOW
    del losses[:]
    est.train(cases.train_input_fn(tf), steps=5)
    assert RECORDINGS["tf_continued_from_ours"] == RECORDINGS["continued_from_tf_checkpoint"]
    close(losses, RECORDINGS["tf_continued_from_ours"])
