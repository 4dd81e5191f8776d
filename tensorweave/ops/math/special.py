"""Math ops, special functions: lgamma, digamma, polygamma, igamma/igammac (regularized
incomplete gamma), betainc, zeta (Hurwitz), erfc, erfinv, ndtri, erfcinv, the scaled modified Bessel
functions bessel_i0e/i1e, and lbeta, bessel_i0/i1 built on them; with TF's gradients.
scipy.special does the arithmetic; it is imported when a kernel is first built, so importing
tensorweave stays fast."""
from __future__ import annotations

import math

import numpy as np

from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import broadcast_shapes
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.sort import where_v2
from tensorweave.ops.helpers import FLOATS, make_op, same_as_input
from tensorweave.ops.math.binary import add, binary, greater, multiply, subtract, xlogy
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.math.unary import abs, exp, log1p, negative, reciprocal, sign, square, unary
from tensorweave.ops.registry import register

# erfinv, ndtri and the Bessel functions are tf.math names only.


def _special(fn_name: str):
    """Kernel factory applying scipy.special.<fn_name> elementwise, keeping the input dtype."""
    def factory(node, ctx):
        import scipy.special
        fn = getattr(scipy.special, fn_name)

        def run(*xs):
            xs = [np.asarray(x) for x in xs]
            out = np.asarray(fn(*[x.astype(np.float64) for x in xs]))
            return out.astype(xs[-1].dtype)
        return run
    return factory


def _define_unary(op_type: str, fn_name: str, grad, doc: str):
    register(op_type, same_as_input(), _special(fn_name), grad=grad, dtypes=FLOATS)

    def fn(x, name=None) -> Tensor:
        return unary(op_type, x, name, op_type)
    fn.__name__ = op_type.lower()
    fn.__doc__ = doc
    return fn


def _binary_infer(op):
    a, b = op.inputs[0], op.inputs[1]
    return [(a.dtype, broadcast_shapes(a.shape, b.shape))]


# -- gamma family ----------------------------------------------------------------------------------
lgamma = _define_unary("Lgamma", "gammaln", lambda op, g: [multiply(g, digamma(op.inputs[0]))],
                       "tf.lgamma(x, name=None): log|Gamma(x)| elementwise.")
tf_export("math.lgamma", "lgamma")(lgamma)
digamma = _define_unary("Digamma", "digamma", lambda op, g: [multiply(g, polygamma(1.0, op.inputs[0]))],
                        "tf.digamma(x, name=None): d/dx lgamma(x) elementwise.")
tf_export("math.digamma", "digamma")(digamma)


def _polygamma_np(n, x):
    import scipy.special
    n = np.asarray(n)
    whole = (n == np.floor(n)) & (n >= 0)
    safe_n = np.where(whole, n, 0).astype(np.int64)
    with np.errstate(invalid="ignore"):
        out = scipy.special.polygamma(safe_n, np.asarray(x, np.float64))
    return np.where(whole, out, np.nan)


@tf_export("math.polygamma", "polygamma")
def polygamma(a, x, name=None) -> Tensor:
    """tf.polygamma(a, x, name=None): the a-th derivative of digamma at x (a a non-negative
    integer value; NaN otherwise)."""
    return binary("Polygamma", a, x, name, "Polygamma")


register("Polygamma", _binary_infer,
         lambda node, ctx: (lambda a, x: _polygamma_np(a, x).astype(np.asarray(x).dtype)),
         grad=lambda op, g: [None, multiply(g, polygamma(add(op.inputs[0], 1.0), op.inputs[1]))],
         dtypes=FLOATS, dtype_param="a")

@tf_export("math.igamma", "igamma")
def igamma(a, x, name=None) -> Tensor:
    """tf.igamma(a, x, name=None): the regularized lower incomplete gamma function P(a, x)."""
    return binary("Igamma", a, x, name, "Igamma")


@tf_export("math.igammac", "igammac")
def igammac(a, x, name=None) -> Tensor:
    """tf.igammac(a, x, name=None): the regularized upper incomplete gamma function
    Q(a, x) = 1 - P(a, x)."""
    return binary("Igammac", a, x, name, "Igammac")


def _igamma_grad_a_np(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dP(a, x)/da. The series P = sum_n x^(a+n) e^-x / Gamma(a+n+1) differentiates term by term
    to sum_n term_n (log x - digamma(a+n+1)); for large x (where it needs many terms) a central
    difference of scipy's P in float64 is used instead."""
    import scipy.special as sp
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.zeros(a.shape)
    series = (x > 0) & (x <= 200)
    if series.any():
        aa, xx = a[series], x[series]
        total = np.zeros_like(aa)
        log_x = np.log(xx)
        n_terms = int(np.ceil(xx.max() + 12 * np.sqrt(xx.max()) + 40))
        for n in range(n_terms):
            log_term = (aa + n) * log_x - xx - sp.gammaln(aa + n + 1)
            total += np.exp(log_term) * (log_x - sp.digamma(aa + n + 1))
        out[series] = total
    big = x > 200
    if big.any():
        h = 1e-6 * np.maximum(1.0, a[big])
        out[big] = (sp.gammainc(a[big] + h, x[big]) - sp.gammainc(a[big] - h, x[big])) / (2 * h)
    out[~np.isfinite(a) | ~np.isfinite(x) | (a <= 0)] = np.nan
    return out


def igamma_grad_a(a: Tensor, x: Tensor) -> Tensor:
    """dP(a, x)/da of the regularized lower incomplete gamma function (TF's IgammaGradA)."""
    return make_op("IgammaGradA", [a, x], {"T": a.dtype}, name="IgammaGradA").outputs[0]


register("IgammaGradA", _binary_infer,
         lambda node, ctx: (lambda a, x: _igamma_grad_a_np(a, x).astype(np.asarray(a).dtype)), grad=None,
         dtypes=FLOATS, dtype_param="a")


def _igamma_partials(op):
    a, x = op.inputs
    # d P / dx = exp(-x) x^(a-1) / Gamma(a)
    partial_x = exp(subtract(subtract(xlogy(subtract(a, 1.0), x), x), lgamma(a)))
    return igamma_grad_a(a, x), partial_x


def _igamma_grad(op, g):
    pa, px = _igamma_partials(op)
    return [multiply(g, pa), multiply(g, px)]


def _igammac_grad(op, g):
    pa, px = _igamma_partials(op)
    return [negative(multiply(g, pa)), negative(multiply(g, px))]


register("Igamma", _binary_infer, _special("gammainc"), grad=_igamma_grad, dtypes=FLOATS, dtype_param="a")
register("Igammac", _binary_infer, _special("gammaincc"), grad=_igammac_grad, dtypes=FLOATS, dtype_param="a")


# -- beta family -----------------------------------------------------------------------------------
@tf_export("math.betainc", "betainc")
def betainc(a, b, x, name=None) -> Tensor:
    """tf.betainc(a, b, x, name=None): the regularized incomplete beta function I_x(a, b)."""
    with name_scope(name, "Betainc", [a, b, x]) as scope:
        x = convert_to_tensor(x, name="x")
        a = convert_to_tensor(a, dtype=x.dtype, name="a")
        b = convert_to_tensor(b, dtype=x.dtype, name="b")
        return make_op("Betainc", [a, b, x], {"T": x.dtype}, name=scope).outputs[0]


def _betainc_infer(op):
    a, b, x = op.inputs
    shapes = [t.shape for t in (a, b, x) if t.shape.ndims != 0]
    out = shapes[0] if shapes else x.shape
    for s in shapes[1:]:
        out = out.merge_with(s)
    return [(x.dtype, out)]


def _betainc_grad(op, g):
    # Only d/dx is defined (as in TF): x^(a-1) (1-x)^(b-1) / B(a, b).
    a, b, x = op.inputs
    log_beta = subtract(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
    partial_x = exp(subtract(add(multiply(subtract(b, 1.0), log1p(negative(x))), xlogy(subtract(a, 1.0), x)),
                             log_beta))
    return [None, None, multiply(g, partial_x)]


register("Betainc", _betainc_infer, _special("betainc"), grad=_betainc_grad, dtypes=FLOATS, dtype_param="a")


@tf_export("math.lbeta", "lbeta")
def lbeta(x, name=None) -> Tensor:
    """tf.lbeta(x, name=None): log|B(x)| = sum(lgamma(x), -1) - lgamma(sum(x, -1)) over the last
    dimension (an empty last dimension gives -inf)."""
    with name_scope(name, "lbeta", [x]):
        x = convert_to_tensor(x, name="x")
        return subtract(reduce_sum(lgamma(x), -1), lgamma(reduce_sum(x, -1)))


@tf_export("math.zeta", "zeta")
def zeta(x, q, name=None) -> Tensor:
    """tf.zeta(x, q, name=None): the Hurwitz zeta function sum_n (q + n)^-x."""
    return binary("Zeta", x, q, name, "Zeta")


register("Zeta", _binary_infer, _special("zeta"),
         grad=lambda op, g: [None, multiply(g, negative(multiply(op.inputs[0], zeta(add(op.inputs[0], 1.0),
                                                                                       op.inputs[1]))))],
         dtypes=FLOATS)


# -- error function relatives ----------------------------------------------------------------------
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
erfc = _define_unary("Erfc", "erfc",
                     lambda op, g: [multiply(g, multiply(-_TWO_OVER_SQRT_PI, exp(negative(square(op.inputs[0])))))],
                     "tf.erfc(x, name=None): 1 - erf(x) elementwise, accurate for large x.")
tf_export("math.erfc", "erfc")(erfc)
erfinv = _define_unary("Erfinv", "erfinv",
                       lambda op, g: [multiply(g, multiply(math.sqrt(math.pi) / 2, exp(square(op.outputs[0]))))],
                       "tf.math.erfinv(x, name=None): the inverse of erf on (-1, 1).")
tf_export("math.erfinv")(erfinv)
ndtri = _define_unary("Ndtri", "ndtri",
                      lambda op, g: [multiply(g, multiply(math.sqrt(2 * math.pi),
                                                          exp(multiply(square(op.outputs[0]), 0.5))))],
                      "tf.math.ndtri(x, name=None): the inverse of the standard normal CDF on (0, 1).")
tf_export("math.ndtri")(ndtri)


@tf_export("math.erfcinv")
def erfcinv(x, name=None) -> Tensor:
    """tf.math.erfcinv(x, name=None): the inverse of erfc on (0, 2), as TF builds it:
    -ndtri(x / 2) / sqrt(2)."""
    with name_scope(name, "erfcinv", [x]):
        x = convert_to_tensor(x, name="start")
        return multiply(negative(ndtri(multiply(x, 0.5))), math.sqrt(0.5))


# -- Bessel functions ------------------------------------------------------------------------------
def _i0e_grad(op, g):
    x, y = op.inputs[0], op.outputs[0]
    return [multiply(g, subtract(bessel_i1e(x), multiply(sign(x), y)))]


def _i1e_grad(op, g):
    # i1e'(x) = i0e(x) - i1e(x) (sign(x) + 1/x), and 1/2 at x = 0.
    x, y = op.inputs[0], op.outputs[0]
    eps = np.finfo(x.dtype.as_numpy_dtype).eps
    not_tiny = greater(abs(x), eps)
    safe_x = where_v2(not_tiny, x, eps)
    dy_dx = subtract(bessel_i0e(safe_x), multiply(y, add(sign(safe_x), reciprocal(safe_x))))
    return [multiply(g, where_v2(not_tiny, dy_dx, 0.5))]


bessel_i0e = _define_unary("BesselI0e", "i0e", _i0e_grad,
                           "tf.math.bessel_i0e(x, name=None): exp(-|x|) I0(x), the scaled modified Bessel function "
                           "of order 0.")
tf_export("math.bessel_i0e")(bessel_i0e)
bessel_i1e = _define_unary("BesselI1e", "i1e", _i1e_grad,
                           "tf.math.bessel_i1e(x, name=None): exp(-|x|) I1(x), the scaled modified Bessel function "
                           "of order 1.")
tf_export("math.bessel_i1e")(bessel_i1e)


@tf_export("math.bessel_i0")
def bessel_i0(x, name=None) -> Tensor:
    """tf.math.bessel_i0(x, name=None): the modified Bessel function of order 0."""
    with name_scope(name, "bessel_i0", [x]):
        x = convert_to_tensor(x, name="x")
        return multiply(exp(abs(x)), bessel_i0e(x))


@tf_export("math.bessel_i1")
def bessel_i1(x, name=None) -> Tensor:
    """tf.math.bessel_i1(x, name=None): the modified Bessel function of order 1."""
    with name_scope(name, "bessel_i1", [x]):
        x = convert_to_tensor(x, name="x")
        return multiply(exp(abs(x)), bessel_i1e(x))
