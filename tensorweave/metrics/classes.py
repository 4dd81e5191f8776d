"""Multi-class metrics over a streaming confusion matrix: tf.metrics.mean_iou and
tf.metrics.mean_per_class_accuracy."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.api import control_dependencies
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import reshape, size
from tensorweave.ops.array.fill import ones, ones_like
from tensorweave.ops.array.gather import gather
from tensorweave.ops.array.sort import where
from tensorweave.ops.debugging.asserts import assert_less, assert_non_negative
from tensorweave.ops.math.binary import div_no_nan, equal, greater, maximum, multiply, not_equal, truediv
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_mean, reduce_sum
from tensorweave.ops.math.segment import unsorted_segment_sum
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.state.scatter import scatter_add
from tensorweave.ops.state.variable_ops import assign_add
from tensorweave.ops.state.variable_scope import variable_scope
from tensorweave.metrics.base import cross_replica_value, finish, metric_variable


def _flat(t):
    t = convert_to_tensor(t)
    return reshape(t, [-1]) if t.shape.ndims is None or t.shape.ndims > 1 else t


def batch_confusion_matrix(labels, predictions, num_classes: int, weights):
    """The [num_classes, num_classes] float64 confusion matrix of one batch: rows are labels,
    columns predictions, entries the summed weights (TF's tf.math.confusion_matrix)."""
    labels, predictions = cast(_flat(labels), dtypes.int64), cast(_flat(predictions), dtypes.int64)
    checks = [assert_non_negative(labels, message="`labels` contains negative values"),
              assert_non_negative(predictions, message="`predictions` contains negative values"),
              assert_less(labels, cast(num_classes, dtypes.int64), message="`labels` out of bound"),
              assert_less(predictions, cast(num_classes, dtypes.int64), message="`predictions` out of bound")]
    with control_dependencies(checks):
        cell = labels * num_classes + predictions
    w = ones_like(cell, dtype=dtypes.float64) if weights is None else cast(_flat(weights), dtypes.float64)
    counts = unsorted_segment_sum(w * ones_like(cell, dtype=dtypes.float64), cell, num_classes * num_classes)
    return reshape(counts, [num_classes, num_classes])


@tf_export("metrics.mean_iou")
def mean_iou(labels, predictions, num_classes, weights=None, metrics_collections=None, updates_collections=None,
             name=None):
    """tf.metrics.mean_iou(labels, predictions, num_classes, weights=None, ...): the mean over
    classes (that appear in labels or predictions) of intersection over union,
    tp / (tp + fp + fn), from a streaming confusion matrix "mean_iou/total_confusion_matrix";
    update_op evaluates to that matrix, as in TF."""
    with variable_scope(name, "mean_iou", (predictions, labels, weights)):
        convert_to_tensor(predictions).shape.assert_is_compatible_with(convert_to_tensor(labels).shape)
        total_cm = metric_variable([num_classes, num_classes], dtypes.float64, name="total_confusion_matrix")
        update_op = assign_add(total_cm, batch_confusion_matrix(labels, predictions, num_classes, weights))
        def value():
            cm = convert_to_tensor(total_cm)
            over_rows = cast(reduce_sum(cm, 0), dtypes.float32)
            over_cols = cast(reduce_sum(cm, 1), dtypes.float32)
            diag = cast(gather(reshape(cm, [-1]), range_(0, num_classes * num_classes, num_classes + 1)),
                        dtypes.float32)
            denominator = over_rows + over_cols - diag
            num_valid = reduce_sum(cast(not_equal(denominator, 0), dtypes.float32))
            denominator = where(greater(denominator, 0), denominator, ones_like(denominator))
            iou = truediv(diag, denominator)
            return where(greater(num_valid, 0), reduce_sum(iou, name="mean_iou") / num_valid, 0.0)
        return finish(cross_replica_value(value), update_op, metrics_collections, updates_collections)


@tf_export("metrics.mean_per_class_accuracy")
def mean_per_class_accuracy(labels, predictions, num_classes, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    """tf.metrics.mean_per_class_accuracy(labels, predictions, num_classes, weights=None, ...):
    the mean over classes of each class's (weighted) accuracy; local variables
    "mean_accuracy/total" and "mean_accuracy/count" per class. As in TF, update_op evaluates
    to the vector of per-class accuracies."""
    with variable_scope(name, "mean_accuracy", (predictions, labels, weights)):
        labels = cast(_flat(labels), dtypes.int64)
        predictions = _flat(predictions)
        predictions.shape.assert_is_compatible_with(labels.shape)
        total = metric_variable([num_classes], dtypes.float32, name="total")
        count = metric_variable([num_classes], dtypes.float32, name="count")
        weight = ones([size(labels)], dtypes.float32)
        if labels.dtype != predictions.dtype:
            predictions = cast(predictions, labels.dtype)
        is_correct = cast(equal(predictions, labels), dtypes.float32)
        if weights is not None:
            w = cast(_flat(weights), dtypes.float32)
            is_correct, weight = multiply(is_correct, w), multiply(weight, w)
        update_total = scatter_add(total, labels, weight)
        update_count = scatter_add(count, labels, is_correct)
        value = cross_replica_value(lambda: reduce_mean(div_no_nan(count, maximum(total, 0)), name="mean_accuracy"))
        update_op = div_no_nan(update_count, maximum(update_total, 0), name="update_op")
        return finish(value, update_op, metrics_collections, updates_collections)
