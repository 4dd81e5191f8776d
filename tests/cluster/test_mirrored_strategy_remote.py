"""tf.distribute.MirroredStrategy with a Session on a real server process ("grpc://" target):
in-graph replication over devices of that task (two stand-in GPUs: TENSORWEAVE_STANDIN_GPUS) or
of two tasks, the variables living on the servers. Training equals the same program on a local
Session's CPUs, bit for bit, and numpy's Momentum on the concatenated batch; the trained copies
outlive the session on their task. Keras fit under the strategy on the task's GPUs equals the
local run too (with soft placement, as Keras's own sessions have: not every op has a GPU kernel
here)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave import keras

X = (np.arange(36, dtype=np.float32).reshape(12, 3) % 7 - 3) / 4
Y = (X @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.25).astype(np.float32)
STEPS = 4


def _train(strategy, target: str = "", config=None):
    """The replicas' batches of 6 rows, a SUM loss, Momentum: each copy of (w, b) after STEPS
    steps, and the same copies read by a second session on the target."""
    with tf.Graph().as_default(), strategy.scope():
        w = tf.get_variable("w", initializer=tf.constant([[0.1], [0.2], [-0.3]]))
        b = tf.get_variable("b", initializer=tf.constant([0.05]))
        opt = tf.train.MomentumOptimizer(0.01, 0.9)
        it = strategy.make_dataset_iterator(tf.data.Dataset.from_tensor_slices((X, Y)).repeat().batch(6))

        def step(batch):
            xb, yb = batch
            return opt.minimize(tf.reduce_sum(tf.square(tf.matmul(xb, w) + b - yb)))
        train_op = strategy.group(strategy.experimental_run_v2(step, args=(it.get_next(),)))
        copies = list(strategy.experimental_local_results(w)) + list(strategy.experimental_local_results(b))
        with tf.Session(target, config=config) as sess:
            sess.run([tf.global_variables_initializer(), it.initializer])
            for _ in range(STEPS):
                sess.run(train_op)
            trained = sess.run(copies)
        if target:
            with tf.Session(target, config=config) as sess:
                assert all(np.array_equal(a, b) for a, b in zip(sess.run(copies), trained))
    return trained


def _numpy_reference():
    w, b = np.array([[0.1], [0.2], [-0.3]], np.float64), np.array([0.05])
    mw = mb = 0
    for s in range(STEPS):
        xb, yb = X[(6 * s) % 12:(6 * s) % 12 + 6], Y[(6 * s) % 12:(6 * s) % 12 + 6]
        r = 2 * (xb @ w + b - yb)
        mw, mb = 0.9 * mw + xb.T @ r, 0.9 * mb + r.sum(0)
        w, b = w - 0.01 * mw, b - 0.01 * mb
    return w, b


@pytest.mark.parametrize("devices", [["/job:worker/task:0/device:GPU:0", "/job:worker/task:0/device:GPU:1"],
                                     ["/job:worker/task:0/device:CPU:0", "/job:worker/task:1/device:CPU:0"]],
                         ids=["one-task", "two-tasks"])
def test_mirrored_training_on_a_remote_cluster_equals_local_and_numpy(start_cluster, devices):
    c = start_cluster({"worker": 2}, env={"TENSORWEAVE_STANDIN_GPUS": "2"})
    remote = _train(tf.distribute.MirroredStrategy(devices), c.target("worker"))
    local = _train(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]),
                   config=tf.ConfigProto(device_count={"CPU": 2}))
    assert len(remote) == len(local) == 4
    for got, want in zip(remote, local):
        np.testing.assert_array_equal(got, want)
    w, b = _numpy_reference()
    for copy in remote[:2]:
        np.testing.assert_allclose(copy, w, rtol=1e-5, atol=1e-6)
    for copy in remote[2:]:
        np.testing.assert_allclose(copy, b, rtol=1e-5, atol=1e-6)


def _keras_weights(strategy, target: str, config) -> list:
    x = (np.arange(48, dtype=np.float32).reshape(16, 3) % 7 - 3) / 4
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    with tf.Graph().as_default(), tf.Session(target, config=config) as sess:
        keras.backend.set_session(sess)
        with strategy.scope():
            model = keras.Sequential([keras.layers.Dense(4, activation="relu", input_shape=(3,),
                                                         kernel_initializer="ones"),
                                      keras.layers.Dense(1, kernel_initializer="ones")])
            model.compile(keras.optimizers.SGD(0.01), "mse")
        model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
        return model.get_weights()


def test_keras_fit_under_mirrored_strategy_on_a_remote_tasks_gpus_equals_local(start_cluster):
    c = start_cluster({"worker": 1}, env={"TENSORWEAVE_STANDIN_GPUS": "2"})
    remote = _keras_weights(tf.distribute.MirroredStrategy(["/job:worker/task:0/device:GPU:0",
                                                            "/job:worker/task:0/device:GPU:1"]),
                            c.target("worker"), tf.ConfigProto())
    local = _keras_weights(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]), "",
                           tf.ConfigProto(device_count={"CPU": 2}))
    assert len(remote) == len(local) == 4
    for got, want in zip(remote, local):
        np.testing.assert_array_equal(got, want)
