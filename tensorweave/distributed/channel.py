"""The client side of the ZeroMQ transport: `Channel` (requests, replies and one-way pushes to
one peer), `Pending` (a request sent, its reply awaited later), `wait_all`/`wait_any`.

Each call borrows a DEALER socket (ZMQ_IMMEDIATE, so a request is only queued on a live
connection; ZeroMQ heartbeats, so a silent peer's connection is closed); a peer that takes
no connection within `connect_timeout_s` is UnavailableError naming the task. While a reply
is awaited:
  - the call's deadline (timeout_s: RunOptions.timeout_in_ms or operation_timeout_in_ms) is
    kept: the server answers DeadlineExceededError itself, naming the op; one that does not
    answer by the deadline and a short grace (_grace_s) is given up on, with
    DeadlineExceededError, and told to drop the call (a "cancel" on the same connection, so
    it arrives after the request; on a Unix socket the connection is closed), so a step that
    timed out changes no state there afterwards;
  - every LIVENESS_CHECK_S the call's connection is looked at: down for DEAD_PEER_S (the
    peer's process or host is gone) is UnavailableError, within about a second;
  - every probe interval the peer is pinged on another socket: a new incarnation is
    AbortedError, and the ping renews the server's lease on the awaited call (a ping that
    goes unanswered is no verdict: the two checks above decide).
A peer found gone stays "lost" for this channel: later calls fail within DEAD_PEER_S rather
than the connect timeout (as TF answers each retry at once), until it answers again.

A request can be sent on one thread and its reply awaited later (`Channel.start` ->
`Pending`), several at once (`wait_all`), so that the master sends every remote partition's
request from the calling thread, runs its own partition, and only then waits. Pushes
(`Channel.push`) are one-way: no reply, no waiting.

For a peer on this host the call's "socket" is a uds.Conn (a Unix stream socket, see uds.py
and sockets.py) rather than a DEALER: pooled connections found at their end (the peer
restarted) are replaced, a peer that takes no connection is retried until the connect
timeout, and pushes that cannot connect at once go over ZeroMQ, which queues them.
"""
from __future__ import annotations

import itertools
import os
import threading
import time
from typing import Any, Callable, Optional

import zmq

from tensorweave.distributed import auth, shm, sockets, uds, wire
from tensorweave.distributed.sockets import (EVENTS, NOBLOCK, POLLIN, endpoint_of, on_io_thread, recv_frames,
                                             send_frames, uds_path_of, zmq_context)
from tensorweave.framework import errors, limits

_POLLOUT = int(zmq.POLLOUT)

_ids = itertools.count(1)


class _CallSocket(zmq.Socket):
    tw_ident = b""   # its ZMQ_IDENTITY, kept for the lease pings (a getsockopt costs more)


# A call's socket is a ZeroMQ DEALER, or a uds.Conn for a same-host peer (uds.py).
def _pollable(sock):
    return sock.fd if type(sock) is uds.Conn else sock


def _recv_msg(sock, flags: int = 0) -> list:
    if type(sock) is uds.Conn:
        if flags and not sock.readable(0):
            raise zmq.Again()
        return sock.read()
    return recv_frames(sock, flags)


def _readable(sock, timeout_ms: int) -> bool:
    """Whether a call's socket has something to read, waiting up to timeout_ms."""
    if type(sock) is uds.Conn:
        return sock.readable(timeout_ms)
    return bool(zmq.zmq_poll([(sock, POLLIN)], timeout_ms))


class Channel:
    """Thread-safe request/reply channel to one peer address."""

    def __init__(self, address: str, peer_name: str, connect_timeout_s: float = sockets.DEFAULT_CONNECT_TIMEOUT_S,
                 probe_interval_s: Optional[float] = None):
        self.address = address
        self._endpoint: Optional[str] = None
        self.peer_name = peer_name
        self.connect_timeout_s = connect_timeout_s
        self.probe_interval_s = sockets.PROBE_INTERVAL_S if probe_interval_s is None else probe_interval_s
        self._lock = threading.Lock()
        self._free: list = []
        self._push_free: list = []
        self._uds_free: list = []
        self._uds: Optional[str] = None
        self._uds_candidate = uds_path_of(address, must_exist=False)   # where a same-host peer listens
        self._stale_uds: Optional[tuple] = None   # (inode, mtime) of a socket file nobody listened on
        self._closed = False
        self._lost = False   # the peer was found gone: connections are waited for only briefly

    def _connect_wait_s(self) -> float:
        """How long a new call waits for a connection: the connect timeout, or, for a peer
        found gone, about as long as it takes to see that again."""
        return min(self.connect_timeout_s, 2 * sockets.DEAD_PEER_S) if self._lost else self.connect_timeout_s

    def mark_lost(self) -> None:
        self._lost = True

    def mark_alive(self) -> None:
        self._lost = False

    @property
    def uds_path(self) -> Optional[str]:
        """The same-host fast path's socket (uds.py), or None. A same-host peer not listening
        yet (not started) is looked for again on later calls, not given up for tcp for good."""
        if self._uds is None:
            if self._uds_candidate is None:
                self._uds = ""
            elif _file_id(self._uds_candidate) not in (None, self._stale_uds):
                self._uds = self._uds_candidate
        return self._uds or None

    def _uds_connect(self) -> uds.Conn:
        wait = self._connect_wait_s()
        deadline = time.monotonic() + wait
        while True:
            try:
                return uds.connect(self.uds_path, max(0.05, min(1.0, deadline - time.monotonic())),
                                   self.connect_timeout_s)
            except ConnectionRefusedError:
                raise
            except OSError as e:
                if time.monotonic() >= deadline:
                    raise self._unavailable(f"no connection within {wait:g} s ({type(e).__name__})") from None
                time.sleep(0.05)

    def _checkout(self):
        while True:
            with self._lock:
                if self._closed:
                    raise errors.CancelledError(None, None, f"Channel to {self.peer_name} is closed")
                sock = self._free.pop() if self._free else None
            if sock is None:
                break
            if type(sock) is uds.Conn:
                if sock.readable(0):
                    sock.close()   # an idle connection that reads is at its end: the peer went away
                    self.mark_lost()
                    continue
            else:
                if self.uds_path is not None:
                    sock.close(0)   # made before the peer listened on its Unix socket: use that now
                    continue
                if not sock.getsockopt(EVENTS) & _POLLOUT:
                    self.mark_lost()   # it was connected and is no more: the peer went away (or restarts)
            return sock
        if self.uds_path is not None:
            try:
                return self._uds_connect()
            except ConnectionRefusedError:
                # A file left by a server that is gone (its port may serve another one now, whose
                # file is elsewhere): reach the address by tcp until the file is made again.
                self._stale_uds, self._uds = _file_id(self._uds_candidate), None
        sock = zmq_context().socket(zmq.DEALER, socket_class=_CallSocket)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.IMMEDIATE, 1)
        sock.tw_ident = os.urandom(12)
        sock.setsockopt(zmq.IDENTITY, sock.tw_ident)
        _configure_dealer(sock)
        sock.connect(self.endpoint)
        return sock

    @property
    def endpoint(self) -> str:
        """tcp:// or, for a peer on this host, its ipc:// endpoint (chosen on first use)."""
        if self._endpoint is None:
            self._endpoint = endpoint_of(self.address)
        return self._endpoint

    def _checkin(self, sock: zmq.Socket) -> None:
        with self._lock:
            if not self._closed and len(self._free) < 64:
                self._free.append(sock)
                return
        sock.close(0)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            socks, self._free = self._free, []
            pushes, self._push_free = self._push_free, []
            conns, self._uds_free = self._uds_free, []
        for s in socks + pushes + conns:
            s.close(0)

    def _unavailable(self, why: str) -> errors.UnavailableError:
        return errors.UnavailableError(None, None, f"Task {self.peer_name} at {self.address} is unavailable: {why}")

    def call(self, method: str, args: dict, timeout_s: Optional[float] = None,
             expect_incarnation: Optional[int] = None) -> Any:
        """Sends one request and waits for its reply; raises the peer's error as its OpError class."""
        return self.start(method, args, timeout_s, expect_incarnation).result()

    def start(self, method: str, args: dict, timeout_s: Optional[float] = None,
              expect_incarnation: Optional[int] = None) -> "Pending":
        """Sends one request now; its reply is awaited with the returned Pending (on any one
        thread at a time). Raises UnavailableError when the peer takes no connection."""
        rid = next(_ids)
        sock = self._checkout()
        leases: list = []
        try:
            frames, leases = _encode(sock, {"id": rid, "m": method, "a": args}, f"{method} request to {self.peer_name}")
            self._send(sock, frames, self._connect_wait_s())
        except BaseException:
            _give_back(leases)
            sock.close(0)
            raise
        return Pending(self, sock, rid, method, timeout_s, expect_incarnation)

    def _send(self, sock, frames: list, timeout_s: float) -> None:
        if type(sock) is uds.Conn:
            try:
                sock.send(frames)
            except OSError as e:
                raise self._unavailable(f"connection lost while sending ({type(e).__name__})") from None
            return
        try:
            send_frames(sock, frames, NOBLOCK)
            return
        except zmq.Again:
            pass
        if not sock.poll(int(timeout_s * 1000), zmq.POLLOUT):
            hint = " (is it serving with authentication this client has no key for?)" if auth.keys() is None else ""
            raise self._unavailable(f"no connection within {timeout_s:g} s{hint}")
        try:
            send_frames(sock, frames, NOBLOCK)
        except zmq.Again:
            raise self._unavailable("connection lost while sending") from None

    def push(self, method: str, args: dict) -> None:
        """Sends a one-way message (no reply, no waiting for one). The message is queued for
        the peer even while it (re)connects; only a full queue waits, up to the connect
        timeout, and never on a server's IO thread, where it is UnavailableError at once."""
        what = f"{method} pushed to {self.peer_name}"
        conn = self._push_conn() if self.uds_path is not None and not on_io_thread() else None
        if conn is not None:
            # (an IO thread never writes to a Unix socket that could be full: it pushes over
            # ZeroMQ, whose own IO thread queues the message; so does a push to a peer that
            # takes no Unix connection now: a push never waits for its receiver)
            frames, leases = _encode(conn, {"m": method, "a": args}, what)
            try:
                conn.send(frames)
            except OSError as e:
                _give_back(leases)
                conn.close()
                raise self._unavailable(f"connection lost while sending ({type(e).__name__})") from None
            if self._closed or len(self._uds_free) >= 64:
                conn.close()
            else:
                self._uds_free.append(conn)
            return
        frames, _ = _encode(None, {"m": method, "a": args}, what)
        try:
            sock = self._push_free.pop()   # list.pop/append are atomic: no lock on this path
        except IndexError:
            if self._closed:
                raise errors.CancelledError(None, None, f"Channel to {self.peer_name} is closed") from None
            sock = zmq_context().socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 2000)    # queued pushes still leave when the socket closes
            _configure_dealer(sock)
            sock.connect(self.endpoint)
        try:
            try:
                send_frames(sock, frames, NOBLOCK)
            except zmq.Again:
                if on_io_thread() or not sock.poll(int(self.connect_timeout_s * 1000), zmq.POLLOUT):
                    raise self._unavailable("it does not take the tensors sent to it") from None
                send_frames(sock, frames, NOBLOCK)
        except BaseException:
            sock.close(0)
            raise
        if self._closed or len(self._push_free) >= 64:
            sock.close()
        else:
            self._push_free.append(sock)

    def _push_conn(self) -> Optional[uds.Conn]:
        while True:
            try:
                conn = self._uds_free.pop()   # list.pop/append are atomic: no lock on this path
            except IndexError:
                break
            if not conn.readable(0):
                return conn
            conn.close()   # at its end: the peer went away
        try:
            return uds.connect(self.uds_path, 0.5, self.connect_timeout_s)
        except OSError:
            return None

    def ping(self, wait: Optional[list] = None, timeout_s: Optional[float] = None,
             extra: Optional[dict] = None) -> dict:
        """The peer's status (incarnation, ...) within timeout_s (default: the connect timeout).
        `wait` lists [identity, request id] of calls whose leases it renews; `extra` adds
        arguments (a client's keep-alive)."""
        timeout_s = self.connect_timeout_s if timeout_s is None else timeout_s
        rid = next(_ids)
        sock = self._checkout()
        ok = False
        try:
            deadline = time.monotonic() + timeout_s
            args = {"wait": wait or []}
            if extra:
                args.update(extra)
            self._send(sock, wire.encode({"id": rid, "m": "ping", "a": args}), timeout_s)
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not _readable(sock, int(left * 1000) + 1):
                    raise self._unavailable(f"no answer within {timeout_s:g} s")
                try:
                    reply = _decode(sock, _recv_msg(sock))
                except OSError:
                    raise self._unavailable("connection lost") from None
                if isinstance(reply, dict) and reply.get("id") == rid:
                    ok = True
                    self.mark_alive()
                    return _result(reply, self.peer_name)
        finally:
            if ok:
                self._checkin(sock)
            else:
                sock.close(0)


class Pending:
    """A request sent and not yet answered. Its socket belongs to it until it is done: one
    thread at a time calls `result()`, `try_result()` or `wait_all([...])`."""

    __slots__ = ("channel", "sock", "ident", "rid", "method", "timeout_s", "expect_incarnation", "start",
                 "next_probe", "next_check", "down_since", "done", "value", "error", "close_linger_ms")

    def __init__(self, channel: Channel, sock: zmq.Socket, rid: int, method: str, timeout_s: Optional[float],
                 expect_incarnation: Optional[int]):
        self.channel = channel
        self.sock = sock
        self.ident = sock.tw_ident if type(sock) is _CallSocket else b""
        self.rid = rid
        self.method = method
        self.timeout_s = timeout_s
        self.expect_incarnation = expect_incarnation
        self.start = time.monotonic()
        self.next_probe = self.start + channel.probe_interval_s
        self.next_check = self.start + sockets.LIVENESS_CHECK_S
        self.down_since: Optional[float] = None
        self.done = False
        self.value: Any = None
        self.error: Optional[BaseException] = None
        self.close_linger_ms = 0

    def _finish(self, value: Any = None, error: Optional[BaseException] = None) -> None:
        self.done, self.value, self.error = True, value, error
        if error is None:
            self.channel._checkin(self.sock)
        else:
            self.sock.close(self.close_linger_ms)   # a late reply must never reach another call
        self.sock = None

    def _read(self, ready: bool = False) -> bool:
        """Reads the replies waiting on the socket (`ready`: a poll just said it reads, so the
        first read needs no look of its own); True once this request's has come."""
        while True:
            try:
                frames = _recv_msg(self.sock, 0 if ready else NOBLOCK)
                ready = False
            except zmq.Again:
                return False
            except (OSError, ValueError) as e:   # a same-host connection ended
                self.channel.mark_lost()
                self._finish(error=self.channel._unavailable(f"connection lost ({type(e).__name__})"))
                return True
            try:
                reply = _decode(self.sock, frames)
                if not isinstance(reply, dict) or reply.get("id") != self.rid:
                    continue   # a stale reply of an abandoned call
                self.channel.mark_alive()
                self._finish(_result(reply, self.channel.peer_name))
            except BaseException as e:  # noqa: BLE001 - the peer's error, raised by result()
                self._finish(error=e)
            return True

    def _check(self, now: float) -> None:
        """No reply yet at `now`: enforces the deadline, looks at the connection every
        LIVENESS_CHECK_S and, every probe interval, pings the peer (which renews the server's
        lease on this call and detects a restart)."""
        ch = self.channel
        if self.timeout_s is not None and now - self.start >= self.timeout_s + _grace_s(self.timeout_s):
            raise self._timed_out()
        if now >= self.next_check:
            self.next_check = now + sockets.LIVENESS_CHECK_S
            self._check_connection(now)
        if now < self.next_probe:
            return
        self.next_probe = now + ch.probe_interval_s
        wait = sockets.PING_TIMEOUT_S
        if self.timeout_s is not None:
            wait = max(0.01, min(wait, self.start + self.timeout_s + _grace_s(self.timeout_s) - now))
        try:
            status = ch.ping(wait=[[self.ident, self.rid]], timeout_s=min(wait, ch.connect_timeout_s))
        except errors.UnavailableError:
            return   # no verdict: the deadline and the connection's state decide
        if self.expect_incarnation is not None and status.get("incarnation") != self.expect_incarnation:
            raise errors.AbortedError(
                None, None, f"Task {ch.peer_name} restarted (incarnation changed from "
                            f"{self.expect_incarnation} to {status.get('incarnation')}); its state was lost")

    def _check_connection(self, now: float) -> None:
        """A ZeroMQ call's connection that has been down DEAD_PEER_S: the peer is gone (its
        host reset the connection, or heartbeats went unanswered). A Unix socket's end shows
        as a read instead."""
        sock = self.sock
        if type(sock) is uds.Conn:
            return
        if sock.getsockopt(EVENTS) & _POLLOUT:   # (ZMQ_IMMEDIATE: writable only while connected)
            self.down_since = None
            return
        if self.down_since is None:
            self.down_since = now
        elif now - self.down_since >= sockets.DEAD_PEER_S:
            self.channel.mark_lost()
            raise self.channel._unavailable(f"connection lost while awaiting the reply to {self.method}")

    def _timed_out(self) -> errors.DeadlineExceededError:
        """The deadline passed: tells the server to drop the call (behind the request, on the
        same connection), and says what the caller may assume."""
        sock = self.sock
        if type(sock) is not uds.Conn:   # (closing a Unix socket cancels its calls)
            try:
                send_frames(sock, wire.encode({"m": "cancel", "a": {"id": self.rid}}), NOBLOCK)
                self.close_linger_ms = 1000
            except zmq.ZMQError:
                pass
        return errors.DeadlineExceededError(
            None, None, f"Timed out waiting for {self.channel.peer_name} to answer {self.method} within "
                        f"{self.timeout_s:g} s (deadline exceeded); it was told to drop the request and makes no "
                        f"state change once told, but may have run part of it")

    def try_result(self) -> bool:
        """Without waiting (but for a due liveness probe): whether the reply (or a failure) is in."""
        if self.done:
            return True
        if self._read():
            return True
        try:
            self._check(time.monotonic())
        except BaseException as e:  # noqa: BLE001 - kept for result()
            self._finish(error=e)
        return self.done

    def _wait_ms(self, now: float) -> int:
        wait = max(0.0, min(self.next_probe, self.next_check) - now)
        if self.timeout_s is not None:
            wait = min(wait, max(0.0, self.start + self.timeout_s + _grace_s(self.timeout_s) - now))
        return int(wait * 1000) + 1

    def result(self) -> Any:
        """Waits for the reply; returns its result or raises the peer's error."""
        while not self.done:
            if _readable(self.sock, self._wait_ms(time.monotonic())) and self._read(True):
                break
            try:
                self._check(time.monotonic())
            except BaseException as e:  # noqa: BLE001
                self._finish(error=e)
        if self.error is not None:
            raise self.error
        return self.value


def wait_all(pendings: list, on_done: Optional[Callable[["Pending"], None]] = None) -> None:
    """Waits until every Pending is done, calling on_done(p) as each finishes (in the order
    their replies come), so that one failure can be acted on while the others still wait."""
    left = []
    for p in pendings:
        if not p.done:
            left.append(p)
        elif on_done is not None:
            on_done(p)
    while left:
        left = wait_any(left, None, on_done)


def wait_any(left: list, timeout_s: Optional[float], on_done: Optional[Callable[["Pending"], None]] = None) -> list:
    """Waits up to timeout_s (None: until the next probe is due) for replies to the Pendings
    `left` (none done yet), calls on_done for each that finishes, returns those still open."""
    now = time.monotonic()
    wait_ms = min(p._wait_ms(now) for p in left)
    if timeout_s is not None:
        wait_ms = min(wait_ms, int(timeout_s * 1000))
    if len(left) == 1:   # (the common case: one remote partition)
        ready = {_pollable(left[0].sock): 1} if _readable(left[0].sock, wait_ms) else {}
    else:   # zmq_poll itself: Socket.poll and Poller build their own structures on every call
        ready = dict(zmq.zmq_poll([(_pollable(p.sock), POLLIN) for p in left], wait_ms))
    still = []
    for p in left:
        if _pollable(p.sock) in ready:
            p._read(True)
        if not p.done:
            try:
                p._check(time.monotonic())
            except BaseException as e:  # noqa: BLE001 - kept for result()
                p._finish(error=e)
        if not p.done:
            still.append(p)
        elif on_done is not None:
            on_done(p)
    return still


def _grace_s(timeout_s: float) -> float:
    """How long past a call's deadline the client waits for the server's own answer (which
    names the op that timed out) before it gives up on the server itself."""
    return min(1.0, 0.2 + 0.05 * timeout_s)


def _configure_dealer(sock: zmq.Socket) -> None:
    """What every client socket sets: quick reconnects, heartbeats, the cluster's keys."""
    sock.setsockopt(zmq.RECONNECT_IVL, 50)
    sock.setsockopt(zmq.RECONNECT_IVL_MAX, 500)
    sockets.set_heartbeats(sock)
    auth.secure_client(sock)


def _encode(sock, message: dict, what: str) -> tuple:
    """(frames, shared-memory leases) of a message for `sock`: over a same-host connection its
    large tensors go in shared memory (shm.py); the size limit counts them all the same."""
    if type(sock) is uds.Conn:
        frames, leases, shared = wire.encode_shared(message, *shm.encoder_for(sock.peer_pid))
    else:
        frames, leases, shared = wire.encode(message), [], 0
    size = shared + sum(f.nbytes if isinstance(f, memoryview) else len(f) for f in frames)
    if size > limits.value(limits.MESSAGE_BYTES):
        _give_back(leases)
        raise limits.exceeded(limits.MESSAGE_BYTES, size, what)
    return frames, leases


def _decode(sock, frames: list):
    """A reply: over a same-host connection its large tensors may be in shared memory."""
    return wire.decode(frames, shm.attached() if type(sock) is uds.Conn else None)


def _give_back(leases: list) -> None:
    """The shared buffers of a message that was never sent."""
    p = shm.pool() if leases else None
    for lease in leases:
        p.release(*lease)


def _result(reply: dict, peer_name: str) -> Any:
    if reply.get("ok") is True:
        return reply.get("r")
    code, msg = reply.get("code"), reply.get("msg")
    if type(code) is not int or not isinstance(msg, str):
        raise errors.InternalError(None, None, f"Malformed error reply from {peer_name}")
    raise errors.make_error(code, msg)


def _file_id(path: str) -> Optional[tuple]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns
