"""tf.estimator's Head classes (BinaryClassHead, MultiClassHead, MultiLabelHead, RegressionHead,
LogisticRegressionHead, PoissonRegressionHead, MultiHead): in a model_fn over fixed logits
(estimator_cases.head_cases) evaluate and predict what TensorFlow 2.15's do, and as the head of
LinearEstimator (same numbers and weights as TF's), DNNEstimator and DNNLinearCombinedEstimator
(TF's metric keys): fixtures/tf_heads.json, recorded by fixtures/record_tf_heads.py. The Keras
optimizer path of create_estimator_spec against numpy, and TF's errors."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
import estimator_cases as cases
from fixtures.recorded import decode

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_heads.json")) as f:
    RECORDED = json.load(f)


@pytest.mark.parametrize("name", sorted(RECORDED["cases"]))
def test_head_evaluates_and_predicts_as_tensorflow(name, tmp_path):
    got = cases.run_head_case(tf, name, str(tmp_path))
    want = RECORDED["cases"][name]
    assert sorted(got["evaluate"]) == sorted(want["evaluate"])
    for key, value in want["evaluate"].items():
        np.testing.assert_allclose(got["evaluate"][key], value, rtol=1e-5, atol=1e-6, err_msg=key)
    assert sorted(got["predictions"]) == sorted(want["predictions"])
    for key, value in want["predictions"].items():
        value = decode(value)
        assert got["predictions"][key].shape == value.shape, key
        if value.dtype.kind == "f":
            np.testing.assert_allclose(got["predictions"][key], value, rtol=1e-5, atol=1e-6, err_msg=key)
        else:
            assert got["predictions"][key].tolist() == value.tolist(), key


@pytest.mark.parametrize("name", sorted(RECORDED["estimators"]))
def test_premade_estimators_take_a_head(name, tmp_path):
    got = cases.run_head_estimator_case(tf, name, str(tmp_path))
    want = RECORDED["estimators"][name]
    assert sorted(got["evaluate"]) == sorted(want["evaluate"])
    if not name.startswith("linear_"):   # random initial weights: TF's keys only
        return
    for key, value in want["evaluate"].items():
        np.testing.assert_allclose(got["evaluate"][key], value, rtol=1e-5, atol=1e-6, err_msg=key)
    assert sorted(got["variables"]) == sorted(want["variables"])
    for key, value in want["variables"].items():
        np.testing.assert_allclose(got["variables"][key], value, rtol=1e-5, atol=1e-7, err_msg=key)


def test_keras_optimizer_steps_the_trainable_variables(tmp_path):
    """create_estimator_spec(optimizer=tf.keras SGD, trainable_variables=[w]): one step of
    w -= lr * d(mean squared error)/dw, and regularization_losses added to the loss. (As TF's v2
    Estimators do, the optimizer's iterations are the global step, so a step advances it.)"""
    x = np.array([1., 2., 3., 4.], np.float32)
    y = np.array([2., 3., 7., 9.], np.float32)
    head = tf.estimator.RegressionHead()

    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [], initializer=tf.constant_initializer(0.5))
        logits = tf.expand_dims(w * features["x"], -1)
        optimizer = tf.keras.optimizers.SGD(0.01)
        optimizer.iterations = tf.train.get_global_step()
        return head.create_estimator_spec(features, mode, logits, labels=labels,
                                          optimizer=optimizer, trainable_variables=[w],
                                          regularization_losses=[0.1 * w])
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    est.train(lambda: tf.data.Dataset.from_tensors(({"x": x}, y[:, None])).repeat(), steps=1)
    assert est.get_variable_value("global_step") == 1
    gradient = np.mean(2 * (0.5 * x - y) * x) + 0.1
    np.testing.assert_allclose(est.get_variable_value("w"), 0.5 - 0.01 * gradient, rtol=1e-6)
    metrics = est.evaluate(lambda: tf.data.Dataset.from_tensors(({"x": x}, y[:, None])))
    w = 0.5 - 0.01 * gradient
    np.testing.assert_allclose(metrics["average_loss"], np.mean((w * x - y) ** 2), rtol=1e-5)
    np.testing.assert_allclose(metrics["regularization_loss"], 0.1 * w, rtol=1e-5)
    np.testing.assert_allclose(metrics["loss"], np.mean((w * x - y) ** 2) + 0.1 * w, rtol=1e-5)


def test_loss_and_predictions_methods():
    head = tf.estimator.MultiLabelHead(2, label_vocabulary=["a", "b"])
    logits = np.array([[0.5, -1.], [2., 0.]], np.float32)
    labels = np.array([[1, 0], [1, 1]])
    with tf.Graph().as_default(), tf.Session() as session:
        loss = session.run(head.loss(labels, logits, regularization_losses=[tf.constant(0.25)]))
        predictions = session.run(head.predictions(logits, keys=["classes"]))
        sparse_loss = head.loss(tf.SparseTensor([[0, 0], [1, 0], [1, 1]], ["a", "a", "b"], [2, 2]), logits)
        session.run(tf.tables_initializer())
        sparse_loss = session.run(sparse_loss)
    cross_entropy = np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))
    np.testing.assert_allclose(loss, cross_entropy.mean() + 0.25, rtol=1e-6)
    np.testing.assert_allclose(sparse_loss, cross_entropy.mean(), rtol=1e-6)
    assert {k: v.tolist() for k, v in predictions.items()} == {"classes": [[b"a", b"b"], [b"a", b"b"]]}
    assert head.logits_dimension == 2 and head.loss_reduction == "sum_over_batch_size"
    with pytest.raises(ValueError, match="Prediction key must be in PredictionKeys"):
        head.predictions(logits, keys=["class_ids"])


def test_head_errors():
    est = tf.estimator
    with pytest.raises(ValueError, match="Invalid loss_reduction: weighted_sum"):
        est.BinaryClassHead(loss_reduction=tf.losses.Reduction.SUM)
    with pytest.raises(ValueError, match="n_classes must be > 1 for multi-label classification. Given: 1"):
        est.MultiLabelHead(1)
    with pytest.raises(ValueError, match=r"Length of label_vocabulary must be n_classes \(3\). Given: 2"):
        est.MultiLabelHead(3, label_vocabulary=["a", "b"])
    with pytest.raises(ValueError, match=r"All classes_for_class_based_metrics must be in range \[0, 2\]. Given: 3"):
        est.MultiLabelHead(3, classes_for_class_based_metrics=[3])
    with pytest.raises(ValueError, match="All given heads must have name specified"):
        est.MultiHead([est.RegressionHead()])
    with pytest.raises(ValueError, match="heads and head_weights must have the same size"):
        est.MultiHead([est.RegressionHead(name="a")], head_weights=[1., 2.])
    head = est.MultiHead([est.RegressionHead(name="a"), est.BinaryClassHead(name="b")])
    assert head.name == "a_b" and head.logits_dimension == 2
    with tf.Graph().as_default():
        logits = tf.zeros([4, 2])
        with pytest.raises(ValueError, match=r"labels has missing values for head\(s\): \['b'\]"):
            head.loss({"a": tf.zeros([4, 1])}, logits)
        with pytest.raises(ValueError, match="Could not split logits of shape"):
            head.predictions(tf.zeros([4, 3]))
        regression = est.RegressionHead()
        with pytest.raises(ValueError, match="train_op_fn and optimizer cannot both be None."):
            regression.create_estimator_spec({}, est.ModeKeys.TRAIN, tf.zeros([4, 1]), labels=tf.zeros([4, 1]))
        with pytest.raises(ValueError, match="The given optimizer is not a tf.keras.optimizers.Optimizer"):
            regression.create_estimator_spec({}, est.ModeKeys.TRAIN, tf.zeros([4, 1]), labels=tf.zeros([4, 1]),
                                             optimizer="sgd")
        with pytest.raises(ValueError, match="trainable_variables cannot be None"):
            regression.create_estimator_spec({}, est.ModeKeys.TRAIN, tf.zeros([4, 1]), labels=tf.zeros([4, 1]),
                                             optimizer=tf.keras.optimizers.SGD(0.1))
