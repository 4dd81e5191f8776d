"""Fused batch normalization: FusedBatchNorm / V2 / V3, their Grad ops, and fused_batch_norm."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.api import name_scope
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import constant
from tensorweave.ops.helpers import invalid, make_op
from tensorweave.ops.math.binary import add, multiply, subtract
from tensorweave.ops.math.unary import rsqrt
from tensorweave.ops.nn.util import as_str, check_data_format, dims
from tensorweave.ops.registry import register, register_gpu


@tf_export("nn.fused_batch_norm")
def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001, data_format="NHWC",
                     is_training=True, name=None):
    """tf.nn.fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
    data_format='NHWC', is_training=True, name=None) -> (y, batch_mean, batch_var).

    Training normalizes with the batch statistics and returns the batch mean and the
    Bessel-corrected batch variance; inference uses `mean` and `variance` and returns them."""
    x = convert_to_tensor(x)
    fmt = check_data_format(data_format, "FusedBatchNormV3")
    param_t = dtypes.float32 if x.dtype == dtypes.float16 else x.dtype
    scale = convert_to_tensor(scale, dtype=param_t)
    offset = convert_to_tensor(offset, dtype=param_t)
    if is_training:
        mean = constant(np.zeros([0], param_t.as_numpy_dtype)) if mean is None else convert_to_tensor(mean, param_t)
        variance = constant(np.zeros([0], param_t.as_numpy_dtype)) if variance is None \
            else convert_to_tensor(variance, param_t)
    elif mean is None or variance is None:
        raise ValueError("Both 'mean' and 'variance' must be a 1D tensor when is_training is False.")
    else:
        mean, variance = convert_to_tensor(mean, param_t), convert_to_tensor(variance, param_t)
    # TF 1.15 raises epsilon to cuDNN's minimum.
    epsilon = max(float(epsilon), 1.001e-5)
    attrs = {"epsilon": epsilon, "data_format": fmt, "is_training": bool(is_training), "T": x.dtype,
             "U": param_t, "exponential_avg_factor": 1.0}
    outs = make_op("FusedBatchNormV3", [x, scale, offset, mean, variance], attrs,
                   name=name or "FusedBatchNormV3").outputs
    return outs[0], outs[1], outs[2]


def _c_axis(fmt) -> int:
    return 1 if as_str(fmt) == "NCHW" else 3


def _bn_infer(op):
    x, scale, offset, mean, var = op.inputs
    xd = dims(x.shape)
    if xd is not None and len(xd) != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {len(xd)}")
    c = xd[_c_axis(op.get_attr("data_format"))] if xd is not None else None
    for t, what in ((scale, "scale"), (offset, "offset")) + (
            () if op.get_attr("is_training") else ((mean, "mean"), (var, "variance"))):
        d = dims(t.shape)
        if d is not None:
            if len(d) != 1:
                raise ValueError(f"Shape must be rank 1 but is rank {len(d)} for {what}")
            if c is not None and d[0] is not None and d[0] != c:
                raise ValueError(f"Dimensions must be equal, but are {c} and {d[0]} ({what} must have the "
                                 "same number of channels as x)")
    vec = TensorShape([c])
    n_out = 6 if op.type == "FusedBatchNormV3" else 5
    u = scale.dtype
    return [(x.dtype, x.shape)] + [(u, vec)] * 4 + ([(u, TensorShape(None))] if n_out == 6 else [])


def _bn_kernel(node, ctx):
    eps = float(node.attr["epsilon"])
    axis = _c_axis(node.attr.get("data_format", "NHWC"))
    training = bool(node.attr.get("is_training", True))
    factor = float(node.attr.get("exponential_avg_factor", 1.0))
    v3 = node.op == "FusedBatchNormV3"

    def run(x, scale, offset, mean, var):
        c = x.shape[axis]
        if scale.shape != (c,) or offset.shape != (c,):
            raise invalid(node, f"scale and offset must be 1-D of size {c}, got {list(scale.shape)} and "
                                  f"{list(offset.shape)}")
        red = tuple(i for i in range(4) if i != axis)
        bshape = [1, 1, 1, 1]
        bshape[axis] = c
        xf = x.astype(np.float32) if x.dtype == np.float16 else x
        if training:
            m = xf.size // c if c else 0
            bmean = xf.mean(axis=red, dtype=np.float64 if xf.dtype == np.float64 else np.float32)
            cen = xf - bmean.reshape(bshape).astype(xf.dtype)
            bvar = np.einsum("nhwc,nhwc->c", cen, cen) if axis == 3 else np.square(cen).sum(axis=red)
            bvar = bvar / max(m, 1)
            inv = 1.0 / np.sqrt(bvar + eps)
            y = cen * (scale * inv).reshape(bshape) + offset.reshape(bshape)
            unbiased = bvar * (m / (m - 1)) if m > 1 else np.full_like(bvar, np.nan)
            if factor != 1.0 and mean.size == c:
                out_mean = (1 - factor) * mean + factor * bmean
                out_var = (1 - factor) * var + factor * unbiased
            else:
                out_mean, out_var = bmean, unbiased
            saved_mean, saved_var = bmean, bvar
        else:
            if mean.shape != (c,) or var.shape != (c,):
                raise invalid(node, f"mean and variance must be 1-D of size {c} when is_training is False, got "
                                      f"{list(mean.shape)} and {list(var.shape)}")
            inv = 1.0 / np.sqrt(var + eps)
            y = xf * (scale * inv).reshape(bshape) + (offset - mean * scale * inv).reshape(bshape)
            out_mean, out_var, saved_mean, saved_var = mean, var, mean, var
        pt = scale.dtype
        res = (y.astype(x.dtype, copy=False), out_mean.astype(pt), out_var.astype(pt),
               saved_mean.astype(pt, copy=False), saved_var.astype(pt, copy=False))
        return res + (np.zeros([0], pt),) if v3 else res
    return run


def _bn_grad(op, dy, *_):
    x, scale = op.inputs[0], op.inputs[1]
    training = op.get_attr("is_training")
    # Inference mode differentiates through the given population statistics.
    r1, r2 = (op.outputs[3], op.outputs[4]) if training else (op.inputs[3], op.inputs[4])
    attrs = {k: op.get_attr(k) for k in ("epsilon", "data_format", "is_training")}
    attrs["T"] = dy.dtype
    attrs["U"] = scale.dtype
    outs = make_op("FusedBatchNormGradV3", [dy, x, scale, r1, r2], attrs, name="FusedBatchNormGradV3").outputs
    return [outs[0], outs[1], outs[2], None, None]


def _bn_grad_infer(op):
    dy, x, scale = op.inputs[:3]
    vec = TensorShape([scale.shape[0].value if scale.shape.ndims == 1 else None])
    u = scale.dtype
    return [(dy.dtype, x.shape.merge_with(dy.shape)), (u, vec), (u, vec), (u, TensorShape([0])),
            (u, TensorShape([0]))]


def _bn_grad_kernel(node, ctx):
    eps = float(node.attr["epsilon"])
    axis = _c_axis(node.attr.get("data_format", "NHWC"))
    training = bool(node.attr.get("is_training", True))

    def run(dy, x, scale, mean, var):
        c = x.shape[axis]
        red = tuple(i for i in range(4) if i != axis)
        bshape = [1, 1, 1, 1]
        bshape[axis] = c
        acc = np.float32 if x.dtype == np.float16 else x.dtype
        xf, dyf = x.astype(acc, copy=False), dy.astype(acc, copy=False)
        inv = (1.0 / np.sqrt(var + eps)).astype(acc)
        cen = xf - mean.reshape(bshape).astype(acc)
        doffset = dyf.sum(axis=red)
        dscale = (dyf * cen).sum(axis=red) * inv
        if training:
            m = xf.size // c if c else 1
            dx = (scale * inv).reshape(bshape) * (
                dyf - (doffset / m).reshape(bshape) - cen * (dscale * inv / m).reshape(bshape))
        else:
            dx = dyf * (scale * inv).reshape(bshape)
        pt = scale.dtype
        return (dx.astype(dy.dtype, copy=False), dscale.astype(pt), doffset.astype(pt),
                np.zeros([0], pt), np.zeros([0], pt))
    return run


for _t in ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"):
    register(_t, _bn_infer, _bn_kernel, grad=_bn_grad)
    register_gpu(_t)        # the kernels' code is also valid CuPy code
for _t in ("FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"):
    register(_t, _bn_grad_infer, _bn_grad_kernel, grad=None)
    register_gpu(_t)


@tf_export("nn.batch_norm_with_global_normalization")
def batch_norm_with_global_normalization(t=None, m=None, v=None, beta=None, gamma=None, variance_epsilon=None,
                                         scale_after_normalization=None, name=None, input=None,
                                         mean=None, variance=None):
    """tf.nn.batch_norm_with_global_normalization(t, m, v, beta, gamma, variance_epsilon,
    scale_after_normalization, name=None, input=None, mean=None, variance=None): TF1's batch
    normalization of t with the given (global) mean m and variance v, scaled by gamma only when
    scale_after_normalization."""
    t = input if t is None else t
    m = mean if m is None else m
    v = variance if v is None else v
    with name_scope(name, "BatchNormWithGlobalNormalization", [t, m, v, beta, gamma]):
        t = convert_to_tensor(t, name="t")
        inv = rsqrt(add(v, variance_epsilon))
        if scale_after_normalization:
            inv = multiply(inv, gamma)
        return add(multiply(subtract(t, m), inv), beta)
