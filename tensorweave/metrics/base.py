"""What every streaming metric shares: its local variables, the reshaping of predictions, labels
and weights to agree, and adding the value and update op to the caller's collections.

A metric returns (value, update_op). Its state lives in local variables (collections
LOCAL_VARIABLES and METRIC_VARIABLES, zeroed by tf.local_variables_initializer()); update_op
adds one batch to them and evaluates to the metric after that batch; value reads them."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.api import GraphKeys, add_to_collections
from tensorweave.framework.distribution_context import current_entry
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.ops.array.core import expand_dims, squeeze
from tensorweave.ops.array.fill import ones_like, zeros
from tensorweave.ops.math.binary import div_no_nan, maximum, multiply
from tensorweave.ops.math.cast import cast
from tensorweave.ops.state.variables import Variable, VariableAggregation, VariableSynchronization


def metric_variable(shape, dtype, validate_shape: bool = True, name=None) -> Variable:
    """A non-trainable local variable of zeros in LOCAL_VARIABLES and METRIC_VARIABLES; synchronized
    on read with SUM aggregation, as in TF (under MirroredStrategy each replica accumulates into its
    own copy)."""
    return Variable(lambda: zeros(shape, dtype), trainable=False, validate_shape=validate_shape,
                    collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES], name=name,
                    synchronization=VariableSynchronization.ON_READ, aggregation=VariableAggregation.SUM)


def safe_mean(total, count, name: str):
    """total / count, 0 where count is 0 (TF's div_no_nan of max(count, 0))."""
    return div_no_nan(total, maximum(count, 0), name=name)


def squeeze_pair(labels, predictions):
    """TF's remove_squeezable_dimensions: drops a trailing size-1 dimension of whichever of labels
    and predictions has rank one more than the other (static ranks)."""
    labels, predictions = convert_to_tensor(labels), convert_to_tensor(predictions)
    lr, pr = labels.shape.ndims, predictions.shape.ndims
    if lr is not None and pr is not None:
        if pr - lr == 1 and predictions.shape[-1].is_compatible_with(1):
            predictions = squeeze(predictions, [-1])
        elif lr - pr == 1 and labels.shape[-1].is_compatible_with(1):
            labels = squeeze(labels, [-1])
    return labels, predictions


def remove_squeezable_dimensions(predictions, labels, weights):
    """Squeezes predictions or labels whose rank exceeds the other's by a trailing 1, and
    squeezes or expands the last dimension of weights to predictions' rank (a scalar weight
    stays a scalar)."""
    predictions = convert_to_tensor(predictions)
    if labels is not None:
        labels, predictions = squeeze_pair(labels, predictions)
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


def broadcast_weights(weights, values):
    """Weights (float32 unless given otherwise) broadcast to `values`' shape."""
    weights, values = convert_to_tensor(weights), convert_to_tensor(values)
    if weights.shape.is_fully_defined() and weights.shape == values.shape:
        return weights
    return multiply(weights, ones_like(values, dtype=weights.dtype))


def weighted(values, weights, dtype=dtypes.float32):
    """values * weights cast to `dtype` (values unchanged when weights is None)."""
    values = cast(values, dtype)
    if weights is None:
        return values
    return multiply(values, cast(weights, dtype))


def collect(collections, value) -> None:
    if collections:
        add_to_collections(collections, value)


def cross_replica_value(value_fn):
    """value_fn(), the metric's value from its variables. In a replica of a tf.distribute strategy
    it is built once, in cross-replica context (a merge_call), where the sync-on-read variables
    read as their sum over the replicas: the value of every replica's batches together, as TF's
    _aggregate_across_replicas."""
    entry = current_entry()
    if entry is None or entry[1] is None:
        return value_fn()
    return entry[1].merge_call(lambda strategy: value_fn())


def finish(value, update_op, metrics_collections, updates_collections) -> tuple:
    """Adds the value and update op to the caller's collections; returns them."""
    collect(metrics_collections, value)
    collect(updates_collections, update_op)
    return value, update_op
