"""numpy values as TensorFlow's TensorProto and back (TensorBoard's copy of tensor.proto): the one
codec of summary tensors, GraphDef attribute tensors, SerializeTensor and ParseTensor.

`to_proto` writes what TF's Tensor::AsProtoTensorContent writes (numbers and bools as little-endian
raw bytes in `tensor_content`, strings in `string_val`, the shape always present), so the bytes are
TF's. `from_proto` reads every form TF's Tensor::FromProto reads: `tensor_content` (for strings,
TF's varint-length string list), or the typed `*_val` field of the dtype, where fewer values than
the shape holds are padded with the last one (one value fills the tensor; none gives zeros) and
more are cut. Sizes are checked before anything is allocated: content of the wrong length, a shape
past int64 or 254 dims is a ProtoError, a shape that a few typed values would fill past
`limits.OP_OUTPUT_ELEMENTS` is ResourceExhaustedError.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from tensorweave.framework import dtypes, limits
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import tensor_pb2, types_pb2
from tensorweave.ops.helpers import string_array, string_result

_MAX_DIMS = 254                     # TensorShape::MaxDimensions()
_INT64_MAX = (1 << 63) - 1

# dtype -> the TensorProto field a value list of it lives in (TF's ProtoHelper<T>)
FIELDS = {dtypes.float32: "float_val", dtypes.float64: "double_val", dtypes.int32: "int_val",
          dtypes.int16: "int_val", dtypes.int8: "int_val", dtypes.uint8: "int_val", dtypes.uint16: "int_val",
          dtypes.int64: "int64_val", dtypes.uint32: "uint32_val", dtypes.uint64: "uint64_val",
          dtypes.bool: "bool_val", dtypes.float16: "half_val", dtypes.complex64: "scomplex_val",
          dtypes.complex128: "dcomplex_val", dtypes.string: "string_val"}
_BY_ENUM = {d.as_datatype_enum: d for d in FIELDS}


def type_string(enum: int) -> str:
    """TF's DataTypeString: 'float', 'half', 'bfloat16', 'float_ref'; the number when unnamed."""
    try:
        return types_pb2.DataType.Name(enum)[3:].lower()
    except ValueError:
        return str(enum)


def to_proto(value, dtype: Optional[dtypes.DType] = None, strings_as_content: bool = False) -> tensor_pb2.TensorProto:
    """`value` as TF's TensorProto; its dtype is `dtype`, else the numpy value's (object, bytes or
    str arrays: string). TypeError for a value of no TF dtype. Strings go to string_val (TF's
    AsProtoField), or with strings_as_content to tensor_content as TF's AsProtoTensorContent
    writes them (port::EncodeStringList: the varint32 lengths, then the strings)."""
    if dtype is None:
        a = np.asarray(value)
        dtype = dtypes.string if a.dtype == object or a.dtype.kind in "SU" else dtypes.as_dtype(a.dtype)
    else:
        a = string_array(value) if dtype is dtypes.string else np.asarray(value, dtype=dtype.as_numpy_dtype)
    proto = tensor_pb2.TensorProto(dtype=dtype.as_datatype_enum)
    proto.tensor_shape.SetInParent()        # present even for a scalar, as TF writes it
    for d in a.shape:
        proto.tensor_shape.dim.add(size=int(d))
    if dtype is dtypes.string:
        strings = [x if isinstance(x, bytes) else str(x).encode() for x in a.reshape(-1)]
        if not strings_as_content:
            proto.string_val.extend(strings)
        elif strings:
            proto.tensor_content = b"".join(_varint(len(x)) for x in strings) + b"".join(strings)
    elif a.size:
        proto.tensor_content = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes()
    return proto


class ProtoError(ValueError):
    """A TensorProto TF's Tensor::FromProto refuses (the message says why, for logs)."""


def _shape(proto) -> list:
    dims = [int(d.size) for d in proto.tensor_shape.dim]
    if len(dims) > _MAX_DIMS:
        raise ProtoError(f"{len(dims)} dimensions, more than {_MAX_DIMS}")
    count = 1
    for d in dims:
        if d < 0:
            raise ProtoError(f"negative dimension {d}")
        count *= d
        if count > _INT64_MAX:
            raise ProtoError("more elements than int64 counts")
    return dims


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7f:
        out.append((n & 0x7f) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _string_list(content: bytes, n: int) -> list:
    """TF's port::DecodeStringList: n varint32 lengths, then the strings back to back, exactly."""
    if n > len(content):                    # each length takes at least a byte
        raise ProtoError(f"string content of {len(content)} bytes cannot hold {n} lengths")
    sizes, pos = [], 0
    for _ in range(n):
        size = shift = 0
        while True:
            if pos >= len(content) or shift > 28:
                raise ProtoError("bad varint32 string length")
            b = content[pos]
            pos += 1
            size |= (b & 0x7f) << shift
            if not b & 0x80:
                break
            shift += 7
        sizes.append(size & 0xffffffff)     # a fifth byte's high bits fall off, as in GetVarint32
    if sum(sizes) != len(content) - pos:
        raise ProtoError(f"string lengths add up to {sum(sizes)}, content holds {len(content) - pos}")
    out = []
    for size in sizes:
        out.append(content[pos:pos + size])
        pos += size
    return out


def _typed_values(proto, dtype: dtypes.DType, n: int, node_name) -> np.ndarray:
    """The values of the dtype's *_val field as a flat array of n: cut, padded with the last
    value, or zeros when there are none (TF's FromProtoField)."""
    field = getattr(proto, FIELDS[dtype])
    if dtype in (dtypes.complex64, dtypes.complex128):
        parts = np.asarray(field, dtype=np.float32 if dtype is dtypes.complex64 else np.float64)
        vals = parts[:len(parts) // 2 * 2].view(dtype.as_numpy_dtype)
    elif dtype is dtypes.string:
        vals = string_result(list(field), (len(field),))
    elif dtype is dtypes.float16:
        vals = np.asarray(field, dtype=np.int64).astype(np.uint16).view(np.float16)
    elif FIELDS[dtype] == "int_val":
        vals = np.asarray(field, dtype=np.int64).astype(dtype.as_numpy_dtype)
    else:
        vals = np.asarray(field, dtype=dtype.as_numpy_dtype)
    if len(vals) >= n:
        return vals[:n]
    limits.check_elements(n, node_name, f"ParseTensor output of {n} elements from {len(vals)} values")
    if not len(vals):
        return string_result([b""] * n, (n,)) if dtype is dtypes.string else np.zeros(n, dtype.as_numpy_dtype)
    out = np.empty(n, dtype=vals.dtype)
    out[:len(vals)] = vals
    out[len(vals):] = vals[-1]
    return out


def from_proto(proto: tensor_pb2.TensorProto, node_name=None) -> tuple:
    """(the proto's dtype enum, its numpy value; None for a dtype tensorweave does not hold).
    Strings are object arrays of bytes. ProtoError when TF would refuse the proto."""
    if proto.dtype <= 0 or proto.dtype > 100 or proto.dtype not in types_pb2.DataType.values():
        raise ProtoError(f"dtype {type_string(proto.dtype)}")    # none, a reference type, or unknown
    dims = _shape(proto)
    dtype = _BY_ENUM.get(proto.dtype)
    if dtype is None:
        return proto.dtype, None
    n = 1
    for d in dims:
        n *= d
    if n == 0:
        return proto.dtype, (string_result([], dims) if dtype is dtypes.string
                             else np.zeros(dims, dtype.as_numpy_dtype))
    content = proto.tensor_content
    if content and dtype is dtypes.string:
        return proto.dtype, string_result(_string_list(content, n), dims)
    if content:
        np_dt = np.dtype(dtype.as_numpy_dtype).newbyteorder("<")
        if len(content) != n * np_dt.itemsize:
            raise ProtoError(f"Input size was {len(content)} and expected {n * np_dt.itemsize}")
        return proto.dtype, np.frombuffer(content, dtype=np_dt).astype(np_dt.newbyteorder("="),
                                                                        copy=False).reshape(dims)
    flat = _typed_values(proto, dtype, n, node_name)
    return proto.dtype, (string_result(list(flat), dims) if dtype is dtypes.string else flat.reshape(dims))


# -- tf.make_tensor_proto / tf.make_ndarray ----------------------------------------------------------
def _typed_field_values(dtype: dtypes.DType, flat: np.ndarray) -> list:
    """The values TF's GetNumpyAppendFn appends to the dtype's typed field."""
    if dtype is dtypes.float16:
        return flat.astype(np.float16).view(np.uint16).astype(np.int64).tolist()
    if dtype in (dtypes.complex64, dtypes.complex128):
        return np.stack([flat.real, flat.imag], -1).reshape(-1).tolist()
    return flat.tolist()


@tf_export("make_tensor_proto")
def make_tensor_proto(values, dtype=None, shape=None, verify_shape=False, allow_broadcast=False):
    """tf.make_tensor_proto(values, dtype=None, shape=None, verify_shape=False,
    allow_broadcast=False): a TensorProto of `values` as TF writes it: Python floats become
    float32 and ints int32 (int64 when they do not fit) unless `dtype` says otherwise; with
    `shape`, fewer values are filled out by the last one (a single value broadcasts), more are a
    ValueError; a full tensor of more than one number is raw `tensor_content`, anything else the
    dtype's typed field."""
    if isinstance(values, tensor_pb2.TensorProto):
        return values
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    if isinstance(values, np.ndarray):
        nparray = values.astype(dtype.as_numpy_dtype) if dtype is not None and dtype is not dtypes.string else values
    else:
        nparray = np.array(values, dtype=None if dtype is None or dtype is dtypes.string else dtype.as_numpy_dtype)
        if dtype is None and nparray.dtype == np.float64:
            nparray = nparray.astype(np.float32)
        elif dtype is None and nparray.dtype == np.int64 and np.array_equal(nparray.astype(np.int32), nparray):
            nparray = nparray.astype(np.int32)
    if dtype is None:
        dtype = dtypes.string if nparray.dtype == object or nparray.dtype.kind in "SU" else \
            dtypes.as_dtype(nparray.dtype)
    if shape is None:
        shape, size = list(nparray.shape), nparray.size
    else:
        shape = [int(d) for d in shape]
        size = int(np.prod(shape, dtype=np.int64))
        if allow_broadcast:
            if nparray.shape not in ((1,), ()) and nparray.size != size:
                raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, got {nparray.shape}.")
        else:
            if verify_shape and nparray.shape != tuple(shape):
                raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, got {nparray.shape}.")
            if nparray.size > size:
                raise ValueError(f"Too many elements provided. Needed at most {size}, but received {nparray.size}")
    proto = tensor_pb2.TensorProto(dtype=dtype.as_datatype_enum)
    proto.tensor_shape.SetInParent()
    for d in shape:
        proto.tensor_shape.dim.add(size=d)
    if dtype is dtypes.string:
        flat = string_array(nparray).reshape(-1)
        proto.string_val.extend(x if isinstance(x, bytes) else str(x).encode() for x in flat)
        return proto
    if nparray.size == size and size > 1 and dtype not in (dtypes.bool, dtypes.complex64, dtypes.complex128):
        # TF's _TENSOR_CONTENT_TYPES: bools and complex values always go to their typed fields
        proto.tensor_content = np.ascontiguousarray(nparray, dtype=nparray.dtype.newbyteorder("<")).tobytes()
        return proto
    getattr(proto, FIELDS[dtype]).extend(_typed_field_values(dtype, nparray.reshape(-1)))
    return proto


@tf_export("make_ndarray")
def make_ndarray(tensor):
    """tf.make_ndarray(tensor): a TensorProto's value as a numpy array (strings: an object array
    of bytes); a dtype numpy lacks is a TypeError."""
    enum, value = from_proto(tensor)
    if value is None:
        raise TypeError(f"Unsupported tensor type: {type_string(enum)}")
    return np.array(value, copy=True) if isinstance(value, np.ndarray) else np.array(value, dtype=object)
