"""The Head classes of TF 1.15's tf.estimator (TF's estimator/head/*: Head, BinaryClassHead,
MultiClassHead, MultiLabelHead, RegressionHead, LogisticRegressionHead, PoissonRegressionHead,
MultiHead): the heads of head.py with TF's v2 head API — loss_reduction as
tf.keras.losses.Reduction (SUM_OVER_BATCH_SIZE by default), create_estimator_spec(features, mode,
logits, labels, optimizer (a tf.keras optimizer, stepped by get_updates over
trainable_variables), trainable_variables, train_op_fn, update_ops, regularization_losses),
loss(labels, logits, features) and predictions(logits, keys)."""
from __future__ import annotations

from tensorweave.estimator.canned.head import (PREDICT_SERVING_KEY, _assert_range, _BinaryHead, _check_labels,
                                               _class_names, _classification_export_outputs,
                                               _Head, _MultiClassHead, _optional_weights, _per_example,
                                               _RegressionHead, _summary_key, logistic_loss, poisson_loss_fn)
from tensorweave.estimator.export import PredictOutput
from tensorweave.estimator.model_fn import EstimatorSpec, ModeKeys
from tensorweave.saved_model.signature_constants import DEFAULT_SERVING_SIGNATURE_DEF_KEY as DEFAULT_SERVING_KEY
from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.losses import Reduction
from tensorweave.metrics.base import broadcast_weights
from tensorweave.metrics.confusion import auc, precision_at_thresholds, recall_at_thresholds
from tensorweave.metrics.means import accuracy, mean
from tensorweave.ops.array.core import squeeze
from tensorweave.ops.array.slicing import slice as tf_slice
from tensorweave.ops.grouping import group
from tensorweave.ops.lookup.tables import index_table_from_tensor
from tensorweave.ops.math.binary import add_n
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_mean
from tensorweave.ops.math.unary import exp, sigmoid
from tensorweave.ops.nn.impl import sigmoid_cross_entropy_with_logits
from tensorweave.ops.sparse.core import sparse_to_indicator
from tensorweave.summary.summary import scalar
from tensorweave.train.training_util import get_global_step

# tf.keras.losses.Reduction's values (TF's ReductionV2) as the tf.losses reductions head.py computes
_KERAS_REDUCTIONS = {"auto": Reduction.SUM_OVER_BATCH_SIZE, "sum": Reduction.SUM,
                     "sum_over_batch_size": Reduction.SUM_OVER_BATCH_SIZE}
SUM_OVER_BATCH_SIZE = "sum_over_batch_size"


def _v1_reduction(loss_reduction) -> str:
    if loss_reduction not in _KERAS_REDUCTIONS:
        raise ValueError(f"Invalid loss_reduction: {loss_reduction}. See `tf.losses.Reduction` for valid options.")
    return _KERAS_REDUCTIONS[loss_reduction]


def _train_op_of(optimizer, trainable_variables, train_op_fn, update_ops):
    """TF's create_estimator_spec_train_op: optimizer.get_updates(loss, trainable_variables)[0]
    (a tf.keras optimizer; a tf.train optimizer minimizes the loss, stepping the global step) or
    train_op_fn(loss), grouped with update_ops."""
    if update_ops is not None and not isinstance(update_ops, (list, tuple)):
        raise ValueError(f"update_ops must be of type list or tuple. Given type: {type(update_ops)}")

    def train_op_of(loss):
        with name_scope(""), name_scope("training"):
            if optimizer is not None:
                if train_op_fn is not None:
                    raise ValueError("train_op_fn and optimizer cannot both be set.")
                if hasattr(optimizer, "compute_gradients"):
                    # a tf.train optimizer (which TF's Head refuses): minimized as the v1 heads do,
                    # so the v1 Estimators' optimizer argument works with these heads
                    train_op = optimizer.minimize(loss, global_step=get_global_step(), var_list=trainable_variables)
                elif not hasattr(optimizer, "get_updates"):
                    raise ValueError("The given optimizer is not a tf.keras.optimizers.Optimizer instance. Received "
                                     f"optimizer of type {type(optimizer)}")
                elif trainable_variables is None:
                    raise ValueError(f"trainable_variables cannot be None. Given {trainable_variables}")
                elif not isinstance(trainable_variables, (list, tuple)):
                    raise ValueError(f"trainable_variables must be of type list or tuple. Given type: "
                                     f"{type(trainable_variables)}")
                else:
                    train_op = optimizer.get_updates(loss, trainable_variables)[0]
            elif train_op_fn is not None:
                train_op = train_op_fn(loss)
            else:
                raise ValueError("train_op_fn and optimizer cannot both be None.")
            return group(train_op, *update_ops) if update_ops else train_op
    return train_op_of


@tf_export("estimator.Head")
class Head:
    """tf.estimator.Head: what a model_fn hands its logits to for each mode's EstimatorSpec
    (name, logits_dimension, loss_reduction, loss, predictions, create_estimator_spec); the
    concrete heads below."""

    _summarise_mean_loss = False

    name = property(lambda self: self._name)
    logits_dimension = property(lambda self: self._logits_dimension)
    loss_reduction = property(lambda self: self._keras_reduction)

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None, trainable_variables=None,
                              train_op_fn=None, update_ops=None, regularization_losses=None) -> EstimatorSpec:
        """The EstimatorSpec of `mode`: predictions and export outputs (PREDICT), loss (plus
        regularization_losses) and metrics (EVAL), loss and the train op (TRAIN) of `optimizer`
        (a tf.keras optimizer over trainable_variables) or train_op_fn(loss), with update_ops."""
        return self._estimator_spec(features, mode, logits, labels, regularization_losses,
                                    _train_op_of(optimizer, trainable_variables, train_op_fn, update_ops))

    def loss(self, labels, logits, features=None, mode=None, regularization_losses=None):
        """The reduced training loss of logits against labels, plus regularization_losses."""
        with name_scope(None, "losses", (logits, labels)):
            training_loss = self._loss(features or {}, self._checked_logits(logits), labels)[0]
            return training_loss + add_n(regularization_losses) if regularization_losses else training_loss

    def predictions(self, logits, keys=None) -> dict:
        """{key: prediction} of logits (all of them, or those of `keys`)."""
        with name_scope(None, "predictions", (logits,)):
            predictions = self._predictions(self._checked_logits(logits))[0]
        if keys:
            unknown = sorted(set(keys) - set(predictions))
            if unknown:
                raise ValueError(f"Prediction key must be in PredictionKeys, given: {unknown}. Valid prediction "
                                 f"keys include {sorted(predictions)}.")
            predictions = {k: v for k, v in predictions.items() if k in keys}
        return predictions


@tf_export("estimator.BinaryClassHead")
class BinaryClassHead(Head, _BinaryHead):
    """tf.estimator.BinaryClassHead(weight_column=None, thresholds=None, label_vocabulary=None,
    loss_reduction=SUM_OVER_BATCH_SIZE, loss_fn=None, name=None): sigmoid cross entropy over one
    logit; metrics accuracy, precision, recall, auc, auc_precision_recall (interpolated, as Keras'
    AUC), label/prediction means, accuracy_baseline and the `thresholds` ones."""

    _pr_summation = "careful_interpolation"

    def __init__(self, weight_column=None, thresholds=None, label_vocabulary=None,
                 loss_reduction=SUM_OVER_BATCH_SIZE, loss_fn=None, name=None):
        _BinaryHead.__init__(self, weight_column, thresholds, label_vocabulary, _v1_reduction(loss_reduction),
                             loss_fn, name)
        self._keras_reduction = loss_reduction


@tf_export("estimator.MultiClassHead")
class MultiClassHead(Head, _MultiClassHead):
    """tf.estimator.MultiClassHead(n_classes, weight_column=None, label_vocabulary=None,
    loss_reduction=SUM_OVER_BATCH_SIZE, loss_fn=None, name=None): softmax cross entropy over
    n_classes > 2 logits; metrics accuracy and average_loss."""

    def __init__(self, n_classes, weight_column=None, label_vocabulary=None, loss_reduction=SUM_OVER_BATCH_SIZE,
                 loss_fn=None, name=None):
        _MultiClassHead.__init__(self, n_classes, weight_column, label_vocabulary, _v1_reduction(loss_reduction),
                                 loss_fn, name)
        self._keras_reduction = loss_reduction


@tf_export("estimator.RegressionHead")
class RegressionHead(Head, _RegressionHead):
    """tf.estimator.RegressionHead(label_dimension=1, weight_column=None,
    loss_reduction=SUM_OVER_BATCH_SIZE, loss_fn=None, inverse_link_fn=None, name=None): squared
    error (or loss_fn) of label_dimension logits; predictions inverse_link_fn(logits) when given."""

    def __init__(self, label_dimension=1, weight_column=None, loss_reduction=SUM_OVER_BATCH_SIZE, loss_fn=None,
                 inverse_link_fn=None, name=None):
        _RegressionHead.__init__(self, weight_column, label_dimension, _v1_reduction(loss_reduction), loss_fn,
                                 inverse_link_fn, name)
        self._keras_reduction = loss_reduction


@tf_export("estimator.LogisticRegressionHead")
class LogisticRegressionHead(RegressionHead):
    """tf.estimator.LogisticRegressionHead(weight_column=None, loss_reduction=SUM_OVER_BATCH_SIZE,
    name=None): regression of labels in [0, 1] by sigmoid cross entropy; predictions
    sigmoid(logits)."""

    def __init__(self, weight_column=None, loss_reduction=SUM_OVER_BATCH_SIZE, name=None):
        super().__init__(1, weight_column, loss_reduction, logistic_loss, sigmoid, name)


@tf_export("estimator.PoissonRegressionHead")
class PoissonRegressionHead(RegressionHead):
    """tf.estimator.PoissonRegressionHead(label_dimension=1, weight_column=None,
    loss_reduction=SUM_OVER_BATCH_SIZE, compute_full_loss=True, name=None): Poisson regression
    (tf.nn.log_poisson_loss of the logits as log rates); predictions exp(logits)."""

    def __init__(self, label_dimension=1, weight_column=None, loss_reduction=SUM_OVER_BATCH_SIZE,
                 compute_full_loss=True, name=None):
        super().__init__(label_dimension, weight_column, loss_reduction, poisson_loss_fn(compute_full_loss), exp, name)



@tf_export("estimator.MultiLabelHead")
class MultiLabelHead(Head, _Head):
    """tf.estimator.MultiLabelHead(n_classes, weight_column=None, thresholds=None,
    label_vocabulary=None, loss_reduction=SUM_OVER_BATCH_SIZE, loss_fn=None,
    classes_for_class_based_metrics=None, name=None): each of n_classes > 1 labels on or off
    (labels a multi-hot [batch, n_classes] tensor, or a SparseTensor of class ids or, with
    label_vocabulary, names); loss the sigmoid cross entropy averaged over the classes;
    predictions logits, probabilities (sigmoid) and classes (every class name); metrics
    average_loss, auc, auc_precision_recall, accuracy/precision/recall at each threshold and, for
    each class of classes_for_class_based_metrics, its mean probability, auc and auc_precision_recall."""

    _loss_dimension = 1

    def __init__(self, n_classes, weight_column=None, thresholds=None, label_vocabulary=None,
                 loss_reduction=SUM_OVER_BATCH_SIZE, loss_fn=None, classes_for_class_based_metrics=None, name=None):
        if n_classes is None or n_classes < 2:
            raise ValueError(f"n_classes must be > 1 for multi-label classification. Given: {n_classes}")
        thresholds = tuple(thresholds) if thresholds else ()
        for threshold in thresholds:
            if threshold <= 0. or threshold >= 1.:
                raise ValueError(f"thresholds must be in (0, 1) range. Given: {threshold}")
        if label_vocabulary is not None:
            if not isinstance(label_vocabulary, (list, tuple)):
                raise ValueError(f"label_vocabulary must be a list or tuple. Given type: {type(label_vocabulary)}")
            if len(label_vocabulary) != n_classes:
                raise ValueError(f"Length of label_vocabulary must be n_classes ({n_classes}). Given: "
                                 f"{len(label_vocabulary)}")
        class_ids = tuple(classes_for_class_based_metrics or ())
        if class_ids and isinstance(class_ids[0], str):
            if not label_vocabulary:
                raise ValueError("label_vocabulary must be provided when classes_for_class_based_metrics are strings.")
            class_ids = tuple(label_vocabulary.index(c) for c in class_ids)
        for class_id in class_ids:
            if class_id < 0 or class_id >= n_classes:
                raise ValueError(f"All classes_for_class_based_metrics must be in range [0, {n_classes - 1}]. "
                                 f"Given: {class_id}")
        _Head.__init__(self, n_classes, weight_column, _v1_reduction(loss_reduction), loss_fn, name)
        self._keras_reduction, self._n_classes, self._thresholds = loss_reduction, n_classes, thresholds
        self._label_vocabulary, self._class_ids = label_vocabulary, class_ids

    def _processed_labels(self, logits, labels):
        if isinstance(labels, SparseTensor):
            values = labels.values
            if labels.dtype == dtypes.string:
                values = index_table_from_tensor(vocabulary_list=tuple(self._label_vocabulary),
                                                 name="class_id_lookup").lookup(values)
            elif not values.dtype.is_integer:
                raise ValueError(f"Labels dtype should be integer. Instead got {values.dtype}.")
            else:
                values = _assert_range(values, self._n_classes,
                                       message=f"labels must be an integer SparseTensor with values in "
                                               f"[0, {self._n_classes})")
            labels = cast(sparse_to_indicator(SparseTensor(labels.indices, values, labels.dense_shape),
                                              self._n_classes), dtypes.int64)
        elif labels is not None:
            labels = _assert_range(convert_to_tensor(labels), 2,
                                   message="labels must be an integer indicator Tensor with values in [0, 1]")
        return _check_labels(labels, logits, self._n_classes)

    @staticmethod
    def _default_loss(labels, logits):
        losses = sigmoid_cross_entropy_with_logits(labels=cast(labels, logits.dtype), logits=logits)
        return reduce_mean(losses, axis=-1, keepdims=True)

    def _predictions(self, logits):
        probabilities = sigmoid(logits, name="probabilities")
        predictions = {"logits": logits, "probabilities": probabilities,
                       "classes": _per_example(_class_names(self._n_classes, self._label_vocabulary), logits)}
        export_outputs = _classification_export_outputs(dict(predictions, all_classes=predictions["classes"]))
        export_outputs[PREDICT_SERVING_KEY] = PredictOutput(predictions)
        return predictions, export_outputs, {"probabilities": probabilities}

    def _metrics(self, labels, weights, unreduced, probabilities):
        w = None if isinstance(weights, float) else broadcast_weights(weights, probabilities)
        metrics = {"auc": auc(labels, probabilities, weights=w, name="auc"),
                   "auc_precision_recall": auc(labels, probabilities, weights=w, curve="PR",
                                               summation_method="careful_interpolation",
                                               name="auc_precision_recall")}
        for threshold in self._thresholds:
            predicted = cast(probabilities >= threshold, dtypes.int64)
            metrics[f"accuracy/positive_threshold_{threshold:g}"] = accuracy(
                labels, predicted, weights=w, name=f"accuracy_at_{threshold}")
            for key, at_thresholds in (("precision", precision_at_thresholds), ("recall", recall_at_thresholds)):
                value, update = at_thresholds(labels, probabilities, (threshold,), weights=w,
                                              name=f"{key}_at_{threshold}")
                metrics[f"{key}/positive_threshold_{threshold:g}"] = (squeeze(value), squeeze(update))
        for class_id in self._class_ids:
            name = class_id if self._label_vocabulary is None else self._label_vocabulary[class_id]
            kind = "class" if self._label_vocabulary is None else "name"
            begin, size = [0] * (probabilities.shape.ndims - 1) + [class_id], [-1] * (probabilities.shape.ndims - 1)
            class_probabilities = tf_slice(probabilities, begin, size + [1])
            class_labels = tf_slice(labels, begin, size + [1])
            class_weights = None if w is None else _optional_weights(weights)
            metrics[f"probability_mean/{kind}{name}"] = mean(class_probabilities, weights=class_weights)
            metrics[f"auc/{kind}{name}"] = auc(class_labels, class_probabilities, weights=class_weights)
            metrics[f"auc_precision_recall/{kind}{name}"] = auc(class_labels, class_probabilities,
                                                                weights=class_weights, curve="PR",
                                                                summation_method="careful_interpolation")
        return metrics


@tf_export("estimator.MultiHead")
class MultiHead(Head):
    """tf.estimator.MultiHead(heads, head_weights=None): several named heads over one model:
    logits and labels are dicts keyed by the heads' names (logits may be one tensor, split along
    its last axis in the heads' order); the loss is the head_weights-weighted sum of the heads'
    losses; predictions are keyed (head name, key); metrics are the heads' (suffixed by their
    names) plus loss/NAME; the serving default is the first head's."""

    def __init__(self, heads, head_weights=None):
        if not heads:
            raise ValueError(f"Must specify heads. Given: {heads}")
        if head_weights and len(head_weights) != len(heads):
            raise ValueError(f"heads and head_weights must have the same size. Given len(heads): {len(heads)}. "
                             f"Given len(head_weights): {len(head_weights)}.")
        for head in heads:
            if head.name is None:
                raise ValueError(f"All given heads must have name specified. Given: {head}")
        self._heads, self._head_weights = tuple(heads), tuple(head_weights) if head_weights else ()
        self._logits_dimension = sum(head.logits_dimension for head in heads)

    name = property(lambda self: "_".join(head.name for head in self._heads))

    @property
    def loss_reduction(self):
        reductions = [head.loss_reduction for head in self._heads]
        if len(set(reductions)) > 1:
            raise ValueError(f"The loss_reduction must be the same for different heads. Given: {reductions}")
        return reductions[0]

    def _logits_dict(self, logits, labels=None) -> dict:
        names = [head.name for head in self._heads]
        if isinstance(logits, dict):
            missing = sorted(set(names) - set(logits))
            if missing:
                raise ValueError(f"logits has missing values for head(s): {missing}")
        else:
            logits = convert_to_tensor(logits)
            dims = [head.logits_dimension for head in self._heads]
            last = logits.shape[-1].value if logits.shape.ndims else None
            if last is not None and last != sum(dims):
                raise ValueError(f"Could not split logits of shape {logits.shape.as_list()} among the heads with "
                                 f"individual logits dimensions: {dims}. The last dimension of the logits tensor "
                                 f"should equal {sum(dims)} but is {last}.")
            rank, begin, split = logits.shape.ndims, 0, {}
            for head in self._heads:
                split[head.name] = tf_slice(logits, [0] * (rank - 1) + [begin],
                                            [-1] * (rank - 1) + [head.logits_dimension])
                begin += head.logits_dimension
            logits = split
        if labels is not None:
            if not isinstance(labels, dict):
                raise ValueError(f"labels must be a dict. Given: {labels}")
            missing = sorted(set(names) - set(labels))
            if missing:
                raise ValueError(f"labels has missing values for head(s): {missing}")
        return logits

    def _merged_loss(self, losses, regularization_losses):
        with name_scope(None, "merge_losses"):
            if self._head_weights:
                losses = [loss * weight for loss, weight in zip(losses, self._head_weights)]
            loss = add_n(losses)
            return loss + add_n(regularization_losses) if regularization_losses else loss

    def loss(self, labels, logits, features=None, mode=None, regularization_losses=None):
        logits = self._logits_dict(logits, labels)
        return self._merged_loss([head.loss(labels[head.name], logits[head.name], features, mode)
                                  for head in self._heads], regularization_losses)

    def predictions(self, logits, keys=None) -> dict:
        logits = self._logits_dict(logits)
        with name_scope(None, "merge_pred"):
            return {(head.name, k): v for head in self._heads
                    for k, v in head.predictions(logits[head.name]).items()}

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None, trainable_variables=None,
                              train_op_fn=None, update_ops=None, regularization_losses=None) -> EstimatorSpec:
        with name_scope(self.name, "multi_head"):
            logits = self._logits_dict(logits, labels)
            specs = [head.create_estimator_spec(features, mode, logits[head.name],
                                                labels=labels[head.name] if labels else None,
                                                train_op_fn=lambda loss: group())
                     for head in self._heads]
            predictions = {(head.name, k): v for head, spec in zip(self._heads, specs)
                           for k, v in spec.predictions.items()}
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(mode, predictions=predictions, export_outputs=self._export_outputs(specs))
            loss = self._merged_loss([spec.loss for spec in specs], regularization_losses)
            if mode == ModeKeys.EVAL:
                metrics = {}
                if regularization_losses:
                    metrics["regularization_loss"] = mean(add_n(regularization_losses), name="regularization_loss")
                for head, spec in zip(self._heads, specs):
                    metrics[_summary_key(head.name, "loss")] = mean(spec.loss, name=f"loss/{head.name}")
                    metrics.update(spec.eval_metric_ops)
                return EstimatorSpec(mode, predictions=predictions, loss=loss, eval_metric_ops=metrics)
            train_op = _train_op_of(optimizer, trainable_variables, train_op_fn, update_ops)(loss)
        with name_scope(""):
            scalar("loss", loss)
            if regularization_losses:
                scalar("regularization_loss", add_n(regularization_losses))
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)

    def _export_outputs(self, specs) -> dict:
        first = specs[0].export_outputs
        outputs = {DEFAULT_SERVING_KEY: first[DEFAULT_SERVING_KEY]}
        merged = {}
        for head, spec in zip(self._heads, specs):
            for key, output in spec.export_outputs.items():
                outputs[head.name if key == DEFAULT_SERVING_KEY else f"{head.name}/{key}"] = output
                if key == PREDICT_SERVING_KEY and isinstance(output, PredictOutput):
                    merged.update({f"{head.name}/{k}": v for k, v in output.outputs.items()})
        outputs[PREDICT_SERVING_KEY] = PredictOutput(merged)
        return outputs
