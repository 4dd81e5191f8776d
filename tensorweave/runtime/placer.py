"""Placement: which task (and device) of a cluster runs each node of a GraphDef.

Pure functions over plain data. Rules, in TF 1.x's order of precedence:
- a node consuming a `resource` handle runs on the handle's task (handles never cross tasks);
- every member of a colocation group (attr `_class` = ["loc:@name"]) runs on the group's
  device, the merge of its members' requested devices (incompatible requests are an error);
- a requested device is completed against the cluster: "/job:ps" means task 0, a spec
  without a job ("/cpu:0", "") means the default task (the session's master task);
- a node whose request names no device type runs on the task's first GPU when the task has
  one and every member of its colocation group has a GPU kernel, else on its CPU;
- soft placement (ConfigProto.allow_soft_placement) relaxes only the device type and index
  (a GPU request on a CPU-only task, or for an op without a GPU kernel, runs on its CPU; one
  past the task's GPUs on its first GPU), never an unknown job or task.
"""
from __future__ import annotations

import sys
import threading
import weakref
from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Optional

from tensorweave.framework import errors
from tensorweave.framework.device import DeviceSpec, task_name
from tensorweave.framework.graph_def import GraphDef, NodeDef, parse_input
from tensorweave.ops import registry


@dataclass(frozen=True)
class ClusterDevices:
    """The tasks a session may place on, and the device types each of them offers."""

    tasks: tuple                      # task names "/job:J/replica:0/task:I"
    default_task: str                 # where unplaced ops go (the master task)
    device_types: tuple = ("CPU",)    # (type, count) pairs are expressed as "GPU:2" entries
    gpus: tuple = ()                  # (task, ("GPU:0", ...)) for each task known to have GPUs

    def gpus_of(self, task: str) -> tuple:
        for t, names in self.gpus:
            if t == task:
                return names
        return ()

    @classmethod
    def from_cluster(cls, cluster: Mapping, default_task: str, device_filters: Iterable[str] = (),
                     devices: Iterable[str] = ()) -> "ClusterDevices":
        """From a ClusterSpec dict (job -> [addresses] or {index: address}), the master task's
        full name, ConfigProto.device_filters and the master task's local device names (other
        tasks' GPUs: with_task_devices, once a graph needs them)."""
        tasks = [t for t in cluster_task_names(cluster) if t == default_task or matches_filters(t, device_filters)]
        if default_task not in tasks:
            tasks.insert(0, default_task)
        types = []
        for d in devices:
            spec = DeviceSpec.from_string(d)
            if spec.device_type not in (None, "GPU") and (spec.device_type != "CPU" or spec.device_index):
                types.append(f"{spec.device_type}:{spec.device_index or 0}")
        return cls(tuple(tasks), default_task, ("CPU",) + tuple(sorted(set(types)))).with_task_devices(
            default_task, devices)

    def with_task_devices(self, task: str, devices: Iterable[str]) -> "ClusterDevices":
        """These devices with `task`'s GPUs as its get_status lists them ("/job:J/.../device:GPU:0")."""
        names = sorted({f"GPU:{s.device_index or 0}" for s in map(DeviceSpec.from_string, devices)
                        if s.device_type == "GPU"})
        gpus = tuple(g for g in self.gpus if g[0] != task) + (((task, tuple(names)),) if names else ())
        return replace(self, gpus=gpus)

    def task_of(self, spec: DeviceSpec) -> str:
        """The task a requested device names: its job's (task 0 when it names none), else the
        default task's job (with the task it names)."""
        if spec.job is not None:
            return task_name(spec.job, spec.task or 0)
        if spec.task is None:
            return self.default_task
        return task_name(DeviceSpec.from_string(self.default_task).job, spec.task)

    def available(self) -> str:
        return ", ".join(f"{t}/device:{d if ':' in d else d + ':0'}" for t in self.tasks
                         for d in self.device_types + self.gpus_of(t))


def cluster_task_names(cluster: Mapping) -> list:
    """Every task of a ClusterSpec dict, as full task names, jobs in sorted order."""
    names = []
    for job in sorted(cluster):
        tasks = cluster[job]
        indices = sorted(int(i) for i in tasks) if isinstance(tasks, Mapping) else range(len(tasks))
        names.extend(task_name(job, i) for i in indices)
    return names


def matches_filters(task: str, device_filters: Iterable[str]) -> bool:
    """True when no filters are given or `task` matches one of them (TF's device_filters)."""
    filters = [f for f in device_filters or () if f]
    if not filters:
        return True
    t = DeviceSpec.from_string(task)
    for f in filters:
        s = DeviceSpec.from_string(f)
        if (s.job in (None, t.job) and s.task in (None, t.task) and s.replica in (None, 0)):
            return True
    return False


# -- colocation groups ---------------------------------------------------------------------------
class _UnionFind:
    def __init__(self):
        self.parent: dict = {}

    def find(self, x: str) -> str:
        parent = self.parent
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(x, x) != root:
            parent[x], x = root, parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def _groups_of(node: NodeDef) -> list:
    out = []
    for g in node.attr.get("_class", None) or ():
        g = g.decode() if isinstance(g, bytes) else str(g)
        if g.startswith("loc:@"):
            out.append(g[5:])
    return out


def _merge_requests(a: DeviceSpec, b: DeviceSpec, soft: bool) -> Optional[DeviceSpec]:
    """The merge of two requested devices, or None when their tasks (or types) conflict."""
    for f in ("job", "replica", "task"):
        va, vb = getattr(a, f), getattr(b, f)
        if va is not None and vb is not None and va != vb:
            return None
    if not soft:
        for f in ("device_type", "device_index"):
            va, vb = getattr(a, f), getattr(b, f)
            if va is not None and vb is not None and va != vb:
                return None
    return a.merge_from(b)


# The colocation groups of the GraphDefs placed lately, {id: (GraphDef weakref, its node count, resource
# tensors, groups)}: a master places each step's plan over its graph's one cached GraphDef, whose
# groups (a union over every node and input) are the same for every plan.
_GROUPS: dict = {}
_GROUPS_KEPT = 16
_GROUPS_LOCK = threading.Lock()


def _colocation(graph_def: GraphDef, resource_tensors: frozenset) -> tuple:
    """(nodes by name, each node's group root, each root's members, the followers: the nodes
    that consume a resource handle, whose own requests yield to the handle's) of `graph_def`,
    computed once per GraphDef object and resource set."""
    with _GROUPS_LOCK:
        entry = _GROUPS.get(id(graph_def))
    if entry is not None and entry[0]() is graph_def and entry[1] == len(graph_def.node) \
            and entry[2] == resource_tensors:
        return entry[3]
    by_name = {n.name: n for n in graph_def.node}
    uf = _UnionFind()
    follower: set = set()
    for n in graph_def.node:
        for g in _groups_of(n):
            uf.union(g if g in by_name else "@" + g, n.name)
        for inp in n.input:
            src, idx, ctrl = parse_input(inp)
            if not ctrl and f"{src}:{idx}" in resource_tensors and src in by_name:
                uf.union(src, n.name)
                follower.add(n.name)
    root_of = {name: uf.find(name) for name in by_name}
    members: dict = {}
    for name, root in root_of.items():
        members.setdefault(root, []).append(name)
    groups = (by_name, root_of, members, follower)
    try:
        ref = weakref.ref(graph_def)
    except TypeError:   # (a protobuf message, such as TF's GraphDef, takes no weak reference: not kept)
        return groups
    with _GROUPS_LOCK:
        if len(_GROUPS) >= _GROUPS_KEPT:
            _GROUPS.pop(next(iter(_GROUPS)))
        _GROUPS[id(graph_def)] = (ref, len(graph_def.node), resource_tensors, groups)
    return groups


def place(graph_def: GraphDef, cluster: ClusterDevices, *, nodes: Optional[Iterable[str]] = None,
          allow_soft_placement: bool = False, log_device_placement: bool = False,
          resource_tensors: Optional[set] = None) -> dict:
    """Assigns a full device name ("/job:J/replica:0/task:I/device:CPU:0") to each node.

    `nodes` limits the result (and the error checks) to those node names; colocation is still
    computed over the whole graph. `resource_tensors` names the tensors ("op:0") whose dtype
    is `resource`; without it, outputs of ops named *HandleOp are taken as resource handles.
    Raises InvalidArgumentError naming the op when a request cannot be satisfied."""
    if resource_tensors is None:
        resource_tensors = {f"{n.name}:0" for n in graph_def.node if n.op.endswith("HandleOp")}
    by_name, root_of, members, follower = _colocation(graph_def, frozenset(resource_tensors))
    wanted = list(by_name) if nodes is None else [n for n in nodes if n in by_name]
    soft = allow_soft_placement

    # Merge the requests of each group: anchors (non-followers) first, then followers.
    group_request: dict = {}
    needed_roots = {root_of[n] for n in wanted}
    for root in needed_roots:
        names = members[root]
        anchors = [m for m in names if m not in follower and by_name[m].device]
        chosen: Optional[DeviceSpec] = None
        chosen_by = None
        for m in anchors:
            spec = DeviceSpec.from_string(by_name[m].device)
            if chosen is None:
                chosen, chosen_by = spec, m
                continue
            merged = _merge_requests(chosen, spec, soft)
            if merged is None:
                raise errors.InvalidArgumentError(
                    by_name[m], m,
                    f"Cannot colocate nodes {chosen_by} and {m}: Cannot merge devices with incompatible "
                    f"devices: '{chosen.to_string()}' and '{spec.to_string()}' [[node {m} "
                    f"(op: {by_name[m].op})]]")
            chosen = merged
        if chosen is None:
            # Only followers carry requests: take the first one whose task is known.
            for m in names:
                if by_name[m].device:
                    chosen, chosen_by = DeviceSpec.from_string(by_name[m].device), m
                    break
        group_request[root] = (chosen or DeviceSpec(), chosen_by)

    result: dict = {}
    resolved: dict = {}
    for name in wanted:
        root = root_of[name]
        if root not in resolved:
            spec, by = group_request[root]
            gpu_kernels = bool(cluster.gpus) and all(registry.has_kernel(by_name[m].op, "GPU") for m in members[root])
            resolved[root] = _resolve(spec, by_name[name] if by is None else by_name[by], cluster, soft,
                                      by_name[name], gpu_kernels)
        result[name] = resolved[root]
    if log_device_placement:
        for name in wanted:
            print(f"{name}: ({by_name[name].op}): {result[name]}", file=sys.stderr)
    return result


def _resolve(spec: DeviceSpec, requester: NodeDef, cluster: ClusterDevices, soft: bool,
             node: NodeDef, gpu_kernels: bool = False) -> str:
    task = cluster.task_of(spec)
    if task not in cluster.tasks or spec.replica not in (None, 0):
        raise _cannot_assign(node, requester, cluster)
    gpus = cluster.gpus_of(task)
    dtype = spec.device_type or ("GPU" if gpus and gpu_kernels and spec.device_index is None else "CPU")
    index = spec.device_index or 0
    if dtype == "GPU":
        if f"GPU:{index}" in gpus and gpu_kernels:
            return f"{task}/device:GPU:{index}"
        if not soft:
            raise _cannot_assign(node, requester, cluster) if f"GPU:{index}" not in gpus else \
                errors.InvalidArgumentError(
                    node, node.name,
                    f"Cannot assign a device for operation {node.name}: Could not satisfy explicit device "
                    f"specification '{requester.device}' because no supported kernel for GPU devices is available."
                    f"\n\t [[node {node.name} (op: {node.op})]]")
        if gpus and gpu_kernels:   # (an index past the task's GPUs: TF's soft placement takes its first GPU)
            return f"{task}/device:{min(gpus, key=lambda g: int(g[4:]))}"
        return f"{task}/device:CPU:0"
    if dtype != "CPU" and f"{dtype}:{index}" not in cluster.device_types:
        if not soft:
            raise _cannot_assign(node, requester, cluster)
        dtype, index = "CPU", 0
    elif dtype == "CPU" and index != 0 and f"CPU:{index}" not in cluster.device_types:
        if not soft:
            raise _cannot_assign(node, requester, cluster)
        index = 0
    return f"{task}/device:{dtype}:{index}"


def _cannot_assign(node: NodeDef, requester: NodeDef, cluster: ClusterDevices) -> errors.InvalidArgumentError:
    via = "" if requester.name == node.name else f" (colocated with {requester.name})"
    return errors.InvalidArgumentError(
        node, node.name,
        f"Cannot assign a device for operation {node.name}{via}: Operation was explicitly assigned to "
        f"{requester.device} but available devices are [ {cluster.available()} ]. Make sure the device "
        f"specification refers to a valid device.\n\t [[node {node.name} (op: {node.op})]]")
