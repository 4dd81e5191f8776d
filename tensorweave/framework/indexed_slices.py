"""IndexedSlices: a sparse gradient (rows `indices` of a dense tensor of `dense_shape`)."""
from __future__ import annotations

import collections

from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export

IndexedSlicesValue = collections.namedtuple("IndexedSlicesValue", ["values", "indices", "dense_shape"])


@tf_export("IndexedSlices")
class IndexedSlices:
    """tf.IndexedSlices(values, indices, dense_shape=None)."""

    _is_tensor_like = True

    def __init__(self, values, indices, dense_shape=None):
        self._values = values
        self._indices = indices
        self._dense_shape = dense_shape

    values = property(lambda self: self._values)
    indices = property(lambda self: self._indices)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)
    name = property(lambda self: self._values.name)
    op = property(lambda self: self._values.op)
    graph = property(lambda self: self._values.graph)
    device = property(lambda self: self._values.device)

    def get_shape(self):
        if self._dense_shape is not None:
            value = constant_value(self._dense_shape)
            if value is not None:
                return TensorShape(value.tolist())
        return TensorShape([None]).concatenate(self._values.shape[1:])

    shape = property(get_shape)

    def _fetch_parts(self):
        parts = [self._values, self._indices]
        return parts + [self._dense_shape] if self._dense_shape is not None else parts

    def _fetch_value(self, values):
        return IndexedSlicesValue(values[0], values[1], values[2] if len(values) > 2 else None)

    def __neg__(self):
        return IndexedSlices(-self._values, self._indices, self._dense_shape)

    def __repr__(self):
        return f"IndexedSlices(indices={self._indices}, values={self._values}, dense_shape={self._dense_shape})"
