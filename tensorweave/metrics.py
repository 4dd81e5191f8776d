"""tf.metrics: streaming metrics. Each returns (value, update_op); their state is local
variables (LOCAL_VARIABLES and METRIC_VARIABLES), reset by local_variables_initializer()."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.api import GraphKeys, add_to_collections, control_dependencies
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.ops.array.core import constant, expand_dims, identity, reshape, squeeze
from tensorweave.ops.array.fill import ones_like, zeros, zeros_like
from tensorweave.ops.array.pad import tile
from tensorweave.ops.array.sort import where
from tensorweave.ops.math.binary import (div_no_nan, equal, greater, logical_and, logical_not, maximum, minimum,
                                         multiply, truediv)
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.math.unary import log
from tensorweave.ops.state.variable_ops import assign_add
from tensorweave.ops.state.variable_scope import variable_scope
from tensorweave.ops.state.variables import Variable


def _metric_variable(shape, dtype, name: str):
    return Variable(lambda: zeros(shape, dtype), trainable=False,
                       collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES], name=name)


def _safe_div(numerator, denominator, name: str):
    """numerator / denominator where denominator > 0, else 0 (TF1 metrics' _safe_div)."""
    positive = greater(denominator, 0)
    safe = where(positive, denominator, ones_like(denominator))
    return where(positive, truediv(numerator, safe), zeros_like(numerator), name=name)


def _remove_squeezable_dimensions(predictions, labels, weights):
    """TF1 metrics' helper: drops a trailing size-1 dim of labels or predictions when their ranks
    differ by one, and squeezes or expands weights' last dim to predictions' rank (static ranks)."""
    predictions = convert_to_tensor(predictions)
    if labels is not None:
        labels = convert_to_tensor(labels)
        lr, pr = labels.shape.ndims, predictions.shape.ndims
        if lr is not None and pr is not None:
            if pr - lr == 1 and predictions.shape[-1].is_compatible_with(1):
                predictions = squeeze(predictions, [-1])
            elif pr - lr == -1 and labels.shape[-1].is_compatible_with(1):
                labels = squeeze(labels, [-1])
        predictions.shape.assert_is_compatible_with(labels.shape)
    if weights is None:
        return predictions, labels, None
    weights = convert_to_tensor(weights)
    wr, pr = weights.shape.ndims, predictions.shape.ndims
    if wr and pr is not None:
        if wr - pr == 1:
            weights = squeeze(weights, [-1])
        elif pr - wr == 1:
            weights = expand_dims(weights, -1)
    return predictions, labels, weights


def _collect(collections, value) -> None:
    if collections:
        add_to_collections(collections, value)


def _weights_like(values, weights):
    if weights is None:
        return ones_like(values)
    return cast(weights, values.dtype) * ones_like(values)


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """tf.metrics.mean: the (weighted) mean of all values seen; returns (mean, update_op)."""
    with variable_scope(name, "mean", (values, weights)):
        values = cast(values, dtypes.float32)
        if weights is not None:
            values, _, weights = _remove_squeezable_dimensions(values, None, weights)
        total = _metric_variable([], dtypes.float32, "total")
        count = _metric_variable([], dtypes.float32, "count")
        w = _weights_like(values, weights)
        update_total = assign_add(total, reduce_sum(values * w))
        with control_dependencies([values]):
            update_count = assign_add(count, reduce_sum(w))
        mean_t = _safe_div(total, count, "value")
        update_op = _safe_div(update_total, update_count, "update_op")
        _collect(metrics_collections, mean_t)
        _collect(updates_collections, update_op)
        return mean_t, update_op


def accuracy(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """tf.metrics.accuracy: how often predictions equal labels; returns (accuracy, update_op)."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    if labels.dtype != predictions.dtype:
        predictions = cast(predictions, labels.dtype)
    is_correct = cast(equal(predictions, labels), dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections, name or "accuracy")


def _count(condition, weights, name: str):
    """tf.metrics.true_positives & co: a local counter "<name>/count" of the (weighted) true
    elements of `condition`; returns (value, update)."""
    with variable_scope(None, name, (condition, weights)):
        var = _metric_variable([], dtypes.float32, "count")
        c = cast(condition, dtypes.float32)
        if weights is not None:
            c = multiply(c, cast(weights, dtypes.float32))
        return identity(var), assign_add(var, reduce_sum(c))


def precision(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """tf.metrics.precision: true_positives / (true_positives + false_positives)."""
    with variable_scope(name, "precision", (predictions, labels, weights)):
        predictions, labels, weights = _remove_squeezable_dimensions(
            cast(predictions, dtypes.bool), cast(labels, dtypes.bool), weights)
        tp, tp_up = _count(logical_and(labels, predictions), weights, "true_positives")
        fp, fp_up = _count(logical_and(logical_not(labels), predictions), weights, "false_positives")
        value = _safe_div(tp, tp + fp, "value")
        update_op = _safe_div(tp_up, tp_up + fp_up, "update_op")
        _collect(metrics_collections, value)
        _collect(updates_collections, update_op)
        return value, update_op


def recall(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """tf.metrics.recall: true_positives / (true_positives + false_negatives)."""
    with variable_scope(name, "recall", (predictions, labels, weights)):
        predictions, labels, weights = _remove_squeezable_dimensions(
            cast(predictions, dtypes.bool), cast(labels, dtypes.bool), weights)
        tp, tp_up = _count(logical_and(labels, predictions), weights, "true_positives")
        fn, fn_up = _count(logical_and(labels, logical_not(predictions)), weights, "false_negatives")
        value = _safe_div(tp, tp + fn, "value")
        update_op = _safe_div(tp_up, tp_up + fn_up, "update_op")
        _collect(metrics_collections, value)
        _collect(updates_collections, update_op)
        return value, update_op


def auc(labels, predictions, weights=None, num_thresholds: int = 200, metrics_collections=None,
        updates_collections=None, curve: str = "ROC", name=None, summation_method: str = "trapezoidal",
        thresholds=None):
    """tf.metrics.auc: area under the ROC or PR curve from confusion counts at fixed thresholds."""
    if curve not in ("ROC", "PR"):
        raise ValueError(f"curve must be either ROC or PR, {curve} unknown")
    if summation_method not in ("trapezoidal", "careful_interpolation", "minoring", "majoring"):
        raise ValueError(f"Invalid summation_method: {summation_method}")
    kepsilon = 1e-7   # the outer thresholds, just beyond [0, 1]
    eps = 1e-6        # keeps the rates' denominators off zero (TF's value)
    if thresholds is None:
        thresholds = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        thresholds = [0.0 - kepsilon] + thresholds + [1.0 + kepsilon]
    else:
        thresholds = [0.0 - kepsilon] + list(thresholds) + [1.0 + kepsilon]
    n = len(thresholds)
    with variable_scope(name, "auc", (labels, predictions, weights)):
        predictions, labels, weights = _remove_squeezable_dimensions(
            cast(predictions, dtypes.float32), cast(labels, dtypes.bool), weights)
        labels = reshape(labels, [1, -1])
        predictions = reshape(predictions, [1, -1])
        thresh = reshape(constant(thresholds, dtype=dtypes.float32), [n, 1])
        pred_pos = greater(tile(predictions, [n, 1]), thresh)
        label_pos = tile(labels, [n, 1])
        w = ones_like(cast(pred_pos, dtypes.float32))
        if weights is not None:
            w = w * reshape(cast(weights, dtypes.float32) * ones_like(predictions), [1, -1])
        counts = {}
        updates = {}
        for key, cond in (("true_positives", logical_and(label_pos, pred_pos)),
                          ("false_negatives", logical_and(label_pos, logical_not(pred_pos))),
                          ("true_negatives", logical_and(logical_not(label_pos), logical_not(pred_pos))),
                          ("false_positives", logical_and(logical_not(label_pos), pred_pos))):
            var = _metric_variable([n], dtypes.float32, key)
            counts[key] = var
            updates[key] = assign_add(var, reduce_sum(cast(cond, dtypes.float32) * w, axis=1))

        def interpolate_pr_auc(tp, fp, fn, name_):
            # Davis & Goadrich 2006: precision interpolated along recall between thresholds
            dtp = tp[:n - 1] - tp[1:]
            p = tp + fp
            prec_slope = div_no_nan(dtp, maximum(p[:n - 1] - p[1:], 0), name="prec_slope")
            intercept = tp[1:] - multiply(prec_slope, p[1:])
            safe_p_ratio = where(logical_and(p[:n - 1] > 0, p[1:] > 0),
                                 div_no_nan(p[:n - 1], maximum(p[1:], 0), name="recall_relative_ratio"),
                                 ones_like(p[1:]))
            return reduce_sum(div_no_nan(prec_slope * (dtp + intercept * log(safe_p_ratio)),
                                               maximum(tp[1:] + fn[1:], 0), name="pr_auc_increment"),
                              name=name_)

        def compute(c, name_):
            tp, fn, tn, fp = c["true_positives"], c["false_negatives"], c["true_negatives"], c["false_positives"]
            if curve == "PR" and summation_method == "careful_interpolation":
                return interpolate_pr_auc(tp, fp, fn, name_)
            rec = truediv(tp + eps, tp + fn + eps)
            if curve == "ROC":
                x = truediv(fp, fp + tn + eps)
                y = rec
            else:
                x = rec
                y = truediv(tp + eps, tp + fp + eps)
            if summation_method in ("trapezoidal", "careful_interpolation"):
                heights = (y[:n - 1] + y[1:]) / 2.0
            elif summation_method == "minoring":
                heights = minimum(y[:n - 1], y[1:])
            else:
                heights = maximum(y[:n - 1], y[1:])
            return reduce_sum(multiply(x[:n - 1] - x[1:], heights), name=name_)

        value = compute({k: convert_to_tensor(v) for k, v in counts.items()}, "value")
        update_op = compute(updates, "update_op")
        _collect(metrics_collections, value)
        _collect(updates_collections, update_op)
        return value, update_op
