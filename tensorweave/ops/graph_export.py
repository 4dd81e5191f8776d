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
save with a sharded Saver), and our import_graph_def reads them back (TF ops we register); every
op type TF lacks has one (tests/unit/test_tf_lowering.py). In a function body the lowered nodes
take FunctionDef input names too. `versions` as TF
writes them (the producer; a min_consumer of 0 left out). `from_version` keeps only the ops
created after the graph's `version` had that value (TF's semantics: op ids count up with the
graph's version); `add_shapes` adds `_output_shapes` to each op with outputs, as TF does.

Function bodies (the FuncGraphs of our functional ops: If branches, While cond and body,
nested ones too) go into the GraphDef's `library` as TF's FunctionDefs: arguments "input_i" (the
functional op's inputs, each with its shape as TF's `_output_shapes` argument attribute), results
"output_i", nodes with TF's function input names ("input_0", "node:out_arg:0", "^node"). Our If
takes TF's If inputs (the predicate, then every branch argument). Our While, whose inputs are the
loop variables, then the cond's and the body's captures and the iteration limit, is written as
TF's While (`_tf_while`): every input a loop variable, cond and body taking them all, the body
passing captures through and counting the limit down. TensorFlow 2.21 imports and runs both
(tests/unit/fixtures/record_tf_import_of_ours.py); not a loop whose gradient was taken, whose body
also returns the values it records for the gradient in our tensor lists (ops TF defines with
other inputs). tf.import_graph_def (ops/graph_import.py,
the reverse direction) reads the library back into function bodies, so graphs with control flow
copy.
"""
from __future__ import annotations

import weakref

import numpy as np

from tensorweave.framework.graph import empty_graph_def, register_graph_def_writer
from tensorweave.framework.tf_protos import function_pb2, graph_pb2, node_def_pb2
from tensorweave.ops.attr_value_proto import shape_proto, to_attr_value
from tensorweave.ops.registry import tf_lowering_for
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


def _output_index(t) -> int:
    """`t`'s output number in the NodeDef we write: a While's outputs past its loop variables (the
    iteration count and the values recorded for its gradient) come after every input it passes
    through as TF's While does (see `_tf_while`)."""
    op = t.op
    if op.type == "While" and t.value_index >= len(op._attrs["T"]):
        return t.value_index + len(op.inputs) - len(op._attrs["T"])
    return t.value_index


def _input_name(t) -> str:
    """`t` as a GraphDef node's input ("x", "x:1")."""
    index = _output_index(t)
    return t.op.name if index == 0 else f"{t.op.name}:{index}"


def _function_tensor_name(t, args: dict) -> str:
    """A tensor inside a function body as FunctionDef names it: an argument by its name, an op's
    output as "node:output_arg:index" (TF's OpDef output argument)."""
    if t in args:
        return args[t]
    op = t.op
    op_type, attrs = op.type, op._attrs
    lowering = tf_lowering_for(op_type)
    if lowering is not None:                # written as its lowering, whose last node has its name
        last = lowering(op)[-1]
        op_type, attrs = last.op, last.attr
    signature = TF_OP_SIGNATURES.get(op_type)
    groups = _split(signature[1], list(op.outputs), attrs) if signature else None
    if groups is not None:
        for arg, group in zip(signature[1], groups):
            if t in group:
                return f"{op.name}:{arg.partition(':')[0]}:{group.index(t)}"
    return f"{op.name}:output:{_output_index(t)}"


def function_def_proto(fg, library: dict, add_shapes: bool = False, arg_tensors=None,
                       positions=None) -> function_pb2.FunctionDef:
    """A function body (FuncGraph) as TF's FunctionDef; the bodies it names go into `library`.
    Its arguments are "input_i", one per tensor of `arg_tensors` (the functional op's inputs;
    default: the body's input placeholders), the body's input j being argument `positions[j]`
    (default j); its results "output_i"."""
    fdef = function_pb2.FunctionDef()
    fdef.signature.name = fg.name
    arg_tensors = fg.inputs if arg_tensors is None else arg_tensors
    for i, t in enumerate(arg_tensors):
        fdef.signature.input_arg.add(name=f"input_{i}", type=t.dtype.base_dtype.as_datatype_enum)
        fdef.arg_attr[i].attr["_output_shapes"].list.shape.add().CopyFrom(shape_proto(t.shape))   # as TF
    positions = range(len(fg.inputs)) if positions is None else positions
    args = {t: f"input_{i}" for t, i in zip(fg.inputs, positions)}
    placeholders = {t.op for t in fg.inputs}
    for op in fg.get_operations():
        if op in placeholders:
            continue
        if tf_lowering_for(op.type) is not None:
            fdef.node_def.extend(_function_node_defs(op, args, placeholders, add_shapes))
            continue
        node = fdef.node_def.add()
        node.CopyFrom(node_def_proto(op, add_shapes, library))
        del node.input[:]
        node.input.extend([_function_tensor_name(t, args) for t in op.inputs]
                          + ["^" + c.name for c in op.control_inputs if c not in placeholders])
    _set_results(fdef, [(_function_tensor_name(t, args), t.dtype) for t in fg.outputs])
    return fdef


def _set_results(fdef, results: list) -> None:
    """The FunctionDef's results "output_i": (tensor name in the function, dtype) each."""
    del fdef.signature.output_arg[:]
    fdef.ret.clear()
    for i, (name, dtype) in enumerate(results):
        fdef.signature.output_arg.add(name=f"output_{i}", type=dtype.base_dtype.as_datatype_enum)
        fdef.ret[f"output_{i}"] = name


def _add_node(fdef, name: str, op_type: str, inputs: list, **attrs) -> str:
    """A node added to a FunctionDef (named `name`, or `name_1`... when the body has that name); its
    first output's name in the function."""
    taken = {n.name for n in fdef.node_def} | {a.name for a in fdef.signature.input_arg}
    unique, i = name, 1
    while unique in taken:
        unique, i = f"{name}_{i}", i + 1
    node = fdef.node_def.add(name=unique, op=op_type, input=inputs)
    for key, value in attrs.items():
        node.attr[key].CopyFrom(to_attr_value(value))
    output = TF_OP_SIGNATURES[op_type][1][0].partition(":")[0]
    return f"{unique}:{output}:0"


def _tf_while(op, node, library: dict, add_shapes: bool) -> None:
    """Our While written as TF's While (`node`, and its cond and body into `library`): every input
    is a loop variable, so cond and body take them all; the captures pass through the body
    unchanged; an iteration limit (our last input) counts down in the body, the cond requiring it
    positive. Our attributes TF's While lacks travel as "_back_prop" (when False) and, for a loop
    recording values for its gradient, "_num_recorded" (its body returns them after the loop
    variables, as our op outputs them after its iteration count)."""
    n, nc = len(op._attrs["T"]), op._attrs["num_cond_captures"]
    has_max = op._attrs["has_maximum_iterations"]
    cond, body = op._attrs["cond"], op._attrs["body"]
    loop_vars = list(body.inputs[:n]) + list(op.inputs[n:])       # the loop variables' invariant shapes
    nb = len(body.inputs) - n
    for key in ("num_cond_captures", "num_body_captures", "has_maximum_iterations", "back_prop", "record_history",
                "num_recorded"):
        if key in node.attr:
            del node.attr[key]
    node.attr["T"].CopyFrom(to_attr_value([t.dtype.base_dtype for t in loop_vars]))
    node.attr["output_shapes"].CopyFrom(to_attr_value([t.shape for t in loop_vars]))
    if not op._attrs.get("back_prop", True):
        node.attr["_back_prop"].b = False
    recorded = op._attrs.get("num_recorded", 0) if op._attrs.get("record_history") else 0
    if op._attrs.get("record_history"):
        node.attr["_num_recorded"].i = recorded
    if add_shapes:
        shapes = [t.shape for t in loop_vars] + [t.shape for t in op.outputs[n:]]
        node.attr["_output_shapes"].list.ClearField("shape")
        node.attr["_output_shapes"].list.shape.extend([shape_proto(s) for s in shapes])
    for fg in (cond, body):
        library.setdefault(fg.name, None)       # stops recursion on a body naming itself
    limit = f"input_{len(loop_vars) - 1}"
    limit_type = op.inputs[-1].dtype.base_dtype if has_max else None

    cfd = function_def_proto(cond, library, add_shapes, loop_vars, range(n + nc))
    if has_max:
        zero = _add_node(cfd, "iteration_limit/zero", "Const", [], value=np.zeros((), limit_type.as_numpy_dtype),
                         dtype=limit_type)
        left = _add_node(cfd, "iteration_limit/left", "Greater", [limit, zero], T=limit_type)
        both = _add_node(cfd, "iteration_limit/and", "LogicalAnd", [left, cfd.ret["output_0"]])
        _set_results(cfd, [(both, cond.outputs[0].dtype)])
    library[cond.name] = cfd

    bfd = function_def_proto(body, library, add_shapes, loop_vars, list(range(n)) + list(range(n + nc, n + nc + nb)))
    results = [(bfd.ret[f"output_{i}"], t.dtype) for i, t in enumerate(body.outputs)]
    through = [(_add_node(bfd, f"pass_through/input_{i}", "Identity", [f"input_{i}"], T=loop_vars[i].dtype),
                loop_vars[i].dtype) for i in range(n, len(loop_vars) - has_max)]
    if has_max:
        one = _add_node(bfd, "iteration_limit/one", "Const", [], value=np.ones((), limit_type.as_numpy_dtype),
                        dtype=limit_type)
        through.append((_add_node(bfd, "iteration_limit/count_down", "Sub", [limit, one], T=limit_type), limit_type))
    _set_results(bfd, results[:n] + through + results[n:n + recorded])
    library[body.name] = bfd


def node_def_proto(op, add_shapes: bool = False, library: dict | None = None) -> node_def_pb2.NodeDef:
    """One op as TF's NodeDef; the function bodies it names go into `library` (name ->
    FunctionDef) when given."""
    node = node_def_pb2.NodeDef(name=op.name, op=op.type, device=op.device)
    node.input.extend([_input_name(t) for t in op.inputs] + ["^" + c.name for c in op.control_inputs])
    for key, value in {**op._attrs, **_derived_attrs(op)}.items():
        node.attr[key].CopyFrom(to_attr_value(value))
    if add_shapes and op.outputs:
        node.attr["_output_shapes"].list.shape.extend([shape_proto(t.shape) for t in op.outputs])
    library = {} if library is None else library
    if op.type == "While":
        _tf_while(op, node, library, add_shapes)
    for value in op._attrs.values():
        for fg in _functions_of(value):
            if fg.name not in library:
                library[fg.name] = None         # stops recursion on a body naming itself
                library[fg.name] = function_def_proto(fg, library, add_shapes)
    return node


def tf_node_defs(op, add_shapes: bool = False, library: dict | None = None) -> list:
    """`op` as the NodeDefs TensorFlow imports: its own, or for an op type TF lacks, those of
    the TF lowering registered beside it (ops/registry.py); the last of those has the op's name
    and internal attributes ("_class")."""
    lowering = tf_lowering_for(op.type)
    if lowering is None:
        return [node_def_proto(op, add_shapes, library)]
    nodes = lowering(op)
    internal = {k: v for k, v in op._attrs.items() if k.startswith("_")}
    outer = {t._as_node_def_input(): _input_name(t) for t in op.inputs}     # a While's outputs renumbered
    protos = []
    for plain in nodes:
        node = node_def_pb2.NodeDef(name=plain.name, op=plain.op, input=[outer.get(i, i) for i in plain.input],
                                    device=plain.device)
        for key, value in {**plain.attr, **(internal if plain is nodes[-1] else {})}.items():
            node.attr[key].CopyFrom(to_attr_value(value))
        protos.append(node)
    if add_shapes and op.outputs:
        protos[-1].attr["_output_shapes"].list.shape.extend([shape_proto(t.shape) for t in op.outputs])
    return protos


def _function_node_defs(op, args: dict, placeholders: set, add_shapes: bool) -> list:
    """tf_node_defs of a lowered op inside a function body, their inputs named as FunctionDef
    names them: the op's inputs as `_function_tensor_name` names them, its helper nodes' outputs
    by their OpDef output argument ("helper:r1:0"), no control input on an argument."""
    nodes = tf_node_defs(op, add_shapes)
    outer = {_input_name(t): _function_tensor_name(t, args) for t in op.inputs}
    helpers = {n.name: TF_OP_SIGNATURES[n.op][1] for n in nodes}
    dropped = {"^" + p.name for p in placeholders}

    def renamed(name: str) -> str:
        if name in outer or name.startswith("^"):
            return outer.get(name, name)
        node, _, index = name.partition(":")
        return f"{node}:{helpers[node][int(index or 0)].partition(':')[0]}:0"

    for node in nodes:
        inputs = [renamed(i) for i in node.input if i not in dropped]
        del node.input[:]
        node.input.extend(inputs)
    return nodes


# A finalized graph's GraphDefs, {graph: ((graph.version, graph._mutations), {(from_version,
# add_shapes): bytes})}: a training loop's hooks write the same graph with every checkpoint's meta
# graph and every summary writer. Keyed as framework/graph_def.py's runtime GraphDef is: a new op
# changes the version, a changed op (inputs, attributes, device) the mutation count.
_finalized_graph_defs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def graph_def_proto(graph, from_version=None, add_shapes: bool = False) -> graph_pb2.GraphDef:
    """`graph` (a tensorweave Graph) as TF's GraphDef (see the module docstring); a finalized
    graph's is written once and copied."""
    if not graph.finalized:
        return _graph_def_proto(graph, from_version, add_shapes)
    state = (graph.version, graph._mutations)
    cached_state, written = _finalized_graph_defs.get(graph, (None, None))
    if cached_state != state:
        written = {}
        _finalized_graph_defs[graph] = (state, written)
    key = (from_version, bool(add_shapes))
    if key not in written:
        written[key] = _graph_def_proto(graph, from_version, add_shapes).SerializeToString()
    gd = graph_pb2.GraphDef()
    gd.ParseFromString(written[key])
    return gd


def _graph_def_proto(graph, from_version, add_shapes: bool) -> graph_pb2.GraphDef:
    gd = empty_graph_def()
    library: dict = {}
    gd.node.extend([node for op in graph.get_operations() if from_version is None or op._id > from_version
                    for node in tf_node_defs(op, add_shapes, library)])
    if library:             # TF leaves the library out when it has no function
        gd.library.function.extend(library.values())
    return gd


register_graph_def_writer(graph_def_proto)
