"""Our graph as TensorFlow's GraphDef protocol buffer (TensorBoard's compiled copy of graph.proto,
public as tf.GraphDef): the writer of `Graph.as_graph_def`, registered with
framework/graph.py's `register_graph_def_writer` when the op library loads. The one conversion:
`Graph.as_graph_def`, `Session.graph_def`, `tf.train.write_graph` and TensorBoard's graph
(`FileWriter.add_graph`, meta graphs of hooks and Supervisor) all write through it.

Each op is a NodeDef, in creation order, with its name, type, inputs ("x", "x:1", then
"^ctrl"), device and every attribute (ops/attr_value_proto.py: types, shapes, tensors, lists,
strings, `_class` colocation), plus the attributes TF's OpDef derives from the op's tensors
("T", "N", type lists; ops/tf_op_signatures.py) that our ops do not hold. `versions` as TF
writes them (the producer; a min_consumer of 0 left out). `from_version` keeps only the ops
created after the graph's `version` had that value (TF's semantics: op ids count up with the
graph's version); `add_shapes` adds `_output_shapes` to each op with outputs, as TF does.

A function attribute (the If/While bodies of our functional ops) is written as the function's
name only: the GraphDef's `library` stays empty, so such a GraphDef does not import back
(tf.import_graph_def refuses the attribute by name). The reverse direction is
ops/graph_import.py.
"""
from __future__ import annotations

from tensorboard.compat.proto import graph_pb2, node_def_pb2

from tensorweave.framework.graph import empty_graph_def, register_graph_def_writer
from tensorweave.ops.attr_value_proto import shape_proto, to_attr_value
from tensorweave.ops.tf_op_signatures import TF_OP_SIGNATURES


def _split(args, tensors, attrs):
    """`tensors` cut into one group per OpDef arg (ops/tf_op_signatures.py codes); None when the
    counts do not fit (an op whose arguments differ from TF's)."""
    sizes = []
    for arg in args:
        if arg.startswith("["):
            known = attrs.get(arg[1:-1])
            sizes.append(len(known) if isinstance(known, (list, tuple)) else None)
        elif "*" in arg:
            known = attrs.get(arg.split("*")[0])
            sizes.append(known if isinstance(known, int) and not isinstance(known, bool) else None)
        else:
            sizes.append(1)
    unknown = [i for i, n in enumerate(sizes) if n is None]
    if len(unknown) > 1:
        return None
    if unknown:
        sizes[unknown[0]] = len(tensors) - sum(n for n in sizes if n is not None)
    if sum(sizes) != len(tensors) or min(sizes, default=0) < 0:
        return None
    groups, start = [], 0
    for n in sizes:
        groups.append(tensors[start:start + n])
        start += n
    return groups


def _derived_attrs(op) -> dict:
    """The attributes TF's OpDef derives from the op's tensors (type "T", list length "N", type
    lists) that the op does not hold itself."""
    signature = TF_OP_SIGNATURES.get(op.type)
    if signature is None:
        return {}
    derived: dict = {}
    for args, tensors in zip(signature, (op.inputs, op.outputs)):
        groups = _split(args, list(tensors), op._attrs)
        if groups is None:
            continue
        for arg, group in zip(args, groups):
            if arg.startswith("["):
                derived.setdefault(arg[1:-1], [t.dtype.base_dtype for t in group])
                continue
            number, _, type_attr = arg.rpartition("*")
            if number:
                derived.setdefault(number, len(group))
            if type_attr and group:
                derived.setdefault(type_attr, group[0].dtype.base_dtype)
    return {k: v for k, v in derived.items() if k not in op._attrs}


def node_def_proto(op, add_shapes: bool = False) -> node_def_pb2.NodeDef:
    """One op as TF's NodeDef."""
    node = node_def_pb2.NodeDef(name=op.name, op=op.type, device=op.device)
    node.input.extend([t._as_node_def_input() for t in op.inputs] + ["^" + c.name for c in op.control_inputs])
    for key, value in {**op._attrs, **_derived_attrs(op)}.items():
        node.attr[key].CopyFrom(to_attr_value(value))
    if add_shapes and op.outputs:
        node.attr["_output_shapes"].list.shape.extend([shape_proto(t.shape) for t in op.outputs])
    return node


def graph_def_proto(graph, from_version=None, add_shapes: bool = False) -> graph_pb2.GraphDef:
    """`graph` (a tensorweave Graph) as TF's GraphDef (see the module docstring)."""
    gd = empty_graph_def()
    gd.node.extend([node_def_proto(op, add_shapes) for op in graph.get_operations()
                    if from_version is None or op._id > from_version])
    return gd


register_graph_def_writer(graph_def_proto)
