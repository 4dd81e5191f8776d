"""Partitioned variables: the partitioners (fixed_size, min_max, variable_axis_size), TF's
slicing rule, and PartitionedVariable, the list of parts get_variable(partitioner=...) makes.

A variable of shape [10, 3] split in 3 along axis 0 is three Variables `name/part_0..2` of
shapes [4, 3], [3, 3], [3, 3] (the first `10 % 3` parts get one extra row), each with a
SaveSliceInfo saying where it lies in the full variable, so a Saver writes every part as a
slice of one checkpoint tensor `name`. A replica_device_setter places each part's VarHandleOp
on its own ps task like any variable.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from tensorweave.framework import dtypes
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.shapes import TensorShape, as_shape
from tensorweave.framework.tensor_conversion import register_tensor_conversion_function
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, split
from tensorweave.ops.array.core import identity


@tf_export("fixed_size_partitioner")
def fixed_size_partitioner(num_shards, axis=0):
    """tf.fixed_size_partitioner(num_shards, axis=0): `num_shards` parts along `axis` (fewer when
    the axis is shorter)."""
    def _partitioner(shape, **unused_args):
        partitions = [1] * len(shape)
        partitions[axis] = min(num_shards, shape.dims[axis].value)
        return partitions
    return _partitioner


@tf_export("min_max_variable_partitioner")
def min_max_variable_partitioner(max_partitions=1, axis=0, min_slice_size=256 << 10, bytes_per_string_element=16):
    """tf.min_max_variable_partitioner(max_partitions=1, axis=0, min_slice_size=256K,
    bytes_per_string_element=16): as many parts along `axis` as keep each at least
    `min_slice_size` bytes, at most `max_partitions`."""
    def _partitioner(shape, dtype):
        if axis >= len(shape):
            raise ValueError(f"Can not partition variable along axis {axis} when shape is only {shape}")
        element = bytes_per_string_element if dtype.base_dtype == dtypes.string else dtype.size
        partitions = [1] * len(shape)
        wanted = int(math.ceil(shape.num_elements() * element / min_slice_size))
        partitions[axis] = max(1, min(shape.dims[axis].value, max_partitions, wanted))
        return partitions
    return _partitioner


@tf_export("variable_axis_size_partitioner")
def variable_axis_size_partitioner(max_shard_bytes, axis=0, bytes_per_string_element=16, max_shards=None):
    """tf.variable_axis_size_partitioner(max_shard_bytes, axis=0, bytes_per_string_element=16,
    max_shards=None): parts along `axis` of at most `max_shard_bytes` each (at least one slice of
    the axis per part), at most `max_shards` parts."""
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError("Both max_shard_bytes and bytes_per_string_element must be positive.")
    if max_shards and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def _partitioner(shape, dtype):
        if not isinstance(shape, TensorShape):
            raise ValueError(f"shape is not a TensorShape: {shape}")
        if not shape.is_fully_defined():
            raise ValueError(f"shape is not fully defined: {shape}")
        if not isinstance(dtype, dtypes.DType):
            raise ValueError(f"dtype is not a DType: {dtype}")
        element = bytes_per_string_element if dtype.base_dtype == dtypes.string else dtype.size
        partitions = [1] * shape.ndims
        bytes_per_slice = shape.num_elements() / shape.dims[axis].value * element
        slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice))
        axis_shards = int(math.ceil(shape.dims[axis].value / slices_per_shard))
        if max_shards:
            axis_shards = min(max_shards, axis_shards)
        partitions[axis] = axis_shards
        return partitions
    return _partitioner


@dataclass(frozen=True)
class PartitionInfo:
    """What an initializer learns about the part it initializes (TF's _PartitionInfo)."""
    full_shape: list
    var_offset: list

    def single_offset(self, shape) -> int:
        dim = self.single_slice_dim(shape)
        return 0 if dim is None else self.var_offset[dim]

    def single_slice_dim(self, shape):
        for i, (full, part) in enumerate(zip(self.full_shape, shape)):
            if full != part:
                return i
        return None


def call_partitioner(partitioner, shape: TensorShape, dtype) -> list:
    """The partitioner's slicing for a new variable, checked as TF checks it."""
    if not shape.is_fully_defined():
        raise ValueError(f"Shape of a new partitioned variable must be fully defined, but instead was {shape}.")
    if shape.ndims < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1, shape: {shape}")
    slicing = partitioner(shape=shape, dtype=dtype)
    if not isinstance(slicing, (list, tuple)):
        raise ValueError(f"Partitioner must return a sequence, but saw: {slicing}")
    slicing = [int(p) for p in slicing]
    if len(slicing) != shape.ndims:
        raise ValueError(f"Partitioner returned a partition list that does not match the Variable's rank: "
                         f"{slicing} vs. {shape}")
    if any(p < 1 for p in slicing):
        raise ValueError(f"Partitioner returned zero partitions for some axes: {slicing}")
    if sum(p > 1 for p in slicing) > 1:
        raise ValueError(f"Can only slice a variable along one dimension: shape: {shape}, partitioning: {slicing}")
    return slicing


def slice_dim_and_num_slices(slicing) -> tuple:
    for dim, n in enumerate(slicing):
        if n != 1:
            return dim, n
    return 0, 1


def iter_slices(full_shape: list, num_slices: int, slice_dim: int):
    """(offset, shape) of each part: the first `full % num_slices` parts are one longer."""
    excess = full_shape[slice_dim] % num_slices
    base = full_shape[slice_dim] // num_slices
    offset = [0] * len(full_shape)
    for i in range(num_slices):
        shape = list(full_shape)
        shape[slice_dim] = base + (1 if i < excess else 0)
        yield list(offset), shape
        offset[slice_dim] += shape[slice_dim]


@tf_export("PartitionedVariable")
class PartitionedVariable:
    """A variable split into parts (TF's PartitionedVariable): iterate it for the part
    Variables; as a tensor it is their concatenation."""

    def __init__(self, name, shape, dtype, variable_list, partitions):
        if not isinstance(variable_list, (list, tuple)):
            raise TypeError(f"variable_list is not a list or tuple: {variable_list}")
        if not isinstance(partitions, (list, tuple)):
            raise TypeError(f"partitions is not a list or tuple: {partitions}")
        if not all(p >= 1 for p in partitions):
            raise ValueError(f"partition values must be positive: {partitions}")
        if not variable_list:
            raise ValueError("variable_list may not be empty")
        for v in variable_list:
            if v._get_save_slice_info() is None:
                raise ValueError(f"All variables must have a save_slice_info available: {v.name}")
        shape = as_shape(shape)
        if len(shape) != len(partitions):
            raise ValueError(f"len(shape) != len(partitions): {shape} vs. {partitions}")
        self._variable_list = sorted(variable_list, key=lambda v: v._get_save_slice_info().var_offset)
        self._name = name
        self._shape = shape
        self._dtype = dtypes.as_dtype(dtype)
        self._partitions = list(partitions)
        self._as_tensor = None

    def __iter__(self):
        return iter(self._variable_list)

    def __len__(self) -> int:
        num_partition_axes = len(self._partition_axes())
        if num_partition_axes > 1:
            raise ValueError(f"Cannot get a length of a PartitionedVariable partitioned along "
                             f"{num_partition_axes} axes")
        return len(self._variable_list)

    def _partition_axes(self) -> list:
        return [i for i, p in enumerate(self._partitions) if p > 1] or [0]

    def _concat(self):
        g = get_default_graph()
        if len(self._variable_list) == 1:
            with g.name_scope(None):
                return identity(self._variable_list[0], name=self._name)
        axes = self._partition_axes()
        if len(axes) > 1:
            raise NotImplementedError(f"Cannot concatenate along more than one dimension: {axes}.")
        with g.name_scope(self._name + "/ConcatPartitions/"):
            joined = concat(list(self._variable_list), axes[0])
        with g.name_scope(None):
            return identity(joined, name=self._name)

    def as_tensor(self):
        """The whole variable: the parts' fresh reads concatenated (no control dependencies)."""
        with get_default_graph().control_dependencies(None):
            return self._concat()

    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)
    shape = property(lambda self: self._shape)
    graph = property(lambda self: self._variable_list[0].graph)

    def get_shape(self) -> TensorShape:
        return self._shape

    def _get_variable_list(self) -> list:
        return self._variable_list

    def _get_partitions(self) -> list:
        return self._partitions

    def _apply_assign_fn(self, assign_fn, value) -> list:
        axes = self._partition_axes()
        if len(axes) > 1:
            raise NotImplementedError(f"Cannot do assign action along more than one dimension: {axes}. "
                                      "Multi-axis partition assign action is not supported ")
        if isinstance(value, list):
            if len(value) != len(self._variable_list):
                raise ValueError(f"Assigning {len(value)} values to {len(self._variable_list)} partitions")
            values = value
        elif isinstance(value, PartitionedVariable):
            values = list(value)
        else:
            sizes = [v.shape[axes[0]].value for v in self._variable_list]
            values = split(value, sizes, axis=axes[0])
        return [assign_fn(v, values[i]) for i, v in enumerate(self._variable_list)]

    def assign(self, value, use_locking=False, name=None, read_value=True):
        """Assigns `value` (split along the partition axis) to the parts: a list of new values
        (or of ops when read_value=False)."""
        out = self._apply_assign_fn(lambda v, x: v.assign(x, use_locking=use_locking, name=name,
                                                           read_value=read_value), value)
        return out

    def assign_add(self, value, use_locking=False, name=None, read_value=True):
        return self._apply_assign_fn(lambda v, x: v.assign_add(x, use_locking=use_locking, name=name,
                                                               read_value=read_value), value)

    def assign_sub(self, value, use_locking=False, name=None, read_value=True):
        return self._apply_assign_fn(lambda v, x: v.assign_sub(x, use_locking=use_locking, name=name,
                                                               read_value=read_value), value)

    def __repr__(self) -> str:
        return f"<tf.PartitionedVariable '{self._name}' shape={self._shape} dtype={self._dtype.name} " \
               f"parts={len(self._variable_list)}>"


def _to_tensor(v, dtype=None, name=None, as_ref=False):
    if as_ref:
        raise NotImplementedError("PartitionedVariable doesn't support being used as a reference.")
    if dtype is not None and dtypes.as_dtype(dtype) != v.dtype:
        raise ValueError(f"Incompatible type conversion requested to type '{dtypes.as_dtype(dtype).name}' for "
                         f"PartitionedVariable of type '{v.dtype.name}'")
    return v.as_tensor()


register_tensor_conversion_function(PartitionedVariable, _to_tensor)
