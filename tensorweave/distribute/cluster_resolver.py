"""tf.distribute.cluster_resolver: where the cluster is, from TF_CONFIG, given directly, or read
from Slurm's environment or Kubernetes' pods.

Part of TF's public `tf.distribute` namespace (this package); the runtime that serves a
cluster (servers, workers, the master, the transport) is `tensorweave.distributed`.

TF_CONFIG is the JSON that Kubeflow's TFJob, SageMaker and `tensorweave launch` set:
{"cluster": {"ps": [...], "worker": [...]}, "task": {"type": "worker", "index": 0},
 "rpc_layer": "grpc", "session_master": ...}.
"""
from __future__ import annotations

import enum
import importlib
import json
import os
import re
import subprocess
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


# -- Slurm ---------------------------------------------------------------------------------------
def expand_hostlist(hostlist: str) -> list:
    """A Slurm hostlist as its hosts, in order, not deduplicated: 'n[1-2],m5,o[3-4,6]' ->
    ['n1', 'n2', 'm5', 'o3', 'o4', 'o6'] (a range keeps its first bound's zero padding). Slurm's
    `scontrol show hostnames`, done here as TF does, so no Slurm command is needed."""
    def parts():
        depth, current = False, ""
        for c in hostlist:
            if c == "," and not depth:
                if not current:
                    raise ValueError("empty host")
                yield current
                current = ""
                continue
            if c == "[":
                if depth:
                    raise ValueError("nested '['")
                depth = True
            elif c == "]":
                depth = False
            current += c
        if current:
            yield current

    def expand_range(expression: str):
        for part in expression.split(","):
            bounds = part.split("-")
            if len(bounds) > 2:
                raise ValueError(f"bad range {part!r}")
            first, last = bounds[0], bounds[-1]
            for i in range(int(first), int(last) + 1):
                yield str(i).zfill(len(first))

    hosts = []
    try:
        for part in parts():
            m = re.match(r"([^,[\]]*)(\[([^\]]+)\])?$", part)
            if m is None:
                raise ValueError(f"Invalid part: {part}")
            if m.group(3) is None:
                hosts.append(m.group(1))
            else:
                hosts.extend(m.group(1) + i for i in expand_range(m.group(3)))
    except ValueError as e:
        raise ValueError(f'Invalid hostlist format "{hostlist}": {e}') from None
    return hosts


def expand_tasks_per_node(tasks_per_node: str) -> list:
    """Slurm's tasks-per-node list as one count per node: '3(x2),2,1' -> [3, 3, 2, 1]."""
    result = []
    for part in tasks_per_node.split(","):
        m = re.match(r"(\d+)(\(x(\d+)\))?$", part)
        if m is None:
            raise ValueError(f'Invalid tasks-per-node list format "{tasks_per_node}": {part!r} is not N or N(xM)')
        result.extend([int(m.group(1))] * int(m.group(3) or 1))
    return result


def _slurm_var(name: str) -> str:
    name = "SLURM_" + name
    if name not in os.environ:
        raise RuntimeError(f"{name} not found in environment. Not running inside a SLURM step?")
    return os.environ[name]


def _visible_gpus() -> int:
    """GPUs of this node: those CUDA_VISIBLE_DEVICES names, else those `nvidia-smi --list-gpus`
    lists, else none (tensorweave's kernels run on the CPU)."""
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        return len(os.environ["CUDA_VISIBLE_DEVICES"].split(","))
    try:
        output = subprocess.run(["nvidia-smi", "--list-gpus"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return 0
    return sum(line.startswith("GPU ") for line in output.splitlines())


@tf_export("distribute.cluster_resolver.SlurmClusterResolver")
class SlurmClusterResolver(ClusterResolver):
    """tf.distribute.cluster_resolver.SlurmClusterResolver(jobs=None, port_base=8888,
    gpus_per_node=None, gpus_per_task=None, tasks_per_node=None, auto_set_gpu=True,
    rpc_layer='grpc'): the cluster of a Slurm job step, from SLURM_PROCID (this task's rank),
    SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE.

    The nodes (sorted by name) hold consecutive ranks, a node's tasks on ports port_base,
    port_base + 1, ...; the jobs (sorted by name; default {'worker': number of tasks}) take the
    ranks in order. cluster_spec() sets task_type and task_id from the rank and, with
    auto_set_gpu, CUDA_VISIBLE_DEVICES to this task's gpus_per_task GPUs (default: the node's
    GPUs shared evenly among its tasks)."""

    def __init__(self, jobs=None, port_base=8888, gpus_per_node=None, gpus_per_task=None, tasks_per_node=None,
                 auto_set_gpu=True, rpc_layer="grpc"):
        self._rank = int(_slurm_var("PROCID"))
        self._jobs = jobs if jobs is not None else {"worker": int(_slurm_var("STEP_NUM_TASKS"))}
        self._port_base = port_base
        if tasks_per_node is None:
            hosts = expand_hostlist(_slurm_var("STEP_NODELIST"))
            self._task_configuration = dict(zip(hosts, expand_tasks_per_node(_slurm_var("STEP_TASKS_PER_NODE"))))
        elif isinstance(tasks_per_node, dict):
            self._task_configuration = dict(tasks_per_node)
        else:
            self._task_configuration = {h: int(tasks_per_node) for h in expand_hostlist(_slurm_var("STEP_NODELIST"))}
        max_tasks_per_node = max(self._task_configuration.values())
        num_tasks = sum(self._task_configuration.values())
        self._gpus_per_node = _visible_gpus() if gpus_per_node is None else gpus_per_node
        self._gpus_per_task = self._gpus_per_node // max_tasks_per_node if gpus_per_task is None else gpus_per_task
        self._auto_set_gpu = auto_set_gpu
        self.task_type = None
        self.task_id = None
        self.rpc_layer = rpc_layer
        self._environment = ""
        if max_tasks_per_node * self._gpus_per_task > self._gpus_per_node:
            raise RuntimeError("Requested more GPUs per node than available.")
        if sum(self._jobs.values()) != num_tasks:
            raise RuntimeError(f"Requested {sum(self._jobs.values())} tasks but only {num_tasks} were assigned.")

    def cluster_spec(self):
        """The ClusterSpec of the step (read anew each call); sets task_type, task_id and, with
        auto_set_gpu, CUDA_VISIBLE_DEVICES."""
        tasks, gpus = [], []
        for host, num_tasks in sorted(self._task_configuration.items()):
            for port_offset in range(num_tasks):
                first = port_offset * self._gpus_per_task
                tasks.append(f"{host}:{self._port_base + port_offset}")
                gpus.append(",".join(str(g) for g in range(first, first + self._gpus_per_task)))
        allocation, start = {}, 0
        for task_type, num_tasks in sorted(self._jobs.items()):
            allocation[task_type] = tasks[start:start + num_tasks]
            if start <= self._rank < start + num_tasks:
                self.task_type, self.task_id = task_type, self._rank - start
            start += num_tasks
        if self._auto_set_gpu:
            os.environ["CUDA_VISIBLE_DEVICES"] = gpus[self._rank]
        return ClusterSpec(allocation)

    def get_task_info(self) -> tuple:
        """(task_type, task_id) of this process, known once cluster_spec() has run."""
        return self.task_type, self.task_id

    def master(self, task_type=None, task_id=None, rpc_layer=None) -> str:
        """The address of (task_type, task_id) (this task's by default) with the rpc layer; ''
        while the task is not known."""
        return _task_master(self, task_type, task_id, rpc_layer)

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None) -> dict:
        return {"GPU": self._gpus_per_task}


def _task_master(resolver, task_type, task_id, rpc_layer) -> str:
    task_type = task_type if task_type is not None else resolver.task_type
    task_id = task_id if task_id is not None else resolver.task_id
    if task_type is None or task_id is None:
        return ""
    return format_master_url(resolver.cluster_spec().task_address(task_type, task_id), rpc_layer or resolver.rpc_layer)


# -- Kubernetes ----------------------------------------------------------------------------------
@tf_export("distribute.cluster_resolver.KubernetesExecutableLocation")
class KubernetesExecutableLocation(enum.Enum):
    """Where the program runs, so the resolver knows how to reach the Kubernetes API server: in a
    pod of the cluster (its service account) or outside it (~/.kube/config)."""
    WITHIN_CLUSTER = 0
    OFF_CLUSTER = 1


_K8S_MISSING = ("The Kubernetes Python client must be installed before using the Kubernetes Cluster Resolver. "
                "To install the Kubernetes Python client, run `pip install kubernetes` on your command line.")


def _kubernetes(module: str):
    """kubernetes.<module> (the optional `kubernetes` package, needed only without override_client)."""
    try:
        return importlib.import_module(f"kubernetes.{module}")
    except ImportError:
        raise ImportError(_K8S_MISSING) from None


@tf_export("distribute.cluster_resolver.KubernetesClusterResolver")
class KubernetesClusterResolver(ClusterResolver):
    """tf.distribute.cluster_resolver.KubernetesClusterResolver(job_to_label_mapping=None,
    tf_server_port=8470, rpc_layer='grpc', override_client=None,
    executable_location=WITHIN_CLUSTER): each job's tasks are the running pods its label
    selectors match (default {'worker': ['job-name=tensorflow']}), sorted by pod name, at
    `host_ip:tf_server_port`. The pods come from `override_client` (an object with
    `list_pod_for_all_namespaces(label_selector=...)`, as kubernetes.client.CoreV1Api), else
    from the `kubernetes` package's CoreV1Api (ImportError naming it when it is not installed).
    task_type and task_id are not resolved: set them."""

    def __init__(self, job_to_label_mapping=None, tf_server_port=8470, rpc_layer="grpc", override_client=None,
                 executable_location=KubernetesExecutableLocation.WITHIN_CLUSTER):
        if not override_client:
            config = _kubernetes("config")
            if executable_location == KubernetesExecutableLocation.OFF_CLUSTER:
                config.load_kube_config()
            elif executable_location == KubernetesExecutableLocation.WITHIN_CLUSTER:
                config.load_incluster_config()
            else:
                raise ValueError("The executable location provided is invalid.")
        self._job_to_label_mapping = job_to_label_mapping or {"worker": ["job-name=tensorflow"]}
        self._tf_server_port = tf_server_port
        self._override_client = override_client
        self.task_type = None
        self.task_id = None
        self.rpc_layer = rpc_layer
        self._environment = ""

    def cluster_spec(self):
        """The ClusterSpec of the pods the selectors match now (asked anew each call);
        RuntimeError naming a matched pod that is not Running."""
        client = self._override_client or _kubernetes("client").CoreV1Api()
        cluster = {}
        for job, selectors in self._job_to_label_mapping.items():
            cluster[job] = []
            for selector in selectors:
                pods = client.list_pod_for_all_namespaces(label_selector=selector).items
                for pod in sorted(pods, key=lambda p: p.metadata.name):
                    if pod.status.phase != "Running":
                        raise RuntimeError(f'Pod "{pod.metadata.name}" is not running; phase: "{pod.status.phase}"')
                    cluster[job].append(f"{pod.status.host_ip}:{self._tf_server_port}")
        return ClusterSpec(cluster)

    def master(self, task_type=None, task_id=None, rpc_layer=None) -> str:
        """The address of (task_type, task_id) (the resolver's attributes by default) with the
        rpc layer; '' while they are not set."""
        return _task_master(self, task_type, task_id, rpc_layer)
