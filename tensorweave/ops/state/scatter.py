"""Sparse variable updates: scatter_update/add/sub/mul/div/max/min (rows by index) and
scatter_nd_update/add/sub (elements or slices by N-d index), on the resource variables of
variable_ops.py: same handle colocation; an update writes into the stored array only while nothing
else holds it (VariableResource.updating), else into a copy that replaces it.
ResourceScatterUpdate/Add/Sub and their ref forms also run on a GPU: the variable and the updates
in device memory, the indices in host memory (checked there, then copied to the device)."""
from __future__ import annotations

from functools import partial

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.api import name_scope
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import expand_dims, reshape, shape
from tensorweave.ops.array.pad import broadcast_to
from tensorweave.ops.helpers import accumulate_rows, array_module, make_op, np_dtype
from tensorweave.ops.math.binary import trunc_div
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.registry import OP_DEFS, kernel_for, register, register_gpu
from tensorweave.ops.state.variable_ops import (as_array, check_handle, check_indices, colocated_with_handle,
                                                handle_shape, returning_variable, shape_str, variable_method)


# -- rows by index ------------------------------------------------------------------------------
def _scatter_inputs(op, dtype):
    """(the variable's static shape, indices, updates) of a scatter op (inputs handle or TF 1 ref,
    indices, updates), after checking the handle and the updates against `dtype`."""
    idx, upd = op.inputs[1], op.inputs[2]
    if op.inputs[0].dtype is not dtypes.resource:   # a ref: the variable's tensor itself
        if upd.dtype != op.inputs[0].dtype:
            raise ValueError(f"Input 'updates' of '{op.type}' Op has type {upd.dtype.name} that does not match "
                             f"type {op.inputs[0].dtype.name} of argument 'ref'")
        return op.inputs[0].shape, idx, upd
    check_handle(op, dtype)
    if upd.dtype != dtype:
        raise ValueError(f"Input 'updates' of '{op.type}' Op has type {upd.dtype.name} that does not match "
                         f"expected type of {dtypes.as_dtype(dtype).name}")
    return handle_shape(op.inputs[0]), idx, upd


def _ref_output(op) -> list:
    """No output for a ResourceScatter* op; TF 1's Scatter* (on a ref) outputs its variable."""
    return [] if op.inputs[0].dtype is dtypes.resource else [(op.inputs[0].dtype, op.inputs[0].shape)]


def _scatter_infer(op):
    var_shape, idx, upd = _scatter_inputs(op, op._attrs.get("dtype", op._attrs.get("T")))
    if var_shape.ndims is not None and idx.shape.ndims is not None and upd.shape.ndims not in (None, 0):
        want = idx.shape.concatenate(var_shape[1:])
        if not want.is_compatible_with(upd.shape):
            raise ValueError(f"Shapes must be equal rank, or updates must be scalar: updates shape "
                             f"{upd.shape} vs indices.shape + params.shape[1:] {want}")
    return _ref_output(op)


def _set_at(array, index, values) -> None:
    xp = array_module(array)
    if xp is np:
        array[index] = values
        return
    # a GPU's writes to a repeated row land in any order: keep each row's last, which numpy writes last
    flat = index.reshape(-1)
    _, first_from_end = np.unique(flat[::-1], return_index=True)
    keep = flat.size - 1 - first_from_end
    if values.ndim:
        values = values.reshape((flat.size,) + values.shape[index.ndim:])[xp.asarray(keep)]
    array[xp.asarray(flat[keep])] = values


def _subtract_at(array, index, values) -> None:
    if array_module(array) is np:
        accumulate_rows(np.subtract, array, index, values)
    else:   # (CuPy's subtract.at takes integers only; a - b is a + -b exactly)
        accumulate_rows(np.add, array, index, -values)


# How update/add/sub write `values` at `index` (rows in host memory, or N-d positions) into the
# variable's array (on its device); add and subtract combine repeated indices as ufunc.at does.
_SCATTER_WRITES = {"update": _set_at, "add": partial(accumulate_rows, np.add), "sub": _subtract_at}


def _plain_write(mode: str):
    at = _SCATTER_WRITES[mode]
    return lambda node, new, idx, upd: at(new, idx, upd)


def _row_scatter_kernel(write):
    """Kernel factory of a ResourceScatter* op (rows by index): checks indices and updates against
    the variable, then write(node, new, idx, upd) applies them to the variable's array (or a copy
    of it, while another holds it: VariableResource.updating)."""
    def factory(node, ctx):
        np_dt = np_dtype(node, "dtype" if "dtype" in node.attr else "T")   # (a ref op's is T)

        def scatter(res, indices, updates):
            idx = np.asarray(indices)   # (host memory on a GPU too)
            upd = as_array(updates, np_dt)
            with res.lock:
                shape = res.read(node.name).shape
                check_indices(node, idx, shape[0] if shape else 0)
                want = idx.shape + shape[1:]
                if upd.ndim and upd.shape != want:
                    raise errors.InvalidArgumentError(
                        node, node.name, f"Must have updates.shape = indices.shape + params.shape[1:] or "
                        f"updates.shape = [], got updates.shape {shape_str(upd.shape)}, indices.shape "
                        f"{shape_str(idx.shape)}, params.shape {shape_str(shape)}")
                with res.updating(node.name) as new:
                    write(node, new, idx, upd)
        return scatter
    return factory


def _scatter_op(op_type):
    def make(handle, indices, updates, name=None):
        with colocated_with_handle(handle):
            return make_op(op_type, [handle, indices, updates], {"dtype": updates.dtype, "Tindices": indices.dtype},
                           name=name or op_type)
    return make


for _t, _m in (("ResourceScatterUpdate", "update"), ("ResourceScatterAdd", "add"), ("ResourceScatterSub", "sub")):
    register(_t, _scatter_infer, _row_scatter_kernel(_plain_write(_m)), grad=None, stateful=True)
    register_gpu(_t, host_inputs=(0, 1))
resource_scatter_update = _scatter_op("ResourceScatterUpdate")
resource_scatter_add = _scatter_op("ResourceScatterAdd")
resource_scatter_sub = _scatter_op("ResourceScatterSub")


def _combine(mode: str, np_dt):
    if mode == "mul":
        return np.multiply
    if mode == "div":
        return trunc_div if np.dtype(np_dt).kind in "iu" else np.divide
    if mode == "max":
        return np.maximum
    return np.minimum


def _apply_rows(new: np.ndarray, idx: np.ndarray, upd: np.ndarray, fn) -> None:
    """new[idx[i]] = fn(new[idx[i]], upd[i]) in order, so repeated indices combine."""
    rows = idx.reshape(-1)
    vals = np.broadcast_to(upd, idx.shape + new.shape[1:]).reshape((rows.size,) + new.shape[1:])
    for r, v in zip(rows, vals):
        new[r] = fn(new[r], v)


# -- ResourceScatterMul/Div/Max/Min -------------------------------------------------------------
def _combining_write(mode: str):
    """The write step of _row_scatter_kernel for mul/div/max/min (`upd` has the variable's dtype)."""
    def write(node, new, idx, upd):
        if mode == "div" and np.dtype(upd.dtype).kind in "iu" and np.any(upd == 0):
            raise errors.InvalidArgumentError(node, node.name, "Integer division by zero")
        _apply_rows(new, idx, upd, _combine(mode, upd.dtype))
    return write


for _t, _m in (("ResourceScatterMul", "mul"), ("ResourceScatterDiv", "div"), ("ResourceScatterMax", "max"),
               ("ResourceScatterMin", "min")):
    register(_t, _scatter_infer, _row_scatter_kernel(_combining_write(_m)), grad=None, stateful=True)


# -- ResourceScatterNdUpdate/Add/Sub ------------------------------------------------------------
def _scatter_nd_infer(op):
    var_shape, idx, upd = _scatter_inputs(op, op.get_attr("T"))
    if var_shape.ndims is not None and idx.shape.ndims is not None and idx.shape[-1].value is not None:
        k = idx.shape[-1].value
        if k > var_shape.ndims:
            raise ValueError(f"{op.type}: the last dimension of indices ({k}) must be <= the rank of ref "
                             f"({var_shape.ndims})")
        want = idx.shape[:-1].concatenate(var_shape[k:])
        if not want.is_compatible_with(upd.shape):
            raise ValueError(f"{op.type}: updates shape {upd.shape} must be indices.shape[:-1] + "
                             f"ref.shape[{k}:] = {want}")
    return _ref_output(op)


def _nd_scatter_kernel(mode: str):
    write = _SCATTER_WRITES[mode]

    def factory(node, ctx):
        np_dt = dtypes.as_dtype(node.attr["T"]).as_numpy_dtype

        def scatter(res, indices, updates):
            with res.lock:   # (whatever use_locking says: the update may write into the array)
                shape = res.read(node.name).shape
                idx = np.asarray(indices)
                upd = np.asarray(updates, dtype=np_dt)
                k = idx.shape[-1] if idx.ndim else 0
                if idx.ndim < 1 or k > len(shape):
                    raise errors.InvalidArgumentError(
                        node, node.name, f"Invalid indices shape {shape_str(idx.shape)} for ref of shape "
                        f"{shape_str(shape)}")
                want = idx.shape[:-1] + shape[k:]
                if upd.shape != want:
                    raise errors.InvalidArgumentError(
                        node, node.name, f"Must have updates.shape = indices.shape[:-1] + params_shape[{k}:], got "
                        f"updates.shape {shape_str(upd.shape)}, indices.shape {shape_str(idx.shape)}, "
                        f"params_shape {shape_str(shape)}")
                flat = idx.reshape(-1, k)
                limits = np.asarray(shape[:k], dtype=np.int64)
                bad = ((flat < 0) | (flat >= limits)).any(axis=1)
                if bad.any():
                    r = int(np.flatnonzero(bad)[0])
                    raise errors.InvalidArgumentError(
                        node, node.name, f"indices[{r}] = [{', '.join(str(int(v)) for v in flat[r])}] does not "
                        f"index into shape {shape_str(shape)}")
                pos = tuple(flat.T)
                vals = upd.reshape((flat.shape[0],) + shape[k:])
                with res.updating(node.name) as new:
                    write(new, pos, vals)
        return scatter
    return factory


for _t, _m in (("ResourceScatterNdUpdate", "update"), ("ResourceScatterNdAdd", "add"),
               ("ResourceScatterNdSub", "sub")):
    register(_t, _scatter_nd_infer, _nd_scatter_kernel(_m), grad=None, stateful=True)


def _nd_op(op_type):
    def make(handle, indices, updates, use_locking=True, name=None):
        with colocated_with_handle(handle):
            return make_op(op_type, [handle, indices, updates],
                           {"T": updates.dtype, "Tindices": indices.dtype, "use_locking": bool(use_locking)},
                           name=name or op_type)
    return make


resource_scatter_mul = _scatter_op("ResourceScatterMul")
resource_scatter_div = _scatter_op("ResourceScatterDiv")
resource_scatter_max = _scatter_op("ResourceScatterMax")
resource_scatter_min = _scatter_op("ResourceScatterMin")
resource_scatter_nd_update = _nd_op("ResourceScatterNdUpdate")
resource_scatter_nd_add = _nd_op("ResourceScatterNdAdd")
resource_scatter_nd_sub = _nd_op("ResourceScatterNdSub")


# TF 1's forms on ref variables (imported TF 1 graphs: sparse optimizer updates, embeddings), one
# kernel with the resource forms'
for _t in ("Update", "Add", "Sub", "Mul", "Div", "Max", "Min", "NdUpdate", "NdAdd", "NdSub"):
    _resource = OP_DEFS[f"ResourceScatter{_t}"]
    register(f"Scatter{_t}", _resource.infer, returning_variable(kernel_for(f"ResourceScatter{_t}")), grad=None,
             stateful=True, ref_inputs=(0,), ref_outputs=(0,))
    if _t in ("Update", "Add", "Sub"):
        register_gpu(f"Scatter{_t}", host_inputs=(1,))


# -- public TF1 functions ---------------------------------------------------------------------
@tf_export("scatter_mul")
def scatter_mul(ref, indices, updates, use_locking=False, name=None):
    """tf.scatter_mul(ref, indices, updates, use_locking=False, name=None): ref[indices] *= updates;
    the updated value."""
    return _scatter("scatter_mul", ref, indices, updates, use_locking, name or "ScatterMul")


@tf_export("scatter_div")
def scatter_div(ref, indices, updates, use_locking=False, name=None):
    """tf.scatter_div(ref, indices, updates, use_locking=False, name=None): ref[indices] /= updates."""
    return _scatter("scatter_div", ref, indices, updates, use_locking, name or "ScatterDiv")


@tf_export("scatter_max")
def scatter_max(ref, indices, updates, use_locking=False, name=None):
    """tf.scatter_max(ref, indices, updates, use_locking=False, name=None): ref[indices] =
    max(ref[indices], updates)."""
    return _scatter("scatter_max", ref, indices, updates, use_locking, name or "ScatterMax")


@tf_export("scatter_min")
def scatter_min(ref, indices, updates, use_locking=False, name=None):
    """tf.scatter_min(ref, indices, updates, use_locking=False, name=None): ref[indices] =
    min(ref[indices], updates)."""
    return _scatter("scatter_min", ref, indices, updates, use_locking, name or "ScatterMin")


def _scatter_nd(method, ref, indices, updates, use_locking, name):
    return variable_method(ref, method)(indices, updates, use_locking=use_locking, name=name)


@tf_export("scatter_nd_update")
def scatter_nd_update(ref, indices, updates, use_locking=True, name=None):
    """tf.scatter_nd_update(ref, indices, updates, use_locking=True, name=None): ref[indices[i]] =
    updates[i], where indices' last dimension indexes ref's leading dimensions."""
    return _scatter_nd("scatter_nd_update", ref, indices, updates, use_locking, name or "ScatterNdUpdate")


@tf_export("batch_scatter_update")
def batch_scatter_update(ref, indices, updates, use_locking=True, name=None):
    """tf.batch_scatter_update(ref, indices, updates, use_locking=True, name=None): scatter_update
    along the axis after the leading dimensions `ref`, `indices` and `updates` share:
    ref[i, ..., j, indices[i, ..., j, k]] = updates[i, ..., j, k]."""
    with name_scope(name, "BatchScatterUpdate", [ref, indices, updates]):
        indices = convert_to_tensor(indices, name="indices")
        rank = indices.shape.ndims
        if rank is None:
            raise ValueError("batch_scatter_update does not allow indices with unknown shape.")
        indices_shape = shape(indices, out_type=indices.dtype)
        coords_shape = concat([indices_shape, [1]], axis=0)
        # one coordinate per leading dimension (its own index, broadcast), then the indices
        coords = [broadcast_to(reshape(range_(indices_shape[d], dtype=indices.dtype),
                                       [-1 if i == d else 1 for i in range(rank + 1)]), coords_shape)
                  for d in range(rank - 1)]
        nd_indices = concat(coords + [expand_dims(indices, -1)], axis=-1)
        return scatter_nd_update(ref, nd_indices, updates, use_locking=use_locking)


@tf_export("scatter_nd_add")
def scatter_nd_add(ref, indices, updates, use_locking=False, name=None):
    """tf.scatter_nd_add(ref, indices, updates, use_locking=False, name=None): ref[indices[i]] +=
    updates[i] (duplicates sum)."""
    return _scatter_nd("scatter_nd_add", ref, indices, updates, use_locking, name or "ScatterNdAdd")


@tf_export("scatter_nd_sub")
def scatter_nd_sub(ref, indices, updates, use_locking=False, name=None):
    """tf.scatter_nd_sub(ref, indices, updates, use_locking=False, name=None): ref[indices[i]] -=
    updates[i]."""
    return _scatter_nd("scatter_nd_sub", ref, indices, updates, use_locking, name or "ScatterNdSub")


def _scatter(method, ref, indices, updates, use_locking, name):
    update = variable_method(ref, method)
    indices = convert_to_tensor(indices)
    updates = convert_to_tensor(updates, dtype=ref.dtype)
    return update(IndexedSlices(updates, indices), use_locking=use_locking, name=name)


@tf_export("scatter_update")
def scatter_update(ref, indices, updates, use_locking=True, name=None):
    """tf.scatter_update(ref, indices, updates, use_locking=True, name=None): ref[indices] = updates."""
    return _scatter("scatter_update", ref, indices, updates, use_locking, name or "ScatterUpdate")


@tf_export("scatter_add")
def scatter_add(ref, indices, updates, use_locking=False, name=None):
    """tf.scatter_add(ref, indices, updates, use_locking=False, name=None): ref[indices] += updates."""
    return _scatter("scatter_add", ref, indices, updates, use_locking, name or "ScatterAdd")


@tf_export("scatter_sub")
def scatter_sub(ref, indices, updates, use_locking=False, name=None):
    """tf.scatter_sub(ref, indices, updates, use_locking=False, name=None): ref[indices] -= updates."""
    return _scatter("scatter_sub", ref, indices, updates, use_locking, name or "ScatterSub")
