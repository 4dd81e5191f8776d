"""The transport's client side: `Channel` (requests, replies and one-way pushes to one peer,
over the routes transports.py picks for it), `Pending` (a request sent, its reply awaited
later, on one thread at a time), `wait_all`/`wait_any` (several at once: the master sends every
remote partition's request, runs its own, then waits).

Each call borrows a connection from the channel's pool; a peer that takes none within
`connect_timeout_s` is UnavailableError naming the task. While a reply is awaited:
  - the call's deadline (timeout_s) is kept: the server answers DeadlineExceededError itself,
    naming the op; one that does not answer by the deadline and a grace (_grace_s) is given
    up on and told to drop the call (Conn.cancel), so a step that timed out changes no state
    there afterwards;
  - every LIVENESS_CHECK_S the connection is looked at: down for DEAD_PEER_S is
    UnavailableError (the peer's process or host is gone), and so is one that dropped and
    came back meanwhile (what was in flight is lost);
  - every probe interval the peer is pinged on another connection: a new incarnation is
    AbortedError; the ping renews the server's lease on the call and is no verdict when
    unanswered.
A peer found gone stays "lost": later calls fail within DEAD_PEER_S rather than the connect
timeout, until it answers again. Pooled connections at their end are replaced, and one made
before a preferred route was up is dropped for it.
"""
from __future__ import annotations

import itertools
import threading
import time
from typing import Any, Callable, Optional

import zmq

from tensorweave.distributed import inproc, shm, sockets, transports, uds, wire, zeromq  # noqa: F401 (they register)
from tensorweave.distributed.sockets import POLLIN
from tensorweave.framework import errors, limits

_ids = itertools.count(1)
_REFUSAL_CHECK_S = 1.0   # how often a ping waiting for its answer asks whether the peer's host now refuses


def _never() -> bool:
    return False


class Channel:
    """Thread-safe request/reply channel to one peer address."""

    def __init__(self, address: str, peer_name: str, connect_timeout_s: float = sockets.DEFAULT_CONNECT_TIMEOUT_S,
                 probe_interval_s: Optional[float] = None):
        self.address = address
        self.peer_name = peer_name
        self.connect_timeout_s = connect_timeout_s
        self.probe_interval_s = sockets.PROBE_INTERVAL_S if probe_interval_s is None else probe_interval_s
        self._lock = threading.Lock()
        self._free: list = []
        self.closed = False
        self._lost = False   # the peer was found gone: connections are waited for only briefly
        self._routes = transports.routes_for(self, address)   # the ways to the peer, preferred first

    def _connect_wait_s(self) -> float:
        """How long a new call waits for a connection: the connect timeout, or, for a peer
        found gone, about as long as it takes to see that again."""
        return min(self.connect_timeout_s, 2 * sockets.DEAD_PEER_S) if self._lost else self.connect_timeout_s

    def mark_lost(self) -> None:
        self._lost = True

    def mark_alive(self) -> None:
        self._lost = False

    def preferred_route(self):
        """The way calls go to the peer now (transports.py), or None."""
        for route in self._routes:
            if route.available():
                return route
        return None

    def _checkout(self):
        while True:
            with self._lock:
                if self.closed:
                    raise errors.CancelledError(None, None, f"Channel to {self.peer_name} is closed")
                conn = self._free.pop() if self._free else None
            if conn is None:
                break
            if conn.ended():
                conn.close(0)   # an idle connection at its end: the peer went away
                self.mark_lost()
                continue
            if conn.rank and (route := self.preferred_route()) is not None and route.rank < conn.rank:
                conn.close(0)   # made before the peer listened on a preferred way (its Unix socket): use that now
                continue
            if not conn.connected():
                self.mark_lost()   # it was connected and is no more: the peer went away (or restarts)
            return conn
        wait = self._connect_wait_s()
        for route in self._routes:
            if route.available():
                try:
                    conn = route.connect(wait)
                except transports.Unreachable as e:
                    raise self._unavailable(str(e)) from None
                if conn is not None:   # (None: not this way after all, the next one)
                    return conn
        raise self._unavailable("no transport reaches it")

    def _checkin(self, conn) -> None:
        with self._lock:
            if not self.closed and len(self._free) < 64:
                self._free.append(conn)
                return
        conn.close(0)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            conns, self._free = self._free, []
        for c in conns:
            c.close(0)
        for route in self._routes:
            route.close()

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
        conn = self._checkout()
        leases = ()
        try:
            frames, leases = _encode(conn, {"id": rid, "m": method, "a": args}, f"{method} request to {self.peer_name}")
            self._send(conn, frames, self._connect_wait_s())
        except BaseException:
            _give_back(leases)
            conn.close(0)
            raise
        return Pending(self, conn, rid, method, timeout_s, expect_incarnation)

    def _send(self, conn, frames: list, wait_s: float) -> None:
        try:
            conn.send_message(frames, wait_s)
        except transports.Unreachable as e:
            raise self._unavailable(str(e)) from None

    def peer_pid(self) -> Optional[int]:
        """The pid of the peer's process when a Unix socket on this host reaches it, else None."""
        for route in self._routes:
            pid_of = getattr(route, "peer_pid", None)
            if pid_of is not None and route.available():
                return pid_of()
        return None

    def push(self, method: str, args: dict) -> None:
        """Sends a one-way message (no reply, no waiting for one) over the first route that
        takes it at once. The message is queued for the peer even while it (re)connects; only
        a full queue waits, up to the connect timeout, and never on a server's IO thread,
        where it is UnavailableError at once."""
        for route in self._routes:
            if route.available() and (conn := route.push_conn()) is not None:
                break
        else:
            raise self._unavailable("no transport reaches it")
        leases = ()
        try:
            frames, leases = _encode(conn, {"m": method, "a": args}, f"{method} pushed to {self.peer_name}")
            self._send(conn, frames, self.connect_timeout_s)
        except BaseException:
            _give_back(leases)
            conn.close(0)
            raise
        route.give_back(conn)

    def ping(self, wait: Optional[list] = None, timeout_s: Optional[float] = None,
             extra: Optional[dict] = None) -> dict:
        """The peer's status (incarnation, ...) within timeout_s (default: the connect timeout).
        `wait` lists [identity, request id] of calls whose leases it renews; `extra` adds
        arguments (a client's keep-alive). A connection the peer's host refuses is
        UnavailableError at once: nothing listens there now, which is the answer (a live peer,
        however slow, takes connections; one that may be starting is the caller's to ping again)."""
        timeout_s = self.connect_timeout_s if timeout_s is None else timeout_s
        rid = next(_ids)
        conn = self._checkout()
        ok = False
        try:
            deadline = time.monotonic() + timeout_s
            args = {"wait": wait or []}
            if extra:
                args.update(extra)
            refused = self._unavailable("connection refused: nothing listens there (its process is gone)")
            if not conn.connected() and getattr(conn, "refused", _never)():
                raise refused
            self._send(conn, wire.encode({"id": rid, "m": "ping", "a": args}), timeout_s)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._unavailable(f"no answer within {timeout_s:g} s")
                if not conn.readable(int(min(left, _REFUSAL_CHECK_S) * 1000) + 1):
                    # a connection seen up when the ping was sent may learn of its peer's end only now
                    # (ZeroMQ's IO thread, on a loaded machine): a refusal is still the answer
                    if not conn.connected() and getattr(conn, "refused", _never)():
                        raise refused
                    continue
                try:
                    reply = conn.decode(conn.recv_message(True))
                except OSError:
                    raise self._unavailable("connection lost") from None
                if isinstance(reply, dict) and reply.get("id") == rid:
                    ok = True
                    self.mark_alive()
                    return _result(reply, self.peer_name)
        finally:
            if ok:
                self._checkin(conn)
            else:
                conn.close(0)


class Pending:
    """A request sent and not yet answered. Its socket belongs to it until it is done: one
    thread at a time calls `result()`, `try_result()` or `wait_all([...])`."""

    __slots__ = ("channel", "sock", "ident", "rid", "method", "timeout_s", "expect_incarnation", "start",
                 "next_probe", "next_check", "down_since", "resets", "done", "value", "error", "close_linger_ms")

    def __init__(self, channel: Channel, sock, rid: int, method: str, timeout_s: Optional[float],
                 expect_incarnation: Optional[int]):
        self.channel = channel
        self.sock = sock
        self.ident = sock.ident
        self.rid = rid
        self.method = method
        self.timeout_s = timeout_s
        self.expect_incarnation = expect_incarnation
        self.start = time.monotonic()
        self.next_probe = self.start + channel.probe_interval_s
        self.next_check = self.start + sockets.LIVENESS_CHECK_S
        self.down_since: Optional[float] = None
        self.resets = _resets(sock)
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
                frames = self.sock.recv_message(ready)
            except (OSError, ValueError) as e:   # a same-host connection ended
                self.channel.mark_lost()
                self._finish(error=self.channel._unavailable(f"connection lost ({type(e).__name__})"))
                return True
            if frames is None:
                return False
            ready = False
            try:
                reply = self.sock.decode(frames)
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
        """A call's connection that has been down DEAD_PEER_S: the peer is gone (its host
        reset the connection, or heartbeats went unanswered). One that dropped and came back
        (a partition longer than the heartbeats, then healed) lost what was in flight: the
        request or its reply will never come."""
        if _resets(self.sock) != self.resets:
            self.channel.mark_lost()
            raise self.channel._unavailable(f"connection reset while awaiting the reply to {self.method} (the "
                                            "request or its reply was lost)")
        if self.sock.connected():
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
        self.close_linger_ms = self.sock.cancel(self.rid)
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
            if self.sock.readable(self._wait_ms(time.monotonic())) and self._read(True):
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
        ready = {left[0].sock.poll_handle: 1} if left[0].sock.readable(wait_ms) else {}
    else:   # zmq_poll itself: Socket.poll and Poller build their own structures on every call
        ready = dict(zmq.zmq_poll([(p.sock.poll_handle, POLLIN) for p in left], wait_ms))
    still = []
    for p in left:
        if p.sock.poll_handle in ready:
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


def _resets(conn) -> int:
    """How often `conn` dropped (transports.Conn.resets, for transports that reconnect by
    themselves; a same-host connection that ends is an error on read instead)."""
    resets = getattr(conn, "resets", None)
    return resets() if resets is not None else 0


def _grace_s(timeout_s: float) -> float:
    """How long past a call's deadline the client waits for the server's own answer (which
    names the op that timed out) before it gives up on the server itself."""
    return min(1.0, 0.2 + 0.05 * timeout_s)


def _encode(conn, message: dict, what: str) -> tuple:
    """(frames, shared-memory leases) of a message for `conn` (over a same-host connection its
    large tensors go in shared memory, shm.py); the size limit counts them all the same."""
    frames, leases, shared = conn.encode(message)
    size = shared + sum(f.nbytes if isinstance(f, memoryview) else len(f) for f in frames)
    if size > limits.value(limits.MESSAGE_BYTES):
        _give_back(leases)
        raise limits.exceeded(limits.MESSAGE_BYTES, size, what)
    return frames, leases


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
