"""tf.ragged's array ops over RaggedTensors and Tensors alike (TF 1.15 semantics): boolean_mask,
stack and stack_dynamic_partitions. Composites of array ops on the row splits and values, as
TF's ragged_array_ops / ragged_concat_ops build them, so gradients flow to the values."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.api import control_dependencies, name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, stack as dense_stack
from tensorweave.ops.array.core import reshape, shape as shape_of, transpose
from tensorweave.ops.array.fill import zeros
from tensorweave.ops.array.gather import gather
from tensorweave.ops.debugging.asserts import assert_equal, assert_less, assert_non_negative
from tensorweave.ops.math.array_composites import argsort, boolean_mask as dense_boolean_mask
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import count_nonzero, cumprod, cumsum
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.ragged.factory import ragged_range
from tensorweave.ops.ragged.ragged_tensor import RaggedTensor, convert_to_tensor_or_ragged_tensor

_SPLITS_MISMATCH = "Inputs must have identical ragged splits"


def _row_splits_dtype(*values):
    """The row-splits dtype the ragged ones among `values` share (int64 when none is ragged);
    ValueError when they differ."""
    found = {v.row_splits.dtype for v in values if isinstance(v, RaggedTensor)}
    if len(found) > 1:
        raise ValueError("Input RaggedTensors have mismatched row_splits dtypes; use "
                         "RaggedTensor.with_row_splits_dtype() to convert them to compatible dtypes.")
    return found.pop() if found else dtypes.int64


def lengths_to_splits(lengths: Tensor) -> Tensor:
    return concat([zeros([1], lengths.dtype), cumsum(lengths)], 0)


def _assert_splits_match(nested_splits_lists: list) -> list:
    """Run-time checks that each list of nested row splits equals the first."""
    first = nested_splits_lists[0]
    if any(len(s) != len(first) for s in nested_splits_lists):
        raise ValueError(_SPLITS_MISMATCH)
    return [assert_equal(a, b, message=_SPLITS_MISMATCH) for other in nested_splits_lists[1:]
            for a, b in zip(first, other)]


def gather_rows(params, indices: Tensor):
    """params[indices] along the first dimension, for a Tensor or a RaggedTensor (each selected
    row with its values, at every ragged level)."""
    if not isinstance(params, RaggedTensor):
        return gather(params, indices)
    splits = params.row_splits
    indices = cast(indices, splits.dtype)
    value_index = ragged_range(gather(splits[:-1], indices), gather(splits[1:], indices), dtype=splits.dtype,
                               row_splits_dtype=splits.dtype)
    return RaggedTensor(gather_rows(params.values, value_index.values), value_index.row_splits, internal=True)


# -- boolean_mask --------------------------------------------------------------------------------
@tf_export("ragged.boolean_mask")
def boolean_mask(data, mask, name=None):
    """tf.ragged.boolean_mask(data, mask, name=None): the elements of `data` (Tensor or
    RaggedTensor) where `mask` (bool, Tensor or RaggedTensor, its shape a prefix of data's) is
    True. Every masked dimension but the first becomes ragged: the result has data's rank, and is
    a Tensor only when both are Tensors and mask is a vector."""
    with name_scope(name, "RaggedMask", [data, mask]):
        data = convert_to_tensor_or_ragged_tensor(data, name="data")
        mask = convert_to_tensor_or_ragged_tensor(mask, dtypes.bool, name="mask")
        splits_dtype = _row_splits_dtype(data, mask)
        if mask.shape.ndims is None:
            raise ValueError("mask.shape.ndims must be known statically.")
        if mask.shape.ndims == 0:
            raise ValueError("mask cannot be scalar.")
        if isinstance(mask, RaggedTensor):
            return _mask_by_ragged(data, mask, splits_dtype)
        if isinstance(data, RaggedTensor) and mask.shape.ndims == 1:
            # keep whole rows: their lengths, and the values whose row is kept
            masked_splits = lengths_to_splits(dense_boolean_mask(data.row_lengths(), mask))
            masked_values = boolean_mask(data.values, gather(mask, data.value_rowids()))
            return RaggedTensor(masked_values, masked_splits, internal=True)
        if isinstance(data, RaggedTensor):
            mask = RaggedTensor.from_tensor(mask, ragged_rank=min(data.ragged_rank, mask.shape.ndims - 1),
                                            row_splits_dtype=data.row_splits.dtype)
            return boolean_mask(data, mask)
        return _mask_dense(data, mask, splits_dtype)


def _mask_by_ragged(data, mask: RaggedTensor, splits_dtype):
    """A ragged mask: strip its ragged dimensions (and as many of data's, which must match),
    mask the values, and put the row partitions back, the innermost counting the kept values."""
    if not isinstance(data, RaggedTensor):
        data = RaggedTensor.from_tensor(data, ragged_rank=mask.ragged_rank, row_splits_dtype=mask.row_splits.dtype)
    checks = _assert_splits_match([list(mask.nested_row_splits),
                                   list(data.nested_row_splits[:mask.ragged_rank])])
    with control_dependencies(checks):
        splits = []
        while isinstance(mask, RaggedTensor):
            if mask.shape.ndims > 2:
                splits.append(mask.row_splits)
            else:
                kept_before = concat([zeros([1], splits_dtype), cumsum(cast(mask.values, splits_dtype))], 0)
                splits.append(gather(kept_before, mask.row_splits))
            mask, data = mask.values, data.values
        masked = boolean_mask(data, mask)
    for s in reversed(splits):
        masked = RaggedTensor(masked, s, internal=True)
    return masked


def _mask_dense(data: Tensor, mask: Tensor, splits_dtype):
    """Both dense: TF's boolean_mask of the values, each inner masked dimension made ragged."""
    masked = dense_boolean_mask(data, mask)
    ndims = mask.shape.ndims
    if ndims < 2:
        return masked
    lengths = reshape(count_nonzero(mask, axis=-1, dtype=splits_dtype), [-1])
    masked = RaggedTensor(masked, lengths_to_splits(lengths), internal=True)
    mask_shape = shape_of(mask, out_type=splits_dtype)
    split_size = cumprod(mask_shape) + 1
    for dim in range(ndims - 3, -1, -1):   # the outer masked dimensions: uniform rows
        masked = RaggedTensor(masked, range_(0, split_size[dim], dtype=splits_dtype) * mask_shape[dim + 1],
                              internal=True)
    return masked


# -- stack ---------------------------------------------------------------------------------------
@tf_export("ragged.stack")
def stack(values, axis=0, name=None):
    """tf.ragged.stack(values, axis=0, name=None): the Tensors and RaggedTensors of `values`
    (one rank R) stacked along a new dimension `axis` into one of rank R + 1; a Tensor when all
    are Tensors and the new dimension is the last, else a RaggedTensor (rows may differ in
    length, including the outer ones of stacked Tensors)."""
    if not isinstance(values, (list, tuple)):
        values = [values]
    with name_scope(name, "RaggedConcat", values):
        return _stack_or_concat(list(values), axis, stack_values=True)


def _positive_axis(axis: int, ndims) -> int:
    if ndims is None:
        if axis < 0:
            raise ValueError("axis may only be negative if ndims is statically known.")
        return axis
    if not -ndims <= axis < ndims:
        raise ValueError(f"axis={axis} out of bounds: expected {-ndims}<=axis<{ndims}")
    return axis + ndims if axis < 0 else axis


def _increase_ragged_rank_to(rt, ragged_rank: int, splits_dtype):
    if ragged_rank > 0:
        if not isinstance(rt, RaggedTensor):
            rt = RaggedTensor.from_tensor(rt, row_splits_dtype=splits_dtype)
        if rt.ragged_rank < ragged_rank:
            rt = rt.with_values(_increase_ragged_rank_to(rt.values, ragged_rank - 1, splits_dtype))
    return rt


def _stack_or_concat(inputs: list, axis: int, stack_values: bool):
    """TF's _ragged_stack_concat_helper: stack (or concatenate) Tensors and RaggedTensors."""
    if not inputs:
        raise ValueError("rt_inputs may not be empty.")
    inputs = [convert_to_tensor_or_ragged_tensor(v, name="rt_input") for v in inputs]
    splits_dtype = _row_splits_dtype(*inputs)
    if len(inputs) == 1 and not stack_values:
        return inputs[0]
    ndims = inputs[0].shape.ndims
    for rt in inputs[1:]:
        if ndims is not None and rt.shape.ndims != ndims:
            raise ValueError(f"Shape {rt.shape} must have rank {ndims}")
    out_ndims = ndims + 1 if ndims is not None and stack_values else ndims
    axis = _positive_axis(axis, out_ndims)
    if stack_values and ndims == 1 and axis == 0:
        return RaggedTensor.from_row_lengths(concat(inputs, 0), dense_stack([shape_of(r)[0] for r in inputs]))
    if not any(isinstance(rt, RaggedTensor) for rt in inputs) and ndims is not None and \
            axis in (out_ndims - 1, ndims - 1):
        return dense_stack(inputs, axis) if stack_values else concat(inputs, axis)
    inputs = [rt if isinstance(rt, RaggedTensor) else
              RaggedTensor.from_tensor(rt, ragged_rank=1, row_splits_dtype=splits_dtype) for rt in inputs]
    ragged_rank = max(max(rt.ragged_rank for rt in inputs), 1)
    inputs = [_increase_ragged_rank_to(rt, ragged_rank, splits_dtype) for rt in inputs]
    if axis == 0:
        return _stack_concat_axis_0(inputs, stack_values)
    if axis == 1:
        return _stack_concat_axis_1(inputs, stack_values)
    with control_dependencies(_assert_splits_match([[rt.row_splits] for rt in inputs])):
        inner = _stack_or_concat([rt.values for rt in inputs], axis - 1, stack_values)
        return RaggedTensor(inner, inputs[0].row_splits, internal=True)


def _concat_splits(splits_list: list) -> Tensor:
    """Row splits of the rows of each in turn: each one's splits past the first shifted by the
    values before it."""
    pieces, offset = [splits_list[0]], splits_list[0][-1]
    for splits in splits_list[1:]:
        pieces.append(splits[1:] + offset)
        offset = offset + splits[-1]
    return concat(pieces, 0)


def _stack_concat_axis_0(inputs: list, stack_values: bool):
    flat_values = concat([rt.flat_values for rt in inputs], 0)
    nested = [_concat_splits([rt.nested_row_splits[d] for rt in inputs]) for d in range(inputs[0].ragged_rank)]
    if stack_values:
        nested.insert(0, lengths_to_splits(dense_stack([rt.nrows() for rt in inputs])))
    return RaggedTensor.from_nested_row_splits(flat_values, nested, validate=False)


def _stack_concat_axis_1(inputs: list, stack_values: bool):
    """The rows of all inputs side by side: concatenated along axis 0, then gathered row i of
    each input in turn."""
    n = len(inputs)
    nrows = inputs[0].nrows()
    checks = [assert_equal(nrows, rt.nrows(), message=f"Input tensors at index 0 (=x) and {i + 1} (=y) have "
                                                      "incompatible shapes.")
              for i, rt in enumerate(inputs[1:])]
    with control_dependencies(checks):
        both = _stack_concat_axis_0(inputs, stack_values=False)
        order = reshape(transpose(reshape(range_(0, nrows * n, dtype=nrows.dtype), [n, -1])), [-1])
        permuted = gather_rows(both, order)
        if stack_values:
            return RaggedTensor(permuted, range_(0, nrows * n + 1, n, dtype=nrows.dtype), internal=True)
        return RaggedTensor(permuted.values, permuted.row_splits[::n], internal=True)


# -- stack_dynamic_partitions --------------------------------------------------------------------
@tf_export("ragged.stack_dynamic_partitions")
def stack_dynamic_partitions(data, partitions, num_partitions, name=None):
    """tf.ragged.stack_dynamic_partitions(data, partitions, num_partitions, name=None): a
    RaggedTensor whose row i holds the elements of `data` whose partition is i, in order
    (partitions' shape a prefix of data's; each in [0, num_partitions), checked when run)."""
    with name_scope(name, "SegmentStack", [data, partitions, num_partitions]):
        data = convert_to_tensor_or_ragged_tensor(data, name="data")
        splits_dtype = data.row_splits.dtype if isinstance(data, RaggedTensor) else None
        partitions = convert_to_tensor_or_ragged_tensor(partitions, name="partitions")
        if splits_dtype is not None and partitions.dtype != splits_dtype:
            partitions = partitions.with_flat_values(cast(partitions.flat_values, splits_dtype)) \
                if isinstance(partitions, RaggedTensor) else cast(partitions, splits_dtype)
        if partitions.dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError(f"stack_dynamic_partitions: partitions must be int32 or int64, got {partitions.dtype.name}")
        num_partitions = cast(convert_to_tensor(num_partitions, name="num_partitions"), partitions.dtype)
        rank = partitions.shape.ndims
        if rank is None:
            raise ValueError("partitions must have known rank.")
        num_partitions.shape.assert_has_rank(0)
        partitions.shape.assert_is_compatible_with(data.shape[:rank])
        if rank == 0:
            return RaggedTensor.from_value_rowids(_stack_one(data), dense_stack([partitions]), nrows=num_partitions,
                                                  validate=False)
        if rank == 1:
            permutation = argsort(partitions, stable=True)
            value_rowids = gather(partitions, permutation)
            checks = [assert_less(value_rowids[-1:], num_partitions,
                                  message="partitions must be less than num_partitions"),
                      assert_non_negative(partitions, message="partitions must be non-negative.")]
            with control_dependencies(checks):
                return RaggedTensor.from_value_rowids(gather_rows(data, permutation), value_rowids,
                                                      nrows=num_partitions, validate=False)
        if not isinstance(data, RaggedTensor):
            data = RaggedTensor.from_tensor(data, row_splits_dtype=partitions.dtype, ragged_rank=1)
        if not isinstance(partitions, RaggedTensor):
            partitions = RaggedTensor.from_tensor(partitions, row_splits_dtype=partitions.dtype,
                                                  ragged_rank=max(data.ragged_rank, rank - 1))
        check = assert_equal(data.row_splits, partitions.row_splits,
                             message="data and partitions have incompatible ragged shapes")
        with control_dependencies([check]):
            return stack_dynamic_partitions(data.values, partitions.values, num_partitions)


def _stack_one(data):
    """[data]: one more outer dimension of size 1."""
    if isinstance(data, RaggedTensor):
        return RaggedTensor(data, concat([zeros([1], data.row_splits.dtype), reshape(data.nrows(), [1])], 0),
                            internal=True)
    return dense_stack([data])
