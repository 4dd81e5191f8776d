"""tf.import_graph_def: a GraphDef protocol buffer TensorFlow wrote (a frozen `.pb`, the `.pbtxt`
of tf.io.write_graph) added to the default graph.

The proto classes are TensorFlow's own messages (TensorBoard's compiled copy of graph.proto), so
`tf.GraphDef()` parses TF's bytes and text. Each node becomes an `importer.OpRecord` (attributes
decoded by ops/attr_value_proto.py, tensors by ops/tensor_proto.py) without outputs, so
`importer.import_ops` gives it the outputs of our op's shape function, as `Graph.create_op`
would. What the GraphDef alone decides is checked before the first op is added (versions, op
types, attributes, inputs, input_map keys, return_elements' names), so such a refused GraphDef
leaves the graph as it was; a mapped tensor of the wrong dtype, a shape error or a return output
past an op's outputs is found while adding, as in TF, and the ops added so far are taken back out
(`importer.all_or_nothing`). Names the graph holds are made unique
(`x_1`) and devices set as TF's importer sets them (`_place`).

The GraphDef's function library (the bodies of If and While ops, TF's and ours) becomes our
function bodies: each FunctionDef one FuncGraph (`_Functions`), converted when a node first names
it and shared by all that name it, its nodes resolved as the graph's are. TF's StatelessIf and
StatelessWhile are our If and While; TF's While passes every input through as a loop variable.

Not supported, each refused by name: a function calling itself or naming a function the library
lacks, polymorphic functions (argument types from attributes), registered function gradients, a
producer newer than the TF this was recorded against, attributes of a kind or dtype tensorweave
does not hold.
"""
from __future__ import annotations

import re

from tensorweave.framework import errors
from tensorweave.framework.func_graph import FuncGraph, unique_function_name
from tensorweave.framework.graph import Operation, Tensor, get_default_graph
from tensorweave.framework.graph_def import parse_input
from tensorweave.framework.importer import OpRecord, all_or_nothing, import_ops
from tensorweave.framework.op_def_registry import OP_DEFS
from tensorweave.framework.shapes import unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import attr_value_pb2, graph_pb2, node_def_pb2
from tensorweave.ops.attr_value_proto import UnsupportedAttrError, from_attr_value, shape_from_proto
from tensorweave.ops.registry import load
from tensorweave.ops.tensor_proto import ProtoError, type_string
from tensorweave.ops.tf_op_defs import TF_ATTR_DEFAULTS, TF_OP_SIGNATURES

GraphDef = graph_pb2.GraphDef
NodeDef = node_def_pb2.NodeDef
AttrValue = attr_value_pb2.AttrValue
NameAttrList = attr_value_pb2.NameAttrList
tf_export("GraphDef")(GraphDef)
tf_export("NodeDef")(NodeDef)
tf_export("AttrValue")(AttrValue)
tf_export("NameAttrList")(NameAttrList)

# The newest GraphDef version whose op semantics we read: TF 2.21's TF_GRAPH_DEF_VERSION, the
# TensorFlow the fixtures of tests/unit/test_import_graph_def.py were recorded with. A newer
# producer may use an op whose meaning changed since (TF bumps the version for exactly that).
GRAPH_DEF_VERSION = 2474


def _check_versions(graph_def) -> None:
    v = graph_def.versions
    if v.producer > GRAPH_DEF_VERSION:
        raise ValueError(f"GraphDef producer version {v.producer} is newer than the newest tensorweave "
                         f"reads ({GRAPH_DEF_VERSION}, TensorFlow 2.21's): its ops may mean what we do not "
                         "implement. Write the graph with an older TensorFlow.")
    if v.min_consumer > GRAPH_DEF_VERSION or GRAPH_DEF_VERSION in v.bad_consumers:
        raise ValueError(f"GraphDef min consumer version {v.min_consumer} (bad consumers "
                         f"{list(v.bad_consumers)}) excludes tensorweave's version {GRAPH_DEF_VERSION}.")
    if graph_def.library.gradient:
        names = ", ".join(f"{g.function_name} (gradient {g.gradient_func})" for g in graph_def.library.gradient)
        raise errors.UnimplementedError(
            None, None, f"import_graph_def: registered function gradients are not supported: {names}")


# TF's functional ops that are ours under another name: the stateless forms only promise more.
_OUR_OP_TYPE = {"StatelessIf": "If", "StatelessWhile": "While"}


def _while_attrs(attrs: dict) -> dict:
    """A While node's attributes as our While op holds them. TF's While (and ours as written by
    ops/graph_export.py) passes every input through as a loop variable: no captures apart, no
    iteration limit apart (TF counts it in a loop variable of its own)."""
    attrs.setdefault("num_cond_captures", 0)
    attrs.setdefault("num_body_captures", 0)
    attrs.setdefault("has_maximum_iterations", False)
    attrs.setdefault("back_prop", attrs.pop("_back_prop", True))
    if "_num_recorded" in attrs:        # our loop that records values for its gradient
        attrs["record_history"], attrs["num_recorded"] = True, attrs.pop("_num_recorded")
    return attrs


def _record(node, inputs=None, functions=None, where: str = "") -> OpRecord:
    """The node as an OpRecord (outputs left to the op's shape function; `inputs` instead of the
    node's own when given); TF's errors for an op type we lack or an attribute we cannot hold.
    `functions(name, attr)` gives the FuncGraph of a function attribute; `where` says where the
    node is (" in function 'f'") in errors."""
    op_type = _OUR_OP_TYPE.get(node.op, node.op)
    load(op_type)
    if op_type not in OP_DEFS:
        raise errors.NotFoundError(
            None, None, f"Op type not registered '{node.op}' in binary running tensorweave (node '{node.name}'"
            f"{where}). tensorweave has no such op.")
    attrs = dict(TF_ATTR_DEFAULTS.get(op_type, {}))
    for key in sorted(node.attr):     # in one order: functions get the graph's counter as they are met
        value = node.attr[key]
        try:
            attrs[key] = from_attr_value(value, node.name, functions and (lambda name, key=key: functions(name, key)))
        except UnsupportedAttrError as e:
            raise ValueError(f"Node '{node.name}'{where} (op '{node.op}'): attribute '{key}' holds a {e}, which "
                             "tensorweave does not support") from None
        except ProtoError as e:
            raise ValueError(f"Node '{node.name}'{where} (op '{node.op}'): attribute '{key}' holds a tensor "
                             f"TensorFlow refuses: {e}") from None
    if op_type == "While":
        attrs = _while_attrs(attrs)
    return OpRecord(op_type, node.name, tuple(node.input if inputs is None else inputs), node.device, attrs)


def _in_input_order(node_defs, inputs_of=lambda node: node.input, where: str = "") -> list:
    """The nodes ordered so that every node comes after its inputs but for a TF 1 while loop's
    NextIteration into its Merge (TF allows any order); ValueError for an input naming no node, or
    another cycle. `inputs_of(node)`: its inputs as "x:1" / "^x" that name nodes (a function's
    arguments left out)."""
    nodes = {}
    for node in node_defs:
        if node.name in nodes:
            raise ValueError(f"Node '{node.name}'{where} is not unique")
        nodes[node.name] = node
    order, state = [], {}     # state: 1 while a node's inputs are being visited, 2 once placed
    for root in node_defs:
        if state.get(root.name):
            continue
        state[root.name] = 1
        stack = [(root, iter(inputs_of(root)))]
        while stack:
            node, inputs = stack[-1]
            for inp in inputs:
                source = parse_input(inp)[0]
                if source not in nodes:
                    raise ValueError(f"Node '{node.name}'{where}: Unknown input node '{inp}'")
                if node.op == "Merge" and nodes[source].op == "NextIteration":
                    continue        # a TF 1 while loop's back edge (importer.import_ops adds it last)
                if state.get(source) == 1:
                    raise ValueError(f"GraphDef has a cycle through node '{source}'{where} that is not a TF 1 "
                                     "while loop's (NextIteration into Merge)")
                if not state.get(source):
                    state[source] = 1
                    stack.append((nodes[source], iter(inputs_of(nodes[source]))))
                    break
            else:
                stack.pop()
                state[node.name] = 2
                order.append(node)
    return order


def _arg_size(node, op_type: str, code: str) -> int:
    """How many tensors an OpDef argument ("T", "N*T", "[T]" of ops/tf_op_defs.py) holds at `node`."""
    defaults = TF_ATTR_DEFAULTS.get(op_type, {})
    if code.startswith("["):
        attr = code[1:-1]
        return len(node.attr[attr].list.type) if attr in node.attr else len(defaults.get(attr, ()))
    if "*" in code:
        attr = code.partition("*")[0]
        return node.attr[attr].i if attr in node.attr else defaults.get(attr, 0)
    return 1


def _output_index(node, arg: str, index: int, where: str) -> int:
    """The output number of item `index` of `node`'s output argument `arg` (a FunctionDef's
    "node:arg:index"), by TF's OpDef of the node's op (ops/tf_op_defs.py) and its attributes."""
    op_type = _OUR_OP_TYPE.get(node.op, node.op)
    start = 0
    for spec in TF_OP_SIGNATURES.get(op_type, ((), ()))[1]:
        name, _, code = spec.partition(":")
        if name == arg:
            return start + index
        start += _arg_size(node, op_type, code)
    if arg == "output":     # ops/graph_export.py's name for an output TF's OpDef does not describe
        return index
    raise ValueError(f"Node '{node.name}'{where} (op '{node.op}') has no output argument '{arg}'")


class _Functions:
    """A GraphDef's library as FuncGraphs (our function bodies): each FunctionDef converted once,
    when a node first names it, and shared by every node naming it. Function names get the
    importing graph's counter (`cond_true_3`), so two imports never give one name two bodies."""

    def __init__(self, library):
        self._defs = {f.signature.name: f for f in library.function}
        self._graphs: dict = {}
        self._building: list = []

    def of_node(self, outer, node_name: str, where: str = ""):
        """`functions(name, attr)` for from_attr_value at node `node_name` of graph `outer`."""
        return lambda name, attr: self._graph(name, outer, node_name, attr, where)

    def _graph(self, name: str, outer, node_name: str, attr: str, where: str) -> FuncGraph:
        fg = self._graphs.get(name)
        if fg is not None:
            return fg
        if name in self._building:
            cycle = " -> ".join(self._building[self._building.index(name):] + [name])
            raise ValueError(f"Function '{name}' calls itself ({cycle}): recursive functions are not supported")
        fdef = self._defs.get(name)
        if fdef is None:
            raise ValueError(f"Node '{node_name}'{where}: attribute '{attr}' names function '{name}', which the "
                             "GraphDef's library does not define")
        self._building.append(name)
        try:
            fg = self._graphs[name] = self._convert(fdef, outer)
        finally:
            self._building.pop()
        return fg

    def _convert(self, fdef, outer) -> FuncGraph:
        """The one FunctionDef -> FuncGraph conversion: its arguments become the body's argument
        placeholders, its nodes our ops (TF's "node:out_arg:i" inputs resolved by TF's OpDefs),
        `ret` its outputs; the ops of `control_ret` run before any output is returned."""
        fname = fdef.signature.name
        where = f" in function '{fname}'"
        fg = FuncGraph(unique_function_name(outer, re.sub(r"_\d+$", "", fname)), outer)
        args = {}
        for i, arg in enumerate(fdef.signature.input_arg):
            if arg.type_attr or arg.number_attr or arg.type_list_attr:
                raise ValueError(f"Function '{fname}': argument '{arg.name}' takes its type from an attribute; "
                                 "tensorweave imports functions of fixed argument types only")
            shapes = fdef.arg_attr[i].attr["_output_shapes"].list.shape if i in fdef.arg_attr else ()
            try:
                dtype = from_attr_value(AttrValue(type=arg.type))
            except UnsupportedAttrError as e:
                raise ValueError(f"Function '{fname}': argument '{arg.name}' is a {e}, which tensorweave does not "
                                 "support") from None
            args[arg.name] = fg.add_arg(dtype, shape_from_proto(shapes[0]) if shapes else unknown_shape(),
                                     name=arg.name)
        nodes = {n.name: n for n in fdef.node_def}

        def graph_name(inp: str, consumer: str) -> str:
            """A FunctionDef tensor name as a GraphDef's: "node:i", "^node", or an argument."""
            if inp.startswith("^") or inp in args:
                return inp
            node_name, _, out = inp.partition(":")
            if node_name not in nodes:
                raise ValueError(f"Node '{consumer}'{where}: Unknown input node '{inp}'")
            arg, _, index = out.partition(":")
            if not index.isdigit():
                return inp
            return f"{node_name}:{_output_index(nodes[node_name], arg, int(index), where)}"

        inputs = {n.name: [graph_name(i, n.name) for i in n.input] for n in fdef.node_def}
        ordered = _in_input_order(fdef.node_def, lambda n: [i for i in inputs[n.name] if i.lstrip("^") not in args],
                                  where)
        records = [_record(n, inputs[n.name], self.of_node(fg, n.name, where), where) for n in ordered]
        arg_map = {**{f"{a}:0": t for a, t in args.items()}, **{"^" + a: t.op for a, t in args.items()}}
        created = import_ops(fg, records, None, arg_map, uniquify_names=True, check_mapped_dtypes=_type_name)
        outputs = []
        for out in fdef.signature.output_arg:
            if out.name not in fdef.ret:
                raise ValueError(f"Function '{fname}': output '{out.name}' has no `ret` entry")
            name = graph_name(fdef.ret[out.name], fname)
            op_name, index, _ = parse_input(name)
            if name in args:
                t = args[name]
            else:
                t = created[op_name].outputs[index] if index < len(created[op_name].outputs) else None
            if t is None or t.dtype.as_datatype_enum != out.type:
                raise ValueError(f"Function '{fname}': output '{out.name}' ({type_string(out.type)}) is "
                                 f"'{fdef.ret[out.name]}', which is not a tensor of that type")
            outputs.append(t)
        if fdef.control_ret:
            unknown = sorted(n for n in fdef.control_ret.values() if n not in created)
            if unknown:
                raise ValueError(f"Function '{fname}': control outputs name nodes it lacks: {unknown}")
            if not outputs:
                raise ValueError(f"Function '{fname}': a function that only runs ops (control outputs "
                                 f"{sorted(fdef.control_ret.values())}) is not supported")
            with fg.as_default(), fg.control_dependencies([created[n] for n in fdef.control_ret.values()]):
                outputs = [fg.create_op("Identity", [t], name="control_ret").outputs[0] for t in outputs]
        fg.outputs = outputs
        return fg


def _check_input_map(input_map: dict, graph_def, graph) -> dict:
    """input_map with TF's keys ("x" is "x:0"); TF's errors for a value not of the graph and for
    keys no node reads."""
    normalized = {}
    for key, value in input_map.items():
        if not isinstance(key, str):
            raise ValueError("input_map must be a dictionary mapping strings to Tensor objects.")
        if value.graph is not graph:
            raise ValueError(f"input_map value for '{key}' is not an element of the importing graph")
        normalized[key if ":" in key or key.startswith("^") else key + ":0"] = value
    read = set()
    for node in graph_def.node:
        for inp in node.input:
            op_name, index, is_ctrl = parse_input(inp)
            read.add("^" + op_name if is_ctrl else f"{op_name}:{index}")
    unused = [k for k in normalized if k not in read]
    if unused:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: [{', '.join(unused)}]")
    return normalized


def _check_return_elements(return_elements, nodes: dict) -> None:
    for name in return_elements:
        if not isinstance(name, str):
            raise TypeError("return_elements must be a list of strings.")
        if ":" in name:
            op_name, _, index = name.rpartition(":")
            if op_name not in nodes or not index.isdigit():
                raise ValueError(f"Requested return tensor '{name}' not found in graph def")
        elif name not in nodes:
            raise ValueError(f"Requested return node '{name}' not found in graph def")


def _type_name(dtype) -> str:
    return type_string(dtype.as_datatype_enum)


def _place(graph, ops) -> None:
    """TF's importer's devices: a node's own device, filled in by the caller's device scope; a
    node colocated (`_class` "loc:@x") with another takes x's device instead. ValueError for a
    colocation with an op the graph lacks (TF 1)."""
    colocated = {}
    for op in ops:
        names = [c[5:] for c in op._attrs.get("_class", ()) if isinstance(c, str) and c.startswith("loc:@")
                 and c[5:] != op.name]
        if names:
            colocated[op] = names
            op._set_device("")
        else:
            op._set_device(op.device)           # TF's spelling of the node's device
            graph._apply_device_functions(op)   # the node's own fields win, the scope fills the rest
    for op, names in colocated.items():
        for name in names:
            if name not in graph._ops_by_name:
                raise ValueError(f"Specified colocation to an op that does not exist during import: {name} "
                                 f"in {op.name}")
            device = graph._ops_by_name[name].device
            if device:
                op._set_device(device)
                break


@tf_export("import_graph_def", "graph_util.import_graph_def")
def import_graph_def(graph_def, input_map=None, return_elements=None, name=None, op_dict=None,
                     producer_op_list=None):
    """tf.import_graph_def(graph_def, input_map=None, return_elements=None, name=None,
    op_dict=None, producer_op_list=None): imports a GraphDef protocol buffer into the default
    graph, each op named `name/...` ("import" when None, none for ""; the scope is made unique as
    a name scope is). `input_map` maps the GraphDef's tensor names ("x:0", "x") to Tensors of
    the default graph, and control inputs ("^x") to Operations, replacing those inputs. Returns
    the Operations ("name") and Tensors ("name:0") named in `return_elements`, in order, or None.
    `op_dict` and `producer_op_list` are accepted and ignored (deprecated in TF 1.15; ours are
    the ops' defaults). ValueError for a name or input_map key not in the graph, an input naming
    no node, a node's shape or dtype error; NotFoundError for an op type tensorweave lacks."""
    del op_dict, producer_op_list
    if not isinstance(graph_def, GraphDef):
        raise TypeError("graph_def must be a GraphDef proto.")
    if return_elements is not None and isinstance(return_elements, str):
        raise TypeError("return_elements must be a list of strings.")
    graph = get_default_graph()
    _check_versions(graph_def)
    ordered = _in_input_order(graph_def.node)
    nodes = {n.name: n for n in ordered}
    if return_elements is not None:
        _check_return_elements(return_elements, nodes)
    functions = _Functions(graph_def.library)
    records = [_record(n, functions=functions.of_node(graph, n.name)) for n in ordered]
    input_map = dict(input_map or {})
    if name == "" and not all(isinstance(v, (Tensor, Operation)) for v in input_map.values()):
        raise ValueError("tf.import_graph_def() requires a non-empty `name` if `input_map` contains non-Tensor "
                         "values. Try calling tf.convert_to_tensor() on `input_map` values before calling "
                         "tf.import_graph_def().")
    with graph.name_scope(name if name is not None else "import") as scope:
        import_scope = scope[:-1] if scope else None
        if not all(isinstance(v, (Tensor, Operation)) for v in input_map.values()):
            with graph.name_scope("_inputs"):      # TF's importer converts other values here
                input_map = {k: v if isinstance(v, (Tensor, Operation)) else convert_to_tensor(v)
                             for k, v in input_map.items()}
    mapped = _check_input_map(input_map, graph_def, graph)
    # as in TF, the caller's control dependencies do not apply to imported ops; its device scope does
    with all_or_nothing(graph):
        created = import_ops(graph, records, import_scope, mapped, uniquify_names=True,
                             check_mapped_dtypes=_type_name)
        _place(graph, created.values())
        return None if return_elements is None else [_return_element(created, e) for e in return_elements]


def _return_element(created: dict, element: str):
    """The Operation ("name") or Tensor ("name:i") `element` names among the imported ops."""
    if ":" not in element:
        return created[element]
    op_name, _, index = element.rpartition(":")
    op = created[op_name]
    if int(index) >= len(op.outputs):
        raise ValueError(f"Invalid return output {index} of node '{op_name}', which has {len(op.outputs)} "
                         "output(s)")
    return op.outputs[int(index)]
