"""The ps side of bounded-staleness training (train/bounded_staleness.py, a tensorweave extension:
TF1 has no such op): a barrier shared by name on one task that keeps each worker's clock (the
steps it has completed) and holds back a worker that is more than `staleness` steps ahead of the
slowest worker still in the bound. This is the Stale Synchronous Parallel rule of parameter
servers (ps-lite, MXNet's dist_async with a bound, Petuum): staleness 0 is bulk-synchronous.

Ops (attributes only, no inputs or outputs):
  _StalenessBarrierAdvance  worker `worker` completed a step: its clock + 1; then it waits (on the
                            barrier's condition, blocking its step on the ps) until its clock is
                            at most `staleness` ahead of every other worker in the bound.
  _StalenessBarrierLeave    worker `worker` finished training: it leaves the bound for good (until
                            it advances again), so it holds back nobody.

Who is in the bound: every worker of `num_workers`, from the barrier's creation on (one not yet
heard from counts at clock 0, so a worker that starts first does not run ahead of the others),
until it leaves or is dropped. A worker not heard from (no advance, not waiting) for
`worker_timeout` seconds while it holds back another is dropped, with a warning in the ps's log:
it died, or its step (or whatever its program does between steps) takes longer than the timeout.
A dropped or departed worker that advances again rejoins at the clock of the slowest worker in
the bound (or its own, if that is later), so a restarted worker neither holds the others back by
the steps it missed nor runs ahead of them.
"""
from __future__ import annotations

import logging
import time

from tensorweave.framework import errors
from tensorweave.ops.data_flow.waiting import NOT_YET, Waitable
from tensorweave.ops.helpers import TFNodes, invalid, make_op
from tensorweave.ops.registry import register

_log = logging.getLogger("tensorweave")

_IN, _LEFT, _DROPPED = "in the bound", "left", "dropped"


class StalenessBarrier(Waitable):
    """The workers' clocks. Every change wakes every waiter (a worker waits on a condition of its
    own, so with many workers each one re-checks only its own bound)."""

    def __init__(self, name: str, num_workers: int, staleness: int, worker_timeout: float):
        super().__init__()
        self.name = name
        self.num_workers, self.staleness, self.worker_timeout = num_workers, staleness, worker_timeout
        self.clock = [0] * num_workers
        self.state = [_IN] * num_workers
        self.last_seen = [time.monotonic()] * num_workers

    def check(self, node, worker: int, num_workers: int, staleness: int) -> None:
        """InvalidArgumentError when a node asks for this barrier with other settings, or names a
        worker it does not have."""
        if (num_workers, staleness) != (self.num_workers, self.staleness):
            raise invalid(node, f"staleness barrier '{self.name}' was created for (num_workers, staleness) = "
                                f"{(self.num_workers, self.staleness)}, but is requested as {(num_workers, staleness)}")
        if not 0 <= worker < self.num_workers:
            raise invalid(node, f"worker {worker} is not one of the {self.num_workers} workers of staleness barrier "
                                f"'{self.name}'")

    def _slowest_other(self, worker: int):
        """The lowest clock in the bound other than `worker`'s (None when nobody else is in it)."""
        clocks = [c for i, (c, s) in enumerate(zip(self.clock, self.state)) if i != worker and s == _IN]
        return min(clocks) if clocks else None

    def _drop_silent(self, worker: int, now: float) -> None:
        """Drops the workers holding `worker` back that were not heard from for the timeout."""
        for i in range(self.num_workers):
            if (i != worker and self.state[i] == _IN and self.clock[worker] - self.clock[i] > self.staleness
                    and now - self.last_seen[i] > self.worker_timeout):
                self.state[i] = _DROPPED
                _log.warning("Staleness barrier '%s': worker %d (at step %d) not heard from for %.1f s "
                             "(worker_timeout_secs): dropped from the bound; it rejoins when it steps again",
                             self.name, i, self.clock[i], now - self.last_seen[i])

    def advance(self, step, node, worker: int) -> None:
        with self.lock:
            if self.state[worker] != _IN:
                slowest = self._slowest_other(worker)
                self.clock[worker] = max(self.clock[worker], slowest if slowest is not None else 0)
                self.state[worker] = _IN
            self.clock[worker] += 1
            self.last_seen[worker] = time.monotonic()
            self.wake()

        def try_once():
            now = self.last_seen[worker] = time.monotonic()   # a waiting worker is alive
            self._drop_silent(worker, now)
            slowest = self._slowest_other(worker)
            return None if slowest is None or self.clock[worker] - slowest <= self.staleness else NOT_YET

        self.attempt(f"worker {worker}", try_once, step, node,
                     f"the other workers to be at most {self.staleness} steps behind worker {worker}'s step "
                     f"{self.clock[worker]} (staleness barrier '{self.name}')")

    def leave(self, worker: int) -> None:
        with self.lock:
            self.state[worker] = _LEFT
            self.wake()

    def close_on_reset(self) -> None:
        self.drop(errors.CancelledError(None, None, f"Staleness barrier '{self.name}' was dropped: its session was "
                                                    "closed or its container reset"))


def _barrier_kernel(act):
    def factory(node, ctx):
        container, shared = node.attr.get("container") or "", node.attr.get("shared_name") or node.name
        worker, num_workers, staleness = (int(node.attr[k]) for k in ("worker", "num_workers", "staleness"))
        timeout = float(node.attr["worker_timeout"])
        if num_workers < 1 or staleness < 0 or not timeout > 0:
            raise invalid(node, f"needs num_workers >= 1, staleness >= 0 and worker_timeout > 0, got {num_workers}, "
                                f"{staleness} and {timeout}")

        def kernel(step):
            # (looked up each time: a reset drops the barrier, and the next step makes a new one)
            barrier = ctx.resources.lookup_or_create(
                container, shared, lambda: StalenessBarrier(shared, num_workers, staleness, timeout))
            if not isinstance(barrier, StalenessBarrier):
                raise invalid(node, f"resource {container}/{shared} is not a staleness barrier")
            barrier.check(node, worker, num_workers, staleness)
            act(barrier, step, node, worker)
        return kernel
    return factory


def _no_op_tf(op) -> list:
    """A NoOp: TensorFlow has no barrier, so the GraphDef it imports trains asynchronously."""
    b = TFNodes(op)
    b.node(None, "NoOp", [])
    return b.nodes


register("_StalenessBarrierAdvance", lambda op: [],
         _barrier_kernel(lambda barrier, step, node, worker: barrier.advance(step, node, worker)),
         grad=None, stateful=True, needs_step=True, blocking=True, tf_lowering=_no_op_tf)
register("_StalenessBarrierLeave", lambda op: [],
         _barrier_kernel(lambda barrier, step, node, worker: barrier.leave(worker)),
         grad=None, stateful=True, needs_step=True, tf_lowering=_no_op_tf)


def _barrier_attrs(shared_name: str, num_workers: int, staleness: int, worker_timeout: float, worker: int) -> dict:
    return {"shared_name": shared_name, "container": "", "num_workers": int(num_workers), "staleness": int(staleness),
            "worker_timeout": float(worker_timeout), "worker": int(worker)}


def staleness_barrier_advance(shared_name: str, num_workers: int, staleness: int, worker_timeout: float, worker: int,
                              name: str = "StalenessBarrierAdvance"):
    """The op by which `worker` completes a step and waits until it is at most `staleness` steps
    ahead of the slowest worker in the bound (module docstring)."""
    return make_op("_StalenessBarrierAdvance", [],
                   _barrier_attrs(shared_name, num_workers, staleness, worker_timeout, worker), name=name)


def staleness_barrier_leave(shared_name: str, num_workers: int, staleness: int, worker_timeout: float, worker: int,
                            name: str = "StalenessBarrierLeave"):
    """The op by which `worker` leaves the bound (it finished training)."""
    return make_op("_StalenessBarrierLeave", [],
                   _barrier_attrs(shared_name, num_workers, staleness, worker_timeout, worker), name=name)
