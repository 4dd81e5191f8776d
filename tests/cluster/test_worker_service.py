"""The worker service of real server processes: status, graphs, shared state, Send/Recv,
remote errors, abort and deadlines."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed.worker import WorkerClient
from tensorweave.framework import errors
from tensorweave.framework.graph_def import graph_to_graph_def
from tensorweave.ops import sendrecv as sendrecv_ops

T0, T1 = "/job:local/replica:0/task:0", "/job:local/replica:0/task:1"


@pytest.fixture
def cluster(start_cluster):
    return start_cluster({"local": 2})


def client(c, index: int, timeout: float = 5.0) -> WorkerClient:
    return WorkerClient.for_address(c.address("local", index), c.task_name("local", index), timeout)


def _graph_def(build):
    g = tf.Graph()
    with g.as_default():
        build()
    return graph_to_graph_def(g)


def test_get_status(cluster):
    st = client(cluster, 1).get_status()
    assert st["cluster"] == cluster.spec
    assert (st["job"], st["task"]) == ("local", 1)
    assert st["devices"] == [T1 + "/device:CPU:0"]
    assert isinstance(st["incarnation"], int) and 0 <= st["incarnation"] < 2 ** 64
    assert client(cluster, 0).get_status()["incarnation"] != st["incarnation"]


def test_register_and_run(cluster):
    def build():
        x = tf.placeholder(tf.float32, [None], name="x")
        tf.add(x, tf.constant(np.arange(3, dtype=np.float32)), name="y")
        tf.constant([b"ab", b"c"], name="s")
    c = client(cluster, 0)
    h = c.register_graph(_graph_def(build), ["x:0"], ["y:0", "s:0"], [])
    (y, s), stats = c.run_graph(h, 1, [np.full(3, 2.0, np.float32)])
    assert y.dtype == np.float32 and y.shape == (3,)
    np.testing.assert_array_equal(y, [2.0, 3.0, 4.0])
    assert s.tolist() == [b"ab", b"c"]
    assert stats is None
    (y, _), stats = c.run_graph(h, 3, [np.zeros(3, np.float32)], trace=True)
    np.testing.assert_array_equal(y, [0.0, 1.0, 2.0])
    assert "y" in {st["node_name"] for st in stats}
    assert {st["device"] for st in stats} == {T0}
    c.deregister_graph(h)
    with pytest.raises(errors.NotFoundError, match="not registered on task " + T0):
        c.run_graph(h, 4, [np.zeros(3, np.float32)])


def test_wrong_feed_count_is_invalid_argument(cluster):
    c = client(cluster, 0)
    h = c.register_graph(_graph_def(lambda: tf.placeholder(tf.float32, name="x")), ["x:0"], ["x:0"], [])
    with pytest.raises(errors.InvalidArgumentError, match="expected 1 feed values, got 0"):
        c.run_graph(h, 1, [])


def test_kernel_error_names_op_and_task(cluster):
    def build():
        x = tf.placeholder(tf.float32, [None], name="x")
        tf.reshape(x, [5], name="bad_reshape")
    c = client(cluster, 1)
    h = c.register_graph(_graph_def(build), ["x:0"], ["bad_reshape:0"], [])
    with pytest.raises(errors.InvalidArgumentError) as ei:
        c.run_graph(h, 1, [np.zeros(3, np.float32)])
    assert "bad_reshape" in str(ei.value) and T1 in str(ei.value)
    unfed = c.register_graph(_graph_def(build), [], ["bad_reshape:0"], [])
    with pytest.raises(errors.InvalidArgumentError, match=r"must feed a value for placeholder tensor 'x'(.|\n)*" + T1):
        c.run_graph(unfed, 2, [])


def test_unknown_op_type_is_not_found(cluster):
    from tensorweave.framework.graph_def import GraphDef, NodeDef
    gd = GraphDef([NodeDef("n", "NoSuchOpType", (), "", {"_num_outputs": 1})])
    with pytest.raises(errors.NotFoundError, match="NoSuchOpType"):
        client(cluster, 0).register_graph(gd, [], ["n:0"], [])


def _send_recv_graphs(step_tensor="edge"):
    def producer():
        x = tf.placeholder(tf.float32, [None], name="x")
        sendrecv_ops.send(tf.add(x, tf.constant(1.0)), step_tensor, T0, T1, name="send")

    def consumer():
        r = sendrecv_ops.recv(tf.float32, step_tensor, T0, T1, shape=[None], name="recv")
        tf.add(r, tf.constant(10.0), name="out")
    return _graph_def(producer), _graph_def(consumer)


def _run_async(fn):
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - reported to the test
            box["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


def test_send_recv_between_processes(cluster):
    c0, c1 = client(cluster, 0), client(cluster, 1)
    g_send, g_recv = _send_recv_graphs()
    h0 = c0.register_graph(g_send, ["x:0"], [], ["send"])
    h1 = c1.register_graph(g_recv, [], ["out:0"], [])
    for step in (11, 12):
        # step 11: the Recv waits before the value is sent; step 12: the value waits for the Recv
        if step == 11:
            t, box = _run_async(lambda: c1.run_graph(h1, 11, []))
            time.sleep(0.2)
            c0.run_graph(h0, 11, [np.arange(4, dtype=np.float32)])
            t.join(10)
            (out,), _ = box["value"]
        else:
            c0.run_graph(h0, 12, [np.arange(4, dtype=np.float32) * 2])
            (out,), _ = c1.run_graph(h1, 12, [])
        expect = np.arange(4, dtype=np.float32) * (1 if step == 11 else 2) + 11
        np.testing.assert_array_equal(out, expect)
        assert out.dtype == np.float32


def test_abort_releases_blocked_recv(cluster):
    c1 = client(cluster, 1)
    _, g_recv = _send_recv_graphs()
    h1 = c1.register_graph(g_recv, [], ["out:0"], [])
    t, box = _run_async(lambda: c1.run_graph(h1, 77, []))
    time.sleep(0.3)
    assert t.is_alive()
    start = time.monotonic()
    c1.abort_step(77, errors.ABORTED, "step 77 aborted by the test")
    t.join(5)
    assert not t.is_alive() and time.monotonic() - start < 2.0
    err = box["error"]
    assert isinstance(err, errors.AbortedError)
    assert "step 77 aborted by the test" in str(err) and "recv" in str(err) and T1 in str(err)
    # a value sent for the aborted step afterwards is dropped; the task still serves other steps
    assert c1.get_status()["active_steps"] == 0


def test_recv_deadline(cluster):
    c1 = client(cluster, 1)
    _, g_recv = _send_recv_graphs()
    h1 = c1.register_graph(g_recv, [], ["out:0"], [])
    start = time.monotonic()
    with pytest.raises(errors.DeadlineExceededError, match=r"(?s)edge.*node recv \(op: _Recv\) on " + T1):
        c1.run_graph(h1, 5, [], timeout_s=0.3)
    assert time.monotonic() - start < 3.0


def test_blocked_request_does_not_starve_others(cluster):
    c1 = client(cluster, 1)
    _, g_recv = _send_recv_graphs()
    h1 = c1.register_graph(g_recv, [], ["out:0"], [])
    blocked = [_run_async(lambda s=s: c1.run_graph(h1, 1000 + s, [])) for s in range(20)]
    time.sleep(0.2)
    start = time.monotonic()
    assert c1.get_status()["active_steps"] == 20
    assert time.monotonic() - start < 1.0
    for s in range(20):
        c1.abort_step(1000 + s, errors.CANCELLED, "done")
    for t, box in blocked:
        t.join(5)
        assert isinstance(box["error"], errors.CancelledError)


def test_state_shared_across_clients(cluster):
    def build():
        v = tf.Variable(np.float32(0.0), name="counter")
        tf.assign_add(v, np.float32(1.0), name="inc")
        tf.identity(v.read_value(), name="value")
        tf.variables_initializer([v], name="init")
    a = WorkerClient.for_address(cluster.address("local", 1), T1, 5.0)
    b = WorkerClient.for_address(cluster.address("local", 1), T1, 4.0)   # its own channel
    ga, gb = _graph_def(build), _graph_def(build)
    a.run_graph(a.register_graph(ga, [], [], ["init"]), 1, [])
    inc_b = b.register_graph(gb, [], [], ["inc"])
    for s in range(3):
        b.run_graph(inc_b, 10 + s, [])
    (val,), _ = a.run_graph(a.register_graph(ga, [], ["value:0"], []), 20, [])
    assert float(val) == 3.0
    isolated = b.register_graph(gb, [], ["value:0"], [], session_handle="s1", config={"isolate_session_state": True})
    with pytest.raises(errors.FailedPreconditionError):
        b.run_graph(isolated, 21, [])
    b.reset()
    with pytest.raises(errors.NotFoundError):
        b.run_graph(inc_b, 22, [])


def test_a_same_host_step_read_after_its_deadline_is_not_run(cluster, monkeypatch):
    """A task that was stopped or starved reads a step's request late: past the deadline its
    client set (a wall-clock time: one clock on one host), the step changes nothing."""
    def build():
        v = tf.Variable(np.float32(0), name="v")
        tf.assign_add(v, 1.0, name="inc")
    c = client(cluster, 0)
    gd = _graph_def(build)
    h = c.register_graph(gd, [], ["inc:0"], [])
    c.run_graph(c.register_graph(gd, [], [], ["v/Assign"]), 1, [])
    assert c._run_graph_args(h, 2, [], False, 5.0, c.incarnation)["expires_at"] > time.time()
    late = c._run_graph_args

    def args_that_waited_unread(*a):
        args = late(*a)
        args["expires_at"] -= 10.0   # as if read 10 s after it was sent: past its 5 s
        return args
    monkeypatch.setattr(c, "_run_graph_args", args_that_waited_unread)
    with pytest.raises(errors.DeadlineExceededError, match="after its deadline"):
        c.run_graph(h, 2, [], timeout_s=5.0)
    monkeypatch.undo()
    (value,), _ = c.run_graph(h, 3, [], timeout_s=5.0)
    assert value == 1.0   # the late step never ran
