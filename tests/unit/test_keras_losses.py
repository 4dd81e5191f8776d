"""tf.keras.losses against values recorded from TF 2.15's graph-mode Keras
(fixtures/record_tf_keras.py over fixtures/keras_cases.py): every loss function by name, every
Loss class with and without sample weights and under each reduction; get/serialize/deserialize."""
import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.keras_cases import LOSS_CLASSES, LOSS_FUNCTIONS, build_loss_class, build_loss_function, data

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_keras.json")) as f:
    RECORDED = json.load(f)


def _run(fetches):
    with tf.Session() as s:
        return s.run(fetches)


@pytest.mark.parametrize("name,kind", LOSS_FUNCTIONS, ids=[n for n, _ in LOSS_FUNCTIONS])
def test_loss_function_by_name_matches_tf(name, kind):
    with tf.Graph().as_default():
        got = _run(build_loss_function(tf.keras, name, *data(kind)))
    np.testing.assert_allclose(got, RECORDED["loss_functions"][name], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", range(len(LOSS_CLASSES)), ids=[f"{c}{k}" for c, k, _ in LOSS_CLASSES])
def test_loss_class_weighted_and_reduced_as_tf(case):
    class_name, kwargs, kind = LOSS_CLASSES[case]
    with tf.Graph().as_default():
        got = _run(build_loss_class(tf.keras, class_name, kwargs, *data(kind)))
    for g, want in zip(got, RECORDED["loss_classes"][case]):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


def test_probabilities_of_a_softmax_or_sigmoid_are_taken_back_to_logits():
    y_true, logits = data("logits")
    with tf.Graph().as_default():
        cce = tf.keras.losses.categorical_crossentropy(y_true, tf.nn.softmax(logits))
        bce = tf.keras.losses.binary_crossentropy(y_true, tf.sigmoid(logits))
        got_cce, got_bce = _run([cce, bce])
    z = logits - logits.max(-1, keepdims=True)
    want_cce = -(y_true * (z - np.log(np.exp(z).sum(-1, keepdims=True)))).sum(-1)
    want_bce = (np.maximum(logits, 0) - logits * y_true + np.log1p(np.exp(-abs(logits)))).mean(-1)
    np.testing.assert_allclose(got_cce, want_cce, rtol=1e-5)
    np.testing.assert_allclose(got_bce, want_bce, rtol=1e-5)


def test_get_by_name_class_config_and_callable():
    losses = tf.keras.losses
    assert losses.get("mse") is losses.mean_squared_error
    assert losses.get("MSE") is losses.mean_squared_error
    assert losses.get(None) is None
    assert isinstance(losses.get("MeanSquaredError"), losses.MeanSquaredError)
    huber = losses.get({"class_name": "Huber", "config": {"delta": 2.0, "reduction": "sum"}})
    assert isinstance(huber, losses.Huber)
    assert huber.get_config() == {"reduction": "sum", "name": "huber_loss", "delta": 2.0}
    assert losses.get(losses.poisson) is losses.poisson


def test_serialize_round_trip():
    losses = tf.keras.losses
    assert losses.serialize(losses.mse) == "mean_squared_error"
    cce = losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)
    config = losses.serialize(cce)
    assert config == {"class_name": "CategoricalCrossentropy",
                      "config": {"reduction": "auto", "name": "categorical_crossentropy", "from_logits": True,
                                 "label_smoothing": 0.1}}
    again = losses.deserialize(config)
    assert type(again) is losses.CategoricalCrossentropy and again.get_config() == cce.get_config()


def test_unknown_loss_and_bad_reduction_are_value_errors_naming_them():
    with pytest.raises(ValueError, match=RECORDED["errors"]["losses"].replace("'", "'?")):
        tf.keras.losses.get("no_such_thing")
    with pytest.raises(ValueError, match="Unknown loss function: NoSuchLoss"):
        tf.keras.losses.deserialize({"class_name": "NoSuchLoss", "config": {}})
    with pytest.raises(ValueError, match="Invalid Reduction Key mean"):
        tf.keras.losses.MeanSquaredError(reduction="mean")
    with pytest.raises(ValueError, match="Could not interpret loss function identifier"):
        tf.keras.losses.get(3)
