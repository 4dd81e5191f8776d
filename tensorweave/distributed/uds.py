"""Same-host fast path: the transport's messages over a Unix stream socket, without ZeroMQ.

A ZeroMQ message crosses two ZeroMQ IO threads (the sender's and the receiver's) besides the
two Python threads: on this project's 2-core machine a ZeroMQ ipc:// round trip costs ~90 us
against ~17 us for a plain AF_UNIX one. Every server also listens on
$TMPDIR/tensorweave-ipc/<port>.uds (sockets.uds_path_for_port), and a client on the same
host (TENSORWEAVE_TRANSPORT auto, the default) sends its requests, pings and pushes there;
tcp:// stays for other hosts.

A message is the same frames as on ZeroMQ (wire.encode), framed as
``<u64 payload bytes><u32 frame count><u64 length per frame>`` and the frames back to back.
Frames above 1 MiB are received straight into one fresh buffer (one kernel copy, no more).
"""
from __future__ import annotations

import os
import socket
import struct
import threading
from typing import Optional

import numpy as np

from tensorweave.distributed.sockets import MAX_MESSAGE_BYTES

_PREFIX = struct.Struct("<QI")
SMALL = 1 << 16          # messages up to this size are written with one sendall
_BIG = 1 << 20           # payloads above this size are read straight into their own buffer
MAX_FRAMES = 1 << 20


class Conn:
    """One connected Unix stream socket: whole messages in and out. Writes are locked (a
    server's pool threads reply on it); reads belong to one thread at a time."""

    __slots__ = ("sock", "rbuf", "wlock", "inflight", "fd", "_chunk", "_chunk_view")

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.fd = sock.fileno()
        self.rbuf = bytearray()
        self.wlock = threading.Lock()
        self.inflight: dict = {}    # server side: request id -> RequestContext
        self._chunk = bytearray(SMALL)   # reads land here (a recv(n) would allocate n bytes each time)
        self._chunk_view = memoryview(self._chunk)

    def _recv_some(self) -> None:
        k = self.sock.recv_into(self._chunk_view)
        if k == 0:
            raise ConnectionResetError("connection closed by the peer")
        self.rbuf += self._chunk_view[:k]

    def send(self, frames: list) -> int:
        """Writes one message (blocking until the kernel took it); returns its payload size."""
        lens = [f.nbytes if isinstance(f, memoryview) else len(f) for f in frames]
        total = sum(lens)
        head = _PREFIX.pack(total, len(frames)) + struct.pack(f"<{len(frames)}Q", *lens)
        with self.wlock:
            if total <= SMALL:
                self.sock.sendall(head + b"".join(frames))
            else:
                self.sock.sendall(head)
                for f in frames:
                    self.sock.sendall(f)
        return total

    def pump(self) -> None:
        """Reads what the socket has (it is readable); raises ConnectionError at its end."""
        self._recv_some()

    def _fill(self, need: int) -> None:
        while len(self.rbuf) < need:
            self._recv_some()

    def has_message(self) -> bool:
        """Whether the bytes read so far begin a message whose header is complete."""
        if len(self.rbuf) < _PREFIX.size:
            return False
        total, n = _PREFIX.unpack_from(self.rbuf, 0)
        if n > MAX_FRAMES or n == 0 or total > MAX_MESSAGE_BYTES:
            raise ConnectionResetError(f"malformed message prefix ({n} frames, {total} bytes)")
        return len(self.rbuf) >= _PREFIX.size + 8 * n

    def read(self) -> list:
        """The next message's frames (memoryviews), waiting for the rest of it."""
        self._fill(_PREFIX.size)
        total, n = _PREFIX.unpack_from(self.rbuf, 0)
        if n > MAX_FRAMES:
            raise ConnectionResetError(f"message of {n} frames")
        hsize = _PREFIX.size + 8 * n
        self._fill(hsize)
        lens = struct.unpack_from(f"<{n}Q", self.rbuf, _PREFIX.size)
        if sum(lens) != total:
            raise ConnectionResetError("message frame lengths do not add up")
        if total > _BIG:
            buf = np.empty(total, np.uint8)
            have = min(len(self.rbuf) - hsize, total)
            buf[:have] = np.frombuffer(self.rbuf, np.uint8, have, hsize)
            del self.rbuf[:hsize + have]
            view = memoryview(buf)
            pos = have
            while pos < total:
                k = self.sock.recv_into(view[pos:], total - pos)
                if k == 0:
                    raise ConnectionResetError("connection closed by the peer")
                pos += k
        else:
            self._fill(hsize + total)
            with memoryview(self.rbuf) as whole:
                view = memoryview(bytes(whole[hsize:hsize + total]))
            del self.rbuf[:hsize + total]
        frames, pos = [], 0
        for ln in lens:
            frames.append(view[pos:pos + ln])
            pos += ln
        return frames

    def close(self, linger=None) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def connect(path: str, timeout_s: float) -> Conn:
    """A connection to the server listening at `path`; OSError when none answers in time."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout_s)
        sock.connect(path)
        sock.settimeout(None)
    except BaseException:
        sock.close()
        raise
    return Conn(sock)


def listen(path: str) -> Optional[socket.socket]:
    """A non-blocking listening socket at `path` (replacing a stale file), or None."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(path)
        sock.listen(128)
        sock.setblocking(False)
        return sock
    except OSError:
        return None
