"""tf.distribute.experimental.ParameterServerStrategy (TF 1.15, graph mode): between-graph
replication as replica_device_setter does it, behind the strategy API. Each worker builds its own
graph; variables go to the ps tasks round-robin (a variable colocated with another, such as an
optimizer slot, goes where that one is); computation runs on this worker's CPU; the cluster and
this task come from a cluster resolver (TF_CONFIG by default). Keras's fit on a cluster runs through
the distribute coordinator (distribute_coordinator.py): each worker trains asynchronously in a session
on its own server, the chief initialising the variables (experimental_should_init) and the other
workers waiting for them; a ps task serves until the workers' processes have ended.
"""
from __future__ import annotations

from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.distribute import values as values_lib
from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.distribute.cluster_resolver import SimpleClusterResolver, TFConfigClusterResolver
from tensorweave.distribute.distribute_lib import Strategy, StrategyExtended
from tensorweave.distribute.mirrored_strategy import DistributedDataset, input_fn_iterator


@tf_export("distribute.experimental.ParameterServerStrategy")
class ParameterServerStrategy(Strategy):
    """Asynchronous training with parameter servers: variables on the "ps" job's tasks
    (round-robin), one replica on this worker. Without a cluster (no TF_CONFIG), everything is
    local: variables and computation on this task's CPU."""

    def __init__(self, cluster_resolver=None):
        resolver = cluster_resolver or TFConfigClusterResolver()
        super().__init__(ParameterServerExtended(self, resolver))

    def configure(self, session_config=None, cluster_spec=None, task_type=None, task_id=None):
        """With `cluster_spec`, this task's place in that cluster instead (TF's distribute coordinator
        calls it so); `session_config` updated in place by update_config_proto."""
        if cluster_spec:
            self._extended = ParameterServerExtended(
                self, SimpleClusterResolver(ClusterSpec(cluster_spec), task_type=task_type, task_id=task_id))
        if session_config is not None:
            self.update_config_proto(session_config)

    def update_config_proto(self, config_proto):
        """device_filters: this worker talks to the ps tasks and itself only (TF's configure())."""
        ext = self._extended
        if ext._jobs:
            config_proto.device_filters[:] = ["/job:ps", f"/job:{ext._task_type}/task:{ext._task_id}"]
        return config_proto


class ParameterServerExtended(StrategyExtended):
    def __init__(self, container, resolver):
        cluster = resolver.cluster_spec()
        jobs = cluster.as_dict() if cluster is not None else {}
        self._task_type, self._task_id = resolver.task_type, resolver.task_id
        if jobs:
            if not jobs.get("ps"):
                raise ValueError("No `ps` job is specified in the cluster spec of ParameterServerStrategy: "
                                 f"{jobs}")
            if self._task_type not in jobs or self._task_id is None:
                raise ValueError("The cluster resolver must name this task (task_type and task_id) among "
                                 f"the cluster's jobs {sorted(jobs)}, got {self._task_type!r}, {self._task_id!r}")
            worker = f"/job:{self._task_type}/replica:0/task:{self._task_id}/device:CPU:0"
            self._ps = tuple(f"/job:ps/replica:0/task:{i}/device:CPU:0" for i in range(cluster.num_tasks("ps")))
        else:
            worker = "/job:localhost/replica:0/task:0/device:CPU:0"
            self._ps = (worker,)
        super().__init__(container, (worker,))
        self._jobs = jobs
        self._cluster = cluster if jobs else None
        self._next_ps = 0

    parameter_devices = property(lambda self: self._ps)
    experimental_between_graph = property(lambda self: True)
    experimental_should_init = property(lambda self: self._is_chief())
    should_checkpoint = property(lambda self: self._is_chief())
    should_save_summary = property(lambda self: self._is_chief())

    def _is_chief(self) -> bool:
        if not self._jobs or self._task_type == "chief":
            return True
        return self._task_type == "worker" and self._task_id == 0 and "chief" not in self._jobs

    is_chief = property(_is_chief)
    num_workers = property(lambda self: sum(len(self._jobs.get(job, ())) for job in ("chief", "worker")) or 1)

    def _in_multi_worker_mode(self) -> bool:
        """On a cluster: Keras's fit runs through the distribute coordinator (a ps task serves)."""
        return bool(self._jobs)

    def _variable_creator(self, next_creator, **kwargs):
        g = get_default_graph()
        if self._colocate_with is not None:
            device = self._colocate_with.device
        elif g._colocation_stack:
            return next_creator(**kwargs)   # colocated with its variable (an optimizer's slot)
        else:
            device = self._ps[self._next_ps % len(self._ps)]
            self._next_ps += 1
        with g.device(device):
            v = next_creator(**kwargs)
        self._created.add(id(v))
        return v

    def _call_for_each_replica(self, fn, args, kwargs):
        with get_default_graph().device(self._devices[0]):
            return super()._call_for_each_replica(fn, args, kwargs)

    def _reduce_to(self, reduce_op, value, destinations):
        return value.values[0] if isinstance(value, values_lib.DistributedValues) else value

    def _distribute_dataset(self, dataset):
        return DistributedDataset(dataset, self._devices)

    def _input_fn_iterator(self, input_fn):
        return input_fn_iterator(input_fn, self._devices)

    def non_slot_devices(self, var_list):
        return (min(var_list, key=lambda v: v.name).device,)

