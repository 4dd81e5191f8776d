"""The worker service of one task, and WorkerClient, the Python API both sides use to call it.

Contract between the server side (this module, server/, transport.py, wire.py,
runtime/rendezvous.py, ops/sendrecv.py) and the client side (placement, partitioning,
the distributed master behind Session("grpc://...")):

``WorkerClient.for_address(address, task_name, connect_timeout_s=60.0)`` returns a client
with the methods below. When a Server for `address` lives in this process it calls the
WorkerService directly (no socket, no serialization); otherwise it goes over ZeroMQ. Every
error crosses by code and message (framework/errors.py) and is re-raised as the same
OpError subclass. A peer that is down is UnavailableError naming the task within the
connect timeout, never a hang. ``client.incarnation`` is the task's incarnation as first
seen by this client; register_graph/run_graph carry it, and a task that restarted since
answers AbortedError ("... restarted (incarnation changed ...)").

  get_status() -> {"cluster": ClusterSpec.as_dict(), "job": str, "task": int,
                   "incarnation": int, "devices": [str], "active_steps": int, "graphs": int,
                   "sessions": int (isolated sessions holding private resources),
                   "pending_tensors": int (values waiting for their Recv),
                   "aborted_steps": int (remembered, so that their late arrivals are dropped)}
  register_graph(graph_def: framework.graph_def.GraphDef, feeds: [tensor names],
                 fetches: [tensor names], targets: [node names], session_handle: str = "",
                 config: dict = {}, client: str = "") -> graph_handle: str
      Builds a runtime.executor.Plan once with a KernelContext whose resources are the
      server's (or a per-session ResourceManager when config["isolate_session_state"]),
      whose task is "/job:J/replica:0/task:I", whose library is graph_def.library and whose
      services carry "rendezvous" (runtime.rendezvous.Rendezvous) and "send"
      (send(dst_task, RendezvousKey, value)). config["log_device_placement"] is honoured, and
      config["global_jit_level"] (-1: no fusion of elementwise trees, runtime/fusion.py).
      Refused (InvalidArgumentError) when node names repeat or an input, feed or fetch names
      an output its node does not have ("c:7"). Over the wire the graph belongs to `client`
      (graphs.py: at most limits.REGISTRATIONS_PER_CLIENT at once, dropped when nothing was
      heard from the client for the registration lease; a ping {"client": id} renews it).
  run_graph(graph_handle, step_id: int, feed_values: [ndarray], trace: bool = False,
            timeout_s: float | None = None) -> (fetch_values: [ndarray], step_stats: list[dict] | None)
      Runs with StepContext(step_id, deadline, trace list). Errors name the op and the task.
      An unknown handle (deregistered, or dropped by reset) is NotFoundError. A step the
      client gave up on (its call cancelled) or that ran past its deadline changes no state
      after that point (runtime.executor guards stateful kernels); a step already aborted
      here does not start.
  start_run_graph(... same ..., carry_to: str | None = None) -> channel.Pending
      (remote tasks) Sends run_graph and returns at once; Pending.result() (or
      channel.wait_all/wait_any) gives {"values", "stats"[, "carried"]}. With carry_to, the
      step's Sends to that task are not pushed but returned in "carried" as
      [send task, recv task, tensor name, value]: the master runs that task's partition in
      its own process and deposits them itself (see master.py, "carry").
  close_session(session_handle)
      The session closed: drops its registered graphs and, under isolate_session_state, its
      private resources.
  abort_step(step_id, code, message)
      Cancels that step's blocked Recvs and kernels on this task with the error of `code`;
      its rendezvous entries are dropped, later arrivals for it are discarded, and a
      run_graph of that step arriving later does not run.
  deregister_graph(graph_handle)
  reset(containers: list | None = None)
      Session.reset: drops those resource containers (all when None) and every registered
      graph of the task (their kernels captured the dropped state).
  recv_tensor(key: RendezvousKey, value)  (alias push)
      Deposits a value into this task's rendezvous (request/reply). Worker to worker, a
      _Send's value travels instead as a one-way message (channel.Channel.push, no reply
      awaited, off the step's critical path): a push the receiver refuses aborts that step
      there (its Recv raises the error); a push to a dead task is seen by the master, whose
      own call to that task fails; anything else ends in the Recv's deadline, never a hang.
      A receiver takes pushes only from tasks of its cluster, each up to
      limits.UNCLAIMED_PUSH_BYTES not yet received (ResourceExhaustedError past it).

Step state of a client that dies mid-step is reclaimed: the transport cancels a remote
run_graph whose client stops renewing its lease (sockets.CLIENT_LEASE_S), and
rendezvous leftovers expire by TTL.
"""
from __future__ import annotations

import functools
import itertools
import os
import secrets
import threading
import time
from typing import Any, Callable, ClassVar, Optional, Sequence

from tensorweave.distributed import arena, sockets, wire
from tensorweave.distributed.channel import Channel, Pending
from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.distributed.collectives import Collectives
from tensorweave.distributed.graphs import GraphTable, Registered
from tensorweave.distributed.transport import RequestContext
from tensorweave.framework import errors
from tensorweave.framework.device import task_name as make_task_name, task_of
from tensorweave.framework.graph_def import FunctionDef, GraphDef, NodeDef
from tensorweave.ops.sendrecv import RendezvousKey
from tensorweave.runtime.executor import KernelContext, Plan, StepContext
from tensorweave.runtime.rendezvous import Rendezvous
from tensorweave.runtime.resources import ResourceManager

# address -> WorkerService of a Server started in this process
_LOCAL_SERVICES: dict[str, "WorkerService"] = {}
_LOCAL_LOCK = threading.Lock()
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "0.0.0.0", "[::1]")


@functools.lru_cache(maxsize=1024)
def normalize_address(address: str) -> str:
    if "://" in address:
        address = address.split("://", 1)[1]
    host, _, port = address.rpartition(":")
    if host in _LOCAL_HOSTS:
        host = "localhost"
    return f"{host}:{port}"


def register_local(address: str, service: "WorkerService") -> None:
    with _LOCAL_LOCK:
        _LOCAL_SERVICES[normalize_address(address)] = service


def unregister_local(address: str, service: "WorkerService") -> None:
    with _LOCAL_LOCK:
        key = normalize_address(address)
        if _LOCAL_SERVICES.get(key) is service:
            del _LOCAL_SERVICES[key]


def local_service(address: str) -> Optional["WorkerService"]:
    return _LOCAL_SERVICES.get(normalize_address(address))


# Answered on the transport's IO thread: bookkeeping that never waits and runs no kernel.
_INLINE_METHODS = frozenset(("get_status", "recv_tensor", "abort_step", "deregister_graph", "close_session"))


class WorkerService:
    """The state and RPCs of one task: resources, registered partitions, rendezvous."""

    def __init__(self, cluster: ClusterSpec, job_name: str, task_index: int, connect_timeout_s: float = 60.0,
                 cpus: int = 1, gpus: tuple = (), inter_op_pool=None):
        self.cluster = cluster
        self.inter_op_pool = inter_op_pool   # (runtime.inter_op: the server's pool; None: serial steps)
        self.cpus = max(1, int(cpus))   # the server's ConfigProto.device_count["CPU"]: CPU:0..cpus-1
        self.gpus = {g.name: g for g in gpus}   # runtime.devices.Gpu by "GPU:i"
        self.job_name = job_name
        self.task_index = task_index
        self.task = make_task_name(job_name, task_index)
        self.incarnation = secrets.randbits(64)
        self.resources = ResourceManager()
        self.rendezvous = Rendezvous()
        self.connect_timeout_s = connect_timeout_s
        self._lock = threading.Lock()
        self._graphs = GraphTable()
        self._session_resources: dict[str, ResourceManager] = {}
        self._steps: dict[int, list] = {}
        self._handles = itertools.count(1)
        self._peers: dict[str, Channel] = {}
        self._cluster_tasks = frozenset(cluster.task_names())   # who may push tensors here
        self.collectives = Collectives(self.task, cluster, self.rendezvous, self._send, self._push, self._probe,
                                       self.incarnation, self._peer_pid)
        # a collective job's task (no ps tasks) keeps its large arrays where its peers read them
        self._arena = arena.policy() if "ps" not in cluster.jobs and len(self._cluster_tasks) > 1 else None

    # -- RPCs ------------------------------------------------------------------------------------
    def get_status(self) -> dict:
        return {"cluster": self.cluster.as_dict(), "job": self.job_name, "task": self.task_index,
                "incarnation": self.incarnation, "devices": [f"{self.task}/device:CPU:{i}" for i in range(self.cpus)]
                + [f"{self.task}/device:{g}" for g in self.gpus],
                "active_steps": len(self._steps), "graphs": len(self._graphs),
                "sessions": len(self._session_resources), "pending_tensors": len(self.rendezvous),
                "aborted_steps": self.rendezvous.aborted_steps()}

    def _check_incarnation(self, incarnation: Optional[int]) -> None:
        if incarnation is not None and incarnation != self.incarnation:
            raise errors.AbortedError(
                None, None, f"Task {self.task} restarted (incarnation changed from {incarnation} to "
                            f"{self.incarnation}); the state it held was lost")

    def register_graph(self, graph_def: GraphDef, feeds: Sequence[str], fetches: Sequence[str],
                       targets: Sequence[str], session_handle: str = "", config: Optional[dict] = None,
                       incarnation: Optional[int] = None, client: Optional[str] = None) -> str:
        """`client`: the remote client the graph belongs to (None: an in-process caller)."""
        self._check_incarnation(incarnation)
        owner = self._graphs.client(client)   # (refuses past the client's limit)
        config = config or {}
        resources = self.resources
        if config.get("isolate_session_state"):
            with self._lock:
                resources = self._session_resources.setdefault(session_handle, ResourceManager())
        ctx = KernelContext(resources=resources, task=self.task, library=dict(graph_def.library),
                            services={"rendezvous": self.rendezvous, "send": self._send, "worker": self,
                                      "collectives": self.collectives},
                            log_device_placement=bool(config.get("log_device_placement", False)), gpus=self.gpus,
                            global_jit_level=int(config.get("global_jit_level", 0)))
        plan = Plan(graph_def.node, list(feeds), list(fetches), list(targets), ctx, guard_state_changes=True)
        handle = f"{self.task}/graph:{next(self._handles)}:{session_handle}"
        edges = {op: [(task_of(n.attr["send_device"]), task_of(n.attr["recv_device"]), n.attr["tensor_name"])
                      for n in plan.nodes if n.op == op] for op in ("_Recv", "_Send")}
        self_sends = [e for e in edges["_Send"] if e[1] == self.task]
        self._graphs.add(handle, Registered(plan, edges["_Recv"], self_sends, session_handle, owner),
                         isolated=bool(config.get("isolate_session_state")))
        return handle

    def run_graph(self, graph_handle: str, step_id: int, feed_values: Sequence[Any], trace: bool = False,
                  timeout_s: Optional[float] = None, incarnation: Optional[int] = None,
                  request: Optional[RequestContext] = None,
                  on_wait: Optional[Callable[[], None]] = None,
                  wait_remote: Optional[Callable[[float], bool]] = None,
                  carry_to: Optional[str] = None, carried: Optional[list] = None) -> tuple:
        """See the module docstring. In-process callers may pass `on_wait` / `wait_remote`,
        the hooks this step's Recvs call while they wait (runtime.executor.StepContext). With
        `carry_to`, the step's Sends to that task append [send task, recv task, tensor name,
        value] to `carried` instead of pushing (the caller returns them with the reply)."""
        self._check_incarnation(incarnation)
        reg = self._graphs.get(graph_handle)
        if reg is None:
            raise errors.NotFoundError(None, None, f"Graph handle {graph_handle!r} is not registered on task "
                                                   f"{self.task} (deregistered, or dropped by a reset)")
        plan = reg.plan
        if len(feed_values) != len(plan.feed_slots):
            raise errors.InvalidArgumentError(None, None, f"run_graph on {self.task} expected "
                                                          f"{len(plan.feed_slots)} feed values, got {len(feed_values)}")
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        step = StepContext(step_id, deadline, [] if trace else None, on_wait, wait_remote,
                           (carry_to, carried) if carry_to is not None and carried is not None else None)
        if reg.client is not None:
            reg.client.last_seen = time.monotonic()   # (a step renews its client's lease)
        with self._lock:
            self._steps.setdefault(step_id, []).append(step)
        if request is not None:
            request.on_cancel(lambda: step.cancel(errors.AbortedError(
                None, None, f"Step {step_id} on {self.task} was cancelled: its client went away or gave up")))
        ok = False
        try:
            # Registered first, checked second: an abort that comes now or came before is seen.
            aborted = self.rendezvous.aborted_error(step_id)
            if aborted is not None:
                raise type(aborted)(None, None, aborted.message)
            if step.cancelled.is_set():
                raise step.error if isinstance(step.error, errors.OpError) else errors.CancelledError(
                    None, None, f"Step {step_id} was cancelled")
            before = arena.use(self._arena) if self._arena is not None else None
            try:
                values = plan.run(feed_values, step, self.inter_op_pool)
            finally:
                if self._arena is not None:
                    arena.use(before)
            ok = True
        finally:
            with self._lock:
                active = self._steps.get(step_id)
                if active is not None:
                    active.remove(step)
                    if not active:
                        del self._steps[step_id]
            if reg.recv_parts and not ok:
                # (a step that ran to the end took every value it was sent: nothing is left)
                self.rendezvous.drop_step(step_id, [RendezvousKey(s, d, n, step_id) for s, d, n in reg.recv_parts])
            if reg.self_sends:
                # What it sent itself and did not take (a graph without the matching Recv) is
                # nobody's now: it must not wait here for the TTL.
                self.rendezvous.drop_step(step_id, [RendezvousKey(s, d, n, step_id) for s, d, n in reg.self_sends])
        return values, step.trace

    def abort_step(self, step_id: int, code: int, message: str) -> None:
        err = errors.make_error(code, message)
        self.rendezvous.abort_step(step_id, err)
        with self._lock:
            steps = list(self._steps.get(step_id, ()))
        for s in steps:
            s.cancel(err)

    def deregister_graph(self, graph_handle: str) -> None:
        self._graphs.remove(graph_handle)

    def close_session(self, session_handle: str) -> None:
        """The session closed: drops its graphs and, under isolate_session_state, its private
        resources (variables, queues) with them."""
        if not session_handle:
            return
        self._graphs.remove_session(session_handle)
        with self._lock:
            rm = self._session_resources.pop(session_handle, None)
        if rm is not None:
            rm.cleanup(None)

    def reset(self, containers: Optional[list] = None) -> None:
        self._graphs.clear()
        with self._lock:
            sessions = list(self._session_resources.values())
            if not containers:
                self._session_resources.clear()
        self.resources.cleanup(containers)
        for rm in sessions:
            rm.cleanup(containers)

    def recv_tensor(self, key: RendezvousKey, value: Any) -> None:
        self.rendezvous.send(key, value)

    push = recv_tensor

    def _take_push(self, key: RendezvousKey, value: Any) -> None:
        """A value another task sent over the wire: only from a task of the cluster, and
        within that task's allowance of bytes not yet received here."""
        if key.recv_device != self.task:
            raise errors.InvalidArgumentError(None, None, f"Tensor {key.tensor_name} sent to "
                                                          f"{key.recv_device} arrived at {self.task}")
        if key.send_device not in self._cluster_tasks:
            raise errors.InvalidArgumentError(None, None, f"Tensor {key.tensor_name} claims to come from "
                                                          f"{key.send_device:.80}, which is not a task of the cluster")
        self.rendezvous.send(key, value, from_peer=True)

    # -- worker to worker ----------------------------------------------------------------------
    def _send(self, dst_task: str, key: RendezvousKey, value: Any) -> None:
        """A _Send's value to `dst_task`: a one-way push, never waiting for the receiver. A
        push the receiver cannot take fails that step there (its Recv raises); a receiver
        that is down fails the step through the master's own call to it."""
        if dst_task == self.task:
            self.rendezvous.send(key, value)
            return
        channel = self._peer(dst_task)
        svc = local_service(channel.address)
        if svc is not None:
            svc.recv_tensor(key, value)
            return
        channel.push("recv_tensor", [key.send_device, key.recv_device, key.tensor_name, key.step_id, value])

    def _peer(self, dst_task: str) -> Channel:
        channel = self._peers.get(dst_task)
        if channel is None:
            try:
                address = self.cluster.address_of(dst_task)
            except ValueError:
                raise errors.InvalidArgumentError(None, None, f"Send to {dst_task}, which is not in the "
                                                              f"cluster of {self.task}") from None
            channel = self._peers[dst_task] = _channel(address, dst_task, self.connect_timeout_s)
        return channel

    def _peer_pid(self, dst_task: str) -> Optional[int]:
        """The pid of `dst_task`'s process, known from the connection that reaches it (a Unix
        socket on this host; this process for a task served in it), else None."""
        channel = self._peer(dst_task)
        return os.getpid() if local_service(channel.address) is not None else channel.peer_pid()

    def _probe(self, dst_task: str, timeout_s: float) -> Optional[int]:
        """Pings `dst_task`: its incarnation (None in this process); UnavailableError naming it
        when it does not answer in time (at once when its host refuses the connection)."""
        if dst_task == self.task or local_service(self._peer(dst_task).address) is not None:
            return None
        return self._peer(dst_task).ping(timeout_s=timeout_s).get("incarnation")

    def _push(self, dst_task: str, method: str, args) -> None:
        """A one-way message other than a tensor to `dst_task` (collectives.py's joins)."""
        svc = self if dst_task == self.task else local_service(self._peer(dst_task).address)
        if svc is not None:
            svc.oneway(method, args)
        else:
            self._peer(dst_task).push(method, args)

    def oneway(self, method: str, a) -> None:
        """A one-way message from a peer (the transport runs it on its IO thread)."""
        if method == "collective_join":
            self.collectives.take_join(a)
            return
        if method == "collective_abort":
            step_id, message = self.collectives.take_abort(a)
            self.abort_step(step_id, errors.UNAVAILABLE, message)
            return
        if method != "recv_tensor":
            return
        wire.expect(a, list, "push")
        if len(a) != 5:
            raise wire.WireError(f"a push carries 5 fields, got {len(a)}")
        step_id = wire.expect(a[3], int, "step_id")
        try:
            key = RendezvousKey(wire.expect(a[0], str, "send_device"), wire.expect(a[1], str, "recv_device"),
                                wire.expect(a[2], str, "tensor_name"), step_id)
            self._take_push(key, a[4])
        except errors.OpError as e:
            # Nobody awaits this push's reply: fail the step here, so its Recv raises.
            self.abort_step(step_id, e.error_code, f"A tensor pushed to {self.task} was refused: {e.message}")

    # -- the wire: argument checking and dispatch ----------------------------------------------
    def may_inline(self, method: str, a: dict) -> bool:
        """Whether a request is bookkeeping the transport's IO thread may answer itself:
        it never waits and runs no kernel (a step never runs there, however short)."""
        return method in _INLINE_METHODS

    def may_block(self, method: str, a: dict) -> bool:
        """Whether a request may wait on someone else (a step with a Recv, a dequeue): the
        transport's thread then gives its IO role up before running it, not TAKEOVER_S after."""
        if method != "run_graph" or not isinstance(a, dict):
            return False
        reg = self._graphs.get(a.get("graph_handle"))
        return reg is not None and reg.may_block

    def ping(self, args: dict) -> dict:
        """A liveness probe; {"client": id} in it renews that client's registrations."""
        client = args.get("client")
        if client is not None:
            self._graphs.touch(client)
        return {"incarnation": self.incarnation, "task": self.task}

    def tick(self, now: float) -> None:
        """Called by the transport's IO thread a few times a second: expires the registrations
        of silent clients, and their isolated sessions with them."""
        for session_handle in self._graphs.sweep(now):
            self.close_session(session_handle)

    def dispatch(self, method: str, args: dict, request: RequestContext) -> Any:
        """Serves one request from the wire: checks its arguments' types and calls the RPC."""
        incarnation = args.get("incarnation")
        if incarnation is not None:
            wire.expect(incarnation, int, "incarnation")
        handler = self._WIRE_METHODS.get(method)
        if handler is None:
            raise errors.UnimplementedError(None, None, f"Unknown method {method!r:.60} on task {self.task}")
        return handler(self, args, incarnation, request)

    # Each takes (decoded arguments, the caller's view of the incarnation, the request).
    def _wire_get_status(self, args: dict, incarnation: Optional[int], request: RequestContext) -> dict:
        return self.get_status()

    def _wire_register_graph(self, args: dict, incarnation: Optional[int], request: RequestContext) -> str:
        graph_def = graph_def_from_wire(args.get("graph_def"))
        config = args.get("config") or {}
        wire.expect(config, dict, "config")
        return self.register_graph(
            graph_def, wire.expect_str_list(args.get("feeds", []), "feeds"),
            wire.expect_str_list(args.get("fetches", []), "fetches"),
            wire.expect_str_list(args.get("targets", []), "targets"),
            wire.expect(args.get("session_handle", ""), str, "session_handle"), config, incarnation,
            client=wire.expect(args.get("client", ""), str, "client"))

    def _wire_run_graph(self, args: dict, incarnation: Optional[int], request: RequestContext) -> dict:
        timeout_s = args.get("timeout_s")
        if timeout_s is not None:
            wire.expect(timeout_s, (int, float), "timeout_s")
            expires_at = args.get("expires_at")
            if expires_at is not None:   # (a same-host client: one clock; see _run_graph_args)
                timeout_s = min(timeout_s, wire.expect(expires_at, (int, float), "expires_at") - time.time())
                if timeout_s <= 0:
                    raise errors.DeadlineExceededError(
                        None, None, f"run_graph of step {args.get('step_id')} reached {self.task} after its "
                                    "deadline (it waited unread, the task stopped or starved): not run")
        carry_to = args.get("carry_to")
        carried: list = []
        if carry_to is not None:
            wire.expect(carry_to, str, "carry_to")
        values, stats = self.run_graph(
            wire.expect(args.get("graph_handle"), str, "graph_handle"),
            wire.expect(args.get("step_id"), int, "step_id"),
            wire.expect(args.get("feed_values", []), list, "feed_values"),
            wire.expect(args.get("trace", False), bool, "trace"), timeout_s, incarnation, request,
            carry_to=carry_to, carried=carried)
        if carried:
            return {"values": values, "stats": stats, "carried": carried}
        return {"values": values, "stats": stats}

    def _wire_abort_step(self, args: dict, incarnation: Optional[int], request: RequestContext) -> None:
        self.abort_step(wire.expect(args.get("step_id"), int, "step_id"),
                        wire.expect(args.get("code"), int, "code"), wire.expect(args.get("message"), str, "message"))

    def _wire_deregister_graph(self, args: dict, incarnation: Optional[int], request: RequestContext) -> None:
        self.deregister_graph(wire.expect(args.get("graph_handle"), str, "graph_handle"))

    def _wire_close_session(self, args: dict, incarnation: Optional[int], request: RequestContext) -> None:
        self.close_session(wire.expect(args.get("session_handle"), str, "session_handle"))

    def _wire_reset(self, args: dict, incarnation: Optional[int], request: RequestContext) -> None:
        containers = args.get("containers")
        if containers is not None:
            wire.expect_str_list(containers, "containers")
        self.reset(containers)

    def _wire_recv_tensor(self, args: dict, incarnation: Optional[int], request: RequestContext) -> None:
        key = RendezvousKey(wire.expect(args.get("send_device"), str, "send_device"),
                            wire.expect(args.get("recv_device"), str, "recv_device"),
                            wire.expect(args.get("tensor_name"), str, "tensor_name"),
                            wire.expect(args.get("step_id"), int, "step_id"))
        self._take_push(key, args.get("value"))

    _WIRE_METHODS: ClassVar[dict[str, Callable[["WorkerService", dict, Optional[int], RequestContext], Any]]] = {
        "get_status": _wire_get_status, "register_graph": _wire_register_graph, "run_graph": _wire_run_graph,
        "abort_step": _wire_abort_step, "deregister_graph": _wire_deregister_graph,
        "close_session": _wire_close_session, "reset": _wire_reset, "recv_tensor": _wire_recv_tensor}


def graph_def_from_wire(d) -> GraphDef:
    """A GraphDef from decoded plain data, checking every field's type."""
    wire.expect(d, dict, "graph_def")
    nodes = [_node_from_wire(n) for n in wire.expect(d.get("node", []), list, "graph_def.node")]
    library = {}
    for name, f in wire.expect(d.get("library", {}), dict, "graph_def.library").items():
        wire.expect(f, dict, f"function {name}")
        library[name] = FunctionDef(
            wire.expect(f.get("name"), str, "function name"),
            tuple(wire.expect_str_list(f.get("inputs", []), "function inputs")),
            tuple(wire.expect_str_list(f.get("outputs", []), "function outputs")),
            tuple(_node_from_wire(n) for n in wire.expect(f.get("node", []), list, "function nodes")))
    return GraphDef(nodes, library, wire.expect(d.get("versions", {}), dict, "graph_def.versions"))


def _node_from_wire(n) -> NodeDef:
    wire.expect(n, dict, "node")
    attr = wire.expect(n.get("attr", {}), dict, "node attr")
    num = attr.get("_num_outputs")
    if type(num) is not int or not 0 <= num < 1 << 16:
        raise wire.WireError(f"node {n.get('name')!r:.60} needs an integer _num_outputs")
    return NodeDef(wire.expect(n.get("name"), str, "node name"), wire.expect(n.get("op"), str, "node op"),
                   tuple(wire.expect_str_list(n.get("input", []), "node inputs")),
                   wire.expect(n.get("device", ""), str, "node device"), attr)


# -- the client -------------------------------------------------------------------------------
_CHANNELS: dict = {}
_CHANNELS_LOCK = threading.Lock()


def _channel(address: str, task_name: str, connect_timeout_s: float) -> Channel:
    key = (normalize_address(address), task_name, connect_timeout_s)
    with _CHANNELS_LOCK:
        ch = _CHANNELS.get(key)
        if ch is None:
            ch = _CHANNELS[key] = Channel(address, task_name, connect_timeout_s)
        return ch


class WorkerClient:
    """Calls one task's worker service: directly when it lives in this process, else over
    the transport. Thread safe. See the module docstring for the methods' contract."""

    def __init__(self, address: str, task_name: str, connect_timeout_s: float = 60.0):
        self.address = address
        self.task_name = task_name
        self.connect_timeout_s = connect_timeout_s
        self._incarnation: Optional[int] = None
        self._channel: Optional[Channel] = None

    @classmethod
    def for_address(cls, address: str, task_name: str, connect_timeout_s: float = 60.0) -> "WorkerClient":
        return cls(address, task_name, connect_timeout_s)

    def _remote(self) -> Channel:
        if self._channel is None:
            self._channel = _channel(self.address, self.task_name, self.connect_timeout_s)
        return self._channel

    @property
    def incarnation(self) -> int:
        """The task's incarnation as first seen by this client."""
        if self._incarnation is None:
            self._incarnation = self.get_status()["incarnation"]
        return self._incarnation

    def _call(self, method: str, args: dict, timeout_s: Optional[float] = None) -> Any:
        return self._remote().call(method, args, timeout_s=timeout_s, expect_incarnation=self._incarnation)

    def get_status(self) -> dict:
        svc = local_service(self.address)
        status = svc.get_status() if svc is not None else self._call("get_status", {})
        if self._incarnation is None:
            self._incarnation = status["incarnation"]
        return status

    def register_graph(self, graph_def: GraphDef, feeds: Sequence[str], fetches: Sequence[str],
                       targets: Sequence[str], session_handle: str = "", config: Optional[dict] = None,
                       client: str = "") -> str:
        inc = self.incarnation
        svc = local_service(self.address)
        if svc is not None:
            return svc.register_graph(graph_def, feeds, fetches, targets, session_handle, config or {}, inc)
        return self._call("register_graph", {
            "graph_def": graph_def.to_dict(), "feeds": list(feeds), "fetches": list(fetches),
            "targets": list(targets), "session_handle": session_handle, "config": dict(config or {}),
            "incarnation": inc, "client": client})

    def keep_alive(self, client: str, timeout_s: float) -> None:
        """Renews `client`'s registrations on this task (a remote one; in process, nothing to do)."""
        if local_service(self.address) is None:
            self._remote().ping(timeout_s=timeout_s, extra={"client": client})

    def run_graph(self, graph_handle: str, step_id: int, feed_values: Sequence[Any], trace: bool = False,
                  timeout_s: Optional[float] = None) -> tuple:
        inc = self.incarnation
        svc = local_service(self.address)
        if svc is not None:
            return svc.run_graph(graph_handle, step_id, feed_values, trace, timeout_s, inc)
        r = self._call("run_graph", self._run_graph_args(graph_handle, step_id, feed_values, trace, timeout_s, inc),
                       timeout_s=timeout_s)
        return r["values"], r["stats"]

    def _run_graph_args(self, graph_handle, step_id, feed_values, trace, timeout_s, inc) -> dict:
        """run_graph's arguments. For a task on this host, the deadline also goes as a wall-clock
        time: the task reads the request only when it next runs, and one that was stopped or
        starved past the deadline must not run a step its client has given up on (the cancel
        sent behind the request may be read after the step has started)."""
        args = {"graph_handle": graph_handle, "step_id": step_id, "feed_values": list(feed_values),
                "trace": trace, "timeout_s": timeout_s, "incarnation": inc}
        if timeout_s is not None and sockets.same_host_port(self.address) is not None:
            args["expires_at"] = time.time() + timeout_s
        return args

    def start_run_graph(self, graph_handle: str, step_id: int, feed_values: Sequence[Any], trace: bool = False,
                        timeout_s: Optional[float] = None, carry_to: Optional[str] = None) -> Pending:
        """Sends run_graph to a remote task now; `.result()` of the returned Pending (or
        channel.wait_all) gives {"values": ..., "stats": ...} and, with `carry_to`, "carried":
        the values its Sends to that task produced, [send task, recv task, tensor name, value]."""
        args = self._run_graph_args(graph_handle, step_id, feed_values, trace, timeout_s, self.incarnation)
        if carry_to is not None:
            args["carry_to"] = carry_to
        return self._remote().start("run_graph", args, timeout_s=timeout_s, expect_incarnation=self._incarnation)

    def local(self) -> Optional[WorkerService]:
        """The task's WorkerService when it is served by this process, else None."""
        return local_service(self.address)

    def close_session(self, session_handle: str) -> None:
        svc = local_service(self.address)
        if svc is not None:
            return svc.close_session(session_handle)
        self._call("close_session", {"session_handle": session_handle})

    def abort_step(self, step_id: int, code: int, message: str) -> None:
        svc = local_service(self.address)
        if svc is not None:
            return svc.abort_step(step_id, code, message)
        self._call("abort_step", {"step_id": step_id, "code": code, "message": message})

    def deregister_graph(self, graph_handle: str) -> None:
        svc = local_service(self.address)
        if svc is not None:
            return svc.deregister_graph(graph_handle)
        self._call("deregister_graph", {"graph_handle": graph_handle})

    def reset(self, containers: Optional[list] = None) -> None:
        svc = local_service(self.address)
        if svc is not None:
            return svc.reset(containers)
        self._call("reset", {"containers": list(containers) if containers is not None else None})

    def recv_tensor(self, key: RendezvousKey, value: Any) -> None:
        svc = local_service(self.address)
        if svc is not None:
            return svc.recv_tensor(key, value)
        self._call("recv_tensor", {"send_device": key.send_device, "recv_device": key.recv_device,
                                   "tensor_name": key.tensor_name, "step_id": key.step_id, "value": value})

    push = recv_tensor
