"""tf.nn's loss helpers for a strategy's replicas (TF's nn_impl_distribute): a replica's loss
divided so that summing the replicas' gradients gives the gradient of the global mean."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.api import control_dependencies
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import expand_dims, shape, squeeze
from tensorweave.ops.debugging.asserts import assert_integer, assert_non_negative, assert_scalar
from tensorweave.ops.math.binary import div_no_nan, multiply
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.distribute.distribute_lib import get_strategy, has_strategy, in_cross_replica_context


def _replicas(fn_name: str) -> int:
    if has_strategy() and in_cross_replica_context():
        raise RuntimeError(f"You are calling `{fn_name}` in cross replica context, while it was expected to be "
                           f"called in replica context.")
    return get_strategy().num_replicas_in_sync


def _weighted(losses, sample_weight):
    """TF's scale_losses_by_sample_weight: both as float32, the weights' last dimension squeezed
    or added where their rank differs from the losses' by one, multiplied."""
    losses, weights = cast(losses, dtypes.float32), cast(convert_to_tensor(sample_weight), dtypes.float32)
    lr, wr = losses.shape.ndims, weights.shape.ndims
    if lr is not None and wr is not None:
        if wr - lr == 1:
            weights = squeeze(weights, [-1])
        elif lr - wr == 1:
            weights = expand_dims(weights, -1)
    return multiply(losses, weights)


@tf_export("nn.compute_average_loss")
def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """tf.nn.compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    sum(per_example_loss * sample_weight) / global_batch_size, 0 when that is 0; the global
    batch size defaults to this replica's batch (the first dimension) times the current
    strategy's num_replicas_in_sync."""
    per_example_loss = convert_to_tensor(per_example_loss)
    input_dtype = per_example_loss.dtype
    if per_example_loss.shape.ndims == 0:
        raise ValueError(f"Invalid value passed for `per_example_loss`. Expected a tensor with at least rank 1. "
                         f"Received: {per_example_loss}")
    if sample_weight is not None:
        per_example_loss = cast(_weighted(per_example_loss, sample_weight), input_dtype)
    if global_batch_size is None:
        global_batch_size = shape(per_example_loss)[0] * _replicas("compute_average_loss")
    global_batch_size = assert_scalar(convert_to_tensor(global_batch_size), message="global_batch_size must be scalar.")
    assert_integer(global_batch_size, message="global_batch_size must be an integer.")
    with control_dependencies([assert_non_negative(global_batch_size,
                                                   message="global_batch_size must be non-negative.")]):
        return div_no_nan(reduce_sum(per_example_loss), cast(global_batch_size, input_dtype))


@tf_export("nn.scale_regularization_loss")
def scale_regularization_loss(regularization_loss):
    """tf.nn.scale_regularization_loss(regularization_loss): sum(regularization_loss) divided by
    the current strategy's num_replicas_in_sync (each replica adds its share)."""
    return reduce_sum(regularization_loss) / _replicas("scale_regularization_loss")
