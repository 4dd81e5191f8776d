"""Joining and splitting strings: tf.string_join, tf.reduce_join, tf.strings.unsorted_segment_join,
tf.string_split and tf.strings.split (SparseTensor results by default, as TF1 gives them, or
RaggedTensors), tf.strings.bytes_split."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import (
    INDEX,
    as_string_tensor,
    check_output_size,
    invalid,
    make_op,
    static_int,
    static_ints,
    string_array,
    string_result,
)
from tensorweave.ops.ragged.ragged_tensor import RaggedTensor, split_each
from tensorweave.ops.registry import register


# -- StringJoin ----------------------------------------------------------------------------------
def _join_infer(op):
    shape = TensorShape([])
    for t in op.inputs:
        if t.shape.ndims != 0:
            shape = shape.merge_with(t.shape) if shape.ndims != 0 else t.shape
    return [(dtypes.string, shape)]


def _join_kernel(node, ctx):
    sep = node.attr["separator"].encode() if isinstance(node.attr["separator"], str) else node.attr["separator"]

    def run(*inputs):
        arrs = [string_array(x) for x in inputs]
        shapes = {a.shape for a in arrs if a.ndim}
        if len(shapes) > 1:
            raise invalid(node, f"Input shapes do not match: {[list(s) for s in sorted(shapes)]}")
        shape = shapes.pop() if shapes else ()
        cols = [np.broadcast_to(a, shape).reshape(-1) for a in arrs]
        n = int(np.prod(shape, dtype=np.int64))
        return string_result([sep.join(bytes(c[i]) for c in cols) for i in range(n)], shape)
    return run


register("StringJoin", _join_infer, _join_kernel, grad=None)


@tf_export("strings.join", "string_join")
def string_join(inputs, separator="", name=None):
    """tf.string_join(inputs, separator='', name=None): the element-wise concatenation of a list of
    string tensors (scalars broadcast against the others, which must share one shape)."""
    ts = [as_string_tensor(x) for x in inputs]
    if not ts:
        raise ValueError("string_join needs at least one input")
    return make_op("StringJoin", ts, {"separator": separator, "N": len(ts)}, name=name or "StringJoin").outputs[0]


# -- ReduceJoin ----------------------------------------------------------------------------------
def _reduce_join_infer(op):
    x = op.inputs[0].shape
    axes = static_ints(op.inputs[1])
    keep = op.get_attr("keep_dims")
    if x.ndims is None or axes is None:
        return [(dtypes.string, unknown_shape())]
    axes = {a % x.ndims for a in axes} if x.ndims else set()
    dims = [1 if i in axes else d for i, d in enumerate(x.as_list()) if keep or i not in axes]
    return [(dtypes.string, TensorShape(dims))]


def _reduce_join_kernel(node, ctx):
    sep = node.attr["separator"].encode()
    keep = node.attr["keep_dims"]

    def run(x, axes):
        arr = string_array(x)
        axes = [int(a) for a in np.reshape(axes, -1)]
        for a in axes:
            if not -arr.ndim <= a < max(arr.ndim, 1):
                raise invalid(node, f"Invalid reduction dimension {a} for input with {arr.ndim} dimensions.")
        axes = [a % arr.ndim for a in axes] if arr.ndim else []
        if len(axes) != len(set(axes)):
            raise invalid(node, f"Duplicate reduction dimension {axes}")
        kept = [i for i in range(arr.ndim) if i not in axes]
        out_shape = [arr.shape[i] for i in kept]
        n_out = int(np.prod(out_shape, dtype=np.int64))
        n_red = int(np.prod([arr.shape[a] for a in axes], dtype=np.int64))
        rows = np.transpose(arr, kept + axes[::-1]).reshape(n_out, n_red)   # the first axis listed varies fastest
        items = [sep.join(bytes(s) for s in row) for row in rows]
        final = [1 if i in axes else d for i, d in enumerate(arr.shape)] if keep else out_shape
        return string_result(items, final)
    return run


register("ReduceJoin", _reduce_join_infer, _reduce_join_kernel, grad=None, dtypes=(dtypes.string,),
         dtype_param="inputs")


@tf_export("strings.reduce_join", "reduce_join")
def reduce_join(inputs, axis=None, keep_dims=False, separator="", name=None, reduction_indices=None,
                keepdims=None):
    """tf.reduce_join(inputs, axis=None, keep_dims=False, separator='', name=None): joins the
    strings along `axis` (all axes when None) in row-major order, with `separator` between."""
    if keepdims is not None:
        keep_dims = keepdims
    if axis is None:
        axis = reduction_indices
    with name_scope(name, "ReduceJoin"):
        x = as_string_tensor(inputs)
        if axis is None:
            if x.shape.ndims is None:
                raise ValueError("reduce_join with axis=None needs an input of known rank")
            axis = list(range(x.shape.ndims))[::-1]
        axes = convert_to_tensor(axis, dtype=dtypes.int32, name="reduction_indices")
        return make_op("ReduceJoin", [x, axes], {"keep_dims": bool(keep_dims), "separator": separator},
                       name="ReduceJoin").outputs[0]


# -- UnsortedSegmentJoin -------------------------------------------------------------------------
def _segment_join_infer(op):
    x, ids, n = op.inputs
    num = static_int(n)
    if x.shape.ndims is None or ids.shape.ndims is None:
        return [(dtypes.string, unknown_shape())]
    out = TensorShape([num]).concatenate(x.shape[ids.shape.ndims:])
    check_output_size(op, out)
    return [(dtypes.string, out)]


def _segment_join_kernel(node, ctx):
    sep = node.attr["separator"].encode()

    def run(x, ids, num):
        arr = string_array(x)
        ids = np.asarray(ids)
        num = int(num)
        if arr.shape[:ids.ndim] != ids.shape:
            raise invalid(node, f"segment_ids.shape = {list(ids.shape)} is not a prefix of data.shape = "
                                f"{list(arr.shape)}")
        inner = arr.shape[ids.ndim:]
        check_output_size(node, (num,) + inner)
        rows = arr.reshape((-1,) + inner)
        parts: list = [[] for _ in range(num)]
        for i, s in enumerate(ids.reshape(-1)):
            if s >= num:
                raise invalid(node, f"segment_ids[{i}] = {s} is out of range [0, {num})")
            if s >= 0:
                parts[s].append(rows[i])
        n_inner = int(np.prod(inner, dtype=np.int64))
        items = []
        for p in parts:
            flat = [np.reshape(r, -1) for r in p]
            items.extend(sep.join(bytes(r[j]) for r in flat) for j in range(n_inner))
        return string_result(items, (num,) + inner)
    return run


register("UnsortedSegmentJoin", _segment_join_infer, _segment_join_kernel, grad=None,
         dtypes={0: ("inputs", (dtypes.string,)), 1: ("segment_ids", INDEX)})


@tf_export("strings.unsorted_segment_join")
def unsorted_segment_join(inputs, segment_ids, num_segments, separator="", name=None):
    """tf.strings.unsorted_segment_join(inputs, segment_ids, num_segments, separator='', name=None):
    joins the rows of `inputs` by segment id, in order; empty segments give ''."""
    x = as_string_tensor(inputs)
    ids = convert_to_tensor(segment_ids)
    n = convert_to_tensor(num_segments)
    return make_op("UnsortedSegmentJoin", [x, ids, n], {"separator": separator},
                   name=name or "UnsortedSegmentJoin").outputs[0]


# -- StringSplit / StringSplitV2 -----------------------------------------------------------------
def _split_infer(op):
    if op.inputs[0].shape.ndims not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {op.inputs[0].shape.ndims}")
    return [(dtypes.int64, TensorShape([None, 2])), (dtypes.string, TensorShape([None])),
            (dtypes.int64, TensorShape([2]))]


def _sparse_of(node, arr: np.ndarray, split) -> tuple:
    if arr.ndim != 1:
        raise invalid(node, f"input must be a vector, got shape: {list(arr.shape)}")
    rows = [split(bytes(s)) for s in arr]
    counts = [len(r) for r in rows]
    n = sum(counts)
    idx = np.zeros((n, 2), dtype=np.int64)
    idx[:, 0] = np.repeat(np.arange(len(rows)), counts)
    idx[:, 1] = np.concatenate([np.arange(c) for c in counts]) if rows else np.zeros(0)
    values = string_result([t for r in rows for t in r], (n,))
    return idx, values, np.array([len(rows), max(counts, default=0)], dtype=np.int64)


def _split_v1_kernel(node, ctx):
    skip_empty = node.attr["skip_empty"]

    def split(s: bytes, delim: bytes) -> list:
        if not delim:
            return [bytes([c]) for c in s]
        out, start = [], 0
        for i, c in enumerate(s):
            if c in delim:
                out.append(s[start:i])
                start = i + 1
        out.append(s[start:])
        return [t for t in out if t] if skip_empty else out

    def run(x, delimiter):
        d = bytes(string_array(delimiter)[()])
        return _sparse_of(node, string_array(x), lambda s: split(s, d))
    return run


def _split_v2_kernel(node, ctx):
    maxsplit = node.attr["maxsplit"]

    def run(x, sep):
        sep = bytes(string_array(sep)[()])
        if sep:
            return _sparse_of(node, string_array(x), lambda s: s.split(sep, maxsplit))
        return _sparse_of(node, string_array(x), lambda s: s.split(None, maxsplit))
    return run


register("StringSplit", _split_infer, _split_v1_kernel, grad=None, dtypes=(dtypes.string,), dtype_param="input")
register("StringSplitV2", _split_infer, _split_v2_kernel, grad=None, dtypes=(dtypes.string,), dtype_param="input")


def _split_result(op, result_type: str):
    """The (indices, values, dense_shape) of a StringSplit op as TF's result_type asks."""
    if result_type == "SparseTensor":
        return SparseTensor(*op.outputs)
    indices, values, dense_shape = op.outputs
    return RaggedTensor.from_value_rowids(values, indices[:, 0], nrows=dense_shape[0], validate=False)


def _check_result_type(result_type: str) -> None:
    if result_type not in ("SparseTensor", "RaggedTensor"):
        raise ValueError(f"result_type must be 'RaggedTensor' or 'SparseTensor', got {result_type!r}")


@tf_export("string_split")
def string_split(source, sep=None, skip_empty=True, delimiter=None, result_type="SparseTensor", name=None):
    """tf.string_split(source, sep=None, skip_empty=True, delimiter=None, result_type='SparseTensor'):
    splits each string of the vector `source` at any character of `delimiter` (default ' '; ''
    splits into bytes); a SparseTensor of shape [len(source), most tokens], or a RaggedTensor."""
    _check_result_type(result_type)
    delimiter = delimiter if delimiter is not None else (sep if sep is not None else " ")
    with name_scope(name, "StringSplit"):
        x = as_string_tensor(source)
        d = as_string_tensor(delimiter)
        op = make_op("StringSplit", [x, d], {"skip_empty": bool(skip_empty)}, name="StringSplit")
        return _split_result(op, result_type)


@tf_export("strings.split")
def split(input=None, sep=None, maxsplit=-1, result_type="SparseTensor", source=None, name=None):
    """tf.strings.split(input, sep=None, maxsplit=-1, result_type='SparseTensor'): Python's
    str.split on each string of a vector (sep None: runs of whitespace; otherwise the whole `sep`,
    empty tokens kept), at most `maxsplit` splits; a SparseTensor or a RaggedTensor."""
    _check_result_type(result_type)
    input = source if input is None else input
    with name_scope(name, "StringSplit"):
        x = as_string_tensor(input)
        s = as_string_tensor(sep or "")
        op = make_op("StringSplitV2", [x, s], {"maxsplit": int(maxsplit)}, name="StringSplitV2")
        return _split_result(op, result_type)


@tf_export("strings.bytes_split")
def bytes_split(input, name=None):
    """tf.strings.bytes_split(input, name=None): each string split into its bytes (1-byte
    strings): a 1-D tensor for a scalar, else a RaggedTensor with one more ragged dimension."""
    def run(flat):
        indices, values, dense_shape = make_op("StringSplit", [flat, as_string_tensor("")], {"skip_empty": False},
                                               name="StringSplit").outputs
        rt = RaggedTensor.from_value_rowids(values, indices[:, 0], nrows=dense_shape[0], validate=False)
        return rt.row_splits, [rt.values]

    with name_scope(name, "StringsByteSplit", [input]):
        return split_each(input, run, dtypes.string)[0]
