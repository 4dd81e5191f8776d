"""tf.estimator.BaselineClassifier and BaselineRegressor (TF 1.15's v1 classes,
estimator/canned/baseline.py): logits are one learned bias per output ('baseline/bias', from
zero), ignoring the features, so the model learns the labels' prior; FTRL at 0.3 by default."""
from __future__ import annotations

from tensorweave.estimator.canned.head import binary_or_multi_class_head, regression_head
from tensorweave.estimator.canned.optimizers import get_optimizer_instance
from tensorweave.estimator.estimator import Estimator
from tensorweave.feature_column.columns import NumericColumn
from tensorweave.framework import dtypes
from tensorweave.framework.api import control_dependencies
from tensorweave.framework.graph import Tensor
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.losses import Reduction
from tensorweave.ops.array.core import shape
from tensorweave.ops.array.fill import ones
from tensorweave.ops.debugging.asserts import assert_equal
from tensorweave.ops.math.binary import multiply
from tensorweave.ops.math.cast import cast
from tensorweave.ops.state.initializers import Zeros
from tensorweave.ops.state.variable_scope import get_variable, variable_scope
from tensorweave.train.training_util import get_global_step

LEARNING_RATE = 0.3


def _batch_size(features, weight_column):
    """The features' batch size (their first dimension, asserted equal), the weight column left out."""
    weight_key = weight_column.key if isinstance(weight_column, NumericColumn) else weight_column
    if isinstance(features, (Tensor, SparseTensor)):
        features = {"": features}
    sizes = [cast(f.dense_shape[0], dtypes.int32) if isinstance(f, SparseTensor) else shape(f)[0]
             for key, f in features.items() if key != weight_key]
    if not sizes:
        raise ValueError("features must contain a feature other than the weight column, to give the batch size.")
    return sizes[0], [assert_equal(sizes[0], s) for s in sizes[1:]]


def baseline_model_fn(features, labels, mode, head, optimizer, weight_column=None):
    """The baseline Estimators' model_fn."""
    batch_size, size_checks = _batch_size(features, weight_column)
    with control_dependencies(size_checks):
        with variable_scope("baseline"):
            bias = get_variable("bias", shape=[head.logits_dimension], initializer=Zeros())
            logits = multiply(bias, ones([batch_size, head.logits_dimension]))

    def train_op_fn(loss):
        opt = get_optimizer_instance(optimizer, learning_rate=LEARNING_RATE)
        return opt.minimize(loss, global_step=get_global_step())
    return head.create_estimator_spec(features=features, mode=mode, logits=logits, labels=labels,
                                      train_op_fn=train_op_fn)


def _baseline_estimator_fn(head, optimizer, weight_column=None):
    def model_fn(features, labels, mode):
        return baseline_model_fn(features, labels, mode, head, optimizer, weight_column)
    return model_fn


@tf_export("estimator.BaselineClassifier")
class BaselineClassifier(Estimator):
    """tf.estimator.BaselineClassifier(model_dir=None, n_classes=2, weight_column=None,
    label_vocabulary=None, optimizer='Ftrl', config=None, loss_reduction=tf.losses.Reduction.SUM):
    predicts the labels' (weighted) class distribution, whatever the features."""

    def __init__(self, model_dir=None, n_classes=2, weight_column=None, label_vocabulary=None, optimizer="Ftrl",
                 config=None, loss_reduction=Reduction.SUM):
        head = binary_or_multi_class_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(_baseline_estimator_fn(head, optimizer, weight_column), model_dir=model_dir, config=config)


@tf_export("estimator.BaselineRegressor")
class BaselineRegressor(Estimator):
    """tf.estimator.BaselineRegressor(model_dir=None, label_dimension=1, weight_column=None,
    optimizer='Ftrl', config=None, loss_reduction=tf.losses.Reduction.SUM): predicts the
    labels' (weighted) mean, whatever the features."""

    def __init__(self, model_dir=None, label_dimension=1, weight_column=None, optimizer="Ftrl", config=None,
                 loss_reduction=Reduction.SUM):
        head = regression_head(weight_column, label_dimension, loss_reduction)
        super().__init__(_baseline_estimator_fn(head, optimizer, weight_column), model_dir=model_dir, config=config)


@tf_export("estimator.BaselineEstimator")
class BaselineEstimator(Estimator):
    """tf.estimator.BaselineEstimator(head, model_dir=None, optimizer='Ftrl', config=None): the
    bias-only model with a head of tf.contrib.estimator."""

    def __init__(self, head, model_dir=None, optimizer="Ftrl", config=None):
        super().__init__(_baseline_estimator_fn(head, optimizer), model_dir=model_dir, config=config)
