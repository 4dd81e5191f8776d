"""Server lifecycle: in-process servers, construction errors, SIGTERM, dead and restarted
tasks, and a client that dies mid-step."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed import worker as worker_mod
from tensorweave.distributed.server import Server
from tensorweave.distributed.worker import WorkerClient
from tensorweave.framework import errors
from tensorweave.framework.graph_def import graph_to_graph_def
from tensorweave.ops import sendrecv as sendrecv_ops

T0, T1 = "/job:local/replica:0/task:0", "/job:local/replica:0/task:1"


def _identity_graph():
    g = tf.Graph()
    with g.as_default():
        tf.identity(tf.placeholder(tf.float32, name="x"), name="y")
    return graph_to_graph_def(g)


def _recv_graph():
    g = tf.Graph()
    with g.as_default():
        sendrecv_ops.recv(tf.float32, "edge", T0, T1, name="recv")
    return graph_to_graph_def(g)


def test_create_local_server_in_process():
    server = Server.create_local_server()
    try:
        assert server.target.startswith("grpc://localhost:")
        sd = server.server_def
        assert sd.job_name == "local" and sd.task_index == 0 and sd.protocol == "grpc"
        address = server.target[len("grpc://"):]
        assert [(j.name, dict(j.tasks)) for j in sd.cluster.job] == [("local", {0: address})]
        c = WorkerClient.for_address(server.target, "/job:local/replica:0/task:0")
        assert worker_mod.local_service(server.target) is server.service   # called without a socket
        h = c.register_graph(_identity_graph(), ["x:0"], ["y:0"], [])
        x = np.arange(3, dtype=np.float32)
        (y,), _ = c.run_graph(h, 1, [x])
        assert y is x   # no serialization on the in-process path
        remote = worker_mod.Channel(address, "/job:local/replica:0/task:0", 5.0)
        try:
            assert remote.call("get_status", {})["incarnation"] == c.incarnation   # and it serves sockets
        finally:
            remote.close()
    finally:
        server.stop()
    assert worker_mod.local_service(server.target) is None


def test_join_returns_after_stop():
    server = Server.create_local_server()
    t = threading.Thread(target=server.join, daemon=True)
    t.start()
    time.sleep(0.1)
    assert t.is_alive()
    server.stop()
    t.join(3)
    assert not t.is_alive()


def test_start_false_and_tf_train_alias():
    server = tf.train.Server.create_local_server(start=False)
    try:
        assert worker_mod.local_service(server.target) is None
        server.start()
        server.start()   # idempotent
        assert worker_mod.local_service(server.target) is server.service
    finally:
        server.stop()


def test_construction_errors():
    s = socket.socket()
    s.bind(("0.0.0.0", 0))
    s.listen(1)
    port = s.getsockname()[1]
    try:
        with pytest.raises(errors.UnknownError, match=f"localhost:{port}"):
            Server({"local": [f"localhost:{port}"]}, job_name="local", task_index=0)
    finally:
        s.close()
    spec = {"ps": ["localhost:1"], "worker": ["localhost:2"]}
    with pytest.raises(ValueError, match="'chief' is not in the cluster"):
        Server(spec, job_name="chief", task_index=0)
    with pytest.raises(ValueError, match="Task 3 is not in job 'worker'"):
        Server(spec, job_name="worker", task_index=3)
    with pytest.raises(ValueError, match="explicit `job_name`"):
        Server(spec)


def test_sigterm_exits_cleanly(start_cluster):
    c = start_cluster({"local": 1})     # started as `python -m tensorweave.distributed.server`
    assert c.terminate("local", 0) == 0
    assert "Warning" not in c.stderr("local", 0)   # runpy's RuntimeWarning included


def test_killed_task_is_unavailable_within_bound(start_cluster):
    c = start_cluster({"local": 2})
    cl = WorkerClient.for_address(c.address("local", 1), T1, connect_timeout_s=1.0)
    h = cl.register_graph(_recv_graph(), [], ["recv:0"], [])
    # a request in flight when its task dies
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("r", _catch(lambda: cl.run_graph(h, 1, []))), daemon=True)
    t.start()
    time.sleep(0.3)
    start = time.monotonic()
    c.kill("local", 1)
    t.join(10)
    assert isinstance(box["r"], errors.UnavailableError) and T1 in str(box["r"])
    assert time.monotonic() - start < 4.0
    # a new request to the dead task
    start = time.monotonic()
    with pytest.raises(errors.UnavailableError, match=f"{T1} at {c.address('local', 1)}"):
        cl.get_status()
    assert time.monotonic() - start < 3.0


def _catch(fn):
    try:
        return fn()
    except errors.OpError as e:
        return e


def test_restarted_task_is_aborted(start_cluster):
    c = start_cluster({"local": 1})
    cl = WorkerClient.for_address(c.address("local", 0), T0, connect_timeout_s=5.0)
    h = cl.register_graph(_identity_graph(), ["x:0"], ["y:0"], [])
    old = cl.incarnation
    c.restart("local", 0)
    with pytest.raises(errors.AbortedError, match=r"restarted \(incarnation changed"):
        cl.run_graph(h, 2, [np.float32(1.0)])
    with pytest.raises(errors.AbortedError, match="incarnation changed"):
        cl.register_graph(_identity_graph(), ["x:0"], ["y:0"], [])
    fresh = WorkerClient.for_address(c.address("local", 0), T0, connect_timeout_s=5.0)
    assert fresh.incarnation != old
    h2 = fresh.register_graph(_identity_graph(), ["x:0"], ["y:0"], [])
    assert float(fresh.run_graph(h2, 3, [np.float32(4.0)])[0][0]) == 4.0


CLIENT = r"""
import sys
from tensorweave.distributed.worker import WorkerClient
from tensorweave.framework.graph_def import GraphDef, NodeDef
gd = GraphDef([NodeDef("recv", "_Recv", (), "", {"tensor_name": "edge", "send_device": "%s",
               "recv_device": "%s", "tensor_type": "float32", "_num_outputs": 1})])
c = WorkerClient.for_address(sys.argv[1], "%s", 5.0)
h = c.register_graph(gd, [], ["recv:0"], [])
print("RUNNING", flush=True)
c.run_graph(h, 99, [])
""" % (T0, T1, T1)


def test_client_dying_mid_step_is_reclaimed(start_cluster):
    c = start_cluster({"local": 2}, env={"TENSORWEAVE_CLIENT_LEASE_S": "1.0"})
    env = dict(os.environ, PYTHONPATH=c.env["PYTHONPATH"], TENSORWEAVE_PROBE_INTERVAL_S="0.2")
    proc = subprocess.Popen([sys.executable, "-c", CLIENT, c.address("local", 1)], stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout.readline().strip() == b"RUNNING"
        cl = WorkerClient.for_address(c.address("local", 1), T1, 5.0)
        deadline = time.monotonic() + 5
        while cl.get_status()["active_steps"] != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.5)   # longer than the lease: the live client keeps renewing it
        assert cl.get_status()["active_steps"] == 1
        proc.send_signal(signal.SIGKILL)
        proc.wait(5)
        deadline = time.monotonic() + 6
        while cl.get_status()["active_steps"] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert cl.get_status()["active_steps"] == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
