"""Numeric checks: check_numerics (the CheckNumerics op) and verify_tensor_all_finite."""
from __future__ import annotations

from tensorweave.framework import dtypes, errors
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.grouping import group
from tensorweave.ops.helpers import FLOATS, array_module, same_as_input
from tensorweave.ops.registry import register, register_gpu


# -- CheckNumerics -----------------------------------------------------------------------------
@tf_export("debugging.check_numerics", "check_numerics")
def check_numerics(tensor, message, name=None) -> Tensor:
    """tf.check_numerics(tensor, message, name=None): `tensor` unchanged, or InvalidArgumentError
    ("<message> : Tensor had NaN values") at run time when it holds a NaN or an infinity."""
    tensor = convert_to_tensor(tensor, name="tensor")
    return get_default_graph().create_op("CheckNumerics", [tensor], {"T": tensor.dtype, "message": str(message)},
                                         name=name or "CheckNumerics").outputs[0]


def _check_numerics_kernel(node, ctx):
    message = node.attr.get("message", "")

    def run(x):
        xp = array_module(x)
        a = xp.asarray(x)
        if not bool(xp.isfinite(a).all()):   # (on a GPU, one wait for the device)
            nan, inf = bool(xp.isnan(a).any()), bool(xp.isinf(a).any())
            what = "NaN and Inf" if nan and inf else "NaN" if nan else "Inf"
            raise errors.InvalidArgumentError(node, node.name, f"{message} : Tensor had {what} values")
        return x
    return run


def _check_numerics_grad(op, grad):
    return [check_numerics(grad, "Not a number (NaN) or infinity (Inf) values detected in gradient. "
                           + op.get_attr("message"))]


register("CheckNumerics", same_as_input(0), _check_numerics_kernel, grad=_check_numerics_grad, stateful=True,
         dtypes=FLOATS, dtype_param="tensor")
register_gpu("CheckNumerics")


@tf_export("verify_tensor_all_finite", "debugging.assert_all_finite")
def verify_tensor_all_finite(t=None, msg=None, name=None, x=None, message=None) -> Tensor:
    """tf.verify_tensor_all_finite(t=None, msg=None, name=None, x=None, message=None) (also
    tf.debugging.assert_all_finite): `t` (alias x), checked for NaN/Inf at run time, failing with
    `msg` (alias message)."""
    t = x if t is None else t
    msg = message if msg is None else msg
    if t is None:
        raise ValueError("verify_tensor_all_finite: pass the tensor to check as t (or x)")
    g = get_default_graph()
    with g.name_scope(name or "VerifyFinite"):
        t = convert_to_tensor(t, name="t")
        with g.colocate_with(t.op):
            return check_numerics(t, message=msg)


# TF1 while-loop and cond frames: a check inside one would run in the frame's iterations, which TF1 refuses.
_FRAME_OPS = frozenset({"Switch", "RefSwitch", "Merge", "RefMerge", "Enter", "RefEnter", "Exit", "RefExit",
                        "NextIteration", "RefNextIteration", "LoopCond"})


@tf_export("add_check_numerics_ops")
def add_check_numerics_ops():
    """tf.add_check_numerics_ops(): one op that runs check_numerics on every float16/32/64 output
    in the default graph (one after the other, each named "<op name>:<output index>"), failing
    with InvalidArgumentError at run time when any holds a NaN or an infinity. ValueError when
    the graph holds TF1 cond/while frames (Switch, Merge, Enter, ...), as TF1's does."""
    checks = []
    g = get_default_graph()
    for op in g.get_operations():
        if op.type in _FRAME_OPS:
            raise ValueError(f"`tf.add_check_numerics_ops() is not compatible with TensorFlow control flow "
                             f"operations such as `tf.cond()` or `tf.while_loop()` (op {op.name} is a {op.type}).")
        for output in op.outputs:
            if output.dtype in (dtypes.float16, dtypes.float32, dtypes.float64):
                with g.control_dependencies(checks):
                    checks = [check_numerics(output, message=f"{op.name}:{output.value_index}")]
    return group(*checks)
