"""Sparse ops, core: sparse_placeholder, from_dense / to_dense (SparseToDense), sparse_to_dense,
sparse_reorder (SparseReorder), sparse_reshape (SparseReshape), sparse_fill_empty_rows
(SparseFillEmptyRows), and the composites sparse_retain, sparse_reset_shape, sparse_transpose,
sparse_expand_dims, sparse.eye, sparse_to_indicator, sparse_merge and sparse_mask."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.shapes import TensorShape, as_shape
from tensorweave.framework.sparse_tensor import SparseTensor, SparseTensorValue, convert_to_tensor_or_sparse_tensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value, constant_value_as_shape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, stack
from tensorweave.ops.array.core import expand_dims, identity, invert_permutation, placeholder, reshape, shape
from tensorweave.ops.array.fill import ones, zeros_like
from tensorweave.ops.array.gather import gather
from tensorweave.ops.array.sort import setdiff1d, where
from tensorweave.ops.helpers import check_output_size, invalid, make_op, static_ints
from tensorweave.ops.math.array_composites import gather_nd
from tensorweave.ops.math.binary import not_equal
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_max
from tensorweave.ops.math.binary import subtract
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.registry import RegisterGradient, register

# framework's SparseTensor, declared here: a program whose first name is tf.SparseTensor built
# from Python lists gets the op library that converts them.
tf_export("sparse.SparseTensor", "SparseTensor")(SparseTensor)
tf_export("convert_to_tensor_or_sparse_tensor", "contrib.framework.convert_to_tensor_or_sparse_tensor")(
    convert_to_tensor_or_sparse_tensor)


def convert_sparse(sp_input, what: str = "sp_input") -> SparseTensor:
    """A SparseTensor from a SparseTensor or SparseTensorValue; TypeError otherwise."""
    if isinstance(sp_input, SparseTensorValue):
        return SparseTensor.from_value(sp_input)
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"Input {what} must be a SparseTensor, got {type(sp_input).__name__}")
    return sp_input


def lex_order(indices: np.ndarray) -> np.ndarray:
    """The permutation that puts [N, rank] indices in row-major (lexicographic) order."""
    if indices.shape[0] == 0 or indices.shape[1] == 0:
        return np.arange(indices.shape[0])
    return np.lexsort(indices.T[::-1])


def static_rank(sp: SparseTensor):
    return sp.get_shape().ndims


# -- sparse_placeholder ----------------------------------------------------------------------------
@tf_export("sparse.placeholder", "sparse_placeholder")
def sparse_placeholder(dtype, shape=None, name=None) -> SparseTensor:
    """tf.sparse_placeholder(dtype, shape=None, name=None): a SparseTensor to be fed a
    SparseTensorValue; a fully known `shape` makes dense_shape a constant."""
    shape_name = None if name is None else name + "/shape"
    rank = None
    dense_shape = None
    if shape is not None:
        if isinstance(shape, Tensor):
            dense_shape = shape
            rank = shape.shape[0].value if shape.shape.ndims == 1 else None
        else:
            shape = as_shape(shape)
            rank = shape.ndims
            if shape.is_fully_defined():
                dense_shape = convert_to_tensor(shape.as_list(), dtype=dtypes.int64, name=shape_name)
    if dense_shape is None:
        dense_shape = placeholder(dtypes.int64, [rank], name=shape_name)
    return SparseTensor(
        values=placeholder(dtype, [None], name=None if name is None else name + "/values"),
        indices=placeholder(dtypes.int64, [None, rank], name=None if name is None else name + "/indices"),
        dense_shape=dense_shape)


# -- SparseToDense ---------------------------------------------------------------------------------
@tf_export("sparse_to_dense")
def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0, validate_indices=True,
                    name=None) -> Tensor:
    """tf.sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0,
    validate_indices=True, name=None): a dense tensor of output_shape holding sparse_values at
    sparse_indices (a scalar, a vector, or [N, rank]) and default_value elsewhere; with
    validate_indices the indices must be sorted and unique."""
    with name_scope(name, "SparseToDense", [sparse_indices, output_shape, sparse_values]) as scope:
        idx = convert_to_tensor(sparse_indices, name="sparse_indices")
        out_shape = convert_to_tensor(output_shape, dtype=idx.dtype, name="output_shape")
        values = convert_to_tensor(sparse_values, name="sparse_values")
        default = convert_to_tensor(default_value, dtype=values.dtype, name="default_value")
        return make_op("SparseToDense", [idx, out_shape, values, default],
                       {"validate_indices": bool(validate_indices), "T": values.dtype, "Tindices": idx.dtype},
                       name=scope).outputs[0]


def _sparse_to_dense_infer(op):
    out = constant_value_as_shape(op.inputs[1])
    check_output_size(op, out)
    return [(op.inputs[2].dtype, out)]


def _sparse_to_dense_kernel(node, ctx):
    validate = bool(node.attr.get("validate_indices", True))

    def run(idx, out_shape, values, default):
        out_shape = [int(d) for d in np.reshape(out_shape, -1)]
        idx = np.asarray(idx).reshape(-1, 1) if np.ndim(idx) < 2 else np.asarray(idx)
        if np.ndim(idx) == 2 and idx.shape[1] != len(out_shape) and idx.size:
            raise invalid(node, f"sparse_indices should have {len(out_shape)} columns, got shape {list(idx.shape)}")
        values = np.asarray(values)
        n = idx.shape[0]
        if values.ndim not in (0, 1) or (values.ndim == 1 and values.shape[0] != n):
            raise invalid(node, f"sparse_values has incorrect shape {list(values.shape)}, should be [] or [{n}]")
        if n and (np.any(idx < 0) or np.any(idx >= np.asarray(out_shape))):
            bad = int(np.flatnonzero(np.any((idx < 0) | (idx >= np.asarray(out_shape)), axis=1))[0])
            raise invalid(node, f"indices[{bad}] = {idx[bad].tolist()} is out of bounds: need 0 <= index < "
                                f"{out_shape}")
        if validate and n > 1:
            flat = np.ravel_multi_index(idx.T, out_shape)
            if np.any(np.diff(flat) <= 0):
                bad = int(np.flatnonzero(np.diff(flat) <= 0)[0]) + 1
                what = "repeated" if flat[bad] == flat[bad - 1] else "out of order"
                raise invalid(node, f"indices[{bad}] = {idx[bad].tolist()} is {what}")
        check_output_size(node, out_shape)
        out = np.full(out_shape, default, dtype=values.dtype if values.dtype != object else object)
        if n:
            out[tuple(idx.T)] = values
        return out
    return run


register("SparseToDense", _sparse_to_dense_infer, _sparse_to_dense_kernel, dtypes={0: ("sparse_indices", (
    dtypes.int32, dtypes.int64))})   # gradient: sparse_grad.py


@tf_export("sparse.to_dense", "sparse_tensor_to_dense")
def sparse_tensor_to_dense(sp_input, default_value=0, validate_indices=True, name=None) -> Tensor:
    """tf.sparse.to_dense(sp_input, default_value=0, validate_indices=True, name=None): the dense
    tensor a SparseTensor stands for (its indices must be ordered when validated)."""
    sp = convert_sparse(sp_input)
    with name_scope(name, "SparseToDense", [sp.indices, sp.values]):
        out = sparse_to_dense(sp.indices, sp.dense_shape, sp.values, default_value=default_value,
                              validate_indices=validate_indices, name=name)
        out.set_shape(sp.get_shape())
        return out


@tf_export("sparse.from_dense")
def from_dense(tensor, name=None) -> SparseTensor:
    """tf.sparse.from_dense(tensor, name=None): the non-zero (non-empty) entries of a dense
    tensor, in row-major order."""
    with name_scope(name, "dense_to_sparse", [tensor]):
        tensor = convert_to_tensor(tensor, name="tensor")
        zero = convert_to_tensor(b"" if tensor.dtype == dtypes.string else 0, dtype=tensor.dtype)
        indices = where(not_equal(tensor, zero))
        return SparseTensor(indices, gather_nd(tensor, indices), shape(tensor, out_type=dtypes.int64))


# -- SparseReorder ---------------------------------------------------------------------------------
@tf_export("sparse.reorder", "sparse_reorder")
def sparse_reorder(sp_input, name=None) -> SparseTensor:
    """tf.sparse.reorder(sp_input, name=None): the same SparseTensor with its entries in
    row-major order."""
    sp = convert_sparse(sp_input)
    with name_scope(name, "SparseReorder", [sp.indices, sp.values]) as scope:
        op = make_op("SparseReorder", [sp.indices, sp.values, sp.dense_shape], {"T": sp.dtype}, name=scope)
        return SparseTensor(op.outputs[0], op.outputs[1], identity(sp.dense_shape))


def _reorder_kernel(node, ctx):
    def run(idx, values, dense_shape):
        idx, values = np.asarray(idx), np.asarray(values)
        order = lex_order(idx)
        return idx[order], values[order]
    return run


register("SparseReorder", lambda op: [(dtypes.int64, op.inputs[0].shape), (op.inputs[1].dtype, op.inputs[1].shape)],
         _reorder_kernel)   # gradient: sparse_grad.py


# -- SparseReshape ---------------------------------------------------------------------------------
@tf_export("sparse.reshape", "sparse_reshape")
def sparse_reshape(sp_input, shape, name=None) -> SparseTensor:
    """tf.sparse.reshape(sp_input, shape, name=None): the SparseTensor with the dense shape
    `shape` (one dimension may be -1), entries keeping their row-major positions."""
    sp = convert_sparse(sp_input)
    with name_scope(name, "SparseReshape", [sp]) as scope:
        new_shape = convert_to_tensor(shape, dtype=dtypes.int64, name="shape")
        op = make_op("SparseReshape", [sp.indices, sp.dense_shape, new_shape], name=scope)
        out = SparseTensor(op.outputs[0], identity(sp.values), op.outputs[1])
        return out


def _reshape_infer(op):
    new = constant_value(op.inputs[2])
    rank = op.inputs[2].shape[0].value if op.inputs[2].shape.ndims == 1 else None
    out_shape = TensorShape([rank])
    return [(dtypes.int64, TensorShape([op.inputs[0].shape[0].value if op.inputs[0].shape.ndims else None, rank])),
            (dtypes.int64, out_shape if new is None else TensorShape([len(np.reshape(new, -1))]))]


def _reshape_kernel(node, ctx):
    def run(idx, in_shape, new_shape):
        idx, in_shape = np.asarray(idx), [int(d) for d in np.reshape(in_shape, -1)]
        new_shape = [int(d) for d in np.reshape(new_shape, -1)]
        total = int(np.prod(in_shape, dtype=np.int64))
        if new_shape.count(-1) > 1:
            raise invalid(node, f"only one output dimension may be -1, not both in {new_shape}")
        if -1 in new_shape:
            known = int(np.prod([d for d in new_shape if d != -1], dtype=np.int64))
            if known == 0 or total % known:
                raise invalid(node, f"Input to reshape is a SparseTensor with {total} dense values, but the "
                                    f"requested shape requires a multiple of {known}")
            new_shape[new_shape.index(-1)] = total // known
        if int(np.prod(new_shape, dtype=np.int64)) != total:
            raise invalid(node, f"Input to reshape is a tensor with {total} dense values, but the requested shape "
                                f"has {int(np.prod(new_shape))}")
        if idx.shape[0] == 0:
            return np.zeros((0, len(new_shape)), np.int64), np.asarray(new_shape, np.int64)
        flat = np.ravel_multi_index(idx.T, in_shape)
        out = np.stack(np.unravel_index(flat, new_shape), axis=1) if new_shape else np.zeros((len(flat), 0), np.int64)
        return out.astype(np.int64), np.asarray(new_shape, np.int64)
    return run


register("SparseReshape", _reshape_infer, _reshape_kernel, grad=None)


# -- SparseFillEmptyRows ---------------------------------------------------------------------------
@tf_export("sparse.fill_empty_rows", "sparse_fill_empty_rows")
def sparse_fill_empty_rows(sp_input, default_value, name=None):
    """tf.sparse.fill_empty_rows(sp_input, default_value, name=None) -> (sp_output,
    empty_row_indicator): sp_input (ordered row-major) with an entry [row, 0, ...] =
    default_value added for each row that has none, and a bool vector of those rows."""
    sp = convert_sparse(sp_input)
    with name_scope(name, "SparseFillEmptyRows", [sp]) as scope:
        default = convert_to_tensor(default_value, dtype=sp.dtype, name="default_value")
        op = make_op("SparseFillEmptyRows", [sp.indices, sp.values, sp.dense_shape, default], {"T": sp.dtype},
                     name=scope)
        return SparseTensor(op.outputs[0], op.outputs[1], sp.dense_shape), op.outputs[2]


def _fill_empty_rows_infer(op):
    rows = static_ints(op.inputs[2])   # empty_row_indicator has dense_shape[0] elements
    check_output_size(op, rows[:1] if rows else None)
    rank = op.inputs[0].shape[1].value if op.inputs[0].shape.ndims == 2 else None
    return [(dtypes.int64, TensorShape([None, rank])), (op.inputs[1].dtype, TensorShape([None])),
            (dtypes.bool, TensorShape([None])), (dtypes.int64, TensorShape([op.inputs[1].shape[0].value
                                                                           if op.inputs[1].shape.ndims else None]))]


def _fill_empty_rows_kernel(node, ctx):
    def run(idx, values, dense_shape, default):
        idx, values = np.asarray(idx), np.asarray(values)
        dense_shape = [int(d) for d in np.reshape(dense_shape, -1)]
        if not dense_shape:
            raise invalid(node, "dense_shape must be a non-empty vector")
        rows = dense_shape[0]
        check_output_size(node, [rows])   # empty_row_indicator; the output entries are at most nnz + rows
        present = np.zeros(rows, bool)
        if idx.shape[0]:
            if idx[:, 0].min() < 0 or idx[:, 0].max() >= rows:
                raise invalid(node, f"indices must lie in [0, {rows}) along dimension 0")
            present[idx[:, 0]] = True
        empty = np.flatnonzero(~present)
        fill_idx = np.zeros((empty.size, len(dense_shape)), np.int64)
        fill_idx[:, 0] = empty
        all_idx = np.concatenate([idx.astype(np.int64).reshape(-1, len(dense_shape)), fill_idx])
        all_values = np.concatenate([values, np.full(empty.size, default, dtype=values.dtype)])
        # Entries stay in input order within a row (a stable sort by row), as TF's kernel does.
        order = np.argsort(all_idx[:, 0], kind="stable")
        reverse = np.empty(all_idx.shape[0], np.int64)
        reverse[order] = np.arange(order.size)
        return all_idx[order], all_values[order], ~present, reverse[:idx.shape[0]]
    return run


register("SparseFillEmptyRows", _fill_empty_rows_infer, _fill_empty_rows_kernel)   # gradient: sparse_grad.py


def fill_empty_rows_grad(reverse_index_map: Tensor, grad_values: Tensor):
    """(d values, d default_value) of SparseFillEmptyRows (op SparseFillEmptyRowsGrad)."""
    op = make_op("SparseFillEmptyRowsGrad", [reverse_index_map, grad_values], {"T": grad_values.dtype})
    return op.outputs[0], op.outputs[1]


def _fill_grad_kernel(node, ctx):
    def run(reverse, grad):
        grad = np.asarray(grad)
        d_values = grad[np.asarray(reverse)]
        return d_values, np.asarray(grad.sum() - d_values.sum(), grad.dtype)
    return run


register("SparseFillEmptyRowsGrad", lambda op: [(op.inputs[1].dtype, op.inputs[0].shape),
                                                (op.inputs[1].dtype, TensorShape([]))], _fill_grad_kernel, grad=None)


# -- composites ------------------------------------------------------------------------------------
@tf_export("sparse.retain", "sparse_retain")
def sparse_retain(sp_input, to_keep) -> SparseTensor:
    """tf.sparse.retain(sp_input, to_keep): the entries of sp_input where the bool vector
    to_keep (one per entry) is True."""
    sp = convert_sparse(sp_input)
    with name_scope(None, "sparse_retain", [sp, to_keep]):
        to_keep = convert_to_tensor(to_keep, name="to_keep")
        if to_keep.shape.ndims not in (None, 1):
            raise ValueError(f"to_keep must be a vector, got shape {to_keep.shape}")
        keep = reshape(where(to_keep), [-1])
        return SparseTensor(gather(sp.indices, keep), gather(sp.values, keep), identity(sp.dense_shape))


@tf_export("sparse.reset_shape", "sparse_reset_shape")
def sparse_reset_shape(sp_input, new_shape=None) -> SparseTensor:
    """tf.sparse.reset_shape(sp_input, new_shape=None): the same entries with dense shape
    new_shape (each dim >= the old one), or the tightest shape holding the entries."""
    sp = convert_sparse(sp_input)
    with name_scope(None, "SparseResetShape", [sp]):
        if new_shape is None:
            dense_shape = reduce_max(sp.indices, 0) + 1
        else:
            dense_shape = convert_to_tensor(new_shape, dtype=dtypes.int64, name="new_shape")
        return SparseTensor(identity(sp.indices), identity(sp.values), dense_shape)


@tf_export("sparse.transpose", "sparse_transpose")
def sparse_transpose(sp_input, perm=None, name=None) -> SparseTensor:
    """tf.sparse.transpose(sp_input, perm=None, name=None): the SparseTensor with its dimensions
    permuted by perm (reversed when None), entries reordered row-major."""
    sp = convert_sparse(sp_input)
    with name_scope(name, "SparseTranspose", [sp]):
        if perm is None:
            rank = static_rank(sp)
            perm = list(range(rank - 1, -1, -1)) if rank is not None else \
                make_op("ReverseV2", [range_(shape(sp.dense_shape)[0]), convert_to_tensor([0])]).outputs[0]
        perm_t = convert_to_tensor(perm, dtype=dtypes.int32, name="perm")
        indices = gather(sp.indices, perm_t, axis=1)
        return sparse_reorder(SparseTensor(indices, sp.values, gather(sp.dense_shape, perm_t)))


@tf_export("sparse.expand_dims")
def sparse_expand_dims(sp_input, axis=None, name=None) -> SparseTensor:
    """tf.sparse.expand_dims(sp_input, axis=None, name=None): a size-1 dimension inserted at
    axis (counting from the end when negative)."""
    sp = convert_sparse(sp_input)
    with name_scope(name, "expand_dims", [sp]):
        axis = -1 if axis is None else int(axis)
        rank = shape(sp.dense_shape, out_type=dtypes.int64)[0]
        column = expand_dims(zeros_like(sp.indices[:, 0]), 1)
        pos = axis if axis >= 0 else rank + 1 + axis
        indices = concat([sp.indices[:, :pos], column, sp.indices[:, pos:]], 1)
        dense_shape = concat([sp.dense_shape[:pos], convert_to_tensor([1], dtype=dtypes.int64),
                              sp.dense_shape[pos:]], 0)
        return SparseTensor(indices, identity(sp.values), dense_shape)


@tf_export("sparse.eye")
def sparse_eye(num_rows, num_columns=None, dtype=dtypes.float32, name=None) -> SparseTensor:
    """tf.sparse.eye(num_rows, num_columns=None, dtype=tf.float32, name=None): the identity
    matrix as a SparseTensor."""
    with name_scope(name, "eye", [num_rows, num_columns]):
        rows = cast(convert_to_tensor(num_rows, name="num_rows"), dtypes.int64)
        cols = rows if num_columns is None else cast(convert_to_tensor(num_columns, name="num_columns"), dtypes.int64)
        diag = make_op("Minimum", [rows, cols], {"T": dtypes.int64}).outputs[0]
        diag_range = range_(diag, dtype=dtypes.int64)
        return SparseTensor(stack([diag_range, diag_range], axis=1), ones(reshape(diag, [1]), dtype=dtype),
                            stack([rows, cols]))


@tf_export("sparse.to_indicator", "sparse_to_indicator")
def sparse_to_indicator(sp_input, vocab_size, name=None) -> Tensor:
    """tf.sparse.to_indicator(sp_input, vocab_size, name=None): a dense bool tensor [..., vocab_size]
    that is True at [i..., id] for each id in row i... of the int SparseTensor sp_input."""
    sp = convert_sparse(sp_input)
    with name_scope(name, "SparseToIndicator", [sp]):
        ids = cast(sp.values, dtypes.int64)
        indices = concat([sp.indices[:, :-1], expand_dims(ids, 1)], 1)
        dense_shape = concat([sp.dense_shape[:-1], reshape(cast(vocab_size, dtypes.int64), [1])], 0)
        ordered = sparse_reorder(SparseTensor(indices, ones(shape(ids), dtype=dtypes.bool), dense_shape))
        return sparse_to_dense(ordered.indices, ordered.dense_shape, True, default_value=False, validate_indices=False)


@tf_export("sparse.merge", "sparse_merge")
def sparse_merge(sp_ids, sp_values, vocab_size, name=None, already_sorted=False) -> SparseTensor:
    """tf.sparse_merge(sp_ids, sp_values, vocab_size, name=None, already_sorted=False): the
    SparseTensor [..., vocab_size] holding sp_values at [row..., sp_ids] (one id list per row).
    A list of sp_ids with a list of vocab sizes gives one trailing dimension per id list."""
    several = isinstance(sp_ids, (list, tuple))
    ids = [convert_sparse(s, "sp_ids") for s in (sp_ids if several else [sp_ids])]
    sizes = list(vocab_size) if several else [vocab_size]
    if len(sizes) != len(ids):
        raise ValueError(f"sparse_merge: {len(ids)} sp_ids need as many vocab sizes, got {len(sizes)}")
    vals = convert_sparse(sp_values, "sp_values")
    with name_scope(name, "SparseMerge", ids + [vals]):
        new_ids = [expand_dims(cast(i.values, dtypes.int64), 1) for i in ids]
        indices = concat([ids[0].indices[:, :-1]] + new_ids, 1)
        dense_shape = concat([ids[0].dense_shape[:-1]] + [reshape(cast(v, dtypes.int64), [1]) for v in sizes], 0)
        out = SparseTensor(indices, vals.values, dense_shape)
        return out if already_sorted else sparse_reorder(out)


@tf_export("sparse.mask", "sparse_mask")
def sparse_mask(a, mask_indices, name=None) -> IndexedSlices:
    """tf.sparse_mask(a, mask_indices, name=None): the IndexedSlices `a` without the rows whose
    index is in mask_indices."""
    with name_scope(name, "sparse_mask", [a, mask_indices]):
        _, keep = setdiff1d(a.indices, mask_indices)
        return IndexedSlices(gather(a.values, keep), gather(a.indices, keep), a.dense_shape)


# -- gradients -------------------------------------------------------------------------------------
@RegisterGradient("SparseToDense")
def _sparse_to_dense_grad(op, grad):
    idx = op.inputs[0]
    values_grad = gather_nd(grad, idx if idx.shape.ndims == 2 else reshape(idx, [-1, 1]))
    if op.inputs[2].shape.ndims == 0:
        values_grad = reduce_sum(values_grad)
    default_grad = subtract(reduce_sum(grad), reduce_sum(values_grad))
    return [None, None, values_grad, default_grad]


@RegisterGradient("SparseReorder")
def _sparse_reorder_grad(op, unused_indices_grad, values_grad):
    # The entries' original positions, reordered like the values were, invert the permutation.
    positions = range_(shape(op.inputs[0], out_type=dtypes.int64)[0], dtype=dtypes.int64)
    order = make_op("SparseReorder", [op.inputs[0], positions, op.inputs[2]], {"T": dtypes.int64}).outputs[1]
    return [None, gather(values_grad, invert_permutation(order)), None]


@RegisterGradient("SparseFillEmptyRows")
def _fill_empty_rows_grad(op, unused_indices_grad, values_grad, unused_indicator_grad, unused_map_grad):
    d_values, d_default = fill_empty_rows_grad(op.outputs[3], values_grad)
    return [None, d_values, None, d_default]
