"""tf.contrib.metrics (also tf.contrib.slim.metrics): the streaming_* metrics, TF1's aliases of
tf.metrics with predictions first (each returns (value, update_op) over local variables), and
aggregate_metrics / aggregate_metric_map, which split many such pairs into values and updates."""
from __future__ import annotations

from tensorweave import _api
from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.metrics import classes, confusion, means
from tensorweave.ops.array.fill import ones_like
from tensorweave.ops.math.binary import equal, multiply
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_mean, reduce_sum

__getattr__, __dir__ = _api.lazy_attributes(__name__)


@tf_export("contrib.metrics.accuracy")
def accuracy(predictions, labels, weights=None, name=None):
    """tf.contrib.metrics.accuracy: the (weighted) fraction of predictions equal to labels, in
    this batch alone (not streaming)."""
    with name_scope(name, "accuracy", [predictions, labels, weights]):
        predictions, labels = convert_to_tensor(predictions), convert_to_tensor(labels)
        if predictions.dtype != labels.dtype:
            raise ValueError(f"Dtypes of predictions and labels should match. Given: predictions "
                             f"({predictions.dtype.name}) and labels ({labels.dtype.name})")
        correct = cast(equal(predictions, labels), dtypes.float32)
        if weights is None:
            return reduce_mean(correct)
        weights = cast(convert_to_tensor(weights), dtypes.float32)
        return reduce_sum(multiply(correct, weights)) / reduce_sum(multiply(weights, ones_like(correct)))


@tf_export("contrib.metrics.streaming_accuracy")
def streaming_accuracy(predictions, labels, weights=None, metrics_collections=None, updates_collections=None,
                       name=None):
    """tf.contrib.metrics.streaming_accuracy: tf.metrics.accuracy(labels, predictions)."""
    return means.accuracy(labels, predictions, weights, metrics_collections, updates_collections, name)


@tf_export("contrib.metrics.streaming_mean")
def streaming_mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """tf.contrib.metrics.streaming_mean: tf.metrics.mean."""
    return means.mean(values, weights, metrics_collections, updates_collections, name)


@tf_export("contrib.metrics.streaming_mean_tensor")
def streaming_mean_tensor(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """tf.contrib.metrics.streaming_mean_tensor: tf.metrics.mean_tensor."""
    return means.mean_tensor(values, weights, metrics_collections, updates_collections, name)


def _alias(metric, doc: str):
    def streaming(predictions, labels, weights=None, metrics_collections=None, updates_collections=None,
                  name=None):
        return metric(labels, predictions, weights, metrics_collections, updates_collections, name)
    streaming.__doc__ = doc
    return streaming


streaming_mean_absolute_error = _alias(means.mean_absolute_error, "tf.metrics.mean_absolute_error(labels, predictions)")
streaming_mean_squared_error = _alias(means.mean_squared_error, "tf.metrics.mean_squared_error(labels, predictions)")
streaming_root_mean_squared_error = _alias(means.root_mean_squared_error,
                                           "tf.metrics.root_mean_squared_error(labels, predictions)")
streaming_precision = _alias(confusion.precision, "tf.metrics.precision(labels, predictions)")
streaming_recall = _alias(confusion.recall, "tf.metrics.recall(labels, predictions)")
streaming_true_positives = _alias(confusion.true_positives, "tf.metrics.true_positives(labels, predictions)")
streaming_false_positives = _alias(confusion.false_positives, "tf.metrics.false_positives(labels, predictions)")
streaming_true_negatives = _alias(confusion.true_negatives, "tf.metrics.true_negatives(labels, predictions)")
streaming_false_negatives = _alias(confusion.false_negatives, "tf.metrics.false_negatives(labels, predictions)")
tf_export("contrib.metrics.streaming_mean_absolute_error")(streaming_mean_absolute_error)
tf_export("contrib.metrics.streaming_mean_squared_error")(streaming_mean_squared_error)
tf_export("contrib.metrics.streaming_root_mean_squared_error")(streaming_root_mean_squared_error)
tf_export("contrib.metrics.streaming_precision")(streaming_precision)
tf_export("contrib.metrics.streaming_recall")(streaming_recall)
tf_export("contrib.metrics.streaming_true_positives")(streaming_true_positives)
tf_export("contrib.metrics.streaming_false_positives")(streaming_false_positives)
tf_export("contrib.metrics.streaming_true_negatives")(streaming_true_negatives)
tf_export("contrib.metrics.streaming_false_negatives")(streaming_false_negatives)


@tf_export("contrib.metrics.streaming_auc")
def streaming_auc(predictions, labels, weights=None, num_thresholds=200, metrics_collections=None,
                  updates_collections=None, curve="ROC", name=None, summation_method="trapezoidal"):
    """tf.contrib.metrics.streaming_auc: tf.metrics.auc(labels, predictions, ...)."""
    return confusion.auc(labels, predictions, weights, num_thresholds, metrics_collections, updates_collections,
                         curve, name, summation_method)


@tf_export("contrib.metrics.streaming_mean_iou")
def streaming_mean_iou(predictions, labels, num_classes, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    """tf.contrib.metrics.streaming_mean_iou: tf.metrics.mean_iou(labels, predictions, num_classes)."""
    return classes.mean_iou(labels, predictions, num_classes, weights, metrics_collections, updates_collections,
                            name)


@tf_export("contrib.metrics.aggregate_metrics")
def aggregate_metrics(*value_update_tuples):
    """tf.contrib.metrics.aggregate_metrics((value, update), ...): ([values], [updates])."""
    if not value_update_tuples:
        raise ValueError("Expected at least one value_tensor/update_op pair")
    values, updates = zip(*value_update_tuples)
    return list(values), list(updates)


@tf_export("contrib.metrics.aggregate_metric_map")
def aggregate_metric_map(names_to_tuples):
    """tf.contrib.metrics.aggregate_metric_map({name: (value, update)}): ({name: value},
    {name: update})."""
    names = list(names_to_tuples)
    values, updates = aggregate_metrics(*[names_to_tuples[n] for n in names])
    return dict(zip(names, values)), dict(zip(names, updates))
