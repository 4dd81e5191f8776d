"""Array ops that split a tensor into partitions and interleave partitions back:
dynamic_partition, dynamic_stitch (and the ParallelDynamicStitch op their gradients use).
embedding_lookup over sharded params is built on them."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import array_module, check_output_size, invalid, make_op
from tensorweave.ops.registry import register, register_gpu



# -- DynamicPartition --------------------------------------------------------------------------
@tf_export("dynamic_partition")
def dynamic_partition(data, partitions, num_partitions, name=None) -> list:
    """tf.dynamic_partition(data, partitions, num_partitions, name=None): `num_partitions`
    tensors; output i holds the slices data[js] where partitions[js] == i, in order.
    `partitions` (int32) has a shape that is a prefix of data's shape."""
    data = convert_to_tensor(data, name="data")
    partitions = convert_to_tensor(partitions, dtype=dtypes.int32, name="partitions")
    if partitions.dtype != dtypes.int32:
        raise TypeError(f"Input 'partitions' of 'DynamicPartition' Op has type {partitions.dtype.name} that "
                        "does not match expected type of int32.")
    if not isinstance(num_partitions, (int, np.integer)) or num_partitions < 1:
        raise ValueError(f"DynamicPartition: num_partitions must be an int >= 1, got {num_partitions!r}")
    op = make_op("DynamicPartition", [data, partitions], {"num_partitions": int(num_partitions), "T": data.dtype},
                 name=name or "DynamicPartition")
    return list(op.outputs)


def _partition_infer(op):
    data, parts = op.inputs
    n = op.get_attr("num_partitions")
    if data.shape.ndims is None or parts.shape.ndims is None:
        out = unknown_shape()
    else:
        k = parts.shape.ndims
        if k > data.shape.ndims:
            raise ValueError(f"DynamicPartition: partitions has rank {k} but data has rank {data.shape.ndims}")
        for d_p, d_d in zip(parts.shape.as_tuple_or_none(), data.shape.as_tuple_or_none()[:k]):
            if d_p is not None and d_d is not None and d_p != d_d:
                raise ValueError(f"Dimensions must be equal, but are {d_d} and {d_p}: partitions.shape "
                                 f"{parts.shape} must be a prefix of data.shape {data.shape}")
        out = TensorShape([None] + list(data.shape.as_tuple_or_none()[k:]))
    return [(data.dtype, out)] * n


def _partition_kernel(node, ctx):
    n = int(node.attr["num_partitions"])

    def run(data, parts):
        xp = array_module(data, parts)
        data, parts = xp.asarray(data), xp.asarray(parts)
        if data.shape[:parts.ndim] != parts.shape:
            raise invalid(node, f"data.shape must start with partitions.shape, got data.shape = "
                                f"{list(data.shape)}, partitions.shape = {list(parts.shape)}")
        bad = (parts < 0) | (parts >= n)
        if bad.any():
            pos = [int(p) for p in xp.argwhere(bad)[0]]
            raise invalid(node, f"partitions[{','.join(str(p) for p in pos)}] = {int(parts[tuple(pos)])} "
                                f"is not in [0, {n})")
        flat_p = parts.reshape(-1)
        flat_d = data.reshape((flat_p.size,) + data.shape[parts.ndim:])
        return tuple(flat_d[flat_p == i] for i in range(n))
    return run


register("DynamicPartition", _partition_infer, _partition_kernel)   # gradient: array_grad.py
register_gpu("DynamicPartition")   # (each partition's size: a wait for the device)


# -- DynamicStitch, ParallelDynamicStitch ------------------------------------------------------
@tf_export("dynamic_stitch")
def dynamic_stitch(indices, data, name=None) -> Tensor:
    """tf.dynamic_stitch(indices, data, name=None): merged[indices[m][i, ...]] = data[m][i, ...];
    the output's first dimension is max(indices) + 1. Where indices repeat, the later value wins."""
    return stitch("DynamicStitch", indices, data, name)


def stitch(op_type: str, indices, data, name):
    """A DynamicStitch or ParallelDynamicStitch op (the gradient of DynamicPartition builds the latter)."""
    indices, data = list(indices), list(data)
    if not indices or len(indices) != len(data):
        raise ValueError(f"{op_type}: indices and data must be non-empty lists of equal length, got "
                         f"{len(indices)} and {len(data)}")
    with name_scope(name, op_type, indices + data) as scope:
        indices = [convert_to_tensor(t, dtype=dtypes.int32, name="indices") for t in indices]
        data = [convert_to_tensor(t, name="data") for t in data]
        for t in data[1:]:
            if t.dtype != data[0].dtype:
                raise TypeError(f"{op_type}: all data tensors must have the same dtype, got "
                                f"{data[0].dtype.name} and {t.dtype.name}")
        for t in indices:
            if t.dtype != dtypes.int32:
                raise TypeError(f"Input 'indices' of '{op_type}' Op has type {t.dtype.name} that does not match "
                                "expected type of int32.")
        return make_op(op_type, indices + data, {"N": len(indices), "T": data[0].dtype}, name=scope).outputs[0]


def _stitch_infer(op):
    n = op.get_attr("N")
    indices, data = op.inputs[:n], op.inputs[n:]
    inner = None
    for i, d in zip(indices, data):
        if i.shape.ndims is None or d.shape.ndims is None:
            continue
        k = i.shape.ndims
        if d.shape.ndims < k:
            raise ValueError(f"{op.type}: data rank {d.shape.ndims} is below indices rank {k}")
        for a, b in zip(i.shape.as_tuple_or_none(), d.shape.as_tuple_or_none()[:k]):
            if a is not None and b is not None and a != b:
                raise ValueError(f"Dimensions must be equal, but are {a} and {b}: data.shape must start with "
                                 f"indices.shape, got {d.shape} and {i.shape}")
        tail = TensorShape(list(d.shape.as_tuple_or_none()[k:]))
        if inner is None:
            inner = tail
        else:
            if not inner.is_compatible_with(tail):
                raise ValueError(f"{op.type}: data shapes beyond the indices' are incompatible: {inner} vs {tail}")
            inner = inner.merge_with(tail)
    first = None
    values = [constant_value(i) for i in indices]
    if all(v is not None for v in values):
        sizes = [np.size(v) for v in values]
        first = int(max((int(np.max(v)) for v, s in zip(values, sizes) if s), default=-1)) + 1
    out = unknown_shape() if inner is None else TensorShape([first] + inner.as_list())
    check_output_size(op, out)
    return [(data[0].dtype, out)]


def _stitch_kernel(node, ctx):
    n = int(node.attr["N"])
    dt = dtypes.as_dtype(node.attr["T"])

    def run(*args):
        xp = array_module(*args)
        indices = [xp.asarray(a) for a in args[:n]]
        data = [xp.asarray(a) for a in args[n:]]
        inner = None
        for k, (i, d) in enumerate(zip(indices, data)):
            if d.shape[:i.ndim] != i.shape:
                raise invalid(node, f"data[{k}].shape = {list(d.shape)} does "
                                    f"not start with indices.shape = {list(i.shape)}")
            tail = d.shape[i.ndim:]
            if inner is None:
                inner = tail
            elif tail != inner:
                raise invalid(node, f"Need data[i].shape[indices[i].ndims:] to be equal for all i, got "
                                    f"{list(inner)} and {list(tail)}")
        neg = [int(i.min()) for i in indices if i.size and i.min() < 0]
        if neg:
            raise invalid(node, f"indices[] = {neg[0]} is not in [0, inf)")
        rows = max((int(i.max()) for i in indices if i.size), default=-1) + 1
        np_dt = object if dt is dtypes.string else dt.as_numpy_dtype
        check_output_size(node, (rows,) + tuple(inner or ()))
        if xp is not np:
            return _stitch_on_device(xp, indices, data, rows, tuple(inner or ()))
        out = np.zeros((rows,) + tuple(inner or ()), dtype=np_dt)
        if dt is dtypes.string:
            out[...] = b""
        for i, d in zip(indices, data):
            if i.size:
                out[i.reshape(-1)] = d.reshape((i.size,) + tuple(inner))
        return out
    return run


def _stitch_on_device(xp, indices: list, data: list, rows: int, inner: tuple):
    """DynamicStitch of CuPy arrays: a row written twice takes the later value, as in TF (CuPy's
    scatter leaves which one of duplicate indices wins open): each output row gathers the row of
    the last position naming it, found with maximum.at; rows no index names are zeros."""
    flat_i = xp.concatenate([i.reshape(-1).astype(np.int64) for i in indices])
    flat_d = xp.concatenate([d.reshape((i.size,) + inner) for i, d in zip(indices, data)])
    last = xp.full(rows, -1, dtype=np.int64)
    xp.maximum.at(last, flat_i, xp.arange(flat_i.size, dtype=np.int64))
    if not flat_i.size:
        return xp.zeros((rows,) + inner, dtype=flat_d.dtype)
    out = flat_d[xp.maximum(last, 0)]
    out[last < 0] = 0
    return out


register("DynamicStitch", _stitch_infer, _stitch_kernel)   # gradient: array_grad.py
register("ParallelDynamicStitch", _stitch_infer, _stitch_kernel)   # gradient: array_grad.py
# (the indices on the device, unlike TF's HostMemory("indices"): N is per node; their minimum and
# maximum, a wait for the device each, size the output)
register_gpu("DynamicStitch", "ParallelDynamicStitch")
