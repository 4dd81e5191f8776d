"""tf.distribute's distributed values: one component per replica device.

`PerReplica` holds what each replica computed (a replica function's outputs, a split batch);
`Mirrored` holds copies kept equal (a reduction's result); `MirroredVariable` is one variable
per device kept equal by the strategy's updates: read in a replica it is that replica's copy,
read in cross-replica context the first device's.
"""
from __future__ import annotations

from tensorweave.framework import nest
from tensorweave.framework.distribution_context import current_entry
from tensorweave.framework.tensor_conversion import register_tensor_conversion_function
from tensorweave.ops.grouping import group
from tensorweave.ops.math.binary import add_n
from tensorweave.ops.state.variables import VariableAggregation, delegate_operators
from tensorweave.train.saveable import SaveableObject, SaveSpec, VariableSaveable


def current_replica_id(strategy=None):
    """The replica id of the replica function running on this thread, or None in cross-replica
    context (of `strategy`, when given)."""
    entry = current_entry()
    if entry is None or entry[1] is None or (strategy is not None and entry[0] is not strategy):
        return None
    return entry[1].replica_id_in_sync_group


class DistributedValues:
    """Values of one logical quantity, one per replica device (TF's DistributedValues)."""

    def __init__(self, values, devices):
        self._values = tuple(values)
        self._devices = tuple(devices)

    values = property(lambda self: self._values)
    devices = property(lambda self: self._devices)
    primary = property(lambda self: self._values[0])

    def _get(self):
        """This replica's component in a replica function, the primary one elsewhere."""
        replica = current_replica_id()
        return self._values[0 if replica is None or replica >= len(self._values) else replica]

    def __repr__(self):
        parts = ", ".join(f"{i}: {v!r}" for i, v in enumerate(self._values))
        return f"{type(self).__name__}:{{{parts}}}"


class PerReplica(DistributedValues):
    """What each replica computed: component i belongs to replica i."""


class Mirrored(DistributedValues):
    """Copies of one value, one per device, equal by construction."""


class MirroredVariable(Mirrored):
    """One variable per device (component i on device i), kept equal: updates go through
    `strategy.extended.update`, which applies the same update to every copy."""

    _is_resource_variable = True
    _replica_index = None      # the copies carry their index; the whole has none
    __array_priority__ = 100

    def __init__(self, strategy, values, devices, aggregation):
        super().__init__(values, devices)
        self._distribute_strategy = strategy
        self._aggregation = aggregation
        for i, v in enumerate(values):
            v._distributed_container = self
            v._replica_index = i

    def __getattr__(self, name):
        # handle, op, name, dtype, shape, value(), read_value(), ... of the local copy
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._get(), name)

    aggregation = property(lambda self: self._aggregation)
    distribute_strategy = property(lambda self: self._distribute_strategy)
    initializer = property(lambda self: group(*[v.initializer for v in self._values]))
    name = property(lambda self: self.primary.name)
    op = property(lambda self: self._get().op)
    handle = property(lambda self: self._get().handle)
    dtype = property(lambda self: self.primary.dtype)
    shape = property(lambda self: self.primary.shape)
    graph = property(lambda self: self.primary.graph)
    trainable = property(lambda self: self.primary.trainable)
    constraint = property(lambda self: self.primary.constraint)

    def get_shape(self):
        return self.primary.shape

    def _saveable_for(self, name: str, slice_spec: str = ""):
        """The SaveableObject a Saver saves this variable with (under `name`; `slice_spec`: the
        slice of `name` this variable is, for a partition)."""
        return MirroredSaveable(self, name, slice_spec)

    def value(self):
        return self._get().value()

    def read_value(self):
        return self._get().read_value()

    def _as_graph_element(self):
        return self._get()._as_graph_element()

    def _assign(self, method: str, value, use_locking=False, name=None, read_value=True):
        strategy = self._distribute_strategy
        replica = current_replica_id(strategy)
        if replica is None:
            return strategy.extended.update(
                self, lambda v, x: getattr(v, method)(x, use_locking=use_locking, read_value=False), args=(value,))
        if self._aggregation == VariableAggregation.NONE:
            raise ValueError("You must specify an aggregation method to update a MirroredVariable in Replica "
                             "Context. You can do so by passing an explicit value for argument `aggregation` to "
                             "tf.Variable(..).e.g. `tf.Variable(..., aggregation=tf.VariableAggregation.SUM)`"
                             "`tf.VariableAggregation` lists the possible aggregation types.")

        def merge_fn(strategy, value):
            if self._aggregation == VariableAggregation.ONLY_FIRST_REPLICA:
                value = value.values[0] if isinstance(value, DistributedValues) else value
            else:
                op = "SUM" if self._aggregation == VariableAggregation.SUM else "MEAN"
                value = strategy.extended.reduce_to(op, value, self)
            return strategy.extended.update(
                self, lambda v, x: getattr(v, method)(x, use_locking=use_locking, read_value=False), args=(value,))
        return strategy.extended._replica_context().merge_call(merge_fn, args=(value,))

    def assign(self, value, use_locking=False, name=None, read_value=True):
        return self._assign("assign", value, use_locking, name, read_value)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        return self._assign("assign_add", delta, use_locking, name, read_value)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        return self._assign("assign_sub", delta, use_locking, name, read_value)


class SyncOnReadVariable(MirroredVariable):
    """One variable per device that each replica updates on its own (a metric's total): in a
    replica, reads and writes are the local copy's; read in cross-replica context it is the
    copies' aggregate (SUM, MEAN, or the first copy; under MultiWorkerMirroredStrategy on a cluster,
    of every worker's copies: a collective that each worker runs)."""

    def value(self):
        if current_replica_id(self._distribute_strategy) is not None:
            return self._get().value()
        return self._aggregate(across_workers=True)

    def _aggregate(self, across_workers: bool):
        """The copies' aggregate; across_workers under a multi-worker strategy: every worker's
        copies, as TF's read (a collective each worker runs; a checkpoint's save, which the chief
        alone may run, reads this worker's)."""
        reads = [v.value() for v in self._values]
        if self._aggregation not in (VariableAggregation.SUM, VariableAggregation.MEAN):
            return reads[0]
        total, count = add_n(reads) if len(reads) > 1 else reads[0], len(reads)
        extended = self._distribute_strategy.extended
        if across_workers and extended._in_multi_worker_mode():
            total, count = extended._sum_across_workers(total), extended.num_replicas_in_sync
        return total / count if self._aggregation == VariableAggregation.MEAN else total

    def read_value(self):
        return self.value()

    def _as_graph_element(self):
        # fetched outside a replica (session.run, Keras get_weights): the aggregate, as TF's
        if current_replica_id(self._distribute_strategy) is not None:
            return self._get()._as_graph_element()
        return self.value()

    def _assign(self, method: str, value, use_locking=False, name=None, read_value=True):
        if current_replica_id(self._distribute_strategy) is not None:
            return getattr(self._get(), method)(value, use_locking=use_locking, read_value=read_value)
        if self._aggregation == VariableAggregation.SUM and method == "assign":
            value = value / len(self._values)   # TF: the copies sum to the assigned value
        return group(*[getattr(v, method)(value, use_locking=use_locking, read_value=False) for v in self._values])


delegate_operators(MirroredVariable)


def _mirrored_to_tensor(v, dtype=None, name=None, as_ref=False):
    got = v._get()
    if isinstance(v, MirroredVariable):
        return got.handle if as_ref else v.value()
    return got


register_tensor_conversion_function(Mirrored, _mirrored_to_tensor)


def select_replica(replica_id: int, structure):
    """`structure` with each PerReplica/Mirrored value replaced by replica `replica_id`'s component
    (mirrored variables stay whole: a replica reads its own copy through them)."""
    def pick(x):
        if isinstance(x, MirroredVariable) or not isinstance(x, DistributedValues):
            return x
        return x.values[replica_id]
    return nest.map_structure(pick, structure)


def regroup(per_replica: list, devices, wrap=PerReplica):
    """One structure from each replica -> one structure whose leaves are `wrap` values (a leaf
    that is the same object in every replica, e.g. a mirrored variable, stays as it is)."""
    flat = [nest.flatten(s) for s in per_replica]
    leaves = []
    for items in zip(*flat):
        leaves.append(items[0] if all(x is items[0] for x in items) else wrap(items, devices))
    return nest.pack_sequence_as(per_replica[0], leaves)


def is_distributed_variable(v) -> bool:
    return isinstance(v, MirroredVariable)


def collections_swap(graph, mirrored) -> None:
    """Puts `mirrored` where its primary copy is in every collection and removes the other copies,
    as TF does: tf.global_variables() lists the MirroredVariable (its initializer runs every
    copy), the Saver saves it once under the primary's name."""
    copies = mirrored.values
    for key in graph.get_all_collection_keys():
        ref = graph.get_collection_ref(key)
        if any(v is c for v in ref for c in copies):
            ref[:] = [mirrored if v is copies[0] else v for v in ref if not any(v is c for c in copies[1:])]


class MirroredSaveable(SaveableObject):
    """A MirroredVariable in a checkpoint: saved once from the primary copy under its name (the
    slice `slice_spec` of it, for a partition), restored into every copy."""

    def __init__(self, mirrored: MirroredVariable, name: str, slice_spec: str = ""):
        self._mirrored = mirrored
        self._slice_spec = slice_spec
        specs = VariableSaveable(mirrored.primary, slice_spec, name).specs
        if isinstance(mirrored, SyncOnReadVariable):   # as TF: the copies' aggregate
            specs = [SaveSpec(lambda: mirrored._aggregate(across_workers=False), slice_spec, name, dtype=mirrored.dtype,
                              device=mirrored.primary.device)]
        super().__init__(mirrored.primary, specs, name)

    def restore(self, restored_tensors, restored_shapes):
        if isinstance(self._mirrored, SyncOnReadVariable) and self._mirrored.aggregation == VariableAggregation.SUM:
            restored_tensors = [restored_tensors[0] / len(self._mirrored.values)]   # the copies sum to it again
        return group(*[VariableSaveable(v, self._slice_spec, self.name).restore(restored_tensors, restored_shapes)
                       for v in self._mirrored.values])
