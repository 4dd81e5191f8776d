"""Failures across processes: a killed task, a restarted task, a kernel error on one task."""
from __future__ import annotations

import time

import numpy as np
import pytest

import tensorweave as tf

W1 = "/job:worker/replica:0/task:1"
CONNECT_TIMEOUT_S = 3.0


@pytest.fixture(autouse=True)
def _short_connect_timeout(monkeypatch):
    monkeypatch.setenv("TENSORWEAVE_CONNECT_TIMEOUT_S", str(CONNECT_TIMEOUT_S))


def _two_task_graph():
    with tf.device("/job:worker/task:1"):
        a = tf.constant(np.float32(3), name="a") * 2.0
    with tf.device("/job:worker/task:0"):
        b = tf.add(a, 1.0, name="b")
    return b


def test_a_killed_task_is_unavailable_within_the_bound(start_cluster):
    c = start_cluster({"worker": 2})
    with tf.Graph().as_default():
        b = _two_task_graph()
        with tf.Session(c.target("worker", 0)) as sess:
            assert sess.run(b) == 7
            c.kill("worker", 1)
            start = time.monotonic()
            with pytest.raises(tf.errors.UnavailableError) as e:
                sess.run(b)
            assert time.monotonic() - start < CONNECT_TIMEOUT_S + 5
            assert "/job:worker/replica:0/task:1" in str(e.value)
            # The surviving task was released: a step that needs only it still runs.
            assert sess.run(tf.constant(5, name="alone")) == 5


def test_a_session_on_a_down_target_is_unavailable(start_cluster):
    c = start_cluster({"worker": 1})
    target = c.target("worker", 0)
    c.kill("worker", 0)
    start = time.monotonic()
    with pytest.raises(tf.errors.UnavailableError):
        with tf.Graph().as_default():
            tf.Session(target).run(tf.constant(1))
    assert time.monotonic() - start < CONNECT_TIMEOUT_S + 5


def test_a_restarted_task_is_aborted_then_recovers(start_cluster):
    c = start_cluster({"worker": 2})
    with tf.Graph().as_default():
        b = _two_task_graph()
        with tf.Session(c.target("worker", 0)) as sess:
            assert sess.run(b) == 7
            c.restart("worker", 1)
            with pytest.raises(tf.errors.AbortedError) as e:
                sess.run(b)
            assert "restarted" in str(e.value) or "incarnation" in str(e.value)
            assert sess.run(b) == 7      # the next step registers with the new incarnation
            c.restart("worker", 0)       # the session's own target restarts too
            with pytest.raises(tf.errors.AbortedError):
                sess.run(b)
            assert sess.run(b) == 7


def test_a_kernel_error_names_op_and_task_and_cancels_the_other_partitions(start_cluster):
    c = start_cluster({"worker": 2})
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:1"):
            p = tf.placeholder(tf.float32, [None], name="p")
            q = tf.placeholder(tf.float32, [], name="must_feed_q")
            bad = tf.add(p, q, name="bad_add")
        with tf.device("/job:worker/task:0"):
            waits = tf.add(tf.constant(1.0), bad, name="waits_for_bad")   # blocks on a Recv from task 1
        with tf.Session(c.target("worker", 0)) as sess:
            start = time.monotonic()
            with pytest.raises(tf.errors.InvalidArgumentError) as e:
                sess.run(waits, {p: np.ones(2, np.float32)})
            assert time.monotonic() - start < 5       # task 0's Recv was released, not left to hang
            msg = str(e.value)
            assert "must_feed_q" in msg and W1 in msg
            assert not isinstance(e.value, tf.errors.CancelledError)
            # Both tasks still serve: the same graph with the feed runs.
            out = sess.run(waits, {p: np.ones(2, np.float32), q: np.float32(2)})
            np.testing.assert_array_equal(out, [4, 4])


def test_the_session_manager_waits_for_a_task_as_long_as_the_config_says(start_cluster, monkeypatch):
    # ConfigProto's connect timeout comes before the environment's, for the session manager's
    # check that the graph's tasks answer as for the session itself.
    monkeypatch.setenv("TENSORWEAVE_CONNECT_TIMEOUT_S", "60")
    c = start_cluster({"worker": 2}, in_process=(("worker", 0), ("worker", 1)))   # nobody serves task 1
    server = tf.train.Server(tf.train.ClusterSpec(c.spec), job_name="worker", task_index=0)
    try:
        with tf.Graph().as_default():
            with tf.device("/job:worker/task:1"):
                tf.Variable(1.0, name="v")
            config = tf.ConfigProto(experimental={"connect_timeout_in_ms": 500})
            start = time.monotonic()
            with pytest.raises(tf.errors.UnavailableError, match=W1):
                tf.train.SessionManager().prepare_session(
                    server.target, init_op=tf.global_variables_initializer(), config=config)
            assert time.monotonic() - start < 5
    finally:
        server.stop()
