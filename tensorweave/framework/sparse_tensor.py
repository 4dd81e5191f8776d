"""SparseTensor and SparseTensorValue (TF1's tf.SparseTensor, tf.SparseTensorValue).

A SparseTensor is three dense tensors: `indices` (int64 [N, rank], the coordinates of the
non-zero entries), `values` ([N]) and `dense_shape` (int64 [rank]). It crosses tasks, is fed and
fetched as those three parts: `Session.run` returns a SparseTensorValue for it, and a
SparseTensorValue (or a (indices, values, dense_shape) tuple) feeds it. The ops on sparse tensors
are in tensorweave/ops/sparse/.
"""
from __future__ import annotations

import collections

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.graph import Tensor, default_session_for
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value, constant_value_as_shape
from tensorweave.framework.tf_export import tf_export


SparseTensorValue = collections.namedtuple("SparseTensorValue", ["indices", "values", "dense_shape"])
tf_export("SparseTensorValue")(SparseTensorValue)


class SparseTensor:
    """tf.SparseTensor(indices, values, dense_shape): a tensor stored as its non-zero entries."""

    _is_tensor_like = True

    @classmethod
    def from_value(cls, sparse_tensor_value) -> "SparseTensor":
        """A SparseTensor of constants from a SparseTensorValue (or a SparseTensor, returned as is)."""
        if isinstance(sparse_tensor_value, SparseTensor):
            return sparse_tensor_value
        if not is_sparse(sparse_tensor_value):
            raise TypeError(f"Neither a SparseTensor nor SparseTensorValue: {sparse_tensor_value}.")
        return cls(sparse_tensor_value.indices, sparse_tensor_value.values, sparse_tensor_value.dense_shape)

    def __init__(self, indices, values, dense_shape):
        indices = convert_to_tensor(indices, name="indices", dtype=dtypes.int64) if not isinstance(indices, Tensor) \
            else indices
        values = values if isinstance(values, Tensor) else convert_to_tensor(values, name="values")
        dense_shape = convert_to_tensor(dense_shape, name="dense_shape", dtype=dtypes.int64) \
            if not isinstance(dense_shape, Tensor) else dense_shape
        for t, what in ((indices, "indices"), (dense_shape, "dense_shape")):
            if t.dtype != dtypes.int64:
                raise TypeError(f"SparseTensor {what} must be int64, got {t.dtype.name}")
        indices.shape.with_rank(2)
        values.shape.with_rank(1)
        dense_shape.shape.with_rank(1)
        rank = dense_shape.shape[0]
        indices.shape[1].assert_is_compatible_with(rank)
        indices.shape[0].assert_is_compatible_with(values.shape[0])
        self._indices, self._values, self._dense_shape = indices, values, dense_shape

    indices = property(lambda self: self._indices)
    values = property(lambda self: self._values)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)
    op = property(lambda self: self._values.op)
    graph = property(lambda self: self._values.graph)
    device = property(lambda self: self._values.device)

    def get_shape(self) -> TensorShape:
        """The static dense shape: known where dense_shape is a build-time constant."""
        value = constant_value(self._dense_shape)
        if value is not None:
            return TensorShape([int(d) for d in np.reshape(value, -1)])
        shape = constant_value_as_shape(self._dense_shape)
        if shape.ndims is None and self._dense_shape.shape.ndims == 1:
            return unknown_shape(self._dense_shape.shape[0].value)
        return shape

    shape = property(get_shape)

    def eval(self, feed_dict=None, session=None) -> SparseTensorValue:
        """The value of this SparseTensor in `session` (the default session when None)."""
        return default_session_for(self.graph, session).run(self, feed_dict)

    def consumers(self) -> list:
        return list({id(op): op for t in (self._indices, self._values, self._dense_shape)
                     for op in t.consumers()}.values())

    # -- the Session's composite protocol -----------------------------------------------------------
    def _fetch_parts(self) -> list:
        return [self._indices, self._values, self._dense_shape]

    def _fetch_value(self, values) -> SparseTensorValue:
        return SparseTensorValue(*values)

    def _feed_parts(self) -> list:
        return [self._indices, self._values, self._dense_shape]

    def _split_feed(self, value) -> list:
        if isinstance(value, SparseTensor):
            raise TypeError("The value of a feed cannot be a tf.SparseTensor object; feed a SparseTensorValue.")
        if not (isinstance(value, SparseTensorValue) or (isinstance(value, (tuple, list)) and len(value) == 3)):
            raise TypeError(f"A SparseTensor is fed a SparseTensorValue or an (indices, values, dense_shape) tuple, "
                            f"got {type(value).__name__}")
        return list(value)

    def __repr__(self):
        return f"SparseTensor(indices={self._indices}, values={self._values}, dense_shape={self._dense_shape})"


def is_sparse(x) -> bool:
    """Whether x is a SparseTensor or a SparseTensorValue."""
    return isinstance(x, (SparseTensor, SparseTensorValue))


def convert_to_tensor_or_sparse_tensor(value, dtype=None, name=None):
    """tf.convert_to_tensor_or_sparse_tensor(value, dtype=None, name=None): SparseTensors (and
    SparseTensorValues, as constants) pass through; anything else becomes a Tensor."""
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    if isinstance(value, SparseTensorValue):
        value = SparseTensor.from_value(value)
    if isinstance(value, SparseTensor):
        if dtype is not None and not dtype.is_compatible_with(value.dtype):
            raise RuntimeError(f"Sparse dtype: requested = {dtype.name}, actual = {value.dtype.name}")
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


@tf_export("convert_to_tensor_or_indexed_slices")
def convert_to_tensor_or_indexed_slices(value, dtype=None, name=None):
    """tf.convert_to_tensor_or_indexed_slices(value, dtype=None, name=None): an IndexedSlices or
    SparseTensor unchanged (ValueError when `dtype` does not match it); anything else becomes a
    Tensor."""
    if isinstance(value, (IndexedSlices, SparseTensor)):
        if dtype is not None and not dtypes.as_dtype(dtype).is_compatible_with(value.dtype):
            raise ValueError(f"Incompatible tensor conversion requested to `dtype` {dtypes.as_dtype(dtype).name} "
                             f"for `value` ({value}) with dtype {value.dtype.name}.")
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)
