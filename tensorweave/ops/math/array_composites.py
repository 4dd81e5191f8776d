"""Array functions built from math ops: boolean_mask, sequence_mask, repeat and batch_gather (gather, where,
comparisons, reductions), sort and argsort (top_k of negated values),
required_space_to_batch_paddings (floormod), and gather_nd with its op GatherNd (with batch_dims,
a composite of reduce_prod and range). They sit in math/, above math's own modules, because
array/ never imports math/: math is built on array ops, so an import the other way would make
the two folders a circle."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, stack
from tensorweave.ops.array.core import constant, expand_dims, reshape, shape, size, squeeze, swap_axes_perm, transpose
from tensorweave.ops.array.fill import ones_like, zeros, zeros_like
from tensorweave.ops.array.gather import gather, nd_positions, scatter_nd
from tensorweave.ops.array.slicing import strided_slice
from tensorweave.ops.array.pad import broadcast_to, tile
from tensorweave.ops.array.sort import top_k, where
from tensorweave.ops.helpers import INDEX, array_module, dense, invalid, make_op
from tensorweave.ops.math.binary import floormod, less, maximum, subtract
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_max, reduce_prod
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.math.unary import negative
from tensorweave.ops.registry import register, register_gpu



# -- boolean_mask ------------------------------------------------------------------------------
@tf_export("boolean_mask")
def boolean_mask(tensor, mask, name: str = "boolean_mask", axis=None) -> Tensor:
    """tf.boolean_mask(tensor, mask, name='boolean_mask', axis=None): the entries of `tensor`
    where the K-D `mask` (aligned at dimension `axis`) is True, flattened along those K dims."""
    with name_scope(name, "boolean_mask") as _:
        tensor = convert_to_tensor(tensor, name="tensor")
        mask = convert_to_tensor(mask, name="mask")
        km = mask.shape.ndims
        if km == 0:
            raise ValueError("boolean_mask: mask cannot be scalar.")
        if km is None:
            raise ValueError("boolean_mask: number of mask dimensions must be specified, even if some dimensions "
                             "are None. E.g. shape=[None] is ok, but shape=None is not.")
        axis = 0 if axis is None else int(axis)
        st = tensor.shape
        if st.ndims is not None and not st[axis:axis + km].is_compatible_with(mask.shape):
            raise ValueError(f"boolean_mask: shapes {st[axis:axis + km]} and {mask.shape} are incompatible "
                             f"(tensor {st}, mask {mask.shape})")
        block = st[axis:axis + km].num_elements() if st.ndims is not None else None
        if st.is_fully_defined():
            dims = st.as_list()
            flat = reshape(tensor, dims[:axis] + [block] + dims[axis + km:])
        else:
            ts = shape(tensor)
            lead = block if block is not None else reduce_prod(
                strided_slice(ts, [axis], [axis + km], [1]), [0])
            parts = [strided_slice(ts, [0], [axis], [1]), reshape(lead, [1]),
                     strided_slice(ts, [axis + km], [0], [1], end_mask=1)]
            flat = reshape(tensor, concat(parts, 0))
            if st.ndims is not None:
                flat.set_shape(st[:axis].concatenate([block]).concatenate(st[axis + km:]))
        idx = squeeze(where(reshape(mask, [-1])), axis=[1])
        return gather(flat, idx, axis=axis)


# -- sequence_mask -----------------------------------------------------------------------------
@tf_export("repeat")
def repeat(input, repeats, axis=None, name=None) -> Tensor:
    """tf.repeat(input, repeats, axis=None, name=None): each slice of `input` along `axis`
    repeated repeats[i] times (a scalar repeats every slice alike); axis=None repeats the
    flattened input. Differentiable in `input` (a gather)."""
    with name_scope(name, "Repeat"):
        data = convert_to_tensor(input, name="input")
        if axis is None:
            data, axis = reshape(data, [-1]), 0
        if not isinstance(axis, (int, np.integer)):
            raise TypeError(f"axis must be an int; got {type(axis).__name__}")
        repeats = convert_to_tensor(repeats, name="repeats")
        if not repeats.dtype.is_integer:
            raise TypeError(f"repeats must be an integer tensor, got {repeats.dtype.name}")
        repeats = cast(repeats, dtypes.int32)
        if repeats.shape.ndims is not None and repeats.shape.ndims > 1:
            raise ValueError(f"Shape must be at most rank 1 but is rank {repeats.shape.ndims} for 'repeats'")
        if data.shape.ndims == 0:
            data = reshape(data, [1])
        ndims = data.shape.ndims
        if ndims is not None and not -ndims <= axis < ndims:
            raise ValueError(f"axis={axis} out of bounds: expected {-ndims}<=axis<{ndims}")
        if axis < 0:
            if ndims is None:
                raise ValueError("axis may not be negative if rank(data) is unknown.")
            axis += ndims
        n = shape(data)[axis]
        counts = broadcast_to(reshape(repeats, [-1]), reshape(n, [1]))
        longest = maximum(0, reduce_max(counts))
        slots = tile(expand_dims(range_(n), 1), stack([1, longest]))
        result = gather(data, boolean_mask(slots, sequence_mask(counts, longest)), axis=axis)
        if ndims is not None:
            reps, dim = constant_value(repeats), data.shape[axis].value
            new = int(np.sum(np.broadcast_to(reps, [dim]))) if reps is not None and dim is not None else None
            result.set_shape(data.shape[:axis].concatenate([new]).concatenate(data.shape[axis + 1:]))
        return result


@tf_export("batch_gather")
def batch_gather(params, indices, name=None) -> Tensor:
    """tf.batch_gather(params, indices, name=None): gather along the first dimension after the
    batch dimensions that `params` and `indices` share (all but indices' last):
    result[b..., j] = params[b..., indices[b..., j]]."""
    with name_scope(name, "BatchGather"):
        indices = convert_to_tensor(indices, name="indices")
        params = convert_to_tensor(params, name="params")
        if indices.shape.ndims is None:
            raise ValueError("batch_gather does not allow indices with unknown shape.")
        batch_dims = indices.shape.ndims - 1
        return gather(params, indices, axis=batch_dims, batch_dims=batch_dims)


@tf_export("sequence_mask")
def sequence_mask(lengths, maxlen=None, dtype=dtypes.bool, name=None) -> Tensor:
    """tf.sequence_mask(lengths, maxlen=None, dtype=tf.bool, name=None): mask[..., j] = j < lengths[...];
    maxlen defaults to max(lengths)."""
    with name_scope(name, "SequenceMask"):
        lengths = convert_to_tensor(lengths)
        static_lengths = constant_value(lengths) if maxlen is None else None
        if static_lengths is not None and np.size(static_lengths):
            # TF's shape inference folds max(constant lengths): the mask's last dim is static.
            maxlen = constant(max(int(np.max(static_lengths)), 0), dtype=lengths.dtype)
        elif maxlen is None:
            maxlen = reduce_max(lengths)
            maxlen = maximum(constant(0, dtype=maxlen.dtype), maxlen)
        else:
            maxlen = convert_to_tensor(maxlen)
        if maxlen.shape.ndims not in (None, 0):
            raise ValueError("maxlen must be scalar for sequence_mask")
        row = range_(constant(0, dtype=maxlen.dtype), maxlen, constant(1, dtype=maxlen.dtype))
        lens = expand_dims(lengths, -1)
        if lens.dtype != maxlen.dtype:
            lens = cast(lens, maxlen.dtype)
        result = less(row, lens)
        dtype = dtypes.as_dtype(dtype) if dtype is not None else None
        return result if dtype is None or dtype == dtypes.bool else cast(result, dtype)


# -- sort, argsort ----------------------------------------------------------------------------
def _sort_impl(values, axis: int, direction: str, return_argsort: bool):
    values = convert_to_tensor(values)
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"direction must be one of ('ASCENDING', 'DESCENDING'), got {direction!r}")
    nd = values.shape.ndims
    if nd is not None and not -nd <= axis < nd:
        raise ValueError(f"sort: axis {axis} is out of range for a tensor of rank {nd}")
    src = negative(values) if direction == "ASCENDING" else values
    perm = swap_axes_perm(src, axis)
    if perm is not None:
        src = transpose(src, perm)
    vals, idx = top_k(src, shape(src)[-1] if src.shape[-1].value is None else src.shape[-1].value)
    out = idx if return_argsort else vals
    if perm is not None:
        out = transpose(out, perm)
        out.set_shape(values.shape)
    if direction == "ASCENDING" and not return_argsort:
        out = negative(out)
    return out


@tf_export("sort")
def sort(values, axis: int = -1, direction: str = "ASCENDING", name=None) -> Tensor:
    """tf.sort(values, axis=-1, direction='ASCENDING', name=None): sorted copy along `axis`."""
    with name_scope(name, "sort"):
        return _sort_impl(values, axis, direction, False)


@tf_export("argsort")
def argsort(values, axis: int = -1, direction: str = "ASCENDING", stable: bool = False, name=None) -> Tensor:
    """tf.argsort(values, axis=-1, direction='ASCENDING', stable=False, name=None): int32 indices
    that sort `values` along `axis` (always stable here)."""
    with name_scope(name, "argsort"):
        return _sort_impl(values, axis, direction, True)


# -- required_space_to_batch_paddings -----------------------------------------------------------
@tf_export("required_space_to_batch_paddings")
def required_space_to_batch_paddings(input_shape, block_shape, base_paddings=None, name=None):
    """tf.required_space_to_batch_paddings(input_shape, block_shape, base_paddings=None, name=None)
    -> (paddings, crops): paddings that extend base_paddings so each padded spatial size divides
    by its block size, and the crops that undo the extension."""
    with name_scope(name, "required_space_to_batch_paddings", [input_shape, block_shape]):
        input_shape = cast(convert_to_tensor(input_shape, name="input_shape"), dtypes.int32)
        block_shape = cast(convert_to_tensor(block_shape, name="block_shape"), dtypes.int32)
        if base_paddings is None:
            base = zeros(stack([size(block_shape), 2]), dtype=dtypes.int32)
        else:
            base = cast(convert_to_tensor(base_paddings, name="base_paddings"), dtypes.int32)
        pad_start, pad_end = base[:, 0], base[:, 1]
        full = input_shape + pad_start + pad_end
        extra = floormod(subtract(block_shape, floormod(full, block_shape)), block_shape)
        paddings = stack([pad_start, pad_end + extra], axis=1, name="paddings")
        crops = stack([zeros_like(extra), extra], axis=1, name="crops")
        return paddings, crops


# -- gather_nd, GatherNd ----------------------------------------------------------------------
@tf_export("manip.gather_nd", "gather_nd")
def gather_nd(params, indices, name=None, batch_dims: int = 0) -> Tensor:
    """tf.gather_nd(params, indices, name=None, batch_dims=0): out[i...] = params[indices[i...]]
    where the last dimension of `indices` indexes the leading dims of `params`."""
    params = convert_to_tensor(params)
    indices = convert_to_tensor(indices)
    if batch_dims:
        return _batch_gather_nd(params, indices, int(batch_dims), name)
    return make_op("GatherNd", [params, indices], name=name or "GatherNd").outputs[0]


def _batch_gather_nd(params: Tensor, indices: Tensor, batch_dims: int, name) -> Tensor:
    """TF1's composite for batch_dims > 0: prefix each index with its flattened batch number and
    run one plain GatherNd over params with the batch dims flattened into one."""
    q = indices.shape.ndims
    if q is None:
        raise ValueError("gather_nd with batch_dims needs indices of known rank")
    if batch_dims < 0:
        batch_dims += q
    if not 0 <= batch_dims < q:
        raise ValueError(f"GatherNd: batch_dims ({batch_dims}) must be in [0, rank(indices) = {q})")
    if params.shape.ndims is not None and batch_dims >= params.shape.ndims:
        raise ValueError(f"GatherNd: batch_dims ({batch_dims}) must be less than rank(params) "
                         f"({params.shape.ndims})")
    with name_scope(name, "GatherNd", [params, indices]):
        p_shape = shape(params, out_type=indices.dtype)
        i_shape = shape(indices, out_type=indices.dtype)
        batch_shape = strided_slice(p_shape, [0], [batch_dims])
        n_batch = reduce_prod(batch_shape)
        flat_p = reshape(params, concat([[-1], strided_slice(p_shape, [batch_dims], [0], end_mask=1)], 0))
        flat_i = reshape(indices, concat([[-1], strided_slice(i_shape, [batch_dims], [0], end_mask=1)], 0))
        inner = q - batch_dims            # rank of flat_i minus its batch dim
        b = reshape(range_(n_batch), [-1] + [1] * inner)
        b = b * ones_like(strided_slice(flat_i, [0] * (inner + 1), [0] * inner + [1], end_mask=(1 << inner) - 1))
        out = gather_nd(flat_p, concat([b, flat_i], -1))
        out_shape = concat([batch_shape, strided_slice(shape(out, out_type=indices.dtype), [1], [0], end_mask=1)], 0)
        result = reshape(out, out_shape)
        if params.shape.ndims is not None and indices.shape[-1].value is not None:
            k = indices.shape[-1].value
            static = (params.shape[:batch_dims].merge_with(indices.shape[:batch_dims])
                      .concatenate(indices.shape[batch_dims:-1]).concatenate(params.shape[batch_dims + k:]))
            result.set_shape(static)
        return result


def _gather_nd_infer(op):
    p, i = op.inputs
    if i.shape.ndims is None or i.shape[-1].value is None or p.shape.ndims is None:
        return [(p.dtype, unknown_shape())]
    k = i.shape[-1].value
    if i.shape.ndims == 0:
        raise ValueError("GatherNd: indices must be at least a vector")
    if k > p.shape.ndims:
        raise ValueError(f"GatherNd: index innermost dimension length must be <= params rank; saw: {k} vs. "
                         f"{p.shape.ndims}; shapes {p.shape} and {i.shape}")
    return [(p.dtype, i.shape[:-1].concatenate(p.shape[k:]))]


def _gather_nd_kernel(node, ctx):
    def run(params, indices):
        xp = array_module(params, indices)
        params, indices = xp.asarray(params), xp.asarray(indices)
        k = indices.shape[-1]
        if k > params.ndim:
            raise invalid(node, f"index innermost dimension length must be <= params rank; saw: {k} vs. "
                                f"{params.ndim}")
        pos = nd_positions(node, indices, params.shape, "param shape")
        out = params[pos] if k else xp.broadcast_to(params, (indices.reshape(-1, 0).shape[0],) + params.shape)
        return out.reshape(indices.shape[:-1] + params.shape[k:])
    return run


def _gather_nd_grad(op, grad):
    params, indices = op.inputs
    return [scatter_nd(indices, dense(grad), shape(params, out_type=indices.dtype)), None]


register("GatherNd", _gather_nd_infer, _gather_nd_kernel, grad=_gather_nd_grad, dtypes={1: ("indices", INDEX)})
register_gpu("GatherNd")
