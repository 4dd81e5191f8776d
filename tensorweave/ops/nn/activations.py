"""NN activations: relu, relu6, elu, selu, leaky_relu, softplus, softsign (with their *Grad
ops), softmax and log_softmax, and bias_add (the op TF fuses with them)."""
from __future__ import annotations

import sys

import numpy as np

import tensorweave.ops.onednn as onednn
from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import swap_axes_perm, transpose
from tensorweave.ops.helpers import array_module, grad_op, make_op, same_as_input
from tensorweave.ops.math.binary import multiply, subtract
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.math.unary import exp, negative
from tensorweave.ops.intra_op import split_elementwise
from tensorweave.ops.nn.util import as_str, dims
from tensorweave.ops.registry import pure, register, register_gpu


_SELU_SCALE = 1.0507009873554804934193349852946
_SELU_ALPHA = 1.6732632423543772848170429916717


def _pair_infer(op):
    a, b = op.inputs
    return [(a.dtype, a.shape.merge_with(b.shape) if a.shape.is_compatible_with(b.shape) else _bad(a, b))]


def _bad(a, b):
    raise ValueError(f"Shapes {a.shape} and {b.shape} are incompatible")


# -- activations -------------------------------------------------------------------------------
@tf_export("nn.relu")
def relu(features, name=None):
    """tf.nn.relu(features, name=None): max(features, 0)."""
    return make_op("Relu", [convert_to_tensor(features)], name=name or "Relu").outputs[0]


@tf_export("nn.relu6")
def relu6(features, name=None):
    """tf.nn.relu6(features, name=None): min(max(features, 0), 6)."""
    return make_op("Relu6", [convert_to_tensor(features)], name=name or "Relu6").outputs[0]


@tf_export("nn.elu")
def elu(features, name=None):
    """tf.nn.elu(features, name=None): exp(features) - 1 if < 0, features otherwise."""
    return make_op("Elu", [convert_to_tensor(features)], name=name or "Elu").outputs[0]


@tf_export("nn.selu")
def selu(features, name=None):
    """tf.nn.selu(features, name=None): scale * elu with alpha (Klambauer et al.)."""
    return make_op("Selu", [convert_to_tensor(features)], name=name or "Selu").outputs[0]


@tf_export("nn.leaky_relu")
def leaky_relu(features, alpha=0.2, name=None):
    """tf.nn.leaky_relu(features, alpha=0.2, name=None): max(alpha * features, features)."""
    features = convert_to_tensor(features)
    if features.dtype.is_integer:
        features = cast(features, dtypes.float32)
    return make_op("LeakyRelu", [features], {"alpha": float(alpha), "T": features.dtype},
                   name=name or "LeakyRelu").outputs[0]


@tf_export("math.softplus", "nn.softplus")
def softplus(features, name=None):
    """tf.nn.softplus(features, name=None): log(exp(features) + 1)."""
    return make_op("Softplus", [convert_to_tensor(features)], name=name or "Softplus").outputs[0]


@tf_export("math.softsign", "nn.softsign")
def softsign(features, name=None):
    """tf.nn.softsign(features, name=None): features / (abs(features) + 1)."""
    return make_op("Softsign", [convert_to_tensor(features)], name=name or "Softsign").outputs[0]


# Constants are numpy scalars of the input's dtype (not 0-d arrays): they mix with a GPU's arrays.
def _relu_kernel(x):
    if array_module(x) is not np:   # split_elementwise: the CPU's intra-op threads
        return np.maximum(x, x.dtype.type(0))
    return split_elementwise(np.maximum, x, np.zeros((), x.dtype))


def _relu6_kernel(x):
    return np.clip(x, x.dtype.type(0), x.dtype.type(6))


def _elu_kernel(x):
    return np.where(x < 0, np.expm1(np.minimum(x, 0)), x).astype(x.dtype, copy=False)


def _selu_kernel(x):
    neg = _SELU_SCALE * _SELU_ALPHA * np.expm1(np.minimum(x, 0))
    return np.where(x < 0, neg, _SELU_SCALE * x).astype(x.dtype, copy=False)


def _leaky_relu_kernel(node, ctx):
    alpha = float(node.attr["alpha"])
    return lambda x: np.where(x > 0, x, x * x.dtype.type(alpha)).astype(x.dtype, copy=False)


def _softplus_kernel(x):
    return np.logaddexp(x.dtype.type(0), x).astype(x.dtype, copy=False)


def _softsign_kernel(x):
    return (x / (np.abs(x) + np.ones((), x.dtype))).astype(x.dtype, copy=False)


register("Relu", same_as_input(0), pure(_relu_kernel),
         grad=lambda op, g: [grad_op("ReluGrad", g, op.outputs[0])])
register_gpu("Relu")
register("Relu6", same_as_input(0), pure(_relu6_kernel),
         grad=lambda op, g: [grad_op("Relu6Grad", g, op.inputs[0])])
register_gpu("Relu6")
register("Elu", same_as_input(0), pure(_elu_kernel),
         grad=lambda op, g: [grad_op("EluGrad", g, op.outputs[0])])
register_gpu("Elu")
register("Selu", same_as_input(0), pure(_selu_kernel),
         grad=lambda op, g: [grad_op("SeluGrad", g, op.outputs[0])])
register_gpu("Selu")
register("LeakyRelu", same_as_input(0), _leaky_relu_kernel,
         grad=lambda op, g: [grad_op("LeakyReluGrad", g, op.inputs[0],
                                      {"alpha": op.get_attr("alpha"), "T": op.inputs[0].dtype})])
register_gpu("LeakyRelu")
register("Softplus", same_as_input(0), pure(_softplus_kernel),
         grad=lambda op, g: [grad_op("SoftplusGrad", g, op.inputs[0])])
register_gpu("Softplus")
register("Softsign", same_as_input(0), pure(_softsign_kernel),
         grad=lambda op, g: [grad_op("SoftsignGrad", g, op.inputs[0])])


# The *Grad ops: (gradients, features-or-outputs) -> backprops, as TF defines them.
# Multiplying by a boolean mask is several times faster than np.where on large arrays.
def _relu_grad(g, y):
    if array_module(g, y) is not np:   # oneDNN and the intra-op threads are the CPU's
        return np.multiply(g, y > 0, dtype=g.dtype)
    if (dx := onednn.relu_grad(g, y)) is not None:
        return dx
    if g.shape != y.shape or g.dtype.kind != "f":
        return np.multiply(g, y > 0, dtype=g.dtype)

    def part(out, g, y):
        np.greater(y, 0, out=out)   # 1 or 0 in g's dtype: no boolean temporary
        np.multiply(out, g, out=out)
    return split_elementwise(part, g, y, ufunc=False)


def _references_in_a_step(g, y) -> int:
    return sys.getrefcount(g)


# references to a value while a plan's step runs its kernel on it alone (executor.Plan's call
# `fn(vals[a], vals[b])`): the plan's slot, the kernel's parameter (as this interpreter counts
# them: a call may or may not hold its arguments too), sys.getrefcount's own
_values = [np.empty(1)]
_ONLY_THE_STEPS = _references_in_a_step(_values[0], None)
del _values


def relu_grad_into_gradient(dead_slots: int = 0):
    """ReluGrad's kernel writing over g's buffer, as TF forwards it, where nothing else holds g;
    else ReluGrad's own kernel (the same bits). A plan's fusion pass makes it for a ReluGrad whose
    g no other step reads and nobody fetches; `dead_slots`: the plan's slots before it that hold
    the same array and no later step reads (a SumToShape that returned its input). Any other
    reference (a fed array, a value also in a live slot) keeps g as it is."""
    most = _ONLY_THE_STEPS + dead_slots

    def run(g, y):
        if type(g) is np.ndarray and type(y) is np.ndarray and g.base is None and g.flags.writeable \
                and sys.getrefcount(g) <= most and (dx := onednn.relu_grad(g, y, into_g=True)) is not None:
            return dx
        return _relu_grad(g, y)
    return run


def _relu6_grad(g, x):
    return np.multiply(g, (x > 0) & (x < 6), dtype=g.dtype)


def _elu_grad(g, y):
    return np.where(y > 0, g, g * (y + y.dtype.type(1))).astype(g.dtype, copy=False)


def _selu_grad(g, y):
    neg = g * (y + y.dtype.type(_SELU_SCALE * _SELU_ALPHA))
    return np.where(y > 0, g * g.dtype.type(_SELU_SCALE), neg).astype(g.dtype, copy=False)


def _leaky_relu_grad_kernel(node, ctx):
    alpha = float(node.attr["alpha"])
    return lambda g, x: np.where(x > 0, g, g * g.dtype.type(alpha)).astype(g.dtype, copy=False)


def _softplus_grad(g, x):
    return (g / (x.dtype.type(1) + np.exp(-x))).astype(g.dtype, copy=False)


def _softsign_grad(g, x):
    return (g / np.square(np.ones((), x.dtype) + np.abs(x))).astype(g.dtype, copy=False)


def _relu_grad_grad(op, gg):
    # d(ReluGrad)/d(gradients) is the same mask; features get no gradient.
    return [grad_op("ReluGrad", gg, op.inputs[1]), None]


register("ReluGrad", _pair_infer, pure(_relu_grad), grad=_relu_grad_grad)
register_gpu("ReluGrad")
register("Relu6Grad", _pair_infer, pure(_relu6_grad),
         grad=lambda op, gg: [grad_op("Relu6Grad", gg, op.inputs[1]), None])
register_gpu("Relu6Grad")
register("EluGrad", _pair_infer, pure(_elu_grad), grad=None)
register_gpu("EluGrad")
register("SeluGrad", _pair_infer, pure(_selu_grad), grad=None)
register_gpu("SeluGrad")
register("LeakyReluGrad", _pair_infer, _leaky_relu_grad_kernel,
         grad=lambda op, gg: [grad_op("LeakyReluGrad", gg, op.inputs[1],
                                       {"alpha": op.get_attr("alpha"), "T": op.inputs[1].dtype}), None])
register_gpu("LeakyReluGrad")
register("SoftplusGrad", _pair_infer, pure(_softplus_grad), grad=None)
register_gpu("SoftplusGrad")
register("SoftsignGrad", _pair_infer, pure(_softsign_grad), grad=None)


# -- softmax / log_softmax ---------------------------------------------------------------------
def _last_axis_op(op_type, logits, axis, name):
    """Applies a last-axis op along `axis` by swapping that axis to the end and back (as TF);
    a logits tensor of unknown rank swaps with a permutation computed at run time."""
    logits = convert_to_tensor(logits)
    ndims = logits.shape.ndims
    if axis is None or axis == -1 or (ndims is not None and axis == ndims - 1):
        return make_op(op_type, [logits], name=name or op_type).outputs[0]
    if ndims is not None and not -ndims <= axis < ndims:
        raise ValueError(f"{op_type}: axis {axis} is out of bounds for logits of rank {ndims} "
                         f"(InvalidArgumentError in TF)")
    perm = swap_axes_perm(logits, axis)
    out = make_op(op_type, [transpose(logits, perm)], name=op_type).outputs[0]
    out = transpose(out, perm, name=name)
    out.set_shape(logits.shape)
    return out


@tf_export("math.softmax", "nn.softmax")
def softmax(logits, axis=None, name=None, dim=None):
    """tf.nn.softmax(logits, axis=None, name=None, dim=None): exp(logits) / sum(exp(logits), axis)."""
    axis = dim if axis is None else axis
    return _last_axis_op("Softmax", logits, axis, name)


@tf_export("math.log_softmax", "nn.log_softmax")
def log_softmax(logits, axis=None, name=None, dim=None):
    """tf.nn.log_softmax(logits, axis=None, name=None, dim=None): logits - log(sum(exp(logits), axis))."""
    axis = dim if axis is None else axis
    return _last_axis_op("LogSoftmax", logits, axis, name)


def _rank_ge1_infer(op):
    x = op.inputs[0]
    if x.shape.ndims is not None and x.shape.ndims < 1:
        raise ValueError(f"Shape must be at least rank 1 but is rank {x.shape.ndims}")
    return [(x.dtype, x.shape)]


def softmax_np(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    e /= e.sum(axis=-1, keepdims=True)
    return e


def log_softmax_np(x):
    s = x - x.max(axis=-1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=-1, keepdims=True))


def _softmax_grad(op, g):
    s = op.outputs[0]
    return [multiply(subtract(g, reduce_sum(multiply(g, s), -1, keepdims=True)), s)]


def _log_softmax_grad(op, g):
    return [subtract(g, multiply(reduce_sum(g, -1, keepdims=True), exp(op.outputs[0])))]


register("Softmax", _rank_ge1_infer, pure(softmax_np), grad=_softmax_grad)
register_gpu("Softmax")
register("LogSoftmax", _rank_ge1_infer, pure(log_softmax_np), grad=_log_softmax_grad)
register_gpu("LogSoftmax")


# -- bias_add ----------------------------------------------------------------------------------
@tf_export("nn.bias_add")
def bias_add(value, bias, data_format=None, name=None):
    """tf.nn.bias_add(value, bias, data_format=None, name=None): adds the 1-D `bias` along the
    channel dimension (last for NHWC/None, dimension 1 for NC*)."""
    value = convert_to_tensor(value)
    bias = convert_to_tensor(bias, dtype=value.dtype)
    fmt = "NHWC" if data_format is None else as_str(data_format)
    if fmt not in ("NHWC", "NCHW", "N..C", "NC.."):
        raise ValueError(f"BiasAdd: data_format must be NHWC or NCHW, got {data_format!r}")
    fmt = "NCHW" if fmt.startswith("NC") else "NHWC"
    return make_op("BiasAdd", [value, bias], {"data_format": fmt, "T": value.dtype},
                   name=name or "BiasAdd").outputs[0]


@tf_export("nn.crelu")
def crelu(features, name=None, axis=-1):
    """tf.nn.crelu(features, name=None, axis=-1): concat([relu(features), relu(-features)], axis),
    doubling the depth."""
    with name_scope(name, "CRelu", [features]) as scope:
        features = convert_to_tensor(features, name="features")
        return relu(concat([features, negative(features)], axis), name=scope)


def bias_add_v1(value, bias, name=None):
    """tf.nn.bias_add_v1(value, bias, name=None)."""
    return bias_add(value, bias, name=name)


def _bias_add_infer(op):
    x, b = op.inputs
    nchw = op.get_attr("data_format") == "NCHW"
    xd = dims(x.shape)
    if b.shape.ndims is not None and b.shape.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {b.shape.ndims}")
    if xd is not None:
        if len(xd) < 2 or (nchw and len(xd) < 3):
            raise ValueError(f"Shape must be at least rank {3 if nchw else 2} but is rank {len(xd)}")
        c = xd[1] if nchw else xd[-1]
        bc = b.shape[0].value if b.shape.ndims == 1 else None
        if c is not None and bc is not None and c != bc:
            raise ValueError(f"Dimensions must be equal, but are {c} and {bc}")
    return [(x.dtype, x.shape)]


def _bias_add_kernel(node, ctx):
    nchw = node.attr.get("data_format") == "NCHW"

    def run(x, b):
        if nchw:
            b = b.reshape((-1,) + (1,) * (x.ndim - 2))
        if array_module(x, b) is not np:   # oneDNN and the intra-op threads are the CPU's
            return np.add(x, b)
        y = None if nchw else onednn.bias_add(x, b)
        return split_elementwise(np.add, x, b) if y is None else y
    return run


def _bias_add_grad(op, g):
    fmt = op.get_attr("data_format")
    db = make_op("BiasAddGrad", [g], {"data_format": fmt, "T": g.dtype}, name="BiasAddGrad").outputs[0]
    return [g, db]


def _bias_add_grad_infer(op):
    g = op.inputs[0]
    gd = dims(g.shape)
    if gd is None:
        return [(g.dtype, unknown_shape(1))]
    c = gd[1] if op.get_attr("data_format") == "NCHW" else gd[-1]
    return [(g.dtype, TensorShape([c]))]


def _bias_add_grad_kernel(node, ctx):
    nchw = node.attr.get("data_format") == "NCHW"

    def run(g):
        if nchw:
            axes = (0,) + tuple(range(2, g.ndim))
        else:
            g2 = g.reshape(-1, g.shape[-1])
            if g2.dtype in (np.float32, np.float64) and g2.shape[0] >= 256 and array_module(g) is np:
                # ones @ g: one BLAS pass, faster than numpy's row-by-row axis-0 reduction and
                # more accurate (blocked accumulation instead of one running sum per column);
                # oneDNN's where it runs the convolutions, so numpy's BLAS threads stay asleep.
                ones = np.ones((1, g2.shape[0]), g2.dtype)
                c = onednn.matmul(ones, g2, False, False)
                return np.matmul(ones[0], g2) if c is None else c[0]
            return g2.sum(axis=0, dtype=g.dtype)
        return g.sum(axis=axes, dtype=g.dtype)
    return run


register("BiasAdd", _bias_add_infer, _bias_add_kernel, grad=_bias_add_grad)
register_gpu("BiasAdd")
register("BiasAddV1", _bias_add_infer, _bias_add_kernel, grad=_bias_add_grad)
register_gpu("BiasAddV1")
register("BiasAddGrad", _bias_add_grad_infer, _bias_add_grad_kernel, grad=None)
register_gpu("BiasAddGrad")
