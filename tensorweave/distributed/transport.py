"""The transport's server side: `TransportServer` serves a task's requests from a listener of
every transport (transports.py) with one IO role, and `RequestContext` tells a handler of
cancellation. The client side is channel.py; what both ends share, sockets.py.

The IO role polls every listener's file descriptors and never waits on one peer. It answers
itself only bookkeeping: "ping", one-way messages (a _Send's push, "cancel") and the methods the
service says never wait. Any other request it reads (the first of a round; the others go to
the request pool, pool.py) runs on the same thread once that thread has released the role,
so a short step pays no thread hand-off. Two threads share the role: the standby takes it
over once a run has held it TAKEOVER_S (TENSORWEAVE_IO_TAKEOVER_MS, 10 ms; 0: before every
request; at once for a request that may block), so a step that blocks or runs long delays
other clients by at most that. Past limits.REQUEST_THREADS a request waits a second for a
thread, then is answered ResourceExhaustedError.

Every message is served under a catch-all: it is answered with an error where it has an id,
dropped where it has none; a message over limits.MESSAGE_BYTES is refused unread. A call is
cancelled when its client gives up ("cancel"), goes away (its connection ends, where the
transport has connections) or stops renewing its lease (CLIENT_LEASE_S).
"""
from __future__ import annotations

import logging
import os
import select
import threading
import time
from typing import Any, Callable, Optional

import zmq

from tensorweave.distributed import inproc, shm, sockets, transports, uds, wire, zeromq  # noqa: F401 (they register)
from tensorweave.distributed.pool import RequestPool
from tensorweave.distributed.sockets import EVENTS, POLLIN, mark_io_thread, zmq_context
from tensorweave.framework import errors, limits

_log = logging.getLogger("tensorweave.distributed")
_TICK_S = 0.25                  # how often the IO role sweeps leases, stalled peers and the service
TAKEOVER_S = float(os.environ.get("TENSORWEAVE_IO_TAKEOVER_MS", "") or 10.0) / 1000.0
# The IO role polls file descriptors only (the ZeroMQ sockets by their ZMQ_FD) with one
# select.poll kept between rounds: zmq_poll with a ZeroMQ socket among its items made three
# poll(2) calls and a getpid(2) of every round that waited, and zmq.Poller an enum per event.
_IN = select.POLLIN


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
    """Serves `handler(method, args, ctx) -> result` to the clients of the task at `address`,
    with a listener of every transport that serves it (transports.listeners_for; the ZeroMQ
    one bound to `bind`).

    ping(args) answers pings; may_inline(method, args) says which requests are bookkeeping
    the IO thread may answer itself; may_block(method, args) which may wait on someone else
    (their thread hands the IO role over before running them, not TAKEOVER_S after: a ps
    step waits for its workers' gradients every step); oneway(method, args) takes one-way
    messages; tick(now) runs on the IO thread every _TICK_S (the service's sweeps).

    What listeners call, on the IO role: watch(fd, on_event, events) / set_events / unwatch,
    serve_soon(fn) (fn runs this round, before the IO role sleeps), on_message, refuse; and
    from any thread, wake_io()."""

    def __init__(self, address: str, bind: str, handler: Callable[[str, dict, RequestContext], Any],
                 ping: Callable[[dict], Any], may_inline: Optional[Callable[[str, dict], bool]] = None,
                 oneway: Optional[Callable[[str, Any], None]] = None, tick: Optional[Callable[[float], None]] = None,
                 may_block: Optional[Callable[[str, dict], bool]] = None):
        self._handler = handler
        self._may_block = may_block or (lambda method, args: False)
        self._oneway = oneway
        self._ping = ping
        self._tick = tick
        self._may_inline = may_inline or (lambda method, args: False)
        # The IO role's state (used by the thread holding the role only):
        self._poller = select.poll()
        self._waiter = sockets.SpinPoll(self._poller)
        self._handlers: dict = {}     # fd -> on_event(poll events), of every descriptor the IO role watches
        self._soon: list = []         # what runs this round before the role sleeps (listeners' pending input)
        self._to_run: list = []       # requests read in this round, to run off the IO role
        self._last_tick = time.monotonic()
        self._listeners = transports.listeners_for(self, address, bind)
        ctx = zmq_context()
        self._wake_ep = f"inproc://tw-wake-{id(self)}-{os.getpid()}"
        self._wake = ctx.socket(zmq.PULL)
        self._wake.bind(self._wake_ep)
        # (signals like a ROUTER's: drained whole when it does)
        self.watch(self._wake.getsockopt(zmq.FD), self._on_wake)
        self._local = threading.local()        # each thread's PUSH to the wake socket
        self._push_sockets: Optional[list] = []   # (None once closed)
        self._push_lock = threading.Lock()
        self._pool = RequestPool("tw-worker")
        self._stopped = threading.Event()
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
            self.wake_io()
            self._standby_wake.set()
            if threading.current_thread() not in self._threads:
                self._ended.wait(5.0)
        else:
            self._close_all()
        self._pool.stop()

    # -- what listeners call ----------------------------------------------------------------------
    def watch(self, fd: int, on_event: Callable[[int], None], events: int = _IN) -> None:
        self._handlers[fd] = on_event
        self._poller.register(fd, events)

    def set_events(self, fd: int, events: int) -> None:
        self._poller.register(fd, events)

    def unwatch(self, fd: int) -> None:
        if self._handlers.pop(fd, None) is not None:
            try:
                self._poller.unregister(fd)
            except KeyError:
                pass

    def serve_soon(self, fn: Callable[[], None]) -> None:
        if fn not in self._soon:
            self._soon.append(fn)

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
        self._woken()   # (whatever came while the role changed hands is read first)
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
        try:
            soon, handlers = self._soon, self._handlers
            for fd, ev in self._waiter.poll(0 if soon else int(_TICK_S * 1000)):
                on_event = handlers.get(fd)
                if on_event is not None:
                    on_event(ev)
            while soon:
                soon.pop(0)()
            now = time.monotonic()
            if now - self._last_tick > _TICK_S:
                self._last_tick = now
                self._sweep(now)
        except zmq.ContextTerminated:
            self._stopped.set()
        except Exception:  # noqa: BLE001 - nothing a peer sends may end the IO loop
            _log.exception("transport IO loop: unexpected error (serving on)")

    def _on_wake(self, ev: int) -> None:
        wake = self._wake
        while wake.getsockopt(EVENTS) & POLLIN:
            wake.recv()
        self._woken()

    def _woken(self) -> None:
        for listener in self._listeners:
            listener.woken()

    def wake_io(self) -> None:
        """Wakes the thread holding the IO role (from any thread; after the server closed, nothing).
        Under _push_lock: the role's last holder closes every thread's PUSH (_close_all), and libzmq
        aborts the process when a socket is closed while its thread sends on it (a stop() racing
        the role thread's close, seen once in CI)."""
        with self._push_lock:
            if self._push_sockets is None:
                return
            push = getattr(self._local, "push", None)
            if push is None:
                push = self._local.push = zmq_context().socket(zmq.PUSH)
                push.setsockopt(zmq.LINGER, 0)
                push.setsockopt(zmq.SNDHWM, 1)
                push.connect(self._wake_ep)
                self._push_sockets.append(push)
            try:
                push.send(b"", zmq.NOBLOCK)
            except zmq.ZMQError:
                pass   # (a wake-up already waits there)

    def _close_all(self) -> None:
        for listener in self._listeners:
            listener.close()
        self._wake.close(0)
        with self._push_lock:
            for s in self._push_sockets or ():
                s.close(0)
            self._push_sockets = None   # (closed: wake_io makes no more)

    def _sweep(self, now: float) -> None:
        for listener in self._listeners:
            listener.sweep(now)
        self._pool.expire(now)
        if self._tick is not None:
            self._tick(now)

    # -- every message, from any listener ---------------------------------------------------------
    def refuse(self, origin, ident: bytes, rid: int, error: errors.OpError) -> None:
        """A message a listener did not read (over the size limit): answered with `error`."""
        origin.reply(ident, _error_reply(rid, error), True)

    def on_message(self, frames: list, origin, ident: bytes, oneway_only: bool = False) -> None:
        """One message, [header, tensors...], from `origin` (a listener, or one connection of
        one) and, where the origin serves several clients, the client `ident`."""
        rid = -1
        try:
            req = origin.decode(frames)
            if not isinstance(req, dict):
                raise wire.WireError(f"request header must be a map, got {type(req).__name__}")
            if "id" not in req:
                self._on_oneway(req, origin, ident)
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
                self._renew(args)
                origin.reply(ident, wire.encode({"id": rid, "ok": True, "r": self._ping(args)}), True)
                return
            self._dispatch(origin, ident, rid, method, args)
        except errors.OpError as e:
            origin.reply(ident, _error_reply(rid, e), True)
        except Exception as e:  # noqa: BLE001 - a bug a message finds must not end the IO thread
            _log.exception("transport: unexpected error serving a message")
            origin.reply(ident, _error_reply(rid, errors.InternalError(None, None, f"{type(e).__name__}: {e}")), True)

    def _on_oneway(self, req: dict, origin, ident: bytes) -> None:
        """A one-way message: a tensor push (it runs here, never waits, and reports its own
        errors to the step it belongs to) or a cancel. Nobody awaits a reply: a malformed
        one is dropped."""
        try:
            method = wire.expect(req.get("m"), str, "message method")
            args = req.get("a")
            if method == "cancel":
                rid = wire.expect(wire.expect(args, dict, "cancel")["id"], int, "cancel id")
                rctx = origin.tracked(ident, rid)
                if rctx is not None:
                    rctx.cancel()
            elif self._oneway is not None:
                self._oneway(method, args)
        except Exception:  # noqa: BLE001 - the handler reports what it can; never kill the IO thread
            pass

    def _dispatch(self, origin, ident: bytes, rid: int, method: str, args: dict) -> None:
        try:
            inline = self._may_inline(method, args)
        except Exception:  # noqa: BLE001 - a malformed request is answered by the handler
            inline = False
        if inline:
            # Bookkeeping that never waits (status, aborts, pushes) skips the thread hand-off.
            self._run(origin, ident, rid, method, args, RequestContext(remote=True), direct=True)
            return
        rctx = RequestContext(remote=True)
        origin.track(ident, rid, rctx)

        def refuse() -> None:   # (on the IO role, once the request waited long enough)
            origin.untrack(ident, rid)
            err = limits.exceeded(limits.REQUEST_THREADS, self._pool.max_threads + 1,
                                  f"request {method!r} found every thread busy: threads needed")
            origin.reply(ident, _error_reply(rid, err), True)

        try:
            blocks = bool(self._may_block(method, args))
        except Exception:  # noqa: BLE001 - a malformed request is answered by the handler
            blocks = False
        # Run off the IO role once this round's events are served (_lead).
        self._to_run.append((lambda: self._run(origin, ident, rid, method, args, rctx), refuse, blocks))

    def _renew(self, args: dict) -> None:
        waits = args.get("wait")
        if not isinstance(waits, list):
            return
        now = time.monotonic()
        for listener in self._listeners:
            listener.renew(waits, now)

    def _run(self, origin, ident: bytes, rid: int, method: str, args: dict, rctx: RequestContext,
             direct: bool = False) -> None:
        """Runs one request and replies: on the IO role itself (`direct`: bookkeeping), else
        on the thread that gave the role up or a pool thread."""
        leases = ()
        try:
            result = self._handler(method, args, rctx)
            reply, leases, _ = origin.encode({"id": rid, "ok": True, "r": result})
        except errors.OpError as e:
            reply = _error_reply(rid, e)
        except Exception as e:  # noqa: BLE001 - a handler bug must not kill the server
            reply = _error_reply(rid, errors.InternalError(None, None, f"{type(e).__name__}: {e}"))
        finally:
            if not direct:   # (inline requests are never registered in flight)
                origin.untrack(ident, rid)
        if self._stopped.is_set() or origin.closed:
            for lease in leases:   # (nobody will read them)
                shm.pool().release(*lease)
            return
        origin.reply(ident, reply, direct)

def _error_reply(rid: int, e: errors.OpError) -> list:
    return wire.encode({"id": rid, "ok": False, "code": int(e.error_code), "msg": str(e.message)})
