"""tf.distribute.experimental.ParameterServerStrategy with real ps and worker processes: variables
land on the ps tasks round-robin (slots beside their variable), the worker computes, and training
through the worker's server gives plain gradient descent's numbers. And a server given
ConfigProto.device_count has that many CPU devices."""
from __future__ import annotations

import json

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed.cluster import free_ports

X = (np.arange(24, dtype=np.float32).reshape(8, 3) % 5 - 2) / 3
Y = X @ np.array([[0.5], [-1.0], [2.0]], np.float32) + 0.1


def _train(strategy, target, config, steps=5):
    with tf.Graph().as_default(), strategy.scope():
        w = tf.get_variable("w", initializer=tf.zeros([3, 1]))
        b = tf.get_variable("b", initializer=tf.zeros([1]))
        opt = tf.train.MomentumOptimizer(0.1, 0.9)
        it = strategy.make_dataset_iterator(tf.data.Dataset.from_tensor_slices((X, Y)).repeat().batch(8))

        def step(batch):
            x, y = batch
            return opt.minimize(tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y)))
        train = strategy.group(strategy.experimental_run_v2(step, args=(it.get_next(),)))
        devices = {v.op.name: v.device for v in tf.global_variables()}
        with tf.Session(target, config=config) as sess:
            sess.run([tf.global_variables_initializer(), it.initializer])
            for _ in range(steps):
                sess.run(train)
            return sess.run([w, b]), devices


def test_variables_on_ps_round_robin_and_training_equals_plain(start_cluster, monkeypatch):
    c = start_cluster({"ps": 2, "worker": 1})
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": c.spec, "task": {"type": "worker", "index": 0}}))
    strategy = tf.distribute.experimental.ParameterServerStrategy()
    assert strategy.num_replicas_in_sync == 1
    assert strategy.extended.parameter_devices == ("/job:ps/replica:0/task:0/device:CPU:0",
                                                   "/job:ps/replica:0/task:1/device:CPU:0")
    config = tf.ConfigProto()
    strategy.configure(config)
    assert list(config.device_filters) == ["/job:ps", "/job:worker/task:0"]
    (w, b), devices = _train(strategy, c.target("worker", 0), config)
    assert devices["w"] == "/job:ps/replica:0/task:0/device:CPU:0"
    assert devices["b"] == "/job:ps/replica:0/task:1/device:CPU:0"
    assert devices["w/Momentum"] == devices["w"] and devices["b/Momentum"] == devices["b"]   # slots beside
    (w0, b0), _ = _train(tf.distribute.OneDeviceStrategy("/cpu:0"), "", None)
    np.testing.assert_allclose(w, w0, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(b, b0, rtol=1e-6, atol=1e-7)


def test_a_cluster_without_ps_is_an_error():
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec({"worker": ["localhost:1"]}), task_type="worker", task_id=0)
    with pytest.raises(ValueError, match="No `ps` job"):
        tf.distribute.experimental.ParameterServerStrategy(resolver)


def test_a_server_with_device_count_runs_ops_on_each_of_its_cpus():
    spec = {"worker": [f"localhost:{free_ports(1)[0]}"]}
    server = tf.train.Server(spec, job_name="worker", task_index=0,
                             config=tf.ConfigProto(device_count={"CPU": 3}))
    try:
        with tf.Graph().as_default():
            parts = []
            for i in range(3):
                with tf.device(f"/job:worker/task:0/device:CPU:{i}"):
                    parts.append(tf.constant(float(i + 1)) * 2)
            with tf.Session(server.target) as sess:
                assert sess.run(tf.add_n(parts)) == 12.0
                assert [d.name for d in sess.list_devices()] == [
                    f"/job:worker/replica:0/task:0/device:CPU:{i}" for i in range(3)]
            with tf.device("/job:worker/task:0/device:CPU:3"):
                bad = tf.constant(1.0) + 1
            with tf.Session(server.target) as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                                                  match="Cannot assign a device"):
                sess.run(bad)
    finally:
        server.stop()
