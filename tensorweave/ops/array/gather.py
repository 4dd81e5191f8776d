"""Array ops that pick elements by index: gather, scatter_nd, tensor_scatter_*, one_hot (gather_nd:
math/array_composites.py)."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value_as_shape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import index_tensor
from tensorweave.ops.helpers import INDEX, array_module, check_axis, check_output_size, invalid, make_op, static_int
from tensorweave.ops.registry import register, register_gpu



# -- GatherV2 ----------------------------------------------------------------------------------
@tf_export("gather")
def gather(params, indices, validate_indices=None, name=None, axis=None, batch_dims: int = 0) -> Tensor:
    """tf.gather(params, indices, validate_indices=None, name=None, axis=None, batch_dims=0):
    slices of `params` along `axis` (default 0) at `indices`. An index out of range is
    InvalidArgumentError on the CPU and a slice of zeros on a GPU, as TF's kernels."""
    params = convert_to_tensor(params)
    indices = convert_to_tensor(indices)
    axis_t = index_tensor(0 if axis is None else axis, dtype=indices.dtype if not isinstance(axis, Tensor) else None)
    return make_op("GatherV2", [params, indices, axis_t], {"batch_dims": int(batch_dims)},
                   name=name or "GatherV2").outputs[0]


def _gather_infer(op):
    p, i, a = op.inputs
    bd = op.get_attr("batch_dims")
    axis = static_int(a)
    if axis is None or p.shape.ndims is None or i.shape.ndims is None:
        return [(p.dtype, unknown_shape())]
    ax = check_axis(axis, p.shape.ndims, "GatherV2")
    if bd < 0:
        bd += i.shape.ndims
    if bd > ax:
        raise ValueError(f"GatherV2: batch_dims ({bd}) must be less than or equal to axis ({ax})")
    pd, idd = p.shape.as_tuple_or_none(), i.shape.as_tuple_or_none()
    for k in range(bd):
        if pd[k] is not None and idd[k] is not None and pd[k] != idd[k]:
            raise ValueError(f"GatherV2: params.shape[{k}] ({pd[k]}) and indices.shape[{k}] ({idd[k]}) must match "
                             f"for batch_dims {bd}; shapes {p.shape} and {i.shape}")
    return [(p.dtype, TensorShape(list(pd[:ax]) + list(idd[bd:]) + list(pd[ax + 1:])))]


def _take(node, x, idx, axis: int, what: str = "indices"):
    n, xp = x.shape[axis], array_module(x, idx)
    bad = (idx < 0) | (idx >= n)
    if xp is not np:   # TF's GPU kernel: zeros for indices out of range, no wait for the device to check them
        out = xp.take(x, xp.where(bad, 0, idx), axis=axis)
        bad = bad.reshape((1,) * axis + idx.shape + (1,) * (x.ndim - axis - 1))
        return xp.where(bad, 0, out).astype(x.dtype, copy=False)
    if bad.any():
        pos = [int(v) for v in np.argwhere(bad)[0]]
        where = ",".join(str(v) for v in pos)
        raise invalid(node, f"{what}[{where}] = {int(idx[tuple(pos)])} is not in [0, {n})")
    return np.take(x, idx, axis=axis)


def _gather_kernel(node, ctx):
    bd0 = int(node.attr.get("batch_dims", 0))

    def run(params, indices, axis):
        xp = array_module(params, indices)
        params, indices = xp.asarray(params), xp.asarray(indices)
        axis = int(axis)
        if not -params.ndim <= axis < params.ndim:
            raise invalid(node, f"Expected axis in the range [{-params.ndim}, {params.ndim}), but got {axis}")
        axis %= params.ndim
        bd = bd0 + indices.ndim if bd0 < 0 else bd0
        if bd == 0:
            return _take(node, params, indices, axis)
        batch = params.shape[:bd]
        if indices.shape[:bd] != batch:
            raise invalid(node, f"params.shape[:{bd}] {list(batch)} must equal indices.shape[:{bd}] "
                                f"{list(indices.shape[:bd])}")
        p2 = params.reshape((-1,) + params.shape[bd:])
        i2 = indices.reshape((-1,) + indices.shape[bd:])
        parts = [_take(node, p2[k], i2[k], axis - bd) for k in range(p2.shape[0])]
        out_tail = params.shape[bd:axis] + indices.shape[bd:] + params.shape[axis + 1:]
        out = xp.stack(parts) if parts else xp.zeros((0,) + out_tail, params.dtype)
        return out.reshape(batch + out_tail)
    return run


register("GatherV2", _gather_infer, _gather_kernel, dtypes={1: ("indices", INDEX)})   # gradient: array_grad.py
register_gpu("GatherV2", host_inputs=(2,))


# -- ScatterNd (GatherNd, whose batch form needs math ops: math/array_composites.py) -----------
def nd_positions(node, idx: np.ndarray, dims: tuple, what: str) -> tuple:
    """The positions the rows of index array `idx` name in an array of shape `dims` (GatherNd,
    ScatterNd and TensorScatter* kernels); InvalidArgumentError for one outside it."""
    k, xp = idx.shape[-1], array_module(idx)
    flat = idx.reshape(-1, k)
    bad = (flat < 0) | (flat >= xp.asarray(dims[:k], dtype=np.int64))
    if bad.any():   # (on a GPU, one wait for the device)
        r = int(xp.argwhere(bad.any(axis=1))[0][0])
        raise invalid(node, f"indices[{r}] = {flat[r].tolist()} does not index into {what} {list(dims)}")
    return tuple(flat.T)


@tf_export("manip.scatter_nd", "scatter_nd")
def scatter_nd(indices, updates, shape, name=None) -> Tensor:
    """tf.scatter_nd(indices, updates, shape, name=None): a zero tensor of `shape` with `updates`
    added at `indices` (duplicates sum)."""
    indices = convert_to_tensor(indices)
    updates = convert_to_tensor(updates)
    shape_t = index_tensor(shape, dtype=indices.dtype if not isinstance(shape, Tensor) else None)
    return make_op("ScatterNd", [indices, updates, shape_t], name=name or "ScatterNd").outputs[0]


def _scatter_nd_infer(op):
    i, u, s = op.inputs
    out = constant_value_as_shape(s)
    if i.shape.ndims is not None and i.shape.ndims >= 1 and i.shape[-1].value is not None and out.ndims is not None:
        k = i.shape[-1].value
        if k > out.ndims:
            raise ValueError(f"ScatterNd: the inner {k} dimensions of indices exceed the output rank {out.ndims}")
        expected = i.shape[:-1].concatenate(out[k:])
        if not u.shape.is_compatible_with(expected):
            raise ValueError(f"ScatterNd: updates shape {u.shape} must be indices.shape[:-1] + shape[{k}:] = "
                             f"{expected}")
    check_output_size(op, out)
    return [(u.dtype, out)]


def _scatter_nd_kernel(node, ctx):
    def run(indices, updates, shp):
        xp = array_module(indices, updates)
        indices, updates = xp.asarray(indices), xp.asarray(updates)
        dims = tuple(int(v) for v in np.reshape(shp, -1))
        k = indices.shape[-1]
        want = indices.shape[:-1] + dims[k:]
        if updates.shape != want:
            raise invalid(node, f"updates shape {list(updates.shape)} must be {list(want)}")
        check_output_size(node, dims)
        out = xp.zeros(dims, dtype=updates.dtype)
        pos = nd_positions(node, indices, dims, "shape")
        xp.add.at(out, pos, updates.reshape((-1,) + dims[k:]))
        return out
    return run


register("ScatterNd", _scatter_nd_infer, _scatter_nd_kernel, dtypes={0: ("indices", INDEX)})   # gradient: array_grad.py
register_gpu("ScatterNd", host_inputs=(2,))


# -- TensorScatterUpdate / Add / Sub -----------------------------------------------------------
def _tensor_scatter(op_type: str, tensor, indices, updates, name) -> Tensor:
    tensor = convert_to_tensor(tensor, name="tensor")
    indices = convert_to_tensor(indices, name="indices")
    updates = convert_to_tensor(updates, dtype=tensor.dtype, name="updates")
    return make_op(op_type, [tensor, indices, updates], {"T": tensor.dtype, "Tindices": indices.dtype},
                   name=name or op_type).outputs[0]


@tf_export("tensor_scatter_update", "tensor_scatter_nd_update")
def tensor_scatter_update(tensor, indices, updates, name=None) -> Tensor:
    """tf.tensor_scatter_update(tensor, indices, updates, name=None): a copy of `tensor` with the
    slices at `indices` (as scatter_nd's) replaced by `updates`."""
    return _tensor_scatter("TensorScatterUpdate", tensor, indices, updates, name)


@tf_export("tensor_scatter_add", "tensor_scatter_nd_add")
def tensor_scatter_add(tensor, indices, updates, name=None) -> Tensor:
    """tf.tensor_scatter_add(tensor, indices, updates, name=None): `tensor` with `updates` added at
    `indices` (duplicates add up)."""
    return _tensor_scatter("TensorScatterAdd", tensor, indices, updates, name)


@tf_export("tensor_scatter_sub", "tensor_scatter_nd_sub")
def tensor_scatter_sub(tensor, indices, updates, name=None) -> Tensor:
    """tf.tensor_scatter_sub(tensor, indices, updates, name=None): `tensor` with `updates`
    subtracted at `indices`."""
    return _tensor_scatter("TensorScatterSub", tensor, indices, updates, name)


@tf_export("tensor_scatter_nd_min")
def tensor_scatter_nd_min(tensor, indices, updates, name=None) -> Tensor:
    """tf.tensor_scatter_nd_min(tensor, indices, updates, name=None): `tensor` with each slice at
    `indices` replaced by its elementwise minimum with `updates`."""
    return _tensor_scatter("TensorScatterMin", tensor, indices, updates, name)


@tf_export("tensor_scatter_nd_max")
def tensor_scatter_nd_max(tensor, indices, updates, name=None) -> Tensor:
    """tf.tensor_scatter_nd_max(tensor, indices, updates, name=None): `tensor` with each slice at
    `indices` replaced by its elementwise maximum with `updates`."""
    return _tensor_scatter("TensorScatterMax", tensor, indices, updates, name)


def _tensor_scatter_infer(op):
    t, i, u = op.inputs
    if i.shape.ndims is not None and i.shape.ndims >= 1 and i.shape[-1].value is not None and t.shape.ndims is not None:
        k = i.shape[-1].value
        if k > t.shape.ndims:
            raise ValueError(f"{op.type}: the inner {k} dimensions of indices exceed the tensor's rank {t.shape.ndims}")
        expected = i.shape[:-1].concatenate(t.shape[k:])
        if not u.shape.is_compatible_with(expected):
            raise ValueError(f"{op.type}: updates shape {u.shape} must be indices.shape[:-1] + tensor.shape[{k}:] = "
                             f"{expected}")
    return [(t.dtype, t.shape)]


def _tensor_scatter_kernel(how: str):
    def factory(node, ctx):
        def run(tensor, indices, updates):
            xp = array_module(tensor, indices, updates)
            tensor, indices, updates = xp.asarray(tensor), xp.asarray(indices), xp.asarray(updates)
            dims = tensor.shape
            k = indices.shape[-1]
            want = indices.shape[:-1] + dims[k:]
            if updates.shape != want:
                raise invalid(node, f"updates shape {list(updates.shape)} must be {list(want)}")
            out = xp.array(tensor, copy=True)
            pos = nd_positions(node, indices, dims, "tensor")
            rows = updates.reshape((-1,) + dims[k:])
            if how == "update":
                out[pos] = rows
            elif how in ("min", "max"):
                (xp.minimum if how == "min" else xp.maximum).at(out, pos, rows)
            else:
                xp.add.at(out, pos, rows if how == "add" else -rows)
            return out
        return run
    return factory


for _how in ("update", "add", "sub", "min", "max"):
    register("TensorScatter" + _how.capitalize(), _tensor_scatter_infer, _tensor_scatter_kernel(_how),
             dtypes={1: ("indices", INDEX)})   # gradient: array_grad.py
    register_gpu("TensorScatter" + _how.capitalize())


# -- OneHot ------------------------------------------------------------------------------------
@tf_export("one_hot")
def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None) -> Tensor:
    """tf.one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    on_value where the new `axis` (default last) equals the index, off_value elsewhere; indices
    outside [0, depth) give all-off rows. The dtype comes from `dtype`, else on/off_value, else float32."""
    with name_scope(name, "one_hot") as scope:
        on_dt = on_value.dtype if isinstance(on_value, Tensor) else (
            dtypes.dtype_of_value(on_value) if on_value is not None else None)
        off_dt = off_value.dtype if isinstance(off_value, Tensor) else (
            dtypes.dtype_of_value(off_value) if off_value is not None else None)
        if dtype is not None:
            dtype = dtypes.as_dtype(dtype)
            for given, dt in ((on_value, on_dt), (off_value, off_dt)):
                if isinstance(given, Tensor) and dt != dtype:
                    raise TypeError(f"one_hot: dtype {dt.name} of on/off_value does not match dtype parameter "
                                    f"({dtype.name})")
        elif isinstance(on_value, Tensor) or isinstance(off_value, Tensor):
            dtype = on_dt if isinstance(on_value, Tensor) else off_dt
        else:
            dtype = on_dt or off_dt or dtypes.float32
        if isinstance(on_value, Tensor) and isinstance(off_value, Tensor) and on_dt != off_dt:
            raise TypeError(f"one_hot: dtype of on_value ({on_dt.name}) and off_value ({off_dt.name}) must match")
        one = True if dtype.is_bool else 1
        zero = False if dtype.is_bool else 0
        on_t = convert_to_tensor(one if on_value is None else on_value, dtype=dtype, name="on_value")
        off_t = convert_to_tensor(zero if off_value is None else off_value, dtype=dtype, name="off_value")
        indices = convert_to_tensor(indices, name="indices")
        depth_t = convert_to_tensor(depth, dtype=dtypes.int32, name="depth") if not isinstance(depth, Tensor) else depth
        return make_op("OneHot", [indices, depth_t, on_t, off_t], {"axis": -1 if axis is None else int(axis)},
                       name=scope).outputs[0]


def _one_hot_infer(op):
    i, d, on, off = op.inputs
    axis = op.get_attr("axis")
    depth = static_int(d)
    if depth is not None and depth < 0:
        raise ValueError(f"OneHot: depth must be non-negative, got {depth}")
    if i.shape.ndims is None:
        return [(on.dtype, unknown_shape())]
    nd = i.shape.ndims
    if not -1 <= axis <= nd:
        raise ValueError(f"OneHot: expected axis to be -1 or between [0, {nd}].  But received: {axis}")
    dims = list(i.shape.as_tuple_or_none())
    dims.insert(nd if axis == -1 else axis, depth)
    check_output_size(op, dims)
    return [(on.dtype, TensorShape(dims))]


def _one_hot_kernel(node, ctx):
    axis = node.attr["axis"]

    def run(indices, depth, on, off):
        xp = array_module(indices, on, off)
        indices, on = xp.asarray(indices), xp.asarray(on)
        depth = int(depth)
        if depth < 0:
            raise invalid(node, f"depth must be non-negative, got: {depth}")
        check_output_size(node, list(indices.shape) + [depth])
        hot = indices[..., None] == xp.arange(depth, dtype=np.int64)
        out = xp.where(hot, on, off).astype(on.dtype)
        return out if axis == -1 else xp.moveaxis(out, -1, axis)
    return run


register("OneHot", _one_hot_infer, _one_hot_kernel, grad=None,
         dtypes={0: ("indices", (dtypes.uint8, dtypes.int32, dtypes.int64))})
register_gpu("OneHot", host_inputs=(1,))


# -- UnravelIndex ------------------------------------------------------------------------------
def _unravel_infer(op):
    indices, dims = op.inputs
    if indices.shape.ndims not in (None, 0, 1):
        raise ValueError(f"Shape must be at most rank 1 but is rank {indices.shape.ndims} for 'indices'")
    if dims.shape.ndims not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {dims.shape.ndims} for 'dims'")
    n = dims.shape[0].value if dims.shape.ndims == 1 else None
    if indices.shape.ndims == 0:
        return [(indices.dtype, TensorShape([n]))]
    return [(indices.dtype, TensorShape([n, indices.shape[0].value if indices.shape.ndims == 1 else None])
             if indices.shape.ndims == 1 else TensorShape(None))]


def _unravel_kernel(node, ctx):
    def run(indices, dims):
        indices, dims = np.asarray(indices), np.asarray(dims)
        if dims.ndim != 1 or (dims <= 0).any():
            raise invalid(node, f"dims must be a vector of positive sizes, got {dims.tolist()}")
        size = int(np.prod(dims, dtype=np.int64))
        if indices.size and (indices.min() < 0 or indices.max() >= size):
            raise invalid(node, f"index is out of bound as with dims {dims.tolist()}: {indices.tolist()}")
        return np.asarray(np.unravel_index(indices, tuple(int(d) for d in dims)), dtype=indices.dtype)
    return run


register("UnravelIndex", _unravel_infer, _unravel_kernel, grad=None,
         dtypes={0: ("indices", INDEX), 1: ("dims", INDEX)})


@tf_export("unravel_index")
def unravel_index(indices, dims, name=None) -> Tensor:
    """tf.unravel_index(indices, dims, name=None): flat indices into an array of shape `dims` as
    coordinates: [len(dims)] for a scalar index, [len(dims), n] for n indices (numpy's
    unravel_index, stacked)."""
    indices = convert_to_tensor(indices, name="indices")
    dims = convert_to_tensor(dims, dtype=indices.dtype, name="dims")
    return make_op("UnravelIndex", [indices, dims], {"Tidx": indices.dtype}, name=name or "UnravelIndex").outputs[0]
