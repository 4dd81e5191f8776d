"""Our graph as TensorFlow's GraphDef protocol buffer (TensorBoard's own protos), for
FileWriter.add_graph: every op with its type, inputs, device, attributes and `_output_shapes`,
so TensorBoard's graph tab draws it as it draws TF's."""
from __future__ import annotations

import numpy as np
from tensorboard.compat.proto import attr_value_pb2, graph_pb2, node_def_pb2, tensor_shape_pb2, versions_pb2

from tensorweave.framework.dtypes import DType
from tensorweave.framework.shapes import TensorShape
from tensorweave.ops.tensor_proto import to_proto


def _shape_proto(shape: TensorShape) -> tensor_shape_pb2.TensorShapeProto:
    if shape.ndims is None:
        return tensor_shape_pb2.TensorShapeProto(unknown_rank=True)
    return tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=-1 if d.value is None else d.value) for d in shape])


def attr_value(v) -> attr_value_pb2.AttrValue:
    """One attribute as an AttrValue (lists by their first element's kind)."""
    a = attr_value_pb2.AttrValue()
    if isinstance(v, DType):
        a.type = v.as_datatype_enum
    elif isinstance(v, TensorShape):
        a.shape.CopyFrom(_shape_proto(v))
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
        for x in v:
            if isinstance(x, DType):
                lst.type.append(x.as_datatype_enum)
            elif isinstance(x, TensorShape):
                lst.shape.add().CopyFrom(_shape_proto(x))
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


def graph_def_proto(graph) -> graph_pb2.GraphDef:
    """`graph` (a tensorweave Graph) as a GraphDef protocol buffer."""
    gd = graph_pb2.GraphDef(versions=versions_pb2.VersionDef(producer=27))
    for op in graph.get_operations():
        node = node_def_pb2.NodeDef(name=op.name, op=op.type, device=op.device)
        node.input.extend([t._as_node_def_input() for t in op.inputs] + ["^" + c.name for c in op.control_inputs])
        for k, v in op._attrs.items():
            node.attr[k].CopyFrom(attr_value(v))
        shapes = attr_value_pb2.AttrValue()
        for t in op.outputs:
            shapes.list.shape.add().CopyFrom(_shape_proto(t.shape))
        node.attr["_output_shapes"].CopyFrom(shapes)
        gd.node.append(node)
    return gd
