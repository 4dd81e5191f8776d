"""Graph, Operation and Tensor: the TF1 dataflow graph and its build-time scopes."""
from __future__ import annotations

import contextlib
import re
import threading
from typing import Callable, Iterable, Optional

from tensorweave.framework import dtypes as _dtypes
from tensorweave.framework.device import DeviceSpec
from tensorweave.framework.graph_def import node_def_of
from tensorweave.framework.op_def_registry import lookup as _lookup_op_def
from tensorweave.framework.shapes import TensorShape, as_shape, unknown_shape
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import graph_pb2, versions_pb2
from tensorweave.framework.versions import GRAPH_DEF_VERSION

_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\-/>]*$")


@tf_export("Tensor")
class Tensor:
    """A symbolic handle to one output of an Operation."""

    __slots__ = ("_op", "_value_index", "_dtype", "_shape", "_consumers", "__weakref__")
    __array_priority__ = 100  # numpy defers to our operators

    def __init__(self, op: "Operation", value_index: int, dtype: _dtypes.DType, shape: TensorShape):
        self._op = op
        self._value_index = value_index
        self._dtype = dtype
        self._shape = shape
        self._consumers: list[Operation] = []

    op = property(lambda self: self._op)
    value_index = property(lambda self: self._value_index)
    dtype = property(lambda self: self._dtype)
    graph = property(lambda self: self._op.graph)
    device = property(lambda self: self._op.device)

    @property
    def name(self) -> str:
        return f"{self._op.name}:{self._value_index}"

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape) -> None:
        """Refines the static shape; raises ValueError when incompatible."""
        self._shape = self._shape.merge_with(as_shape(shape))

    def consumers(self) -> list:
        return list(self._consumers)

    def eval(self, feed_dict=None, session=None):
        return default_session_for(self.graph, session).run(self, feed_dict)

    def _as_node_def_input(self) -> str:
        return self._op.name if self._value_index == 0 else self.name

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __str__(self) -> str:
        return (f'Tensor("{self.name}", shape={self._shape}, dtype={self._dtype.name}'
                + (f", device={self.device})" if self.device else ")"))

    def __hash__(self):
        return id(self)

    def __eq__(self, other):  # TF1: identity, so tensors can key dicts and sets
        return self is other

    def __ne__(self, other):
        return self is not other

    def __bool__(self):
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed. Use `if t is not None:` "
                        "instead of `if t:` to test if a tensor is defined, and use TensorFlow ops such "
                        "as tf.cond to execute subgraphs conditioned on the value of a tensor.")

    def __len__(self):
        raise TypeError(f"len is not well defined for symbolic Tensors. ({self.name}) Please call "
                        "`x.shape` rather than `len(x)` for shape information.")

    def __iter__(self):
        dims = self._shape.as_tuple_or_none()
        if dims is None:
            raise TypeError("Cannot iterate over a tensor with unknown shape.")
        if not dims:
            raise TypeError("Cannot iterate over a scalar tensor.")
        if dims[0] is None:
            raise TypeError("Cannot iterate over a tensor with unknown first dimension.")
        return (self[i] for i in range(dims[0]))

    def __array__(self, dtype=None):
        raise TypeError(f"Cannot convert a symbolic Tensor ({self.name}) to a numpy array.")

    @staticmethod
    def _override_operator(name: str, fn: Callable) -> None:
        setattr(Tensor, name, fn)


@tf_export("Operation")
class Operation:
    """A node of the graph: a TF op type applied to input tensors with attributes."""

    def __init__(self, graph: "Graph", op_type: str, name: str, inputs: list[Tensor],
                 attrs: dict, control_inputs: list["Operation"]):
        self._graph = graph
        self._type = op_type
        self._name = name
        self._inputs = list(inputs)
        self._attrs = dict(attrs)
        self._control_inputs = list(control_inputs)
        self._outputs: list[Tensor] = []
        self._device = ""
        self._id = graph._next_id()
        self._control_outputs: list[Operation] = []

    name = property(lambda self: self._name)
    type = property(lambda self: self._type)
    graph = property(lambda self: self._graph)
    outputs = property(lambda self: list(self._outputs))
    device = property(lambda self: self._device)
    control_inputs = property(lambda self: list(self._control_inputs))

    @property
    def inputs(self) -> tuple:
        return tuple(self._inputs)

    @property
    def node_def(self):
        return node_def_of(self)

    @property
    def op_def(self):
        return _lookup_op_def(self._type)

    @property
    def attrs(self) -> dict:
        return dict(self._attrs)

    def get_attr(self, name: str):
        if name not in self._attrs:
            raise ValueError(f"Operation '{self._name}' has no attr named '{name}'.")
        return self._attrs[name]

    def _set_attr(self, name: str, value) -> None:
        self._attrs[name] = value
        self._graph._mutations += 1

    def _set_device(self, device) -> None:
        if callable(device) and not isinstance(device, (str, DeviceSpec)):
            device = device(self)
        if isinstance(device, DeviceSpec):
            device = device.to_string()
        self._device = DeviceSpec.from_string(device or "").to_string()
        self._graph._mutations += 1

    def _add_control_input(self, op: "Operation") -> None:
        if op not in self._control_inputs:
            self._control_inputs.append(op)
            op._control_outputs.append(self)
            self._graph._mutations += 1

    def _add_control_inputs(self, ops: Iterable["Operation"]) -> None:
        for op in ops:
            self._add_control_input(op)

    def _remove_control_input(self, op: "Operation") -> None:
        if op in self._control_inputs:
            self._control_inputs.remove(op)
            op._control_outputs.remove(self)
            self._graph._mutations += 1

    def _update_input(self, index: int, tensor: Tensor) -> None:
        """Rewires input `index` to `tensor` (same dtype; gradients of loops redirect forward values)."""
        old = self._inputs[index]
        if tensor.dtype != old.dtype:
            raise TypeError(f"Cannot replace input {index} of '{self._name}' ({old.dtype.name}) with "
                            f"{tensor.name} ({tensor.dtype.name})")
        old._consumers.remove(self)
        self._inputs[index] = tensor
        tensor._consumers.append(self)
        self._graph._mutations += 1

    def _add_output(self, dtype, shape) -> Tensor:
        """Appends an output (a functional op that starts recording values for its gradient)."""
        t = Tensor(self, len(self._outputs), _dtypes.as_dtype(dtype), as_shape(shape))
        self._outputs.append(t)
        self._graph._mutations += 1
        return t

    def colocation_groups(self) -> list:
        groups = [g.decode() if isinstance(g, bytes) else g for g in self._attrs.get("_class", [])
                  if (g.decode() if isinstance(g, bytes) else g).startswith("loc:@")]
        return groups or [f"loc:@{self._name}"]

    def values(self) -> tuple:
        return tuple(self._outputs)

    def run(self, feed_dict=None, session=None) -> None:
        default_session_for(self._graph, session).run(self, feed_dict)

    def __repr__(self) -> str:
        return f"<tf.Operation '{self._name}' type={self._type}>"

    def __str__(self) -> str:
        return str(self.node_def)


class _ControlDependencies:
    def __init__(self, graph: "Graph", control_inputs: Optional[list]):
        self._graph = graph
        self.control_inputs = control_inputs or []
        self.new_stack = control_inputs is None
        self._seen: set = set()

    def op_in_group(self, op) -> bool:
        return op in self._seen


@tf_export("Graph")
class Graph:
    """A TF1 dataflow graph: operations, naming scopes, device and dependency scopes, collections."""

    def __init__(self):
        self._lock = threading.RLock()
        self._ops_by_name: dict[str, Operation] = {}
        self._ops: list[Operation] = []
        self._names_in_use: dict[str, int] = {}
        self._name_stack = ""
        self._control_stack: list[_ControlDependencies] = []
        self._device_stack: list = []
        self._colocation_stack: list[Operation] = []
        self._collections: dict[str, list] = {}
        self._finalized = False
        self._id_counter = 0
        self._mutations = 0
        self._seed: Optional[int] = None
        self._gradient_override_map: dict[str, str] = {}
        self._unfeedable: set = set()
        self._unfetchable: set = set()
        self._attr_scope: dict = {}
        self._container = ""  # resource container for stateful ops (tf.container)
        self._scope_state: dict = {}  # owned by ops/variable_scope.py

    # -- identity and versioning ------------------------------------------------------------
    def _next_id(self) -> int:
        self._id_counter += 1
        return self._id_counter

    @property
    def version(self) -> int:
        return self._id_counter

    @property
    def graph_def_versions(self):
        return {"producer": GRAPH_DEF_PRODUCER}

    @property
    def finalized(self) -> bool:
        return self._finalized

    def finalize(self) -> None:
        self._finalized = True

    def _unsafe_unfinalize(self) -> None:
        self._finalized = False

    @property
    def seed(self) -> Optional[int]:
        return self._seed

    @seed.setter
    def seed(self, value) -> None:
        self._seed = value

    @property
    def building_function(self) -> bool:
        return False

    # -- default-graph stack ----------------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self):
        """Makes this graph the default graph for the current thread within the context."""
        _stack().append(self)
        try:
            yield self
        finally:
            _stack().pop()

    # -- naming -----------------------------------------------------------------------------
    def get_name_scope(self) -> str:
        return self._name_stack

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        if self._name_stack:
            name = self._name_stack + "/" + name
        key = name.lower()
        i = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = i + 1
        if i > 0:
            base = name
            while key in self._names_in_use:
                name = f"{base}_{i}"
                key = name.lower()
                i += 1
            if mark_as_used:
                self._names_in_use[key] = 1
        return name

    @contextlib.contextmanager
    def name_scope(self, name: Optional[str]):
        """Opens a name scope; a name ending in '/' re-enters that exact scope."""
        if name:
            pattern = _VALID_SCOPE_NAME if self._name_stack else _VALID_OP_NAME
            if not pattern.match(name):
                raise ValueError(f"'{name}' is not a valid scope name")
        old = self._name_stack
        if not name:
            new = ""
        elif name[-1] == "/":
            new = name[:-1]
        else:
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield "" if not new else new + "/"
        finally:
            self._name_stack = old

    # -- control dependencies ---------------------------------------------------------------
    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        """Ops created inside run after `control_inputs`; None clears the enclosing ones."""
        if control_inputs is None:
            saved = self._control_stack
            self._control_stack = []
            try:
                yield
            finally:
                self._control_stack = saved
            return
        ops = []
        for c in control_inputs:
            if callable(c) and not isinstance(c, (Tensor, Operation)) and not hasattr(c, "_as_graph_element"):
                c = c()
            el = self.as_graph_element(c, allow_tensor=True, allow_operation=True)
            op = el.op if isinstance(el, Tensor) else el
            if op not in ops:
                ops.append(op)
        controller = _ControlDependencies(self, ops)
        self._control_stack.append(controller)
        try:
            yield
        finally:
            self._control_stack.remove(controller)

    def _control_inputs_for(self, input_ops: list[Operation]) -> list[Operation]:
        result = []
        for controller in self._control_stack:
            if any(controller.op_in_group(op) for op in input_ops):
                continue
            result.extend(c for c in controller.control_inputs if c not in input_ops and c not in result)
        return result

    # -- devices and colocation -------------------------------------------------------------
    @contextlib.contextmanager
    def device(self, device_name_or_function):
        """Pins ops created inside to a device (string, DeviceSpec, function of op, or None)."""
        if isinstance(device_name_or_function, DeviceSpec):
            device_name_or_function = device_name_or_function.to_string()
        if isinstance(device_name_or_function, str):
            DeviceSpec.from_string(device_name_or_function)  # validate early, as TF does
        self._device_stack.append(device_name_or_function)
        try:
            yield
        finally:
            self._device_stack.pop()

    def _apply_device_functions(self, op: Operation) -> None:
        # Newest scope first; inner fields win, outer ones fill what is unset; None stops.
        for spec in reversed(self._device_stack):
            if spec is None:
                break
            if isinstance(spec, str):
                current = DeviceSpec.from_string(op.device)
                op._device = DeviceSpec.from_string(spec).merge_from(current).to_string()
            else:
                op._set_device(spec(op))

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing: bool = False):
        """Ops created inside share `op`'s device and colocation group."""
        if op is None and not ignore_existing:
            raise ValueError("Trying to reset colocation (op is None) but ignore_existing is not True")
        if op is not None:
            el = self.as_graph_element(op, allow_tensor=True, allow_operation=True)
            op = el.op if isinstance(el, Tensor) else el
        saved_devices = self._device_stack
        saved_coloc = self._colocation_stack
        if ignore_existing:
            self._colocation_stack = []
        if op is not None:
            self._colocation_stack = self._colocation_stack + [op]
            self._device_stack = []
        try:
            yield
        finally:
            self._device_stack = saved_devices
            self._colocation_stack = saved_coloc

    # -- op creation ------------------------------------------------------------------------
    def create_op(self, op_type: str, inputs: list, attrs: Optional[dict] = None,
                  name: Optional[str] = None, dtypes=None) -> Operation:
        """Adds an op of a registered type; infers its outputs' dtypes and static shapes."""
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        opdef = _lookup_op_def(op_type)
        inputs = [self._capture(t) for t in inputs]
        if opdef.dtypes:
            opdef.check_input_dtypes(inputs)
        with self._lock:
            if name and name.endswith("/"):
                name = name[:-1]
            else:
                name = self.unique_name(name or op_type)
            all_attrs = dict(self._attr_scope)
            all_attrs.update(attrs or {})
            if op_type in self._gradient_override_map:
                all_attrs["_gradient_op_type"] = self._gradient_override_map[op_type]
            input_ops = [t.op for t in inputs]
            op = Operation(self, op_type, name, inputs, all_attrs, self._control_inputs_for(input_ops))
            try:
                specs = opdef.infer(op)
            except ValueError as e:
                shapes = ", ".join(str(t.shape) for t in inputs)
                raise ValueError(f"{e} for '{name}' (op: '{op_type}') with input shapes: {shapes}.") from None
            op._outputs = [Tensor(op, i, _dtypes.as_dtype(dt), as_shape(sh) if sh is not None else unknown_shape())
                           for i, (dt, sh) in enumerate(specs)]
            self._apply_device_functions(op)
            if self._colocation_stack:
                groups = set()
                for c in self._colocation_stack:
                    groups.update(c.colocation_groups())
                    if c.device:
                        op._device = c.device
                op._attrs["_class"] = sorted(groups)
            for t in inputs:
                t._consumers.append(op)
            for c in op._control_inputs:
                c._control_outputs.append(op)
            for controller in self._control_stack:
                controller._seen.add(op)
            self._ops_by_name[name] = op
            self._ops.append(op)
        return op

    def _capture(self, t):
        if not isinstance(t, Tensor):
            raise TypeError(f"Op inputs must be Tensors, got {type(t).__name__}: {t!r}")
        if t.graph is not self:
            raise ValueError(f"Tensor {t.name} must be from the same graph as the op being created.")
        return t

    # -- lookup -----------------------------------------------------------------------------
    def get_operations(self) -> list[Operation]:
        return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=False, allow_operation=True)

    def get_tensor_by_name(self, name: str) -> Tensor:
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=True, allow_operation=False)

    def _get_operation_by_name_unsafe(self, name: str) -> Operation:
        return self._ops_by_name[name]

    def as_graph_element(self, obj, allow_tensor: bool = True, allow_operation: bool = True):
        """Resolves a Tensor, Operation, name string or object with `_as_graph_element`."""
        if hasattr(obj, "_as_graph_element") and not isinstance(obj, (Tensor, Operation)):
            obj = obj._as_graph_element()
        if isinstance(obj, str):
            if ":" in obj:
                if not allow_tensor:
                    raise ValueError(f"Name '{obj}' appears to refer to a Tensor, not a Operation.")
                op_name, _, idx = obj.rpartition(":")
                try:
                    idx = int(idx)
                except ValueError:
                    raise ValueError(f"The name '{obj}' looks a like a Tensor name, but is not a valid one.") from None
                if op_name not in self._ops_by_name:
                    raise KeyError(f"The name '{obj}' refers to a Tensor which does not exist. "
                                   f"The operation, '{op_name}', does not exist in the graph.")
                op = self._ops_by_name[op_name]
                if idx >= len(op._outputs):
                    raise KeyError(f"The name '{obj}' refers to a Tensor which does not exist. The operation, "
                                   f"'{op_name}', exists but only has {len(op._outputs)} outputs.")
                return op._outputs[idx]
            if not allow_operation:
                raise ValueError(f"The name '{obj}' looks like an (invalid) Operation name, not a Tensor. "
                                 "Tensor names must be of the form \"<op_name>:<output_index>\".")
            if obj not in self._ops_by_name:
                raise KeyError(f"The name '{obj}' refers to an Operation not in the graph.")
            return self._ops_by_name[obj]
        if isinstance(obj, Tensor) and allow_tensor:
            if obj.graph is not self:
                raise ValueError(f"Tensor {obj} is not an element of this graph.")
            return obj
        if isinstance(obj, Operation) and allow_operation:
            if obj.graph is not self:
                raise ValueError(f"Operation {obj} is not an element of this graph.")
            return obj
        kinds = " or ".join(k for k, ok in (("Tensor", allow_tensor), ("Operation", allow_operation)) if ok)
        raise TypeError(f"Can not convert a {type(obj).__name__} into a {kinds}.")

    # -- collections ------------------------------------------------------------------------
    def add_to_collection(self, name: str, value) -> None:
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value) -> None:
        names = (names,) if isinstance(names, str) else set(names)
        for n in names:
            self.add_to_collection(n, value)

    def get_collection_ref(self, name: str) -> list:
        return self._collections.setdefault(name, [])

    def get_collection(self, name: str, scope: Optional[str] = None) -> list:
        items = self._collections.get(name, [])
        if scope is None:
            return list(items)
        pattern = re.compile(scope)
        return [i for i in items if hasattr(i, "name") and pattern.match(i.name)]

    def get_all_collection_keys(self) -> list:
        return [k for k, v in self._collections.items() if v]

    def clear_collection(self, name: str) -> None:
        self._collections.pop(name, None)

    # -- feeding / fetching -----------------------------------------------------------------
    def prevent_feeding(self, tensor) -> None:
        self._unfeedable.add(tensor)

    def prevent_fetching(self, op) -> None:
        self._unfetchable.add(op)

    def is_feedable(self, tensor) -> bool:
        return tensor not in self._unfeedable

    def is_fetchable(self, el) -> bool:
        op = el.op if isinstance(el, Tensor) else el
        return op not in self._unfetchable

    # -- gradients overrides ----------------------------------------------------------------
    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map: dict):
        saved = dict(self._gradient_override_map)
        self._gradient_override_map.update(op_type_map)
        try:
            yield
        finally:
            self._gradient_override_map = saved

    def as_graph_def(self, from_version=None, add_shapes: bool = False) -> graph_pb2.GraphDef:
        """TF's `GraphDef` protocol buffer (tf.GraphDef) of this graph: every op with its inputs
        ("x", "x:1", "^ctrl"), device and attributes, and `versions`; only the ops added since the
        graph's `version` was `from_version` when that is set; each op's output shapes as its
        `_output_shapes` attribute with `add_shapes`. The op library writes the nodes (the writer
        ops/graph_export.py registers); a graph holds no op before the op library is loaded, so
        without it the GraphDef is empty. What the runtime executes is framework/graph_def.py's
        plain GraphDef (`graph_to_graph_def`), not this."""
        if _graph_def_writer:
            return _graph_def_writer[0](self, from_version, add_shapes)
        if self._ops:
            raise RuntimeError("Graph.as_graph_def: no GraphDef writer is registered (import tensorweave.ops)")
        return empty_graph_def()


# TF's GraphDef versions of the graphs we write (framework/versions.py).
GRAPH_DEF_PRODUCER = GRAPH_DEF_VERSION

# Graph.as_graph_def's writer, fn(graph, from_version, add_shapes) -> GraphDef proto: set once by
# the op library (ops/graph_export.py), which holds the attribute and tensor codecs this layer
# may not import.
_graph_def_writer: list = []


def register_graph_def_writer(fn: Callable) -> None:
    """Makes `fn(graph, from_version, add_shapes)` the writer of Graph.as_graph_def."""
    _graph_def_writer[:] = [fn]


def empty_graph_def() -> graph_pb2.GraphDef:
    """A GraphDef with no node and our versions (the start of every GraphDef we write)."""
    return graph_pb2.GraphDef(versions=versions_pb2.VersionDef(producer=GRAPH_DEF_PRODUCER))


class _DefaultStack(threading.local):
    """This thread's default graphs and default sessions (innermost last)."""

    def __init__(self):
        self.stack: list[Graph] = []
        self.sessions: list = []


_thread_state = _DefaultStack()
_global_default_graph: Optional[Graph] = None


def _stack() -> list:
    return _thread_state.stack


@tf_export("get_default_graph")
def get_default_graph() -> Graph:
    """The innermost `as_default` graph of this thread, else the global default graph."""
    global _global_default_graph
    stack = _thread_state.stack
    if stack:
        return stack[-1]
    if _global_default_graph is None:
        _global_default_graph = Graph()
    return _global_default_graph


@tf_export("reset_default_graph")
def reset_default_graph() -> None:
    """Clears the global default graph (not allowed inside a `with g.as_default()` block)."""
    global _global_default_graph
    if _thread_state.stack:
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. If you need a "
                             "cleared graph, exit the nesting and create a new graph.")
    _global_default_graph = Graph()
    _thread_state.sessions = []


# -- the default-session stack (sessions live above this layer; they push themselves here) ---
@tf_export("get_default_session")
def get_default_session():
    """tf.get_default_session(): the innermost session installed with `as_default()` on this
    thread, or None."""
    return _thread_state.sessions[-1] if _thread_state.sessions else None


@contextlib.contextmanager
def default_session(session, with_graph: bool = False):
    """Makes `session` the default session (and, with_graph, its graph the default graph)."""
    _thread_state.sessions.append(session)
    try:
        if with_graph:
            with session.graph.as_default():
                yield session
        else:
            yield session
    finally:
        _thread_state.sessions.remove(session)


def default_session_for(graph: Graph, session=None):
    """The session that evaluates a tensor of `graph` (`Tensor.eval`, `Operation.run`)."""
    session = session or get_default_session()
    if session is None:
        raise ValueError("Cannot evaluate tensor using `eval()`: No default session is registered. Use "
                         "`with sess.as_default()` or pass an explicit session to `eval(session=sess)`")
    if session.graph is not graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the tensor's graph is different "
                         "from the session's graph.")
    return session
