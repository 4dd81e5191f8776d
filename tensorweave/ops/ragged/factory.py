"""Making ragged tensors: tf.ragged.constant and constant_value (from nested Python lists),
tf.ragged.placeholder, tf.ragged.range (TF's RaggedRange kernel) and tf.ragged.map_flat_values."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import control_dependencies, name_scope
from tensorweave.framework.shapes import TensorShape, as_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import constant as dense_constant, identity, placeholder as dense_placeholder
from tensorweave.ops.debugging.asserts import assert_equal
from tensorweave.ops.helpers import check_output_size, invalid, make_op
from tensorweave.ops.ragged.ragged_tensor import RaggedTensor, RaggedTensorValue, is_ragged
from tensorweave.ops.registry import register


_RANGE_DTYPES = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


# -- constant and constant_value -------------------------------------------------------------------
def _is_list(x) -> bool:
    return isinstance(x, (list, tuple))


def _depths(pylist) -> tuple:
    """(the nesting depth of the scalars or None when there are none, the deepest list nesting)."""
    if not _is_list(pylist):
        return (0 if np.ndim(pylist) == 0 else None), np.ndim(pylist)
    scalar, deepest = None, 1
    for item in pylist:
        s, d = _depths(item)
        if s is not None:
            if scalar is not None and scalar != s + 1:
                raise ValueError(f"all scalar values must have the same nesting depth: {pylist!r}")
            scalar = s + 1
        deepest = max(deepest, d + 1)
    return scalar, deepest


def _inner_shape(flat: list) -> tuple:
    """The shape shared by every item of `flat` (ValueError when they differ)."""
    shapes = {np.shape(item) for item in flat}
    if len(shapes) > 1:
        raise ValueError("inner values have inconsistent shape")
    return shapes.pop() if shapes else ()


def _flatten(pylist, ragged_rank, inner_shape, inner_factory, ragged_factory):
    """TF's ragged constant rules: the ragged dimensions come first, `inner_shape` last."""
    if is_ragged(pylist):
        raise TypeError("pylist may not be a RaggedTensor or RaggedTensorValue.")
    if not _is_list(pylist):
        if ragged_rank not in (None, 0):
            raise ValueError(f"Invalid pylist={pylist!r}: incompatible with ragged_rank={ragged_rank}")
        if inner_shape:
            raise ValueError(f"Invalid pylist={pylist!r}: incompatible with dim(inner_shape)={len(inner_shape)}")
        return inner_factory(pylist, ())
    if ragged_rank is not None and ragged_rank < 0:
        raise ValueError(f"Invalid ragged_rank={ragged_rank!r}: must be nonnegative")
    scalar_depth, max_depth = _depths(pylist)
    if scalar_depth is not None and max_depth > scalar_depth:
        raise ValueError(f"Invalid pylist={pylist!r}: empty list nesting is greater than scalar value nesting")
    if inner_shape is not None and ragged_rank is not None:
        expected = ragged_rank + len(inner_shape) + 1
        if (scalar_depth is not None and expected != scalar_depth) or (scalar_depth is None and expected < max_depth):
            raise ValueError(f"Invalid pylist={pylist!r}: incompatible with ragged_rank={ragged_rank} and "
                             f"dim(inner_shape)={len(inner_shape)}")
    if ragged_rank == 0 or (ragged_rank is None and (
            max_depth < 2 or (inner_shape is not None and max_depth - len(inner_shape) < 2))):
        return inner_factory(pylist, inner_shape)
    if ragged_rank is None:
        inner_shape = () if inner_shape is None else tuple(inner_shape)
        ragged_rank = max(1, (max_depth if scalar_depth is None else scalar_depth - len(inner_shape)) - 1)
    nested_splits, values = [], list(pylist)
    for dim in range(ragged_rank):
        if not all(_is_list(v) or np.ndim(v) for v in values):
            raise ValueError(f"pylist has scalar values depth {dim + 1}, but ragged_rank={ragged_rank} requires "
                             f"scalar value depth greater than {ragged_rank}")
        splits = [0]
        for row in values:
            splits.append(splits[-1] + len(row))
        nested_splits.append(splits)
        values = [v for row in values for v in row]
    if inner_shape is None:
        inner_shape = _inner_shape(values)
    result = inner_factory(values, (len(values),) + tuple(inner_shape))
    for splits in reversed(nested_splits):
        result = ragged_factory(result, splits)
    return result


@tf_export("ragged.constant")
def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None, name=None, row_splits_dtype=dtypes.int64):
    """tf.ragged.constant(pylist, dtype=None, ragged_rank=None, inner_shape=None, name=None,
    row_splits_dtype=tf.int64): a constant RaggedTensor from a nested Python list (a Tensor when
    the list is not nested); ragged_rank defaults to the scalars' depth - 1 - len(inner_shape)."""
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    splits_dtype = dtypes.as_dtype(row_splits_dtype)

    def inner(values, shape):
        if shape and 0 in shape and not values:
            values = np.zeros(shape, (dtype or dtypes.float32).as_numpy_dtype)
        return dense_constant(values, dtype=dtype, shape=shape or None, name="values")

    def ragged(values, splits):
        return RaggedTensor.from_row_splits(values, dense_constant(splits, dtype=splits_dtype, name="row_splits"),
                                            validate=False)

    with name_scope(name, "RaggedConstant"):
        return _flatten(pylist, ragged_rank, inner_shape, inner, ragged)


@tf_export("ragged.constant_value")
def constant_value(pylist, dtype=None, ragged_rank=None, inner_shape=None, row_splits_dtype="int64"):
    """tf.ragged.constant_value(pylist, dtype=None, ragged_rank=None, inner_shape=None,
    row_splits_dtype='int64'): like tf.ragged.constant, a RaggedTensorValue of numpy arrays."""
    np_dtype = None if dtype is None else dtypes.as_dtype(dtype).as_numpy_dtype
    splits_np = dtypes.as_dtype(row_splits_dtype).as_numpy_dtype

    def inner(values, shape):
        arr = np.array(values, dtype=np_dtype if values or np_dtype is not None else np.float64)
        return arr.reshape(shape) if shape else arr

    return _flatten(pylist, ragged_rank, inner_shape, inner,
                    lambda values, splits: RaggedTensorValue(values, np.array(splits, dtype=splits_np)))


@tf_export("ragged.placeholder")
def placeholder(dtype, ragged_rank, value_shape=None, name=None):
    """tf.ragged.placeholder(dtype, ragged_rank, value_shape=None, name=None): a RaggedTensor of
    placeholders (flat values [None] + value_shape, int64 row splits), fed a RaggedTensorValue."""
    if ragged_rank == 0:
        return dense_placeholder(dtype, value_shape, name)
    with name_scope(name, "RaggedPlaceholder"):
        # as TF's: without value_shape the flat values' rank is unknown
        flat_shape = None if value_shape is None else TensorShape([None]).concatenate(as_shape(value_shape))
        result = dense_placeholder(dtype, flat_shape, name="flat_values")
        for i in reversed(range(ragged_rank)):
            splits = dense_placeholder(dtypes.int64, [None], name=f"row_splits_{i}")
            result = RaggedTensor(result, splits, internal=True)
        return result


# -- range -----------------------------------------------------------------------------------------
def _range_kernel(node, ctx):
    splits_np = dtypes.as_dtype(node.attr["Tsplits"]).as_numpy_dtype

    def run(starts, limits, deltas):
        starts, limits, deltas = np.broadcast_arrays(np.asarray(starts), np.asarray(limits), np.asarray(deltas))
        if starts.ndim > 1:
            raise invalid(node, "starts, limits and deltas must be scalars or vectors")
        if np.any(deltas == 0):
            raise invalid(node, "Requires delta != 0")
        span = limits.astype(np.float64) - starts
        sizes = np.maximum(np.ceil(span / deltas), 0).astype(np.int64).reshape(-1)
        check_output_size(node, [int(sizes.sum())])
        flat = [np.arange(s, s + n * d, d, dtype=starts.dtype)[:n]
                for s, d, n in zip(starts.reshape(-1), deltas.reshape(-1), sizes)]
        values = np.concatenate(flat) if flat else np.zeros([0], starts.dtype)
        return np.concatenate([[0], np.cumsum(sizes)]).astype(splits_np), values.astype(starts.dtype)
    return run


def _range_infer(op):
    n = None
    for t in op.inputs:
        if t.shape.ndims == 1 and t.shape[0].value is not None:
            n = t.shape[0].value
    return [(op.get_attr("Tsplits"), TensorShape([None if n is None else n + 1])),
            (op.inputs[0].dtype, TensorShape([None]))]


register("RaggedRange", _range_infer, _range_kernel, grad=None, dtypes={0: ("starts", _RANGE_DTYPES)})


@tf_export("ragged.range")
def ragged_range(starts, limits=None, deltas=1, dtype=None, name=None, row_splits_dtype=dtypes.int64):
    """tf.ragged.range(starts, limits=None, deltas=1, dtype=None, name=None,
    row_splits_dtype=tf.int64): row i is tf.range(starts[i], limits[i], deltas[i]) (scalars
    broadcast; with limits None the starts are the limits and the starts 0)."""
    if limits is None:
        starts, limits = 0, starts
    with name_scope(name, "RaggedRange", [starts, limits, deltas]):
        args = [starts, limits, deltas]
        if dtype is None:
            found = [a.dtype if hasattr(a, "dtype") and isinstance(a.dtype, dtypes.DType)
                     else convert_to_tensor(a).dtype for a in args]
            dtype = max(found, key=lambda d: _RANGE_DTYPES.index(d) if d in _RANGE_DTYPES else -1)
        dtype = dtypes.as_dtype(dtype)
        tensors = [convert_to_tensor(a, dtype=dtype, name=n) for a, n in zip(args, ("starts", "limits", "deltas"))]
        for t in tensors:
            if t.shape.ndims is not None and t.shape.ndims > 1:
                raise ValueError(f"ragged.range: arguments must be scalars or vectors, got shape {t.shape}")
        op = make_op("RaggedRange", tensors, {"T": dtype, "Tsplits": dtypes.as_dtype(row_splits_dtype)},
                     name="RaggedRange")
        return RaggedTensor.from_row_splits(op.outputs[1], op.outputs[0], validate=False)


# -- map_flat_values -------------------------------------------------------------------------------
@tf_export("ragged.map_flat_values")
def map_flat_values(op, *args, **kwargs):
    """tf.ragged.map_flat_values(op, *args, **kwargs): op applied to the flat values of the
    RaggedTensors among the arguments (which must share their row partitions), the result with
    that partition; op must keep the number of flat values. Without ragged arguments, op(*args)."""
    found: list = []

    def swap(x):
        if isinstance(x, RaggedTensorValue):
            raise TypeError("map_flat_values takes RaggedTensors, not RaggedTensorValues")
        if isinstance(x, RaggedTensor):
            found.append(x)
            return x.flat_values
        if isinstance(x, (list, tuple)):
            return type(x)(swap(v) for v in x)
        if isinstance(x, dict):
            return {k: swap(v) for k, v in x.items()}
        return x

    flat_args, flat_kwargs = swap(list(args)), swap(kwargs)
    if not found:
        return op(*flat_args, **flat_kwargs)
    first = found[0]
    splits_dtype = first.row_splits.dtype
    if any(rt.row_splits.dtype != splits_dtype for rt in found):
        raise ValueError("Inputs must have identical row_splits dtypes")
    if any(rt.ragged_rank != first.ragged_rank for rt in found):
        raise ValueError("Inputs must have identical ragged ranks")
    checks = [assert_equal(a, b, message="Inputs must have identical ragged splits")
              for rt in found[1:] for a, b in zip(first.nested_row_splits, rt.nested_row_splits) if a is not b]
    with control_dependencies(checks):
        result = op(*flat_args, **flat_kwargs)
        if checks:
            result = identity(result)
    if result.shape.ndims is not None and first.flat_values.shape.ndims is not None:
        result.shape[:1].assert_is_compatible_with(first.flat_values.shape[:1])
    return first.with_flat_values(result)
