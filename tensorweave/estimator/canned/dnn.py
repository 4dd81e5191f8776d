"""tf.estimator.DNNClassifier and DNNRegressor (TF 1.15's v1 classes, estimator/canned/dnn.py): a
feed-forward network over feature columns' input_layer, its variables named as TF's
(dnn/hiddenlayer_N/kernel|bias, dnn/hiddenlayer_N/batchnorm_N/..., dnn/logits/kernel|bias) so a
TF checkpoint restores or warm-starts it."""
from __future__ import annotations

from tensorweave.estimator.canned.head import binary_or_multi_class_head, regression_head
from tensorweave.estimator.canned.optimizers import get_optimizer_instance
from tensorweave.estimator.estimator import Estimator
from tensorweave.estimator.model_fn import ModeKeys
from tensorweave.feature_column.layers import input_layer
from tensorweave.framework.tf_export import tf_export
from tensorweave.layers.core import Dense, Dropout
from tensorweave.layers.normalization import BatchNormalization
from tensorweave.losses import Reduction
from tensorweave.ops.nn.activations import relu
from tensorweave.ops.nn.impl import zero_fraction
from tensorweave.ops.state.initializers import GlorotUniform
from tensorweave.ops.state.partitioned_variables import min_max_variable_partitioner
from tensorweave.ops.state.variable_scope import variable_scope
from tensorweave.summary.summary import histogram, scalar
from tensorweave.train.training_util import get_global_step

LEARNING_RATE = 0.05


def add_layer_summary(value, tag: str) -> None:
    scalar(f"{tag}/fraction_of_zero_values", zero_fraction(value))
    histogram(f"{tag}/activation", value)


def check_features(features) -> None:
    if not isinstance(features, dict):
        raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: {type(features)}")


def dnn_logits(features, mode, units: int, hidden_units, feature_columns, activation_fn, dropout,
               input_layer_partitioner, batch_norm):
    """The network's logits [batch, units], built in the caller's variable scope."""
    training = mode == ModeKeys.TRAIN
    with variable_scope("input_from_feature_columns", values=tuple(features.values()),
                        partitioner=input_layer_partitioner):
        net = input_layer(features, feature_columns)
    for layer_id, num_hidden_units in enumerate(hidden_units):
        with variable_scope(f"hiddenlayer_{layer_id}", values=(net,)) as scope:
            net = Dense(num_hidden_units, activation=activation_fn, kernel_initializer=GlorotUniform(),
                        name=scope.name, _scope=scope)(net)
            if dropout is not None and training:
                net = Dropout(rate=dropout)(net, training=True)
            if batch_norm:
                # TF's momentum: 0.999 (tf.contrib.layers.batch_norm's), as the default 0.99 can diverge
                net = BatchNormalization(momentum=0.999, name=f"batchnorm_{layer_id}")(net, training=training)
        add_layer_summary(net, scope.name)
    with variable_scope("logits", values=(net,)) as scope:
        logits = Dense(units, kernel_initializer=GlorotUniform(), name=scope.name, _scope=scope)(net)
    add_layer_summary(logits, scope.name)
    return logits


@tf_export("estimator.experimental.dnn_logit_fn_builder")
def dnn_logit_fn_builder(units, hidden_units, feature_columns, activation_fn, dropout, input_layer_partitioner,
                         batch_norm):
    """tf.estimator.experimental.dnn_logit_fn_builder(units, hidden_units, feature_columns,
    activation_fn, dropout, input_layer_partitioner, batch_norm): the DNN Estimators' network as
    logit_fn(features, mode) -> logits [batch, units], built in the caller's variable scope."""
    if not isinstance(units, int):
        raise ValueError(f"units must be an int.  Given type: {type(units)}")

    def dnn_logit_fn(features, mode):
        return dnn_logits(features, mode, units, hidden_units, feature_columns, activation_fn, dropout,
                          input_layer_partitioner, batch_norm)
    return dnn_logit_fn


def dnn_model_fn(features, labels, mode, head, hidden_units, feature_columns, optimizer="Adagrad",
                 activation_fn=relu, dropout=None, input_layer_partitioner=None, config=None, batch_norm=False):
    """The DNN Estimators' model_fn: logits under variable scope 'dnn', trained by `optimizer`."""
    optimizer = get_optimizer_instance(optimizer, learning_rate=LEARNING_RATE)
    check_features(features)
    num_ps_replicas = config.num_ps_replicas if config else 0
    with variable_scope("dnn", values=tuple(features.values()),
                        partitioner=min_max_variable_partitioner(max_partitions=num_ps_replicas)):
        input_layer_partitioner = input_layer_partitioner or min_max_variable_partitioner(
            max_partitions=num_ps_replicas, min_slice_size=64 << 20)
        logits = dnn_logits(features, mode, head.logits_dimension, hidden_units, feature_columns, activation_fn,
                            dropout, input_layer_partitioner, batch_norm)

        def train_op_fn(loss):
            return optimizer.minimize(loss, global_step=get_global_step())
        # (inside 'dnn', as TF: its slots are named "dnn/<var>/..." from there, e.g. ".../t_0/Adagrad")
        return head.create_estimator_spec(features=features, mode=mode, labels=labels, train_op_fn=train_op_fn,
                                          logits=logits)


def _dnn_estimator_fn(head, hidden_units, feature_columns, optimizer, activation_fn, dropout,
                      input_layer_partitioner, batch_norm):
    feature_columns = tuple(feature_columns or [])

    def model_fn(features, labels, mode, config):
        return dnn_model_fn(features, labels, mode, head, hidden_units, feature_columns, optimizer, activation_fn,
                            dropout, input_layer_partitioner, config, batch_norm)
    return model_fn


@tf_export("estimator.DNNClassifier")
class DNNClassifier(Estimator):
    """tf.estimator.DNNClassifier(hidden_units, feature_columns, model_dir=None, n_classes=2,
    weight_column=None, label_vocabulary=None, optimizer='Adagrad', activation_fn=tf.nn.relu,
    dropout=None, input_layer_partitioner=None, config=None, warm_start_from=None,
    loss_reduction=tf.losses.Reduction.SUM, batch_norm=False): a neural network classifier
    (binary for n_classes=2: sigmoid cross entropy; else softmax cross entropy). The optimizer's
    default learning rate is 0.05."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Adagrad", activation_fn=relu, dropout=None,
                 input_layer_partitioner=None, config=None, warm_start_from=None, loss_reduction=Reduction.SUM,
                 batch_norm=False):
        head = binary_or_multi_class_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(_dnn_estimator_fn(head, hidden_units, feature_columns, optimizer, activation_fn, dropout,
                                           input_layer_partitioner, batch_norm),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


@tf_export("estimator.DNNRegressor")
class DNNRegressor(Estimator):
    """tf.estimator.DNNRegressor(hidden_units, feature_columns, model_dir=None, label_dimension=1,
    weight_column=None, optimizer='Adagrad', activation_fn=tf.nn.relu, dropout=None,
    input_layer_partitioner=None, config=None, warm_start_from=None,
    loss_reduction=tf.losses.Reduction.SUM, batch_norm=False): a neural network regressor
    (squared error)."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Adagrad", activation_fn=relu, dropout=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=Reduction.SUM, batch_norm=False):
        head = regression_head(weight_column, label_dimension, loss_reduction)
        super().__init__(_dnn_estimator_fn(head, hidden_units, feature_columns, optimizer, activation_fn, dropout,
                                           input_layer_partitioner, batch_norm),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


@tf_export("estimator.DNNEstimator")
class DNNEstimator(Estimator):
    """tf.estimator.DNNEstimator(head, hidden_units, feature_columns, model_dir=None,
    optimizer='Adagrad', activation_fn=tf.nn.relu, dropout=None, input_layer_partitioner=None,
    config=None, warm_start_from=None, batch_norm=False): the DNN with a head of
    tf.contrib.estimator (its loss, predictions and metrics)."""

    def __init__(self, head, hidden_units, feature_columns, model_dir=None, optimizer="Adagrad", activation_fn=relu,
                 dropout=None, input_layer_partitioner=None, config=None, warm_start_from=None, batch_norm=False):
        super().__init__(_dnn_estimator_fn(head, hidden_units, feature_columns, optimizer, activation_fn, dropout,
                                           input_layer_partitioner, batch_norm),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)
