"""Streaming means: tf.metrics.mean, mean_tensor, accuracy, mean_absolute_error,
mean_squared_error, root_mean_squared_error, mean_relative_error, mean_cosine_distance and
percentage_below (each a mean of some per-element quantity)."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.api import control_dependencies
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.fill import ones_like, zeros_like
from tensorweave.ops.array.core import size
from tensorweave.ops.array.sort import where
from tensorweave.ops.math.binary import equal, less, multiply, squared_difference, subtract, truediv
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.math.unary import abs as abs_, sqrt
from tensorweave.ops.state.variable_ops import assign_add
from tensorweave.ops.state.variable_scope import variable_scope
from tensorweave.metrics.base import (broadcast_weights, cross_replica_value, finish, metric_variable,
                                      remove_squeezable_dimensions, safe_mean, squeeze_pair)


@tf_export("metrics.mean")
def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """tf.metrics.mean(values, weights=None, metrics_collections=None, updates_collections=None,
    name=None): the (weighted) mean of every value seen; local variables "mean/total" and
    "mean/count"."""
    with variable_scope(name, "mean", (values, weights)):
        values = cast(values, dtypes.float32)
        total = metric_variable([], dtypes.float32, name="total")
        count = metric_variable([], dtypes.float32, name="count")
        if weights is None:
            num_values = cast(size(values), dtypes.float32)
        else:
            values, _, weights = remove_squeezable_dimensions(values, None, weights)
            weights = broadcast_weights(cast(weights, dtypes.float32), values)
            values = multiply(values, weights)
            num_values = reduce_sum(weights)
        update_total = assign_add(total, reduce_sum(values))
        with control_dependencies([values]):
            update_count = assign_add(count, num_values)
        return finish(cross_replica_value(lambda: safe_mean(total, count, "value")),
                      safe_mean(update_total, update_count, "update_op"),
                      metrics_collections, updates_collections)


@tf_export("metrics.mean_tensor")
def mean_tensor(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """tf.metrics.mean_tensor(values, weights=None, ...): the elementwise (weighted) mean of
    tensors of one fully defined shape; variables "mean/total_tensor", "mean/count_tensor"."""
    with variable_scope(name, "mean", (values, weights)):
        values = cast(values, dtypes.float32)
        if not values.shape.is_fully_defined():
            raise ValueError(f"mean_tensor needs values of a fully defined shape, got {values.shape}")
        total = metric_variable(values.shape.as_list(), dtypes.float32, name="total_tensor")
        count = metric_variable(values.shape.as_list(), dtypes.float32, name="count_tensor")
        num_values = ones_like(values)
        if weights is not None:
            values, _, weights = remove_squeezable_dimensions(values, None, weights)
            weights = broadcast_weights(cast(weights, dtypes.float32), values)
            values = multiply(values, weights)
            num_values = multiply(num_values, weights)
        update_total = assign_add(total, values)
        with control_dependencies([values]):
            update_count = assign_add(count, num_values)
        return finish(cross_replica_value(lambda: safe_mean(total, count, "value")),
                      safe_mean(update_total, update_count, "update_op"),
                      metrics_collections, updates_collections)


@tf_export("metrics.accuracy")
def accuracy(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """tf.metrics.accuracy(labels, predictions, weights=None, ...): how often predictions equal
    labels, a mean under scope "accuracy"."""
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    if labels.dtype != predictions.dtype:
        predictions = cast(predictions, labels.dtype)
    is_correct = cast(equal(predictions, labels), dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections, name or "accuracy")


@tf_export("metrics.mean_absolute_error")
def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None, updates_collections=None,
                        name=None):
    """tf.metrics.mean_absolute_error(labels, predictions, weights=None, ...): mean |pred - label|."""
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    return mean(abs_(predictions - labels), weights, metrics_collections, updates_collections,
                name or "mean_absolute_error")


@tf_export("metrics.mean_squared_error")
def mean_squared_error(labels, predictions, weights=None, metrics_collections=None, updates_collections=None,
                       name=None):
    """tf.metrics.mean_squared_error(labels, predictions, weights=None, ...): mean (label - pred)^2."""
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    return mean(squared_difference(labels, predictions), weights, metrics_collections, updates_collections,
                name or "mean_squared_error")


@tf_export("metrics.root_mean_squared_error")
def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None, updates_collections=None,
                            name=None):
    """tf.metrics.root_mean_squared_error(labels, predictions, weights=None, ...): the square root
    of the streaming mean squared error."""
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    mse, update_mse = mean_squared_error(labels, predictions, weights, None, None, name or "root_mean_squared_error")
    return finish(sqrt(mse), sqrt(update_mse), metrics_collections, updates_collections)


@tf_export("metrics.mean_relative_error")
def mean_relative_error(labels, predictions, normalizer, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    """tf.metrics.mean_relative_error(labels, predictions, normalizer, weights=None, ...): mean of
    |label - pred| / normalizer (0 where the normalizer is 0)."""
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    normalizer, predictions = squeeze_pair(normalizer, predictions)
    predictions.shape.assert_is_compatible_with(normalizer.shape)
    relative = where(equal(normalizer, 0.0), zeros_like(labels), truediv(abs_(labels - predictions), normalizer))
    return mean(relative, weights, metrics_collections, updates_collections, name or "mean_relative_error")


@tf_export("metrics.mean_cosine_distance")
def mean_cosine_distance(labels, predictions, dim, weights=None, metrics_collections=None, updates_collections=None,
                         name=None):
    """tf.metrics.mean_cosine_distance(labels, predictions, dim, weights=None, ...): 1 - the mean
    dot product of (unit-normalized) labels and predictions along `dim`."""
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    radial = reduce_sum(multiply(predictions, labels), axis=[dim], keepdims=True)
    mean_distance, update_op = mean(radial, weights, None, None, name or "mean_cosine_distance")
    return finish(subtract(1.0, mean_distance), subtract(1.0, update_op), metrics_collections, updates_collections)


@tf_export("metrics.percentage_below")
def percentage_below(values, threshold, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """tf.metrics.percentage_below(values, threshold, weights=None, ...): the fraction of values
    below `threshold`."""
    values = convert_to_tensor(values)
    below = cast(less(values, threshold), dtypes.float32)
    return mean(below, weights, metrics_collections, updates_collections, name or "percentage_below_threshold")
