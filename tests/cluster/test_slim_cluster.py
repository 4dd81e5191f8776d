"""slim on a real cluster: a slim model whose variables replica_device_setter puts on the ps
process trains with slim.learning.train against the worker process, checkpoints into logdir,
and slim.evaluation.evaluate_once restores that checkpoint onto the ps for evaluation."""
from __future__ import annotations

import numpy as np

import tensorweave as tf

slim = tf.contrib.slim


def problem():
    rng = np.random.RandomState(0)
    x = rng.randn(64, 4).astype(np.float32)
    return x, (x @ rng.randn(4, 3)).argmax(1)


def model(cluster, x, is_training):
    with tf.device(tf.train.replica_device_setter(cluster=tf.train.ClusterSpec(cluster))):
        net = slim.fully_connected(tf.constant(x), 16, normalizer_fn=slim.batch_norm,
                                   normalizer_params={"is_training": is_training}, scope="fc1")
        return slim.fully_connected(net, 3, activation_fn=None, scope="logits")


def test_slim_trains_and_evaluates_with_its_variables_on_the_ps(start_cluster, tmp_path):
    c = start_cluster({"ps": 1, "worker": 1})
    x, y = problem()
    logdir = str(tmp_path / "train")
    with tf.Graph().as_default():
        logits = model(c.spec, x, True)
        assert all(v.device.startswith("/job:ps") for v in slim.get_model_variables())
        slim.losses.sparse_softmax_cross_entropy(logits, tf.constant(y))
        train_op = slim.learning.create_train_op(slim.losses.get_total_loss(), tf.train.AdamOptimizer(0.05))
        first = slim.learning.train(train_op, logdir, master=c.target("worker", 0), number_of_steps=1)
    with tf.Graph().as_default():
        logits = model(c.spec, x, True)
        slim.losses.sparse_softmax_cross_entropy(logits, tf.constant(y))
        train_op = slim.learning.create_train_op(slim.losses.get_total_loss(), tf.train.AdamOptimizer(0.05))
        last = slim.learning.train(train_op, logdir, master=c.target("worker", 0), number_of_steps=60)
    assert last < first / 2
    checkpoint = tf.train.latest_checkpoint(logdir)
    assert checkpoint.endswith("model.ckpt-60")
    with tf.Graph().as_default():
        logits = model(c.spec, x, False)
        values, updates = slim.metrics.aggregate_metric_map({
            "accuracy": slim.metrics.streaming_accuracy(tf.argmax(logits, 1), tf.constant(y))})
        tf.train.get_or_create_global_step()
        got = slim.evaluation.evaluate_once(c.target("worker", 0), checkpoint, str(tmp_path / "eval"), num_evals=1,
                                            eval_op=list(updates.values()), final_op=values)
    assert got["accuracy"] > 0.8
