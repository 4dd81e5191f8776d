"""Central helper of `tf.gradients`: the SumToShape op that undoes broadcasting once for every
op.

Gradient functions return values with the forward op's broadcast shape; `tf.gradients`
calls `reduce_to_input` on each of them, which sums over the broadcast axes (statically
when both shapes are known, else with the input's runtime shape)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value_as_shape
from tensorweave.ops.array.core import shape as shape_of
from tensorweave.ops.array.pad import broadcast_to
from tensorweave.ops.helpers import TFNodes, array_module, make_op
from tensorweave.ops.registry import register, register_gpu


# -- SumToShape --------------------------------------------------------------------------------
def _sum_to_shape_infer(op):
    grad = op.inputs[0]
    shape = constant_value_as_shape(op.inputs[1])
    return [(grad.dtype, shape)]


def reduction_axes(g_shape: tuple, target: tuple) -> Optional[tuple]:
    """Axes of a `g_shape` value to sum so it becomes `target`; None if not a broadcast of it."""
    lead = len(g_shape) - len(target)
    if lead < 0:
        return None
    axes = list(range(lead))
    for i, d in enumerate(target):
        g = g_shape[lead + i]
        if g == d:
            continue
        if d != 1:
            return None
        axes.append(lead + i)
    return tuple(axes)


def _sum_to_shape_kernel(node, ctx):
    def run(g, shape):
        if type(g) is np.ndarray and type(shape) is np.ndarray and shape.ndim == 1 and g.shape == tuple(shape.tolist()):
            return g   # nothing was broadcast (most calls: a tenth of the general path's time)
        xp = array_module(g)
        g = xp.asarray(g)
        target = tuple(int(d) for d in np.reshape(shape, -1))   # (host memory)
        if g.shape == target:
            return g
        axes = reduction_axes(g.shape, target)
        if axes is None:
            raise errors.InvalidArgumentError(
                node, node.name, f"Incompatible shapes: gradient of shape {list(g.shape)} cannot be "
                f"reduced to its input's shape {list(target)}")
        return xp.sum(g, axis=axes, dtype=g.dtype).reshape(target)
    return run


def _sum_to_shape_grad(op, grad):
    return [broadcast_to(grad, shape_of(op.inputs[0])), None]


def _sum_to_shape_tf(op) -> list:
    """TF's own gradient of a broadcast: Sum over the axes BroadcastGradientArgs gives for the
    target shape, reshaped to it."""
    b, dtype, index = TFNodes(op), op.inputs[0].dtype, op.inputs[1].dtype
    grad_shape = b.node("grad_shape", "Shape", [b.input(0)], T=dtype, out_type=index)
    axes = b.node("axes", "BroadcastGradientArgs", [grad_shape, b.input(1)], T=index)
    summed = b.node("sum", "Sum", [b.input(0), axes + ":1"], T=dtype, Tidx=index, keep_dims=False)
    b.node(None, "Reshape", [summed, b.input(1)], T=dtype, Tshape=index)
    return b.nodes


register("SumToShape", _sum_to_shape_infer, _sum_to_shape_kernel, grad=_sum_to_shape_grad, tf_lowering=_sum_to_shape_tf)
register_gpu("SumToShape", host_inputs=(1,))


def sum_to_shape(grad: Tensor, shape, name: str = "SumToShape") -> Tensor:
    """Sums `grad` over the axes along which `shape` was broadcast to grad's shape."""
    shape = convert_to_tensor(shape, dtype=dtypes.int32) if not isinstance(shape, Tensor) else shape
    return make_op("SumToShape", [grad, shape], {"T": grad.dtype}, name=name).outputs[0]


def _static_dims(shape: TensorShape) -> Optional[list]:
    return None if shape.ndims is None else shape.as_list()


def _incompatible(op_name: str, index: int, t_shape, g_shape) -> ValueError:
    return ValueError(
        "Incompatible shapes between op input and calculated input gradient.  Forward operation: "
        f"{op_name}.  Input index: {index}. Original input shape: {t_shape}.  Calculated input "
        f"gradient shape: {g_shape}")


def _needs_reduction(g: list, t: list) -> bool:
    """Whether a gradient of static dims `g` may differ at runtime from an input of dims `t`."""
    if len(g) != len(t):
        return True
    for gd, td in zip(g, t):
        if td is None:
            return True          # the input may be 1 there at runtime
        if td == 1 and gd != 1:
            return True
    return False


def reduce_to_input(grad, t_in: Tensor, op_name: str = "", index: int = 0):
    """`grad` (with the forward op's broadcast shape) reduced to the shape of input `t_in`."""
    if not isinstance(grad, Tensor) or t_in.dtype == dtypes.resource:
        return grad
    t_dims, g_dims = _static_dims(t_in.shape), _static_dims(grad.shape)
    if t_dims is not None and g_dims is not None:
        # a None dim on either side may still match at runtime: only known clashes fail
        lead = len(g_dims) - len(t_dims)
        if lead < 0 or any(a is not None and b is not None and a != b and a != 1
                           for a, b in zip(t_dims, g_dims[lead:])):
            raise _incompatible(op_name, index, t_in.shape, grad.shape)
        if not _needs_reduction(g_dims, t_dims):
            try:
                grad.set_shape(t_in.shape)
            except ValueError:
                raise _incompatible(op_name, index, t_in.shape, grad.shape) from None
            return grad
    if t_in.shape.is_fully_defined():
        target = convert_to_tensor(np.array(t_in.shape.as_list(), dtype=np.int32))
    else:
        target = shape_of(t_in)
    out = sum_to_shape(grad, target)
    try:
        out.set_shape(t_in.shape)
    except ValueError:
        raise _incompatible(op_name, index, t_in.shape, grad.shape) from None
    return out
