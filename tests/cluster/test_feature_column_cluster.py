"""Feature columns on a cluster: through replica_device_setter the columns' variables live on the
ps and their vocabulary tables on the worker, MonitoredTrainingSession initializes the tables
(Scaffold's local_init_op) and a linear model with an embedding trains there."""
from __future__ import annotations

import numpy as np

import tensorweave as tf


def test_feature_column_model_trains_on_ps_and_worker(start_cluster):
    c = start_cluster({"ps": 1, "worker": 1})
    fc = tf.feature_column
    words = fc.categorical_column_with_vocabulary_list("word", ["a", "b", "c"], num_oov_buckets=1)
    with tf.Graph().as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=1, worker_device="/job:worker/task:0")):
            features = {"word": tf.constant([["a"], ["c"], ["zz"], ["b"]]),
                        "price": tf.constant([[1.0], [2.0], [0.5], [-1.0]])}
            dense = fc.input_layer(features, [fc.embedding_column(words, 2, initializer=tf.ones_initializer()),
                                              fc.numeric_column("price")])
            logits = fc.linear_model(features, [words, fc.numeric_column("price")]) + tf.reduce_sum(dense, 1,
                                                                                                      keepdims=True)
            loss = tf.reduce_mean(tf.square(logits - tf.constant([[1.0], [0.0], [2.0], [-1.0]])))
            step = tf.train.get_or_create_global_step()
            train = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=step)
        devices = {op.type: op.device for op in tf.get_default_graph().get_operations()
                   if op.type in ("HashTableV2", "VarHandleOp")}
        assert devices == {"HashTableV2": "/job:worker/task:0", "VarHandleOp": "/job:ps/task:0"}
        with tf.train.MonitoredTrainingSession(master=c.target("worker", 0), is_chief=True) as s:
            losses = [s.run([train, loss])[1] for _ in range(20)]
            weights = s.run(next(v for v in tf.global_variables() if v.op.name == "linear_model/word/weights"))
    assert losses[-1] < losses[0] / 2
    assert weights.shape == (4, 1) and np.all(weights != 0)   # every id, the oov bucket's too, was trained
