"""LocalMaster: runs a whole graph in this process, with state private to one Session (the
master a `tf.Session()` with no target uses; client/session.py picks it)."""
from __future__ import annotations

import threading
import time
from typing import Optional

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.config import ConfigProto, RunOptions
from tensorweave.framework.device import DeviceSpec
from tensorweave.framework.graph import Graph
from tensorweave.framework.graph_def import NodeDef, graph_to_graph_def, needed_nodes, tensor_key
from tensorweave.runtime import inter_op, placer
from tensorweave.runtime.devices import visible_gpus
from tensorweave.runtime.executor import LOCAL_TASK, KernelContext, Plan, StepContext, step_timeout_s
from tensorweave.runtime.resources import ResourceManager
from tensorweave.runtime.step_stats import merge_step_stats
from tensorweave.runtime.tf1_loops import fold_tf1_loops


class LocalMaster:
    """Runs a whole graph in this process, with state private to one Session."""

    def __init__(self, graph: Graph, config: ConfigProto):
        self.graph = graph
        self.config = config
        self.resources = ResourceManager()
        self.gpus = {g.name: g for g in visible_gpus(config)}
        self.ctx = KernelContext(self.resources, log_device_placement=config.log_device_placement, gpus=self.gpus,
                                 global_jit_level=config.graph_options.optimizer_options.global_jit_level)
        self._plans: dict = {}
        self._lock = threading.Lock()
        # (TF's DirectSession: the session's pools, RunOptions.inter_op_thread_pool picks one)
        self._pools, self._owned_pools = inter_op.session_pools(config)

    def plan(self, feeds: tuple, fetches: tuple, targets: tuple) -> Plan:
        key = (feeds, fetches, targets, self.graph._mutations)
        plan = self._plans.get(key)
        if plan is None:
            with self._lock:
                plan = self._plans.get(key)
                if plan is None:
                    gd = fold_tf1_loops(graph_to_graph_def(self.graph))
                    self.ctx.library.update(gd.library)
                    if self.gpus:
                        needed = needed_nodes({n.name: n for n in gd.node}, {tensor_key(f) for f in feeds},
                                              fetches, targets)
                        self._check_placement(needed.values())
                        plan = Plan(self._placed(gd, needed), feeds, fetches, targets, self.ctx)
                    else:
                        plan = Plan(gd.node, feeds, fetches, targets, self.ctx)
                        self._check_placement(plan.nodes)
                    self._plans[key] = plan
        return plan

    def _placed(self, gd, needed) -> list:
        """The nodes on this process's devices by the placer's rules (GPU ops to the first GPU);
        a request's job and task are this process (other ones were refused, or soft placement).
        Only the `needed` ones are placed (and checked)."""
        local = type(gd)(
            [NodeDef(n.name, n.op, n.input, _device_part(n.device), n.attr) for n in gd.node], gd.library)
        cpus = tuple(f"CPU:{i}" for i in range(1, self.config.device_count.get("CPU", 1)))
        cluster = placer.ClusterDevices((LOCAL_TASK,), LOCAL_TASK, ("CPU",) + cpus, ((LOCAL_TASK, tuple(self.gpus)),))
        devices = placer.place(local, cluster, nodes=needed, allow_soft_placement=self.config.allow_soft_placement)
        return [NodeDef(n.name, n.op, n.input, devices.get(n.name, n.device), n.attr) for n in gd.node]

    def _check_placement(self, nodes) -> None:
        if self.config.allow_soft_placement:
            return
        cpus = self.config.device_count.get("CPU", 1)
        for node in nodes:
            if not node.device:
                continue
            d = DeviceSpec.from_string(node.device)
            if d.device_type == "GPU" and (d.device_index or 0) < len(self.gpus):
                continue   # (the placer checks the op has a GPU kernel)
            if d.job not in (None, "localhost") or d.task not in (None, 0) or d.replica not in (None, 0) \
                    or d.device_type not in (None, "CPU") or (d.device_index or 0) >= cpus:
                raise errors.InvalidArgumentError(
                    node, node.name,
                    f"Cannot assign a device for operation {node.name}: Operation was explicitly assigned to "
                    f"{node.device} but available devices are [ {', '.join(self.list_devices())} ]. Make sure the "
                    "device specification refers to a valid device.")

    def run(self, feeds: dict, fetches: list, targets: list, options: Optional[RunOptions], run_metadata):
        pool = inter_op.pool_for_run(self._pools, options)
        plan = self.plan(tuple(feeds), tuple(fetches), tuple(targets))
        timeout_s = step_timeout_s(options, self.config)
        trace = [] if options is not None and options.trace_level == RunOptions.FULL_TRACE else None
        step = None
        if plan.needs_step or trace is not None or timeout_s is not None:
            step = StepContext(deadline=None if timeout_s is None else time.monotonic() + timeout_s, trace=trace)
        with np.errstate(all="ignore"):
            out = plan.run(list(feeds.values()), step, pool)
        if trace is not None and run_metadata is not None:
            merge_step_stats(run_metadata.step_stats, LOCAL_TASK, trace)
        return out

    def close(self) -> None:
        self.resources.cleanup()
        for pool in self._owned_pools:
            pool.close()

    def list_devices(self) -> list:
        """This session's CPUs: ConfigProto.device_count["CPU"] of them (TF's way to give one
        machine several CPU devices), /device:CPU:0 alone by default; then its GPUs."""
        return [f"{LOCAL_TASK}/device:CPU:{i}" for i in range(max(1, self.config.device_count.get("CPU", 1)))] \
            + [f"{LOCAL_TASK}/device:{g}" for g in self.gpus]


def _device_part(device: str) -> str:
    """A local request's device type and index alone ("/job:worker/gpu:1" -> "/device:GPU:1")."""
    d = DeviceSpec.from_string(device)
    return DeviceSpec(device_type=d.device_type, device_index=d.device_index).to_string() if d.device_type else ""
