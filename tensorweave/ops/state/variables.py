"""tf.Variable (resource-style storage, TF1 names) and the variable collection helpers."""
from __future__ import annotations

import contextlib
import enum
import inspect
import threading
from typing import Optional

from tensorweave.framework import dtypes
from tensorweave.framework.api import GraphKeys, graph_from_inputs
from tensorweave.framework.func_graph import init_scope
from tensorweave.framework.graph import Operation, Tensor, default_session_for, get_default_graph
from tensorweave.framework.tensor_conversion import convert_to_tensor, register_tensor_conversion_function
from tensorweave.framework.shapes import as_shape, unknown_shape
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import variable_pb2
from tensorweave.ops.array.core import constant, identity
from tensorweave.ops.grouping import group, no_op
from tensorweave.ops.state.scatter import (resource_scatter_add, resource_scatter_div, resource_scatter_max,
                                           resource_scatter_min, resource_scatter_mul, resource_scatter_nd_add,
                                           resource_scatter_nd_sub, resource_scatter_nd_update, resource_scatter_sub,
                                           resource_scatter_update)
from tensorweave.ops.state.variable_ops import (assign_add_variable_op, assign_sub_variable_op, assign_variable_op,
                                                colocated_with_handle, read_variable_op, resource_gather,
                                                var_handle_op, var_is_initialized_op)


@tf_export("VariableSynchronization")
class VariableSynchronization(enum.Enum):
    """tf.VariableSynchronization."""
    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


@tf_export("VariableAggregation")
class VariableAggregation(enum.Enum):
    """tf.VariableAggregation."""
    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3
    ONLY_FIRST_TOWER = 3


def sync_defaults(synchronization, aggregation, trainable):
    """TF's defaults for (synchronization, aggregation, trainable) left None: AUTO, NONE, and
    trainable unless the variable is synchronized ON_READ."""
    if synchronization is None:
        synchronization = VariableSynchronization.AUTO
    if aggregation is None:
        aggregation = VariableAggregation.NONE
    if trainable is None:
        trainable = synchronization is not VariableSynchronization.ON_READ
    return synchronization, aggregation, trainable


class SaveSliceInfo:
    """Where a partition lies in its full variable (TF's Variable.SaveSliceInfo): the full
    variable's name and shape, this part's offset and shape. `spec` is TF's shape_and_slice
    string ("10 3 0,4:0,3") under which the part is saved."""

    def __init__(self, full_name=None, full_shape=None, var_offset=None, var_shape=None,
                 save_slice_info_def=None, import_scope=None):
        if save_slice_info_def is not None:
            d = save_slice_info_def
            full_name = _prefixed(d.full_name, import_scope)
            full_shape, var_offset, var_shape = d.full_shape, d.var_offset, d.var_shape
        self.full_name = full_name
        self.full_shape = [int(x) for x in full_shape]
        self.var_offset = [int(x) for x in var_offset]
        self.var_shape = [int(x) for x in var_shape]

    @property
    def spec(self) -> str:
        return (" ".join(str(d) for d in self.full_shape) + " "
                + ":".join(f"{o},{s}" for o, s in zip(self.var_offset, self.var_shape)))

    def to_proto(self, export_scope=None) -> Optional[variable_pb2.SaveSliceInfoDef]:
        """The slice info as TF's SaveSliceInfoDef, the full name relative to export_scope (None
        when outside it)."""
        name = _relative(self.full_name, export_scope)
        if name is None:
            return None
        return variable_pb2.SaveSliceInfoDef(full_name=name, full_shape=self.full_shape, var_offset=self.var_offset,
                                             var_shape=self.var_shape)


def _prefixed(name: str, import_scope: Optional[str]) -> str:
    return f"{import_scope}/{name}" if import_scope else name


def _relative(name: str, export_scope: Optional[str]) -> Optional[str]:
    """`name` relative to export_scope (None when outside it)."""
    if export_scope is None:
        return name
    return name[len(export_scope) + 1:] if name.startswith(export_scope + "/") else None


@contextlib.contextmanager
def _attr_scope(graph, attrs: dict):
    saved = graph._attr_scope
    graph._attr_scope = {**saved, **attrs}
    try:
        yield
    finally:
        graph._attr_scope = saved


class _CreatorStacks(threading.local):
    def __init__(self):
        self.by_graph: dict = {}


_creator_stacks = _CreatorStacks()


def _creator_stack() -> list:
    return _creator_stacks.by_graph.setdefault(id(get_default_graph()), [])


@tf_export("variable_creator_scope")
@contextlib.contextmanager
def variable_creator_scope(variable_creator):
    """Within the scope, `tf.Variable(...)` (and so `tf.get_variable`) calls
    `variable_creator(next_creator, **kwargs)`, which may change the arguments, call
    `next_creator(**kwargs)` (the enclosing creator, finally the plain constructor), or return a
    variable-like object of its own (how tf.distribute makes mirrored variables)."""
    stack = _creator_stack()
    stack.append(variable_creator)
    try:
        yield
    finally:
        stack.pop()


class _VariableMeta(type):
    """Routes `Variable(...)` through the active variable_creator_scope creators, innermost first."""

    def __call__(cls, *args, **kwargs):
        creators = list(_creator_stack()) if cls is Variable else []
        if not creators or kwargs.get("variable_def") is not None:
            return type.__call__(cls, *args, **kwargs)
        kwargs = inspect.signature(cls.__init__).bind(None, *args, **kwargs).arguments
        kwargs.pop("self")

        def chain(i):
            if i < 0:
                return lambda **kw: type.__call__(cls, **kw)
            return lambda **kw: creators[i](chain(i - 1), **kw)
        return chain(len(creators) - 1)(**kwargs)


@tf_export("Variable", "VariableV1")
class Variable(metaclass=_VariableMeta):
    """tf.Variable(initial_value=None, trainable=None, collections=None, validate_shape=True,
    caching_device=None, name=None, variable_def=None, dtype=None, expected_shape=None,
    import_scope=None, constraint=None, use_resource=None, synchronization=AUTO,
    aggregation=NONE, shape=None).

    State lives in the session's (or ps task's) resource manager; this object holds the graph
    ops that create, initialize and read it. Used as a tensor, it is a fresh read."""

    __array_priority__ = 100
    SaveSliceInfo = SaveSliceInfo
    _save_slice_info = None

    def __init__(self, initial_value=None, trainable=None, collections=None, validate_shape=True,
                 caching_device=None, name=None, variable_def=None, dtype=None, expected_shape=None,
                 import_scope=None, constraint=None, use_resource=None,
                 synchronization=VariableSynchronization.AUTO, aggregation=VariableAggregation.NONE,
                 shape=None):
        if variable_def is not None:
            if initial_value is not None:
                raise ValueError("variable_def and initial_value are mutually exclusive.")
            self._init_from_def(variable_def, import_scope)
            return
        synchronization, aggregation, trainable = sync_defaults(synchronization, aggregation, trainable)
        if trainable and synchronization is VariableSynchronization.ON_READ:
            raise ValueError("Synchronization value can be set to VariableSynchronization.ON_READ only for "
                             "non-trainable variables. You have specified trainable=True and "
                             "synchronization=VariableSynchronization.ON_READ.")
        self._synchronization = synchronization
        self._aggregation = aggregation
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if constraint is not None and not callable(constraint):
            raise ValueError("The `constraint` argument must be a callable.")
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        if not isinstance(collections, (list, tuple, set)):
            raise ValueError(f"collections argument to Variable constructor must be a list, tuple, or set. "
                             f"Got {collections} of type {type(collections)}")
        collections = list(collections)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(GraphKeys.TRAINABLE_VARIABLES)
        self._trainable = bool(trainable)
        self._constraint = constraint
        self._caching_device = caching_device
        dtype = dtypes.as_dtype(dtype) if dtype is not None else None
        if shape is None and expected_shape is not None:
            shape = expected_shape
        init_from_fn = callable(initial_value)
        values = [] if init_from_fn else [initial_value]
        # A variable made while a loop or cond body is built (an RNN cell's first call inside
        # dynamic_rnn) lives in the outermost graph, as TF's init_scope puts it; the body reads it.
        inner = get_default_graph()
        lift = inner.building_function and not any(isinstance(v, Tensor) and v.graph is inner for v in values)
        with init_scope() if lift else contextlib.nullcontext():
            self._create(initial_value, init_from_fn, values, name, dtype, shape, validate_shape, caching_device,
                         collections)

    def _create(self, initial_value, init_from_fn: bool, values: list, name, dtype, shape, validate_shape,
                caching_device, collections) -> None:
        scope_graph = graph_from_inputs(values)
        # TF's init_scope: a variable never depends on the control dependencies around it.
        with scope_graph.as_default(), scope_graph.control_dependencies(None), \
                scope_graph.name_scope(name or "Variable") as scope:
            g = scope_graph
            handle_name = scope[:-1]
            if init_from_fn:
                # Initializers built from callables run where the variable lives.
                with _attr_scope(g, {"_class": [f"loc:@{handle_name}"]}), g.name_scope("Initializer"), \
                        g.device(None):
                    self._initial_value = convert_to_tensor(initial_value(), name="initial_value", dtype=dtype)
            else:
                self._initial_value = convert_to_tensor(initial_value, name="initial_value", dtype=dtype)
            value_dtype = self._initial_value.dtype
            if dtype is not None and value_dtype != dtype:
                raise ValueError(f"Tensor conversion requested dtype {dtype.name} for Tensor with dtype "
                                 f"{value_dtype.name}: {self._initial_value!r}")
            if shape is not None:
                var_shape = as_shape(shape)
                if not var_shape.is_compatible_with(self._initial_value.shape):
                    raise ValueError(f"The initial value's shape ({self._initial_value.shape}) is not compatible "
                                     f"with the explicitly supplied `shape` argument ({var_shape}).")
            elif validate_shape:
                var_shape = self._initial_value.shape
                if not var_shape.is_fully_defined():
                    raise ValueError(f"initial_value must have a shape specified: {self._initial_value}")
            else:
                var_shape = unknown_shape()
            self._shape = var_shape
            self._dtype = value_dtype
            self._handle = var_handle_op(value_dtype, var_shape, container=g._container,
                                                   shared_name=handle_name, name=scope)
            self._init_op = assign_variable_op(self._handle, self._initial_value,
                                                         validate_shape=validate_shape, name="Assign")
            self._snapshot = read_variable_op(self._handle, value_dtype, name="read")
            if caching_device is not None:
                with g.device(caching_device):
                    self._snapshot = identity(self._snapshot, name="read_cached")
        self._graph = g
        g.add_to_collections(collections, self)

    def _init_from_def(self, variable_def, import_scope) -> None:
        g = get_default_graph()
        if not isinstance(variable_def, variable_pb2.VariableDef):
            raise TypeError(f"variable_def must be a VariableDef proto, not {type(variable_def).__name__}")
        self._graph = g
        self._handle = g.as_graph_element(_prefixed(variable_def.variable_name, import_scope))
        self._init_op = g.as_graph_element(_prefixed(variable_def.initializer_name, import_scope))
        self._initial_value = (g.as_graph_element(_prefixed(variable_def.initial_value_name, import_scope))
                               if variable_def.initial_value_name else None)
        self._snapshot = g.as_graph_element(_prefixed(variable_def.snapshot_name, import_scope))
        self._dtype = dtypes.as_dtype(self._handle.op.get_attr("dtype"))
        self._shape = as_shape(self._handle.op.get_attr("shape"))
        self._trainable = variable_def.trainable
        self._constraint = None
        self._caching_device = None
        self._synchronization = VariableSynchronization(variable_def.synchronization)
        self._aggregation = VariableAggregation(variable_def.aggregation)
        if variable_def.HasField("save_slice_info_def"):
            self._save_slice_info = SaveSliceInfo(save_slice_info_def=variable_def.save_slice_info_def,
                                                  import_scope=import_scope)

    # -- properties -----------------------------------------------------------------------------
    name = property(lambda self: self._handle.name)
    op = property(lambda self: self._handle.op)
    handle = property(lambda self: self._handle)
    dtype = property(lambda self: self._dtype)
    graph = property(lambda self: self._graph)
    device = property(lambda self: self._handle.device)
    shape = property(lambda self: self._shape)
    initializer = property(lambda self: self._init_op)
    initial_value = property(lambda self: self._initial_value)
    trainable = property(lambda self: self._trainable)
    constraint = property(lambda self: self._constraint)
    synchronization = property(lambda self: self._synchronization)
    aggregation = property(lambda self: self._aggregation)
    _is_resource_variable = True

    def get_shape(self):
        return self._shape

    def _set_save_slice_info(self, save_slice_info) -> None:
        self._save_slice_info = save_slice_info

    def _get_save_slice_info(self):
        return self._save_slice_info

    def _as_graph_element(self):
        return self._snapshot

    def _ref(self):
        return self._handle

    def to_proto(self, export_scope=None) -> Optional[variable_pb2.VariableDef]:
        """This variable as TF's VariableDef (a resource variable's), names relative to
        export_scope; None when outside it."""
        if export_scope is not None and not self._handle.name.startswith(export_scope + "/"):
            return None
        vdef = variable_pb2.VariableDef(
            variable_name=_relative(self._handle.name, export_scope),
            initializer_name=_relative(self._init_op.name, export_scope),
            snapshot_name=_relative(self._snapshot.name, export_scope), is_resource=True, trainable=self._trainable,
            synchronization=self._synchronization.value, aggregation=self._aggregation.value)
        if self._initial_value is not None:
            vdef.initial_value_name = _relative(self._initial_value.name, export_scope) or ""
        if self._save_slice_info is not None:
            info = self._save_slice_info.to_proto(export_scope)
            if info is not None:
                vdef.save_slice_info_def.CopyFrom(info)
        return vdef

    @staticmethod
    def from_proto(variable_def, import_scope=None) -> "Variable":
        return Variable(variable_def=variable_def, import_scope=import_scope)

    # -- reading --------------------------------------------------------------------------------
    def value(self) -> Tensor:
        """A fresh read of the current value (ordered by the enclosing control dependencies)."""
        t = read_variable_op(self._handle, self._dtype)
        if self._caching_device is not None:
            with get_default_graph().device(self._caching_device):
                t = identity(t)
        return t

    def read_value(self) -> Tensor:
        with get_default_graph().name_scope("Read"):
            return read_variable_op(self._handle, self._dtype)

    def sparse_read(self, indices, name=None) -> Tensor:
        """Gathers rows `indices` of this variable, reading only those rows."""
        with get_default_graph().name_scope("Gather" if name is None else name):
            return resource_gather(self._handle, indices, self._dtype)

    def eval(self, session=None):
        return self._snapshot.eval(session=session)

    def initialized_value(self) -> Tensor:
        """The variable's value if initialized, else its initial value (for dependent initializers)."""
        g = get_default_graph()
        with g.control_dependencies(None), g.name_scope(self.op.name + "/InitializedValue/"):
            with colocated_with_handle(self._handle):
                return g.create_op("_VariableValueOrInitial", [self._handle, self._initial_value], {},
                                   name="value").outputs[0]

    def load(self, value, session=None) -> None:
        """Writes `value` into the variable through its initializer, in `session`."""
        session = default_session_for(self._graph, session)
        session.run(self._init_op, {self._init_op.inputs[1]: value})

    def is_initialized(self, name=None) -> Tensor:
        return var_is_initialized_op(self._handle, name=name)

    # -- updates --------------------------------------------------------------------------------
    # use_locking is TF's argument and is ignored, as by TF's ResourceVariable: every write of a
    # resource variable holds its lock (ops/state/variable_ops.py); only the ScatterNd ops have the attribute.
    def _update(self, make, default_name, value, name, read_value, **kw):
        g = get_default_graph()
        value = convert_to_tensor(value, dtype=self._dtype)
        with g.name_scope(name or default_name) as scope:
            if not read_value:
                return make(self._handle, value, name=scope, **kw)
            op = make(self._handle, value, **kw)
            with g.control_dependencies([op]):
                return read_variable_op(self._handle, self._dtype, name=scope)

    def assign(self, value, use_locking=None, name=None, read_value=True, _validate_shape=None):
        """Sets the variable to `value`; returns the new value (or the op when read_value=False)."""
        validate = True if _validate_shape is None else bool(_validate_shape)
        return self._update(assign_variable_op, "Assign", value, name, read_value, validate_shape=validate)

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        return self._update(assign_add_variable_op, "AssignAdd", delta, name, read_value)

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        return self._update(assign_sub_variable_op, "AssignSub", delta, name, read_value)

    def _scatter(self, make, default_name, sparse_delta, name):
        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError(f"sparse_delta is not IndexedSlices: {sparse_delta}")
        return self._sparse_write(make, default_name, sparse_delta.indices, sparse_delta.values, name)

    def scatter_update(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(resource_scatter_update, "ScatterUpdate", sparse_delta, name)

    def scatter_add(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(resource_scatter_add, "ScatterAdd", sparse_delta, name)

    def scatter_sub(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(resource_scatter_sub, "ScatterSub", sparse_delta, name)

    def scatter_mul(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(resource_scatter_mul, "ScatterMul", sparse_delta, name)

    def scatter_div(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(resource_scatter_div, "ScatterDiv", sparse_delta, name)

    def scatter_max(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(resource_scatter_max, "ScatterMax", sparse_delta, name)

    def scatter_min(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(resource_scatter_min, "ScatterMin", sparse_delta, name)

    def _sparse_write(self, make, default_name, indices, updates, name, **kw):
        """make(handle, indices, updates, **kw) in name scope `name or default_name`; then a read of the new value."""
        g = get_default_graph()
        indices = convert_to_tensor(indices)
        updates = convert_to_tensor(updates, dtype=self._dtype)
        with g.name_scope(name or default_name) as scope:
            op = make(self._handle, indices, updates, **kw)
            with g.control_dependencies([op]):
                return read_variable_op(self._handle, self._dtype, name=scope)

    def scatter_nd_update(self, indices, updates, name=None, use_locking=True):
        return self._sparse_write(resource_scatter_nd_update, "ScatterNdUpdate", indices, updates, name,
                                  use_locking=bool(use_locking))

    def scatter_nd_add(self, indices, updates, name=None, use_locking=False):
        return self._sparse_write(resource_scatter_nd_add, "ScatterNdAdd", indices, updates, name,
                                  use_locking=bool(use_locking))

    def scatter_nd_sub(self, indices, updates, name=None, use_locking=False):
        return self._sparse_write(resource_scatter_nd_sub, "ScatterNdSub", indices, updates, name,
                                  use_locking=bool(use_locking))

    def count_up_to(self, limit, name=None) -> Tensor:
        """Increments the variable until `limit`; returns the value before the increment."""
        if not self._dtype.is_integer:
            raise TypeError(f"count_up_to requires an int32 or int64 variable, got {self._dtype.name}")
        with colocated_with_handle(self._handle):
            return get_default_graph().create_op("ResourceCountUpTo", [self._handle],
                                                 {"limit": int(limit), "T": self._dtype},
                                                 name=name or "CountUpTo").outputs[0]

    # -- Python protocol ------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"<tf.Variable '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __hash__(self):
        return id(self)

    def __eq__(self, other):  # TF1: identity
        return self is other

    def __ne__(self, other):
        return self is not other

    def __iter__(self):
        raise TypeError("'Variable' object is not iterable.")

    def __bool__(self):
        return bool(self.value())

    def __array__(self, dtype=None):
        raise TypeError(f"Cannot convert a symbolic Variable ({self.name}) to a numpy array.")


VariableV1 = Variable

_OPERATORS = ["__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__div__", "__rdiv__",
              "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__",
              "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__lt__", "__le__", "__gt__", "__ge__",
              "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__neg__", "__abs__",
              "__invert__", "__getitem__"]


def _delegate(op_name: str):
    def method(self, *args):
        return getattr(self.value(), op_name)(*args)
    method.__name__ = op_name
    return method


def delegate_operators(cls) -> None:
    """Gives cls the Tensor operators, each applied to its value(), as a TF variable has them."""
    for name in _OPERATORS:
        setattr(cls, name, _delegate(name))


delegate_operators(Variable)


def _variable_to_tensor(v, dtype=None, name=None, as_ref=False):
    if dtype is not None and not dtypes.as_dtype(dtype) == v.dtype:
        raise ValueError(f"Incompatible type conversion requested to type '{dtypes.as_dtype(dtype).name}' for "
                         f"variable of type '{v.dtype.name}'")
    if as_ref:
        return v.handle
    return v.value()


register_tensor_conversion_function(Variable, _variable_to_tensor)


def is_resource_variable(x) -> bool:
    return getattr(x, "_is_resource_variable", False) is True


# -- collections ----------------------------------------------------------------------------------
@tf_export("global_variables")
def global_variables(scope=None) -> list:
    """tf.global_variables(scope=None): the GLOBAL_VARIABLES collection, filtered by scope."""
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


@tf_export("all_variables")
def all_variables() -> list:
    return global_variables()


@tf_export("local_variables")
def local_variables(scope=None) -> list:
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


@tf_export("trainable_variables")
def trainable_variables(scope=None) -> list:
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


@tf_export("model_variables")
def model_variables(scope=None) -> list:
    return get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES, scope)


@tf_export("moving_average_variables")
def moving_average_variables(scope=None) -> list:
    return get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


# -- initialization -------------------------------------------------------------------------------
def _group(ops: list, name: str) -> Operation:
    if ops:
        return group(*ops, name=name)
    return no_op(name=name)


@tf_export("initializers.variables", "initialize_variables", "variables_initializer")
def variables_initializer(var_list, name: str = "init") -> Operation:
    """tf.variables_initializer(var_list, name='init'): an op running every initializer in var_list."""
    return _group([v.initializer for v in var_list], name)


initialize_variables = variables_initializer


@tf_export("initializers.global_variables", "global_variables_initializer", "initialize_all_variables")
def global_variables_initializer() -> Operation:
    """tf.global_variables_initializer(): initializes GLOBAL_VARIABLES (op named 'init')."""
    return variables_initializer(global_variables())


@tf_export("initializers.local_variables", "initialize_local_variables", "local_variables_initializer")
def local_variables_initializer() -> Operation:
    """tf.local_variables_initializer(): initializes LOCAL_VARIABLES (op 'init', uniquified)."""
    return variables_initializer(local_variables())


initialize_all_variables = global_variables_initializer
initialize_local_variables = local_variables_initializer


@tf_export("report_uninitialized_variables")
def report_uninitialized_variables(var_list=None, name: str = "report_uninitialized_variables") -> Tensor:
    """tf.report_uninitialized_variables(var_list=None, name=...): 1-D string tensor of the names
    (without ':0') of the variables in var_list (default: global and local) not yet initialized."""
    if var_list is None:
        var_list = global_variables() + local_variables()
    var_list = list(var_list)
    g = get_default_graph()
    with g.name_scope(name) as scope:
        if not var_list:
            return constant([], dtype=dtypes.string, name="Const")
        flags = [var_is_initialized_op(v.handle) for v in var_list]
        names = [v.op.name for v in var_list]
        return g.create_op("_ReportUninitialized", flags, {"var_names": names}, name=scope).outputs[0]


@tf_export("assert_variables_initialized")
def assert_variables_initialized(var_list=None):
    """tf.assert_variables_initialized(var_list=None): an op failing with FailedPrecondition when
    any variable of var_list (default: all) is uninitialized."""
    if var_list is None:
        var_list = global_variables() + local_variables()
    g = get_default_graph()
    with g.name_scope("assert_variables_initialized"):
        reads = []
        for v in var_list:
            with colocated_with_handle(v.handle):
                reads.append(read_variable_op(v.handle, v.dtype).op)
        return _group(reads, "assert_variables_initialized")
