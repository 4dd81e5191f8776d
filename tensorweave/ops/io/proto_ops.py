"""tf.io.decode_proto / tf.io.encode_proto (TF's DecodeProtoV2 and EncodeProto ops): fields of
serialized protocol buffer messages to and from dense tensors, by the message type's descriptor.

The descriptor is looked up by the caller's `message_type` name: with descriptor_source ""
or "local://" in protobuf's default pool (every message class the process has imported) and
then tensorweave's tf.train.Example pool ("tensorflow.Example", "tensorflow.Features", ...);
otherwise descriptor_source names a file holding a serialized FileDescriptorSet (protoc
--descriptor_set_out --include_imports). Decoding is protobuf's; nothing is evaluated.
"""
from __future__ import annotations

import collections

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from google.protobuf.descriptor import FieldDescriptor as _FD

from tensorweave.framework import dtypes, errors
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import as_string_tensor, invalid, string_array, string_result
from tensorweave.ops.io import example_proto
from tensorweave.ops.registry import register

# The dtypes a field of each protobuf type may be read into (TF 1.15's DecodeProto table:
# unsigned ints also as int64 (and uint32 as two's-complement int32), enums as int32/int64).
_ALLOWED = {
    _FD.TYPE_DOUBLE: (dtypes.float64,), _FD.TYPE_FLOAT: (dtypes.float32, dtypes.float64),
    _FD.TYPE_INT64: (dtypes.int64,), _FD.TYPE_SFIXED64: (dtypes.int64,), _FD.TYPE_SINT64: (dtypes.int64,),
    _FD.TYPE_UINT64: (dtypes.uint64, dtypes.int64), _FD.TYPE_FIXED64: (dtypes.uint64, dtypes.int64),
    _FD.TYPE_INT32: (dtypes.int32, dtypes.int64), _FD.TYPE_SFIXED32: (dtypes.int32, dtypes.int64),
    _FD.TYPE_SINT32: (dtypes.int32, dtypes.int64), _FD.TYPE_ENUM: (dtypes.int32, dtypes.int64),
    _FD.TYPE_UINT32: (dtypes.uint32, dtypes.int64, dtypes.int32),
    _FD.TYPE_FIXED32: (dtypes.uint32, dtypes.int64, dtypes.int32),
    _FD.TYPE_BOOL: (dtypes.bool,), _FD.TYPE_STRING: (dtypes.string,), _FD.TYPE_BYTES: (dtypes.string,),
    _FD.TYPE_MESSAGE: (dtypes.string,), _FD.TYPE_GROUP: (dtypes.string,),
}
_TYPE_WORDS = {v: k.lower()[len("type_"):] for k, v in vars(_FD).items() if k.startswith("TYPE_")}
_UNSIGNED = (_FD.TYPE_UINT32, _FD.TYPE_FIXED32, _FD.TYPE_UINT64, _FD.TYPE_FIXED64)
_file_pools: dict = {}   # descriptor_source file -> its DescriptorPool


def _pools(node, source: str) -> list:
    if source in ("", "local://"):
        return [descriptor_pool.Default(), example_proto.POOL]
    if source not in _file_pools:
        try:
            with open(source, "rb") as f:
                files = descriptor_pb2.FileDescriptorSet.FromString(f.read()).file
            pool = descriptor_pool.DescriptorPool()
            for fd in files:   # protoc writes a set's files dependencies first
                pool.Add(fd)
        except OSError as e:
            raise errors.NotFoundError(node, node.name, f"{node.op}: cannot read descriptor_source {source}: "
                                                        f"{e.strerror}") from None
        except Exception as e:  # noqa: BLE001 - protobuf's DecodeError / TypeError for a bad set
            raise invalid(node, f"{node.op}: descriptor_source {source} is not a serialized FileDescriptorSet: "
                                f"{e}") from None
        _file_pools[source] = pool
    return [_file_pools[source]]


def _message_class(node, message_type: str, source: str):
    for pool in _pools(node, source):
        try:
            return message_factory.GetMessageClass(pool.FindMessageTypeByName(message_type))
        except KeyError:
            continue
    raise invalid(node, f"{node.op}: No descriptor found for message type {message_type}")


def _fields(node, cls, field_names, types) -> list:
    """The FieldDescriptors of `field_names`, each checked against the dtype it is read as / from."""
    out = []
    for name, dt in zip(field_names, types):
        field = cls.DESCRIPTOR.fields_by_name.get(name)
        if field is None:
            raise invalid(node, f"{node.op}: Unknown field: {name} in message type {cls.DESCRIPTOR.full_name}")
        dt = dtypes.as_dtype(dt)
        if dt not in _ALLOWED[field.type]:
            raise invalid(node, f"{node.op}: Unexpected output type for {field.full_name}: "
                                f"{_TYPE_WORDS[field.type]} to {dt.name}")
        out.append(field)
    return out


def _field_default(field, np_dt):
    if field.type in (_FD.TYPE_MESSAGE, _FD.TYPE_GROUP) or field.is_repeated:
        return b"" if np_dt is object else np_dt(0)
    value = field.default_value
    return value.encode() if isinstance(value, str) else value


def _to_numpy(field, values: list, np_dt) -> list:
    if field.type in (_FD.TYPE_MESSAGE, _FD.TYPE_GROUP):
        return [v.SerializeToString() for v in values]
    if field.type == _FD.TYPE_STRING:
        return [v.encode() for v in values]
    if field.type in _UNSIGNED:   # into a signed dtype: two's complement, as TF
        return np.array(values, dtype=np.uint64).astype(np_dt).tolist()
    return values


# -- DecodeProtoV2 -------------------------------------------------------------------------------
@tf_export("io.decode_proto")
def decode_proto(bytes, message_type, field_names, output_types, descriptor_source="local://",
                 message_format="binary", sanitize=False, name=None):
    """tf.io.decode_proto(bytes, message_type, field_names, output_types,
    descriptor_source='local://', message_format='binary', sanitize=False, name=None): the
    fields `field_names` of each serialized `message_type` message in `bytes` (any shape [B...]),
    as (sizes, values): sizes int32 [B..., len(field_names)] holds each field's count per message;
    values[i] is [B..., max(1, largest count)] of output_types[i], padded with the field's default.
    A submessage is read as its serialized string; message_format 'text' reads text format.
    InvalidArgumentError at run time for an unknown type or field, or a dtype the field cannot be
    read as; DataLossError for bytes that do not parse."""
    if message_format not in ("binary", "text"):
        raise ValueError(f"decode_proto: message_format must be 'binary' or 'text', got {message_format!r}")
    field_names, output_types = list(field_names), [dtypes.as_dtype(t) for t in output_types]
    if len(field_names) != len(output_types):
        raise ValueError(f"decode_proto: {len(field_names)} field_names but {len(output_types)} output_types")
    bytes = as_string_tensor(bytes, name="bytes")
    attrs = {"message_type": message_type, "field_names": field_names, "output_types": output_types,
             "descriptor_source": descriptor_source, "message_format": message_format, "sanitize": bool(sanitize)}
    op = get_default_graph().create_op("DecodeProtoV2", [bytes], attrs, name=name or "DecodeProtoV2")
    return DecodeProtoResult(op.outputs[0], list(op.outputs[1:]))


DecodeProtoResult = collections.namedtuple("DecodeProtoV2", ["sizes", "values"])   # TF's result type


def _decode_infer(op):
    batch = op.inputs[0].shape
    batch = batch.as_list() if batch.ndims is not None else None
    n = len(op.get_attr("field_names"))
    if batch is None:
        return [(dtypes.int32, unknown_shape())] + [(dtypes.as_dtype(t), unknown_shape())
                                                    for t in op.get_attr("output_types")]
    return [(dtypes.int32, TensorShape(batch + [n]))] + [(dtypes.as_dtype(t), TensorShape(batch + [None]))
                                                         for t in op.get_attr("output_types")]


def _decode_kernel(node, ctx):
    cls = _message_class(node, node.attr["message_type"], node.attr["descriptor_source"])
    types = [dtypes.as_dtype(t) for t in node.attr["output_types"]]
    fields = _fields(node, cls, node.attr["field_names"], types)
    text = node.attr["message_format"] == "text"
    np_types = [t.as_numpy_dtype for t in types]

    def parse(i: int, data: bytes):
        message = cls()
        try:
            if text:
                text_format.Parse(data.decode("utf-8"), message)
            else:
                message.ParseFromString(data)
        except Exception as e:  # noqa: BLE001 - protobuf's DecodeError / ParseError
            raise errors.DataLossError(node, node.name, f"{node.op}: Unable to parse message {i} as "
                                                        f"{cls.DESCRIPTOR.full_name}: {e}") from None
        return dict((f.name, v) for f, v in message.ListFields())

    def run(data):
        arr = string_array(data)
        present = [parse(i, bytes(s)) for i, s in enumerate(arr.reshape(-1))]
        sizes = np.zeros((len(present), len(fields)), np.int32)
        values = []
        for j, (field, np_dt) in enumerate(zip(fields, np_types)):
            rows = []
            for i, found in enumerate(present):
                got = found.get(field.name)
                got = [] if got is None else list(got) if field.is_repeated else [got]
                sizes[i, j] = len(got)
                rows.append(_to_numpy(field, got, np_dt))
            width = max([1] + [len(r) for r in rows])
            out = np.empty((len(rows), width), dtype=object) if np_dt is object else np.empty((len(rows), width), np_dt)
            out[...] = _field_default(field, np_dt)
            for i, r in enumerate(rows):
                out[i, :len(r)] = r
            values.append(out.reshape(arr.shape + (width,)))
        return tuple([sizes.reshape(arr.shape + (len(fields),))] + values)
    return run


register("DecodeProtoV2", _decode_infer, _decode_kernel, grad=None, dtypes=(dtypes.string,), dtype_param="bytes")


# -- EncodeProto -------------------------------------------------------------------------------------
@tf_export("io.encode_proto")
def encode_proto(sizes, values, field_names, message_type, descriptor_source="local://", name=None):
    """tf.io.encode_proto(sizes, values, field_names, message_type, descriptor_source='local://',
    name=None): decode_proto's inverse: a string tensor [B...] of serialized `message_type`
    messages, field field_names[i] of message b holding the first sizes[b, i] entries of
    values[i][b] (a submessage given as its serialized string). InvalidArgumentError at run time
    when a size exceeds its values."""
    field_names = list(field_names)
    values = [convert_to_tensor(v, name="values") for v in values]
    if len(values) != len(field_names):
        raise ValueError(f"encode_proto: {len(field_names)} field_names but {len(values)} values")
    sizes = convert_to_tensor(sizes, dtype=dtypes.int32, name="sizes")
    attrs = {"field_names": field_names, "message_type": message_type, "descriptor_source": descriptor_source,
             "Tinput_types": [v.dtype for v in values]}
    return get_default_graph().create_op("EncodeProto", [sizes] + values, attrs,
                                         name=name or "EncodeProto").outputs[0]


def _encode_infer(op):
    s = op.inputs[0].shape
    return [(dtypes.string, TensorShape(s.as_list()[:-1]) if s.ndims else unknown_shape())]


def _python_value(field, v):
    if field.type == _FD.TYPE_STRING:
        return bytes(v).decode("utf-8")
    if field.type == _FD.TYPE_BYTES:
        return bytes(v)
    if field.type == _FD.TYPE_BOOL:
        return bool(v)
    if field.type in (_FD.TYPE_FLOAT, _FD.TYPE_DOUBLE):
        return float(v)
    if field.type in (_FD.TYPE_UINT64, _FD.TYPE_FIXED64):
        return int(np.array(v).astype(np.uint64))
    if field.type in (_FD.TYPE_UINT32, _FD.TYPE_FIXED32):
        return int(np.array(v).astype(np.int64).astype(np.uint32))
    return int(v)


def _encode_kernel(node, ctx):
    cls = _message_class(node, node.attr["message_type"], node.attr["descriptor_source"])
    fields = _fields(node, cls, node.attr["field_names"], node.attr["Tinput_types"])

    def run(sizes, *values):
        sizes = np.asarray(sizes)
        batch = sizes.shape[:-1]
        sizes = sizes.reshape(-1, len(fields))
        flat = [np.asarray(v).reshape(sizes.shape[0], -1) for v in values]
        out = []
        for i in range(sizes.shape[0]):
            message = cls()
            for j, field in enumerate(fields):
                count = int(sizes[i, j])
                if count > flat[j].shape[1]:
                    raise invalid(node, f"Size to write must not be larger than value tensor; but saw: {count} > "
                                        f"{flat[j].shape[1]} at message {i} field {j}")
                entries = flat[j][i, :count]
                if field.type in (_FD.TYPE_MESSAGE, _FD.TYPE_GROUP):
                    for e in entries:
                        sub = getattr(message, field.name).add() if field.is_repeated \
                            else getattr(message, field.name)
                        sub.MergeFromString(bytes(e))
                elif field.is_repeated:
                    getattr(message, field.name).extend(_python_value(field, e) for e in entries)
                elif count:
                    setattr(message, field.name, _python_value(field, entries[-1]))
            out.append(message.SerializeToString())
        return string_result(out, batch)
    return run


register("EncodeProto", _encode_infer, _encode_kernel, grad=None)
