"""tf.distribute's strategy API (TF 1.15, graph mode): Strategy / StrategyExtended, ReplicaContext,
ReduceOp, InputContext, and the context functions (get_strategy, get_replica_context, ...).

A strategy's `scope()` pushes (strategy, None) on this thread's context stack (cross-replica
context) and installs its variable creator; a replica function runs with (strategy,
ReplicaContext) on top. Outside every scope the default strategy (one replica, this device)
answers, as in TF.
"""
from __future__ import annotations

import collections
import contextlib
import enum

from tensorweave.framework import nest
from tensorweave.framework.distribution_context import context_stack, current_entry
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import shape
from tensorweave.ops.array.gather import gather
from tensorweave.ops.grouping import group
from tensorweave.ops.math import reduction
from tensorweave.ops.math.cast import cast
from tensorweave.ops.state.variables import VariableAggregation, variable_creator_scope
from tensorweave.distribute import values as values_lib


@tf_export("distribute.ReduceOp")
class ReduceOp(enum.Enum):
    """How values of the replicas combine: SUM or MEAN."""
    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation):
        mapping = {VariableAggregation.SUM: ReduceOp.SUM, VariableAggregation.MEAN: ReduceOp.MEAN}
        if aggregation not in mapping:
            raise ValueError(f"Could not convert from `tf.VariableAggregation` {aggregation} to "
                             "`tf.distribute.ReduceOp` type")
        return mapping[aggregation]


def as_reduce_op(reduce_op) -> ReduceOp:
    if isinstance(reduce_op, ReduceOp):
        return reduce_op
    if isinstance(reduce_op, VariableAggregation):
        return ReduceOp.from_variable_aggregation(reduce_op)
    try:
        return ReduceOp(str(reduce_op).upper())
    except ValueError:
        raise ValueError(f"reduce_op must be tf.distribute.ReduceOp.SUM or MEAN, got {reduce_op!r}") from None


@tf_export("distribute.InputReplicationMode")
class InputReplicationMode(enum.Enum):
    """How input_fn is replicated: PER_WORKER (input_fn runs once per worker)."""
    PER_WORKER = "PER_WORKER"


@tf_export("distribute.RunOptions")
class RunOptions(collections.namedtuple("RunOptions", ["experimental_enable_dynamic_batch_size",
                                                       "experimental_bucketizing_dynamic_shape",
                                                       "experimental_xla_options"])):
    """tf.distribute.RunOptions(experimental_enable_dynamic_batch_size=True,
    experimental_bucketizing_dynamic_shape=False, experimental_xla_options=None): the options of
    `strategy.run` (TPU dynamic shapes and XLA compilation: recorded, with no effect here)."""

    def __new__(cls, experimental_enable_dynamic_batch_size=True, experimental_bucketizing_dynamic_shape=False,
                experimental_xla_options=None):
        return super().__new__(cls, experimental_enable_dynamic_batch_size, experimental_bucketizing_dynamic_shape,
                               experimental_xla_options)


@tf_export("contrib.distribute.DistributeConfig")
class DistributeConfig(collections.namedtuple("DistributeConfig",
                                              ["train_distribute", "eval_distribute", "remote_cluster"])):
    """tf.contrib.distribute.DistributeConfig(train_distribute=None, eval_distribute=None,
    remote_cluster=None): the strategies of `tf.estimator.RunConfig(experimental_distribute=...)`,
    which become the RunConfig's train_distribute / eval_distribute. `remote_cluster` (a dict,
    ClusterDef or ClusterSpec) would make train_and_evaluate a standalone client of that cluster;
    RunConfig refuses it with a train_distribute (run each task with TF_CONFIG instead)."""

    def __new__(cls, train_distribute=None, eval_distribute=None, remote_cluster=None):
        return super().__new__(cls, train_distribute, eval_distribute, remote_cluster)


@tf_export("distribute.InputContext")
class InputContext:
    """What an input_fn is told about the pipeline it builds: how many there are, which one this
    is, and how many replicas consume them."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self._num_input_pipelines = num_input_pipelines
        self._input_pipeline_id = input_pipeline_id
        self._num_replicas_in_sync = num_replicas_in_sync

    num_replicas_in_sync = property(lambda self: self._num_replicas_in_sync)
    input_pipeline_id = property(lambda self: self._input_pipeline_id)
    num_input_pipelines = property(lambda self: self._num_input_pipelines)

    def get_per_replica_batch_size(self, global_batch_size):
        """global_batch_size / num_replicas_in_sync; ValueError when it does not divide."""
        if global_batch_size % self._num_replicas_in_sync != 0:
            raise ValueError(f"The `global_batch_size` {global_batch_size!r} is not divisible by "
                             f"`num_replicas_in_sync` {self._num_replicas_in_sync!r}")
        return global_batch_size // self._num_replicas_in_sync

    def __str__(self):
        return (f"tf.distribute.InputContext(input pipeline id {self._input_pipeline_id}, "
                f"total: {self._num_input_pipelines})")


@tf_export("distribute.ReplicaContext")
class ReplicaContext:
    """The context of one replica while a replica function runs (get_replica_context())."""

    def __init__(self, strategy, replica_id_in_sync_group):
        self._strategy = strategy
        self._replica_id_in_sync_group = replica_id_in_sync_group

    strategy = property(lambda self: self._strategy)
    replica_id_in_sync_group = property(lambda self: self._replica_id_in_sync_group)
    num_replicas_in_sync = property(lambda self: self._strategy.num_replicas_in_sync)
    devices = property(lambda self: (self._strategy.extended.worker_devices[self._replica_id_in_sync_group],))

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """Runs merge_fn(strategy, *args, **kwargs) once in cross-replica context, with each
        argument of every replica gathered into PerReplica values; returns its result (this
        replica's component of per-replica results)."""
        with _entered(self._strategy, None):
            return merge_fn(self._strategy, *args, **(kwargs or {}))

    def all_reduce(self, reduce_op, value):
        """The reduction of `value` (a nest of tensors) over all replicas, in every replica."""
        reduce_op = as_reduce_op(reduce_op)

        def batch_all_reduce(strategy, *flat):
            return strategy.extended.batch_reduce_to(reduce_op, [(v, v) for v in flat])
        flat = nest.flatten(value)
        return nest.pack_sequence_as(value, list(self.merge_call(batch_all_reduce, args=tuple(flat))))

    def __enter__(self):
        context_stack().append((self._strategy, self))

    def __exit__(self, *exc):
        context_stack().pop()


@contextlib.contextmanager
def _entered(strategy, replica_context):
    stack = context_stack()
    stack.append((strategy, replica_context))
    try:
        yield
    finally:
        stack.pop()


@tf_export("distribute.StrategyExtended")
class StrategyExtended:
    """The additional API of a strategy (strategy.extended): running per replica, reducing,
    updating variables on every device, placement of variables."""

    def __init__(self, container_strategy, devices):
        self._container_strategy_ref = container_strategy
        self._devices = tuple(devices)
        self._colocate_with = None
        self._created = set()

    def _container_strategy(self):
        return self._container_strategy_ref

    def _in_multi_worker_mode(self) -> bool:
        """Whether training runs between-graph on several workers' tasks (Keras's fit then runs
        through the distribute coordinator); false but for MultiWorkerMirroredStrategy and
        ParameterServerStrategy on a cluster."""
        return False

    worker_devices = property(lambda self: self._devices)
    parameter_devices = property(lambda self: self._devices)
    experimental_require_static_shapes = property(lambda self: False)
    experimental_between_graph = property(lambda self: False)
    experimental_should_init = property(lambda self: True)
    should_checkpoint = property(lambda self: True)
    should_save_summary = property(lambda self: True)

    def _replica_context(self):
        entry = current_entry()
        return entry[1] if entry is not None and entry[0] is self._container_strategy() else None

    def _require_cross_replica(self, method: str) -> None:
        if self._replica_context() is not None:
            raise RuntimeError(f"Method {method} requires being in cross-replica context, use "
                               "get_replica_context().merge_call()")

    # -- variables ------------------------------------------------------------------------------
    def _variable_creator(self, next_creator, **kwargs):
        """Places a variable made in this strategy's scope: on the colocated variable's device,
        else the first worker device (strategies with copies per device override it)."""
        device = self._colocate_with.device if self._colocate_with is not None else self._devices[0]
        with get_default_graph().device(device):
            v = next_creator(**kwargs)
        self._created.add(id(v))
        return v

    @contextlib.contextmanager
    def colocate_vars_with(self, colocate_with_variable):
        """Variables created in the block are placed like `colocate_with_variable` (how an
        optimizer puts slots beside their variable)."""
        old, self._colocate_with = self._colocate_with, colocate_with_variable
        try:
            yield
        finally:
            self._colocate_with = old

    def variable_created_in_scope(self, v) -> bool:
        """Whether `v` was created while this strategy's scope was active."""
        return id(v) in self._created or isinstance(v, values_lib.MirroredVariable) and \
            v.distribute_strategy is self._container_strategy()

    def read_var(self, v):
        return v.primary.value() if isinstance(v, values_lib.MirroredVariable) else v.value()

    # -- running ----------------------------------------------------------------------------------
    def call_for_each_replica(self, fn, args=(), kwargs=None):
        """Runs fn(*args, **kwargs) in each replica's context; returns the per-replica results
        (PerReplica values where they differ)."""
        self._require_cross_replica("call_for_each_replica")
        with self._container_strategy().scope():
            return self._call_for_each_replica(fn, args, kwargs or {})

    def _call_for_each_replica(self, fn, args, kwargs):
        with ReplicaContext(self._container_strategy(), 0):
            return fn(*values_lib.select_replica(0, args), **values_lib.select_replica(0, kwargs))

    # -- reductions and updates -------------------------------------------------------------------
    def reduce_to(self, reduce_op, value, destinations):
        """`value` (PerReplica, or a value every replica has) reduced onto `destinations`."""
        self._require_cross_replica("reduce_to")
        return self._reduce_to(as_reduce_op(reduce_op), value, destinations)

    def batch_reduce_to(self, reduce_op, value_destination_pairs):
        """reduce_to of each (value, destinations) pair."""
        self._require_cross_replica("batch_reduce_to")
        reduce_op = as_reduce_op(reduce_op)
        return [self._reduce_to(reduce_op, v, d) for v, d in value_destination_pairs]

    def _reduce_to(self, reduce_op, value, destinations):
        return value.values[0] if isinstance(value, values_lib.DistributedValues) else value

    def update(self, var, fn, args=(), kwargs=None, group=True):
        """fn(v, *args, **kwargs) on each copy v of `var` (per-device components of the
        arguments on each device); one op when `group`, else the results per device."""
        self._require_cross_replica("update")
        kwargs = kwargs or {}
        copies = var.values if isinstance(var, values_lib.MirroredVariable) else (var,)
        results = []
        g = get_default_graph()
        for i, v in enumerate(copies):
            with g.device(v.device), g.name_scope(f"update_{i}" if i else None):
                results.append(fn(v, *values_lib.select_replica(i, args), **values_lib.select_replica(i, kwargs)))
        return _grouped(results) if group else tuple(results)

    def update_non_slot(self, colocate_with, fn, args=(), kwargs=None, group=True):
        result = fn(*args, **(kwargs or {}))
        return _grouped([result]) if group else (result,)

    def non_slot_devices(self, var_list):
        return self._devices[:1]

    def value_container(self, value):
        return getattr(value, "_distributed_container", value)


def _grouped(results: list):
    flat = [r for r in nest.flatten(results) if r is not None]
    return group(*flat) if flat else None


@tf_export("distribute.Strategy")
class Strategy:
    """Distributes computation over devices (TF 1.15's tf.distribute.Strategy, graph mode)."""

    def __init__(self, extended):
        self._extended = extended
        self._scale_loss_for_estimator = False

    @contextlib.contextmanager
    def _scale_loss_for_estimator_enabled(self):
        """While the Estimator builds its replicas' model_fn: v1 optimizers divide a mean loss by
        the number of replicas (get_loss_reduction), so the summed gradients are the mean's."""
        old, self._scale_loss_for_estimator = self._scale_loss_for_estimator, True
        try:
            yield
        finally:
            self._scale_loss_for_estimator = old

    extended = property(lambda self: self._extended)
    num_replicas_in_sync = property(lambda self: len(self._extended.worker_devices))

    @contextlib.contextmanager
    def scope(self):
        """Makes this the current strategy: variables created inside are placed (and mirrored)
        by it; get_strategy() returns it."""
        entry = current_entry()
        if entry is not None and entry[0] is not self:
            raise ValueError("Mixing different tf.distribute.Strategy objects: "
                             f"{self} is not {entry[0]}")
        if entry is not None:   # (entered again: its variable creator is in place already, as in TF)
            with _entered(self, entry[1]):
                yield self
            return
        with _entered(self, None), variable_creator_scope(self._extended._variable_creator):
            yield self

    def experimental_run_v2(self, fn, args=(), kwargs=None, options=None):
        """Runs fn once per replica with the replica's components of args; returns per-replica
        results. `options` (a tf.distribute.RunOptions) tunes TPU and XLA compilation, which
        does not apply here."""
        if options is not None and not isinstance(options, RunOptions):
            raise TypeError(f"options must be a tf.distribute.RunOptions, got {type(options).__name__}")
        return self._extended.call_for_each_replica(fn, args=args, kwargs=kwargs)

    run = experimental_run_v2

    def reduce(self, reduce_op, value, axis=None):
        """`value` (per-replica) reduced across replicas (and along `axis` first, when given)."""
        self._extended._require_cross_replica("reduce")
        reduce_op = as_reduce_op(reduce_op)
        if axis is None:
            return _one(self._extended._reduce_to(reduce_op, value, self._extended.worker_devices[:1]))
        local = self.experimental_local_results(value)
        sums = values_lib.PerReplica([_reduce_sum(v, axis) for v in local], self._extended.worker_devices)
        total = self._extended._reduce_to(ReduceOp.SUM, sums, self._extended.worker_devices[:1])
        total = _one(total)
        if reduce_op is ReduceOp.SUM:
            return total
        counts = values_lib.PerReplica([_count(v, axis) for v in local], self._extended.worker_devices)
        count = self._extended._reduce_to(ReduceOp.SUM, counts, self._extended.worker_devices[:1])
        count = _one(count)
        return total / _cast(count, total.dtype)

    def experimental_local_results(self, value):
        """The components of `value` on this worker's devices, as a tuple."""
        if isinstance(value, values_lib.DistributedValues):
            return value.values
        return (value,)

    unwrap = experimental_local_results

    def group(self, value, name=None):
        """One op that runs every component of `value`."""
        flat = [x for v in nest.flatten(value) for x in self.experimental_local_results(v)]
        return group(*[x for x in flat if x is not None], name=name)

    def experimental_distribute_dataset(self, dataset):
        """A dataset whose global batches are split among the replicas (batch/N each)."""
        return self._extended._distribute_dataset(dataset)

    def make_dataset_iterator(self, dataset):
        """An iterator over experimental_distribute_dataset(dataset) (initialize, get_next)."""
        return self._extended._distribute_dataset(dataset).make_initializable_iterator()

    def make_input_fn_iterator(self, input_fn, replication_mode=InputReplicationMode.PER_WORKER):
        """input_fn(InputContext) builds this worker's dataset; each replica takes its own batch of it
        per step."""
        if replication_mode != InputReplicationMode.PER_WORKER:
            raise ValueError(f"Input replication mode not supported: {replication_mode!r}")
        return self._extended._input_fn_iterator(input_fn)

    def configure(self, session_config=None, cluster_spec=None, task_type=None, task_id=None):
        """Fills `session_config` for this strategy (its devices: device_count)."""
        if session_config is not None:
            self.update_config_proto(session_config)

    def update_config_proto(self, config_proto):
        return config_proto

    def __deepcopy__(self, memo):
        return self


def _one(value):
    return value.values[0] if isinstance(value, values_lib.DistributedValues) else value


def _reduce_sum(v, axis):
    return reduction.reduce_sum(v, axis=axis)


def _count(v, axis):
    return reduction.reduce_prod(gather(shape(v), axis))


def _cast(x, dtype):
    return cast(x, dtype)


class _DefaultStrategy(Strategy):
    """The strategy in effect outside every scope: one replica, no placement of its own."""

    def __init__(self):
        super().__init__(_DefaultExtended(self))


class _DefaultExtended(StrategyExtended):
    def __init__(self, container):
        super().__init__(container, ("",))

    def _variable_creator(self, next_creator, **kwargs):
        return next_creator(**kwargs)


_default_strategy = _DefaultStrategy()


@tf_export("distribute.get_strategy")
def get_strategy():
    """The current strategy: the innermost scope()'s, else the default strategy."""
    entry = current_entry()
    return _default_strategy if entry is None else entry[0]


@tf_export("distribute.has_strategy")
def has_strategy() -> bool:
    """Whether a non-default strategy is current."""
    return current_entry() is not None


@tf_export("distribute.experimental_set_strategy")
def experimental_set_strategy(strategy) -> None:
    """tf.distribute.experimental_set_strategy(strategy): makes `strategy` current in the default
    graph as `with strategy.scope():` would, until the next call (None: back to the default
    strategy). RuntimeError inside a strategy's scope()."""
    graph = get_default_graph()
    old_scope = getattr(graph, "_global_distribute_strategy_scope", None)
    if old_scope is not None:
        old_scope.__exit__(None, None, None)
        graph._global_distribute_strategy_scope = None
    if has_strategy():
        raise RuntimeError("Must not be called inside a `tf.distribute.Strategy` scope.")
    if strategy is not None:
        new_scope = strategy.scope()
        new_scope.__enter__()
        graph._global_distribute_strategy_scope = new_scope


@tf_export("distribute.in_cross_replica_context")
def in_cross_replica_context() -> bool:
    """True inside a strategy's scope() but not in its replica function."""
    entry = current_entry()
    return entry is not None and entry[1] is None


@tf_export("distribute.get_replica_context")
def get_replica_context():
    """The ReplicaContext of the running replica function; None in cross-replica context; the
    default strategy's replica context outside every strategy."""
    entry = current_entry()
    if entry is None:
        return ReplicaContext(_default_strategy, 0)
    return entry[1]


@tf_export("distribute.get_cross_replica_context")
def get_cross_replica_context():
    """The current strategy in cross-replica context (or the default strategy outside every
    scope); None inside a replica function."""
    entry = current_entry()
    if entry is None:
        return _default_strategy
    return entry[0] if entry[1] is None else None


def increment_var(v, amount=1):
    """v += amount once per step (TF's distribute_lib.increment_var): in a replica function, once
    for all replicas (a merge_call), not once per replica."""
    def update(strategy, v):
        return strategy.extended.update(v, lambda x: x.assign_add(amount, read_value=False))
    entry = current_entry()
    if entry is not None and entry[1] is not None:
        return entry[1].merge_call(update, args=(v,))
    return v.assign_add(amount, read_value=False)


@tf_export("distribute.get_loss_reduction")
def get_loss_reduction():
    """Whether a v1 optimizer scales each replica's loss (used only for the Estimator + v1
    optimizer case): MEAN while an Estimator builds its replicas, unless the last tf.losses loss
    of the graph used Reduction.SUM; SUM otherwise (the replicas' gradients are summed)."""
    if not get_strategy()._scale_loss_for_estimator:
        return ReduceOp.SUM
    last = getattr(get_default_graph(), "_last_loss_reduction", None)
    return ReduceOp.SUM if last in ("weighted_sum", "sum") else ReduceOp.MEAN

