"""Resource-variable ops: VarHandleOp and the ops that read and update a variable's storage
(scatter updates live in scatter.py).

A variable is a `VariableResource` held by a task's ResourceManager under (container,
shared_name). `VarHandleOp` finds or creates it at plan time and outputs it as a `resource`
value; every other op here takes that handle as input 0 and is created colocated with it, so
handles never cross tasks. The stored array is read-only and a read hands it out itself; an
update replaces it, except that a sparse update writes its rows into it when nothing else holds
it (`VariableResource.updating`, TF's copy-on-write): a value already read, fetched or in flight
to another task never changes under its holder.

A variable placed on a GPU holds its value in that GPU's memory (its ops there are given their
values there by the executor's copy plan), so the kernels here are written against the array module
of the values they get (`as_array`, not np.asarray): the same code runs on numpy and CuPy arrays.
Resource handles are host values (TF's HostMemory("resource")).
"""
from __future__ import annotations

import contextlib
import sys
from typing import Optional

import numpy as np

import threading

from tensorweave.framework import dtypes, errors
from tensorweave.framework.func_graph import resolve_capture
from tensorweave.framework.graph import Operation, Tensor, get_default_graph
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.shapes import TensorShape, as_shape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import constant, expand_dims, reshape, size
from tensorweave.ops.helpers import TFNodes, array_module, make_op, np_dtype
from tensorweave.ops.registry import register, register_gpu


class VariableResource:
    """Storage of one variable, held by a task's ResourceManager. A value handed to a consumer (or
    to the transport, zero-copy) never changes under it: updates replace `value`, or write into it
    only while no one else holds it (`updating`)."""

    __slots__ = ("name", "dtype", "shape", "value", "lock")

    def __init__(self, name: str, dtype, shape):
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.value: Optional[np.ndarray] = None
        self.lock = threading.Lock()

    def read(self, op_name: str = None):
        v = self.value
        if v is _UPDATING:
            v = self.current()
        if v is None:
            raise errors.FailedPreconditionError(
                None, op_name,
                f"Attempting to use uninitialized value {self.name}\n\t [[node {op_name or self.name}]]")
        return v

    def current(self):
        """The stored array (None: uninitialized), once an update in place is done with it."""
        v = self.value
        if v is _UPDATING:
            with self.lock:   # (held by the update)
                v = self.value
        return v

    @contextlib.contextmanager
    def updating(self, op_name: str = None):
        """Yields a writable array of the value, stored when the block ends (restored if it raises):
        the stored array itself when nothing else holds it, else a copy (TF's PrepareToUpdateVariable
        copies a buffer whose refcount is not one). The caller holds `lock`; readers meanwhile wait
        for the block to end. A reference taken before the value is marked busy is counted here, so
        a consumer never sees its value change."""
        v = self.read(op_name)
        self.value = _UPDATING
        # (the references: `v` and getrefcount's argument; a view of v holds one too)
        alone = type(v) is np.ndarray and v.base is None and sys.getrefcount(v) == 2
        try:
            if alone:
                v.flags.writeable = True
            new = v if alone else v.copy()
            yield new
        except BaseException:
            if alone:
                v.flags.writeable = False
            self.value = v
            raise
        self.store(new)

    def store(self, value) -> None:
        """Replaces the value with `value`, frozen: the old array may still be in flight elsewhere.
        (A GPU's array has no read-only flag: no kernel writes into an input.)"""
        value = as_array(value)
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
        self.value = value


_UPDATING = object()   # VariableResource.value while an update writes into the array


def as_array(value, dtype=None):
    """np.asarray(value, dtype) that keeps a device array in its device's memory: a CuPy array
    stays one, and so does a stand-in GPU's array (an ndarray subclass)."""
    xp = array_module(value)
    return np.asanyarray(value, dtype) if xp is np else xp.asarray(value, dtype)


@contextlib.contextmanager
def locked(resources: list, use_locking: bool):
    """Holds the locks of `resources` (in a fixed order) when the op asked for use_locking."""
    if not use_locking:
        yield
        return
    ordered = sorted({id(r): r for r in resources}.values(), key=id)
    for r in ordered:
        r.lock.acquire()
    try:
        yield
    finally:
        for r in reversed(ordered):
            r.lock.release()


@contextlib.contextmanager
def colocated_with_handle(handle: Tensor):
    """Colocates ops created inside with the variable handle (when in the handle's graph), and
    with nothing else: an op using a handle runs where the variable lives, even when it is built
    inside another variable's colocation scope (Adam reads beta1_power while updating every var)."""
    g = get_default_graph()
    if handle.graph is g:
        with g.colocate_with(handle.op, ignore_existing=True):
            yield
    else:  # a function body capturing an outer handle: the capture decides placement
        yield


# -- shape/dtype helpers for handles ------------------------------------------------------------
def _var_handle_op(handle: Tensor) -> Optional[Operation]:
    """The VarHandleOp behind `handle` (through captures and Identity ops), when it is visible."""
    op = resolve_capture(handle).op
    while op.type == "Identity" and op.inputs:
        op = op.inputs[0].op
    return op if op.type == "VarHandleOp" else None


def handle_shape(handle: Tensor) -> TensorShape:
    """The static shape of the variable behind `handle`, when its VarHandleOp is visible."""
    op = _var_handle_op(handle)
    return as_shape(op.get_attr("shape")) if op is not None else unknown_shape()


def handle_dtype(handle: Tensor) -> Optional[dtypes.DType]:
    op = _var_handle_op(handle)
    return op.get_attr("dtype") if op is not None else None


def check_handle(op, dtype) -> None:
    h = op.inputs[0]
    if h.dtype is not dtypes.resource:
        raise ValueError(f"Input 'resource' of '{op.type}' Op has type {h.dtype.name} that does not match "
                         "expected type of resource.")
    hd = handle_dtype(h)
    if hd is not None and dtype is not None and hd != dtype:
        raise ValueError(f"Trying to access variable of dtype {dtypes.as_dtype(hd).name} with dtype "
                         f"{dtypes.as_dtype(dtype).name}")


def shape_str(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def frozen(value, np_dtype):
    """`value` as a read-only array of `np_dtype` in its own device's memory, copied unless it
    already is one (a GPU's array: always copied, it has no read-only flag)."""
    if isinstance(value, np.ndarray) and not value.flags.writeable and value.dtype == np_dtype:
        return value
    xp = array_module(value)
    if xp is not np:
        return xp.array(value, dtype=np_dtype)
    arr = np.array(value, dtype=np_dtype, subok=True)
    arr.flags.writeable = False
    return arr


def returning_variable(factory):
    """The kernel factory of an update on a resource variable (no output) as that of its TF 1 ref
    form (Apply*, Scatter*: ref_variables.py), which outputs its variable (TF's `output_ref`)."""
    def ref_factory(node, ctx):
        update = factory(node, ctx)

        def update_and_return(*inputs):
            update(*inputs)
            return inputs[0]
        return update_and_return
    return ref_factory


# -- VarHandleOp --------------------------------------------------------------------------------
def var_handle_op(dtype, shape, container: str = "", shared_name: str = "", name=None) -> Tensor:
    """The VarHandleOp of a variable (a `resource` tensor); `name` ending in '/' is verbatim."""
    g = get_default_graph()
    attrs = {"container": container if container is not None else g._container,
             "shared_name": shared_name, "dtype": dtypes.as_dtype(dtype), "shape": as_shape(shape)}
    op = g.create_op("VarHandleOp", [], attrs, name=name or "VarHandleOp")
    if not op.get_attr("shared_name"):
        op._attrs["shared_name"] = op.name
    return op.outputs[0]


def variable_kernel(node, ctx):
    """The kernel of VarHandleOp and of TF1's VariableV2: the variable of (container, shared_name or
    the node name), created uninitialized on first use."""
    dtype = dtypes.as_dtype(node.attr["dtype"])
    shape = node.attr.get("shape")
    container = node.attr.get("container") or ""
    shared = node.attr.get("shared_name") or node.name
    res = ctx.resources.lookup_or_create(container, shared, lambda: VariableResource(shared, dtype, shape))
    if not isinstance(res, VariableResource):
        raise errors.InvalidArgumentError(node, node.name, f"Resource {container}/{shared} is not a variable")
    if dtypes.as_dtype(res.dtype) != dtype:
        raise errors.InvalidArgumentError(
            node, node.name, f"Trying to share variable {shared} with dtype {dtype.name}, but it was created "
            f"with dtype {dtypes.as_dtype(res.dtype).name}")
    return lambda: res


register("VarHandleOp", lambda op: [(dtypes.resource, TensorShape([]))], variable_kernel,
         grad=None, stateful=True)
register_gpu("VarHandleOp", host_outputs=(0,))


# -- reading ------------------------------------------------------------------------------------
def read_variable_op(handle: Tensor, dtype, name=None) -> Tensor:
    """A fresh read of the variable's current value."""
    with colocated_with_handle(handle):
        return make_op("ReadVariableOp", [handle], {"dtype": dtypes.as_dtype(dtype)},
                       name=name or "ReadVariableOp").outputs[0]


def _read_infer(op):
    dtype = op.get_attr("dtype")
    check_handle(op, dtype)
    return [(dtype, handle_shape(op.inputs[0]))]


def _read_kernel(node, ctx):
    name = node.name
    return lambda res: res.read(name)


register("ReadVariableOp", _read_infer, _read_kernel, grad=lambda op, g: [g], stateful=True)
register_gpu("ReadVariableOp", host_inputs=(0,))


def variable_shape(handle: Tensor, out_type=dtypes.int32, name=None) -> Tensor:
    """The runtime shape of the variable behind `handle`."""
    with colocated_with_handle(handle):
        return make_op("VariableShape", [handle], {"out_type": dtypes.as_dtype(out_type)},
                       name=name or "VariableShape").outputs[0]


def _variable_shape_kernel(node, ctx):
    np_dt = dtypes.as_dtype(node.attr["out_type"]).as_numpy_dtype
    return lambda res: np.asarray(np.shape(res.read(node.name)), dtype=np_dt)


register("VariableShape", lambda op: [(op.get_attr("out_type"), TensorShape([handle_shape(op.inputs[0]).ndims]))],
         _variable_shape_kernel, grad=None, stateful=True)


def var_is_initialized_op(handle: Tensor, name=None) -> Tensor:
    with colocated_with_handle(handle):
        return make_op("VarIsInitializedOp", [handle], name=name or "VarIsInitializedOp").outputs[0]


register("VarIsInitializedOp", lambda op: [(dtypes.bool, TensorShape([]))],
         lambda node, ctx: (lambda res: np.bool_(res.value is not None)), grad=None, stateful=True)
register_gpu("VarIsInitializedOp", host_inputs=(0,), host_outputs=(0,))


def _destroy_kernel(node, ctx):
    def destroy(res):
        with res.lock:
            res.value = None
    return destroy


register("DestroyResourceOp", lambda op: [], _destroy_kernel, grad=None, stateful=True)
register_gpu("DestroyResourceOp", host_inputs=(0,))


# -- assignment ---------------------------------------------------------------------------------
def _assign_infer(op):
    check_handle(op, op.get_attr("dtype"))
    if op.inputs[1].dtype != op.get_attr("dtype"):
        raise ValueError(f"Input 'value' of '{op.type}' Op has type {op.inputs[1].dtype.name} that does not "
                         f"match expected type of {dtypes.as_dtype(op.get_attr('dtype')).name}")
    if op._attrs.get("validate_shape", True) or op.type != "AssignVariableOp":
        want = handle_shape(op.inputs[0])
        if not want.is_compatible_with(op.inputs[1].shape):
            raise ValueError(f"Shapes {want} and {op.inputs[1].shape} are incompatible")
    return []


def assign_variable_op(handle: Tensor, value: Tensor, validate_shape: bool = True, name=None):
    """AssignVariableOp. Like every write of a resource variable it holds the variable's lock (TF's
    kernels do; its OpDef has no use_locking)."""
    with colocated_with_handle(handle):
        return make_op("AssignVariableOp", [handle, value],
                       {"dtype": value.dtype, "validate_shape": bool(validate_shape)}, name=name or "AssignVariableOp")


def _assign_kernel(node, ctx):
    np_dt = np_dtype(node, "dtype")
    validate = node.attr.get("validate_shape", True)

    def assign(res, value):
        arr = frozen(value, np_dt)
        if validate:
            cur = res.current()
            want = cur.shape if cur is not None else res.shape
            if want is not None and (len(want) != arr.ndim or
                                     any(w is not None and w != a for w, a in zip(want, arr.shape))):
                raise errors.InvalidArgumentError(
                    node, node.name, f"Trying to assign to variable {res.name} with tensor with wrong shape. "
                    f"Expected {shape_str(want)} got {shape_str(arr.shape)}")
        with res.lock:
            res.value = arr
    return assign


register("AssignVariableOp", _assign_infer, _assign_kernel, grad=None, stateful=True)
register_gpu("AssignVariableOp", host_inputs=(0,))


def _update_kernel(fn):
    def factory(node, ctx):
        np_dt = np_dtype(node, "dtype")

        def update(res, delta):
            with res.lock:
                old = res.read(node.name)
                d = as_array(delta)
                if d.shape != old.shape:
                    raise errors.InvalidArgumentError(
                        node, node.name, f"Cannot update variable with shape {shape_str(old.shape)} using a "
                        f"Tensor with shape {shape_str(d.shape)}, shapes must be equal.")
                res.store(as_array(fn(old, d), np_dt))
        return update
    return factory


def _update_op(op_type):
    def make(handle, value, name=None):
        with colocated_with_handle(handle):
            return make_op(op_type, [handle, value], {"dtype": value.dtype}, name=name or op_type)
    return make


register("AssignAddVariableOp", _assign_infer, _update_kernel(np.add), grad=None, stateful=True)
register("AssignSubVariableOp", _assign_infer, _update_kernel(np.subtract), grad=None, stateful=True)
register_gpu("AssignAddVariableOp", "AssignSubVariableOp", host_inputs=(0,))
assign_add_variable_op = _update_op("AssignAddVariableOp")
assign_sub_variable_op = _update_op("AssignSubVariableOp")


def check_indices(node, idx: np.ndarray, limit: int) -> None:
    """InvalidArgumentError naming the first index outside [0, limit)."""
    if idx.size and (idx.min() < 0 or idx.max() >= limit):
        flat = idx.reshape(-1)
        bad = int(np.flatnonzero((flat < 0) | (flat >= limit))[0])
        pos = np.unravel_index(bad, idx.shape)
        raise errors.InvalidArgumentError(
            node, node.name, f"indices{list(int(p) for p in pos)} = {int(flat[bad])} is not in [0, {limit})")


# -- sparse reads ------------------------------------------------------------------------------
def resource_gather(handle: Tensor, indices, dtype, batch_dims: int = 0, validate_indices: bool = True,
                    name=None) -> Tensor:
    """Rows `indices` of the variable behind `handle` (reads only those rows)."""
    indices = convert_to_tensor(indices)
    with colocated_with_handle(handle):
        return make_op("ResourceGather", [handle, indices],
                       {"dtype": dtypes.as_dtype(dtype), "Tindices": indices.dtype, "batch_dims": batch_dims,
                       "validate_indices": validate_indices}, name=name or "ResourceGather").outputs[0]


def _gather_infer(op):
    check_handle(op, op.get_attr("dtype"))
    var_shape = handle_shape(op.inputs[0])
    if not op.inputs[1].dtype.is_integer:
        raise ValueError(f"Value passed to parameter 'indices' has DataType {op.inputs[1].dtype.name} not in "
                         "list of allowed values: int32, int64")
    if var_shape.ndims is None:
        return [(op.get_attr("dtype"), unknown_shape())]
    return [(op.get_attr("dtype"), op.inputs[1].shape.concatenate(var_shape[1:]))]


def _gather_kernel(node, ctx):
    def gather(res, indices):
        value = res.read(node.name)
        idx = np.asarray(indices)   # (host memory on a GPU too: checked here)
        check_indices(node, idx, value.shape[0])
        return value.take(array_module(value).asarray(idx), axis=0)
    return gather


def _gather_grad(op, grad):
    handle, indices = op.inputs
    static = handle_shape(handle)
    if static.is_fully_defined():
        params_shape = constant(static.as_list(), dtype=dtypes.int32)
        tail = static.as_list()[1:]
        values_shape = concat([expand_dims(size(indices), 0), constant(tail, dtype=dtypes.int32)], 0)
    else:
        params_shape = variable_shape(handle)
        values_shape = concat([expand_dims(size(indices), 0), params_shape[1:]], 0)
    values = reshape(grad, values_shape)
    flat_indices = reshape(indices, expand_dims(size(indices), 0))
    return [IndexedSlices(values, flat_indices, params_shape), None]


register("ResourceGather", _gather_infer, _gather_kernel, grad=_gather_grad, stateful=True)
register_gpu("ResourceGather", host_inputs=(0, 1))


# -- counters and helpers for tf.Variable ---------------------------------------------------------
def count_up_to_kernel(node, ctx):
    limit = node.attr["limit"]
    np_dt = dtypes.as_dtype(node.attr["T"]).as_numpy_dtype

    def count(res):
        with res.lock:
            old = res.read(node.name)
            if old >= limit:
                raise errors.OutOfRangeError(node, node.name, f"Reached limit of {limit}")
            res.store(np.asarray(old + 1, dtype=np_dt))
        return old
    return count


register("ResourceCountUpTo", lambda op: [(op.get_attr("T"), handle_shape(op.inputs[0]))],
         count_up_to_kernel, grad=None, stateful=True)


def _value_or_initial_kernel(node, ctx):
    def value_or_initial(res, initial):
        value = res.current()
        return initial if value is None else value
    return value_or_initial


def _value_or_initial_tf(op) -> list:
    """TF 1's cond for initialized_value: Switch the handle and the initial value on
    VarIsInitializedOp, read the variable on the true side, Merge."""
    b, dtype = TFNodes(op), op.inputs[1].dtype
    initialized = b.node("is_initialized", "VarIsInitializedOp", [b.input(0)])
    handle = b.node("switch_handle", "Switch", [b.input(0), initialized], T=dtypes.resource)
    value = b.node("read", "ReadVariableOp", [handle + ":1"], dtype=dtype)
    initial = b.node("switch_initial", "Switch", [b.input(1), initialized], T=dtype)
    b.node(None, "Merge", [initial, value], T=dtype, N=2)
    return b.nodes


# Variable.initialized_value(): the value when initialized, else the initial value (TF builds a
# cond for this; one op evaluates the same way without a control-flow dependency).
register("_VariableValueOrInitial", lambda op: [(op.inputs[1].dtype, op.inputs[1].shape)],
         _value_or_initial_kernel, grad=None, stateful=True, tf_lowering=_value_or_initial_tf)


def _report_kernel(node, ctx):
    names = [n.encode() if isinstance(n, str) else n for n in node.attr["var_names"]]

    def report(*flags):
        out = np.empty(sum(1 for f in flags if not f), dtype=object)
        out[:] = [n for n, f in zip(names, flags) if not f]
        return out
    return report


def _report_tf(op) -> list:
    """TF's report_uninitialized_variables: the names masked by the negated flags."""
    b, int32 = TFNodes(op), dtypes.int32
    stacked = b.node("initialized", "Pack", [b.input(i) for i in range(len(op.inputs))], N=len(op.inputs),
                     T=dtypes.bool, axis=0)
    positions = b.node("positions", "Where", [b.node("uninitialized", "LogicalNot", [stacked])], T=dtypes.bool)
    flat = b.node("flat_positions", "Reshape", [positions, b.const("flat", [-1], int32)], T=dtypes.int64,
                  Tshape=int32)
    names = b.const("names", [n.encode() if isinstance(n, str) else n for n in op.get_attr("var_names")],
                    dtypes.string)
    b.node(None, "GatherV2", [names, flat, b.const("axis", 0, int32)], Tparams=dtypes.string, Tindices=dtypes.int64,
           Taxis=int32)
    return b.nodes


register("_ReportUninitialized", lambda op: [(dtypes.string, TensorShape([None]))], _report_kernel,
         grad=None, tf_lowering=_report_tf)


# -- TF1 module-level functions on variables ------------------------------------------------------
def variable_method(ref, method: str):
    """ref.<method>, or TF's TypeError when `ref` is not a variable."""
    if not hasattr(ref, method):
        raise TypeError(f"'ref' must be a Variable, got {type(ref).__name__}")
    return getattr(ref, method)


@tf_export("assign")
def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    """tf.assign(ref, value, validate_shape=None, use_locking=None, name=None): the new value."""
    return variable_method(ref, "assign")(value, use_locking=use_locking, name=name or "Assign",
                                           _validate_shape=validate_shape)


@tf_export("assign_add")
def assign_add(ref, value, use_locking=None, name=None):
    """tf.assign_add(ref, value, use_locking=None, name=None): ref += value; the new value."""
    return variable_method(ref, "assign_add")(value, use_locking=use_locking, name=name or "AssignAdd")


@tf_export("assign_sub")
def assign_sub(ref, value, use_locking=None, name=None):
    """tf.assign_sub(ref, value, use_locking=None, name=None): ref -= value; the new value."""
    return variable_method(ref, "assign_sub")(value, use_locking=use_locking, name=name or "AssignSub")


@tf_export("count_up_to")
def count_up_to(ref, limit, name=None):
    """tf.count_up_to(ref, limit, name=None): increments ref, returning its old value; OutOfRange at limit."""
    return ref.count_up_to(limit, name=name)


@tf_export("is_variable_initialized")
def is_variable_initialized(variable):
    """tf.is_variable_initialized(variable): a bool scalar tensor."""
    with get_default_graph().name_scope(variable.op.name + "/IsInitialized/"):
        return var_is_initialized_op(variable.handle)
