"""ConfigProto, GPUOptions, GraphOptions, RunOptions, RunMetadata with TF's field names.

Plain Python records that behave like the protobuf messages TF1 programs build: keyword
construction, attribute access and assignment, nested messages created on access,
CopyFrom/MergeFrom.
"""
from __future__ import annotations

import copy

from tensorweave.framework.tf_export import tf_export


_IMMUTABLE = frozenset({int, float, bool, str, bytes, type(None)})


class _Message:
    _fields: dict = {}

    def __init__(self, **kwargs):
        for name, default in self._fields.items():
            # (a training loop makes a RunOptions and a RunMetadata every step: scalars need no copy)
            value = default if type(default) in _IMMUTABLE else default() if callable(default) else copy.copy(default)
            object.__setattr__(self, name, value)
        for k, v in kwargs.items():
            if k not in self._fields:
                raise ValueError(f"Protocol message {type(self).__name__} has no \"{k}\" field.")
            if isinstance(getattr(self, k), list):
                v = type(getattr(self, k))(v)
            object.__setattr__(self, k, v)

    def __setattr__(self, name, value):
        if name not in self._fields:
            raise AttributeError(f"Assignment not allowed (no field \"{name}\" in protocol message "
                                 f"{type(self).__name__}).")
        object.__setattr__(self, name, value)

    def CopyFrom(self, other) -> None:
        for name in self._fields:
            object.__setattr__(self, name, copy.deepcopy(getattr(other, name)))

    def MergeFrom(self, other) -> None:
        for name, default in self._fields.items():
            value = getattr(other, name)
            if isinstance(value, _Message):
                getattr(self, name).MergeFrom(value)
            elif isinstance(value, list):
                getattr(self, name).extend(copy.deepcopy(value))
            elif isinstance(value, dict):
                getattr(self, name).update(value)
            elif value != (default() if callable(default) else default):
                object.__setattr__(self, name, value)

    def HasField(self, name: str) -> bool:
        default = self._fields[name]
        return getattr(self, name) != (default() if callable(default) else default)

    def ClearField(self, name: str) -> None:
        default = self._fields[name]
        object.__setattr__(self, name, default() if callable(default) else copy.copy(default))

    def __eq__(self, other):
        return type(self) is type(other) and all(getattr(self, f) == getattr(other, f) for f in self._fields)

    def __repr__(self):
        parts = [f"{k}={getattr(self, k)!r}" for k, d in self._fields.items()
                 if getattr(self, k) != (d() if callable(d) else d)]
        return f"{type(self).__name__}({', '.join(parts)})"


@tf_export("GPUOptions")
class GPUOptions(_Message):
    _fields = {"per_process_gpu_memory_fraction": 0.0, "allow_growth": False, "allocator_type": "",
               "deferred_deletion_bytes": 0, "visible_device_list": "", "polling_active_delay_usecs": 0,
               "polling_inactive_delay_msecs": 0, "force_gpu_compatible": False, "experimental": dict}


@tf_export("OptimizerOptions")
class OptimizerOptions(_Message):
    L1, L0 = 0, -1
    DEFAULT, OFF, ON_1, ON_2 = 0, -1, 1, 2
    _fields = {"do_common_subexpression_elimination": False, "do_constant_folding": False,
               "max_folded_constant_in_bytes": 0, "do_function_inlining": False, "opt_level": 0,
               "global_jit_level": 0}


@tf_export("GraphOptions")
class GraphOptions(_Message):
    _fields = {"enable_recv_scheduling": False, "optimizer_options": OptimizerOptions,
               "build_cost_model": 0, "build_cost_model_after": 0, "infer_shapes": False,
               "place_pruned_graph": False, "enable_bfloat16_sendrecv": False, "timeline_step": 0,
               "rewrite_options": dict}


class RPCOptions(_Message):
    _fields = {"use_rpc_for_inprocess_master": False, "compression_algorithm": "",
               "compression_level": 0, "cache_rpc_response": False,
               "disable_session_connection_sharing": False}


class ThreadPoolOptionProto(_Message):
    """One of a session's inter-op pools (TF's config_pb2.ThreadPoolOptionProto): num_threads
    (0: as inter_op_parallelism_threads would size it), global_name (sessions giving the same
    name share one pool; they must ask for the same num_threads)."""
    _fields = {"num_threads": 0, "global_name": ""}


class _ThreadPoolOptions(list):
    """ConfigProto.session_inter_op_thread_pool: a repeated message field, `add(**fields)`."""

    def add(self, **fields) -> ThreadPoolOptionProto:
        option = ThreadPoolOptionProto(**fields)
        self.append(option)
        return option


@tf_export("ConfigProto")
class ConfigProto(_Message):
    """Session configuration (TF1 `tf.ConfigProto`)."""
    _fields = {"device_count": dict, "intra_op_parallelism_threads": 0, "inter_op_parallelism_threads": 0,
               "use_per_session_threads": False, "session_inter_op_thread_pool": _ThreadPoolOptions,
               "placement_period": 0, "device_filters": list, "gpu_options": GPUOptions,
               "allow_soft_placement": False, "log_device_placement": False, "graph_options": GraphOptions,
               "operation_timeout_in_ms": 0, "rpc_options": RPCOptions, "cluster_def": None,
               "isolate_session_state": False, "experimental": dict}


@tf_export("RunOptions")
class RunOptions(_Message):
    """Per-call options of Session.run (TF1 `tf.RunOptions`)."""
    NO_TRACE, SOFTWARE_TRACE, HARDWARE_TRACE, FULL_TRACE = 0, 1, 2, 3
    _fields = {"trace_level": 0, "timeout_in_ms": 0, "inter_op_thread_pool": 0,
               "output_partition_graphs": False, "debug_options": dict,
               "report_tensor_allocations_upon_oom": False, "experimental": dict}


class NodeExecStats(_Message):
    _fields = {"node_name": "", "all_start_micros": 0, "op_start_rel_micros": 0, "op_end_rel_micros": 0,
               "all_end_rel_micros": 0, "timeline_label": "", "thread_id": 0, "scheduled_micros": 0}


class DeviceStepStats(_Message):
    _fields = {"device": "", "node_stats": list, "thread_names": dict}


class StepStats(_Message):
    _fields = {"dev_stats": list}


@tf_export("RunMetadata")
class RunMetadata(_Message):
    """What a traced Session.run reports (TF1 `tf.RunMetadata`)."""
    _fields = {"step_stats": StepStats, "cost_graph": None, "partition_graphs": list,
               "function_graphs": list}
