"""The local strategies: MirroredStrategy (in-graph replication over this task's devices, one
variable copy per device), OneDeviceStrategy, experimental.CentralStorageStrategy, and the
cross-device reductions MirroredStrategy uses (ReductionToOneDevice, NcclAllReduce,
HierarchicalCopyAllReduce: on CPU devices all of them sum on one device, then copy).

Replica functions run as in TF: one thread per replica, one thread at a time; a
ReplicaContext.merge_call pauses every replica, runs the merge function once with the replicas'
arguments gathered, then resumes each replica with its share of the result. Graph-building
state that TF keeps per thread (name, device, control-dependency and colocation scopes) is
saved and restored around each switch.
"""
from __future__ import annotations

import re
import sys
import threading

from tensorweave.framework import nest
from tensorweave.framework.api import GraphKeys
from tensorweave.framework.device import DeviceSpec
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import identity, shape
from tensorweave.ops.math.binary import add_n, minimum
from tensorweave.ops.math.cast import cast
from tensorweave.ops.state.variable_scope import get_variable_scope, get_variable_scope_store, variable_scope
from tensorweave.ops.state.variables import VariableAggregation, VariableSynchronization, variable_creator_scope
from tensorweave.distribute import distribute_lib
from tensorweave.distribute import values as values_lib
from tensorweave.distribute.distribute_lib import ReduceOp, ReplicaContext, Strategy, StrategyExtended


def canonical_device(device: str) -> str:
    """A device string completed against this task: "/cpu:1" -> "/job:localhost/replica:0/
    task:0/device:CPU:1"; ValueError names a string that is not a device."""
    try:
        spec = DeviceSpec.from_string(device)
    except (ValueError, TypeError) as e:
        raise ValueError(f"Unknown device {device!r}: {e}") from None
    if spec.device_type is None:
        raise ValueError(f"Unknown device {device!r}: it names no device type (e.g. '/device:CPU:0')")
    task = f"/job:{spec.job or 'localhost'}/replica:{spec.replica or 0}/task:{spec.task or 0}"
    return f"{task}/device:{spec.device_type}:{spec.device_index or 0}"


# -- cross-device reductions ---------------------------------------------------------------------
def _destination_devices(destinations) -> tuple:
    if isinstance(destinations, values_lib.DistributedValues):
        return destinations.devices
    if isinstance(destinations, str):
        return (destinations,)
    if isinstance(destinations, (list, tuple)):
        return tuple(destinations)
    return (destinations.device,)


def _sum_on(device, parts):
    with get_default_graph().device(device):
        if any(isinstance(p, IndexedSlices) for p in parts):
            parts = [p if isinstance(p, IndexedSlices) else convert_to_tensor(p) for p in parts]
            if all(isinstance(p, IndexedSlices) for p in parts):
                return IndexedSlices(concat([p.values for p in parts], 0), concat([p.indices for p in parts], 0),
                                     parts[0].dense_shape)
            parts = [convert_to_tensor(p) for p in parts]
        return add_n([convert_to_tensor(p) for p in parts]) if len(parts) > 1 else identity(parts[0])


def _scaled(value, factor):
    if isinstance(value, IndexedSlices):
        return IndexedSlices(value.values * cast(factor, value.values.dtype), value.indices, value.dense_shape)
    return value * cast(factor, value.dtype)


@tf_export("distribute.CrossDeviceOps")
class CrossDeviceOps:
    """How MirroredStrategy reduces per-replica values onto devices."""

    def reduce(self, reduce_op, per_replica_value, destinations):
        """`per_replica_value` reduced (SUM or MEAN) into a Mirrored value on `destinations`."""
        return self.batch_reduce(reduce_op, [(per_replica_value, destinations)])[0]

    def batch_reduce(self, reduce_op, value_destination_pairs):
        reduce_op = distribute_lib.as_reduce_op(reduce_op)
        return [self._reduce(reduce_op, v, d) for v, d in value_destination_pairs]

    def broadcast(self, tensor, destinations):
        """Copies of `tensor` on each of `destinations`, as a Mirrored value."""
        devices = _destination_devices(destinations)
        copies = []
        for d in devices:
            with get_default_graph().device(d):
                copies.append(identity(tensor))
        return values_lib.Mirrored(copies, devices)

    def _reduce(self, reduce_op, value, destinations):
        parts = list(value.values)
        total = _sum_on(self._reduce_device(value), parts)
        if reduce_op is ReduceOp.MEAN:
            total = _scaled(total, 1.0 / len(parts))
        return self.broadcast(total, destinations) if not isinstance(total, IndexedSlices) else \
            values_lib.Mirrored([total] * len(_destination_devices(destinations)), _destination_devices(destinations))

    def _reduce_device(self, value):
        return value.devices[0]


@tf_export("distribute.ReductionToOneDevice")
class ReductionToOneDevice(CrossDeviceOps):
    """Sums every replica's value on one device (`reduce_to_device`, else the first one's), then
    copies the result to each destination."""

    def __init__(self, reduce_to_device=None, accumulation_fn=None):
        self._reduce_to_device = reduce_to_device
        self._accumulation_fn = accumulation_fn

    def _reduce_device(self, value):
        return self._reduce_to_device or value.devices[0]


@tf_export("distribute.experimental.AllReduceCrossDeviceOps")
class AllReduceCrossDeviceOps(CrossDeviceOps):
    """All-reduce across local devices (`all_reduce_alg` "nccl" or "hierarchical_copy"); on CPU
    devices a sum on the first device, then copies."""

    def __init__(self, all_reduce_alg="nccl", num_packs=1):
        if all_reduce_alg not in ("nccl", "hierarchical_copy"):
            raise ValueError(f"all_reduce_alg must be 'nccl' or 'hierarchical_copy', got {all_reduce_alg!r}")
        if num_packs < 0:
            raise ValueError(f"NCCL all-reduce requires num_packs >= 0, but {num_packs} is specified")
        self._all_reduce_alg = all_reduce_alg
        self._num_packs = num_packs


@tf_export("distribute.NcclAllReduce")
class NcclAllReduce(AllReduceCrossDeviceOps):
    """TF's NCCL all-reduce between local GPUs; between CPU devices, a sum then copies."""

    def __init__(self, num_packs=1):
        super().__init__("nccl", num_packs)


@tf_export("distribute.HierarchicalCopyAllReduce")
class HierarchicalCopyAllReduce(AllReduceCrossDeviceOps):
    """TF's hierarchical-copy all-reduce (for 8-GPU DGX-1 rings); between CPU devices, a sum then
    copies."""

    def __init__(self, num_packs=1):
        super().__init__("hierarchical_copy", num_packs)


# -- replica threads ---------------------------------------------------------------------------
_SCOPE_FIELDS = ("_name_stack", "_device_stack", "_control_stack", "_colocation_stack", "_attr_scope")


def _scopes_of(graph) -> dict:
    return {f: (lambda v: type(v)(v) if isinstance(v, (list, dict)) else v)(getattr(graph, f)) for f in _SCOPE_FIELDS}


def _restore_scopes(graph, state: dict) -> None:
    for f, v in state.items():
        setattr(graph, f, type(v)(v) if isinstance(v, (list, dict)) else v)


def _canonical_variable_name(name) -> str:
    """A variable's name without its uniquifying "_<n>" ("Variable" when it has none)."""
    if name is None:
        return "Variable"
    name = str(name).split(":")[0]
    match = re.match(r"^(.*)_\d+$", name)
    return match.group(1) if match else name


class _Aborted(Exception):
    """Raised in a replica thread the strategy stopped because another one failed."""


class _ReplicaThread(threading.Thread):
    def __init__(self, extended, replica_id, fn, args, kwargs, graph, var_scope, shared_vars):
        super().__init__(daemon=True, name=f"replica_{replica_id}")
        self.extended, self.replica_id = extended, replica_id
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.graph, self.var_scope, self.shared_vars = graph, var_scope, shared_vars
        self.should_run, self.has_paused = threading.Event(), threading.Event()
        self.done = self.abort = False
        self.result = self.exc_info = None
        self.merge_fn = self.merge_args = self.merge_kwargs = self.merge_result = self.captured = None
        self.captured_var_scope = None
        self.reused: dict = {}   # canonical name -> how many of replica 0's variables of that name this one took

    def wait_turn(self) -> None:
        self.should_run.wait()
        self.should_run.clear()
        if self.abort:
            raise _Aborted()

    def share_variable(self, next_creator, **kwargs):
        """Replica 0 creates variables; replica i gets replica 0's variable of the same name, in
        order (TF's shared_variable_creator: a get_variable that reuses takes no variable here, so
        the order alone would pair a later tf.Variable with the wrong one)."""
        name = _canonical_variable_name(kwargs.get("name"))
        if self.replica_id == 0:
            v = next_creator(**kwargs)
            self.shared_vars.setdefault(name, []).append(v)
            return v
        index = self.reused.get(name, 0)
        made = self.shared_vars.get(name, [])
        if index >= len(made):
            raise RuntimeError(f"Replica function of replica {self.replica_id} created a variable {name!r} that "
                               "replica 0 did not (the replicas must create the same variables)")
        self.reused[name] = index + 1
        return made[index]

    def run(self):
        try:
            self.wait_turn()
            g = self.graph
            strategy = self.extended._container_strategy()
            with g.as_default(), g.device(self.extended.worker_devices[self.replica_id]), \
                    g.name_scope(f"replica_{self.replica_id}" if self.replica_id else None), \
                    variable_scope(self.var_scope, reuse=True if self.replica_id else None), \
                    variable_creator_scope(self.extended._variable_creator), \
                    variable_creator_scope(self.share_variable), \
                    _MirroredReplicaContext(strategy, self.replica_id, self):
                self.result = self.fn(*values_lib.select_replica(self.replica_id, self.args),
                                      **values_lib.select_replica(self.replica_id, self.kwargs))
        except _Aborted:
            pass
        except BaseException:  # noqa: BLE001 - re-raised on the calling thread
            self.exc_info = sys.exc_info()
        finally:
            self.done = True
            self.has_paused.set()


class _MirroredReplicaContext(ReplicaContext):
    def __init__(self, strategy, replica_id, thread):
        super().__init__(strategy, replica_id)
        self._thread = thread

    def merge_call(self, merge_fn, args=(), kwargs=None):
        t = self._thread
        t.merge_fn, t.merge_args, t.merge_kwargs = merge_fn, args, kwargs or {}
        state = t.captured = _scopes_of(t.graph)
        t.captured_var_scope = get_variable_scope()
        t.has_paused.set()
        t.wait_turn()
        _restore_scopes(t.graph, state)
        return values_lib.select_replica(self.replica_id_in_sync_group, t.merge_result)


def _run_replicas(extended, fn, args, kwargs):
    """TF's mirrored_run: one thread per replica, taking turns, merge calls in between."""
    g = get_default_graph()
    devices = extended.worker_devices
    shared: dict = {}
    var_scope = get_variable_scope()
    threads = [_ReplicaThread(extended, i, fn, args, kwargs, g, var_scope, shared) for i in range(len(devices))]
    for t in threads:
        t.start()

    def stop(exc_info):
        for t in threads:
            if not t.done:
                t.abort = True
                t.should_run.set()
        for t in threads:
            t.join()
        raise exc_info[1].with_traceback(exc_info[2])

    strategy = extended._container_strategy()
    while True:
        for t in threads:
            main_state = _scopes_of(g)
            t.should_run.set()
            t.has_paused.wait()
            t.has_paused.clear()
            _restore_scopes(g, main_state)
            if t.exc_info is not None:
                stop(t.exc_info)
        if all(t.done for t in threads):
            break
        if any(t.done for t in threads):
            try:
                raise RuntimeError("Some replicas made a different number of replica_context().merge_call() "
                                   "calls.")
            except RuntimeError:
                stop(sys.exc_info())
        merge_args = values_lib.regroup([t.merge_args for t in threads], devices)
        merge_kwargs = values_lib.regroup([t.merge_kwargs for t in threads], devices)
        main_state = _scopes_of(g)
        # as TF: merge_fn runs in replica 0's name scope, control dependencies and variable scope
        _restore_scopes(g, {f: threads[0].captured[f] for f in ("_name_stack", "_control_stack")})
        scopes = get_variable_scope_store()
        main_var_scope, scopes.current_scope = scopes.current_scope, threads[0].captured_var_scope
        try:
            with distribute_lib._entered(strategy, None):
                result = threads[0].merge_fn(strategy, *merge_args, **merge_kwargs)
        except BaseException:  # noqa: BLE001 - stop() stops the replicas, then re-raises it
            _restore_scopes(g, main_state)
            scopes.current_scope = main_var_scope
            stop(sys.exc_info())
        _restore_scopes(g, main_state)
        scopes.current_scope = main_var_scope
        for t in threads:
            t.merge_result = result
    for t in threads:
        t.join()
    return values_lib.regroup([t.result for t in threads], devices)


# -- input ---------------------------------------------------------------------------------------
class DistributedIterator:
    """Per step, one PerReplica batch: `get_next()` gives replica i its part (with `split`, of
    `num_replicas` parts of the batch, this task's replicas taking those from `first_replica` on:
    a worker of several takes its workers' share)."""

    def __init__(self, iterator, devices, split: bool, first_replica: int = 0, num_replicas=None):
        self._iterator = iterator
        self._devices = devices
        self._split = split
        self._first, self._num_replicas = first_replica, num_replicas or len(devices)

    initializer = property(lambda self: self._iterator.initializer)

    def initialize(self):
        """The ops that (re)start the iterator (TF's DistributedIterator.initialize())."""
        return [self._iterator.initializer]

    def get_next(self, name=None):
        g = get_default_graph()
        n = self._num_replicas
        if self._split:
            batch = self._iterator.get_next()
            parts = [nest.map_structure(lambda x, i=i: _share(x, i, n), batch)
                     for i in range(self._first, self._first + len(self._devices))]
            out = []
            for d, p in zip(self._devices, parts):
                with g.device(d):
                    out.append(nest.map_structure(identity, p))
        else:
            out = []
            for d in self._devices:
                with g.device(d):
                    out.append(self._iterator.get_next())
        return values_lib.regroup(out, self._devices)


def _share(x, i: int, n: int):
    """Replica i's rows of batch x: ceil(B/n) rows each, the last ones fewer (TF's rebatching)."""
    rows = shape(x)[0]
    per = (rows + n - 1) // n
    return x[minimum(per * i, rows):minimum(per * (i + 1), rows)]


def input_fn_iterator(input_fn, devices):
    """make_input_fn_iterator on one worker: input_fn(InputContext) builds the dataset, each of
    `devices` takes its own batch of it per step."""
    dataset = input_fn(distribute_lib.InputContext(1, 0, len(devices)))
    if not hasattr(dataset, "make_initializable_iterator"):
        raise ValueError(f"input_fn must return a tf.data.Dataset or a callable, got {type(dataset).__name__}")
    return DistributedIterator(dataset.make_initializable_iterator(), devices, split=False)


class DistributedDataset:
    """experimental_distribute_dataset's result: iterators whose batches are split per replica."""

    def __init__(self, dataset, devices, first_replica: int = 0, num_replicas=None):
        self._dataset = dataset
        self._devices = devices
        self._shares = {"first_replica": first_replica, "num_replicas": num_replicas}

    def make_one_shot_iterator(self):
        return DistributedIterator(self._dataset.make_one_shot_iterator(), self._devices, split=True, **self._shares)

    def make_initializable_iterator(self):
        return DistributedIterator(self._dataset.make_initializable_iterator(), self._devices, split=True,
                                   **self._shares)


# -- the strategies ------------------------------------------------------------------------------
class MirroredExtended(StrategyExtended):
    def __init__(self, container, devices, cross_device_ops=None):
        super().__init__(container, devices)
        self._cross_device_ops = cross_device_ops or ReductionToOneDevice()

    def _variable_creator(self, next_creator, **kwargs):
        collections = kwargs.get("collections") or [GraphKeys.GLOBAL_VARIABLES]
        g = get_default_graph()
        if GraphKeys.GLOBAL_STEP in collections or self._colocate_with is not None \
                and not isinstance(self._colocate_with, values_lib.MirroredVariable):
            return super()._variable_creator(next_creator, **kwargs)
        devices = self._colocate_with.devices if self._colocate_with is not None else self._devices
        copies = []
        for i, d in enumerate(devices):
            kw = dict(kwargs)
            if i:
                kw["name"] = f"{copies[0].op.name}/replica_{i}"
                kw["initial_value"] = lambda: identity(copies[0].initial_value)
            with g.device(d):
                copies.append(next_creator(**kw))
        aggregation = kwargs.get("aggregation") or VariableAggregation.NONE
        kind = values_lib.SyncOnReadVariable if kwargs.get("synchronization") == VariableSynchronization.ON_READ \
            else values_lib.MirroredVariable
        mirrored = kind(self._container_strategy(), copies, devices, aggregation)
        values_lib.collections_swap(g, mirrored)
        self._created.add(id(mirrored))
        return mirrored

    def _call_for_each_replica(self, fn, args, kwargs):
        return _run_replicas(self, fn, args, kwargs)

    def _reduce_to(self, reduce_op, value, destinations):
        devices = _destination_devices(destinations)
        if not isinstance(value, values_lib.DistributedValues):
            if reduce_op is ReduceOp.SUM and len(self._devices) > 1:
                raise ValueError(f"A non-DistributedValues value {value} cannot be reduced with the given "
                                 f"reduce op {reduce_op}.")
            return self._cross_device_ops.broadcast(value, devices)
        if isinstance(value, values_lib.Mirrored) and reduce_op is ReduceOp.MEAN:
            return value
        return self._cross_device_ops._reduce(reduce_op, value, devices)

    def non_slot_devices(self, var_list):
        return self._devices

    def _distribute_dataset(self, dataset):
        return DistributedDataset(dataset, self._devices)

    def _input_fn_iterator(self, input_fn):
        return input_fn_iterator(input_fn, self._devices)

    def read_var(self, v):
        return super().read_var(v)


def _local_devices(devices) -> tuple:
    if devices is None:
        return ("/job:localhost/replica:0/task:0/device:CPU:0",)
    if isinstance(devices, str):
        devices = [devices]
    devices = [canonical_device(d) for d in devices]
    if not devices:
        raise ValueError("Must specify at least one device.")
    if len(set(devices)) != len(devices):
        raise ValueError(f"No duplicates allowed in `devices` argument: {devices}")
    return tuple(devices)


@tf_export("distribute.MirroredStrategy", "contrib.distribute.MirroredStrategy")
class MirroredStrategy(Strategy):
    """Synchronous training on several devices of this task: one replica per device in one
    graph, variables mirrored on every device and updated with the all-reduced gradients.

    `devices` default to this task's CPU:0 (TF picks every GPU, else the CPU); give logical CPUs
    (ConfigProto.device_count or tf.config.set_logical_device_configuration) to test on one
    machine. `cross_device_ops`: ReductionToOneDevice (default here), NcclAllReduce or
    HierarchicalCopyAllReduce."""

    def __init__(self, devices=None, cross_device_ops=None):
        super().__init__(MirroredExtended(self, _local_devices(devices), cross_device_ops))

    def update_config_proto(self, config_proto):
        cpus = [DeviceSpec.from_string(d) for d in self._extended.worker_devices]
        count = max([(s.device_index or 0) + 1 for s in cpus if s.device_type == "CPU"] or [1])
        if config_proto.device_count.get("CPU", 1) < count:
            config_proto.device_count["CPU"] = count
        return config_proto


@tf_export("distribute.OneDeviceStrategy", "contrib.distribute.OneDeviceStrategy")
class OneDeviceStrategy(Strategy):
    """Everything on one device (`device`, e.g. "/cpu:0"): variables are placed there and the
    replica function runs once; a way to write strategy code and test it on one device."""

    def __init__(self, device):
        super().__init__(OneDeviceExtended(self, _local_devices([device])))


class OneDeviceExtended(StrategyExtended):
    def _call_for_each_replica(self, fn, args, kwargs):
        with get_default_graph().device(self._devices[0]):
            return super()._call_for_each_replica(fn, args, kwargs)

    def _distribute_dataset(self, dataset):
        return DistributedDataset(dataset, self._devices)

    def _input_fn_iterator(self, input_fn):
        return input_fn_iterator(input_fn, self._devices)

    def _reduce_to(self, reduce_op, value, destinations):
        return value.values[0] if isinstance(value, values_lib.DistributedValues) else value


@tf_export("distribute.experimental.CentralStorageStrategy")
class CentralStorageStrategy(Strategy):
    """Variables on one device (`parameter_device`, else the first compute device), computation
    replicated over `compute_devices` (TF's CentralStorageStrategy): each replica reads the one
    variable; gradients are summed once and applied once."""

    def __init__(self, compute_devices=None, parameter_device=None):
        ext = CentralStorageExtended(self, _local_devices(compute_devices))
        ext._parameter_device = canonical_device(parameter_device) if parameter_device else ext.worker_devices[0]
        super().__init__(ext)

    update_config_proto = MirroredStrategy.update_config_proto   # enough CPUs for its compute devices


class CentralStorageExtended(MirroredExtended):
    def _variable_creator(self, next_creator, **kwargs):
        with get_default_graph().device(self._parameter_device):
            v = next_creator(**kwargs)
        self._created.add(id(v))
        return v

    parameter_devices = property(lambda self: (self._parameter_device,))

    def _reduce_to(self, reduce_op, value, destinations):
        if isinstance(destinations, values_lib.DistributedValues) or hasattr(destinations, "handle"):
            destinations = self._parameter_device
        return super()._reduce_to(reduce_op, value, destinations)
