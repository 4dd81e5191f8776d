"""tf.losses against numpy formulas, including weighting and reduction rules."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

from unit_helpers import run

RNG = np.random.RandomState(0)
LABELS = RNG.rand(4, 3).astype(np.float32)
PREDS = RNG.rand(4, 3).astype(np.float32)
WEIGHTS = np.array([[1.0], [0.0], [2.0], [0.5]], np.float32)


def _by_nonzero(per_elem, weights):
    w = np.broadcast_to(weights, per_elem.shape)
    return (per_elem * w).sum() / np.count_nonzero(w)


@pytest.mark.parametrize("fn, ref", [
    (tf.losses.mean_squared_error, lambda y, p: (p - y) ** 2),
    (tf.losses.absolute_difference, lambda y, p: np.abs(p - y)),
    (tf.losses.log_loss, lambda y, p: -y * np.log(p + 1e-7) - (1 - y) * np.log(1 - p + 1e-7)),
    (tf.losses.huber_loss, lambda y, p: np.where(np.abs(p - y) <= 1.0, 0.5 * (p - y) ** 2, np.abs(p - y) - 0.5)),
])
def test_elementwise_losses_weighted(fn, ref):
    loss = fn(LABELS, PREDS, weights=WEIGHTS)
    np.testing.assert_allclose(run(loss), _by_nonzero(ref(LABELS, PREDS), WEIGHTS), rtol=1e-5)
    assert tf.losses.get_losses() == [loss]
    assert loss.dtype == tf.float32 and loss.shape.ndims == 0


def test_reductions():
    per = (PREDS - LABELS) ** 2
    w = np.broadcast_to(WEIGHTS, per.shape)
    R = tf.losses.Reduction
    cases = {R.NONE: per * w, R.SUM: (per * w).sum(), R.MEAN: (per * w).sum() / w.sum(),
             R.SUM_OVER_BATCH_SIZE: (per * w).sum() / per.size}
    for reduction, expected in cases.items():
        np.testing.assert_allclose(
            run(tf.losses.mean_squared_error(LABELS, PREDS, WEIGHTS, reduction=reduction)), expected, rtol=1e-5)
    with pytest.raises(ValueError):
        tf.losses.compute_weighted_loss(per, reduction="bogus")
    zero = tf.losses.mean_squared_error(LABELS, PREDS, weights=0.0)
    assert run(zero) == 0.0


def test_hinge_loss():
    labels = np.array([[0.0, 1.0, 1.0]], np.float32)
    logits = np.array([[-0.5, 0.3, 2.0]], np.float32)
    expected = np.maximum(0, 1 - (2 * labels - 1) * logits).mean()
    np.testing.assert_allclose(run(tf.losses.hinge_loss(labels, logits)), expected, rtol=1e-6)


def _log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def test_softmax_cross_entropy_with_label_smoothing():
    logits = RNG.randn(5, 4).astype(np.float32)
    onehot = np.eye(4, dtype=np.float32)[[0, 3, 1, 2, 0]]
    smoothed = onehot * 0.9 + 0.1 / 4
    expected = -(smoothed * _log_softmax(logits)).sum(axis=1).mean()
    got = run(tf.losses.softmax_cross_entropy(onehot, logits, label_smoothing=0.1))
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_sparse_softmax_and_sigmoid_cross_entropy():
    logits = RNG.randn(5, 4).astype(np.float32)
    labels = np.array([0, 3, 1, 2, 0])
    expected = -_log_softmax(logits)[np.arange(5), labels].mean()
    np.testing.assert_allclose(run(tf.losses.sparse_softmax_cross_entropy(labels, logits)), expected, rtol=1e-5)
    targets = (RNG.rand(5, 4) > 0.5).astype(np.float32)
    sm = targets * 0.8 + 0.1
    ref = (np.maximum(logits, 0) - logits * sm + np.log1p(np.exp(-np.abs(logits)))).mean()
    np.testing.assert_allclose(run(tf.losses.sigmoid_cross_entropy(targets, logits, label_smoothing=0.2)), ref,
                               rtol=1e-5)


def test_total_and_regularization_losses():
    a = tf.losses.mean_squared_error(LABELS, PREDS)
    reg = tf.constant(0.25)
    tf.add_to_collection(tf.GraphKeys.REGULARIZATION_LOSSES, reg)
    extra = tf.constant(1.0)
    tf.losses.add_loss(extra)
    total = tf.losses.get_total_loss()
    assert total.op.name == "total_loss"
    np.testing.assert_allclose(run(total), ((PREDS - LABELS) ** 2).mean() + 0.25 + 1.0, rtol=1e-5)
    assert run(tf.losses.get_regularization_loss()) == 0.25
    assert run(tf.losses.get_total_loss(add_regularization_losses=False)) == pytest.approx(
        ((PREDS - LABELS) ** 2).mean() + 1.0, rel=1e-5)
    assert tf.losses.get_losses() == [a, extra]



def test_shape_mismatch_is_value_error():
    with pytest.raises(ValueError):
        tf.losses.mean_squared_error(np.zeros([2, 3], np.float32), np.zeros([3, 2], np.float32))


# -- regressions from the audit against TF (TF 1.15 names and errors) --------------------------
def test_reduced_loss_is_named_value_like_tf():
    with tf.Graph().as_default():
        loss = tf.losses.mean_squared_error(tf.constant([1.0, 2.0]), tf.constant([2.0, 2.0]))
        assert loss.name == "mean_squared_error/value:0"
        assert [t.name for t in tf.losses.get_losses()] == ["mean_squared_error/value:0"]
        assert tf.get_default_graph().get_operation_by_name("mean_squared_error/num_present").type == "Sum"


def test_weights_that_cannot_broadcast_raise_value_error():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="weights can not be broadcast to values. Mismatch at dim 0"):
            tf.losses.mean_squared_error(tf.zeros([4, 3]), tf.zeros([4, 3]), weights=tf.ones([2, 3]))
        with pytest.raises(ValueError, match="values.rank=2. weights.rank=1"):
            tf.losses.mean_squared_error(tf.zeros([4, 3]), tf.zeros([4, 3]), weights=tf.ones([3]))


def test_none_arguments_are_named():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Argument `labels` must not be None"):
            tf.losses.mean_squared_error(None, tf.zeros([2]))
        with pytest.raises(ValueError, match="Argument `onehot_labels` must not be None"):
            tf.losses.softmax_cross_entropy(None, tf.zeros([2, 2]))
        with pytest.raises(ValueError, match="Argument `logits` must not be None"):
            tf.losses.sparse_softmax_cross_entropy(tf.zeros([2], tf.int32), None)


def test_sparse_softmax_squeezes_labels_and_weights_like_tf():
    with tf.Graph().as_default():
        logits = tf.constant([[1.0, 2.0], [3.0, 1.0]])
        l1 = tf.losses.sparse_softmax_cross_entropy(tf.constant([[0], [1]]), logits)
        l2 = tf.losses.sparse_softmax_cross_entropy(tf.constant([0, 1]), logits, weights=tf.ones([2, 1]))
        with tf.Session() as s:
            np.testing.assert_allclose(s.run([l1, l2]), [1.72009, 1.72009], rtol=1e-5)   # TF's value


def test_total_loss_with_no_losses_is_add_ns_value_error():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="at least one Tensor"):
            tf.losses.get_total_loss()


def test_invalid_reduction_lists_the_keys():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Invalid Reduction Key foo. Key should be one of"):
            tf.losses.mean_squared_error([1.0], [2.0], reduction="foo")
