"""Premade Estimators (tf.estimator.DNNClassifier, ..., BaselineRegressor) against TensorFlow
2.15's tf.compat.v1.estimator (fixtures/record_tf_premade.py): from the same initial weights
(TF's checkpoint, warm-started) and the same data, ours trains the same steps and then evaluates
and predicts what TF did; TF's trained checkpoint restored into ours evaluates and predicts the
same; the iris premade-estimator tutorial's DNNClassifier as written."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

import tensorweave as tf
import premade_cases as cases
from fixtures.recorded import decode

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
RECORDED = json.load(open(os.path.join(FIXTURES, "tf_premade.json")))["cases"]
# RMSProp divides by sqrt of a mean square a few steps old: float32 rounding grows over the steps
RTOL = {"dnn_regressor": 1e-3}
SLOT = ("/Adagrad", "/Adam", "/Ftrl", "/RMSProp", "beta1_power", "beta2_power")


def _model_variables(names) -> list:
    """The model's variables (optimizer slots are named differently by TF 2.15's v1 optimizers)."""
    return sorted(n for n in names if not any(s in n for s in SLOT))


def _estimator(name, model_dir, **extra):
    cls_name, _, kwargs = cases.CASES[name]
    return getattr(tf.estimator, cls_name)(model_dir=str(model_dir), **kwargs(tf), **extra)


def _assert_metrics(got: dict, recorded: dict, rtol: float = 1e-5) -> None:
    assert sorted(got) == sorted(recorded)
    for key, want in recorded.items():
        np.testing.assert_allclose(float(got[key]), want, rtol=rtol, atol=rtol, err_msg=key)


def _assert_predictions(est, recorded: dict, rtol: float = 1e-5) -> None:
    predictions = list(est.predict(cases.predict_input_fn(tf)))
    assert len(predictions) == cases.N_EXAMPLES
    assert sorted(predictions[0]) == sorted(recorded)
    for key, want in recorded.items():
        want = decode(want)
        got = np.stack([p[key] for p in predictions])
        assert got.shape == want.shape, key
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, err_msg=key)
        else:
            assert got.tolist() == want.tolist(), key


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_trains_evaluates_and_predicts_as_tf(name, tmp_path):
    """TF's initial weights (warm start), TRAIN_STEPS steps of the same batches: TF's metrics,
    predictions and variable names."""
    extra = {}
    if not cases.CASES[name][0].startswith("Baseline"):
        extra["warm_start_from"] = os.path.join(FIXTURES, "tf_premade", name, "init", "model.ckpt")
    est = _estimator(name, tmp_path / "model", **extra)
    est.train(cases.input_fn(tf, name, True), steps=cases.TRAIN_STEPS)
    recorded = RECORDED[name]
    assert _model_variables(est.get_variable_names()) == _model_variables(recorded["variables"])
    for var in _model_variables(recorded["variables"]):
        assert list(est.get_variable_value(var).shape) == recorded["variables"][var], var
    rtol = RTOL.get(name, 1e-4)
    _assert_metrics(est.evaluate(cases.input_fn(tf, name, False)), recorded["metrics"], rtol)
    _assert_predictions(est, recorded["predictions"], rtol)


@pytest.mark.parametrize("name", cases.TRAINED_CHECKPOINTS)
def test_restores_tf_trained_checkpoint(name, tmp_path):
    """A checkpoint TF's premade Estimator wrote, as ours's model_dir: the same evaluation and
    predictions (its variables are named as ours)."""
    model_dir = tmp_path / "model"
    shutil.copytree(os.path.join(FIXTURES, "tf_premade", name, "trained"), model_dir)
    with open(model_dir / "checkpoint", "w") as f:
        f.write('model_checkpoint_path: "model.ckpt"\n')
    est = _estimator(name, model_dir)
    _assert_metrics(est.evaluate(cases.input_fn(tf, name, False)), RECORDED[name]["metrics"])
    _assert_predictions(est, RECORDED[name]["predictions"])
