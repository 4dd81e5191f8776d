"""tf.io.serialize_tensor and tf.io.parse_tensor: a tensor as a serialized TensorProto and back.

The message is TensorFlow's own TensorProto, written and read by the one codec (ops/tensor_proto.py),
so SerializeTensor's bytes are TF's and ParseTensor reads every form TF reads. The errors are TF's:
bytes that are no TensorProto, a proto TF refuses, a dtype other than out_type. A proto of a dtype
tensorweave does not hold (bfloat16, variant, ...) is reported as TF reports it for another
out_type: a type mismatch.
"""
from __future__ import annotations

import base64

from google.protobuf import message as proto_message
from google.protobuf import text_format

from tensorweave.framework import dtypes, errors
from tensorweave.framework.shapes import TensorShape, unknown_shape
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


def _parse_kernel(node, ctx):
    out_type = dtypes.as_dtype(node.attr["out_type"])

    def run(serialized):
        if type(serialized) is not bytes:
            arr = string_array(serialized)
            if arr.shape != ():
                raise invalid(node, f"Expected `serialized` to be a scalar, got shape: {list(arr.shape)}")
            serialized = bytes(arr[()])
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
            raise errors.UnimplementedError(node, node.name, f"ParseTensor ({node.name}): tensors of dtype "
                                            f"{out_type.name} cannot be parsed")
        return value
    return run


register("ParseTensor", lambda op: [(op.get_attr("out_type"), unknown_shape())], _parse_kernel, grad=None,
         dtypes=(dtypes.string,), dtype_param="serialized")
