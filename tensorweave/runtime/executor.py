"""Runs one partition: plans a (nodes, feeds, fetches, targets) signature once into a flat list
of kernel calls over preassigned value slots, then runs only that list each step."""
from __future__ import annotations

import heapq
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from tensorweave.framework import denormals, errors
from tensorweave.framework.graph_def import NodeDef, live_inputs, needed_nodes, parse_input, tensor_key
from tensorweave.ops import registry
from tensorweave.ops.registry import DEAD
from tensorweave.runtime import devices, fusion, host_memory, inter_op  # noqa: F401 (host_memory: the allocator's policy, on import)
from tensorweave.runtime.resources import ResourceManager

LOCAL_TASK = "/job:localhost/replica:0/task:0"


@dataclass
class KernelContext:
    """What kernels of one partition may use at plan time."""
    resources: ResourceManager
    task: str = LOCAL_TASK
    device_type: str = "CPU"
    library: dict = field(default_factory=dict)     # function name -> FunctionDef
    services: dict = field(default_factory=dict)    # rendezvous, transport hooks (distributed runtime)
    log_device_placement: bool = False
    gpus: dict = field(default_factory=dict)        # "GPU:i" -> runtime.devices.Gpu, this task's GPUs
    global_jit_level: int = 0                       # OptimizerOptions'; OFF (-1): fuse jit scopes only (fusion.py)
    _function_plans: dict = field(default_factory=dict)

    def function_plan(self, name: str, device: str = "", outputs: Optional[tuple] = None, cut: tuple = ()) -> "Plan":
        """A plan for a function body: feeds are its inputs, fetches its outputs (cached); or
        fetches the tensors `outputs` of the body, and feeds the tensors `cut` too, after its
        inputs (a part of the body). `device`: where the op calling it runs; on a GPU, the body's
        inputs and outputs are in that GPU's memory and its ops without a device run there when
        they have a GPU kernel."""
        gpu = _gpu_of(device, self.gpus) if device and self.gpus else None
        key = (name, gpu and gpu.name, outputs, cut)
        plan = self._function_plans.get(key)
        if plan is None:
            fdef = self.function_def(name)
            nodes = [self._function_node(n, gpu) for n in fdef.node] if self.gpus else fdef.node
            plan = Plan(nodes, tuple(fdef.inputs) + cut, fdef.outputs if outputs is None else outputs, (), self,
                        device=gpu)
            self._function_plans[key] = plan
        return plan

    def function_def(self, name: str):
        """The FunctionDef of `name` in the graph's library."""
        fdef = self.library.get(name)
        if fdef is None:
            raise errors.NotFoundError(None, None, f"Function '{name}' is not in the graph's library")
        return fdef

    def _function_node(self, node: NodeDef, gpu) -> NodeDef:
        """A function's op placed as TF places them, softly: one asking for a GPU runs on the CPU
        without a GPU kernel; one asking for nothing runs on the caller's GPU (`gpu`) when it has a
        GPU kernel, else on the CPU."""
        has_gpu_kernel = registry.has_kernel(node.op, "GPU")
        if node.device and "GPU:" in node.device and not has_gpu_kernel:
            return NodeDef(node.name, node.op, node.input, "", node.attr)
        if not node.device and gpu is not None and has_gpu_kernel:
            return NodeDef(node.name, node.op, node.input, f"{self.task}/device:{gpu.name}", node.attr)
        return node

    @staticmethod
    def to_host(value):
        """`value` in host memory: for a kernel keeping a device value in host-only state."""
        return devices.to_host(value)


class _CancelFlag:
    """The is_set/set half of threading.Event: waiters poll it in short slices, so a step
    need not pay for an Event's lock and condition (about 4 us) on every partition."""

    __slots__ = ("_set",)

    def __init__(self):
        self._set = False

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True


class StepContext:
    """Per-step state handed to kernels registered with needs_step: the step id, its
    cancellation flag and error, its deadline (time.monotonic()) and its trace list.

    Three optional hooks (None unless the distributed worker sets them, worker.run_graph) tie
    the step's _Send/_Recv kernels to the thread that runs it (distributed/master.py's _Step):
      on_wait()                  a Recv calls it between its wait slices: the thread running this
                                 partition also watches the step's other partitions, so a failure
                                 there aborts this step (runtime/rendezvous.py);
      wait_remote(timeout)->bool a Recv waits there instead when its values ride with replies this
                                 thread awaits; False once it has nothing left to wait for;
      carry = (task, list)       Sends to `task` append [send task, recv task, tensor name, value]
                                 to the list instead of pushing: the values travel with the step's
                                 reply (ops/sendrecv.py)."""

    __slots__ = ("step_id", "cancelled", "deadline", "trace", "error", "on_wait", "wait_remote", "carry", "pool")

    def __init__(self, step_id: int = 0, deadline: Optional[float] = None, trace: Optional[list] = None,
                 on_wait: Optional[Callable[[], None]] = None,
                 wait_remote: Optional[Callable[[float], bool]] = None, carry: Optional[tuple] = None):
        self.step_id = step_id
        self.cancelled = _CancelFlag()
        self.deadline = deadline
        self.trace = trace
        self.error: Optional[BaseException] = None
        self.on_wait = on_wait
        self.wait_remote = wait_remote
        self.carry = carry
        self.pool = None   # the step's inter-op pool (runtime/inter_op.py), set by the plan that runs it

    def cancel(self, error: Optional[BaseException] = None) -> None:
        if self.error is None:
            self.error = error
        self.cancelled.set()

    def time_left(self) -> Optional[float]:
        return None if self.deadline is None else self.deadline - time.monotonic()


def step_timeout_s(options, config) -> Optional[float]:
    """How long one Session.run step may take: RunOptions.timeout_in_ms, else
    ConfigProto.operation_timeout_in_ms; None (no deadline) when that is not positive."""
    timeout_ms = options.timeout_in_ms if options is not None and options.timeout_in_ms \
        else config.operation_timeout_in_ms
    return timeout_ms / 1000.0 if timeout_ms and timeout_ms > 0 else None


_MODE_ONE, _MODE_MANY, _MODE_NONE, _MODE_ONE_2, _MODE_ONE_1, _MODE_RELEASE = 0, 1, 2, 3, 4, 5
_STEP_SLOT, _STEP_SLOT_KEY = 0, "^step"  # slot 0 carries the StepContext to needs_step kernels
_RELEASE_MIN_BYTES = 1 << 16   # values let go of after their last reader (_with_releases): this large and up


class Plan:
    """The flat program of one signature of one partition.

    With `guard_state_changes` (the worker service's plans), each stateful kernel but a
    _Send/_Recv is preceded by a check of the step's cancellation and deadline: a step that
    was cancelled (its client gave up on it) or ran past its deadline changes no state after
    that point, so a step reported as timed out does not land later."""

    def __init__(self, nodes: Sequence[NodeDef], feeds: Sequence[str], fetches: Sequence[str],
                 targets: Sequence[str], ctx: KernelContext, guard_state_changes: bool = False, device=None):
        self.ctx = ctx
        self.device = device   # a function's plan called on a GPU: its inputs and outputs are there
        by_name = {n.name: n for n in nodes}
        if len(by_name) != len(nodes):
            _refuse_duplicates(nodes)
        feeds = [tensor_key(f) for f in feeds]
        fetches = [tensor_key(f) for f in fetches]
        for kind, names in (("Feed", feeds), ("Fetch", fetches)):
            for key in names:
                _check_output_exists(key, by_name, f"{kind} {key}")
        feed_set = set(feeds)
        order = self._schedule(by_name, feed_set, fetches, targets)
        may_be_dead = _may_be_dead(order, feed_set)
        unread = _unread_stateless(order, fetches, targets, may_be_dead)
        order = [n for n in order if n.name not in unread]
        read = {f"{src}:{idx}" for n in order for src, idx, is_ctrl in map(parse_input, n.input) if not is_ctrl}
        read.update(fetches)

        slots: dict[str, int] = {_STEP_SLOT_KEY: _STEP_SLOT}
        where: dict = {}   # slot -> the Gpu whose memory holds its value (absent: host memory)
        for f in feeds:
            slots.setdefault(f, len(slots))
            if device is not None:
                where[slots[f]] = device
        self.nodes = order
        template: list = []
        steps = []
        self._names: list[NodeDef] = []
        guarded = False
        gpus = ctx.gpus
        standin = any(isinstance(g, devices.StandInGpu) for g in gpus.values())   # (CPU kernels then check)
        moved: dict = {}   # (slot, Gpu or None) -> the slot of its copy there

        def located(slot: int, device, consumer: NodeDef) -> int:
            """`slot`, or the slot of its one copy on `device` (None: host), made before `consumer`."""
            if where.get(slot) is device:
                return slot
            copy = moved.get((slot, device))
            if copy is None:
                copy = moved[(slot, device)] = len(slots)
                slots[f"^copy{copy}"] = copy
                steps.append((_MODE_ONE_1, devices.to_host if device is None else device.to_device, slot, None, copy))
                self._names.append(consumer)
                if device is not None:
                    where[copy] = device
            return copy

        for node in order:
            opdef = registry.lookup(node.op)
            device = _gpu_of(node.device, gpus) if gpus else None
            host_in, host_out = registry.host_memory(
                node.op, sum(not inp.startswith("^") for inp in node.input), _num_outputs(node)) \
                if device is not None else ((), ())
            ins = []
            reads = []   # positions of the arguments that read a ref output's current value
            for inp in node.input:
                op_name, idx, is_ctrl = parse_input(inp)
                if is_ctrl:
                    continue
                key = f"{op_name}:{idx}"
                if key not in slots:
                    _check_output_exists(key, by_name, f"Input {inp!r} of node {node.name}")
                    slots[key] = len(slots)
                is_ref = key not in feed_set and _is_ref_output(by_name.get(op_name), idx)
                if len(ins) in opdef.ref_inputs:
                    if not is_ref:
                        raise errors.InvalidArgumentError(
                            node, node.name, f"Input {len(ins)} of node {node.name} ({node.op}) must be a reference "
                            f"to a variable, but {inp!r} is a value (fed, or not a ref output)")
                elif is_ref:
                    reads.append(len(ins) + opdef.needs_step)
                elif gpus:
                    ins.append(located(slots[key], None if len(ins) in host_in else device, node))
                    continue
                ins.append(slots[key])
            if opdef.needs_step:
                ins.insert(0, _STEP_SLOT)
            nout = _num_outputs(node)
            outs = []
            for i in range(nout):
                key = f"{node.name}:{i}"
                if key not in slots:   # a fed output keeps its feed slot
                    slots[key] = len(slots)
                outs.append(slots[key] if key not in feed_set else -1)
            if ctx.log_device_placement:
                print(f"{node.name}: ({node.op}): {node.device or ctx.task}", file=sys.stderr)
            try:
                fn = registry.kernel_for(node.op, "GPU" if device is not None else ctx.device_type)(
                    _with_unread_outputs(node, read) if node.op in _LOOPS else node, ctx)
            except errors.OpError as e:
                raise _with_node(e, node, ctx.task) from None
            except (ValueError, TypeError, KeyError) as e:
                raise errors.InvalidArgumentError(
                    node, node.name, f"{e}\n\t [[node {node.name} (op: {node.op}) on {ctx.task}]]") from None
            if device is not None:
                fn = device.kernel(fn, node, tuple(i + opdef.needs_step for i in host_in), host_out)
                for i, o in enumerate(outs):
                    if o >= 0 and i not in host_out:
                        where[o] = device
            elif standin:
                fn = devices.host_kernel(fn, node)
            if reads:
                fn = _reading_refs(fn, reads, node.name, (device.to_device if device else devices.to_host)
                                   if gpus else None)
            if node.name in may_be_dead:
                # one more output, the node's own liveness (None or DEAD), which its control
                # successors take as extra arguments
                fn = _dead_aware(fn, nout, len(ins), node)
                for inp in node.input:
                    src, _, is_ctrl = parse_input(inp)
                    if is_ctrl and src in may_be_dead:
                        ins.append(slots[f"{src}:live"])
                outs.append(slots.setdefault(f"{node.name}:live", len(slots)))
            elif node.op == "Const":  # constants are planned into the slot template, not run
                if outs[0] >= 0:
                    try:
                        value = fn()
                    except devices.OUT_OF_MEMORY as e:   # (a GPU's constant: it is made here)
                        raise _as_op_error(e, node, ctx.task) from None
                    template.append((outs[0], value))
                    if device is not None and devices.on_device(value):
                        # and a host copy beside it, for the consumers that read it in host memory
                        # (shapes, axes: TF keeps a GPU's int32 constants there): no copy per step
                        host = moved[(outs[0], None)] = len(slots)
                        slots[f"^copy{host}"] = host
                        template.append((host, devices.to_host(value)))
                continue
            if guard_state_changes and opdef.stateful and node.op not in _UNGUARDED:
                fn = _guarded(fn, opdef.needs_step)
                if not opdef.needs_step:
                    ins.insert(0, _STEP_SLOT)
                guarded = True
            if node.name in may_be_dead:
                steps.append((_MODE_MANY, fn, tuple(ins), tuple(outs), None))
            elif nout == 1:
                if len(ins) == 2:
                    steps.append((_MODE_ONE_2, fn, ins[0], ins[1], outs[0]))
                elif len(ins) == 1:   # (no argument list to build: a third of a small kernel's call)
                    steps.append((_MODE_ONE_1, fn, ins[0], None, outs[0]))
                else:
                    steps.append((_MODE_ONE, fn, tuple(ins), outs[0], None))
            elif nout == 0:
                steps.append((_MODE_NONE, fn, tuple(ins), None, None))
            else:
                steps.append((_MODE_MANY, fn, tuple(ins), tuple(outs), None))
            self._names.append(node)
        self.needs_step = guarded or any(registry.lookup(n.op).needs_step for n in self._names)
        if not gpus:   # elementwise trees as one kernel each
            steps, self._names = fusion.fuse(steps, self._names, [slots[f] for f in fetches if f in slots],
                                             template, by_name, feed_set, _as_op_error, ctx.task, ctx.global_jit_level)
        self._node_steps = len(steps)   # (the steps after these copy fetched values to their device)
        self.feed_slots = [slots[f] for f in feeds]
        missing = [f for f in fetches if f not in slots]
        if missing:
            raise errors.InvalidArgumentError(None, None, f"Fetch {missing[0]} was not found in the graph")
        self.fetch_slots = [located(slots[f], self.device, by_name.get(f.rsplit(":", 1)[0]))
                            if gpus else slots[f] for f in fetches]
        self.num_slots = len(slots)
        self._template = [None] * len(slots)
        for s, v in template:
            self._template[s] = v
        self._steps = steps
        self._kept = {_STEP_SLOT, *self.feed_slots, *self.fetch_slots, *(s for s, _ in template)}
        self._serial: Optional[tuple] = None   # the serial run's (steps, names), once a run showed the sizes
        self._by_name, self._feed_set = by_name, feed_set   # (inter_op reads the control edges)
        self._may_be_dead = bool(may_be_dead)
        self._ref_fetches = []   # a fetched ref output (a TF1 variable, an Assign) is its value after the step
        for i, f in enumerate(fetches):
            op_name, idx, _ = parse_input(f)
            if f not in feed_set and _is_ref_output(by_name.get(op_name), idx):
                self._ref_fetches.append((i, op_name))

    @staticmethod
    def _schedule(by_name: dict, feed_set: set, fetches: list, targets: Sequence[str]) -> list:
        needed = needed_nodes(by_name, feed_set, fetches, targets)
        # Kahn's algorithm; ops that may block go last so every Send that can run first, does.
        deps: dict[str, set] = {}
        users: dict[str, list] = {n: [] for n in needed}
        for name, node in needed.items():
            d = {src for src in live_inputs(node, by_name, feed_set) if src in needed}
            deps[name] = d
            for p in d:
                users[p].append(name)
        position = {name: i for i, name in enumerate(by_name)}
        ready = [((registry.lookup(needed[n].op).blocking, position[n]), n) for n, d in deps.items() if not d]
        heapq.heapify(ready)
        order = []
        while ready:
            _, name = heapq.heappop(ready)
            order.append(needed[name])
            for u in users[name]:
                deps[u].discard(name)
                if not deps[u]:
                    heapq.heappush(ready, ((registry.lookup(needed[u].op).blocking, position[u]), u))
        if len(order) != len(needed):
            stuck = sorted(n for n, d in deps.items() if d)
            raise errors.InvalidArgumentError(None, stuck[0], f"Graph has a cycle through {stuck[:5]}")
        return order

    def run(self, feed_values: Sequence[Any] = (), step: Optional[StepContext] = None,
            pool: Optional[inter_op.InterOpPool] = None) -> list:
        """Runs the plan once; returns the fetched values in order. With a `pool` of more than
        one thread, independent ops may run at once (runtime/inter_op.py). Kernels run with
        denormals flushed to zero, as TF's do (framework/denormals.py)."""
        own = denormals.enter()
        try:
            return self._run(feed_values, step, pool)
        finally:
            denormals.leave(own)

    def _run(self, feed_values: Sequence[Any], step: Optional[StepContext],
             pool: Optional[inter_op.InterOpPool]) -> list:
        vals = self._template.copy()
        for s, v in zip(self.feed_slots, feed_values):
            vals[s] = v
        if self.needs_step:
            vals[_STEP_SLOT] = step = step or StepContext()
            if pool is not None:
                step.pool = pool   # (a loop may run part of its body on it: ops/control_flow/while_loop.py)
        if pool is not None and pool.threads > 1:
            inter_op.execute(self, vals, step, pool)
        else:
            self._execute_serial(vals, step)
        if self._serial is None:
            self._serial = _with_releases(self._steps, self._names, self._kept, vals)
        out = [vals[s] for s in self.fetch_slots]
        for i, name in self._ref_fetches:
            out[i] = devices.to_host(out[i].read(name))
        if self._may_be_dead:
            for i, v in enumerate(out):
                if v is DEAD:
                    raise errors.InvalidArgumentError(None, None, f"Retval[{i}] does not have value")
        return out

    def _execute_serial(self, vals: list, step: Optional[StepContext]) -> None:
        """Every op in plan order on this thread (traced when the step has a trace)."""
        if step is not None and step.trace is not None:
            for i in range(len(self._steps)):
                self._execute_traced(vals, i, step.trace)
        else:
            steps, names = self._serial or (self._steps, self._names)
            self._execute(vals, steps, 0, names)

    def _execute_traced(self, vals: list, i: int, trace: list) -> None:
        """Step i, recorded in `trace` (RunOptions.FULL_TRACE) with the thread that ran it."""
        node = self._names[i]
        start = time.time()
        self._execute(vals, self._steps[i:i + 1], i)
        trace.append({"node_name": node.name, "op": node.op, "device": node.device or self.ctx.task,
                      "all_start_micros": int(start * 1e6), "all_end_rel_micros": int((time.time() - start) * 1e6),
                      "thread_id": threading.get_ident()})

    def _execute(self, vals: list, steps: list, offset: int, names: Optional[list] = None) -> None:
        """The hot loop: one kernel call per step, inputs and outputs by slot; steps[i] is the
        node (names or self._names)[offset + i]'s."""
        i = 0
        try:
            for i, (mode, fn, a, b, c) in enumerate(steps):
                # literal modes (see _MODE_*): a global lookup per op would cost ~30 ns
                if mode == 3:
                    vals[c] = fn(vals[a], vals[b])
                elif mode == 4:
                    vals[c] = fn(vals[a])
                elif mode == 0:
                    vals[b] = fn(*[vals[j] for j in a])
                elif mode == 2:
                    fn(*[vals[j] for j in a])
                elif mode == 5:   # (_MODE_RELEASE: values no later step reads)
                    for j in a:
                        vals[j] = None
                else:
                    for o, v in zip(b, fn(*[vals[j] for j in a])):
                        if o >= 0:
                            vals[o] = v
        except Exception as e:  # noqa: BLE001 - every kernel failure becomes an OpError
            raise _as_op_error(e, (names or self._names)[offset + i], self.ctx.task) from None


_FEEDABLE = frozenset(("Placeholder", "PlaceholderV2", "PlaceholderWithDefault"))
_LOOPS = frozenset(("While",))   # told which of their outputs nobody reads (_with_unread_outputs)
_SWITCHES = frozenset(("Switch", "RefSwitch"))   # TF 1 control flow: where dead tensors start
_MERGES = frozenset(("Merge",))                  # ... and where they end
_DEAD_REFUSED = frozenset(("_Send",))
_UNGUARDED = frozenset(("_Send", "_Recv"))   # moving a value changes no state


def _with_releases(steps: list, names: list, kept: set, vals: list) -> tuple:
    """The serial run's (steps, names): after the last step that reads a value (or the step that
    makes one nobody reads), a step that lets go of it, as TF's executor frees a tensor after its
    last consumer: a chain of large products holds a few values at a time, not all of them, and a
    variable's value read earlier in the step no longer forces its sparse update to copy
    (VariableResource.updating). Only values that were _RELEASE_MIN_BYTES or more in the run that
    left `vals` are let go (a smaller one costs more to let go of early, a step of ~0.15 us, than
    the op that made it took); `kept` (fed, fetched and constant values, the step context) stay."""
    last: dict = {}
    for i, step in enumerate(steps):
        reads, writes = inter_op.step_slots(step)
        for s in (*reads, *writes):
            last[s] = i
    dying: dict = {}
    for s, i in last.items():
        if s not in kept and getattr(vals[s], "nbytes", 0) >= _RELEASE_MIN_BYTES:
            dying.setdefault(i, []).append(s)
    if not dying:
        return steps, names
    out_steps, out_names = [], []
    for i, (step, node) in enumerate(zip(steps, names)):
        out_steps.append(step)
        out_names.append(node)
        if i in dying:
            out_steps.append((_MODE_RELEASE, None, tuple(dying[i]), None, None))
            out_names.append(node)
    return out_steps, out_names


def _with_unread_outputs(node: NodeDef, read: set) -> NodeDef:
    """`node` with attr "_unread_outputs", the indices of its outputs that no op of the plan reads
    and no fetch names: a While leaves the loop variables only they depend on uncomputed (a
    gradient loop's sums for tensors that need no gradient, such as dropout masks)."""
    unread = tuple(i for i in range(_num_outputs(node)) if f"{node.name}:{i}" not in read)
    return NodeDef(node.name, node.op, node.input, node.device, {**node.attr, "_unread_outputs": unread}) \
        if unread else node


def _is_ref_output(node: Optional[NodeDef], index: int) -> bool:
    return node is not None and index in registry.lookup(node.op).ref_outputs


def _reading_refs(fn, positions: list, name: str, move: Optional[Callable] = None):
    """`fn` given the current value of the TF1 variables at argument `positions` (ref outputs
    read by an op that takes values): read when the op runs, as TF reads a ref, so an op ordered
    after an Assign sees the assigned value. The read names the reading op, as TF's error does.
    `move` brings the value to the reading op's device (a variable may live on a GPU)."""
    def call(*args):
        args = list(args)
        for p in positions:
            args[p] = args[p].read(name) if move is None else move(args[p].read(name))
        return fn(*args)
    return call


def _gpu_of(device: str, gpus: dict):
    """The Gpu a placed device name denotes ("/job:../device:GPU:1"), or None for the CPU."""
    at = device.rfind("GPU:")
    return None if at < 0 else gpus.get(device[at:])


def _guarded(fn, takes_step: bool):
    """`fn` behind _guard_state_change; the wrapper takes the step as its first argument."""
    if takes_step:
        def guarded(step, *args):
            _guard_state_change(step)
            return fn(step, *args)
    else:
        def guarded(step, *args):
            _guard_state_change(step)
            return fn(*args)
    return guarded


def _guard_state_change(step: StepContext) -> None:
    """Runs before a stateful kernel of a guarded plan: a cancelled or late step stops here."""
    if step.cancelled.is_set():
        err = step.error
        if isinstance(err, errors.OpError):
            raise type(err)(None, None, err.message)
        raise errors.CancelledError(None, None, f"Step {step.step_id} was cancelled")
    if step.deadline is not None and time.monotonic() > step.deadline:
        raise errors.DeadlineExceededError(None, None, f"Step {step.step_id} ran past its deadline")


def _may_be_dead(order: Sequence[NodeDef], feed_set: set) -> set:
    """The nodes of `order` (topologically sorted) an untaken TF 1 Switch can reach, through data or
    control edges: they run through _dead_aware, the rest of the plan as before."""
    reached: set = set()
    for node in order:
        if node.op in _SWITCHES or any(
                src in reached and (is_ctrl or f"{src}:{idx}" not in feed_set)
                for src, idx, is_ctrl in map(parse_input, node.input)):
            reached.add(node.name)
    return reached


def _dead_aware(fn, nout: int, nargs: int, node: NodeDef):
    """`fn` as TF's executor runs a node below a Switch: given `nargs` arguments and then the
    liveness of its control inputs, it is dead (every output DEAD, and its liveness) when an
    argument or control input is dead, and otherwise runs and is live. A Merge is dead only when
    all its data inputs or one control input is; it forwards its first live input itself. A dead
    value never crosses tasks: a _Send of one is refused."""
    dead = (DEAD,) * (nout + 1)
    merge = node.op in _MERGES

    def call(*args):
        if merge:
            if any(a is DEAD for a in args[nargs:]) or all(a is DEAD for a in args[:nargs]):
                return dead
        elif any(a is DEAD for a in args):
            if node.op in _DEAD_REFUSED:
                raise errors.UnimplementedError(
                    node, node.name, f"{node.name}: a tensor of an untaken TF 1 cond branch (Switch) cannot be sent "
                    "to another task; place the cond on one task")
            return dead
        out = fn(*args[:nargs])
        return (None,) if nout == 0 else (out, None) if nout == 1 else (*out, None)
    return call


def _unread_stateless(order: Sequence[NodeDef], fetches: Sequence[str], targets: Sequence[str],
                      keep: set = frozenset()) -> set:
    """The nodes of `order` (topologically sorted) that need not run: stateless, not fetched nor a
    target, and every node that reads one of their outputs is itself such a node, so they are at
    most control inputs. TF's dependency optimizer turns them into NoOps; a gradient tuple, for one,
    makes a first layer's input gradient a control input only (conv1's Conv2DBackpropInput is
    computed by nobody in TF). Placeholders always run, as in TF: an unfed one is still an error."""
    kept = {f.rsplit(":", 1)[0] for f in fetches} | set(targets) | keep
    readers: dict[str, list] = {}
    for node in order:
        for inp in node.input:
            src, _, is_ctrl = parse_input(inp)
            if not is_ctrl:
                readers.setdefault(src, []).append(node.name)
    unread: set = set()
    for node in reversed(order):
        if node.name not in kept and node.op not in _FEEDABLE and not registry.lookup(node.op).stateful \
                and _num_outputs(node) and all(r in unread for r in readers.get(node.name, ())):
            unread.add(node.name)
    return unread


def _refuse_duplicates(nodes: Sequence[NodeDef]) -> None:
    seen: set = set()
    for n in nodes:
        if n.name in seen:
            raise errors.InvalidArgumentError(None, n.name, f"Duplicate node name {n.name!r} in the graph")
        seen.add(n.name)


def _check_output_exists(key: str, by_name: dict, what: str) -> None:
    """`key` ("op:index") names an output of a node of the graph, or a node outside it."""
    op_name, idx, _ = parse_input(key)
    node = by_name.get(op_name)
    if node is None:
        return   # (a tensor fed from outside this partition's nodes is checked by its feeder)
    n = node.attr.get("_num_outputs")
    if type(n) is int and not 0 <= idx < n:
        raise errors.InvalidArgumentError(
            None, op_name, f"{what} does not exist: node {op_name} ({node.op}) has {n} output"
                           f"{'' if n == 1 else 's'}")


def _num_outputs(node: NodeDef) -> int:
    n = node.attr.get("_num_outputs")
    if n is None:
        raise errors.InternalError(None, node.name, f"NodeDef {node.name} lacks _num_outputs")
    return n


def _with_node(e: errors.OpError, node: NodeDef, task: str) -> errors.OpError:
    if f"node {node.name}" in e.message or fusion.MEMBERS in node.attr:   # (a fused member's names the member)
        return e
    return type(e)(node, node.name, f"{e.message}\n\t [[node {node.name} (op: {node.op}) on {task}]]")


def _as_op_error(e: BaseException, node: NodeDef, task: str) -> errors.OpError:
    if isinstance(e, errors.OpError):
        return _with_node(e, node, task)
    if isinstance(e, devices.OUT_OF_MEMORY):   # a GPU's pool is full: this step fails, the task serves on
        return errors.ResourceExhaustedError(
            node, node.name, f"{devices.out_of_memory_message(e, node.device or task)}\n\t [[node {node.name} "
                             f"(op: {node.op}) on {task}]]")
    cls = errors.ResourceExhaustedError if isinstance(e, MemoryError) else errors.InvalidArgumentError
    return cls(node, node.name, f"{type(e).__name__}: {e}\n\t [[node {node.name} (op: {node.op}) on {task}]]")

