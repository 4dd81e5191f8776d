"""tf.losses: TF1's loss functions, their weighting/reduction rules and the LOSSES collection.

Every loss computes per-element losses, weights them (weights broadcast to the losses),
reduces them by `reduction` (default SUM_BY_NONZERO_WEIGHTS: the weighted sum divided by the
number of elements with non-zero weight) and adds the result to `loss_collection`.
"""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.api import GraphKeys, add_to_collection, get_collection, name_scope
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import constant, rank, shape, size, squeeze, stop_gradient
from tensorweave.ops.array.fill import ones_like, zeros_like
from tensorweave.ops.array.sort import where
from tensorweave.ops.math.binary import add_n, div_no_nan, equal, greater, maximum, minimum, multiply, \
    squared_difference, subtract
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.math.unary import abs, log, square
from tensorweave.ops.nn.activations import relu
from tensorweave.ops.nn.impl import (sigmoid_cross_entropy_with_logits, softmax_cross_entropy_with_logits_v2,
                                     sparse_softmax_cross_entropy_with_logits)


@tf_export("losses.Reduction")
class Reduction:
    """How compute_weighted_loss reduces weighted per-element losses (TF1 tf.losses.Reduction)."""
    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE, cls.SUM_OVER_NONZERO_WEIGHTS,
                cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}. Key should be one of {cls.all()}.")


def _safe_mean(numerator, denominator):
    """numerator / denominator, 0 where the denominator is 0 (TF1's _safe_mean: div_no_nan "value")."""
    return div_no_nan(numerator, denominator, name="value")


def _num_present(losses, weights):
    """The number of elements of `losses` with non-zero weight (TF1's _num_present)."""
    with name_scope(None, "num_present", (losses, weights)) as scope:
        weights = cast(weights, dtypes.float32)
        present = where(equal(weights, 0.0), zeros_like(weights), ones_like(weights))
        present = present * ones_like(losses)
        return reduce_sum(present, name=scope)


def _num_elements(losses):
    with name_scope(None, "num_elements", values=[losses]) as scope:
        return cast(size(losses, name=scope), dtype=losses.dtype)


def _check_weights(losses, weights) -> None:
    """ValueError, as TF's assert_broadcastable, when static shapes show weights cannot broadcast."""
    w_shape, l_shape = weights.shape, losses.shape
    if w_shape.ndims is None or l_shape.ndims is None or w_shape.ndims == 0:
        return
    if w_shape.ndims != l_shape.ndims:
        raise ValueError(f"weights can not be broadcast to values. values.rank={l_shape.ndims}. "
                         f"weights.rank={w_shape.ndims}. values.shape={l_shape}. weights.shape={w_shape}.")
    for i, (dw, dl) in enumerate(zip(w_shape.as_list(), l_shape.as_list())):
        if dw is not None and dl is not None and dw not in (1, dl):
            raise ValueError(f"weights can not be broadcast to values. Mismatch at dim {i}. "
                             f"values.shape={l_shape}, weights.shape={w_shape}.")


def _remove_squeezable_dimensions(labels, predictions, weights, expected_rank_diff: int = 0):
    """TF1's: drops a trailing size-1 dim of labels (or predictions) so that rank(predictions) -
    rank(labels) == expected_rank_diff, and of weights when it has one dim more than labels."""
    labels = convert_to_tensor(labels)
    predictions = convert_to_tensor(predictions)
    lr, pr = labels.shape.ndims, predictions.shape.ndims
    if lr is not None and pr is not None:
        diff = pr - lr
        if diff == expected_rank_diff + 1 and predictions.shape[-1].is_compatible_with(1):
            predictions = squeeze(predictions, [-1])
        elif diff == expected_rank_diff - 1 and labels.shape[-1].is_compatible_with(1):
            labels = squeeze(labels, [-1])
    if weights is not None and not isinstance(weights, (int, float)):
        weights = convert_to_tensor(weights)
        wr, lr = weights.shape.ndims, labels.shape.ndims
        if wr is not None and lr is not None and wr - lr == 1 and weights.shape[-1].is_compatible_with(1):
            weights = squeeze(weights, [-1])
    return labels, predictions, weights


def _not_none(value, name: str):
    if value is None:
        raise ValueError(f"Argument `{name}` must not be None.")
    return value


@tf_export("losses.compute_weighted_loss", "contrib.losses.compute_weighted_loss")
def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Weights `losses` by `weights` (broadcast), reduces by `reduction`, adds to `loss_collection`."""
    Reduction.validate(reduction)
    with name_scope(scope, "weighted_loss", (losses, weights)):
        losses = convert_to_tensor(losses)
        input_dtype = losses.dtype
        losses = cast(losses, dtypes.float32)
        weights = cast(convert_to_tensor(weights), dtypes.float32)
        _check_weights(losses, weights)
        weighted = multiply(losses, weights)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            loss = reduce_sum(weighted)
            if reduction == Reduction.MEAN:
                loss = _safe_mean(loss, reduce_sum(ones_like(losses) * weights))
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                loss = _safe_mean(loss, _num_present(losses, weights))
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_mean(loss, _num_elements(losses))
        loss = cast(loss, input_dtype)
        add_loss(loss, loss_collection)
        # as TF: under a tf.distribute strategy an Estimator's v1 optimizer scales a mean loss by
        # 1/replicas, not a SUM (tf.distribute.get_loss_reduction reads this)
        loss.graph._last_loss_reduction = reduction
        return loss


@tf_export("losses.add_loss", "contrib.losses.add_loss")
def add_loss(loss, loss_collection=GraphKeys.LOSSES) -> None:
    """Adds an externally defined loss to `loss_collection` (None: to no collection)."""
    if loss_collection:
        add_to_collection(loss_collection, loss)


@tf_export("losses.get_losses", "contrib.losses.get_losses")
def get_losses(scope=None, loss_collection=GraphKeys.LOSSES) -> list:
    return get_collection(loss_collection, scope)


@tf_export("losses.get_regularization_losses", "contrib.losses.get_regularization_losses")
def get_regularization_losses(scope=None) -> list:
    return get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


@tf_export("losses.get_regularization_loss")
def get_regularization_loss(scope=None, name: str = "total_regularization_loss"):
    """The sum of the regularization losses (a 0.0 constant when there are none)."""
    losses = get_regularization_losses(scope)
    if losses:
        return add_n(losses, name=name)
    return constant(0.0)


@tf_export("losses.get_total_loss", "contrib.losses.get_total_loss")
def get_total_loss(add_regularization_losses: bool = True, name: str = "total_loss", scope=None):
    """Sum of get_losses() and, by default, get_regularization_losses(); ValueError when empty."""
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    if not losses:
        # TF1 hands the empty list to add_n, whose ValueError this is
        raise ValueError("inputs must be a list of at least one Tensor/IndexedSlices with the same dtype "
                         "and shape")
    return add_n(losses, name=name)


def _check_shapes(labels, predictions):
    _not_none(labels, "labels")
    _not_none(predictions, "predictions")
    labels = convert_to_tensor(labels)
    predictions = convert_to_tensor(predictions)
    predictions.shape.assert_is_compatible_with(labels.shape)
    return labels, predictions


def _float32_pair(labels, predictions):
    """_check_shapes, then both cast to float32: predictions first, as TF1 (the Cast ops' names follow)."""
    labels, predictions = _check_shapes(labels, predictions)
    predictions = cast(predictions, dtypes.float32)
    return cast(labels, dtypes.float32), predictions


@tf_export("losses.absolute_difference")
def absolute_difference(labels, predictions, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """tf.losses.absolute_difference: weighted |labels - predictions|."""
    with name_scope(scope, "absolute_difference", (predictions, labels, weights)) as scope:
        labels, predictions = _float32_pair(labels, predictions)
        losses = abs(subtract(predictions, labels))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


@tf_export("losses.mean_squared_error")
def mean_squared_error(labels, predictions, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """tf.losses.mean_squared_error: weighted (labels - predictions)^2."""
    with name_scope(scope, "mean_squared_error", (predictions, labels, weights)) as scope:
        labels, predictions = _float32_pair(labels, predictions)
        losses = squared_difference(predictions, labels)
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


@tf_export("losses.mean_pairwise_squared_error")
def mean_pairwise_squared_error(labels, predictions, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES):
    """tf.losses.mean_pairwise_squared_error: per example, the mean over pairs of its elements of
    ((p_i - p_j) - (l_i - l_j))^2, as TF computes it (2 (sum d^2 / (n - 1) - (sum d)^2 / (n (n - 1)))
    with d = predictions - labels and n its elements of non-zero weight), times the weights, summed
    over the batch (0 when no element has weight)."""
    with name_scope(scope, "mean_pairwise_squared_error", (predictions, labels, weights)) as scope:
        weights = cast(convert_to_tensor(weights), dtypes.float32)
        labels, predictions = _float32_pair(labels, predictions)
        diffs = subtract(predictions, labels)
        axis = range_(1, rank(diffs))
        present = reduce_sum(where(equal(weights, 0.0), zeros_like(weights), ones_like(weights)) * ones_like(diffs),
                             axis=axis, keepdims=True)
        term1 = 2.0 * div_no_nan(reduce_sum(square(diffs), axis=axis, keepdims=True), maximum(present - 1, 0.0),
                                 name="value")
        term2 = 2.0 * div_no_nan(square(reduce_sum(diffs, axis=axis, keepdims=True)),
                                 maximum(multiply(present, present - 1), 0.0), name="value")
        loss = reduce_sum(multiply(term1 - term2, weights))
        mean_loss = where(greater(reduce_sum(present), 0.0), loss, zeros_like(loss), name="value")
        add_loss(mean_loss, loss_collection)
        return mean_loss


@tf_export("losses.log_loss")
def log_loss(labels, predictions, weights=1.0, epsilon: float = 1e-7, scope=None,
             loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """tf.losses.log_loss: -labels*log(p+eps) - (1-labels)*log(1-p+eps)."""
    with name_scope(scope, "log_loss", (predictions, labels, weights)) as scope:
        labels, predictions = _float32_pair(labels, predictions)
        losses = -multiply(labels, log(predictions + epsilon)) - multiply(
            (1 - labels), log(1 - predictions + epsilon))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


@tf_export("losses.hinge_loss")
def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """tf.losses.hinge_loss: max(0, 1 - (2*labels - 1) * logits) for labels in {0, 1}."""
    _not_none(labels, "labels")
    _not_none(logits, "logits")
    with name_scope(scope, "hinge_loss", (logits, labels, weights)) as scope:
        labels, logits = _float32_pair(labels, logits)
        all_ones = ones_like(labels)
        labels = subtract(2 * labels, all_ones)
        losses = relu(subtract(all_ones, multiply(labels, logits)))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


@tf_export("losses.huber_loss")
def huber_loss(labels, predictions, weights=1.0, delta: float = 1.0, scope=None,
               loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """tf.losses.huber_loss: 0.5*x^2 for |x| <= delta, else delta*|x| - 0.5*delta^2."""
    with name_scope(scope, "huber_loss", (predictions, labels, weights)) as scope:
        labels, predictions = _float32_pair(labels, predictions)
        error = subtract(predictions, labels)
        abs_error = abs(error)
        quadratic = minimum(abs_error, delta)
        linear = subtract(abs_error, quadratic)
        losses = 0.5 * quadratic * quadratic + delta * linear
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def _cast_like_logits(labels, logits):
    """Labels cast to the logits' dtype; ValueError unless their static shapes are compatible."""
    logits = convert_to_tensor(logits)
    labels = cast(labels, logits.dtype)
    logits.shape.assert_is_compatible_with(labels.shape)
    return labels, logits


@tf_export("losses.softmax_cross_entropy")
def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing: float = 0, scope=None,
                          loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """tf.losses.softmax_cross_entropy; label_smoothing moves labels toward 1/num_classes."""
    _not_none(onehot_labels, "onehot_labels")
    _not_none(logits, "logits")
    with name_scope(scope, "softmax_cross_entropy_loss", (logits, onehot_labels, weights)) as scope:
        onehot_labels, logits = _cast_like_logits(onehot_labels, logits)
        if label_smoothing > 0:
            num_classes = cast(shape(onehot_labels)[-1], logits.dtype)
            smooth_positives = 1.0 - label_smoothing
            smooth_negatives = label_smoothing / num_classes
            onehot_labels = onehot_labels * smooth_positives + smooth_negatives
        onehot_labels = stop_gradient(onehot_labels, name="labels_stop_gradient")
        losses = softmax_cross_entropy_with_logits_v2(labels=onehot_labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


@tf_export("losses.sparse_softmax_cross_entropy")
def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """tf.losses.sparse_softmax_cross_entropy with integer class labels."""
    _not_none(labels, "labels")
    _not_none(logits, "logits")
    with name_scope(scope, "sparse_softmax_cross_entropy_loss", (logits, labels, weights)) as scope:
        labels, logits, weights = _remove_squeezable_dimensions(labels, logits, weights, expected_rank_diff=1)
        losses = sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


@tf_export("losses.sigmoid_cross_entropy")
def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing: float = 0, scope=None,
                          loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """tf.losses.sigmoid_cross_entropy; label_smoothing moves labels toward 1/2."""
    _not_none(multi_class_labels, "multi_class_labels")
    _not_none(logits, "logits")
    with name_scope(scope, "sigmoid_cross_entropy_loss", (logits, multi_class_labels, weights)) as scope:
        multi_class_labels, logits = _cast_like_logits(multi_class_labels, logits)
        if label_smoothing > 0:
            multi_class_labels = multi_class_labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = sigmoid_cross_entropy_with_logits(labels=multi_class_labels, logits=logits,
                                                         name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


@tf_export("losses.cosine_distance")
def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                    reduction=Reduction.SUM_BY_NONZERO_WEIGHTS, dim=None):
    """tf.losses.cosine_distance: 1 - sum(labels * predictions, axis) for unit-normalized inputs."""
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("You must specify 'axis'.")
    with name_scope(scope, "cosine_distance_loss", (predictions, labels, weights)) as scope:
        labels, predictions = _float32_pair(labels, predictions)
        radial_diffs = multiply(predictions, labels)
        losses = 1 - reduce_sum(radial_diffs, axis=(axis,), keepdims=True)
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)
