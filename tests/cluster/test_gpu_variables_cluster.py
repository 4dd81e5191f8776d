"""A ps (CPU) holding the variables, a worker computing the gradients on its GPU (issue 25), in real
processes: the worker's tasks have stand-in GPUs (TENSORWEAVE_STANDIN_GPUS), the gradients cross from
GPU memory to the ps through host memory, and the updates land as in an all-CPU cluster."""
from __future__ import annotations

import numpy as np

import tensorweave as tf
from tensorweave.runtime.devices import STANDIN_ENV


def train(target: str, worker_device: str) -> tuple:
    """Three steps of a two-layer net (Adam, global step) with its variables on the ps's CPU (a ps
    that has a GPU would take them there, as in TF, unless pinned)."""
    rng = np.random.RandomState(0)
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0/cpu:0"):
            w1 = tf.get_variable("w1", initializer=tf.constant(rng.randn(4, 8).astype(np.float32)))
            w2 = tf.get_variable("w2", initializer=tf.constant(rng.randn(8, 2).astype(np.float32)))
            step = tf.train.get_or_create_global_step()
        with tf.device(worker_device):
            x = tf.constant(rng.rand(6, 4).astype(np.float32))
            loss = tf.reduce_mean(tf.square(tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2) - 0.5))
            optimizer = tf.train.AdamOptimizer(0.05)
            grads = optimizer.compute_gradients(loss)
        with tf.device("/job:ps/task:0/cpu:0"):
            train_op = optimizer.apply_gradients(grads, global_step=step)
        config = tf.ConfigProto(allow_soft_placement=True)
        with tf.Session(target, config=config) as sess:
            sess.run(tf.global_variables_initializer())
            md = tf.RunMetadata()
            for _ in range(3):
                sess.run(train_op, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
            devices = {d.device for d in md.step_stats.dev_stats}
            return sess.run([w1, w2, loss, step]), devices


def test_ps_variables_take_gradients_computed_on_a_worker_gpu(start_cluster):
    cpu = start_cluster({"ps": 1, "worker": 1})
    want, _ = train(cpu.target("worker", 0), "/job:worker/task:0")
    gpu = start_cluster({"ps": 1, "worker": 1}, env={STANDIN_ENV: "1"})
    got, devices = train(gpu.target("worker", 0), "/job:worker/task:0/device:GPU:0")
    assert got[-1] == want[-1] == 3
    for w, v in zip(want, got):
        np.testing.assert_array_equal(v, w)
    assert "/job:worker/replica:0/task:0/device:GPU:0" in devices, devices
    assert not any("/job:ps" in d and "GPU" in d for d in devices), devices
