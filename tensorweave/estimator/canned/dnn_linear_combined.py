"""tf.estimator.DNNLinearCombinedClassifier and DNNLinearCombinedRegressor (TF 1.15's v1 classes,
estimator/canned/dnn_linear_combined.py; "wide and deep"): the sum of a DNN's logits (scope
'dnn', its own optimizer, Adagrad at 0.001 by default) and a linear model's (scope 'linear',
FTRL at min(0.005, 1/sqrt(number of linear columns)) by default); one step of each, then the
global step."""
from __future__ import annotations

import math

from tensorweave.distribute.distribute_lib import increment_var
from tensorweave.estimator.canned.dnn import add_layer_summary, check_features, dnn_logits
from tensorweave.estimator.canned.head import binary_or_multi_class_head, regression_head
from tensorweave.estimator.canned.optimizers import get_optimizer_instance
from tensorweave.estimator.estimator import Estimator
from tensorweave.feature_column.layers import linear_model
from tensorweave.framework.api import GraphKeys, control_dependencies, get_collection
from tensorweave.framework.tf_export import tf_export
from tensorweave.losses import Reduction
from tensorweave.ops.grouping import group
from tensorweave.ops.nn.activations import relu
from tensorweave.ops.state.partitioned_variables import min_max_variable_partitioner
from tensorweave.ops.state.variable_scope import variable_scope
from tensorweave.train.training_util import get_global_step

DNN_LEARNING_RATE, LINEAR_LEARNING_RATE = 0.001, 0.005


def dnn_linear_combined_model_fn(features, labels, mode, head, linear_feature_columns=None, linear_optimizer="Ftrl",
                                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                                 dnn_activation_fn=relu, dnn_dropout=None, input_layer_partitioner=None, config=None,
                                 batch_norm=False, linear_sparse_combiner="sum"):
    """The combined Estimators' model_fn."""
    check_features(features)
    if not linear_feature_columns and not dnn_feature_columns:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
    num_ps_replicas = config.num_ps_replicas if config else 0
    input_layer_partitioner = input_layer_partitioner or min_max_variable_partitioner(
        max_partitions=num_ps_replicas, min_slice_size=64 << 20)
    parts = []   # (logits, optimizer, scope name)
    if dnn_feature_columns:
        optimizer = get_optimizer_instance(dnn_optimizer, learning_rate=DNN_LEARNING_RATE)
        if not dnn_hidden_units:
            raise ValueError("dnn_hidden_units must be defined when dnn_feature_columns is specified.")
        with variable_scope("dnn", values=tuple(features.values()),
                            partitioner=min_max_variable_partitioner(max_partitions=num_ps_replicas)) as scope:
            parts.append((dnn_logits(features, mode, head.logits_dimension, dnn_hidden_units, dnn_feature_columns,
                                     dnn_activation_fn, dnn_dropout, input_layer_partitioner, batch_norm),
                          optimizer, scope.name))
    if linear_feature_columns:
        optimizer = get_optimizer_instance(linear_optimizer, learning_rate=min(
            LINEAR_LEARNING_RATE, 1. / math.sqrt(len(linear_feature_columns))))
        with variable_scope("linear", values=tuple(features.values()), partitioner=input_layer_partitioner) as scope:
            logits = linear_model(features, linear_feature_columns, units=head.logits_dimension,
                                  sparse_combiner=linear_sparse_combiner)
            add_layer_summary(logits, scope.name)
            parts.append((logits, optimizer, scope.name))
    logits = parts[0][0] if len(parts) == 1 else parts[0][0] + parts[1][0]

    def train_op_fn(loss):
        train_op = group(*[optimizer.minimize(loss, var_list=get_collection(GraphKeys.TRAINABLE_VARIABLES, scope=name))
                           for _, optimizer, name in parts])
        with control_dependencies([train_op]):
            return increment_var(get_global_step())
    return head.create_estimator_spec(features=features, mode=mode, labels=labels, train_op_fn=train_op_fn,
                                      logits=logits)


def _combined_estimator_fn(head, linear_feature_columns, linear_optimizer, dnn_feature_columns, dnn_optimizer,
                           dnn_hidden_units, dnn_activation_fn, dnn_dropout, input_layer_partitioner, batch_norm,
                           linear_sparse_combiner):
    linear_feature_columns = list(linear_feature_columns or [])
    dnn_feature_columns = list(dnn_feature_columns or [])
    if not linear_feature_columns and not dnn_feature_columns:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")

    def model_fn(features, labels, mode, config):
        return dnn_linear_combined_model_fn(
            features, labels, mode, head, linear_feature_columns, linear_optimizer, dnn_feature_columns,
            dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout, input_layer_partitioner, config,
            batch_norm, linear_sparse_combiner)
    return model_fn


@tf_export("estimator.DNNLinearCombinedClassifier")
class DNNLinearCombinedClassifier(Estimator):
    """tf.estimator.DNNLinearCombinedClassifier(model_dir=None, linear_feature_columns=None,
    linear_optimizer='Ftrl', dnn_feature_columns=None, dnn_optimizer='Adagrad',
    dnn_hidden_units=None, dnn_activation_fn=tf.nn.relu, dnn_dropout=None, n_classes=2,
    weight_column=None, label_vocabulary=None, input_layer_partitioner=None, config=None,
    warm_start_from=None, loss_reduction=tf.losses.Reduction.SUM, batch_norm=False,
    linear_sparse_combiner='sum'): a wide-and-deep classifier."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl", dnn_feature_columns=None,
                 dnn_optimizer="Adagrad", dnn_hidden_units=None, dnn_activation_fn=relu, dnn_dropout=None,
                 n_classes=2, weight_column=None, label_vocabulary=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=Reduction.SUM, batch_norm=False, linear_sparse_combiner="sum"):
        head = binary_or_multi_class_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(_combined_estimator_fn(head, linear_feature_columns, linear_optimizer, dnn_feature_columns,
                                                dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
                                                input_layer_partitioner, batch_norm, linear_sparse_combiner),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


@tf_export("estimator.DNNLinearCombinedRegressor")
class DNNLinearCombinedRegressor(Estimator):
    """tf.estimator.DNNLinearCombinedRegressor(model_dir=None, linear_feature_columns=None,
    linear_optimizer='Ftrl', dnn_feature_columns=None, dnn_optimizer='Adagrad',
    dnn_hidden_units=None, dnn_activation_fn=tf.nn.relu, dnn_dropout=None, label_dimension=1,
    weight_column=None, input_layer_partitioner=None, config=None, warm_start_from=None,
    loss_reduction=tf.losses.Reduction.SUM, batch_norm=False, linear_sparse_combiner='sum'): a
    wide-and-deep regressor."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl", dnn_feature_columns=None,
                 dnn_optimizer="Adagrad", dnn_hidden_units=None, dnn_activation_fn=relu, dnn_dropout=None,
                 label_dimension=1, weight_column=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=Reduction.SUM, batch_norm=False, linear_sparse_combiner="sum"):
        head = regression_head(weight_column, label_dimension, loss_reduction)
        super().__init__(_combined_estimator_fn(head, linear_feature_columns, linear_optimizer, dnn_feature_columns,
                                                dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
                                                input_layer_partitioner, batch_norm, linear_sparse_combiner),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


@tf_export("estimator.DNNLinearCombinedEstimator")
class DNNLinearCombinedEstimator(Estimator):
    """tf.estimator.DNNLinearCombinedEstimator(head, model_dir=None, linear_feature_columns=None,
    linear_optimizer='Ftrl', dnn_feature_columns=None, dnn_optimizer='Adagrad',
    dnn_hidden_units=None, dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
    input_layer_partitioner=None, config=None, batch_norm=False, linear_sparse_combiner='sum'):
    the wide-and-deep model with a head of tf.contrib.estimator."""

    def __init__(self, head, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None, dnn_activation_fn=relu,
                 dnn_dropout=None, input_layer_partitioner=None, config=None, batch_norm=False,
                 linear_sparse_combiner="sum"):
        super().__init__(_combined_estimator_fn(head, linear_feature_columns, linear_optimizer, dnn_feature_columns,
                                                dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
                                                input_layer_partitioner, batch_norm, linear_sparse_combiner),
                         model_dir=model_dir, config=config)
