"""Sparse ops, arithmetic: sparse_tensor_dense_matmul (SparseTensorDenseMatMul), the
reductions sparse_reduce_sum / sparse_reduce_max (dense or sparse results), sparse_softmax
(SparseSoftmax), and SparseTensor * / dense tensors (SparseDenseCwiseMul, SparseDenseCwiseDiv;
SparseDenseCwiseAdd for softmax's gradient). sparse_matmul is TF1's dense matmul with sparsity
hints. tf.sparse.bincount (DenseCountSparseOutput, SparseCountSparseOutput)."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.sparse_tensor import SparseTensor, SparseTensorValue
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import expand_dims, matrix_transpose, reshape, shape, size, transpose
from tensorweave.ops.array.fill import ones, zeros_like
from tensorweave.ops.array.slicing import slice as slice_
from tensorweave.ops.array.gather import gather
from tensorweave.ops.helpers import adjoint, check_output_size, conjugate, invalid, make_op
from tensorweave.ops.math.array_composites import gather_nd
from tensorweave.ops.math.binary import floordiv, multiply, realdiv
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.linalg import matmul
from tensorweave.ops.math.reduction import reduce_sum, reduced_shape
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.math.unary import negative, square
from tensorweave.ops.registry import register
from tensorweave.ops.sparse.combine import sparse_add
from tensorweave.ops.sparse.core import convert_sparse


# -- SparseTensorDenseMatMul -----------------------------------------------------------------------
@tf_export("sparse.matmul", "sparse.sparse_dense_matmul", "sparse_tensor_dense_matmul")
def sparse_tensor_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None) -> Tensor:
    """tf.sparse.sparse_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None): the
    dense product of a rank-2 SparseTensor and a dense matrix (either adjoint when asked);
    repeated entries of sp_a add up."""
    sp = convert_sparse(sp_a, "sp_a")
    with name_scope(name, "SparseTensorDenseMatMul", [sp, b]) as scope:
        b = convert_to_tensor(b, dtype=sp.dtype, name="b")
        return make_op("SparseTensorDenseMatMul", [sp.indices, sp.values, sp.dense_shape, b],
                       {"adjoint_a": bool(adjoint_a), "adjoint_b": bool(adjoint_b), "T": sp.dtype,
                        "Tindices": dtypes.int64}, name=scope).outputs[0]


def _spmm_infer(op):
    a_shape, b = op.inputs[2], op.inputs[3]
    adj_a, adj_b = op.get_attr("adjoint_a"), op.get_attr("adjoint_b")
    sb = b.shape.with_rank(2) if b.shape.ndims is not None else unknown_shape(2)
    shape_value = constant_value(a_shape)
    rows = None if shape_value is None else int(np.reshape(shape_value, -1)[1 if adj_a else 0])
    inner = None if shape_value is None else int(np.reshape(shape_value, -1)[0 if adj_a else 1])
    b_inner, cols = (sb[1], sb[0]) if adj_b else (sb[0], sb[1])
    if inner is not None and b_inner.value is not None and inner != b_inner.value:
        raise ValueError(f"Dimensions must be equal, but are {inner} and {b_inner.value}")
    check_output_size(op, [rows, cols.value])
    return [(b.dtype, TensorShape([rows, cols]))]


def _spmm_kernel(node, ctx):
    adj_a, adj_b = bool(node.attr.get("adjoint_a")), bool(node.attr.get("adjoint_b"))

    def run(idx, values, a_shape, b):
        idx, values, b = np.asarray(idx, np.int64), np.asarray(values), np.asarray(b)
        a_shape = [int(d) for d in np.reshape(a_shape, -1)]
        if len(a_shape) != 2 or b.ndim != 2:
            raise invalid(node, f"Tensor 'a' and 'b' must be matrices, got shapes {a_shape} and {list(b.shape)}")
        if adj_b:
            b = adjoint(b)
        rows, cols = (idx[:, 1], idx[:, 0]) if adj_a else (idx[:, 0], idx[:, 1])
        if adj_a:
            values = conjugate(values)
        out_rows, inner = (a_shape[1], a_shape[0]) if adj_a else (a_shape[0], a_shape[1])
        if inner != b.shape[0]:
            raise invalid(node, f"Cannot multiply A and B because inner dimension does not match: {inner} vs. "
                                f"{b.shape[0]}.  Did you forget a transpose?  Dimensions of A: {a_shape}.  "
                                f"Dimensions of B: {list(b.shape)}")
        if idx.shape[0] and (rows.min() < 0 or rows.max() >= out_rows or cols.min() < 0 or cols.max() >= inner):
            raise invalid(node, f"sp_a indices are out of bounds of its dense shape {a_shape}")
        check_output_size(node, [out_rows, b.shape[1]])
        out = np.zeros((out_rows, b.shape[1]), dtype=b.dtype)
        np.add.at(out, rows, values[:, None] * b[cols])
        return out
    return run


def _spmm_grad(op, grad):
    idx, values, a_shape, b = op.inputs
    adj_a, adj_b = op.get_attr("adjoint_a"), op.get_attr("adjoint_b")
    b_grad = sparse_tensor_dense_matmul(SparseTensor(idx, values, a_shape), grad, adjoint_a=not adj_a)
    if adj_b:
        b_grad = matrix_transpose(b_grad, conjugate=True)
    rows, cols = idx[:, 0], idx[:, 1]
    parts_a = gather(grad, cols if adj_a else rows)
    parts_b = gather(transpose(b) if adj_b else b, rows if adj_a else cols)
    return [None, reduce_sum(multiply(parts_a, parts_b), 1), None, b_grad]


register("SparseTensorDenseMatMul", _spmm_infer, _spmm_kernel, grad=_spmm_grad)


@tf_export("sparse_matmul")
def sparse_matmul(a, b, transpose_a=False, transpose_b=False, a_is_sparse=False, b_is_sparse=False, name=None):
    """tf.sparse_matmul(a, b, transpose_a=False, transpose_b=False, a_is_sparse=False,
    b_is_sparse=False, name=None): the product of two dense matrices (the sparsity hints change
    nothing here)."""
    return matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b, name=name or "SparseMatMul")


# -- SparseReduceSum / SparseReduceMax (dense and sparse results) ----------------------------------
def _axes(axis, reduction_axes):
    axes = reduction_axes if axis is None else axis
    if axes is None:
        return None
    return [int(a) for a in np.reshape(axes, -1)]


def _sparse_reduce(kind: str, sparse_out: bool, sp_input, axis, keepdims, reduction_axes, name):
    sp = convert_sparse(sp_input)
    op_type = f"SparseReduce{kind}" + ("Sparse" if sparse_out else "")
    with name_scope(name, op_type, [sp]) as scope:
        axes = _axes(axis, reduction_axes)
        rank = sp.get_shape().ndims
        axes_t = convert_to_tensor(np.asarray(axes if axes is not None else
                                              (list(range(rank)) if rank is not None else []), np.int32),
                                   name="reduction_axes")
        if axes is None and rank is None:
            axes_t = range_(size(sp.dense_shape))
        op = make_op(op_type, [sp.indices, sp.values, sp.dense_shape, axes_t],
                     {"keep_dims": bool(keepdims), "T": sp.dtype}, name=scope)
        if sparse_out:
            return SparseTensor(op.outputs[0], op.outputs[1], op.outputs[2])
        return op.outputs[0]


def _reduce_groups(node, idx, values, dense_shape, axes, keep):
    """For each entry its output coordinates, the unique output coordinates (row-major) and
    each entry's group number, and the output dense shape."""
    idx = np.asarray(idx, np.int64)
    dense_shape = [int(d) for d in np.reshape(dense_shape, -1)]
    rank = len(dense_shape)
    red = set()
    for a in np.reshape(axes, -1).tolist():
        if not -rank <= a < rank:
            raise invalid(node, f"Invalid reduction dimension {a}, for input with {rank} dimensions.")
        red.add(a % rank)
    kept = [d for d in range(rank) if d not in red]
    out_shape = [1 if d in red else dense_shape[d] for d in range(rank)] if keep else [dense_shape[d] for d in kept]
    coords = idx.copy() if keep else idx[:, kept]
    if keep:
        coords[:, sorted(red)] = 0
    if coords.shape[0] == 0:
        return coords, np.zeros((0, coords.shape[1]), np.int64), np.zeros(0, np.int64), out_shape
    uniq, group = np.unique(coords, axis=0, return_inverse=True)
    return coords, uniq, group.reshape(-1), out_shape


def _sparse_reduce_kernel(kind: str, sparse_out: bool):
    def factory(node, ctx):
        keep = bool(node.attr.get("keep_dims"))

        def run(idx, values, dense_shape, axes):
            values = np.asarray(values)
            _, uniq, group, out_shape = _reduce_groups(node, idx, values, dense_shape, axes, keep)
            n = uniq.shape[0]
            if kind == "Sum":
                acc = np.zeros(n, values.dtype)
                np.add.at(acc, group, values)
            else:
                acc = np.full(n, -np.inf if values.dtype.kind == "f" else np.iinfo(values.dtype).min, values.dtype)
                np.maximum.at(acc, group, values)
            if sparse_out:
                return uniq.astype(np.int64), acc, np.asarray(out_shape, np.int64)
            # Outputs no entry reaches are 0 (for the max too: only present values count).
            check_output_size(node, out_shape)
            out = np.zeros(out_shape, values.dtype)
            if n:
                out[tuple(uniq.T)] = acc if out_shape else acc[0]
            return out
        return run
    return factory


def _reduce_infer(sparse_out: bool):
    def infer(op):
        values = op.inputs[1]
        if sparse_out:
            return [(dtypes.int64, TensorShape([None, None])), (values.dtype, TensorShape([None])),
                    (dtypes.int64, TensorShape([None]))]
        shape_value, axes = constant_value(op.inputs[2]), constant_value(op.inputs[3])
        if shape_value is None or axes is None:
            return [(values.dtype, unknown_shape())]
        dims = [int(d) for d in np.reshape(shape_value, -1)]
        red = {int(a) % max(len(dims), 1) for a in np.reshape(axes, -1)}
        keep = op.get_attr("keep_dims")
        out = [1 if d in red else s for d, s in enumerate(dims)] if keep else \
            [s for d, s in enumerate(dims) if d not in red]
        check_output_size(op, out)
        return [(values.dtype, TensorShape(out))]
    return infer


def _reduce_sum_grad(op, out_grad):
    # Each entry's gradient is the output gradient at its reduced coordinates.
    sp_indices, sp_shape = op.inputs[0], op.inputs[2]
    kept_shape = reduced_shape(sp_shape, cast(op.inputs[3], dtypes.int64))
    grad = reshape(out_grad, kept_shape)
    scale = floordiv(sp_shape, kept_shape)
    return [None, gather_nd(grad, floordiv(sp_indices, scale)), None, None]


for _kind in ("Sum", "Max"):
    for _sparse_out in (False, True):
        register(f"SparseReduce{_kind}" + ("Sparse" if _sparse_out else ""), _reduce_infer(_sparse_out),
                 _sparse_reduce_kernel(_kind, _sparse_out),
                 grad=_reduce_sum_grad if (_kind, _sparse_out) == ("Sum", False) else None)


@tf_export("sparse.reduce_sum", "sparse_reduce_sum")
def sparse_reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None) -> Tensor:
    """tf.sparse.reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None):
    the dense sum over `axis` (all axes when None) of a SparseTensor."""
    return _sparse_reduce("Sum", False, sp_input, axis, bool(keepdims or keep_dims), reduction_axes, None)


@tf_export("sparse.reduce_sum_sparse", "sparse_reduce_sum_sparse")
def sparse_reduce_sum_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None):
    """tf.sparse.reduce_sum_sparse(...): as sparse_reduce_sum, returning a SparseTensor with one
    entry per non-empty group."""
    return _sparse_reduce("Sum", True, sp_input, axis, bool(keepdims or keep_dims), reduction_axes, None)


@tf_export("sparse.reduce_max", "sparse_reduce_max")
def sparse_reduce_max(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None) -> Tensor:
    """tf.sparse.reduce_max(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None):
    the maximum of the present entries over `axis` (0 where a group has none; implicit zeros do
    not count)."""
    return _sparse_reduce("Max", False, sp_input, axis, bool(keepdims or keep_dims), reduction_axes, None)


@tf_export("sparse.reduce_max_sparse", "sparse_reduce_max_sparse")
def sparse_reduce_max_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None):
    """tf.sparse.reduce_max_sparse(...): as sparse_reduce_max, returning a SparseTensor."""
    return _sparse_reduce("Max", True, sp_input, axis, bool(keepdims or keep_dims), reduction_axes, None)


# -- SparseSoftmax ---------------------------------------------------------------------------------
@tf_export("sparse.softmax", "sparse_softmax")
def sparse_softmax(sp_input, name=None) -> SparseTensor:
    """tf.sparse.softmax(sp_input, name=None): the softmax over the last dimension of the present
    entries of each row (rank >= 2, row-major order); implicit zeros take no part."""
    sp = convert_sparse(sp_input)
    with name_scope(name, "SparseSoftmax", [sp]) as scope:
        out = make_op("SparseSoftmax", [sp.indices, sp.values, sp.dense_shape], {"T": sp.dtype},
                      name=scope).outputs[0]
        return SparseTensor(sp.indices, out, sp.dense_shape)


def _softmax_kernel(node, ctx):
    def run(idx, values, dense_shape):
        idx, values = np.asarray(idx, np.int64), np.asarray(values)
        if idx.shape[1] < 2:
            raise invalid(node, f"Input should have rank >= 2, but received shape: {np.asarray(dense_shape).tolist()}")
        if idx.shape[0] == 0:
            return values.copy()
        _, group = np.unique(idx[:, :-1], axis=0, return_inverse=True)
        group = group.reshape(-1)
        maxes = np.full(group.max() + 1, -np.inf, values.dtype)
        np.maximum.at(maxes, group, values)
        e = np.exp(values - maxes[group])
        sums = np.zeros_like(maxes)
        np.add.at(sums, group, e)
        return (e / sums[group]).astype(values.dtype)
    return run


def _softmax_grad(op, grad):
    # d softmax: (grad - sum(grad * y over the row)) * y
    idx, _, dense_shape = op.inputs
    y = op.outputs[0]
    row_sums = sparse_reduce_sum(SparseTensor(idx, multiply(y, grad), dense_shape), [-1], keepdims=True)
    shifted = sparse_dense_cwise("SparseDenseCwiseAdd", SparseTensor(idx, grad, dense_shape), negative(row_sums))
    return [None, multiply(shifted, y), None]


register("SparseSoftmax", lambda op: [(op.inputs[1].dtype, op.inputs[1].shape)], _softmax_kernel, grad=_softmax_grad)


# -- SparseTensor (op) dense -----------------------------------------------------------------------
def sparse_dense_cwise(op_type: str, sp: SparseTensor, dense) -> Tensor:
    """The values of sp combined with the dense tensor (broadcast to sp's dense shape) at sp's
    entries."""
    dense = convert_to_tensor(dense, dtype=sp.dtype, name="dense")
    return make_op(op_type, [sp.indices, sp.values, sp.dense_shape, dense], {"T": sp.dtype}).outputs[0]


def _cwise_kernel(fn):
    def factory(node, ctx):
        def run(idx, values, dense_shape, dense):
            dense_shape = [int(d) for d in np.reshape(dense_shape, -1)]
            dense = np.asarray(dense)
            try:
                full = np.broadcast_to(dense, dense_shape)
            except ValueError:
                raise invalid(node, f"Dense tensor of shape {list(dense.shape)} cannot broadcast to the "
                                    f"SparseTensor's shape {dense_shape}") from None
            picked = full[tuple(np.asarray(idx, np.int64).T)] if dense_shape else \
                np.broadcast_to(full, np.shape(values))
            return fn(np.asarray(values), picked).astype(np.asarray(values).dtype, copy=False)
        return run
    return factory


def _cwise_grad(is_mul: bool):
    def grad_fn(op, grad):
        """dx at each entry, and dy summed into the dense operand's (broadcast) positions."""
        x_indices, x_values, x_shape, y = op.inputs
        y_shape = shape(y, out_type=dtypes.int64)
        added_dims = expand_dims(size(x_shape) - size(y_shape), 0)
        augmented_y_shape = concat([ones(added_dims, dtype=dtypes.int64), y_shape], 0)
        scaled = floordiv(x_indices, floordiv(x_shape, augmented_y_shape))
        scaled = slice_(scaled, concat([[0], added_dims], 0), [-1, -1])
        dense_vals = gather_nd(y, scaled)
        if is_mul:
            dx, dy_val = multiply(grad, dense_vals), multiply(grad, x_values)
        else:
            dx = realdiv(grad, dense_vals)
            dy_val = multiply(grad, realdiv(negative(x_values), square(dense_vals)))
        dy = sparse_add(zeros_like(y), SparseTensor(scaled, dy_val, y_shape))
        return [None, dx, None, dy]
    return grad_fn


register("SparseDenseCwiseMul", lambda op: [(op.inputs[1].dtype, op.inputs[1].shape)], _cwise_kernel(np.multiply),
         grad=_cwise_grad(True))
register("SparseDenseCwiseDiv", lambda op: [(op.inputs[1].dtype, op.inputs[1].shape)],
         _cwise_kernel(np.true_divide), grad=_cwise_grad(False))
register("SparseDenseCwiseAdd", lambda op: [(op.inputs[1].dtype, op.inputs[1].shape)], _cwise_kernel(np.add),
         grad=None)


def _sparse_times(op_type: str):
    def method(self, other):
        if isinstance(other, SparseTensor):
            raise TypeError(f"{op_type}: a SparseTensor combines with a dense tensor only")
        with name_scope(None, op_type, [self, other]):
            return SparseTensor(self.indices, sparse_dense_cwise(op_type, self, other), self.dense_shape)
    return method


# TF1's SparseTensor operators (with a dense right operand).
SparseTensor.__mul__ = _sparse_times("SparseDenseCwiseMul")
SparseTensor.__truediv__ = _sparse_times("SparseDenseCwiseDiv")
SparseTensor.__div__ = SparseTensor.__truediv__


# -- DenseCountSparseOutput, SparseCountSparseOutput: tf.sparse.bincount -------------------------------
@tf_export("sparse.bincount")
def sparse_bincount(values, weights=None, axis=0, minlength=None, maxlength=None, binary_output=False, name=None):
    """tf.sparse.bincount(values, weights=None, axis=0, minlength=None, maxlength=None,
    binary_output=False, name=None): a SparseTensor counting each value of `values` (a Tensor or
    SparseTensor of non-negative ints): over all of it (axis=0, a [size] result) or per row of a
    rank-2 input (axis=-1, [rows, size]); size is maxlength when given, else max(largest value
    + 1, minlength), values >= maxlength dropped. `weights` (shaped as values) are summed
    instead of counting; binary_output gives 1 for each value present."""
    with name_scope(name, "count", [values, weights]):
        sparse_in = isinstance(values, (SparseTensor, SparseTensorValue))
        values = convert_sparse(values, "values") if sparse_in else convert_to_tensor(values, name="values")
        if weights is not None and binary_output:
            raise ValueError("Arguments `binary_output` and `weights` are mutually exclusive. Please specify only one.")
        if axis is None:
            axis = 0
        if axis not in (0, -1):
            raise ValueError(f"Unsupported value for argument axis={axis}. Only 0 and -1 are currently supported.")
        weights = _count_weights(values, weights, sparse_in) if weights is not None else \
            convert_to_tensor(np.zeros([0], values.dtype.as_numpy_dtype), name="weights")
        if axis == 0:   # every value in one batch, as TF: a SparseTensor's values, a Tensor flattened
            values = values.values if sparse_in else reshape(values, [-1])
            if not sparse_in and weights.shape.num_elements() != 0:
                weights = reshape(weights, [-1])
            sparse_in = False
        attrs = {"T": values.dtype, "minlength": -1 if minlength is None else int(minlength),
                 "maxlength": -1 if maxlength is None else int(maxlength), "binary_output": bool(binary_output),
                 "output_type": weights.dtype}
        if sparse_in:
            op = make_op("SparseCountSparseOutput", [values.indices, values.values, values.dense_shape, weights],
                         attrs, name="SparseCountSparseOutput")
        else:
            op = make_op("DenseCountSparseOutput", [values, weights], attrs, name="DenseCountSparseOutput")
        return SparseTensor(*op.outputs)


def _count_weights(values, weights, sparse_in: bool) -> Tensor:
    """The weights' values: a SparseTensor's for sparse values (whose indices and dense shape it
    must share: their static shapes are checked; TF also asserts their values equal at run
    time, which is not done here), a Tensor's otherwise."""
    if sparse_in:
        if not isinstance(weights, (SparseTensor, SparseTensorValue)):
            raise ValueError(f"Argument `weights` must be a SparseTensor if `values` is a SparseTensor. Received "
                             f"weights={weights} of type: {type(weights).__name__}")
        weights = convert_sparse(weights, "weights")
        for ours, theirs, what in ((weights.indices, values.indices, "indices"),
                                   (weights.dense_shape, values.dense_shape, "dense shape")):
            if not ours.shape.is_compatible_with(theirs.shape):
                raise ValueError(f"'weights' and 'values' must have the same {what}: both shapes must be equal, "
                                 f"got {ours.shape} and {theirs.shape}")
        return weights.values
    if isinstance(weights, (SparseTensor, SparseTensorValue)):
        raise ValueError(f"Argument `weights` must be a tf.Tensor if `values` is a tf.Tensor. Received "
                         f"weights={weights} of type: {type(weights).__name__}")
    return convert_to_tensor(weights, name="weights")


def _count_infer(op):
    rank = op.inputs[2].shape[0].value if op.type == "SparseCountSparseOutput" else None
    if op.type == "DenseCountSparseOutput" and op.inputs[0].shape.ndims is not None:
        rank = op.inputs[0].shape.ndims
        if rank not in (1, 2):
            raise ValueError(f"DenseCountSparseOutput: input must be a 1 or 2-dimensional tensor, got rank {rank}")
    return [(dtypes.int64, TensorShape([None, rank])), (op.get_attr("output_type"), TensorShape([None])),
            (dtypes.int64, TensorShape([rank]))]


def _count(node, batch, values, weights, num_batches):
    """TF's count ops: (indices, counts, dense shape), each batch's distinct kept values in
    increasing order; `batch` None for a rank-1 input."""
    minlength, maxlength = int(node.attr["minlength"]), int(node.attr["maxlength"])
    binary = bool(node.attr["binary_output"])
    out_dt = dtypes.as_dtype(node.attr["output_type"]).as_numpy_dtype
    values = np.asarray(values).astype(np.int64).reshape(-1)
    if (values < 0).any():
        raise invalid(node, "Input values must all be non-negative")
    keep = (maxlength <= 0) | (values < maxlength)
    kept = values[keep]
    width = maxlength if maxlength > 0 else max(int(kept.max()) + 1 if kept.size else 1, minlength)
    shape = [width] if batch is None else [num_batches, width]
    check_output_size(node, shape)
    rows = np.zeros_like(kept) if batch is None else np.asarray(batch, np.int64)[keep]
    keys, slot = np.unique(rows * width + kept, return_inverse=True)
    counts = np.zeros(keys.size, out_dt)
    if binary:
        counts[:] = 1
    else:
        np.add.at(counts, slot, weights.reshape(-1)[keep] if weights.size else np.ones(kept.size, out_dt))
    indices = keys[:, None] if batch is None else np.stack([keys // width, keys % width], axis=1)
    return indices.astype(np.int64), counts, np.asarray(shape, np.int64)


def _dense_count_kernel(node, ctx):
    def run(values, weights):
        if values.ndim not in (1, 2):
            raise invalid(node, f"Input must be a 1 or 2-dimensional tensor. Got: {list(values.shape)}")
        if weights.size and weights.shape != values.shape:
            raise invalid(node, f"Weights and data must have the same shape. Weight shape: {list(weights.shape)}; "
                                f"data shape: {list(values.shape)}")
        if values.ndim == 2 and not values.shape[0]:
            raise invalid(node, "Invalid input: Shapes dimension cannot be 0.")
        if values.ndim == 1:
            return _count(node, None, values, weights, 1)
        rows = np.repeat(np.arange(values.shape[0]), values.shape[1])
        return _count(node, rows, values, weights, values.shape[0])
    return run


def _sparse_count_kernel(node, ctx):
    def run(indices, values, dense_shape, weights):
        if dense_shape.size not in (1, 2):
            raise invalid(node, f"Input must be a 1 or 2-dimensional tensor. Got: {dense_shape.tolist()}")
        if indices.ndim != 2 or indices.shape != (values.size, dense_shape.size):
            raise invalid(node, f"Input indices must be [number of values, rank] = [{values.size}, {dense_shape.size}]"
                                f". Got: {list(indices.shape)}")
        bad = np.flatnonzero(((indices < 0) | (indices >= dense_shape)).any(axis=1))
        if bad.size:
            raise invalid(node, f"Invalid index value at {bad[0]}: {indices[bad[0]].tolist()} is not within the dense "
                                f"shape {dense_shape.tolist()}")
        if weights.size and weights.shape != values.shape:
            raise invalid(node, f"Weights and values must have the same shape. Weight shape: {list(weights.shape)}; "
                                f"values shape: {list(values.shape)}")
        if dense_shape.size == 1:
            return _count(node, None, values, weights, 1)
        return _count(node, indices[:, 0], values, weights, int(dense_shape[0]))
    return run


register("DenseCountSparseOutput", _count_infer, _dense_count_kernel, grad=None)
register("SparseCountSparseOutput", _count_infer, _sparse_count_kernel, grad=None)
