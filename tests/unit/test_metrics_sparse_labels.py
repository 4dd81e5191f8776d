"""The ranking metrics take SparseTensor labels, as TF's do: each row's labels are its present
entries (rows may hold different numbers of labels)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

SCORES = np.array([[0.1, 0.5, 0.2, 0.9, 0.3], [0.8, 0.1, 0.6, 0.2, 0.0], [0.3, 0.3, 0.9, 0.1, 0.6]])
ROWS = [[3, 0], [2], [1, 4, 2]]       # ragged label sets


def _sparse_labels():
    indices = [[r, j] for r, row in enumerate(ROWS) for j in range(len(row))]
    return tf.SparseTensorValue(np.array(indices, np.int64), np.array([c for row in ROWS for c in row], np.int64),
                                np.array([3, 3], np.int64))


def _top(k):
    return [list(np.argsort(-row, kind="stable")[:k]) for row in SCORES]


def _reference(kind, k, class_id=None):
    tp = fp = fn = 0
    for preds, labels in zip(_top(k), ROWS):
        pred, lab = set(int(c) for c in preds), set(labels)
        if class_id is not None:
            pred, lab = pred & {class_id}, lab & {class_id}
        tp += len(pred & lab)
        fp += len(pred - lab)
        fn += len(lab - pred)
    return tp / (tp + fp) if kind == "precision" else tp / (tp + fn)


def _average_precision_reference(k):
    total = 0.0
    for preds, labels in zip(_top(k), ROWS):
        hits, score = 0, 0.0
        for rank, c in enumerate(preds, 1):
            if c in labels:
                hits += 1
                score += hits / rank
        total += score / min(len(labels), k)
    return total / len(ROWS)


def _run(metric):
    value, update = metric
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        sess.run(update)
        return sess.run(value)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_precision_and_recall_at_k_with_sparse_labels(k):
    assert _run(tf.metrics.precision_at_k(_sparse_labels(), SCORES, k)) == pytest.approx(_reference("precision", k))
    assert _run(tf.metrics.recall_at_k(_sparse_labels(), SCORES, k)) == pytest.approx(_reference("recall", k))
    assert _run(tf.metrics.recall_at_k(_sparse_labels(), SCORES, k, class_id=2)) == pytest.approx(
        _reference("recall", k, class_id=2))
    idx = np.array(_top(k), np.int64)
    assert _run(tf.metrics.precision_at_top_k(tf.SparseTensor.from_value(_sparse_labels()), idx)) == pytest.approx(
        _reference("precision", k))
    assert _run(tf.metrics.average_precision_at_k(_sparse_labels(), SCORES, k)) == pytest.approx(
        _average_precision_reference(k))


def test_sparse_labels_agree_with_equal_dense_labels():
    dense = np.array([[3, 0], [2, 1], [1, 4]], np.int64)
    sparse = tf.SparseTensorValue(np.array([[r, j] for r in range(3) for j in range(2)], np.int64),
                                  dense.reshape(-1), np.array([3, 2], np.int64))
    for fn in (tf.metrics.precision_at_k, tf.metrics.recall_at_k, tf.metrics.average_precision_at_k):
        assert _run(fn(sparse, SCORES, 2)) == pytest.approx(_run(fn(dense, SCORES, 2)))


def test_sparse_labels_can_be_fed():
    labels = tf.sparse_placeholder(tf.int64, shape=[None, 3])
    value, update = tf.metrics.recall_at_k(labels, SCORES, 2)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        sess.run(update, {labels: _sparse_labels()})
        assert sess.run(value) == pytest.approx(_reference("recall", 2))
