"""BoundedStalenessOptimizer: asynchronous ps training in which no worker runs more than
`staleness` steps ahead of the slowest one (a tensorweave extension; TF1 has no such API, so it has
no `tf.` name: `from tensorweave.train.bounded_staleness import BoundedStalenessOptimizer`).

Plain between-graph training with parameter servers is asynchronous: each worker applies its
gradients as soon as it has them, so a fast worker may be any number of steps ahead of a slow one,
whose gradients then arrive computed on parameters many updates old. SyncReplicasOptimizer is the
other end: every step waits for all workers and averages their gradients. Between the two lies the
Stale Synchronous Parallel rule that ps-lite, MXNet and Petuum users ask for: a worker applies
its own gradients asynchronously, but after its step it waits while it is more than `staleness`
steps ahead of the slowest worker. staleness=0 is bulk-synchronous (every worker's step t+1 reads
parameters holding every worker's step t), staleness=None is unbounded (the wrapped optimizer
alone: today's async).

    opt = BoundedStalenessOptimizer(tf.train.GradientDescentOptimizer(0.1), staleness=2,
                                    num_workers=len(cluster["worker"]), worker_index=task_index)
    train_op = opt.minimize(loss, global_step=global_step)
    hooks = [opt.make_session_run_hook()]      # leaves the bound when this worker's session ends
    with tf.train.MonitoredTrainingSession(master, is_chief, hooks=hooks) as sess: ...

Each worker's clock (its completed steps) is kept by a barrier on the global step's task
(ops/data_flow/staleness.py): the train op applies the gradients, then advances the clock and
blocks on the ps until the bound holds. A worker whose session ends cleanly leaves the bound (the
hook), so the others never wait for a finished worker. A worker that dies (or does not step for
`worker_timeout_secs` while it holds another back) is dropped from the bound with a warning in the
ps's log, and rejoins at the slowest clock if it steps again; so keep the timeout above the
longest pause of a live worker between two steps (a checkpoint, an evaluation), and below
ConfigProto.operation_timeout_in_ms, which otherwise ends the waiting step with
DeadlineExceededError first.

The trade-off, measured on the CIFAR-10 example (docs/PERFORMANCE.md, "Bounded staleness"): a
bound of a few steps keeps async's throughput through transient stalls of a worker (staleness 0
pays each of them); with a persistently slower worker every bound runs the job at that worker's
pace, where unbounded async lets the others run on with its gradients ever staler.
"""
from __future__ import annotations

import logging

from tensorweave.framework import errors
from tensorweave.framework.graph import get_default_graph
from tensorweave.ops.data_flow.staleness import staleness_barrier_advance, staleness_barrier_leave
from tensorweave.train.optimizer import WrappingOptimizer
from tensorweave.train.session_run_hook import SessionRunHook

_log = logging.getLogger("tensorweave")


class BoundedStalenessOptimizer(WrappingOptimizer):
    """BoundedStalenessOptimizer(opt, staleness, num_workers, worker_index, worker_timeout_secs=60.0,
    name='bounded_staleness'): `opt`'s asynchronous updates, with no worker more than `staleness`
    steps (an int >= 0, or None for no bound) ahead of the slowest of the `num_workers` workers;
    `worker_index` is this worker's task index."""

    def __init__(self, opt, staleness, num_workers, worker_index, worker_timeout_secs=60.0,
                 name="bounded_staleness"):
        if staleness is not None and (not isinstance(staleness, int) or staleness < 0):
            raise ValueError(f"staleness must be an int >= 0 (0: synchronous) or None (unbounded), got {staleness!r}")
        if not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"num_workers must be a positive int, got {num_workers!r}")
        if not isinstance(worker_index, int) or not 0 <= worker_index < num_workers:
            raise ValueError(f"worker_index must be in [0, {num_workers}), got {worker_index!r}")
        if not worker_timeout_secs > 0:
            raise ValueError(f"worker_timeout_secs must be positive, got {worker_timeout_secs!r}")
        super().__init__(opt, False, name)
        self._staleness, self._num_workers, self._worker_index = staleness, num_workers, worker_index
        self._worker_timeout_secs = float(worker_timeout_secs)
        self._leave_op = None
        self._gradients_applied = False

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The wrapped optimizer's update, then this worker's clock advanced and the wait for the
        slowest worker (on the global step's task, else the first variable's); returns the train op."""
        grads_and_vars = list(grads_and_vars)
        update = self._opt.apply_gradients(grads_and_vars, global_step, name)
        self._gradients_applied = True
        if self._staleness is None:
            return update
        g = get_default_graph()
        device = global_step.device if global_step is not None else grads_and_vars[0][1].device
        barrier = (f"{self._name}_barrier", self._num_workers, self._staleness, self._worker_timeout_secs,
                   self._worker_index)
        with g.device(device):
            with g.control_dependencies([update]):
                train_op = staleness_barrier_advance(*barrier, name=f"{self._name}/advance")
            self._leave_op = staleness_barrier_leave(*barrier, name=f"{self._name}/leave")
        return train_op

    @property
    def leave_op(self):
        """The op that takes this worker out of the bound (run it when training ends without the
        hook); None with no bound."""
        if not self._gradients_applied:
            raise ValueError("leave_op is made by apply_gradients(); call it first.")
        return self._leave_op

    def make_session_run_hook(self) -> SessionRunHook:
        """The hook that takes this worker out of the bound when its session ends."""
        return _LeaveBoundHook(self)


class _LeaveBoundHook(SessionRunHook):
    def __init__(self, optimizer: BoundedStalenessOptimizer):
        self._optimizer = optimizer

    def begin(self):
        self._leave_op = self._optimizer.leave_op

    def end(self, session):
        if self._leave_op is None:
            return
        try:
            session.run(self._leave_op)
        except errors.OpError as e:   # the ps is gone: there is no bound left to hold anyone
            _log.warning("Could not leave the staleness bound (%s); the others drop this worker after "
                         "worker_timeout_secs", e.message)
