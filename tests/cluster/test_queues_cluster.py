"""Queues and accumulators on a ps task, shared by name between clients of different workers:
blocking across processes, deadlines, closing, and a ps that keeps serving while dequeues wait."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import tensorweave as tf


def _queue(graph):
    with graph.as_default(), tf.device("/job:ps/task:0"):
        return tf.FIFOQueue(10, tf.float32, shapes=[()], shared_name="shared_q", name="q")


@pytest.fixture(scope="module")
def cluster(start_cluster_module):
    return start_cluster_module({"ps": 1, "worker": 2})


def _client(cluster, worker, config=None):
    g = tf.Graph()
    q = _queue(g)
    return g, q, tf.Session(cluster.target("worker", worker), graph=g, config=config)


def test_a_shared_queue_on_the_ps_is_one_queue_for_every_client(cluster):
    ga, qa, sa = _client(cluster, 0)
    gb, qb, sb = _client(cluster, 1)
    with ga.as_default():
        x = tf.placeholder(tf.float32, [])
        enq = qa.enqueue(x)
    with gb.as_default():
        deq = qb.dequeue()
    sa.run(enq, {x: 3.5})
    assert sb.run(deq) == 3.5
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("v", sb.run(deq)), daemon=True)
    t.start()
    time.sleep(0.3)
    assert t.is_alive()   # waits on the ps for an element
    sa.run(enq, {x: 7.0})
    t.join(10)
    assert box == {"v": 7.0}
    sa.close()
    sb.close()


def test_deadlines_and_close_release_remote_dequeues_and_the_ps_keeps_serving(cluster):
    g, q, s = _client(cluster, 0)
    with g.as_default():
        deq, size, close = q.dequeue(), q.size(), q.close()
    start = time.monotonic()
    with pytest.raises(tf.errors.DeadlineExceededError, match="Timed out waiting"):
        s.run(deq, options=tf.RunOptions(timeout_in_ms=300))
    assert time.monotonic() - start < 5
    with tf.Session(cluster.target("worker", 1), graph=g, config=tf.ConfigProto(operation_timeout_in_ms=200)) as s2:
        with pytest.raises(tf.errors.DeadlineExceededError):
            s2.run(deq)
    boxes = [{} for _ in range(8)]

    def wait(box):
        try:
            box["v"] = s.run(deq)
        except tf.errors.OpError as e:
            box["e"] = e
    threads = [threading.Thread(target=wait, args=(b,), daemon=True) for b in boxes]
    for t in threads:
        t.start()
    time.sleep(0.3)
    start = time.monotonic()
    assert s.run(size) == 0   # eight dequeues wait on the ps; it still answers at once
    assert time.monotonic() - start < 2
    s.run(close)
    for t in threads:
        t.join(10)
    assert all(isinstance(b.get("e"), tf.errors.OutOfRangeError) for b in boxes)
    s.close()


def test_an_accumulator_on_the_ps_averages_gradients_of_two_clients(cluster):
    def build(graph):
        with graph.as_default(), tf.device("/job:ps/task:0"):
            acc = tf.ConditionalAccumulator(tf.float32, shape=[2], shared_name="shared_acc")
            g = tf.placeholder(tf.float32, [2])
            return acc, acc.apply_grad(g, local_step=0), acc.take_grad(2), g
    ga, gb = tf.Graph(), tf.Graph()
    acc_a, apply_a, take_a, ph_a = build(ga)
    _, apply_b, _, ph_b = build(gb)
    with tf.Session(cluster.target("worker", 0), graph=ga) as sa, \
            tf.Session(cluster.target("worker", 1), graph=gb) as sb:
        box = {}
        t = threading.Thread(target=lambda: box.setdefault("v", sa.run(take_a)), daemon=True)
        t.start()
        sa.run(apply_a, {ph_a: [1.0, 2.0]})
        time.sleep(0.2)
        assert t.is_alive()
        sb.run(apply_b, {ph_b: [3.0, 6.0]})
        t.join(10)
        np.testing.assert_array_equal(box["v"], [2.0, 4.0])
