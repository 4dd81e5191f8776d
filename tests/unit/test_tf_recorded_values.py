"""Values recorded from TensorFlow (tests/unit/fixtures/record_tf_values.py) for the functions
this issue added: outputs and gradients must match TF's, including TF's conventions (ties,
empty segments, orderings of sparse results, padding rules)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.tf_values_cases import CASES, case_fetches, encode_output

_RECORDED = json.load(open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_values.json")))["cases"]
# cases about values below the smallest normal float: TF's 0.0 (denormals flushed) is compared as it is
_TINY = {"exp_underflow", "exp_underflow_double", "multiply_into_denormals", "sigmoid_underflow"}


def _compare(ours, theirs, what, atol=1e-6):
    if isinstance(theirs, dict) and "sparse" in theirs:
        assert isinstance(ours, dict) and "sparse" in ours, what
        for a, b in zip(ours["sparse"], theirs["sparse"]):
            np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-5, atol=atol,
                                       err_msg=what)
        return
    if isinstance(theirs, list) and theirs and isinstance(theirs[0], dict):
        for a, b in zip(ours, theirs):
            _compare(a, b, what, atol)
        return
    np.testing.assert_allclose(np.asarray(ours, np.float64), np.asarray(theirs, np.float64), rtol=1e-5, atol=atol,
                               err_msg=what)


@pytest.mark.parametrize("name", sorted(_RECORDED))
def test_matches_tensorflow(name):
    with tf.Graph().as_default():
        fetch = case_fetches(tf, CASES[name])
        with tf.Session() as sess:
            values = sess.run(fetch)
    for key, recorded in _RECORDED[name].items():
        _compare(encode_output(values[key]), recorded, f"{name}: {key}", 0 if name in _TINY else 1e-6)
