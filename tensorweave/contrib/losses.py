"""tf.contrib.losses (also tf.contrib.slim.losses): TF1's deprecated aliases of tf.losses, with
predictions (or logits) first: softmax_cross_entropy(logits, onehot_labels, ...). Each adds its
loss to the LOSSES collection that get_total_loss sums."""
from __future__ import annotations

from tensorweave import _api
from tensorweave.framework.tf_export import tf_export
from tensorweave import losses as tf_losses

__getattr__, __dir__ = _api.lazy_attributes(__name__)   # the names that are tf.losses' own


@tf_export("contrib.losses.absolute_difference")
def absolute_difference(predictions, labels=None, weights=1.0, scope=None):
    """tf.contrib.losses.absolute_difference: tf.losses.absolute_difference(labels, predictions)."""
    return tf_losses.absolute_difference(labels, predictions, weights, scope)


@tf_export("contrib.losses.mean_squared_error")
def mean_squared_error(predictions, labels=None, weights=1.0, scope=None):
    """tf.contrib.losses.mean_squared_error: tf.losses.mean_squared_error(labels, predictions)."""
    return tf_losses.mean_squared_error(labels, predictions, weights, scope)


@tf_export("contrib.losses.log_loss")
def log_loss(predictions, labels=None, weights=1.0, epsilon=1e-7, scope=None):
    """tf.contrib.losses.log_loss: tf.losses.log_loss(labels, predictions)."""
    return tf_losses.log_loss(labels, predictions, weights, epsilon, scope)


@tf_export("contrib.losses.mean_pairwise_squared_error")
def mean_pairwise_squared_error(predictions, labels=None, weights=1.0, scope=None):
    """tf.contrib.losses.mean_pairwise_squared_error: tf.losses.mean_pairwise_squared_error(labels,
    predictions)."""
    return tf_losses.mean_pairwise_squared_error(labels, predictions, weights, scope)


@tf_export("contrib.losses.hinge_loss")
def hinge_loss(logits, labels=None, scope=None):
    """tf.contrib.losses.hinge_loss: the unreduced max(0, 1 - (2 labels - 1) logits), which
    (unlike the others) is not added to LOSSES."""
    return tf_losses.hinge_loss(labels, logits, scope=scope, loss_collection=None,
                                reduction=tf_losses.Reduction.NONE)


@tf_export("contrib.losses.softmax_cross_entropy")
def softmax_cross_entropy(logits, onehot_labels, weights=1.0, label_smoothing=0, scope=None):
    """tf.contrib.losses.softmax_cross_entropy: tf.losses.softmax_cross_entropy(onehot_labels, logits)."""
    return tf_losses.softmax_cross_entropy(onehot_labels, logits, weights, label_smoothing, scope)


@tf_export("contrib.losses.sparse_softmax_cross_entropy")
def sparse_softmax_cross_entropy(logits, labels, weights=1.0, scope=None):
    """tf.contrib.losses.sparse_softmax_cross_entropy: tf.losses.sparse_softmax_cross_entropy(labels, logits)."""
    return tf_losses.sparse_softmax_cross_entropy(labels, logits, weights, scope)


@tf_export("contrib.losses.sigmoid_cross_entropy")
def sigmoid_cross_entropy(logits, multi_class_labels, weights=1.0, label_smoothing=0, scope=None):
    """tf.contrib.losses.sigmoid_cross_entropy: tf.losses.sigmoid_cross_entropy(multi_class_labels, logits)."""
    return tf_losses.sigmoid_cross_entropy(multi_class_labels, logits, weights, label_smoothing, scope)


@tf_export("contrib.losses.cosine_distance")
def cosine_distance(predictions, labels=None, axis=None, weights=1.0, scope=None, dim=None):
    """tf.contrib.losses.cosine_distance: tf.losses.cosine_distance(labels, predictions, axis)."""
    return tf_losses.cosine_distance(labels, predictions, axis, weights, scope, dim=dim)
