"""SparseTensor: a sparse value as three dense tensors (indices, values, dense_shape).

A SparseTensor is not a Tensor: it is fetched as a `SparseTensorValue` and fed part by part
(the Session's `_fetch_parts` / `_feed_parts` protocol, as for IndexedSlices).
"""
from __future__ import annotations

import collections

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.graph import default_session_for
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value

__all__ = ["SparseTensor", "SparseTensorValue"]

SparseTensorValue = collections.namedtuple("SparseTensorValue", ["indices", "values", "dense_shape"])


class SparseTensor:
    """tf.SparseTensor(indices, values, dense_shape): `indices` an int64 [N, ndims] matrix of the
    positions of the N non-default `values` (a 1-D tensor) in a tensor of shape `dense_shape`
    (an int64 vector)."""

    _is_tensor_like = True

    def __init__(self, indices, values, dense_shape):
        self._indices = convert_to_tensor(indices, dtype=dtypes.int64, name="indices")
        self._values = convert_to_tensor(values, name="values")
        self._dense_shape = convert_to_tensor(dense_shape, dtype=dtypes.int64, name="dense_shape")
        if self._indices.shape.ndims not in (None, 2):
            raise ValueError(f"SparseTensor indices must be a matrix, got shape {self._indices.shape}")
        if self._values.shape.ndims not in (None, 1):
            raise ValueError(f"SparseTensor values must be a vector, got shape {self._values.shape}")
        if self._dense_shape.shape.ndims not in (None, 1):
            raise ValueError(f"SparseTensor dense_shape must be a vector, got shape {self._dense_shape.shape}")

    @classmethod
    def from_value(cls, value) -> "SparseTensor":
        if isinstance(value, SparseTensor):
            return value
        if not isinstance(value, SparseTensorValue):
            raise TypeError(f"Neither a SparseTensor nor SparseTensorValue: {value!r}.")
        return cls(value.indices, value.values, value.dense_shape)

    indices = property(lambda self: self._indices)
    values = property(lambda self: self._values)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)
    op = property(lambda self: self._values.op)
    graph = property(lambda self: self._values.graph)
    device = property(lambda self: self._values.device)

    def get_shape(self) -> TensorShape:
        value = constant_value(self._dense_shape)
        if value is not None:
            return TensorShape([int(d) for d in np.reshape(value, -1)])
        n = self._dense_shape.shape[0].value if self._dense_shape.shape.ndims == 1 else None
        return TensorShape(None if n is None else [None] * n)

    shape = property(get_shape)

    def eval(self, feed_dict=None, session=None):
        return default_session_for(self.graph, session).run(self, feed_dict)

    def consumers(self) -> list:
        return [op for part in self._fetch_parts() for op in part.consumers()]

    # -- the Session's composite protocol ----------------------------------------------------------
    def _fetch_parts(self) -> list:
        return [self._indices, self._values, self._dense_shape]

    def _fetch_value(self, values) -> SparseTensorValue:
        return SparseTensorValue(values[0], values[1], values[2])

    def _feed_parts(self) -> list:
        return [self._indices, self._values, self._dense_shape]

    def _split_feed(self, value) -> list:
        if isinstance(value, SparseTensorValue):
            return list(value)
        if isinstance(value, (tuple, list)) and len(value) == 3:
            return list(value)
        raise TypeError(f"A SparseTensor is fed a SparseTensorValue or an (indices, values, dense_shape) "
                        f"tuple, not {type(value).__name__}")

    def __repr__(self) -> str:
        return f"SparseTensor(indices={self._indices}, values={self._values}, dense_shape={self._dense_shape})"

