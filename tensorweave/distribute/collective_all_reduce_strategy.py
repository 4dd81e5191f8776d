"""tf.distribute.experimental.MultiWorkerMirroredStrategy (TF 1.15, graph mode; tf.contrib.distribute's
CollectiveAllReduceStrategy): synchronous training on several workers without parameter servers.

Between-graph, as in TF: every worker (the "chief" and "worker" jobs of the cluster, from TF_CONFIG
or a cluster resolver) builds the same graph and runs it in a session on its own task
(`tf.train.Server` in its process: the Estimator's train_and_evaluate starts it). One replica per
local device (this task's GPUs, else its CPU), so num_replicas_in_sync is the workers times that.
Variables made in scope() are MirroredVariables on the local devices, whose first copy's initial
value is broadcast from the chief (the cluster's chief, else worker 0) with the collective ops
(ops/collective_ops.py), so every worker starts equal. Gradients (batch_reduce_to, what an
optimizer's apply_gradients calls) are summed locally, then all-reduced between the workers with
CollectiveReduce, small tensors packed into few rounds (all_reduce_packed); IndexedSlices are
all-gathered. Each worker applies the same update, so the copies stay equal.

The collective ops of the workers meet by (group_key, instance_key): keys are handed out in graph
building order (CollectiveKeys), so workers that build the same graph agree on them, as TF's
CollectiveKeys do. Only the chief saves checkpoints and summaries (should_checkpoint), every worker
initialises its own copies (experimental_should_init: MonitoredTrainingSession creates each
worker's session as the chief's). A worker that dies fails the others' step with UnavailableError
(distributed/collectives.py).
"""
from __future__ import annotations

import copy
import enum

from tensorweave.framework.api import GraphKeys
from tensorweave.framework.device import task_name
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops import collective_ops
from tensorweave.ops.array.core import identity
from tensorweave.runtime.devices import physical_gpu_count
from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.distributed.collectives import group_leader
from tensorweave.distribute import distribute_lib
from tensorweave.distribute import values as values_lib
from tensorweave.distribute.cluster_resolver import SimpleClusterResolver, TFConfigClusterResolver
from tensorweave.distribute.distribute_lib import ReduceOp, Strategy
from tensorweave.distribute.mirrored_strategy import (DistributedDataset, DistributedIterator, MirroredExtended,
                                                      ReductionToOneDevice, _destination_devices, _scaled, _sum_on)

_WORKER_JOBS = ("chief", "worker")


@tf_export("distribute.experimental.CollectiveCommunication")
class CollectiveCommunication(enum.Enum):
    """The collective implementation MultiWorkerMirroredStrategy asks for: AUTO (the runtime
    chooses), RING (ring all-reduce), NCCL (TF's NCCL between GPUs; here the same ring)."""
    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


class CollectiveKeys:
    """Group and instance keys handed out in graph-building order (TF's
    cross_device_utils.CollectiveKeys): workers that build the same graph get the same keys.
    Variables' broadcasts and other collectives draw from separate ranges."""

    def __init__(self, group_key=1, op_instance_key_start=100, variable_instance_key_start=1000000):
        self._group_key = group_key
        self._op_key = op_instance_key_start
        self._variable_key = variable_instance_key_start

    def get_group_key(self) -> int:
        return self._group_key

    def get_op_instance_keys(self, count: int = 1) -> int:
        """The first of `count` consecutive instance keys for reductions."""
        first, self._op_key = self._op_key, self._op_key + max(int(count), 1)
        return first

    def get_variable_instance_key(self) -> int:
        key, self._variable_key = self._variable_key, self._variable_key + 1
        return key


def _cluster_of(resolver):
    spec = resolver.cluster_spec()
    jobs = spec.as_dict() if spec is not None else {}
    return ClusterSpec(jobs) if jobs else None


class CollectiveAllReduceExtended(MirroredExtended):
    """The workings of MultiWorkerMirroredStrategy (TF's CollectiveAllReduceExtended)."""

    def __init__(self, container, communication, resolver, num_gpus_per_worker=None):
        if not isinstance(communication, CollectiveCommunication):
            raise ValueError(f"communication must be a tf.distribute.experimental.CollectiveCommunication, "
                             f"got {communication!r}")
        self._communication = communication
        self._num_gpus_per_worker = num_gpus_per_worker
        super().__init__(container, ("/job:localhost/replica:0/task:0/device:CPU:0",), ReductionToOneDevice())
        self._initialize(resolver)

    def _initialize(self, resolver) -> None:
        """Reads the cluster and this task from `resolver`; a cluster without this task's job
        among chief/worker (or none at all) is local training on this task's devices."""
        self._cluster_resolver = resolver
        cluster = _cluster_of(resolver)
        task_type, task_id = getattr(resolver, "task_type", None), getattr(resolver, "task_id", None)
        gpus = self._num_gpus_per_worker
        if gpus is None:
            gpus = (resolver.num_accelerators() or {}).get("GPU", 0) or physical_gpu_count()
        if cluster is not None and task_type != "evaluator":
            if task_type is None or task_id is None:
                raise ValueError("When `cluster_spec` is given, you must also specify `task_type` and `task_id`: "
                                 f"got {task_type!r}, {task_id!r}")
            if task_type not in _WORKER_JOBS:
                raise ValueError(f"Unexpected `task_type` {task_type!r}: MultiWorkerMirroredStrategy runs a replica "
                                 f"on the tasks of the \"chief\" and \"worker\" jobs only")
            if int(task_id) not in cluster.task_indices(task_type):
                raise ValueError(f"Task {task_type}:{task_id} is not in the cluster {cluster.as_dict()}")
            self._cluster = cluster
            self._task_type, self._task_id = task_type, int(task_id)
            self._workers = [task_name(job, i) for job in _WORKER_JOBS if job in cluster.jobs
                             for i in sorted(cluster.task_indices(job))]
            host = f"/job:{task_type}/replica:0/task:{self._task_id}"
            self._worker_index = self._workers.index(task_name(task_type, self._task_id))
        else:
            self._cluster, self._task_type, self._task_id = None, task_type, task_id
            self._workers, self._worker_index = [task_name("localhost", 0)], 0
            host = "/job:localhost/replica:0/task:0"
        self._host_device = f"{host}/device:CPU:0"
        self._devices = tuple(f"{host}/device:GPU:{i}" for i in range(gpus)) if gpus else (self._host_device,)
        self._collective_keys = CollectiveKeys()

    num_workers = property(lambda self: len(self._workers))
    num_replicas_in_sync = property(lambda self: len(self._workers) * len(self._devices))
    experimental_between_graph = property(lambda self: True)
    experimental_should_init = property(lambda self: True)
    should_checkpoint = property(lambda self: self.is_chief)
    should_save_summary = property(lambda self: self.is_chief)

    def _in_multi_worker_mode(self) -> bool:
        return self._cluster is not None

    @property
    def is_chief(self) -> bool:
        """The chief task, else worker 0 (or a local strategy)."""
        return self._cluster is None or self._worker_index == 0

    # -- variables --------------------------------------------------------------------------------
    def _variable_creator(self, next_creator, **kwargs):
        if self.num_workers > 1 and GraphKeys.GLOBAL_STEP not in (kwargs.get("collections") or ()):
            kwargs = dict(kwargs, initial_value=self._broadcast_initial_value(kwargs["initial_value"],
                                                                              kwargs.get("dtype")))
        return super()._variable_creator(next_creator, **kwargs)

    def _broadcast_initial_value(self, initial_value, dtype):
        """The chief's initial value, on every worker (TF broadcasts it so; a random initializer
        without a seed gives every worker the chief's draw)."""
        key = self._collective_keys.get_variable_instance_key()
        group_key, size = self._collective_keys.get_group_key(), self.num_workers
        is_chief = self.is_chief

        def initial_value_fn():
            value = initial_value() if callable(initial_value) else initial_value
            value = convert_to_tensor(value, dtype=dtype)
            if not value.shape.is_fully_defined():
                raise ValueError(f"MultiWorkerMirroredStrategy broadcasts each variable's initial value, which needs "
                                 f"a fully known shape: {value.name} has shape {value.shape}")
            g = get_default_graph()
            # On the host, out of the variable's colocation group (the initializer's "_class"
            # attribute): the collectives run on CPUs.
            saved, g._attr_scope = g._attr_scope, {k: v for k, v in g._attr_scope.items() if k != "_class"}
            try:
                with g.colocate_with(None, ignore_existing=True), g.device(self._host_device):
                    if not is_chief:
                        return collective_ops.broadcast_recv(value.shape, value.dtype, size, group_key, key)
                    sent = collective_ops.broadcast_send(value, value.shape, value.dtype, size, group_key, key)
                    with g.control_dependencies([sent]):
                        return identity(value)
            finally:
                g._attr_scope = saved
        return initial_value_fn

    # -- reductions -------------------------------------------------------------------------------
    def batch_reduce_to(self, reduce_op, value_destination_pairs):
        self._require_cross_replica("batch_reduce_to")
        return self._batch_reduce(distribute_lib.as_reduce_op(reduce_op), list(value_destination_pairs))

    def _reduce_to(self, reduce_op, value, destinations):
        return self._batch_reduce(reduce_op, [(value, destinations)])[0]

    def _batch_reduce(self, reduce_op, pairs: list) -> list:
        """Each value summed over this worker's replicas, then over the workers (dense tensors
        packed into few CollectiveReduce rounds, IndexedSlices gathered), divided by
        num_replicas_in_sync for MEAN; a Mirrored value on each pair's destinations."""
        out: list = [None] * len(pairs)
        local: list = []   # (index in pairs, the worker's sum)
        for i, (value, destinations) in enumerate(pairs):
            if isinstance(value, values_lib.Mirrored) and reduce_op is ReduceOp.MEAN:
                out[i] = value
            elif not isinstance(value, values_lib.DistributedValues) and self.num_workers > 1:
                local.append((i, value))   # (one replica here: its value, regrouped unwrapped, as in TF)
            elif not isinstance(value, values_lib.DistributedValues):
                if reduce_op is ReduceOp.SUM and self.num_replicas_in_sync > 1:
                    raise ValueError(f"A non-DistributedValues value {value} cannot be reduced with the given "
                                     f"reduce op {reduce_op}.")
                out[i] = self._cross_device_ops.broadcast(value, _destination_devices(destinations))
            else:
                local.append((i, _sum_on(value.devices[0], list(value.values))))
        g = get_default_graph()
        if self.num_workers > 1 and local:
            with g.device(self._host_device):
                dense = [(i, v) for i, v in local if not isinstance(v, IndexedSlices)]
                reduced = dict(zip([i for i, _ in dense], self._all_reduce_dense([v for _, v in dense])))
                for i, v in local:
                    if isinstance(v, IndexedSlices):
                        reduced[i] = self._all_gather_slices(v)
            local = [(i, reduced[i]) for i, _ in local]
        for i, total in local:
            if reduce_op is ReduceOp.MEAN:
                total = _scaled(total, 1.0 / self.num_replicas_in_sync)
            devices = _destination_devices(pairs[i][1])
            out[i] = self._cross_device_ops.broadcast(total, devices) if not isinstance(total, IndexedSlices) \
                else values_lib.Mirrored([total] * len(devices), devices)
        return out

    def _all_reduce_dense(self, tensors: list) -> list:
        if not tensors:
            return []
        tensors = [convert_to_tensor(t) for t in tensors]
        group_key, size = self._collective_keys.get_group_key(), self.num_workers
        if all(t.shape.is_fully_defined() for t in tensors):
            first = self._collective_keys.get_op_instance_keys(len(tensors))
            return collective_ops.all_reduce_packed(tensors, size, group_key, first)
        return [collective_ops.all_reduce(t, size, group_key, self._collective_keys.get_op_instance_keys())
                for t in tensors]

    def _sum_across_workers(self, tensor):
        """`tensor` summed over the workers (a sync-on-read variable read: every worker must read it)."""
        with get_default_graph().device(self._host_device):
            return self._all_reduce_dense([tensor])[0]

    def _all_gather_slices(self, v: IndexedSlices) -> IndexedSlices:
        group_key, size = self._collective_keys.get_group_key(), self.num_workers
        values = collective_ops.all_gather(v.values, size, group_key, self._collective_keys.get_op_instance_keys())
        indices = collective_ops.all_gather(v.indices, size, group_key, self._collective_keys.get_op_instance_keys())
        return IndexedSlices(values, indices, v.dense_shape)

    # -- input ------------------------------------------------------------------------------------
    def _input_context(self) -> distribute_lib.InputContext:
        return distribute_lib.InputContext(self.num_workers, self._worker_index, self.num_replicas_in_sync)

    def _distribute_dataset(self, dataset):
        """Each global batch cut into num_replicas_in_sync shares; this worker's replicas take
        theirs (so the workers together train on each global batch once)."""
        return DistributedDataset(dataset, self._devices, first_replica=self._worker_index * len(self._devices),
                                  num_replicas=self.num_replicas_in_sync)

    def _input_fn_iterator(self, input_fn):
        dataset = input_fn(self._input_context())
        if not hasattr(dataset, "make_initializable_iterator"):
            raise ValueError(f"input_fn must return a tf.data.Dataset, got {type(dataset).__name__}")
        return DistributedIterator(dataset.make_initializable_iterator(), self._devices, split=False)

    # -- configuration ----------------------------------------------------------------------------
    def _update_config_proto(self, config_proto):
        config = copy.deepcopy(config_proto)
        if self._cluster is None:
            return config
        # the group leader resolves the collective groups; the filter keeps this worker's
        # session to its own task (the collectives reach the others)
        config.experimental["collective_group_leader"] = group_leader(self._cluster)
        del config.device_filters[:]
        config.device_filters.append(f"/job:{self._task_type}/task:{self._task_id}")
        return config


@tf_export("distribute.experimental.MultiWorkerMirroredStrategy")
class MultiWorkerMirroredStrategy(Strategy):
    """Synchronous training on several workers with collective all-reduce (module docstring):
    the cluster and this task come from `cluster_resolver` (default TF_CONFIG's); each worker runs
    its graph in a session on its own task's server; `communication` is a CollectiveCommunication."""

    def __init__(self, communication=CollectiveCommunication.AUTO, cluster_resolver=None):
        super().__init__(CollectiveAllReduceExtended(self, communication,
                                                     cluster_resolver or TFConfigClusterResolver()))

    num_replicas_in_sync = property(lambda self: self._extended.num_replicas_in_sync)
    cluster_resolver = property(lambda self: self._extended._cluster_resolver)

    def configure(self, session_config=None, cluster_spec=None, task_type=None, task_id=None):
        """With `cluster_spec`, this worker's place in that cluster instead (TF's distribute
        coordinator calls it so); `session_config` updated in place by update_config_proto."""
        ext = self._extended
        if cluster_spec:
            ext._initialize(SimpleClusterResolver(ClusterSpec(cluster_spec), task_type=task_type, task_id=task_id))
        if session_config is not None:
            session_config.CopyFrom(ext._update_config_proto(session_config))

    def update_config_proto(self, config_proto):
        """A copy of `config_proto` as this strategy's sessions need it: the collective group
        leader (experimental["collective_group_leader"]) and device_filters to this task only."""
        return self._extended._update_config_proto(config_proto)


@tf_export("contrib.distribute.CollectiveAllReduceStrategy")
class CollectiveAllReduceStrategy(MultiWorkerMirroredStrategy):
    """tf.contrib.distribute's name of MultiWorkerMirroredStrategy (TF 1.15): `num_gpus_per_worker`
    replicas per worker (0: its CPU), the cluster from TF_CONFIG or configure(cluster_spec=...)."""

    def __init__(self, num_gpus_per_worker=0, communication=CollectiveCommunication.AUTO):
        Strategy.__init__(self, CollectiveAllReduceExtended(self, communication, TFConfigClusterResolver(),
                                                            num_gpus_per_worker=int(num_gpus_per_worker)))
