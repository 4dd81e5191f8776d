"""Raw peers for tests: they speak the transport's wire format over ZeroMQ (tcp://) or the
same-host Unix socket without tensorweave's client side, so that a test can send what a
well-behaved client never would (half a message, a lie about a size, no reads at all).

    peer = RawPeer("uds", "localhost:1234")     # or "tcp"
    peer.send(request("get_status", {}))        # frames: [header, tensors...]
    reply = peer.reply(timeout=2.0)             # the decoded reply map, or None
    peer.send_bytes(b"...")                     # Unix socket only: anything at all
    peer.close()
"""
from __future__ import annotations

import os
import socket
import struct
import time
from typing import Optional

import msgpack
import zmq

from tensorweave.distributed import sockets, wire

TRANSPORTS = ("tcp", "uds")


def request(method: str, args: dict, rid: int = 7) -> list:
    """The frames of a request (tensors anywhere in args travel as frames)."""
    return wire.encode({"id": rid, "m": method, "a": args})


def oneway(method: str, args) -> list:
    return wire.encode({"m": method, "a": args})


def raw_header(obj) -> bytes:
    """A header frame packed as is (no checks, no tensors)."""
    return msgpack.packb(obj, use_bin_type=True)


def uds_bytes(frames: list) -> bytes:
    """One message as the Unix-socket transport frames it."""
    lens = [len(f) if not isinstance(f, memoryview) else f.nbytes for f in frames]
    return struct.pack("<QI", sum(lens), len(frames)) + struct.pack(f"<{len(frames)}Q", *lens) + b"".join(
        bytes(f) for f in frames)


def uds_path(address: str) -> str:
    return sockets.uds_path_for_port(int(address.rpartition(":")[2]))


class RawPeer:
    """A raw client of one server, over "tcp" (a ZeroMQ DEALER) or "uds" (a plain AF_UNIX socket)."""

    def __init__(self, transport: str, address: str, timeout: float = 5.0):
        self.transport = transport
        self.address = address
        self._buf = b""
        if transport == "uds":
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(uds_path(address))
        else:
            self.sock = zmq.Context.instance().socket(zmq.DEALER)
            self.sock.setsockopt(zmq.LINGER, 0)
            self.sock.connect("tcp://" + address)

    def send(self, frames: list) -> None:
        if self.transport == "uds":
            self.sock.sendall(uds_bytes(frames))
        else:
            self.sock.send_multipart([bytes(f) for f in frames])

    def send_bytes(self, data: bytes) -> None:
        assert self.transport == "uds", "raw bytes only go over the Unix socket"
        self.sock.sendall(data)

    def reply(self, timeout: float = 3.0) -> Optional[dict]:
        """The next reply, decoded, or None when none comes in time (or the server hung up)."""
        frames = self.reply_frames(timeout)
        return None if frames is None else wire.decode(frames)

    def reply_frames(self, timeout: float = 3.0) -> Optional[list]:
        if self.transport != "uds":
            if not self.sock.poll(int(timeout * 1000), zmq.POLLIN):
                return None
            return self.sock.recv_multipart()
        deadline = time.monotonic() + timeout
        while True:
            msg = self._parse()
            if msg is not None:
                return msg
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                return None
            except OSError:
                return None
            if not chunk:
                return None
            self._buf += chunk

    def drain(self) -> list:
        """The replies that have come, without waiting (a peer the server hung up on: raises
        ConnectionError)."""
        out = []
        if self.transport != "uds":
            while self.sock.poll(0, zmq.POLLIN):
                out.append(self.sock.recv_multipart())
            return out
        self.sock.setblocking(False)
        try:
            while True:
                try:
                    chunk = self.sock.recv(1 << 16)
                except (BlockingIOError, InterruptedError):
                    break
                if not chunk:
                    raise ConnectionResetError("the server hung up")
                self._buf += chunk
        finally:
            self.sock.setblocking(True)
        while True:
            msg = self._parse()
            if msg is None:
                return out
            out.append(msg)

    def _parse(self) -> Optional[list]:
        if len(self._buf) < 12:
            return None
        total, n = struct.unpack_from("<QI", self._buf, 0)
        head = 12 + 8 * n
        if len(self._buf) < head + total:
            return None
        lens = struct.unpack_from(f"<{n}Q", self._buf, 12)
        frames, pos = [], head
        for ln in lens:
            frames.append(self._buf[pos:pos + ln])
            pos += ln
        self._buf = self._buf[pos:]
        return frames

    def hung_up(self, timeout: float = 3.0) -> bool:
        """Unix socket: whether the server closes the connection within `timeout` (replies
        that come first are skipped)."""
        self.sock.settimeout(timeout)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                if not self.sock.recv(1 << 16):
                    return True
        except socket.timeout:
            return False
        except OSError:
            return True
        return False

    def close(self) -> None:
        if self.transport == "uds":
            self.sock.close()
        else:
            self.sock.close(0)


def rss_bytes(pid: int) -> int:
    """Resident set size of a process (Linux)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def thread_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))
