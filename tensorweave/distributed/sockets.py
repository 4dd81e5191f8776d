"""What both ends of the transport and every transport share: the leaf under channel.py (the
client side), transport.py (the server side) and the transports (transports.py), which never
import channel.py or transport.py.

Messages (every one is wire.encode'd frames: a msgpack header, then one frame per tensor):
  request  {"id": int, "m": method, "a": {args}}
  reply    {"id": int, "ok": True, "r": result} | {"id": int, "ok": False, "code": int, "msg": str}
  one-way  {"m": method, "a": args}     (no id, never answered: tensor pushes)

  cancel   {"m": "cancel", "a": {"id": int}}   (one-way, ZeroMQ: the client gave up on that call)

Timing (each from the environment variable of the same name with a TENSORWEAVE_ prefix):
  CONNECT_TIMEOUT_S   a client gives a peer this long to take a connection (60; a Session's
                      ConfigProto may set its own, see master.connect_timeout_s)
  PROBE_INTERVAL_S    while a reply is awaited, the peer is pinged this often (1.0): the ping
                      renews the server's lease on the call and tells a restart (incarnation)
  CLIENT_LEASE_S      a server cancels a call whose lease went unrenewed this long (30)
  DEAD_PEER_S         a waiting call whose ZeroMQ connection has been down this long (the
                      process is gone: its host reset the connection) fails with
                      UnavailableError (0.5); checked every LIVENESS_CHECK_S
  HEARTBEAT_IVL_S, HEARTBEAT_TIMEOUT_S   ZeroMQ heartbeats (1.0, 3.0): a connection whose
                      peer answers none for the timeout (host down, network cut, process
                      stopped) is closed, which DEAD_PEER_S then reports
  PEER_STALL_S        a server drops a connection that stops mid-message, or leaves replies
                      unread, this long (30)
  SPIN_US             a wait for a same-host reply, and the server's wait for its next
                      message, first polls without sleeping this many microseconds when the
                      last such wait was as short (200; 0: never), and not for a second
                      after a yield between its polls found every core busy - see SpinPoll
  RECOVERY_TIMEOUT_S  a task not heard from this long is gone for good (600; read at each use,
                      recovery_timeout_s): a MonitoredSession stops recovering from its loss,
                      a collective group stops waiting for it to come up (docs/INTERNALS.md)
The size of one message is limited by framework/limits.MESSAGE_BYTES.

Where a peer is reached: other hosts over tcp://; a server on this host also serves a Unix
stream socket (<ipc dir>/<port>.uds, uds.py) and ZeroMQ ipc://<ipc dir>/<port>.sock, where
<ipc dir> is $TMPDIR/tensorweave-<uid>, private to the user (0700; private_dir: when it is not,
a private one beside it, which clients find by trusted_dirs). TENSORWEAVE_TRANSPORT
picks among them for same-host peers: auto (the Unix socket, the default), ipc, or tcp; inproc
reaches a server of the client's own process over a socket pair (inproc.py).
"""
from __future__ import annotations

import logging
import os
import socket
import stat
import tempfile
import threading
import time
from typing import Optional

import zmq

from tensorweave.distributed import auth



def _seconds(name: str, default: float) -> float:
    raw = os.environ.get("TENSORWEAVE_" + name, "")
    return float(raw) if raw.strip() else default


def recovery_timeout_s() -> float:
    """How long a lost task (or one never up) is waited for before it is taken as gone for good."""
    return _seconds("RECOVERY_TIMEOUT_S", 600.0)


DEFAULT_CONNECT_TIMEOUT_S = 60.0
PROBE_INTERVAL_S = _seconds("PROBE_INTERVAL_S", 1.0)
CLIENT_LEASE_S = _seconds("CLIENT_LEASE_S", 30.0)
DEAD_PEER_S = _seconds("DEAD_PEER_S", 0.5)
LIVENESS_CHECK_S = 0.25
PING_TIMEOUT_S = 2.0          # a liveness ping waits this long at most (a missed one is no verdict)
HEARTBEAT_IVL_S = _seconds("HEARTBEAT_IVL_S", 1.0)
HEARTBEAT_TIMEOUT_S = _seconds("HEARTBEAT_TIMEOUT_S", 3.0)
PEER_STALL_S = _seconds("PEER_STALL_S", 30.0)
SPIN_S = _seconds("SPIN_US", 200.0) * 1e-6
CONTENDED_YIELD_S = 0.001     # a spinning wait's yield this long: every core is busy (SpinPoll) ...
CONTENDED_PAUSE_S = 1.0       # ... and waits do not spin for this long
HANDSHAKE_S = 10.0            # a ZeroMQ connection that has not finished its handshake by then is dropped

IPC_DIR = os.path.join(tempfile.gettempdir(), f"tensorweave-{os.getuid()}")
# The user id same-host servers run as: a same-host socket is used only in that user's private
# directory and only when the process at its other end runs as that user (SO_PEERCRED).
SERVER_UID = int(os.environ.get("TENSORWEAVE_SERVER_UID", "").strip() or os.getuid())
TRANSPORT = os.environ.get("TENSORWEAVE_TRANSPORT", "auto")   # auto | tcp | ipc
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "0.0.0.0", "::1", "[::1]"}

EVENTS, POLLIN = int(zmq.EVENTS), int(zmq.POLLIN)   # plain ints: the enum wrappers cost
_SNDMORE, NOBLOCK = int(zmq.SNDMORE), int(zmq.NOBLOCK)


MAX_SOCKETS = 16384   # ZeroMQ's default is 1,023; each client connection holds a monitor socket too


def zmq_context() -> zmq.Context:
    """The process's ZeroMQ context, with room for MAX_SOCKETS sockets (set on first use: ZeroMQ
    takes the limit only before a context's first socket)."""
    ctx = zmq.Context.instance()
    if ctx is not _sized[0]:
        if ctx.get(zmq.MAX_SOCKETS) < MAX_SOCKETS:
            ctx.set(zmq.MAX_SOCKETS, MAX_SOCKETS)
        _sized[0] = ctx
    return ctx


_sized: list = [None]   # the context whose limit was set


def set_heartbeats(sock: zmq.Socket) -> None:
    """ZeroMQ heartbeats on a TCP connection: a peer that answers none for the timeout has its
    connection closed (ZeroMQ's IO thread does this, whatever Python is busy with)."""
    sock.setsockopt(zmq.HEARTBEAT_IVL, int(HEARTBEAT_IVL_S * 1000))
    sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, int(HEARTBEAT_TIMEOUT_S * 1000))
    sock.setsockopt(zmq.HEARTBEAT_TTL, int(HEARTBEAT_TIMEOUT_S * 1000))
    sock.setsockopt(zmq.HANDSHAKE_IVL, int(HANDSHAKE_S * 1000))


def trusted(path: str, uid: int) -> bool:
    """Whether `path` is a directory (not a link) of user `uid` that no one else may enter."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == uid and not st.st_mode & 0o077


def trusted_dirs(primary: str, uid: int) -> list:
    """The private directories of user `uid` named after `primary` (a path ending in
    "tensorweave-<uid>"): `primary` itself and the ones made in its place (`primary`-XXXX)
    when it was squatted, each only while it is a directory of that user, mode 0700, not a
    link (checked with lstat now: only that user, or root, can put a socket or file there)."""
    parent, base = os.path.split(primary)
    try:
        names = sorted(n for n in os.listdir(parent) if n.startswith(base + "-"))
    except OSError:
        names = []
    return [d for d in [primary] + [os.path.join(parent, n) for n in names] if trusted(d, uid)]


_private_lock = threading.Lock()
_private: dict = {}   # primary path -> the directory this process uses in its place
_log = logging.getLogger("tensorweave.distributed")


def private_dir(primary: str) -> str:
    """This user's directory `primary`, created 0700, when it is this user's, 0700 and no link
    (closed to others when it is ours but open); otherwise (another user made it first, or a
    link) a private directory `primary`-XXXX made in its place (tempfile.mkdtemp), found again
    by every process of this user (`trusted_dirs`), and a warning naming the squatted path.
    Checked again (lstat) on every call: the caller calls it before each use."""
    uid = os.getuid()
    with _private_lock:
        chosen = _private.get(primary)
        if chosen is not None and trusted(chosen, uid):
            return chosen
        try:
            os.mkdir(primary, 0o700)
        except FileExistsError:
            pass
        except OSError:
            pass   # (e.g. an unwritable parent: the fallback below says so)
        try:
            st = os.lstat(primary)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == uid and st.st_mode & 0o077:
                os.chmod(primary, 0o700)   # (lchmod is moot: lstat said it is no link)
        except OSError:
            pass
        if trusted(primary, uid):
            chosen = primary
        else:
            others = trusted_dirs(primary, uid)
            chosen = others[0] if others else tempfile.mkdtemp(prefix=os.path.basename(primary) + "-",
                                                                dir=os.path.dirname(primary))
            _log.warning("transport: %s is not a private directory of user %d (another user's, open to others, "
                         "or a link): using %s instead", primary, uid, chosen)
        _private[primary] = chosen
        return chosen


def ipc_dir() -> str:
    """The directory of this user's same-host sockets (see private_dir): $TMPDIR/tensorweave-<uid>,
    or a private one made in its place when that one cannot be trusted."""
    return private_dir(IPC_DIR)


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
_io_thread = threading.local()   # .active while a thread holds a server's IO role, which must never wait


def mark_io_thread(active: bool = True) -> None:
    """Called by the thread that takes (or gives up) a transport server's IO role."""
    _io_thread.active = active


def on_io_thread() -> bool:
    """Whether the caller runs on a transport server's IO thread (where nothing may block)."""
    return getattr(_io_thread, "active", False)


# -- where a peer is reached ----------------------------------------------------------------------
def _network_namespace() -> str:
    """"-n<inode>" of this process's network namespace, "" where Linux does not say: a port is a
    port of one network stack, and processes of two namespaces (containers, a pod beside its
    host) may share one /tmp, where a socket file named by the port alone would reach the
    other stack's server."""
    try:
        return f"-n{os.stat('/proc/self/ns/net').st_ino}"
    except OSError:
        return ""


_NETWORK_NAMESPACE = _network_namespace()


def ipc_path_for_port(port: int) -> str:
    """The ZeroMQ ipc:// socket file a server of this process binds for its port."""
    return os.path.join(ipc_dir(), f"{port}{_NETWORK_NAMESPACE}.sock")


def uds_path_for_port(port: int) -> str:
    """The Unix stream socket (uds.py) a server of this process listens on for its port."""
    return os.path.join(ipc_dir(), f"{port}{_NETWORK_NAMESPACE}.uds")


def same_host_socket(port: int, suffix: str) -> Optional[str]:
    """The socket file of a same-host server for `port` in this network namespace (`suffix`
    ".uds" or ".sock"), looked for only in the private directories of SERVER_UID (trusted_dirs;
    a file in a squatted one is never used), or None."""
    primary = os.path.join(tempfile.gettempdir(), f"tensorweave-{SERVER_UID}")
    name = f"{port}{_NETWORK_NAMESPACE}{suffix}"
    if trusted(primary, SERVER_UID) and os.path.exists(os.path.join(primary, name)):
        return os.path.join(primary, name)   # (the common case: no directory listing)
    for d in trusted_dirs(primary, SERVER_UID):
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    return None


def is_local_host(host: str) -> bool:
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
    if TRANSPORT != "tcp" and port.isdigit() and is_local_host(host):
        path = same_host_socket(int(port), ".sock")
        if path is not None and _ipc_answers("ipc://" + path):
            return "ipc://" + path
    return f"tcp://{address}"


def same_host_port(address: str) -> Optional[int]:
    """The port of a server on this host at 'host:port' or 'grpc://host:port', else None (an
    explicit tcp:// or ipc:// endpoint keeps ZeroMQ)."""
    if "://" in address:
        scheme, _, address = address.partition("://")
        if scheme != "grpc":
            return None
    host, _, port = address.rpartition(":")
    return int(port) if port.isdigit() and is_local_host(host) else None


def uds_path_of(address: str) -> Optional[str]:
    """The Unix socket path of a same-host server at 'host:port' when it serves one where it
    can be trusted (same_host_socket) and the transport is left to choose
    (TENSORWEAVE_TRANSPORT=auto), else None."""
    port = same_host_port(address) if TRANSPORT == "auto" else None
    return None if port is None else same_host_socket(port, ".uds")


def _ipc_answers(endpoint: str, timeout_s: float = 0.2) -> bool:
    """Whether a server listens on this ipc endpoint (a killed server leaves its file behind)."""
    sock = zmq_context().socket(zmq.DEALER)
    try:
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.IMMEDIATE, 1)
        auth.secure_client(sock)
        sock.connect(endpoint)
        return bool(sock.poll(int(timeout_s * 1000), zmq.POLLOUT))
    finally:
        sock.close(0)


def refuses_connections(endpoint: str, timeout_s: float = 1.0) -> bool:
    """Whether the operating system refuses a connection to a tcp:// or ipc:// endpoint: nothing
    listens there, because the process that served it is gone (or not started yet). A live
    server never refuses, however loaded: a full backlog makes a connect wait (or, for a Unix
    socket, fail with EAGAIN), so anything but a refusal - a timeout, another error - is no
    verdict and answers False; a host name refuses only when every address of it does."""
    scheme, _, rest = endpoint.partition("://")
    if scheme == "ipc":
        targets = [(socket.AF_UNIX, rest)]
    elif scheme == "tcp":
        host, _, port = rest.rpartition(":")
        if not port.isdigit():
            return False
        try:
            targets = [(a[0], a[4]) for a in socket.getaddrinfo(host.strip("[]"), int(port), type=socket.SOCK_STREAM)]
        except OSError:
            return False
    else:
        return False
    for family, target in targets:
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout_s)
            sock.connect(target)
            return False
        except (ConnectionRefusedError, FileNotFoundError):   # (an ipc:// file removed: its server stopped)
            continue
        except OSError:
            return False
        finally:
            sock.close()
    return bool(targets)


class SpinPoll:
    """A select.poll whose waits first poll without sleeping, for up to SPIN_S, when the last
    wait was no longer than that: waking a thread asleep in poll(2) is slow on a virtual
    machine (docs/PERFORMANCE.md), and two such wake-ups were most of a 2-task step. A wait
    longer than SPIN_S turns spinning off until a wait is short again, so a process whose
    peers answer slowly, or that waits for work, spends no CPU on it; a spinning thread
    yields its CPU between polls, so that with more busy processes than cores it does not
    hold a core another process needs. A yield that kept this thread off its CPU for
    CONTENDED_YIELD_S says every core is taken (busy processes besides this job's, as on a
    shared node): the wait sleeps at once, and no wait spins for the next CONTENDED_PAUSE_S.
    A thread asleep in poll(2) gets the CPU back soon after its message comes (the scheduler
    favours a thread that slept); one that yielded waits out another process's time slice,
    and a spinning one spends the CPU share its own process needs."""

    __slots__ = ("poll_now", "_spin", "_pause_until")

    def __init__(self, poller) -> None:
        self.poll_now = poller.poll
        self._spin = SPIN_S > 0
        self._pause_until = float("-inf")   # no spinning before then: the cores were all busy

    def poll(self, timeout_ms: int) -> list:
        poll = self.poll_now
        if timeout_ms == 0:
            return poll(0)
        clock, yield_cpu = time.perf_counter, os.sched_yield
        start = clock()
        if self._spin and start >= self._pause_until:
            end = start + SPIN_S
            while True:   # (each poll(0) releases the GIL: other threads run meanwhile)
                events = poll(0)
                if events:
                    return events
                now = clock()
                if now >= end:
                    break
                yield_cpu()   # (to a thread of another process that waits for this CPU)
                back = clock()
                if back - now >= CONTENDED_YIELD_S:
                    self._pause_until = back + CONTENDED_PAUSE_S
                    break
        events = poll(timeout_ms)
        self._spin = SPIN_S > 0 and clock() - start <= SPIN_S
        return events
