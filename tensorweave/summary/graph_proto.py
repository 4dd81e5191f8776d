"""Our graph as TensorFlow's GraphDef protocol buffer (TensorBoard's own protos), for
FileWriter.add_graph: every op with its type, inputs, device, attributes and `_output_shapes`,
so TensorBoard's graph tab draws it as it draws TF's (attributes: ops/attr_value_proto.py;
the reverse direction, tf.import_graph_def: ops/graph_import.py)."""
from __future__ import annotations

from tensorboard.compat.proto import attr_value_pb2, graph_pb2, node_def_pb2, versions_pb2

from tensorweave.ops.attr_value_proto import shape_proto, to_attr_value


def graph_def_proto(graph) -> graph_pb2.GraphDef:
    """`graph` (a tensorweave Graph) as a GraphDef protocol buffer."""
    gd = graph_pb2.GraphDef(versions=versions_pb2.VersionDef(producer=27))
    for op in graph.get_operations():
        node = node_def_pb2.NodeDef(name=op.name, op=op.type, device=op.device)
        node.input.extend([t._as_node_def_input() for t in op.inputs] + ["^" + c.name for c in op.control_inputs])
        for k, v in op._attrs.items():
            node.attr[k].CopyFrom(to_attr_value(v))
        shapes = attr_value_pb2.AttrValue()
        for t in op.outputs:
            shapes.list.shape.add().CopyFrom(shape_proto(t.shape))
        node.attr["_output_shapes"].CopyFrom(shapes)
        gd.node.append(node)
    return gd
