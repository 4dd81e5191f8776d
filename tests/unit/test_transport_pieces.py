"""Pieces of the transport's server side, without a server (issue 15): the request pool's
limit, the Unix-socket server connection's non-blocking reads and queued writes, and the
waits that spin before they sleep."""
from __future__ import annotations

import select
import socket
import struct
import threading
import time
import types

import msgpack

from tensorweave.distributed import sockets, uds
from tensorweave.distributed import pool as pool_mod
from tensorweave.distributed.pool import RequestPool
from tensorweave.framework import limits


# -- the request pool ------------------------------------------------------------------------------
def test_the_pool_waits_a_little_at_its_limit_then_refuses():
    pool = RequestPool("test-pool", max_threads=2)
    release = threading.Event()
    ran, refused = [], []
    try:
        for i in range(2):
            pool.submit(lambda i=i: (release.wait(5), ran.append(i)), lambda: refused.append("busy"))
        pool.submit(lambda: ran.append("queued"), lambda: refused.append("queued"))   # waits for a thread
        pool.submit(lambda: ran.append("late"), lambda: refused.append("late"))
        assert pool.threads == 2
        pool.expire(time.monotonic())   # not waited long enough yet
        assert refused == []
        release.set()
        deadline = time.monotonic() + 5
        while len(ran) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sorted(map(str, ran)) == ["0", "1", "late", "queued"]   # finished threads took the waiting work
        release.clear()
        for i in range(3):
            pool.submit(lambda: release.wait(5), lambda i=i: refused.append(i))
        pool.expire(time.monotonic() + 10)   # the third waited past QUEUE_WAIT_S: refused
        assert refused == [2]
    finally:
        release.set()
        pool.stop()


# -- the Unix-socket server connection -------------------------------------------------------------
def _pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return uds.ServerConn(a), b


def _frame(frames):
    lens = [len(f) for f in frames]
    return struct.pack("<QI", sum(lens), len(frames)) + struct.pack(f"<{len(frames)}Q", *lens) + b"".join(frames)


def test_a_request_the_system_gives_no_thread_waits_for_one_or_is_refused(monkeypatch):
    pool = RequestPool("test-pool", max_threads=4)
    release = threading.Event()
    ran, refused = [], []
    try:
        pool.submit(lambda: (release.wait(5), ran.append("a")), lambda: refused.append("a"))
        real_thread = threading.Thread

        class NoThread(real_thread):
            def start(self):
                raise RuntimeError("can't start new thread")

        monkeypatch.setattr(pool_mod.threading, "Thread", NoThread)
        pool.submit(lambda: ran.append("b"), lambda: refused.append("b"))
        assert pool.threads == 1 and ran == []
        release.set()                       # a's thread, done, takes b
        deadline = time.monotonic() + 5
        while len(ran) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ran == ["a", "b"]
        release.clear()
        pool.submit(lambda: ran.append("c"), lambda: refused.append("c"))
        deadline = time.monotonic() + 5     # the idle thread takes c; then none is left to start
        while len(ran) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        pool.submit(lambda: release.wait(5), lambda: refused.append("d"))
        pool.submit(lambda: ran.append("e"), lambda: refused.append("e"))
        pool.expire(time.monotonic() + 10)
        assert refused == ["e"]             # waited past QUEUE_WAIT_S: its own refusal, not lost
    finally:
        release.set()
        pool.stop()



def test_a_server_connection_reads_what_comes_a_byte_at_a_time(limit):
    limit(limits.MESSAGE_BYTES, 1 << 22)
    conn, peer = _pair()
    try:
        big = bytes(range(256)) * 8192   # 2 MiB: read straight into its own buffer
        data = _frame([b"head", b"tail"]) + _frame([b"h2", big]) + _frame([b"h3"])
        got = []
        for i in range(0, 40):
            peer.send(data[i:i + 1])
            got += conn.pump()
        sender = threading.Thread(target=peer.sendall, args=(data[40:],))   # (more than the socket holds)
        sender.start()
        deadline = time.monotonic() + 10
        while len(got) < 3 and time.monotonic() < deadline:
            got += conn.pump()
        sender.join(5)
        assert [bytes(f) for f in got[0]] == [b"head", b"tail"]
        assert bytes(got[1][1]) == big and bytes(got[2][0]) == b"h3"
        assert conn.ended is None and not conn.mid_message()
        peer.send(data[:5])
        conn.pump()
        assert conn.mid_message()   # (a silent peer would stall here: the IO thread times it out)
    finally:
        peer.close()
        conn.close()


def test_a_peer_that_hung_up_is_read_to_its_end_with_what_it_sent_before():
    conn, peer = _pair()
    try:
        peer.sendall(_frame([b"asked"]))
        assert [bytes(f) for f in conn.pump()[0]] == [b"asked"] and conn.ended is None   # (no read past it)
        peer.sendall(_frame([b"then gave up"]))
        peer.close()
        got = conn.pump(hung_up=True)   # (the poll says so): the request comes with the end
        assert [bytes(f) for f in got[0]] == [b"then gave up"] and conn.ended is not None
    finally:
        conn.close()


def test_a_client_connection_waits_at_most_its_io_timeout_for_a_message_begun():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    conn = uds.Conn(a, io_timeout_s=0.2)
    try:
        b.sendall(_frame([b"whole"]))
        assert [bytes(f) for f in conn.read()] == [b"whole"]
        b.sendall(_frame([b"half of it"])[:-4])
        start = time.monotonic()
        try:
            conn.read()
            raise AssertionError("a message cut short was read")
        except TimeoutError:
            assert time.monotonic() - start < 2
    finally:
        conn.close()
        b.close()


def test_a_server_connection_skips_a_message_over_the_limit_and_answers_its_id(limit):
    limit(limits.MESSAGE_BYTES, 1 << 20)
    conn, peer = _pair()
    try:
        head = msgpack.packb({"id": 42, "m": "recv_tensor", "a": {}})
        sender = threading.Thread(target=peer.sendall, args=(_frame([head, b"\0" * (2 << 20)]) + _frame([b"next"]),))
        sender.start()
        got = []
        deadline = time.monotonic() + 5
        while len(got) < 2 and time.monotonic() < deadline:
            got += conn.pump()
        assert type(got[0]) is uds.Refused and got[0].request_id() == 42
        assert "max_message_bytes" in got[0].error.message
        assert [bytes(f) for f in got[1]] == [b"next"]   # in step again
        sender.join(5)
        peer.sendall(struct.pack("<QI", 5, 0))   # no frames: a broken framing ends the connection
        conn.pump()
        assert conn.ended is not None
    finally:
        peer.close()
        conn.close()


def test_replies_to_a_peer_that_does_not_read_are_queued_not_waited_for():
    conn, peer = _pair()
    try:
        reply = [b"x" * 60000]
        watch = False
        start = time.monotonic()
        for _ in range(40):   # ~2.4 MB: far more than the socket holds
            watch = conn.queue(reply, on_io_thread=True) or watch
        assert time.monotonic() - start < 1.0 and watch and conn.out_bytes > 0
        assert conn.output_stalled(time.monotonic() + 60, 30.0)
        received = 0
        peer.setblocking(False)
        while conn.out_bytes:
            try:
                received += len(peer.recv(1 << 20))
            except BlockingIOError:
                pass
            conn.on_writable()
        while True:
            try:
                chunk = peer.recv(1 << 20)
            except BlockingIOError:
                break
            received += len(chunk)
        assert received == 40 * (60000 + 12 + 8)
    finally:
        peer.close()
        conn.close()


def test_a_request_run_outside_the_pool_counts_against_its_limit():
    pool = RequestPool("test-claims", max_threads=2)
    release = threading.Event()
    ran = []
    try:
        assert pool.try_claim()   # (a transport IO-role thread runs one request itself)
        pool.submit(lambda: release.wait(5), lambda: ran.append("refused"))
        assert not pool.try_claim()   # two run: the limit
        pool.submit(lambda: ran.append("waited"), lambda: ran.append("refused"))
        pool.release_claim()          # the claimed request ended: the waiting one starts
        deadline = time.monotonic() + 5
        while not ran and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ran == ["waited"]
    finally:
        release.set()
        pool.stop()


# -- waits that spin before they sleep -------------------------------------------------------------
class _Poller:
    """A poller on a virtual clock (so a loaded machine cannot stretch a short wait into a long
    one): its fd becomes readable `delay` seconds after arm(delay); a poll that does not wait takes
    1 ms, one that waits returns when the fd is ready. It counts the polls that did not wait."""

    def __init__(self):
        self.now, self.ready_at, self.spins = 0.0, 0.0, 0

    def clock(self) -> float:
        return self.now

    def arm(self, delay):
        self.ready_at, self.spins = self.now + delay, 0

    def poll(self, timeout_ms):
        if timeout_ms == 0:
            self.spins += 1
            self.now += 0.001
        else:
            self.now = max(self.now, self.ready_at)
        return [(3, 1)] if self.now >= self.ready_at else []


def test_a_wait_spins_only_while_the_waits_before_it_were_short(monkeypatch):
    monkeypatch.setattr(sockets, "SPIN_S", 0.02)
    poller = _Poller()
    monkeypatch.setattr(sockets, "time", types.SimpleNamespace(perf_counter=poller.clock))
    waiter = sockets.SpinPoll(poller)
    poller.arm(0.005)
    assert waiter.poll(1000) == [(3, 1)] and poller.spins > 1       # spins at first, and finds it
    poller.arm(0.1)
    assert waiter.poll(1000) == [(3, 1)] and poller.spins > 1       # a long wait, after its spin ...
    poller.arm(0.005)
    assert waiter.poll(1000) == [(3, 1)] and poller.spins == 0      # ... turns spinning off
    poller.arm(0.005)
    assert waiter.poll(1000) == [(3, 1)] and poller.spins > 1       # a short one turned it back on
    poller.arm(0.005)
    assert waiter.poll(0) == [] and poller.spins == 1               # a poll that is not to wait only looks
    monkeypatch.setattr(sockets, "SPIN_S", 0.0)                      # TENSORWEAVE_SPIN_US=0: never
    waiter = sockets.SpinPoll(poller)
    for _ in range(2):
        poller.arm(0.001)
        waiter.poll(1000)
        assert poller.spins == 0


def test_a_yield_that_lost_the_cpu_pauses_spinning(monkeypatch):
    # every core busy with other processes: a spinning thread's yield gives its CPU away for a
    # time slice, and its message then waits for it; waits sleep instead for CONTENDED_PAUSE_S
    monkeypatch.setattr(sockets, "SPIN_S", 0.02)
    monkeypatch.setattr(sockets, "CONTENDED_PAUSE_S", 1.0)
    poller = _Poller()
    monkeypatch.setattr(sockets, "time", types.SimpleNamespace(perf_counter=poller.clock))
    busy = [True]

    def sched_yield():
        if busy[0]:
            poller.now += 2 * sockets.CONTENDED_YIELD_S   # (another process ran meanwhile)
    monkeypatch.setattr(sockets.os, "sched_yield", sched_yield)
    waiter = sockets.SpinPoll(poller)
    poller.arm(0.005)
    assert waiter.poll(1000) == [(3, 1)] and poller.spins == 1     # one yield lost the CPU: sleeps
    busy[0] = False
    for _ in range(50):                                             # 50 x 5 ms: no spinning for 1 s
        poller.arm(0.005)
        assert waiter.poll(1000) == [(3, 1)] and poller.spins == 0
    poller.now += 1.0
    poller.arm(0.005)
    assert waiter.poll(1000) == [(3, 1)] and poller.spins > 1       # then spinning again, the
    poller.arm(0.005)                                               # yields coming straight back
    assert waiter.poll(1000) == [(3, 1)] and poller.spins > 1


def test_a_spinning_wait_returns_what_comes_while_it_spins(monkeypatch):
    monkeypatch.setattr(sockets, "SPIN_S", 1.0)
    r, w = socket.socketpair()
    try:
        poller = select.poll()
        poller.register(r.fileno(), select.POLLIN)
        threading.Timer(0.05, lambda: w.send(b"x")).start()
        start = time.monotonic()
        assert sockets.SpinPoll(poller).poll(10_000) == [(r.fileno(), select.POLLIN)]
        assert time.monotonic() - start < 0.9
    finally:
        r.close()
        w.close()
