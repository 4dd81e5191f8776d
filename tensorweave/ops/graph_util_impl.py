"""tf.graph_util's GraphDef helpers (TF 1.15's graph_util_impl, as TensorFlow 2.21's
tf.compat.v1.graph_util does them): `extract_sub_graph`, `remove_training_nodes`,
`convert_variables_to_constants` (freezing), `must_run_on_cpu`, `tensor_shape_from_node_def_name`.

All work on TensorFlow's own GraphDef protocol buffer (`tf.GraphDef`, ops/graph_import.py) and
return a new one; none changes its input. Freezing asks the session for the variables' values
only through `sess.run` (fetches by tensor name), and rewrites the pruned graph as TF 2.21's
convert_to_constants does for a session: each variable node (VariableV2, VarHandleOp) becomes a
Const of its value (no device, no colocation), a ReadVariableOp of it an Identity, a
ResourceGather a GatherV2 (with an `<name>/axis` Const appended), a ResourceGatherNd a GatherNd,
and an Identity (Switch, Enter, ...) between them takes the variable's dtype for its resource.
What TF records for these is in tests/unit/fixtures/tf_graph_defs/graph_util.json
(record_tf_graph_util.py).
"""
from __future__ import annotations

import copy
import re

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.graph import Operation
from tensorweave.framework.graph_def import parse_input
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import graph_pb2, node_def_pb2
from tensorweave.ops.tensor_proto import to_proto

_VARIABLE_OPS = {"Assign", "AssignAdd", "AssignSub", "Queue", "ScatterAdd", "ScatterSub", "ScatterUpdate",
                 "TruncatedNormal", "Variable", "VariableV2"}
# ops a variable's value passes through unchanged: freezing gives them the variable's dtype
_INTERMEDIATE_OPS = {"Enter", "Exit", "Identity", "NextIteration", "Switch", "_SwitchN"}


def _node_name(n: str) -> str:
    return parse_input(n)[0]


def _colocated_name(name: bytes) -> str:
    text = name.decode("utf-8")
    return text[5:] if text.startswith("loc:@") else text


@tf_export("graph_util.must_run_on_cpu")
def must_run_on_cpu(node, pin_variables_on_cpu=False):
    """tf.graph_util.must_run_on_cpu(node, pin_variables_on_cpu=False): True for an op TF 1 kept
    on the CPU (an int32 or string Const, an int32 DynamicStitch or Cast from int32; a variable op
    when `pin_variables_on_cpu`). `node` is an Operation or a NodeDef."""
    if isinstance(node, Operation):
        op_type = node.type

        def type_attr(name):
            try:
                return dtypes.as_dtype(node.get_attr(name))
            except (ValueError, KeyError):
                return None
    else:
        assert isinstance(node, node_def_pb2.NodeDef)
        op_type = node.op

        def type_attr(name):
            enum = node.attr[name].type if name in node.attr else 0
            return dtypes.as_dtype(enum) if enum else None
    if pin_variables_on_cpu and op_type in _VARIABLE_OPS:
        return True
    if op_type == "Const":
        return type_attr("dtype") in (dtypes.string, dtypes.int32)
    if op_type in ("DynamicStitch", "ParallelDynamicStitch"):
        return type_attr("T") == dtypes.int32
    if op_type == "Cast":
        return type_attr("SrcT") == dtypes.int32
    return False


def _graph_summary(graph_def):
    """(node name -> names it needs: inputs and colocations, name -> node, name -> position)."""
    needs, by_name, seq = {}, {}, {}
    for i, node in enumerate(graph_def.node):
        n = _node_name(node.name)
        by_name[n] = node
        needs[n] = [_node_name(x) for x in node.input]
        if "_class" in node.attr:
            needs[n].extend(_colocated_name(c) for c in node.attr["_class"].list.s)
        seq[n] = i
    return needs, by_name, seq


@tf_export("graph_util.extract_sub_graph")
def extract_sub_graph(graph_def, dest_nodes):
    """tf.graph_util.extract_sub_graph(graph_def, dest_nodes): a GraphDef of the nodes that
    `dest_nodes` (node names) need, through inputs, control inputs and colocations, in
    `graph_def`'s order, with its library and versions. TypeError for a graph_def that is not a
    GraphDef proto or a str `dest_nodes`; AssertionError for a name not in the graph (TF's)."""
    if not isinstance(graph_def, graph_pb2.GraphDef):
        raise TypeError(f"graph_def must be a graph_pb2.GraphDef proto, but got type {type(graph_def)}.")
    if isinstance(dest_nodes, str):
        raise TypeError(f"dest_nodes must be an iterable of strings, but got type {type(dest_nodes)}.")
    needs, by_name, seq = _graph_summary(graph_def)
    for d in dest_nodes:
        assert d in by_name, f"{d} is not in graph"
    keep, to_visit = set(), list(dest_nodes)
    while to_visit:
        name = to_visit.pop(0)
        if name in keep:
            continue
        keep.add(name)
        to_visit.extend(needs.get(name, ()))
    out = graph_pb2.GraphDef()
    for name in sorted(keep, key=lambda n: seq[n]):
        out.node.append(copy.deepcopy(by_name[name]))
    out.library.CopyFrom(graph_def.library)
    out.versions.CopyFrom(graph_def.versions)
    return out


@tf_export("graph_util.tensor_shape_from_node_def_name")
def tensor_shape_from_node_def_name(graph, input_name):
    """tf.graph_util.tensor_shape_from_node_def_name(graph, input_name): the static shape of the
    tensor a NodeDef input names in `graph` ("x" is "x:0")."""
    name = input_name if ":" in input_name else input_name + ":0"
    return graph.get_tensor_by_name(name).get_shape()


@tf_export("graph_util.remove_training_nodes")
def remove_training_nodes(input_graph, protected_nodes=None):
    """tf.graph_util.remove_training_nodes(input_graph, protected_nodes=None): a GraphDef (nodes
    only, as TF returns it) without what inference does not need, as TF does it: CheckNumerics
    nodes are dropped with every edge from them (not rewired: an Identity they fed is left
    without input, and TF then fails with IndexError); Identity and StopGradient nodes are
    spliced out, their consumers reading their input, unless a node is protected, has a control
    input, is a control input, or another node is colocated with it."""
    protected = protected_nodes or []
    removed = {n.name for n in input_graph.node if n.op == "CheckNumerics" and n.name not in protected}
    after_removal = []
    for node in input_graph.node:
        if node.name in removed:
            continue
        new = node_def_pb2.NodeDef()
        new.CopyFrom(node)
        del new.input[:]
        new.input.extend(i for i in node.input if re.sub(r"^\^", "", i) not in removed)
        after_removal.append(new)

    control_inputs, with_control_input, colocated = set(), set(), set()
    for node in after_removal:
        for i in node.input:
            if "^" in i:
                control_inputs.add(i.replace("^", ""))
                with_control_input.add(node.name)
        if "_class" in node.attr:
            colocated.update(_colocated_name(c) for c in node.attr["_class"].list.s)
    splice = {}
    for node in after_removal:
        if node.op in ("Identity", "StopGradient") and node.name not in protected:
            if node.name in colocated or node.name in with_control_input:
                continue
            splice[node.name] = node.input[0]
    splice = {k: v for k, v in splice.items() if k not in control_inputs}

    out = graph_pb2.GraphDef()
    for node in after_removal:
        if node.name in splice:
            continue
        new = node_def_pb2.NodeDef()
        new.CopyFrom(node)
        del new.input[:]
        for full in node.input:
            name = re.sub(r"^\^", "", full)
            while name in splice:
                full = splice[name]
                name = re.sub(r"^\^", "", full)
            new.input.append(full)
        out.node.append(new)
    return out


def _value_tensor(node, graph_def) -> str:
    """The tensor whose value the session gives for a variable node: a ref variable's own output;
    for a resource variable TF's `<name>/Read/ReadVariableOp:0` when the graph has it, else a
    ReadVariableOp of it without control inputs (tensorweave names it `<name>/read`)."""
    if node.op != "VarHandleOp":
        return node.name + ":0"
    tf_name = node.name + "/Read/ReadVariableOp"
    reads = [n.name for n in graph_def.node if n.op == "ReadVariableOp" and n.input
             and n.input[0] in (node.name, node.name + ":0") and not any(i.startswith("^") for i in n.input)]
    for name in (tf_name, node.name + "/read"):
        if name in reads:
            return name + ":0"
    return (reads[0] if reads else tf_name) + ":0"


class _Freezer:
    """TF 2.21's rewrite of a pruned graph: `originals` is read, `converted` (a copy) is written."""

    def __init__(self, graph_def):
        self.graph_def = graph_def
        self.originals = {n.name: n for n in copy.deepcopy(graph_def).node}
        self.converted = {n.name: n for n in graph_def.node}
        self.consumers = {}             # node name -> [(consumer name, input index)], data inputs only
        for n in graph_def.node:
            for index, inp in enumerate(n.input):
                if not inp.startswith("^"):
                    self.consumers.setdefault(_node_name(inp), []).append((n.name, index))

    def _propagate(self, name, dtype_enum) -> None:
        for consumer, index in self.consumers.get(name, ()):
            self.convert(consumer, index, dtype_enum)

    def freeze(self, name, value) -> None:
        """The variable node `name` becomes a Const of `value`; its consumers follow."""
        original = self.originals[name]
        dtype_attr = original.attr["dtype"]
        node = self.converted[name]
        node.Clear()
        node.name, node.op = name, "Const"
        node.attr["dtype"].CopyFrom(dtype_attr)
        node.attr["value"].tensor.CopyFrom(to_proto(np.asarray(value), dtypes.as_dtype(dtype_attr.type)))
        self._propagate(name, dtype_attr.type)

    def convert(self, name, index, dtype_enum) -> None:
        original, node = self.originals[name], self.converted[name]
        if original.op in _INTERMEDIATE_OPS:
            _update_dtype(node, "T", index, dtype_enum)
            if "_output_shapes" in node.attr:
                del node.attr["_output_shapes"]
            self._propagate(name, dtype_enum)
        elif original.op == "ReadVariableOp":
            node.Clear()
            node.name, node.op = name, "Identity"
            node.input.append(original.input[0])
            node.attr["T"].CopyFrom(original.attr["dtype"])
            if "_class" in original.attr:
                node.attr["_class"].CopyFrom(original.attr["_class"])
        elif original.op == "ResourceGather":
            if original.attr["batch_dims"].i != 0:
                raise ValueError("batch_dims must be 0 for freeze_graph, but got "
                                 f"node({name}).attr('batch_dims') = {original.attr['batch_dims'].i}.")
            axis_name = name + "/axis"
            index_type = original.attr["Tindices"]
            if axis_name not in self.converted:
                axis = self.graph_def.node.add(name=axis_name, op="Const")
                axis.attr["dtype"].CopyFrom(index_type)
                axis.attr["value"].tensor.CopyFrom(
                    to_proto(np.array(original.attr["batch_dims"].i), dtypes.as_dtype(index_type.type)))
                self.converted[axis_name] = axis
            node.Clear()
            node.name, node.op = name, "GatherV2"
            node.input.extend([original.input[0], original.input[1], axis_name])
            node.attr["Tparams"].CopyFrom(original.attr["dtype"])
            node.attr["Tindices"].CopyFrom(index_type)
            node.attr["Taxis"].CopyFrom(index_type)
            if "_class" in original.attr:
                node.attr["_class"].CopyFrom(original.attr["_class"])
        elif original.op == "ResourceGatherNd":
            node.Clear()
            node.name, node.op = name, "GatherNd"
            node.input.extend([original.input[0], original.input[1]])
            node.attr["Tparams"].CopyFrom(original.attr["dtype"])
            node.attr["Tindices"].CopyFrom(original.attr["Tindices"])
            if "_class" in original.attr:
                node.attr["_class"].CopyFrom(original.attr["_class"])
        # any other consumer (Merge, an assignment, ...) is left as it is, as TF leaves it


def _update_dtype(node, attr_name, index, dtype_enum) -> None:
    attr = node.attr[attr_name]
    if attr.HasField("list"):
        if len(attr.list.type) > index:
            attr.list.type[index] = dtype_enum
            return
        count = len(attr.list.type)
    elif attr.HasField("type"):
        if index == 0:
            attr.type = dtype_enum
            return
        count = 1
    else:
        count = 0
    raise ValueError(f"`index` {index:d} is out of range for node({node.name}).attr({attr_name}), which has "
                     f"{count:d} elements.")


@tf_export("graph_util.convert_variables_to_constants")
def convert_variables_to_constants(sess, input_graph_def, output_node_names, variable_names_whitelist=None,
                                   variable_names_blacklist=None):
    """tf.graph_util.convert_variables_to_constants(sess, input_graph_def, output_node_names,
    variable_names_whitelist=None, variable_names_blacklist=None): `input_graph_def` pruned to
    what `output_node_names` need (extract_sub_graph), with every variable node there
    (VariableV2, VarHandleOp) whose name is in the whitelist (when given) and not in the
    blacklist replaced by a Const of its value in `sess` (one `sess.run` for all), and its reads
    rewritten as TF does (ReadVariableOp -> Identity, ResourceGather -> GatherV2,
    ResourceGatherNd -> GatherNd). Returns the new GraphDef; the input is not changed."""
    inference = extract_sub_graph(input_graph_def, output_node_names)
    variables, fetches = [], []
    for node in inference.node:
        if node.op not in ("Variable", "VariableV2", "VarHandleOp"):
            continue
        if variable_names_whitelist is not None and node.name not in variable_names_whitelist:
            continue
        if variable_names_blacklist is not None and node.name in variable_names_blacklist:
            continue
        variables.append(node.name)
        fetches.append(_value_tensor(node, input_graph_def))
    values = sess.run(fetches) if fetches else []
    freezer = _Freezer(inference)
    for name, value in zip(variables, values):
        freezer.freeze(name, value)
    return inference
