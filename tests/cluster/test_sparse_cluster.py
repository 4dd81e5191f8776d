"""SparseTensors cross tasks like dense tensors: a sparse placeholder fed by the client, sparse
ops on a worker, an embedding table on the ps trained through embedding_lookup_sparse, and a
SparseTensor fetched from a remote task."""
from __future__ import annotations

import numpy as np

import tensorweave as tf


def test_sparse_tensors_cross_tasks_and_train_a_ps_embedding(start_cluster):
    c = start_cluster({"ps": 1, "worker": 2})
    table = np.arange(18, dtype=np.float32).reshape(6, 3) / 10
    ids = tf.SparseTensorValue(np.array([[0, 0], [0, 1], [1, 0], [2, 0], [2, 1]], np.int64),
                               np.array([1, 4, 1, 0, 5], np.int64), np.array([3, 2], np.int64))
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            emb = tf.Variable(table, name="emb")
        with tf.device("/job:worker/task:1"):
            sp = tf.sparse_placeholder(tf.int64, name="ids")
            doubled = tf.SparseTensor(sp.indices, sp.values * 2, sp.dense_shape)   # a SparseTensor made remotely
            looked_up = tf.nn.embedding_lookup_sparse(emb, sp, None, combiner="mean")
        with tf.device("/job:worker/task:0"):
            dense = tf.sparse_tensor_to_dense(doubled)
            as_float = tf.SparseTensor(doubled.indices, tf.cast(doubled.values, tf.float32), doubled.dense_shape)
            weights = tf.sparse_tensor_dense_matmul(as_float, tf.ones([2, 1]))
            loss = tf.reduce_sum(looked_up) + tf.reduce_sum(weights)
            step = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
        with tf.Session(c.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            fetched, dense_v, looked_v, w_v = sess.run([doubled, dense, looked_up, weights], {sp: ids})
            sess.run(step, {sp: ids})
            after = sess.run(emb)
    assert isinstance(fetched, tf.SparseTensorValue)
    np.testing.assert_array_equal(fetched.values, ids.values * 2)
    np.testing.assert_array_equal(dense_v, [[2, 8], [2, 0], [0, 10]])
    np.testing.assert_allclose(looked_v, [(table[1] + table[4]) / 2, table[1], (table[0] + table[5]) / 2])
    np.testing.assert_allclose(w_v[:, 0], [10, 2, 10])
    # d loss / d table: each id's row gets 1 / (ids in its row) per lookup, on every column
    grad = np.zeros(6)
    for (row, _), i in zip(ids.indices, ids.values):
        grad[i] += 1.0 / np.sum(ids.indices[:, 0] == row)
    np.testing.assert_allclose(after, table - grad[:, None], rtol=1e-6)
