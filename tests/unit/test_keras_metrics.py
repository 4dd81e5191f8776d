"""tf.keras.metrics against TF 2.15's graph-mode Keras (fixtures/record_tf_keras.py): each
metric function by name, each stateful Metric over three update batches (the second weighted),
its result, reset, variable names and config; get/serialize/deserialize."""
import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.keras_cases import METRIC_CLASSES, METRIC_FUNCTIONS, SAMPLE_WEIGHT, build_metric_class, data

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_keras.json")) as f:
    RECORDED = json.load(f)


def _placeholder(a):
    return tf.placeholder(tf.as_dtype(a.dtype), a.shape)


@pytest.mark.parametrize("name,kwargs,kind", METRIC_FUNCTIONS, ids=[n for n, _, _ in METRIC_FUNCTIONS])
def test_metric_function_by_name_matches_tf(name, kwargs, kind):
    with tf.Graph().as_default(), tf.Session() as s:
        got = s.run(tf.keras.metrics.get(name)(*map(tf.constant, data(kind)), **kwargs))
    np.testing.assert_allclose(got, RECORDED["metric_functions"][name], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", range(len(METRIC_CLASSES)), ids=[f"{c}{k}" for c, k, _ in METRIC_CLASSES])
def test_metric_over_batches_matches_tf(case):
    class_name, kwargs, kind = METRIC_CLASSES[case]
    recorded = RECORDED["metric_classes"][case]
    with tf.Graph().as_default():
        metric, steps = build_metric_class(tf.keras, class_name, kwargs, kind, _placeholder)
        assert metric.name == recorded["name"]
        assert [v.name for v in metric.variables] == recorded["variables"]
        assert tf.global_variables() == [] and tf.local_variables() == []
        with tf.Session() as s:
            s.run(tf.variables_initializer(metric.variables))
            calls = [s.run(t, f) for t, f in steps]
            result = s.run(metric.result())
            metric.reset_states()          # runs in the default session, as Keras runs it in its own
            reset = s.run(metric.result())
    for got, want in zip(calls + [result, reset], recorded["calls"] + [recorded["result"], recorded["reset"]]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    config = metric.get_config()
    for key, value in config.items():   # TF 2.15 adds keys TF 1.15 did not have (from_logits, ...)
        assert recorded["config"]["config"][key] == value, key
    again = tf.keras.metrics.deserialize(tf.keras.metrics.serialize(metric))
    assert type(again) is type(metric) and again.get_config() == config


def test_precision_recall_of_one_class_and_of_the_top_k():
    y_true = np.array([[0, 1, 1], [1, 0, 1]], np.float32)
    y_pred = np.array([[0.9, 0.8, 0.1], [0.2, 0.7, 0.6]], np.float32)
    with tf.Graph().as_default():
        by_class = tf.keras.metrics.Recall(class_id=2)
        top_1 = tf.keras.metrics.Precision(top_k=1)
        ops = [by_class(y_true, y_pred), top_1(y_true, y_pred)]
        with tf.Session() as s:
            s.run(tf.variables_initializer(by_class.variables + top_1.variables))
            recall_2, precision_1 = s.run(ops)
    assert recall_2 == pytest.approx(0.5)       # class 2: labels 1, 1; predicted 0.1, 0.6
    assert precision_1 == pytest.approx(0.0)    # the top scores (0.9, 0.7) are both wrong


def test_call_orders_the_result_after_the_update():
    with tf.Graph().as_default():
        mean = tf.keras.metrics.Mean()
        x = tf.placeholder(tf.float32, [None])
        value = mean(x, sample_weight=[1.0, 3.0])
        with tf.Session() as s:
            s.run(tf.variables_initializer(mean.variables))
            assert s.run(value, {x: [1.0, 5.0]}) == pytest.approx(4.0)
            assert s.run(value, {x: [0.0, 0.0]}) == pytest.approx(2.0)


def test_get_by_name_class_and_config():
    metrics = tf.keras.metrics
    assert metrics.get("acc") is metrics.accuracy
    assert metrics.get("mse") is tf.keras.losses.mean_squared_error
    assert metrics.get(metrics.binary_accuracy) is metrics.binary_accuracy
    with tf.Graph().as_default():
        auc = metrics.get({"class_name": "AUC", "config": {"num_thresholds": 10, "curve": "PR", "name": "pr"}})
        assert isinstance(auc, metrics.AUC) and auc.name == "pr" and auc.curve == "PR"
        assert isinstance(metrics.get("Mean"), metrics.Mean)


def test_bad_input_raises_value_errors_naming_it():
    with pytest.raises(ValueError, match="Unknown metric function: no_such_thing"):
        tf.keras.metrics.get("no_such_thing")
    assert RECORDED["errors"]["metrics"].startswith("Unknown metric function")
    with pytest.raises(ValueError, match="Could not interpret metric function identifier"):
        tf.keras.metrics.get(3)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Invalid AUC curve value \"XY\""):
            tf.keras.metrics.AUC(curve="XY")
        with pytest.raises(ValueError, match=r"Threshold values must be in \[0, 1\]"):
            tf.keras.metrics.Precision(thresholds=[1.5])
        with pytest.raises(ValueError, match="MeanTensor does not have any result yet"):
            tf.keras.metrics.MeanTensor().result()
        mean_tensor = tf.keras.metrics.MeanTensor()
        mean_tensor.update_state(np.ones([2, 3], np.float32))
        with pytest.raises(ValueError, match="must always have the same shape"):
            mean_tensor.update_state(np.ones([3, 3], np.float32))


def test_scores_outside_0_1_fail_when_the_update_runs():
    with tf.Graph().as_default():
        auc = tf.keras.metrics.AUC(num_thresholds=5)
        update = auc.update_state(np.ones([2], np.float32), np.array([0.5, 1.5], np.float32))
        with tf.Session() as s:
            s.run(tf.variables_initializer(auc.variables))
            with pytest.raises(tf.errors.InvalidArgumentError, match="predictions must be in"):
                s.run(update)


def _counts_at(y_true, y_pred, thresholds):
    pos = y_pred.reshape(1, -1) > np.array(thresholds)[:, None]
    lab = y_true.reshape(1, -1).astype(bool)
    return [(a & b).sum(1).astype(np.float64) for a, b in ((lab, pos), (~lab, ~pos), (~lab, pos), (lab, ~pos))]


@pytest.mark.parametrize("which,target", [("SensitivityAtSpecificity", 0.6), ("SpecificityAtSensitivity", 0.3)])
def test_sensitivity_specificity_at_the_closest_threshold(which, target):
    batches = [data("binary", b) for b in range(2)]
    with tf.Graph().as_default():
        metric = getattr(tf.keras.metrics, which)(target, num_thresholds=7)
        assert [v.name for v in metric.variables] == ["true_positives:0", "true_negatives:0", "false_positives:0",
                                                      "false_negatives:0"]
        updates = [metric.update_state(*b) for b in batches]
        with tf.Session() as s:
            s.run(tf.variables_initializer(metric.variables))
            s.run(updates)
            got = s.run(metric.result())
    thresholds = [0.0] + [(i + 1) / 6 for i in range(5)] + [1.0]
    tp, tn, fp, fn = (a + b for a, b in zip(*[_counts_at(*b, thresholds) for b in batches]))
    if which == "SensitivityAtSpecificity":
        i = np.argmin(np.abs(tn / (tn + fp) - target))
        want = tp[i] / (tp[i] + fn[i])
    else:
        i = np.argmin(np.abs(tp / (tp + fn) - target))
        want = tn[i] / (tn[i] + fp[i])
    assert got == pytest.approx(want, rel=1e-6)


def test_mean_relative_error():
    y_true, y_pred = data("reg")
    normalizer = np.array([1.0, 0.0, 2.0], np.float32)
    with tf.Graph().as_default():
        metric = tf.keras.metrics.MeanRelativeError(normalizer=normalizer)
        value = metric(y_true, y_pred)
        with tf.Session() as s:
            s.run(tf.variables_initializer(metric.variables))
            got = s.run(value)
    relative = np.where(normalizer == 0, 0.0, np.abs(y_true - y_pred) / np.where(normalizer == 0, 1, normalizer))
    assert metric.name == "mean_relative_error" and got == pytest.approx(relative.mean(), rel=1e-6)


def test_per_sample_weights_of_deeper_values_weight_each_sample_mean():
    values = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    with tf.Graph().as_default():
        mean, total = tf.keras.metrics.Mean(), tf.keras.metrics.Sum()
        ops = [mean(values, sample_weight=SAMPLE_WEIGHT), total(values, sample_weight=SAMPLE_WEIGHT)]
        with tf.Session() as s:
            s.run(tf.variables_initializer(mean.variables + total.variables))
            got_mean, got_sum = s.run(ops)
    per_sample = values.reshape(4, -1)
    assert got_mean == pytest.approx((per_sample.mean(1) * SAMPLE_WEIGHT).sum() / SAMPLE_WEIGHT.sum())
    assert got_sum == pytest.approx((per_sample.sum(1) * SAMPLE_WEIGHT).sum())
