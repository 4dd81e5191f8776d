"""Numeric checks: check_numerics (the CheckNumerics op) and verify_tensor_all_finite."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import FLOATS, same_as_input
from tensorweave.ops.registry import register


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
        a = np.asarray(x)
        if not np.all(np.isfinite(a)):
            nan, inf = bool(np.isnan(a).any()), bool(np.isinf(a).any())
            what = "NaN and Inf" if nan and inf else "NaN" if nan else "Inf"
            raise errors.InvalidArgumentError(node, node.name, f"{message} : Tensor had {what} values")
        return x
    return run


def _check_numerics_grad(op, grad):
    return [check_numerics(grad, "Not a number (NaN) or infinity (Inf) values detected in gradient. "
                           + op.get_attr("message"))]


register("CheckNumerics", same_as_input(0), _check_numerics_kernel, grad=_check_numerics_grad, stateful=True,
         dtypes=FLOATS, dtype_param="tensor")


@tf_export("verify_tensor_all_finite")
def verify_tensor_all_finite(t, msg, name=None) -> Tensor:
    """tf.verify_tensor_all_finite(t, msg, name=None): `t`, checked for NaN/Inf at run time."""
    g = get_default_graph()
    with g.name_scope(name or "VerifyFinite"):
        t = convert_to_tensor(t, name="t")
        with g.colocate_with(t.op):
            return check_numerics(t, message=msg)
