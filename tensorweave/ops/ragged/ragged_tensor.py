"""tf.RaggedTensor and tf.ragged.RaggedTensorValue (TF 1.15 semantics).

A RaggedTensor is a composite of plain tensors: `values` (a Tensor, or a RaggedTensor for more
than one ragged dimension) and `row_splits` (int64 or int32 [nrows + 1]: row i is
values[row_splits[i]:row_splits[i + 1]]). It crosses tasks, is fetched and fed as its flat values
and nested row splits: `Session.run` returns a RaggedTensorValue, and one feeds it. Its methods are composites of array
ops (so gradients flow through `to_tensor`), except `to_sparse`, TF's RaggedTensorToSparse kernel.
"""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import control_dependencies, name_scope
from tensorweave.framework.graph import Tensor, default_session_for
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, stack
from tensorweave.ops.array.core import identity, reshape, shape as shape_of
from tensorweave.ops.array.fill import zeros
from tensorweave.ops.array.gather import gather, scatter_nd
from tensorweave.ops.array.pad import broadcast_to
from tensorweave.ops.debugging.asserts import assert_equal, assert_greater_equal, assert_non_negative
from tensorweave.ops.helpers import INDEX, invalid, make_op
from tensorweave.ops.math.array_composites import boolean_mask, sequence_mask
from tensorweave.ops.math.binary import maximum, minimum, multiply, not_equal, subtract
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import bincount, cumsum, reduce_any, reduce_max
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.registry import register


_VALID = "do not form a valid RaggedTensor"


# -- the fetched value -----------------------------------------------------------------------------
@tf_export("ragged.RaggedTensorValue")
class RaggedTensorValue:
    """tf.ragged.RaggedTensorValue(values, row_splits): a RaggedTensor's value, as numpy arrays."""

    def __init__(self, values, row_splits):
        row_splits = np.asarray(row_splits)
        if row_splits.ndim != 1 or row_splits.dtype not in (np.int32, np.int64):
            raise TypeError("row_splits must be a 1D int32 or int64 numpy array")
        if not isinstance(values, RaggedTensorValue):
            values = np.asarray(values)
            if values.ndim == 0:
                raise TypeError("values must be a numpy array of rank >= 1 or a RaggedTensorValue")
        self._values, self._row_splits = values, row_splits

    values = property(lambda self: self._values)
    row_splits = property(lambda self: self._row_splits)
    dtype = property(lambda self: self._values.dtype)
    ragged_rank = property(lambda self: 1 + (self._values.ragged_rank if self._is_nested() else 0))

    def _is_nested(self) -> bool:
        return isinstance(self._values, RaggedTensorValue)

    @property
    def flat_values(self) -> np.ndarray:
        return self._values.flat_values if self._is_nested() else self._values

    @property
    def nested_row_splits(self) -> tuple:
        return (self._row_splits,) + (self._values.nested_row_splits if self._is_nested() else ())

    @property
    def shape(self) -> tuple:
        """(nrows, None, ...): the ragged dimensions are None, the inner ones those of the values."""
        return (self._row_splits.shape[0] - 1,) + (None,) + tuple(self._values.shape[1:])

    def to_list(self) -> list:
        """The value as nested Python lists (strings as bytes)."""
        values = self._values.to_list() if self._is_nested() else self._values.tolist()
        splits = self._row_splits.tolist()
        return [values[a:b] for a, b in zip(splits[:-1], splits[1:])]

    def __str__(self):
        return f"<tf.RaggedTensorValue {self.to_list()}>"

    def __repr__(self):
        return f"tf.RaggedTensorValue(values={self._values!r}, row_splits={self._row_splits!r})"


# -- row partitions --------------------------------------------------------------------------------
@tf_export("ragged.row_splits_to_segment_ids")
def row_splits_to_segment_ids(splits, name=None, out_type=None) -> Tensor:
    """tf.ragged.row_splits_to_segment_ids(splits, name=None, out_type=None): the row of each value
    (a row of length n repeats its index n times); out_type defaults to splits' dtype."""
    with name_scope(name, "RaggedSplitsToSegmentIds", [splits]):
        splits = _as_index(splits, "splits")
        out_type = splits.dtype if out_type is None else dtypes.as_dtype(out_type)
        splits.shape.with_rank(1)
        nvals = cast(splits[-1], dtypes.int32)
        # a row boundary at value position p adds one to the row id from p on
        marks = bincount(cast(splits[1:-1], dtypes.int32), minlength=nvals, maxlength=nvals)
        return cast(cumsum(marks), out_type)


@tf_export("ragged.segment_ids_to_row_splits")
def segment_ids_to_row_splits(segment_ids, num_segments=None, out_type=None, name=None) -> Tensor:
    """tf.ragged.segment_ids_to_row_splits(segment_ids, num_segments=None, out_type=None,
    name=None): row splits of sorted segment ids (num_segments rows, default max id + 1)."""
    with name_scope(name, "SegmentIdsToRaggedSplits", [segment_ids]):
        segment_ids = _as_index(segment_ids, "segment_ids")
        out_type = dtypes.int64 if out_type is None else dtypes.as_dtype(out_type)
        segment_ids.shape.with_rank(1)
        if num_segments is not None:
            num_segments = cast(_as_index(num_segments, "num_segments"), dtypes.int32)
        lengths = bincount(cast(segment_ids, dtypes.int32), minlength=num_segments, maxlength=num_segments)
        return concat([zeros([1], out_type), cast(cumsum(lengths), out_type)], 0)


def _as_index(x, name: str) -> Tensor:
    t = x if isinstance(x, Tensor) else convert_to_tensor(x, name=name, dtype=dtypes.int64)
    if t.dtype not in INDEX:
        raise TypeError(f"{name} must be int32 or int64, got {t.dtype.name}")
    return t


def _convert_values(values) -> "Tensor | RaggedTensor":
    return values if isinstance(values, (Tensor, RaggedTensor)) else convert_to_tensor(values, name="values")


def _nvals(values, out_type) -> Tensor:
    return values.nrows(out_type) if isinstance(values, RaggedTensor) else shape_of(values, out_type=out_type)[0]


def _checked_splits(factory: str, values, row_splits: Tensor) -> Tensor:
    """row_splits, with run-time checks (InvalidArgumentError) that it starts at 0, never
    decreases and ends at the number of values."""
    msg = f"Arguments to {factory} {_VALID}"
    row_splits.shape.with_rank(1)
    checks = [assert_equal(row_splits[0], 0, message=f"{msg}: row_splits must start at 0"),
              assert_greater_equal(row_splits[1:], row_splits[:-1],
                                   message=f"{msg}: row_splits must be non-decreasing"),
              assert_equal(row_splits[-1], _nvals(values, row_splits.dtype),
                           message=f"{msg}: row_splits must end at the number of values")]
    with control_dependencies(checks):
        return identity(row_splits)


# -- the graph-level RaggedTensor ------------------------------------------------------------------
@tf_export("RaggedTensor")
class RaggedTensor:
    """tf.RaggedTensor: a tensor whose rows have different lengths; built with its factory
    methods (from_row_splits, from_row_lengths, from_value_rowids, from_tensor, ...)."""

    _is_tensor_like = True

    def __init__(self, values, row_splits, internal: bool = False):
        if not internal:
            raise ValueError("RaggedTensor constructor is private; please use one of the factory methods "
                             "instead (e.g., RaggedTensor.from_row_lengths())")
        if not isinstance(values, (Tensor, RaggedTensor)):
            raise TypeError(f"values must be a Tensor or RaggedTensor, got {type(values).__name__}")
        if row_splits.dtype not in INDEX:
            raise TypeError(f"row_splits must be int32 or int64, got {row_splits.dtype.name}")
        if isinstance(values, RaggedTensor) and values.row_splits.dtype != row_splits.dtype:
            raise ValueError("dtype mismatch between the row_splits of a RaggedTensor and those of its values")
        row_splits.shape.with_rank(1)
        if isinstance(values, Tensor):
            values.shape.with_rank_at_least(1)
        self._values, self._row_splits = values, row_splits

    # -- factories -------------------------------------------------------------------------------
    @classmethod
    def from_row_splits(cls, values, row_splits, name=None, validate: bool = True) -> "RaggedTensor":
        """RaggedTensor.from_row_splits(values, row_splits, name=None, validate=True): row i is
        values[row_splits[i]:row_splits[i + 1]]."""
        with name_scope(name, "RaggedFromRowSplits", [values, row_splits]):
            values, row_splits = _convert_values(values), _as_index(row_splits, "row_splits")
            if validate:
                row_splits = _checked_splits("from_row_splits", values, row_splits)
            return cls(values, row_splits, internal=True)

    @classmethod
    def from_row_lengths(cls, values, row_lengths, name=None, validate: bool = True) -> "RaggedTensor":
        """RaggedTensor.from_row_lengths(values, row_lengths, name=None, validate=True): row i
        holds the next row_lengths[i] values."""
        with name_scope(name, "RaggedFromRowLengths", [values, row_lengths]):
            values, row_lengths = _convert_values(values), _as_index(row_lengths, "row_lengths")
            row_lengths.shape.with_rank(1)
            checks = []
            if validate:
                checks.append(assert_non_negative(
                    row_lengths, message=f"Arguments to from_row_lengths {_VALID}: row_lengths must be >= 0"))
            with control_dependencies(checks):
                splits = concat([zeros([1], row_lengths.dtype), cumsum(row_lengths)], 0)
            if validate:
                splits = _checked_splits("from_row_lengths", values, splits)
            return cls(values, splits, internal=True)

    @classmethod
    def from_value_rowids(cls, values, value_rowids, nrows=None, name=None, validate: bool = True) -> "RaggedTensor":
        """RaggedTensor.from_value_rowids(values, value_rowids, nrows=None, name=None, validate=True):
        value j goes to row value_rowids[j] (sorted ascending); nrows defaults to the last id + 1."""
        with name_scope(name, "RaggedFromValueRowIds", [values, value_rowids, nrows]):
            values, value_rowids = _convert_values(values), _as_index(value_rowids, "value_rowids")
            value_rowids.shape.with_rank(1)
            checks = []
            if validate:
                msg = f"Arguments to from_value_rowids {_VALID}"
                checks = [assert_non_negative(value_rowids, message=f"{msg}: value_rowids must be >= 0"),
                          assert_greater_equal(value_rowids[1:], value_rowids[:-1],
                                               message=f"{msg}: value_rowids must be sorted"),
                          assert_equal(shape_of(value_rowids, out_type=value_rowids.dtype)[0],
                                       _nvals(values, value_rowids.dtype),
                                       message=f"{msg}: there must be one value_rowid per value")]
                if nrows is not None:
                    nrows = _as_index(nrows, "nrows")
                    checks.append(assert_greater_equal(
                        cast(nrows, value_rowids.dtype), value_rowids[-1:] + 1,
                        message=f"{msg}: nrows must be greater than the largest value_rowid"))
            with control_dependencies(checks):
                splits = segment_ids_to_row_splits(value_rowids, nrows, out_type=value_rowids.dtype)
            return cls(values, splits, internal=True)

    @classmethod
    def from_row_starts(cls, values, row_starts, name=None, validate: bool = True) -> "RaggedTensor":
        """RaggedTensor.from_row_starts(values, row_starts, ...): row_splits without its last entry."""
        with name_scope(name, "RaggedFromRowStarts", [values, row_starts]):
            values, row_starts = _convert_values(values), _as_index(row_starts, "row_starts")
            splits = concat([row_starts, reshape(_nvals(values, row_starts.dtype), [1])], 0)
            return cls.from_row_splits(values, splits, validate=validate)

    @classmethod
    def from_row_limits(cls, values, row_limits, name=None, validate: bool = True) -> "RaggedTensor":
        """RaggedTensor.from_row_limits(values, row_limits, ...): row_splits without its first 0."""
        with name_scope(name, "RaggedFromRowLimits", [values, row_limits]):
            values, row_limits = _convert_values(values), _as_index(row_limits, "row_limits")
            splits = concat([zeros([1], row_limits.dtype), row_limits], 0)
            return cls.from_row_splits(values, splits, validate=validate)

    @classmethod
    def from_nested_row_splits(cls, flat_values, nested_row_splits, name=None, validate: bool = True):
        """RaggedTensor.from_nested_row_splits(flat_values, nested_row_splits, ...): one ragged
        dimension per row-splits tensor, the outermost first."""
        if isinstance(nested_row_splits, Tensor):
            raise TypeError("nested_row_splits must be a list of Tensors")
        with name_scope(name, "RaggedFromNestedRowSplits", [flat_values] + list(nested_row_splits)):
            result = flat_values
            for splits in reversed(nested_row_splits):
                result = cls.from_row_splits(result, splits, validate=validate)
            return result

    @classmethod
    def from_nested_row_lengths(cls, flat_values, nested_row_lengths, name=None, validate: bool = True):
        """RaggedTensor.from_nested_row_lengths(flat_values, nested_row_lengths, ...)."""
        with name_scope(name, "RaggedFromNestedRowlengths", [flat_values] + list(nested_row_lengths)):
            result = flat_values
            for lengths in reversed(nested_row_lengths):
                result = cls.from_row_lengths(result, lengths, validate=validate)
            return result

    @classmethod
    def from_nested_value_rowids(cls, flat_values, nested_value_rowids, nested_nrows=None, name=None,
                                 validate: bool = True):
        """RaggedTensor.from_nested_value_rowids(flat_values, nested_value_rowids, nested_nrows=None, ...)."""
        nested_nrows = [None] * len(nested_value_rowids) if nested_nrows is None else list(nested_nrows)
        if len(nested_nrows) != len(nested_value_rowids):
            raise ValueError("nested_nrows must have the same length as nested_value_rowids")
        with name_scope(name, "RaggedFromNestedValueRowIds", [flat_values] + list(nested_value_rowids)):
            result = flat_values
            for rowids, nrows in reversed(list(zip(nested_value_rowids, nested_nrows))):
                result = cls.from_value_rowids(result, rowids, nrows, validate=validate)
            return result

    @classmethod
    def from_tensor(cls, tensor, lengths=None, padding=None, ragged_rank: int = 1, name=None,
                    row_splits_dtype=dtypes.int64) -> "RaggedTensor":
        """RaggedTensor.from_tensor(tensor, lengths=None, padding=None, ragged_rank=1, name=None,
        row_splits_dtype=tf.int64): the rows of a dense tensor, each cut to lengths[i] or before
        its trailing `padding` elements (not both); ragged_rank dimensions become ragged."""
        if lengths is not None and padding is not None:
            raise ValueError("Specify lengths or padding, but not both")
        if not isinstance(ragged_rank, int) or ragged_rank <= 0:
            raise ValueError(f"ragged_rank must be a positive integer, got {ragged_rank!r}")
        splits_dtype = dtypes.as_dtype(row_splits_dtype)
        with name_scope(name, "RaggedFromTensor", [tensor, lengths, padding]):
            tensor = convert_to_tensor(tensor, name="tensor")
            ndims = tensor.shape.ndims
            if ndims is None:
                raise ValueError("The rank of tensor must be known statically")
            if ndims <= ragged_rank:
                raise ValueError(f"ragged_rank must be less than the rank of tensor ({ndims}), got {ragged_rank}")
            if ragged_rank > 1:
                if lengths is not None:
                    raise ValueError("lengths are supported for ragged_rank=1 only (tensorweave)")
                # the outer dimensions are uniform; the innermost ragged one is cut by `padding`
                dims = shape_of(tensor, out_type=splits_dtype)
                flat = reshape(tensor, concat([[-1], dims[2:]], 0))
                inner = cls.from_tensor(flat, padding=padding, ragged_rank=ragged_rank - 1,
                                        row_splits_dtype=splits_dtype)
                return cls._uniform(inner, dims[0], dims[1])
            dims = shape_of(tensor, out_type=splits_dtype)
            nrows, ncols = dims[0], dims[1]
            if padding is not None:
                padding = convert_to_tensor(padding, name="padding", dtype=tensor.dtype)
                tensor.shape[2:].assert_is_compatible_with(padding.shape)
                is_value = not_equal(tensor, padding)
                if ndims > 2:
                    is_value = reduce_any(is_value, axis=list(range(2, ndims)))
                # a row's length is the position after its last non-padding element
                ends = multiply(cast(is_value, splits_dtype), range_(1, ncols + 1, dtype=splits_dtype))
                lengths = reduce_max(concat([ends, zeros(stack([nrows, 1]), splits_dtype)], 1), axis=1)
            if lengths is None:
                values = reshape(tensor, concat([[-1], dims[2:]], 0))
                return cls(values, range_(0, nrows * ncols + 1, ncols, dtype=splits_dtype), internal=True)
            lengths = cast(_as_index(lengths, "lengths"), splits_dtype)
            lengths.shape.with_rank(1)
            lengths = maximum(minimum(lengths, ncols), 0)
            values = boolean_mask(tensor, sequence_mask(lengths, ncols))
            return cls(values, concat([zeros([1], splits_dtype), cumsum(lengths)], 0), internal=True)

    @classmethod
    def _uniform(cls, values, nrows: Tensor, ncols: Tensor) -> "RaggedTensor":
        return cls(values, range_(0, nrows * ncols + 1, ncols, dtype=nrows.dtype), internal=True)

    # -- the parts ------------------------------------------------------------------------------
    values = property(lambda self: self._values)
    row_splits = property(lambda self: self._row_splits)
    dtype = property(lambda self: self._values.dtype)
    graph = property(lambda self: self._row_splits.graph)
    device = property(lambda self: self._row_splits.device)
    ragged_rank = property(lambda self: 1 + (self._values.ragged_rank if self._nested() else 0))

    def _nested(self) -> bool:
        return isinstance(self._values, RaggedTensor)

    @property
    def flat_values(self) -> Tensor:
        return self._values.flat_values if self._nested() else self._values

    @property
    def nested_row_splits(self) -> tuple:
        return (self._row_splits,) + (self._values.nested_row_splits if self._nested() else ())

    def get_shape(self) -> TensorShape:
        """[nrows, None, ...]: the ragged dimensions unknown, the inner ones those of flat_values."""
        n = self._row_splits.shape[0].value
        inner = self._values.shape[1:] if self._values.shape.ndims is not None else unknown_shape()
        return TensorShape([None if n is None else n - 1, None]).concatenate(inner)

    shape = property(get_shape)

    def row_lengths(self, axis: int = 1, name=None):
        """The length of each row (axis=1, a Tensor), or of each row of the values (axis > 1, a
        RaggedTensor with this one's rows)."""
        with name_scope(name, "RaggedRowLengths", [self]):
            if axis == 1:
                return subtract(self._row_splits[1:], self._row_splits[:-1])
            if axis < 1 or not self._nested():
                raise ValueError(f"row_lengths: axis={axis} is not a ragged dimension of this RaggedTensor")
            return self.with_values(self._values.row_lengths(axis - 1))

    def nrows(self, out_type=None, name=None) -> Tensor:
        """The number of rows (row_splits' dtype unless out_type)."""
        out_type = self._row_splits.dtype if out_type is None else dtypes.as_dtype(out_type)
        with name_scope(name, "RaggedNRows", [self]):
            return shape_of(self._row_splits, out_type=out_type)[0] - 1

    def value_rowids(self, name=None) -> Tensor:
        """The row of each value."""
        with name_scope(name, "RaggedValueRowIds", [self]):
            return row_splits_to_segment_ids(self._row_splits)

    def row_starts(self, name=None) -> Tensor:
        with name_scope(name, "RaggedRowStarts", [self]):
            return self._row_splits[:-1]

    def row_limits(self, name=None) -> Tensor:
        with name_scope(name, "RaggedRowLimits", [self]):
            return self._row_splits[1:]

    def with_values(self, new_values) -> "RaggedTensor":
        """The same row partition over other values (one row each per current value)."""
        return RaggedTensor(_convert_values(new_values), self._row_splits, internal=True)

    def with_flat_values(self, new_values) -> "RaggedTensor":
        """The same nested row partitions over other flat values."""
        if self._nested():
            return self.with_values(self._values.with_flat_values(new_values))
        return self.with_values(new_values)

    # -- conversions ----------------------------------------------------------------------------
    def to_tensor(self, default_value=None, name=None) -> Tensor:
        """A dense tensor, each ragged dimension padded to its longest row with default_value
        (zero, False or b'' when None)."""
        with name_scope(name, "RaggedToTensor", [self]):
            values = self._values.to_tensor(default_value) if self._nested() else self._values
            splits = self._row_splits
            rowids = self.value_rowids()
            nvals = shape_of(values, out_type=splits.dtype)[0]
            cols = range_(0, nvals, dtype=splits.dtype) - gather(splits, rowids)
            ncols = reduce_max(concat([self.row_lengths(), zeros([1], splits.dtype)], 0))
            # each output cell names the value it takes, or nvals: the default appended after them
            index = scatter_nd(stack([rowids, cols], 1), range_(0, nvals, dtype=splits.dtype) - nvals,
                               stack([self.nrows(), ncols])) + nvals
            if default_value is None:
                default_value = b"" if self.dtype == dtypes.string else np.zeros([], self.dtype.as_numpy_dtype)
            default = convert_to_tensor(default_value, dtype=self.dtype, name="default_value")
            default = broadcast_to(default, concat([[1], shape_of(values, out_type=splits.dtype)[1:]], 0))
            dense = gather(concat([values, default], 0), index)
            dense.set_shape(self.get_shape().merge_with(dense.shape) if dense.shape.ndims is not None
                            else self.get_shape())
            return dense

    def to_sparse(self, name=None) -> SparseTensor:
        """A SparseTensor holding every value, its dense_shape that of to_tensor()."""
        with name_scope(name, "RaggedToSparse", [self]):
            splits = list(self.nested_row_splits)
            op = make_op("RaggedTensorToSparse", splits + [self.flat_values],
                         {"RAGGED_RANK": len(splits), "T": self.dtype, "Tsplits": splits[0].dtype},
                         name="RaggedTensorToSparse")
            return SparseTensor(*op.outputs)

    # -- the Session's composite protocol ---------------------------------------------------------
    def _fetch_parts(self) -> list:
        return [self.flat_values] + list(self.nested_row_splits)

    def _fetch_value(self, parts) -> RaggedTensorValue:
        value = parts[0]
        for splits in reversed(parts[1:]):
            value = RaggedTensorValue(np.asarray(value), np.asarray(splits)) \
                if not isinstance(value, RaggedTensorValue) else RaggedTensorValue(value, np.asarray(splits))
        return value

    def _feed_parts(self) -> list:
        return self._fetch_parts()

    def _split_feed(self, value) -> list:
        if not isinstance(value, RaggedTensorValue):
            raise TypeError(f"A RaggedTensor is fed a tf.ragged.RaggedTensorValue, got {type(value).__name__}")
        if value.ragged_rank != self.ragged_rank:
            raise ValueError(f"Cannot feed a RaggedTensorValue of ragged_rank {value.ragged_rank} to a RaggedTensor "
                             f"of ragged_rank {self.ragged_rank}")
        return [value.flat_values] + list(value.nested_row_splits)

    def eval(self, feed_dict=None, session=None) -> RaggedTensorValue:
        """The value of this RaggedTensor in `session` (the default session when None)."""
        return default_session_for(self.graph, session).run(self, feed_dict)

    def consumers(self) -> list:
        parts = self._fetch_parts()
        return list({id(op): op for t in parts for op in t.consumers()}.values())

    def __repr__(self):
        return f"tf.RaggedTensor(values={self._values}, row_splits={self._row_splits})"


def is_ragged(x) -> bool:
    """Whether x is a RaggedTensor or a RaggedTensorValue."""
    return isinstance(x, (RaggedTensor, RaggedTensorValue))


def convert_to_tensor_or_ragged_tensor(value, dtype=None, name=None):
    """RaggedTensors pass through (RaggedTensorValues become constants); anything else a Tensor."""
    if isinstance(value, RaggedTensorValue):
        value = RaggedTensor.from_nested_row_splits(
            convert_to_tensor(value.flat_values, dtype=dtype, name="flat_values"),
            [convert_to_tensor(s) for s in value.nested_row_splits], name=name, validate=False)
    if isinstance(value, RaggedTensor):
        if dtype is not None and dtypes.as_dtype(dtype) != value.dtype:
            raise ValueError(f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} for RaggedTensor "
                             f"with dtype {value.dtype.name}")
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


# -- RaggedTensorToSparse --------------------------------------------------------------------------
def check_splits(node, splits: list, nvals: int) -> None:
    """TF's checks of nested row splits against the number of flat values."""
    for i, s in enumerate(splits):
        s = np.asarray(s)
        inner = len(splits[i + 1]) - 1 if i + 1 < len(splits) else nvals
        if s.ndim != 1 or s.size == 0:
            raise invalid(node, f"ragged splits {i} must be a non-empty vector")
        if s[0] != 0:
            raise invalid(node, f"First value of ragged splits {i} must be 0, got {s[0]}")
        if np.any(np.diff(s) < 0):
            raise invalid(node, f"Ragged splits {i} must be sorted in ascending order: {s.tolist()}")
        if s[-1] != inner:
            raise invalid(node, f"Final value of ragged splits {i} ({s[-1]}) must match the length of the "
                                f"values it splits ({inner})")


def ragged_coordinates(splits: list) -> tuple:
    """(coordinates [ragged_rank + 1 arrays, one entry per flat value], dense sizes of the ragged
    dimensions): where each flat value sits in the padded dense tensor."""
    coords: list = []
    sizes = [len(splits[0]) - 1]
    for s in splits:
        s = np.asarray(s, dtype=np.int64)
        lengths = np.diff(s)
        rows = np.repeat(np.arange(len(lengths)), lengths)
        coords = [c[rows] for c in coords] if coords else [rows]
        coords.append(np.arange(len(rows)) - s[:-1][rows])
        sizes.append(int(lengths.max()) if lengths.size else 0)
    return coords, sizes


def _to_sparse_kernel(node, ctx):
    def run(*inputs):
        splits, values = inputs[:-1], np.asarray(inputs[-1])
        check_splits(node, splits, len(values))
        coords, sizes = ragged_coordinates(splits)
        inner = values.shape[1:]
        k = int(np.prod(inner, dtype=np.int64))
        outer = np.repeat(np.stack(coords, 1), k, axis=0) if coords else np.zeros([0, 0], np.int64)
        inner_idx = np.tile(np.indices(inner).reshape(len(inner), k).T, (len(values), 1))
        indices = np.concatenate([outer, inner_idx.astype(np.int64)], 1)
        return indices, values.reshape(-1), np.array(sizes + list(inner), dtype=np.int64)
    return run


def _to_sparse_infer(op):
    values = op.inputs[-1].shape
    rank = None if values.ndims is None else op.get_attr("RAGGED_RANK") + values.ndims
    return [(dtypes.int64, TensorShape([None, rank])), (op.inputs[-1].dtype, TensorShape([None])),
            (dtypes.int64, TensorShape([rank]))]


def _to_sparse_grad(op, *grads):
    flat_values = op.inputs[-1]
    return [None] * (len(op.inputs) - 1) + [reshape(grads[1], shape_of(flat_values))]


register("RaggedTensorToSparse", _to_sparse_infer, _to_sparse_kernel, grad=_to_sparse_grad,
         dtypes={0: ("rt_nested_splits", INDEX)})


def split_each(input, split_fn, dtype=None):
    """Applies `split_fn` (a 1-D tensor -> (row_splits, [values, ...]), each element split into a
    row) to every element of a Tensor or RaggedTensor of known rank; per values output: a dense
    1-D tensor for a scalar input, else a RaggedTensor with one more ragged dimension."""
    rt = convert_to_tensor_or_ragged_tensor(input, dtype=dtype, name="input")
    rank = rt.shape.ndims
    if rank is None:
        raise ValueError("Rank of `input` must be statically known.")
    if isinstance(rt, Tensor) and rank > 1:
        rt = RaggedTensor.from_tensor(rt, ragged_rank=rank - 1)
    if isinstance(rt, RaggedTensor) and rt.flat_values.shape.ndims != 1:
        flat = rt.flat_values
        if flat.shape.ndims is None:
            raise ValueError("Rank of `input` must be statically known.")
        rt = rt.with_flat_values(RaggedTensor.from_tensor(flat, ragged_rank=flat.shape.ndims - 1))
    flat = rt.flat_values if isinstance(rt, RaggedTensor) else reshape(rt, [-1])
    splits, outputs = split_fn(flat)
    if rank == 0:
        return outputs
    rows = [RaggedTensor.from_row_splits(v, splits, validate=False) for v in outputs]
    return [rt.with_flat_values(r) for r in rows] if isinstance(rt, RaggedTensor) else rows
