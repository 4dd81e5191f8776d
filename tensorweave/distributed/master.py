"""The distributed master: what `Session("grpc://host:port")` talks to.

The client is the master (DESIGN.md decision 3). Its Connection (connector.py) asked the
target's task for the cluster; then, for each (feeds, fetches, targets, graph version)
signature, the master places, prunes and partitions the graph and registers each task's
partition with that task once; each step is then one `run_graph` per task under a fresh
random step id. When one partition fails, the
step is aborted on the others (releasing their blocked Recvs) and the first real error is
raised. Fetched values come back as the user may keep them (`_handed_over`).

A step of several partitions is a `_Step`, fastest path first: the calling thread sends
every remote task its request (no hand-off to a pool thread), then runs the partition of the
task served by this process itself, then collects the replies. While that partition's Recvs
wait, they call back into the step (`on_wait`), which reads the replies that came and aborts
the step on a remote failure; a lease keeper pings for the calls the busy thread cannot renew. When every value
that partition receives comes from remote partitions that never wait (no Recv), those
senders "carry": their values come back inside their replies (one message fewer, no IO
thread hand-off), and the Recvs wait on the reply sockets directly (`wait_remote`).

Faults: a step's deadline (RunOptions.timeout_in_ms, else ConfigProto.operation_timeout_in_ms)
bounds every remote call of it (channel.py); a task found gone is UnavailableError, and each
retry is too, at once, until it answers again. Each session remembers the incarnation of
every task it used: once a task restarted, a partition there that holds state (variables:
a node with a shared_name) is AbortedError for the rest of the session, since that state was
lost (TF's "this worker just restarted"; MonitoredSession makes a new session); partitions
without state register again. Every session names itself to the tasks with a client id:
its graphs there are its own, renewed by its steps and, while it idles, by a keep-alive
every TENSORWEAVE_KEEPALIVE_S (60), and dropped when it closes or goes silent (graphs.py).
"""
from __future__ import annotations

import functools
import os
import random
import sys
import threading
import time
import uuid
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from tensorweave.distributed import shm, sockets
from tensorweave.distributed.channel import Pending, wait_all, wait_any
from tensorweave.distributed.worker import WorkerService
from tensorweave.framework import errors
from tensorweave.framework.config import ConfigProto, RunOptions
from tensorweave.framework.device import DeviceSpec, task_of
from tensorweave.framework.graph_def import graph_to_graph_def, tensor_key
from tensorweave.ops import registry
from tensorweave.ops.sendrecv import RendezvousKey
from tensorweave.runtime import partition as _partition
from tensorweave.runtime import placer as _placer
from tensorweave.runtime.executor import step_timeout_s
from tensorweave.runtime.step_stats import merge_step_stats
from tensorweave.runtime.tf1_loops import fold_tf1_loops

_ABORT_MARK = "Step aborted because another partition failed: "


_KEEPALIVE_S = float(os.environ.get("TENSORWEAVE_KEEPALIVE_S", "") or 60.0)


def _holds_state(graph_def) -> bool:
    """Whether a partition uses state its task holds between steps (a variable, a queue:
    resource ops carry a shared_name)."""
    return any("shared_name" in n.attr for n in graph_def.node)


@dataclass
class _Part:
    task: str
    client: Any
    handle: Any
    feed_index: tuple       # positions in the step's feed list
    fetch_index: tuple      # positions in the step's fetch list
    incarnation: Any
    graph_def: Any
    recv_only_blocking: bool = True   # the only ops that may block are _Recvs


@dataclass
class _StepPlan:
    parts: list
    fed_fetches: tuple      # (fetch position, feed position) for fetches of fed tensors
    num_fetches: int
    labels: Optional[dict] = None   # node name -> timeline label, built on the first traced step
    carry: Optional[tuple] = None   # (index of the in-process part, indices of the parts carrying to it)


def _carry_plan(parts: list) -> Optional[tuple]:
    """Whether the in-process partition may get its received values with the replies of its
    senders: it blocks on nothing but Recvs, and every one of them comes from a remote task
    whose partition has no Recv (so never waits, and its reply cannot be held up by the
    values it carries). Returns (its index, the senders' indices) or None."""
    local = [i for i, p in enumerate(parts) if _served_here(p)]
    if len(local) != 1 or not parts[local[0]].recv_only_blocking:
        return None
    here = parts[local[0]]
    sources = {task_of(n.attr["send_device"]) for n in here.graph_def.node if n.op == "_Recv"}
    if not sources:
        return None
    senders = []
    for i, p in enumerate(parts):
        if p.task in sources:
            if i == local[0] or any(n.op == "_Recv" for n in p.graph_def.node):
                return None
            senders.append(i)
    if len(senders) != len(sources):
        return None
    return local[0], frozenset(senders)


def _recv_only_blocking(graph_def) -> bool:
    for n in graph_def.node:
        if n.op == "_Recv":
            continue
        try:
            if registry.lookup(n.op).blocking:
                return False
        except Exception:  # noqa: BLE001 - an unknown op fails at registration, not here
            return False
    return True


class _LeaseKeeper:
    """Pings, once a probe interval, the peers of remote calls whose thread is busy running an
    in-process partition: their servers would otherwise cancel them as abandoned."""

    def __init__(self):
        self._held: dict = {}
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None

    def hold(self, pendings: list) -> None:
        for p in pendings:
            self._held[id(p)] = p
        if self._thread is None and pendings:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._loop, name="tensorweave-leases", daemon=True)
                    self._thread.start()

    def release(self, pendings: list) -> None:
        for p in pendings:
            self._held.pop(id(p), None)

    def _loop(self) -> None:
        while True:
            time.sleep(min(sockets.PROBE_INTERVAL_S, 1.0))
            now = time.monotonic()
            for p in list(self._held.values()):
                if p.done or now < p.next_probe:
                    continue
                p.next_probe = now + p.channel.probe_interval_s
                try:
                    p.channel.ping(wait=[[p.ident, p.rid]], timeout_s=min(sockets.PING_TIMEOUT_S,
                                                                          p.channel.connect_timeout_s))
                except Exception:  # noqa: BLE001 - the owner sees the failure when it waits
                    pass


_LEASES = _LeaseKeeper()


class _KeepAlive:
    """Every _KEEPALIVE_S, the live sessions renew their graphs' leases on the remote tasks
    they registered with (an idle session's graphs are not taken for a dead client's)."""

    def __init__(self):
        self._masters: weakref.WeakSet = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None

    def add(self, master: "DistributedMaster") -> None:
        with self._lock:
            self._masters.add(master)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="tensorweave-keepalive", daemon=True)
                self._thread.start()

    def discard(self, master: "DistributedMaster") -> None:
        with self._lock:
            self._masters.discard(master)

    def _loop(self) -> None:
        last = time.monotonic()
        while True:
            time.sleep(min(_KEEPALIVE_S, 1.0))   # (in slices: the period may be changed meanwhile)
            if time.monotonic() - last < _KEEPALIVE_S:
                continue
            last = time.monotonic()
            with self._lock:
                masters = list(self._masters)
            for m in masters:
                m.keep_alive()


_KEEPALIVE = _KeepAlive()


def _quiet_abort(client, step_id: int, code: int, message: str) -> None:
    try:
        client.abort_step(step_id, code, message)
    except Exception:  # noqa: BLE001 - the task may be the one that is down
        pass


_POOL = ThreadPoolExecutor(max_workers=64, thread_name_prefix="tensorweave-step")


class _Step:
    """One step of a plan of several partitions, in the order the master drives it:

    start_remote_parts  sends every remote task its run_graph from the calling thread (no
                        hand-off to a pool thread), so that they run while the local ones do;
    run_local_parts     runs the partitions of tasks served by this process: the one that may
                        block on nothing but Recvs on this thread, the others on pool threads;
    collect_replies     waits for every remote reply and every pool thread.

    While this thread's partition runs, its Recvs call `watch` (a remote failure aborts the
    step at once) or, when its senders carry its values in their replies, `wait_remote`;
    `take_reply` takes each reply as it comes. `fail` records an error: the first one
    aborts the step on the other tasks, and `first_error` is the one to raise."""

    __slots__ = ("plan", "step_id", "feed_values", "trace", "timeout_s", "results", "errors", "aborted",
                 "lock", "remote", "local", "carry_to", "carry_service", "futures")

    def __init__(self, plan: _StepPlan, step_id: int, feed_values: list, trace: bool, timeout_s: Optional[float]):
        self.plan = plan
        self.step_id = step_id
        self.feed_values = feed_values
        self.trace = trace
        self.timeout_s = timeout_s
        self.results: list = [None] * len(plan.parts)
        self.errors: list = []          # (task, error), in the order they came
        self.aborted = False
        self.lock = threading.Lock()
        self.remote: dict[int, tuple[int, _Part, Pending]] = {}   # id(pending) -> (index, part, pending)
        self.local: list[tuple[int, _Part, WorkerService]] = []
        self.carry_to: Optional[str] = None   # the task whose Recvs get their values with the replies
        self.carry_service: Optional[WorkerService] = None   # its service, while this thread runs it
        self.futures: list = []

    # -- the step's parts, in order -----------------------------------------------------------
    def start_remote_parts(self) -> None:
        """Sends each remote partition its run_graph; sets the local ones aside for run_local_parts."""
        plan, parts = self.plan, self.plan.parts
        services = [p.client.local() if hasattr(p.client, "local") else None for p in parts]
        if plan.carry is not None and services[plan.carry[0]] is not None \
                and sum(svc is not None for svc in services) == 1:
            # The partition run on this thread gets every value it receives with the replies
            # of senders that never wait: one message fewer per value, no hand-off between threads.
            self.carry_to = parts[plan.carry[0]].task
        for i, p in enumerate(parts):
            svc = services[i]
            if svc is not None:
                self.local.append((i, p, svc))
                continue
            try:
                pending = p.client.start_run_graph(
                    p.handle, self.step_id, [self.feed_values[j] for j in p.feed_index], self.trace, self.timeout_s,
                    self.carry_to if self.carry_to is not None and i in plan.carry[1] else None)
            except BaseException as e:  # noqa: BLE001 - recorded, raised by the master
                self.fail(p, e)
                continue
            self.remote[id(pending)] = (i, p, pending)

    def run_local_parts(self) -> None:
        """One local partition runs on this thread when the only ops it may block on are Recvs
        (they call `watch` while they wait); the others on pool threads."""
        carry_to = self.carry_to
        here = next((x for x in self.local if x[1].recv_only_blocking and (carry_to is None or x[1].task == carry_to)),
                    None)
        self.futures = [_POOL.submit(self._run_local, *x) for x in self.local if x is not here]
        if here is None:
            return
        awaited = [pending for _, _, pending in self.remote.values()]
        _LEASES.hold(awaited)   # renews the remote calls' leases while this thread is busy
        if carry_to is not None:
            self.carry_service = here[2]
        try:
            self._run_local(*here, on_wait=self.watch if self.remote else None,
                            wait_remote=self.wait_remote if carry_to is not None else None)
        finally:
            self.carry_service = None
            _LEASES.release(awaited)

    def collect_replies(self) -> None:
        """Waits for every remote reply (taking each as it comes) and every pool thread."""
        wait_all([pending for _, _, pending in self.remote.values() if not pending.done], self.take_reply)
        for fut in self.futures:
            fut.result()

    # -- what they call -----------------------------------------------------------------------
    def _run_local(self, i: int, p: _Part, svc: WorkerService, on_wait=None, wait_remote=None) -> None:
        try:
            self.results[i] = svc.run_graph(p.handle, self.step_id, [self.feed_values[j] for j in p.feed_index],
                                            self.trace, self.timeout_s, p.client.incarnation, on_wait=on_wait,
                                            wait_remote=wait_remote)
        except BaseException as e:  # noqa: BLE001 - recorded, raised by the master
            self.fail(p, e)

    def take_reply(self, pending: Pending) -> None:
        """One remote partition's reply (or failure); deposits the values it carries."""
        i, p, _ = self.remote[id(pending)]
        if pending.error is not None:
            self.fail(p, pending.error)
            return
        reply = pending.value
        self.results[i] = (reply["values"], reply["stats"])
        carried = reply.get("carried")
        svc = self.carry_service
        if carried and svc is not None:
            for send_task, recv_task, name, value in carried:
                svc.recv_tensor(RendezvousKey(send_task, recv_task, name, self.step_id), value)

    def watch(self) -> None:
        """Called by this thread's Recvs while they wait: a remote failure aborts the step."""
        for _, _, pending in self.remote.values():
            if not pending.done and pending.try_result():
                self.take_reply(pending)

    def wait_remote(self, timeout: float) -> bool:
        """This thread's Recvs wait here when their values ride with the replies."""
        live = [pending for _, _, pending in self.remote.values() if not pending.done]
        if not live:
            return False
        wait_any(live, timeout, self.take_reply)
        return True

    # -- errors -------------------------------------------------------------------------------
    def fail(self, part: _Part, e: BaseException) -> None:
        """Records a partition's error; the first one aborts the step on the other tasks."""
        with self.lock:
            self.errors.append((part.task, e))
            if self.aborted:
                return
            self.aborted = True
        code = e.error_code if isinstance(e, errors.OpError) else errors.UNKNOWN
        msg = _ABORT_MARK + f"{part.task}: {e}"
        for other in self.plan.parts:
            if other is not part:
                threading.Thread(target=_quiet_abort, args=(other.client, self.step_id, code, msg),
                                 daemon=True).start()

    def first_error(self) -> BaseException:
        """The first real error: not a cancellation, nor an abort this step caused elsewhere."""
        for _, e in self.errors:
            if not isinstance(e, errors.CancelledError) and _ABORT_MARK not in str(e):
                return e
        return self.errors[0][1]


class DistributedMaster:
    """The client-side master of one Session on a cluster."""

    def __init__(self, connection, graph, config: ConfigProto):
        """`connection`: the connector's Connection to the task the session target names."""
        self.connection = connection
        self.graph = graph
        self.config = config
        self.connect_timeout_s = connection.connect_timeout_s
        self.cluster = connection.cluster
        if isinstance(config.cluster_def, dict):
            self.cluster = dict(config.cluster_def)
        elif config.cluster_def is not None and hasattr(config.cluster_def, "as_dict"):
            self.cluster = dict(config.cluster_def.as_dict())
        self.master_task = connection.task
        self.devices = _placer.ClusterDevices.from_cluster(
            self.cluster, self.master_task, config.device_filters, connection.status.get("devices") or ())
        self._clients: dict = {self.master_task: connection.client}
        self._plans: dict = {}
        self._lock = threading.Lock()
        self._dtypes: dict = {}
        self._dtypes_seen = 0
        self._session_handle = uuid.uuid4().hex if self.config.isolate_session_state else ""
        self._session_tasks: dict = {}   # task -> client, every task this session registered with
        self._client_id = uuid.uuid4().hex   # whose graphs they are, for the tasks (graphs.py)
        self._incarnations: dict = {self.master_task: connection.client.incarnation}   # task -> as first seen
        self._devices_known = {self.master_task}   # tasks whose devices self.devices holds
        self._inflight: dict = {}   # step id -> its plan, while the step runs (close cancels them)
        self._closed = False

    # -- clients ----------------------------------------------------------------------------
    def client(self, task: str):
        c = self._clients.get(task)
        if c is None:
            c = self.connection.client_for(task, self.cluster)
            self._clients[task] = c
        return c

    def _forget(self, task: str) -> None:
        """A task failed or restarted: drop its client and every plan registered with it."""
        with self._lock:
            self._forget_locked(task)

    def _forget_locked(self, task: str) -> None:
        self._clients.pop(task, None)
        if task != self.master_task:   # (asked again when a graph names it: a restart may change its GPUs)
            self._devices_known.discard(task)
        for key in [k for k, p in self._plans.items() if any(x.task == task for x in p.parts)]:
            del self._plans[key]

    def keep_alive(self) -> None:
        """Renews this session's graphs' leases on the tasks it registered with (quietly)."""
        for task, client in list(self._session_tasks.items()):
            try:
                client.keep_alive(self._client_id, min(self.connect_timeout_s, sockets.PING_TIMEOUT_S))
            except Exception:  # noqa: BLE001 - a task that is down is seen by the next step
                pass

    def _check_restart(self, task: str, client, graph_def) -> None:
        """A partition with state on a task that restarted since this session first used it
        cannot run: the state is gone (AbortedError, as TF's "worker just restarted")."""
        inc = getattr(client, "incarnation", None)
        if inc is None:
            return
        first = self._incarnations.setdefault(task, inc)
        if first != inc and _holds_state(graph_def):
            raise errors.AbortedError(
                None, None, f"Task {task} restarted since this session first used it (incarnation changed from "
                            f"{first} to {inc}): the state it held (variables, queues) was lost. Create a new "
                            f"session (MonitoredSession does) to initialize or restore it.")

    # -- planning ---------------------------------------------------------------------------
    def _tensor_dtypes(self) -> dict:
        ops = self.graph._ops
        for op in ops[self._dtypes_seen:]:
            for t in op._outputs:
                self._dtypes[t.name] = t.dtype.name
        self._dtypes_seen = len(ops)
        return self._dtypes

    def plan(self, feeds: tuple, fetches: tuple, targets: tuple) -> _StepPlan:
        key = (feeds, fetches, targets, self.graph._mutations)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        with self._lock:
            plan = self._plans.get(key)
            if plan is None:
                plan = self._build(feeds, fetches, targets)
                self._plans[key] = plan
        return plan

    def _build(self, feeds: tuple, fetches: tuple, targets: tuple) -> _StepPlan:
        gd = fold_tf1_loops(graph_to_graph_def(self.graph))
        dtypes = self._tensor_dtypes()
        names = _partition.prune(gd, feeds, fetches, targets)
        resource = {t for t, d in dtypes.items() if d == "resource"}
        self._learn_devices(self._tasks_named(gd, set(names)))
        place = functools.partial(_placer.place, gd, nodes=names, allow_soft_placement=self.config.allow_soft_placement,
                                  log_device_placement=self.config.log_device_placement, resource_tensors=resource)
        try:
            devices = place(self.devices)
        except errors.InvalidArgumentError:
            # the message lists the cluster's devices as TF's does: also the GPUs of the tasks no
            # node names, of those that answer within a second
            self._learn_devices(self.devices.tasks, answered_within=1.0)
            devices = place(self.devices)
        parts = _partition.partition(gd, devices, feeds, fetches, targets, dtypes, nodes=names)
        feed_pos = {tensor_key(f): i for i, f in enumerate(feeds)}
        fetch_keys = [tensor_key(f) for f in fetches]
        # log_device_placement is printed here, by the placer, once per op: not again by the tasks.
        reg_config = {"isolate_session_state": bool(self.config.isolate_session_state),
                      "global_jit_level": int(self.config.graph_options.optimizer_options.global_jit_level)}
        out = []
        # Register in parallel: a cluster of many tasks should not pay one round trip each.
        ordered = sorted(parts.values(), key=lambda p: p.task != self.master_task)

        def register(p: _partition.Partition) -> _Part:
            client = self.client(p.task)
            self._check_restart(p.task, client, p.graph_def)
            handle = client.register_graph(p.graph_def, list(p.feeds), list(p.fetches), list(p.targets),
                                           session_handle=self._session_handle, config=reg_config,
                                           client=self._client_id)
            # fetch_index: where each of the task's fetches goes in the step's fetch list
            return _Part(p.task, client, handle, tuple(feed_pos[f] for f in p.feeds),
                         tuple(fetch_keys.index(f) for f in p.fetches), getattr(client, "incarnation", None),
                         p.graph_def, _recv_only_blocking(p.graph_def))

        for p in ordered:   # (the caller holds self._lock)
            self._session_tasks[p.task] = self.client(p.task)
        _KEEPALIVE.add(self)
        futures = [(p.task, _POOL.submit(register, p)) for p in ordered]
        failed = None
        for task, fut in futures:
            try:
                out.append(fut.result())
            except errors.OpError as e:
                if isinstance(e, (errors.UnavailableError, errors.AbortedError)):
                    self._forget_locked(task)   # (the caller holds self._lock: not _forget)
                failed = failed or e
        if failed is not None:
            for part in out:   # (registered with the tasks that answered: not to be left there)
                _POOL.submit(_quiet_deregister, part.client, part.handle)
            raise failed
        fed_fetches = tuple((i, feed_pos[f]) for i, f in enumerate(fetch_keys) if f in feed_pos)
        return _StepPlan(out, fed_fetches, len(fetches), carry=_carry_plan(out))

    def _tasks_named(self, graph_def, names) -> set:
        """The tasks of the cluster that the requests of the nodes `names` name."""
        named = {self.devices.task_of(DeviceSpec.from_string(node.device))
                 for node in graph_def.node if node.device and node.name in names}
        return named & set(self.devices.tasks)

    def _learn_devices(self, tasks, answered_within: Optional[float] = None) -> None:
        """Asks those of `tasks` that this session has not asked yet for their devices (in
        parallel), so an op pinned to another task's GPU (or given no device type there) is
        placed on it; no graph's placement asks a task it does not name. With `answered_within`
        (seconds), a task that fails or has not answered by then stays unknown.
        (The caller holds self._lock.)"""
        asked = [(task, _POOL.submit(self.client(task).get_status))
                 for task in sorted(set(tasks) - self._devices_known)]
        for task, fut in asked:
            try:
                status = fut.result(answered_within)
            except (errors.OpError, TimeoutError) as e:
                if isinstance(e, (errors.UnavailableError, errors.AbortedError)):
                    self._forget_locked(task)
                if answered_within is None:
                    raise
                continue
            self.devices = self.devices.with_task_devices(task, status.get("devices") or ())
            self._devices_known.add(task)

    # -- running ----------------------------------------------------------------------------
    def run(self, feeds: dict, fetches: list, targets: list, options: Optional[RunOptions],
            run_metadata) -> list:
        """Runs one step: returns the fetched values in the order of `fetches`."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        feed_names = tuple(feeds)
        feed_values = list(feeds.values())
        plan = self.plan(feed_names, tuple(fetches), tuple(targets))
        timeout_s = step_timeout_s(options, self.config)
        trace = options is not None and options.trace_level == RunOptions.FULL_TRACE
        for part in plan.parts:
            inc = getattr(part.client, "incarnation", None)
            if part.incarnation is not None and inc is not None and inc != part.incarnation:
                self._forget(part.task)
                raise errors.AbortedError(None, None, f"Task {part.task} restarted (its incarnation changed "
                                          "since the graph was registered); the step was not run.")
        step_id = random.getrandbits(63)
        self._inflight[step_id] = plan
        try:
            results = self._run_parts(plan, step_id, feed_values, trace, timeout_s)
        finally:
            self._inflight.pop(step_id, None)
        values: list = [None] * plan.num_fetches
        stats = []
        for part, (fetched, step_stats) in zip(plan.parts, results):
            if _served_here(part):   # (its runtime's own values, which it may still hold: as they are)
                for i, v in zip(part.fetch_index, fetched):
                    values[i] = v
            else:
                for i, v in zip(part.fetch_index, fetched):
                    values[i] = _handed_over(v)
            if step_stats is not None:
                stats.append((part.task, step_stats))
        for i, j in plan.fed_fetches:
            values[i] = feed_values[j]
        if run_metadata is not None:
            if trace:
                if plan.labels is None:
                    plan.labels = _labels(plan)
                labels = plan.labels
                for task, s in stats:
                    merge_step_stats(run_metadata.step_stats, task, s, labels)
            if options is not None and options.output_partition_graphs:
                run_metadata.partition_graphs.extend(p.graph_def for p in plan.parts)
        return values

    def _run_parts(self, plan: _StepPlan, step_id: int, feed_values: list, trace: bool,
                   timeout_s: Optional[float]) -> list:
        """Runs every partition of one step; returns each one's (values, stats) in plan order."""
        if len(plan.parts) == 1:
            p = plan.parts[0]
            try:
                return [p.client.run_graph(p.handle, step_id, [feed_values[i] for i in p.feed_index],
                                           trace=trace, timeout_s=timeout_s)]
            except errors.OpError as e:
                self._after_error(p.task, e)
                raise
        step = _Step(plan, step_id, feed_values, trace, timeout_s)
        step.start_remote_parts()
        step.run_local_parts()
        step.collect_replies()
        if step.errors:
            for task, e in step.errors:
                if isinstance(e, errors.OpError):
                    self._after_error(task, e)
            raise step.first_error()
        return step.results

    def _after_error(self, task: str, e: errors.OpError) -> None:
        if isinstance(e, (errors.UnavailableError, errors.AbortedError)):
            self._forget(task)

    # -- session lifetime -------------------------------------------------------------------
    def close(self) -> None:
        """Cancels this session's steps still running (their runs raise CancelledError, as
        TF's Session.close does), then deregisters its partitions; under isolate_session_state,
        closes the session on every task it registered with, which frees its private resources
        too (best effort: a down task is skipped)."""
        if self._closed:
            return
        self._closed = True
        _KEEPALIVE.discard(self)
        with self._lock:
            parts = [p for plan in self._plans.values() for p in plan.parts]
            self._plans.clear()
            session_tasks = list(self._session_tasks.values())
            self._session_tasks.clear()
        if sys.is_finalizing():
            return   # no new threads at interpreter exit; the tasks drop nothing they need
        _call_all([(_quiet_abort, (part.client, step_id, errors.CANCELLED, "Session has been closed."))
                   for step_id, plan in list(self._inflight.items()) for part in plan.parts], 1.0)
        if self._session_handle:
            calls = [(_quiet_close_session, (c, self._session_handle)) for c in session_tasks]
        else:
            calls = [(_quiet_deregister, (p.client, p.handle)) for p in parts]
        _call_all(calls, 2.0)

    def list_devices(self) -> list:
        """Device names of every task this session may use (ConfigProto.device_filters)."""
        out = []
        for task in self.devices.tasks:
            try:
                status = self.client(task).get_status()
            except errors.OpError:
                continue
            out.extend(status.get("devices") or [f"{task}/device:CPU:0"])
        return out


def _served_here(part: _Part) -> bool:
    """Whether the partition's task is served by this process (called directly, not over the wire)."""
    return hasattr(part.client, "local") and part.client.local() is not None


def _handed_over(value):
    """A value a remote task's reply fetched, as the user gets it: an array the reply brought in
    shared memory is this process's alone, so it is handed over writable without a copy
    (shm.owned); any other value as it came (the client copies what it may not hand over: arrays
    the runtime still shares are read-only). Never for a task served by this process: an array
    its runtime received in shared memory may be held there too (a variable's value)."""
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        mine = shm.owned(value)
        if mine is not None:
            return mine
    return value


def _call_all(calls: list, timeout_s: float) -> None:
    """Runs each (fn, args) on its own thread (one slow task delays no other); waits for them
    up to timeout_s in all."""
    threads = [threading.Thread(target=fn, args=args, daemon=True) for fn, args in calls]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout_s
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))


def _quiet_close_session(client, session_handle: str) -> None:
    try:
        client.close_session(session_handle)
    except Exception:  # noqa: BLE001
        pass


def _quiet_deregister(client, handle) -> None:
    try:
        client.deregister_graph(handle)
    except Exception:  # noqa: BLE001
        pass


def _labels(plan: _StepPlan) -> dict:
    """Timeline labels "name = Op(inputs)" of every node of a step; a _Recv's input is its
    _Send, so the timeline draws the transfer between tasks."""
    sends = {}
    for part in plan.parts:
        for n in part.graph_def.node:
            if n.op == "_Send":
                sends[(n.attr.get("tensor_name"), n.attr.get("send_device"), n.attr.get("recv_device"))] = n.name
    labels = {}
    for part in plan.parts:
        for n in part.graph_def.node:
            if n.op == "_Recv":
                key = (n.attr.get("tensor_name"), n.attr.get("send_device"), n.attr.get("recv_device"))
                inputs = [sends[key]] if key in sends else []
            else:
                inputs = [i for i in n.input if not i.startswith("^")]
            labels[n.name] = f"{n.name} = {n.op}({', '.join(inputs)})"
    return labels
