"""The rendezvous of one task: where pushed tensors wait for the Recv that consumes them.

A value is keyed by (send_device, recv_device, tensor_name, step_id). Sends never block;
a value that arrives before its step starts simply waits. A Recv waits in short slices,
checking its step's cancellation and deadline, and calling the step's `on_wait` hook (if any)
between slices. A step whose values come with replies its own thread awaits sets
`wait_remote(timeout) -> bool` instead: the Recv waits there (it returns False once it has
nothing left to wait for, and the Recv then waits on its slot); see executor.StepContext.
Leftovers are reclaimed when a step ends or is aborted (`drop_step`), and by a TTL for values whose client vanished.

Values pushed by another task (`send(..., from_peer=True)`) count against that peer's
allowance of bytes not yet received here (limits.UNCLAIMED_PUSH_BYTES): a peer that pushes
what nobody receives meets ResourceExhaustedError instead of growing this task without bound.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional

from tensorweave.framework import errors, limits
from tensorweave.ops.sendrecv import RendezvousKey

WAIT_SLICE_S = 0.05
DEFAULT_TTL_S = 600.0
_TOMBSTONE_TTL_S = 120.0
_MAX_TOMBSTONES = 50_000      # aborted steps remembered at once (the oldest go first)
_SLOT_BYTES = 256             # what a waiting value costs besides its own bytes (key, slot, array header)
_MAX_TOMBSTONE_MESSAGE = 1000


class _Slot:
    """One value's meeting point. A plain Lock, held until the value is set, is its signal:
    cheaper to make and to wake on than a threading.Event (which builds a Condition)."""

    __slots__ = ("value", "done", "_signal", "born", "peer_bytes")

    def __init__(self):
        self.value: Any = None
        self.done = False
        self._signal = threading.Lock()
        self._signal.acquire()
        self.born = time.monotonic()
        self.peer_bytes = 0   # counted against its sender's allowance until taken or dropped

    def set(self, value: Any) -> None:
        self.value = value
        self.done = True
        self._signal.release()

    def wait(self, timeout: float) -> bool:
        if self.done:
            return True
        if self._signal.acquire(timeout=timeout):
            self._signal.release()
            return True
        return self.done


class Rendezvous:
    """Thread-safe table of in-flight tensors of one task."""

    def __init__(self, ttl_s: float = DEFAULT_TTL_S):
        self._lock = threading.Lock()
        self._slots: dict[RendezvousKey, _Slot] = {}
        self._aborted: dict[int, tuple[float, errors.OpError]] = {}   # step id -> (when, error)
        self._ttl_s = ttl_s
        self._last_sweep = time.monotonic()
        self._unclaimed: dict[str, int] = {}   # sending task -> bytes of its pushes not yet taken

    def aborted_steps(self) -> int:
        """How many aborted steps this task remembers (their late arrivals are dropped)."""
        return len(self._aborted)

    def unclaimed_bytes(self, peer: str) -> int:
        """Bytes pushed by `peer` that wait here for their Recv."""
        with self._lock:
            return self._unclaimed.get(peer, 0)

    def _forget(self, key: RendezvousKey, slot: _Slot) -> None:
        """Drops a slot (under the lock), returning its bytes to its sender's allowance."""
        del self._slots[key]
        if slot.peer_bytes:
            left = self._unclaimed[key.send_device] - slot.peer_bytes
            if left:
                self._unclaimed[key.send_device] = left
            else:
                del self._unclaimed[key.send_device]
            slot.peer_bytes = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._slots)

    def send(self, key: RendezvousKey, value: Any, from_peer: bool = False) -> None:
        """Deposits a value; dropped if its step was already aborted on this task. A value
        pushed by another task (`from_peer`) counts against that task's allowance of bytes
        not yet received here: past it, ResourceExhaustedError and nothing is kept."""
        now = time.monotonic()
        with self._lock:
            if now - self._last_sweep > 1.0:
                self._sweep(now)
            if key.step_id in self._aborted:
                return
            slot = self._slots.get(key)
            if slot is not None and slot.done:
                raise errors.InternalError(None, None, f"Send of an already sent tensor: {key}")
            if from_peer:   # (a waiting value costs its bytes and about _SLOT_BYTES besides)
                nbytes = int(getattr(value, "nbytes", 0)) + _SLOT_BYTES
                held = self._unclaimed.get(key.send_device, 0)
                if held + nbytes > limits.value(limits.UNCLAIMED_PUSH_BYTES):
                    raise limits.exceeded(limits.UNCLAIMED_PUSH_BYTES, held + nbytes,
                                          f"tensors pushed by {key.send_device} and not yet received")
                self._unclaimed[key.send_device] = held + nbytes
            if slot is None:
                slot = self._slots[key] = _Slot()
            if from_peer:
                slot.peer_bytes = nbytes
            slot.set(value)

    def recv(self, key: RendezvousKey, step, op_name: Optional[str] = None) -> Any:
        """Waits for the value of `key`; honours step.cancelled and step.time_left()."""
        with self._lock:
            ab = self._aborted.get(key.step_id)
            if ab is not None:
                raise type(ab[1])(None, op_name, ab[1].message)
            slot = self._slots.get(key)
            if slot is None:
                slot = self._slots[key] = _Slot()
        on_wait = step.on_wait if step is not None else None
        wait_remote = step.wait_remote if step is not None else None
        try:
            while not slot.done:
                left = self.still_waiting(key.step_id, step, lambda: errors.DeadlineExceededError(
                    None, op_name, f"Timed out waiting for tensor {key.tensor_name} from {key.send_device} "
                                   f"(deadline exceeded)"),
                    f"Step {key.step_id} was cancelled while waiting for tensor {key.tensor_name}", None, op_name)
                timeout = WAIT_SLICE_S if left is None else min(WAIT_SLICE_S, max(left, 0.0))
                if wait_remote is not None and wait_remote(timeout):
                    continue   # the value may have come with a reply the hook waited for
                if slot.wait(timeout):
                    break
                if on_wait is not None:
                    # The thread that runs the step also watches its other partitions (the
                    # master's replies): a failure there aborts this step, seen next slice.
                    on_wait()
            return slot.value
        finally:
            with self._lock:
                if self._slots.get(key) is slot:
                    self._forget(key, slot)

    def still_waiting(self, step_id: int, step, timed_out: Callable[[], errors.OpError], cancelled: str,
                      node=None, op_name: Optional[str] = None) -> Optional[float]:
        """The rules of a wait for step `step_id` (recv's between its slices, and a collective's on
        a board, distributed/collectives.py): raises timed_out() once `step`'s deadline has passed,
        its error (CancelledError(`cancelled`) without one) once it is cancelled, and the abort's
        error once the step was aborted on this task; else returns the time left (None: no
        deadline). The errors raised name `node` and `op_name`."""
        left = step.time_left() if step is not None else None
        if left is not None and left <= 0:
            raise timed_out()
        if step is not None and step.cancelled.is_set():
            err = step.error
            if isinstance(err, errors.OpError):
                raise type(err)(node, op_name, err.message)
            raise errors.CancelledError(node, op_name, cancelled)
        aborted = self.aborted_error(step_id)
        if aborted is not None:
            raise type(aborted)(node, op_name, aborted.message)
        return left

    def aborted_error(self, step_id: int) -> Optional[errors.OpError]:
        """The error a step was aborted with on this task, or None."""
        with self._lock:
            ab = self._aborted.get(step_id)
        return None if ab is None else ab[1]

    def abort_step(self, step_id: int, error: errors.OpError) -> None:
        """Drops the step's values and fails its present and future Recvs with `error`."""
        if len(error.message) > _MAX_TOMBSTONE_MESSAGE:
            error = type(error)(None, None, error.message[:_MAX_TOMBSTONE_MESSAGE] + "...")
        with self._lock:
            self._aborted[step_id] = (time.monotonic(), error)
            while len(self._aborted) > _MAX_TOMBSTONES:   # (insertion order is age order)
                del self._aborted[next(iter(self._aborted))]
            for k in [k for k in self._slots if k.step_id == step_id]:
                slot = self._slots[k]
                if slot.done:
                    self._forget(k, slot)

    def drop_step(self, step_id: int, keys=None) -> None:
        """Forgets the step's waiting values (only `keys` when given): the step ended here."""
        with self._lock:
            for k in (keys if keys is not None else [k for k in self._slots if k.step_id == step_id]):
                slot = self._slots.get(k)
                if slot is not None and slot.done:
                    self._forget(k, slot)

    def _sweep(self, now: float) -> None:
        self._last_sweep = now
        for k in [k for k, s in self._slots.items() if s.done and now - s.born > self._ttl_s]:
            self._forget(k, self._slots[k])
        for sid in [s for s, (t, _) in self._aborted.items() if now - t > _TOMBSTONE_TTL_S]:
            del self._aborted[sid]
