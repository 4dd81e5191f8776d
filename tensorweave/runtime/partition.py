"""Partitioning: one GraphDef per task, with a _Send/_Recv pair on every cross-task edge.

Pure functions over plain data. A step's graph is first pruned to what its fetches and
targets need (fed tensors cut the graph), then split by the placer's devices:
- one _Send per (tensor, destination task), one _Recv per (tensor, destination task);
- a control edge across tasks becomes a dummy empty tensor sent after the source runs;
- fed tensors go straight to every task that consumes them (no Send from the producer);
- small constants are copied to the tasks that consume them (no Send either);
- fetched tensors come back from the task that produces them;
- every function body a task's nodes reference is copied into that task's library.
"""
from __future__ import annotations

import heapq
import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

import numpy as np

from tensorweave.framework.graph_def import GraphDef, NodeDef, needed_nodes, parse_input, tensor_key
from tensorweave.framework.device import task_of


@dataclass(frozen=True)
class Partition:
    """What one task runs in a step: its graph, and its share of feeds, fetches and targets."""

    task: str
    graph_def: GraphDef
    feeds: tuple      # tensor names ("x:0") whose values the master sends with the step
    fetches: tuple    # tensor names this task returns
    targets: tuple    # node names run for effect (including every _Send)


def prune(graph_def: GraphDef, feeds: Iterable[str], fetches: Iterable[str], targets: Iterable[str]) -> list:
    """Names of the nodes a step needs, in graph order: the fetches' and targets' ancestors,
    with fed tensors cutting the graph."""
    by_name = {n.name: n for n in graph_def.node}
    needed = needed_nodes(by_name, {tensor_key(f) for f in feeds}, fetches, targets)
    return [n.name for n in graph_def.node if n.name in needed]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-/]", "_", name).strip("/")


def _task_suffix(task: str) -> str:
    return _safe(task.replace("/job:", "").replace("/replica:", "_").replace("/task:", "_"))


def _functions_used(nodes: Iterable[NodeDef], library: Mapping) -> dict:
    """The library functions reachable from `nodes`' attributes (function names as strings)."""
    out: dict = {}

    def scan(value):
        if isinstance(value, str):
            if value in library and value not in out:
                out[value] = library[value]
                for n in library[value].node:
                    for v in n.attr.values():
                        scan(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                scan(v)
        elif isinstance(value, dict):
            for v in value.values():
                scan(v)

    if library:
        for n in nodes:
            for v in n.attr.values():
                scan(v)
    return out


def _dtype_of(tensor: str, src: NodeDef, tensor_dtypes: Optional[Mapping]) -> str:
    if tensor_dtypes and tensor in tensor_dtypes:
        return tensor_dtypes[tensor]
    for key in ("T", "dtype", "out_type", "DstT"):
        v = src.attr.get(key)
        if isinstance(v, str):
            return v
    return "float32"


def partition(graph_def: GraphDef, devices: Mapping[str, str], feeds: Iterable[str], fetches: Iterable[str],
              targets: Iterable[str], tensor_dtypes: Optional[Mapping[str, str]] = None,
              nodes: Optional[Iterable[str]] = None) -> dict:
    """Splits the step's pruned graph by task. `devices` maps node name -> full device (from
    placer.place); `tensor_dtypes` maps "op:i" -> dtype name (for the Send/Recv attrs).
    `nodes` is the pruned node list when the caller already has it. Returns task -> Partition
    for only the tasks the step uses."""
    feeds = [tensor_key(f) for f in feeds]
    fetches = [tensor_key(f) for f in fetches]
    targets = [t.lstrip("^") for t in targets]
    fed = set(feeds)
    by_name = {n.name: n for n in graph_def.node}
    needed = list(nodes) if nodes is not None else prune(graph_def, feeds, fetches, targets)
    needed = _topological(needed, by_name, fed)
    task = {name: task_of(devices[name]) for name in needed}

    out_nodes: dict = {}          # task -> [NodeDef]
    sends: dict = {}              # task -> [send node names]
    task_feeds: dict = {}         # task -> [fed tensors]
    recv_of: dict = {}            # (tensor or ^op, dst task) -> recv node name
    for name in needed:
        node = by_name[name]
        here = task[name]
        new_inputs = []
        for inp in node.input:
            src, idx, ctrl = parse_input(inp)
            if ctrl:
                if task[src] == here:
                    new_inputs.append(inp)
                    continue
                key = (f"^{src}", here)
                if key not in recv_of:
                    recv_of[key] = _add_pair(out_nodes, sends, f"^{src}", src, None, task[src], here,
                                             devices, "float32")
                new_inputs.append("^" + recv_of[key])
                continue
            t = f"{src}:{idx}"
            if t in fed:
                lst = task_feeds.setdefault(here, [])
                if t not in lst:
                    lst.append(t)
                new_inputs.append(inp)
            elif task[src] == here:
                new_inputs.append(inp)
            elif _copyable_const(by_name[src]):
                # A small constant is copied to its consumer's task: one fewer round trip per step.
                key = (src, here)
                if key not in recv_of:
                    c = by_name[src]
                    out_nodes.setdefault(here, []).append(
                        NodeDef(c.name, c.op, (), devices[name], c.attr))   # (its first consumer's device)
                    recv_of[key] = c.name
                new_inputs.append(inp)
            else:
                key = (t, here)
                if key not in recv_of:
                    recv_of[key] = _add_pair(out_nodes, sends, t, src, idx, task[src], here, devices,
                                             _dtype_of(t, by_name[src], tensor_dtypes))
                new_inputs.append(recv_of[key])
        out_nodes.setdefault(here, []).append(
            NodeDef(node.name, node.op, tuple(new_inputs), devices[name], node.attr))

    task_fetches: dict = {}
    for f in fetches:
        if f in fed:
            continue   # the master answers a fetch of a fed tensor with the fed value
        task_fetches.setdefault(task[parse_input(f)[0]], []).append(f)
    task_targets: dict = {}
    for t in targets:
        task_targets.setdefault(task[t], []).append(t)

    result = {}
    for t, nodes_t in out_nodes.items():
        lib = _functions_used(nodes_t, graph_def.library)
        gd = GraphDef(nodes_t, lib, dict(graph_def.versions))
        result[t] = Partition(t, gd, tuple(task_feeds.get(t, ())), tuple(task_fetches.get(t, ())),
                              tuple(task_targets.get(t, ())) + tuple(sends.get(t, ())))
    return result


def _topological(names: list, by_name: Mapping, fed: set) -> list:
    """`names` in a topological order of their data and control edges (graph order where free).

    Nodes (Sends, Recvs included) are emitted in this one order, shared by every partition,
    and each task's executor takes its ready Recvs in its partition's node order. Since every
    Send follows, in the shared order, the Recvs it depends on, a Recv that waits for a Send
    waits for something earlier in the order, and no two tasks can wait on each other (as two
    independent Recvs from one peer taken in the wrong order could, were a node listed before
    its inputs, e.g. after a late `_add_control_input`)."""
    position = {n: i for i, n in enumerate(names)}
    deps: dict = {}
    users: dict = {n: [] for n in names}
    for n in names:
        d = set()
        for inp in by_name[n].input:
            src, idx, ctrl = parse_input(inp)
            if src in position and (ctrl or f"{src}:{idx}" not in fed):
                d.add(src)
        deps[n] = d
        for s in d:
            users[s].append(n)
    ready = [position[n] for n, d in deps.items() if not d]
    heapq.heapify(ready)
    out = []
    while ready:
        n = names[heapq.heappop(ready)]
        out.append(n)
        for u in users[n]:
            deps[u].discard(n)
            if not deps[u]:
                heapq.heappush(ready, position[u])
    return out if len(out) == len(names) else names   # a cycle: the executor reports it


MAX_COPIED_CONST_BYTES = 64 << 10


def _copyable_const(node: NodeDef) -> bool:
    if node.op != "Const" or node.input:
        return False
    value = node.attr.get("value")
    return isinstance(value, np.ndarray) and value.nbytes <= MAX_COPIED_CONST_BYTES


def _add_pair(out_nodes: dict, sends: dict, tname: str, src: str, idx: Optional[int], src_task: str,
              dst_task: str, devices: Mapping, dtype: str) -> str:
    """Adds a _Send on src_task and a _Recv on dst_task for `tname`; returns the Recv's name."""
    send_dev = devices[src]
    recv_dev = f"{dst_task}/device:CPU:0"   # (a received value is in host memory, whatever its consumers' devices)
    base = _safe(tname.lstrip("^").replace(":", "_"))
    if idx is None:   # control edge: send an empty tensor once `src` has run
        dummy = f"_ctrl/{base}/to_{_task_suffix(dst_task)}"
        out_nodes.setdefault(src_task, []).append(NodeDef(
            dummy, "Const", (f"^{src}",), send_dev,
            {"value": np.zeros((0,), np.float32), "dtype": "float32", "_num_outputs": 1}))
        send_input = dummy
    else:
        send_input = src if idx == 0 else f"{src}:{idx}"
    send_name = f"_send/{base}/to_{_task_suffix(dst_task)}"
    recv_name = f"_recv/{base}/from_{_task_suffix(src_task)}"
    out_nodes.setdefault(src_task, []).append(NodeDef(
        send_name, "_Send", (send_input,), send_dev,
        {"tensor_name": tname, "send_device": src_task, "recv_device": dst_task, "T": dtype,
         "_num_outputs": 0}))
    sends.setdefault(src_task, []).append(send_name)
    out_nodes.setdefault(dst_task, []).append(NodeDef(
        recv_name, "_Recv", (), recv_dev,
        {"tensor_name": tname, "send_device": src_task, "recv_device": dst_task, "tensor_type": dtype,
         "_num_outputs": 1}))
    return recv_name
