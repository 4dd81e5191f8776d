"""Our graph as TensorFlow's GraphDef protocol buffer (TensorBoard's compiled copy of graph.proto,
public as tf.GraphDef): the writer of `Graph.as_graph_def`, registered with
framework/graph.py's `register_graph_def_writer` when the op library loads. The one conversion:
`Graph.as_graph_def`, `Session.graph_def`, `tf.train.write_graph` and TensorBoard's graph
(`FileWriter.add_graph`, meta graphs of hooks and Supervisor) all write through it.

Each op is a NodeDef, in creation order, with its name, type, inputs ("x", "x:1", then
"^ctrl"), device and every attribute (ops/attr_value_proto.py: types, shapes, tensors, lists,
strings, `_class` colocation), plus the attributes TF's OpDef derives from the op's tensors
("T", "N", type lists; ops/tf_op_defs.py) that our ops do not hold. An op of a type TensorFlow
lacks (our gradients' SumToShape and ReducedShape, sparse GradientDescent and Adam updates,
report_uninitialized_variables, ...) is written as the TF ops its module registers as its
`tf_lowering` (ops/registry.py): TF's own graph for the same computation, its last node named as
the op, the others "<op>/...". So TensorFlow imports and runs the graphs the public API builds
for training (fixtures/record_tf_training_of_ours.py: an MLP and a CNN take TF's training step and
save with a sharded Saver), and our import_graph_def reads them back (TF ops we register); the
op types still written as ours are listed with the reason in tests/unit/test_tf_lowering.py
(NOT_LOWERED), and function bodies keep their ops as they are. `versions` as TF
writes them (the producer; a min_consumer of 0 left out). `from_version` keeps only the ops
created after the graph's `version` had that value (TF's semantics: op ids count up with the
graph's version); `add_shapes` adds `_output_shapes` to each op with outputs, as TF does.

Function bodies (the FuncGraphs of our functional ops: If branches, While cond and body,
nested ones too) go into the GraphDef's `library` as TF's FunctionDefs: arguments "input_i" (the
body's input placeholders, in the functional op's input order), results "output_i", nodes with
TF's function input names ("input_0", "node:out_arg:0", "^node"). TensorFlow imports and runs
our tf.cond (If takes TF's inputs: the predicate, then every branch argument); it refuses our
While, whose inputs are the loop variables and then the cond's and body's captures, not TF's
While signature. tf.import_graph_def of ours refuses any library by name, so a graph with
functions does not copy yet. The reverse direction is ops/graph_import.py.
"""
from __future__ import annotations

from tensorboard.compat.proto import function_pb2, graph_pb2, node_def_pb2

from tensorweave.framework.graph import empty_graph_def, register_graph_def_writer
from tensorweave.ops.attr_value_proto import shape_proto, to_attr_value
from tensorweave.ops.registry import TF_LOWERINGS
from tensorweave.ops.tf_op_defs import TF_OP_SIGNATURES


def _split(args, tensors, attrs):
    """`tensors` cut into one group per OpDef arg (ops/tf_op_defs.py codes, "name:code");
    None when the counts do not fit (an op whose arguments differ from TF's)."""
    sizes = []
    for arg in args:
        code = arg.partition(":")[2]
        if code.startswith("["):
            known = attrs.get(code[1:-1])
            sizes.append(len(known) if isinstance(known, (list, tuple)) else None)
        elif "*" in code:
            known = attrs.get(code.split("*")[0])
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
            code = arg.partition(":")[2]
            if code.startswith("["):
                derived.setdefault(code[1:-1], [t.dtype.base_dtype for t in group])
                continue
            number, _, type_attr = code.rpartition("*")
            if number:
                derived.setdefault(number, len(group))
            if type_attr and group:
                derived.setdefault(type_attr, group[0].dtype.base_dtype)
    return {k: v for k, v in derived.items() if k not in op._attrs}


def _functions_of(value) -> list:
    """The function bodies an attribute value names (a FuncGraph, or a list holding some)."""
    if hasattr(value, "_as_function_def"):
        return [value]
    if isinstance(value, (list, tuple)):
        return [f for v in value for f in _functions_of(v)]
    return []


def _function_tensor_name(t, args: dict) -> str:
    """A tensor inside a function body as FunctionDef names it: an argument by its name, an op's
    output as "node:output_arg:index" (TF's OpDef output argument)."""
    if t in args:
        return args[t]
    op = t.op
    signature = TF_OP_SIGNATURES.get(op.type)
    groups = _split(signature[1], list(op.outputs), op._attrs) if signature else None
    if groups is not None:
        for arg, group in zip(signature[1], groups):
            if t in group:
                return f"{op.name}:{arg.partition(':')[0]}:{group.index(t)}"
    return f"{op.name}:output:{t.value_index}"


def function_def_proto(fg, library: dict, add_shapes: bool = False) -> function_pb2.FunctionDef:
    """A function body (FuncGraph) as TF's FunctionDef; the bodies it names go into `library`.
    Its arguments are its input placeholders ("input_i", in the functional op's input order),
    its results "output_i"."""
    fdef = function_pb2.FunctionDef()
    fdef.signature.name = fg.name
    args = {}
    for i, t in enumerate(fg.inputs):
        args[t] = f"input_{i}"
        fdef.signature.input_arg.add(name=f"input_{i}", type=t.dtype.base_dtype.as_datatype_enum)
    placeholders = {t.op for t in fg.inputs}
    for op in fg.get_operations():
        if op in placeholders:
            continue
        node = fdef.node_def.add()
        node.CopyFrom(node_def_proto(op, add_shapes, library))
        del node.input[:]
        node.input.extend([_function_tensor_name(t, args) for t in op.inputs]
                          + ["^" + c.name for c in op.control_inputs if c not in placeholders])
    for i, t in enumerate(fg.outputs):
        fdef.signature.output_arg.add(name=f"output_{i}", type=t.dtype.base_dtype.as_datatype_enum)
        fdef.ret[f"output_{i}"] = _function_tensor_name(t, args)
    return fdef


def node_def_proto(op, add_shapes: bool = False, library: dict | None = None) -> node_def_pb2.NodeDef:
    """One op as TF's NodeDef; the function bodies it names go into `library` (name ->
    FunctionDef) when given."""
    node = node_def_pb2.NodeDef(name=op.name, op=op.type, device=op.device)
    node.input.extend([t._as_node_def_input() for t in op.inputs] + ["^" + c.name for c in op.control_inputs])
    for key, value in {**op._attrs, **_derived_attrs(op)}.items():
        node.attr[key].CopyFrom(to_attr_value(value))
        if library is not None:
            for fg in _functions_of(value):
                if fg.name not in library:
                    library[fg.name] = None         # stops recursion on a body naming itself
                    library[fg.name] = function_def_proto(fg, library, add_shapes)
    if add_shapes and op.outputs:
        node.attr["_output_shapes"].list.shape.extend([shape_proto(t.shape) for t in op.outputs])
    return node


def tf_node_defs(op, add_shapes: bool = False, library: dict | None = None) -> list:
    """`op` as the NodeDefs TensorFlow imports: its own, or for an op type TF lacks, those of
    the TF lowering registered beside it (ops/registry.py); the last of those has the op's name
    and internal attributes ("_class")."""
    lowering = TF_LOWERINGS.get(op.type)
    if lowering is None:
        return [node_def_proto(op, add_shapes, library)]
    nodes = lowering(op)
    internal = {k: v for k, v in op._attrs.items() if k.startswith("_")}
    protos = []
    for plain in nodes:
        node = node_def_pb2.NodeDef(name=plain.name, op=plain.op, input=plain.input, device=plain.device)
        for key, value in {**plain.attr, **(internal if plain is nodes[-1] else {})}.items():
            node.attr[key].CopyFrom(to_attr_value(value))
        protos.append(node)
    if add_shapes and op.outputs:
        protos[-1].attr["_output_shapes"].list.shape.extend([shape_proto(t.shape) for t in op.outputs])
    return protos


def graph_def_proto(graph, from_version=None, add_shapes: bool = False) -> graph_pb2.GraphDef:
    """`graph` (a tensorweave Graph) as TF's GraphDef (see the module docstring)."""
    gd = empty_graph_def()
    library: dict = {}
    gd.node.extend([node for op in graph.get_operations() if from_version is None or op._id > from_version
                    for node in tf_node_defs(op, add_shapes, library)])
    if library:             # TF leaves the library out when it has no function
        gd.library.function.extend(library.values())
    return gd


register_graph_def_writer(graph_def_proto)
