"""The ZeroMQ transport (transports.py's protocol): tcp://, or ipc:// to a same-host peer that
serves it unless TENSORWEAVE_TRANSPORT=tcp (sockets.endpoint_of). It reaches every address, so
it is the route a channel falls back to; a server's ROUTER socket binds the task's tcp://
endpoint and its ipc:// file.

Client side: a call's connection is a DEALER (ZMQ_IMMEDIATE, so a request is only queued on a
live connection; heartbeats, so a silent peer's connection is closed) with an identity of its
own, which lease pings name. A call given up on is cancelled by a one-way "cancel" behind it
on the same connection. Pushes go over other DEALERs, which queue messages while they
(re)connect and send what is queued when closed.

Server side: one ROUTER for every client; the IO role polls its ZMQ_FD, which is
edge-triggered: what ZMQ_EVENTS says is there is always drained whole, and a thread that
replies (under the ROUTER's lock) and finds input waiting wakes the IO role. A call whose
client stops renewing its lease (pings, channel.py) is cancelled after CLIENT_LEASE_S.
"""
from __future__ import annotations

import logging
import os
import struct
import threading
import time
import uuid

import zmq

from tensorweave.distributed import auth, sockets, transports, wire
from tensorweave.distributed.sockets import (EVENTS, NOBLOCK, POLLIN, endpoint_of, on_io_thread, recv_frames,
                                             send_frames, zmq_context)
from tensorweave.framework import errors, limits

_POLLOUT = int(zmq.POLLOUT)
_NO_LEASES = ()
_log = logging.getLogger("tensorweave.distributed")
_REVOKED = errors.UnauthenticatedError(None, None, "this client's key was revoked: the task serves it no more")


# -- the client side ------------------------------------------------------------------------------
class _Socket(zmq.Socket):
    """What a call's and a push's DEALER share (transports.Conn)."""

    ident = b""   # its ZMQ_IDENTITY (a getsockopt costs more)
    rank = 0

    @property
    def poll_handle(self):
        return self

    def encode(self, message) -> tuple:
        return wire.encode(message), _NO_LEASES, 0

    def decode(self, frames: list):
        return wire.decode(frames, None)

    def readable(self, timeout_ms: int) -> bool:
        return bool(zmq.zmq_poll([(self, POLLIN)], timeout_ms))

    def recv_message(self, block: bool):
        try:
            return recv_frames(self, 0 if block else NOBLOCK)
        except zmq.Again:
            return None

    def ended(self) -> bool:
        return False   # (a connection that went down is reconnected by ZeroMQ)

    def connected(self) -> bool:
        return bool(self.getsockopt(EVENTS) & _POLLOUT)   # (ZMQ_IMMEDIATE: writable only while connected)

    def cancel(self, rid: int) -> int:
        try:
            send_frames(self, wire.encode({"m": "cancel", "a": {"id": rid}}), NOBLOCK)
            return 1000
        except zmq.ZMQError:
            return 0


_KEYS_REFUSED = {zmq.EVENT_HANDSHAKE_FAILED_AUTH, zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL}   # (never retried)
# Events that come once per connection made or lost, never per retry of a peer that is gone.
_LASTING = (zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_SUCCEEDED
            | zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
            | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)


def _monitor_event(monitor: zmq.Socket) -> int:
    """The event of the next message of a socket monitor (libzmq's: a 16-bit event id, a 32-bit
    value, then the endpoint), as zmq.utils.monitor reads it; that module imports asyncio and ssl
    at every task's start-up."""
    return struct.unpack_from("=H", monitor.recv_multipart()[0])[0]


class _Watch:
    """The monitor events of one connection being made, and how many of its handshakes failed
    soon after the connection was made (a handshake that times out takes HANDSHAKE_S: a peer
    stopped or cut off, not one that refuses the keys)."""

    def __init__(self, sock: zmq.Socket, events: int = zmq.EVENT_ALL):
        # ZeroMQ's IO thread blocks, for every socket of the process, on a monitor whose queue is
        # full: this one's has no limit (a receive HWM of 0), and a long-lived connection's
        # watch takes only the events that are few however long its peer is gone (_LASTING).
        addr = f"inproc://tensorweave-monitor-{uuid.uuid4().hex}"
        sock.monitor(addr, events)
        self.monitor = sock.context.socket(zmq.PAIR)
        self.monitor.setsockopt(zmq.RCVHWM, 0)
        self.monitor.setsockopt(zmq.LINGER, 0)
        self.monitor.connect(addr)
        self.seen: set = set()
        self.quick_failures = 0
        self.disconnects = 0
        self._connected_at = 0.0

    def restart(self) -> None:
        """Forgets what earlier connection attempts showed (a new wait for the connection)."""
        self.read()
        self.seen, self.quick_failures = set(), 0

    def read(self) -> None:
        while self.monitor.poll(0):
            event = _monitor_event(self.monitor)
            now = time.monotonic()
            if event == zmq.EVENT_CONNECTED:
                self._connected_at = now
            elif event == zmq.EVENT_DISCONNECTED:
                self.disconnects += 1
            elif event == zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL and now - self._connected_at < sockets.HANDSHAKE_S / 2:
                self.quick_failures += 1
            self.seen.add(event)

    def keys_refused(self) -> bool:
        """Whether the handshake failed for keys, as every retry will (waiting changes nothing):
        refused by the server's ZAP handler, another mechanism, or (twice, at once) a server
        whose key is not the one this client checks it by."""
        return bool(self.seen & _KEYS_REFUSED) or self.quick_failures >= 2

    def why(self) -> str:
        """What the events say happened: refused, a handshake that failed for authentication
        (the one case that names keys), or no answer (timed out)."""
        seen = self.seen
        if zmq.EVENT_HANDSHAKE_FAILED_AUTH in seen:
            return "the handshake failed for authentication: the task refused this client's key"
        if zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL in seen or self.quick_failures >= 2:
            if auth.keys() is None:
                return ("the handshake failed: is it serving with authentication this client has no key for "
                        "(TENSORWEAVE_CURVE_DIR)?")
            return ("the handshake failed for authentication: the task does not hold the cluster's secret key this "
                    "client knows, or serves without authentication")
        if zmq.EVENT_HANDSHAKE_SUCCEEDED in seen:
            return "timed out (it took the connection but not the request)"
        if zmq.EVENT_CONNECT_RETRIED in seen and zmq.EVENT_CONNECTED not in seen:
            return "connection refused (nothing listens there)"
        if zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL in seen:
            return "the handshake did not finish (the connection ended during it, or the peer did not answer)"
        return "timed out (no answer)"

    def close(self, sock: zmq.Socket) -> None:
        sock.disable_monitor()
        self.monitor.close(0)


def _probe(endpoint: str, wait_s: float) -> _Watch:
    """The events of a new connection to `endpoint` with this process's keys, until its
    handshake ends or it was refused (2 s at most): for a connection whose failure came before
    it was watched (ZeroMQ does not retry a handshake the server refused)."""
    sock = zmq_context().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    _configure_dealer(sock)
    watch = _Watch(sock)
    try:
        sock.connect(endpoint)
        deadline = time.monotonic() + min(max(wait_s, 0.2), 2.0)
        while time.monotonic() < deadline and not watch.keys_refused() \
                and zmq.EVENT_HANDSHAKE_SUCCEEDED not in watch.seen:
            if watch.monitor.poll(50):
                watch.read()
            elif zmq.EVENT_CONNECT_RETRIED in watch.seen and zmq.EVENT_CONNECTED not in watch.seen:
                break
    finally:
        watch.close(sock)
        sock.close(0)
    return watch


class _CallSocket(_Socket):
    endpoint = ""
    _watch = None   # the connection's one monitor (ZeroMQ allows one per socket): see watch()

    def watch(self) -> None:
        """Monitors the connection from now on: its handshake (_await_connection) and each time
        it drops (resets)."""
        self._watch = _Watch(self, _LASTING)

    def resets(self) -> int:
        """How often the connection dropped so far. ZeroMQ reconnects at once, but what was in
        flight then (a request, its reply) is lost: a call whose connection dropped fails."""
        if self._watch is None:
            return 0
        self._watch.read()
        return self._watch.disconnects

    def close(self, linger=None) -> None:
        if self._watch is not None and not self.closed:
            try:
                self._watch.close(self)
            except zmq.ZMQError:
                pass
            self._watch = None
        super().close(linger)

    def refused(self) -> bool:
        """Whether the peer's host refuses a connection to its endpoint now (nothing listens
        there: the process is gone; sockets.refuses_connections). ZeroMQ itself retries alike
        whatever failed, and a long-lived connection's watch takes no retries."""
        return sockets.refuses_connections(self.endpoint, 0.5)   # (longer: no verdict)

    def send_message(self, frames: list, wait_s: float) -> None:
        try:
            send_frames(self, frames, NOBLOCK)
            return
        except zmq.Again:
            pass
        self._await_connection(wait_s)
        try:
            send_frames(self, frames, NOBLOCK)
        except zmq.Again:
            raise transports.Unreachable("connection lost while sending") from None

    def _await_connection(self, wait_s: float) -> None:
        """Waits until the connection is up (its handshake done), watching its events: a
        handshake refused for its keys ends the wait at once (waiting changes no key), a
        refused connection is retried until `wait_s` (the peer may be starting). Unreachable
        says which."""
        owned = self._watch is None
        watch = _Watch(self) if owned else self._watch
        watch.restart()
        deadline = time.monotonic() + wait_s
        try:
            while not watch.keys_refused():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                if zmq.zmq_poll([(self, _POLLOUT), (watch.monitor, POLLIN)], max(1, int(left * 1000))):
                    if self.getsockopt(EVENTS) & _POLLOUT:
                        return
                    watch.read()
        finally:
            if owned:
                watch.close(self)
        if self.getsockopt(EVENTS) & _POLLOUT:
            return
        if watch.keys_refused():
            raise transports.Unreachable(watch.why())
        why = (watch if watch.seen else _probe(self.endpoint, wait_s)).why()
        raise transports.Unreachable(f"no connection within {wait_s:g} s: {why}")


class _PushSocket(_Socket):
    def send_message(self, frames: list, wait_s: float) -> None:
        """Queued for the peer even while it (re)connects; only a full queue waits, and never
        on a server's IO thread."""
        try:
            send_frames(self, frames, NOBLOCK)
        except zmq.Again:
            if on_io_thread() or not self.poll(int(wait_s * 1000), zmq.POLLOUT):
                raise transports.Unreachable("it does not take the tensors sent to it") from None
            send_frames(self, frames, NOBLOCK)


def _configure_dealer(sock: zmq.Socket) -> None:
    """What every client socket sets: quick reconnects, heartbeats, the cluster's keys."""
    sock.setsockopt(zmq.RECONNECT_IVL, 50)
    sock.setsockopt(zmq.RECONNECT_IVL_MAX, 500)
    sockets.set_heartbeats(sock)
    auth.secure_client(sock)


class _Route(transports.Route):
    name = "zeromq"

    def __init__(self, channel, address: str):
        super().__init__(channel)
        self.address = address
        self._endpoint = None

    @property
    def endpoint(self) -> str:
        """tcp:// or, for a peer on this host that serves one, its ipc:// endpoint (unless
        TENSORWEAVE_TRANSPORT=tcp; chosen on first use)."""
        if self._endpoint is None:
            self._endpoint = endpoint_of(self.address)
        return self._endpoint

    def available(self) -> bool:
        return True

    def connect(self, wait_s: float) -> _CallSocket:
        sock = zmq_context().socket(zmq.DEALER, socket_class=_CallSocket)
        sock.endpoint = self.endpoint
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.IMMEDIATE, 1)
        sock.ident = os.urandom(12)
        sock.setsockopt(zmq.IDENTITY, sock.ident)
        sock.rank = self.rank
        _configure_dealer(sock)
        sock.watch()
        sock.connect(self.endpoint)
        return sock

    def push_conn(self) -> _PushSocket:
        try:
            return self._push_free.pop()
        except IndexError:
            if self.channel.closed:
                raise errors.CancelledError(None, None, f"Channel to {self.channel.peer_name} is closed") from None
        sock = zmq_context().socket(zmq.DEALER, socket_class=_PushSocket)
        sock.setsockopt(zmq.LINGER, 2000)    # queued pushes still leave when the socket closes
        sock.rank = self.rank
        _configure_dealer(sock)
        sock.connect(self.endpoint)
        return sock


# -- the server side ------------------------------------------------------------------------------
class _Listener:
    """The ROUTER socket of a server: the listener and the origin of every ZeroMQ request
    (`ident` names the client's socket)."""

    closed = False   # (a client's connection ending is no event here: its calls' leases lapse)

    def __init__(self, server, router: zmq.Socket, ipc_path):
        self._server = server
        self._router = router
        self._secured = auth.keys() is not None   # (its messages' keys are checked against revocations)
        self._ipc_path = ipc_path
        self._fd = router.getsockopt(zmq.FD)
        self._lock = threading.Lock()   # whoever sends or receives on the ROUTER holds it
        self._inflight: dict = {}       # (identity, request id) -> [last renewed, RequestContext]
        self._inflight_lock = threading.Lock()
        self._on_input = self._drain   # (one bound method for the poll and serve_soon, not one a round)
        server.watch(self._fd, self._on_input)

    def woken(self) -> None:
        self._server.serve_soon(self._on_input)   # (a replying thread may have taken the ROUTER's edge)

    def _drain(self, poll_events: int = 0) -> None:
        """Reads every message the ROUTER holds (its FD signals edges only: what is there must
        be taken now, or it is not signalled again)."""
        router, server = self._router, self._server
        while True:
            with self._lock:
                batch = []
                while len(batch) < 256 and router.getsockopt(EVENTS) & POLLIN:
                    batch.append(recv_frames(router))
                pending = bool(batch) and bool(router.getsockopt(EVENTS) & POLLIN)
            allowed = auth.authorized() if self._secured and batch else None
            for msg in batch:
                ident, frames = msg[0].bytes, msg[1:]
                size = sum(len(f) for f in frames)
                if allowed is not None and frames and frames[0].get("User-Id").encode() not in allowed:
                    # Its key was revoked since the connection's handshake: nothing more of it is run.
                    header = frames[0].bytes if len(frames[0]) <= 1 << 16 else None
                    server.refuse(self, ident, transports.Refused(header, None).request_id(), _REVOKED)
                elif size > limits.value(limits.MESSAGE_BYTES):
                    # (ZeroMQ itself drops a connection that sends one frame over the limit)
                    header = frames[0].bytes if frames and len(frames[0]) <= 1 << 16 else None
                    refused = transports.Refused(header, limits.exceeded(limits.MESSAGE_BYTES, size, "message"))
                    server.refuse(self, ident, refused.request_id(), refused.error)
                else:
                    server.on_message(frames, self, ident)
            if not pending:
                return

    # -- the origin of requests -------------------------------------------------------------------
    def decode(self, frames: list):
        return wire.decode(frames, None)

    def encode(self, message: dict) -> tuple:
        return wire.encode(message), _NO_LEASES, 0

    def reply(self, ident: bytes, frames: list, on_io: bool) -> None:
        """From any thread: sent under the ROUTER's lock. A send may consume the edge of input
        that came meanwhile: the IO role is told to look (or, itself, does)."""
        with self._lock:
            if self._router.closed:
                return   # the server stopped while the request ran
            try:
                send_frames(self._router, [ident] + frames, zmq.NOBLOCK)
            except zmq.ZMQError:
                pass   # the client went away (or does not read): its reply is dropped
            waiting = bool(self._router.getsockopt(EVENTS) & POLLIN)
        if waiting:
            if on_io:
                self._server.serve_soon(self._on_input)
            else:
                self._server.wake_io()

    def track(self, ident: bytes, rid: int, rctx) -> None:
        with self._inflight_lock:
            self._inflight[(ident, rid)] = [time.monotonic(), rctx]

    def untrack(self, ident: bytes, rid: int) -> None:
        with self._inflight_lock:
            self._inflight.pop((ident, rid), None)

    def tracked(self, ident: bytes, rid: int):
        with self._inflight_lock:
            ent = self._inflight.get((ident, rid))
        return ent[1] if ent is not None else None

    # -- leases -------------------------------------------------------------------------------------
    def renew(self, waits: list, now: float) -> None:
        with self._inflight_lock:
            for w in waits:
                if isinstance(w, list) and len(w) == 2 and type(w[0]) is bytes and type(w[1]) is int:
                    ent = self._inflight.get((w[0], w[1]))
                    if ent is not None:
                        ent[0] = now

    def sweep(self, now: float) -> None:
        with self._inflight_lock:
            stale = [k for k, (seen, _) in self._inflight.items() if now - seen > sockets.CLIENT_LEASE_S]
            ctxs = [self._inflight[k][1] for k in stale]
            for k in stale:
                self._inflight[k][0] = float("inf")   # cancel once
        for c in ctxs:
            c.cancel()

    def close(self) -> None:
        with self._lock:   # (a request still running may be replying on it)
            self._router.close(0)
        if self._ipc_path is not None:
            try:
                os.unlink(self._ipc_path)
            except OSError:
                pass


class ZeroMQ(transports.Transport):
    name = "zeromq"
    preference = 10

    def route(self, channel, address: str) -> _Route:
        return _Route(channel, address)

    def listen(self, server, address: str, bind: str) -> _Listener:
        """The ROUTER bound to `bind` (the server cannot start without it) and, unless
        TENSORWEAVE_TRANSPORT=tcp, to this host's ipc:// file for the task's port."""
        router = zmq_context().socket(zmq.ROUTER)
        router.setsockopt(zmq.LINGER, 0)
        router.setsockopt(zmq.MAXMSGSIZE, limits.value(limits.MESSAGE_BYTES))
        router.setsockopt(zmq.ROUTER_MANDATORY, 0)
        # A client that reconnects (its heartbeats timed out while this task was stopped) keeps its
        # identity: its new connection takes over, rather than being refused until this task
        # notices the old one closed (a request sent meanwhile was lost, and its caller waited on).
        router.setsockopt(zmq.ROUTER_HANDOVER, 1)
        sockets.set_heartbeats(router)
        if "[" in bind:
            router.setsockopt(zmq.IPV6, 1)
        try:
            auth.secure_server(router)
            router.bind(bind)
        except (zmq.ZMQError, ValueError) as e:
            router.close(0)
            why = e.strerror if isinstance(e, zmq.ZMQError) else str(e)
            raise errors.UnknownError(None, None, f"Could not start server on {bind}: {why}") from None
        port = transports.port_of(address)
        ipc_path = None
        if port is not None and sockets.TRANSPORT != "tcp":
            # Same-host clients use this endpoint: measurably faster than tcp on loopback.
            try:
                ipc_path = sockets.ipc_path_for_port(port)
                router.bind("ipc://" + ipc_path)
            except (OSError, zmq.ZMQError) as e:
                _log.warning("transport: could not open the ipc:// socket for port %d (%s): same-host ZeroMQ "
                             "clients reach this server over tcp://", port, e)
                ipc_path = None
        return _Listener(server, router, ipc_path)


transports.register(ZeroMQ())
