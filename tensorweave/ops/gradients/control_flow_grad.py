"""Gradients of the functional control-flow ops If and While. They build tf.gradients inside
FuncGraphs (and read variables' handles), so they live here, beside tf.gradients and above the
control-flow and state ops."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.func_graph import FuncGraph, replay, resolve_capture, unique_function_name
from tensorweave.framework.graph import Operation, Tensor, get_default_graph
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor, is_tensor
from tensorweave.ops.array.core import constant, identity
from tensorweave.ops.array.fill import zeros, zeros_like
from tensorweave.ops.control_flow import tensor_list
from tensorweave.ops.control_flow.cond import union_captures
from tensorweave.ops.control_flow.while_loop import _function_changed, iteration_count, record, record_like, while_loop
from tensorweave.ops.gradients.gradients import gradients, is_stand_in_zeros
from tensorweave.ops.helpers import dense
from tensorweave.ops.math.binary import add_n, greater_equal, subtract
from tensorweave.ops.registry import RegisterGradient
from tensorweave.ops.state.variable_ops import handle_dtype, handle_shape, variable_shape


def _differentiable(dt) -> bool:
    return dt.is_floating or dt.is_complex or dt == dtypes.resource


@RegisterGradient("If")
def _if_grad(op, *grads):
    """Gradient of If: an If over gradient branches, each differentiating a copy of its forward
    branch, so only the taken branch's gradient runs. The forward values the gradient reads are
    the forward If's own, which it returns as extra outputs (as TF's cond_v2 does): a branch's
    random numbers (Dropout's mask) are the ones its gradient sees, and nothing runs twice. A copy
    of an If inside a loop's or another If's gradient, or an If whose branches another If shares,
    recomputes them in the copy instead (as do values of other than numeric or bool dtypes)."""
    g = get_default_graph()
    fwd_inputs = list(op.inputs[1:])
    scope = g.get_name_scope()
    branches = (op.get_attr("then_branch"), op.get_attr("else_branch"))
    exports = _may_add_outputs(op, branches)
    results = []
    for k, which in enumerate(("true", "false")):
        fg = FuncGraph(unique_function_name(g, f"{op.name}_grad_{which}"), g, name_scope=scope)
        with fg.as_default():
            xs = [fg.capture(t) for t in fwd_inputs]
            first = len(fg.get_operations())
            mapping: dict = {}
            outs = replay(branches[k], xs, mapping=mapping)
            copied = set(fg.get_operations()[first:]) - {t.op for t in xs}
            ys, dys = [], []
            for y, dy in zip(outs, grads):
                if dy is not None and isinstance(y, Tensor) and _differentiable(y.dtype):
                    ys.append(y)
                    dys.append(fg.capture(convert_to_tensor(dy)) if is_tensor(dy) else dy)
            wrt = [i for i, x in enumerate(xs) if _differentiable(x.dtype)]
            dxs = [None] * len(xs)
            if ys and wrt:
                got = gradients(ys, [xs[i] for i in wrt], grad_ys=dys)
                for i, d in zip(wrt, got):
                    dxs[i] = None if d is None else convert_to_tensor(d)
            if exports:
                dxs = _read_forward_values(op, k, branches, fg, first, copied, mapping, dxs)
        results.append((fg, xs, dxs))
    (tfg, txs, tdx), (ffg, fxs, fdx) = results
    keep = [i for i in range(len(fwd_inputs)) if tdx[i] is not None or fdx[i] is not None]
    for fg, xs, dxs, other in ((tfg, txs, tdx, fdx), (ffg, fxs, fdx, tdx)):
        outs = []
        with fg.as_default():
            for i in keep:
                d = dxs[i]
                if d is None:
                    d = _zeros_for(xs[i], other[i], op)
                outs.append(fg.capture(d) if d.graph is not fg else d)
        fg.outputs = outs
    if not keep:
        return [None] * len(op.inputs)
    dtypes_ = [tfg.outputs[k].dtype for k in range(len(keep))]
    for a, b in zip(tfg.outputs, ffg.outputs):
        if a.dtype != b.dtype:
            raise TypeError(f"Gradient branches of '{op.name}' disagree on dtype: {a.dtype.name} vs {b.dtype.name}")
    union = union_captures(tfg, ffg)
    shapes = [a.shape.most_specific_compatible_shape(b.shape) for a, b in zip(tfg.outputs, ffg.outputs)]
    grad_op = g.create_op("If", [op.inputs[0]] + union,
                          {"then_branch": tfg, "else_branch": ffg, "Tout": dtypes_, "output_shapes": shapes},
                          name=f"{op.name.rsplit('/', 1)[-1]}_grad")
    grad_op._add_control_inputs(tfg.control_captures + [c for c in ffg.control_captures
                                                         if c not in tfg.control_captures])
    out = [None] * len(op.inputs)
    for k, i in enumerate(keep):
        out[i + 1] = grad_op.outputs[k]
    return out


def _may_add_outputs(op: Operation, branches: tuple) -> bool:
    """Whether If `op` may return its branches' values for its gradient: it is not a copy made in a
    gradient (its branches were built in its own graph) and no other If runs its branches."""
    if any(b.outer_graph is not op.graph for b in branches):
        return False
    return not any(o is not op and o.type == "If" and (o._attrs.get("then_branch") in branches or
                                                        o._attrs.get("else_branch") in branches)
                   for o in op.graph.get_operations())


def _read_forward_values(op: Operation, k: int, branches: tuple, fg: FuncGraph, first: int, copied: set,
                         mapping: dict, dxs: list) -> list:
    """In gradient branch `fg` of If `op`'s branch k, each value of the forward branch's copy
    (`copied`, `mapping`: branch tensor -> copy) the gradient reads is read from the forward If
    instead, and the copy's ops that are no longer read go; returns `dxs` so rewired."""
    forward_of = {c: b for b, c in mapping.items() if isinstance(c, Tensor) and c.op in copied}
    reads: dict = {}

    def read(t: Tensor) -> Tensor:
        if t not in reads:
            reads[t] = fg.capture(_forward_output(op, k, branches, forward_of[t]))
        return reads[t]

    def exported(t) -> bool:
        return isinstance(t, Tensor) and t in forward_of and t.op.type != "Const" and _numeric(t.dtype)

    for gop in [o for o in fg.get_operations()[first:] if o not in copied]:
        for c in [c for c in gop.control_inputs if c in copied]:
            gop._remove_control_input(c)   # (the forward branch ran)
        for idx, t in enumerate(gop.inputs):
            if exported(t):
                gop._update_input(idx, read(t))
    dxs = [read(d) if exported(d) else d for d in dxs]
    live = set(_live_ops([d for d in dxs if d is not None], first, fg))
    captured = {t.op for t in fg.internal_captures}
    fg.remove_ops([o for o in fg.get_operations()[first:] if o not in live and o not in captured])
    fg.sort_ops()
    return dxs


def _numeric(dt) -> bool:
    return dt.is_floating or dt.is_complex or dt.is_integer or dt.is_bool


def _forward_output(op: Operation, k: int, branches: tuple, t: Tensor) -> Tensor:
    """The output of If `op` that is branch k's tensor `t` (an output it adds: the other branch
    returns a scalar zero there, which the gradient's other branch never reads; the If's
    output_shapes entry is unknown, so that TF, which checks each branch's results against it,
    accepts both)."""
    body, other = branches[k], branches[1 - k]
    for i, out in enumerate(body.outputs):
        if out is t:
            return op.outputs[i]
    body.outputs = list(body.outputs) + [t]
    with other.as_default():
        other.outputs = list(other.outputs) + [constant(np.zeros((), t.dtype.as_numpy_dtype), name="unused")]
    op._set_attr("Tout", list(op.get_attr("Tout")) + [t.dtype])
    if op._attrs.get("output_shapes") is not None:
        op._set_attr("output_shapes", list(op.get_attr("output_shapes")) + [TensorShape(None)])
    _function_changed(body)
    _function_changed(other)
    return op._add_output(t.dtype, t.shape)


def _zeros_for(x: Tensor, other: Tensor, op) -> Tensor:
    """Zeros standing for "no gradient" in the branch that does not use input `x`."""
    if x.dtype != dtypes.resource:
        return zeros_like(x)
    if other is not None and other.shape.is_fully_defined():
        return zeros(other.shape.as_list(), dtype=other.dtype)
    handle_op = resolve_capture(x).op
    while handle_op.type == "Identity" and handle_op.inputs:
        handle_op = handle_op.inputs[0].op
    if handle_op.type == "VarHandleOp" and other is not None:
        shape = TensorShape(handle_op.get_attr("shape"))
        if shape.is_fully_defined():
            return zeros(shape.as_list(), dtype=other.dtype)
    raise NotImplementedError(f"Gradient of '{op.name}' with respect to resource input {x.name} needs a "
                              "fully defined shape")


# -- While ----------------------------------------------------------------------------------------
# The gradient of a While is a While running backwards over the forward iterations. Its body is the
# forward body's gradient: the forward body is copied into it and differentiated, and then every
# forward value the gradient ops use is read from a list the forward While records (one value per
# iteration, TF's stacks), so the backward pass sees exactly the forward values (the same dropout
# masks, the same variable reads) and the copied forward ops are dropped again.

def _carries_gradient(dt) -> bool:
    return dt.is_floating or dt.is_complex or dt == dtypes.variant


@RegisterGradient("While")
def _while_grad(op, *grads):
    if not op._attrs.get("back_prop", True):
        return [None] * len(op.inputs)
    types = op.get_attr("T")
    n = len(types)
    nc, nb = op.get_attr("num_cond_captures"), op.get_attr("num_body_captures")
    body = op.get_attr("body")
    captures = list(op.inputs[n + nc:n + nc + nb])
    # A variable that no gradient reaches from outside and whose value feeds only its own next value
    # (dynamic_rnn's list of every step's output, where only the last output is used) has a zero
    # gradient at every iteration: the backward loop leaves it out.
    var_idx = [i for i in range(n) if _carries_gradient(types[i])
               and not (is_stand_in_zeros(grads[i]) and _feeds_only_itself(body, i))]
    cap_idx = [j for j, t in enumerate(captures) if _carries_gradient(t.dtype) or t.dtype == dtypes.resource]
    # Gradients reaching the recorded lists (a second derivative through this loop's gradient) flow
    # into the recorded body tensors, iteration by iteration.
    recorded = [(t, grads[n + 1 + m]) for m, t in enumerate(body.outputs[n:])
                if n + 1 + m < len(grads) and not is_stand_in_zeros(grads[n + 1 + m])]
    if all(is_stand_in_zeros(grads[i]) for i in var_idx) and not recorded:
        return [None] * len(op.inputs)
    count = iteration_count(op)
    dv0 = [dense(grads[i]) if grads[i] is not None else zeros_like(op.outputs[i]) for i in var_idx]
    dc0 = [_variable_zeros(captures[j], op) if captures[j].dtype == dtypes.resource else zeros_like(captures[j])
           for j in cap_idx]
    inv = op.get_attr("output_shapes")
    invariants = ([TensorShape([])] + [d.shape.most_specific_compatible_shape(inv[i]) for d, i in zip(dv0, var_idx)]
                  + [d.shape for d in dc0])
    nv = len(var_idx)

    def grad_body(k, *state):
        return _backward_step(op, body, captures, var_idx, cap_idx, recorded, k, list(state[:nv]),
                              list(state[nv:]))

    res = while_loop(lambda k, *_: greater_equal(k, 0), grad_body, [subtract(count, 1)] + dv0 + dc0,
                     shape_invariants=invariants, parallel_iterations=op.get_attr("parallel_iterations"),
                     return_same_structure=True)
    # The recorded lists never leave the forward loop's task: the backward loop joins its
    # colocation group (the placer then puts both where the group's requests agree).
    grad_op = res[0].op
    grad_op._set_attr("_class", sorted(set(grad_op.colocation_groups()) | set(op.colocation_groups())))
    out = [None] * len(op.inputs)
    for i, d in zip(var_idx, res[1:1 + nv]):
        out[i] = d
    for j, d in zip(cap_idx, res[1 + nv:]):
        out[n + nc + j] = d
    return out


def _feeds_only_itself(body: FuncGraph, i: int) -> bool:
    """Whether loop variable i's value in `body` reaches no output but its own next value."""
    others = {t for k, t in enumerate(body.outputs) if k != i}
    seen, stack = set(), [body.inputs[i]]
    while stack:
        t = stack.pop()
        if t in others:
            return False
        for op in t.consumers():
            if op not in seen:
                seen.add(op)
                stack.extend(op.outputs)
    return True


def _backward_step(op: Operation, body: FuncGraph, captures: list, var_idx: list, cap_idx: list, recorded: list,
                   k: Tensor, dvs: list, dcs: list) -> list:
    """One backward iteration, built in the gradient loop's body: given the gradients of the body's
    outputs at forward iteration k (of its loop variables, and of the `recorded` (body tensor,
    gradient of its list of values) pairs), those of its inputs (loop variables), and the running
    sums of the gradients of the tensors the body captures."""
    bg = get_default_graph()
    first = len(bg.get_operations())
    n = len(op.get_attr("T"))
    stand_ins = [bg.create_op("Placeholder", [], {"dtype": t.dtype, "shape": t.shape}, name="forward_value").outputs[0]
                 for t in body.inputs[:n]]
    caps_in = [bg.capture(t) for t in captures]
    mapping: dict = {}
    outs = replay(body, stand_ins + caps_in, mapping=mapping)
    copied = set(bg.get_operations()[first:]) - {t.op for t in caps_in}
    xs = [stand_ins[i] for i in var_idx] + [caps_in[j] for j in cap_idx]
    ys = [outs[i] for i in var_idx] + [mapping[t] for t, _ in recorded]
    dys = dvs + [tensor_list.get_item(bg.capture(dense(d)), k, t.dtype, t.shape) for t, d in recorded]
    dxs = gradients(ys, xs, grad_ys=dys)
    new_dvs = [identity(dense(d)) if d is not None else zeros_like(dv) for d, dv in zip(dxs, dvs)]
    new_dcs = [add_n([dc, dense(d)]) if d is not None else dc for d, dc in zip(dxs[len(var_idx):], dcs)]
    results = [subtract(k, 1)] + new_dvs + new_dcs
    forward_of = {mapping[t]: t for t in body.inputs[:n]}
    forward_op = {}
    for f, r in mapping.items():
        if r.op in copied and r.op.type != "Placeholder":
            forward_op[r.op] = f.op
    reads: dict = {}
    for gop in _live_ops(results, first, bg):
        if gop in copied:
            continue
        for c in [c for c in gop.control_inputs if c in copied]:
            gop._remove_control_input(c)   # the forward body already ran
        for idx, t in enumerate(gop.inputs):
            if t.op not in copied or t.op.type == "Const":
                continue
            if t not in reads:
                if t in forward_of:
                    fwd = forward_of[t]
                else:
                    fwd_op = forward_op[t.op]
                    record_like(fwd_op, t.op)
                    fwd = fwd_op.outputs[t.value_index]
                values = bg.capture(record(op, fwd))
                reads[t] = tensor_list.get_item(values, k, t.dtype, t.shape)
            gop._update_input(idx, reads[t])
    live = set(_live_ops(results, first, bg))
    captured = {t.op for t in bg.internal_captures}
    bg.remove_ops([o for o in bg.get_operations()[first:] if o not in live and o not in captured])
    bg.sort_ops()
    return results


def _variable_zeros(handle: Tensor, op: Operation) -> Tensor:
    """Zeros shaped like the variable behind a resource handle the loop body reads."""
    dtype = handle_dtype(handle)
    if dtype is None:
        raise ValueError(f"Gradient of '{op.name}': cannot tell the dtype of the variable behind {handle.name}")
    shape = handle_shape(handle)
    return zeros(shape.as_list() if shape.is_fully_defined() else variable_shape(handle), dtype=dtype)


def _live_ops(results: list, first: int, graph) -> list:
    """The ops created since index `first` of `graph` that `results` depend on."""
    new = set(graph.get_operations()[first:])
    seen: set = set()
    stack = [t.op for t in results]
    while stack:
        o = stack.pop()
        if o in seen or o not in new:
            continue
        seen.add(o)
        stack.extend(t.op for t in o.inputs)
        stack.extend(o.control_inputs)
    return [o for o in graph.get_operations()[first:] if o in seen]

