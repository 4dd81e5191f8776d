"""tf.variable_scope and tf.get_variable: variable sharing by name, with TF1's scoping rules.

Per-graph state lives in `graph._scope_state`: the variable store (full name -> Variable) and a
thread-local scope store (current VariableScope and how often each scope name was opened).
"""
from __future__ import annotations

import enum
import functools
import inspect
import threading
from typing import Optional

from tensorweave.framework import dtypes
from tensorweave.framework.api import GraphKeys, graph_from_inputs
from tensorweave.framework.func_graph import init_scope
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.shapes import as_shape
from tensorweave.framework.graph import Tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.slicing import slice as slice_
from tensorweave.ops.state.initializers import glorot_uniform_initializer, zeros_initializer
from tensorweave.ops.state.partitioned_variables import (PartitionedVariable, PartitionInfo, call_partitioner,
                                                         iter_slices, slice_dim_and_num_slices)
from tensorweave.ops.state.variable_ops import colocated_with_handle
from tensorweave.ops.state.variables import Variable, VariableAggregation, VariableSynchronization, sync_defaults


class _ReuseMode(enum.Enum):
    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE
tf_export("AUTO_REUSE")(AUTO_REUSE)


@tf_export("no_regularizer")
def no_regularizer(_):
    """Use this function to prevent regularization of variables."""
    return None


@tf_export("VariableScope")
class VariableScope:
    """tf.VariableScope: the defaults (initializer, regularizer, reuse, dtype, ...) that
    get_variable uses inside a variable_scope, and the scope's name."""

    def __init__(self, reuse, name: str = "", initializer=None, regularizer=None, caching_device=None,
                 partitioner=None, custom_getter=None, name_scope: str = "", dtype=dtypes.float32,
                 use_resource=None, constraint=None):
        self._name = name
        self._initializer = initializer
        self._regularizer = regularizer
        self._reuse = reuse
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._name_scope = name_scope
        self._dtype = dtype
        self._use_resource = use_resource
        self._constraint = constraint

    name = property(lambda self: self._name)
    original_name_scope = property(lambda self: self._name_scope)
    reuse = property(lambda self: self._reuse)
    initializer = property(lambda self: self._initializer)
    dtype = property(lambda self: self._dtype)
    use_resource = property(lambda self: self._use_resource)
    regularizer = property(lambda self: self._regularizer)
    caching_device = property(lambda self: self._caching_device)
    partitioner = property(lambda self: self._partitioner)
    custom_getter = property(lambda self: self._custom_getter)
    constraint = property(lambda self: self._constraint)

    def reuse_variables(self) -> None:
        self._reuse = True

    def set_initializer(self, initializer) -> None:
        self._initializer = initializer

    def set_dtype(self, dtype) -> None:
        self._dtype = dtype

    def set_use_resource(self, use_resource) -> None:
        self._use_resource = use_resource

    def set_regularizer(self, regularizer) -> None:
        self._regularizer = regularizer

    def set_caching_device(self, caching_device) -> None:
        self._caching_device = caching_device

    def set_partitioner(self, partitioner) -> None:
        self._partitioner = partitioner

    def set_custom_getter(self, custom_getter) -> None:
        self._custom_getter = custom_getter

    def get_collection(self, name) -> list:
        scope = self._name + "/" if self._name else ""
        return get_default_graph().get_collection(name, scope)

    def trainable_variables(self) -> list:
        return self.get_collection(GraphKeys.TRAINABLE_VARIABLES)

    def global_variables(self) -> list:
        return self.get_collection(GraphKeys.GLOBAL_VARIABLES)

    def local_variables(self) -> list:
        return self.get_collection(GraphKeys.LOCAL_VARIABLES)

    def get_variable(self, var_store, name, shape=None, dtype=None, initializer=None, regularizer=None,
                     reuse=None, trainable=None, collections=None, caching_device=None, partitioner=None,
                     validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                     synchronization=VariableSynchronization.AUTO, aggregation=VariableAggregation.NONE):
        if regularizer is None:
            regularizer = self._regularizer
        if caching_device is None:
            caching_device = self._caching_device
        if partitioner is None:
            partitioner = self._partitioner
        if custom_getter is None:
            custom_getter = self._custom_getter
        if reuse is None:
            reuse = self._reuse
        if use_resource is None:
            use_resource = self._use_resource
        full_name = self.name + "/" + name if self.name else name
        g = get_default_graph()
        # Variable names depend only on the variable scope, not on the name scope.
        with g.name_scope(None):
            if dtype is not None and initializer is not None and not callable(initializer):
                init_dtype = convert_to_tensor(initializer).dtype.base_dtype
                if init_dtype != dtypes.as_dtype(dtype):
                    raise ValueError(f"Initializer type '{init_dtype!r}' and explicit dtype "
                                     f"'{dtypes.as_dtype(dtype)!r}' don't match.")
            if initializer is None:
                initializer = self._initializer
            if constraint is None:
                constraint = self._constraint
            if dtype is None:
                dtype = self._dtype
            return var_store.get_variable(
                full_name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
                reuse=reuse, trainable=trainable, collections=collections, caching_device=caching_device,
                partitioner=partitioner, validate_shape=validate_shape, use_resource=use_resource,
                custom_getter=custom_getter, constraint=constraint, synchronization=synchronization,
                aggregation=aggregation)


def _accepts(fn, arg: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return arg in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _needs_no_arguments(fn) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return all(p.default is not inspect.Parameter.empty or
               p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
               for p in params.values())


class _VariableStore:
    """Variables created by get_variable in one graph, by full name."""

    def __init__(self):
        self._vars: dict = {}
        self._partitioned_vars: dict = {}

    def get_variable(self, name, shape=None, dtype=dtypes.float32, initializer=None, regularizer=None,
                     reuse=None, trainable=None, collections=None, caching_device=None, partitioner=None,
                     validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                     synchronization=VariableSynchronization.AUTO, aggregation=VariableAggregation.NONE):
        if custom_getter is not None and not callable(custom_getter):
            raise ValueError(f"Passed a custom_getter which is not callable: {custom_getter}")
        dtype = getattr(dtype, "base_dtype", dtype)

        def true_getter(name, shape=None, dtype=dtypes.float32, initializer=None, regularizer=None,
                        reuse=None, trainable=None, collections=None, caching_device=None, partitioner=None,
                        validate_shape=True, use_resource=None, constraint=None,
                        synchronization=VariableSynchronization.AUTO, aggregation=VariableAggregation.NONE):
            if partitioner is not None:
                if not callable(partitioner):
                    raise ValueError(f"Partitioner must be callable, but received: {partitioner}")
                return self._get_partitioned_variable(
                    name, partitioner, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
                    reuse=reuse, trainable=trainable, collections=collections, caching_device=caching_device,
                    validate_shape=validate_shape, constraint=constraint, synchronization=synchronization,
                    aggregation=aggregation)
            return self._get_single_variable(
                name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer, reuse=reuse,
                trainable=trainable, collections=collections, caching_device=caching_device,
                validate_shape=validate_shape, constraint=constraint, synchronization=synchronization,
                aggregation=aggregation)

        synchronization, aggregation, trainable = sync_defaults(synchronization, aggregation, trainable)
        kwargs = dict(name=name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
                      reuse=reuse, trainable=trainable, collections=collections, caching_device=caching_device,
                      partitioner=partitioner, validate_shape=validate_shape, use_resource=use_resource,
                      synchronization=synchronization, aggregation=aggregation)
        if custom_getter is not None:
            if _accepts(custom_getter, "constraint"):
                kwargs["constraint"] = constraint
            return custom_getter(getter=true_getter, **kwargs)
        return true_getter(constraint=constraint, **kwargs)

    def _get_partitioned_variable(self, name, partitioner, shape=None, dtype=dtypes.float32, initializer=None,
                                  regularizer=None, reuse=None, trainable=None, collections=None,
                                  caching_device=None, validate_shape=True, constraint=None,
                                  synchronization=VariableSynchronization.AUTO,
                                  aggregation=VariableAggregation.NONE) -> PartitionedVariable:
        """TF's rules for a partitioned get_variable: parts `name/part_i`, each with its slice info."""
        dtype = dtypes.as_dtype(dtype)
        from_tensor = isinstance(initializer, Tensor)
        if name in self._vars:
            raise ValueError(f"A partitioner was provided, but an unpartitioned version of the variable was found: "
                             f"{name}.  Perhaps a variable of the same name was already created without "
                             "partitioning?")
        shape = as_shape(shape)
        if from_tensor:
            shape = shape.merge_with(initializer.get_shape())
        partitions = call_partitioner(partitioner, shape, dtype)
        existing = self._partitioned_vars.get(name)
        if existing is not None:
            if reuse is False:
                raise ValueError(f"Partitioned variable with name {name} already exists. Did you mean to set "
                                 "reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
            if not shape.is_compatible_with(existing.get_shape()):
                raise ValueError(f"Trying to reuse partitioned variable {name}, but specified shape {shape} and "
                                 f"found shape {existing.get_shape()}.")
            if not dtype.is_compatible_with(existing.dtype):
                raise ValueError(f"Trying to reuse partitioned variable {name}, but specified dtype {dtype.name} "
                                 f"and found dtype {existing.dtype.name}.")
            if existing._get_partitions() != partitions:
                raise ValueError(f"Trying to reuse partitioned variable {name}, but specified partitions "
                                 f"{partitions} and found partitions {existing._get_partitions()}.")
            return existing
        if reuse is True:
            raise ValueError(f"PartitionedVariable {name} does not exist, or was not created with "
                             "tf.get_variable(). Did you mean to set reuse=False or reuse=tf.AUTO_REUSE in VarScope?")
        slice_dim, num_slices = slice_dim_and_num_slices(partitions)
        if f"{name}/part_0" in self._vars:
            raise ValueError(f"Partitioner returned a different partitioning than what was already found: "
                             f"{name}/part_0 exists as a variable of its own.")
        g = get_default_graph()
        parts = []
        for i, (offset, part_shape) in enumerate(iter_slices(shape.as_list(), num_slices, slice_dim)):
            part_name = f"{name}/part_{i}"
            init_shape = part_shape
            with g.name_scope(part_name + "/PartitionedInitializer"):
                if initializer is None:
                    init = _default_initializer(name, dtype)
                elif callable(initializer):
                    init = initializer
                elif from_tensor:
                    init, init_shape = slice_(initializer, offset, part_shape), None
                    dtype = init.dtype.base_dtype
                else:
                    init = slice_(convert_to_tensor(initializer, dtype=dtype), offset, part_shape)
                    init_shape = None
            with g.name_scope(None):
                v = self._get_single_variable(
                    part_name, shape=init_shape, dtype=dtype, initializer=init,
                    partition_info=PartitionInfo(shape.as_list(), offset), regularizer=regularizer, reuse=reuse,
                    trainable=trainable, collections=collections, caching_device=caching_device,
                    validate_shape=validate_shape, constraint=constraint, synchronization=synchronization,
                    aggregation=aggregation)
            v._set_save_slice_info(Variable.SaveSliceInfo(name, shape.as_list(), offset, part_shape))
            parts.append(v)
        pv = PartitionedVariable(name=name, shape=shape, dtype=dtype, variable_list=parts, partitions=partitions)
        self._partitioned_vars[name] = pv
        return pv

    def _get_single_variable(self, name, shape=None, dtype=dtypes.float32, initializer=None,
                             regularizer=None, reuse=None, trainable=None, collections=None,
                             caching_device=None, validate_shape=True, constraint=None,
                             synchronization=VariableSynchronization.AUTO,
                             aggregation=VariableAggregation.NONE, partition_info=None):
        initializing_from_value = initializer is not None and not callable(initializer)
        if shape is not None and initializing_from_value:
            raise ValueError("If initializer is a constant, do not specify shape.")
        dtype = dtypes.as_dtype(dtype)
        if shape is not None:
            shape = as_shape(shape)
        if name in self._vars:
            if reuse is False:
                raise ValueError(f"Variable {name} already exists, disallowed. Did you mean to set reuse=True "
                                 "or reuse=tf.AUTO_REUSE in VarScope?")
            found = self._vars[name]
            if shape is not None and not shape.is_compatible_with(found.get_shape()):
                raise ValueError(f"Trying to share variable {name}, but specified shape {shape} and found "
                                 f"shape {found.get_shape()}.")
            if not dtype.is_compatible_with(found.dtype):
                raise ValueError(f"Trying to share variable {name}, but specified dtype {dtype.name} and found "
                                 f"dtype {found.dtype.name}.")
            return found
        if reuse is True:
            raise ValueError(f"Variable {name} does not exist, or was not created with tf.get_variable(). "
                             "Did you mean to set reuse=tf.AUTO_REUSE in VarScope?")
        if initializer is None:
            if shape is None:
                raise ValueError(f"Variable {name} did not get an initializer, so its `shape` argument must "
                                 "be specified.")
            initializer = _default_initializer(name, dtype)
        g = get_default_graph()
        with g.control_dependencies(None):  # TF's init_scope
            if initializing_from_value:
                init_val, variable_dtype = initializer, None
            else:
                if inspect.isclass(initializer):
                    initializer = initializer()
                if shape is not None and shape.is_fully_defined():
                    if _accepts(initializer, "partition_info"):
                        init_val = functools.partial(initializer, shape.as_list(), dtype=dtype,
                                                     partition_info=partition_info)
                    else:
                        init_val = functools.partial(initializer, shape.as_list(), dtype=dtype)
                    variable_dtype = dtype.base_dtype
                elif _needs_no_arguments(initializer):
                    init_val, variable_dtype = initializer, None
                else:
                    raise ValueError("The initializer passed is not valid. It should be a callable with no "
                                     "arguments and the shape should not be provided or an instance of "
                                     "`tf.keras.initializers.*' and `shape` should be fully defined.")
            v = Variable(initial_value=init_val, name=name, trainable=trainable, collections=collections,
                         caching_device=caching_device, dtype=variable_dtype, validate_shape=validate_shape,
                         constraint=constraint, synchronization=synchronization, aggregation=aggregation,
                         shape=shape if validate_shape else None)
        self._vars[name] = v
        if regularizer:
            # in the outermost graph, as TF's init_scope: the loss of a variable made inside a loop
            # body must be usable outside it
            with init_scope(), colocated_with_handle(v.handle), get_default_graph().name_scope(name + "/Regularizer/"):
                loss = regularizer(v)
            if loss is not None:
                g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
        return v


def _default_initializer(name: str, dtype):
    if dtype.is_floating:
        return glorot_uniform_initializer()
    if dtype.is_integer or dtype.is_unsigned or dtype.is_bool or dtype == dtypes.string:
        return zeros_initializer()
    raise ValueError(f"An initializer for variable {name} of {dtype.base_dtype!r} is required")


class _VariableScopeStore(threading.local):
    """The current variable scope and scope-open counts, per thread."""

    def __init__(self):
        super().__init__()
        self.current_scope = VariableScope(False)
        self.variable_scopes_count: dict = {}

    def open_variable_scope(self, scope_name: str) -> None:
        self.variable_scopes_count[scope_name] = self.variable_scopes_count.get(scope_name, 0) + 1

    def close_variable_subscopes(self, scope_name: Optional[str]) -> None:
        prefix = None if scope_name is None else scope_name + "/"
        for k in self.variable_scopes_count:
            if prefix is None or k.startswith(prefix):
                self.variable_scopes_count[k] = 0

    def variable_scope_count(self, scope_name: str) -> int:
        return self.variable_scopes_count.get(scope_name, 0)


def _state(graph=None) -> dict:
    g = graph or get_default_graph()
    st = g._scope_state
    if "store" not in st:
        st["store"] = _VariableStore()
        st["scopes"] = _VariableScopeStore()
    return st


def _get_default_variable_store() -> _VariableStore:
    return _state()["store"]


def get_variable_scope_store() -> _VariableScopeStore:
    return _state()["scopes"]


@tf_export("get_variable_scope")
def get_variable_scope() -> VariableScope:
    """tf.get_variable_scope(): the current VariableScope."""
    return get_variable_scope_store().current_scope


@tf_export("get_variable")
def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None, trainable=None,
                 collections=None, caching_device=None, partitioner=None, validate_shape=True,
                 use_resource=None, custom_getter=None, constraint=None,
                 synchronization=VariableSynchronization.AUTO, aggregation=VariableAggregation.NONE):
    """tf.get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None, ...): the
    variable `scope/name`, created (default initializer: glorot_uniform for floats, zeros for
    ints) unless it exists and the scope reuses; TF's ValueErrors otherwise."""
    return get_variable_scope().get_variable(
        _get_default_variable_store(), name, shape=shape, dtype=dtype, initializer=initializer,
        regularizer=regularizer, trainable=trainable, collections=collections, caching_device=caching_device,
        partitioner=partitioner, validate_shape=validate_shape, use_resource=use_resource,
        custom_getter=custom_getter, constraint=constraint, synchronization=synchronization,
        aggregation=aggregation)


@tf_export("get_local_variable")
def get_local_variable(name, shape=None, dtype=None, initializer=None, regularizer=None, trainable=False,
                       collections=None, caching_device=None, partitioner=None, validate_shape=True,
                       use_resource=None, custom_getter=None, constraint=None,
                       synchronization=VariableSynchronization.AUTO, aggregation=VariableAggregation.NONE):
    """tf.get_local_variable: get_variable into LOCAL_VARIABLES, not trainable."""
    collections = list(collections or []) + [GraphKeys.LOCAL_VARIABLES]
    return get_variable(name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
                        trainable=False, collections=collections, caching_device=caching_device,
                        partitioner=partitioner, validate_shape=validate_shape, use_resource=use_resource,
                        custom_getter=custom_getter, constraint=constraint, synchronization=synchronization,
                        aggregation=aggregation)


def _maybe_wrap_custom_getter(custom_getter, old_getter):
    if old_getter is None:
        return custom_getter

    def wrapped_custom_getter(getter, *args, **kwargs):
        return custom_getter(functools.partial(old_getter, getter), *args, **kwargs)
    return wrapped_custom_getter


def _get_unique_variable_scope(prefix: str) -> str:
    store = get_variable_scope_store()
    current = get_variable_scope()
    name = current.name + "/" + prefix if current.name else prefix
    if store.variable_scope_count(name) == 0:
        return prefix
    idx = 1
    while store.variable_scope_count(f"{name}_{idx}") > 0:
        idx += 1
    return f"{prefix}_{idx}"


class _NameScope:
    """A re-enterable graph name scope (each entry opens a fresh, uniquified scope)."""

    def __init__(self, name):
        self._name = name
        self._stack: list = []

    def __enter__(self) -> str:
        cm = get_default_graph().name_scope(self._name)
        result = cm.__enter__()
        self._stack.append(cm)
        return result

    def __exit__(self, *exc):
        return self._stack.pop().__exit__(*exc)


class _pure_variable_scope:
    """Switches the current VariableScope (no name scope)."""

    def __init__(self, name_or_scope, reuse=None, initializer=None, regularizer=None, caching_device=None,
                 partitioner=None, custom_getter=None, old_name_scope=None, dtype=dtypes.float32,
                 use_resource=None, constraint=None):
        self._name_or_scope = name_or_scope
        self._reuse = reuse
        self._overrides = dict(initializer=initializer, regularizer=regularizer, caching_device=caching_device,
                               partitioner=partitioner, dtype=dtype, use_resource=use_resource)
        self._custom_getter = custom_getter
        self._old_name_scope = old_name_scope
        self._constraint = constraint
        self._var_scope_store = get_variable_scope_store()
        self._last = None
        if isinstance(name_or_scope, VariableScope):
            self._new_name = name_or_scope.name
            src = name_or_scope
            obj = VariableScope(src.reuse if not reuse else reuse, name=self._new_name,
                                initializer=src.initializer, regularizer=src.regularizer,
                                caching_device=src.caching_device, partitioner=src.partitioner, dtype=src.dtype,
                                custom_getter=src.custom_getter, name_scope=src._name_scope,
                                use_resource=src.use_resource, constraint=constraint)
            self._apply(obj, src.custom_getter)
            self._cached = obj

    def _apply(self, obj: VariableScope, old_getter) -> None:
        o = self._overrides
        for key in ("initializer", "regularizer", "caching_device", "partitioner", "dtype", "use_resource"):
            if o[key] is not None:
                getattr(obj, "set_" + key)(o[key])
        if self._custom_getter is not None:
            obj.set_custom_getter(_maybe_wrap_custom_getter(self._custom_getter, old_getter))

    def __enter__(self) -> VariableScope:
        store = self._var_scope_store
        self._old = store.current_scope
        if isinstance(self._name_or_scope, VariableScope):
            store.open_variable_scope(self._new_name)
            self._old_subscopes = dict(store.variable_scopes_count)
            obj = self._cached
        else:
            old = self._old
            self._new_name = old.name + "/" + self._name_or_scope if old.name else self._name_or_scope
            self._reuse = self._reuse or old.reuse  # reuse is inherited by sub-scopes
            name_scope = self._name_or_scope if self._old_name_scope is None else self._old_name_scope
            obj = VariableScope(self._reuse, name=self._new_name, initializer=old.initializer,
                                regularizer=old.regularizer, caching_device=old.caching_device,
                                partitioner=old.partitioner, dtype=old.dtype, use_resource=old.use_resource,
                                custom_getter=old.custom_getter, name_scope=name_scope,
                                constraint=self._constraint)
            self._apply(obj, old.custom_getter)
            store.open_variable_scope(self._new_name)
        store.current_scope = obj
        self._last = obj
        return obj

    def __exit__(self, *exc):
        store = self._var_scope_store
        if store.current_scope is not self._last:
            raise RuntimeError("Improper nesting of variable_scope.")
        if isinstance(self._name_or_scope, VariableScope):
            store.variable_scopes_count = self._old_subscopes
        else:
            store.close_variable_subscopes(self._new_name)
        store.current_scope = self._old


@tf_export("variable_scope")
class variable_scope:
    """tf.variable_scope(name_or_scope, default_name=None, values=None, initializer=None,
    regularizer=None, caching_device=None, partitioner=None, custom_getter=None, reuse=None,
    dtype=None, use_resource=None, constraint=None, auxiliary_name_scope=True).

    Opens variable scope `name_or_scope` (a string, or a VariableScope to re-enter) and a name
    scope of the same name; reuse True / AUTO_REUSE shares variables made by get_variable."""

    def __init__(self, name_or_scope, default_name=None, values=None, initializer=None, regularizer=None,
                 caching_device=None, partitioner=None, custom_getter=None, reuse=None, dtype=None,
                 use_resource=None, constraint=None, auxiliary_name_scope=True):
        self._name_or_scope = name_or_scope
        self._default_name = default_name
        self._kw = dict(initializer=initializer, regularizer=regularizer, caching_device=caching_device,
                        partitioner=partitioner, custom_getter=custom_getter, dtype=dtype,
                        use_resource=use_resource, constraint=constraint)
        if default_name is None and name_or_scope is None:
            raise TypeError("If default_name is None then name_or_scope is required")
        if reuse is False:  # non-inheriting scopes are not allowed: False means None here
            reuse = None
        if not (reuse is True or reuse is None or reuse is AUTO_REUSE):
            raise ValueError("The reuse parameter must be True or False or None.")
        self._reuse = reuse
        self._graph = graph_from_inputs(values)
        if not isinstance(auxiliary_name_scope, bool):
            raise TypeError(f"The auxiliary_name_scope must be `True` or `False`, while get {auxiliary_name_scope}")
        self._auxiliary_name_scope = auxiliary_name_scope
        self._cached_pure = None
        self._current_name_scope = None
        self._graph_cms: list = []

    def __enter__(self) -> VariableScope:
        cm = self._graph.as_default()
        cm.__enter__()
        self._graph_cms.append(cm)
        try:
            if self._cached_pure is not None:
                if self._current_name_scope is not None:
                    self._current_name_scope.__enter__()
                return self._cached_pure.__enter__()
            return self._enter_uncached()
        except BaseException:
            self._graph_cms.pop().__exit__(None, None, None)
            raise

    def _enter_uncached(self) -> VariableScope:
        current_name_scope = None
        if not self._auxiliary_name_scope:
            ns = get_default_graph().get_name_scope()
            current_name_scope = _NameScope(ns + "/" if ns else "")
        if self._name_or_scope is not None:
            if not isinstance(self._name_or_scope, (VariableScope, str)):
                raise TypeError("VariableScope: name_or_scope must be a string or VariableScope.")
            if isinstance(self._name_or_scope, str):
                name_scope = self._name_or_scope
            else:
                name_scope = self._name_or_scope.name.split("/")[-1]
            if name_scope or current_name_scope:
                current_name_scope = current_name_scope or _NameScope(name_scope)
                entered = current_name_scope.__enter__()
                self._current_name_scope = current_name_scope
                old_name_scope = (entered if isinstance(self._name_or_scope, str)
                                  else self._name_or_scope.original_name_scope)
                pure = _pure_variable_scope(self._name_or_scope, reuse=self._reuse,
                                            old_name_scope=old_name_scope, **self._kw)
            else:
                self._current_name_scope = None
                pure = _pure_variable_scope(self._name_or_scope, reuse=self._reuse, **self._kw)
        else:
            if self._reuse:
                raise ValueError("reuse=True cannot be used without a name_or_scope")
            current_name_scope = current_name_scope or _NameScope(self._default_name)
            entered = current_name_scope.__enter__()
            self._current_name_scope = current_name_scope
            unique = _get_unique_variable_scope(self._default_name)
            pure = _pure_variable_scope(unique, old_name_scope=entered, **self._kw)
        try:
            result = pure.__enter__()
        except BaseException:
            if self._current_name_scope is not None:
                self._current_name_scope.__exit__(None, None, None)
            raise
        self._cached_pure = pure
        return result

    def __exit__(self, *exc):
        try:
            self._cached_pure.__exit__(*exc)
        finally:
            try:
                if self._current_name_scope is not None:
                    self._current_name_scope.__exit__(*exc)
            finally:
                self._graph_cms.pop().__exit__(*exc)


@tf_export("variable_op_scope")
def variable_op_scope(values, name_or_scope, default_name=None, initializer=None, regularizer=None,
                      caching_device=None, partitioner=None, custom_getter=None, reuse=None, dtype=None,
                      use_resource=None, constraint=None):
    """Deprecated TF1 spelling of variable_scope(name_or_scope, default_name, values, ...)."""
    return variable_scope(name_or_scope, default_name=default_name, values=values, initializer=initializer,
                          regularizer=regularizer, caching_device=caching_device, partitioner=partitioner,
                          custom_getter=custom_getter, reuse=reuse, dtype=dtype, use_resource=use_resource,
                          constraint=constraint)


@tf_export("create_partitioned_variables")
def create_partitioned_variables(shape, slicing, initializer, dtype=dtypes.float32, trainable=True,
                                 collections=None, name=None, reuse=None) -> list:
    """tf.create_partitioned_variables(shape, slicing, initializer, dtype=tf.float32,
    trainable=True, collections=None, name=None, reuse=None): the part Variables of a
    variable of `shape` split as `slicing` says (deprecated TF1 API over get_variable)."""
    if len(shape) != len(slicing):
        raise ValueError(f"The 'shape' and 'slicing' of a partitioned Variable must have the length: "
                         f"shape: {shape}, slicing: {slicing}")
    if len(shape) < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1: shape: {shape}")
    partitioner = lambda **unused: list(slicing)  # noqa: E731
    with variable_scope(name, "PartitionedVariable", reuse=reuse):
        pv = get_variable("PartitionedVariable" if name is None else name.split("/")[-1], shape=shape,
                          dtype=dtype, initializer=initializer, trainable=trainable, partitioner=partitioner,
                          collections=collections)
    return list(pv)
