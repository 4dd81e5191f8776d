"""Blocking without holding anything a step needs: kernels of queues and accumulators wait on
their resource's condition in short slices, checking between slices whether their step was
cancelled (an abort from another partition, a closed session) or ran past its deadline
(RunOptions.timeout_in_ms, ConfigProto.operation_timeout_in_ms).

Attempts of one kind (enqueues, dequeues, takes) are served in arrival order, as TF's queues
serve theirs: only the attempt first in its line may take or add elements, so a dequeue_many
of 10 is not starved by later dequeues of 1, and batches are never interleaved.
"""
from __future__ import annotations

import collections
import threading
from typing import Callable, Optional

from tensorweave.framework import errors

WAIT_SLICE_S = 0.05
NOT_YET = object()   # what an attempt's try returns when it must wait


def interruption(step, node, waiting_for: str) -> Optional[errors.OpError]:
    """The error a kernel blocked on `waiting_for` raises now: its step was cancelled or its
    deadline passed. None while it may go on waiting."""
    if step is None:
        return None
    if step.cancelled.is_set():
        err = step.error
        if isinstance(err, errors.OpError):
            return type(err)(node, node.name, err.message)
        return errors.CancelledError(node, node.name, f"{node.op} ({node.name}) was cancelled while waiting for "
                                                      f"{waiting_for}")
    left = step.time_left()
    if left is not None and left <= 0:
        return errors.DeadlineExceededError(
            node, node.name, f"Timed out waiting for notification: {node.op} ({node.name}) waited for {waiting_for} "
                             "until the step's deadline (RunOptions.timeout_in_ms or "
                             "ConfigProto.operation_timeout_in_ms)")
    return None


class Waitable:
    """A resource kernels may block on. `lock` guards its state; whoever changes the state
    calls `wake(kind)` under the lock for the attempts it may let through. Each kind of attempt
    waits on a condition of its own and names what it waits for (`ready`), so an enqueue does not
    wake other enqueues, nor a dequeue_many that still lacks elements."""

    def __init__(self):
        self.lock = threading.RLock()
        self._conds: dict[str, threading.Condition] = {}
        self._lines: dict[str, collections.deque] = {}
        # Set when the resource is dropped (session closed, Session.reset): every waiter fails.
        self.dropped: Optional[errors.OpError] = None

    def wake(self, *kinds: str) -> None:
        """Under the lock: the attempts first in line of `kinds` (every kind when none is named)
        try again, those of a named kind only when their `ready()` holds."""
        for kind in kinds or tuple(self._conds):
            line = self._lines.get(kind)
            if line and (not kinds or line[0][0] is None or line[0][0]()):
                self._conds[kind].notify_all()

    def attempt(self, kind: str, try_once: Callable[[], object], step, node, waiting_for: str,
                on_fail: Optional[Callable[[], None]] = None, ready: Optional[Callable[[], bool]] = None):
        """Calls `try_once()` under the lock whenever this attempt is first in line of `kind`,
        until it returns something other than NOT_YET, and returns that. Between tries it waits
        for a wake-up (one that `ready()` allows, when given) or a slice. `on_fail()` runs under
        the lock when the attempt ends in an error (to put back what it took)."""
        with self.lock:
            cond = self._conds.get(kind) or self._conds.setdefault(kind, threading.Condition(self.lock))
            line = self._lines.setdefault(kind, collections.deque())
            ticket = [ready]   # a new object per attempt
            line.append(ticket)
            try:
                while True:
                    if self.dropped is not None:
                        raise type(self.dropped)(node, node.name, self.dropped.message)
                    if line[0] is ticket:
                        result = try_once()
                        if result is not NOT_YET:
                            return result
                    err = interruption(step, node, waiting_for)
                    if err is not None:
                        raise err
                    left = step.time_left() if step is not None else None
                    cond.wait(WAIT_SLICE_S if left is None else max(0.0, min(WAIT_SLICE_S, left)))
            except BaseException:
                if on_fail is not None:
                    on_fail()
                raise
            finally:
                if line[0] is ticket:
                    line.popleft()
                    if line:
                        cond.notify_all()   # the next in line tries now
                else:
                    line.remove(ticket)

    def drop(self, error: errors.OpError) -> None:
        """Fails every present and future waiter with `error` (the resource was dropped)."""
        with self.lock:
            self.dropped = error
            self.wake()
