"""Math ops, segment reductions: segment_{sum,mean,max,min,prod} (sorted ids; the output has
max(id) + 1 rows), unsorted_segment_{sum,max,min,prod} (any ids, num_segments rows, negative
ids dropped) with unsorted_segment_{mean,sqrt_n} built on the sum, and the sparse segment
reductions sparse_segment_{sum,mean,sqrt_n} (rows `indices` of data, reduced by segment).
IndexedSlices become dense tensors here (the conversion function this module registers sums
their rows with UnsortedSegmentSum). Gradients are in math_grad.py (they gather)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor, register_tensor_conversion_function
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import rank, reshape, shape
from tensorweave.ops.array.fill import fill, ones
from tensorweave.ops.helpers import (INDEX, NUMERIC, REAL, accumulate_rows, array_module, check_output_size, invalid,
                                     make_op)
from tensorweave.ops.math.binary import maximum, realdiv
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.unary import sqrt
from tensorweave.ops.registry import register, register_gpu


def _lowest(dt: np.dtype):
    """The dtype's lowest finite value: what TF's unsorted max gives an empty segment."""
    return np.finfo(dt).min if dt.kind == "f" else np.iinfo(dt).min


def _highest(dt: np.dtype):
    return np.finfo(dt).max if dt.kind == "f" else np.iinfo(dt).max


# reduction -> (numpy ufunc applied with .at, value of an empty segment in the unsorted op)
_REDUCERS = {"Sum": (np.add, lambda dt: 0), "Prod": (np.multiply, lambda dt: 1), "Max": (np.maximum, _lowest),
             "Min": (np.minimum, _highest)}


def _reduce_rows(node, rows: np.ndarray, ids: np.ndarray, n: int, kind: str, empty) -> np.ndarray:
    """out[i] = reduction of rows[j] with ids[j] == i (ids >= 0 and < n); `empty` fills segments
    no row reaches. The one place every segment kernel allocates its output (n rows: a value)."""
    xp = array_module(rows, ids)
    check_output_size(node, (n,) + rows.shape[1:])
    start = {"Sum": 0, "Prod": 1, "Max": _lowest(rows.dtype), "Min": _highest(rows.dtype)}[kind]
    out = xp.full((n,) + rows.shape[1:], start, dtype=rows.dtype)
    accumulate_rows(_REDUCERS[kind][0], out, ids, rows)   # (CuPy's namesake for CuPy arrays)
    if empty != start:
        counts = xp.bincount(ids, minlength=n)
        out[counts == 0] = empty
    return out


def _num_segments(ids: Tensor, num_segments) -> Tensor:
    if isinstance(num_segments, Tensor):
        return num_segments
    dt = ids.dtype if ids.dtype in INDEX else dtypes.int32
    return convert_to_tensor(num_segments, dtype=dt, name="num_segments")


def _segment_infer(op):
    data, ids = op.inputs[0], op.inputs[1]
    first = None
    if len(op.inputs) == 3:
        n = constant_value(op.inputs[2])
        first = None if n is None else int(n)
    if data.shape.ndims is None or ids.shape.ndims is None:
        return [(data.dtype, unknown_shape())]
    if not ids.shape.is_compatible_with(data.shape[:ids.shape.ndims]):
        raise ValueError(f"Shapes must be equal rank / segment_ids.shape {ids.shape} must be a prefix of "
                         f"data.shape {data.shape}")
    out = TensorShape([first]).concatenate(data.shape[ids.shape.ndims:])
    check_output_size(op, out)
    return [(data.dtype, out)]


# -- UnsortedSegment{Sum,Max,Min,Prod} ------------------------------------------------------------
def _unsorted(kind: str, data, segment_ids, num_segments, name) -> Tensor:
    op_type = "UnsortedSegment" + kind
    with name_scope(name, op_type, [data, segment_ids, num_segments]) as scope:
        data = convert_to_tensor(data, name="data")
        ids = convert_to_tensor(segment_ids, name="segment_ids")
        n = _num_segments(ids, num_segments)
        return make_op(op_type, [data, ids, n], {"Tindices": ids.dtype, "Tnumsegments": n.dtype},
                       name=scope).outputs[0]


def _unsorted_kernel(kind: str):
    def factory(node, ctx):
        def run(data, ids, n):
            xp = array_module(data, ids)
            data, ids, n = xp.asarray(data), xp.asarray(ids), int(n)
            if data.shape[:ids.ndim] != ids.shape:
                raise invalid(node, f"data.shape = {list(data.shape)} does not start with segment_ids.shape = "
                                    f"{list(ids.shape)}")
            flat_ids = ids.reshape(-1)
            if flat_ids.size and flat_ids.max() >= n:   # (on a GPU, one wait for the device)
                bad = int(xp.flatnonzero(flat_ids >= n)[0])
                raise invalid(node, f"segment_ids[{bad}] = {int(flat_ids[bad])} is out of range [0, {n})")
            rows = data.reshape((flat_ids.size,) + data.shape[ids.ndim:])
            keep = flat_ids >= 0
            return _reduce_rows(node, rows[keep], flat_ids[keep], n, kind, _REDUCERS[kind][1](data.dtype))
        return run
    return factory


for _kind, _allowed in (("Sum", NUMERIC), ("Prod", NUMERIC), ("Max", REAL), ("Min", REAL)):
    register("UnsortedSegment" + _kind, _segment_infer, _unsorted_kernel(_kind), dtypes=_allowed,
             dtype_param="data")   # gradients: math_grad.py
register_gpu("UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin",
             host_inputs=(2,))   # (CuPy's ufunc.at has add, maximum and minimum; not multiply)


@tf_export("math.unsorted_segment_sum", "unsorted_segment_sum")
def unsorted_segment_sum(data, segment_ids, num_segments, name=None) -> Tensor:
    """tf.unsorted_segment_sum(data, segment_ids, num_segments, name=None): out[i] = sum of
    data[j] with segment_ids[j] == i (segment_ids a prefix of data's shape); negative ids are
    dropped."""
    return _unsorted("Sum", data, segment_ids, num_segments, name)


@tf_export("math.unsorted_segment_max", "unsorted_segment_max")
def unsorted_segment_max(data, segment_ids, num_segments, name=None) -> Tensor:
    """tf.unsorted_segment_max(data, segment_ids, num_segments, name=None): the maximum per
    segment; an empty segment gives the dtype's lowest finite value."""
    return _unsorted("Max", data, segment_ids, num_segments, name)


@tf_export("math.unsorted_segment_min", "unsorted_segment_min")
def unsorted_segment_min(data, segment_ids, num_segments, name=None) -> Tensor:
    """tf.unsorted_segment_min(data, segment_ids, num_segments, name=None): the minimum per
    segment; an empty segment gives the dtype's highest finite value."""
    return _unsorted("Min", data, segment_ids, num_segments, name)


@tf_export("math.unsorted_segment_prod", "unsorted_segment_prod")
def unsorted_segment_prod(data, segment_ids, num_segments, name=None) -> Tensor:
    """tf.unsorted_segment_prod(data, segment_ids, num_segments, name=None): the product per
    segment; an empty segment gives 1."""
    return _unsorted("Prod", data, segment_ids, num_segments, name)


def _segment_counts(data: Tensor, ids: Tensor, num_segments: Tensor) -> Tensor:
    """max(1, rows per segment), shaped to broadcast against the segment sums."""
    counts = unsorted_segment_sum(ones(shape(ids), dtype=data.dtype), ids, num_segments)
    trailing = fill(reshape(rank(data) - rank(ids), [1]), 1)
    counts = reshape(counts, concat([reshape(cast(num_segments, dtypes.int32), [1]), trailing], 0))
    return maximum(counts, np.asarray(1, data.dtype.as_numpy_dtype))


@tf_export("math.unsorted_segment_mean", "unsorted_segment_mean")
def unsorted_segment_mean(data, segment_ids, num_segments, name=None) -> Tensor:
    """tf.unsorted_segment_mean(data, segment_ids, num_segments, name=None): the mean per
    segment (0 for an empty one)."""
    with name_scope(name, "UnsortedSegmentMean"):
        data = convert_to_tensor(data, name="data")
        ids = convert_to_tensor(segment_ids, name="segment_ids")
        n = _num_segments(ids, num_segments)
        return realdiv(unsorted_segment_sum(data, ids, n), _segment_counts(data, ids, n))


@tf_export("math.unsorted_segment_sqrt_n", "unsorted_segment_sqrt_n")
def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None) -> Tensor:
    """tf.unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None): the sum per
    segment divided by the square root of its size."""
    with name_scope(name, "UnsortedSegmentSqrtN"):
        data = convert_to_tensor(data, name="data")
        ids = convert_to_tensor(segment_ids, name="segment_ids")
        n = _num_segments(ids, num_segments)
        return realdiv(unsorted_segment_sum(data, ids, n), sqrt(_segment_counts(data, ids, n)))


def indexed_slices_to_dense(value: IndexedSlices, dtype=None, name=None) -> Tensor:
    """The dense tensor an IndexedSlices stands for (rows summed where indices repeat): the
    conversion function of IndexedSlices."""
    if dtype is not None and not dtypes.as_dtype(dtype).is_compatible_with(value.dtype):
        raise ValueError(f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} for "
                         f"IndexedSlices with dtype {value.dtype.name}: {value!r}")
    if value.dense_shape is None:
        raise ValueError(f"Tensor conversion requested for IndexedSlices without dense_shape: {value!r}")
    const_shape = constant_value(value.dense_shape)
    if const_shape is not None:
        num_segments = convert_to_tensor(np.asarray(const_shape).reshape(-1)[0])
    else:
        num_segments = value.dense_shape[0]
    return unsorted_segment_sum(value.values, value.indices, num_segments, name=name)


register_tensor_conversion_function(IndexedSlices, indexed_slices_to_dense)


# -- Segment{Sum,Mean,Max,Min,Prod} (sorted ids) --------------------------------------------------
def _sorted(kind: str, data, segment_ids, name) -> Tensor:
    op_type = "Segment" + kind
    with name_scope(name, op_type, [data, segment_ids]) as scope:
        data = convert_to_tensor(data, name="data")
        ids = convert_to_tensor(segment_ids, name="segment_ids")
        if ids.shape.ndims not in (None, 1):
            raise ValueError(f"Shape must be rank 1 but is rank {ids.shape.ndims} for segment_ids of "
                             f"'{scope[:-1]}' (op: '{op_type}')")
        return make_op(op_type, [data, ids], {"Tindices": ids.dtype}, name=scope).outputs[0]


def _check_sorted_ids(node, data: np.ndarray, ids: np.ndarray) -> None:
    if ids.ndim != 1 or data.ndim == 0 or data.shape[0] != ids.shape[0]:
        raise invalid(node, "segment_ids should be the same size as dimension 0 of input.")
    if ids.size and (np.any(np.diff(ids) < 0) or ids[0] < 0):
        raise invalid(node, "segment ids are not increasing")


def _sorted_kernel(kind: str):
    def factory(node, ctx):
        def run(data, ids):
            data, ids = np.asarray(data), np.asarray(ids)
            _check_sorted_ids(node, data, ids)
            n = int(ids[-1]) + 1 if ids.size else 0
            if kind == "Mean":
                sums = _reduce_rows(node, data, ids, n, "Sum", 0)
                counts = np.maximum(np.bincount(ids, minlength=n), 1).reshape((n,) + (1,) * (data.ndim - 1))
                out = sums / counts.astype(sums.dtype) if data.dtype.kind in "fc" else \
                    (np.abs(sums) // counts * np.sign(sums)).astype(data.dtype)
                return out.astype(data.dtype, copy=False)
            # An empty segment of a sorted segment op is 0 for every reduction (TF's rule).
            return _reduce_rows(node, data, ids, n, kind, 0 if kind != "Prod" else 1)
        return run
    return factory


for _kind, _allowed in (("Sum", NUMERIC), ("Mean", NUMERIC), ("Prod", NUMERIC), ("Max", REAL), ("Min", REAL)):
    register("Segment" + _kind, _segment_infer, _sorted_kernel(_kind), dtypes=_allowed,
             dtype_param="data")   # gradients: math_grad.py


@tf_export("math.segment_sum", "segment_sum")
def segment_sum(data, segment_ids, name=None) -> Tensor:
    """tf.segment_sum(data, segment_ids, name=None): sums rows of `data` by sorted 1-D
    `segment_ids`; the output has max(segment_ids) + 1 rows (empty segments are 0)."""
    return _sorted("Sum", data, segment_ids, name)


@tf_export("math.segment_mean", "segment_mean")
def segment_mean(data, segment_ids, name=None) -> Tensor:
    """tf.segment_mean(data, segment_ids, name=None): the mean of each segment (sorted ids)."""
    return _sorted("Mean", data, segment_ids, name)


@tf_export("math.segment_max", "segment_max")
def segment_max(data, segment_ids, name=None) -> Tensor:
    """tf.segment_max(data, segment_ids, name=None): the maximum of each segment (sorted ids;
    an empty segment is 0)."""
    return _sorted("Max", data, segment_ids, name)


@tf_export("math.segment_min", "segment_min")
def segment_min(data, segment_ids, name=None) -> Tensor:
    """tf.segment_min(data, segment_ids, name=None): the minimum of each segment (sorted ids;
    an empty segment is 0)."""
    return _sorted("Min", data, segment_ids, name)


@tf_export("math.segment_prod", "segment_prod")
def segment_prod(data, segment_ids, name=None) -> Tensor:
    """tf.segment_prod(data, segment_ids, name=None): the product of each segment (sorted ids;
    an empty segment is 1)."""
    return _sorted("Prod", data, segment_ids, name)


# -- SparseSegment{Sum,Mean,SqrtN}[WithNumSegments] -----------------------------------------------
def _sparse_segment(kind: str, data, indices, segment_ids, name, num_segments: Optional[object]) -> Tensor:
    op_type = "SparseSegment" + kind + ("WithNumSegments" if num_segments is not None else "")
    with name_scope(name, op_type, [data, indices, segment_ids]) as scope:
        data = convert_to_tensor(data, name="data")
        idx = convert_to_tensor(indices, name="indices")
        ids = convert_to_tensor(segment_ids, name="segment_ids")
        inputs = [data, idx, ids]
        attrs = {"Tidx": idx.dtype, "Tsegmentids": ids.dtype}
        if num_segments is not None:
            n = _num_segments(ids, num_segments)
            inputs.append(n)
            attrs["Tnumsegments"] = n.dtype
        return make_op(op_type, inputs, attrs, name=scope).outputs[0]


def _sparse_segment_infer(op):
    data, idx, ids = op.inputs[:3]
    for t, what in ((idx, "indices"), (ids, "segment_ids")):
        if t.shape.ndims not in (None, 1):
            raise ValueError(f"Shape must be rank 1 but is rank {t.shape.ndims} for {what}")
    first = None
    if len(op.inputs) == 4:
        n = constant_value(op.inputs[3])
        first = None if n is None else int(n)
    if data.shape.ndims is None:
        return [(data.dtype, unknown_shape())]
    out = TensorShape([first]).concatenate(data.shape[1:])
    check_output_size(op, out)
    return [(data.dtype, out)]


def _sparse_segment_kernel(kind: str, with_n: bool):
    def factory(node, ctx):
        def run(data, idx, ids, n=None):
            data, idx, ids = np.asarray(data), np.asarray(idx), np.asarray(ids)
            if idx.shape != ids.shape or idx.ndim != 1:
                raise invalid(node, f"segment_ids and indices should have same size, got {list(ids.shape)} and "
                                    f"{list(idx.shape)}")
            if idx.size and (idx.min() < 0 or idx.max() >= data.shape[0]):
                bad = int(idx[(idx < 0) | (idx >= data.shape[0])][0])
                raise invalid(node, f"Bad: indices[...] == {bad} out of range {data.shape[0]}")
            if ids.size and np.any(np.diff(ids) < 0):
                raise invalid(node, "segment ids are not increasing")
            rows = int(n) if with_n else (int(ids[-1]) + 1 if ids.size else 0)
            if ids.size and (ids[0] < 0 or ids[-1] >= rows):
                raise invalid(node, f"segment ids must be in [0, {rows})")
            sums = _reduce_rows(node, data[idx], ids, rows, "Sum", 0)
            if kind == "Sum":
                return sums
            counts = np.bincount(ids, minlength=rows).astype(data.dtype)
            scale = np.maximum(counts, 1) if kind == "Mean" else np.sqrt(np.maximum(counts, 1))
            return (sums / scale.reshape((rows,) + (1,) * (data.ndim - 1))).astype(data.dtype)
        return run
    return factory


for _kind in ("Sum", "Mean", "SqrtN"):
    for _with_n in (False, True):
        register("SparseSegment" + _kind + ("WithNumSegments" if _with_n else ""), _sparse_segment_infer,
                 _sparse_segment_kernel(_kind, _with_n), dtypes=REAL if _kind == "Sum" else
                 (dtypes.float16, dtypes.float32, dtypes.float64), dtype_param="data")   # gradients: math_grad.py


@tf_export("sparse.segment_sum", "sparse_segment_sum")
def sparse_segment_sum(data, indices, segment_ids, name=None, num_segments=None) -> Tensor:
    """tf.sparse.segment_sum(data, indices, segment_ids, name=None, num_segments=None): out[s] =
    sum of data[indices[j]] with segment_ids[j] == s (sorted ids)."""
    return _sparse_segment("Sum", data, indices, segment_ids, name, num_segments)


@tf_export("sparse.segment_mean", "sparse_segment_mean")
def sparse_segment_mean(data, indices, segment_ids, name=None, num_segments=None) -> Tensor:
    """tf.sparse.segment_mean(data, indices, segment_ids, name=None, num_segments=None): the
    mean of the rows data[indices[j]] of each segment."""
    return _sparse_segment("Mean", data, indices, segment_ids, name, num_segments)


@tf_export("sparse.segment_sqrt_n", "sparse_segment_sqrt_n")
def sparse_segment_sqrt_n(data, indices, segment_ids, name=None, num_segments=None) -> Tensor:
    """tf.sparse.segment_sqrt_n(data, indices, segment_ids, name=None, num_segments=None): the
    sum of each segment's rows divided by the square root of its size."""
    return _sparse_segment("SqrtN", data, indices, segment_ids, name, num_segments)
