"""The two transports between processes on one host: the Unix-socket fast path (uds.py, the
default) and ZeroMQ ipc:// (TENSORWEAVE_TRANSPORT=ipc); both carry the same messages."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed import channel as channel_mod
from tensorweave.distributed import sockets, uds
from tensorweave.distributed.cluster import free_ports
from tensorweave.distributed.worker import WorkerClient
from tensorweave.framework.graph_def import graph_to_graph_def
from tensorweave.ops import sendrecv as sendrecv_ops

T0, T1 = "/job:local/replica:0/task:0", "/job:local/replica:0/task:1"


def _echo_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        tf.identity(x * 2.0, name="y")
        s = tf.placeholder(tf.string, [None], name="s")
        tf.identity(s, name="s_out")
    return graph_to_graph_def(g)


def _round_trips(c, mode: str) -> None:
    ch = channel_mod.Channel(c.address("local", 1), T1, 5.0)
    assert (ch.preferred_route().name == "unix") == (mode == "uds")
    client = WorkerClient.for_address(c.address("local", 1), T1, 5.0)
    client._channel = ch
    h = client.register_graph(_echo_graph(), ["x:0", "s:0"], ["y:0", "s_out:0"], [])
    for n in (0, 3, 100_000, 3 << 20):   # empty, inline, one frame, read straight into its buffer
        x = np.arange(n, dtype=np.float32)
        (y, s), _ = client.run_graph(h, n + 1, [x, np.array([b"a", b"\x00b"], dtype=object)])
        assert y.dtype == np.float32 and y.shape == (n,)
        np.testing.assert_array_equal(y, x * 2)
        assert s.tolist() == [b"a", b"\x00b"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="expected 2 feed values"):
        client.run_graph(h, 99, [])
    # a second request on the same (pooled) connection after an error reply
    (y, _), _ = client.run_graph(h, 100, [np.ones(2, np.float32), np.array([b""], dtype=object)])
    np.testing.assert_array_equal(y, [2, 2])
    ch.close()


def test_same_host_calls_use_the_unix_socket(start_cluster):
    c = start_cluster({"local": 2})
    port = int(c.address("local", 1).rpartition(":")[2])
    assert sockets.uds_path_of(c.address("local", 1)) == sockets.uds_path_for_port(port)
    assert sockets.uds_path_of("tcp://" + c.address("local", 1)) is None   # an explicit endpoint keeps ZeroMQ
    _round_trips(c, "uds")


def test_zeromq_ipc_when_asked(start_cluster, monkeypatch):
    c = start_cluster({"local": 2}, env={"TENSORWEAVE_TRANSPORT": "ipc"})
    monkeypatch.setattr(sockets, "TRANSPORT", "ipc")
    _round_trips(c, "ipc")


def test_pushes_over_the_unix_socket_and_a_restarted_peer(start_cluster):
    c = start_cluster({"local": 2})
    g = tf.Graph()
    with g.as_default():
        r = sendrecv_ops.recv(tf.float32, "edge", T0, T1, shape=[None], name="recv")
        tf.identity(r, name="out")
    c1 = WorkerClient.for_address(c.address("local", 1), T1, 5.0)
    h = c1.register_graph(graph_to_graph_def(g), [], ["out:0"], [])
    ch = channel_mod.Channel(c.address("local", 1), T1, 5.0)
    for step in (1, 2):
        pending = c1.start_run_graph(h, step, [])
        ch.push("recv_tensor", [T0, T1, "edge", step, np.full(3, step, np.float32)])
        np.testing.assert_array_equal(pending.result()["values"][0], [step] * 3)
    c.restart("local", 1)
    # the pooled connections of the old process are found dead and replaced
    c1 = WorkerClient.for_address(c.address("local", 1), T1, 5.0)
    h = c1.register_graph(graph_to_graph_def(g), [], ["out:0"], [])
    pending = c1.start_run_graph(h, 3, [])
    ch.push("recv_tensor", [T0, T1, "edge", 3, np.full(3, 3, np.float32)])
    np.testing.assert_array_equal(pending.result()["values"][0], [3, 3, 3])
    ch.close()


def test_a_client_connection_that_closes_cancels_its_call(start_cluster):
    c = start_cluster({"local": 2})
    g = tf.Graph()
    with g.as_default():
        sendrecv_ops.recv(tf.float32, "never_sent", T0, T1, shape=[None], name="recv")
    c1 = WorkerClient.for_address(c.address("local", 1), T1, 5.0)
    h = c1.register_graph(graph_to_graph_def(g), [], ["recv:0"], [])
    ch = channel_mod.Channel(c.address("local", 1), T1, 5.0)
    pending = ch.start("run_graph", {"graph_handle": h, "step_id": 5, "feed_values": []})
    deadline = time.monotonic() + 5
    while c1.get_status()["active_steps"] != 1:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    pending.sock.close()     # the client goes away without a word
    while c1.get_status()["active_steps"] != 0:   # not after a lease: at once
        assert time.monotonic() < deadline, "the blocked step was not cancelled"
        time.sleep(0.02)


def test_garbage_on_the_unix_socket_is_dropped_and_the_server_serves_on(start_cluster):
    c = start_cluster({"local": 1})
    port = int(c.address("local", 0).rpartition(":")[2])
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sockets.uds_path_for_port(port))
    s.sendall(b"\xff" * 64)   # a frame count beyond any limit
    s.settimeout(5)
    assert s.recv(10) == b""   # the server hangs up
    s.close()
    assert WorkerClient.for_address(c.address("local", 0), T0, 5.0).get_status()["task"] == 0


def test_a_peer_that_starts_after_its_client_looked_is_still_reached_over_its_unix_socket():
    port = free_ports(1)[0]
    address = f"localhost:{port}"
    try:
        os.unlink(sockets.uds_path_for_port(port))   # left by a killed server that had this port
    except FileNotFoundError:
        pass
    ch = channel_mod.Channel(address, "/job:late/replica:0/task:0", 10.0)
    assert ch.preferred_route().name == "zeromq"   # not listening yet
    server = tf.train.Server(tf.train.ClusterSpec({"late": [address]}), job_name="late", task_index=0)
    try:
        assert ch.call("get_status", {})["job"] == "late"
        assert ch.preferred_route().path == sockets.uds_path_for_port(int(address.rpartition(":")[2]))
        assert [type(s) for s in ch._free] == [uds.Conn]
    finally:
        ch.close()
        server.stop()


def test_a_socket_file_nobody_listens_on_sends_calls_by_tcp_at_once(start_cluster, tmp_path):
    """A killed server leaves its socket file; another server on that port whose file lies elsewhere
    (another TMPDIR) is reached by tcp at once, not after the connect timeout."""
    c = start_cluster({"local": 1}, env={"TMPDIR": str(tmp_path)})
    address = c.address("local", 0)
    stale = sockets.uds_path_for_port(int(address.rpartition(":")[2]))
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(stale)
    except FileNotFoundError:
        pass
    leftover.bind(stale)
    leftover.close()                      # the file stays, with nobody listening on it
    ch = channel_mod.Channel(address, T0, 30.0)
    try:
        t0 = time.monotonic()
        assert ch.call("get_status", {})["job"] == "local"
        assert ch.call("get_status", {})["job"] == "local"
        assert time.monotonic() - t0 < 5
        assert ch.preferred_route().name == "zeromq" and all(type(s) is not uds.Conn for s in ch._free)
    finally:
        ch.close()
        os.unlink(stale)


def _cpu_s(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")   # utime + stime


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads a process's CPU time from /proc")
def test_a_task_idle_after_a_burst_of_steps_spends_no_cpu_waiting(start_cluster):
    # A wait spins (polls without sleeping) only while the waits before it were short: the
    # server's, once requests stop coming, turns it off.
    c = start_cluster({"local": 2})
    client = WorkerClient.for_address(c.address("local", 1), T1, 5.0)
    h = client.register_graph(_echo_graph(), ["x:0", "s:0"], ["y:0", "s_out:0"], [])
    feeds = [np.ones(2, np.float32), np.array([b""], dtype=object)]
    for step in range(300):
        client.run_graph(h, step, feeds)
    time.sleep(0.5)
    pid = c.procs[("local", 1)].pid
    before = _cpu_s(pid)
    time.sleep(2.0)
    assert _cpu_s(pid) - before < 0.15


_RETRYING_CLIENT = """
import time, zmq
import tensorweave as tf
from tensorweave.distributed import channel, zeromq
configure = zeromq._configure_dealer
def retry_at_once(sock):   # thousands of connect attempts (and monitor events) a second
    configure(sock)
    sock.setsockopt(zmq.RECONNECT_IVL, 1)
    sock.setsockopt(zmq.RECONNECT_IVL_MAX, 1)
zeromq._configure_dealer = retry_at_once
T0 = "/job:local/replica:0/task:0"
gone = tf.train.Server.create_local_server()
idle = channel.Channel("tcp://" + gone.target.rpartition("/")[2], T0, 5.0)
assert idle.call("get_status", {})["job"] == "local"   # (its connection stays in the pool)
gone.stop()
time.sleep(3)
server = tf.train.Server.create_local_server()
ch = channel.Channel("tcp://" + server.target.rpartition("/")[2], T0, 5.0)
assert ch.call("get_status", {})["job"] == "local"
ch.close(); server.stop(); idle.close()
print("served on")
"""


def test_a_connection_retrying_a_gone_peer_does_not_stop_the_process_s_other_connections():
    # ZeroMQ's one IO thread blocks, for every socket of the process, on a connection monitor
    # whose queue is full; a pooled connection to a peer that went away retries without end,
    # and nobody reads its monitor while it sits in the pool. (A process: the defect hangs it.)
    try:
        done = subprocess.run([sys.executable, "-c", _RETRYING_CLIENT], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the process hung: its connections stopped once the idle one had retried for a while")
    assert done.returncode == 0 and done.stdout.strip() == "served on", done.stderr[-3000:]


def _serve(argv_prefix: list, job: str, port: int) -> subprocess.Popen:
    return subprocess.Popen(argv_prefix + [sys.executable, "-m", "tensorweave.cli", "server",
                                           "--cluster", f'{{"{job}": ["localhost:{port}"]}}', "--job_name", job,
                                           "--task_index", "0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def test_the_same_port_in_another_network_namespace_is_another_server(netns_lab):
    # Two network stacks sharing one /tmp (containers, a pod beside its host): each stack's
    # clients reach its own server on that port, by its Unix socket.
    lab = netns_lab(["other"])
    port = free_ports(1)[0]
    in_other = ["ip", "netns", "exec", lab.namespaces["other"]]   # (the same TMPDIR as this process)
    servers = [_serve(in_other, "other", port), _serve([], "here", port)]
    ask = ("import sys, tensorweave.distributed.channel as c; "
           "ch = c.Channel(sys.argv[1], '/job:other/replica:0/task:0', 60.0); "
           "print(ch.call('get_status', {})['job'], ch.preferred_route().name)")
    try:
        ch = channel_mod.Channel(f"localhost:{port}", "/job:here/replica:0/task:0", 60.0)
        assert ch.call("get_status", {})["job"] == "here"
        assert ch.preferred_route().name == "unix"
        ch.close()
        there = subprocess.run(in_other + [sys.executable, "-c", ask, f"localhost:{port}"], capture_output=True,
                               text=True, timeout=120)
        assert there.stdout.split() == ["other", "unix"], there.stderr[-2000:]
    finally:
        for s in servers:
            os.killpg(s.pid, 9)
            s.wait(10)
            s.stderr.close()
