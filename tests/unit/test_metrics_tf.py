"""All 33 tf.metrics against TensorFlow: the cases of metric_cases.py recorded by
fixtures/record_tf_metrics.py (update_op after each of two batches, the value after both, and
the local variables' names)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from metric_cases import CASES, feeds, placeholders

pytestmark = pytest.mark.usefixtures("graph")
REC = json.load(open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_metrics.json")))


def test_every_tf1_metric_is_covered():
    names = {fn for fn in dir(tf.metrics) if not fn.startswith("_") and callable(getattr(tf.metrics, fn))}
    assert len(names) == 33
    built = set()
    for _, (group, build) in CASES.items():
        built.update(n for n in names if n in build.__code__.co_names)
    assert names <= built, sorted(names - built)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(name):
    group, build = CASES[name]
    ph = placeholders(tf, group)
    value, update = build(tf, ph)
    rec = REC[name]
    assert sorted(v.op.name for v in tf.local_variables()) == rec["variables"]
    assert value.op.name == rec["value_name"] or name in ("mean_iou",)   # TF's select chain names differ
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        for batch in range(2):
            np.testing.assert_allclose(sess.run(update, feeds(ph, group, batch)), rec["updates"][batch],
                                       rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(sess.run(value), rec["value"], rtol=2e-6, atol=1e-7)
        sess.run(tf.local_variables_initializer())   # reset: the metric starts over
        np.testing.assert_allclose(sess.run(update, feeds(ph, group, 1)),
                                   _single_batch(build, group, 1), rtol=2e-6, atol=1e-7)


def _single_batch(build, group, batch):
    with tf.Graph().as_default():
        ph = placeholders(tf, group)
        _, update = build(tf, ph)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            return sess.run(update, feeds(ph, group, batch))


def test_collections_and_reset():
    values = tf.placeholder(tf.float32, [None])
    m, update = tf.metrics.mean(values, metrics_collections=["my_metrics"], updates_collections=["my_updates"])
    assert tf.get_collection("my_metrics") == [m] and tf.get_collection("my_updates") == [update]
    assert set(tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)) == set(tf.local_variables())
    assert not tf.trainable_variables() and not tf.global_variables()
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(m) == 0.0   # nothing seen yet: 0, not NaN
        sess.run(update, {values: [1.0, 2.0]})
        sess.run(update, {values: [6.0]})
        assert sess.run(m) == 3.0


def test_argument_and_runtime_errors_name_the_problem():
    labels = tf.constant([True, False])
    with pytest.raises(ValueError, match="Curve must be either ROC or PR"):
        tf.metrics.auc(labels, [0.1, 0.2], curve="XY")
    with pytest.raises(ValueError, match="summation_method"):
        tf.metrics.auc(labels, [0.1, 0.2], summation_method="simpson")
    with pytest.raises(ValueError, match="specificity"):
        tf.metrics.sensitivity_at_specificity(labels, [0.1, 0.2], 1.5)
    with pytest.raises(ValueError, match="sensitivity"):
        tf.metrics.specificity_at_sensitivity(labels, [0.1, 0.2], -0.1)
    with pytest.raises(ValueError, match="fully defined"):
        tf.metrics.mean_tensor(tf.placeholder(tf.float32, [None, 2]))
    with pytest.raises(ValueError, match="k"):
        tf.metrics.average_precision_at_k([[1]], [[0.1, 0.9]], 0)
    with pytest.raises(ValueError, match="Predictions rank"):
        tf.metrics.recall_at_top_k(tf.zeros([2, 2, 2], tf.int64), tf.zeros([2], tf.int64))
    sparse_like = type("SparseLike", (), {"indices": None, "values": None, "dense_shape": None})()
    with pytest.raises(TypeError, match="a Tensor or a SparseTensor"):
        tf.metrics.precision_at_k(sparse_like, [[0.1, 0.9]], 1)
    scores = tf.placeholder(tf.float64, [None])   # TF checks the range as it casts (float32 scores go unchecked)
    _, auc_update = tf.metrics.auc(tf.constant([True, False]), scores)
    cls = tf.placeholder(tf.int64, [None])
    _, iou_update = tf.metrics.mean_iou(cls, cls, 3)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"predictions must be in \[0, 1\]"):
            sess.run(auc_update, {scores: [0.5, 1.5]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="out of bound"):
            sess.run(iou_update, {cls: [0, 3]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="negative"):
            sess.run(iou_update, {cls: [-1, 0]})
