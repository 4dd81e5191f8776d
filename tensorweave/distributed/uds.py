"""The Unix-socket transport (transports.py's protocol): same-host peers, TENSORWEAVE_TRANSPORT
auto (the default). Every server on this host (unless tcp) listens on <ipc dir>/<port>.uds
(sockets.uds_path_for_port); a same-host client sends its requests, pings and pushes there
rather than through ZeroMQ's IO threads (docs/PERFORMANCE.md). Tensors of at least
shm.MIN_BYTES travel in shared memory (shm.py, wire.encode_shared); the message carries a
reference.

A message is the frames of wire.encode, framed as ``<u64 payload bytes><u32 frame count><u64
length per frame>`` and the frames back to back.

  Conn        a client's connection: whole messages in and out, waiting (within its io
              timeout) on its own connection only.
  ServerConn  the server's view of one client, served by the IO role, which never waits:
              non-blocking reads into a buffer per connection (a message over
              limits.MESSAGE_BYTES is skipped and answered ResourceExhaustedError), replies
              queued and written as the socket takes them.
Same-host trust: the listening socket is in a directory private to this user (sockets.ipc_dir:
a squatted one is replaced by a private one, with a warning; a client looks only in
SERVER_UID's private directories); a connection from another user id is closed before anything
is read from it, and a client refuses a server whose process runs as another user id than
sockets.SERVER_UID (SO_PEERCRED). With keys on (auth.py), a connection carries the same proof of
key as ZeroMQ's CURVE before its first request: the client's hello, the server's welcome (which
proves the server's key), the client's proof; a server serves nothing else first, and closes the
connections of a key revoked since (its sweep).
"""
from __future__ import annotations

import collections
import functools
import hmac
import itertools
import logging
import os
import select
import socket
import struct
import threading
import time
from typing import Optional

import numpy as np
import zmq

from tensorweave.distributed import auth, shm, sockets, transports, wire
from tensorweave.distributed.sockets import SpinPoll, on_io_thread, uds_path_of
from tensorweave.distributed.transports import Refused
from tensorweave.framework import errors, limits

_PREFIX = struct.Struct("<QI")
SMALL = 1 << 16          # messages up to this size are written with one sendall
_BIG = 1 << 20           # payloads above this size are read straight into their own buffer
MAX_FRAMES = 1 << 20
_CHUNK = 1 << 16         # one non-blocking read of the server side
_READ_BUDGET = 8 << 20   # bytes one readiness event may read before the IO thread serves others
_REFUSED_HEAD_MAX = 1 << 16   # a refused message's header is read (for its id) up to this size
_IOV_MAX = 64            # buffers per sendmsg
_PEERCRED = struct.Struct("3i")
_HELLO_SIZE = len(auth.HELLO)
_UNPROVEN = errors.UnauthenticatedError(None, None, "this task serves only clients that prove a key of its cluster "
                                        "(authentication is on: TENSORWEAVE_CURVE_DIR)")
_DONTWAIT = socket.MSG_DONTWAIT
_MAX_UNREAD_REPLY_BYTES = 16 << 20   # a peer that sends on with this much of its replies unread is dropped
_IN, _OUT = select.POLLIN, select.POLLOUT
_INOUT = _IN | _OUT
_HUNG_UP = select.POLLHUP | select.POLLERR | getattr(select, "POLLRDHUP", 0)
_READABLE = _IN | select.POLLPRI | select.POLLNVAL | _HUNG_UP   # (an end reads as one)
_log = logging.getLogger("tensorweave.distributed")


_LENS_STRUCTS: dict = {}   # frame count -> struct.Struct of that many lengths (a format string per message costs)


def _lens_struct(n: int) -> struct.Struct:
    st = _LENS_STRUCTS.get(n)
    if st is None:
        st = struct.Struct(f"<{n}Q")
        if len(_LENS_STRUCTS) < 64:
            _LENS_STRUCTS[n] = st
    return st


def _prefix(frames: list) -> tuple[bytes, int]:
    lens = [len(f) if type(f) is bytes else f.nbytes for f in frames]
    total = sum(lens)
    return _PREFIX.pack(total, len(frames)) + _lens_struct(len(frames)).pack(*lens), total


def peer_cred(sock: socket.socket) -> tuple:
    """(pid, uid) of the process at the other end of a Unix socket ((0, None) where the
    platform cannot tell). Read once per connection: the pid names the receiver a
    shared-memory buffer is held for (shm.py), the uid who may connect."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return 0, None
    try:
        pid, uid, _ = _PEERCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, opt, _PEERCRED.size))
    except OSError:
        return 0, None
    return pid, uid


# -- the client's end ---------------------------------------------------------------------------
class Conn:
    """One connected Unix stream socket: whole messages in and out. Writes are locked;
    reads belong to one thread at a time. A send, and the read of a message begun, wait at
    most `io_timeout_s` (TimeoutError). The socket itself has no timeout: Python would poll(2)
    before every send and receive; each first tries without waiting (MSG_DONTWAIT) and polls
    only when the socket is not ready."""

    __slots__ = ("sock", "rbuf", "wlock", "fd", "_chunk", "_chunk_view", "peer_pid", "io_timeout_ms", "_poll", "rank")
    ident = b""   # (its calls need no lease: the connection's end cancels them)

    def __init__(self, sock: socket.socket, io_timeout_s: Optional[float] = None):
        self.sock = sock
        self.fd = sock.fileno()
        self.peer_pid = peer_cred(sock)[0]
        self.io_timeout_ms = -1 if io_timeout_s is None else max(1, int(io_timeout_s * 1000))
        self.rbuf = bytearray()
        self.wlock = threading.Lock()
        self._chunk = bytearray(SMALL)   # reads land here (a recv(n) would allocate n bytes each time)
        self._chunk_view = memoryview(self._chunk)
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        self._poll = SpinPoll(poller)
        self.rank = 0

    # -- transports.Conn ---------------------------------------------------------------------
    @property
    def poll_handle(self) -> int:
        return self.fd

    def encode(self, message) -> tuple:
        """Frames, leases, shared bytes: large tensors go in shared memory (shm.py)."""
        return wire.encode_shared(message, *shm.encoder_for(self.peer_pid))

    def decode(self, frames: list):
        return wire.decode(frames, shm.attached())

    def send_message(self, frames: list, wait_s: float) -> None:
        try:
            self.send(frames)
        except OSError as e:
            raise transports.Unreachable(f"connection lost while sending ({type(e).__name__})") from None

    def recv_message(self, block: bool) -> Optional[list]:
        if not block and not self.readable(0):
            return None
        return self.read()

    def ended(self) -> bool:
        return self.readable(0)   # (an idle connection that reads is at its end)

    def connected(self) -> bool:
        return True   # (its end shows as a read)

    def cancel(self, rid: int) -> int:
        return 0   # (closing the connection cancels its calls)

    def readable(self, timeout_ms: int) -> bool:
        """Whether a reply (or the connection's end) can be read, waiting up to timeout_ms
        (poll(2) itself; zmq_poll makes a first one without waiting when it is to wait)."""
        return bool(self.rbuf) or bool(self._poll.poll(timeout_ms))

    def _await(self, event: int) -> None:
        if not zmq.zmq_poll([(self.fd, event)], self.io_timeout_ms):
            raise TimeoutError("timed out")

    def _recv_into(self, view: memoryview) -> int:
        while True:
            try:
                k = self.sock.recv_into(view, 0, _DONTWAIT)
            except BlockingIOError:
                self._await(zmq.POLLIN)
                continue
            if k == 0:
                raise ConnectionResetError("connection closed by the peer")
            return k

    def _send_all(self, data) -> None:
        view = memoryview(data).cast("B")
        while view:
            try:
                view = view[self.sock.send(view, _DONTWAIT):]
            except BlockingIOError:
                self._await(zmq.POLLOUT)

    def _recv_some(self) -> None:
        k = self._recv_into(self._chunk_view)
        self.rbuf += self._chunk_view[:k]

    def send(self, frames: list) -> int:
        """Writes one message (waiting until the kernel took it); returns its payload size."""
        head, total = _prefix(frames)
        with self.wlock:
            if total <= SMALL:
                self._send_all(head + b"".join(frames))
            else:
                self._send_all(head)
                for f in frames:
                    self._send_all(f)
        return total

    def _fill(self, need: int) -> None:
        while len(self.rbuf) < need:
            self._recv_some()

    def read(self) -> list:
        """The next message's frames (memoryviews), waiting for the rest of it."""
        if not self.rbuf:   # (a reply mostly comes whole in one read)
            k = self._recv_into(self._chunk_view)
            whole = _whole_message(self._chunk_view, 0, k)
            if whole is not None:
                if whole[1] < k:
                    self.rbuf += self._chunk_view[whole[1]:k]
                return whole[0]
            self.rbuf += self._chunk_view[:k]
        self._fill(_PREFIX.size)
        total, n = _PREFIX.unpack_from(self.rbuf, 0)
        if n > MAX_FRAMES or n == 0:
            raise ConnectionResetError(f"message of {n} frames")
        hsize = _PREFIX.size + 8 * n
        self._fill(hsize)
        lens = _lens_struct(n).unpack_from(self.rbuf, _PREFIX.size)
        if sum(lens) != total:
            raise ConnectionResetError("message frame lengths do not add up")
        if total > limits.value(limits.MESSAGE_BYTES):
            raise ConnectionResetError(f"a reply of {total} bytes exceeds {limits.MESSAGE_BYTES.name}")
        if total > _BIG:
            buf = np.empty(total, np.uint8)
            have = min(len(self.rbuf) - hsize, total)
            buf[:have] = np.frombuffer(self.rbuf, np.uint8, have, hsize)
            del self.rbuf[:hsize + have]
            view = memoryview(buf)
            pos = have
            while pos < total:
                pos += self._recv_into(view[pos:])
        else:
            self._fill(hsize + total)
            with memoryview(self.rbuf) as whole:
                view = memoryview(bytes(whole[hsize:hsize + total]))
            del self.rbuf[:hsize + total]
        return _split(view, lens)

    def close(self, linger=None) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def _whole_message(view: memoryview, pos: int, end: int) -> Optional[tuple]:
    """(frames, end position) of a message of at most _BIG bytes (and within the size limit)
    found whole in view[pos:end], else None: the caller's general path reads, checks and
    refuses what this does not take."""
    if end - pos < _PREFIX.size:
        return None
    total, n = _PREFIX.unpack_from(view, pos)
    start = pos + _PREFIX.size + 8 * n
    if not 0 < n <= MAX_FRAMES or start + total > end or total > min(_BIG, limits.value(limits.MESSAGE_BYTES)):
        return None
    lens = _lens_struct(n).unpack_from(view, pos + _PREFIX.size)
    if sum(lens) != total:
        return None
    return _split(memoryview(bytes(view[start:start + total])), lens), start + total


def _split(view: memoryview, lens) -> list:
    frames, pos = [], 0
    for ln in lens:
        frames.append(view[pos:pos + ln])
        pos += ln
    return frames


class Untrusted(Exception):
    """The process at the other end of a same-host socket is not the server it should be (its
    user id, or its proof of key): the text says how."""


def connect(path: str, timeout_s: float, io_timeout_s: Optional[float] = None) -> Conn:
    """A connection to the server listening at `path`; OSError when none answers in time,
    Untrusted when the process listening there runs as another user than sockets.SERVER_UID or,
    with keys on, does not prove the cluster's key (auth.py). Its sends, and its reads of a
    message begun, then wait at most `io_timeout_s` (a server stopped mid-message must not hold
    its client forever)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout_s)
        sock.connect(path)
        sock.settimeout(None)
        uid = peer_cred(sock)[1]
        if uid is not None and uid != sockets.SERVER_UID:
            raise Untrusted(f"the process listening on {path} runs as user id {uid}, not {sockets.SERVER_UID} "
                            "(TENSORWEAVE_SERVER_UID): not trusted with this client's messages")
        conn = Conn(sock, io_timeout_s if io_timeout_s is not None else timeout_s)
        k = auth.keys()
        if k is not None:
            hello, nonce = auth.client_hello(k)
            conn.send(hello)
            try:
                conn.send(auth.client_proof(k, nonce, conn.read()))
            except auth.HandshakeFailed as e:
                raise Untrusted(f"the handshake failed for authentication: {e}") from None
            except (OSError, TimeoutError):
                raise Untrusted("the handshake failed for authentication: the task closed the connection (does "
                                "it serve without authentication, or with keys this client has none of?)") from None
        conn.io_timeout_ms = -1 if io_timeout_s is None else max(1, int(io_timeout_s * 1000))
    except BaseException:
        sock.close()
        raise
    return conn


# -- the server's end ---------------------------------------------------------------------------
_PREFIX_STATE, _LENS, _SMALL_BODY, _BIG_BODY, _REFUSED_HEAD, _DISCARD = range(6)


class ServerConn:
    """A client's connection, served by the IO thread (reads) and by whichever thread replies
    (writes). Nothing here ever waits: `pump` reads what the socket has, `queue` writes what
    the socket takes and keeps the rest; the rest is written by the IO thread when the socket
    is writable again, or by a pool thread that waits for room itself (`wait_written`)."""

    __slots__ = ("sock", "fd", "peer_pid", "inflight", "rbuf", "last_read", "_state", "_need", "_total", "_lens",
                 "_big", "_big_have", "_discard", "_refused_head", "_refusal", "_chunk", "_chunk_view",
                 "wlock", "out", "out_bytes", "last_write", "io_wants_write", "writer_waiting", "closed", "ended",
                 "listener", "client_key", "expected_proof")

    def __init__(self, sock: socket.socket, peer_pid: int = 0, listener: Optional["Listener"] = None):
        sock.setblocking(False)
        self.sock = sock
        self.listener = listener
        self.fd = sock.fileno()
        self.peer_pid = peer_pid
        self.inflight: dict = {}          # request id -> RequestContext (cancelled when it closes)
        self.rbuf = bytearray()
        self.last_read = time.monotonic()
        self._state = _PREFIX_STATE
        self._need = _PREFIX.size
        self._total = 0
        self._lens: tuple = ()
        self._big: Optional[memoryview] = None
        self._big_have = 0
        self._discard = 0
        self._refused_head: Optional[bytes] = None
        self._refusal: Optional[errors.OpError] = None
        self._chunk = bytearray(_CHUNK)
        self._chunk_view = memoryview(self._chunk)
        self.wlock = threading.Lock()
        self.out: collections.deque = collections.deque()   # memoryviews not yet written
        self.out_bytes = 0
        self.last_write = time.monotonic()
        self.io_wants_write = False       # the IO thread watches for room and writes the rest
        self.writer_waiting = False       # a pool thread does (wait_written)
        self.closed = False
        self.client_key: Optional[bytes] = None       # with keys on: the client's, once it proved it
        self.expected_proof: Optional[bytes] = None   # with keys on: the proof its hello was answered for
        self.ended: Optional[str] = None  # why no more can be read (the peer closed, broke the framing)

    # -- reading (the IO thread only) --------------------------------------------------------
    def mid_message(self) -> bool:
        """Whether a message has begun and not been read whole (a silent peer stalls here)."""
        return self._state != _PREFIX_STATE or bool(self.rbuf)

    def pump(self, hung_up: bool = False) -> list:
        """Reads what the socket has, up to a budget; returns the messages it completed (each
        a list of frames, or a Refused). At the connection's end, or when the peer broke the
        framing, `ended` says why (the messages completed before it are still returned)."""
        out: list = []
        try:
            self._pump(out, hung_up)
        except (OSError, ValueError, struct.error) as e:
            self.ended = f"{type(e).__name__}: {e}"
        return out

    def _pump(self, out: list, hung_up: bool) -> None:
        budget = _READ_BUDGET
        drained = False
        while budget > 0 and not drained:
            try:
                if self._state == _BIG_BODY:
                    ask = self._total - self._big_have
                    k = self.sock.recv_into(self._big[self._big_have:])
                elif self._state == _DISCARD:
                    ask = min(_CHUNK, self._discard)
                    k = self.sock.recv_into(self._chunk_view, ask)
                else:
                    ask = _CHUNK
                    k = self.sock.recv_into(self._chunk_view)
            except (BlockingIOError, InterruptedError):
                break
            if k == 0:
                raise ConnectionResetError("connection closed by the peer")
            # A short read took all the socket held: the next one would only fail with
            # EAGAIN (a syscall and an exception per message); the poll, level-triggered,
            # reports whatever comes later. But a peer that hung up (the poll said so) is read
            # to its end now: what it asked before it went is not to be run.
            drained = k < ask and not hung_up
            budget -= k
            self.last_read = time.monotonic()
            if self._state == _BIG_BODY:
                self._big_have += k
                if self._big_have == self._total:
                    out.append(_split(self._big, self._lens))
                    self._big = None
                    self._expect_prefix()
                continue
            if self._state == _DISCARD:
                self._discard -= k
                if self._discard == 0:
                    out.append(Refused(self._refused_head, self._refusal))
                    self._expect_prefix()
                continue
            pos = 0
            if self._state == _PREFIX_STATE and not self.rbuf:   # whole messages, without the states
                while (whole := _whole_message(self._chunk_view, pos, k)) is not None:
                    out.append(whole[0])
                    pos = whole[1]
                if pos == k:
                    continue
            self.rbuf += self._chunk_view[pos:k]
            self._parse(out)

    def _expect_prefix(self) -> None:
        self._state, self._need = _PREFIX_STATE, _PREFIX.size
        self._refused_head = self._refusal = None

    def _parse(self, out: list) -> None:
        """Moves through the states as far as the buffered bytes allow."""
        rbuf = self.rbuf
        while len(rbuf) >= self._need:
            state = self._state
            if state == _PREFIX_STATE:
                total, n = _PREFIX.unpack_from(rbuf, 0)
                if n == 0 or n > MAX_FRAMES:
                    raise ConnectionResetError(f"malformed message prefix ({n} frames, {total} bytes)")
                self._total = total
                self._state, self._need = _LENS, _PREFIX.size + 8 * n
            elif state == _LENS:
                n = (self._need - _PREFIX.size) // 8
                self._lens = _lens_struct(n).unpack_from(rbuf, _PREFIX.size)
                del rbuf[:self._need]
                if sum(self._lens) != self._total:
                    raise ConnectionResetError("message frame lengths do not add up")
                self._begin_body(out)
            elif state == _SMALL_BODY:
                total = self._total
                with memoryview(rbuf) as whole:
                    view = memoryview(bytes(whole[:total]))
                del rbuf[:total]
                out.append(_split(view, self._lens))
                self._expect_prefix()
            elif state == _REFUSED_HEAD:
                head_len = self._lens[0]
                self._refused_head = bytes(rbuf[:head_len])
                del rbuf[:head_len]
                self._discard = self._total - head_len
                self._skip_buffered(out)
            else:   # (_BIG_BODY and _DISCARD take their bytes in pump)
                return

    def _begin_body(self, out: list) -> None:
        total, rbuf = self._total, self.rbuf
        limit = limits.value(limits.MESSAGE_BYTES)
        refusal = None
        if total > limit:
            refusal = limits.exceeded(limits.MESSAGE_BYTES, total, "message")
        elif total > _BIG:
            try:
                buf = np.empty(total, np.uint8)
            except MemoryError:
                refusal = errors.ResourceExhaustedError(
                    None, None, f"message of {total} bytes: out of memory to receive it")
            else:
                have = min(len(rbuf), total)
                buf[:have] = np.frombuffer(rbuf, np.uint8, have)
                del rbuf[:have]
                if have == total:   # (the whole of it was buffered already)
                    out.append(_split(memoryview(buf), self._lens))
                    self._expect_prefix()
                    return
                self._big, self._big_have = memoryview(buf), have
                self._state, self._need = _BIG_BODY, 0
                return
        if refusal is None:
            self._state, self._need = _SMALL_BODY, total
            return
        # Refused: its header is read for the request id (when it is small), the rest skipped.
        if self._lens[0] > _REFUSED_HEAD_MAX:
            raise ConnectionResetError(f"{refusal.message}; its header alone is {self._lens[0]} bytes")
        self._refusal = refusal
        self._state, self._need = _REFUSED_HEAD, self._lens[0]

    def _skip_buffered(self, out: list) -> None:
        skip = min(self._discard, len(self.rbuf))
        del self.rbuf[:skip]
        self._discard -= skip
        if self._discard == 0:
            out.append(Refused(self._refused_head, self._refusal))
            self._expect_prefix()
        else:
            self._state, self._need = _DISCARD, 0

    # -- writing (any thread) ---------------------------------------------------------------
    def queue(self, frames: list, on_io_thread: bool) -> bool:
        """Queues one message and writes what the socket takes now. Returns True when the
        caller must see the rest written: the IO thread by watching for room (on_writable),
        a pool thread by waiting for it (wait_written); False when nothing is left, or when
        another thread already sees to it."""
        head, total = _prefix(frames)
        with self.wlock:
            if self.closed:
                return False
            if not self.out:
                self.last_write = time.monotonic()
            if total <= SMALL:
                self.out.append(memoryview(head + b"".join(frames)))
            else:
                self.out.append(memoryview(head))
                self.out.extend(f if isinstance(f, memoryview) else memoryview(f) for f in frames)
            self.out_bytes += len(head) + total
            self._flush_locked()
            if not self.out or self.writer_waiting or self.io_wants_write:
                return False
            if on_io_thread:
                self.io_wants_write = True
            else:
                self.writer_waiting = True
            return True

    def _flush_locked(self) -> None:
        out = self.out
        while out:
            try:
                k = self.sock.sendmsg(list(itertools.islice(out, _IOV_MAX)) if len(out) > 1 else (out[0],))
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self._drop_output_locked()   # the peer went away: nobody will read these
                return
            self.out_bytes -= k
            self.last_write = time.monotonic()
            while k:
                first = out[0]
                if k >= first.nbytes:
                    k -= first.nbytes
                    out.popleft()
                else:
                    out[0] = first[k:]
                    k = 0

    def _drop_output_locked(self) -> None:
        self.out.clear()
        self.out_bytes = 0
        self.io_wants_write = False

    def on_writable(self) -> bool:
        """The IO thread saw room: writes more; returns whether it should keep watching."""
        with self.wlock:
            if not self.closed:
                self._flush_locked()
            if self.out and not self.closed:
                return True
            self.io_wants_write = False
            return False

    def wait_written(self, stall_s: float) -> None:
        """A pool thread whose queue() returned True: writes the rest as room comes, until
        nothing is left; a peer that takes nothing for `stall_s` is cut off (its connection
        shut down, which the IO thread then sees and cleans up)."""
        while True:
            ready = zmq.zmq_poll([(self.fd, zmq.POLLOUT)], int(min(stall_s, 1.0) * 1000))
            with self.wlock:
                if not self.closed and ready:
                    self._flush_locked()
                stalled = not self.closed and self.output_stalled(time.monotonic(), stall_s)
                if stalled:
                    self._drop_output_locked()
                if self.closed or not self.out:
                    self.writer_waiting = False
                    break
        if stalled:
            self.shutdown()

    def output_stalled(self, now: float, stall_s: float) -> bool:
        """Whether replies wait and the peer has taken none of them for `stall_s`."""
        return bool(self.out) and now - self.last_write > stall_s

    def shutdown(self) -> None:
        """Ends the connection from any thread; the IO thread sees its end and cleans up."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- the origin of its requests (transports.py) ---------------------------------------------
    def decode(self, frames: list):
        return wire.decode(frames, shm.attached())

    def encode(self, message: dict) -> tuple:
        """Frames, leases, shared bytes: large tensors go in shared memory (shm.py)."""
        return wire.encode_shared(message, *shm.encoder_for(self.peer_pid))

    def reply(self, ident: bytes, frames: list, on_io: bool) -> None:
        if not self.queue(frames, on_io):
            return
        if on_io:
            self.listener.server.set_events(self.fd, _INOUT)   # the rest goes out as room comes
        else:
            self.wait_written(sockets.PEER_STALL_S)

    def track(self, ident: bytes, rid: int, rctx) -> None:
        self.inflight[rid] = rctx   # (the connection's end is the client's: no lease needed)

    def untrack(self, ident: bytes, rid: int) -> None:
        self.inflight.pop(rid, None)

    def tracked(self, ident: bytes, rid: int):
        return self.inflight.get(rid)

    def close(self) -> None:
        with self.wlock:
            self.closed = True
            self._drop_output_locked()
            try:
                self.sock.close()
            except OSError:
                pass


def listen(path: str) -> socket.socket:
    """A non-blocking listening socket at `path` (replacing a stale file), readable and
    writable by this user only; OSError when it cannot be made."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        old = os.umask(0o177)   # the socket file is created 0600
        try:
            sock.bind(path)
        finally:
            os.umask(old)
        sock.listen(128)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def _file_id(path: str) -> Optional[tuple]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


# -- the transport (transports.py) ----------------------------------------------------------------
class Route(transports.Route):
    """A same-host peer's Unix socket, for one channel (inproc.py's routes are the same but for
    how they dial)."""

    name = "unix"

    def __init__(self, channel, address: str):
        super().__init__(channel)
        self._address = address   # its socket is looked for once the peer is up (sockets.uds_path_of)
        self.path: Optional[str] = None
        self._stale: Optional[tuple] = None   # (inode, mtime) of a socket file nobody listened on

    def available(self) -> bool:
        """A peer not listening yet (not started) is looked for again on later calls, not
        given up for the next route for good."""
        if self.path is None:
            candidate = uds_path_of(self._address)
            if candidate is not None and _file_id(candidate) not in (None, self._stale):
                self.path = candidate
        return self.path is not None

    def connect(self, wait_s: float) -> Optional[Conn]:
        """A peer that takes no connection is retried until wait_s."""
        deadline = time.monotonic() + wait_s
        while True:
            path = self.path   # (one file for this attempt: another thread may find it stale meanwhile)
            if path is None:
                return None
            try:
                conn = self._dial(path, max(0.05, min(1.0, deadline - time.monotonic())))
            except ConnectionRefusedError:
                self._refused(path)
                return None
            except Untrusted as e:
                raise transports.Unreachable(str(e)) from None
            except OSError as e:
                if time.monotonic() >= deadline:
                    why = "timed out" if isinstance(e, TimeoutError) else f"{type(e).__name__}: {e.strerror or e}"
                    raise transports.Unreachable(f"no connection within {wait_s:g} s ({why})") from None
                time.sleep(0.05)
                continue
            conn.rank = self.rank
            return conn

    def push_conn(self) -> Optional[Conn]:
        """None on an IO thread, which never writes to a Unix socket that could be full (the
        next route, ZeroMQ, queues the message in its own IO thread), and for a peer that
        takes no connection now: a push never waits for its receiver."""
        if on_io_thread():
            return None
        while True:
            try:
                conn = self._push_free.pop()
            except IndexError:
                break
            if not conn.ended():
                return conn
            conn.close()   # at its end: the peer went away
        path = self.path
        if path is None:
            return None
        try:
            conn = self._dial(path, 0.5)
        except (OSError, Untrusted):
            return None
        conn.rank = self.rank
        return conn

    def peer_pid(self) -> Optional[int]:
        """The pid of the process serving the peer's socket (its credentials, SO_PEERCRED), or
        None when no connection to it is to be had now."""
        conn = self.push_conn()
        if conn is None:
            return None
        pid = conn.peer_pid
        self.give_back(conn)
        return pid or None

    def _dial(self, path: str, timeout_s: float) -> Conn:
        if not sockets.trusted(os.path.dirname(path), sockets.SERVER_UID):
            raise Untrusted(f"{os.path.dirname(path)} is no longer a private directory of user id "
                            f"{sockets.SERVER_UID}: its socket is not used")
        return connect(path, timeout_s, self.channel.connect_timeout_s)

    def _refused(self, path: str) -> None:
        """A file left by a server that is gone (its port may serve another one now, whose
        file is elsewhere): the address is reached the next way until the file is made again.
        (Threads dialling at once may each be refused: the first one says so.)"""
        if self.path == path:
            self._stale, self.path = _file_id(path), None


class Listener:
    """A server's Unix socket and its clients' connections, served by the IO role: a peer that
    stops mid-message or leaves its replies unread for PEER_STALL_S is dropped; a connection
    from another user id is refused; a client that goes away closes its connection, which
    cancels its calls at once."""

    def __init__(self, server, sock: socket.socket, path: str):
        self.server = server
        self._sock = sock
        self._path = path
        self._conns: dict = {}   # fd -> ServerConn
        server.watch(sock.fileno(), self._accept)

    def _accept(self, ev: int) -> None:
        while True:
            try:
                sock, _ = self._sock.accept()
            except OSError:   # (BlockingIOError: none left)
                return
            pid, uid = peer_cred(sock)
            if uid is not None and uid != os.getuid():
                _log.warning("transport: refused a same-host connection from user id %d", uid)
                sock.close()
                continue
            conn = ServerConn(sock, pid, self)
            if auth.keys() is not None:
                conn.expected_proof = b""   # (its hello comes first)
            self.adopt(conn)

    def adopt(self, conn: ServerConn) -> None:
        """Serves a client's connection from now on."""
        self._conns[conn.fd] = conn
        self.server.watch(conn.fd, functools.partial(self._on_conn_event, conn))

    def _on_conn_event(self, conn: ServerConn, ev: int) -> None:
        if ev & _OUT and not conn.on_writable():
            self.server.set_events(conn.fd, _IN)
        if not ev & _READABLE:
            return
        messages = conn.pump(bool(ev & _HUNG_UP))
        if messages and conn.out_bytes > _MAX_UNREAD_REPLY_BYTES:
            _log.warning("transport: dropping a same-host peer that sends on and reads no replies")
            self._drop(conn)
            return
        server = self.server
        for msg in messages:
            if conn.closed:
                return
            if conn.expected_proof is not None or (type(msg) is not Refused and len(msg[0]) == _HELLO_SIZE
                                                   and bytes(msg[0]) == auth.HELLO):
                self._handshake(conn, msg)
                continue
            if type(msg) is Refused:
                server.refuse(conn, b"", msg.request_id(), msg.error)
            elif conn.ended is None:
                server.on_message(msg, conn, b"")
            else:
                # The client is gone: what it pushed is taken, what it asked is not run (a
                # client that gave up on a call closes its connection: the call is cancelled).
                server.on_message(msg, conn, b"", oneway_only=True)
        if conn.ended is not None:
            # The client went away (or broke the framing): its calls still running are cancelled.
            self._drop(conn)

    def _handshake(self, conn: ServerConn, msg) -> None:
        """With keys on, a connection's first messages: the client's hello (answered with the
        server's welcome) and its proof; anything else, or a refused key, ends the connection."""
        if type(msg) is not Refused and conn.expected_proof in (None, b"") and bytes(msg[0]) == auth.HELLO:
            reply, conn.expected_proof, conn.client_key = auth.server_welcome(msg)
            conn.queue(reply, True)
            if conn.expected_proof is not None:
                return
            _log.warning("transport: refused a same-host connection: %s", bytes(reply[1]).decode())
        elif type(msg) is not Refused and conn.expected_proof and len(msg) == 1 \
                and hmac.compare_digest(bytes(msg[0]), conn.expected_proof):
            conn.expected_proof = None   # authenticated: its requests are served from now on
            return
        else:
            _log.warning("transport: refused a same-host connection that did not prove a key")
            head = bytes(msg[0]) if type(msg) is not Refused and len(msg[0]) <= _REFUSED_HEAD_MAX else None
            rid = Refused(head, _UNPROVEN).request_id()
            if rid >= 0:   # (a client without keys is told why)
                self.server.refuse(conn, b"", rid, _UNPROVEN)
        conn.shutdown()   # (the IO role sees its end and drops it; the refusal above is written first)
        conn.expected_proof = b"\0"   # (nothing more of it is served)

    def _drop(self, conn: ServerConn) -> None:
        if self._conns.pop(conn.fd, None) is conn:
            self.server.unwatch(conn.fd)
        conn.close()
        for rctx in list(conn.inflight.values()):
            rctx.cancel()
        shm.sweep()   # (the client may have died: the shared buffers it sent from go with it)

    def woken(self) -> None:
        pass   # (its descriptors are level-triggered)

    def renew(self, waits: list, now: float) -> None:
        pass   # (its calls hold no leases)

    def sweep(self, now: float) -> None:
        allowed = auth.authorized() if auth.keys() is not None else None
        for conn in list(self._conns.values()):
            if allowed is not None and conn.client_key is not None and conn.client_key not in allowed:
                _log.warning("transport: closing a same-host connection whose client key was revoked")
                self._drop(conn)
                continue
            if (conn.mid_message() and now - conn.last_read > sockets.PEER_STALL_S) \
                    or conn.output_stalled(now, sockets.PEER_STALL_S):
                _log.warning("transport: dropping a same-host peer that stalled for %.0f s", sockets.PEER_STALL_S)
                self._drop(conn)

    def close(self) -> None:
        self._sock.close()
        for c in list(self._conns.values()):
            c.close()
        try:
            os.unlink(self._path)
        except OSError:
            pass


class Unix(transports.Transport):
    """A same-host peer over its Unix socket while TENSORWEAVE_TRANSPORT is auto (the default);
    every server on this host listens on one unless it is tcp."""

    name = "unix"
    preference = 20

    def route(self, channel, address: str) -> Optional[Route]:
        if sockets.TRANSPORT != "auto" or sockets.same_host_port(address) is None:
            return None
        return Route(channel, address)

    def listen(self, server, address: str, bind: str) -> Optional[Listener]:
        """None, with a warning that says why, when the socket cannot be made: same-host
        clients then reach the server over ZeroMQ."""
        port = transports.port_of(address)
        if port is None or sockets.TRANSPORT == "tcp":
            return None
        try:
            path = sockets.uds_path_for_port(port)
            sock = listen(path)
        except OSError as e:
            _log.warning("transport: could not open the same-host socket for port %d (%s): same-host clients "
                         "reach this server over ZeroMQ", port, e)
            return None
        return Listener(server, sock, path)


transports.register(Unix())
