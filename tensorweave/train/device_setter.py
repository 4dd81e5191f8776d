"""tf.train.replica_device_setter: variables round-robin over ps tasks, the rest on the worker."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.device import DeviceSpec
from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.framework.shapes import TensorShape, as_shape
from tensorweave.framework.tf_export import tf_export


# TF 1.15's STANDARD_PS_OPS: the ops that create state a ps should hold.
STANDARD_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable",
                   "MutableHashTableV2", "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2",
                   "MutableDenseHashTable", "MutableDenseHashTableV2", "VarHandleOp",
                   "BoostedTreesEnsembleResourceHandleOp", "BoostedTreesQuantileStreamResourceHandleOp")


class _RoundRobinStrategy:
    """Returns the next ps task index on each call (TF's default ps_strategy)."""

    def __init__(self, num_tasks: int):
        self._num_tasks = num_tasks
        self._next_task = 0

    def __call__(self, unused_op) -> int:
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


@tf_export("contrib.training.GreedyLoadBalancingStrategy")
class GreedyLoadBalancingStrategy:
    """Places each ps op on the ps task with the least load so far
    (TF's tf.contrib.training.GreedyLoadBalancingStrategy(num_tasks, load_fn))."""

    def __init__(self, num_tasks: int, load_fn: Callable):
        self._num_tasks = num_tasks
        self._load_fn = load_fn
        self._ps_loads = np.zeros(num_tasks)

    def __call__(self, op) -> int:
        task = int(np.argmin(self._ps_loads))
        self._ps_loads[task] += self._load_fn(op)
        return task


@tf_export("contrib.training.byte_size_load_fn")
def byte_size_load_fn(op) -> int:
    """The byte size of a variable-creating op's value (TF's byte_size_load_fn). For a
    resource variable (VarHandleOp) the size of the variable, not of its handle."""
    if op.type == "VarHandleOp" or len(op.outputs) == 1 and op.outputs[0].dtype == dtypes.resource:
        dtype = dtypes.as_dtype(op.get_attr("dtype"))
        shape = as_shape(op.get_attr("shape"))
    else:
        if len(op.outputs) != 1:
            raise ValueError(f"Op {op} must have a single output")
        dtype = op.outputs[0].dtype
        shape = op.outputs[0].get_shape()
        if not shape.is_fully_defined():
            shape = TensorShape(op.get_attr("shape"))
    if not shape.is_fully_defined():
        raise ValueError(f"Shape {shape} is not fully defined")
    return int(shape.num_elements()) * dtype.size


class _ReplicaDeviceChooser:
    def __init__(self, ps_tasks: int, ps_device: str, worker_device: str, merge_devices: bool,
                 ps_ops, ps_strategy: Callable):
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = ps_ops
        self._ps_strategy = ps_strategy

    def device_function(self, op) -> str:
        if not self._merge_devices and op.device:
            return op.device
        current = DeviceSpec.from_string(op.device or "")
        op_type = op.type if hasattr(op, "type") else op.op   # an Operation or a NodeDef
        if self._ps_tasks and self._ps_device and op_type in self._ps_ops:
            ps_device = DeviceSpec.from_string(self._ps_device)
            # The task is chosen only when the op's own job (if any) is the ps job.
            if ps_device.job and (not current.job or current.job == ps_device.job):
                ps_device = ps_device.replace(task=self._ps_strategy(op))
            return ps_device.merge_from(current).to_string()
        worker = DeviceSpec.from_string(self._worker_device or "")
        return worker.merge_from(current).to_string()


@tf_export("train.replica_device_setter")
def replica_device_setter(ps_tasks: int = 0, ps_device: str = "/job:ps", worker_device: str = "/job:worker",
                          merge_devices: bool = True, cluster=None, ps_ops=None,
                          ps_strategy=None) -> Optional[Callable]:
    """tf.train.replica_device_setter(ps_tasks=0, ps_device='/job:ps', worker_device='/job:worker',
    merge_devices=True, cluster=None, ps_ops=None, ps_strategy=None).

    A device function for `tf.device`: ops in `ps_ops` (default: the variable-creating ops)
    go to `ps_device` with a task picked by `ps_strategy` (default round-robin over the ps
    tasks), everything else to `worker_device`; fields an op already has win when
    `merge_devices`. With `cluster`, the number of ps tasks is taken from its ps job.
    Returns None when there are no ps tasks."""
    if cluster is not None:
        cluster_spec = (cluster if isinstance(cluster, ClusterSpec) else ClusterSpec(cluster)).as_dict()
        ps_job_name = DeviceSpec.from_string(ps_device).job
        if ps_job_name not in cluster_spec or cluster_spec[ps_job_name] is None:
            return None
        ps_tasks = len(cluster_spec[ps_job_name])
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")
    chooser = _ReplicaDeviceChooser(ps_tasks, ps_device, worker_device, merge_devices, ps_ops, ps_strategy)
    return chooser.device_function
