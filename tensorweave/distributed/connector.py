"""How a client reaches a cluster: the one place that reads a session target ("grpc://host:port"
or "host:port"), the connect timeout and the address of each task.

The client layer (tf.Session, Session.reset) uses `connect` and `reset` and nothing else of the
distributed runtime; the session manager (`Connection`, `connect_timeout_s`) and the command line
(`Connection`, `task_address`, `task_client`) use the parts; the master gets its `Connection`
from `connect` and asks it for the clients of other tasks.
"""
from __future__ import annotations

import os
from typing import Optional

from tensorweave.distributed import sockets
from tensorweave.distributed.master import DistributedMaster
from tensorweave.distributed.worker import WorkerClient
from tensorweave.framework import errors
from tensorweave.framework.config import ConfigProto
from tensorweave.framework.device import DeviceSpec, task_name
from tensorweave.runtime.placer import ClusterDevices

_SCHEMES = ("grpc://", "tcp://", "grpc+verbs://", "grpc+gdr://")   # TF's targets; all reach our transport


def target_address(target) -> str:
    """The "host:port" of a session target: "grpc://host:port" (or another TF scheme) or
    "host:port"; InvalidArgumentError for any other scheme."""
    if isinstance(target, bytes):
        target = target.decode()
    for prefix in _SCHEMES:
        if target.startswith(prefix):
            return target[len(prefix):]
    if "://" in target:
        raise errors.InvalidArgumentError(None, None, f"Unsupported session target '{target}': expected "
                                          "grpc://host:port (or host:port)")
    return target


def connect_timeout_s(config: Optional[ConfigProto]) -> float:
    """How long a session waits for a task to take a connection: ConfigProto's
    experimental["connect_timeout_in_ms"], else TENSORWEAVE_CONNECT_TIMEOUT_S, else 60 s; never
    longer than operation_timeout_in_ms when that is set (connecting is an operation too)."""
    timeout = sockets.DEFAULT_CONNECT_TIMEOUT_S
    env = os.environ.get("TENSORWEAVE_CONNECT_TIMEOUT_S")
    if env:
        timeout = float(env)
    experimental = getattr(config, "experimental", None)
    if isinstance(experimental, dict) and experimental.get("connect_timeout_in_ms"):
        timeout = float(experimental["connect_timeout_in_ms"]) / 1000.0
    op_timeout_ms = getattr(config, "operation_timeout_in_ms", 0) or 0
    if op_timeout_ms > 0:
        timeout = min(timeout, op_timeout_ms / 1000.0)
    return max(timeout, 0.001)


def task_address(cluster: dict, task: str) -> str:
    """The address of a full task name ("/job:ps/replica:0/task:1") in a ClusterSpec dict."""
    spec = DeviceSpec.from_string(task)
    tasks = cluster.get(spec.job)
    if tasks is None:
        raise errors.InvalidArgumentError(None, None, f"Job '{spec.job}' is not in the cluster {sorted(cluster)}")
    index = spec.task or 0
    if isinstance(tasks, dict):
        addr = tasks.get(index, tasks.get(str(index)))
    else:
        addr = tasks[index] if index < len(tasks) else None
    if addr is None:
        raise errors.InvalidArgumentError(None, None, f"Task {task} is not in the cluster")
    return addr


class Connection:
    """A client's way into a cluster through the task a session target names: that task's
    client (named after the target) and what it answered (`status`, its `cluster`, its full
    name `task`), and new clients for the cluster's tasks, all with one connect timeout. A task
    that does not answer within it is UnavailableError."""

    def __init__(self, target, connect_timeout_s: float):
        self.target = target.decode() if isinstance(target, bytes) else target
        self.connect_timeout_s = connect_timeout_s
        self.client = WorkerClient.for_address(target_address(self.target), self.target,
                                               connect_timeout_s=connect_timeout_s)
        self.status = self.client.get_status()
        self.cluster = dict(self.status["cluster"])
        self.task = task_name(self.status["job"], int(self.status["task"]))

    def client_for(self, task: str, cluster: Optional[dict] = None) -> WorkerClient:
        """A new client for `task` (see task_client) in `cluster`, by default the target's."""
        return task_client(self.cluster if cluster is None else cluster, task, self.connect_timeout_s)


def task_client(cluster: dict, task: str, connect_timeout_s: float) -> WorkerClient:
    """A new client for a full task name at its address in a ClusterSpec dict;
    InvalidArgumentError when the cluster has no such task."""
    return WorkerClient.for_address(task_address(cluster, task), task, connect_timeout_s=connect_timeout_s)


def connect(target, graph, config: Optional[ConfigProto] = None) -> DistributedMaster:
    """The master of a Session on `target`: learns the cluster from the task it names."""
    config = config or ConfigProto()
    return DistributedMaster(Connection(target, connect_timeout_s(config)), graph, config)


def reset(target, containers=None, config: Optional[ConfigProto] = None) -> None:
    """Session.reset: drops the resource containers (all when None) on every task of the
    target's cluster that ConfigProto.device_filters allows; raises the first task's error
    once every task was asked."""
    config = config or ConfigProto()
    connection = Connection(target, connect_timeout_s(config))
    devices = ClusterDevices.from_cluster(connection.cluster, connection.task, config.device_filters)
    containers = list(containers) if containers is not None else None
    first: Optional[BaseException] = None
    for task in devices.tasks:
        try:
            client = connection.client if task == connection.task else connection.client_for(task)
            client.reset(containers)
        except errors.OpError as e:
            first = first or e
    if first is not None:
        raise first
