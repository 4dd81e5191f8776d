"""tf.profiler: a graph's float operations and parameters, as TF 1's tfprof counts them.

`profile(graph, cmd='scope', options=...)` gives TF's GraphNodeProto tree: every op of the graph is
a node named by its full name, each name scope a parent node, under the root `_TFProfRoot`. An op's
`float_ops` come from TF's per-op-type formulas (tensorflow/python/profiler/internal/flops_registry.py
and the Conv2D/BiasAdd/... ones of nn_ops.py) over the graph's static shapes; an op whose shapes are
not fully known counts none (TF's rule). An op with a fully known `shape` attribute (variables,
placeholders) has that many `parameters`; the graph's trainable variables are also of the type
'_trainable_variables', which `ProfileOptionBuilder.trainable_variables_parameter()` accounts.
Which nodes are accounted, shown and totalled follows TF's scope view (tfprof_scope.cc). cmd='graph'
is TF's graph view (tfprof_graph.cc: a node's inputs are its children), cmd='op' its op view
(tfprof_op.cc: a MultiGraphNodeProto per op type, each shown type the child of the one before).
`Profiler` keeps a graph to show in each view; `advise` runs TF's advisor checkers over the same
statistics. `write_op_log` writes the same per-op statistics as TF's `tfprof_log` file.

Only the static, graph-level statistics exist: tensorweave's RunMetadata records no output
shapes, memory or per-op times for tfprof, so `run_meta` completes no shapes and time and memory
figures are zero.
"""
from __future__ import annotations

import copy
import os
import re
import sys
from typing import Optional

from tensorweave.framework.api import GraphKeys
from tensorweave.framework.errors import InvalidArgumentError
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import AdviceProto, GraphNodeProto, MultiGraphNodeProto, OpLogProto

TRAINABLE_VARIABLES = "_trainable_variables"   # the op type tfprof gives trainable variables
_ROOT = "_TFProfRoot"
_SCOPE_PARENT = "_TFProfScopeParent"
_GRAPH_PARENT = "_TFGraphParent"


@tf_export("profiler.ProfileOptionBuilder")
class ProfileOptionBuilder:
    """tf.profiler.ProfileOptionBuilder(options=None): builds the options dict of profile(); the
    static methods give TF's three common option sets."""

    def __init__(self, options: Optional[dict] = None):
        self._options = copy.deepcopy(options) if options is not None else _options(
            max_depth=100, order_by="name", account_displayed_op_only=False, select=["micros"])

    @staticmethod
    def trainable_variables_parameter() -> dict:
        """Parameters of the trainable variables, by name scope."""
        return _options(account_type_regexes=[TRAINABLE_VARIABLES], select=["params"])

    @staticmethod
    def float_operation() -> dict:
        """The float operations of every op that has some, largest first."""
        return _options(min_float_ops=1, order_by="float_ops", select=["float_ops"])

    @staticmethod
    def time_and_memory(min_micros=1, min_bytes=1, min_accelerator_micros=0, min_cpu_micros=0, min_peak_bytes=0,
                        min_residual_bytes=0, min_output_bytes=0) -> dict:
        """Execution time and memory of each op (zero in tensorweave: see the module docstring)."""
        return _options(min_bytes=min_bytes, min_peak_bytes=min_peak_bytes, min_residual_bytes=min_residual_bytes,
                        min_output_bytes=min_output_bytes, min_micros=min_micros,
                        min_accelerator_micros=min_accelerator_micros, min_cpu_micros=min_cpu_micros,
                        order_by="micros", select=["micros", "bytes"])

    def build(self) -> dict:
        return copy.deepcopy(self._options)

    def _set(self, **values) -> "ProfileOptionBuilder":
        self._options.update(copy.deepcopy(values))
        return self

    def with_max_depth(self, max_depth):
        return self._set(max_depth=max_depth)

    def with_min_memory(self, min_bytes=0, min_peak_bytes=0, min_residual_bytes=0, min_output_bytes=0):
        return self._set(min_bytes=min_bytes, min_peak_bytes=min_peak_bytes, min_residual_bytes=min_residual_bytes,
                         min_output_bytes=min_output_bytes)

    def with_min_execution_time(self, min_micros=0, min_accelerator_micros=0, min_cpu_micros=0):
        return self._set(min_micros=min_micros, min_accelerator_micros=min_accelerator_micros,
                         min_cpu_micros=min_cpu_micros)

    def with_min_parameters(self, min_params):
        return self._set(min_params=min_params)

    def with_min_occurrence(self, min_occurrence):
        return self._set(min_occurrence=min_occurrence)

    def with_min_float_operations(self, min_float_ops):
        return self._set(min_float_ops=min_float_ops)

    def with_accounted_types(self, account_type_regexes):
        return self._set(account_type_regexes=account_type_regexes)

    def with_node_names(self, start_name_regexes=None, show_name_regexes=None, hide_name_regexes=None,
                        trim_name_regexes=None):
        given = dict(start_name_regexes=start_name_regexes, show_name_regexes=show_name_regexes,
                     hide_name_regexes=hide_name_regexes, trim_name_regexes=trim_name_regexes)
        return self._set(**{k: v for k, v in given.items() if v is not None})

    def account_displayed_op_only(self, is_true):
        return self._set(account_displayed_op_only=is_true)

    def with_empty_output(self):
        return self._set(output="none")

    def with_stdout_output(self):
        return self._set(output="stdout")

    def with_file_output(self, outfile):
        return self._set(output=f"file:outfile={outfile}")

    def with_timeline_output(self, timeline_file):
        return self._set(output=f"timeline:outfile={timeline_file}")

    def with_pprof_output(self, pprof_file):
        return self._set(output=f"pprof:outfile={pprof_file}")

    def order_by(self, attribute):
        return self._set(order_by=attribute)

    def select(self, attributes):
        return self._set(select=attributes)

    def with_step(self, step):
        return self._set(step=step)


def _options(**overrides) -> dict:
    """TF's option dict: its common defaults (max_depth 10000, everything shown and accounted,
    only displayed ops accounted, to stdout) with `overrides`."""
    options = {"max_depth": 10000, "min_bytes": 0, "min_peak_bytes": 0, "min_residual_bytes": 0,
               "min_output_bytes": 0, "min_micros": 0, "min_accelerator_micros": 0, "min_cpu_micros": 0,
               "min_params": 0, "min_float_ops": 0, "min_occurrence": 0, "order_by": "name",
               "account_type_regexes": [".*"], "start_name_regexes": [".*"], "trim_name_regexes": [],
               "show_name_regexes": [".*"], "hide_name_regexes": [], "account_displayed_op_only": True,
               "select": ["params"], "step": -1, "output": "stdout"}
    options.update(overrides)
    return options


# -- TF's float-operation formulas, by op type -----------------------------------------------------
def _elements(tensor) -> int:
    """The tensor's number of elements; ValueError when its static shape is not fully known."""
    shape = tensor.shape
    if not shape.is_fully_defined():
        raise ValueError(f"Shape {shape} of {tensor.name} is not fully defined")
    return int(shape.num_elements())


def _dims(tensor) -> list:
    _elements(tensor)
    return tensor.shape.as_list()


def _attr(op, name, default=None):
    value = op.attrs.get(name, default)
    return value.decode() if isinstance(value, bytes) else value


def _nhwc(op) -> None:
    if _attr(op, "data_format", "NHWC") != "NHWC":
        raise ValueError("Only NHWC format is supported in flops computations")


def _product(values) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


def _unary(per_element):
    return lambda op: _elements(op.inputs[0]) * per_element


def _binary(per_element):
    return lambda op: _elements(op.outputs[0]) * per_element


def _reduction(reduce_flops, finalize_flops):
    return lambda op: (_elements(op.inputs[0]) * reduce_flops
                       + _elements(op.outputs[0]) * (finalize_flops - reduce_flops))


def _pool(op) -> int:
    _nhwc(op)
    return _product(_attr(op, "ksize")) * _elements(op.outputs[0])


def _avg_pool_grad(op) -> int:
    _nhwc(op)
    return _product(_attr(op, "ksize")) * _elements(op.inputs[1]) * 2


def _max_pool_grad(op) -> int:
    _nhwc(op)
    orig_out = _elements(op.inputs[1])
    return _product(_attr(op, "ksize")) * orig_out + orig_out


def _conv_backprop_input(op) -> int:
    _nhwc(op)
    strides = _attr(op, "strides")
    out = _dims(op.outputs[0])
    return int(2 * _elements(op.outputs[0]) * _elements(op.inputs[1]) / (out[-1] * strides[1] * strides[2]))


def _conv_backprop_filter(op) -> int:
    _nhwc(op)
    strides = _attr(op, "strides")
    image = _dims(op.inputs[0])
    return int(2 * _elements(op.inputs[0]) * _elements(op.outputs[0]) / (image[-1] * strides[1] * strides[2]))


def _add_n(op) -> int:
    n_inputs = len(op.inputs) + len(op.control_inputs)   # TF counts the NodeDef's inputs, control ones too
    return _elements(op.inputs[0]) * (n_inputs - 1) if op.inputs else 0


def _mat_mul(batched: bool):
    def flops(op):
        a = _dims(op.inputs[0])
        if batched:
            k = a[-2] if _attr(op, "adj_x", _attr(op, "transpose_a", False)) else a[-1]
        else:
            k = a[0] if _attr(op, "transpose_a", False) else a[1]
        return k * _elements(op.outputs[0]) * 2
    return flops


def _conv(per_filter_depth: bool):
    """Conv2D: output elements * filter height * width * in depth * 2; DepthwiseConv2dNative and
    Dilation2D leave the depth out."""
    def flops(op):
        _elements(op.inputs[0])
        f = _dims(op.inputs[1])
        return _elements(op.outputs[0]) * f[0] * f[1] * (f[2] if per_filter_depth else 1) * 2
    return flops


FLOPS = {
    **{t: _unary(1) for t in ("Reciprocal", "Square", "Log", "Neg", "AssignSub", "AssignAdd")},
    "Rsqrt": _unary(2), "Softmax": _unary(5), "L2Loss": lambda op: _elements(op.inputs[0]) * 3 - 1,
    **{t: _binary(1) for t in ("Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Pow", "GreaterEqual",
                               "Greater", "LessEqual", "Less", "Equal", "NotEqual")},
    "RsqrtGrad": _binary(4), "SquaredDifference": _binary(2),
    "Mean": _reduction(1, 1), **{t: _reduction(1, 0) for t in ("Sum", "ArgMax", "ArgMin", "BiasAddGrad")},
    "AvgPool": _pool, "MaxPool": _pool, "AvgPoolGrad": _avg_pool_grad, "MaxPoolGrad": _max_pool_grad,
    "Conv2DBackpropInput": _conv_backprop_input, "Conv2DBackpropFilter": _conv_backprop_filter,
    "AddN": _add_n, "MatMul": _mat_mul(False),
    **{t: _mat_mul(True) for t in ("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")},
    "Conv2D": _conv(True), "DepthwiseConv2dNative": _conv(False), "Dilation2D": _conv(False),
    "BiasAdd": lambda op: _elements(op.inputs[0]),
}


def float_ops(op) -> Optional[int]:
    """The op's float operations by TF's formula for its type; None when its type has none or its
    shapes are not fully known."""
    formula = FLOPS.get(op.type)
    if formula is None:
        return None
    try:
        return int(formula(op))
    except (ValueError, TypeError, IndexError):
        return None


# -- the scope view ----------------------------------------------------------------------------------
def _tfprof_dims(shape) -> list:
    """A static shape as tfprof keeps it: a scalar as [1], an unknown dimension as -1, an unknown
    rank as []."""
    if shape.ndims is None:
        return []
    return [-1 if d is None else d for d in shape.as_list()] or [1]


class _Node:
    """One node of the scope tree: an op, or a name scope's parent node."""

    def __init__(self, name: str, op=None, types=(), flops: int = 0):
        self.name, self.op, self.types, self.flops = name, op, set(types), flops
        self.children: list = []
        self.show_children: list = []
        self.account = False
        self.proto = GraphNodeProto(name=name)

    def reinit(self) -> None:
        self.proto = GraphNodeProto(name=self.name, float_ops=self.flops, parameters=self.parameters())
        for i, t in enumerate(self.op.inputs if self.op is not None else ()):
            dims = _tfprof_dims(t.shape)
            shape = self.proto.input_shapes[i]
            shape.unknown_rank = not dims
            for d in dims:
                shape.dim.add(size=d)

    def parameters(self) -> int:
        shape = self.op.attrs.get("shape") if self.op is not None else None
        dims = _tfprof_dims(shape) if hasattr(shape, "as_list") else []
        return _product(dims) if dims and min(dims) >= 0 else 0

    def reset_totals(self) -> None:
        for field in ("total_definition_count", "total_parameters", "total_float_ops"):
            self.proto.ClearField(field)

    def add_self(self) -> None:
        self.proto.total_definition_count += 1
        self.proto.total_parameters += self.proto.parameters
        self.proto.total_float_ops += self.proto.float_ops

    def aggregate(self, child: "_Node") -> None:
        self.proto.total_definition_count += child.proto.total_definition_count
        self.proto.total_parameters += child.proto.total_parameters
        self.proto.total_float_ops += child.proto.total_float_ops


def _merged_op_log(graph, op_log=None) -> OpLogProto:
    """TF's merge_default_with_oplog: an entry of float_ops for each op that has some (TF's
    formulas) and the type '_trainable_variables' for each trainable variable, merged into a copy
    of `op_log` (whose types are kept and whose float_ops win unless zero). No code traces:
    tensorweave's ops do not keep the Python stack that built them."""
    default = OpLogProto()
    logged: dict = {}
    for op in graph.get_operations():
        flops = float_ops(op)
        if flops:
            logged[op.name] = default.log_entries.add(name=op.name, float_ops=flops)
    for v in graph.get_collection(GraphKeys.TRAINABLE_VARIABLES):
        if v.op.name not in logged:
            logged[v.op.name] = default.log_entries.add(name=v.op.name)
        logged[v.op.name].types.append(TRAINABLE_VARIABLES)
    if op_log is None:
        return default
    merged = OpLogProto()
    merged.CopyFrom(op_log)
    given = {e.name: e for e in merged.log_entries}
    for name, entry in logged.items():
        if name not in given:
            merged.log_entries.add().CopyFrom(entry)
            continue
        given[name].types.extend(entry.types)
        if entry.float_ops > 0 and given[name].float_ops == 0:
            given[name].float_ops = entry.float_ops
    return merged


def _graph_nodes(graph, op_log) -> dict:
    """{op name: _Node} of every op of the graph, its types the op's and op_log's."""
    logged = {e.name: e for e in _merged_op_log(graph, op_log).log_entries}
    nodes: dict = {}
    for op in graph.get_operations():
        entry = logged.get(op.name)
        types = {op.type} | set(entry.types if entry is not None else ())
        nodes[op.name] = _Node(op.name, op, types, entry.float_ops if entry is not None else 0)
    return nodes


def _scope_tree(nodes: dict) -> _Node:
    """The scope view's tree: each op under its name scope's parent node (children by name)."""
    nodes = dict(nodes)
    for name in list(nodes):
        while "/" in name:
            name = name.rpartition("/")[0]
            nodes.setdefault(name, _Node(name, types={_SCOPE_PARENT}))
    root = _Node(_ROOT, types={_SCOPE_PARENT})
    for name in sorted(nodes):   # TF's std::map: children in name order
        parent = nodes[name.rpartition("/")[0]] if "/" in name else root
        parent.children.append(nodes[name])
    return root


def _dataflow_tree(nodes: dict) -> _Node:
    """The graph view's tree (tfprof_graph.cc): a node's children are its inputs (control ones
    too) in input order; the root's, by name, the nodes no other node takes as input."""
    inputs = set()
    for node in nodes.values():
        op = node.op
        node.children = [nodes[t.op.name] for t in op.inputs] + [nodes[c.name] for c in op.control_inputs]
        inputs.update(c.name for c in node.children)
    root = _Node(_ROOT, types={_GRAPH_PARENT})
    root.children = [nodes[name] for name in sorted(nodes) if name not in inputs]
    return root


def _full_match(regexes, text: str) -> bool:
    return any(re.fullmatch(r, text) for r in regexes)


def _reaccount(node: _Node, opts: dict) -> bool:
    """Fresh statistics for the node; whether one of its types is accounted."""
    node.reinit()
    return opts["account_type_regexes"] == [".*"] or any(_full_match(opts["account_type_regexes"], t)
                                                         for t in node.types)


def _keep(node: _Node, children: list) -> _Node:
    node.reset_totals()
    node.add_self()
    node.show_children = children
    for c in children:
        node.aggregate(c)
    return node


def _account(nodes: list, opts: dict) -> list:
    """The scope view's accounting: a scope is kept when it or a descendant is accounted."""
    kept = []
    for node in nodes:
        kept_children = _account(node.children, opts)
        node.account = _reaccount(node, opts)
        if node.account or kept_children:
            kept.append(_keep(node, kept_children))
    return kept


def _account_dataflow(nodes: list, opts: dict, visits: set) -> list:
    """The graph view's accounting (each node once, depth first): an unaccounted node hands its
    accounted inputs to its consumer."""
    kept = []
    for node in nodes:
        if node.name in visits:
            continue
        visits.add(node.name)
        kept_children = _account_dataflow(node.children, opts, visits)
        node.account = _reaccount(node, opts)
        if node.account:
            kept.append(_keep(node, kept_children))
        else:
            kept.extend(kept_children)
    return kept


def _should_show(node: _Node, opts: dict, depth: int) -> bool:
    if node.name == _ROOT:
        return True
    p = node.proto
    if (p.parameters < opts["min_params"] or p.float_ops < opts["min_float_ops"] or depth > opts["max_depth"]
            or 0 < opts["min_bytes"] or 0 < opts["min_micros"] or 0 < opts["min_occurrence"]
            or 0 < opts.get("min_peak_bytes", 0) or 0 < opts.get("min_residual_bytes", 0)
            or 0 < opts.get("min_output_bytes", 0) or 0 < opts.get("min_accelerator_micros", 0)
            or 0 < opts.get("min_cpu_micros", 0)):
        return False
    if opts["show_name_regexes"] != [".*"] and not _full_match(opts["show_name_regexes"], node.name):
        return False
    return not _full_match(opts["hide_name_regexes"], node.name)


_ORDER_KEYS = {"params": "total_parameters", "float_ops": "total_float_ops", "occurrence": "total_run_count"}


def _sorted(nodes: list, opts: dict) -> list:
    """TF's SortNodes: a stable sort by name, or largest first by the order_by total (the time
    and memory totals are all zero here, so those keep the order)."""
    if opts["order_by"] == "name":
        return sorted(nodes, key=lambda n: n.name)
    key = _ORDER_KEYS.get(opts["order_by"])
    return list(nodes) if key is None else sorted(nodes, key=lambda n: -getattr(n.proto, key))


def _print_tree(nodes: list, opts: dict, depth: int, visits: Optional[set] = None) -> list:
    """The shown nodes among `nodes` (a hidden node's shown descendants take its place), their
    totals redone over what is shown when account_displayed_op_only. `visits`: the graph view's
    set of nodes already printed (each node once)."""
    shown = []
    for node in nodes:
        if visits is not None:
            if node.name in visits:
                continue
            visits.add(node.name)
        show = _should_show(node, opts, depth)
        children = []
        if not _full_match(opts["trim_name_regexes"], node.name) and depth <= opts["max_depth"]:
            children = _print_tree(node.show_children, opts, depth + 1, visits)
        if not show:
            shown.extend(children)
            continue
        if opts["account_displayed_op_only"]:
            node.reset_totals()
            node.add_self()
        node.show_children = _sorted(children, opts)
        for c in node.show_children:
            if opts["account_displayed_op_only"]:
                node.aggregate(c)
        shown.append(node)
    return shown


def _search_root(nodes: list, regexes: list, visits: Optional[set] = None) -> list:
    found = []
    for node in nodes:
        if visits is not None:
            if node.name in visits:
                continue
            visits.add(node.name)
        if _full_match(regexes, node.name):
            found.append(node)
        else:
            found.extend(_search_root(node.show_children, regexes, visits))
    return found


def _format_number(n: int) -> str:
    for limit, suffix in ((1e9, "b"), (1e6, "m"), (1e3, "k")):
        if n >= limit:
            return f"{n / limit:.2f}{suffix}"
    return str(n)


def _format(node: _Node, opts: dict, indent: int) -> str:
    info = []
    own = (lambda v: _format_number(v)) if node.account else (lambda v: "--")
    if "params" in opts["select"]:
        shape = node.op.attrs.get("shape") if node.op is not None else None
        if node.proto.parameters and shape is not None:
            info.append("x".join(str(d) for d in shape.as_list()))
        info.append(f"{own(node.proto.parameters)}/{_format_number(node.proto.total_parameters)} params")
    if "float_ops" in opts["select"]:
        info.append(f"{own(node.proto.float_ops)}/{_format_number(node.proto.total_float_ops)} flops")
    lines = [f"{' ' * indent}{node.name} ({', '.join(info)})"]
    return "\n".join(lines + [_format(c, opts, indent + 2) for c in node.show_children])


def _to_proto(node: _Node, proto) -> None:
    for child in node.show_children:
        out = proto.children.add()
        out.MergeFrom(child.proto)
        _to_proto(child, out)


def _legend(opts: dict) -> str:
    legend = [name for key, name in (("params", "# parameters"), ("float_ops", "# float_ops")) if key in opts["select"]]
    return f"node name | {' | '.join(legend)}\n"


def _tree_view(nodes: dict, opts: dict, cmd: str):
    """The scope or graph view (tfprof_scope.cc, tfprof_graph.cc): (GraphNodeProto, report)."""
    dataflow = cmd == "graph"
    root = _dataflow_tree(nodes) if dataflow else _scope_tree(nodes)
    roots = _account_dataflow(root.children, opts, set()) if dataflow else _account(root.children, opts)
    root.reinit()
    if opts["start_name_regexes"] != [".*"]:
        roots = _search_root(roots, opts["start_name_regexes"], set() if dataflow else None)
    root.show_children = roots
    for r in roots:
        root.aggregate(r)
    root = _print_tree([root], opts, 1, set() if dataflow else None)[0]
    result = GraphNodeProto()
    result.MergeFrom(root.proto)
    _to_proto(root, result)
    return result, _legend(opts) + _format(root, opts, 0) + "\n"


# -- the op view ---------------------------------------------------------------------------------------
class _OpType:
    """One op type of the op view (TF's TFMultiGraphNode): the graph's ops of that type."""

    def __init__(self, name: str, members: list):
        self.name, self.members = name, sorted(members, key=lambda n: n.name)
        self.account = False
        self.proto = MultiGraphNodeProto(name=name)

    def reinit(self, opts: dict) -> bool:
        """This type's statistics over its accounted ops (all when accounting '.*'); whether any is."""
        regexes = opts["account_type_regexes"]
        picked = self.members if regexes == [".*"] else [
            n for n in self.members if any(_full_match(regexes, t) for t in n.types)]
        self.proto = MultiGraphNodeProto(name=self.name)
        for n in picked:
            n.reinit()
            n.reset_totals()
            n.add_self()
            self.proto.graph_nodes.add().CopyFrom(n.proto)
            self.proto.parameters += n.proto.parameters
            self.proto.float_ops += n.proto.float_ops
        return bool(picked) or regexes == [".*"]

    def reset_totals(self) -> None:
        for field in ("total_parameters", "total_float_ops"):
            self.proto.ClearField(field)

    def add_self(self) -> None:
        self.proto.total_parameters += self.proto.parameters
        self.proto.total_float_ops += self.proto.float_ops

    def aggregate(self, other) -> None:
        self.proto.total_parameters += other.proto.total_parameters
        self.proto.total_float_ops += other.proto.total_float_ops


def _should_show_type(node: _OpType, opts: dict, depth: int) -> bool:
    """TFMultiShow::ShouldShow: by the totals down the chain, the op type's name and its number of ops."""
    p = node.proto
    if (p.total_parameters < opts["min_params"] or p.total_float_ops < opts["min_float_ops"]
            or depth > opts["max_depth"] or opts["min_occurrence"] > len(p.graph_nodes)
            or any(opts.get(k, 0) > 0 for k in ("min_bytes", "min_peak_bytes", "min_residual_bytes",
                                                   "min_output_bytes", "min_micros", "min_accelerator_micros",
                                                   "min_cpu_micros"))):
        return False
    if opts["show_name_regexes"] != [".*"] and not _full_match(opts["show_name_regexes"], node.name):
        return False
    return not _full_match(opts["hide_name_regexes"], node.name)


def _chain_totals(chain: list) -> None:
    """Each op type's totals: its own and those of every type after it (TF's op view chain)."""
    following = None
    for node in reversed(chain):
        node.reset_totals()
        node.add_self()
        if following is not None:
            node.aggregate(following)
        following = node


def _op_view(nodes: dict, opts: dict):
    """The op view (tfprof_op.cc): (MultiGraphNodeProto, report). One node per op type, ordered
    by `order_by`; each shown type is the child of the one before it, totals summing down the
    chain; a type's graph_nodes are its accounted ops."""
    by_type: dict = {}
    for node in nodes.values():
        by_type.setdefault(node.op.type, []).append(node)
    types = [_OpType(t, members) for t, members in sorted(by_type.items())]
    for t in types:
        t.account = t.reinit(opts)
        t.reset_totals()
        t.add_self()
    accounted = [t for t in _sorted(types, opts) if t.account]
    _chain_totals(accounted)
    root = MultiGraphNodeProto(name=_ROOT)
    start = 0
    if opts["start_name_regexes"] not in ([], [".*"]):
        start = next((i for i, t in enumerate(accounted) if _full_match(opts["start_name_regexes"], t.name)),
                     len(accounted))
    shown = []
    for depth, t in enumerate(accounted[start:]):
        if _full_match(opts["trim_name_regexes"], t.name) or depth > opts["max_depth"]:
            break
        if _should_show_type(t, opts, depth):
            shown.append(t)
    chain = shown if opts["account_displayed_op_only"] else accounted
    if opts["account_displayed_op_only"]:
        _chain_totals(shown)
    if chain:
        root.total_parameters, root.total_float_ops = chain[0].proto.total_parameters, chain[0].proto.total_float_ops
    report = _legend(opts) + "".join(_format_type(t, root, opts) for t in shown)
    parent = root
    for t in shown:
        child = parent.children.add()
        child.CopyFrom(t.proto)
        child.ClearField("children")
        parent = child
    return root, report


def _format_type(node: _OpType, root, opts: dict) -> str:
    """An op type's line of the op view's report: its own count with its share of the whole,
    accumulated down the chain and its own."""
    info = []
    for key, own, total, root_total, unit in (
            ("params", "parameters", "total_parameters", root.total_parameters, "params"),
            ("float_ops", "float_ops", "total_float_ops", root.total_float_ops, "float_ops")):
        if key in opts["select"]:
            value, accumulated = getattr(node.proto, own), getattr(node.proto, total)
            shares = (100.0 * accumulated / root_total, 100.0 * value / root_total) if accumulated > 0 else (0.0, 0.0)
            text = f"{_format_number(value)} {unit} ({shares[0]:.2f}%, {shares[1]:.2f}%)"
            info.append(f"{text:>30}")
    return f"{node.name:<25}{', '.join(info)}\n"


def _write_report(report: str, output: str) -> None:
    if output == "stdout":
        sys.stdout.write(report)
    elif output.startswith("file:outfile="):
        with open(output.partition("=")[2], "w") as f:
            f.write(report)
    elif output != "none":
        raise InvalidArgumentError(None, None, f"profile output {output!r} is not supported by tensorweave: use "
                                               "'stdout', 'none' or 'file:outfile=PATH'")


def _show(graph, op_log, cmd: str, options):
    """The `cmd` view ('scope', 'graph' or 'op') of the graph's statistics under `options`,
    its report written where options['output'] says."""
    if cmd not in ("scope", "graph", "op"):
        raise InvalidArgumentError(None, None, f"profile cmd {cmd!r} is not supported by tensorweave: only "
                                               "'scope', 'graph' and 'op' are ('code' needs the Python stack "
                                               "that built each op, which tensorweave does not keep)")
    opts = {**_options(), **(ProfileOptionBuilder.trainable_variables_parameter() if options is None
                              else dict(options))}
    nodes = _graph_nodes(graph if graph is not None else get_default_graph(), op_log)
    result, report = _op_view(nodes, opts) if cmd == "op" else _tree_view(nodes, opts, cmd)
    _write_report(report, opts["output"])
    return result


@tf_export("profiler.profile")
def profile(graph=None, run_meta=None, op_log=None, cmd: str = "scope", options=None):
    """tf.profiler.profile(graph=None, run_meta=None, op_log=None, cmd='scope', options=...):
    the graph's (default: the default graph's) statistics, printed as `options['output']` says
    ('stdout', 'none', 'file:outfile=PATH'). cmd 'scope' (by name scope) and 'graph' (by data
    flow: each node's inputs are its children) give a GraphNodeProto tree under `_TFProfRoot`,
    whose total_float_ops and total_parameters sum the accounted nodes; 'op' (by op type) a
    MultiGraphNodeProto. `options` defaults to
    ProfileOptionBuilder.trainable_variables_parameter(); `op_log` (a tf.profiler.OpLogProto)
    adds op types and float_ops to the graph's ops by name."""
    return _show(graph, op_log, cmd, options)


@tf_export("profiler.Profiler")
class Profiler:
    """tf.profiler.Profiler(graph=None, op_log=None): profiles one graph (default: the default
    graph) in several views, over the steps added with add_step. The statistics are the static
    ones profile() gives: tensorweave's RunMetadata holds no per-op times, memory or shapes for
    tfprof, so a step adds no time or memory figures."""

    def __init__(self, graph=None, op_log=None):
        self._graph = graph if graph is not None else get_default_graph()
        self._op_log = op_log
        self._steps: dict = {}

    def add_step(self, step, run_meta) -> None:
        """Adds the run of step `step` (its RunMetadata): the steps the options' `step` can name."""
        self._steps[int(step)] = run_meta

    def profile_name_scope(self, options):
        """The scope view: a GraphNodeProto tree by name scope."""
        return _show(self._graph, self._op_log, "scope", options)

    def profile_graph(self, options):
        """The graph view: a GraphNodeProto tree by data flow (a node's inputs are its children)."""
        return _show(self._graph, self._op_log, "graph", options)

    def profile_operations(self, options):
        """The op view: a MultiGraphNodeProto chain of op types (MatMul, Conv2D, ...)."""
        return _show(self._graph, self._op_log, "op", options)

    def profile_python(self, options):
        """The code view: not available (InvalidArgumentError): it groups ops by the Python stack
        that built them, which tensorweave does not keep."""
        return _show(self._graph, self._op_log, "code", options)

    def advise(self, options):
        """The AdviceProto of the checkers named in `options` ({checker name: {}}; see advise())."""
        return _advise(self._graph, options, have_steps=bool(self._steps))


ALL_ADVICE = {"ExpensiveOperationChecker": {}, "AcceleratorUtilizationChecker": {}, "JobChecker": {},
              "OperationChecker": {}}


def _advise(graph, options, have_steps: bool):
    """TF's Advisor over static statistics. AcceleratorUtilizationChecker: no accelerator runs
    kernels here, so no report. OperationChecker: "Maybe use faster FusedBatchNorm instead of
    BatchNorm" when an op is named *BatchNorm* and none is a FusedBatchNorm (NHWC advice concerns
    GPU ops). ExpensiveOperationChecker: its views show ops by time, zero here, so no report.
    JobChecker is Google-internal (TF's open-source build reports nothing for it either)."""
    result = AdviceProto()
    options = options or {}
    ops = graph.get_operations()
    if "AcceleratorUtilizationChecker" in options:
        result.checkers["AcceleratorUtilizationChecker"].SetInParent()
    if "OperationChecker" in options:
        checker = result.checkers["OperationChecker"]
        checker.SetInParent()
        if any("BatchNorm" in op.name for op in ops) and not any(op.type == "FusedBatchNorm" for op in ops):
            checker.reports.append("Maybe use faster FusedBatchNorm instead of BatchNorm")
    if "ExpensiveOperationChecker" in options:
        result.checkers["ExpensiveOperationChecker"].SetInParent()
        if not have_steps:
            sys.stderr.write("Missing RunMetadata info. Skip ExpensiveOperationChecker\n"
                             "Missing run_meta for ExpensiveOperationChecker\n")
        sys.stderr.write("Missing op_log (code traces) for ExpensiveOperationChecker\n")
    for name in sorted(result.checkers):
        sys.stdout.write(f"\n{name}:\n" + "".join(f"{r}\n" for r in result.checkers[name].reports))
    return result


@tf_export("profiler.advise")
def advise(graph=None, run_meta=None, options=None):
    """tf.profiler.advise(graph=None, run_meta=None, options=ALL_ADVICE): runs the advisor's
    checkers (all by default) over the graph (default: the default graph), printing and
    returning their reports as an AdviceProto {checker: reports}."""
    graph = graph if graph is not None else get_default_graph()
    return _advise(graph, ALL_ADVICE if options is None else options, have_steps=run_meta is not None)


@tf_export("profiler.write_op_log")
def write_op_log(graph, log_dir, op_log=None, run_meta=None, add_trace=True) -> None:
    """tf.profiler.write_op_log(graph, log_dir, op_log=None, run_meta=None, add_trace=True): writes
    `log_dir/tfprof_log`, a tf.profiler.OpLogProto of the graph's (default: the default graph's)
    float operations and trainable variables merged into `op_log`, which TF's profiler tools read.
    (run_meta and add_trace change nothing: no runtime shapes or code traces are recorded.)"""
    graph = graph if graph is not None else get_default_graph()
    with open(os.path.join(os.fspath(log_dir), "tfprof_log"), "wb") as f:
        f.write(_merged_op_log(graph, op_log).SerializeToString())
