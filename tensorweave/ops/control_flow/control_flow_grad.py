"""Gradients of the functional control-flow ops (If; While's is missing: it needs the stacks of
forward values TF's while-loop gradient keeps). They build tf.gradients inside FuncGraphs, so they
are registered here, after both the control-flow ops and tf.gradients are defined."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.func_graph import FuncGraph, replay, resolve_capture, unique_function_name
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor, is_tensor
from tensorweave.ops.array.fill import zeros, zeros_like
from tensorweave.ops.control_flow.cond import union_captures
from tensorweave.ops.gradients.gradients import gradients
from tensorweave.ops.registry import RegisterGradient


def _differentiable(dt) -> bool:
    return dt.is_floating or dt.is_complex or dt == dtypes.resource


@RegisterGradient("If")
def _if_grad(op, *grads):
    """Gradient of If: an If over gradient branches, each recomputing its forward branch from the
    same inputs and differentiating it, so only the taken branch's gradient runs."""
    g = get_default_graph()
    fwd_inputs = list(op.inputs[1:])
    scope = g.get_name_scope()
    results = []
    for branch, which in ((op.get_attr("then_branch"), "true"), (op.get_attr("else_branch"), "false")):
        fg = FuncGraph(unique_function_name(g, f"{op.name}_grad_{which}"), g, name_scope=scope)
        with fg.as_default():
            xs = [fg.capture(t) for t in fwd_inputs]
            outs = replay(branch, xs)
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
