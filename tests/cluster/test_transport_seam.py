"""The transport seam (distributed/transports.py): a transport defined here, and only here,
registers itself and then carries a server's calls, replies, pushes, pings and cancels.

The fake moves each message as a Python list of frames through a queue; a pipe per direction
holds a byte per message waiting, which is what the server's IO role and the client's waits
poll. It knows nothing of ZeroMQ or of the Unix socket."""
from __future__ import annotations

import collections
import os
import select
import threading
import time
from typing import ClassVar

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed import sockets, transports, wire
from tensorweave.distributed.channel import Channel
from tensorweave.framework.graph_def import graph_to_graph_def
from tensorweave.ops import sendrecv as sendrecv_ops

T0 = "/job:local/replica:0/task:0"


class _Mailbox:
    """Messages one way; its pipe holds one byte per message waiting."""

    def __init__(self):
        self.messages: collections.deque = collections.deque()
        self.fd, self._write_fd = os.pipe()
        os.set_blocking(self.fd, False)
        self._poll = select.poll()
        self._poll.register(self.fd, select.POLLIN)

    def put(self, item) -> None:
        self.messages.append(item)
        os.write(self._write_fd, b"\0")

    def wait(self, timeout_ms: int) -> bool:
        return bool(self.messages) or bool(self._poll.poll(timeout_ms))

    def take(self):
        """(True, the item) or (False, None) when none waits."""
        if not self.messages:
            return False, None
        self._poll.poll(-1)   # (its byte follows a message seen here at once)
        os.read(self.fd, 1)
        return True, self.messages.popleft()

    def close(self) -> None:
        os.close(self.fd)
        os.close(self._write_fd)


class _ClientConn:
    """transports.Conn: the client's end of one fake connection."""

    ident = b""

    def __init__(self, listener: _Listener):
        self.rank = 0
        self.inbox, self.outbox = _Mailbox(), _Mailbox()
        self.poll_handle = self.inbox.fd
        self._closed = False
        listener.incoming(self)

    def encode(self, message) -> tuple:
        return wire.encode(message), (), 0

    def decode(self, frames):
        return wire.decode(frames, None)

    def send_message(self, frames, wait_s: float) -> None:
        self.outbox.put([bytes(f) for f in frames])

    def readable(self, timeout_ms: int) -> bool:
        return self.inbox.wait(timeout_ms)

    def recv_message(self, block: bool):
        if block:
            self.inbox.wait(-1)
        return self.inbox.take()[1]

    def ended(self) -> bool:
        return False

    def connected(self) -> bool:
        return True

    def cancel(self, rid: int) -> int:
        self.outbox.put(wire.encode({"m": "cancel", "a": {"id": rid}}))
        return 0

    def close(self, linger=None) -> None:
        if not self._closed:
            self._closed = True
            self.outbox.put(None)   # the server sees the end after what was sent before it


class _ServerConn:
    """The server's end of one fake connection: the origin of its requests."""

    def __init__(self, client: _ClientConn, listener: _Listener):
        self.client = client
        self.listener = listener
        self.closed = False
        self.calls: dict = {}
        self._lock = threading.Lock()   # (replies come from any thread; the end from the IO role)

    def decode(self, frames):
        return wire.decode(frames, None)

    def encode(self, message) -> tuple:
        return wire.encode(message), (), 0

    def reply(self, ident: bytes, frames, on_io: bool) -> None:
        with self._lock:
            if not self.closed:
                self.listener.replies.append(1)   # (before the client can see it)
                self.client.inbox.put([bytes(f) for f in frames])

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
        self.listener.server.unwatch(self.client.outbox.fd)
        self.client.inbox.close()
        self.client.outbox.close()

    def track(self, ident: bytes, rid: int, ctx) -> None:
        self.calls[rid] = ctx

    def untrack(self, ident: bytes, rid: int) -> None:
        self.calls.pop(rid, None)

    def tracked(self, ident: bytes, rid: int):
        return self.calls.get(rid)

    def on_event(self, ev: int) -> None:
        while True:
            got, frames = self.client.outbox.take()
            if not got:
                return
            if frames is None:   # the client's end: its calls still running are cancelled
                self.close()
                for ctx in list(self.calls.values()):
                    ctx.cancel()
                return
            self.listener.received.append(wire.decode(frames, None)["m"])
            self.listener.server.on_message(frames, self, b"")


class _Listener:
    def __init__(self, server, port: int):
        self.server = server
        self.port = port
        self.received: list = []   # the method of every message the server got this way
        self.replies: list = []   # one entry per reply sent this way
        self.conns: list = []
        self._new = _Mailbox()     # connections to adopt (on the IO role, which owns the poller)
        server.watch(self._new.fd, self._adopt)

    def incoming(self, client: _ClientConn) -> None:
        self._new.put(client)

    def _adopt(self, ev: int) -> None:
        while True:
            got, client = self._new.take()
            if not got:
                return
            conn = _ServerConn(client, self)
            self.conns.append(conn)
            self.server.watch(client.outbox.fd, conn.on_event)

    def woken(self) -> None:
        pass

    def renew(self, waits, now: float) -> None:
        pass

    def sweep(self, now: float) -> None:
        pass

    def close(self) -> None:
        _FakeTransport.listeners.pop(self.port, None)
        self.server.unwatch(self._new.fd)
        self._new.close()
        for conn in self.conns:
            conn.close()


class _Route:
    name = "fake"

    def __init__(self, port: int):
        self.port = port

    def available(self) -> bool:
        return self.port in _FakeTransport.listeners

    def connect(self, wait_s: float) -> _ClientConn:
        conn = _ClientConn(_FakeTransport.listeners[self.port])
        conn.rank = self.rank
        return conn

    def push_conn(self) -> _ClientConn:
        return self.connect(0.0)

    def give_back(self, conn: _ClientConn) -> None:
        conn.close()

    def close(self) -> None:
        pass


class _FakeTransport(transports.Transport):
    name = "fake"
    preference = 1000
    listeners: ClassVar[dict] = {}   # port -> _Listener

    def route(self, channel, address: str):
        port = transports.port_of(address)
        return _Route(port) if port in self.listeners else None

    def listen(self, server, address: str, bind: str):
        listener = self.listeners[transports.port_of(address)] = _Listener(server, transports.port_of(address))
        return listener


@pytest.fixture
def fake_served():
    transports.register(_FakeTransport())
    server = tf.train.Server.create_local_server()
    address = server.target[len("grpc://"):]
    listener = _FakeTransport.listeners[int(address.rpartition(":")[2])]
    try:
        yield address, listener
    finally:
        transports.unregister("fake")
        server.stop()
    assert int(address.rpartition(":")[2]) not in _FakeTransport.listeners   # the server closed its listener


def test_a_transport_registered_through_the_seam_carries_calls_replies_pushes_and_cancels(fake_served):
    address, listener = fake_served
    ch = Channel(address, T0, 5.0)   # (a WorkerClient would call a server of its own process directly)
    assert ch.preferred_route().name == "fake"
    assert ch.ping()["incarnation"] == ch.call("get_status", {})["incarnation"]

    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        tf.identity(x * 2.0, name="y")
        r = sendrecv_ops.recv(tf.float32, "edge", T0, T0, shape=[None], name="recv")
        tf.identity(r + 1.0, name="out")
    gd = graph_to_graph_def(g).to_dict()
    h = ch.call("register_graph", {"graph_def": gd, "feeds": ["x:0"], "fetches": ["y:0"]})
    for n in (0, 3, 100_000):
        x = np.arange(n, dtype=np.float32)
        r = ch.call("run_graph", {"graph_handle": h, "step_id": n + 1, "feed_values": [x]})
        np.testing.assert_array_equal(r["values"][0], x * 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="expected 1 feed"):
        ch.call("run_graph", {"graph_handle": h, "step_id": 99, "feed_values": []})   # an error reply

    # A request whose reply is awaited later, fed by a one-way push.
    hr = ch.call("register_graph", {"graph_def": gd, "feeds": [], "fetches": ["out:0"]})
    pending = ch.start("run_graph", {"graph_handle": hr, "step_id": 200, "feed_values": []})
    ch.push("recv_tensor", [T0, T0, "edge", 200, np.full(3, 2.0, np.float32)])
    np.testing.assert_array_equal(pending.result()["values"][0], [3, 3, 3])

    # A call past its deadline is cancelled on the server through the fake connection.
    with pytest.raises(tf.errors.DeadlineExceededError):
        ch.call("run_graph", {"graph_handle": hr, "step_id": 201, "feed_values": []}, timeout_s=0.3)
    deadline = time.monotonic() + 5
    while ch.call("get_status", {})["active_steps"]:
        assert time.monotonic() < deadline, "the timed-out step was not cancelled"
        time.sleep(0.02)

    counts = collections.Counter(listener.received)
    assert counts["ping"] == 1 and counts["recv_tensor"] == 1 and counts["cancel"] == 1
    assert counts["register_graph"] == 2 and counts["run_graph"] == 6 and counts["get_status"] >= 2
    requests = sum(counts.values()) - counts["recv_tensor"] - counts["cancel"]
    assert requests - 1 <= len(listener.replies) <= requests   # (the cancelled call's reply may find its client gone)
    ch.close()


def test_an_unregistered_transport_is_no_longer_chosen(fake_served):
    address, _ = fake_served
    transports.unregister("fake")
    ch = Channel(address, T0, 5.0)
    assert ch.preferred_route().name != "fake"
    assert ch.call("get_status", {})["task"] == 0
    ch.close()


def test_threads_share_a_channel_over_the_fake(fake_served):
    address, listener = fake_served
    ch = Channel(address, T0, 5.0)
    errors: list = []

    def calls():
        try:
            for _ in range(20):
                assert ch.call("get_status", {})["task"] == 0
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=calls) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and collections.Counter(listener.received)["get_status"] == 80
    ch.close()


def test_the_in_process_transport_serves_a_server_of_its_own_process(monkeypatch):
    monkeypatch.setattr(sockets, "TRANSPORT", "inproc")
    server = tf.train.Server.create_local_server()
    ch = Channel(server.target, T0, 5.0)
    try:
        assert ch.preferred_route().name == "inproc"
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float32, [None], name="x")
            tf.identity(x * 2.0, name="y")
            sendrecv_ops.recv(tf.float32, "edge", T0, T0, shape=[None], name="recv")
        gd = graph_to_graph_def(g).to_dict()
        h = ch.call("register_graph", {"graph_def": gd, "feeds": ["x:0"], "fetches": ["y:0"]})
        for n in (3, 3 << 20):   # inline, and read straight into its own buffer
            x = np.arange(n, dtype=np.float32)
            r = ch.call("run_graph", {"graph_handle": h, "step_id": n, "feed_values": [x]})
            np.testing.assert_array_equal(r["values"][0], x * 2)
        hr = ch.call("register_graph", {"graph_def": gd, "feeds": [], "fetches": ["recv:0"]})
        pending = ch.start("run_graph", {"graph_handle": hr, "step_id": 7, "feed_values": []})
        ch.push("recv_tensor", [T0, T0, "edge", 7, np.ones(2, np.float32)])
        np.testing.assert_array_equal(pending.result()["values"][0], [1, 1])
        pending = ch.start("run_graph", {"graph_handle": hr, "step_id": 8, "feed_values": []})
        deadline = time.monotonic() + 5
        while ch.call("get_status", {})["active_steps"] != 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        pending.sock.close()   # the client goes away without a word: its call is cancelled at once
        while ch.call("get_status", {})["active_steps"]:
            assert time.monotonic() < deadline, "the blocked step was not cancelled"
            time.sleep(0.02)
    finally:
        ch.close()
        server.stop()


def test_a_wake_up_sending_when_the_server_stops_is_not_closed_under_it():
    """The IO role's last holder closes every thread's wake-up socket, and libzmq aborts the
    process when a socket is closed while its thread sends on it (a stop() racing the role
    thread's close killed a test worker once): the close waits for the send, and a wake-up after
    it does nothing."""
    server = tf.train.Server.create_local_server()
    transport = server._transport
    sending, release, events = threading.Event(), threading.Event(), []

    class _SlowPush:   # (a thread's PUSH socket, caught mid-send)
        def send(self, *args):
            sending.set()
            release.wait(5)
            events.append("sent")

        def close(self, linger=None):
            events.append("closed")

    def wake_slowly():
        transport._local.push = _SlowPush()
        with transport._push_lock:
            transport._push_sockets.append(transport._local.push)
        transport.wake_io()

    waker = threading.Thread(target=wake_slowly)
    waker.start()
    assert sending.wait(5)
    stopper = threading.Thread(target=server.stop)
    stopper.start()
    deadline = time.monotonic() + 1.0   # (time for the role thread to reach its close)
    while "closed" not in events and time.monotonic() < deadline:
        time.sleep(0.01)
    release.set()
    waker.join(5)
    stopper.join(10)
    assert not stopper.is_alive() and events == ["sent", "closed"]
    transport.wake_io()   # (after the close: no new socket, no error)
    assert transport._push_sockets is None
