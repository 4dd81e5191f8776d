"""tf.TensorArray: a list of tensors for while loops, over the tensor-list ops (tensor_list.py).

As in TF's graph-mode TensorArray of functional control flow, the array is a value: `write`,
`scatter`, `unstack` and `split` return a new TensorArray (its `flow` the new list) and leave
the old one unchanged, so a program must use what they return, as TF1 programs do. A while loop
carries a TensorArray as its flow tensor, and gradients flow through reads and writes.
"""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape, as_shape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import identity
from tensorweave.ops.control_flow import tensor_list
from tensorweave.ops.grouping import no_op


@tf_export("TensorArray")
class TensorArray:
    """tf.TensorArray(dtype, size=None, dynamic_size=None, clear_after_read=None,
    tensor_array_name=None, handle=None, flow=None, infer_shape=True, element_shape=None,
    colocate_with_first_write_call=True, name=None): `size` elements of `dtype` (more when
    `dynamic_size`). With infer_shape the element shape is learned from the first write and every
    later write must match it. clear_after_read and colocate_with_first_write_call are accepted
    for compatibility (values are never cleared: a list is a value)."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None, tensor_array_name=None,
                 handle=None, flow=None, infer_shape=True, element_shape=None, colocate_with_first_write_call=True,
                 name=None):
        if handle is not None:
            raise ValueError("TensorArray handles are not supported: pass `flow` (a TensorArray's flow) instead")
        if flow is None and size is None:
            raise ValueError("Size must be provided if handle or flow is not provided.")
        if flow is not None and size is not None:
            raise ValueError("Cannot provide both a flow and size at the same time")
        self._dtype = dtypes.as_dtype(dtype).base_dtype
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = infer_shape
        self._element_shape = as_shape(element_shape) if element_shape is not None else unknown_shape()
        with name_scope(name or tensor_array_name, "TensorArrayV2", [size, flow]) as scope:
            self._name = scope.rstrip("/")
            if flow is None:
                flow = tensor_list.reserve(size, self._dtype, self._element_shape)
            self._flow = convert_to_tensor(flow)
        if self._flow.dtype != dtypes.variant:
            raise TypeError(f"A TensorArray's flow is a variant tensor, got {self._flow.dtype.name}")

    def _with_flow(self, flow: Tensor) -> "TensorArray":
        ta = TensorArray.__new__(TensorArray)
        ta._dtype, ta._dynamic_size, ta._infer_shape = self._dtype, self._dynamic_size, self._infer_shape
        ta._element_shape, ta._name, ta._flow = self._element_shape, self._name, flow
        return ta

    # -- properties ---------------------------------------------------------------------------
    @property
    def flow(self) -> Tensor:
        """The variant tensor holding the array's list (what a while loop carries)."""
        return self._flow

    @property
    def dtype(self):
        return self._dtype

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic_size

    @property
    def element_shape(self) -> TensorShape:
        return self._element_shape

    def _merge_shape(self, shape: TensorShape, what: str) -> None:
        if not self._infer_shape:
            return
        try:
            self._element_shape = self._element_shape.merge_with(shape)
        except ValueError:
            raise ValueError(f"Inconsistent shapes: saw {shape} but expected {self._element_shape} "
                             f"(TensorArray {self._name}, {what})") from None

    def _check_dtype(self, value: Tensor) -> None:
        if value.dtype.base_dtype != self._dtype:
            raise TypeError(f"TensorArray dtype is {self._dtype.name} but Op is trying to write dtype "
                            f"{value.dtype.name}")

    # -- elements -----------------------------------------------------------------------------
    def read(self, index, name=None) -> Tensor:
        """Element `index` (unwritten elements read as zeros when the element shape is known)."""
        with name_scope(name, "TensorArrayV2Read", [self._flow, index]):
            return tensor_list.get_item(self._flow, index, self._dtype, self._element_shape)

    def write(self, index, value, name=None) -> "TensorArray":
        """A TensorArray with element `index` set to `value` (grown first when dynamic_size)."""
        with name_scope(name, "TensorArrayV2Write", [self._flow, index, value]):
            value = convert_to_tensor(value, dtype_hint=self._dtype, name="value")
            self._check_dtype(value)
            self._merge_shape(value.shape, "write")
            ta = self._with_flow(tensor_list.set_item(self._flow, index, value,
                                                      resize_if_index_out_of_bounds=self._dynamic_size))
            ta._element_shape = self._element_shape
            return ta

    def stack(self, name=None) -> Tensor:
        """All elements stacked along a new first dimension."""
        with name_scope(name, "TensorArrayV2Stack", [self._flow]):
            return tensor_list.stack(self._flow, self._dtype, self._element_shape)

    def gather(self, indices, name=None) -> Tensor:
        """The elements at `indices`, stacked."""
        with name_scope(name, "TensorArrayV2Gather", [self._flow, indices]):
            return tensor_list.gather(self._flow, indices, self._dtype, self._element_shape)

    def concat(self, name=None) -> Tensor:
        """All elements concatenated along their first dimension."""
        with name_scope(name, "TensorArrayV2Concat", [self._flow]):
            return tensor_list.concat(self._flow, self._dtype, self._element_shape)[0]

    def unstack(self, value, name=None) -> "TensorArray":
        """A TensorArray of the slices of `value` along its first dimension."""
        with name_scope(name, "TensorArrayUnstack", [self._flow, value]):
            value = convert_to_tensor(value, dtype_hint=self._dtype, name="value")
            self._check_dtype(value)
            self._merge_shape(tensor_list.element_shape_of(value), "unstack")
            ta = self._with_flow(tensor_list.from_tensor(value))
            ta._element_shape = self._element_shape
            return ta

    def scatter(self, indices, value, name=None) -> "TensorArray":
        """A TensorArray with elements `indices` set to the slices of `value`."""
        with name_scope(name, "TensorArrayScatter", [self._flow, indices, value]):
            value = convert_to_tensor(value, dtype_hint=self._dtype, name="value")
            self._check_dtype(value)
            self._merge_shape(tensor_list.element_shape_of(value), "scatter")
            ta = self._with_flow(tensor_list.scatter(self._flow, value, indices))
            ta._element_shape = self._element_shape
            return ta

    def split(self, value, lengths, name=None) -> "TensorArray":
        """A TensorArray of the pieces of `value` along its first dimension, of `lengths`."""
        with name_scope(name, "TensorArraySplit", [self._flow, value, lengths]):
            value = convert_to_tensor(value, dtype_hint=self._dtype, name="value")
            self._check_dtype(value)
            piece = TensorShape([None]).concatenate(value.shape[1:]) if value.shape.ndims else unknown_shape()
            self._merge_shape(piece, "split")
            ta = self._with_flow(tensor_list.split(value, lengths, self._element_shape))
            ta._element_shape = self._element_shape
            return ta

    def size(self, name=None) -> Tensor:
        """The number of elements (an int32 scalar)."""
        with name_scope(name, "TensorArrayV2Size", [self._flow]):
            return tensor_list.length(self._flow)

    def identity(self) -> "TensorArray":
        """A TensorArray whose flow is an identity of this one's (for control dependencies)."""
        return self._with_flow(identity(self._flow))

    def close(self, name=None):
        """Nothing to release: an op that does nothing, as TF's graph-mode TensorArrayV2 returns."""
        return no_op(name=name)

    def __repr__(self) -> str:
        return f"<tf.TensorArray '{self._name}' dtype={self._dtype.name}>"
