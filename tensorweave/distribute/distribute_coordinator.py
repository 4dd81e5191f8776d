"""TF 1.15's distribute coordinator in INDEPENDENT_WORKER mode (tensorflow/python/distribute/
distribute_coordinator.py, run_distribute_coordinator), the part Keras uses: how `Model.fit` under a
between-graph multi-worker strategy (MultiWorkerMirroredStrategy or ParameterServerStrategy from
TF_CONFIG) runs on each task without the program starting a server or a session.

run_distribute_coordinator(worker_fn, strategy) configures the strategy's session config and calls
`worker_fn(strategy)` inside a worker context (get_current_worker_context): the task, whether it is
the chief, the session config and the master target of this task's standard server (a tf.train.Server
of the strategy's cluster, job and task), which Keras's session is created on. The server is started
when a session first needs it, unless one already serves that task in this process (a program that
started its own Server keeps it; a second fit reuses the first's); a program that set Keras's session
itself starts none. The server lives as long as the process (TF's std server is never stopped either).

On a ps task (a ParameterServerStrategy cluster) the coordinator does not run worker_fn: it serves the
task's variables, as TF's joins its std server. TF's never returns, leaving the ps to be killed by
whoever launched the job; here it serves until the process of every worker (chief and workers) that
ran through the coordinator has ended (each one's exit puts a token in a queue on every ps task), then
stops its server and ends the process (SystemExit(0)): the program never gets past that call on a
ps, as in TF. The same tokens end the ps tasks of an Estimator's train_and_evaluate
(serve_until_workers_done, tell_ps_tasks_done).
"""
from __future__ import annotations

import atexit
import copy
import logging
import threading

from tensorweave.client.session import Session
from tensorweave.framework import dtypes, errors
from tensorweave.framework.api import device
from tensorweave.framework.config import ConfigProto
from tensorweave.framework.graph import Graph
from tensorweave.ops.array.core import constant
from tensorweave.ops.data_flow.queues import FIFOQueue
from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.distributed.server import Server, running_server

_CONTEXT = threading.local()    # .current: the worker context of this thread, if any
_SERVER_LOCK = threading.Lock()  # (two threads' fits start one server)
_DONE_QUEUE = "workers_done"      # the shared name (with the ps task's index) of a ps task's done queue
_DONE_SIGNAL_TIMEOUT_MS = 30000
_TOLD_AT_EXIT: set = set()        # the clusters this process tells its ps tasks about when it exits
_log = logging.getLogger("tensorweave")


class WorkerContext:
    """What the worker function of run_distribute_coordinator runs with (TF's _WorkerContext)."""

    def __init__(self, strategy, cluster_spec, task_type, task_id, session_config, master_target=None):
        self.strategy, self.cluster_spec = strategy, cluster_spec
        self.task_type, self.task_id = task_type, task_id
        self.session_config = session_config
        self._master_target = master_target

    @property
    def master_target(self) -> str:
        """The target sessions run on: in a standalone client, the remote task's ("" for the
        evaluator: it evaluates in the client); else this task's server, started now if none serves
        it in this process (so a program whose Keras session is already set, on a server elsewhere,
        starts none)."""
        if self._master_target is not None:
            return self._master_target
        return _std_server(self.cluster_spec, self.task_type, self.task_id).target

    @property
    def is_chief(self) -> bool:
        """TF's rule: no cluster, the chief, the evaluator or an in-graph client (no task); else
        worker 0 of a cluster without a chief."""
        if not self.cluster_spec or self.task_type in ("chief", "evaluator", None):
            return True
        return "chief" not in self.cluster_spec.jobs and self.task_type == "worker" and self.task_id == 0

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


def _done_queue(ps_index: int, num_workers: int) -> FIFOQueue:
    """The queue on ps task `ps_index` that collects one token per worker that has finished."""
    with device(f"/job:ps/task:{ps_index}"):
        return FIFOQueue(num_workers, [dtypes.int32], shapes=[[]], shared_name=f"{_DONE_QUEUE}_{ps_index}",
                         name=f"{_DONE_QUEUE}_{ps_index}")


def serve_until_workers_done(server, ps_index: int, num_workers: int) -> None:
    """Serves until `num_workers` workers have put their token in this ps task's done queue, then
    stops `server`."""
    with Graph().as_default():
        take = _done_queue(ps_index, num_workers).dequeue()
        with Session(server.target, config=ConfigProto(device_filters=[f"/job:ps/task:{ps_index}"])) as session:
            for i in range(num_workers):
                session.run(take)
                _log.info("ps %d: %d of %d trainers have finished.", ps_index, i + 1, num_workers)
    server.stop()


def tell_ps_tasks_done(target: str, num_ps: int, num_workers: int, token: int) -> None:
    """Puts `token` (this worker's index) in every ps task's done queue, through the session target
    `target`; a ps already gone has nothing left to wait for."""
    with Graph().as_default():
        tokens = [_done_queue(i, num_workers).enqueue([constant(token)]) for i in range(num_ps)]
        session = Session(target, config=ConfigProto(operation_timeout_in_ms=_DONE_SIGNAL_TIMEOUT_MS))
        try:
            session.run(tokens)
        except errors.OpError as e:
            _log.warning("Could not tell every ps task that training ended: %s", e)
        finally:
            try:
                session.close()
            except errors.OpError:
                pass


def _trainers(cluster) -> list:
    """The (job, index) of the cluster's chief and workers, in that order."""
    return [(job, i) for job in ("chief", "worker") if job in cluster.jobs for i in sorted(cluster.task_indices(job))]


def _tell_ps_tasks_at_exit(context) -> None:
    """Once per process and cluster: when this worker's process ends, its ps tasks are told."""
    cluster = context.cluster_spec
    key = repr(sorted(cluster.as_dict().items()))
    if "ps" not in cluster.jobs or key in _TOLD_AT_EXIT:
        return
    _TOLD_AT_EXIT.add(key)
    trainers = _trainers(cluster)

    def tell():
        # through this task's own server, if the coordinator started one: a program that set Keras's
        # session on a server elsewhere started none here (and its ps tasks are not waiting on it)
        server = running_server(cluster, context.task_type, context.task_id)
        if server is not None:
            tell_ps_tasks_done(server.target, cluster.num_tasks("ps"), len(trainers),
                               trainers.index((context.task_type, context.task_id)))
    # When the main thread ends, before the thread pools the session's RPCs use shut down (they are
    # shut down by the same hooks, which run last registered first); plain atexit runs after that.
    getattr(threading, "_register_atexit", atexit.register)(tell)


def run_distribute_coordinator(worker_fn, strategy):
    """Runs `worker_fn(strategy)` as this task's worker of the strategy's cluster (INDEPENDENT_WORKER
    mode: every worker runs the same program) in a worker context; returns what worker_fn returns.
    Inside a worker context already, worker_fn just runs. On a ps task, serves until every worker's
    process has ended and ends the process."""
    if get_current_worker_context() is not None:
        return worker_fn(strategy)
    ext = strategy.extended
    if ext._task_type == "ps":
        serve_until_workers_done(_std_server(ext._cluster, "ps", ext._task_id), ext._task_id,
                                 len(_trainers(ext._cluster)))
        raise SystemExit(0)
    session_config = ConfigProto()
    strategy.configure(session_config)
    with WorkerContext(strategy, ext._cluster, ext._task_type, ext._task_id, session_config) as context:
        _tell_ps_tasks_at_exit(context)
        return worker_fn(strategy)


STANDALONE_CLIENT = "standalone_client"     # TF's CoordinatorMode values
INDEPENDENT_WORKER = "independent_worker"


def _strategy_for_task(strategy, cluster, task_type, task_id, session_config):
    """A copy of `strategy` configured for one task of `cluster` (TF deep-copies the strategy for each
    worker thread of a standalone client); `session_config` filled in for that task."""
    task_strategy = copy.copy(strategy)
    task_strategy._extended = copy.copy(strategy.extended)
    task_strategy._extended._container_strategy_ref = task_strategy
    task_strategy._extended._created = set()
    task_strategy.configure(session_config, cluster.as_dict(), task_type, task_id)
    return task_strategy


def _run_in_context(fn, strategy, cluster, task_type, task_id, session_config, master_target):
    session_config = copy.deepcopy(session_config) if session_config is not None else ConfigProto()
    if task_type in ("chief", "worker"):
        strategy = _strategy_for_task(strategy, cluster, task_type, task_id, session_config)
    elif strategy is not None:
        strategy.configure(session_config)
    with WorkerContext(strategy, cluster, task_type, task_id, session_config, master_target=master_target):
        return fn(strategy)


def run_standalone_client(worker_fn, strategy, eval_fn, eval_strategy, cluster_spec, session_config=None):
    """TF 1.15's STANDALONE_CLIENT mode: this process is a client outside `cluster_spec` (a dict,
    ClusterSpec or ClusterDef; its tasks are std servers, tf.train.Server or `tensorweave server`)
    and runs the training against them. A between-graph strategy (MultiWorkerMirroredStrategy,
    ParameterServerStrategy): `worker_fn` runs once per chief and worker task, each in a thread with
    that task's worker context (master_target its server, a copy of the strategy for that task), as
    that task's program would; an in-graph strategy: once, on the chief's (else worker 0's) server.
    With an "evaluator" job in the cluster, `eval_fn(eval_strategy)` runs in another thread,
    evaluating in this process. Returns when they all have; the first error of one is raised."""
    cluster = ClusterSpec(cluster_spec)
    if not cluster.jobs:
        raise ValueError("`cluster_spec` must be specified in `STANDALONE_CLIENT` mode")
    runs = []
    if eval_fn is not None and "evaluator" in cluster.jobs:
        runs.append((eval_fn, eval_strategy, "evaluator", 0, ""))
    if strategy.extended.experimental_between_graph:
        runs += [(worker_fn, strategy, job, i, "grpc://" + cluster.task_address(job, i))
                 for job, i in _trainers(cluster)]
    else:
        job = "chief" if "chief" in cluster.jobs else "worker"
        runs.append((worker_fn, strategy, None, None, "grpc://" + cluster.task_address(job, 0)))
    results, failures = {}, []

    def run(fn, task_strategy, task_type, task_id, target):
        try:
            results[task_type] = _run_in_context(fn, task_strategy, cluster, task_type, task_id, session_config,
                                                 target)
        except BaseException as e:  # noqa: BLE001  (raised in the caller's thread)
            failures.append(e)

    threads = [threading.Thread(target=run, args=args, name=f"standalone-client-{args[2]}-{args[3]}", daemon=True)
               for args in runs]
    for t in threads:
        t.start()
    for t in threads:   # the evaluator's last: a trainer's failure is raised without waiting for it
        if t.name != "standalone-client-evaluator-0":
            t.join()
    if not failures:
        threads[0].join()
    if failures:
        raise failures[0]
    return results.get(None)   # (an in-graph worker_fn's result; None between graphs, as TF's)
