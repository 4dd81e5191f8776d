"""The tf.metrics cases recorded from TensorFlow (fixtures/record_tf_metrics.py) and rebuilt by
tests/unit/test_metrics_tf.py. Each case feeds two batches through placeholders; its builder,
written against a TF1-style module `tf`, returns (value, update_op) for the fed placeholders."""
from __future__ import annotations

import numpy as np

R = np.random.RandomState(1234)
N = 12


def _probs(n=N):
    return R.uniform(0, 1, n).astype(np.float32)


def _bools(n=N):
    return R.randint(0, 2, n).astype(bool)


# name -> {input name: (dtype, [batch 1 value, batch 2 value])}
INPUTS = {
    "binary": {"labels": ("bool", [_bools(), _bools()]), "predictions": ("bool", [_bools(), _bools()]),
               "weights": ("float32", [R.uniform(0, 2, N).astype(np.float32), R.uniform(0, 2, N).astype(np.float32)])},
    "scores": {"labels": ("bool", [_bools(), _bools()]), "predictions": ("float32", [_probs(), _probs()]),
               "weights": ("float32", [R.uniform(0, 2, N).astype(np.float32), R.uniform(0, 2, N).astype(np.float32)])},
    "regression": {"labels": ("float32", [R.randn(N, 3).astype(np.float32), R.randn(N, 3).astype(np.float32)]),
                   "predictions": ("float32", [R.randn(N, 3).astype(np.float32), R.randn(N, 3).astype(np.float32)]),
                   "normalizer": ("float32", [R.uniform(0.5, 2, (N, 3)).astype(np.float32),
                                              R.uniform(0.5, 2, (N, 3)).astype(np.float32)]),
                   "weights": ("float32", [R.uniform(0, 2, (N, 1)).astype(np.float32),
                                           R.uniform(0, 2, (N, 1)).astype(np.float32)])},
    "classes": {"labels": ("int64", [R.randint(0, 4, N), R.randint(0, 4, N)]),
                "predictions": ("int64", [R.randint(0, 4, N), R.randint(0, 4, N)]),
                "weights": ("float32", [R.uniform(0, 2, N).astype(np.float32), R.uniform(0, 2, N).astype(np.float32)])},
    "ranking": {"labels": ("int64", [R.randint(0, 6, (N, 2)), R.randint(0, 6, (N, 2))]),
                "single": ("int64", [R.randint(0, 6, N), R.randint(0, 6, N)]),
                "predictions": ("float32", [R.randn(N, 6).astype(np.float32), R.randn(N, 6).astype(np.float32)]),
                "weights": ("float32", [R.uniform(0, 2, N).astype(np.float32), R.uniform(0, 2, N).astype(np.float32)])},
}
INPUTS["ranking"]["labels"][1][0][1][0] = 9   # an out-of-range label (ignored by average_precision_at_k)
INPUTS["ranking"]["labels"][1][0][3] = [2, 2]   # a repeated label counts once

THRESHOLDS = [0.0, 0.25, 0.5, 0.9]


CASES = {
    "mean": ("regression", lambda tf, p: tf.metrics.mean(p["predictions"])),
    "mean_weighted": ("regression", lambda tf, p: tf.metrics.mean(p["predictions"], weights=p["weights"])),
    "mean_tensor": ("regression", lambda tf, p: tf.metrics.mean_tensor(tf.reshape(p["predictions"], [N, 3]),
                                                                       weights=tf.reshape(p["weights"], [N, 1]))),
    "accuracy": ("classes", lambda tf, p: tf.metrics.accuracy(p["labels"], p["predictions"], weights=p["weights"])),
    "mean_absolute_error": ("regression", lambda tf, p: tf.metrics.mean_absolute_error(p["labels"], p["predictions"])),
    "mean_squared_error": ("regression", lambda tf, p: tf.metrics.mean_squared_error(
        p["labels"], p["predictions"], weights=p["weights"])),
    "root_mean_squared_error": ("regression", lambda tf, p: tf.metrics.root_mean_squared_error(
        p["labels"], p["predictions"], weights=p["weights"])),
    "mean_relative_error": ("regression", lambda tf, p: tf.metrics.mean_relative_error(
        p["labels"], p["predictions"], p["normalizer"])),
    "mean_cosine_distance": ("regression", lambda tf, p: tf.metrics.mean_cosine_distance(
        tf.nn.l2_normalize(p["labels"], 1), tf.nn.l2_normalize(p["predictions"], 1), dim=1, weights=p["weights"])),
    "percentage_below": ("regression", lambda tf, p: tf.metrics.percentage_below(p["predictions"], 0.3)),
    "true_positives": ("binary", lambda tf, p: tf.metrics.true_positives(p["labels"], p["predictions"],
                                                                          weights=p["weights"])),
    "false_positives": ("binary", lambda tf, p: tf.metrics.false_positives(p["labels"], p["predictions"])),
    "true_negatives": ("binary", lambda tf, p: tf.metrics.true_negatives(p["labels"], p["predictions"],
                                                                          weights=p["weights"])),
    "false_negatives": ("binary", lambda tf, p: tf.metrics.false_negatives(p["labels"], p["predictions"])),
    "precision": ("binary", lambda tf, p: tf.metrics.precision(p["labels"], p["predictions"], weights=p["weights"])),
    "recall": ("binary", lambda tf, p: tf.metrics.recall(p["labels"], p["predictions"], weights=p["weights"])),
    "true_positives_at_thresholds": ("scores", lambda tf, p: tf.metrics.true_positives_at_thresholds(
        p["labels"], p["predictions"], THRESHOLDS, weights=p["weights"])),
    "false_positives_at_thresholds": ("scores", lambda tf, p: tf.metrics.false_positives_at_thresholds(
        p["labels"], p["predictions"], THRESHOLDS)),
    "true_negatives_at_thresholds": ("scores", lambda tf, p: tf.metrics.true_negatives_at_thresholds(
        p["labels"], p["predictions"], THRESHOLDS)),
    "false_negatives_at_thresholds": ("scores", lambda tf, p: tf.metrics.false_negatives_at_thresholds(
        p["labels"], p["predictions"], THRESHOLDS, weights=p["weights"])),
    "precision_at_thresholds": ("scores", lambda tf, p: tf.metrics.precision_at_thresholds(
        p["labels"], p["predictions"], THRESHOLDS, weights=p["weights"])),
    "recall_at_thresholds": ("scores", lambda tf, p: tf.metrics.recall_at_thresholds(
        p["labels"], p["predictions"], THRESHOLDS)),
    "auc_roc": ("scores", lambda tf, p: tf.metrics.auc(p["labels"], p["predictions"], weights=p["weights"])),
    "auc_pr_careful": ("scores", lambda tf, p: tf.metrics.auc(p["labels"], p["predictions"], curve="PR",
                                                              summation_method="careful_interpolation",
                                                              num_thresholds=50)),
    "auc_pr_trapezoidal": ("scores", lambda tf, p: tf.metrics.auc(p["labels"], p["predictions"], curve="PR")),
    "auc_roc_minoring": ("scores", lambda tf, p: tf.metrics.auc(p["labels"], p["predictions"],
                                                                summation_method="minoring", num_thresholds=20)),
    "auc_roc_majoring_thresholds": ("scores", lambda tf, p: tf.metrics.auc(
        p["labels"], p["predictions"], summation_method="majoring", thresholds=[0.7, 0.2, 0.5])),
    "sensitivity_at_specificity": ("scores", lambda tf, p: tf.metrics.sensitivity_at_specificity(
        p["labels"], p["predictions"], 0.6, weights=p["weights"])),
    "specificity_at_sensitivity": ("scores", lambda tf, p: tf.metrics.specificity_at_sensitivity(
        p["labels"], p["predictions"], 0.85, num_thresholds=30)),
    "mean_iou": ("classes", lambda tf, p: tf.metrics.mean_iou(p["labels"], p["predictions"], 5, weights=p["weights"])),
    "mean_per_class_accuracy": ("classes", lambda tf, p: tf.metrics.mean_per_class_accuracy(
        p["labels"], p["predictions"], 4, weights=p["weights"])),
    "recall_at_k": ("ranking", lambda tf, p: tf.metrics.recall_at_k(p["labels"], p["predictions"], 2)),
    "recall_at_k_class": ("ranking", lambda tf, p: tf.metrics.recall_at_k(p["labels"], p["predictions"], 3, class_id=2,
                                                                          weights=p["weights"])),
    "recall_at_top_k": ("ranking", lambda tf, p: tf.metrics.recall_at_top_k(
        p["single"], tf.nn.top_k(p["predictions"], 3)[1], k=3, weights=p["weights"])),
    "precision_at_k": ("ranking", lambda tf, p: tf.metrics.precision_at_k(p["labels"], p["predictions"], 2,
                                                                          weights=p["weights"])),
    "precision_at_k_class": ("ranking", lambda tf, p: tf.metrics.precision_at_k(p["single"], p["predictions"], 3,
                                                                                class_id=1)),
    "precision_at_top_k": ("ranking", lambda tf, p: tf.metrics.precision_at_top_k(
        p["labels"], tf.nn.top_k(p["predictions"], 4)[1])),
    "sparse_precision_at_k": ("ranking", lambda tf, p: tf.metrics.sparse_precision_at_k(p["labels"], p["predictions"],
                                                                                        1)),
    "average_precision_at_k": ("ranking", lambda tf, p: tf.metrics.average_precision_at_k(
        p["labels"], p["predictions"], 3, weights=p["weights"])),
    "sparse_average_precision_at_k": ("ranking", lambda tf, p: tf.metrics.sparse_average_precision_at_k(
        p["single"], p["predictions"], 2)),
}


def placeholders(tf, group: str) -> dict:
    """One placeholder per input of `group`, its first (batch) dimension unknown."""
    return {name: tf.placeholder(getattr(tf, dtype), [None] + list(values[0].shape[1:]), name=name)
            for name, (dtype, values) in INPUTS[group].items()}


def feeds(ph: dict, group: str, batch: int) -> dict:
    return {ph[name]: values[batch] for name, (_, values) in INPUTS[group].items()}
