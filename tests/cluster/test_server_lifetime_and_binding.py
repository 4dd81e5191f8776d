"""A Server lives until it is stopped, kept or not, and join() returns once it really stopped
(issue 15, defect 8); a task listens where its ClusterSpec entry says when that is this
host's address, on all interfaces for a host name, and where TENSORWEAVE_BIND_ADDRESS says
when set (defect 9, binding)."""
from __future__ import annotations

import gc
import socket
import threading

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed import channel as channel_mod
from tensorweave.distributed import server as server_mod
from tensorweave.distributed.cluster import free_ports
from tensorweave.distributed.server import Server, bind_endpoint
from tensorweave.framework.graph_def import graph_to_graph_def

from raw_peer import TRANSPORTS

T0 = "/job:local/replica:0/task:0"


def _step_over(transport: str, address: str) -> np.ndarray:
    g = tf.Graph()
    with g.as_default():
        tf.identity(tf.placeholder(tf.float32, [None], name="x") * 2.0, name="y")
    ch = channel_mod.Channel(("tcp://" if transport == "tcp" else "") + address, T0, 5.0)
    try:
        h = ch.call("register_graph", {"graph_def": graph_to_graph_def(g).to_dict(), "feeds": ["x:0"],
                                       "fetches": ["y:0"], "client": "lifetime"})
        return ch.call("run_graph", {"graph_handle": h, "step_id": 1,
                                     "feed_values": [np.arange(3, dtype=np.float32)]})["values"][0]
    finally:
        ch.close()


def _stop_server_at(port: int) -> None:
    for s in list(server_mod._LIVE_SERVERS):
        if s.target.endswith(f":{port}"):
            s.stop()


# -- defect 8: a server the program does not keep was shut down by __del__ ------------------------
def test_a_server_the_program_does_not_keep_serves_on():
    port = free_ports(1)[0]
    tf.train.Server(tf.train.ClusterSpec({"local": [f"localhost:{port}"]}), job_name="local", task_index=0)
    gc.collect()
    try:
        for transport in TRANSPORTS:
            np.testing.assert_array_equal(_step_over(transport, f"localhost:{port}"), [0, 2, 4])
    finally:
        _stop_server_at(port)


def test_join_returns_only_once_the_server_really_stopped():
    server = Server.create_local_server()
    port = int(server.target.rpartition(":")[2])
    joined = threading.Event()
    t = threading.Thread(target=lambda: (server.join(), joined.set()), daemon=True)
    t.start()
    assert not joined.wait(0.5)
    assert server.serving
    server.stop()
    assert joined.wait(5)
    assert not server.serving
    with pytest.raises(OSError):   # it listens no more
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


# -- defect 9: binding ------------------------------------------------------------------------------
def _other_local_address():
    """An address of this host that is not a loopback one, or None."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))   # (no packet is sent: this only picks a route)
            ip = s.getsockname()[0]
    except OSError:
        return None
    return None if ip.startswith("127.") or ip == "0.0.0.0" else ip


def _accepts(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


def test_the_bind_rule():
    assert bind_endpoint("localhost:2222") == "tcp://127.0.0.1:2222"
    assert bind_endpoint("127.0.0.2:2222") == "tcp://127.0.0.2:2222"
    assert bind_endpoint("[::1]:2222") == "tcp://[::1]:2222"
    assert bind_endpoint("ps-0.ps.default.svc.cluster.local:2222") == "tcp://*:2222"   # a name: all interfaces
    assert bind_endpoint("203.0.113.7:2222") == "tcp://*:2222"   # not this host's: all interfaces
    assert bind_endpoint("0.0.0.0:2222") == "tcp://*:2222"
    assert bind_endpoint("localhost:2222", "*") == "tcp://*:2222"
    assert bind_endpoint("ps-0:2222", "10.1.2.3") == "tcp://10.1.2.3:2222"


def test_a_loopback_address_is_not_reachable_from_other_interfaces(monkeypatch):
    other = _other_local_address()
    if other is None:
        pytest.skip("this host has no address but loopback")
    port = free_ports(1)[0]
    server = Server({"local": [f"localhost:{port}"]}, job_name="local", task_index=0)
    try:
        assert _accepts("127.0.0.1", port)
        assert not _accepts(other, port)
    finally:
        server.stop()
    monkeypatch.setenv("TENSORWEAVE_BIND_ADDRESS", "*")   # the explicit setting wins
    port = free_ports(1)[0]
    server = Server({"local": [f"localhost:{port}"]}, job_name="local", task_index=0)
    try:
        assert _accepts(other, port) and _accepts("127.0.0.1", port)
    finally:
        server.stop()


def test_a_local_interface_address_binds_that_address_only():
    other = _other_local_address()
    if other is None:
        pytest.skip("this host has no address but loopback")
    port = free_ports(1)[0]
    server = Server({"local": [f"{other}:{port}"]}, job_name="local", task_index=0)
    try:
        assert _accepts(other, port)
        assert not _accepts("127.0.0.1", port)
        assert server.target == f"grpc://{other}:{port}"
        np.testing.assert_array_equal(_step_over("tcp", f"{other}:{port}"), [0, 2, 4])
    finally:
        server.stop()
