"""Sparse ops that combine or cut SparseTensors: sparse_slice (SparseSlice), sparse_split,
sparse_concat (SparseConcat), sparse_add (SparseAdd; SparseTensorDenseAdd with a dense operand)
and sparse_maximum / sparse_minimum (SparseSparseMaximum, SparseSparseMinimum)."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.sparse_tensor import SparseTensor, SparseTensorValue
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import split, stack
from tensorweave.ops.array.core import identity, size
from tensorweave.ops.array.sort import where_v2
from tensorweave.ops.helpers import invalid, make_op
from tensorweave.ops.math.binary import add, equal, floordiv, floormod, less, maximum, multiply, subtract
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.math.segment import unsorted_segment_sum
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.registry import register
from tensorweave.ops.sparse.core import convert_sparse, lex_order


def _row_keys(indices: np.ndarray) -> list:
    return [tuple(r) for r in np.asarray(indices).tolist()]


def _grad_at(grad: np.ndarray, rows: dict, indices) -> np.ndarray:
    """grad's entry at each of `indices` (`rows` maps an index's key to its entry), 0 where none."""
    out = np.zeros(np.shape(indices)[0], grad.dtype)
    for i, key in enumerate(_row_keys(indices)):
        j = rows.get(key)
        if j is not None:
            out[i] = grad[j]
    return out


# -- SparseSlice -----------------------------------------------------------------------------------
@tf_export("sparse.slice", "sparse_slice")
def sparse_slice(sp_input, start, size, name=None) -> SparseTensor:
    """tf.sparse.slice(sp_input, start, size, name=None): the entries inside the box [start,
    start + size), shifted by -start; the dense shape is clipped to the input's."""
    sp = convert_sparse(sp_input)
    with name_scope(name, "SparseSlice", [sp]) as scope:
        start = convert_to_tensor(start, dtype=dtypes.int64, name="start")
        size = convert_to_tensor(size, dtype=dtypes.int64, name="size")
        op = make_op("SparseSlice", [sp.indices, sp.values, sp.dense_shape, start, size], {"T": sp.dtype},
                     name=scope)
        return SparseTensor(op.outputs[0], op.outputs[1], op.outputs[2])


def _slice_infer(op):
    rank = op.inputs[2].shape[0].value if op.inputs[2].shape.ndims == 1 else None
    return [(dtypes.int64, TensorShape([None, rank])), (op.inputs[1].dtype, TensorShape([None])),
            (dtypes.int64, TensorShape([rank]))]


def _slice_kernel(node, ctx):
    def run(idx, values, dense_shape, start, size):
        idx, values = np.asarray(idx), np.asarray(values)
        dense_shape, start, size = (np.asarray(v, np.int64).reshape(-1) for v in (dense_shape, start, size))
        if not len(start) == len(size) == len(dense_shape):
            raise invalid(node, f"start ({start.tolist()}), size ({size.tolist()}) and dense_shape "
                                f"({dense_shape.tolist()}) must have the same length")
        end = start + size
        keep = np.all((idx >= start) & (idx < end), axis=1) if idx.size else np.zeros(idx.shape[0], bool)
        out_shape = np.maximum(np.minimum(end, dense_shape) - start, 0)
        return (idx[keep] - start).astype(np.int64), values[keep], out_shape
    return run


def _slice_grad_kernel(node, ctx):
    def run(grad, in_idx, start, out_idx):
        grad = np.asarray(grad)
        shifted = {k: i for i, k in enumerate(_row_keys(np.asarray(out_idx) + np.asarray(start, np.int64)))}
        return _grad_at(grad, shifted, in_idx)
    return run


register("SparseSliceGrad", lambda op: [(op.inputs[0].dtype, TensorShape([op.inputs[1].shape[0].value
                                                                         if op.inputs[1].shape.ndims else None]))],
         _slice_grad_kernel, grad=None)


def _slice_grad(op, *grads):
    grad = grads[1]
    val_grad = make_op("SparseSliceGrad", [grad, op.inputs[0], op.inputs[3], op.outputs[0]], {"T": grad.dtype},
                       name="SparseSliceGrad").outputs[0]
    return [None, val_grad, None, None, None]


register("SparseSlice", _slice_infer, _slice_kernel, grad=_slice_grad)


@tf_export("sparse.split", "sparse_split")
def sparse_split(keyword_required=None, sp_input=None, num_split=None, axis=None, name=None, split_dim=None) -> list:
    """tf.sparse.split(sp_input=..., num_split=..., axis=..., name=None, split_dim=None): num_split
    SparseTensors cut along `axis`; the first size % num_split pieces are one longer."""
    if keyword_required is not None:
        raise ValueError("Keyword arguments are required for this function.")
    if sp_input is None or num_split is None:
        raise ValueError("sp_input and num_split are required")
    axis = split_dim if axis is None else axis
    if axis is None:
        raise ValueError("axis is required")
    sp = convert_sparse(sp_input)
    num_split = int(num_split)
    with name_scope(name, "SparseSplit", [sp]):
        at_axis = _axis_indicator(sp.dense_shape, axis)
        dim = reduce_sum(multiply(at_axis, sp.dense_shape))
        base, extra = floordiv(dim, num_split), floormod(dim, num_split)
        pieces, offset = [], convert_to_tensor(0, dtype=dtypes.int64)
        for i in range(num_split):
            length = add(base, cast(less(convert_to_tensor(i, dtype=dtypes.int64), extra), dtypes.int64))
            start = multiply(at_axis, offset)
            size_vec = add(multiply(at_axis, length), multiply(subtract(1, at_axis), sp.dense_shape))
            pieces.append(sparse_slice(sp, start, size_vec))
            offset = add(offset, length)
        return pieces


def _axis_indicator(dense_shape: Tensor, axis: int) -> Tensor:
    """An int64 vector as long as dense_shape: 1 at `axis` (negative counts from the end), else 0."""
    rank = size(dense_shape, out_type=dtypes.int64)
    axis_t = convert_to_tensor(axis, dtype=dtypes.int64) if axis >= 0 else add(rank, axis)
    return cast(equal(range_(rank, dtype=dtypes.int64), axis_t), dtypes.int64)


# -- SparseConcat ----------------------------------------------------------------------------------
@tf_export("sparse.concat", "sparse_concat")
def sparse_concat(axis, sp_inputs, name=None, expand_nonconcat_dim=False, concat_dim=None,
                  expand_nonconcat_dims=None) -> SparseTensor:
    """tf.sparse.concat(axis, sp_inputs, name=None, expand_nonconcat_dim=False, concat_dim=None):
    the SparseTensors joined along `axis` (the other dims must agree, or grow to the largest with
    expand_nonconcat_dim); the result is in row-major order."""
    axis = concat_dim if concat_dim is not None else axis
    expand = bool(expand_nonconcat_dims if expand_nonconcat_dims is not None else expand_nonconcat_dim)
    sps = [convert_sparse(s, "sp_inputs") for s in sp_inputs]
    if not sps:
        raise ValueError("sp_inputs must be a non-empty list of SparseTensors")
    with name_scope(name, "SparseConcat", sps) as scope:
        shapes = [s.dense_shape for s in sps]
        if expand:
            biggest = shapes[0]
            for other in shapes[1:]:
                biggest = maximum(biggest, other)
            at_axis = cast(_axis_indicator(biggest, axis), dtypes.bool)
            shapes = [where_v2(at_axis, s, biggest) for s in shapes]
        attrs = {"concat_dim": int(axis), "N": len(sps), "T": sps[0].dtype}
        op = make_op("SparseConcat", [s.indices for s in sps] + [s.values for s in sps] + shapes, attrs, name=scope)
        return SparseTensor(op.outputs[0], op.outputs[1], op.outputs[2])


def _concat_infer(op):
    n = op.get_attr("N")
    rank = next((t.shape[0].value for t in op.inputs[2 * n:] if t.shape.ndims == 1 and t.shape[0].value is not None),
                None)
    return [(dtypes.int64, TensorShape([None, rank])), (op.inputs[n].dtype, TensorShape([None])),
            (dtypes.int64, TensorShape([rank]))]


def _concat_order(node, indices: list, shapes: list, axis: int):
    """The concatenated indices (row-major) and, for each output entry, its position in the
    inputs' values concatenated."""
    rank = len(shapes[0])
    axis = axis % rank if rank else 0
    for s in shapes:
        if len(s) != rank or any(s[d] != shapes[0][d] for d in range(rank) if d != axis):
            raise invalid(node, f"Input shapes must match except along the concat dimension: "
                                f"{[list(map(int, x)) for x in shapes]}")
    offset, parts = 0, []
    for idx, s in zip(indices, shapes):
        idx = np.array(idx, np.int64).reshape(-1, rank)
        idx[:, axis] += offset
        parts.append(idx)
        offset += int(s[axis])
    all_idx = np.concatenate(parts) if parts else np.zeros((0, rank), np.int64)
    order = lex_order(all_idx)
    out_shape = np.array(shapes[0], np.int64)
    out_shape[axis] = offset
    return all_idx[order], order, out_shape


def _concat_kernel(node, ctx):
    n, axis = int(node.attr["N"]), int(node.attr["concat_dim"])

    def run(*args):
        indices, values, shapes = args[:n], args[n:2 * n], [np.asarray(s).reshape(-1) for s in args[2 * n:]]
        out_idx, order, out_shape = _concat_order(node, indices, shapes, axis)
        return out_idx, np.concatenate([np.asarray(v) for v in values])[order], out_shape
    return run


def _concat_grad(op, *grads):
    # Which output entry came from which input entry: concatenate the entries' positions instead
    # of their values, then undo the permutation.
    n = op.get_attr("N")
    sizes = [size(v, out_type=dtypes.int64) for v in op.inputs[n:2 * n]]
    tags, offset = [], convert_to_tensor(0, dtype=dtypes.int64)
    for count in sizes:
        tags.append(add(range_(count, dtype=dtypes.int64), offset))
        offset = add(offset, count)
    positions = make_op("SparseConcat", list(op.inputs[:n]) + tags + list(op.inputs[2 * n:]),
                        {"concat_dim": op.get_attr("concat_dim"), "N": n, "T": dtypes.int64},
                        name="SparseConcat_positions").outputs[1]
    in_order = unsorted_segment_sum(grads[1], positions, offset)
    return [None] * n + split(in_order, cast(stack(sizes), dtypes.int32), num=n) + [None] * n


register("SparseConcat", _concat_infer, _concat_kernel, grad=_concat_grad)


# -- SparseAdd, SparseTensorDenseAdd ---------------------------------------------------------------
@tf_export("sparse.add", "sparse_add")
def sparse_add(a, b, threshold=None, thresh=None) -> object:
    """tf.sparse.add(a, b, threshold=0, thresh=None): a + b. Two SparseTensors (ordered
    row-major) give a SparseTensor, dropping summed entries with |sum| < threshold; a
    SparseTensor and a dense Tensor give a dense Tensor."""
    threshold = thresh if threshold is None else threshold
    threshold = 0 if threshold is None else threshold
    a_sparse = isinstance(a, (SparseTensor, SparseTensorValue))
    b_sparse = isinstance(b, (SparseTensor, SparseTensorValue))
    if not a_sparse and not b_sparse:
        raise TypeError("At least one input should be SparseTensor; do you mean to use tf.add()?")
    with name_scope(None, "SparseAdd", [a, b, threshold]):
        if a_sparse and b_sparse:
            a, b = convert_sparse(a, "a"), convert_sparse(b, "b")
            thresh_t = convert_to_tensor(threshold, dtype=_real(a.dtype), name="threshold")
            op = make_op("SparseAdd", [a.indices, a.values, a.dense_shape, b.indices, b.values, b.dense_shape,
                                       thresh_t], {"T": a.dtype, "Treal": thresh_t.dtype})
            return SparseTensor(op.outputs[0], op.outputs[1], op.outputs[2])
        sp, dense = (convert_sparse(a, "a"), b) if a_sparse else (convert_sparse(b, "b"), a)
        dense = convert_to_tensor(dense, dtype=sp.dtype, name="b")
        return make_op("SparseTensorDenseAdd", [sp.indices, sp.values, sp.dense_shape, dense],
                       {"T": sp.dtype, "Tindices": dtypes.int64}).outputs[0]


def _real(dt):
    return {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(dt, dt)


def _merge(node, a_idx, a_val, b_idx, b_val, combine, keep=None):
    """Union of two row-major entry lists: (indices, values, for each output the (a, b) positions)."""
    a_idx, b_idx = np.asarray(a_idx, np.int64), np.asarray(b_idx, np.int64)
    a_keys, b_keys = _row_keys(a_idx), _row_keys(b_idx)
    b_pos = {k: j for j, k in enumerate(b_keys)}
    a_pos = {k: i for i, k in enumerate(a_keys)}
    keys = sorted(set(a_keys) | set(b_keys))
    out_idx, out_val, sources = [], [], []
    for k in keys:
        i, j = a_pos.get(k), b_pos.get(k)
        if i is not None and j is not None:
            v = combine(a_val[i], b_val[j])
            if keep is not None and not keep(v):
                continue
        else:
            v = combine(a_val[i], None) if i is not None else combine(None, b_val[j])
        out_idx.append(k)
        out_val.append(v)
        sources.append((i, j))
    rank = a_idx.shape[1] if a_idx.ndim == 2 else b_idx.shape[1]
    return (np.asarray(out_idx, np.int64).reshape(-1, rank), np.asarray(out_val, dtype=a_val.dtype), sources)


def _sparse_add_kernel(node, ctx):
    def run(a_idx, a_val, a_shape, b_idx, b_val, b_shape, thresh):
        a_val, b_val = np.asarray(a_val), np.asarray(b_val)
        if not np.array_equal(np.asarray(a_shape).reshape(-1), np.asarray(b_shape).reshape(-1)):
            raise invalid(node, f"Operands do not have the same ranks or shapes: {np.asarray(a_shape).tolist()} and "
                                f"{np.asarray(b_shape).tolist()}")
        idx, val, _ = _merge(node, a_idx, a_val, b_idx, b_val,
                             lambda x, y: x if y is None else y if x is None else x + y,
                             keep=lambda v: abs(v) >= thresh)
        return idx, val, np.asarray(a_shape, np.int64).reshape(-1)
    return run


def _sparse_add_infer(op):
    rank = op.inputs[2].shape[0].value if op.inputs[2].shape.ndims == 1 else None
    return [(dtypes.int64, TensorShape([None, rank])), (op.inputs[1].dtype, TensorShape([None])),
            (dtypes.int64, TensorShape([rank]))]


def _sparse_add_grad_kernel(node, ctx):
    def run(grad, a_idx, b_idx, sum_idx):
        grad = np.asarray(grad)
        where_in_sum = {k: i for i, k in enumerate(_row_keys(sum_idx))}
        return _grad_at(grad, where_in_sum, a_idx), _grad_at(grad, where_in_sum, b_idx)
    return run


register("SparseAddGrad", lambda op: [(op.inputs[0].dtype, TensorShape([op.inputs[1].shape[0].value])),
                                      (op.inputs[0].dtype, TensorShape([op.inputs[2].shape[0].value]))],
         _sparse_add_grad_kernel, grad=None)


def _sparse_add_grad(op, *grads):
    grad = grads[1]
    a_grad, b_grad = make_op("SparseAddGrad", [grad, op.inputs[0], op.inputs[3], op.outputs[0]],
                             {"T": grad.dtype}, name="SparseAddGrad").outputs
    return [None, a_grad, None, None, b_grad, None, None]


register("SparseAdd", _sparse_add_infer, _sparse_add_kernel, grad=_sparse_add_grad)


def _dense_add_kernel(node, ctx):
    def run(idx, values, dense_shape, dense):
        dense = np.asarray(dense)
        dense_shape = [int(d) for d in np.reshape(dense_shape, -1)]
        if list(dense.shape) != dense_shape:
            raise invalid(node, f"Dimensions of the dense tensor {list(dense.shape)} and the SparseTensor "
                                f"{dense_shape} must match")
        out = np.array(dense, copy=True)
        np.add.at(out, tuple(np.asarray(idx, np.int64).T), np.asarray(values))
        return out
    return run


def _dense_add_grad(op, grad):
    return [None, make_op("GatherNd", [grad, op.inputs[0]]).outputs[0], None, grad]


register("SparseTensorDenseAdd", lambda op: [(op.inputs[3].dtype, op.inputs[3].shape)], _dense_add_kernel,
         grad=_dense_add_grad)


# -- SparseSparseMaximum, SparseSparseMinimum ------------------------------------------------------
def _sparse_sparse(op_type: str, sp_a, sp_b, name):
    a, b = convert_sparse(sp_a, "sp_a"), convert_sparse(sp_b, "sp_b")
    with name_scope(name, op_type, [a, b]) as scope:
        op = make_op(op_type, [a.indices, a.values, a.dense_shape, b.indices, b.values, b.dense_shape],
                     {"T": a.dtype}, name=scope)
        return SparseTensor(op.outputs[0], op.outputs[1], identity(a.dense_shape))


@tf_export("sparse.maximum", "sparse_maximum")
def sparse_maximum(sp_a, sp_b, name=None) -> SparseTensor:
    """tf.sparse.maximum(sp_a, sp_b, name=None): the elementwise maximum of two row-major
    SparseTensors of one shape (a missing entry counts as 0)."""
    return _sparse_sparse("SparseSparseMaximum", sp_a, sp_b, name)


@tf_export("sparse.minimum", "sparse_minimum")
def sparse_minimum(sp_a, sp_b, name=None) -> SparseTensor:
    """tf.sparse.minimum(sp_a, sp_b, name=None): the elementwise minimum (missing entries are 0)."""
    return _sparse_sparse("SparseSparseMinimum", sp_a, sp_b, name)


def _sparse_sparse_kernel(fn):
    def factory(node, ctx):
        def run(a_idx, a_val, a_shape, b_idx, b_val, b_shape):
            a_val, b_val = np.asarray(a_val), np.asarray(b_val)
            if not np.array_equal(np.asarray(a_shape).reshape(-1), np.asarray(b_shape).reshape(-1)):
                raise invalid(node, "Operands' shapes do not match")
            zero = np.zeros((), a_val.dtype)
            idx, val, _ = _merge(node, a_idx, a_val, b_idx, b_val,
                                 lambda x, y: fn(zero if x is None else x, zero if y is None else y))
            return idx, val
        return run
    return factory


for _t, _fn in (("SparseSparseMaximum", np.maximum), ("SparseSparseMinimum", np.minimum)):
    register(_t, lambda op: [(dtypes.int64, TensorShape([None, op.inputs[0].shape[1].value
                                                         if op.inputs[0].shape.ndims == 2 else None])),
                             (op.inputs[1].dtype, TensorShape([None]))], _sparse_sparse_kernel(_fn), grad=None)
