"""TF 1.15's distribute coordinator in INDEPENDENT_WORKER mode (tensorflow/python/distribute/
distribute_coordinator.py, run_distribute_coordinator), the part Keras uses: how `Model.fit` under a
between-graph multi-worker strategy (MultiWorkerMirroredStrategy from TF_CONFIG) runs on each worker
without the program starting a server or a session.

run_distribute_coordinator(worker_fn, strategy) configures the strategy's session config and calls
`worker_fn(strategy)` inside a worker context (get_current_worker_context): the task, whether it is
the chief, the session config and the master target of this task's standard server (a tf.train.Server
of the strategy's cluster, job and task), which Keras's session is created on. The server is started
when a session first needs it, unless one already serves that task in this process (a program that
started its own Server keeps it; a second fit reuses the first's); a program that set Keras's session
itself starts none. The server lives as long as the process (TF's std server is never stopped either).
"""
from __future__ import annotations

import threading

from tensorweave.framework.config import ConfigProto
from tensorweave.distributed.server import Server, running_server

_CONTEXT = threading.local()    # .current: the worker context of this thread, if any
_SERVER_LOCK = threading.Lock()  # (two threads' fits start one server)


class WorkerContext:
    """What the worker function of run_distribute_coordinator runs with (TF's _WorkerContext)."""

    def __init__(self, strategy, cluster_spec, task_type, task_id, session_config):
        self.strategy, self.cluster_spec = strategy, cluster_spec
        self.task_type, self.task_id = task_type, task_id
        self.session_config = session_config

    @property
    def master_target(self) -> str:
        """The target of this task's server, started now if none serves it in this process (so a
        program whose Keras session is already set, on a server elsewhere, starts none)."""
        return _std_server(self.cluster_spec, self.task_type, self.task_id).target

    is_chief = property(lambda self: self.strategy.extended.is_chief)
    should_checkpoint = property(lambda self: self.strategy.extended.should_checkpoint)
    should_save_summary = property(lambda self: self.strategy.extended.should_save_summary)
    experimental_should_init = property(lambda self: self.strategy.extended.experimental_should_init)
    num_workers = property(lambda self: self.strategy.extended.num_workers)

    def __enter__(self):
        active = get_current_worker_context()
        if active is not None:
            raise ValueError("You cannot run distribute coordinator in a `worker_fn`: the worker context of "
                             f"{active.task_type}:{active.task_id} is already active")
        _CONTEXT.current = self
        return self

    def __exit__(self, *exc):
        _CONTEXT.current = None


def get_current_worker_context():
    """The worker context of the run_distribute_coordinator call this thread is in, else None."""
    return getattr(_CONTEXT, "current", None)


def in_multi_worker_mode(strategy) -> bool:
    """Whether `strategy` trains between-graph over a cluster of workers (Keras then runs through
    the coordinator)."""
    return strategy is not None and strategy.extended._in_multi_worker_mode()


def _std_server(cluster, task_type, task_id):
    """This task's server in this process: the one already serving it, else one started now."""
    with _SERVER_LOCK:
        return running_server(cluster, task_type, task_id) or Server(cluster, job_name=task_type, task_index=task_id)


def run_distribute_coordinator(worker_fn, strategy):
    """Runs `worker_fn(strategy)` as this task's worker of the strategy's cluster (INDEPENDENT_WORKER
    mode: every worker runs the same program) in a worker context; returns what worker_fn returns.
    Inside a worker context already, worker_fn just runs."""
    if get_current_worker_context() is not None:
        return worker_fn(strategy)
    ext = strategy.extended
    session_config = ConfigProto()
    strategy.configure(session_config)
    with WorkerContext(strategy, ext._cluster, ext._task_type, ext._task_id, session_config):
        return worker_fn(strategy)
