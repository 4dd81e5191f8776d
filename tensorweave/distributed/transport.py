"""The server side of the transport: `TransportServer`, a ROUTER socket per server (the client
side is channel.py; what both ends share, the message shapes included, is sockets.py).

One IO thread owns the ROUTER socket. It answers inline what never waits: "ping", one-way
messages (a _Send's push lands in the rendezvous), status, aborts, and run_graph of a plan
learnt to be short that has no blocking op (its remote Sends are one-way pushes, so it cannot
wait on a peer). Every other request runs on a thread of a growing pool (an idle thread if
there is one, else a new thread), so a request that blocks (a Recv waiting for a peer, a
dequeue) never starves the others: sync training cannot deadlock on a fixed pool. Pool
threads hand their replies back to the IO thread over inproc.

A call whose client stops renewing its lease (the client died; see channel.py) is cancelled
server-side after `TENSORWEAVE_CLIENT_LEASE_S` seconds.

Same-host peers: every server also listens on a Unix stream socket,
$TMPDIR/tensorweave-ipc/<port>.uds (uds.py: the same frames without ZeroMQ's two IO-thread
hops, ~17 us a round trip here against ~90 us for ZeroMQ ipc://, and twice the bandwidth),
served by the same IO thread, and binds ipc://.../<port>.sock. A same-host client that goes
away closes its connection, which cancels its calls at once (no lease to wait for). An IO
thread never writes to a Unix socket that could be full: its large replies go out from a pool
thread and its pushes over ZeroMQ. `python benchmarks/bench_distributed.py --transports`
times ZeroMQ's tcp:// against its ipc://.
"""
from __future__ import annotations

import os
import queue
import threading
import time
from typing import Any, Callable, Optional

import zmq

from tensorweave.distributed import shm, sockets, uds, wire
from tensorweave.distributed.sockets import EVENTS, POLLIN, mark_io_thread, recv_frames, send_frames, zmq_context
from tensorweave.framework import errors

_IDLE_THREAD_S = 30.0


class RequestContext:
    """What a handler knows about the request it serves: who asked and how to learn of
    cancellation (the client vanished)."""

    __slots__ = ("remote", "_cancel", "_lock")

    def __init__(self, remote: bool):
        self.remote = remote
        self._cancel: list = []
        self._lock = threading.Lock()

    def on_cancel(self, fn: Callable[[], None]) -> None:
        with self._lock:
            self._cancel.append(fn)

    def cancel(self) -> None:
        with self._lock:
            fns, self._cancel = self._cancel, []
        for fn in fns:
            fn()


# -- server ------------------------------------------------------------------------------------
class _GrowingPool:
    """Runs each task on an idle thread, or on a new one when none is idle."""

    def __init__(self, name: str):
        self._name = name
        self._lock = threading.Lock()
        self._idle = 0
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._stopped = False

    def submit(self, fn: Callable[[], None]) -> None:
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
                self._q.put(fn)
                return
        threading.Thread(target=self._loop, args=(fn,), name=self._name, daemon=True).start()

    def _loop(self, fn) -> None:
        while fn is not None:
            fn()
            with self._lock:
                if self._stopped:
                    return
                self._idle += 1
            try:
                fn = self._q.get(timeout=_IDLE_THREAD_S)
            except queue.Empty:
                with self._lock:
                    try:
                        fn = self._q.get_nowait()
                    except queue.Empty:
                        self._idle -= 1
                        return

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            n, self._idle = self._idle, 0
        for _ in range(n):
            self._q.put(None)


class TransportServer:
    """Serves `handler(method, args, ctx) -> result` on a ROUTER socket bound to `bind`."""

    def __init__(self, bind: str, handler: Callable[[str, dict, RequestContext], Any],
                 ping: Callable[[dict], Any], may_inline: Optional[Callable[[str, dict], bool]] = None,
                 ipc_path: Optional[str] = None, oneway: Optional[Callable[[str, Any], None]] = None,
                 uds_path: Optional[str] = None):
        self._handler = handler
        self._oneway = oneway
        self._ping = ping
        self._may_inline = may_inline or (lambda method, args: False)
        self._ipc_path = ipc_path
        ctx = zmq_context()
        self._router = ctx.socket(zmq.ROUTER)
        self._router.setsockopt(zmq.LINGER, 0)
        self._router.setsockopt(zmq.MAXMSGSIZE, sockets.MAX_MESSAGE_BYTES)
        self._router.setsockopt(zmq.ROUTER_MANDATORY, 0)
        try:
            self._router.bind(bind)
        except zmq.ZMQError as e:
            self._router.close(0)
            raise errors.UnknownError(None, None, f"Could not start server on {bind}: {e.strerror}") from None
        if ipc_path is not None:
            # Same-host clients use this endpoint: measurably faster than tcp on loopback.
            try:
                os.makedirs(os.path.dirname(ipc_path), exist_ok=True)
                self._router.bind("ipc://" + ipc_path)
            except (OSError, zmq.ZMQError):
                self._ipc_path = None
        self._reply_ep = f"inproc://tw-replies-{id(self)}-{os.getpid()}"
        self._pull = ctx.socket(zmq.PULL)
        self._pull.bind(self._reply_ep)
        self._wake_ep = f"inproc://tw-wake-{id(self)}-{os.getpid()}"
        self._wake = ctx.socket(zmq.PULL)
        self._wake.bind(self._wake_ep)
        self._local = threading.local()
        self._push_sockets: list = []
        self._push_lock = threading.Lock()
        self._pool = _GrowingPool("tw-worker")
        self._inflight: dict = {}     # (identity, request id) -> [last renewed, RequestContext]
        self._inflight_lock = threading.Lock()
        self._stopped = threading.Event()
        # Same-host clients' fast path (uds.py): a Unix stream socket served by this IO thread.
        self._uds_path = uds_path
        self._uds = uds.listen(uds_path) if uds_path is not None else None
        self._conns: dict = {}        # fd -> uds.Conn
        self._thread = threading.Thread(target=self._serve, name="tw-transport", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        sock = zmq_context().socket(zmq.PUSH)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(self._wake_ep)
        sock.send(b"")
        sock.close(0)
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(5.0)
        self._pool.stop()

    # The IO thread: the only user of the ROUTER socket.
    def _serve(self) -> None:
        mark_io_thread()
        poller = zmq.Poller()
        poller.register(self._router, zmq.POLLIN)
        poller.register(self._pull, zmq.POLLIN)
        poller.register(self._wake, zmq.POLLIN)
        listen_fd = self._uds.fileno() if self._uds is not None else None
        if listen_fd is not None:
            poller.register(listen_fd, zmq.POLLIN)
        last_sweep = time.monotonic()
        try:
            router, pull = self._router, self._pull
            # Drained while ZMQ_EVENTS says POLLIN: a zmq.Again raised per wake-up costs more.
            while not self._stopped.is_set():
                events = dict(poller.poll(1000))
                if len(events) > (pull in events) + (router in events) + (self._wake in events):
                    for fd in [k for k in events if type(k) is int]:
                        if fd == listen_fd:
                            self._accept(poller)
                        else:
                            self._on_conn(fd, poller)
                if pull in events:
                    for _ in range(1000):
                        if not pull.getsockopt(EVENTS) & POLLIN:
                            break
                        self._send_reply(recv_frames(pull))
                if router in events:
                    for _ in range(1000):
                        if not router.getsockopt(EVENTS) & POLLIN:
                            break
                        self._on_request(recv_frames(router))
                now = time.monotonic()
                if now - last_sweep > 1.0:
                    last_sweep = now
                    self._sweep(now)
        finally:
            for s in (self._router, self._pull, self._wake):
                s.close(0)
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

    def _send_reply(self, msg: list) -> None:
        try:
            send_frames(self._router, msg)
        except zmq.ZMQError:
            pass   # the client went away; its reply is dropped

    def _accept(self, poller: zmq.Poller) -> None:
        while True:
            try:
                sock, _ = self._uds.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            # Blocking: a message is read whole once it begins (its client writes it whole);
            # writes may take their time (a client busy elsewhere reads its reply later).
            sock.setblocking(True)
            conn = uds.Conn(sock)
            self._conns[conn.fd] = conn
            poller.register(conn.fd, zmq.POLLIN)

    def _on_conn(self, fd: int, poller: zmq.Poller) -> None:
        conn = self._conns.get(fd)
        if conn is None:
            return
        try:
            conn.pump()
            while conn.has_message():
                self._on_request(conn.read(), conn)
        except (OSError, ValueError):
            # The client went away (or broke the framing): its calls still running are cancelled.
            poller.unregister(fd)
            del self._conns[fd]
            conn.close()
            for rctx in list(conn.inflight.values()):
                rctx.cancel()
            shm.sweep()   # (the peer may have died: its shared buffers go with it)

    def _on_request(self, msg: list, conn: Optional[uds.Conn] = None) -> None:
        """A request: ZeroMQ frames [identity, header, tensors...] or, from `conn`, [header, tensors...]."""
        if conn is None:
            ident = msg[0].bytes
            msg = msg[1:]
        else:
            ident = b""
        rid = -1
        req = None
        try:
            if len(msg) < 1:
                raise wire.WireError("request has no header frame")
            req = wire.decode(msg, shm.attached() if conn is not None else None)
            if not isinstance(req, dict):
                raise wire.WireError(f"request header must be a map, got {type(req).__name__}")
            if "id" not in req and self._oneway is not None:
                # A one-way message (a tensor push): nobody awaits a reply. It runs here, on the
                # IO thread (it never waits), and reports its own errors to the step it belongs to.
                method = wire.expect(req.get("m"), str, "message method")
                args = req.get("a")
                try:
                    self._oneway(method, args)
                except Exception:  # noqa: BLE001 - the handler reports what it can; never kill the IO thread
                    pass
                return
            rid = req.get("id", -1)
            if type(rid) is not int:
                rid = -1
                raise wire.WireError("request id must be an integer")
            method = wire.expect(req.get("m"), str, "request method")
            args = req.get("a", {})
            wire.expect(args, dict, "request arguments")
        except errors.OpError as e:
            if rid == -1 and isinstance(req, dict) and "id" not in req:
                return   # a malformed one-way message: there is no one to tell
            self._reply(ident, conn, _error_reply(rid, e), True)
            return
        if method == "ping":
            try:
                self._renew(ident, args)
                reply = wire.encode({"id": rid, "ok": True, "r": self._ping(args)})
            except errors.OpError as e:
                reply = _error_reply(rid, e)
            self._reply(ident, conn, reply, True)
            return
        try:
            inline = self._may_inline(method, args)
        except Exception:  # noqa: BLE001 - a malformed request is answered by the handler
            inline = False
        if inline:
            # Requests that never wait (status, pushes, short plans without blocking ops or
            # remote sends) skip the thread hand-off: it costs more than they do.
            self._run(ident, rid, method, args, RequestContext(remote=True), direct=True, conn=conn)
            return
        rctx = RequestContext(remote=True)
        if conn is not None:
            conn.inflight[rid] = rctx   # (the connection's end is the client's: no lease needed)
        else:
            with self._inflight_lock:
                self._inflight[(ident, rid)] = [time.monotonic(), rctx]
        self._pool.submit(lambda: self._run(ident, rid, method, args, rctx, conn=conn))

    def _renew(self, ident: bytes, args: dict) -> None:
        waits = args.get("wait")
        if not isinstance(waits, list):
            return
        now = time.monotonic()
        with self._inflight_lock:
            for w in waits:
                if isinstance(w, list) and len(w) == 2 and isinstance(w[0], bytes):
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

    def _reply(self, ident: bytes, conn: Optional[uds.Conn], frames: list, on_io: bool) -> bool:
        """Sends a reply; False when it surely never reached its client."""
        if conn is None:
            if on_io:
                self._send_reply([ident] + frames)
            else:
                self._push_reply([ident] + frames)
            return True
        if on_io and sum(f.nbytes if isinstance(f, memoryview) else len(f) for f in frames) > uds.SMALL:
            # A large reply could fill the socket while its client is busy: never block the
            # IO thread on it.
            self._pool.submit(lambda: self._reply(ident, conn, frames, False))
            return True
        try:
            conn.send(frames)
        except OSError:
            return False   # the client went away; its reply is dropped
        return True

    def _run(self, ident: bytes, rid: int, method: str, args: dict, rctx: RequestContext,
             direct: bool = False, conn: Optional[uds.Conn] = None) -> None:
        leases: list = []
        try:
            result = self._handler(method, args, rctx)
            if conn is not None:   # same host: large tensors go in shared memory
                reply, leases = wire.encode_shared({"id": rid, "ok": True, "r": result}, *shm.encoder_for(conn.sock))
            else:
                reply = wire.encode({"id": rid, "ok": True, "r": result})
        except errors.OpError as e:
            reply = _error_reply(rid, e)
        except Exception as e:  # noqa: BLE001 - a handler bug must not kill the server
            reply = _error_reply(rid, errors.InternalError(None, None, f"{type(e).__name__}: {e}"))
        finally:
            if conn is not None:
                conn.inflight.pop(rid, None)
            elif not direct:   # (inline requests are never registered in flight)
                with self._inflight_lock:
                    self._inflight.pop((ident, rid), None)
        if self._stopped.is_set() or not self._reply(ident, conn, reply, direct):
            for lease in leases:
                shm.pool().release(*lease)

    def _push_reply(self, msg: list) -> None:
        """From a pool thread: hands a reply to the IO thread, the ROUTER's only user."""
        push = getattr(self._local, "push", None)
        if push is None:
            push = self._local.push = zmq_context().socket(zmq.PUSH)
            push.setsockopt(zmq.LINGER, 0)
            push.connect(self._reply_ep)
            with self._push_lock:
                self._push_sockets.append(push)
        try:
            send_frames(push, msg)
        except zmq.ZMQError:
            pass


def _error_reply(rid: int, e: errors.OpError) -> list:
    return wire.encode({"id": rid, "ok": False, "code": int(e.error_code), "msg": str(e.message)})
