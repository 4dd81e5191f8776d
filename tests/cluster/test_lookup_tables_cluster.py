"""A MutableHashTable pinned to a ps task is one table for the sessions of two workers: found by
its name on the ps, it holds what one worker inserts for the other to look up, export and remove."""
from __future__ import annotations

import numpy as np

import tensorweave as tf


def _client(cluster, worker):
    g = tf.Graph()
    with g.as_default(), tf.device("/job:ps/task:0"):
        table = tf.contrib.lookup.MutableHashTable(tf.string, tf.int64, -1, name="word_counts")
    return g, table, tf.Session(cluster.target("worker", worker), graph=g)


def test_a_mutable_table_on_the_ps_is_shared_by_two_workers(start_cluster):
    cluster = start_cluster({"ps": 1, "worker": 2})
    ga, ta, sa = _client(cluster, 0)
    gb, tb, sb = _client(cluster, 1)
    with ga.as_default(), tf.device("/job:worker/task:0"):
        insert = ta.insert(tf.constant(["red", "blue"]), tf.constant([3, 5], tf.int64))
        assert "/job:ps/task:0" in ta.resource_handle.device
    with gb.as_default(), tf.device("/job:worker/task:1"):
        found = tb.lookup(tf.constant(["blue", "green", "red"]))
        size, exported, remove = tb.size(), tb.export(), tb.remove(tf.constant(["red"]))
    assert sb.run(size) == 0
    sa.run(insert)
    np.testing.assert_array_equal(sb.run(found), [5, -1, 3])
    keys, values = sb.run(exported)
    assert dict(zip(keys.tolist(), values.tolist())) == {b"red": 3, b"blue": 5}
    sb.run(remove)
    with ga.as_default():
        assert sa.run(ta.size()) == 1
    sa.close()
    sb.close()
