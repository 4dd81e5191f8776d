"""FuncGraph: the body graph of a functional op (cond branch, while cond/body).

A FuncGraph is built while it is the default graph. When an op created inside uses a tensor
of an enclosing graph, the FuncGraph *captures* it: an inner Placeholder stands for the outer
tensor, and the outer tensor becomes an extra input of the functional op. Nested FuncGraphs
capture level by level, so every functional op only ever takes inputs from its own graph.
Control dependencies on outer ops are recorded in `control_captures` and become control
inputs of the functional op instead. The body travels as a `FunctionDef` in the GraphDef's
library, by its `name`.
"""
from __future__ import annotations

import contextlib
from typing import Iterable, Optional

from tensorweave.framework import dtypes
from tensorweave.framework.graph import Graph, Operation, Tensor, get_default_graph
from tensorweave.framework.graph_def import FunctionDef, node_def_of


def _root_graph(g: Graph) -> Graph:
    while isinstance(g, FuncGraph):
        g = g.outer_graph
    return g


def unique_function_name(outer_graph: Graph, base: str) -> str:
    """A function name unique in the library of `outer_graph`'s outermost graph (deterministic
    per graph, so clients building the same graph produce the same library)."""
    root = _root_graph(outer_graph)
    n = root.__dict__.get("_tw_function_counter", 0)
    root.__dict__["_tw_function_counter"] = n + 1
    base = "".join(c if c.isalnum() or c in "_-." else "_" for c in base) or "fn"
    return f"{base}_{n}"


class FuncGraph(Graph):
    """A body graph nested in `outer_graph`; see the module docstring."""

    def __init__(self, name: str, outer_graph: Graph, name_scope: str = ""):
        super().__init__()
        self.name = name
        self.outer_graph = outer_graph
        self.outputs: list[Tensor] = []
        self.structured_outputs = None
        self._args: list[Tensor] = []                 # explicit argument placeholders
        self._captures: dict[Tensor, Tensor] = {}     # outer tensor -> inner placeholder
        self._input_order: Optional[list[Tensor]] = None
        self.control_captures: list[Operation] = []   # ops of outer_graph to run before the body
        # Collections, variable-scope state, seeds and the resource container are the outer
        # graph's: a body looks up variables and adds to collections as its outer graph would.
        self._collections = outer_graph._collections
        self._scope_state = outer_graph._scope_state
        self._seed = outer_graph._seed
        self._container = outer_graph._container
        self._gradient_override_map = dict(outer_graph._gradient_override_map)
        self._name_stack = name_scope.rstrip("/")

    @property
    def building_function(self) -> bool:
        return True

    # -- inputs -------------------------------------------------------------------------------
    def add_arg(self, dtype, shape, name: str = "arg") -> Tensor:
        """An explicit argument of the body (while loop variables): a placeholder input."""
        with self._clean_scopes():
            t = self.create_op("Placeholder", [], {"dtype": dtype, "shape": shape}, name=name).outputs[0]
        self._args.append(t)
        return t

    @property
    def inputs(self) -> list[Tensor]:
        """Inner placeholders in the order the functional op feeds them: arguments, then captures."""
        caps = (list(self._captures.values()) if self._input_order is None
                else [self._captures[t] for t in self._input_order])
        return self._args + caps

    @property
    def external_captures(self) -> list[Tensor]:
        """The outer tensors the functional op passes in, in `inputs` order (after the args)."""
        return list(self._captures) if self._input_order is None else list(self._input_order)

    @property
    def internal_captures(self) -> list[Tensor]:
        return self.inputs[len(self._args):]

    def set_capture_order(self, outer_tensors: Iterable[Tensor]) -> None:
        """Fixes the capture inputs to exactly `outer_tensors` (capturing any not yet used), so
        that two branches of one If take the same input list."""
        order = list(outer_tensors)
        for t in order:
            self.capture(t)
        self._input_order = order

    def captured(self, outer: Tensor) -> Optional[Tensor]:
        return self._captures.get(outer)

    def outer_tensor(self, inner: Tensor) -> Optional[Tensor]:
        """The outer tensor a capture placeholder stands for (None for other tensors)."""
        for o, i in self._captures.items():
            if i is inner:
                return o
        return None

    # -- capturing ----------------------------------------------------------------------------
    def _is_ancestor(self, g: Graph) -> bool:
        o = self.outer_graph
        while o is not None:
            if o is g:
                return True
            o = getattr(o, "outer_graph", None)
        return False

    def _capture(self, t):
        if isinstance(t, Tensor) and t.graph is not self and self._is_ancestor(t.graph):
            return self.capture(t)
        return super()._capture(t)

    def capture(self, t: Tensor) -> Tensor:
        """The inner placeholder standing for outer tensor `t` (created on first use)."""
        if t.graph is self:
            return t
        outer = t if t.graph is self.outer_graph else self.outer_graph._capture(t)
        inner = self._captures.get(outer)
        if inner is None:
            if self._input_order is not None:
                raise ValueError(f"Function '{self.name}' is complete and cannot capture {t.name} anymore.")
            with self._clean_scopes():
                inner = self.create_op("Placeholder", [], {"dtype": outer.dtype, "shape": outer.shape},
                                       name="capture").outputs[0]
            self._captures[outer] = inner
        return inner

    def uncapture(self, outer: Tensor) -> None:
        """Forgets capture `outer` once nothing in the body uses its placeholder any more."""
        inner = self._captures.pop(outer)
        if inner._consumers:
            self._captures[outer] = inner
            raise ValueError(f"Cannot drop capture {outer.name} of '{self.name}': {inner.name} is still used")
        self.remove_ops([inner.op])

    def _control_capture(self, op: Operation) -> None:
        if op.graph is self.outer_graph:
            if op not in self.control_captures:
                self.control_captures.append(op)
        else:
            # An op further out orders the enclosing body's functional op, hence this one.
            self.outer_graph._control_capture(op)

    @contextlib.contextmanager
    def _clean_scopes(self):
        saved = (self._name_stack, self._control_stack, self._device_stack, self._colocation_stack)
        self._name_stack, self._control_stack, self._device_stack, self._colocation_stack = "", [], [], []
        try:
            yield
        finally:
            self._name_stack, self._control_stack, self._device_stack, self._colocation_stack = saved

    # -- scopes that may name outer ops ---------------------------------------------------------
    def control_dependencies(self, control_inputs):
        if control_inputs is None:
            return super().control_dependencies(None)
        inner = []
        for c in control_inputs:
            if callable(c) and not isinstance(c, (Tensor, Operation)) and not hasattr(c, "_as_graph_element"):
                c = c()
            el = c._as_graph_element() if hasattr(c, "_as_graph_element") and not isinstance(
                c, (Tensor, Operation)) else c
            op = el.op if isinstance(el, Tensor) else el
            if isinstance(op, Operation) and op.graph is not self and self._is_ancestor(op.graph):
                self._control_capture(op)
            else:
                inner.append(c)
        return super().control_dependencies(inner)

    def colocate_with(self, op, ignore_existing: bool = False):
        el = op.op if isinstance(op, Tensor) else op
        if isinstance(el, Operation) and el.graph is not self:
            # Placement is the functional op's: a body runs whole inside its kernel.
            return contextlib.nullcontext()
        return super().colocate_with(op, ignore_existing)

    def remove_ops(self, ops: Iterable[Operation]) -> None:
        """Drops ops nothing uses any more (forward ops a loop gradient copied, then replaced by
        recorded values), so the body's FunctionDef holds only what runs."""
        dead = set(ops)
        for op in dead:
            for t in op.outputs:
                if any(c not in dead for c in t._consumers) or t in self.outputs:
                    raise ValueError(f"Cannot remove {op.name} from '{self.name}': {t.name} is still used")
        for op in dead:
            for t in op._inputs:
                if op in t._consumers:
                    t._consumers.remove(op)
            for c in op._control_inputs:
                if op in c._control_outputs:
                    c._control_outputs.remove(op)
            for c in op._control_outputs:
                if c not in dead and op in c._control_inputs:
                    c._control_inputs.remove(op)
            del self._ops_by_name[op.name]
        self._ops = [op for op in self._ops if op not in dead]
        self._mutations += 1

    def sort_ops(self) -> None:
        """Restores creation order = dependency order after inputs were rewired to later ops
        (copying a body, as gradients do, walks ops in creation order)."""
        position = {op: i for i, op in enumerate(self._ops)}
        done: set = set()
        order: list = []
        for root in self._ops:
            stack = [(root, False)]
            while stack:
                op, expanded = stack.pop()
                if op in done:
                    continue
                if expanded:
                    done.add(op)
                    order.append(op)
                    continue
                stack.append((op, True))
                deps = [t.op for t in op._inputs] + op._control_inputs
                for d in sorted((d for d in deps if d in position and d not in done), key=position.get,
                                reverse=True):
                    stack.append((d, False))
        self._ops = order

    # -- serialization ------------------------------------------------------------------------
    def _as_function_def(self, library: Optional[dict] = None) -> FunctionDef:
        nodes = tuple(node_def_of(op, library) for op in self._ops)
        return FunctionDef(self.name, tuple(t.name for t in self.inputs),
                           tuple(t.name for t in self.outputs), nodes)

    def __repr__(self) -> str:
        return f"<FuncGraph '{self.name}'>"


@contextlib.contextmanager
def init_scope():
    """tf.init_scope(): lifts op creation out of function bodies into the outermost graph,
    with control dependencies cleared (TF's rule for creating variables' initial state)."""
    g = get_default_graph()
    root = _root_graph(g)
    scope = g.get_name_scope()
    with root.as_default(), root.control_dependencies(None), root.name_scope(scope + "/" if scope else None):
        yield


def resolve_capture(t: Tensor) -> Tensor:
    """Follows capture placeholders out to the tensor they stand for in the outermost graph that
    has it (e.g. a resource handle's VarHandleOp output)."""
    while isinstance(t.graph, FuncGraph):
        outer = t.graph.outer_tensor(t)
        if outer is None:
            break
        t = outer
    return t


def replay(func_graph: FuncGraph, inputs: list, graph: Optional[Graph] = None,
           mapping: Optional[dict] = None) -> list:
    """Copies the ops of `func_graph` into `graph` (default: the default graph) with its inputs
    replaced by `inputs`; returns the copies of its outputs. Gradients of functional ops use it
    to recompute a body's forward values where the gradient runs. `mapping`, when given, is
    filled with every body tensor -> its copy."""
    graph = graph or get_default_graph()
    mapping = {} if mapping is None else mapping
    op_map: dict = {}
    for ph, t in zip(func_graph.inputs, inputs):
        mapping[ph] = t
    input_ops = {t.op for t in func_graph.inputs}
    for op in func_graph.get_operations():
        if op in input_ops:
            continue
        ins = [mapping[t] for t in op.inputs]
        ctrl = [op_map[c] for c in op.control_inputs if c in op_map]
        attrs = {k: v for k, v in op._attrs.items() if k not in ("_class", "_gradient_op_type")}
        with graph.control_dependencies(ctrl):
            new = graph.create_op(op.type, ins, attrs, name=op.name.rsplit("/", 1)[-1])
        if "_gradient_op_type" in op._attrs:
            new._attrs["_gradient_op_type"] = op._attrs["_gradient_op_type"]
        op_map[op] = new
        for a, b in zip(op.outputs, new.outputs):
            mapping[a] = b
    return [mapping[t] if isinstance(t, Tensor) else op_map[t] for t in func_graph.outputs]


def resource_colocation(inputs: list) -> list:
    """Resource handles never cross tasks: a functional op that takes one runs where it lives."""
    for t in inputs:
        if t.dtype == dtypes.resource:
            return t.op.colocation_groups()
    return []
