"""tf.io.serialize_tensor and tf.io.parse_tensor: a tensor as a serialized TensorProto and back;
tf.io.serialize_sparse, serialize_many_sparse and deserialize_many_sparse: a SparseTensor as its
three parts' serialized TensorProtos (a minibatch of them one row each) and back.

The message is TensorFlow's own TensorProto, written and read by the one codec (ops/tensor_proto.py),
so SerializeTensor's bytes are TF's and ParseTensor reads every form TF reads. The errors are TF's:
bytes that are no TensorProto, a proto TF refuses, a dtype other than out_type. A proto of a dtype
tensorweave does not hold (bfloat16, variant, ...) is reported as TF reports it for another
out_type: a type mismatch.
"""
from __future__ import annotations

import base64

import numpy as np

from google.protobuf import message as proto_message
from google.protobuf import text_format

from tensorweave.framework import dtypes, errors
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.sparse_tensor import SparseTensor, convert_to_tensor_or_sparse_tensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import tensor_pb2
from tensorweave.ops.helpers import BOOL, NUMERIC, as_string_tensor, invalid, make_op, string_array
from tensorweave.ops.registry import register
from tensorweave.ops.tensor_proto import FIELDS, ProtoError, from_proto, to_proto, type_string

SERIALIZABLE = NUMERIC + BOOL + (dtypes.string,)
_MESSAGE_CHARS = 2000               # how much of bad bytes an error message quotes


# -- SerializeTensor ---------------------------------------------------------------------------
@tf_export("io.serialize_tensor", "serialize_tensor")
def serialize_tensor(tensor, name=None):
    """tf.io.serialize_tensor(tensor, name=None): a scalar string, `tensor` as a serialized
    TensorProto (TF's bytes)."""
    t = convert_to_tensor(tensor, name="tensor")
    return make_op("SerializeTensor", [t], {"T": t.dtype}, name=name or "SerializeTensor").outputs[0]


def _serialize_kernel(node, ctx):
    dtype = dtypes.as_dtype(node.attr["T"])
    return lambda x: to_proto(x, dtype).SerializeToString()


register("SerializeTensor", lambda op: [(dtypes.string, TensorShape([]))], _serialize_kernel, grad=None,
         dtypes=SERIALIZABLE, dtype_param="tensor")


# -- ParseTensor -------------------------------------------------------------------------------
def _proto_text(serialized: bytes) -> str:
    """The refused proto as TF's message shows it (text format), its long fields cut short."""
    proto = tensor_pb2.TensorProto.FromString(serialized)
    cut = len(proto.tensor_content) > _MESSAGE_CHARS // 4
    proto.tensor_content = proto.tensor_content[:_MESSAGE_CHARS // 4]
    for field in FIELDS.values():
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


def _parse_one(node, serialized: bytes, out_type: dtypes.DType):
    """The tensor of one serialized TensorProto of dtype out_type; TF's errors for bytes that are
    none, a proto TF refuses, another dtype."""
    try:
        enum, value = from_proto(tensor_pb2.TensorProto.FromString(serialized), node.name)
    except proto_message.DecodeError:
        quoted = base64.b64encode(serialized[:_MESSAGE_CHARS]).decode()
        raise invalid(node, "Could not parse `serialized` as TensorProto, base64: "
                            + quoted + ("..." if len(serialized) > _MESSAGE_CHARS else "")) from None
    except ProtoError:
        raise invalid(node, "Cannot parse tensor from proto: " + _proto_text(serialized)) from None
    if enum != out_type.as_datatype_enum:
        raise invalid(node, f"Type mismatch between parsed tensor ({type_string(enum)}) and dtype "
                            f"({type_string(out_type.as_datatype_enum)})")
    if value is None:
        raise errors.UnimplementedError(node, node.name, f"{node.op} ({node.name}): tensors of dtype "
                                        f"{out_type.name} cannot be parsed")
    return value


def _parse_kernel(node, ctx):
    out_type = dtypes.as_dtype(node.attr["out_type"])

    def run(serialized):
        if type(serialized) is not bytes:
            arr = string_array(serialized)
            if arr.shape != ():
                raise invalid(node, f"Expected `serialized` to be a scalar, got shape: {list(arr.shape)}")
            serialized = bytes(arr[()])
        return _parse_one(node, serialized, out_type)
    return run


register("ParseTensor", lambda op: [(op.get_attr("out_type"), unknown_shape())], _parse_kernel, grad=None,
         dtypes=(dtypes.string,), dtype_param="serialized")


# -- SerializeSparse, SerializeManySparse, DeserializeManySparse ------------------------------------
def _sparse_parts(sp_input):
    sp = convert_to_tensor_or_sparse_tensor(sp_input)
    if not isinstance(sp, SparseTensor):
        raise TypeError(f"Input must be a SparseTensor, got {type(sp_input).__name__}")
    return sp


def _serialize_sparse_op(op_type: str, sp_input, name, out_type):
    if dtypes.as_dtype(out_type) != dtypes.string:
        raise TypeError(f"{op_type}: out_type must be tf.string (variant tensors are not held), got {out_type}")
    sp = _sparse_parts(sp_input)
    return make_op(op_type, [sp.indices, sp.values, sp.dense_shape], {"T": sp.dtype, "out_type": dtypes.string},
                   name=name or op_type).outputs[0]


@tf_export("io.serialize_sparse", "serialize_sparse")
def serialize_sparse(sp_input, name=None, out_type=dtypes.string):
    """tf.io.serialize_sparse(sp_input, name=None, out_type=tf.string): a 1-D string tensor of 3,
    the SparseTensor's indices, values and dense_shape as serialized TensorProtos (TF's bytes)."""
    return _serialize_sparse_op("SerializeSparse", sp_input, name, out_type)


@tf_export("io.serialize_many_sparse", "serialize_many_sparse")
def serialize_many_sparse(sp_input, name=None, out_type=dtypes.string):
    """tf.io.serialize_many_sparse(sp_input, name=None, out_type=tf.string): a [N, 3] string
    tensor, row i serialize_sparse of the minibatch entry i (the rank R-1 SparseTensor of the
    entries whose first index is i) of a rank R >= 2 SparseTensor whose first dimension is N."""
    return _serialize_sparse_op("SerializeManySparse", sp_input, name, out_type)


@tf_export("io.deserialize_many_sparse", "deserialize_many_sparse")
def deserialize_many_sparse(serialized_sparse, dtype, rank=None, name=None):
    """tf.io.deserialize_many_sparse(serialized_sparse, dtype, rank=None, name=None): the SparseTensor
    of rank R+1 that stacks the N serialized rank-R SparseTensors of a [N, 3] string tensor (their
    entries in order, each dimension the largest of theirs); `rank` (R+1) sets its static rank."""
    s = as_string_tensor(serialized_sparse, name="serialized_sparse")
    indices, values, shape = make_op("DeserializeManySparse", [s], {"dtype": dtypes.as_dtype(dtype)},
                                     name=name or "DeserializeManySparse").outputs
    if rank is not None:
        indices.set_shape([None, rank])
        shape.set_shape([rank])
    return SparseTensor(indices, values, shape)


def _serialized_triple(indices, values, shape, dtype) -> list:
    """A SparseTensor's three parts as TF's SerializeSparse writes them (AsProtoTensorContent)."""
    return [to_proto(np.asarray(indices, np.int64), dtypes.int64).SerializeToString(),
            to_proto(values, dtype, strings_as_content=True).SerializeToString(),
            to_proto(np.asarray(shape, np.int64), dtypes.int64).SerializeToString()]


def _serialize_sparse_kernel(node, ctx):
    dtype = dtypes.as_dtype(node.attr["T"])

    def run(indices, values, shape):
        out = np.empty(3, dtype=object)
        out[:] = _serialized_triple(indices, values, shape, dtype)
        return out
    return run


def _serialize_many_sparse_kernel(node, ctx):
    dtype = dtypes.as_dtype(node.attr["T"])

    def run(indices, values, shape):
        indices, shape = np.asarray(indices, np.int64), np.asarray(shape, np.int64)
        if shape.size < 2:
            raise invalid(node, f"Rank of input SparseTensor should be > 1, but saw rank: {shape.size}")
        n = int(shape[0])
        batch = indices[:, 0]
        outside = batch[(batch < 0) | (batch >= n)]
        if outside.size:
            raise invalid(node, f"Minibatch index {outside[0]} of the SparseTensor is outside [0, {n})")
        order = np.argsort(batch, kind="stable")
        out = np.empty((n, 3), dtype=object)
        for b in range(n):
            rows = order[batch[order] == b]
            out[b] = _serialized_triple(indices[rows, 1:], np.asarray(values)[rows], shape[1:], dtype)
        return out
    return run


def _deserialize_many_sparse_kernel(node, ctx):
    dtype = dtypes.as_dtype(node.attr["dtype"])

    def run(serialized):
        arr = string_array(serialized)
        if arr.ndim != 2 or arr.shape[1] != 3:
            raise invalid(node, f"Serialized sparse should be a matrix of 3 columns, got shape {list(arr.shape)}")
        all_indices, all_values, shapes = [], [], []
        for b, (ind, val, shp) in enumerate(arr):
            ind = _parse_one(node, bytes(ind), dtypes.int64)
            val = _parse_one(node, bytes(val), dtype)
            shp = _parse_one(node, bytes(shp), dtypes.int64)
            if ind.ndim != 2 or val.ndim != 1 or shp.ndim != 1 or ind.shape != (val.shape[0], shp.shape[0]):
                raise invalid(node, f"Serialized sparse {b} is no SparseTensor: indices {list(ind.shape)}, values "
                                    f"{list(val.shape)}, dense_shape {list(shp.shape)}")
            if shapes and shp.size != shapes[0].size:
                raise invalid(node, f"Inconsistent shape across SparseTensors: rank prior to SparseTensor[{b}] was: "
                                    f"{shapes[0].size} but rank of SparseTensor[{b}] is: {shp.size}")
            all_indices.append(np.concatenate([np.full((len(ind), 1), b, np.int64), ind], 1))
            all_values.append(val)
            shapes.append(shp)
        rank = shapes[0].size if shapes else 0
        indices = np.concatenate(all_indices) if all_indices else np.zeros((0, rank + 1), np.int64)
        values = np.concatenate(all_values) if all_values else np.zeros(0, dtype.as_numpy_dtype)
        dense = np.concatenate([[len(arr)], np.max(shapes, axis=0) if shapes else []]).astype(np.int64)
        return indices, values, dense
    return run


register("SerializeSparse", lambda op: [(dtypes.string, TensorShape([3]))], _serialize_sparse_kernel, grad=None,
         dtypes=SERIALIZABLE, dtype_param="sparse_values")
register("SerializeManySparse", lambda op: [(dtypes.string, TensorShape([None, 3]))], _serialize_many_sparse_kernel,
         grad=None, dtypes=SERIALIZABLE, dtype_param="sparse_values")
register("DeserializeManySparse", lambda op: [(dtypes.int64, TensorShape([None, None])),
                                              (op.get_attr("dtype"), TensorShape([None])),
                                              (dtypes.int64, TensorShape([None]))],
         _deserialize_many_sparse_kernel, grad=None, dtypes=(dtypes.string,), dtype_param="serialized_sparse")
