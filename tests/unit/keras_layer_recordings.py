"""The TF 2.15 recordings of fixtures/record_keras_layers.py and the check of one recorded case
under tensorweave, shared by the tf.keras.layers tests."""
from __future__ import annotations

import json
import os

import numpy as np

import tensorweave as tf
from fixtures import keras_layer_cases as cases

_HERE = os.path.join(os.path.dirname(__file__), "fixtures")
with open(os.path.join(_HERE, "keras_layers.json"), encoding="utf-8") as f:
    META = json.load(f)
with np.load(os.path.join(_HERE, "keras_layers.npz")) as archive:
    ARRAYS = {key: archive[key] for key in archive.files}


def recorded(name: str) -> dict:
    prefix = name + "/"
    return {key[len(prefix):]: value for key, value in ARRAYS.items() if key.startswith(prefix)}


def check_case(name: str) -> None:
    """Case `name` under tensorweave: the same variables, output shape, output, gradients (and
    updated weights, mask) as TF 2.15's."""
    meta, values = cases.run(tf, tf.keras.backend.get_session, name)
    assert meta == META[name]
    want = recorded(name)
    assert sorted(values) == sorted(want)
    for key, value in values.items():
        assert value.shape == want[key].shape, key
        np.testing.assert_allclose(value, want[key], rtol=2e-5, atol=2e-6, err_msg=f"{name}: {key}")
