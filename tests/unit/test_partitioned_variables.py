"""Partitioned variables: TF's partitioners and slicing rule, get_variable/variable_scope with
a partitioner, PartitionedVariable, embedding lookups over the parts ('mod' and 'div') against
numpy, sparse per-part updates, and spreading the parts over ps tasks."""
from __future__ import annotations


import numpy as np
import pytest

import tensorweave as tf


def test_partitioners_follow_tfs_rules():
    f32 = tf.float32
    assert tf.fixed_size_partitioner(3)(shape=tf.TensorShape([10, 4]), dtype=f32) == [3, 1]
    assert tf.fixed_size_partitioner(5, axis=1)(shape=tf.TensorShape([10, 4]), dtype=f32) == [1, 4]
    # 1000 x 100 floats = 400000 bytes; slices of >= 64 KiB -> ceil(6.1) = 7 parts, capped by max_partitions
    assert tf.min_max_variable_partitioner(max_partitions=10, min_slice_size=64 << 10)(
        shape=tf.TensorShape([1000, 100]), dtype=f32) == [7, 1]
    assert tf.min_max_variable_partitioner(max_partitions=4, min_slice_size=64 << 10)(
        shape=tf.TensorShape([1000, 100]), dtype=f32) == [4, 1]
    assert tf.min_max_variable_partitioner(max_partitions=50, min_slice_size=1)(
        shape=tf.TensorShape([3, 100]), dtype=f32) == [3, 1]
    # rows of 400 bytes, shards of <= 4000 bytes -> 10 rows per shard -> 100 shards, or max_shards
    assert tf.variable_axis_size_partitioner(4000)(shape=tf.TensorShape([1000, 100]), dtype=f32) == [100, 1]
    assert tf.variable_axis_size_partitioner(4000, max_shards=8)(shape=tf.TensorShape([1000, 100]),
                                                                  dtype=f32) == [8, 1]
    assert tf.variable_axis_size_partitioner(100, bytes_per_string_element=10)(
        shape=tf.TensorShape([20, 5]), dtype=tf.string) == [10, 1]
    with pytest.raises(ValueError, match="must be positive"):
        tf.variable_axis_size_partitioner(0)


def test_get_variable_with_partitioner_makes_parts_with_slice_info():
    with tf.Graph().as_default():
        init = np.arange(30.0).reshape(10, 3)
        with tf.variable_scope("scope", partitioner=tf.fixed_size_partitioner(3)):
            pv = tf.get_variable("emb", initializer=tf.constant(init))
        assert isinstance(pv, tf.PartitionedVariable)
        assert pv.name == "scope/emb" and pv.get_shape() == [10, 3] and len(pv) == 3
        assert [v.name for v in pv] == ["scope/emb/part_0:0", "scope/emb/part_1:0", "scope/emb/part_2:0"]
        assert [v.shape.as_list() for v in pv] == [[4, 3], [3, 3], [3, 3]]
        infos = [v._get_save_slice_info() for v in pv]
        assert [i.spec for i in infos] == ["10 3 0,4:0,3", "10 3 4,3:0,3", "10 3 7,3:0,3"]
        assert all(i.full_name == "scope/emb" for i in infos)
        assert [v.name for v in tf.global_variables()] == [v.name for v in pv]
        with tf.variable_scope("scope", reuse=True, partitioner=tf.fixed_size_partitioner(3)):
            assert tf.get_variable("emb", [10, 3], dtype=tf.float64) is pv
        with tf.variable_scope("scope", reuse=True, partitioner=tf.fixed_size_partitioner(2)):
            with pytest.raises(ValueError, match="specified partitions \\[2, 1\\] and found partitions \\[3, 1\\]"):
                tf.get_variable("emb", [10, 3], dtype=tf.float64)
        with pytest.raises(ValueError, match="Can only slice a variable along one dimension"):
            tf.get_variable("two_axes", [4, 4], partitioner=lambda shape, dtype: [2, 2])
        with pytest.raises(ValueError, match="must be fully defined"):
            tf.get_variable("unknown", [None, 4], partitioner=tf.fixed_size_partitioner(2))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(pv.as_tensor()), init)
            np.testing.assert_array_equal(sess.run(tf.convert_to_tensor(pv) * 2), init * 2)
            sess.run(pv.assign(init + 1))
            np.testing.assert_array_equal(sess.run(tf.concat(list(pv), 0)), init + 1)


def test_initializer_sees_the_full_shape():
    # glorot's limit comes from the full variable's fans, not the part's
    with tf.Graph().as_default():
        pv = tf.get_variable("g", [400, 100], initializer=tf.glorot_uniform_initializer(seed=3),
                             partitioner=tf.fixed_size_partitioner(4))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            value = sess.run(pv.as_tensor())
    limit = np.sqrt(6.0 / (400 + 100))
    assert np.abs(value).max() <= limit and np.abs(value).max() > 0.9 * limit


def test_create_partitioned_variables():
    with tf.Graph().as_default():
        parts = tf.create_partitioned_variables([6, 2], [3, 1], tf.ones_initializer(), name="cp")
        assert [p.shape.as_list() for p in parts] == [[2, 2], [2, 2], [2, 2]]
        assert parts[1]._get_save_slice_info().var_offset == [2, 0]


def _lookup(strategy, ids, parts=3):
    table = np.arange(33.0).reshape(11, 3)
    with tf.Graph().as_default():
        if strategy == "div":
            pv = tf.get_variable("t", initializer=tf.constant(table), partitioner=tf.fixed_size_partitioner(parts))
        else:   # 'mod' expects row i in part i % n at row i // n
            pv = [tf.Variable(table[p::parts], name=f"t_{p}") for p in range(parts)]
        out = tf.nn.embedding_lookup(pv, ids, partition_strategy=strategy)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return sess.run(out), table


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_embedding_lookup_over_parts_matches_numpy(strategy):
    ids = np.array([[0, 10, 4], [7, 7, 3]])
    got, table = _lookup(strategy, ids)
    np.testing.assert_array_equal(got, table[ids])


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_embedding_lookup_sparse_combiners_match_numpy(combiner):
    table = np.random.RandomState(0).randn(8, 3)
    rows = [[1, 5, 5], [0], [7, 2]]
    weights = [[0.5, 2.0, 1.0], [3.0], [1.0, -3.0]]
    indices = np.array([[r, k] for r, ids in enumerate(rows) for k in range(len(ids))], np.int64)
    with tf.Graph().as_default():
        sp_ids = tf.SparseTensor(indices, tf.constant([i for r in rows for i in r], tf.int64), [3, 3])
        sp_w = tf.SparseTensor(indices, tf.constant([w for r in weights for w in r]), [3, 3])
        pv = tf.get_variable(f"sp_{combiner}", initializer=tf.constant(table),
                             partitioner=tf.fixed_size_partitioner(2))
        out_w = tf.nn.embedding_lookup_sparse(pv, sp_ids, sp_w, partition_strategy="div", combiner=combiner)
        out = tf.nn.embedding_lookup_sparse(pv, sp_ids, None, partition_strategy="div", combiner=combiner)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got_w, got = sess.run([out_w, out])
    for r, (ids, ws) in enumerate(zip(rows, weights)):
        for res, w in ((got_w, np.array(ws)), (got, np.ones(len(ids)))):
            total = (table[ids] * w[:, None]).sum(0)
            div = {"sum": 1.0, "mean": w.sum(), "sqrtn": np.sqrt((w ** 2).sum())}[combiner]
            np.testing.assert_allclose(res[r], total / div, rtol=1e-10)
        with pytest.raises(TypeError, match="sp_ids must be SparseTensor"):
            tf.nn.embedding_lookup_sparse(pv, [1, 2], None)


def test_sparse_gradients_update_only_the_rows_looked_up_in_each_part():
    table = np.ones((10, 2), np.float32)
    with tf.Graph().as_default():
        pv = tf.get_variable("e", initializer=tf.constant(table), partitioner=tf.fixed_size_partitioner(2))
        loss = tf.reduce_sum(tf.nn.embedding_lookup(pv, [1, 1, 8], partition_strategy="div"))
        grads = tf.gradients(loss, [v.handle for v in pv])
        assert all(isinstance(g, tf.IndexedSlices) for g in grads)
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            got = sess.run(pv.as_tensor())
    want = table.copy()
    want[1] -= 1.0   # looked up twice
    want[8] -= 0.5
    np.testing.assert_array_equal(got, want)


def test_replica_device_setter_spreads_parts_round_robin_and_by_bytes():
    cluster = tf.train.ClusterSpec({"ps": ["h:1", "h:2", "h:3"], "worker": ["h:4"]})
    with tf.Graph().as_default():
        with tf.device(tf.train.replica_device_setter(cluster=cluster)):
            pv = tf.get_variable("rr", [9, 2], partitioner=tf.fixed_size_partitioner(3))
        assert [v.device for v in pv] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2"]
    with tf.Graph().as_default():
        strategy = tf.contrib.training.GreedyLoadBalancingStrategy(3, tf.contrib.training.byte_size_load_fn)
        with tf.device(tf.train.replica_device_setter(cluster=cluster, ps_strategy=strategy)):
            big = tf.get_variable("big", [100, 10])                          # 4000 bytes -> ps 0
            pv = tf.get_variable("parts", [40, 10], partitioner=tf.fixed_size_partitioner(4))  # 400 bytes each
        assert big.device == "/job:ps/task:0"
        assert [v.device for v in pv] == ["/job:ps/task:1", "/job:ps/task:2", "/job:ps/task:1", "/job:ps/task:2"]
