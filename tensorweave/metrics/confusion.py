"""Metrics from confusion counts of binary predictions: true/false positives/negatives (and at
thresholds of scores), precision, recall (and at thresholds), auc, sensitivity_at_specificity
and specificity_at_sensitivity.

Scores are compared against thresholds as TF does (a prediction is positive when strictly above
the threshold); auc and the sensitivity/specificity metrics use num_thresholds evenly spaced
thresholds over [0, 1], widened by 1e-7 at both ends."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.api import control_dependencies
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import constant, identity, reshape
from tensorweave.ops.array.fill import ones_like
from tensorweave.ops.array.gather import gather
from tensorweave.ops.array.sort import where
from tensorweave.ops.debugging.asserts import assert_greater_equal, assert_less_equal
from tensorweave.ops.math.binary import (div_no_nan, equal, greater, logical_and, logical_not, maximum, minimum,
                                         multiply, truediv)
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import argmax, argmin, cumsum, reduce_min, reduce_sum
from tensorweave.ops.math.unary import abs as abs_, log
from tensorweave.ops.state.variable_ops import assign_add
from tensorweave.ops.state.variable_scope import variable_scope
from tensorweave.logging import warning
from tensorweave.metrics.base import (broadcast_weights, cross_replica_value, finish, metric_variable,
                                      remove_squeezable_dimensions)


_KEPSILON = 1e-7
_KINDS = {"tp": "true_positives", "fn": "false_negatives", "tn": "true_negatives", "fp": "false_positives"}


# -- counts of one binary prediction ----------------------------------------------------------------
def _count_condition(condition, weights, metrics_collections, updates_collections):
    """A local counter "count" of the (weighted) true elements of `condition`."""
    count = metric_variable([], dtypes.float32, name="count")
    values = cast(condition, dtypes.float32)
    if weights is not None:
        values = multiply(values, cast(weights, dtypes.float32))
    return finish(cross_replica_value(lambda: identity(count)), assign_add(count, reduce_sum(values)),
                  metrics_collections, updates_collections)


def _binary_count(kind: str, labels, predictions, weights, metrics_collections, updates_collections, name):
    with variable_scope(name, _KINDS[kind], (predictions, labels, weights)):
        predictions, labels, weights = remove_squeezable_dimensions(cast(predictions, dtypes.bool),
                                                                    cast(labels, dtypes.bool), weights)
        label_pos = labels if kind in ("tp", "fn") else logical_not(labels)
        pred_pos = predictions if kind in ("tp", "fp") else logical_not(predictions)
        return _count_condition(logical_and(label_pos, pred_pos), weights, metrics_collections, updates_collections)


@tf_export("metrics.true_positives")
def true_positives(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """tf.metrics.true_positives(labels, predictions, weights=None, ...): the (weighted) count of
    entries where both are true (cast to bool); local variable "true_positives/count"."""
    return _binary_count("tp", labels, predictions, weights, metrics_collections, updates_collections, name)


@tf_export("metrics.false_positives")
def false_positives(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """tf.metrics.false_positives(labels, predictions, weights=None, ...): count of predicted-true
    entries whose label is false."""
    return _binary_count("fp", labels, predictions, weights, metrics_collections, updates_collections, name)


@tf_export("metrics.true_negatives")
def true_negatives(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """tf.metrics.true_negatives(labels, predictions, weights=None, ...): count of entries where
    both are false."""
    return _binary_count("tn", labels, predictions, weights, metrics_collections, updates_collections, name)


@tf_export("metrics.false_negatives")
def false_negatives(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """tf.metrics.false_negatives(labels, predictions, weights=None, ...): count of true-labelled
    entries predicted false."""
    return _binary_count("fn", labels, predictions, weights, metrics_collections, updates_collections, name)


# -- counts at thresholds of scores ------------------------------------------------------------------
def batch_counts_at_thresholds(labels, predictions, thresholds, weights=None, includes=("tp", "fn", "tn", "fp"),
                               transform=None):
    """{kind: the (weighted) count in this batch at each threshold [len(thresholds)]} for the kinds
    in `includes`; predictions are scores in [0, 1] (checked when the counts are computed), positive
    when strictly above a threshold; `transform` (Keras's top-k filter) maps the checked scores
    before they are compared."""
    for kind in includes:
        if kind not in _KINDS:
            raise ValueError(f"Invalid key: {kind}")
    predictions = convert_to_tensor(predictions)
    checks = [assert_greater_equal(predictions, cast(0.0, predictions.dtype), message="predictions must be in [0, 1]"),
              assert_less_equal(predictions, cast(1.0, predictions.dtype), message="predictions must be in [0, 1]")]
    with control_dependencies(checks):
        predictions = identity(cast(predictions, dtypes.float32), name="checked_predictions")  # so the checks run
    if transform is not None:
        predictions = transform(predictions)
    predictions, labels, weights = remove_squeezable_dimensions(predictions, cast(labels, dtypes.bool), weights)
    pred_pos = greater(reshape(predictions, [1, -1]), constant([[float(t)] for t in thresholds], dtypes.float32))
    label_pos = reshape(labels, [1, -1])
    w = None
    if weights is not None:
        w = reshape(broadcast_weights(cast(weights, dtypes.float32), predictions), [1, -1])
    counts = {}
    for kind in ("tp", "fn", "tn", "fp"):
        if kind not in includes:
            continue
        lab = label_pos if kind in ("tp", "fn") else logical_not(label_pos)
        pred = pred_pos if kind in ("tp", "fp") else logical_not(pred_pos)
        hits = cast(logical_and(lab, pred), dtypes.float32)
        if w is not None:
            hits = multiply(hits, w)
        counts[kind] = reduce_sum(hits, 1)
    return counts


def confusion_at_thresholds(labels, predictions, thresholds, weights=None, includes=("tp", "fn", "tn", "fp")):
    """({kind: counter variable [len(thresholds)]}, {kind: its update}) for the kinds in
    `includes`: batch_counts_at_thresholds accumulated in local variables."""
    counts = batch_counts_at_thresholds(labels, predictions, thresholds, weights, includes)
    values, updates = {}, {}
    for kind, count in counts.items():
        var = metric_variable([len(thresholds)], dtypes.float32, name=_KINDS[kind])
        values[kind], updates[kind] = var, assign_add(var, count)
    return values, updates


def _count_at_thresholds(kind, labels, predictions, thresholds, weights, metrics_collections, updates_collections,
                         name):
    with variable_scope(name, _KINDS[kind], (predictions, labels, weights)):
        values, updates = confusion_at_thresholds(labels, predictions, thresholds, weights, includes=(kind,))
        return finish(cross_replica_value(lambda: identity(values[kind])), updates[kind], metrics_collections,
                      updates_collections)


@tf_export("metrics.true_positives_at_thresholds")
def true_positives_at_thresholds(labels, predictions, thresholds, weights=None, metrics_collections=None,
                                 updates_collections=None, name=None):
    """tf.metrics.true_positives_at_thresholds(labels, predictions, thresholds, weights=None, ...):
    per threshold, the (weighted) count of true labels whose score is above it."""
    return _count_at_thresholds("tp", labels, predictions, thresholds, weights, metrics_collections,
                                updates_collections, name)


@tf_export("metrics.false_positives_at_thresholds")
def false_positives_at_thresholds(labels, predictions, thresholds, weights=None, metrics_collections=None,
                                  updates_collections=None, name=None):
    """tf.metrics.false_positives_at_thresholds(labels, predictions, thresholds, weights=None, ...)."""
    return _count_at_thresholds("fp", labels, predictions, thresholds, weights, metrics_collections,
                                updates_collections, name)


@tf_export("metrics.true_negatives_at_thresholds")
def true_negatives_at_thresholds(labels, predictions, thresholds, weights=None, metrics_collections=None,
                                 updates_collections=None, name=None):
    """tf.metrics.true_negatives_at_thresholds(labels, predictions, thresholds, weights=None, ...)."""
    return _count_at_thresholds("tn", labels, predictions, thresholds, weights, metrics_collections,
                                updates_collections, name)


@tf_export("metrics.false_negatives_at_thresholds")
def false_negatives_at_thresholds(labels, predictions, thresholds, weights=None, metrics_collections=None,
                                  updates_collections=None, name=None):
    """tf.metrics.false_negatives_at_thresholds(labels, predictions, thresholds, weights=None, ...)."""
    return _count_at_thresholds("fn", labels, predictions, thresholds, weights, metrics_collections,
                                updates_collections, name)


# -- precision and recall ----------------------------------------------------------------------------
def _hit_ratio(scope: str, misses, labels, predictions, weights, metrics_collections, updates_collections, name):
    """tp / (tp + `misses`) over bool labels and predictions, 0 where there were neither."""
    with variable_scope(name, scope, (predictions, labels, weights)):
        predictions, labels, weights = remove_squeezable_dimensions(cast(predictions, dtypes.bool),
                                                                    cast(labels, dtypes.bool), weights)
        tp, tp_up = true_positives(labels, predictions, weights)
        miss, miss_up = misses(labels, predictions, weights)

        def ratio(hits, misses, name: str):
            return where(greater(hits + misses, 0), truediv(hits, hits + misses), 0, name=name)
        return finish(ratio(tp, miss, "value"), ratio(tp_up, miss_up, "update_op"), metrics_collections,
                      updates_collections)


@tf_export("metrics.precision")
def precision(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """tf.metrics.precision(labels, predictions, weights=None, ...): true_positives /
    (true_positives + false_positives), 0 before any positive prediction."""
    return _hit_ratio("precision", false_positives, labels, predictions, weights, metrics_collections,
                      updates_collections, name)


@tf_export("metrics.recall")
def recall(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """tf.metrics.recall(labels, predictions, weights=None, ...): true_positives /
    (true_positives + false_negatives), 0 before any true label."""
    return _hit_ratio("recall", false_negatives, labels, predictions, weights, metrics_collections,
                      updates_collections, name)


@tf_export("metrics.precision_at_thresholds")
def precision_at_thresholds(labels, predictions, thresholds, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    """tf.metrics.precision_at_thresholds(labels, predictions, thresholds, weights=None, ...): per
    threshold, tp / (tp + fp + 1e-7)."""
    with variable_scope(name, "precision_at_thresholds", (predictions, labels, weights)):
        values, updates = confusion_at_thresholds(labels, predictions, thresholds, weights, includes=("tp", "fp"))

        def compute(c, suffix):
            return truediv(c["tp"], _KEPSILON + c["tp"] + c["fp"], name="precision_" + suffix)
        return finish(cross_replica_value(lambda: compute(values, "value")), compute(updates, "update_op"),
                      metrics_collections, updates_collections)


@tf_export("metrics.recall_at_thresholds")
def recall_at_thresholds(labels, predictions, thresholds, weights=None, metrics_collections=None,
                         updates_collections=None, name=None):
    """tf.metrics.recall_at_thresholds(labels, predictions, thresholds, weights=None, ...): per
    threshold, tp / (tp + fn + 1e-7)."""
    with variable_scope(name, "recall_at_thresholds", (predictions, labels, weights)):
        values, updates = confusion_at_thresholds(labels, predictions, thresholds, weights, includes=("tp", "fn"))

        def compute(c, suffix):
            return truediv(c["tp"], _KEPSILON + c["tp"] + c["fn"], name="recall_" + suffix)
        return finish(cross_replica_value(lambda: compute(values, "value")), compute(updates, "update_op"),
                      metrics_collections, updates_collections)


# -- curves ------------------------------------------------------------------------------------------
def _even_thresholds(num_thresholds: int, top: float) -> list:
    inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - _KEPSILON] + inner + [top]


@tf_export("metrics.auc")
def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None, updates_collections=None,
        curve="ROC", name=None, summation_method="trapezoidal", thresholds=None):
    """tf.metrics.auc(labels, predictions, weights=None, num_thresholds=200, ..., curve='ROC',
    name=None, summation_method='trapezoidal', thresholds=None): the area under the ROC or PR
    curve of scores in [0, 1], summed over num_thresholds thresholds (or the given ones, sorted,
    plus the two ends) by the trapezoidal rule, 'careful_interpolation' (PR: Davis & Goadrich),
    'minoring' or 'majoring'."""
    with variable_scope(name, "auc", (labels, predictions, weights)):
        if curve not in ("ROC", "PR"):
            raise ValueError(f"Curve must be either ROC or PR. Curve {curve} is unknown.")
        if thresholds is not None:
            inner = sorted(float(t) for t in thresholds)
            num_thresholds = len(inner) + 2
            thresholds = [0.0 - _KEPSILON] + inner + [1.0 + _KEPSILON]
        else:
            thresholds = _even_thresholds(num_thresholds, 1.0 + _KEPSILON)
        n = num_thresholds
        values, updates = confusion_at_thresholds(labels, predictions, thresholds, weights)
        eps = 1e-6

        def interpolate_pr_auc(tp, fp, fn):
            # precision interpolated along recall between neighbouring thresholds
            dtp = tp[:n - 1] - tp[1:]
            p = tp + fp
            slope = div_no_nan(dtp, maximum(p[:n - 1] - p[1:], 0), name="prec_slope")
            intercept = tp[1:] - multiply(slope, p[1:])
            ratio = where(logical_and(p[:n - 1] > 0, p[1:] > 0),
                          div_no_nan(p[:n - 1], maximum(p[1:], 0), name="recall_relative_ratio"), ones_like(p[1:]))
            return reduce_sum(div_no_nan(slope * (dtp + intercept * log(ratio)), maximum(tp[1:] + fn[1:], 0),
                                         name="pr_auc_increment"), name="interpolate_pr_auc")

        def compute(c, name_):
            tp, fn, tn, fp = c["tp"], c["fn"], c["tn"], c["fp"]
            if curve == "PR":
                if summation_method == "trapezoidal":
                    warning("Trapezoidal rule is known to produce incorrect PR-AUCs; please switch to "
                            "\"careful_interpolation\" instead.")
                elif summation_method == "careful_interpolation":
                    return interpolate_pr_auc(tp, fp, fn)
            rec = truediv(tp + eps, tp + fn + eps)
            if curve == "ROC":
                x, y = truediv(fp, fp + tn + eps), rec
            else:
                x, y = rec, truediv(tp + eps, tp + fp + eps)
            if summation_method in ("trapezoidal", "careful_interpolation"):
                heights = (y[:n - 1] + y[1:]) / 2.0
            elif summation_method == "minoring":
                heights = minimum(y[:n - 1], y[1:])
            elif summation_method == "majoring":
                heights = maximum(y[:n - 1], y[1:])
            else:
                raise ValueError(f"Invalid summation_method: {summation_method} summation_method should be "
                                 "'trapezoidal', 'careful_interpolation', 'minoring', or 'majoring'.")
            return reduce_sum(multiply(x[:n - 1] - x[1:], heights), name=name_)

        return finish(cross_replica_value(lambda: compute(values, "value")), compute(updates, "update_op"),
                      metrics_collections, updates_collections)


@tf_export("metrics.sensitivity_at_specificity")
def sensitivity_at_specificity(labels, predictions, specificity, weights=None, num_thresholds=200,
                               metrics_collections=None, updates_collections=None, name=None):
    """tf.metrics.sensitivity_at_specificity(labels, predictions, specificity, weights=None,
    num_thresholds=200, ...): the recall at the threshold whose specificity is closest to
    `specificity` (the first such threshold)."""
    if specificity < 0 or specificity > 1:
        raise ValueError(f"`specificity` must be in the range [0, 1]. Currently, `specificity` got {specificity}.")
    with variable_scope(name, "sensitivity_at_specificity", (predictions, labels, weights)):
        thresholds = _even_thresholds(num_thresholds, 1.0 + _KEPSILON)
        values, updates = confusion_at_thresholds(labels, predictions, thresholds, weights)

        def compute(c, name_):
            specificities = truediv(c["tn"], c["tn"] + c["fp"] + _KEPSILON)
            index = cast(argmin(abs_(specificities - specificity), 0), dtypes.int32)
            tp, fn = gather(c["tp"], index), gather(c["fn"], index)
            return truediv(tp, tp + fn + _KEPSILON, name=name_)
        return finish(cross_replica_value(lambda: compute(values, "value")), compute(updates, "update_op"),
                      metrics_collections, updates_collections)


@tf_export("metrics.specificity_at_sensitivity")
def specificity_at_sensitivity(labels, predictions, sensitivity, weights=None, num_thresholds=200,
                               metrics_collections=None, updates_collections=None, name=None):
    """tf.metrics.specificity_at_sensitivity(labels, predictions, sensitivity, weights=None,
    num_thresholds=200, ...): the specificity at the threshold whose sensitivity is closest to
    `sensitivity` (the last such threshold; TF's thresholds end at 1 - 1e-7 here)."""
    if sensitivity < 0 or sensitivity > 1:
        raise ValueError(f"`sensitivity` must be in the range [0, 1]. Currently, `sensitivity` is {sensitivity}.")
    with variable_scope(name, "specificity_at_sensitivity", (predictions, labels, weights)):
        thresholds = _even_thresholds(num_thresholds, 1.0 - _KEPSILON)
        values, updates = confusion_at_thresholds(labels, predictions, thresholds, weights)

        def compute(c, name_):
            distance = abs_(truediv(c["tp"], c["tp"] + c["fn"] + _KEPSILON) - sensitivity)
            at_min = cumsum(cast(equal(distance, reduce_min(distance)), dtypes.int64))
            index = cast(argmax(at_min, 0), dtypes.int32)
            tn, fp = gather(c["tn"], index), gather(c["fp"], index)
            return truediv(tn, tn + fp + _KEPSILON, name=name_)
        return finish(cross_replica_value(lambda: compute(values, "value")), compute(updates, "update_op"),
                      metrics_collections, updates_collections)
