"""tf.TensorSpec: a description of a tensor (shape, dtype, optional name), what TF 1.15 programs
pass to describe inputs (serving signatures, tf.data structures)."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import TensorShape, as_shape
from tensorweave.framework.tf_export import tf_export


@tf_export("TensorSpec")
class TensorSpec:
    """tf.TensorSpec(shape, dtype=tf.float32, name=None): a tensor's shape, dtype and name."""

    __slots__ = ("_shape", "_dtype", "_name")

    def __init__(self, shape, dtype=dtypes.float32, name=None):
        self._shape = as_shape(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._name = name

    @classmethod
    def from_spec(cls, spec, name=None) -> "TensorSpec":
        """A TensorSpec with spec's shape and dtype (and its name unless `name`)."""
        return cls(spec.shape, spec.dtype, name or getattr(spec, "name", None))

    @classmethod
    def from_tensor(cls, tensor, name=None) -> "TensorSpec":
        """The spec of a Tensor: its static shape and dtype, named by its op unless `name`."""
        if not hasattr(tensor, "shape") or not hasattr(tensor, "dtype") or not hasattr(tensor, "op"):
            raise ValueError(f"`tensor` should be a tf.Tensor, got {tensor!r}")
        return cls(tensor.shape, tensor.dtype, name or tensor.op.name)

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def name(self):
        return self._name

    def is_compatible_with(self, spec_or_tensor) -> bool:
        """Same dtype, and shapes that could be the same."""
        return self._dtype == dtypes.as_dtype(spec_or_tensor.dtype) and \
            self._shape.is_compatible_with(spec_or_tensor.shape)

    def most_specific_compatible_type(self, other) -> "TensorSpec":
        if type(other) is not type(self) or self._dtype != other.dtype:
            raise ValueError(f"No TypeSpec is compatible with both {self} and {other}")
        return TensorSpec(self._shape.most_specific_compatible_shape(other.shape), self._dtype,
                          self._name if self._name == other.name else None)

    def __eq__(self, other) -> bool:
        return (type(other) is type(self) and self._dtype == other._dtype and self._name == other._name and
                self._shape.as_tuple_or_none() == other._shape.as_tuple_or_none())

    def __ne__(self, other) -> bool:
        return not self == other

    def __hash__(self) -> int:
        dims = self._shape.as_tuple_or_none()
        return hash((None if dims is None else tuple(dims), self._dtype, self._name))

    def __repr__(self) -> str:
        dims = self._shape.as_tuple_or_none()
        shape = "<unknown>" if dims is None else repr(tuple(dims))
        return f"TensorSpec(shape={shape}, dtype={self._dtype!r}, name={self._name!r})"
