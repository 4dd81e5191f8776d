"""Gradients of array ops that need ops of a module loaded after theirs (slice for concat and
pad, reduce_sum for fill, tile and broadcast_to, scatter_nd for top_k): registered here, once both are imported, as TF's
array_grad.py does. Gradients that need only their own module's ops stay beside the op."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.tensor_util import constant_value
from tensorweave.ops.array.concat import stack
from tensorweave.ops.array.core import constant, expand_dims, reshape, shape, shape_n, size
from tensorweave.ops.array.fill import zeros
from tensorweave.ops.array.gather import scatter_nd
from tensorweave.ops.array.slicing import slice as slice_
from tensorweave.ops.helpers import dense, make_op, static_int, static_ints
from tensorweave.ops.math.binary import add
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.registry import RegisterGradient


@RegisterGradient("Fill")
def _fill_grad(op, grad):
    return [None, reduce_sum(dense(grad))]


@RegisterGradient("ConcatV2")
def _concat_grad(op, grad):
    grad = dense(grad)
    values, axis_t = op.inputs[:-1], op.inputs[-1]
    axis = static_int(axis_t)
    if axis is not None and all(v.shape.is_fully_defined() for v in values):
        nd = values[0].shape.ndims
        axis %= nd
        out, at = [], 0
        for v in values:
            dims = v.shape.as_list()
            begin = [0] * nd
            begin[axis] = at
            at += dims[axis]
            out.append(slice_(grad, begin, dims))
        return out + [None]
    shapes = shape_n(list(values))
    offsets = make_op("ConcatOffset", [axis_t] + shapes, {"N": len(values)}).outputs
    return [slice_(grad, o, s) for o, s in zip(offsets, shapes)] + [None]


@RegisterGradient("Tile")
def _tile_grad(op, grad):
    x, m = op.inputs
    grad = dense(grad)
    mult = static_ints(m)
    if mult is not None and x.shape.is_fully_defined():
        split_shape = [v for pair in zip(mult, x.shape.as_list()) for v in pair]
        axes = list(range(0, len(split_shape), 2))
        summed = reduce_sum(reshape(grad, split_shape), axes)
        return [reshape(summed, x.shape.as_list()), None]
    xs = shape(x, out_type=m.dtype)
    split_shape = reshape(make_op("Transpose", [stack([m, xs]), constant([1, 0])]).outputs[0], [-1])
    axes = range_(0, size(split_shape), 2)
    summed = reduce_sum(reshape(grad, split_shape), axes)
    return [reshape(summed, shape(x)), None]


@RegisterGradient("Pad")
@RegisterGradient("PadV2")
def _pad_grad(op, grad):
    x, p = op.inputs[0], op.inputs[1]
    pv = constant_value(p)
    if pv is not None:
        begin = constant(np.reshape(pv, (-1, 2))[:, 0].astype(p.dtype.as_numpy_dtype))
    else:
        begin = reshape(slice_(p, [0, 0], stack([make_op("Rank", [x]).outputs[0], 1])), [-1])
    dx = slice_(dense(grad), begin, shape(x, out_type=p.dtype))
    return [dx, None] + ([None] if op.type == "PadV2" else [])


@RegisterGradient("BroadcastTo")
def _broadcast_to_grad(op, grad):
    x = op.inputs[0]
    grad = dense(grad)
    if x.shape.is_fully_defined() and grad.shape.is_fully_defined():
        src, dst = x.shape.as_list(), grad.shape.as_list()
        lead = len(dst) - len(src)
        axes = list(range(lead)) + [lead + i for i, d in enumerate(src) if d == 1 and dst[lead + i] != 1]
        if not axes:
            return [grad, None]
        return [reshape(reduce_sum(grad, axes), src), None]
    return [grad, None]  # broadcast-shaped: tf.gradients reduces it to x's shape


@RegisterGradient("TopKV2")
def _top_k_grad(op, grad, _indices_grad=None):
    x, idx = op.inputs[0], op.outputs[1]
    grad = dense(grad)
    in_shape = shape(x)
    n = shape(x)[-1]
    idx_2d = reshape(idx, stack([-1, shape(idx)[-1]]))
    offsets = expand_dims(range_(0, size(x), n), -1)   # row r starts at r * n in the flat input
    flat = reshape(add(idx_2d, offsets), [-1, 1])
    dx = scatter_nd(flat, reshape(grad, [-1]), reshape(size(x), [1]))
    return [reshape(dx, in_shape), zeros([], dtype=dtypes.int32)]
