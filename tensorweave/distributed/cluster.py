"""ClusterSpec (TF1 `tf.train.ClusterSpec`) and TF_CONFIG parsing.

A cluster is a dict of job name -> tasks, each task an address "host:port". Tasks are
given as a list (dense indices 0..n-1) or a dict {index: address} (sparse indices).
"""
from __future__ import annotations

import json
import os
import random
import socket
from typing import Optional

from tensorweave.framework.device import task_name
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import ClusterDef


def _normalize_job(job_name: str, tasks) -> dict[int, str]:
    if isinstance(tasks, (list, tuple)):
        out = {i: t for i, t in enumerate(tasks)}
    elif isinstance(tasks, dict):
        out = {}
        for k, v in tasks.items():
            try:
                idx = int(k)   # JSON (TF_CONFIG, the wire) turns int keys into strings
            except (TypeError, ValueError):
                raise TypeError(f"Task index must be an integer, got {k!r} in job {job_name!r}") from None
            out[idx] = v
    else:
        raise TypeError(f"The tasks for job {job_name!r} must be a list or a dictionary from integers "
                        f"to strings, got {type(tasks).__name__}.")
    for idx, addr in out.items():
        if isinstance(addr, bytes):
            addr = out[idx] = addr.decode()
        if not isinstance(addr, str):
            raise TypeError(f"Task address must be a string, got {addr!r} for /job:{job_name}/task:{idx}")
    return dict(sorted(out.items()))


@tf_export("train.ClusterSpec")
class ClusterSpec:
    """tf.train.ClusterSpec(cluster): a dict of job name -> list of addresses or {index: address}
    dict, another ClusterSpec, or a tf.train.ClusterDef protocol buffer."""

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            self._cluster_spec = {j: dict(t) for j, t in cluster._cluster_spec.items()}
        elif isinstance(cluster, ClusterDef):
            self._cluster_spec = {}
            for job in cluster.job:
                if job.name in self._cluster_spec:
                    raise ValueError(f"Duplicate job name in cluster_def: {job.name}")
                self._cluster_spec[job.name] = _normalize_job(job.name, dict(job.tasks))
        elif isinstance(cluster, dict):
            self._cluster_spec = {}
            for name, tasks in cluster.items():
                if isinstance(name, bytes):
                    name = name.decode()
                if not isinstance(name, str):
                    raise TypeError(f"Job name must be a string, got {name!r}")
                self._cluster_spec[name] = _normalize_job(name, tasks)
        else:
            raise TypeError("`cluster` must be a dictionary mapping one or more job names to lists of "
                            "network addresses, or a `ClusterDef` protocol buffer")
        self._cluster_spec = dict(sorted(self._cluster_spec.items()))

    # -- TF1 API -------------------------------------------------------------------------------
    def __bool__(self) -> bool:
        return bool(self._cluster_spec)

    __nonzero__ = __bool__

    def __eq__(self, other) -> bool:
        try:
            return self._cluster_spec == ClusterSpec(other)._cluster_spec
        except (TypeError, ValueError, KeyError, AttributeError):
            return False

    def __ne__(self, other) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(json.dumps(self.as_dict(), sort_keys=True))

    def __str__(self) -> str:
        key_values = self.as_dict()
        return "ClusterSpec({" + ", ".join(f"{k!r}: {key_values[k]!r}" for k in sorted(key_values)) + "})"

    __repr__ = __str__

    def as_dict(self) -> dict:
        """Job -> list of addresses when a job's indices are 0..n-1, else {index: address}."""
        out = {}
        for job, tasks in self._cluster_spec.items():
            if list(tasks) == list(range(len(tasks))):
                out[job] = list(tasks.values())
            else:
                out[job] = dict(tasks)
        return out

    def as_cluster_def(self) -> ClusterDef:
        """The cluster as a tf.train.ClusterDef protocol buffer (jobs in name order)."""
        cluster_def = ClusterDef()
        for name, tasks in self._cluster_spec.items():
            cluster_def.job.add(name=name, tasks=tasks)
        return cluster_def

    @property
    def jobs(self) -> list:
        return list(self._cluster_spec)

    def num_tasks(self, job_name: str) -> int:
        try:
            return len(self._cluster_spec[job_name])
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def task_indices(self, job_name: str) -> list:
        try:
            return list(self._cluster_spec[job_name])
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def task_address(self, job_name: str, task_index: int) -> str:
        try:
            job = self._cluster_spec[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None
        try:
            return job[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}") from None

    def job_tasks(self, job_name: str) -> list:
        """Addresses of the job's tasks by index, None for missing indices of a sparse job."""
        try:
            job = self._cluster_spec[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None
        if not job:
            return []
        ret = [None] * (max(job) + 1)
        for i, addr in job.items():
            ret[i] = addr
        return ret

    # -- helpers for the runtime -----------------------------------------------------------------
    def task_names(self) -> list:
        """Every task as "/job:J/replica:0/task:I", in job then index order."""
        return [task_name(j, i) for j, t in self._cluster_spec.items() for i in t]

    def address_of(self, task_name: str) -> str:
        """The address of a task given as "/job:J/replica:0/task:I" (or "/job:J/task:I")."""
        job, index = parse_task_name(task_name)
        return self.task_address(job, index)


def parse_task_name(task_name: str) -> tuple[str, int]:
    """'/job:ps/replica:0/task:1[/device:CPU:0]' -> ('ps', 1)."""
    job, index = None, 0
    for part in task_name.strip("/").split("/"):
        key, _, val = part.partition(":")
        if key == "job":
            job = val
        elif key == "task":
            index = int(val)
    if job is None:
        raise ValueError(f"Task name {task_name!r} names no job")
    return job, index


def from_tf_config(env: Optional[str] = None) -> tuple[Optional[ClusterSpec], Optional[str], Optional[int]]:
    """(cluster, job name, task index) from TF_CONFIG ('{"cluster": ..., "task": {"type", "index"}}')."""
    raw = os.environ.get("TF_CONFIG", "") if env is None else env
    if not raw:
        return None, None, None
    cfg = json.loads(raw)
    cluster = ClusterSpec(cfg["cluster"]) if cfg.get("cluster") else None
    task = cfg.get("task") or {}
    return cluster, task.get("type"), (int(task["index"]) if "index" in task else None)


def free_ports(n: int, host: str = "127.0.0.1") -> list:
    """n distinct free TCP ports on `host`, held open together so they differ. Chosen below the
    kernel's ephemeral range where there is one: a port bind(0) hands out may be taken as the local
    end of any outgoing connection before the server binds it."""
    bind_host = "127.0.0.1" if host == "localhost" else host
    low = _ephemeral_low()
    rng = random.Random()
    socks: list = []
    try:
        for attempt in range(200 * n):
            if len(socks) == n:
                break
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind((bind_host, rng.randrange(10000, low) if low > 11000 and attempt < 100 * n else 0))
            except OSError:
                s.close()
                continue
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
