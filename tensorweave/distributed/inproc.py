"""The in-process transport (transports.py's protocol), for tests: with
TENSORWEAVE_TRANSPORT=inproc, a channel reaches a server of its own process over a socket pair
the server's listener adopts, no file and no port involved. The frames are uds.py's, framed
the same way, with every tensor in the message itself (no shared memory); the server serves
these connections as it serves its Unix socket's. Other peers are reached by ZeroMQ.
"""
from __future__ import annotations

import collections
import os
import socket
import threading
from typing import Optional

from tensorweave.distributed import sockets, transports, uds, wire

_LISTENERS: dict = {}   # port -> the _Listener of this process's server on it
_LISTENERS_LOCK = threading.Lock()


class _InMessage:
    """Tensors travel in the message itself, not in shared memory."""

    __slots__ = ()

    def encode(self, message) -> tuple:
        return wire.encode(message), (), 0

    def decode(self, frames: list):
        return wire.decode(frames, None)


class _Conn(_InMessage, uds.Conn):
    __slots__ = ()


class _ServerConn(_InMessage, uds.ServerConn):
    __slots__ = ()


class _Route(uds.Route):
    name = "inproc"

    def __init__(self, channel, port: int):
        super().__init__(channel, "")
        self._port = port
        self.path = f"inproc:{port}"   # (what uds.Route dials: a port of this process, never stale)

    def available(self) -> bool:
        return self._port in _LISTENERS

    def _dial(self, path: str, timeout_s: float) -> _Conn:
        listener = _LISTENERS.get(self._port)
        if listener is None:
            raise ConnectionRefusedError("no server of this process serves that port")
        return _Conn(listener.connect(), self.channel.connect_timeout_s)

    def _refused(self, path: str) -> None:
        pass   # (available() already says no)


class _Listener(uds.Listener):
    """Adopts the server ends of the socket pairs clients make; a byte on a pipe tells the IO
    role that one waits."""

    def __init__(self, server, port: int):
        self.server = server
        self._port = port
        self._conns: dict = {}
        self._incoming: collections.deque = collections.deque()
        self._bell_read, self._bell_write = os.pipe()
        os.set_blocking(self._bell_read, False)
        os.set_blocking(self._bell_write, False)
        server.watch(self._bell_read, self._accept)

    def connect(self) -> socket.socket:
        """The client's end of a new connection (from any thread)."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._incoming.append(theirs)
        try:
            os.write(self._bell_write, b"\0")
        except BlockingIOError:
            pass   # (the IO role has not read the last ones yet: it will see this one too)
        return mine

    def _accept(self, ev: int) -> None:
        try:
            while os.read(self._bell_read, 4096):
                pass
        except BlockingIOError:
            pass
        while self._incoming:
            self.adopt(_ServerConn(self._incoming.popleft(), os.getpid(), self))

    def close(self) -> None:
        with _LISTENERS_LOCK:
            if _LISTENERS.get(self._port) is self:
                del _LISTENERS[self._port]
        for c in list(self._conns.values()):
            c.close()
        while self._incoming:
            self._incoming.popleft().close()
        os.close(self._bell_read)
        os.close(self._bell_write)


class InProcess(transports.Transport):
    name = "inproc"
    preference = 30

    def route(self, channel, address: str) -> Optional[_Route]:
        port = sockets.same_host_port(address) if sockets.TRANSPORT == "inproc" else None
        return None if port is None else _Route(channel, port)

    def listen(self, server, address: str, bind: str) -> Optional[_Listener]:
        port = transports.port_of(address)
        if sockets.TRANSPORT != "inproc" or port is None:
            return None
        listener = _Listener(server, port)
        with _LISTENERS_LOCK:
            _LISTENERS[port] = listener
        return listener


transports.register(InProcess())
