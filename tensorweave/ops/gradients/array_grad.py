"""Gradients of array ops that are built from ops of a later module (slice for concat and pad,
reduce_sum for fill, tile and broadcast_to, scatter_nd for top_k, math ops for slice, gather,
the scatters, partitions and image patches), registered by op type as TF's array_grad.py does.
They live in gradients/, above both array/ and math/, because array/ never imports math/.
Gradients that need only their own module's ops stay beside the op."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.graph import Tensor
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor_util import constant_value
from tensorweave.ops.array.concat import concat, stack
from tensorweave.ops.array.core import constant, expand_dims, rank, reshape, shape, shape_n, size, transpose
from tensorweave.ops.array.fill import zeros, zeros_like
from tensorweave.ops.array.gather import gather, scatter_nd, tensor_scatter_update
from tensorweave.ops.array.pad import pad
from tensorweave.ops.array.partition import dynamic_partition, stitch
from tensorweave.ops.array.slicing import slice as slice_, strided_slice
from tensorweave.ops.array.space import extract_image_patches, extract_volume_patches
from tensorweave.ops.helpers import dense, make_op, static_int, static_ints
from tensorweave.ops.math.array_composites import gather_nd
from tensorweave.ops.math.binary import add, equal, floormod, subtract
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_prod, reduce_sum
from tensorweave.ops.math.segment import unsorted_segment_sum
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


def _scatter_along_last_axis(x, idx, grad) -> Tensor:
    """grad (idx's shape) scattered into zeros of x's shape at idx's positions along the last axis."""
    grad = dense(grad)
    n = shape(x)[-1]
    idx_2d = reshape(idx, stack([-1, shape(idx)[-1]]))
    offsets = expand_dims(range_(0, size(x), n), -1)   # row r starts at r * n in the flat input
    flat = reshape(add(idx_2d, offsets), [-1, 1])
    dx = scatter_nd(flat, reshape(grad, [-1]), reshape(size(x), [1]))
    return reshape(dx, shape(x))


@RegisterGradient("TopKV2")
def _top_k_grad(op, grad, _indices_grad=None):
    return [_scatter_along_last_axis(op.inputs[0], op.outputs[1], grad), zeros([], dtype=dtypes.int32)]


@RegisterGradient("ApproxTopK")
def _approx_top_k_grad(op, grad, _indices_grad=None):
    """The values' gradient scattered back to the chosen entries (TF's scatter_nd of the lifted
    indices), through a transpose that makes the reduction dimension last."""
    x, idx = op.inputs[0], op.outputs[1]
    ndim = x.shape.ndims
    axis = op.get_attr("reduction_dimension") % ndim
    if axis == ndim - 1:
        return [_scatter_along_last_axis(x, idx, grad)]
    perm = list(range(ndim))
    perm[axis], perm[-1] = perm[-1], perm[axis]   # a swap: its own inverse
    return [transpose(_scatter_along_last_axis(transpose(x, perm), transpose(idx, perm), transpose(dense(grad), perm)),
                      perm)]


@RegisterGradient("Slice")
def _slice_grad(op, grad):
    x, b = op.inputs[0], op.inputs[1]
    grad = dense(grad)
    begin = static_ints(b)
    if begin is not None and x.shape.is_fully_defined() and op.outputs[0].shape.is_fully_defined():
        paddings = [[bb, d - bb - s] for bb, d, s in zip(begin, x.shape.as_list(), op.outputs[0].shape.as_list())]
        return [pad(grad, constant(np.array(paddings, dtype=b.dtype.as_numpy_dtype).reshape(-1, 2))), None, None]
    after = subtract(subtract(shape(x, out_type=b.dtype), shape(op.outputs[0], out_type=b.dtype)), b)
    return [pad(grad, stack([b, after], axis=1)), None, None]


def _batch_gather_grad(params, indices, axis, batch_dims: int, grad):
    """GatherV2's gradient with batch dimensions gathering the first dimension after them (TF's
    _BatchGatherGrad): each batch's indices offset into one flat dimension, rows summed there."""
    nd, ni = params.shape.ndims, indices.shape.ndims
    if ni is not None and batch_dims < 0:
        batch_dims += ni
    if axis is not None and axis < 0 and nd is not None:
        axis += nd
    if axis != batch_dims or ni is None:
        raise NotImplementedError("GatherV2 gradient with batch_dims is supported where axis == batch_dims "
                                  "and indices' rank is known")
    params_shape = shape(params)
    outer, n = params_shape[:batch_dims], params_shape[batch_dims]
    batches = reduce_prod(outer)
    offsets = reshape(range_(batches) * n, concat([outer, np.ones(ni - batch_dims, np.int32)], 0))
    flat = reshape(add(indices, cast(offsets, indices.dtype)), [-1])
    rows = reshape(grad, concat([[-1], params_shape[batch_dims + 1:]], 0))
    return reshape(unsorted_segment_sum(rows, flat, batches * n), params_shape)


@RegisterGradient("GatherV2")
def _gather_grad(op, grad):
    params, indices, axis_t = op.inputs
    axis = static_int(axis_t)
    grad = dense(grad)
    if op.get_attr("batch_dims") != 0:
        return [_batch_gather_grad(params, indices, axis, op.get_attr("batch_dims"), grad), None, None]
    with params.graph.colocate_with(params.op):
        params_shape = shape(params)
    nd = params.shape.ndims
    if axis is not None and (axis == 0 or (nd is not None and axis % nd == 0)):
        # The TF1 sparse gradient: rows `indices` of a dense [params_shape] tensor.
        inner = strided_slice(params_shape, [1], [0], [1], end_mask=1)
        n = indices.shape.num_elements()
        inner_static = params.shape[1:]
        if inner_static.is_fully_defined() and (n is not None or inner_static.num_elements()):
            # -1 is unambiguous when the row size is non-zero; keeps the rows' static shape.
            values = reshape(grad, [-1 if n is None else n] + inner_static.as_list())
        else:
            values = reshape(grad, concat([expand_dims(size(indices), 0), inner], 0))
        return [IndexedSlices(values, reshape(indices, [-1]), params_shape), None, None]
    # Dense, as TF's formula (valid for any ranks, a negative or run-time axis): move the gathered
    # dims to the front as one, sum rows by index, move the axis back.
    if axis is not None and nd is not None:
        axis_t = constant(axis % nd)
    elif axis is None or axis < 0:
        axis_t = floormod(axis_t, rank(params))
    axis_1d = reshape(axis_t, [1])
    outer_shape = strided_slice(params_shape, [0], axis_1d, [1])
    inner_shape = strided_slice(strided_slice(params_shape, axis_1d, [0], [1], end_mask=1), [1], [0], [1], end_mask=1)
    outer_dims, inner_dims = size(outer_shape), size(inner_shape)
    outer_axes = range_(outer_dims)
    inner_axes = range_(outer_dims + 1, outer_dims + 1 + inner_dims)
    values = reshape(grad, concat([outer_shape, [-1], inner_shape], 0))
    values = transpose(values, concat([reshape(outer_dims, [1]), outer_axes, inner_axes], 0))
    num_segments = gather(params_shape, axis_t)
    summed = unsorted_segment_sum(values, reshape(indices, [-1]), num_segments)
    back = transpose(summed, concat([outer_axes + 1, [0], inner_axes], 0))
    return [back, None, None]


@RegisterGradient("ScatterNd")
def _scatter_nd_grad(op, grad):
    return [None, gather_nd(dense(grad), op.inputs[0]), None]


def _tensor_scatter_grad(how: str):
    def grad_fn(op, grad):
        grad = dense(grad)
        indices = op.inputs[1]
        updates_grad = gather_nd(grad, indices)
        if how == "update":
            tensor_grad = tensor_scatter_update(grad, indices, zeros_like(op.inputs[2]))
        else:
            tensor_grad = grad
        return [tensor_grad, None, updates_grad if how != "sub" else make_op("Neg", [updates_grad]).outputs[0]]
    return grad_fn


for _how in ("update", "add", "sub"):
    RegisterGradient("TensorScatter" + _how.capitalize())(_tensor_scatter_grad(_how))


@RegisterGradient("TensorScatterMin")
@RegisterGradient("TensorScatterMax")
def _tensor_scatter_min_max_grad(op, grad):
    """TF's: the gradient goes to whichever of tensor and updates holds the result, split evenly
    between equal ones."""
    grad = dense(grad)
    x, indices, y = op.inputs
    out = op.outputs[0]
    x_ind = cast(equal(x, out), grad.dtype)
    y_ind = cast(equal(y, gather_nd(out, indices)), grad.dtype)
    count = x_ind + scatter_nd(indices, y_ind, shape(x, out_type=indices.dtype))
    return [grad * x_ind / count, None, gather_nd(grad / count, indices) * y_ind]


@RegisterGradient("DynamicPartition")
def _partition_grad(op, *grads):
    data, parts = op.inputs
    n = op.get_attr("num_partitions")
    prefix = shape(parts)
    original = reshape(range_(reduce_prod(prefix)), prefix)
    partitioned = dynamic_partition(original, parts, n)
    grads = [_zeros_if_none(g, o) for g, o in zip(grads, op.outputs)]
    stitched = stitch("ParallelDynamicStitch", partitioned, grads, None)
    return [reshape(stitched, shape(data)), None]


def _zeros_if_none(g, out: Tensor):
    return zeros_like(out) if g is None else dense(g)


@RegisterGradient("DynamicStitch")
@RegisterGradient("ParallelDynamicStitch")
def _stitch_grad(op, grad):
    n = op.get_attr("N")
    if isinstance(grad, IndexedSlices):
        rows = shape(op.outputs[0])[0]
        grad = unsorted_segment_sum(grad.values, grad.indices, rows)
    return [None] * n + [gather(grad, i) for i in op.inputs[:n]]


@RegisterGradient("ExtractImagePatches")
@RegisterGradient("ExtractVolumePatches")
def _patches_grad(op, grad):
    """Each input pixel receives the sum of the gradient entries of the patch elements that read
    it: the patches of an image of pixel numbers say which, and a segment sum adds them up."""
    x = op.inputs[0]
    x_shape = shape(x)
    b, c = x_shape[0], x_shape[-1]
    pixels = reduce_prod(x_shape[1:-1])
    pixel_ids = reshape(range_(1, cast(pixels, dtypes.int64) + 1, dtype=dtypes.int64),
                        concat([[1], x_shape[1:-1], [1]], 0))
    k, st, pad = op.get_attr("ksizes"), op.get_attr("strides"), op.get_attr("padding")
    ids = extract_image_patches(pixel_ids, k, st, op.get_attr("rates"), pad) if op.type == "ExtractImagePatches" \
        else extract_volume_patches(pixel_ids, k, st, pad)
    ids = reshape(ids, [-1]) - 1   # one id per (out position, kernel offset); padding reads become -1 and drop
    per_patch = reshape(dense(grad), stack([b, -1, c]))   # [b, out positions * kernel offsets, c]
    summed = unsorted_segment_sum(transpose(per_patch, [1, 0, 2]), ids, cast(pixels, dtypes.int64))
    return [reshape(transpose(summed, [1, 0, 2]), x_shape)]
