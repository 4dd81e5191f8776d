"""tf.while_loop as one functional "While" op: cond and body are FuncGraphs and the kernel
iterates their plans, so the flat executor never sees Enter/Exit/NextIteration frames."""
from __future__ import annotations

import re

import numpy as np

from tensorweave.framework import dtypes, nest
from tensorweave.framework.func_graph import FuncGraph, resource_colocation, unique_function_name
from tensorweave.framework.graph import Operation, Tensor, get_default_graph
from tensorweave.framework.shapes import TensorShape, as_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.control_flow.loop_body import while_kernel
from tensorweave.ops.registry import register, register_gpu


def _shape_le(shape: TensorShape, invariant: TensorShape) -> bool:
    """TF's _ShapeLessThanOrEqual: `shape` is at least as specific as `invariant`."""
    if invariant.ndims is None:
        return True
    if shape.ndims != invariant.ndims:
        return False
    return all(b.value is None or a.value == b.value for a, b in zip(shape.dims, invariant.dims))


def _while_infer(op):
    # without output_shapes (a GraphDef may leave them out), TF's While has its inputs' shapes
    out = list(zip(op.get_attr("T"), op.get_attr("output_shapes") or [t.shape for t in op.inputs]))
    if op._attrs.get("record_history"):
        # the gradient's view of the forward loop: its iteration count and, per recorded body
        # tensor, the list of that tensor's value at each iteration
        out.append((dtypes.int32, TensorShape([])))
        out += [(dtypes.variant, TensorShape([]))] * op.get_attr("num_recorded")
    return out


# The gradient (control_flow_grad.py) runs the body's gradient backwards over the values this op
# records once `record` has asked it to.
register("While", _while_infer, while_kernel, stateful=True, needs_step=True)
register_gpu("While")


def _function_changed(fg) -> None:
    """A body gained outputs: it gets a new function name, as does every body around it, so that no
    plan cached under an old name (runtime plans are cached per function name) is reused."""
    g = fg
    while isinstance(g, FuncGraph):
        g.name = unique_function_name(g.outer_graph, re.sub(r"_\d+$", "", g.name))
        g = g.outer_graph
    g._mutations += 1


def iteration_count(op: Operation) -> Tensor:
    """The number of iterations `op` (a While) ran, an output it adds the first time it is asked."""
    n = len(op.get_attr("T"))
    if not op._attrs.get("record_history"):
        op._set_attr("record_history", True)
        op._set_attr("num_recorded", 0)
        op._add_output(dtypes.int32, TensorShape([]))
        _function_changed(op.graph)
    return op.outputs[n]


def record_like(forward: Operation, copy: Operation) -> None:
    """A copy of While `forward` (same body) that records values: `forward` records them too."""
    if copy.type != "While" or not copy._attrs.get("record_history"):
        return
    iteration_count(forward)
    extra = copy.get_attr("num_recorded") - forward.get_attr("num_recorded")
    if extra > 0:
        forward._set_attr("num_recorded", copy.get_attr("num_recorded"))
        for _ in range(extra):
            forward._add_output(dtypes.variant, TensorShape([]))
        _function_changed(forward.graph)


def record(op: Operation, t: Tensor) -> Tensor:
    """The list of `t`'s values at each iteration of While `op` (`t` a tensor of its body),
    recorded by the op from now on; a tensor asked for twice is recorded once."""
    iteration_count(op)
    body = op.get_attr("body")
    n = len(op.get_attr("T"))
    for k, r in enumerate(body.outputs[n:]):
        if r is t:
            return op.outputs[n + 1 + k]
    body.outputs = list(body.outputs) + [t]
    op._set_attr("num_recorded", op.get_attr("num_recorded") + 1)
    out = op._add_output(dtypes.variant, TensorShape([]))
    _function_changed(body)
    return out


def _body_graph(outer, scope: str, kind: str, flat_vars: list, invariants: list) -> FuncGraph:
    fg = FuncGraph(unique_function_name(outer, f"{scope.rstrip('/')}_{kind}"), outer, name_scope=scope)
    for v, shp in zip(flat_vars, invariants):
        fg.add_arg(v.dtype, shp, name="loop_var")
    return fg


def _hoist_variable_reads(outer, body: FuncGraph) -> None:
    """A variable the body only reads is read once, before the loop, and the body captures the
    value instead of the resource handle: the loop then runs where its device scope says (a
    worker) rather than where the variable lives (a ps), and variables of several tasks can
    feed one loop. A variable the body also writes (or gathers from) stays a handle."""
    for handle in [t for t in body.external_captures if t.dtype == dtypes.resource]:
        placeholder = body.captured(handle)
        reads = placeholder.consumers()
        if not reads or any(r.type != "ReadVariableOp" for r in reads):
            continue
        attrs = {k: v for k, v in reads[0]._attrs.items() if k != "_class"}
        with outer.colocate_with(handle.op):
            value = outer.create_op("ReadVariableOp", [handle], attrs, name="read_before_loop").outputs[0]
        inner = body.capture(value)
        for r in reads:
            for consumer in r.outputs[0].consumers():
                for i, t in enumerate(consumer.inputs):
                    if t is r.outputs[0]:
                        consumer._update_input(i, inner)
            for follower in list(r._control_outputs):
                follower._remove_control_input(r)
            if r.outputs[0] in body.outputs:
                body.outputs = [inner if o is r.outputs[0] else o for o in body.outputs]
        body.remove_ops(reads)
        body.uncapture(handle)


def _flow_carrier(v):
    """A loop variable carried by its `flow` tensor (a TensorArray), else None."""
    return v if hasattr(v, "_with_flow") else None


def _carried(templates: list, tensors: list) -> list:
    """Loop tensors with TensorArrays rebuilt around their flows."""
    return [t._with_flow(x) if t is not None else x for t, x in zip(templates, tensors)]


@tf_export("while_loop")
def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10, back_prop=True,
               swap_memory=False, name=None, maximum_iterations=None, return_same_structure=False):
    """tf.while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
    back_prop=True, swap_memory=False, name=None, maximum_iterations=None,
    return_same_structure=False): repeats `loop_vars = body(*loop_vars)` while
    `cond(*loop_vars)` is true (at most `maximum_iterations` times).

    `loop_vars` is a list/tuple whose elements may be nested structures of tensors; `body`
    returns the same structure with the same dtypes, and each tensor keeps its shape unless
    `shape_invariants` (same structure of TensorShapes) allows it to vary. Returns the final
    values; a single loop tensor comes back bare unless `return_same_structure`.
    With back_prop=False no gradient flows through the loop (tf.gradients treats its outputs as
    constants). parallel_iterations and swap_memory are accepted for compatibility.
    """
    if not callable(cond):
        raise TypeError("cond must be callable.")
    if not callable(body):
        raise TypeError("body must be callable.")
    if parallel_iterations < 1:
        raise TypeError("parallel_iterations must be a positive integer.")
    if not loop_vars:
        raise ValueError("No loop variables provided")
    g = get_default_graph()
    with g.name_scope(name or "while") as scope:
        wname = scope[:-1]
        max_t = None
        if maximum_iterations is not None:
            if isinstance(maximum_iterations, (int, float, np.number)) and not isinstance(maximum_iterations, bool):
                maximum_iterations = int(maximum_iterations)
            max_t = convert_to_tensor(maximum_iterations, name="maximum_iterations")
            if max_t.shape.ndims != 0:
                raise ValueError(f"maximum_iterations must be a scalar, saw shape: {max_t.shape}")
            if not max_t.dtype.is_integer:
                raise TypeError(f"maximum_iterations of '{wname}' must be an integer, got {max_t.dtype.name}")
        leaves = nest.flatten(loop_vars)
        templates = [_flow_carrier(v) for v in leaves]
        flat = [v.flow if t is not None else v if isinstance(v, Operation) else convert_to_tensor(v)
                for v, t in zip(leaves, templates)]
        for v in flat:
            if isinstance(v, Operation):
                raise TypeError(f"Loop variables of '{wname}' must be tensors, got operation {v.name}")
        if shape_invariants is None:
            invariants = [v.shape for v in flat]
        else:
            nest.assert_same_structure(loop_vars, shape_invariants, check_types=False)
            invariants = [as_shape(s) if t is None else TensorShape([])
                          for s, t in zip(nest.flatten(shape_invariants), templates)]
            for v, inv in zip(flat, invariants):
                if not _shape_le(v.shape, inv):
                    raise ValueError(f"The shape invariant specified for {v.name} is not compatible with the "
                                     f"initial shape of the loop variable. It enters the loop with shape "
                                     f"{v.shape}, but the specified shape invariant is {inv}.")

        cfg = _body_graph(g, scope, "cond", flat, invariants)
        with cfg.as_default():
            c = cond(*nest.pack_sequence_as(loop_vars, _carried(templates, cfg.inputs[:len(flat)])))
            c = convert_to_tensor(c)
            if c.dtype != dtypes.bool:
                raise TypeError(f"Input 'input' of 'LoopCond' Op has type {c.dtype.name} that does not match "
                                f"expected type of bool (in while loop '{wname}').")
            if c.shape.ndims not in (None, 0):
                raise ValueError(f"Shape must be rank 0 but is rank {c.shape.ndims} for the condition of "
                                 f"while loop '{wname}'")
            cfg.outputs = [cfg.capture(c) if c.graph is not cfg else c]

        bfg = _body_graph(g, scope, "body", flat, invariants)
        with bfg.as_default():
            packed = nest.pack_sequence_as(loop_vars, _carried(templates, bfg.inputs[:len(flat)]))
            result = body(*packed)
            if not nest.is_sequence(result):
                result = [result]
            nest.assert_same_structure(list(packed), list(result))
            outs = []
            result_leaves = nest.flatten(result)
            templates = [_flow_carrier(r) if t is not None else None for r, t in zip(result_leaves, templates)]
            for v, inv, r, t in zip(flat, invariants, result_leaves, templates):
                r = r.flow if t is not None else r
                if isinstance(r, Operation) or r is None:
                    raise TypeError(f"The body of while loop '{wname}' returned {r!r} for loop variable {v.name}")
                r = convert_to_tensor(r)
                if r.dtype != v.dtype:
                    raise TypeError(f"Loop var {v.name} enters the loop with type {v.dtype.name} but has type "
                                    f"{r.dtype.name} after 1 iteration (in while loop '{wname}').")
                if not _shape_le(r.shape, inv):
                    raise ValueError(f"Input tensor '{v.name}' enters the loop with shape {v.shape}, but has shape "
                                     f"{r.shape} after one iteration. To allow the shape to vary across "
                                     "iterations, use the `shape_invariants` argument of tf.while_loop to "
                                     "specify a less-specific shape.")
                outs.append(bfg.capture(r) if r.graph is not bfg else r)
            bfg.outputs = outs

        ctrl = cfg.control_captures + [c for c in bfg.control_captures if c not in cfg.control_captures]
        with g.control_dependencies(ctrl):
            _hoist_variable_reads(g, cfg)
            _hoist_variable_reads(g, bfg)
        cc, bc = cfg.external_captures, bfg.external_captures
        inputs = flat + cc + bc + ([max_t] if max_t is not None else [])
        attrs = {"cond": cfg, "body": bfg, "T": [v.dtype for v in flat], "output_shapes": invariants,
                 "num_cond_captures": len(cc), "num_body_captures": len(bc),
                 "has_maximum_iterations": max_t is not None,
                 "parallel_iterations": int(parallel_iterations), "back_prop": bool(back_prop)}
        colocate = resource_colocation(cc + bc)
        if colocate:
            attrs["_class"] = colocate
        with g.control_dependencies(ctrl):
            op = g.create_op("While", inputs, attrs, name=scope)
    outputs = op.outputs[:len(flat)]
    packed_out = nest.pack_sequence_as(loop_vars, _carried(templates, outputs))
    if return_same_structure:
        return packed_out
    return outputs[0] if len(outputs) == 1 else packed_out
