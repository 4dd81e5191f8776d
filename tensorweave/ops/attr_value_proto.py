"""Op attributes as TensorFlow's AttrValue protocol buffer (TensorBoard's copy of attr_value.proto)
and back: the one codec of node attributes, used by the GraphDef we write (ops/graph_export.py:
Graph.as_graph_def, TensorBoard, tf.train.write_graph) and the GraphDefs we read (ops/graph_import.py).

Our graphs hold attributes as graph values: DType, TensorShape, numpy arrays (tensors), Python
bool/int/float, str (TF's `s` bytes, which our ops compare with str), functions, lists of these.
"""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.dtypes import DType
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_protos import attr_value_pb2, tensor_shape_pb2
from tensorweave.ops.tensor_proto import from_proto, to_proto, type_string


def shape_proto(shape: TensorShape) -> tensor_shape_pb2.TensorShapeProto:
    if shape.ndims is None:
        return tensor_shape_pb2.TensorShapeProto(unknown_rank=True)
    return tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=-1 if d.value is None else d.value) for d in shape])


def shape_from_proto(proto: tensor_shape_pb2.TensorShapeProto) -> TensorShape:
    """TF's PartialTensorShape of the proto: unknown rank, or dims with -1 for unknown."""
    if proto.unknown_rank:
        return TensorShape(None)
    return TensorShape([None if d.size < 0 else int(d.size) for d in proto.dim])


def to_attr_value(v) -> attr_value_pb2.AttrValue:
    """One attribute as an AttrValue (lists by their first element's kind)."""
    a = attr_value_pb2.AttrValue()
    if isinstance(v, DType):
        a.type = v.as_datatype_enum
    elif isinstance(v, TensorShape):
        a.shape.CopyFrom(shape_proto(v))
    elif hasattr(v, "_as_function_def"):
        a.func.name = v.name
    elif isinstance(v, (np.ndarray, np.generic)):
        try:
            a.tensor.CopyFrom(to_proto(v))
        except TypeError:
            a.s = repr(v).encode()
    elif isinstance(v, bool):
        a.b = v
    elif isinstance(v, int):
        a.i = v
    elif isinstance(v, float):
        a.f = v
    elif isinstance(v, (str, bytes)):
        a.s = v if isinstance(v, bytes) else v.encode()
    elif isinstance(v, (list, tuple)):
        lst = a.list
        lst.SetInParent()       # an empty list is a list still (TF refuses an AttrValue holding nothing)
        for x in v:
            if isinstance(x, DType):
                lst.type.append(x.as_datatype_enum)
            elif isinstance(x, TensorShape):
                lst.shape.add().CopyFrom(shape_proto(x))
            elif isinstance(x, bool):
                lst.b.append(x)
            elif isinstance(x, int):
                lst.i.append(x)
            elif isinstance(x, float):
                lst.f.append(x)
            else:
                lst.s.append(x if isinstance(x, bytes) else str(x).encode())
    elif v is not None:
        a.s = str(v).encode()
    return a


class UnsupportedAttrError(ValueError):
    """An AttrValue whose kind or dtype tensorweave does not hold (the message says which)."""


def _dtype(enum: int) -> DType:
    try:
        return dtypes.as_dtype(enum)
    except (TypeError, ValueError, KeyError):
        raise UnsupportedAttrError(f"dtype {type_string(enum)}") from None


def _text(s: bytes):
    """TF's attribute bytes as the str our ops compare with ("SAME", "NHWC", "loc:@x"); bytes that
    are not UTF-8 stay bytes."""
    try:
        return s.decode("utf-8")
    except UnicodeDecodeError:
        return s


def _tensor(proto, node_name):
    """A tensor attribute's value as our ops hold it: an ndarray (a scalar string too, which
    from_proto gives as bytes)."""
    enum, value = from_proto(proto, node_name)
    if value is None:
        raise UnsupportedAttrError(f"tensor of dtype {type_string(enum)}")
    return np.asarray(value, dtype=object) if isinstance(value, bytes) else value


def from_attr_value(a: attr_value_pb2.AttrValue, node_name=None, function=None):
    """The graph value of an AttrValue (the inverse of `to_attr_value`). `function(name)` gives
    the graph value of a `func` attribute; without it a function is UnsupportedAttrError.
    UnsupportedAttrError for a `placeholder` (a function body's attribute reference) or a dtype
    tensorweave lacks; tensor_proto.ProtoError for a tensor TF would refuse."""
    kind = a.WhichOneof("value")
    if kind == "type":
        return _dtype(a.type)
    if kind == "shape":
        return shape_from_proto(a.shape)
    if kind == "tensor":
        return _tensor(a.tensor, node_name)
    if kind in ("i", "f", "b"):
        return getattr(a, kind)
    if kind == "s":
        return _text(a.s)
    if kind == "func":
        if function is None:
            raise UnsupportedAttrError(f"function attribute '{a.func.name}'")
        return function(a.func.name)
    if kind == "list":
        lst = a.list
        if lst.func:
            if function is None:
                raise UnsupportedAttrError("function list attribute " + ", ".join(f.name for f in lst.func))
            return [function(f.name) for f in lst.func]
        # a list holds one kind; an empty list is an empty list of any kind
        return ([_text(s) for s in lst.s] + list(lst.i) + list(lst.f) + list(lst.b)
                + [_dtype(t) for t in lst.type] + [shape_from_proto(s) for s in lst.shape]
                + [_tensor(t, node_name) for t in lst.tensor])
    if kind is None:        # TF's AttrValue with no value set: an empty list
        return []
    raise UnsupportedAttrError(f"attribute kind '{kind}'")
