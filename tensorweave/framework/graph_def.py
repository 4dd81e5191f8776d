"""Plain-data GraphDef: what the runtime executes and what travels between processes.

Attribute values are plain: None, bool, int, float, str, bytes, numpy arrays, and lists/dicts
of those. DTypes travel as their names, shapes as lists (None for an unknown dim or rank),
function bodies (cond/while branches) by name through `GraphDef.library`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.dtypes import DType
from tensorweave.framework.shapes import TensorShape


@dataclass(frozen=True)
class NodeDef:
    name: str
    op: str
    input: tuple = ()  # "op", "op:1", or "^op" for a control input
    device: str = ""
    attr: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"name": self.name, "op": self.op, "input": list(self.input),
                "device": self.device, "attr": self.attr}

    @classmethod
    def from_dict(cls, d: dict) -> "NodeDef":
        return cls(name=d["name"], op=d["op"], input=tuple(d.get("input", ())),
                   device=d.get("device", ""), attr=dict(d.get("attr", {})))


@dataclass(frozen=True)
class FunctionDef:
    """A body graph (cond branch, while cond/body): nodes, its input and output tensor names."""
    name: str
    inputs: tuple
    outputs: tuple
    node: tuple

    def to_dict(self) -> dict:
        return {"name": self.name, "inputs": list(self.inputs), "outputs": list(self.outputs),
                "node": [n.to_dict() for n in self.node]}

    @classmethod
    def from_dict(cls, d: dict) -> "FunctionDef":
        return cls(d["name"], tuple(d["inputs"]), tuple(d["outputs"]),
                   tuple(NodeDef.from_dict(n) for n in d["node"]))


@dataclass
class GraphDef:
    node: list
    library: dict = field(default_factory=dict)  # name -> FunctionDef
    versions: dict = field(default_factory=lambda: {"producer": 27})

    def to_dict(self) -> dict:
        return {"node": [n.to_dict() for n in self.node],
                "library": {k: f.to_dict() for k, f in self.library.items()},
                "versions": self.versions}

    @classmethod
    def from_dict(cls, d: dict) -> "GraphDef":
        return cls([NodeDef.from_dict(n) for n in d["node"]],
                   {k: FunctionDef.from_dict(f) for k, f in d.get("library", {}).items()},
                   dict(d.get("versions", {})))


def plain_attr(value, library: dict | None = None):
    """One attribute value as plain data; function graphs are added to `library`."""
    if isinstance(value, DType):
        return value.name
    if isinstance(value, TensorShape):
        return None if value.ndims is None else [d.value for d in value]
    if isinstance(value, (list, tuple)):
        return [plain_attr(v, library) for v in value]
    if isinstance(value, dict):
        return {k: plain_attr(v, library) for k, v in value.items()}
    if hasattr(value, "_as_function_def"):
        if library is not None and value.name not in library:
            library[value.name] = None  # placeholder stops recursion on self-reference
            library[value.name] = value._as_function_def(library)
        return value.name
    if isinstance(value, (np.ndarray, np.generic)):
        return value
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    raise TypeError(f"Attribute value {value!r} of type {type(value).__name__} cannot be serialized")


def node_def_of(op, library: dict | None = None) -> NodeDef:
    inputs = [t._as_node_def_input() for t in op._inputs]
    inputs += ["^" + c.name for c in op._control_inputs]
    attrs = {k: plain_attr(v, library) for k, v in op._attrs.items()}
    attrs["_num_outputs"] = len(op._outputs)
    return NodeDef(op.name, op.type, tuple(inputs), op.device, attrs)


def graph_to_graph_def(graph) -> GraphDef:
    """The whole graph as a GraphDef, cached until the graph grows or an op changes."""
    key = (graph.version, graph._mutations)
    cached = getattr(graph, "_graph_def_cache", None)
    if cached is not None and cached[0] == key:
        return cached[1]
    library: dict = {}
    gd = GraphDef([node_def_of(op, library) for op in graph.get_operations()], library)
    graph._graph_def_cache = (key, gd)
    return gd


def parse_input(name: str) -> tuple[str, int, bool]:
    """'op:1' -> ('op', 1, False); '^op' -> ('op', -1, True)."""
    if name.startswith("^"):
        return name[1:], -1, True
    op, sep, idx = name.rpartition(":")
    if sep and idx.isdigit():
        return op, int(idx), False
    return name, 0, False


def live_inputs(node: NodeDef, by_name: dict, fed: set):
    """Source op names of the edges a step must wait for: data inputs that are not fed, and
    control inputs except those from a fed Placeholder (TF redirects those to the feed)."""
    for inp in node.input:
        src, idx, is_ctrl = parse_input(inp)
        if is_ctrl:
            n = by_name.get(src)
            if n is None or n.op != "Placeholder" or f"{src}:0" not in fed:
                yield src
        elif f"{src}:{idx}" not in fed:
            yield src


def needed_nodes(by_name: dict, fed: set, fetches, targets) -> dict:
    """The nodes a step needs (name -> NodeDef): ancestors of the fetches and targets, with fed
    tensors cutting the graph. A missing node is NotFoundError naming it."""
    needed: dict = {}
    stack = [parse_input(f)[0] for f in fetches if tensor_key(f) not in fed]
    stack += [t.lstrip("^") for t in targets]
    while stack:
        name = stack.pop()
        if name in needed:
            continue
        node = by_name.get(name)
        if node is None:
            raise errors.NotFoundError(None, name, f"Node '{name}' is not in the graph (it may belong "
                                                   "to another graph, or to another task's partition)")
        needed[name] = node
        stack.extend(live_inputs(node, by_name, fed))
    return needed


def tensor_key(name: str) -> str:
    """Canonical tensor name: 'op' -> 'op:0'."""
    op, idx, _ = parse_input(name)
    return f"{op}:{idx}"

