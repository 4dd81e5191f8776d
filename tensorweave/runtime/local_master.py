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
from tensorweave.framework.graph_def import graph_to_graph_def
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
        self.ctx = KernelContext(self.resources, log_device_placement=config.log_device_placement)
        self._plans: dict = {}
        self._lock = threading.Lock()

    def plan(self, feeds: tuple, fetches: tuple, targets: tuple) -> Plan:
        key = (feeds, fetches, targets, self.graph._mutations)
        plan = self._plans.get(key)
        if plan is None:
            with self._lock:
                plan = self._plans.get(key)
                if plan is None:
                    gd = fold_tf1_loops(graph_to_graph_def(self.graph))
                    self.ctx.library.update(gd.library)
                    plan = Plan(gd.node, feeds, fetches, targets, self.ctx)
                    self._check_placement(plan)
                    self._plans[key] = plan
        return plan

    def _check_placement(self, plan: Plan) -> None:
        if self.config.allow_soft_placement:
            return
        cpus = self.config.device_count.get("CPU", 1)
        for node in plan.nodes:
            if not node.device:
                continue
            d = DeviceSpec.from_string(node.device)
            if d.job not in (None, "localhost") or d.task not in (None, 0) or d.replica not in (None, 0) \
                    or d.device_type not in (None, "CPU") or (d.device_index or 0) >= cpus:
                raise errors.InvalidArgumentError(
                    node, node.name,
                    f"Cannot assign a device for operation {node.name}: Operation was explicitly assigned to "
                    f"{node.device} but available devices are [ {', '.join(self.list_devices())} ]. Make sure the "
                    "device specification refers to a valid device.")

    def run(self, feeds: dict, fetches: list, targets: list, options: Optional[RunOptions], run_metadata):
        plan = self.plan(tuple(feeds), tuple(fetches), tuple(targets))
        timeout_s = step_timeout_s(options, self.config)
        trace = [] if options is not None and options.trace_level == RunOptions.FULL_TRACE else None
        step = None
        if plan.needs_step or trace is not None or timeout_s is not None:
            step = StepContext(deadline=None if timeout_s is None else time.monotonic() + timeout_s, trace=trace)
        with np.errstate(all="ignore"):
            out = plan.run(list(feeds.values()), step)
        if trace is not None and run_metadata is not None:
            merge_step_stats(run_metadata.step_stats, LOCAL_TASK, trace)
        return out

    def close(self) -> None:
        self.resources.cleanup()

    def list_devices(self) -> list:
        """This session's CPUs: ConfigProto.device_count["CPU"] of them (TF's way to give one
        machine several CPU devices), /device:CPU:0 alone by default."""
        return [f"{LOCAL_TASK}/device:CPU:{i}" for i in range(max(1, self.config.device_count.get("CPU", 1)))]
