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

Not supported, each refused by name: a function library (TF 2's If/While bodies, defuns), a
producer newer than the TF this was recorded against, attributes of a kind or dtype tensorweave
does not hold.
"""
from __future__ import annotations

from tensorboard.compat.proto import attr_value_pb2, graph_pb2, node_def_pb2

from tensorweave.framework import errors
from tensorweave.framework.graph import Operation, Tensor, get_default_graph
from tensorweave.framework.graph_def import parse_input
from tensorweave.framework.importer import OpRecord, all_or_nothing, import_ops
from tensorweave.framework.op_def_registry import OP_DEFS
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.attr_value_proto import UnsupportedAttrError, from_attr_value
from tensorweave.ops.tensor_proto import ProtoError, type_string
from tensorweave.ops.tf_op_defs import TF_ATTR_DEFAULTS

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
    if graph_def.library.function or graph_def.library.gradient:
        names = ", ".join(f.signature.name for f in graph_def.library.function) or "gradients only"
        raise errors.UnimplementedError(
            None, None, f"import_graph_def: GraphDef function libraries (TF 2 If/While bodies, defuns) are not "
            f"supported; this one defines: {names}")


def _record(node) -> OpRecord:
    """The node as an OpRecord (outputs left to the op's shape function); TF's errors for an op
    type we lack or an attribute we cannot hold."""
    if node.op not in OP_DEFS:
        raise errors.NotFoundError(
            None, None, f"Op type not registered '{node.op}' in binary running tensorweave (node '{node.name}'). "
            "tensorweave has no such op.")
    attrs = dict(TF_ATTR_DEFAULTS.get(node.op, {}))
    for key, value in node.attr.items():
        try:
            attrs[key] = from_attr_value(value, node.name)
        except UnsupportedAttrError as e:
            raise ValueError(f"Node '{node.name}' (op '{node.op}'): attribute '{key}' holds a {e}, which "
                             "tensorweave does not support") from None
        except ProtoError as e:
            raise ValueError(f"Node '{node.name}' (op '{node.op}'): attribute '{key}' holds a tensor TensorFlow "
                             f"refuses: {e}") from None
    return OpRecord(node.op, node.name, tuple(node.input), node.device, attrs, None)


def _in_input_order(graph_def) -> list:
    """The nodes ordered so that every node comes after its inputs (TF allows any order);
    ValueError for an input naming no node, or a cycle (TF 1 while loops, which we lack)."""
    nodes = {}
    for node in graph_def.node:
        if node.name in nodes:
            raise ValueError(f"Node '{node.name}' is not unique")
        nodes[node.name] = node
    order, state = [], {}     # state: 1 while a node's inputs are being visited, 2 once placed
    for root in graph_def.node:
        if state.get(root.name):
            continue
        state[root.name] = 1
        stack = [(root, iter(root.input))]
        while stack:
            node, inputs = stack[-1]
            for inp in inputs:
                source = parse_input(inp)[0]
                if source not in nodes:
                    raise ValueError(f"Node '{node.name}': Unknown input node '{inp}'")
                if state.get(source) == 1:
                    raise ValueError(f"GraphDef has a cycle through node '{source}' (TF 1 while loops are not "
                                     "supported by import_graph_def)")
                if not state.get(source):
                    state[source] = 1
                    stack.append((nodes[source], iter(nodes[source].input)))
                    break
            else:
                stack.pop()
                state[node.name] = 2
                order.append(node)
    return order


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
    ordered = _in_input_order(graph_def)
    nodes = {n.name: n for n in ordered}
    if return_elements is not None:
        _check_return_elements(return_elements, nodes)
    records = [_record(n) for n in ordered]
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
