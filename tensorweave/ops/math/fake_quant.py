"""Quantization-aware training's fake-quantization ops (tf.fake_quant_with_min_max_args, _vars,
_vars_per_channel and their gradient ops): float32 in, float32 out, each value clamped to a range
and rounded to the nearest of its 2^num_bits levels, the range's ends nudged so that 0.0 is a level
exactly (TF's Nudge, in float32 as TF computes it). Their gradients are straight through: the
incoming gradient inside the nudged range, 0 outside; the Vars ops' min and max get the sums of
the gradients below and above it."""
from __future__ import annotations

import collections

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import invalid, make_op
from tensorweave.ops.registry import register

_F32 = np.float32
FLOAT32 = (dtypes.float32,)

VarsGradientOutput = collections.namedtuple(
    "FakeQuantWithMinMaxVarsGradient", ["backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max"])
PerChannelGradientOutput = collections.namedtuple(
    "FakeQuantWithMinMaxVarsPerChannelGradient", ["backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max"])


# -- the arithmetic, shared by every op ----------------------------------------------------------
def _quant_levels(node) -> tuple:
    """(quant_min, quant_max) from a node's num_bits and narrow_range, as TF's kernels check them."""
    num_bits = node.attr["num_bits"]
    if not 2 <= num_bits <= 16:
        raise invalid(node, "num_bits must be between 2 and 16, inclusive")
    return (1 if node.attr["narrow_range"] else 0), (1 << num_bits) - 1


def _round_half_away(x):
    """std::round: halves away from zero (numpy's round goes to even); exact in float32."""
    magnitude = np.abs(x)
    floor = np.floor(magnitude)
    return np.copysign(floor + (magnitude - floor >= 0.5), x).astype(x.dtype, copy=False)


def nudge(low, high, quant_min: int, quant_max: int) -> tuple:
    """TF's Nudge of min `low` and max `high` (scalars or per-channel vectors) in float32: the
    (nudged min, nudged max, scale, inverse scale) whose levels include 0.0 exactly."""
    low, high = np.asarray(low, _F32), np.asarray(high, _F32)
    qmin, qmax = _F32(quant_min), _F32(quant_max)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = (high - low) / (qmax - qmin)
        inv_scale = (qmax - qmin) / (high - low)
        zero_from_min = qmin - low / scale
        zero = np.where(zero_from_min < qmin, qmin,
                        np.where(zero_from_min > qmax, qmax, _round_half_away(zero_from_min))).astype(_F32)
    return (qmin - zero) * scale, (qmax - zero) * scale, scale, inv_scale


def fake_quant(x, low, high, quant_min: int, quant_max: int, divide: bool = False):
    """x clamped to the nudged [low, high] and rounded to its levels (min and max broadcast along
    x's last axis when per channel); 0 where low and high are both 0, as TF's Vars kernels.
    `divide`: the Vars kernel divides by the scale where the others multiply by its inverse."""
    nudged_min, nudged_max, scale, inv_scale = nudge(low, high, quant_min, quant_max)
    with np.errstate(divide="ignore", invalid="ignore"):
        quant_zero = np.floor(-nudged_min * inv_scale + _F32(0.5))
        shifted = np.maximum(np.minimum(x, nudged_max), nudged_min) - nudged_min
        levels = shifted / scale if divide else shifted * inv_scale
        out = np.floor(levels - quant_zero + _F32(0.5)) * scale
    return np.where((np.asarray(low) == 0) & (np.asarray(high) == 0), _F32(0), out).astype(_F32, copy=False)


def fake_quant_gradients(grad, x, low, high, quant_min: int, quant_max: int) -> tuple:
    """(gradient of x, the gradients summed below the nudged min, and above its max) per element,
    before any sum over the elements that share a min and max; everything passes to x where low
    and high are both 0."""
    nudged_min, nudged_max, _, _ = nudge(low, high, quant_min, quant_max)
    zero_range = (np.asarray(low) == 0) & (np.asarray(high) == 0)
    below, above = (x < nudged_min) & ~zero_range, (x > nudged_max) & ~zero_range
    inside = ((x >= nudged_min) & (x <= nudged_max)) | zero_range
    zero = _F32(0)
    return np.where(inside, grad, zero), np.where(below, grad, zero), np.where(above, grad, zero)


# -- shape functions ---------------------------------------------------------------------------
def _merged(a, b, what: str) -> TensorShape:
    """Two shapes that must be one (TF's Merge): the better known; ValueError when they differ."""
    if a.ndims is not None and b.ndims is not None:
        if a.ndims != b.ndims or any(x is not None and y is not None and x != y
                                     for x, y in zip(a.as_list(), b.as_list())):
            raise ValueError(f"{what}: shapes {a} and {b} must be equal")
        return TensorShape([x if x is not None else y for x, y in zip(a.as_list(), b.as_list())])
    return a if a.ndims is not None else b


def _check_rank(t, rank: int, what: str) -> None:
    if t.shape.ndims is not None and t.shape.ndims != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {t.shape.ndims} for '{what}'")


def _vars_infer(op):
    _check_rank(op.inputs[1], 0, "min")
    _check_rank(op.inputs[2], 0, "max")
    return [(dtypes.float32, op.inputs[0].shape)]


def _vars_gradient_infer(op):
    _check_rank(op.inputs[2], 0, "min")
    _check_rank(op.inputs[3], 0, "max")
    shape = _merged(op.inputs[0].shape, op.inputs[1].shape, op.type)
    return [(dtypes.float32, shape), (dtypes.float32, TensorShape([])), (dtypes.float32, TensorShape([]))]


def _channels(op, data, low, high, max_rank=None) -> TensorShape:
    """The channel dimension [d] of per-channel `data` (its last dim) and its min and max vectors."""
    d = data.shape.as_tuple_or_none()
    if d is not None and (len(d) < 1 or (max_rank and len(d) > max_rank)):
        raise ValueError(f"{op.type}: inputs must have rank 1 to {max_rank or 'any'}, got rank {len(d)}")
    _check_rank(low, 1, "min")
    _check_rank(high, 1, "max")
    channel = TensorShape([None if d is None else d[-1]])
    return _merged(_merged(channel, low.shape, f"{op.type} min"), high.shape, f"{op.type} max")


def _per_channel_infer(op):
    _channels(op, *op.inputs)
    return [(dtypes.float32, op.inputs[0].shape)]


def _per_channel_gradient_infer(op):
    shape = _merged(op.inputs[0].shape, op.inputs[1].shape, op.type)
    channel = _channels(op, op.inputs[1], op.inputs[2], op.inputs[3], max_rank=4)
    return [(dtypes.float32, shape), (dtypes.float32, channel), (dtypes.float32, channel)]


# -- kernels -----------------------------------------------------------------------------------
def _same_size(node, grad, x) -> None:
    if grad.shape != x.shape:
        raise invalid(node, f"gradient and input must be the same size, got {list(grad.shape)} and "
                            f"{list(x.shape)}")


def _args_range(node) -> tuple:
    low, high = node.attr["min"], node.attr["max"]
    if not low < high:
        raise invalid(node, f"min has to be smaller than max, was: {low:g} >= {high:g}")
    return low, high


def _args_kernel(node, ctx):
    (low, high), levels = _args_range(node), _quant_levels(node)
    return lambda x: fake_quant(x, low, high, *levels)


def _args_gradient_kernel(node, ctx):
    (low, high), levels = _args_range(node), _quant_levels(node)

    def run(grad, x):
        _same_size(node, grad, x)
        return fake_quant_gradients(grad, x, low, high, *levels)[0]
    return run


def _scalar_range(node, low, high) -> None:
    for value, what in ((low, "min"), (high, "max")):
        if np.ndim(value) != 0:
            raise invalid(node, f"`{what}` must be rank 0 but is rank {np.ndim(value)}")


def _vars_kernel(node, ctx):
    levels = _quant_levels(node)

    def run(x, low, high):
        _scalar_range(node, low, high)
        return fake_quant(x, low, high, *levels, divide=True)
    return run


def _vars_gradient_kernel(node, ctx):
    levels = _quant_levels(node)

    def run(grad, x, low, high):
        _same_size(node, grad, x)
        _scalar_range(node, low, high)
        wrt_x, below, above = fake_quant_gradients(grad, x, low, high, *levels)
        return wrt_x, below.sum(dtype=_F32), above.sum(dtype=_F32)
    return run


def _channel_range(node, x, low, high) -> None:
    depth = x.shape[-1] if x.ndim else None
    for value, what in ((low, "min"), (high, "max")):
        if np.ndim(value) != 1:
            raise invalid(node, f"`{what}` must be rank 1 but is rank {np.ndim(value)}")
        if value.shape[0] != depth:
            raise invalid(node, f"{what} has incorrect size, expected {depth} was {value.shape[0]}")


def _per_channel_kernel(node, ctx):
    levels = _quant_levels(node)

    def run(x, low, high):
        _channel_range(node, x, low, high)
        return fake_quant(x, low, high, *levels)
    return run


def _per_channel_gradient_kernel(node, ctx):
    levels = _quant_levels(node)

    def run(grad, x, low, high):
        _same_size(node, grad, x)
        _channel_range(node, x, low, high)
        wrt_x, below, above = fake_quant_gradients(grad, x, low, high, *levels)
        inner = tuple(range(x.ndim - 1))
        return wrt_x, below.sum(axis=inner, dtype=_F32), above.sum(axis=inner, dtype=_F32)
    return run


# -- the public functions ----------------------------------------------------------------------
def _bits(num_bits, narrow_range) -> dict:
    return {"num_bits": int(num_bits), "narrow_range": bool(narrow_range)}


def _floats(*values) -> list:
    return [convert_to_tensor(v, dtype=dtypes.float32) for v in values]


@tf_export("quantization.fake_quant_with_min_max_args", "fake_quant_with_min_max_args")
def fake_quant_with_min_max_args(inputs, min=-6, max=6, num_bits=8, narrow_range=False, name=None):
    """tf.fake_quant_with_min_max_args(inputs, min=-6, max=6, num_bits=8, narrow_range=False):
    float32 `inputs` clamped to [min, max] (nudged so that 0.0 is exactly a level) and rounded to
    one of its 2^num_bits levels (2^num_bits - 1 with narrow_range); min < max."""
    attrs = {"min": float(min), "max": float(max), **_bits(num_bits, narrow_range)}
    return make_op("FakeQuantWithMinMaxArgs", _floats(inputs), attrs, name=name or "FakeQuantWithMinMaxArgs").outputs[0]


@tf_export("quantization.fake_quant_with_min_max_args_gradient", "fake_quant_with_min_max_args_gradient")
def fake_quant_with_min_max_args_gradient(gradients, inputs, min=-6, max=6, num_bits=8, narrow_range=False,
                                          name=None):
    """tf.fake_quant_with_min_max_args_gradient(gradients, inputs, min=-6, max=6, ...): the
    gradient of fake_quant_with_min_max_args: `gradients` where `inputs` lie in the nudged
    [min, max], 0 elsewhere."""
    attrs = {"min": float(min), "max": float(max), **_bits(num_bits, narrow_range)}
    return make_op("FakeQuantWithMinMaxArgsGradient", _floats(gradients, inputs), attrs,
                   name=name or "FakeQuantWithMinMaxArgsGradient").outputs[0]


@tf_export("quantization.fake_quant_with_min_max_vars", "fake_quant_with_min_max_vars")
def fake_quant_with_min_max_vars(inputs, min, max, num_bits=8, narrow_range=False, name=None):
    """tf.fake_quant_with_min_max_vars(inputs, min, max, num_bits=8, narrow_range=False): as
    fake_quant_with_min_max_args with the range given by float32 scalar tensors (variables, in
    quantization-aware training, which the gradient trains); all 0 when min and max are both 0."""
    return make_op("FakeQuantWithMinMaxVars", _floats(inputs, min, max), _bits(num_bits, narrow_range),
                   name=name or "FakeQuantWithMinMaxVars").outputs[0]


@tf_export("quantization.fake_quant_with_min_max_vars_gradient", "fake_quant_with_min_max_vars_gradient")
def fake_quant_with_min_max_vars_gradient(gradients, inputs, min, max, num_bits=8, narrow_range=False, name=None):
    """tf.fake_quant_with_min_max_vars_gradient(gradients, inputs, min, max, ...): the gradients
    of fake_quant_with_min_max_vars, (backprops_wrt_input, backprop_wrt_min, backprop_wrt_max):
    `gradients` inside the nudged range, and the sums of those below it and above it."""
    op = make_op("FakeQuantWithMinMaxVarsGradient", _floats(gradients, inputs, min, max),
                 _bits(num_bits, narrow_range), name=name or "FakeQuantWithMinMaxVarsGradient")
    return VarsGradientOutput(*op.outputs)


@tf_export("quantization.fake_quant_with_min_max_vars_per_channel", "fake_quant_with_min_max_vars_per_channel")
def fake_quant_with_min_max_vars_per_channel(inputs, min, max, num_bits=8, narrow_range=False, name=None):
    """tf.fake_quant_with_min_max_vars_per_channel(inputs, min, max, num_bits=8, ...): as
    fake_quant_with_min_max_vars with one range per channel: `inputs` [..., d], `min` and `max` [d]."""
    return make_op("FakeQuantWithMinMaxVarsPerChannel", _floats(inputs, min, max), _bits(num_bits, narrow_range),
                   name=name or "FakeQuantWithMinMaxVarsPerChannel").outputs[0]


@tf_export("quantization.fake_quant_with_min_max_vars_per_channel_gradient",
           "fake_quant_with_min_max_vars_per_channel_gradient")
def fake_quant_with_min_max_vars_per_channel_gradient(gradients, inputs, min, max, num_bits=8, narrow_range=False,
                                                      name=None):
    """tf.fake_quant_with_min_max_vars_per_channel_gradient(gradients, inputs, min, max, ...):
    the gradients of fake_quant_with_min_max_vars_per_channel (`inputs` of rank 1 to 4), with
    backprop_wrt_min and backprop_wrt_max per channel [d]."""
    op = make_op("FakeQuantWithMinMaxVarsPerChannelGradient", _floats(gradients, inputs, min, max),
                 _bits(num_bits, narrow_range), name=name or "FakeQuantWithMinMaxVarsPerChannelGradient")
    return PerChannelGradientOutput(*op.outputs)


def _attrs_of(op) -> dict:
    return {"num_bits": op.get_attr("num_bits"), "narrow_range": op.get_attr("narrow_range")}


register("FakeQuantWithMinMaxArgs", lambda op: [(dtypes.float32, op.inputs[0].shape)], _args_kernel,
         grad=lambda op, g: [fake_quant_with_min_max_args_gradient(g, op.inputs[0], op.get_attr("min"),
                                                                   op.get_attr("max"), **_attrs_of(op))],
         dtypes=FLOAT32, dtype_param="inputs")
register("FakeQuantWithMinMaxArgsGradient", lambda op: [(dtypes.float32, op.inputs[0].shape)],
         _args_gradient_kernel, dtypes={0: ("gradients", FLOAT32), 1: ("inputs", FLOAT32)})
register("FakeQuantWithMinMaxVars", _vars_infer, _vars_kernel,
         grad=lambda op, g: list(fake_quant_with_min_max_vars_gradient(g, *op.inputs, **_attrs_of(op))),
         dtypes={0: ("inputs", FLOAT32), 1: ("min", FLOAT32), 2: ("max", FLOAT32)})
register("FakeQuantWithMinMaxVarsGradient", _vars_gradient_infer, _vars_gradient_kernel,
         dtypes={0: ("gradients", FLOAT32), 1: ("inputs", FLOAT32), 2: ("min", FLOAT32), 3: ("max", FLOAT32)})
register("FakeQuantWithMinMaxVarsPerChannel", _per_channel_infer, _per_channel_kernel,
         grad=lambda op, g: list(fake_quant_with_min_max_vars_per_channel_gradient(g, *op.inputs, **_attrs_of(op))),
         dtypes={0: ("inputs", FLOAT32), 1: ("min", FLOAT32), 2: ("max", FLOAT32)})
register("FakeQuantWithMinMaxVarsPerChannelGradient", _per_channel_gradient_infer, _per_channel_gradient_kernel,
         dtypes={0: ("gradients", FLOAT32), 1: ("inputs", FLOAT32), 2: ("min", FLOAT32), 3: ("max", FLOAT32)})
