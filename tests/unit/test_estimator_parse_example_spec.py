"""tf.estimator.classifier_parse_example_spec and regressor_parse_example_spec: the specs and the
errors TensorFlow 2.15's tf.compat.v1.estimator gives for estimator_cases.parse_spec_cases
(fixtures/tf_parse_example_spec.json, recorded by fixtures/record_tf_parse_example_spec.py), and
the spec parses a tf.Example into what a premade Estimator's input_fn returns."""
from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import tensorweave as tf
import estimator_cases as cases

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_parse_example_spec.json")) as f:
    RECORDED = json.load(f)["cases"]


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_spec_or_error_is_tensorflows(name):
    call = cases.parse_spec_cases(tf)[name]
    want = RECORDED[name]
    if "spec" in want:
        assert cases.describe_parse_spec(call()) == want["spec"]
        return
    kind, message = want["error"]
    with pytest.raises(Exception) as raised:
        call()
    # the message up to the features' keys or the column's class (Python reprs that differ)
    stem = re.split(r" features: | Given type: ", message)[0]
    assert type(raised.value).__name__ == kind and str(raised.value).startswith(stem)


def test_spec_parses_an_example_with_its_label_and_weight():
    spec = tf.estimator.classifier_parse_example_spec([tf.feature_column.numeric_column("a", shape=(2,))], "y",
                                                      weight_column="w")
    example = tf.train.Example(features=tf.train.Features(feature={
        "a": tf.train.Feature(float_list=tf.train.FloatList(value=[1., 2.])),
        "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[1])),
        "w": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5]))})).SerializeToString()
    with tf.Graph().as_default(), tf.Session() as session:
        parsed = session.run(tf.parse_example([example], spec))
    np.testing.assert_array_equal(parsed["a"], [[1., 2.]])
    assert parsed["y"].tolist() == [[1]] and parsed["w"].tolist() == [[0.5]]
