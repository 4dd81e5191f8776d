"""tf.gradients and friends: symbolic reverse-mode differentiation of a graph (TF1's algorithm).

The ops between `xs` and `ys` are visited in reverse topological order (an op runs once every
consumer on the path has handed it a gradient); each op's registered gradient function builds
its input gradients under the name scope "gradients/<op>_grad". Gradients arriving at one
tensor from several consumers are summed with AddN (IndexedSlices stay sparse when every part
is sparse). Broadcasting is undone here, once, for every op (see sum_to_shape.py)."""
from __future__ import annotations

import collections
import contextlib
import enum
import itertools
import weakref
from typing import Optional

import numpy as np

from tensorweave.framework import api, dtypes
from tensorweave.framework.api import GraphKeys
from tensorweave.framework.graph import Graph, Operation, Tensor, get_default_graph
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, stack
from tensorweave.ops.array.core import constant, identity, reshape, shape
from tensorweave.ops.array.fill import fill, zeros, zeros_like
from tensorweave.ops.grouping import identity_n, tuple as tuple_
from tensorweave.ops.gradients.sum_to_shape import reduce_to_input
from tensorweave.ops.math.binary import add_n
from tensorweave.ops.math.cast import cast
from tensorweave.ops.registry import GRADIENTS, gradient_for


@tf_export("UnconnectedGradients")
class UnconnectedGradients(enum.Enum):
    """What tf.gradients returns for an x that no y depends on: None, or zeros."""
    NONE = "none"
    ZERO = "zero"


@tf_export("AggregationMethod")
class AggregationMethod:
    """How gradients that reach one tensor along several paths are summed."""
    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


_TRAINABLE = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128,
              dtypes.resource, dtypes.variant)


def _is_trainable(t) -> bool:
    return t.dtype.base_dtype in _TRAINABLE or t.dtype.name == "bfloat16"


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _variable_handle(x):
    """The resource handle of a (resource) Variable, else None."""
    if isinstance(x, (Tensor, IndexedSlices)):
        return None
    handle = getattr(x, "handle", None)
    if isinstance(handle, Tensor) and handle.dtype == dtypes.resource:
        return handle
    return None


@contextlib.contextmanager
def _maybe_colocate_with(op: Optional[Operation], colocate: bool):
    if colocate and op is not None:
        with op.graph.colocate_with(op):
            yield
    else:
        yield


# -- reachability ------------------------------------------------------------------------------
def _pending_count(to_ops: list, from_ops: list):
    reached: set = set()
    queue = collections.deque(from_ops)
    while queue:
        op = queue.popleft()
        if op not in reached:
            reached.add(op)
            for out in op.outputs:
                if _is_trainable(out):
                    queue.extend(out.consumers())
    reachable_to_ops = {op for op in to_ops if op in reached}
    between: set = set()
    between_list: list = []
    queue = collections.deque(to_ops)
    while queue:
        op = queue.popleft()
        if op in reached:
            between.add(op)
            between_list.append(op)
            reached.remove(op)
            queue.extend(t.op for t in op.inputs)
    pending: dict = collections.defaultdict(int)
    for op in between_list:
        for t in op.inputs:
            if t.op in between:
                pending[t.op] += 1
    return reachable_to_ops, pending


def _stop_ops(from_ops: list, stop_gradient_ops: list, pending: dict) -> set:
    stops = {op for op in from_ops if not any(pending[t.op] > 0 for t in op.inputs)}
    stops.update(stop_gradient_ops)
    return stops


# -- gradient bookkeeping ----------------------------------------------------------------------
def _set_grad(grads: dict, t: Tensor, grad) -> None:
    op_grads = grads.get(t.op)
    if not op_grads:
        op_grads = grads[t.op] = [[] for _ in t.op.outputs]
    op_grads[t.value_index].append(grad)


def _default_grad_ys(grad_ys: list, ys: list, colocate: bool) -> list:
    if len(grad_ys) != len(ys):
        raise ValueError(f"Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    out = []
    for i, (y, gy) in enumerate(zip(ys, grad_ys)):
        with _maybe_colocate_with(y.op, colocate):
            if gy is None:
                if y.dtype.is_complex:
                    raise TypeError(f"Gradients of complex tensors must set grad_ys (y.dtype = {y.dtype!r})")
                if y.shape.is_fully_defined() and y.shape.num_elements() == 1:
                    # a scalar loss: its ones need no runtime Shape and Fill
                    out.append(constant(1, dtype=y.dtype, shape=y.shape.as_list(),
                                                  name=f"grad_ys_{i}"))
                else:
                    one = constant(1, dtype=y.dtype, name=f"grad_ys_{i}")
                    out.append(fill(shape(y), one))
                continue
            if not isinstance(gy, IndexedSlices):
                gy = convert_to_tensor(gy, dtype_hint=y.dtype)
            if y.dtype.is_floating or y.dtype.is_integer:
                if not gy.dtype.is_floating and not gy.dtype.is_integer:
                    raise TypeError(f"Gradient type {gy.dtype.name} generated for real or integer-valued "
                                    f"tensor {y} with type {y.dtype.name} must be real or integer")
            elif y.dtype.is_complex:
                if not gy.dtype.is_complex:
                    raise TypeError(f"Gradient type {gy.dtype.name} generated for complex-valued tensor "
                                    f"{y} with type {y.dtype.name} must be real")
            elif y.dtype == dtypes.variant:
                if gy.dtype != dtypes.variant:
                    raise TypeError(f"Gradient type {gy.dtype.name} generated for variant tensor {y} must be variant")
            elif y.dtype == dtypes.resource:
                if gy.dtype == dtypes.resource:
                    raise TypeError(f"Input gradient {gy} for resource tensor {y} should not be a resource")
            else:
                raise TypeError(f"Tensor {y} with type {y.dtype.name} must be numeric to obtain a "
                                "default gradient")
            if isinstance(gy, IndexedSlices):
                out.append(IndexedSlices(identity(gy.values, name=f"grad_ys_{i}_values"),
                                         identity(gy.indices, name=f"grad_ys_{i}_indices"),
                                         gy.dense_shape))
            else:
                out.append(identity(gy, name=f"grad_ys_{i}"))
    return out


def _add_n(tensors: list, name: Optional[str] = None):
    tensors = [convert_to_tensor(t) for t in tensors]
    if len(tensors) == 1:
        return tensors[0]
    return add_n(tensors, name=name) if name else add_n(tensors)


def _multi_device_add_n(tensors: list):
    by_device: dict = collections.defaultdict(list)
    for t in tensors:
        by_device[t.device].append(t)
    summands = []
    for dev in sorted(by_device):
        group = by_device[dev]
        with group[0].graph.colocate_with(group[0].op, ignore_existing=True):
            summands.append(_add_n(group))
    return _add_n(summands)


def aggregate_indexed_slices(grads: list):
    """Sums gradients of which some are IndexedSlices: sparse if all are, else dense."""
    grads = [g for g in grads if g is not None]
    if len(grads) == 1:
        return grads[0]
    if any(isinstance(g, Tensor) for g in grads):
        return _add_n(grads)
    idx_dtypes = {g.indices.dtype for g in grads}
    indices = [g.indices if len(idx_dtypes) == 1 else cast(g.indices, dtypes.int64) for g in grads]
    return IndexedSlices(concat([g.values for g in grads], axis=0),
                         concat(indices, axis=0), grads[0].dense_shape)


def _aggregated_grads(grads: dict, op: Operation, method) -> list:
    out_grads = grads.get(op) or [[] for _ in op.outputs]
    for i, out_grad in enumerate(out_grads):
        if not isinstance(out_grad, list):
            continue
        if not all(isinstance(g, (Tensor, IndexedSlices)) for g in out_grad if g is not None):
            raise TypeError("gradients have to be either all Tensors or all IndexedSlices")
        parts = [g for g in out_grad if g is not None]
        if not parts:
            out_grads[i] = None
        elif len(parts) == 1:
            out_grads[i] = parts[0]
        elif all(isinstance(g, Tensor) for g in parts):
            if method in (AggregationMethod.EXPERIMENTAL_TREE, AggregationMethod.EXPERIMENTAL_ACCUMULATE_N):
                with api.name_scope(op.name + "_gradient_sum"):
                    running = parts[0]
                    for g in parts[1:]:
                        running = add_n([running, g])
                out_grads[i] = running
            else:
                out_grads[i] = _multi_device_add_n(parts)
        else:
            out_grads[i] = aggregate_indexed_slices(parts)
    grads[op] = out_grads
    return out_grads


# The zeros _backprop_op hands a gradient function for outputs nothing depends on: a gradient that
# would otherwise compute with them (a loop running backwards) can skip them.
_STAND_IN_ZEROS: "weakref.WeakSet[Tensor]" = weakref.WeakSet()


def is_stand_in_zeros(grad) -> bool:
    """Whether `grad` (an output gradient given to a gradient function) is None or the zeros
    tf.gradients stands in for an output that no y depends on."""
    return grad is None or (isinstance(grad, Tensor) and grad in _STAND_IN_ZEROS)


def _zeros_for(t: Tensor):
    if t.dtype == dtypes.resource:
        shape = t.op.attrs.get("shape")
        dtype = t.op.attrs.get("dtype")
        if shape is None or dtype is None:
            raise ValueError(f"Cannot make a zero gradient for resource {t.name}: unknown variable shape")
        return zeros(list(shape), dtype=dtypes.as_dtype(dtype))
    return zeros_like(t)


def _get_grad(grads: dict, t: Tensor, unconnected: UnconnectedGradients):
    op_grads = grads.get(t.op)
    grad = op_grads[t.value_index] if op_grads else None
    if isinstance(grad, list):   # x was never visited (e.g. its op is not between): aggregate now
        grad = None if not grad else grad[0] if len(grad) == 1 else aggregate_indexed_slices(grad)
    if grad is None and unconnected == UnconnectedGradients.ZERO:
        return _zeros_for(t)
    return grad


# -- the public entry point --------------------------------------------------------------------
@tf_export("gradients")
def gradients(ys, xs, grad_ys=None, name: str = "gradients", colocate_gradients_with_ops: bool = False,
              gate_gradients: bool = False, aggregation_method=None, stop_gradients=None,
              unconnected_gradients=UnconnectedGradients.NONE) -> list:
    """tf.gradients: symbolic d(sum(ys))/dx for each x in xs (a list, one entry per x).

    grad_ys weights each y (default ones); stop_gradients are treated as constants;
    an x that no y depends on gets None (or zeros with UnconnectedGradients.ZERO). An x may be a
    Variable: its gradient sums over every read of it (IndexedSlices for sparse lookups)."""
    try:
        unconnected = UnconnectedGradients(unconnected_gradients)
    except ValueError:
        raise ValueError(f"Unknown value for unconnected_gradients: {unconnected_gradients!r}") from None
    if aggregation_method is None:
        aggregation_method = AggregationMethod.DEFAULT
    ys = _as_list(ys)
    xs = _as_list(xs)
    stop_gradients = [] if stop_gradients is None else _as_list(stop_gradients)
    grad_ys = [None] * len(ys) if grad_ys is None else _as_list(grad_ys)
    graph = next((v.graph for v in ys + xs if isinstance(getattr(v, "graph", None), Graph)),
                 get_default_graph())
    with graph.as_default(), api.name_scope(name, "gradients") as grad_scope:
        # checked inside the scope, as TF does (a failed call still uses up its "gradients_N")
        if aggregation_method not in (AggregationMethod.ADD_N, AggregationMethod.EXPERIMENTAL_TREE,
                                      AggregationMethod.EXPERIMENTAL_ACCUMULATE_N):
            raise ValueError(f"Invalid aggregation_method specified {aggregation_method}.")
        ys = [convert_to_tensor(y) for y in ys]
        xs = [_variable_handle(x) if _variable_handle(x) is not None else convert_to_tensor(x) for x in xs]
        stop_gradients = [convert_to_tensor(s) if _variable_handle(s) is None else _variable_handle(s)
                          for s in stop_gradients]
        grad_ys = _default_grad_ys(grad_ys, ys, colocate_gradients_with_ops)
        to_ops = [y.op for y in ys]
        from_ops = [x.op for x in xs]
        reachable_to_ops, pending = _pending_count(to_ops, from_ops)
        grads: dict = {}
        for y, gy in zip(ys, grad_ys):
            _set_grad(grads, y, gy)
        queue: collections.deque = collections.deque()
        queued: set = set()
        for op in to_ops:
            if pending[op] == 0 and op not in queued and op in reachable_to_ops:
                queued.add(op)
                queue.append(op)
        stop_ops = _stop_ops(from_ops, [s.op for s in stop_gradients], pending)
        while queue:
            op = queue.popleft()
            _backprop_op(op, grads, stop_ops, grad_scope, colocate_gradients_with_ops, gate_gradients,
                         aggregation_method)
            for t in op.inputs:
                pending[t.op] -= 1
                if pending[t.op] == 0:
                    queue.append(t.op)
        return [_get_grad(grads, x, unconnected) for x in xs]


def _backprop_op(op: Operation, grads: dict, stop_ops: set, grad_scope: str, colocate: bool,
                 gate_gradients: bool, aggregation_method) -> None:
    """Calls op's gradient function on its aggregated output gradients; records input gradients."""
    with _maybe_colocate_with(op, colocate):
        out_grads = _aggregated_grads(grads, op, aggregation_method)
        has_out_grads = any(g is not None for g in out_grads)
        grad_fn = None
        if has_out_grads and op not in stop_ops:
            grad_fn = gradient_for(op)   # LookupError naming the op when none is registered
        if grad_fn is not None and has_out_grads:
            for i, g in enumerate(out_grads):
                if g is None and _is_trainable(op.outputs[i]):
                    # the ys do not depend on this output: its gradient is zero
                    out_grads[i] = _zeros_for(op.outputs[i])
                    _STAND_IN_ZEROS.add(out_grads[i])
            with api.name_scope(op.name + "_grad"):
                in_grads = grad_fn(op, *out_grads)
                in_grads = _as_list(in_grads) if in_grads is not None else [None]
                if len(in_grads) != len(op.inputs):
                    raise ValueError(f"Num gradients {len(in_grads)} generated for op {op.node_def} do not "
                                     f"match num inputs {len(op.inputs)}")
                in_grads = [reduce_to_input(g, t, op.name, i)
                            for i, (t, g) in enumerate(zip(op.inputs, in_grads))]
                if gate_gradients and sum(g is not None for g in in_grads) > 1:
                    with op.graph.device(None), op.graph.colocate_with(None, ignore_existing=True):
                        in_grads = tuple_(in_grads)
        else:
            in_grads = [None] * len(op.inputs)
        for t, g in zip(op.inputs, in_grads):
            if g is not None:
                _set_grad(grads, t, g)


# -- tf.custom_gradient ------------------------------------------------------------------------
_custom_ids = itertools.count()


def _variables_read_in(graph, first_op_index: int) -> list:
    """Variables whose values ops created since `first_op_index` read (their handles predate)."""
    new_ops = graph.get_operations()[first_op_index:]
    new_set = set(new_ops)
    handles = []
    for op in new_ops:
        if op.type in ("ReadVariableOp", "ResourceGather") and op.inputs[0].op not in new_set:
            if op.inputs[0] not in handles:
                handles.append(op.inputs[0])
    if not handles:
        return []
    known = {}
    for key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.LOCAL_VARIABLES):
        for v in graph.get_collection(key):
            h = _variable_handle(v)
            if h is not None:
                known.setdefault(h, v)
    return [known[h] for h in handles if h in known]


@tf_export("custom_gradient")
def custom_gradient(f):
    """tf.custom_gradient: decorates f(*x) -> (y, grad_fn) so that d/dx uses grad_fn(*dy).
    When f reads variables, grad_fn must take `variables=` and return (input grads, variable grads)."""
    import functools
    import inspect

    @functools.wraps(f)
    def decorated(*args, **kwargs):
        if kwargs:
            raise ValueError("The custom_gradient decorator currently supports keywords arguments "
                             "only when eager execution is enabled.")
        graph = get_default_graph()
        args = [convert_to_tensor(a) for a in args]
        first = len(graph.get_operations())
        result, grad_fn = f(*args)
        variables = _variables_read_in(graph, first)
        if variables:
            params = inspect.signature(grad_fn).parameters
            if "variables" not in params and not any(p.kind == p.VAR_KEYWORD for p in params.values()):
                raise TypeError("If using @custom_gradient with a function that uses variables, then grad_fn "
                                "must accept a keyword argument 'variables'.")
        flat = list(result) if isinstance(result, (list, tuple)) else [result]
        flat = [convert_to_tensor(r) for r in flat]
        n = len(flat)
        name = f"CustomGradient-{next(_custom_ids)}"

        def internal_grad_fn(op, *result_grads):
            dys = result_grads[:n]
            if variables:
                input_grads, variable_grads = grad_fn(*dys, variables=variables)
                variable_grads = list(variable_grads)
                if len(variable_grads) != len(variables):
                    raise ValueError("Must return gradient for each variable from @custom_gradient grad_fn.")
            else:
                input_grads, variable_grads = grad_fn(*dys), []
            input_grads = list(input_grads) if isinstance(input_grads, (list, tuple)) else [input_grads]
            if len(input_grads) != len(args):
                raise ValueError(f"custom_gradient function expected to return {len(args)} gradients, "
                                 f"but returned {len(input_grads)} instead.")
            return [None] * n + input_grads + variable_grads

        GRADIENTS[name] = internal_grad_fn
        with graph.gradient_override_map({"IdentityN": name}):
            outs = identity_n(flat + args + [convert_to_tensor(v) for v in variables])
        outs = outs[:n]
        if isinstance(result, (list, tuple)):
            return type(result)(outs)
        return outs[0]
    return decorated


# -- tf.hessians (unrolled: for tensors of statically known, small size) -----------------------
@tf_export("hessians")
def hessians(ys, xs, name: str = "hessians", colocate_gradients_with_ops: bool = False,
             gate_gradients: bool = False, aggregation_method=None) -> list:
    """tf.hessians: the matrix of second derivatives of sum(ys) w.r.t. each x, shaped x.shape*2."""
    xs = _as_list(xs)
    kwargs = dict(colocate_gradients_with_ops=colocate_gradients_with_ops, gate_gradients=gate_gradients,
                  aggregation_method=aggregation_method)
    result = []
    with api.name_scope(name):
        first = gradients(ys, xs, **kwargs)
        for grad, x in zip(first, xs):
            x = convert_to_tensor(x) if _variable_handle(x) is None else x
            shape = x.shape if isinstance(x, Tensor) else x.get_shape()
            if not shape.is_fully_defined():
                raise ValueError(f"tensorweave's hessians needs a statically known shape for {x.name}, "
                                 f"got {shape}")
            n = int(shape.num_elements())
            if grad is None:
                result.append(None)
                continue
            flat = reshape(grad, [-1])
            rows = []
            for j in range(n):
                g2 = gradients(flat[j], x, **kwargs)[0]
                rows.append(g2 if g2 is not None else zeros(shape.as_list(), dtype=flat.dtype))
            stacked = stack([convert_to_tensor(r) for r in rows])
            dims = shape.as_list()
            result.append(reshape(stacked, np.array(dims + dims, dtype=np.int32)))
    return result
