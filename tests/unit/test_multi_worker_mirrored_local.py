"""MultiWorkerMirroredStrategy without a cluster (no TF_CONFIG): one worker, one replica on this
task's CPU, no collectives, training as a plain graph does; and the errors of a cluster it cannot
run in. The multi-worker behaviour is tests/cluster/test_multi_worker_mirrored.py's."""
from __future__ import annotations

import json

import numpy as np
import pytest

import tensorweave as tf

X = (np.arange(24, dtype=np.float32).reshape(8, 3) % 5 - 2) / 3
Y = X @ np.array([[0.5], [-1.0], [2.0]], np.float32) + 0.1


def _train(strategy):
    with tf.Graph().as_default() as g, strategy.scope():
        w = tf.get_variable("w", initializer=tf.constant([[0.1], [0.2], [-0.3]]))
        opt = tf.train.AdamOptimizer(0.1)
        it = strategy.make_dataset_iterator(tf.data.Dataset.from_tensor_slices((X, Y)).repeat().batch(4))

        def step(batch):
            x, y = batch
            return opt.minimize(tf.reduce_mean(tf.square(tf.matmul(x, w) - y)))
        train = strategy.group(strategy.experimental_run_v2(step, args=(it.get_next(),)))
        assert not [op for op in g.get_operations() if op.type.startswith("Collective")]
        with tf.Session(config=strategy.update_config_proto(tf.ConfigProto())) as sess:
            sess.run([tf.global_variables_initializer(), it.initializer])
            for _ in range(5):
                sess.run(train)
            return sess.run(w)


def test_without_a_cluster_it_trains_as_one_device(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()
    assert strategy.num_replicas_in_sync == 1 and strategy.extended.should_checkpoint
    assert strategy.extended.worker_devices == ("/job:localhost/replica:0/task:0/device:CPU:0",)
    assert not strategy.update_config_proto(tf.ConfigProto()).device_filters
    np.testing.assert_allclose(_train(strategy), _train(tf.distribute.OneDeviceStrategy("/cpu:0")), rtol=1e-6)


def test_bad_clusters_and_arguments_are_named():
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec({"worker": ["localhost:1", "localhost:2"]}), task_type="worker", task_id=2)
    with pytest.raises(ValueError, match="worker:2 is not in the cluster"):
        tf.distribute.experimental.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec({"worker": ["localhost:1"]}))
    with pytest.raises(ValueError, match="task_type"):
        tf.distribute.experimental.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
    with pytest.raises(ValueError, match="CollectiveCommunication"):
        tf.distribute.experimental.MultiWorkerMirroredStrategy(communication="RING")
    strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy(
        tf.distribute.experimental.CollectiveCommunication.RING,
        tf.distribute.cluster_resolver.SimpleClusterResolver(tf.train.ClusterSpec({"worker": ["a:1", "b:2"]}),
                                                             task_type="worker", task_id=1))
    with tf.Graph().as_default(), strategy.scope():
        with pytest.raises(ValueError, match="fully known shape"):
            tf.Variable(tf.placeholder_with_default(tf.zeros([2]), [None]))


def test_run_config_of_a_cluster_of_workers_only_makes_worker_0_the_chief(monkeypatch):
    """As TF's distribute coordinator does for a between-graph train_distribute; without one a
    cluster needs its chief."""
    cluster = {"worker": ["localhost:1", "localhost:2"]}
    for index in (0, 1):
        monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}))
        config = tf.estimator.RunConfig(train_distribute=tf.distribute.experimental.MultiWorkerMirroredStrategy())
        assert (config.is_chief, config.task_type, config.task_id) == (index == 0, "worker", index)
        assert (config.num_worker_replicas, config.global_id_in_cluster) == (2, index)
        assert config.master == "grpc://" + cluster["worker"][index]
    with pytest.raises(ValueError, match='must have one "chief" node'):
        tf.estimator.RunConfig()
