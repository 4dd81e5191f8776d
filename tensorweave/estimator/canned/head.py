"""The heads of TF 1.15's premade Estimators (estimator/canned/head.py): from a model's logits and
the labels, the predictions, the loss, the evaluation metrics and the export outputs of each mode's
EstimatorSpec. Binary (sigmoid cross entropy), multi-class (softmax cross entropy) and regression
(squared error) heads, with `weight_column`, `label_vocabulary` and `loss_reduction` as TF's; and
tf.contrib.estimator's factories of them (SUM_OVER_BATCH_SIZE by default; `loss_fn`, binary
`thresholds`, `inverse_link_fn`, a `name` suffixing the metric keys) for the head-taking
Estimators and custom model_fns."""
from __future__ import annotations

from tensorweave.estimator.export import ClassificationOutput, PredictOutput, RegressionOutput
from tensorweave.estimator.model_fn import EstimatorSpec, ModeKeys, fn_args
from tensorweave.feature_column.columns import NumericColumn
from tensorweave.framework import dtypes
from tensorweave.framework.api import GraphKeys, control_dependencies, get_collection, name_scope
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.losses import Reduction, compute_weighted_loss, mean_squared_error, sparse_softmax_cross_entropy
from tensorweave.metrics.base import broadcast_weights
from tensorweave.metrics.confusion import auc, precision, precision_at_thresholds, recall, recall_at_thresholds
from tensorweave.metrics.means import accuracy, mean
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import constant, expand_dims, identity, shape, squeeze
from tensorweave.ops.array.fill import ones_like, zeros_like
from tensorweave.ops.array.gather import gather
from tensorweave.ops.array.pad import tile
from tensorweave.ops.debugging.asserts import assert_less_equal, assert_non_negative
from tensorweave.ops.grouping import group
from tensorweave.ops.lookup.tables import index_table_from_tensor
from tensorweave.ops.debugging.printing import Assert
from tensorweave.ops.math.binary import equal, maximum
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import argmax, reduce_all, reduce_sum
from tensorweave.ops.math.sequences import range as tf_range
from tensorweave.ops.math.unary import exp, sigmoid
from tensorweave.ops.nn.activations import softmax
from tensorweave.ops.nn.impl import log_poisson_loss, sigmoid_cross_entropy_with_logits
from tensorweave.ops.strings.conversion import as_string
from tensorweave.saved_model.signature_constants import DEFAULT_SERVING_SIGNATURE_DEF_KEY
from tensorweave.summary.summary import scalar
from tensorweave.train.training_util import get_global_step

CLASSIFY_SERVING_KEY, REGRESS_SERVING_KEY, PREDICT_SERVING_KEY = "classification", "regression", "predict"


def _check_labels(labels, logits, dimension: int):
    """labels as [batch, dimension] (a [batch] vector gains its last axis), checked against logits."""
    if labels is None:
        raise ValueError("You must provide a labels Tensor. Given: None. Suggested troubleshooting steps: Check that "
                         "your data contain your label feature. Check that your input_fn properly parses and returns "
                         "labels.")
    if isinstance(labels, SparseTensor):
        raise ValueError("SparseTensor labels are not supported. labels must be a Tensor of shape [D0, D1, ..., DN, "
                         f"{dimension}], e.g. [batch_size, {dimension}]. Suggested Fix (1): Check the label feature in "
                         f"your data. Each example must contain {dimension} value(s). If not, your choice of label was "
                         "probably incorrect. Suggested Fix (2): In your input_fn, use tf.sparse_tensor_to_dense() to "
                         "turn labels into a Tensor.")
    if isinstance(labels, dict):
        raise ValueError(f"labels must be a Tensor, not a dict: {sorted(labels)}")
    labels = convert_to_tensor(labels)
    if labels.shape.ndims == 1 and dimension == 1:
        labels = expand_dims(labels, -1)
    last = labels.shape[-1].value if labels.shape.ndims else None
    if last is not None and last != dimension:
        raise ValueError(f"Mismatched label shape. Expected labels dimension={dimension}.  Received {last}. "
                         "Suggested Fix:If your classifier expects one-hot encoding label,check your n_classes "
                         "argument to the estimator and/or the shape of your label.Otherwise, check the shape of "
                         "your label.")
    return labels


def _weights(features, weight_column, logits):
    """The examples' weights from features (1. without a weight_column), float32 [batch, 1]."""
    if weight_column is None:
        return 1.
    key = weight_column.key if isinstance(weight_column, NumericColumn) else weight_column
    if key not in features:
        raise ValueError(f"weight_column {key!r} is not in features: {sorted(features)}")
    weights = features[key]
    if isinstance(weight_column, NumericColumn) and weight_column.normalizer_fn is not None:
        weights = weight_column.normalizer_fn(weights)
    weights = convert_to_tensor(weights)
    if not (weights.dtype.is_floating or weights.dtype.is_integer):
        raise ValueError(f"Weight column should be castable to float. Given dtype: {weights.dtype}")
    weights = cast(weights, dtypes.float32, name="weights")
    if weights.shape.ndims == 1:
        weights = expand_dims(weights, -1)
    return weights


def _assert_range(labels, n_classes: int, message=None):
    with name_scope(None, "assert_range", (labels,)):
        less = assert_less_equal(labels, convert_to_tensor(n_classes - 1, dtype=labels.dtype),
                                 message=message or "Labels must <= n_classes - 1")
        non_negative = assert_non_negative(labels, message=message or "Labels must >= 0")
        with control_dependencies((less, non_negative)):
            return identity(labels)


def _label_ids(labels, label_vocabulary, n_classes: int):
    """Integer class ids of labels: by their index in label_vocabulary (string labels) or as given."""
    if label_vocabulary is None:
        if not labels.dtype.is_integer:
            raise ValueError(f"Labels dtype should be integer. Instead got {labels.dtype}.")
        return _assert_range(labels, n_classes)
    if labels.dtype != dtypes.string:
        raise ValueError(f"Labels dtype should be string if there is a vocabulary. Instead got {labels.dtype}")
    ids = index_table_from_tensor(vocabulary_list=tuple(label_vocabulary), name="class_id_lookup").lookup(labels)
    return _assert_range(ids, n_classes)


def _class_names(n_classes: int, label_vocabulary):
    return constant(list(label_vocabulary)) if label_vocabulary else as_string(tf_range(n_classes))


def _per_example(row, logits):
    """row [n] tiled to [batch, n]."""
    return tile(expand_dims(row, 0), [shape(logits)[0], 1])


def _float_mean(values, weights, name):
    with name_scope(name, values=(values,)) as scope:
        values = cast(values, dtypes.float32)
        if not isinstance(weights, float):
            weights = broadcast_weights(weights, values)
        return mean(values, weights=weights, name=scope)


def _optional_weights(weights):
    return None if isinstance(weights, float) else weights


class _Head:
    """What every head shares: the EstimatorSpec of each mode from logits (TF's _Head)."""

    def __init__(self, logits_dimension: int, weight_column=None, loss_reduction=Reduction.SUM, loss_fn=None,
                 name=None):
        if loss_reduction not in Reduction.all() or loss_reduction == Reduction.NONE:
            raise ValueError(f"Invalid loss_reduction: {loss_reduction}")
        if loss_fn is not None:
            _validate_loss_fn_args(loss_fn)
        self._logits_dimension, self._weight_column = logits_dimension, weight_column
        self._loss_reduction, self._loss_fn, self._name = loss_reduction, loss_fn, name

    name = property(lambda self: self._name)
    logits_dimension = property(lambda self: self._logits_dimension)

    def _loss(self, features, logits, labels):
        """(training loss, unreduced loss [batch, d], weights, processed labels)."""
        labels = self._processed_labels(logits, labels)
        if self._loss_fn is None:
            unreduced = self._default_loss(labels, logits)
        else:
            unreduced = _call_loss_fn(self._loss_fn, labels, logits, features, self._loss_dimension)
        weights = _weights(features, self._weight_column, logits)
        training_loss = compute_weighted_loss(unreduced, weights=weights, reduction=self._loss_reduction)
        return training_loss, unreduced, weights, labels

    _summarise_mean_loss = True   # TF's v1 heads summarise average_loss (for SUM); the v2 Head classes do not

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None, train_op_fn=None,
                              regularization_losses=None) -> EstimatorSpec:
        """The EstimatorSpec of `mode`: predictions and export outputs (PREDICT), loss and metrics
        (EVAL), loss and the train op of optimizer.minimize or train_op_fn(loss) (TRAIN)."""
        def train_op_of(loss):
            if optimizer is not None:
                if train_op_fn is not None:
                    raise ValueError("train_op_fn and optimizer cannot both be set.")
                train_op = optimizer.minimize(loss, global_step=get_global_step())
            elif train_op_fn is not None:
                train_op = train_op_fn(loss)
            else:
                raise ValueError("train_op_fn and optimizer cannot both be None.")
            update_ops = get_collection(GraphKeys.UPDATE_OPS)
            return group(train_op, *update_ops) if update_ops else train_op
        return self._estimator_spec(features, mode, logits, labels, regularization_losses, train_op_of)

    def _checked_logits(self, logits):
        logits = convert_to_tensor(logits)
        last = logits.shape[-1].value if logits.shape.ndims else None
        if last is not None and last != self._logits_dimension:
            raise ValueError(f"logits shape must be [D0, D1, ... DN, logits_dimension], got {logits.shape}.")
        return logits

    def _estimator_spec(self, features, mode, logits, labels, regularization_losses, train_op_of) -> EstimatorSpec:
        with name_scope(self._name, "head"):
            logits = self._checked_logits(logits)
            with name_scope(None, "predictions", (logits,)):
                predictions, export_outputs, metric_inputs = self._predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(mode, predictions=predictions, export_outputs=export_outputs)
            training_loss, unreduced, weights, labels = self._loss(features, logits, labels)
            regularization_loss = None
            loss = training_loss
            if regularization_losses:
                regularization_loss = sum(regularization_losses[1:], regularization_losses[0])
                loss = training_loss + regularization_loss
            if mode == ModeKeys.EVAL:
                with name_scope(None, "metrics", (labels, logits, weights)):
                    metrics = self._metrics(labels, weights, unreduced, **metric_inputs)
                    metrics["average_loss"] = mean(unreduced, weights=_optional_weights(weights),
                                                   name="average_loss")
                    if regularization_loss is not None:
                        metrics["regularization_loss"] = mean(regularization_loss, name="regularization_loss")
                return EstimatorSpec(mode, predictions=predictions, loss=loss,
                                     eval_metric_ops={_summary_key(self._name, k): v for k, v in metrics.items()})
            train_op = train_op_of(loss)
            mean_loss = None
            if self._summarise_mean_loss and self._loss_reduction == Reduction.SUM:
                mean_loss = training_loss / reduce_sum(weights * ones_like(unreduced))
        with name_scope(""):
            scalar(_summary_key(self._name, "loss"), loss)
            if mean_loss is not None:
                scalar(_summary_key(self._name, "average_loss"), mean_loss)
            if regularization_loss is not None:
                scalar(_summary_key(self._name, "regularization_loss"), regularization_loss)
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)


def _summary_key(head_name, key: str) -> str:
    return f"{key}/{head_name}" if head_name else key


class _MultiClassHead(_Head):
    """Softmax cross entropy over n_classes > 2 logits."""

    _loss_dimension = 1

    def __init__(self, n_classes, weight_column=None, label_vocabulary=None, loss_reduction=Reduction.SUM,
                 loss_fn=None, name=None):
        if n_classes is None:
            raise ValueError("n_classes cannot be None")
        if n_classes <= 2:
            raise ValueError(f"n_classes must be > 2: {n_classes}.")
        _check_vocabulary(label_vocabulary)
        super().__init__(n_classes, weight_column, loss_reduction, loss_fn, name)
        self._n_classes, self._label_vocabulary = n_classes, label_vocabulary

    def _processed_labels(self, logits, labels):
        return _label_ids(_check_labels(labels, logits, 1), self._label_vocabulary, self._n_classes)

    @staticmethod
    def _default_loss(labels, logits):
        return expand_dims(sparse_softmax_cross_entropy(labels=labels, logits=logits, reduction=Reduction.NONE), -1)

    def _predictions(self, logits):
        class_ids = expand_dims(argmax(logits, axis=-1, name="class_ids"), -1)
        probabilities = softmax(logits, name="probabilities")
        predictions = _class_predictions(logits, probabilities, class_ids, self._n_classes, self._label_vocabulary)
        return predictions, _classification_export_outputs(predictions), {"class_ids": class_ids}

    @staticmethod
    def _metrics(labels, weights, unreduced, class_ids):
        return {"accuracy": accuracy(labels, class_ids, weights=_optional_weights(weights), name="accuracy")}


class _BinaryHead(_Head):
    """Sigmoid cross entropy over one logit."""

    _loss_dimension = 1

    def __init__(self, weight_column=None, thresholds=None, label_vocabulary=None, loss_reduction=Reduction.SUM,
                 loss_fn=None, name=None):
        thresholds = tuple(thresholds) if thresholds else ()
        if any(t <= 0. or t >= 1. for t in thresholds):
            raise ValueError(f"thresholds not in (0, 1): {thresholds}.")
        _check_vocabulary(label_vocabulary)
        super().__init__(1, weight_column, loss_reduction, loss_fn, name)
        self._label_vocabulary, self._thresholds = label_vocabulary, thresholds

    def _processed_labels(self, logits, labels):
        labels = _check_labels(labels, logits, 1)
        if self._label_vocabulary is not None:
            labels = index_table_from_tensor(vocabulary_list=tuple(self._label_vocabulary),
                                             name="class_id_lookup").lookup(labels)
        return _assert_range(cast(labels, dtypes.float32), 2)

    @staticmethod
    def _default_loss(labels, logits):
        return sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)

    def _predictions(self, logits):
        logistic = sigmoid(logits, name="logistic")
        two_class_logits = concat((zeros_like(logits), logits), axis=-1, name="two_class_logits")
        probabilities = softmax(two_class_logits, name="probabilities")
        class_ids = expand_dims(argmax(two_class_logits, axis=-1, name="class_ids"), -1)
        predictions = _class_predictions(logits, probabilities, class_ids, 2, self._label_vocabulary)
        predictions["logistic"] = logistic
        export_outputs = _classification_export_outputs(predictions)
        export_outputs[REGRESS_SERVING_KEY] = RegressionOutput(value=logistic)
        return predictions, export_outputs, {"class_ids": class_ids, "logistic": logistic}

    _pr_summation = "trapezoidal"   # tf.metrics.auc's (v1 heads); the v2 heads' Keras AUC interpolates

    def _metrics(self, labels, weights, unreduced, class_ids, logistic):
        w = _optional_weights(weights)
        label_mean = _float_mean(labels, weights, "label/mean")
        with name_scope(None, "accuracy_baseline", label_mean):
            baseline = (maximum(label_mean[0], 1. - label_mean[0], name="value"),
                        maximum(label_mean[1], 1. - label_mean[1], name="update_op"))
        metrics = {
            "accuracy": accuracy(labels, class_ids, weights=w, name="accuracy"),
            "precision": precision(labels, class_ids, weights=w, name="precision"),
            "recall": recall(labels, class_ids, weights=w, name="recall"),
            "prediction/mean": _float_mean(logistic, weights, "prediction/mean"),
            "label/mean": label_mean,
            "accuracy_baseline": baseline,
            "auc": auc(labels, logistic, weights=None if w is None else broadcast_weights(w, logistic), name="auc"),
            "auc_precision_recall": auc(labels, logistic, curve="PR", name="auc_precision_recall",
                                        summation_method=self._pr_summation,
                                        weights=None if w is None else broadcast_weights(w, logistic)),
        }
        for threshold in self._thresholds:
            with name_scope(None, f"accuracy_at_{threshold}", (logistic, labels)) as scope:
                metrics[f"accuracy/positive_threshold_{threshold:g}"] = accuracy(
                    labels, cast(logistic >= threshold, dtypes.float32), weights=w, name=scope)
            for key, at_thresholds in (("precision", precision_at_thresholds), ("recall", recall_at_thresholds)):
                with name_scope(None, f"{key}_at_{threshold}", (logistic, labels)) as scope:
                    value, update = at_thresholds(labels, logistic, (threshold,), weights=w, name=scope)
                    metrics[f"{key}/positive_threshold_{threshold:g}"] = (squeeze(value), squeeze(update))
        return metrics


class _RegressionHead(_Head):
    """Squared error of label_dimension predictions."""

    def __init__(self, weight_column=None, label_dimension=1, loss_reduction=Reduction.SUM, loss_fn=None,
                 inverse_link_fn=None, name=None):
        if label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}.")
        super().__init__(label_dimension, weight_column, loss_reduction, loss_fn, name)
        self._inverse_link_fn = inverse_link_fn

    _loss_dimension = property(lambda self: self._logits_dimension)

    def _processed_labels(self, logits, labels):
        return cast(_check_labels(labels, logits, self._logits_dimension), dtypes.float32)

    @staticmethod
    def _default_loss(labels, logits):
        return mean_squared_error(labels=labels, predictions=logits, reduction=Reduction.NONE)

    def _predictions(self, logits):
        predicted = logits if self._inverse_link_fn is None else self._inverse_link_fn(logits)
        predictions = {"predictions": predicted}
        if self._inverse_link_fn is not None:
            predictions["logits"] = logits
        output = RegressionOutput(value=predicted)
        return predictions, {DEFAULT_SERVING_SIGNATURE_DEF_KEY: output, REGRESS_SERVING_KEY: output,
                             PREDICT_SERVING_KEY: PredictOutput(predictions)}, {"predicted": predicted}

    @staticmethod
    def _metrics(labels, weights, unreduced, predicted):
        w = _optional_weights(weights)
        return {"prediction/mean": _float_mean(predicted, weights, "prediction/mean"),
                "label/mean": mean(labels, weights=w)}


def _validate_loss_fn_args(loss_fn) -> None:
    """loss_fn(labels, logits[, features]), as TF requires."""
    args = fn_args(loss_fn)
    for required in ("labels", "logits"):
        if required not in args:
            raise ValueError(f"loss_fn must contain argument: {required}. Given arguments: {args}")
    unexpected = sorted(set(args) - {"labels", "logits", "features"})
    if unexpected:
        raise ValueError(f"loss_fn has unexpected args: {unexpected}")


def _call_loss_fn(loss_fn, labels, logits, features, expected_loss_dim: int):
    """loss_fn's unweighted loss, asserted [D0, ... DN, expected_loss_dim] when run."""
    kwargs = {"features": features} if "features" in fn_args(loss_fn) else {}
    with name_scope(None, "call_loss_fn", [labels, logits] + list(features.values())):
        loss = loss_fn(labels=labels, logits=logits, **kwargs)
        logits_shape = shape(logits, name="logits_shape")
        expected = concat([logits_shape[:-1], [expected_loss_dim]], axis=0, name="expected_loss_shape")
        loss_shape = shape(loss, name="loss_shape")
        check = Assert(reduce_all(equal(loss_shape, expected)),
                       [f"loss_fn must return Tensor of shape [D0, D1, ... DN, {expected_loss_dim}]. ",
                        "logits_shape: ", logits_shape, "loss_shape: ", loss_shape], name="check_loss_shape")
        with control_dependencies([check]):
            return identity(loss)


def _check_vocabulary(label_vocabulary) -> None:
    """(TF checks only the type: a label missing from the vocabulary fails "Labels must >= 0" when run.)"""
    if label_vocabulary is not None and not isinstance(label_vocabulary, (list, tuple)):
        raise ValueError(f"label_vocabulary should be a list or a tuple. Given type: {type(label_vocabulary)}")


def _class_predictions(logits, probabilities, class_ids, n_classes: int, label_vocabulary) -> dict:
    names = _class_names(n_classes, label_vocabulary)
    classes = gather(names, class_ids) if label_vocabulary else as_string(class_ids, name="str_classes")
    return {"logits": logits, "probabilities": probabilities, "class_ids": class_ids, "classes": classes,
            "all_class_ids": _per_example(tf_range(n_classes), logits),
            "all_classes": _per_example(_class_names(n_classes, label_vocabulary), logits)}


def _classification_export_outputs(predictions) -> dict:
    """serving_default and classification: the probabilities and the class names; predict: every prediction."""
    output = ClassificationOutput(scores=predictions["probabilities"], classes=predictions["all_classes"])
    return {DEFAULT_SERVING_SIGNATURE_DEF_KEY: output, CLASSIFY_SERVING_KEY: output,
            PREDICT_SERVING_KEY: PredictOutput(predictions)}


def binary_or_multi_class_head(n_classes, weight_column, label_vocabulary, loss_reduction) -> _Head:
    """The head of a premade classifier: binary for n_classes == 2, multi-class above."""
    if n_classes == 2:
        return _BinaryHead(weight_column=weight_column, label_vocabulary=label_vocabulary,
                           loss_reduction=loss_reduction)
    return _MultiClassHead(n_classes, weight_column=weight_column, label_vocabulary=label_vocabulary,
                           loss_reduction=loss_reduction)



@tf_export("contrib.estimator.binary_classification_head")
def binary_classification_head(weight_column=None, thresholds=None, label_vocabulary=None,
                               loss_reduction=Reduction.SUM_OVER_BATCH_SIZE, loss_fn=None, name=None) -> _Head:
    """tf.contrib.estimator.binary_classification_head(weight_column=None, thresholds=None,
    label_vocabulary=None, loss_reduction=SUM_OVER_BATCH_SIZE, loss_fn=None, name=None): sigmoid
    cross entropy over one logit (or loss_fn(labels, logits[, features])); `thresholds` add
    accuracy/precision/recall at each; `name` suffixes the metric keys ("auc/NAME")."""
    return _BinaryHead(weight_column, thresholds, label_vocabulary, loss_reduction, loss_fn, name)


@tf_export("contrib.estimator.multi_class_head")
def multi_class_head(n_classes, weight_column=None, label_vocabulary=None,
                     loss_reduction=Reduction.SUM_OVER_BATCH_SIZE, loss_fn=None, name=None) -> _Head:
    """tf.contrib.estimator.multi_class_head(n_classes, weight_column=None, label_vocabulary=None,
    loss_reduction=SUM_OVER_BATCH_SIZE, loss_fn=None, name=None): softmax cross entropy over
    n_classes > 2 logits."""
    return _MultiClassHead(n_classes, weight_column, label_vocabulary, loss_reduction, loss_fn, name)


@tf_export("contrib.estimator.regression_head")
def regression_head(weight_column=None, label_dimension=1, loss_reduction=Reduction.SUM_OVER_BATCH_SIZE,
                    loss_fn=None, inverse_link_fn=None, name=None) -> _Head:
    """tf.contrib.estimator.regression_head(weight_column=None, label_dimension=1,
    loss_reduction=SUM_OVER_BATCH_SIZE, loss_fn=None, inverse_link_fn=None, name=None): squared
    error (or loss_fn) of label_dimension logits; predictions inverse_link_fn(logits) when given."""
    return _RegressionHead(weight_column, label_dimension, loss_reduction, loss_fn, inverse_link_fn, name)


@tf_export("contrib.estimator.poisson_regression_head")
def poisson_regression_head(weight_column=None, label_dimension=1, loss_reduction=Reduction.SUM_OVER_BATCH_SIZE,
                            compute_full_loss=True, name=None) -> _Head:
    """tf.contrib.estimator.poisson_regression_head(weight_column=None, label_dimension=1,
    loss_reduction=SUM_OVER_BATCH_SIZE, compute_full_loss=True, name=None): Poisson regression
    (tf.nn.log_poisson_loss of the logits as log rates); predictions exp(logits)."""
    return _RegressionHead(weight_column, label_dimension, loss_reduction, poisson_loss_fn(compute_full_loss), exp,
                           name)


@tf_export("contrib.estimator.logistic_regression_head")
def logistic_regression_head(weight_column=None, loss_reduction=Reduction.SUM_OVER_BATCH_SIZE, name=None) -> _Head:
    """tf.contrib.estimator.logistic_regression_head(weight_column=None,
    loss_reduction=SUM_OVER_BATCH_SIZE, name=None): regression of labels in [0, 1] by sigmoid
    cross entropy; predictions sigmoid(logits)."""
    return _RegressionHead(weight_column, 1, loss_reduction, logistic_loss, sigmoid, name)


def poisson_loss_fn(compute_full_loss: bool):
    """loss_fn of Poisson regression: tf.nn.log_poisson_loss of the logits as log rates."""
    def poisson_loss(labels, logits):
        return log_poisson_loss(targets=labels, log_input=logits, compute_full_loss=compute_full_loss)
    return poisson_loss


def logistic_loss(labels, logits):
    """loss_fn of logistic regression: sigmoid cross entropy of labels in [0, 1]."""
    labels = _assert_range(labels, 2, message="Labels must be in range [0, 1]")
    return sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
