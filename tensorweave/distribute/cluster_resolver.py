"""tf.distribute.cluster_resolver: where the cluster is, from TF_CONFIG or given directly.

Part of TF's public `tf.distribute` namespace (this package); the runtime that serves a
cluster (servers, workers, the master, the transport) is `tensorweave.distributed`.

TF_CONFIG is the JSON that Kubeflow's TFJob, SageMaker and `tensorweave launch` set:
{"cluster": {"ps": [...], "worker": [...]}, "task": {"type": "worker", "index": 0},
 "rpc_layer": "grpc", "session_master": ...}.
"""
from __future__ import annotations

import json
import os
from typing import Optional

from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.framework.tf_export import tf_export


_TF_CONFIG_ENV = "TF_CONFIG"
_SESSION_MASTER_KEY = "session_master"
_RPC_LAYER_KEY = "rpc_layer"
_TASK_KEY = "task"


@tf_export("distribute.cluster_resolver.format_master_url")
def format_master_url(master: str, rpc_layer: Optional[str] = None) -> str:
    """'host:port' -> 'rpc_layer://host:port' when an rpc layer is given."""
    return f"{rpc_layer}://{master}" if rpc_layer else master


def _load_tf_config() -> dict:
    return json.loads(os.environ.get(_TF_CONFIG_ENV, "{}") or "{}")


def _get_value_in_tfconfig(key: str, default=None):
    return _load_tf_config().get(key, default)


@tf_export("distribute.cluster_resolver.ClusterResolver")
class ClusterResolver:
    """Base class of cluster resolvers (TF's tf.distribute.cluster_resolver.ClusterResolver)."""

    def cluster_spec(self):
        raise NotImplementedError()

    def master(self, task_type=None, task_id=None, rpc_layer=None) -> str:
        raise NotImplementedError()

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None) -> dict:
        """Accelerators per worker by type: tensorweave runs kernels on CPU, so none."""
        return {}

    @property
    def environment(self) -> str:
        return self._environment


@tf_export("distribute.cluster_resolver.TFConfigClusterResolver")
class TFConfigClusterResolver(ClusterResolver):
    """tf.distribute.cluster_resolver.TFConfigClusterResolver(task_type=None, task_id=None,
    rpc_layer=None, environment=None): reads the cluster, the task and the rpc layer from the
    TF_CONFIG environment variable (each read anew, so later changes to TF_CONFIG are seen);
    constructor arguments override it."""

    def __init__(self, task_type=None, task_id=None, rpc_layer=None, environment=None):
        self._task_type = task_type
        self._task_id = task_id
        self._rpc_layer = rpc_layer
        self._environment = environment

    @property
    def task_type(self) -> Optional[str]:
        if self._task_type is None:
            task_info = _get_value_in_tfconfig(_TASK_KEY, {})
            return str(task_info["type"]) if "type" in task_info else None
        return str(self._task_type)

    @task_type.setter
    def task_type(self, task_type) -> None:
        self._task_type = task_type

    @property
    def task_id(self) -> Optional[int]:
        if self._task_id is None:
            task_info = _get_value_in_tfconfig(_TASK_KEY, {})
            return int(task_info["index"]) if "index" in task_info else None
        return int(self._task_id)

    @task_id.setter
    def task_id(self, task_id) -> None:
        self._task_id = task_id

    @property
    def environment(self):
        return self._environment

    @property
    def rpc_layer(self) -> Optional[str]:
        if self._rpc_layer is None:
            return _get_value_in_tfconfig(_RPC_LAYER_KEY)
        return self._rpc_layer

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer) -> None:
        self._rpc_layer = rpc_layer

    def cluster_spec(self):
        """A ClusterSpec from TF_CONFIG's "cluster" (empty when there is none)."""
        tf_config = _load_tf_config()
        if "cluster" not in tf_config:
            return ClusterSpec({})
        return ClusterSpec(tf_config["cluster"])

    def master(self, task_type=None, task_id=None, rpc_layer=None) -> str:
        """The session target: TF_CONFIG's session_master if set; '' for a one-task (or empty)
        cluster; else the address of the task (this task by default) with the rpc layer."""
        session_master = _get_value_in_tfconfig(_SESSION_MASTER_KEY)
        if session_master is not None:
            return session_master
        cluster_spec = self.cluster_spec()
        jobs = cluster_spec.jobs
        if not jobs or (len(jobs) == 1 and len(cluster_spec.job_tasks(jobs[0])) == 1):
            return ""
        task_type = task_type if task_type is not None else self.task_type
        task_id = task_id if task_id is not None else self.task_id
        rpc_layer = rpc_layer if rpc_layer is not None else self.rpc_layer
        return format_master_url(cluster_spec.task_address(task_type, task_id), rpc_layer)


@tf_export("distribute.cluster_resolver.SimpleClusterResolver")
class SimpleClusterResolver(ClusterResolver):
    """tf.distribute.cluster_resolver.SimpleClusterResolver(cluster_spec, master='',
    task_type=None, task_id=None, environment='', num_accelerators=None, rpc_layer=None)."""

    def __init__(self, cluster_spec, master: str = "", task_type=None, task_id=None, environment: str = "",
                 num_accelerators=None, rpc_layer=None):
        if not isinstance(cluster_spec, ClusterSpec):
            raise TypeError("cluster_spec must be a `tf.train.ClusterSpec`.")
        if not isinstance(master, str):
            raise TypeError("master must be a string.")
        self._cluster_spec = cluster_spec
        self._master = master
        self._task_type = task_type
        self._task_id = task_id
        self._environment = environment
        self._num_accelerators = num_accelerators
        self._rpc_layer = rpc_layer

    def cluster_spec(self):
        return self._cluster_spec

    def master(self, task_type=None, task_id=None, rpc_layer=None) -> str:
        """The given master, or the address of (task_type, task_id) when both are given."""
        if task_type is not None and task_id is not None:
            master = self._cluster_spec.task_address(task_type, task_id)
        else:
            master = self._master
        return format_master_url(master, rpc_layer=rpc_layer or self._rpc_layer)

    task_type = property(lambda self: self._task_type, lambda self, v: setattr(self, "_task_type", v))
    task_id = property(lambda self: self._task_id, lambda self, v: setattr(self, "_task_id", v))
    rpc_layer = property(lambda self: self._rpc_layer, lambda self, v: setattr(self, "_rpc_layer", v))

    @property
    def environment(self):
        return self._environment

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None) -> dict:
        return {} if self._num_accelerators is None else self._num_accelerators


@tf_export("distribute.cluster_resolver.UnionResolver")
class UnionResolver(ClusterResolver):
    """tf.distribute.cluster_resolver.UnionResolver(*resolvers, **kwargs): the union of the
    resolvers' clusters (a job may appear in only one); master, task and rpc layer come from
    the first resolver unless given as keyword arguments."""

    def __init__(self, *args, **kwargs):
        if not args:
            raise ValueError("At least one ClusterResolver is required.")
        for r in args:
            if not isinstance(r, ClusterResolver):
                raise TypeError("All arguments must be a sub-class of `ClusterResolver.`")
        self._resolvers = args
        self._rpc_layer = kwargs.pop("rpc_layer", None)
        self._task_type = kwargs.pop("task_type", None)
        self._task_id = kwargs.pop("task_id", None)
        if kwargs:
            raise ValueError(f"Unexpected kwargs provided {kwargs!r}")

    def cluster_spec(self):
        merged: dict = {}
        for r in self._resolvers:
            spec = r.cluster_spec().as_dict()
            for job, tasks in spec.items():
                if job in merged:
                    raise KeyError(f"Duplicate job {job!r} in the union of cluster resolvers")
                merged[job] = tasks
        return ClusterSpec(merged)

    def master(self, task_type=None, task_id=None, rpc_layer=None) -> str:
        if task_type is not None and task_id is not None:
            return format_master_url(self.cluster_spec().task_address(task_type, task_id),
                                     rpc_layer or self._rpc_layer)
        return self._resolvers[0].master(rpc_layer=rpc_layer)

    @property
    def task_type(self):
        return self._task_type or self._resolvers[0].task_type

    @property
    def task_id(self):
        return self._task_id if self._task_id is not None else self._resolvers[0].task_id

    @property
    def rpc_layer(self):
        return self._rpc_layer or self._resolvers[0].rpc_layer

    @property
    def environment(self):
        return self._resolvers[0].environment
