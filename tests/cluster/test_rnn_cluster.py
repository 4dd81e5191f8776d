"""dynamic_rnn trained across real processes: variables on two ps tasks (a cell's kernel and
bias on different tasks), the loop and its gradient on the worker."""
from __future__ import annotations

import numpy as np

import tensorweave as tf


def test_dynamic_rnn_trains_with_variables_on_two_ps_tasks(start_cluster):
    c = start_cluster({"ps": 2, "worker": 1})
    spec = tf.train.ClusterSpec(c.spec)
    with tf.Graph().as_default():
        with tf.device(tf.train.replica_device_setter(cluster=spec, worker_device="/job:worker/task:0")):
            x = tf.placeholder(tf.float32, [4, 6, 3])
            cell = tf.nn.rnn_cell.MultiRNNCell([
                tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicLSTMCell(8), output_keep_prob=0.9),
                tf.nn.rnn_cell.GRUCell(5)])
            out, _ = tf.nn.dynamic_rnn(cell, x, sequence_length=[6, 4, 2, 1], dtype=tf.float32)
            loss = tf.reduce_mean(tf.square(out - 0.5))
            step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        devices = {v.op.name: v.device for v in tf.global_variables()}
        assert {d.split("/task:")[-1][:1] for d in devices.values()} == {"0", "1"}   # both ps tasks hold some
        loop = tf.get_default_graph().get_operation_by_name("rnn/while")
        assert "worker" in loop.device and not [t for t in loop.inputs if t.dtype == tf.resource]
        xv = np.random.RandomState(0).randn(4, 6, 3).astype(np.float32)
        with tf.Session(c.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss, {x: xv})
            for _ in range(20):
                sess.run(step, {x: xv})
            assert sess.run(loss, {x: xv}) < 0.8 * first
