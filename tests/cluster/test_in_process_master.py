"""The client in task 0's process (tf.train.Server in the test), task 1 in another process:
the step path the benchmark measures. Values that ride back with a reply, ping-pong between
the tasks, a remote failure or death while the in-process partition waits on a Recv, a push
the receiver refuses, and session close freeing isolated state."""
from __future__ import annotations

import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed import master as master_mod
from tensorweave.distributed import sockets
from tensorweave.distributed.channel import Channel
from tensorweave.distributed.worker import WorkerClient

T0, T1 = "/job:local/replica:0/task:0", "/job:local/replica:0/task:1"
CONNECT_TIMEOUT_S = 3.0


@pytest.fixture
def two_tasks(start_cluster, monkeypatch):
    monkeypatch.setenv("TENSORWEAVE_CONNECT_TIMEOUT_S", str(CONNECT_TIMEOUT_S))
    c = start_cluster({"local": 2}, in_process=(("local", 0),))
    server = tf.train.Server(tf.train.ClusterSpec(c.spec), job_name="local", task_index=0)
    try:
        yield c, server
    finally:
        server.stop()


def _steps(sess):
    return sess._master._plans


def test_seed_238_values_ride_back_with_the_reply(two_tasks):
    c, server = two_tasks
    with tf.Graph().as_default():
        x = tf.constant(2)
        with tf.device("/job:local/task:1"):
            y2 = x - 66
        with tf.device("/job:local/task:0"):
            y = (x + 300) + y2
        with tf.Session(server.target) as sess:
            for _ in range(50):
                out = sess.run(y)
                assert out == 238 and out.dtype == np.int32
            (plan,) = _steps(sess).values()
            assert plan.carry is not None     # task 1 never waits: its value comes with its reply
            # a large value takes the same path, zero-copy on the wire
            with tf.device("/job:local/task:1"):
                big = tf.range(1 << 18, dtype=tf.float32) * 2.0
            with tf.device("/job:local/task:0"):
                total = tf.reduce_sum(big)
            assert sess.run(total) == pytest.approx(float(np.sum(np.arange(1 << 18, dtype=np.float64) * 2)))


def test_ping_pong_between_the_tasks(two_tasks):
    c, server = two_tasks
    with tf.Graph().as_default():
        v = tf.constant(1.0, name="start")
        for i in range(4):   # task 1, task 0, task 1, ... each hop waits on the previous one
            with tf.device(f"/job:local/task:{(i + 1) % 2}"):
                v = tf.add(tf.identity(v) * 2.0, float(i), name=f"hop{i}")
        with tf.Session(server.target) as sess:
            for _ in range(5):
                assert sess.run(v) == ((((1 * 2 + 0) * 2 + 1) * 2 + 2) * 2 + 3)
            (plan,) = _steps(sess).values()
            assert plan.carry is None     # task 1 receives too: its values are pushed
            assert sess.run([v, "hop1:0"]) == [27.0, 5.0]


def test_independent_recvs_from_one_peer_in_either_order(two_tasks):
    c, server = two_tasks
    with tf.Graph().as_default():
        with tf.device("/job:local/task:0"):
            done = tf.no_op(name="done")           # listed first...
        with tf.device("/job:local/task:1"):
            k = tf.identity(tf.constant(5.0), name="k")
        with tf.device("/job:local/task:0"):
            x = tf.identity(k, name="x")           # task 0 receives k...
        with tf.device("/job:local/task:1"):
            b1 = tf.identity(x * 3.0, name="b1")   # ...task 1 needs x back to make b1
        done._add_control_input(b1.op)             # ...but waits for b1 (from task 1 too)
        with tf.Session(server.target) as sess:
            # Task 0 must take k's Recv before b1's, though graph order lists b1's first.
            assert sess.run([done, x], options=tf.RunOptions(timeout_in_ms=5000)) == [None, 5.0]


def test_remote_error_while_the_local_partition_waits(two_tasks):
    c, server = two_tasks
    with tf.Graph().as_default():
        with tf.device("/job:local/task:1"):
            p = tf.placeholder(tf.float32, [None], name="p")
            q = tf.placeholder(tf.float32, [], name="must_feed_q")
            bad = tf.add(p, q, name="bad_add")
        with tf.device("/job:local/task:0"):
            waits = tf.add(tf.constant(1.0), bad, name="waits_for_bad")
        with tf.Session(server.target) as sess:
            start = time.monotonic()
            with pytest.raises(tf.errors.InvalidArgumentError) as e:
                sess.run(waits, {p: np.ones(2, np.float32)})
            assert time.monotonic() - start < 2.0
            assert "must_feed_q" in str(e.value) and T1 in str(e.value)
            out = sess.run(waits, {p: np.ones(2, np.float32), q: np.float32(2)})
            np.testing.assert_array_equal(out, [4, 4])


def test_remote_error_without_carry_while_the_local_partition_waits(two_tasks):
    c, server = two_tasks
    with tf.Graph().as_default():
        with tf.device("/job:local/task:0"):
            a = tf.constant(np.ones(2, np.float32), name="a") * 1.0
        with tf.device("/job:local/task:1"):
            q = tf.placeholder(tf.float32, [], name="must_feed_q")
            bad = tf.add(a, q, name="bad_add")      # task 1 receives a: no carry
        with tf.device("/job:local/task:0"):
            waits = tf.add(a, bad, name="waits_for_bad")
        with tf.Session(server.target) as sess:
            start = time.monotonic()
            with pytest.raises(tf.errors.InvalidArgumentError, match="must_feed_q"):
                sess.run(waits)
            assert time.monotonic() - start < 2.0   # seen while the Recv waited, not at its deadline
            np.testing.assert_array_equal(sess.run(waits, {q: np.float32(1)}), [3, 3])


def test_a_killed_task_while_the_local_partition_waits(two_tasks, monkeypatch):
    c, server = two_tasks
    monkeypatch.setattr(sockets, "PROBE_INTERVAL_S", 0.2)
    with tf.Graph().as_default():
        with tf.device("/job:local/task:0"):
            a = tf.constant(np.ones(2, np.float32), name="a") * 1.0
        with tf.device("/job:local/task:1"):
            q = tf.placeholder(tf.float32, [], name="q")
            slow = tf.add(a, q, name="slow")
        with tf.device("/job:local/task:0"):
            waits = tf.add(a, slow, name="waits")
        with tf.Session(server.target) as sess:
            np.testing.assert_array_equal(sess.run(waits, {q: np.float32(1)}), [3, 3])
            c.kill("local", 1)
            start = time.monotonic()
            with pytest.raises(tf.errors.UnavailableError, match=T1):
                sess.run(waits, {q: np.float32(1)})
            assert time.monotonic() - start < CONNECT_TIMEOUT_S + 5


def test_a_refused_push_fails_the_step_instead_of_hanging(start_cluster):
    from tensorweave.framework.graph_def import graph_to_graph_def
    from tensorweave.ops import sendrecv as sendrecv_ops
    c = start_cluster({"local": 2})
    g = tf.Graph()
    with g.as_default():
        r = sendrecv_ops.recv(tf.float32, "edge", T0, T1, shape=[None], name="recv")
        tf.identity(r, name="out")
    c1 = WorkerClient.for_address(c.address("local", 1), T1, CONNECT_TIMEOUT_S)
    h = c1.register_graph(graph_to_graph_def(g), [], ["out:0"], [])
    pending = c1.start_run_graph(h, 41, [], timeout_s=20.0)
    time.sleep(0.2)
    # A push this task cannot take (addressed to another task): nobody awaits its reply, so
    # the receiver fails the step itself, and the Recv raises at once rather than at its deadline.
    ch = Channel(c.address("local", 1), T1, CONNECT_TIMEOUT_S)
    start = time.monotonic()
    ch.push("recv_tensor", [T0, "/job:local/replica:0/task:7", "edge", 41, np.ones(2, np.float32)])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"(?s)refused.*task:7.*recv"):
        pending.result()
    assert time.monotonic() - start < 2.0
    ch.close()
    # a well-addressed push is taken as usual
    ch = Channel(c.address("local", 1), T1, CONNECT_TIMEOUT_S)
    pending = c1.start_run_graph(h, 42, [])
    ch.push("recv_tensor", [T0, T1, "edge", 42, np.ones(2, np.float32)])
    (out,), _ = pending.result()["values"], None
    np.testing.assert_array_equal(out, [1, 1])
    ch.close()


def test_isolated_session_state_is_freed_on_close(two_tasks):
    c, server = two_tasks
    status = WorkerClient.for_address(c.address("local", 1), T1, CONNECT_TIMEOUT_S).get_status
    before = status()["sessions"]
    with tf.Graph().as_default():
        with tf.device("/job:local/task:1"):
            v = tf.Variable(np.float32(5), name="private_v")
        sess = tf.Session(server.target, config=tf.ConfigProto(isolate_session_state=True))
        sess.run(v.initializer)
        assert sess.run(v) == 5
        assert status()["sessions"] == before + 1
        sess.close()
        assert status()["sessions"] == before
        assert status()["graphs"] == 0


def test_steps_reuse_the_carry_plan_and_leave_nothing_behind(two_tasks):
    c, server = two_tasks
    with tf.Graph().as_default():
        with tf.device("/job:local/task:1"):
            a = tf.constant(np.arange(4, dtype=np.int64)) * 3
        with tf.device("/job:local/task:0"):
            b = a + 1
        with tf.Session(server.target) as sess:
            for _ in range(20):
                np.testing.assert_array_equal(sess.run(b), np.arange(4) * 3 + 1)
            assert len(server.service.rendezvous) == 0
            assert server.service.get_status()["active_steps"] == 0
    assert master_mod._LEASES._held == {}


def test_a_fetched_value_the_in_process_task_still_holds_is_the_users_own_copy(two_tasks):
    # Task 0's runtime keeps the value it received from task 1 in shared memory (read-only) as
    # its variable's; the fetch of that same array must give the user an array whose writes
    # reach nothing else (TF's sess.run hands out arrays the user owns).
    c, server = two_tasks
    n = 1 << 18   # 1 MiB of float32: travels in shared memory
    with tf.Graph().as_default():
        with tf.device("/job:local/task:1"):
            x = tf.fill([n], 7.0)
        with tf.device("/job:local/task:0"):
            v = tf.Variable(tf.zeros([n]), name="v")
            y = tf.identity(x)
            with tf.control_dependencies([tf.assign(v, y)]):
                fetched = tf.identity(y)
        with tf.Session(server.target) as sess:
            sess.run(v.initializer)
            for _ in range(2):
                got = sess.run(fetched)
                got += 1.0
                np.testing.assert_array_equal(got, np.full(n, 8.0, np.float32))
                np.testing.assert_array_equal(sess.run(v), np.full(n, 7.0, np.float32))
