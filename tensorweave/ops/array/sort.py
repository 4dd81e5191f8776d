"""Array ops that choose, order, search or deduplicate: where/select, unique, setdiff1d,
searchsorted (LowerBound / UpperBound), top_k (sort and
argsort, built on top_k: math/array_composites.py), approx_top_k (exact, as on TF's CPU).
`top_k` is tf.nn.top_k: it is exported from here for the nn namespace, not at the top level."""
from __future__ import annotations

import collections

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape, broadcast_shapes, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import stack
from tensorweave.ops.array.core import constant, reshape, shape
from tensorweave.ops.array.fill import zeros_like
from tensorweave.ops.helpers import REAL, array_module, dense, invalid, make_op, np_dtype, static_int
from tensorweave.ops.registry import register, register_gpu


UniqueOutput = collections.namedtuple("Unique", ["y", "idx"])
TopKV2Output = collections.namedtuple("TopKV2", ["values", "indices"])


def _pair(x, y, op_type: str):
    """Converts x and y to one dtype (a Python operand takes the tensor's dtype)."""
    if isinstance(x, Tensor) or not isinstance(y, Tensor):
        x = convert_to_tensor(x)
        y = y if isinstance(y, Tensor) else convert_to_tensor(y, dtype=x.dtype)
    else:
        x = convert_to_tensor(x, dtype=y.dtype)
    if x.dtype != y.dtype:
        raise TypeError(f"Input 'e' of '{op_type}' Op has type {y.dtype.name} that does not match type "
                        f"{x.dtype.name} of argument 't'.")
    return x, y


# -- Where (coordinates), Select, SelectV2 -----------------------------------------------------
@tf_export("where")
def where(condition, x=None, y=None, name=None) -> Tensor:
    """tf.where(condition, x=None, y=None, name=None) (TF1): with x and y, elementwise choice where
    `condition` has x's shape or is a vector matching x's first dimension (op Select); alone,
    the int64 [N, rank] coordinates of the true elements (op Where)."""
    if x is None and y is None:
        with name_scope(name, "Where") as scope:
            condition = convert_to_tensor(condition, preferred_dtype=dtypes.bool)
            return make_op("Where", [condition], name=scope).outputs[0]
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    condition = convert_to_tensor(condition, dtype=dtypes.bool)
    x, y = _pair(x, y, "Select")
    return make_op("Select", [condition, x, y], name=name or "Select").outputs[0]


@tf_export("where_v2")
def where_v2(condition, x=None, y=None, name=None) -> Tensor:
    """tf.where_v2(condition, x=None, y=None, name=None): like where, but condition, x and y
    broadcast against each other (op SelectV2)."""
    if x is None and y is None:
        return where(condition, name=name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    condition = convert_to_tensor(condition, dtype=dtypes.bool)
    x, y = _pair(x, y, "SelectV2")
    return make_op("SelectV2", [condition, x, y], name=name or "SelectV2").outputs[0]


register("Where", lambda op: [(dtypes.int64, TensorShape([None, op.inputs[0].shape.ndims]))],
         lambda node, ctx: (lambda c: array_module(c).argwhere(c).astype(np.int64)), grad=None)
register_gpu("Where")   # its output in device memory, as TF's GPU kernel (which reads the count on the host)


def _select_infer(op):
    c, x, y = op.inputs
    try:
        out = x.shape.merge_with(y.shape)
    except ValueError:
        raise ValueError(f"Select: 'then' and 'else' must have the same shape, but are {x.shape} and "
                         f"{y.shape}") from None
    if c.shape.ndims is None or c.shape.ndims == 0 or out.ndims is None:
        return [(x.dtype, out)]
    if c.shape.ndims == 1 and out.ndims > 1:
        if not c.shape[0].is_compatible_with(out[0]):
            raise ValueError(f"Select: the condition vector's size must match the first dimension of 'then', "
                             f"but are {c.shape[0]} and {out[0]} (shapes {c.shape} and {out})")
        return [(x.dtype, TensorShape([out[0].merge_with(c.shape[0])]).concatenate(out[1:]))]
    try:
        return [(x.dtype, out.merge_with(c.shape))]
    except ValueError:
        raise ValueError(f"Select: condition shape {c.shape} and 'then' shape {out} must be equal") from None


def _select_kernel(node, ctx):
    def run(c, x, y):
        xp = array_module(c, x, y)
        c, x, y = xp.asarray(c), xp.asarray(x), xp.asarray(y)
        if x.shape != y.shape:
            raise invalid(node, f"'then' and 'else' must have the same size. but received: {list(x.shape)} vs. "
                                f"{list(y.shape)}")
        if c.ndim == 0 or c.shape == x.shape:
            return np.where(c, x, y)
        if c.ndim == 1 and x.ndim > 1 and c.shape[0] == x.shape[0]:
            return np.where(c.reshape((-1,) + (1,) * (x.ndim - 1)), x, y)
        raise invalid(node, f"'cond' and 'then' must have the same shape or cond must be a vector matching "
                            f"then's first dimension, but received: {list(c.shape)} vs. {list(x.shape)}")
    return run


def _select_grad(op, grad):
    c = op.inputs[0]
    grad = dense(grad)
    zeros = zeros_like(grad)
    return [None, where(c, grad, zeros), where(c, zeros, grad)]


register("Select", _select_infer, _select_kernel, grad=_select_grad)
register_gpu("Select")


def _select_v2_infer(op):
    c, x, y = op.inputs
    try:
        return [(x.dtype, broadcast_shapes(broadcast_shapes(c.shape, x.shape), y.shape))]
    except ValueError:
        raise ValueError(f"SelectV2: condition, then and else shapes {c.shape}, {x.shape} and {y.shape} do not "
                         f"broadcast") from None


def _select_v2_kernel(node, ctx):
    def run(c, x, y):
        try:
            return np.where(c, x, y)
        except ValueError:
            raise invalid(node, f"condition, then and else shapes {list(np.shape(c))}, {list(np.shape(x))} and "
                                f"{list(np.shape(y))} do not broadcast") from None
    return run


def _select_v2_grad(op, grad):
    c = op.inputs[0]
    grad = dense(grad)
    zero = constant(0, dtype=grad.dtype)
    # Broadcast-shaped: tf.gradients reduces each to its input's shape.
    return [None, where_v2(c, grad, zero), where_v2(c, zero, grad)]


register("SelectV2", _select_v2_infer, _select_v2_kernel, grad=_select_v2_grad)
register_gpu("SelectV2")


# -- Unique ------------------------------------------------------------------------------------
@tf_export("unique")
def unique(x, out_idx=dtypes.int32, name=None):
    """tf.unique(x, out_idx=tf.int32, name=None) -> (y, idx): the distinct values of 1-D `x` in
    order of first appearance, and for each element of x its position in y."""
    x = convert_to_tensor(x)
    op = make_op("Unique", [x], {"out_idx": dtypes.as_dtype(out_idx)}, name=name or "Unique")
    return UniqueOutput(*op.outputs)


def _unique_infer(op):
    x = op.inputs[0]
    if x.shape.ndims not in (None, 1):
        raise ValueError(f"Unique: x must be a vector, got shape {x.shape}")
    return [(x.dtype, TensorShape([None])), (op.get_attr("out_idx"), TensorShape([x.shape[0].value]))]


def _unique_kernel(node, ctx):
    dt = dtypes.as_dtype(node.attr["out_idx"]).as_numpy_dtype

    def run(x):
        x = np.asarray(x)
        if x.ndim != 1:
            raise invalid(node, f"unique expects a 1D vector, got shape {list(x.shape)}")
        _, first, inverse = np.unique(x, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        rank_of = np.empty_like(order)
        rank_of[order] = np.arange(order.size)
        return x[np.sort(first)], rank_of[inverse.reshape(-1)].astype(dt)
    return run


register("Unique", _unique_infer, _unique_kernel, grad=None)


UniqueWithCountsOutput = collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])


@tf_export("unique_with_counts")
def unique_with_counts(x, out_idx=dtypes.int32, name=None):
    """tf.unique_with_counts(x, out_idx=tf.int32, name=None) -> (y, idx, count): as tf.unique,
    plus how many times each value of y occurs in x."""
    x = convert_to_tensor(x)
    op = make_op("UniqueWithCounts", [x], {"out_idx": dtypes.as_dtype(out_idx)}, name=name or "UniqueWithCounts")
    return UniqueWithCountsOutput(*op.outputs)


def _unique_with_counts_infer(op):
    y, idx = _unique_infer(op)
    return [y, idx, (op.get_attr("out_idx"), TensorShape([None]))]


def _unique_with_counts_kernel(node, ctx):
    unique_fn = _unique_kernel(node, ctx)
    dt = dtypes.as_dtype(node.attr["out_idx"]).as_numpy_dtype

    def run(x):
        y, idx = unique_fn(x)
        return y, idx, np.bincount(idx.astype(np.int64), minlength=len(y)).astype(dt)
    return run


register("UniqueWithCounts", _unique_with_counts_infer, _unique_with_counts_kernel, grad=None)


ListDiffOutput = collections.namedtuple("ListDiff", ["out", "idx"])


@tf_export("setdiff1d")
def setdiff1d(x, y, index_dtype=dtypes.int32, name=None):
    """tf.setdiff1d(x, y, index_dtype=tf.int32, name=None) -> (out, idx): the values of the 1-D
    x that are not in y, in x's order (duplicates kept), and their positions in x."""
    x = convert_to_tensor(x, name="x")
    y = convert_to_tensor(y, dtype=x.dtype, name="y")
    op = make_op("ListDiff", [x, y], {"T": x.dtype, "out_idx": dtypes.as_dtype(index_dtype)},
                 name=name or "ListDiff")
    return ListDiffOutput(*op.outputs)


def _list_diff_infer(op):
    for t in op.inputs:
        if t.shape.ndims not in (None, 1):
            raise ValueError(f"Shape must be rank 1 but is rank {t.shape.ndims}")
    return [(op.inputs[0].dtype, TensorShape([None])), (op.get_attr("out_idx"), TensorShape([None]))]


def _list_diff_kernel(node, ctx):
    dt = np_dtype(node, "out_idx")

    def run(x, y):
        x, y = np.asarray(x), np.asarray(y)
        if x.ndim != 1 or y.ndim != 1:
            raise invalid(node, f"x and y must be vectors, got shapes {list(x.shape)} and {list(y.shape)}")
        keep = np.flatnonzero(~np.isin(x, y))
        return x[keep], keep.astype(dt)
    return run


register("ListDiff", _list_diff_infer, _list_diff_kernel, grad=None)


# -- TopKV2, sort, argsort ---------------------------------------------------------------------
@tf_export("math.top_k", "nn.top_k")
def top_k(input, k=1, sorted=True, name=None):
    """tf.nn.top_k(input, k=1, sorted=True, name=None) -> (values, indices): the k largest entries
    along the last dimension, largest first; equal values keep their original order."""
    input = convert_to_tensor(input)
    k_t = convert_to_tensor(k, dtype=dtypes.int32) if not isinstance(k, Tensor) else k
    op = make_op("TopKV2", [input, k_t], {"sorted": bool(sorted)}, name=name or "TopKV2")
    return TopKV2Output(*op.outputs)


def _top_k_infer(op):
    x, kt = op.inputs
    k = static_int(kt)
    if k is not None and k < 0:
        raise ValueError(f"TopKV2: need k >= 0, got {k}")
    if x.shape.ndims is None:
        return [(x.dtype, unknown_shape()), (dtypes.int32, unknown_shape())]
    if x.shape.ndims == 0:
        raise ValueError("TopKV2: input must have rank >= 1, got a scalar")
    n = x.shape[-1].value
    if k is not None and n is not None and n < k:
        raise ValueError(f"TopKV2: input must have last dimension >= k = {k} but is {n}")
    out = x.shape[:-1].concatenate([k])
    return [(x.dtype, out), (dtypes.int32, out)]


def _descending_order(x):
    """The indices sorting x's last axis largest first, equal values in their original order: an
    ascending stable sort of the reversed rows, read backwards."""
    n = x.shape[-1]
    return (n - 1 - array_module(x).argsort(x[..., ::-1], axis=-1, kind="stable"))[..., ::-1]


def _top_k_kernel(node, ctx):
    def run(x, k):
        xp = array_module(x)
        x, k = xp.asarray(x), int(k)
        if x.ndim == 0:
            raise invalid(node, "input must be at least 1-D")
        n = x.shape[-1]
        if k < 0 or k > n:
            raise invalid(node, f"input must have at least k columns. Had {n}, needed {k}" if k > n else
                          f"Need k >= 0, got {k}")
        idx = _descending_order(x)[..., :k]
        return xp.take_along_axis(x, idx, axis=-1), idx.astype(np.int32)
    return run


register("TopKV2", _top_k_infer, _top_k_kernel)   # gradient: array_grad.py
register_gpu("TopKV2", host_inputs=(1,))


# -- ApproxTopK: TPU's approximate top-k, exact here as on TF's CPU ------------------------------------
@tf_export("approx_top_k")
def approx_top_k(input, k, reduction_dimension=-1, recall_target=0.95, is_max_k=True,
                 reduction_input_size_override=-1, aggregate_to_topk=True, name=None):
    """tf.approx_top_k(input, k, reduction_dimension=-1, recall_target=0.95, is_max_k=True,
    reduction_input_size_override=-1, aggregate_to_topk=True, name=None) -> (values, indices):
    the op under approx_max_k and approx_min_k (is_max_k=False)."""
    operand = convert_to_tensor(input, name="input")
    op = make_op("ApproxTopK", [operand],
                 {"k": int(k), "reduction_dimension": int(reduction_dimension),
                  "recall_target": float(recall_target), "is_max_k": bool(is_max_k),
                  "reduction_input_size_override": int(reduction_input_size_override),
                  "aggregate_to_topk": bool(aggregate_to_topk), "T": operand.dtype}, name=name or "ApproxTopK")
    return TopKV2Output(*op.outputs)


@tf_export("math.approx_max_k", "nn.approx_max_k")
def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True, name=None):
    """tf.math.approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95,
    reduction_input_size_override=-1, aggregate_to_topk=True, name=None) -> (values, indices):
    the k largest entries along `reduction_dimension`, largest first. TPUs trade recall for
    speed; here, as on TF's CPU, the result is exact (top_k's, ties in their original order)."""
    return approx_top_k(operand, k, reduction_dimension, recall_target, True, reduction_input_size_override,
                        aggregate_to_topk, name)


@tf_export("math.approx_min_k", "nn.approx_min_k")
def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True, name=None):
    """tf.math.approx_min_k(...) -> (values, indices): as approx_max_k, the k smallest entries,
    smallest first."""
    return approx_top_k(operand, k, reduction_dimension, recall_target, False, reduction_input_size_override,
                        aggregate_to_topk, name)


def _approx_top_k_axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"ApproxTopK: reduction_dimension {axis} is out of range for an operand of rank {ndim}")
    return axis % ndim


def _approx_top_k_infer(op):
    x = op.inputs[0]
    k = op.get_attr("k")
    if k < 0:
        raise ValueError(f"ApproxTopK: need k >= 0, got {k}")
    if x.shape.ndims is None:
        return [(x.dtype, unknown_shape()), (dtypes.int32, unknown_shape())]
    axis = _approx_top_k_axis(op.get_attr("reduction_dimension"), x.shape.ndims)
    n = x.shape[axis].value
    if n is not None and n < k:
        raise ValueError(f"ApproxTopK: reduction dimension {axis} of the operand has {n} entries, fewer than k = {k}")
    dims = x.shape.as_list()
    dims[axis] = k
    return [(x.dtype, TensorShape(dims)), (dtypes.int32, TensorShape(dims))]


def _approx_top_k_kernel(node, ctx):
    k, is_max, dim = int(node.attr["k"]), bool(node.attr["is_max_k"]), int(node.attr["reduction_dimension"])

    def run(x):
        xp = array_module(x)
        if x.ndim == 0:
            raise invalid(node, "operand must be at least 1-D")
        try:
            axis = _approx_top_k_axis(dim, x.ndim)
        except ValueError as e:
            raise invalid(node, str(e)) from None
        if x.shape[axis] < k:
            raise invalid(node, f"reduction dimension {axis} has {x.shape[axis]} entries, fewer than k = {k}")
        rows = xp.moveaxis(x, axis, -1)
        idx = (_descending_order(rows) if is_max else xp.argsort(rows, axis=-1, kind="stable"))[..., :k]
        values = xp.take_along_axis(rows, idx, axis=-1)
        return (xp.ascontiguousarray(xp.moveaxis(values, -1, axis)),
                xp.ascontiguousarray(xp.moveaxis(idx, -1, axis)).astype(np.int32))
    return run


register("ApproxTopK", _approx_top_k_infer, _approx_top_k_kernel, dtypes=(dtypes.float16, dtypes.float32),
         dtype_param="input")   # gradient: array_grad.py


# -- LowerBound / UpperBound (tf.searchsorted) ---------------------------------------------------------
def _bound_infer(op):
    seq, values = op.inputs
    for t, what in ((seq, "sorted_inputs"), (values, "values")):
        if t.shape.ndims not in (None, 2):
            raise ValueError(f"Shape must be rank 2 but is rank {t.shape.ndims} for '{what}'")
    batch = seq.shape[0].value if seq.shape.ndims else None
    if batch is None and values.shape.ndims:
        batch = values.shape[0].value
    return [(dtypes.as_dtype(op.get_attr("out_type")), TensorShape([batch, values.shape[1].value
                                                                    if values.shape.ndims else None]))]


def _bound_kernel(node, ctx):
    side = "left" if node.op == "LowerBound" else "right"
    out = dtypes.as_dtype(node.attr["out_type"]).as_numpy_dtype

    def run(seq, values):
        seq, values = np.asarray(seq), np.asarray(values)
        if seq.ndim != 2 or values.ndim != 2:
            raise invalid(node, f"sorted_inputs and values must be 2-D, got {list(seq.shape)} and {list(values.shape)}")
        if seq.shape[0] != values.shape[0]:
            raise invalid(node, f"Leading dim_size of both tensors must match: {seq.shape[0]} != {values.shape[0]}")
        result = np.empty(values.shape, out)
        for i in range(seq.shape[0]):
            result[i] = np.searchsorted(seq[i], values[i], side=side)
        return result
    return run


for _op in ("LowerBound", "UpperBound"):
    register(_op, _bound_infer, _bound_kernel, grad=None, dtypes={0: ("sorted_inputs", REAL), 1: ("values", REAL)})


@tf_export("searchsorted")
def searchsorted(sorted_sequence, values, side="left", out_type=dtypes.int32, name=None) -> Tensor:
    """tf.searchsorted(sorted_sequence, values, side='left', out_type=tf.int32, name=None): for
    each value, the index in its row of `sorted_sequence` (sorted along the last axis; leading
    dims match `values`') where it would be inserted to keep the row sorted: before equal
    elements ('left') or after them ('right'); the shape of `values`."""
    if side not in ("left", "right"):
        raise ValueError(f"side must be either 'right' or 'left'.  Saw: {side}.")
    seq = convert_to_tensor(sorted_sequence, name="sorted_sequence")
    values = convert_to_tensor(values, dtype=seq.dtype, name="values")
    seq_2d = reshape(seq, stack([-1, shape(seq)[-1]]))
    values_shape = shape(values)
    values_2d = reshape(values, stack([-1, values_shape[-1]]))
    op_type = "LowerBound" if side == "left" else "UpperBound"
    out = make_op(op_type, [seq_2d, values_2d], {"out_type": dtypes.as_dtype(out_type)}, name=name or op_type)
    result = reshape(out.outputs[0], values_shape)
    result.set_shape(values.shape)
    return result
