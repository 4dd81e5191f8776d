"""TF 2.x names of tf.compat.v1's tf.nn (issue 28): silu (swish with beta), approx_max_k and
approx_min_k, compute_average_loss and scale_regularization_loss (a replica's share of a loss
under a strategy); values against numpy and TensorFlow's recorded ones, gradients against
finite differences."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.tf_additions_cases import CASES, replay
from fixtures.tf_values_cases import case_fetches
from unit_helpers import check_grad, run

RECORDED = json.load(open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_additions.json")))["cases"]
R = np.random.RandomState(1)


@pytest.mark.parametrize("name", sorted(n for n in CASES if n.startswith("nn/")))
def test_matches_tensorflow(name):
    replay(tf, RECORDED, name, case_fetches)


def test_silu_is_swish_with_beta_and_differentiable_in_both():
    assert tf.nn.silu is tf.nn.swish
    x = R.randn(3, 4)
    for beta in (1.0, 0.5, -2.0):
        np.testing.assert_allclose(run(tf.nn.silu(x, beta=beta)), x / (1 + np.exp(-beta * x)), rtol=1e-12)
    check_grad(lambda t: tf.nn.silu(t, beta=0.7), x)
    check_grad(lambda t, b: tf.nn.silu(tf.constant(x), beta=b) * t, np.ones([3, 4]), np.array(1.3))
    assert tf.nn.silu(tf.zeros([2], tf.float32), beta=tf.constant(2, tf.int32)).dtype == tf.float32


def test_nn_approx_k_are_the_math_functions():
    assert tf.nn.approx_max_k is tf.math.approx_max_k and tf.nn.approx_min_k is tf.math.approx_min_k
    values, indices = run(tf.nn.approx_min_k(np.array([[4.0, -1.0, 4.0, -1.0]], np.float32), 3))
    assert values.tolist() == [[-1.0, -1.0, 4.0]] and indices.tolist() == [[1, 3, 0]]


# -- compute_average_loss, scale_regularization_loss ------------------------------------------------------
def _two_replicas():
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


def test_average_loss_divides_by_the_global_batch_of_all_replicas():
    strategy = _two_replicas()
    losses = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    weights = np.array([1.0, 0.0, 2.0, 0.5], np.float32)

    def replica_fn():
        per_example = tf.constant(losses)
        return (tf.nn.compute_average_loss(per_example), tf.nn.compute_average_loss(per_example, weights),
                tf.nn.compute_average_loss(per_example, global_batch_size=5),
                tf.nn.scale_regularization_loss(tf.constant([[0.5, 1.5]])))

    with tf.Graph().as_default():
        out = strategy.experimental_run_v2(replica_fn)
        with tf.Session(config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
            got = sess.run([list(strategy.experimental_local_results(o)) for o in out])
    for replica in range(2):   # each replica's batch is 4 of a global batch of 8
        assert got[0][replica] == pytest.approx(losses.sum() / 8)
        assert got[1][replica] == pytest.approx((losses * weights).sum() / 8)
        assert got[2][replica] == pytest.approx(losses.sum() / 5)
        assert got[3][replica] == pytest.approx(2.0 / 2)


def test_average_loss_outside_a_strategy_is_the_mean_and_zero_for_an_empty_batch():
    loss = tf.placeholder(tf.float64, [None])
    avg = tf.nn.compute_average_loss(loss)
    with tf.Session() as sess:
        assert sess.run(avg, {loss: [1.0, 2.0, 6.0]}) == pytest.approx(3.0)
        assert sess.run(avg, {loss: []}) == 0.0
    assert run(tf.nn.compute_average_loss([1.0, 3.0], global_batch_size=0)) == 0.0


def test_average_loss_bad_input_is_named():
    with pytest.raises(ValueError, match="at least rank 1"):
        tf.nn.compute_average_loss(tf.constant(1.0))
    with pytest.raises(ValueError, match="global_batch_size must be scalar"):
        tf.nn.compute_average_loss([1.0], global_batch_size=[2, 2])
    with pytest.raises(TypeError, match="global_batch_size must be an integer"):
        tf.nn.compute_average_loss([1.0], global_batch_size=2.0)
    size = tf.placeholder(tf.int32, [])
    avg = tf.nn.compute_average_loss([1.0, 2.0], global_batch_size=size)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="must be non-negative"):
        sess.run(avg, {size: -1})


def test_loss_helpers_refuse_cross_replica_context():
    strategy = _two_replicas()
    with tf.Graph().as_default(), strategy.scope():
        with pytest.raises(RuntimeError, match="`compute_average_loss` in cross replica context"):
            tf.nn.compute_average_loss([1.0, 2.0])
        with pytest.raises(RuntimeError, match="`scale_regularization_loss` in cross replica context"):
            tf.nn.scale_regularization_loss(1.0)
        assert run(tf.nn.compute_average_loss([1.0, 2.0], global_batch_size=4)) == pytest.approx(0.75)
