"""tf.keras.metrics (TF 1.15, graph mode): the metric functions of (y_true, y_pred), the stateful
Metric classes and get / serialize / deserialize.

A Metric keeps its state in unnamed-scope, non-trainable variables it creates when constructed
("total", "count", "true_positives", ... uniquified per graph as Keras's are) and in no
collection (Keras initializes them through its session; `tf.variables_initializer(m.variables)`
does it by hand). update_state returns the op that adds a batch; result reads the state;
calling the metric returns the result with the update as a control dependency.

The per-batch counts of predictions above thresholds and the confusion matrix of class ids are
tf.metrics' (metrics/confusion.py, metrics/classes.py); the loss functions are keras/losses.py's."""
from __future__ import annotations

import re

from tensorweave import _api
from tensorweave.framework import dtypes
from tensorweave.framework.api import control_dependencies
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.graph import get_default_session
from tensorweave.ops.array.core import identity, reshape, size, squeeze
from tensorweave.ops.array.fill import fill, ones_like
from tensorweave.ops.array.gather import one_hot
from tensorweave.ops.array.sort import top_k
from tensorweave.ops.grouping import group
from tensorweave.ops.math.binary import div_no_nan, equal, greater, maximum, minimum, not_equal, multiply, \
    squared_difference
from tensorweave.ops.math.cast import cast
from tensorweave.ops.array.diag import diag_part
from tensorweave.ops.math.reduction import argmax, argmin, reduce_mean, reduce_sum
from tensorweave.ops.math.unary import abs as abs_, log, sqrt
from tensorweave.ops.nn.impl import l2_normalize
from tensorweave.ops.nn.losses import in_top_k
from tensorweave.ops.state.variables import Variable, VariableAggregation, VariableSynchronization
from tensorweave.metrics.base import broadcast_weights, remove_squeezable_dimensions, squeeze_pair
from tensorweave.metrics.classes import batch_confusion_matrix
from tensorweave.metrics.confusion import batch_counts_at_thresholds
from tensorweave.keras import losses
from tensorweave.keras.utils.generic_utils import deserialize_keras_object, serialize_keras_object
from tensorweave.keras.losses import (binary_crossentropy, categorical_crossentropy, categorical_hinge, hinge,
                                      kullback_leibler_divergence, logcosh, mean_absolute_error,
                                      mean_absolute_percentage_error, mean_squared_error,
                                      mean_squared_logarithmic_error, poisson, sparse_categorical_crossentropy,
                                      squared_hinge)

_EPSILON = 1e-7  # keras.backend.epsilon(), widening AUC's end thresholds


def _to_snake_case(name: str) -> str:
    """Keras's default metric name of a class: MeanIoU -> mean_io_u."""
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    insecure = re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    return insecure if insecure[0] != "_" else "private" + insecure


# -- the metric functions -------------------------------------------------------------------------
@tf_export("keras.metrics.accuracy")
def accuracy(y_true, y_pred):
    """1.0 where y_pred equals y_true (cast to y_true's dtype), else 0.0."""
    y_true, y_pred = convert_to_tensor(y_true), convert_to_tensor(y_pred)
    y_pred.shape.assert_is_compatible_with(y_true.shape)
    if y_true.dtype != y_pred.dtype:
        y_pred = cast(y_pred, y_true.dtype)
    return cast(equal(y_true, y_pred), dtypes.float32)


@tf_export("keras.metrics.binary_accuracy")
def binary_accuracy(y_true, y_pred, threshold=0.5):
    """mean over the last axis of whether (y_pred > threshold) equals y_true."""
    y_pred = convert_to_tensor(y_pred)
    y_pred = cast(greater(y_pred, cast(threshold, y_pred.dtype)), y_pred.dtype)
    return reduce_mean(cast(equal(cast(y_true, y_pred.dtype), y_pred), dtypes.float32), axis=-1)


@tf_export("keras.metrics.categorical_accuracy")
def categorical_accuracy(y_true, y_pred):
    """Whether the argmax of the prediction is the argmax of the one-hot label."""
    return cast(equal(argmax(y_true, axis=-1), argmax(y_pred, axis=-1)), dtypes.float32)


def _sparse_labels(y_true, y_pred):
    """Integer labels of y_pred's rank less one (a trailing 1 squeezed off)."""
    y_true, y_pred = convert_to_tensor(y_true), convert_to_tensor(y_pred)
    if y_true.shape.ndims is not None and y_pred.shape.ndims is not None and \
            y_true.shape.ndims == y_pred.shape.ndims and y_true.shape[-1].is_compatible_with(1):
        y_true = squeeze(y_true, [-1])
    return y_true, y_pred


@tf_export("keras.metrics.sparse_categorical_accuracy")
def sparse_categorical_accuracy(y_true, y_pred):
    """Whether the argmax of the prediction is the integer label."""
    y_true, y_pred = _sparse_labels(y_true, y_pred)
    y_pred = argmax(y_pred, axis=-1)
    if y_pred.dtype != y_true.dtype:
        y_pred = cast(y_pred, y_true.dtype)
    return cast(equal(y_true, y_pred), dtypes.float32)


@tf_export("keras.metrics.top_k_categorical_accuracy")
def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """Whether the one-hot label's class is among the k highest predictions, per sample."""
    return cast(in_top_k(cast(y_pred, dtypes.float32), argmax(y_true, axis=-1), k), dtypes.float32)


@tf_export("keras.metrics.sparse_top_k_categorical_accuracy")
def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    """Whether the integer label is among the k highest predictions, per sample."""
    y_true, y_pred = _sparse_labels(y_true, y_pred)
    return cast(in_top_k(cast(y_pred, dtypes.float32), cast(reshape(y_true, [-1]), dtypes.int32), k), dtypes.float32)


def _cosine_similarity(y_true, y_pred, axis=-1):
    """sum(l2_normalize(y_true) * l2_normalize(y_pred), axis): 1 for parallel vectors."""
    return reduce_sum(l2_normalize(y_true, axis=axis) * l2_normalize(y_pred, axis=axis), axis=axis)


acc = ACC = accuracy


# -- the Metric base ------------------------------------------------------------------------------
@tf_export("keras.metrics.Metric")
class Metric:
    """tf.keras.metrics.Metric(name=None, dtype=None): a stateful metric. Subclasses create their
    state with add_weight in __init__ and implement update_state(...) (returning the update op)
    and result()."""

    def __init__(self, name=None, dtype=None, **kwargs):
        self.name = name or _to_snake_case(type(self).__name__)
        self._dtype = dtypes.float32 if dtype is None else dtypes.as_dtype(dtype)
        self._weights = []
        self.stateful = True
        self.built = True
        self._reset_op = None

    @property
    def dtype(self) -> str:
        return self._dtype.name

    def add_weight(self, name, shape=(), dtype=None, initializer=0.0):
        """A non-trainable variable of zeros (or `initializer`) named `name` in no collection;
        synchronized on read with SUM aggregation, as TF's: under a tf.distribute strategy each
        replica accumulates into its own copy and result() (in cross-replica context) reads the
        copies' sum."""
        dtype = self._dtype if dtype is None else dtypes.as_dtype(dtype)
        var = Variable(lambda: fill(list(shape), convert_to_tensor(initializer, dtype=dtype)), name=name,
                       dtype=dtype, trainable=False, collections=[], use_resource=True,
                       synchronization=VariableSynchronization.ON_READ, aggregation=VariableAggregation.SUM)
        self._weights.append(var)
        self._reset_op = None
        return var

    @property
    def variables(self) -> list:
        return list(self._weights)

    weights = non_trainable_weights = variables

    @property
    def trainable_weights(self) -> list:
        return []

    def __call__(self, *args, **kwargs):
        """update_state(*args, **kwargs), then the result after it."""
        update_op = self.update_state(*args, **kwargs)
        with control_dependencies([update_op]):
            result = identity(self.result())
        return result

    def update_state(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement update_state")

    def result(self):
        raise NotImplementedError(f"{type(self).__name__} must implement result")

    def reset_states(self):
        """Sets every state variable to 0: run now in the default session when there is one (as
        Keras runs it in its session); returns the op."""
        if self._reset_op is None:
            self._reset_op = group(*[v.assign(fill(v.shape.as_list(), convert_to_tensor(0, dtype=v.dtype.base_dtype)),
                                              read_value=False) for v in self._weights])
        session = get_default_session()
        if session is not None and session.graph is self._reset_op.graph:
            session.run(self._reset_op)
        return self._reset_op

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _weighted_values(values, sample_weight, dtype, reduce_extra):
    """values * sample_weight (squeezed/expanded to the values' rank, broadcast) and the weights;
    weights of lower rank than the values reduce the extra axes of the values by `reduce_extra`."""
    values = cast(values, dtype)
    if sample_weight is None:
        return values, None
    values, _, sample_weight = remove_squeezable_dimensions(values, None, cast(sample_weight, dtype))
    vr, wr = values.shape.ndims, sample_weight.shape.ndims
    if vr is not None and wr and wr < vr:   # weights broadcast only from a scalar or the values' rank
        values = reduce_extra(values, axis=list(range(wr, vr)))
    sample_weight = broadcast_weights(sample_weight, values)
    return multiply(values, sample_weight), sample_weight


class Reduce(Metric):
    """A metric whose state is the sum ("total") and, for a mean, the count ("count") of values."""

    def __init__(self, reduction, name, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.reduction = reduction
        self.total = self.add_weight("total")
        if reduction != "sum":
            self.count = self.add_weight("count")

    def update_state(self, values, sample_weight=None):
        values, sample_weight = _weighted_values(values, sample_weight, self._dtype,
                                                 reduce_sum if self.reduction == "sum" else reduce_mean)
        value_sum = reduce_sum(values)
        with control_dependencies([value_sum]):
            update_total = self.total.assign_add(value_sum)
        if self.reduction == "sum":
            return update_total
        if sample_weight is None or self.reduction == "sum_over_batch_size":
            num_values = cast(size(values), self._dtype)
        else:
            num_values = reduce_sum(sample_weight)
        with control_dependencies([update_total]):
            return self.count.assign_add(num_values)

    def result(self):
        if self.reduction == "sum":
            return identity(self.total)
        return div_no_nan(self.total, self.count)


@tf_export("keras.metrics.Sum")
class Sum(Reduce):
    """tf.keras.metrics.Sum(name='sum', dtype=None): the (weighted) sum of every value seen."""

    def __init__(self, name="sum", dtype=None):
        super().__init__("sum", name, dtype)


@tf_export("keras.metrics.Mean")
class Mean(Reduce):
    """tf.keras.metrics.Mean(name='mean', dtype=None): the (weighted) mean of every value seen,
    sum(values * weights) / sum(weights)."""

    def __init__(self, name="mean", dtype=None):
        super().__init__("weighted_mean", name, dtype)


@tf_export("keras.metrics.MeanTensor")
class MeanTensor(Metric):
    """tf.keras.metrics.MeanTensor(name='mean_tensor', dtype=None): the elementwise mean of
    tensors of one shape; its "total" and "count" take that shape on the first update."""

    def __init__(self, name="mean_tensor", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self._shape = None
        self._total = self._count = None

    @property
    def total(self):
        return self._total

    @property
    def count(self):
        return self._count

    def update_state(self, values, sample_weight=None):
        values = cast(values, self._dtype)
        if self._shape is None:
            if not values.shape.is_fully_defined():
                raise ValueError(f"MeanTensor needs values of a fully defined shape, got {values.shape}")
            self._shape = values.shape
            self._total = self.add_weight("total", self._shape.as_list())
            self._count = self.add_weight("count", self._shape.as_list())
        elif values.shape != self._shape:
            raise ValueError(f"MeanTensor input values must always have the same shape. Expected shape (set during "
                             f"the first call): {self._shape}. Got: {values.shape}")
        num_values = ones_like(values)
        if sample_weight is not None:
            values, sample_weight = _weighted_values(values, sample_weight, self._dtype, reduce_mean)
            num_values = multiply(num_values, sample_weight)
        update_total = self._total.assign_add(values)
        with control_dependencies([update_total]):
            return self._count.assign_add(num_values)

    def result(self):
        if self._shape is None:
            raise ValueError("MeanTensor does not have any result yet. Please call the MeanTensor instance or use "
                             "`.update_state(value)` before retrieving the result.")
        return div_no_nan(self._total, self._count)


class MeanMetricWrapper(Mean):
    """The mean of `fn(y_true, y_pred, **kwargs)` per sample, y_true and y_pred cast to the
    metric's dtype (a trailing 1 squeezed off the one of higher rank)."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = squeeze_pair(cast(y_true, self._dtype), cast(y_pred, self._dtype))
        return super().update_state(self._fn(y_true, y_pred, **self._fn_kwargs), sample_weight=sample_weight)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}


@tf_export("keras.metrics.Accuracy")
class Accuracy(MeanMetricWrapper):
    """tf.keras.metrics.Accuracy(name='accuracy', dtype=None):
    the mean of accuracy per sample."""

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name=name, dtype=dtype)


@tf_export("keras.metrics.BinaryAccuracy")
class BinaryAccuracy(MeanMetricWrapper):
    """tf.keras.metrics.BinaryAccuracy(name='binary_accuracy', dtype=None, threshold=0.5):
    the mean of binary_accuracy per sample."""

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=threshold)


@tf_export("keras.metrics.CategoricalAccuracy")
class CategoricalAccuracy(MeanMetricWrapper):
    """tf.keras.metrics.CategoricalAccuracy(name='categorical_accuracy', dtype=None):
    the mean of categorical_accuracy per sample."""

    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


@tf_export("keras.metrics.SparseCategoricalAccuracy")
class SparseCategoricalAccuracy(MeanMetricWrapper):
    """tf.keras.metrics.SparseCategoricalAccuracy(name='sparse_categorical_accuracy', dtype=None):
    the mean of sparse_categorical_accuracy per sample."""

    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)


@tf_export("keras.metrics.TopKCategoricalAccuracy")
class TopKCategoricalAccuracy(MeanMetricWrapper):
    """tf.keras.metrics.TopKCategoricalAccuracy(k=5, name='top_k_categorical_accuracy', dtype=None):
    the mean of top_k_categorical_accuracy per sample."""

    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(top_k_categorical_accuracy, name=name, dtype=dtype, k=k)


@tf_export("keras.metrics.SparseTopKCategoricalAccuracy")
class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """tf.keras.metrics.SparseTopKCategoricalAccuracy(k=5, name='sparse_top_k_categorical_accuracy', dtype=None):
    the mean of sparse_top_k_categorical_accuracy per sample."""

    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None):
        super().__init__(sparse_top_k_categorical_accuracy, name=name, dtype=dtype, k=k)


@tf_export("keras.metrics.MeanSquaredError")
class MeanSquaredError(MeanMetricWrapper):
    """tf.keras.metrics.MeanSquaredError(name='mean_squared_error', dtype=None):
    the mean of mean_squared_error per sample."""

    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, name=name, dtype=dtype)


@tf_export("keras.metrics.MeanAbsoluteError")
class MeanAbsoluteError(MeanMetricWrapper):
    """tf.keras.metrics.MeanAbsoluteError(name='mean_absolute_error', dtype=None):
    the mean of mean_absolute_error per sample."""

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, name=name, dtype=dtype)


@tf_export("keras.metrics.MeanAbsolutePercentageError")
class MeanAbsolutePercentageError(MeanMetricWrapper):
    """tf.keras.metrics.MeanAbsolutePercentageError(name='mean_absolute_percentage_error', dtype=None):
    the mean of mean_absolute_percentage_error per sample."""

    def __init__(self, name="mean_absolute_percentage_error", dtype=None):
        super().__init__(mean_absolute_percentage_error, name=name, dtype=dtype)


@tf_export("keras.metrics.MeanSquaredLogarithmicError")
class MeanSquaredLogarithmicError(MeanMetricWrapper):
    """tf.keras.metrics.MeanSquaredLogarithmicError(name='mean_squared_logarithmic_error', dtype=None):
    the mean of mean_squared_logarithmic_error per sample."""

    def __init__(self, name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(mean_squared_logarithmic_error, name=name, dtype=dtype)


@tf_export("keras.metrics.Hinge")
class Hinge(MeanMetricWrapper):
    """tf.keras.metrics.Hinge(name='hinge', dtype=None):
    the mean of hinge per sample."""

    def __init__(self, name="hinge", dtype=None):
        super().__init__(hinge, name=name, dtype=dtype)


@tf_export("keras.metrics.SquaredHinge")
class SquaredHinge(MeanMetricWrapper):
    """tf.keras.metrics.SquaredHinge(name='squared_hinge', dtype=None):
    the mean of squared_hinge per sample."""

    def __init__(self, name="squared_hinge", dtype=None):
        super().__init__(squared_hinge, name=name, dtype=dtype)


@tf_export("keras.metrics.CategoricalHinge")
class CategoricalHinge(MeanMetricWrapper):
    """tf.keras.metrics.CategoricalHinge(name='categorical_hinge', dtype=None):
    the mean of categorical_hinge per sample."""

    def __init__(self, name="categorical_hinge", dtype=None):
        super().__init__(categorical_hinge, name=name, dtype=dtype)


@tf_export("keras.metrics.LogCoshError")
class LogCoshError(MeanMetricWrapper):
    """tf.keras.metrics.LogCoshError(name='logcosh', dtype=None):
    the mean of logcosh per sample."""

    def __init__(self, name="logcosh", dtype=None):
        super().__init__(logcosh, name=name, dtype=dtype)


@tf_export("keras.metrics.Poisson")
class Poisson(MeanMetricWrapper):
    """tf.keras.metrics.Poisson(name='poisson', dtype=None):
    the mean of poisson per sample."""

    def __init__(self, name="poisson", dtype=None):
        super().__init__(poisson, name=name, dtype=dtype)


@tf_export("keras.metrics.KLDivergence")
class KLDivergence(MeanMetricWrapper):
    """tf.keras.metrics.KLDivergence(name='kullback_leibler_divergence', dtype=None):
    the mean of kullback_leibler_divergence per sample."""

    def __init__(self, name="kullback_leibler_divergence", dtype=None):
        super().__init__(kullback_leibler_divergence, name=name, dtype=dtype)


@tf_export("keras.metrics.CategoricalCrossentropy")
class CategoricalCrossentropy(MeanMetricWrapper):
    """tf.keras.metrics.CategoricalCrossentropy(name='categorical_crossentropy', dtype=None,
    from_logits=False, label_smoothing=0): the mean of categorical_crossentropy per sample."""

    def __init__(self, name="categorical_crossentropy", dtype=None, from_logits=False, label_smoothing=0):
        super().__init__(categorical_crossentropy, name=name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing)


@tf_export("keras.metrics.SparseCategoricalCrossentropy")
class SparseCategoricalCrossentropy(MeanMetricWrapper):
    """tf.keras.metrics.SparseCategoricalCrossentropy(name='sparse_categorical_crossentropy', dtype=None,
    from_logits=False, axis=-1): the mean of sparse_categorical_crossentropy per sample."""

    def __init__(self, name="sparse_categorical_crossentropy", dtype=None, from_logits=False, axis=-1):
        super().__init__(sparse_categorical_crossentropy, name=name, dtype=dtype, from_logits=from_logits, axis=axis)


@tf_export("keras.metrics.BinaryCrossentropy")
class BinaryCrossentropy(MeanMetricWrapper):
    """tf.keras.metrics.BinaryCrossentropy(name='binary_crossentropy', dtype=None,
    from_logits=False, label_smoothing=0): the mean of binary_crossentropy per sample."""

    def __init__(self, name="binary_crossentropy", dtype=None, from_logits=False, label_smoothing=0):
        super().__init__(binary_crossentropy, name=name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing)


@tf_export("keras.metrics.CosineSimilarity")
class CosineSimilarity(MeanMetricWrapper):
    """tf.keras.metrics.CosineSimilarity(name='cosine_similarity', dtype=None, axis=-1):
    the mean of cosine_similarity per sample."""

    def __init__(self, name="cosine_similarity", dtype=None, axis=-1):
        super().__init__(_cosine_similarity, name=name, dtype=dtype, axis=axis)


@tf_export("keras.metrics.RootMeanSquaredError")
class RootMeanSquaredError(Mean):
    """tf.keras.metrics.RootMeanSquaredError(name='root_mean_squared_error', dtype=None): the
    square root of the (weighted) mean of (y_pred - y_true)^2."""

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = squeeze_pair(cast(y_true, self._dtype), cast(y_pred, self._dtype))
        return super().update_state(squared_difference(y_pred, y_true), sample_weight=sample_weight)

    def result(self):
        return sqrt(div_no_nan(self.total, self.count))


# -- metrics over counts of predictions above thresholds ------------------------------------------
_KIND_NAMES = {"tp": "true_positives", "fp": "false_positives", "tn": "true_negatives", "fn": "false_negatives"}


def _thresholds(thresholds, default: float = 0.5) -> list:
    if thresholds is None:
        return [default]
    out = [float(t) for t in (thresholds if isinstance(thresholds, (list, tuple)) else [thresholds])]
    bad = [t for t in out if not 0 <= t <= 1]
    if bad:
        raise ValueError(f"Threshold values must be in [0, 1]. Invalid values: {bad}")
    return out


def _filter_top_k(x, k: int):
    """x with all but its k largest entries along the last axis set to -inf."""
    _, indices = top_k(x, k, sorted=False)
    mask = reduce_sum(one_hot(indices, x.shape[-1].value, dtype=x.dtype), axis=-2)
    return x * mask + (-1e10 * (1.0 - mask))


class _ConfusionCounts(Metric):
    """A metric over per-threshold counts of predictions above thresholds (variables of shape
    [len(thresholds)]); y_true is cast to bool, y_pred is a score in [0, 1]; class_id picks one
    column and top_k keeps only the k best predictions of each row."""

    def __init__(self, kinds, variable_names, thresholds, name, dtype, top_k=None, class_id=None,
                 resolved_thresholds=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        # with top_k and no thresholds, every kept prediction counts as positive
        self.thresholds = resolved_thresholds or _thresholds(thresholds, -1e10 if top_k is not None else 0.5)
        self.top_k, self.class_id = top_k, class_id
        self._kinds = kinds
        for kind, variable_name in zip(kinds, variable_names):
            setattr(self, _KIND_NAMES[kind], self.add_weight(variable_name, (len(self.thresholds),)))

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = cast(y_true, dtypes.bool)

        def keep(scores):   # Keras's top-k filter, then the one class
            if self.top_k is not None:
                scores = _filter_top_k(scores, self.top_k)
            return scores if self.class_id is None else scores[..., self.class_id]
        if self.class_id is not None:
            y_true = y_true[..., self.class_id]
        counts = batch_counts_at_thresholds(y_true, y_pred, self.thresholds, sample_weight, self._kinds, keep)
        return group(*[getattr(self, _KIND_NAMES[k]).assign_add(counts[k], read_value=False) for k in self._kinds])

    def _one_or_all(self, t):
        return t[0] if len(self.thresholds) == 1 else t


class _CountMetric(_ConfusionCounts):
    _kind = ""

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__((self._kind,), ("accumulator",), thresholds, name, dtype)

    def result(self):
        return self._one_or_all(convert_to_tensor(getattr(self, _KIND_NAMES[self._kind])))

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds}


@tf_export("keras.metrics.TruePositives")
class TruePositives(_CountMetric):
    """tf.keras.metrics.TruePositives(thresholds=None, name=None, dtype=None): the (weighted)
    count of true labels predicted above each threshold (default 0.5); variable "accumulator"."""
    _kind = "tp"


@tf_export("keras.metrics.FalsePositives")
class FalsePositives(_CountMetric):
    """tf.keras.metrics.FalsePositives(thresholds=None, name=None, dtype=None): false labels
    predicted above each threshold."""
    _kind = "fp"


@tf_export("keras.metrics.TrueNegatives")
class TrueNegatives(_CountMetric):
    """tf.keras.metrics.TrueNegatives(thresholds=None, name=None, dtype=None): false labels
    predicted at or below each threshold."""
    _kind = "tn"


@tf_export("keras.metrics.FalseNegatives")
class FalseNegatives(_CountMetric):
    """tf.keras.metrics.FalseNegatives(thresholds=None, name=None, dtype=None): true labels
    predicted at or below each threshold."""
    _kind = "fn"


@tf_export("keras.metrics.Precision")
class Precision(_ConfusionCounts):
    """tf.keras.metrics.Precision(thresholds=None, top_k=None, class_id=None, name=None,
    dtype=None): true_positives / (true_positives + false_positives) at each threshold."""

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(("tp", "fp"), ("true_positives", "false_positives"), thresholds, name, dtype, top_k,
                         class_id)

    def result(self):
        return self._one_or_all(div_no_nan(self.true_positives, self.true_positives + self.false_positives))

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds, "top_k": self.top_k,
                "class_id": self.class_id}


@tf_export("keras.metrics.Recall")
class Recall(_ConfusionCounts):
    """tf.keras.metrics.Recall(thresholds=None, top_k=None, class_id=None, name=None,
    dtype=None): true_positives / (true_positives + false_negatives) at each threshold."""

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(("tp", "fn"), ("true_positives", "false_negatives"), thresholds, name, dtype, top_k,
                         class_id)

    def result(self):
        return self._one_or_all(div_no_nan(self.true_positives, self.true_positives + self.false_negatives))

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds, "top_k": self.top_k,
                "class_id": self.class_id}


@tf_export("keras.metrics.AUC")
class AUC(_ConfusionCounts):
    """tf.keras.metrics.AUC(num_thresholds=200, curve='ROC', summation_method='interpolation',
    name=None, dtype=None, thresholds=None): the area under the ROC or PR curve, a Riemann sum
    over num_thresholds thresholds evenly spaced in [0, 1] (the ends widened by 1e-7) or the
    given ones; 'interpolation' (PR: Davis & Goadrich's interpolation of precision),
    'minoring' or 'majoring' heights."""

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation", name=None, dtype=None,
                 thresholds=None):
        if curve not in ("ROC", "PR"):
            raise ValueError(f'Invalid AUC curve value "{curve}". Expected values are ["ROC", "PR"]')
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError(f'Invalid AUC summation method value "{summation_method}". Expected values are '
                             '["interpolation", "majoring", "minoring"]')
        self._init_from_thresholds = thresholds is not None
        if thresholds is not None:
            inner = sorted(_thresholds(thresholds))
            num_thresholds = len(inner) + 2
        else:
            if num_thresholds <= 1:
                raise ValueError("`num_thresholds` must be > 1.")
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        self.num_thresholds, self.curve, self.summation_method = num_thresholds, curve, summation_method
        super().__init__(("tp", "tn", "fp", "fn"), ("true_positives", "true_negatives", "false_positives",
                                                    "false_negatives"), None, name, dtype,
                         resolved_thresholds=[0.0 - _EPSILON] + inner + [1.0 + _EPSILON])

    def _interpolate_pr_auc(self, tp, fp, fn):
        n = self.num_thresholds
        dtp = tp[:n - 1] - tp[1:]
        p = tp + fp
        slope = div_no_nan(dtp, maximum(p[:n - 1] - p[1:], 0))
        intercept = tp[1:] - slope * p[1:]
        ratio = where_positive_pair(p[:n - 1], p[1:])
        return reduce_sum(div_no_nan(slope * (dtp + intercept * log(ratio)), maximum(tp[1:] + fn[1:], 0)))

    def result(self):
        tp, fp, tn, fn = (convert_to_tensor(v) for v in (self.true_positives, self.false_positives,
                                                          self.true_negatives, self.false_negatives))
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self._interpolate_pr_auc(tp, fp, fn)
        n = self.num_thresholds
        recall = div_no_nan(tp, tp + fn)
        x, y = (div_no_nan(fp, fp + tn), recall) if self.curve == "ROC" else (recall, div_no_nan(tp, tp + fp))
        if self.summation_method == "interpolation":
            heights = (y[:n - 1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = minimum(y[:n - 1], y[1:])
        else:
            heights = maximum(y[:n - 1], y[1:])
        return reduce_sum((x[:n - 1] - x[1:]) * heights)

    def get_config(self):
        config = {**super().get_config(), "num_thresholds": self.num_thresholds, "curve": self.curve,
                  "summation_method": self.summation_method}
        if self._init_from_thresholds:
            config["thresholds"] = self.thresholds[1:-1]
        return config


def where_positive_pair(before, after):
    """before / after where both are positive, else 1 (the ratio AUC's PR interpolation takes the log of)."""
    both = cast(greater(before, 0), before.dtype) * cast(greater(after, 0), before.dtype)
    return both * div_no_nan(before, maximum(after, 0)) + (1.0 - both)


class _SensitivitySpecificityBase(_ConfusionCounts):
    """Counts at num_thresholds thresholds evenly spaced over [0, 1] (0.5 alone for one)."""

    def __init__(self, value, num_thresholds=200, name=None, dtype=None):
        if num_thresholds <= 0:
            raise ValueError("`num_thresholds` must be > 0.")
        self.value, self.num_thresholds = value, num_thresholds
        inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        super().__init__(("tp", "tn", "fp", "fn"), ("true_positives", "true_negatives", "false_positives",
                                                    "false_negatives"), None, name, dtype,
                         resolved_thresholds=[0.5] if num_thresholds == 1 else [0.0] + inner + [1.0])

    def _at_closest(self, achieved, hits, misses):
        """hits / (hits + misses) at the threshold where `achieved` is closest to the target value."""
        index = cast(argmin(abs_(achieved - self.value), axis=0), dtypes.int32)
        return div_no_nan(hits[index], hits[index] + misses[index])


@tf_export("keras.metrics.SensitivityAtSpecificity")
class SensitivityAtSpecificity(_SensitivitySpecificityBase):
    """tf.keras.metrics.SensitivityAtSpecificity(specificity, num_thresholds=200, name=None,
    dtype=None): the sensitivity (recall) at the threshold whose specificity is closest to the
    given one."""

    def __init__(self, specificity, num_thresholds=200, name=None, dtype=None):
        if not 0 <= specificity <= 1:
            raise ValueError("`specificity` must be in the range [0, 1].")
        self.specificity = specificity
        super().__init__(specificity, num_thresholds, name, dtype)

    def result(self):
        tp, tn, fp, fn = (convert_to_tensor(v) for v in (self.true_positives, self.true_negatives,
                                                          self.false_positives, self.false_negatives))
        return self._at_closest(div_no_nan(tn, tn + fp), tp, fn)

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds, "specificity": self.specificity}


@tf_export("keras.metrics.SpecificityAtSensitivity")
class SpecificityAtSensitivity(_SensitivitySpecificityBase):
    """tf.keras.metrics.SpecificityAtSensitivity(sensitivity, num_thresholds=200, name=None,
    dtype=None): the specificity at the threshold whose sensitivity is closest to the given one."""

    def __init__(self, sensitivity, num_thresholds=200, name=None, dtype=None):
        if not 0 <= sensitivity <= 1:
            raise ValueError("`sensitivity` must be in the range [0, 1].")
        self.sensitivity = sensitivity
        super().__init__(sensitivity, num_thresholds, name, dtype)

    def result(self):
        tp, tn, fp, fn = (convert_to_tensor(v) for v in (self.true_positives, self.true_negatives,
                                                          self.false_positives, self.false_negatives))
        return self._at_closest(div_no_nan(tp, tp + fn), tn, fp)

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds, "sensitivity": self.sensitivity}


@tf_export("keras.metrics.MeanRelativeError")
class MeanRelativeError(Mean):
    """tf.keras.metrics.MeanRelativeError(normalizer, name=None, dtype=None): the (weighted) mean
    of |y_pred - y_true| / normalizer (0 where the normalizer is 0)."""

    def __init__(self, normalizer, name=None, dtype=None):
        super().__init__(name=name or "mean_relative_error", dtype=dtype)
        self._normalizer_value = normalizer
        self.normalizer = cast(normalizer, self._dtype)

    def get_config(self):
        return {**super().get_config(), "normalizer": self._normalizer_value}

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = squeeze_pair(cast(y_true, self._dtype), cast(y_pred, self._dtype))
        normalizer, y_pred = squeeze_pair(self.normalizer, y_pred)
        return super().update_state(div_no_nan(abs_(y_true - y_pred), normalizer), sample_weight=sample_weight)


@tf_export("keras.metrics.MeanIoU")
class MeanIoU(Metric):
    """tf.keras.metrics.MeanIoU(num_classes, name=None, dtype=None): the mean over classes that
    occur (in labels or predictions) of tp / (tp + fp + fn), from the float64 confusion matrix
    "total_confusion_matrix" [num_classes, num_classes] of integer labels and predictions."""

    def __init__(self, num_classes, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.num_classes = num_classes
        self.total_cm = self.add_weight("total_confusion_matrix", (num_classes, num_classes), dtypes.float64)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = cast(y_true, self._dtype), cast(y_pred, self._dtype)
        weights = None if sample_weight is None else reshape(cast(sample_weight, self._dtype), [-1])
        return self.total_cm.assign_add(batch_confusion_matrix(y_true, y_pred, self.num_classes, weights))

    def result(self):
        cm = convert_to_tensor(self.total_cm)
        over_rows = cast(reduce_sum(cm, 0), self._dtype)
        over_cols = cast(reduce_sum(cm, 1), self._dtype)
        true_positives = cast(diag_part(cm), self._dtype)
        denominator = over_rows + over_cols - true_positives
        num_valid = reduce_sum(cast(not_equal(denominator, 0), self._dtype))
        return div_no_nan(reduce_sum(div_no_nan(true_positives, denominator)), num_valid)

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes}


# -- by name --------------------------------------------------------------------------------------
_OBJECTS = {**{k: v for k, v in losses.ALL_OBJECTS.items() if not isinstance(v, type)},
            **{k: v for k, v in dict(globals()).items()
               if not k.startswith("_") and callable(v) and getattr(v, "__module__", None) == __name__
               and k not in {"where_positive_pair", "serialize", "deserialize", "get"}}}


@tf_export("keras.metrics.serialize")
def serialize(metric):
    """A metric function as its name, a Metric as {"class_name", "config"}."""
    return serialize_keras_object(metric)


@tf_export("keras.metrics.deserialize")
def deserialize(config, custom_objects=None):
    """The metric function or Metric a name or config names (ValueError "Unknown metric
    function: ..." for a name Keras does not have)."""
    return deserialize_keras_object(config, _OBJECTS, custom_objects, "metric function")


@tf_export("keras.metrics.get")
def get(identifier):
    """tf.keras.metrics.get: a name or config dict deserialized, a callable as it is."""
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret metric function identifier: {identifier!r}")


__getattr__, __dir__ = _api.lazy_attributes(__name__)
