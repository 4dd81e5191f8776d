"""Ranking metrics over the top k predicted classes: tf.metrics.precision_at_k, recall_at_k,
precision_at_top_k, recall_at_top_k, average_precision_at_k and the deprecated sparse_* names.

Labels are dense int tensors [D1, ..., DN, num_labels] (or [D1, ..., DN], one label each), or a
SparseTensor [D1, ..., DN, num_labels] whose present entries are each row's labels; predictions
and labels are compared as sets per row, as TF's set operations do: every dense label entry is a
member (a repeated one counts once; average_precision_at_k drops labels outside
[0, num_classes))."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.sparse_tensor import SparseTensor, SparseTensorValue
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import expand_dims, shape, size
from tensorweave.ops.array.fill import ones_like
from tensorweave.ops.array.sort import top_k, where
from tensorweave.ops.control_flow.cond import cond
from tensorweave.ops.math.binary import (add, equal, greater_equal, less, logical_and, logical_not, minimum, multiply,
                                         not_equal, truediv)
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import cumsum, reduce_any, reduce_max, reduce_sum
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.sparse.core import sparse_tensor_to_dense
from tensorweave.ops.state.variable_ops import assign_add
from tensorweave.metrics.base import broadcast_weights, cross_replica_value, finish, metric_variable, safe_mean


def _at_k_name(name: str, k=None, class_id=None) -> str:
    name = f"{name}_at_{k}" if k is not None else f"{name}_at_k"
    return f"{name}_class{class_id}" if class_id is not None else name


_NOT_A_LABEL = -(2 ** 63)   # what the missing entries of SparseTensor labels become: no class id


def _dense_labels(labels):
    """(dense int64 labels, whether each entry is a label or None when all are): a SparseTensor's
    missing entries become _NOT_A_LABEL, which no predicted class id equals."""
    if isinstance(labels, (SparseTensor, SparseTensorValue)):
        sp = SparseTensor.from_value(labels)
        dense = sparse_tensor_to_dense(SparseTensor(sp.indices, cast(sp.values, dtypes.int64), sp.dense_shape),
                                       default_value=_NOT_A_LABEL, validate_indices=False)
        return dense, not_equal(dense, _NOT_A_LABEL)
    if hasattr(labels, "indices") and hasattr(labels, "dense_shape"):
        raise TypeError(f"labels must be a Tensor or a SparseTensor, got {type(labels).__name__}")
    return cast(convert_to_tensor(labels), dtypes.int64), None


def _expand_labels(labels, predictions):
    """Labels with predictions' rank: a trailing num_labels=1 dimension added when missing."""
    lr, pr = labels.shape.ndims, predictions.shape.ndims
    if lr is None or pr is None:
        raise ValueError(f"The ranks of labels {labels.shape} and predictions {predictions.shape} must be known")
    if pr == lr:
        return labels
    if pr == lr + 1:
        return expand_dims(labels, -1)
    raise ValueError(f"Unexpected labels shape {labels.shape} for predictions shape {predictions.shape}. "
                     "Predictions rank should be the same rank as labels rank or labels rank plus one .")


def _first_occurrence(x):
    """Along the last axis, whether each entry is the first with its value (set membership)."""
    n = range_(shape(x)[-1])
    earlier = less(expand_dims(n, 0), expand_dims(n, 1))                       # [i, j]: j < i
    same = equal(expand_dims(x, -1), expand_dims(x, -2))
    return logical_not(reduce_any(logical_and(same, earlier), axis=-1))


def _set_counts(labels, predictions_idx, class_id, label_valid=None):
    """Per row: (|P & L|, |P - L|, |L - P|) of the predicted and label sets (the entries of
    labels where label_valid, when given), restricted to {class_id} when given; float64."""
    match = equal(expand_dims(predictions_idx, -1), expand_dims(labels, -2))   # [..., k, num_labels]
    pred_members = _first_occurrence(predictions_idx)
    label_members = _first_occurrence(labels)
    if label_valid is not None:
        label_members = logical_and(label_members, label_valid)
    if class_id is not None:
        pred_members = logical_and(pred_members, equal(predictions_idx, class_id))
        label_members = logical_and(label_members, equal(labels, class_id))
    pred_in_labels = reduce_any(match, axis=-1)
    label_in_preds = reduce_any(match, axis=-2)

    def count(mask):
        return reduce_sum(cast(mask, dtypes.float64), axis=-1)
    tp = count(logical_and(pred_members, pred_in_labels))
    fp = count(logical_and(pred_members, logical_not(pred_in_labels)))
    return tp, fp, count(logical_and(label_members, logical_not(label_in_preds)))


def _streaming_count(per_row, weights, counter_name: str):
    """A float64 local counter named after the open scope plus `counter_name`, and its update."""
    if weights is not None:
        per_row = multiply(per_row, cast(weights, dtypes.float64))
    with name_scope(None, counter_name, [per_row]) as scope:
        var = metric_variable([], dtypes.float64, name=scope)
        return var, assign_add(var, reduce_sum(per_row), name="update")


def _top_k_metric(kind: str, labels, predictions_idx, k, class_id, weights, metrics_collections, updates_collections,
                  name):
    """precision (kind 'precision': tp / (tp + fp)) or recall ('recall': tp / (tp + fn))."""
    with name_scope(name, _at_k_name(kind, k, class_id), (predictions_idx, labels, weights)) as scope:
        predictions_idx = cast(convert_to_tensor(predictions_idx), dtypes.int64)
        labels, valid = _dense_labels(labels)
        labels = _expand_labels(labels, predictions_idx)
        if valid is not None:
            valid = _expand_labels(valid, predictions_idx)
        tp_rows, fp_rows, fn_rows = _set_counts(labels, predictions_idx, class_id, valid)
        tp, tp_update = _streaming_count(tp_rows, weights, _at_k_name("true_positive", k, class_id))
        if kind == "precision":
            other, other_update = _streaming_count(fp_rows, weights, _at_k_name("false_positive", k, class_id))
        else:
            other, other_update = _streaming_count(fn_rows, weights, _at_k_name("false_negative", k, class_id))
        value = cross_replica_value(lambda: truediv(tp, add(tp, other), name=scope))
        update = truediv(tp_update, add(tp_update, other_update), name="update")
        return finish(value, update, metrics_collections, updates_collections)


@tf_export("metrics.precision_at_top_k")
def precision_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    """tf.metrics.precision_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None,
    ...): of the predicted class ids (e.g. tf.nn.top_k's indices), the fraction that are labels;
    for one class when class_id is given. NaN until something is predicted, as in TF."""
    return _top_k_metric("precision", labels, predictions_idx, k, class_id, weights, metrics_collections,
                         updates_collections, name)


@tf_export("metrics.recall_at_top_k")
def recall_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None, metrics_collections=None,
                    updates_collections=None, name=None):
    """tf.metrics.recall_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None,
    ...): of the labels, the fraction among the predicted class ids."""
    return _top_k_metric("recall", labels, predictions_idx, k, class_id, weights, metrics_collections,
                         updates_collections, name)


@tf_export("metrics.precision_at_k")
def precision_at_k(labels, predictions, k, class_id=None, weights=None, metrics_collections=None,
                   updates_collections=None, name=None):
    """tf.metrics.precision_at_k(labels, predictions, k, class_id=None, weights=None, ...):
    precision_at_top_k of the k highest-scoring classes of `predictions` [..., num_classes]."""
    with name_scope(name, _at_k_name("precision", k, class_id), (predictions, labels, weights)) as scope:
        _, idx = top_k(predictions, k)
        return precision_at_top_k(labels, idx, k, class_id, weights, metrics_collections, updates_collections, scope)


@tf_export("metrics.recall_at_k")
def recall_at_k(labels, predictions, k, class_id=None, weights=None, metrics_collections=None,
                updates_collections=None, name=None):
    """tf.metrics.recall_at_k(labels, predictions, k, class_id=None, weights=None, ...):
    recall_at_top_k of the k highest-scoring classes of `predictions`."""
    with name_scope(name, _at_k_name("recall", k, class_id), (predictions, labels, weights)) as scope:
        _, idx = top_k(predictions, k)
        return recall_at_top_k(labels, idx, k, class_id, weights, metrics_collections, updates_collections, scope)


@tf_export("metrics.sparse_precision_at_k")
def sparse_precision_at_k(labels, predictions, k, class_id=None, weights=None, metrics_collections=None,
                          updates_collections=None, name=None):
    """tf.metrics.sparse_precision_at_k: the deprecated name of precision_at_k."""
    return precision_at_k(labels, predictions, k, class_id, weights, metrics_collections, updates_collections, name)


# -- average precision ------------------------------------------------------------------------------
def _average_precision(labels, predictions_idx):
    """Per row: the mean over the first min(#labels, k) ranks of the precision at each rank that
    retrieved a label (labels < 0 are not labels)."""
    with name_scope(None, "average_precision", (predictions_idx, labels)) as scope:
        predictions_idx = cast(predictions_idx, dtypes.int64, name="predictions_idx")
        k = predictions_idx.shape.as_list()[-1] if predictions_idx.shape.ndims else None
        if k is None:
            raise ValueError("The last dimension of predictions_idx must be set. Currently, it is None.")
        labels = _expand_labels(labels, predictions_idx)
        relevant = cast(reduce_any(equal(expand_dims(predictions_idx, -1), expand_dims(labels, -2)), axis=-1),
                        dtypes.float64)
        precision_per_k = truediv(cumsum(relevant, axis=-1), cumsum(ones_like(relevant), axis=-1))
        precision_sum = reduce_sum(multiply(precision_per_k, relevant), axis=-1, name="precision_sum")
        num_labels = reduce_sum(cast(greater_equal(labels, 0), dtypes.float64), axis=-1)
        return truediv(precision_sum, minimum(num_labels, float(k)), name=scope)


@tf_export("metrics.average_precision_at_k")
def average_precision_at_k(labels, predictions, k, weights=None, metrics_collections=None, updates_collections=None,
                           name=None):
    """tf.metrics.average_precision_at_k(labels, predictions, k, weights=None, ...): the mean over
    rows (weighted) of the average precision of the top k predicted classes."""
    if k < 1:
        raise ValueError(f"Invalid k={k}. `k` should be >= 1.")
    with name_scope(name, _at_k_name("average_precision", k), (predictions, labels, weights)) as scope:
        predictions = convert_to_tensor(predictions)
        _, idx = top_k(predictions, k)
        labels, _ = _dense_labels(labels)   # missing sparse entries are negative: not labels here
        num_classes = cast(shape(predictions)[-1], dtypes.int64)
        labels = cond(greater_equal(reduce_max(labels), num_classes),
                      lambda: where(greater_equal(labels, num_classes), -1 * ones_like(labels), labels),
                      lambda: labels)
        ap = _average_precision(labels, idx)
        if weights is not None:
            weights = broadcast_weights(cast(weights, dtypes.float64), ap)
            ap = multiply(ap, weights)
        with name_scope(None, "max", (ap,)) as max_scope:
            max_var = metric_variable([], dtypes.float64, name=max_scope)
            batch_max = cast(size(ap), dtypes.float64) if weights is None else reduce_sum(weights)
            max_update = assign_add(max_var, batch_max, name="update")
        with name_scope(None, "total", (ap,)) as total_scope:
            total_var = metric_variable([], dtypes.float64, name=total_scope)
            total_update = assign_add(total_var, reduce_sum(ap), name="update")
        return finish(cross_replica_value(lambda: safe_mean(total_var, max_var, "mean")),
                      safe_mean(total_update, max_update, scope),
                      metrics_collections, updates_collections)


@tf_export("metrics.sparse_average_precision_at_k")
def sparse_average_precision_at_k(labels, predictions, k, weights=None, metrics_collections=None,
                                  updates_collections=None, name=None):
    """tf.metrics.sparse_average_precision_at_k: the deprecated name of average_precision_at_k."""
    return average_precision_at_k(labels, predictions, k, weights, metrics_collections, updates_collections, name)
