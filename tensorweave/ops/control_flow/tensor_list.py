"""Tensor lists: `variant` values holding a list of arrays, with value semantics (never mutated:
a push shares the old list's storage, a set copies the list of references). while loops carry
them (scan, map_fn, dynamic_rnn, TensorArray) and a While op records its forward values for its
gradient in them. The ops carry TF's list_ops names and gradients; they are internal.

An item may be an array, `ZeroItem` (the zeros a gradient list holds where nothing flowed back,
materialized only when read) or None (reserved, never written: read as zeros of the element
shape when that is fully known, as TF does).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape, as_shape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.ops.array.core import index_tensor
from tensorweave.ops.array.fill import zeros_like
from tensorweave.ops.array.pad import reverse
from tensorweave.ops.helpers import check_output_size, invalid, make_op, static_int
from tensorweave.ops.registry import register


@dataclass(frozen=True)
class ZeroItem:
    """Zeros of a known shape and dtype, not yet materialized."""
    shape: tuple
    dtype: np.dtype

    def array(self) -> np.ndarray:
        return np.zeros(self.shape, self.dtype)


class TensorListValue:
    """A persistent list of items: a shared tuple prefix plus a cons-cell tail of pushes."""

    __slots__ = ("base", "tail", "length", "_zeros")

    def __init__(self, base: tuple = (), tail=None, length: Optional[int] = None):
        self.base = base
        self.tail = tail
        self.length = len(base) if length is None else length
        self._zeros = None

    def push(self, item) -> "TensorListValue":
        return TensorListValue(self.base, (self.tail, item), self.length + 1)

    def items(self) -> list:
        pushed = []
        cell = self.tail
        while cell is not None:
            cell, item = cell
            pushed.append(item)
        return list(self.base) + pushed[::-1]

    def raw(self, i: int):
        if 0 <= i < len(self.base):
            return self.base[i]
        return self.items()[i]

    def get(self, i: int):
        item = self.raw(i)
        return item.array() if isinstance(item, ZeroItem) else item

    def with_item(self, i: int, item) -> "TensorListValue":
        items = self.items()
        if i >= len(items):
            items += [None] * (i + 1 - len(items))
        items[i] = item
        return TensorListValue(tuple(items))

    def pop(self):
        if self.tail is not None:
            cell, item = self.tail
            return TensorListValue(self.base, cell, self.length - 1), item
        return TensorListValue(self.base[:-1]), self.base[-1]

    def resized(self, n: int) -> "TensorListValue":
        items = self.items()[:n]
        return TensorListValue(tuple(items + [None] * (n - len(items))))

    def zeros_like(self) -> "TensorListValue":
        """The list's zero gradient: each written item's zeros (lazily), unwritten items unwritten.
        Made once per list (a value never changes): a loop's gradient asks for the zeros of the
        list it reads from at every iteration."""
        if self._zeros is None:
            self._zeros = TensorListValue(tuple(
                item if item is None or isinstance(item, ZeroItem)
                else ZeroItem(np.shape(item), np.asarray(item).dtype) for item in self.items()))
        return self._zeros

    def __add__(self, other: "TensorListValue") -> "TensorListValue":
        """Itemwise sum (gradients of one list arriving along several paths)."""
        a, b = self.items(), other.items()
        if len(a) != len(b):
            raise ValueError(f"Cannot add tensor lists of lengths {len(a)} and {len(b)}")
        out = []
        for x, y in zip(a, b):
            if x is None or isinstance(x, ZeroItem):
                out.append(y if y is not None else x)
            elif y is None or isinstance(y, ZeroItem):
                out.append(x)
            else:
                out.append(np.add(x, y))
        return TensorListValue(tuple(out))

    __radd__ = __add__

    def __repr__(self) -> str:
        return f"<TensorListValue of {self.length} items>"


def _item_array(node, item, element_shape, np_dtype):
    if isinstance(item, ZeroItem):
        return item.array()
    if item is None:
        if element_shape is None or any(d is None for d in element_shape):
            raise invalid(node, "Trying to read an uninitialized tensor list element with a not fully "
                                f"defined element_shape: {element_shape}")
        return np.zeros(element_shape, np_dtype)
    return item


def _materialized(node, lst: TensorListValue, element_shape, np_dtype) -> list:
    items = lst.items()
    if element_shape is None or any(d is None for d in element_shape):
        known = next((np.shape(x) if not isinstance(x, ZeroItem) else x.shape for x in items if x is not None),
                     None)
        element_shape = list(known) if known is not None else element_shape
    return [_item_array(node, x, element_shape, np_dtype) for x in items]


def _index(node, lst: TensorListValue, i) -> int:
    i = int(i)
    if not 0 <= i < lst.length:
        raise invalid(node, f"Trying to access element {i} in a list with {lst.length} elements.")
    return i


def _variant(op):
    return [(dtypes.variant, TensorShape([]))]


def _elem_attrs(node):
    return node.attr.get("element_shape"), dtypes.as_dtype(node.attr["element_dtype"]).as_numpy_dtype


# -- creating lists ------------------------------------------------------------------------------
def _from_tensor_kernel(node, ctx):
    def run(x):
        if np.ndim(x) == 0:
            raise invalid(node, f"TensorListFromTensor '{node.name}' needs a tensor of rank >= 1, got a scalar")
        return TensorListValue(tuple(np.asarray(x)))
    return run


def _from_tensor_grad(op, dlist):
    x = op.inputs[0]
    return [stack(dlist, x.dtype, x.shape[1:] if x.shape.ndims is not None else unknown_shape(),
                  x.shape[0].value if x.shape.ndims else None)]


register("TensorListFromTensor", _variant, _from_tensor_kernel, grad=_from_tensor_grad)
register("EmptyTensorList", _variant, lambda node, ctx: (lambda: TensorListValue()), grad=None)


def _reserve_infer(op):
    n = static_int(op.inputs[0])   # a TensorArray's size: one slot per item
    check_output_size(op, [n])
    return _variant(op)


def _reserve_kernel(node, ctx):
    def run(n):
        check_output_size(node, [int(n)])
        return TensorListValue((None,) * int(n))
    return run


register("TensorListReserve", _reserve_infer, _reserve_kernel, grad=None)
register("TensorListLength", lambda op: [(dtypes.int32, TensorShape([]))],
         lambda node, ctx: (lambda lst: np.int32(lst.length)), grad=None)


def from_tensor(t: Tensor) -> Tensor:
    """A list of the slices of `t` along its first dimension."""
    return make_op("TensorListFromTensor", [t], {"element_dtype": t.dtype}, name="TensorListFromTensor").outputs[0]


def empty() -> Tensor:
    return make_op("EmptyTensorList", [], name="EmptyTensorList").outputs[0]


def reserve(num_elements, element_dtype, element_shape=None) -> Tensor:
    """A list of `num_elements` unwritten items."""
    return make_op("TensorListReserve", [index_tensor(num_elements)],
                   {"element_dtype": dtypes.as_dtype(element_dtype), "element_shape": as_shape(element_shape)},
                   name="TensorListReserve").outputs[0]


def length(lst: Tensor) -> Tensor:
    return make_op("TensorListLength", [lst], name="TensorListLength").outputs[0]


# -- push / pop ----------------------------------------------------------------------------------
def _push_grad(op, dlist):
    x = op.inputs[1]
    dlist_in, dx = pop_back(dlist, x.dtype, x.shape)
    return [dlist_in, dx]


register("TensorListPushBack", _variant, lambda node, ctx: (lambda lst, x: lst.push(x)), grad=_push_grad)


def _pop_kernel(node, ctx):
    element_shape, np_dtype = _elem_attrs(node)

    def run(lst):
        if lst.length == 0:
            raise invalid(node, "Trying to pop from an empty list.")
        rest, item = lst.pop()
        return rest, _item_array(node, item, element_shape, np_dtype)
    return run


def _pop_grad(op, dlist, ditem):
    if dlist is None:
        dlist = zeros_like(op.outputs[0])
    if ditem is None:
        ditem = zeros_like(op.outputs[1])
    return [push_back(dlist, ditem)]


register("TensorListPopBack", lambda op: [(dtypes.variant, TensorShape([])),
                                          (op.get_attr("element_dtype"), op.get_attr("element_shape"))],
         _pop_kernel, grad=_pop_grad)


def push_back(lst: Tensor, x: Tensor) -> Tensor:
    return make_op("TensorListPushBack", [lst, x], name="TensorListPushBack").outputs[0]


def pop_back(lst: Tensor, element_dtype, element_shape=None):
    op = make_op("TensorListPopBack", [lst], {"element_dtype": dtypes.as_dtype(element_dtype),
                                              "element_shape": as_shape(element_shape)}, name="TensorListPopBack")
    return op.outputs[0], op.outputs[1]


# -- items by index ------------------------------------------------------------------------------
def _get_item_kernel(node, ctx):
    element_shape, np_dtype = _elem_attrs(node)

    def run(lst, i):
        return _item_array(node, lst.raw(_index(node, lst, i)), element_shape, np_dtype)
    return run


def _get_item_grad(op, dy):
    lst, i = op.inputs
    return [set_item(zeros_like(lst), i, dy), None]


register("TensorListGetItem", lambda op: [(op.get_attr("element_dtype"), op.get_attr("element_shape"))],
         _get_item_kernel, grad=_get_item_grad)


def _set_item_kernel(node, ctx):
    resize = node.attr.get("resize_if_index_out_of_bounds", False)

    def run(lst, i, item):
        i = int(i)
        if i < 0 or (i >= lst.length and not resize):
            raise invalid(node, f"Trying to modify element {i} in a list with {lst.length} elements.")
        check_output_size(node, [max(i + 1, lst.length)])   # a dynamic TensorArray grows to i + 1
        return lst.with_item(i, item)
    return run


def _set_item_grad(op, dlist):
    lst, i, item = op.inputs
    dlist_in = set_item(dlist, i, zeros_like(item))
    if op.get_attr("resize_if_index_out_of_bounds"):
        dlist_in = resize(dlist_in, length(lst))
    return [dlist_in, None, get_item(dlist, i, item.dtype, item.shape)]


register("TensorListSetItem", _variant, _set_item_kernel, grad=_set_item_grad)


def _resize_kernel(node, ctx):
    def run(lst, n):
        if int(n) < 0:
            raise invalid(node, f"TensorListResize: size must be non-negative, got {int(n)}")
        check_output_size(node, [int(n)])
        return lst.resized(int(n))
    return run


def _resize_grad(op, dlist):
    return [resize(dlist, length(op.inputs[0])), None]


register("TensorListResize", _variant, _resize_kernel, grad=_resize_grad)


def get_item(lst: Tensor, i, element_dtype, element_shape=None) -> Tensor:
    return make_op("TensorListGetItem", [lst, index_tensor(i)],
                   {"element_dtype": dtypes.as_dtype(element_dtype), "element_shape": as_shape(element_shape)},
                   name="TensorListGetItem").outputs[0]


def set_item(lst: Tensor, i, item, resize_if_index_out_of_bounds: bool = False) -> Tensor:
    return make_op("TensorListSetItem", [lst, index_tensor(i), convert_to_tensor(item)],
                   {"resize_if_index_out_of_bounds": resize_if_index_out_of_bounds},
                   name="TensorListSetItem").outputs[0]


def resize(lst: Tensor, size) -> Tensor:
    return make_op("TensorListResize", [lst, index_tensor(size)], name="TensorListResize").outputs[0]


# -- whole lists as tensors ----------------------------------------------------------------------
def _stack_infer(op):
    n = op.get_attr("num_elements")
    out = TensorShape([None if n == -1 else n]).concatenate(op.get_attr("element_shape"))
    check_output_size(op, out)
    return [(op.get_attr("element_dtype"), out)]


def _stack_kernel(node, ctx):
    element_shape, np_dtype = _elem_attrs(node)
    rev = node.attr.get("reverse", False)

    def run(lst):
        if element_shape is not None:   # unwritten items become zeros of element_shape
            check_output_size(node, [lst.length] + list(element_shape))
        items = _materialized(node, lst, element_shape, np_dtype)
        if rev:
            items.reverse()
        if not items:
            if element_shape is None or any(d is None for d in element_shape):
                raise invalid(node, "Tried to stack elements of an empty list with non-fully-defined "
                                    f"element_shape: {element_shape}")
            return np.zeros([0] + list(element_shape), dtype=np_dtype)
        try:
            return np.stack(items).astype(np_dtype, copy=False)
        except ValueError:
            raise invalid(node, "Tried to stack list elements of different shapes: "
                                f"{sorted({np.shape(x) for x in items})}") from None
    return run


def _stack_grad(op, dy):
    return [from_tensor(reverse(dy, [0]) if op.get_attr("reverse") else dy)]


register("TensorListStack", _stack_infer, _stack_kernel, grad=_stack_grad)


def stack(lst: Tensor, element_dtype, element_shape=None, num_elements=None, reverse_order: bool = False) -> Tensor:
    """The items stacked along a new first dimension (in reverse order if asked)."""
    return make_op("TensorListStack", [lst], {"element_dtype": dtypes.as_dtype(element_dtype),
                                              "element_shape": as_shape(element_shape),
                                              "num_elements": -1 if num_elements is None else num_elements,
                                              "reverse": reverse_order},
                   name="TensorListStack").outputs[0]


def _gather_infer(op):
    return [(op.get_attr("element_dtype"),
             op.inputs[1].shape.concatenate(op.get_attr("element_shape")))]


def _gather_kernel(node, ctx):
    element_shape, np_dtype = _elem_attrs(node)

    def run(lst, indices):
        idx = np.asarray(indices)
        items = [_item_array(node, lst.raw(_index(node, lst, i)), element_shape, np_dtype) for i in idx.reshape(-1)]
        if not items:
            if element_shape is None or any(d is None for d in element_shape):
                raise invalid(node, f"Tried to gather no elements with element_shape {element_shape}")
            return np.zeros(list(idx.shape) + list(element_shape), np_dtype)
        out = np.stack(items).astype(np_dtype, copy=False)
        return out.reshape(idx.shape + out.shape[1:])
    return run


def _gather_grad(op, dy):
    lst, indices = op.inputs
    return [scatter(zeros_like(lst), dy, indices), None]


register("TensorListGather", _gather_infer, _gather_kernel, grad=_gather_grad)


def _scatter_kernel(node, ctx):
    def run(lst, tensor, indices):
        idx = np.asarray(indices).reshape(-1)
        tensor = np.asarray(tensor)
        if tensor.shape[:1] != idx.shape:
            raise invalid(node, f"Scatter: {idx.size} indices for a tensor of first dimension "
                                f"{tensor.shape[0] if tensor.ndim else 'none'}")
        if idx.size and idx.min() < 0:
            raise invalid(node, f"Scatter: negative index {int(idx.min())}")
        items = lst.items()
        if idx.size and idx.max() >= len(items):
            check_output_size(node, [int(idx.max()) + 1])
            items += [None] * (int(idx.max()) + 1 - len(items))
        for k, i in enumerate(idx):
            items[int(i)] = tensor[k]
        return TensorListValue(tuple(items))
    return run


def _scatter_grad(op, dlist):
    lst, tensor, indices = op.inputs
    dlist_in = scatter(dlist, zeros_like(tensor), indices)
    dlist_in = resize(dlist_in, length(lst))
    return [dlist_in, gather(dlist, indices, tensor.dtype, tensor.shape[1:] if tensor.shape.ndims else None),
            None]


register("TensorListScatterIntoExistingList", _variant, _scatter_kernel, grad=_scatter_grad)


def gather(lst: Tensor, indices, element_dtype, element_shape=None) -> Tensor:
    return make_op("TensorListGather", [lst, index_tensor(indices)],
                   {"element_dtype": dtypes.as_dtype(element_dtype), "element_shape": as_shape(element_shape)},
                   name="TensorListGather").outputs[0]


def scatter(lst: Tensor, tensor, indices) -> Tensor:
    return make_op("TensorListScatterIntoExistingList", [lst, convert_to_tensor(tensor), index_tensor(indices)],
                   name="TensorListScatterIntoExistingList").outputs[0]


def _concat_infer(op):
    shape = op.get_attr("element_shape")
    rest = shape[1:] if shape.ndims else unknown_shape()
    return [(op.get_attr("element_dtype"), TensorShape([None]).concatenate(rest)), (dtypes.int64, TensorShape([None]))]


def _concat_kernel(node, ctx):
    element_shape, np_dtype = _elem_attrs(node)

    def run(lst):
        items = _materialized(node, lst, element_shape, np_dtype)
        if any(np.ndim(x) == 0 for x in items):
            raise invalid(node, "Concat requires elements to be at least vectors")
        lengths = np.array([np.shape(x)[0] for x in items], np.int64)
        if not items:
            if element_shape is None or any(d is None for d in element_shape[1:]):
                raise invalid(node, f"Tried to concat an empty list with element_shape {element_shape}")
            return np.zeros([0] + list(element_shape[1:]), np_dtype), lengths
        try:
            return np.concatenate(items).astype(np_dtype, copy=False), lengths
        except ValueError:
            raise invalid(node, "Tried to concat list elements of incompatible shapes: "
                                f"{sorted({np.shape(x) for x in items})}") from None
    return run


def _concat_grad(op, dy, dlengths):
    return [split(dy, op.outputs[1], op.get_attr("element_shape"))]


register("TensorListConcatV2", _concat_infer, _concat_kernel, grad=_concat_grad)


def _split_kernel(node, ctx):
    def run(tensor, lengths):
        lengths = np.asarray(lengths).reshape(-1)
        if np.ndim(tensor) == 0:
            raise invalid(node, "Split requires a tensor of rank >= 1")
        if (lengths < 0).any() or lengths.sum() != np.shape(tensor)[0]:
            raise invalid(node, f"Unable to split a tensor of first dimension {np.shape(tensor)[0]} into pieces "
                                f"of lengths {lengths.tolist()}")
        bounds = np.cumsum(lengths)[:-1]
        return TensorListValue(tuple(np.split(np.asarray(tensor), bounds)))
    return run


def _split_grad(op, dlist):
    t = op.inputs[0]
    return [concat(dlist, t.dtype, t.shape)[0], None]


register("TensorListSplit", _variant, _split_kernel, grad=_split_grad)


def concat(lst: Tensor, element_dtype, element_shape=None):
    """(the items concatenated along their first dimension, each item's length)."""
    op = make_op("TensorListConcatV2", [lst], {"element_dtype": dtypes.as_dtype(element_dtype),
                                               "element_shape": as_shape(element_shape)},
                 name="TensorListConcatV2")
    return op.outputs[0], op.outputs[1]


def split(tensor, lengths, element_shape=None) -> Tensor:
    """A list of the pieces of `tensor` along its first dimension, of the given lengths."""
    tensor = convert_to_tensor(tensor)
    return make_op("TensorListSplit", [tensor, index_tensor(lengths, dtype=dtypes.int64)],
                   {"element_dtype": tensor.dtype, "element_shape": as_shape(element_shape)},
                   name="TensorListSplit").outputs[0]


def element_shape_of(t: Tensor) -> TensorShape:
    """The shape of `t`'s slices along its first dimension (unknown for unknown rank)."""
    return t.shape[1:] if t.shape.ndims is not None else unknown_shape()


def stack_like(lst: Tensor, like: Tensor, num_elements=None, reverse_order: bool = False) -> Tensor:
    """Stacks a list whose items are like `like` (their dtype and static shape)."""
    return stack(lst, like.dtype, like.shape, num_elements, reverse_order)


def get_like(lst: Tensor, i, like: Tensor) -> Tensor:
    """Item i of a list made from `like` (a tensor whose slices the items are)."""
    return get_item(lst, i, like.dtype, element_shape_of(like))
