"""tf.io.serialize_tensor and tf.io.parse_tensor: a tensor as a serialized TensorProto and back.

The message is TensorFlow's own TensorProto (TensorBoard's copy of tensor.proto), so the bytes are
TF's: SerializeTensor writes what TF's kernel writes (numeric and bool tensors as little-endian raw
bytes in `tensor_content`, strings in `string_val`, the shape always present), and ParseTensor
reads every form TF's Tensor::FromProto reads: `tensor_content` (for strings, TF's varint-length
string list), or the typed `*_val` field of the dtype, where fewer values than the shape holds
are padded with the last one (one value fills the tensor; none gives zeros) and more are cut.
Sizes are checked before anything is allocated: content of the wrong length, a shape past int64
or 254 dims is InvalidArgumentError, a shape that a few typed values would fill past
`limits.OP_OUTPUT_ELEMENTS` is ResourceExhaustedError. A proto of a dtype tensorweave does not
hold (bfloat16, variant, ...) is reported as TF reports it for another out_type: a type mismatch.
"""
from __future__ import annotations

import base64

import numpy as np
from google.protobuf import message as proto_message
from google.protobuf import text_format
from tensorboard.compat.proto import tensor_pb2, types_pb2

from tensorweave.framework import dtypes, errors, limits
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import BOOL, NUMERIC, as_string_tensor, invalid, make_op, string_array, string_result
from tensorweave.ops.registry import register

SERIALIZABLE = NUMERIC + BOOL + (dtypes.string,)
_MAX_DIMS = 254                     # TensorShape::MaxDimensions()
_INT64_MAX = (1 << 63) - 1
_MESSAGE_CHARS = 2000               # how much of bad bytes an error message quotes

# dtype -> the TensorProto field a value list of it lives in (TF's ProtoHelper<T>)
_FIELDS = {dtypes.float32: "float_val", dtypes.float64: "double_val", dtypes.int32: "int_val",
           dtypes.int16: "int_val", dtypes.int8: "int_val", dtypes.uint8: "int_val", dtypes.uint16: "int_val",
           dtypes.int64: "int64_val", dtypes.uint32: "uint32_val", dtypes.uint64: "uint64_val",
           dtypes.bool: "bool_val", dtypes.float16: "half_val", dtypes.complex64: "scomplex_val",
           dtypes.complex128: "dcomplex_val", dtypes.string: "string_val"}
_BY_ENUM = {d.as_datatype_enum: d for d in _FIELDS}


def _type_string(enum: int) -> str:
    """TF's DataTypeString: 'float', 'half', 'bfloat16', 'float_ref'; the number when unnamed."""
    try:
        return types_pb2.DataType.Name(enum)[3:].lower()
    except ValueError:
        return str(enum)


# -- SerializeTensor ---------------------------------------------------------------------------
def encode(value, dtype: dtypes.DType) -> bytes:
    """`value` (a numpy value of `dtype`) as TF's serialized TensorProto."""
    a = string_array(value) if dtype is dtypes.string else np.asarray(value, dtype=dtype.as_numpy_dtype)
    proto = tensor_pb2.TensorProto(dtype=dtype.as_datatype_enum)
    proto.tensor_shape.SetInParent()        # present even for a scalar, as TF writes it
    for d in a.shape:
        proto.tensor_shape.dim.add(size=int(d))
    if dtype is dtypes.string:
        proto.string_val.extend(bytes(s) for s in a.reshape(-1))
    elif a.size:
        proto.tensor_content = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes()
    return proto.SerializeToString()


@tf_export("io.serialize_tensor", "serialize_tensor")
def serialize_tensor(tensor, name=None):
    """tf.io.serialize_tensor(tensor, name=None): a scalar string, `tensor` as a serialized
    TensorProto (TF's bytes)."""
    t = convert_to_tensor(tensor, name="tensor")
    return make_op("SerializeTensor", [t], {"T": t.dtype}, name=name or "SerializeTensor").outputs[0]


def _serialize_kernel(node, ctx):
    dtype = dtypes.as_dtype(node.attr["T"])
    return lambda x: encode(x, dtype)


register("SerializeTensor", lambda op: [(dtypes.string, TensorShape([]))], _serialize_kernel, grad=None,
         dtypes=SERIALIZABLE, dtype_param="tensor")


# -- ParseTensor -------------------------------------------------------------------------------
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
    field = getattr(proto, _FIELDS[dtype])
    if dtype in (dtypes.complex64, dtypes.complex128):
        parts = np.asarray(field, dtype=np.float32 if dtype is dtypes.complex64 else np.float64)
        vals = parts[:len(parts) // 2 * 2].view(dtype.as_numpy_dtype)
    elif dtype is dtypes.string:
        vals = string_result(list(field), (len(field),))
    elif dtype is dtypes.float16:
        vals = np.asarray(field, dtype=np.int64).astype(np.uint16).view(np.float16)
    elif _FIELDS[dtype] == "int_val":
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


def decode(serialized: bytes, node_name=None) -> tuple:
    """TF's serialized TensorProto as (its dtype enum, its numpy value; None for a dtype
    tensorweave does not hold). Strings are object arrays of bytes (a scalar: the bytes).
    DecodeError when the bytes are no TensorProto, ProtoError when TF would refuse the proto."""
    proto = tensor_pb2.TensorProto.FromString(serialized)
    if proto.dtype <= 0 or proto.dtype > 100 or proto.dtype not in types_pb2.DataType.values():
        raise ProtoError(f"dtype {_type_string(proto.dtype)}")    # none, a reference type, or unknown
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


def _proto_text(serialized: bytes) -> str:
    """The refused proto as TF's message shows it (text format), its long fields cut short."""
    proto = tensor_pb2.TensorProto.FromString(serialized)
    cut = len(proto.tensor_content) > _MESSAGE_CHARS // 4
    proto.tensor_content = proto.tensor_content[:_MESSAGE_CHARS // 4]
    for field in _FIELDS.values():
        values = getattr(proto, field)
        if len(values) > 16:
            del values[16:]
            cut = True
    return text_format.MessageToString(proto) + ("(cut short)" if cut else "")


@tf_export("io.parse_tensor", "parse_tensor")
def parse_tensor(serialized, out_type, name=None):
    """tf.io.parse_tensor(serialized, out_type, name=None): the tensor a serialized TensorProto
    (a scalar string) holds; InvalidArgumentError when it is none or not of `out_type`. Its
    shape is known only when run."""
    s = as_string_tensor(serialized, name="serialized")
    return make_op("ParseTensor", [s], {"out_type": dtypes.as_dtype(out_type)},
                   name=name or "ParseTensor").outputs[0]


def _parse_kernel(node, ctx):
    out_type = dtypes.as_dtype(node.attr["out_type"])

    def run(serialized):
        if type(serialized) is not bytes:
            arr = string_array(serialized)
            if arr.shape != ():
                raise invalid(node, f"Expected `serialized` to be a scalar, got shape: {list(arr.shape)}")
            serialized = bytes(arr[()])
        try:
            enum, value = decode(serialized, node.name)
        except proto_message.DecodeError:
            quoted = base64.b64encode(serialized[:_MESSAGE_CHARS]).decode()
            raise invalid(node, "Could not parse `serialized` as TensorProto, base64: "
                                + quoted + ("..." if len(serialized) > _MESSAGE_CHARS else "")) from None
        except ProtoError:
            raise invalid(node, "Cannot parse tensor from proto: " + _proto_text(serialized)) from None
        if enum != out_type.as_datatype_enum:
            raise invalid(node, f"Type mismatch between parsed tensor ({_type_string(enum)}) and dtype "
                                f"({_type_string(out_type.as_datatype_enum)})")
        if value is None:
            raise errors.UnimplementedError(node, node.name, f"ParseTensor ({node.name}): tensors of dtype "
                                            f"{out_type.name} cannot be parsed")
        return value
    return run


register("ParseTensor", lambda op: [(op.get_attr("out_type"), unknown_shape())], _parse_kernel, grad=None,
         dtypes=(dtypes.string,), dtype_param="serialized")
