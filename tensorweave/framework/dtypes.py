"""TF1 dtypes: DType objects that map to numpy dtypes."""
from __future__ import annotations

import numpy as np

from tensorweave.framework.tf_export import tf_export


@tf_export("dtypes.DType", "DType")
class DType:
    """A tensor element type (TF1 `tf.DType`)."""

    __slots__ = ("name", "_np", "_enum")

    def __init__(self, name: str, np_dtype, enum: int):
        self.name = name
        self._np = np_dtype
        self._enum = enum

    @property
    def as_numpy_dtype(self):
        return self._np

    @property
    def as_datatype_enum(self) -> int:
        return self._enum

    @property
    def base_dtype(self) -> "DType":
        return self

    @property
    def real_dtype(self) -> "DType":
        """The dtype of a complex dtype's parts (float32 for complex64); a real dtype itself."""
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    @property
    def is_floating(self) -> bool:
        return self.name in ("float16", "float32", "float64", "bfloat16")

    @property
    def is_integer(self) -> bool:
        return self.name.startswith("int") or self.name.startswith("uint")

    @property
    def is_unsigned(self) -> bool:
        return self.name.startswith("uint") or self.name == "bool"

    @property
    def is_bool(self) -> bool:
        return self.name == "bool"

    @property
    def is_complex(self) -> bool:
        return self.name.startswith("complex")

    @property
    def is_numpy_compatible(self) -> bool:
        return self.name not in ("resource", "variant")

    @property
    def size(self) -> int:
        return np.dtype(self._np).itemsize if self._np is not object else 8

    @property
    def min(self):
        if self.is_floating:
            return float(np.finfo(self._np).min)
        if self.is_integer:
            return int(np.iinfo(self._np).min)
        if self.is_bool:
            return False
        raise TypeError(f"Cannot find minimum value of {self.name}.")

    @property
    def max(self):
        if self.is_floating:
            return float(np.finfo(self._np).max)
        if self.is_integer:
            return int(np.iinfo(self._np).max)
        if self.is_bool:
            return True
        raise TypeError(f"Cannot find maximum value of {self.name}.")

    def is_compatible_with(self, other) -> bool:
        return self is as_dtype(other)

    def __eq__(self, other) -> bool:
        if other is None:
            return False
        try:
            return self is as_dtype(other)
        except TypeError:
            return False

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __str__(self) -> str:
        return f"<dtype: '{self.name}'>"

    def __reduce__(self):
        return as_dtype, (self.name,)


float16 = DType("float16", np.float16, 19)
tf_export("dtypes.float16", "dtypes.half", "float16", "half")(float16)
half = float16
float32 = DType("float32", np.float32, 1)
tf_export("dtypes.float32", "float32")(float32)
float64 = DType("float64", np.float64, 2)
tf_export("dtypes.double", "dtypes.float64", "double", "float64")(float64)
double = float64
int8 = DType("int8", np.int8, 6)
tf_export("dtypes.int8", "int8")(int8)
int16 = DType("int16", np.int16, 5)
tf_export("dtypes.int16", "int16")(int16)
int32 = DType("int32", np.int32, 3)
tf_export("dtypes.int32", "int32")(int32)
int64 = DType("int64", np.int64, 9)
tf_export("dtypes.int64", "int64")(int64)
uint8 = DType("uint8", np.uint8, 4)
tf_export("dtypes.uint8", "uint8")(uint8)
uint16 = DType("uint16", np.uint16, 17)
tf_export("dtypes.uint16", "uint16")(uint16)
uint32 = DType("uint32", np.uint32, 22)
tf_export("dtypes.uint32", "uint32")(uint32)
uint64 = DType("uint64", np.uint64, 23)
tf_export("dtypes.uint64", "uint64")(uint64)
bool = DType("bool", np.bool_, 10)
tf_export("dtypes.bool", "bool")(bool)
string = DType("string", object, 7)
tf_export("dtypes.string", "string")(string)
complex64 = DType("complex64", np.complex64, 8)
tf_export("dtypes.complex64", "complex64")(complex64)
complex128 = DType("complex128", np.complex128, 18)
tf_export("dtypes.complex128", "complex128")(complex128)
resource = DType("resource", object, 20)
tf_export("dtypes.resource", "resource")(resource)
variant = DType("variant", object, 21)
tf_export("dtypes.variant", "variant")(variant)

_ALL = [float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32,
        uint64, bool, string, complex64, complex128, resource, variant]
_BY_NAME = {d.name: d for d in _ALL}
_BY_NAME.update({"half": float16, "double": float64, "float": float32})
_BY_ENUM = {d.as_datatype_enum: d for d in _ALL}
_BY_NP = {np.dtype(d.as_numpy_dtype): d for d in _ALL if d.as_numpy_dtype is not object}

QUANTIZED_DTYPES: frozenset = frozenset()
tf_export("dtypes.QUANTIZED_DTYPES")(QUANTIZED_DTYPES)


@tf_export("dtypes.as_dtype", "as_dtype")
def as_dtype(type_value) -> DType:
    """Converts a DType, numpy dtype, type, name or enum into a `DType`."""
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, str):
        if type_value.endswith("_ref"):
            type_value = type_value[:-4]
        if type_value in _BY_NAME:
            return _BY_NAME[type_value]
    elif isinstance(type_value, int) and not isinstance(type_value, type(True)):
        if type_value in _BY_ENUM:
            return _BY_ENUM[type_value]
        if type_value - 100 in _BY_ENUM:
            return _BY_ENUM[type_value - 100]
    elif type_value in (str, bytes, np.str_, np.bytes_):
        return string
    elif type_value is object:
        return string
    else:
        try:
            npd = np.dtype(type_value)
        except TypeError:
            npd = None
        if npd is not None:
            if npd in _BY_NP:
                return _BY_NP[npd]
            if npd.kind in "SUO":
                return string
    raise TypeError(f"Cannot convert value {type_value!r} to a TensorFlow DType.")


@tf_export("dtypes.dtype_of_value")
def dtype_of_value(value) -> DType:
    """The DType TF infers for a Python or numpy value (ints -> int32, floats -> float32)."""
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        if value.dtype.kind in "SUO":
            return string
        return as_dtype(value.dtype)
    if isinstance(value, type(True)):
        return bool
    if isinstance(value, int):
        return int32 if -2**31 <= value < 2**31 else int64
    if isinstance(value, float):
        return float32
    if isinstance(value, complex):
        return complex128
    if isinstance(value, (str, bytes)):
        return string
    if isinstance(value, (list, tuple)):
        if len(value) == 0:
            return float32
        kinds = [dtype_of_value(v) for v in value]
        for candidate in (string, complex128, float32, int64, int32, bool):
            if candidate in kinds:
                if candidate is int32 or candidate is int64:
                    return int64 if int64 in kinds else int32
                return candidate
        return kinds[0]
    raise TypeError(f"Cannot infer a TensorFlow dtype for {type(value).__name__} value {value!r}.")
