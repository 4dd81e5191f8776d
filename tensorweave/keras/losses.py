"""tf.keras.losses (TF 1.15, graph mode): the loss functions of (y_true, y_pred), which return one
loss per sample (the mean over the last axis), the Loss classes, which weight and reduce them
(tf.keras.losses.Reduction), and get / serialize / deserialize by name, class or config.

Probabilities are clipped to [1e-7, 1 - 1e-7] (Keras's backend epsilon) before any log, as
Keras's backend crossentropies do; a probability tensor that is the output of a Softmax or
Sigmoid op is taken back to its logits, as Keras does in graph mode."""
from __future__ import annotations

import inspect

from tensorweave import _api
from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import reshape, shape as shape_of, size
from tensorweave.ops.math.binary import div_no_nan, equal, logical_or, maximum, minimum, multiply, \
    squared_difference
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.clip import clip_by_value
from tensorweave.ops.math.reduction import reduce_all, reduce_max, reduce_mean, reduce_sum
from tensorweave.ops.math.unary import abs as abs_, log, square
from tensorweave.ops.nn.activations import softplus
from tensorweave.ops.nn.impl import (l2_normalize, sigmoid_cross_entropy_with_logits,
                                     softmax_cross_entropy_with_logits_v2, sparse_softmax_cross_entropy_with_logits)
from tensorweave.metrics.base import remove_squeezable_dimensions, squeeze_pair
from tensorweave.keras.utils.generic_utils import deserialize_keras_object, serialize_keras_object

EPSILON = 1e-7  # keras.backend.epsilon()'s default, the fuzz factor of every Keras loss


# -- reduction ------------------------------------------------------------------------------------
@tf_export("keras.losses.Reduction")
class Reduction:
    """tf.keras.losses.Reduction (TF's ReductionV2): how a Loss reduces weighted per-sample
    losses. AUTO is SUM_OVER_BATCH_SIZE outside a distribution strategy."""
    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls):
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}. Expected one of {cls.all()}")


def compute_weighted_loss(losses, sample_weight=None, reduction=Reduction.SUM_OVER_BATCH_SIZE, name=None):
    """Keras's losses_utils.compute_weighted_loss: losses * sample_weight (squeezed or expanded to
    the losses' rank), then summed (SUM), averaged over every element (SUM_OVER_BATCH_SIZE,
    AUTO) or left as they are (NONE); computed in float32, returned in the losses' dtype."""
    Reduction.validate(reduction)
    if reduction == Reduction.AUTO:
        reduction = Reduction.SUM_OVER_BATCH_SIZE
    with name_scope(name or "weighted_loss"):
        losses = convert_to_tensor(losses)
        input_dtype = losses.dtype
        losses = cast(losses, dtypes.float32)
        weights = cast(1.0 if sample_weight is None else sample_weight, dtypes.float32)
        losses, _, weights = remove_squeezable_dimensions(losses, None, weights)
        weighted = multiply(losses, weights)
        loss = weighted
        if reduction != Reduction.NONE:
            loss = reduce_sum(weighted)
            if reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = div_no_nan(loss, cast(size(weighted), dtypes.float32), name="value")
        return cast(loss, input_dtype)


# -- the loss functions ---------------------------------------------------------------------------
def _pair(y_true, y_pred):
    """y_pred as a tensor and y_true cast to its dtype."""
    y_pred = convert_to_tensor(y_pred)
    return cast(y_true, y_pred.dtype), y_pred


def _mean_last(x):
    return reduce_mean(x, axis=-1)


@tf_export("keras.losses.mean_squared_error", "keras.losses.mse", "keras.losses.MSE",
           "keras.metrics.mean_squared_error", "keras.metrics.mse", "keras.metrics.MSE")
def mean_squared_error(y_true, y_pred):
    """mean((y_pred - y_true)^2, axis=-1)."""
    y_true, y_pred = _pair(y_true, y_pred)
    return _mean_last(squared_difference(y_pred, y_true))


@tf_export("keras.losses.mean_absolute_error", "keras.losses.mae", "keras.losses.MAE",
           "keras.metrics.mean_absolute_error", "keras.metrics.mae", "keras.metrics.MAE")
def mean_absolute_error(y_true, y_pred):
    """mean(|y_pred - y_true|, axis=-1)."""
    y_true, y_pred = _pair(y_true, y_pred)
    return _mean_last(abs_(y_pred - y_true))


@tf_export("keras.losses.mean_absolute_percentage_error", "keras.losses.mape", "keras.losses.MAPE",
           "keras.metrics.mean_absolute_percentage_error", "keras.metrics.mape", "keras.metrics.MAPE")
def mean_absolute_percentage_error(y_true, y_pred):
    """100 * mean(|(y_true - y_pred) / max(|y_true|, epsilon)|, axis=-1)."""
    y_true, y_pred = _pair(y_true, y_pred)
    return 100.0 * _mean_last(abs_((y_true - y_pred) / maximum(abs_(y_true), EPSILON)))


@tf_export("keras.losses.mean_squared_logarithmic_error", "keras.losses.msle", "keras.losses.MSLE",
           "keras.metrics.mean_squared_logarithmic_error", "keras.metrics.msle", "keras.metrics.MSLE")
def mean_squared_logarithmic_error(y_true, y_pred):
    """mean((log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))^2, axis=-1)."""
    y_true, y_pred = _pair(y_true, y_pred)
    return _mean_last(squared_difference(log(maximum(y_pred, EPSILON) + 1.0), log(maximum(y_true, EPSILON) + 1.0)))


def _maybe_convert_labels(y_true):
    """Labels that are all 0 or 1 become -1 or 1 (Keras's hinge losses take either)."""
    is_binary = reduce_all(logical_or(equal(y_true, 0), equal(y_true, 1)))
    return y_true + cast(is_binary, y_true.dtype) * (y_true - 1.0)


@tf_export("keras.losses.squared_hinge", "keras.metrics.squared_hinge")
def squared_hinge(y_true, y_pred):
    """mean(max(1 - y_true * y_pred, 0)^2, axis=-1); 0/1 labels are taken as -1/1."""
    y_true, y_pred = _pair(y_true, y_pred)
    return _mean_last(square(maximum(1.0 - _maybe_convert_labels(y_true) * y_pred, 0.0)))


@tf_export("keras.losses.hinge", "keras.metrics.hinge")
def hinge(y_true, y_pred):
    """mean(max(1 - y_true * y_pred, 0), axis=-1); 0/1 labels are taken as -1/1."""
    y_true, y_pred = _pair(y_true, y_pred)
    return _mean_last(maximum(1.0 - _maybe_convert_labels(y_true) * y_pred, 0.0))


@tf_export("keras.losses.categorical_hinge")
def categorical_hinge(y_true, y_pred):
    """max(0, max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1) over the last axis."""
    y_true, y_pred = _pair(y_true, y_pred)
    pos = reduce_sum(y_true * y_pred, axis=-1)
    neg = reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return maximum(0.0, neg - pos + 1.0)


@tf_export("keras.losses.logcosh", "keras.metrics.logcosh")
def logcosh(y_true, y_pred):
    """mean(log(cosh(y_pred - y_true)), axis=-1), as x + softplus(-2x) - log(2)."""
    y_true, y_pred = _pair(y_true, y_pred)
    x = y_pred - y_true
    return _mean_last(x + softplus(-2.0 * x) - 0.6931471805599453)


def huber(y_true, y_pred, delta=1.0):
    """mean over the last axis of 0.5 x^2 where |x| <= delta, else delta (|x| - delta) + 0.5 delta^2."""
    y_true, y_pred = cast(y_true, dtypes.float32), cast(y_pred, dtypes.float32)
    abs_error = abs_(y_pred - y_true)
    quadratic = minimum(abs_error, delta)
    return _mean_last(0.5 * quadratic * quadratic + delta * (abs_error - quadratic))


def _logits_of(output, op_type: str):
    """The input of `output` when it is the output of a Softmax/Sigmoid op, else None."""
    return output.op.inputs[0] if isinstance(output, Tensor) and output.op.type == op_type else None


def backend_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """keras.backend.categorical_crossentropy: -sum(target * log(output / sum(output))) with the
    output clipped to [eps, 1 - eps], or softmax crossentropy of logits."""
    target, output = convert_to_tensor(target), convert_to_tensor(output)
    logits = output if from_logits else _logits_of(output, "Softmax")
    if logits is not None:
        return softmax_cross_entropy_with_logits_v2(labels=target, logits=logits, axis=axis)
    output = output / reduce_sum(output, axis, keepdims=True)
    output = clip_by_value(output, EPSILON, 1.0 - EPSILON)
    return -reduce_sum(target * log(output), axis)


def backend_sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """keras.backend.sparse_categorical_crossentropy: crossentropy of integer labels, computed on
    logits (or the log of the clipped probabilities), shaped like the labels without the class axis."""
    output = convert_to_tensor(output)
    logits = output if from_logits else _logits_of(output, "Softmax")
    if logits is None:
        logits = log(clip_by_value(output, EPSILON, 1.0 - EPSILON))
    if axis != -1 and axis != logits.shape.ndims - 1:
        raise ValueError(f"sparse_categorical_crossentropy takes the classes on the last axis, not axis {axis}")
    labels = reshape(cast(target, dtypes.int64), [-1])
    flat_logits = reshape(logits, [-1, logits.shape[-1].value if logits.shape[-1].value is not None else -1])
    res = sparse_softmax_cross_entropy_with_logits(labels=labels, logits=flat_logits)
    return reshape(res, shape_of(logits)[:-1])


def backend_binary_crossentropy(target, output, from_logits=False):
    """keras.backend.binary_crossentropy: the logistic loss of logits, or of the clipped output
    taken back to logits as log(p / (1 - p))."""
    output = convert_to_tensor(output)
    logits = output if from_logits else _logits_of(output, "Sigmoid")
    if logits is None:
        output = clip_by_value(output, EPSILON, 1.0 - EPSILON)
        logits = log(output / (1.0 - output))
    return sigmoid_cross_entropy_with_logits(labels=cast(target, logits.dtype), logits=logits)


@tf_export("keras.losses.categorical_crossentropy", "keras.metrics.categorical_crossentropy")
def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0):
    """Crossentropy of one-hot labels (smoothed to y (1 - s) + s / num_classes) and predicted
    probabilities (or logits, from_logits=True), one value per sample."""
    y_true, y_pred = _pair(y_true, y_pred)
    if label_smoothing:
        num_classes = cast(shape_of(y_true)[-1], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / num_classes
    return backend_categorical_crossentropy(y_true, y_pred, from_logits=from_logits)


@tf_export("keras.losses.sparse_categorical_crossentropy", "keras.metrics.sparse_categorical_crossentropy")
def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1):
    """Crossentropy of integer labels and predicted probabilities (or logits)."""
    return backend_sparse_categorical_crossentropy(y_true, y_pred, from_logits=from_logits, axis=axis)


@tf_export("keras.losses.binary_crossentropy", "keras.metrics.binary_crossentropy")
def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0):
    """mean over the last axis of the logistic loss of labels (smoothed to y (1 - s) + s / 2)
    and probabilities (or logits)."""
    y_true, y_pred = _pair(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    return _mean_last(backend_binary_crossentropy(y_true, y_pred, from_logits=from_logits))


@tf_export("keras.losses.kullback_leibler_divergence", "keras.losses.kld", "keras.losses.KLD",
           "keras.metrics.kullback_leibler_divergence", "keras.metrics.kld", "keras.metrics.KLD")
def kullback_leibler_divergence(y_true, y_pred):
    """sum(y_true * log(y_true / y_pred), axis=-1), both clipped to [eps, 1]."""
    y_true, y_pred = _pair(y_true, y_pred)
    y_true, y_pred = clip_by_value(y_true, EPSILON, 1.0), clip_by_value(y_pred, EPSILON, 1.0)
    return reduce_sum(y_true * log(y_true / y_pred), axis=-1)


@tf_export("keras.losses.poisson", "keras.metrics.poisson")
def poisson(y_true, y_pred):
    """mean(y_pred - y_true * log(y_pred + eps), axis=-1)."""
    y_true, y_pred = _pair(y_true, y_pred)
    return _mean_last(y_pred - y_true * log(y_pred + EPSILON))


@tf_export("keras.losses.cosine_similarity", "keras.losses.cosine_proximity", "keras.losses.cosine",
           "keras.metrics.cosine_proximity", "keras.metrics.cosine")
def cosine_similarity(y_true, y_pred, axis=-1):
    """-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis): -1 for parallel vectors."""
    y_true, y_pred = _pair(y_true, y_pred)
    return -reduce_sum(l2_normalize(y_true, axis=axis) * l2_normalize(y_pred, axis=axis), axis=axis)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence
cosine_proximity = cosine = cosine_similarity


# -- the Loss classes -----------------------------------------------------------------------------
@tf_export("keras.losses.Loss")
class Loss:
    """tf.keras.losses.Loss(reduction='auto', name=None): subclasses implement call(y_true,
    y_pred) giving per-sample losses; calling the loss weights them by sample_weight and reduces
    them by `reduction`, under a name scope of the loss's name."""

    def __init__(self, reduction=Reduction.AUTO, name=None):
        Reduction.validate(reduction)
        self.reduction = reduction
        self.name = name

    def __call__(self, y_true, y_pred, sample_weight=None):
        scope = "lambda" if self.name == "<lambda>" else self.name
        with name_scope(scope or type(self).__name__):
            losses = self.call(y_true, y_pred)
            return compute_weighted_loss(losses, sample_weight, reduction=self.reduction)

    def call(self, y_true, y_pred):
        raise NotImplementedError(f"{type(self).__name__} must implement call(y_true, y_pred)")

    def get_config(self) -> dict:
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class LossFunctionWrapper(Loss):
    """A Loss whose call is `fn(y_true, y_pred, **kwargs)` after squeezing a trailing 1 off
    whichever of the two has the higher rank."""

    def __init__(self, fn, reduction=Reduction.AUTO, name=None, **kwargs):
        super().__init__(reduction=reduction, name=name)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        y_true, y_pred = squeeze_pair(y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self) -> dict:
        return {**super().get_config(), **self._fn_kwargs}


@tf_export("keras.losses.MeanSquaredError")
class MeanSquaredError(LossFunctionWrapper):
    """tf.keras.losses.MeanSquaredError(reduction='auto', name='mean_squared_error'):
    mean_squared_error as a Loss."""

    def __init__(self, reduction=Reduction.AUTO, name="mean_squared_error"):
        super().__init__(mean_squared_error, reduction=reduction, name=name)


@tf_export("keras.losses.MeanAbsoluteError")
class MeanAbsoluteError(LossFunctionWrapper):
    """tf.keras.losses.MeanAbsoluteError(reduction='auto', name='mean_absolute_error'):
    mean_absolute_error as a Loss."""

    def __init__(self, reduction=Reduction.AUTO, name="mean_absolute_error"):
        super().__init__(mean_absolute_error, reduction=reduction, name=name)


@tf_export("keras.losses.MeanAbsolutePercentageError")
class MeanAbsolutePercentageError(LossFunctionWrapper):
    """tf.keras.losses.MeanAbsolutePercentageError(reduction='auto', name='mean_absolute_percentage_error'):
    mean_absolute_percentage_error as a Loss."""

    def __init__(self, reduction=Reduction.AUTO, name="mean_absolute_percentage_error"):
        super().__init__(mean_absolute_percentage_error, reduction=reduction, name=name)


@tf_export("keras.losses.MeanSquaredLogarithmicError")
class MeanSquaredLogarithmicError(LossFunctionWrapper):
    """tf.keras.losses.MeanSquaredLogarithmicError(reduction='auto', name='mean_squared_logarithmic_error'):
    mean_squared_logarithmic_error as a Loss."""

    def __init__(self, reduction=Reduction.AUTO, name="mean_squared_logarithmic_error"):
        super().__init__(mean_squared_logarithmic_error, reduction=reduction, name=name)


@tf_export("keras.losses.Hinge")
class Hinge(LossFunctionWrapper):
    """tf.keras.losses.Hinge(reduction='auto', name='hinge'):
    hinge as a Loss."""

    def __init__(self, reduction=Reduction.AUTO, name="hinge"):
        super().__init__(hinge, reduction=reduction, name=name)


@tf_export("keras.losses.SquaredHinge")
class SquaredHinge(LossFunctionWrapper):
    """tf.keras.losses.SquaredHinge(reduction='auto', name='squared_hinge'):
    squared_hinge as a Loss."""

    def __init__(self, reduction=Reduction.AUTO, name="squared_hinge"):
        super().__init__(squared_hinge, reduction=reduction, name=name)


@tf_export("keras.losses.CategoricalHinge")
class CategoricalHinge(LossFunctionWrapper):
    """tf.keras.losses.CategoricalHinge(reduction='auto', name='categorical_hinge'):
    categorical_hinge as a Loss."""

    def __init__(self, reduction=Reduction.AUTO, name="categorical_hinge"):
        super().__init__(categorical_hinge, reduction=reduction, name=name)


@tf_export("keras.losses.LogCosh")
class LogCosh(LossFunctionWrapper):
    """tf.keras.losses.LogCosh(reduction='auto', name='logcosh'):
    logcosh as a Loss."""

    def __init__(self, reduction=Reduction.AUTO, name="logcosh"):
        super().__init__(logcosh, reduction=reduction, name=name)


@tf_export("keras.losses.Huber")
class Huber(LossFunctionWrapper):
    """tf.keras.losses.Huber(delta=1.0, reduction='auto', name='huber_loss'):
    huber as a Loss."""

    def __init__(self, delta=1.0, reduction=Reduction.AUTO, name="huber_loss"):
        super().__init__(huber, reduction=reduction, name=name, delta=delta)


@tf_export("keras.losses.CategoricalCrossentropy")
class CategoricalCrossentropy(LossFunctionWrapper):
    """tf.keras.losses.CategoricalCrossentropy(from_logits=False, label_smoothing=0,
    reduction='auto', name='categorical_crossentropy'):
    categorical_crossentropy as a Loss."""

    def __init__(self, from_logits=False, label_smoothing=0, reduction=Reduction.AUTO, name="categorical_crossentropy"):
        super().__init__(categorical_crossentropy, reduction=reduction, name=name, from_logits=from_logits,
                         label_smoothing=label_smoothing)


@tf_export("keras.losses.SparseCategoricalCrossentropy")
class SparseCategoricalCrossentropy(LossFunctionWrapper):
    """tf.keras.losses.SparseCategoricalCrossentropy(from_logits=False,
    reduction='auto', name='sparse_categorical_crossentropy'):
    sparse_categorical_crossentropy as a Loss."""

    def __init__(self, from_logits=False, reduction=Reduction.AUTO, name="sparse_categorical_crossentropy"):
        super().__init__(sparse_categorical_crossentropy, reduction=reduction, name=name, from_logits=from_logits)


@tf_export("keras.losses.BinaryCrossentropy")
class BinaryCrossentropy(LossFunctionWrapper):
    """tf.keras.losses.BinaryCrossentropy(from_logits=False, label_smoothing=0,
    reduction='auto', name='binary_crossentropy'):
    binary_crossentropy as a Loss."""

    def __init__(self, from_logits=False, label_smoothing=0, reduction=Reduction.AUTO, name="binary_crossentropy"):
        super().__init__(binary_crossentropy, reduction=reduction, name=name, from_logits=from_logits,
                         label_smoothing=label_smoothing)


@tf_export("keras.losses.KLDivergence")
class KLDivergence(LossFunctionWrapper):
    """tf.keras.losses.KLDivergence(reduction='auto', name='kullback_leibler_divergence'):
    kullback_leibler_divergence as a Loss."""

    def __init__(self, reduction=Reduction.AUTO, name="kullback_leibler_divergence"):
        super().__init__(kullback_leibler_divergence, reduction=reduction, name=name)


@tf_export("keras.losses.Poisson")
class Poisson(LossFunctionWrapper):
    """tf.keras.losses.Poisson(reduction='auto', name='poisson'):
    poisson as a Loss."""

    def __init__(self, reduction=Reduction.AUTO, name="poisson"):
        super().__init__(poisson, reduction=reduction, name=name)


@tf_export("keras.losses.CosineSimilarity")
class CosineSimilarity(LossFunctionWrapper):
    """tf.keras.losses.CosineSimilarity(axis=-1, reduction='auto', name='cosine_similarity'):
    cosine_similarity as a Loss."""

    def __init__(self, axis=-1, reduction=Reduction.AUTO, name="cosine_similarity"):
        super().__init__(cosine_similarity, reduction=reduction, name=name, axis=axis)


# what a loss name can name: every public function and class of this module
ALL_OBJECTS = {k: v for k, v in dict(globals()).items()
            if not k.startswith("_") and (inspect.isfunction(v) or inspect.isclass(v))
            and getattr(v, "__module__", None) == __name__ and k not in {
                "serialize_keras_object", "deserialize_keras_object", "compute_weighted_loss", "Reduction"}
            and not k.startswith("backend_")}


@tf_export("keras.losses.serialize")
def serialize(loss):
    """A loss function as its name, a Loss as {"class_name", "config"}."""
    return serialize_keras_object(loss)


@tf_export("keras.losses.deserialize")
def deserialize(name, custom_objects=None):
    """The loss function or Loss a name or config names (ValueError "Unknown loss function: ..."
    for a name Keras does not have)."""
    return deserialize_keras_object(name, ALL_OBJECTS, custom_objects, "loss function")


@tf_export("keras.losses.get")
def get(identifier):
    """tf.keras.losses.get: None as None, a name or config dict deserialized, a callable as it is."""
    if identifier is None:
        return None
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret loss function identifier: {identifier!r}")


__getattr__, __dir__ = _api.lazy_attributes(__name__)
