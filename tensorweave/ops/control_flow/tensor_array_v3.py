"""TF 1's TensorArrayV3 ops, for graphs TensorFlow 1.x wrote (a dynamic_rnn or a hand-written
loop over tf.TensorArray inside a TF 1 while loop, imported with tf.import_graph_def):
TensorArrayV3 and its Write, Read, Gather, Scatter, Size, Concat, Split and Close. tf.TensorArray
in tensorweave is built on tensor lists (tensor_array.py); these ops have no public wrapper.

A TensorArrayV3 op makes a new array each time it runs, as TF's per-step resource: its handle's
value is that `_Elements` object, which the ops on the handle fill and read (inside a folded
while loop the handle is a captured value, the flow a loop variable). Its flow output only
orders the ops: a write returns the flow it was given. Elements are kept as written (arrays are
never mutated). A handle never crosses tasks: the ops on it are colocated with it.
"""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.shapes import TensorShape, as_shape, unknown_shape
from tensorweave.ops.registry import register


class _Elements:
    __slots__ = ("name", "dtype", "values", "dynamic_size", "element_shape")

    def __init__(self, name: str, dtype, size: int, dynamic_size: bool, element_shape):
        self.name = name
        self.dtype = dtype
        self.values: list = [None] * size
        self.dynamic_size = dynamic_size
        self.element_shape = element_shape   # a list with None for unknown dims, or None

    def write(self, node, index: int, value) -> None:
        if index < 0 or (index >= len(self.values) and not self.dynamic_size):
            raise errors.InvalidArgumentError(
                node, node.name, f"TensorArray {self.name}: Tried to write to index {index} but array is not "
                f"resizeable and size is: {len(self.values)}")
        value = np.asarray(value, dtype=self.dtype)
        if self.element_shape is not None and not _fits(value.shape, self.element_shape):
            raise errors.InvalidArgumentError(
                node, node.name, f"TensorArray {self.name}: Could not write to TensorArray index {index} because "
                f"the value shape is {list(value.shape)} which is incompatible with the TensorArray's inferred "
                f"element shape: {self.element_shape}")
        if index >= len(self.values):
            self.values.extend([None] * (index + 1 - len(self.values)))
        if self.values[index] is not None:
            raise errors.InvalidArgumentError(
                node, node.name, f"TensorArray {self.name}: Could not write to TensorArray index {index} because "
                "it has already been written to.")
        self.values[index] = value

    def read(self, node, index: int):
        if not 0 <= index < len(self.values):
            raise errors.InvalidArgumentError(
                node, node.name, f"TensorArray {self.name}: Tried to read from index {index} but array size is: "
                f"{len(self.values)}")
        value = self.values[index]
        if value is None:
            if self.element_shape is not None and None not in self.element_shape:
                return np.zeros(self.element_shape, self.dtype)   # TF: an unwritten element of known shape
            raise errors.InvalidArgumentError(
                node, node.name, f"TensorArray {self.name}: Could not read from TensorArray index {index} because "
                "it has not yet been written to.")
        return value


def _fits(shape: tuple, element_shape: list) -> bool:
    return len(shape) == len(element_shape) and all(w is None or w == d for w, d in zip(element_shape, shape))


def _elements(node, handle) -> _Elements:
    if not isinstance(handle, _Elements):
        raise errors.InvalidArgumentError(node, node.name, f"{node.name}: input 0 is not a TensorArray handle")
    return handle


def _stacked(node, ta: _Elements, indices) -> np.ndarray:
    values = [ta.read(node, int(i)) for i in np.reshape(indices, -1)]
    if not values:
        tail = ta.element_shape if ta.element_shape is not None and None not in ta.element_shape else [0]
        return np.zeros([0] + list(tail), ta.dtype)
    if any(v.shape != values[0].shape for v in values):
        raise errors.InvalidArgumentError(node, node.name, f"TensorArray {ta.name}: Could not gather: its elements "
                                          f"have different shapes {[list(v.shape) for v in values]}")
    return np.stack(values)


# -- TensorArrayV3 --------------------------------------------------------------------------------
def _array_kernel(node, ctx):
    dtype = dtypes.as_dtype(node.attr["dtype"]).as_numpy_dtype
    shape = node.attr.get("element_shape")
    name = node.attr.get("tensor_array_name") or node.name
    dynamic = bool(node.attr.get("dynamic_size", False))

    def make(size):
        if np.ndim(size) != 0 or int(size) < 0:
            raise errors.InvalidArgumentError(node, node.name, f"Size should be a non-negative scalar, got {size}")
        return _Elements(name, dtype, int(size), dynamic, shape), np.float32(0)
    return make


register("TensorArrayV3", lambda op: [(dtypes.resource, TensorShape([2])), (dtypes.float32, TensorShape([]))],
         _array_kernel, dtypes={0: ("size", (dtypes.int32,))}, stateful=True)


def _write_kernel(node, ctx):
    def write(handle, index, value, flow):
        _elements(node, handle).write(node, int(index), value)
        return flow
    return write


def _scatter_kernel(node, ctx):
    def scatter(handle, indices, value, flow):
        ta, indices = _elements(node, handle), np.reshape(indices, -1)
        value = np.asarray(value)
        if value.ndim == 0 or value.shape[0] != indices.size:
            raise errors.InvalidArgumentError(node, node.name, f"Expected len(indices) == values.shape[0], but saw: "
                                              f"{indices.size} vs. {value.shape[0] if value.ndim else 0}")
        for i, v in zip(indices, value):
            ta.write(node, int(i), v)
        return flow
    return scatter


def _split_kernel(node, ctx):
    def split(handle, value, lengths, flow):
        ta, value, lengths = _elements(node, handle), np.asarray(value), np.reshape(lengths, -1)
        if value.ndim == 0 or int(lengths.sum()) != value.shape[0]:
            raise errors.InvalidArgumentError(node, node.name, f"Expected sum of lengths to be equal to values.shape[0]"
                                              f", but sum of lengths is {int(lengths.sum())} and value's shape is: "
                                              f"{list(value.shape)}")
        for i, part in enumerate(np.split(value, np.cumsum(lengths)[:-1])):
            ta.write(node, i, part)
        return flow
    return split


def _flow(op):
    return [(dtypes.float32, TensorShape([]))]


register("TensorArrayWriteV3", _flow, _write_kernel, stateful=True)
register("TensorArrayScatterV3", _flow, _scatter_kernel, stateful=True)
register("TensorArraySplitV3", _flow, _split_kernel, stateful=True)


def _read_kernel(node, ctx):
    return lambda handle, index, flow: _elements(node, handle).read(node, int(index))


def _gather_kernel(node, ctx):
    return lambda handle, indices, flow: _stacked(node, _elements(node, handle), indices)


def _gather_infer(op):
    shape = op.get_attr("element_shape") if "element_shape" in op._attrs else None
    element = as_shape(shape) if shape is not None else unknown_shape()
    return [(op.get_attr("dtype"), TensorShape([None]).concatenate(element))]


def _concat_kernel(node, ctx):
    def concat(handle, flow):
        ta = _elements(node, handle)
        values = [ta.read(node, i) for i in range(len(ta.values))]
        if not values:
            return np.zeros([0], ta.dtype), np.zeros([0], np.int64)
        return np.concatenate(values), np.array([len(v) for v in values], np.int64)
    return concat


register("TensorArrayReadV3", lambda op: [(op.get_attr("dtype"), unknown_shape())], _read_kernel, stateful=True)
register("TensorArrayGatherV3", _gather_infer, _gather_kernel, stateful=True)
register("TensorArrayConcatV3", lambda op: [(op.get_attr("dtype"), unknown_shape()),
                                            (dtypes.int64, TensorShape([None]))], _concat_kernel, stateful=True)
register("TensorArraySizeV3", lambda op: [(dtypes.int32, TensorShape([]))],
         lambda node, ctx: (lambda handle, flow: np.int32(len(_elements(node, handle).values))), stateful=True)
register("TensorArrayCloseV3", lambda op: [], lambda node, ctx: (lambda handle: None), stateful=True)
