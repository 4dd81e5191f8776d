"""What both ends of the transport share: the leaf under channel.py (the client side) and
transport.py (the server side), which import it and never each other.

Messages (every one is wire.encode'd frames: a msgpack header, then one frame per tensor):
  request  {"id": int, "m": method, "a": {args}}
  reply    {"id": int, "ok": True, "r": result} | {"id": int, "ok": False, "code": int, "msg": str}
  one-way  {"m": method, "a": args}     (no id, never answered: tensor pushes)

Timing: a client gives a peer DEFAULT_CONNECT_TIMEOUT_S to take a connection; while it awaits
a reply it pings the peer every PROBE_INTERVAL_S (which renews the server's lease on the call);
a server cancels a call whose lease went unrenewed for CLIENT_LEASE_S.

Where a peer is reached: other hosts over tcp://; a server on this host also serves a Unix
stream socket ($TMPDIR/tensorweave-ipc/<port>.uds, uds.py) and ZeroMQ ipc://.../<port>.sock.
TENSORWEAVE_TRANSPORT picks among them for same-host peers: auto (the Unix socket, the
default), ipc, or tcp.
"""
from __future__ import annotations

import os
import socket
import tempfile
import threading
from typing import Optional

import zmq

DEFAULT_CONNECT_TIMEOUT_S = 60.0
PROBE_INTERVAL_S = float(os.environ.get("TENSORWEAVE_PROBE_INTERVAL_S", "1.0"))
CLIENT_LEASE_S = float(os.environ.get("TENSORWEAVE_CLIENT_LEASE_S", "30.0"))
MAX_MESSAGE_BYTES = int(os.environ.get("TENSORWEAVE_MAX_MESSAGE_BYTES", str(16 << 30)))

IPC_DIR = os.path.join(tempfile.gettempdir(), "tensorweave-ipc")
TRANSPORT = os.environ.get("TENSORWEAVE_TRANSPORT", "auto")   # auto | tcp | ipc
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "0.0.0.0", "::1", "[::1]"}

EVENTS, POLLIN = int(zmq.EVENTS), int(zmq.POLLIN)   # plain ints: the enum wrappers cost
_SNDMORE, NOBLOCK = int(zmq.SNDMORE), int(zmq.NOBLOCK)


def zmq_context() -> zmq.Context:
    return zmq.Context.instance()


# -- frames -------------------------------------------------------------------------------------
def recv_frames(sock: zmq.Socket, flags: int = 0) -> list:
    """sock.recv_multipart(flags, copy=False), reading each frame's `more` flag rather than
    asking the socket for ZMQ_RCVMORE through the enum wrappers."""
    frame = sock.recv(flags, copy=False)
    frames = [frame]
    while frame.more:
        frame = sock.recv(0, copy=False)
        frames.append(frame)
    return frames


def send_frames(sock: zmq.Socket, frames: list, flags: int = 0) -> None:
    """sock.send_multipart(frames, flags, copy=False) without its enum arithmetic per frame
    (the first frame may raise zmq.Again under NOBLOCK; the rest of a message then cannot)."""
    last = len(frames) - 1
    send = sock.send
    for i, frame in enumerate(frames):
        send(frame, flags | _SNDMORE if i < last else flags, copy=False)


# -- the server's IO thread ---------------------------------------------------------------------
_io_thread = threading.local()   # .active on a server's IO thread, which must never wait


def mark_io_thread() -> None:
    """Called by a transport server's IO thread as it starts."""
    _io_thread.active = True


def on_io_thread() -> bool:
    """Whether the caller runs on a transport server's IO thread (where nothing may block)."""
    return getattr(_io_thread, "active", False)


# -- where a peer is reached ----------------------------------------------------------------------
def ipc_path_for_port(port: int) -> str:
    """The ZeroMQ ipc:// socket file a server on this host binds for its port."""
    return os.path.join(IPC_DIR, f"{port}.sock")


def uds_path_for_port(port: int) -> str:
    """The Unix stream socket (uds.py) a server on this host listens on for its port."""
    return os.path.join(IPC_DIR, f"{port}.uds")


def _is_local_host(host: str) -> bool:
    if host in _LOCAL_HOSTS:
        return True
    try:
        return host in (socket.gethostname(), socket.getfqdn())
    except OSError:
        return False


def endpoint_of(address: str) -> str:
    """'host:port' (or 'grpc://host:port') -> the ZeroMQ endpoint a client connects to:
    ipc:// for a server on this host that serves one, else tcp://."""
    if "://" in address:
        scheme, _, rest = address.partition("://")
        if scheme in ("tcp", "ipc", "inproc"):
            return address
        address = rest
    host, _, port = address.rpartition(":")
    if TRANSPORT != "tcp" and port.isdigit() and _is_local_host(host):
        path = ipc_path_for_port(int(port))
        if os.path.exists(path) and _ipc_answers("ipc://" + path):
            return "ipc://" + path
    return f"tcp://{address}"


def uds_path_of(address: str, must_exist: bool = True) -> Optional[str]:
    """The Unix socket path of a same-host server at 'host:port' when it serves one (or, with
    must_exist=False, would serve one once up) and the transport is left to choose
    (TENSORWEAVE_TRANSPORT=auto), else None."""
    if TRANSPORT != "auto":
        return None
    if "://" in address:
        scheme, _, address = address.partition("://")
        if scheme != "grpc":   # an explicit tcp:// or ipc:// endpoint keeps ZeroMQ
            return None
    host, _, port = address.rpartition(":")
    if not port.isdigit() or not _is_local_host(host):
        return None
    path = uds_path_for_port(int(port))
    return path if not must_exist or os.path.exists(path) else None


def _ipc_answers(endpoint: str, timeout_s: float = 0.2) -> bool:
    """Whether a server listens on this ipc endpoint (a killed server leaves its file behind)."""
    sock = zmq_context().socket(zmq.DEALER)
    try:
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.IMMEDIATE, 1)
        sock.connect(endpoint)
        return bool(sock.poll(int(timeout_s * 1000), zmq.POLLOUT))
    finally:
        sock.close(0)
