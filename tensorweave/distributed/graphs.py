"""The graphs registered with one task, by handle: who registered each, and how long they live.

A graph registered over the wire belongs to a client (a Session's master names itself with
a random id). A client may hold at most limits.REGISTRATIONS_PER_CLIENT graphs at once
(ResourceExhaustedError past it), and its graphs are dropped together when its session
closes (deregistration, close_session) or when nothing has been heard from it for
`TENSORWEAVE_REGISTRATION_LEASE_S` (600 s), and with them the private resources of the
isolated sessions it registered them under: a live client renews its lease with every step
it runs there and with a keep-alive ping while idle (master.py). Graphs registered in process
(a master served by this very process) belong to no client and live until deregistered.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Optional

from tensorweave.framework import limits
from tensorweave.ops import registry
from tensorweave.runtime.executor import Plan

REGISTRATION_LEASE_S = float(os.environ.get("TENSORWEAVE_REGISTRATION_LEASE_S", "") or 600.0)
_SWEEP_S = 1.0


class ClientRecord:
    """One remote client: the handles of its graphs and when it was last heard from."""

    __slots__ = ("client_id", "handles", "sessions", "last_seen")

    def __init__(self, client_id: str):
        self.client_id = client_id
        self.handles: set = set()
        self.sessions: set = set()   # isolated sessions it registered graphs under
        self.last_seen = time.monotonic()


class Registered:
    """One registered graph: its plan and what the worker learns from running it."""

    __slots__ = ("plan", "recv_parts", "self_sends", "session", "client", "may_block")

    def __init__(self, plan: Plan, recv_parts: list, self_sends: list, session: str = "",
                 client: Optional[ClientRecord] = None):
        self.plan = plan
        self.recv_parts = recv_parts     # [(send task, recv task, tensor name)] of its Recvs
        self.self_sends = self_sends     # the same, of its Sends to its own task
        self.session = session
        self.client = client             # None: registered in process, no lease
        # whether a run may wait on someone (a Recv, a dequeue): then the transport hands its
        # IO role over at once instead of after TAKEOVER_S
        self.may_block = plan is not None and any(registry.lookup(n.op).blocking for n in plan.nodes)


class GraphTable:
    """Thread-safe handle -> Registered table with per-client limits and leases."""

    def __init__(self, lease_s: Optional[float] = None):
        self._lock = threading.Lock()
        self._graphs: dict[str, Registered] = {}
        self._clients: dict[str, ClientRecord] = {}
        self._lease_s = REGISTRATION_LEASE_S if lease_s is None else lease_s
        self._last_sweep = time.monotonic()

    def __len__(self) -> int:
        return len(self._graphs)

    def get(self, handle) -> Optional[Registered]:
        return self._graphs.get(handle)

    def client(self, client_id: Optional[str]) -> Optional[ClientRecord]:
        """The record of a remote client (made on first sight), or None for in-process callers.
        Checks that it may register one graph more."""
        if client_id is None:
            return None
        with self._lock:
            rec = self._clients.get(client_id)
            if rec is None:
                rec = self._clients[client_id] = ClientRecord(client_id)
            rec.last_seen = time.monotonic()
            held = len(rec.handles)
        if held + 1 > limits.value(limits.REGISTRATIONS_PER_CLIENT):
            raise limits.exceeded(limits.REGISTRATIONS_PER_CLIENT, held + 1,
                                  f"graphs registered by client {client_id[:16]!r}")
        return rec

    def add(self, handle: str, reg: Registered, isolated: bool = False) -> None:
        """Registers `reg`; `isolated`: its session holds private resources, which go with
        its client when the client's lease runs out."""
        with self._lock:
            self._graphs[handle] = reg
            if reg.client is not None:
                reg.client.handles.add(handle)
                if isolated:
                    reg.client.sessions.add(reg.session)
                if self._clients.get(reg.client.client_id) is not reg.client:   # (it expired meanwhile)
                    self._clients[reg.client.client_id] = reg.client

    def remove(self, handle) -> None:
        with self._lock:
            self._remove_locked(handle)

    def _remove_locked(self, handle) -> None:
        reg = self._graphs.pop(handle, None)
        if reg is not None and reg.client is not None:
            reg.client.handles.discard(handle)
            if not reg.client.handles and not reg.client.sessions:
                self._clients.pop(reg.client.client_id, None)

    def remove_session(self, session_handle: str) -> None:
        with self._lock:
            for rec in self._clients.values():
                rec.sessions.discard(session_handle)
            for h in [h for h, r in self._graphs.items() if r.session == session_handle]:
                self._remove_locked(h)

    def clear(self) -> None:
        with self._lock:
            self._graphs.clear()
            self._clients.clear()

    def touch(self, client_id) -> None:
        """A client's keep-alive: renews the lease of its graphs."""
        rec = self._clients.get(client_id) if isinstance(client_id, str) else None
        if rec is not None:
            rec.last_seen = time.monotonic()

    def sweep(self, now: float) -> list:
        """Drops the graphs of clients not heard from for the lease; returns the isolated
        sessions those clients held (the caller closes them)."""
        if now - self._last_sweep < _SWEEP_S:
            return []
        self._last_sweep = now
        sessions: list = []
        with self._lock:
            for cid in [c for c, rec in self._clients.items() if now - rec.last_seen > self._lease_s]:
                rec = self._clients.pop(cid)
                for h in rec.handles:
                    self._graphs.pop(h, None)
                rec.handles.clear()
                sessions.extend(rec.sessions)
        return sessions
