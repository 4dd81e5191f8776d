"""The server side of the transport: `TransportServer`, a ROUTER socket per server (the client
side is channel.py; what both ends share, the message shapes included, is sockets.py).

The IO role: one thread at a time polls the ROUTER socket and the same-host Unix socket's
connections, and never waits on any one peer. It answers itself only what is bookkeeping:
"ping", one-way messages (a _Send's push lands in the rendezvous; "cancel"), and the
methods the service says never wait (status, aborts, deregistrations). Any other request it
reads (the first of a round; the others go to the request pool, pool.py) runs on the same
thread once that thread has released the IO role, so a short step pays no thread hand-off,
in or out: on this project's 2-core machine a hand-off per request cost ~20 us a step over
the Unix socket and ~100 us over TCP. Two threads share the role: while one runs a request,
the other stands by and takes the role over as soon as the run has held it
TAKEOVER_S (TENSORWEAVE_IO_TAKEOVER_MS, 10 ms; 0 hands the role over before every request),
so a step that blocks (a Recv waiting for a peer, a dequeue) or runs long (a While loop of
millions of iterations) delays other clients by at most that. When the other thread is
itself still running a request, the request goes to the pool instead. Past
limits.REQUEST_THREADS a pool request waits a second for a thread, then is answered
ResourceExhaustedError. ZeroMQ replies are sent under a lock by the thread that has one; the
IO role polls the ROUTER's file descriptor (ZMQ_FD, edge-triggered: it always drains what
ZMQ_EVENTS says is there, and a replying thread that finds input waiting wakes it).

Every message is served under a catch-all: whatever it raises, it is answered with an error
where it has an id, dropped where it has none (a one-way message), and a connection whose
framing is broken is closed; the IO loop goes on. A message larger than
limits.MESSAGE_BYTES is refused (ResourceExhaustedError naming the limit) without being read.

A ZeroMQ call whose client stops renewing its lease (the client died; see channel.py) is
cancelled after `TENSORWEAVE_CLIENT_LEASE_S` seconds; one the client gave up on ("cancel")
at once.

Same-host peers: every server also listens on a Unix stream socket, <ipc dir>/<port>.uds
(uds.py: the same frames without ZeroMQ's two IO-thread hops, ~17 us a round trip here
against ~90 us for ZeroMQ ipc://, and twice the bandwidth), served by the IO role:
non-blocking reads into a buffer per connection, replies queued per connection and written
as the socket takes them (by the replying thread while it waits for room, else by the IO
role). A peer that stops mid-message or leaves its replies unread for
`TENSORWEAVE_PEER_STALL_S` is dropped; a connection from another user id is refused. A
same-host client that goes away closes its connection, which cancels its calls at once.
The server also binds ZeroMQ ipc://.../<port>.sock. `python benchmarks/bench_distributed.py
--transports` times ZeroMQ's tcp:// against its ipc://.
"""
from __future__ import annotations

import logging
import os
import select
import threading
import time
from typing import Any, Callable, Optional

import zmq

from tensorweave.distributed import auth, shm, sockets, uds, wire
from tensorweave.distributed.pool import RequestPool
from tensorweave.distributed.sockets import EVENTS, POLLIN, mark_io_thread, recv_frames, send_frames, zmq_context
from tensorweave.framework import errors, limits

_log = logging.getLogger("tensorweave.distributed")
_TICK_S = 0.25                  # how often the IO role sweeps leases, stalled peers and the service
TAKEOVER_S = float(os.environ.get("TENSORWEAVE_IO_TAKEOVER_MS", "") or 10.0) / 1000.0
_MAX_UNREAD_REPLY_BYTES = 16 << 20   # a Unix-socket peer that sends on with this much unread is dropped
# The IO role polls file descriptors only (the ZeroMQ sockets by their ZMQ_FD) with one
# select.poll kept between rounds: zmq_poll with a ZeroMQ socket among its items made three
# poll(2) calls and a getpid(2) of every round that waited, and zmq.Poller an enum per event.
_IN, _OUT = select.POLLIN, select.POLLOUT
_INOUT = _IN | _OUT
_HUNG_UP = select.POLLHUP | select.POLLERR | getattr(select, "POLLRDHUP", 0)
_READABLE = _IN | select.POLLPRI | select.POLLNVAL | _HUNG_UP   # (an end reads as one)


class RequestContext:
    """What a handler knows about the request it serves: who asked and how to learn of
    cancellation (the client vanished or gave up). A callback registered after the request
    was cancelled runs at once."""

    __slots__ = ("remote", "cancelled", "_cancel", "_lock")

    def __init__(self, remote: bool):
        self.remote = remote
        self.cancelled = False
        self._cancel: list = []
        self._lock = threading.Lock()

    def on_cancel(self, fn: Callable[[], None]) -> None:
        with self._lock:
            if not self.cancelled:
                self._cancel.append(fn)
                return
        fn()

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            fns, self._cancel = self._cancel, []
        for fn in fns:
            fn()


class TransportServer:
    """Serves `handler(method, args, ctx) -> result` on a ROUTER socket bound to `bind`.

    ping(args) answers pings; may_inline(method, args) says which requests are bookkeeping
    the IO thread may answer itself; may_block(method, args) which may wait on someone else
    (their thread hands the IO role over before running them, not TAKEOVER_S after: a ps
    step waits for its workers' gradients every step); oneway(method, args) takes one-way
    messages; tick(now) runs on the IO thread every _TICK_S (the service's sweeps)."""

    def __init__(self, bind: str, handler: Callable[[str, dict, RequestContext], Any],
                 ping: Callable[[dict], Any], may_inline: Optional[Callable[[str, dict], bool]] = None,
                 ipc_path: Optional[str] = None, oneway: Optional[Callable[[str, Any], None]] = None,
                 uds_path: Optional[str] = None, tick: Optional[Callable[[float], None]] = None,
                 may_block: Optional[Callable[[str, dict], bool]] = None):
        self._handler = handler
        self._may_block = may_block or (lambda method, args: False)
        self._oneway = oneway
        self._ping = ping
        self._tick = tick
        self._may_inline = may_inline or (lambda method, args: False)
        self._ipc_path = ipc_path
        ctx = zmq_context()
        self._router = ctx.socket(zmq.ROUTER)
        self._router.setsockopt(zmq.LINGER, 0)
        self._router.setsockopt(zmq.MAXMSGSIZE, limits.value(limits.MESSAGE_BYTES))
        self._router.setsockopt(zmq.ROUTER_MANDATORY, 0)
        sockets.set_heartbeats(self._router)
        if "[" in bind:
            self._router.setsockopt(zmq.IPV6, 1)
        try:
            auth.secure_server(self._router)
            self._router.bind(bind)
        except (zmq.ZMQError, ValueError) as e:
            self._router.close(0)
            why = e.strerror if isinstance(e, zmq.ZMQError) else str(e)
            raise errors.UnknownError(None, None, f"Could not start server on {bind}: {why}") from None
        if ipc_path is not None:
            # Same-host clients use this endpoint: measurably faster than tcp on loopback.
            try:
                sockets.ipc_dir()
                self._router.bind("ipc://" + ipc_path)
            except (OSError, zmq.ZMQError):
                self._ipc_path = None
        self._router_fd = self._router.getsockopt(zmq.FD)
        self._router_lock = threading.Lock()   # whoever sends or receives on the ROUTER holds it
        self._wake_ep = f"inproc://tw-wake-{id(self)}-{os.getpid()}"
        self._wake = ctx.socket(zmq.PULL)
        self._wake.bind(self._wake_ep)
        self._wake_fd = self._wake.getsockopt(zmq.FD)   # (signals like the ROUTER's: drained whole when it does)
        self._local = threading.local()        # each thread's PUSH to the wake socket
        self._push_sockets: list = []
        self._push_lock = threading.Lock()
        self._pool = RequestPool("tw-worker")
        self._inflight: dict = {}     # (identity, request id) -> [last renewed, RequestContext]
        self._inflight_lock = threading.Lock()
        self._stopped = threading.Event()
        # Same-host clients' fast path (uds.py): a Unix stream socket served by this IO thread.
        self._uds_path = uds_path
        self._uds = None
        if uds_path is not None:
            try:
                sockets.ipc_dir()
                self._uds = uds.listen(uds_path)
            except OSError:
                self._uds = None
        self._uds_fd = self._uds.fileno() if self._uds is not None else -1
        self._conns: dict = {}        # fd -> uds.ServerConn
        # The IO role's state (used by the thread holding the role only):
        self._poller = select.poll()
        self._waiter = sockets.SpinPoll(self._poller)
        self._router_pending = False  # the ROUTER may hold input its edge-triggered FD will not signal
        self._to_run: list = []       # requests read in this round, to run off the IO role
        self._last_tick = time.monotonic()
        # Who holds the role (under _role_lock): the epoch changes when the standby takes it.
        self._role_lock = threading.Lock()
        self._epoch = 0
        self._released_at: Optional[float] = None   # the holder released it to run a request, then
        self._standby_ready = False
        self._standby_wake = threading.Event()
        self._threads = [threading.Thread(target=self._role_thread, args=(lead,), name="tw-transport", daemon=True)
                         for lead in (True, False)]
        self._started = False
        self._ended = threading.Event()   # the role's last holder closed everything

    @property
    def pool(self) -> RequestPool:
        return self._pool

    def start(self) -> None:
        poller = self._poller
        poller.register(self._router_fd, _IN)
        poller.register(self._wake_fd, _IN)
        if self._uds is not None:
            poller.register(self._uds_fd, _IN)
        self._router_pending = True
        self._started = True
        for t in self._threads:
            t.start()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits until the server stopped serving; True once it has."""
        return self._ended.wait(timeout)

    @property
    def serving(self) -> bool:
        return self._started and not self._ended.is_set()

    def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        if self._started:
            self._wake_io()
            self._standby_wake.set()
            if threading.current_thread() not in self._threads:
                self._ended.wait(5.0)
        else:
            self._close_all()
        self._pool.stop()

    # -- the IO role -------------------------------------------------------------------------
    def _role_thread(self, lead: bool) -> None:
        """One of the two threads that take turns at the IO role: it leads (serves IO, and runs
        the requests it reads) or stands by (and takes the role from a leader whose run holds
        it too long), until the server stops."""
        while not self._stopped.is_set():
            if lead:
                lead = self._lead()
            else:
                lead = self._stand_by()
        with self._role_lock:
            closes = lead
        if closes:   # (the role's holder at the end closes everything)
            try:
                self._close_all()
            finally:
                self._ended.set()

    def _stand_by(self) -> bool:
        """Waits for the leader to release the role for longer than TAKEOVER_S; True once
        this thread took the role."""
        with self._role_lock:
            self._standby_ready = True
        while True:
            self._standby_wake.wait(min(TAKEOVER_S, _TICK_S) if TAKEOVER_S > 0 else _TICK_S)
            self._standby_wake.clear()
            with self._role_lock:
                released = self._released_at
                if released is not None and (self._stopped.is_set()
                                             or time.monotonic() - released >= TAKEOVER_S):
                    self._epoch += 1
                    self._released_at = None
                    self._standby_ready = False
                    return True
                if self._stopped.is_set():
                    self._standby_ready = False
                    return False

    def _lead(self) -> bool:
        """Serves IO; runs the first request of each round on this thread with the role
        released. True while this thread still holds the role (it stops with the server),
        False once the standby took it (this thread stands by next)."""
        mark_io_thread(True)
        self._router_pending = True   # (whatever came while the role changed hands is read first)
        try:
            while not self._stopped.is_set():
                self._serve_round()
                if not self._to_run:
                    continue
                batch, self._to_run = self._to_run, []
                for fn, refuse, _ in batch[1:]:
                    self._pool.submit(fn, refuse)
                with self._role_lock:
                    # (the other thread may be running a request itself; at the request limit,
                    # the request waits for a pool thread like any other)
                    can_release = self._standby_ready and self._pool.try_claim()
                    blocks = batch[0][2]
                    if can_release:
                        epoch = self._epoch
                        # (a run that may wait on a peer hands the role over at once)
                        self._released_at = time.monotonic() - (TAKEOVER_S if blocks else 0.0)
                if not can_release:
                    self._pool.submit(*batch[0][:2])
                    continue
                if TAKEOVER_S <= 0 or blocks:
                    self._standby_wake.set()   # (hand the role over before the run)
                mark_io_thread(False)
                try:
                    batch[0][0]()
                finally:
                    self._pool.release_claim()
                    with self._role_lock:
                        kept = self._epoch == epoch
                        if kept:
                            self._released_at = None
                if not kept:
                    return False
                mark_io_thread(True)
            return True
        finally:
            mark_io_thread(False)

    def _serve_round(self) -> None:
        """One poll of everything the IO role watches, and what it found."""
        wake = self._wake
        try:
            events = dict(self._waiter.poll(0 if self._router_pending else int(_TICK_S * 1000)))
            router_fd, listen_fd, wake_fd = self._router_fd, self._uds_fd, self._wake_fd
            for fd, ev in events.items():
                if fd == router_fd or fd == wake_fd:
                    continue
                if fd == listen_fd:
                    self._accept()
                else:
                    self._on_conn_event(fd, ev)
            if wake_fd in events:   # (a replying thread may have taken the ROUTER's edge: look)
                while wake.getsockopt(EVENTS) & POLLIN:
                    wake.recv()
                self._router_pending = True
            if self._router_pending or router_fd in events:
                self._drain_router()
            now = time.monotonic()
            if now - self._last_tick > _TICK_S:
                self._last_tick = now
                self._sweep(now)
        except zmq.ContextTerminated:
            self._stopped.set()
        except Exception:  # noqa: BLE001 - nothing a peer sends may end the IO loop
            _log.exception("transport IO loop: unexpected error (serving on)")

    def _drain_router(self) -> None:
        """Reads every message the ROUTER holds (its FD signals edges only: what is there must
        be taken now, or it is not signalled again)."""
        router = self._router
        while True:
            with self._router_lock:
                batch = []
                while len(batch) < 256 and router.getsockopt(EVENTS) & POLLIN:
                    batch.append(recv_frames(router))
                self._router_pending = bool(batch) and bool(router.getsockopt(EVENTS) & POLLIN)
            for msg in batch:
                self._on_zmq_message(msg)
            if not self._router_pending:
                return

    def _wake_io(self) -> None:
        """Wakes the thread holding the IO role (from any thread)."""
        push = getattr(self._local, "push", None)
        if push is None:
            push = self._local.push = zmq_context().socket(zmq.PUSH)
            push.setsockopt(zmq.LINGER, 0)
            push.setsockopt(zmq.SNDHWM, 1)
            push.connect(self._wake_ep)
            with self._push_lock:
                self._push_sockets.append(push)
        try:
            push.send(b"", zmq.NOBLOCK)
        except zmq.ZMQError:
            pass   # (a wake-up already waits there)

    def _close_all(self) -> None:
        with self._router_lock:   # (a request still running may be replying on it)
            self._router.close(0)
        self._wake.close(0)
        if self._uds is not None:
            self._uds.close()
            for c in list(self._conns.values()):
                c.close()
            try:
                os.unlink(self._uds_path)
            except OSError:
                pass
        if self._ipc_path is not None:
            try:
                os.unlink(self._ipc_path)
            except OSError:
                pass
        with self._push_lock:
            for s in self._push_sockets:
                s.close(0)

    def _send_reply(self, msg: list, on_io: bool) -> None:
        """A ZeroMQ reply, from any thread: sent under the ROUTER's lock. A send may consume
        the edge of input that came meanwhile: the IO role is told to look (or, itself, does)."""
        with self._router_lock:
            if self._router.closed:
                return   # the server stopped while the request ran
            try:
                send_frames(self._router, msg, zmq.NOBLOCK)
            except zmq.ZMQError:
                pass   # the client went away (or does not read): its reply is dropped
            waiting = bool(self._router.getsockopt(EVENTS) & POLLIN)
        if waiting:
            if on_io:
                self._router_pending = True
            else:
                self._wake_io()

    # -- ZeroMQ messages ----------------------------------------------------------------------
    def _on_zmq_message(self, msg: list) -> None:
        ident = msg[0].bytes
        frames = msg[1:]
        size = sum(len(f) for f in frames)
        if size > limits.value(limits.MESSAGE_BYTES):
            # (ZeroMQ itself drops a connection that sends one frame over the limit)
            header = frames[0].bytes if frames and len(frames[0]) <= 1 << 16 else None
            refused = uds.Refused(header, limits.exceeded(limits.MESSAGE_BYTES, size, "message"))
            self._reply(ident, None, _error_reply(refused.request_id(), refused.error), True)
            return
        self._on_message(frames, ident, None)

    # -- every message, from either transport -------------------------------------------------
    def _on_message(self, frames: list, ident: bytes, conn: Optional[uds.ServerConn],
                    oneway_only: bool = False) -> None:
        """One message: [header, tensors...]; from ZeroMQ (`ident`) or a Unix socket (`conn`)."""
        rid = -1
        try:
            req = wire.decode(frames, shm.attached() if conn is not None else None)
            if not isinstance(req, dict):
                raise wire.WireError(f"request header must be a map, got {type(req).__name__}")
            if "id" not in req:
                self._on_oneway(req, ident, conn)
                return
            if oneway_only:
                return
            rid = req["id"]
            if type(rid) is not int:
                rid = -1
                raise wire.WireError("request id must be an integer")
            method = wire.expect(req.get("m"), str, "request method")
            args = req.get("a", {})
            wire.expect(args, dict, "request arguments")
            if method == "ping":
                self._renew(ident, args)
                self._reply(ident, conn, wire.encode({"id": rid, "ok": True, "r": self._ping(args)}), True)
                return
            self._dispatch(ident, rid, method, args, conn)
        except errors.OpError as e:
            self._reply(ident, conn, _error_reply(rid, e), True)
        except Exception as e:  # noqa: BLE001 - a bug a message finds must not end the IO thread
            _log.exception("transport: unexpected error serving a message")
            self._reply(ident, conn, _error_reply(rid, errors.InternalError(None, None, f"{type(e).__name__}: {e}")),
                        True)

    def _on_oneway(self, req: dict, ident: bytes, conn: Optional[uds.ServerConn]) -> None:
        """A one-way message: a tensor push (it runs here, never waits, and reports its own
        errors to the step it belongs to) or a cancel. Nobody awaits a reply: a malformed
        one is dropped."""
        try:
            method = wire.expect(req.get("m"), str, "message method")
            args = req.get("a")
            if method == "cancel":
                rid = wire.expect(wire.expect(args, dict, "cancel")["id"], int, "cancel id")
                self._cancel(ident, conn, rid)
            elif self._oneway is not None:
                self._oneway(method, args)
        except Exception:  # noqa: BLE001 - the handler reports what it can; never kill the IO thread
            pass

    def _dispatch(self, ident: bytes, rid: int, method: str, args: dict, conn: Optional[uds.ServerConn]) -> None:
        try:
            inline = self._may_inline(method, args)
        except Exception:  # noqa: BLE001 - a malformed request is answered by the handler
            inline = False
        if inline:
            # Bookkeeping that never waits (status, aborts, pushes) skips the thread hand-off.
            self._run(ident, rid, method, args, RequestContext(remote=True), direct=True, conn=conn)
            return
        rctx = RequestContext(remote=True)
        if conn is not None:
            conn.inflight[rid] = rctx   # (the connection's end is the client's: no lease needed)
        else:
            with self._inflight_lock:
                self._inflight[(ident, rid)] = [time.monotonic(), rctx]

        def refuse() -> None:   # (on the IO role, once the request waited long enough)
            self._forget_inflight(ident, rid, conn)
            err = limits.exceeded(limits.REQUEST_THREADS, self._pool.max_threads + 1,
                                  f"request {method!r} found every thread busy: threads needed")
            self._reply(ident, conn, _error_reply(rid, err), True)

        try:
            blocks = bool(self._may_block(method, args))
        except Exception:  # noqa: BLE001 - a malformed request is answered by the handler
            blocks = False
        # Run off the IO role once this round's events are served (_lead).
        self._to_run.append((lambda: self._run(ident, rid, method, args, rctx, conn=conn), refuse, blocks))

    def _forget_inflight(self, ident: bytes, rid: int, conn: Optional[uds.ServerConn]) -> None:
        if conn is not None:
            conn.inflight.pop(rid, None)
        else:
            with self._inflight_lock:
                self._inflight.pop((ident, rid), None)

    def _cancel(self, ident: bytes, conn: Optional[uds.ServerConn], rid: int) -> None:
        if conn is not None:
            rctx = conn.inflight.get(rid)
        else:
            with self._inflight_lock:
                ent = self._inflight.get((ident, rid))
            rctx = ent[1] if ent is not None else None
        if rctx is not None:
            rctx.cancel()

    def _renew(self, ident: bytes, args: dict) -> None:
        waits = args.get("wait")
        if not isinstance(waits, list):
            return
        now = time.monotonic()
        with self._inflight_lock:
            for w in waits:
                if isinstance(w, list) and len(w) == 2 and type(w[0]) is bytes and type(w[1]) is int:
                    ent = self._inflight.get((w[0], w[1]))
                    if ent is not None:
                        ent[0] = now

    def _sweep(self, now: float) -> None:
        with self._inflight_lock:
            stale = [k for k, (seen, _) in self._inflight.items() if now - seen > sockets.CLIENT_LEASE_S]
            ctxs = [self._inflight[k][1] for k in stale]
            for k in stale:
                self._inflight[k][0] = float("inf")   # cancel once
        for c in ctxs:
            c.cancel()
        self._pool.expire(now)
        for conn in list(self._conns.values()):
            if (conn.mid_message() and now - conn.last_read > sockets.PEER_STALL_S) \
                    or conn.output_stalled(now, sockets.PEER_STALL_S):
                _log.warning("transport: dropping a same-host peer that stalled for %.0f s", sockets.PEER_STALL_S)
                self._drop(conn)
        if self._tick is not None:
            self._tick(now)

    # -- the same-host Unix socket ------------------------------------------------------------
    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._uds.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            pid, uid = uds.peer_cred(sock)
            if uid is not None and uid != os.getuid():
                _log.warning("transport: refused a same-host connection from user id %d", uid)
                sock.close()
                continue
            conn = uds.ServerConn(sock, pid)
            self._conns[conn.fd] = conn
            self._poller.register(conn.fd, _IN)

    def _on_conn_event(self, fd: int, ev: int) -> None:
        conn = self._conns.get(fd)
        if conn is None:
            return
        if ev & _OUT and not conn.on_writable():
            self._poller.register(fd, _IN)
        if not ev & _READABLE:
            return
        messages = conn.pump(bool(ev & _HUNG_UP))
        if messages and conn.out_bytes > _MAX_UNREAD_REPLY_BYTES:
            _log.warning("transport: dropping a same-host peer that sends on and reads no replies")
            self._drop(conn)
            return
        for msg in messages:
            if conn.closed:
                return
            if type(msg) is uds.Refused:
                self._reply(b"", conn, _error_reply(msg.request_id(), msg.error), True)
            elif conn.ended is None:
                self._on_message(msg, b"", conn)
            else:
                # The client is gone: what it pushed is taken, what it asked is not run (a
                # client that gave up on a call closes its connection: the call is cancelled).
                self._on_message(msg, b"", conn, oneway_only=True)
        if conn.ended is not None:
            # The client went away (or broke the framing): its calls still running are cancelled.
            self._drop(conn)

    def _drop(self, conn: uds.ServerConn) -> None:
        if self._conns.pop(conn.fd, None) is conn:
            try:
                self._poller.unregister(conn.fd)
            except KeyError:
                pass
        conn.close()
        for rctx in list(conn.inflight.values()):
            rctx.cancel()
        shm.sweep()   # (the client may have died: the shared buffers it sent from go with it)

    # -- replies ------------------------------------------------------------------------------
    def _reply(self, ident: bytes, conn: Optional[uds.ServerConn], frames: list, on_io: bool) -> None:
        if conn is None:
            self._send_reply([ident] + frames, on_io)
            return
        if not conn.queue(frames, on_io):
            return
        if on_io:
            self._poller.register(conn.fd, _INOUT)   # the rest goes out as room comes
        else:
            conn.wait_written(sockets.PEER_STALL_S)

    def _run(self, ident: bytes, rid: int, method: str, args: dict, rctx: RequestContext,
             direct: bool = False, conn: Optional[uds.ServerConn] = None) -> None:
        """Runs one request and replies: on the IO role itself (`direct`: bookkeeping), else
        on the thread that gave the role up or a pool thread."""
        leases: list = []
        try:
            result = self._handler(method, args, rctx)
            if conn is not None:   # same host: large tensors go in shared memory (shm.py)
                reply, leases, _ = wire.encode_shared({"id": rid, "ok": True, "r": result},
                                                      *shm.encoder_for(conn.peer_pid))
            else:
                reply = wire.encode({"id": rid, "ok": True, "r": result})
        except errors.OpError as e:
            reply = _error_reply(rid, e)
        except Exception as e:  # noqa: BLE001 - a handler bug must not kill the server
            reply = _error_reply(rid, errors.InternalError(None, None, f"{type(e).__name__}: {e}"))
        finally:
            if not direct:   # (inline requests are never registered in flight)
                self._forget_inflight(ident, rid, conn)
        if self._stopped.is_set() or (conn is not None and conn.closed):
            for lease in leases:   # (nobody will read them)
                shm.pool().release(*lease)
            return
        self._reply(ident, conn, reply, direct)


def _error_reply(rid: int, e: errors.OpError) -> list:
    return wire.encode({"id": rid, "ok": False, "code": int(e.error_code), "msg": str(e.message)})
