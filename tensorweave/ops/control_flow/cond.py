"""Conditionals: tf.cond and tf.case.

Conditionals are *functional*: `cond` builds each branch in its own FuncGraph and adds one
"If" op whose kernel runs only the taken branch's plan, and a partitioner places an If (with its
bodies) on one task like any op. (Switch/Merge and dead tensors exist only for TF 1 graphs
imported as they are: switch_merge.py.)
"""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes, errors, nest
from tensorweave.framework.func_graph import FuncGraph, resource_colocation, unique_function_name
from tensorweave.framework.graph import Operation, Tensor, get_default_graph
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import stack
from tensorweave.ops.array.core import constant, identity
from tensorweave.ops.grouping import group
from tensorweave.ops.debugging.printing import Assert
from tensorweave.ops.math.binary import equal, less_equal
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.registry import register


# -- If ------------------------------------------------------------------------------------------
def _if_infer(op):
    pred = op.inputs[0]
    if pred.shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {pred.shape.ndims}")
    # without output_shapes (a GraphDef may leave them out), TF's If has outputs of unknown shape
    return list(zip(op.get_attr("Tout"), op.get_attr("output_shapes") or [None] * len(op.get_attr("Tout"))))


def _truth(node, pred) -> bool:
    if np.ndim(pred) != 0:
        raise errors.InvalidArgumentError(
            node, node.name, f"The predicate of '{node.name}' must be a scalar, but it has shape "
                             f"{list(np.shape(pred))}")
    return bool(pred)


def _if_kernel(node, ctx):
    then_plan = ctx.function_plan(node.attr["then_branch"])
    else_plan = ctx.function_plan(node.attr["else_branch"])
    nout = node.attr["_num_outputs"]

    def run(step, pred, *args):
        outs = (then_plan if _truth(node, pred) else else_plan).run(args, step)
        if nout == 1:
            return outs[0]
        return None if nout == 0 else outs
    return run


register("If", _if_infer, _if_kernel, stateful=True, needs_step=True)   # gradient: control_flow_grad.py


def union_captures(a: FuncGraph, b: FuncGraph) -> list:
    union = list(a.external_captures)
    seen = set(union)
    union += [t for t in b.external_captures if t not in seen]
    a.set_capture_order(union)
    b.set_capture_order(union)
    return union


def _build_branch(fn, outer, scope: str, which: str, pred_value: bool):
    fg = FuncGraph(unique_function_name(outer, f"{scope.rstrip('/')}_{which}"), outer, name_scope=scope)
    with fg.as_default():
        result = fn()
        if result is None:
            raise ValueError(f"{which}_fn must have a return value.")
        flat = []
        for v in nest.flatten(result):
            if isinstance(v, Operation):
                # TF1: an Operation result stands as the predicate's value, after the op runs.
                with fg.control_dependencies([v]):
                    v = constant(pred_value, name="op_output")
            elif v is None:
                raise ValueError(f"{which}_fn returned None inside its result structure {result!r}.")
            else:
                v = convert_to_tensor(v)
            flat.append(fg.capture(v) if v.graph is not fg else v)
    fg.outputs = flat
    fg.structured_outputs = result
    return fg, result


@tf_export("cond")
def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """tf.cond(pred, true_fn=None, false_fn=None, strict=False, name=None): `true_fn()` if the
    scalar bool tensor `pred` is true else `false_fn()`; only the taken branch runs.

    Both functions must return the same nested structure of tensors (or Operations) with the
    same dtypes. Tensors created outside and used inside are captured. With strict=False a
    singleton list/tuple result is unpacked, as in TF1.
    """
    if fn1 is not None:
        if true_fn is not None:
            raise TypeError("cond(): true_fn and fn1 may not be set simultaneously.")
        true_fn = fn1
    if fn2 is not None:
        if false_fn is not None:
            raise TypeError("cond(): false_fn and fn2 may not be set simultaneously.")
        false_fn = fn2
    if true_fn is None:
        raise TypeError("cond(): true_fn argument required")
    if false_fn is None:
        raise TypeError("cond(): false_fn argument required")
    if not callable(true_fn):
        raise TypeError("true_fn must be callable.")
    if not callable(false_fn):
        raise TypeError("false_fn must be callable.")
    if isinstance(pred, bool):
        raise TypeError("pred must not be a Python bool")
    g = get_default_graph()
    with g.name_scope(name or "cond") as scope:
        pred = convert_to_tensor(pred)
        if pred.dtype != dtypes.bool:
            raise TypeError(f"Input 'pred' of 'If' Op has type {pred.dtype.name} that does not match "
                            f"expected type of bool (in cond '{scope[:-1]}').")
        tfg, res_t = _build_branch(true_fn, g, scope, "true", True)
        ffg, res_f = _build_branch(false_fn, g, scope, "false", False)
        try:
            nest.assert_same_structure(res_t, res_f)
        except TypeError as e:
            raise TypeError(f"Incompatible return types of true_fn and false_fn in '{scope[:-1]}': {e}") from None
        except ValueError as e:
            raise ValueError(f"Incompatible return values of true_fn and false_fn in '{scope[:-1]}': {e}") from None
        for x, y in zip(tfg.outputs, ffg.outputs):
            if x.dtype != y.dtype:
                raise ValueError(f"Outputs of true_fn and false_fn must have the same type: {x.dtype.name}, "
                                 f"{y.dtype.name} (in cond '{scope[:-1]}')")
        union = union_captures(tfg, ffg)
        shapes = [x.shape.most_specific_compatible_shape(y.shape) for x, y in zip(tfg.outputs, ffg.outputs)]
        attrs = {"then_branch": tfg, "else_branch": ffg, "Tout": [t.dtype for t in tfg.outputs],
                 "output_shapes": shapes}
        colocate = resource_colocation(union)
        if colocate:
            attrs["_class"] = colocate
        ctrl = tfg.control_captures + [c for c in ffg.control_captures if c not in tfg.control_captures]
        with g.control_dependencies(ctrl):
            op = g.create_op("If", [pred] + union, attrs, name=scope)
    flat = op.outputs
    result = nest.pack_sequence_as(res_t, flat) if nest.is_sequence(res_t) else flat[0] if flat else res_t
    if not strict and isinstance(result, (list, tuple)) and not hasattr(result, "_fields") \
            and len(result) == 1:
        result = result[0]
    return result


# -- case -----------------------------------------------------------------------------------------
def _case_checks(pred_fn_pairs, exclusive):
    if isinstance(pred_fn_pairs, dict):
        pairs = sorted(pred_fn_pairs.items(), key=lambda item: item[0].name)
    elif isinstance(pred_fn_pairs, (list, tuple)):
        pairs = list(pred_fn_pairs)
    else:
        raise TypeError("fns must be a list, tuple, or dict")
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"Each entry in pred_fn_pairs must be a 2-tuple: {pair!r}")
        p, f = pair
        if not isinstance(p, Tensor) or p.dtype != dtypes.bool:
            raise TypeError(f"pred must be Tensor of type bool: {getattr(p, 'name', p)}")
        if not callable(f):
            raise TypeError(f"fn for pred {p.name} must be callable.")
    return pairs


@tf_export("case")
def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """tf.case(pred_fn_pairs, default=None, exclusive=False, strict=False, name='case'): the
    result of the fn of the first true predicate (in order), else `default()`.

    Built from nested conds, so only the selected fn runs. exclusive=True adds a runtime check
    that at most one predicate is true. Without a default, no true predicate is a runtime
    InvalidArgumentError.
    """
    pairs = _case_checks(pred_fn_pairs, exclusive)
    if default is not None and not callable(default):
        raise TypeError("default must be callable.")
    g = get_default_graph()
    with g.name_scope(name):
        if not pairs:
            if default is None:
                raise ValueError("Both pred_fn_pairs and default are empty: nothing to select")
            return default()
        preds = [p for p, _ in pairs]
        fns = [f for _, f in pairs]
        if default is None:
            # The last pair doubles as the default, guarded by an Assert that its pred holds.
            last_pred, last_fn = preds[-1], fns[-1]
            preds, fns = preds[:-1], fns[:-1]

            def default():
                msg = ["Input error: None of conditions evaluated as True:", _stack_bools(pairs)]
                check = Assert(last_pred, msg, name="case_assert")
                with get_default_graph().control_dependencies([check]):
                    out = last_fn()
                return _identity_structure(out)
        fn = default
        for p, f in reversed(list(zip(preds, fns))):
            def fn(p=p, f=f, rest=fn):   # the case chain: each predicate's cond falls to the next
                return cond(p, f, rest, strict=strict)
        if exclusive and len(pairs) > 1:
            check = _assert_at_most_one(pairs)
            with g.control_dependencies([check]):
                return _identity_structure(fn())
        return fn()


@tf_export("switch_case")
def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """tf.switch_case(branch_index, branch_fns, default=None, name='switch_case'): the result of
    branch_fns[branch_index]() (a list of callables, or (int, callable) pairs or a dict whose
    keys are 0..n-1); an index out of range runs `default`, else the last branch. Only the
    chosen branch runs."""
    if not isinstance(branch_index, Tensor):
        raise TypeError(f"branch_index must a Tensor, got {type(branch_index)}")
    if not branch_index.dtype.is_integer:
        raise TypeError(f"branch_index must an integer Tensor, got {branch_index.dtype}")
    if not branch_fns:
        raise ValueError("Must provide at least one item in branch_fns")
    if not isinstance(branch_fns, (list, tuple, dict)):
        raise TypeError("branch_fns must be a list, tuple, or dict")
    pairs = list(branch_fns.items()) if isinstance(branch_fns, dict) else list(branch_fns)
    if all(callable(fn) for fn in pairs):
        pairs = list(enumerate(pairs))
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError("Each entry in branch_fns must be a 2-tuple")
        if not isinstance(pair[0], int):
            raise TypeError(f"key must be a Python `int`, got {type(pair[0])}")
        if not callable(pair[1]):
            raise TypeError(f"fn for key {pair[0]} must be callable.")
    keys = sorted(k for k, _ in pairs)
    if keys != list(range(len(keys))):
        raise ValueError(f"branch indices (keys) must form contiguous range of [0 to {len(keys)}) but found "
                         f"{{{','.join(map(str, keys))}}}")
    fns = [f for _, f in sorted(pairs, key=lambda p: p[0])] + ([default] if default is not None else [])
    with get_default_graph().name_scope(name):
        return case([(equal(branch_index, i), f) for i, f in enumerate(fns[:-1])], default=fns[-1], name="case")


def _stack_bools(pairs):
    return stack([p for p, _ in pairs], name="preds_c")


def _assert_at_most_one(pairs):
    preds = _stack_bools(pairs)
    count = reduce_sum(cast(preds, dtypes.int32))
    msg = f"Input error: exclusive=True: more than 1 conditions ({', '.join(p.name for p, _ in pairs)}) " \
          "evaluated as True:"
    return Assert(less_equal(count, 1), [msg, preds], name="exclusive_assert")


def _identity_structure(out):
    """Re-emits `out` under the current control dependencies (so they guard the result)."""

    def one(v):
        if isinstance(v, Operation):
            return group(v)
        return identity(v)
    return nest.map_structure(one, out) if nest.is_sequence(out) else one(out)
