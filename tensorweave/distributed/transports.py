"""The transport seam: the protocol a way of carrying messages between tasks implements, the
registry of them, and the one place that picks them for a peer (`routes_for`) and for a server
(`listeners_for`). channel.py (the client side) and transport.py (the server side) reach
transports only through this protocol. A transport is one module that defines a `Transport`
and calls `register(...)` when imported: zeromq.py (ZeroMQ tcp://, or ipc:// to a same-host
peer unless TENSORWEAVE_TRANSPORT=tcp), uds.py (a same-host Unix socket, large tensors in shared memory),
inproc.py (socket pairs within one process, TENSORWEAVE_TRANSPORT=inproc); channel.py and
transport.py import these three. A new one (a collective ring, device-memory copies) is a new
module that registers itself wherever it is imported; no caller of the seam changes, and
`unregister(name)` takes one out.

Whatever the transport, a message is the frames of wire.encode in the shapes sockets.py lists
(request, reply, one-way), and a server serves every transport's requests alike.

Choosing: each registered transport, most preferred (highest `preference`) first, is asked
whether it reaches a peer's address (`Transport.route`, None: not this way); a channel sends
each call over the first of those routes that is `available()` now, and the next when that
one turns out not to reach the peer (`connect` gives None); a pooled connection of a less
preferred route is dropped once a more preferred one is available. Built in: inproc (30,
only with TENSORWEAVE_TRANSPORT=inproc), unix (20: a same-host address, TENSORWEAVE_TRANSPORT
auto), zeromq (10: every address). A server listens with every transport whose
`Transport.listen` gives a listener, the least preferred first (zeromq binds the task's
address: a server that cannot bind it fails before another transport touches anything).

Client side, per peer and channel (`Transport.route(channel, address)`; the route reads the
channel's connect_timeout_s, peer_name and closed):
  Route.name, Route.rank             the transport's name; the route's index in the channel's list
  Route.available() -> bool          whether calls may go this way now
  Route.connect(wait_s) -> Conn|None a connection for calls; None: not this way after all;
                                     Unreachable(why) when none came within wait_s
  Route.push_conn() -> Conn|None     a connection for one-way pushes (None: the next route); it
                                     never waits for the receiver on an IO thread
  Route.give_back(conn)              a push connection done with (kept or closed)
  Route.close()                      closes the push connections it keeps
  (transports.Route keeps push connections: a transport's route may start from it)
Conn, one connection (a call owns its connection until its reply came):
  rank, ident                        its route's rank; bytes that name its calls in lease pings
  poll_handle                        what zmq.zmq_poll polls for its input (wait_any)
  encode(message) -> (frames, shared-memory leases, bytes in shared memory); decode(frames)
  send_message(frames, wait_s)       raises Unreachable(why)
  readable(timeout_ms) -> bool       input (or the connection's end) waits, waiting that long
  recv_message(block) -> frames|None the next message (None: none waits and not `block`);
                                     OSError or ValueError: the connection ended
  ended() -> bool                    an idle connection found at its end (the peer went away)
  connected() -> bool                False while the connection is down (DEAD_PEER_S of it:
                                     the peer is gone)
  refused() -> bool                  (optional) whether the peer's host refuses a connection now
                                     (nothing listens there); asked of one not connected() yet
                                     by a ping, which takes a refusal as its answer
  resets() -> int                    (optional) how often a connection that reconnects by itself
                                     dropped: a call's request or reply in flight then is lost
  cancel(rid) -> int                 tells the server the call was given up on; returns the
                                     linger (ms) its close needs for that to leave
  close(linger=None)

Server side, `Transport.listen(server, address, bind)` -> Listener | None. A listener runs on
the server's IO role and never waits on a peer: it watches its file descriptors through the
server (`server.watch(fd, on_event, events)`, `set_events(fd, events)`, `unwatch(fd)`), hands
each message it reads to `server.on_message(frames, origin, ident)` (one it refused unread to
`server.refuse(origin, ident, rid, error)`), may ask for `server.serve_soon(fn)` (fn runs
before the role sleeps) and, from another thread, `server.wake_io()`.
  Listener.woken()                   the IO role changed hands or was woken: input an
                                     edge-triggered descriptor will not signal again is read
  Listener.renew(waits, now)         a ping renews the leases of the calls [[ident, rid], ...]
  Listener.sweep(now)                every tick: cancel unleased calls, drop stalled peers
  Listener.close()
The origin of a request (a listener, or one connection of it; `ident` names the client where
an origin serves several) answers it:
  origin.encode(message), origin.decode(frames)   as a Conn's
  origin.reply(ident, frames, on_io)  from any thread (on_io: the IO role itself)
  origin.track(ident, rid, ctx), untrack(ident, rid), tracked(ident, rid) -> ctx | None: the
  calls running, which a "cancel" or the connection's end cancels; origin.closed
"""
from __future__ import annotations

from typing import Optional

import msgpack

from tensorweave.framework import errors


class Unreachable(Exception):
    """A connection could not take a message: the text says why (the channel names the peer)."""


class Refused:
    """A message a listener skipped rather than read (over the size limit): its header, for
    the request id when it could be read, and the error to answer it with."""

    __slots__ = ("header", "error")

    def __init__(self, header: Optional[bytes], error: errors.OpError):
        self.header = header
        self.error = error

    def request_id(self) -> int:
        """The id of the refused request, or -1 (its tensors are not decoded, only the map)."""
        if self.header is None:
            return -1
        try:
            head = msgpack.unpackb(self.header, raw=False, strict_map_key=False,
                                   ext_hook=lambda code, data: None)
        except Exception:  # noqa: BLE001 - an unreadable header: no id to answer
            return -1
        rid = head.get("id") if isinstance(head, dict) else None
        return rid if type(rid) is int else -1


class Route:
    """What routes share (a transport's own may start from it): the push connections kept for
    reuse."""

    name = ""
    rank = 0

    def __init__(self, channel):
        self.channel = channel
        self._push_free: list = []   # (list.pop/append are atomic: pushes take no lock)

    def give_back(self, conn) -> None:
        if self.channel.closed or len(self._push_free) >= 64:
            conn.close()
        else:
            self._push_free.append(conn)

    def close(self) -> None:
        conns, self._push_free = self._push_free, []
        for c in conns:
            c.close(0)


class Transport:
    """One way of carrying messages; a module registers one instance. `preference` orders
    the routes of a peer reached several ways (higher first)."""

    name = ""
    preference = 0

    def route(self, channel, address: str):
        """A Route to the peer at `address` for `channel`, or None where this transport
        does not reach it."""

    def listen(self, server, address: str, bind: str):
        """A Listener serving `server` for the task at `address` (bound to `bind`), or None."""


_TRANSPORTS: list = []   # most preferred first


def register(transport: Transport) -> Transport:
    """Adds a transport (replacing one of the same name); returns it."""
    unregister(transport.name)
    _TRANSPORTS.append(transport)
    _TRANSPORTS.sort(key=lambda t: -t.preference)
    return transport


def unregister(name: str) -> None:
    _TRANSPORTS[:] = [t for t in _TRANSPORTS if t.name != name]


def routes_for(channel, address: str) -> list:
    """The ways `channel` reaches `address`, most preferred first (each route's `rank` is its
    index): the one place a peer's transport is chosen."""
    routes = []
    for transport in _TRANSPORTS:
        route = transport.route(channel, address)
        if route is not None:
            route.rank = len(routes)
            routes.append(route)
    return routes


def listeners_for(server, address: str, bind: str) -> list:
    """What a server at `address` listens with: one listener per transport that serves it,
    the least preferred (the fallback that reaches every peer) made first, so that a server
    that cannot bind its address fails before another transport touches anything; on failure
    the listeners made are closed."""
    listeners: list = []
    try:
        for transport in reversed(_TRANSPORTS):
            listener = transport.listen(server, address, bind)
            if listener is not None:
                listeners.append(listener)
    except BaseException:
        for listener in listeners:
            listener.close()
        raise
    return listeners


def port_of(address: str) -> Optional[int]:
    """The port of 'host:port' (or of an endpoint 'scheme://host:port'), or None."""
    port = address.rpartition(":")[2]
    return int(port) if port.isdigit() else None
