"""Math ops, elementwise unary family: abs, exp, log, trig, sigmoid, rounding, finiteness
tests. Each op's shape function, accepted dtypes, numpy kernel and gradient sit together."""
from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops import onednn
from tensorweave.ops.array.fill import zeros_like
from tensorweave.ops.helpers import (COMPLEX, FLOAT_COMPLEX, FLOATS, NUMERIC, REAL, array_module, conjugate, grad_op,
                                     make_op, same_as_input)
from tensorweave.ops.math.binary import _conj, add, minimum, multiply, realdiv, subtract
from tensorweave.ops.registry import pure, register, register_gpu


def _bool_same(op):
    return [(dtypes.bool, op.inputs[0].shape)]


def unary(op_type: str, x, name: Optional[str], default: Optional[str] = None, attrs: Optional[dict] = None) -> Tensor:
    """Builds a one-input op inside a name scope, as TF's generated wrappers do."""
    with name_scope(name, default or op_type, [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return make_op(op_type, [x], dict(attrs or {}, T=x.dtype), name=scope).outputs[0]


def _define(op_type: str, np_fn: Callable, grad, allowed, doc: str, infer=same_as_input(), gpu: bool = True):
    """Registers a unary op and returns its TF-style wrapper `fn(x, name=None)`. `gpu`: its
    kernel is written against its input's array module, so it is its GPU kernel too."""
    register(op_type, infer, pure(np_fn), grad=grad, dtypes=allowed)
    if gpu:
        register_gpu(op_type)

    def fn(x, name=None) -> Tensor:
        return unary(op_type, x, name, op_type)
    fn.__name__ = op_type
    fn.__doc__ = doc
    return fn


# -- sign and magnitude -----------------------------------------------------------------------
def _abs_grad(op, g):
    return [multiply(g, sign(op.inputs[0]))]


register("Abs", same_as_input(), pure(np.abs), grad=_abs_grad, dtypes=REAL)
register_gpu("Abs")
register("ComplexAbs", lambda op: [(dtypes.float32 if op.inputs[0].dtype == dtypes.complex64 else dtypes.float64,
                                    op.inputs[0].shape)], pure(np.abs), grad=None)


@tf_export("math.abs", "abs")
def abs(x, name=None):
    """tf.abs(x, name=None): |x| elementwise; complex input gives its real magnitude."""
    with name_scope(name, "Abs", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        if x.dtype in COMPLEX:
            return make_op("ComplexAbs", [x], {"Tout": dtypes.float32 if x.dtype == dtypes.complex64
                                               else dtypes.float64}, name=scope).outputs[0]
        return make_op("Abs", [x], {"T": x.dtype}, name=scope).outputs[0]


negative = _define("Neg", np.negative, lambda op, g: [negative(g)], NUMERIC,
                   "tf.negative(x, name=None): -x elementwise.")
tf_export("math.negative", "negative")(negative)
sign = _define("Sign", np.sign, lambda op, g: [zeros_like(op.inputs[0])], NUMERIC,
               "tf.sign(x, name=None): -1, 0 or 1 elementwise (NaN stays NaN).")
tf_export("math.sign", "sign")(sign)
square = _define("Square", np.square, lambda op, g: [multiply(g, multiply(op.inputs[0], 2))], NUMERIC,
                 "tf.square(x, name=None): x * x elementwise.")
tf_export("math.square", "square")(square)


# -- powers, exponentials, logs ---------------------------------------------------------------
def _y(op):
    return op.outputs[0]


# -- the ops of some functions' gradients: TF's SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad and
# ReciprocalGrad take (y, dy), y the function's output, and give dy times its derivative as
# TF's Eigen functors compute it (the same bits: tests/unit/test_grad_ops.py, recorded from TF 2.21);
# the gradients of their gradients are TF's (math_grad.py).
def _times(t, dy):
    """dy * t (t * dy's bits), into t, a fresh array of this kernel's own, where it is dy's shape."""
    if type(t) is np.ndarray and t.shape == dy.shape:
        t *= dy
        return t
    return dy * t


def _sigmoid_grad(y, dy):   # dy * (y * (1 - y))
    t = y.dtype.type(1) - y
    t *= y
    return _times(t, dy)


def _tanh_grad(y, dy):      # dy * (1 - y * y)
    return _times(y.dtype.type(1) - y * y, dy)


def _sqrt_grad(y, dy):      # dy * (0.5 / conj(y))
    return _times(y.dtype.type(0.5) / conjugate(y), dy)


def _rsqrt_grad(y, dy):     # -0.5 * (dy * conj(y)) * (conj(y) * conj(y))
    y = conjugate(y)
    t = dy * y
    t *= y.dtype.type(-0.5)
    t *= y * y
    return t


def _reciprocal_grad(y, dy):   # -dy * (conj(y) * conj(y))
    y = conjugate(y)
    t = _times(y * y, dy)
    return np.negative(t, out=t) if type(t) is np.ndarray else -t


def _sigmoid_grad_grad(op, grad):
    a, b = _conj(op.inputs[0]), _conj(op.inputs[1])
    gb = multiply(grad, b)
    return [subtract(gb, multiply(multiply(2.0, gb), a)), grad_op("SigmoidGrad", a, grad)]


def _tanh_grad_grad(op, grad):
    a, b = _conj(op.inputs[0]), _conj(op.inputs[1])
    return [multiply(multiply(multiply(grad, -2.0), b), a), grad_op("TanhGrad", a, grad)]


def _sqrt_grad_grad(op, grad):
    ga = realdiv(grad, op.inputs[0])
    return [multiply(negative(_conj(ga)), op.outputs[0]), multiply(0.5, ga)]


def _rsqrt_grad_grad(op, grad):
    ca, cg = _conj(op.inputs[0]), _conj(grad)
    return [multiply(multiply(multiply(-1.5, cg), op.inputs[1]), square(ca)), grad_op("RsqrtGrad", ca, grad)]


def _reciprocal_grad_grad(op, grad):
    ca, cg = _conj(op.inputs[0]), _conj(grad)
    return [multiply(multiply(multiply(cg, -2.0), op.inputs[1]), ca), grad_op("ReciprocalGrad", ca, grad)]


for _op_type, _kernel, _grad in (("SigmoidGrad", _sigmoid_grad, _sigmoid_grad_grad),
                                 ("TanhGrad", _tanh_grad, _tanh_grad_grad),
                                 ("SqrtGrad", _sqrt_grad, _sqrt_grad_grad),
                                 ("RsqrtGrad", _rsqrt_grad, _rsqrt_grad_grad),
                                 ("ReciprocalGrad", _reciprocal_grad, _reciprocal_grad_grad)):
    register(_op_type, same_as_input(), pure(_kernel), grad=_grad, dtypes=FLOAT_COMPLEX)
    register_gpu(_op_type)


def _from_output(op_type: str, conjugate: bool = False):
    """The gradient of an op whose gradient op reads its output: TF's _SigmoidGrad and the like."""
    def grad(op, g):
        y = _y(op)
        return [grad_op(op_type, _conj(y) if conjugate else y, g)]
    return grad


sqrt = _define("Sqrt", np.sqrt, _from_output("SqrtGrad"), FLOAT_COMPLEX,
               "tf.sqrt(x, name=None): square root elementwise.")
tf_export("math.sqrt", "sqrt")(sqrt)
rsqrt = _define("Rsqrt", lambda x: np.reciprocal(np.sqrt(x)), _from_output("RsqrtGrad"),
                FLOAT_COMPLEX, "tf.rsqrt(x, name=None): 1 / sqrt(x) elementwise.")
tf_export("math.rsqrt", "rsqrt")(rsqrt)


def _reciprocal_kernel(x):
    xp = array_module(x)
    x = xp.asarray(x)
    if x.dtype.kind in "iu":  # integer 1/x truncates, as C does; 1/0 is left to numpy's value
        return xp.where(xp.abs(x) == 1, x, xp.zeros((), x.dtype)).astype(x.dtype)
    return np.reciprocal(x)


reciprocal = _define("Reciprocal", _reciprocal_kernel, _from_output("ReciprocalGrad"), NUMERIC,
                     "tf.reciprocal(x, name=None): 1 / x elementwise.")
tf_export("math.reciprocal", "reciprocal")(reciprocal)
exp = _define("Exp", np.exp, lambda op, g: [multiply(g, _y(op))], FLOAT_COMPLEX,
              "tf.exp(x, name=None): e**x elementwise.")
tf_export("math.exp", "exp")(exp)
expm1 = _define("Expm1", np.expm1, lambda op, g: [multiply(g, exp(op.inputs[0]))], FLOAT_COMPLEX,
                "tf.expm1(x, name=None): e**x - 1 elementwise, accurate near 0.")
tf_export("math.expm1", "expm1")(expm1)
log = _define("Log", np.log, lambda op, g: [multiply(g, reciprocal(op.inputs[0]))], FLOAT_COMPLEX,
              "tf.log(x, name=None): natural logarithm elementwise.")
tf_export("math.log", "log")(log)
log1p = _define("Log1p", np.log1p, lambda op, g: [multiply(g, reciprocal(add(op.inputs[0], 1)))],
                FLOAT_COMPLEX, "tf.log1p(x, name=None): log(1 + x) elementwise, accurate near 0.")
tf_export("math.log1p", "log1p")(log1p)


# -- trigonometric and hyperbolic -------------------------------------------------------------
sin = _define("Sin", np.sin, lambda op, g: [multiply(g, cos(op.inputs[0]))], FLOAT_COMPLEX,
              "tf.sin(x, name=None).")
tf_export("math.sin", "sin")(sin)
cos = _define("Cos", np.cos, lambda op, g: [multiply(negative(g), sin(op.inputs[0]))], FLOAT_COMPLEX,
              "tf.cos(x, name=None).")
tf_export("math.cos", "cos")(cos)
tan = _define("Tan", np.tan, lambda op, g: [multiply(g, square(reciprocal(cos(op.inputs[0]))))],
              FLOAT_COMPLEX, "tf.tan(x, name=None).")
tf_export("math.tan", "tan")(tan)
asin = _define("Asin", np.arcsin,
               lambda op, g: [multiply(g, rsqrt(subtract(1, square(op.inputs[0]))))],
               FLOAT_COMPLEX, "tf.asin(x, name=None).")
tf_export("math.asin", "asin")(asin)
acos = _define("Acos", np.arccos,
               lambda op, g: [multiply(negative(g), rsqrt(subtract(1, square(op.inputs[0]))))],
               FLOAT_COMPLEX, "tf.acos(x, name=None).")
tf_export("math.acos", "acos")(acos)
atan = _define("Atan", np.arctan,
               lambda op, g: [multiply(g, reciprocal(add(1, square(op.inputs[0]))))],
               FLOAT_COMPLEX, "tf.atan(x, name=None).")
tf_export("math.atan", "atan")(atan)
asinh = _define("Asinh", np.arcsinh, lambda op, g: [realdiv(g, cosh(_y(op)))], FLOAT_COMPLEX,
                "tf.asinh(x, name=None): inverse hyperbolic sine.")
tf_export("math.asinh", "asinh")(asinh)
acosh = _define("Acosh", np.arccosh, lambda op, g: [realdiv(g, sinh(_y(op)))], FLOAT_COMPLEX,
                "tf.acosh(x, name=None): inverse hyperbolic cosine.")
tf_export("math.acosh", "acosh")(acosh)
atanh = _define("Atanh", np.arctanh, lambda op, g: [multiply(g, reciprocal(subtract(1, square(op.inputs[0]))))],
                FLOAT_COMPLEX, "tf.atanh(x, name=None): inverse hyperbolic tangent.")
tf_export("math.atanh", "atanh")(atanh)
sinh = _define("Sinh", np.sinh, lambda op, g: [multiply(g, cosh(op.inputs[0]))], FLOAT_COMPLEX,
               "tf.sinh(x, name=None).")
tf_export("math.sinh", "sinh")(sinh)
cosh = _define("Cosh", np.cosh, lambda op, g: [multiply(g, sinh(op.inputs[0]))], FLOAT_COMPLEX,
               "tf.cosh(x, name=None).")
tf_export("math.cosh", "cosh")(cosh)
tanh = _define("Tanh", np.tanh, _from_output("TanhGrad", conjugate=True), FLOAT_COMPLEX,
               "tf.tanh(x, name=None): hyperbolic tangent elementwise.")
tf_export("math.tanh", "nn.tanh", "tanh")(tanh)


def _sigmoid_np(x):
    x = array_module(x).asarray(x)
    if x.dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    # Two branches so that exp never overflows: TF's value for large |x| is exactly 0 or 1.
    if type(x) is not np.ndarray or x.ndim == 0 or x.dtype.kind != "f":
        e = np.exp(-np.abs(x))
        out = np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)
        return out[()] if out.ndim == 0 else out
    if (y := onednn.logistic(x)) is None:
        return _sigmoid_selecting_numerator(x)
    if not x.min() >= _ONEDNN_LOGISTIC_UNDERFLOW:   # (a NaN's min too: it may hide a low element)
        # There e = exp(x) < 2**-124, so 1 + e is 1 and the formula's value is e itself. The low
        # elements by index: a boolean mask's gather and scatter mispredict a branch per element
        # (a [128, 784] activation 40% saturated: 0.83 ms against 0.11).
        flat, x_flat = y.reshape(-1), x.reshape(-1)
        low = np.flatnonzero(x_flat < _ONEDNN_LOGISTIC_UNDERFLOW)
        flat[low] = np.exp(x_flat[low])
    return y


_ONEDNN_LOGISTIC_UNDERFLOW = -86.5   # (oneDNN's last nonzero result is at -86.99)


def _sigmoid_selecting_numerator(x: np.ndarray) -> np.ndarray:
    """where(x >= 0, 1 / (1 + e), e / (1 + e)) with e = exp(-|x|), the same bits, as
    numerator / (1 + e) with the numerator (1 or e) chosen without a branch: np.where's choice
    per element is a branch the processor mispredicts on data of mixed signs (3.6 ns an element
    of a [256, 784] float32 activation against 0.1 ns for a pass of arithmetic), and its two
    divisions and their temporaries are one division here. The numerator is max(e, x >= 0):
    e <= 1, so where x >= 0 that is 1, elsewhere e (e >= 0, and NaN where x is NaN, which np.maximum
    keeps); three passes fewer than choosing it by a bit mask. The passes run in place."""
    e = np.abs(x)
    np.negative(e, out=e)
    np.exp(e, out=e)
    denominator = np.add(e, 1, dtype=x.dtype)
    np.maximum(e, np.greater_equal(x, 0), out=e, dtype=x.dtype)
    return np.divide(e, denominator, out=e)


sigmoid = _define("Sigmoid", _sigmoid_np, _from_output("SigmoidGrad", conjugate=True), FLOAT_COMPLEX,
                  "tf.sigmoid(x, name=None): 1 / (1 + exp(-x)) elementwise.")
tf_export("math.sigmoid", "nn.sigmoid", "sigmoid")(sigmoid)


@tf_export("math.log_sigmoid", "log_sigmoid")
def log_sigmoid(x, name=None):
    """tf.log_sigmoid(x, name=None): log(sigmoid(x)) = -softplus(-x), computed stably."""
    with name_scope(name, "LogSigmoid", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        # -softplus(-x) = min(x, 0) - log1p(exp(-|x|))
        return subtract(minimum(x, 0), log1p(exp(negative(abs(x)))), name=scope)


_erf_scalar = np.vectorize(math.erf, otypes=[np.float64])


def _erf_np(x):
    x = np.asarray(x)
    out = _erf_scalar(x).astype(x.dtype, copy=False) if x.size else x.copy()
    return out[()] if out.ndim == 0 else out


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
erf = _define("Erf", _erf_np,
              lambda op, g: [multiply(g, multiply(_TWO_OVER_SQRT_PI, exp(negative(square(op.inputs[0])))))],
              FLOATS, "tf.erf(x, name=None): the Gauss error function elementwise.", gpu=False)  # math.erf per element
tf_export("math.erf", "erf")(erf)


# -- rounding ----------------------------------------------------------------------------------
floor = _define("Floor", np.floor, None, FLOATS, "tf.floor(x, name=None): largest integer <= x.")
tf_export("math.floor", "floor")(floor)
ceil = _define("Ceil", np.ceil, None, FLOATS, "tf.ceil(x, name=None): smallest integer >= x.")
tf_export("math.ceil", "ceil")(ceil)
rint = _define("Rint", np.rint, None, FLOATS,
               "tf.rint(x, name=None): nearest integer, halves to even.")
tf_export("math.rint", "rint")(rint)
register("Round", same_as_input(), pure(np.rint), grad=None, dtypes=FLOAT_COMPLEX)
register_gpu("Round")


@tf_export("math.round", "round")
def round(x, name=None):
    """tf.round(x, name=None): rounds half to even (banker's rounding); ints pass through."""
    x = convert_to_tensor(x)
    if x.dtype.is_integer:
        return x
    return unary("Round", x, name, "Round")


# -- finiteness tests --------------------------------------------------------------------------
is_nan = _define("IsNan", np.isnan, None, FLOATS, "tf.is_nan(x, name=None): elementwise isnan.",
                 infer=_bool_same)
tf_export("debugging.is_nan", "math.is_nan", "is_nan")(is_nan)
is_inf = _define("IsInf", np.isinf, None, FLOATS, "tf.is_inf(x, name=None): elementwise isinf.",
                 infer=_bool_same)
tf_export("debugging.is_inf", "math.is_inf", "is_inf")(is_inf)
is_finite = _define("IsFinite", np.isfinite, None, FLOATS,
                    "tf.is_finite(x, name=None): elementwise isfinite.", infer=_bool_same)
tf_export("debugging.is_finite", "math.is_finite", "is_finite")(is_finite)
