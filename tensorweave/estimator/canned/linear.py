"""tf.estimator.LinearClassifier and LinearRegressor (TF 1.15's v1 classes,
estimator/canned/linear.py): feature columns' linear_model under variable scope 'linear'
(linear/linear_model/<column>/weights, linear/linear_model/bias_weights), trained by FTRL with
learning rate 0.2 by default."""
from __future__ import annotations

from tensorweave.estimator.canned.dnn import check_features
from tensorweave.estimator.canned.head import binary_or_multi_class_head, regression_head
from tensorweave.estimator.canned.optimizers import get_optimizer_instance
from tensorweave.estimator.estimator import Estimator
from tensorweave.feature_column.layers import linear_model
from tensorweave.framework.tf_export import tf_export
from tensorweave.losses import Reduction
from tensorweave.ops.state.partitioned_variables import min_max_variable_partitioner
from tensorweave.ops.state.variable_scope import variable_scope

LEARNING_RATE = 0.2


@tf_export("estimator.experimental.linear_logit_fn_builder")
def linear_logit_fn_builder(units, feature_columns, sparse_combiner="sum"):
    """tf.estimator.experimental.linear_logit_fn_builder(units, feature_columns,
    sparse_combiner='sum'): the linear Estimators' model as logit_fn(features) -> logits
    [batch, units] (tf.feature_column.linear_model in the caller's variable scope)."""
    def linear_logit_fn(features):
        return linear_model(features, feature_columns, units=units, sparse_combiner=sparse_combiner)
    return linear_logit_fn


def linear_model_fn(features, labels, mode, head, feature_columns, optimizer, partitioner, config,
                    sparse_combiner="sum"):
    """The linear Estimators' model_fn."""
    check_features(features)
    num_ps_replicas = config.num_ps_replicas if config else 0
    partitioner = partitioner or min_max_variable_partitioner(max_partitions=num_ps_replicas,
                                                              min_slice_size=64 << 20)
    with variable_scope("linear", values=tuple(features.values()), partitioner=partitioner):
        logits = linear_logit_fn_builder(head.logits_dimension, feature_columns, sparse_combiner)(features)
        return head.create_estimator_spec(features=features, mode=mode, labels=labels, logits=logits,
                                          optimizer=get_optimizer_instance(optimizer, learning_rate=LEARNING_RATE))


def _check_sparse_combiner(sparse_combiner) -> None:
    if sparse_combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"sparse_combiner must be one of 'sum', 'mean', 'sqrtn'. Given: {sparse_combiner}")


def _linear_estimator_fn(head, feature_columns, optimizer, partitioner, sparse_combiner):
    _check_sparse_combiner(sparse_combiner)
    feature_columns = tuple(feature_columns or [])

    def model_fn(features, labels, mode, config):
        return linear_model_fn(features, labels, mode, head, feature_columns, optimizer, partitioner, config,
                               sparse_combiner)
    return model_fn


@tf_export("estimator.LinearClassifier")
class LinearClassifier(Estimator):
    """tf.estimator.LinearClassifier(feature_columns, model_dir=None, n_classes=2,
    weight_column=None, label_vocabulary=None, optimizer='Ftrl', config=None, partitioner=None,
    warm_start_from=None, loss_reduction=tf.losses.Reduction.SUM, sparse_combiner='sum'): a
    linear classifier (logistic regression for n_classes=2, softmax above)."""

    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None, label_vocabulary=None,
                 optimizer="Ftrl", config=None, partitioner=None, warm_start_from=None,
                 loss_reduction=Reduction.SUM, sparse_combiner="sum"):
        head = binary_or_multi_class_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(_linear_estimator_fn(head, feature_columns, optimizer, partitioner, sparse_combiner),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


@tf_export("estimator.LinearRegressor")
class LinearRegressor(Estimator):
    """tf.estimator.LinearRegressor(feature_columns, model_dir=None, label_dimension=1,
    weight_column=None, optimizer='Ftrl', config=None, partitioner=None, warm_start_from=None,
    loss_reduction=tf.losses.Reduction.SUM, sparse_combiner='sum'): linear regression."""

    def __init__(self, feature_columns, model_dir=None, label_dimension=1, weight_column=None, optimizer="Ftrl",
                 config=None, partitioner=None, warm_start_from=None, loss_reduction=Reduction.SUM,
                 sparse_combiner="sum"):
        head = regression_head(weight_column, label_dimension, loss_reduction)
        super().__init__(_linear_estimator_fn(head, feature_columns, optimizer, partitioner, sparse_combiner),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


@tf_export("estimator.LinearEstimator")
class LinearEstimator(Estimator):
    """tf.estimator.LinearEstimator(head, feature_columns, model_dir=None, optimizer='Ftrl',
    config=None, partitioner=None, sparse_combiner='sum', warm_start_from=None): the linear model
    with a head of tf.contrib.estimator."""

    def __init__(self, head, feature_columns, model_dir=None, optimizer="Ftrl", config=None, partitioner=None,
                 sparse_combiner="sum", warm_start_from=None):
        super().__init__(_linear_estimator_fn(head, feature_columns, optimizer, partitioner, sparse_combiner),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)
