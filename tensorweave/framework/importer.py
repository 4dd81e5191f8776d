"""Adding recorded operations back into a Graph, all or nothing (what tf.import_graph_def, and
through it import_meta_graph, stands on).

A record is one node: type, name, inputs ("op:1", "^op"), device and attributes as graph
values (DType, TensorShape, arrays, functions). Each gets its outputs from the op's shape
function, after its input dtypes are checked, as Graph.create_op does; names get `import_scope/`
in front and are marked used, so ops created later never collide with them.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Callable, Optional

from tensorweave.framework import dtypes
from tensorweave.framework.graph import Graph, Operation, Tensor
from tensorweave.framework.graph_def import parse_input
from tensorweave.framework.op_def_registry import lookup
from tensorweave.framework.shapes import as_shape


@dataclass(frozen=True)
class OpRecord:
    """One node to add: its outputs come from the op's shape function, as Graph.create_op's do."""
    op: str
    name: str
    inputs: tuple = ()
    device: str = ""
    attrs: dict = field(default_factory=dict)


def prefixed(name: str, import_scope: Optional[str]) -> str:
    return f"{import_scope}/{name}" if import_scope else name


def _mark_used(graph: Graph, name: str) -> None:
    parts = name.split("/")
    for i in range(1, len(parts) + 1):
        key = "/".join(parts[:i]).lower()
        graph._names_in_use.setdefault(key, 1)


def _inferred_outputs(op: Operation) -> list:
    """The op's outputs by its shape function, with Graph.create_op's errors."""
    opdef = lookup(op.type)
    opdef.check_input_dtypes(op._inputs)
    try:
        return opdef.infer(op)
    except ValueError as e:
        shapes = ", ".join(str(t.shape) for t in op._inputs)
        raise ValueError(f"{e} for '{op.name}' (op: '{op.type}') with input shapes: {shapes}.") from None


def _unique_names(graph: Graph, records: list, import_scope: Optional[str]) -> dict:
    """{recorded name: its name in `graph`}: the prefixed name, or TF's importer's `name_1`,
    `name_2`, ... when the graph holds it (as an op or a scope) or another imported op takes it."""
    taken = set(graph._ops_by_name) | set(graph._names_in_use)       # _names_in_use: lower case
    wanted = {prefixed(r.name, import_scope) for r in records}
    names = {}
    for r in records:
        name = prefixed(r.name, import_scope)
        wanted.discard(name)
        candidate, i = name, 1
        while candidate in taken or candidate.lower() in taken or candidate in wanted:
            candidate, i = f"{name}_{i}", i + 1
        taken.add(candidate)
        names[r.name] = candidate
    return names


def import_ops(graph: Graph, records: list, import_scope: Optional[str] = None, input_map: Optional[dict] = None,
               clear_devices: bool = False, *, uniquify_names: bool = False,
               check_mapped_dtypes: Optional[Callable] = None) -> dict:
    """Adds `records` (in an order where inputs come first, but for the back edges of TF 1 while
    loops: an input naming a later record is added to its op once that record's op exists, after
    the op's shape function ran without it) to `graph`; returns {recorded name:
    new Operation}. `input_map` maps recorded tensor names ("x:0") to tensors of `graph`, and
    control inputs ("^x") to ops of `graph`. As tf.import_graph_def does: `uniquify_names` renames
    an op whose name the graph holds (`x_1`) instead of refusing it; `check_mapped_dtypes`, a
    function naming a DType (TF's DataTypeString), refuses a mapped tensor whose dtype differs from
    the one it replaces (an earlier record's output)."""
    input_map = {k if ":" in k or k.startswith("^") else k + ":0": v for k, v in (input_map or {}).items()}
    created: dict = {}

    def source(inp: str, consumer: str, index: int):
        op_name, idx, is_ctrl = parse_input(inp)
        if not is_ctrl and f"{op_name}:{idx}" in input_map:
            value = input_map[f"{op_name}:{idx}"]
            replaced = created.get(op_name)
            if (check_mapped_dtypes and replaced is not None and idx < len(replaced._outputs)
                    and isinstance(value, Tensor) and value.dtype != replaced._outputs[idx].dtype):
                raise ValueError(f"Input {index} of node {consumer} was passed {check_mapped_dtypes(value.dtype)} "
                                 f"from {value.name} incompatible with expected "
                                 f"{check_mapped_dtypes(replaced._outputs[idx].dtype)}.")
            return value, False
        if is_ctrl and "^" + op_name in input_map:
            value = input_map["^" + op_name]
            return (value.op if isinstance(value, Tensor) else value), True
        op = created.get(op_name)
        if op is None:
            raise ValueError(f"Imported op input '{inp}' names an op that is not in the imported graph "
                             "(or comes after its consumer)")
        return (op if is_ctrl else op._outputs[idx]), is_ctrl

    later = {r.name for r in records}
    back_edges = []   # (op, input index, input name): a TF 1 loop's NextIteration into its Merge
    with all_or_nothing(graph):
        renamed = _unique_names(graph, records, import_scope) if uniquify_names else {}
        for r in records:
            name = renamed.get(r.name) or prefixed(r.name, import_scope)
            if name in graph._ops_by_name:
                raise ValueError(f"Cannot import op '{name}': the graph already has an op of that name")
            inputs, controls, deferred = [], [], []
            for inp in r.inputs:
                op_name, _, is_ctrl = parse_input(inp)
                if not is_ctrl and op_name in later and op_name not in created and inp not in input_map:
                    deferred.append((len(inputs) + len(deferred), inp))   # added once its op is
                    continue
                value, is_ctrl = source(inp, name, len(inputs))
                if is_ctrl:
                    controls.append(value)
                else:
                    if not isinstance(value, Tensor) or value.graph is not graph:
                        raise ValueError(f"input_map value for '{inp}' must be a Tensor of the importing graph")
                    inputs.append(value)
            attrs = dict(r.attrs)
            if (import_scope or renamed) and "_class" in attrs:
                attrs["_class"] = [f"loc:@{renamed.get(c[5:]) or prefixed(c[5:], import_scope)}"
                                   if c.startswith("loc:@") else c for c in attrs["_class"]]
            op = Operation(graph, r.op, name, inputs, attrs, controls)
            op._outputs = [Tensor(op, i, dtypes.as_dtype(dt), as_shape(shape))
                           for i, (dt, shape) in enumerate(_inferred_outputs(op))]
            op._device = "" if clear_devices else r.device
            for t in inputs:
                t._consumers.append(op)
            for c in controls:
                c._control_outputs.append(op)
            graph._ops_by_name[name] = op
            graph._ops.append(op)
            _mark_used(graph, name)
            created[r.name] = op
            later.discard(r.name)
            back_edges += [(op, index, inp) for index, inp in deferred]
        for op, index, inp in back_edges:
            value, _ = source(inp, op.name, index)
            op._inputs.insert(index, value)
            value._consumers.append(op)
    return created


@contextlib.contextmanager
def all_or_nothing(graph: Graph):
    """Ops added to `graph` inside the block are taken back out if it raises, with their names and
    their links from the tensors and ops they consumed: TF's importer adds all or nothing."""
    with graph._lock:
        names_in_use, ops_before = dict(graph._names_in_use), len(graph._ops)
        try:
            yield
        except BaseException:
            for op in graph._ops[ops_before:]:
                del graph._ops_by_name[op.name]
                for t in op._inputs:
                    t._consumers.remove(op)
                for c in op._control_inputs:
                    c._control_outputs.remove(op)
            del graph._ops[ops_before:]
            graph._names_in_use.clear()
            graph._names_in_use.update(names_in_use)
            raise
