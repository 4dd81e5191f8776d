"""Math ops, elementwise binary family: arithmetic, comparisons, logical ops and add_n.
Negation in gradients is written `-g` (Tensor.__neg__, installed by operators.py), since Neg is a
unary op defined above this module."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.shapes import broadcast_shapes
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import identity
from tensorweave.ops.array.fill import zeros_like
from tensorweave.ops.helpers import COMPLEX, FLOAT_COMPLEX, FLOATS, NUMERIC, REAL, array_module, make_op, tf_pow
from tensorweave.ops.math.cast import cast
from tensorweave.ops.registry import pure, register, register_gpu


def binary_inputs(x, y, op_type: str) -> tuple[Tensor, Tensor]:
    """Converts both operands; a Python operand takes the other's dtype, tensors must agree."""
    if isinstance(x, Tensor) or not isinstance(y, Tensor):
        x = convert_to_tensor(x, name="x")
        y = y if isinstance(y, Tensor) else convert_to_tensor(y, dtype=x.dtype, name="y")
    else:
        x = convert_to_tensor(x, dtype=y.dtype, name="x")
    if x.dtype != y.dtype:
        raise TypeError(f"Input 'y' of '{op_type}' Op has type {y.dtype.name} that does not match "
                        f"type {x.dtype.name} of argument 'x'.")
    return x, y


def _broadcast_infer(op):
    x, y = op.inputs
    return [(x.dtype, broadcast_shapes(x.shape, y.shape))]


def _bool_broadcast_infer(op):
    x, y = op.inputs
    return [(dtypes.bool, broadcast_shapes(x.shape, y.shape))]


def binary(op_type: str, x, y, name: Optional[str], default: str) -> Tensor:
    """Builds a broadcasting binary op inside a name scope, as TF's generated wrappers do."""
    with name_scope(name, default, [x, y]) as scope:
        x, y = binary_inputs(x, y, op_type)
        return make_op(op_type, [x, y], {"T": x.dtype}, name=scope).outputs[0]


def _int_zero_check(node, y) -> None:
    if (y == 0).any():   # on a GPU: one sync, for TF's error (integer division is rare there)
        raise errors.InvalidArgumentError(node, node.name, "Integer division by zero")


def _is_int(a) -> bool:
    return array_module(a).asarray(a).dtype.kind in "iu"


def _divlike_kernel(int_fn: Callable, float_fn: Callable):
    """Kernel factory: integer inputs get TF's division-by-zero error, floats IEEE results."""
    def factory(node, ctx):
        t = node.attr.get("T")
        if t is not None and not dtypes.as_dtype(t).is_integer:
            return float_fn  # decided once at plan time: the hot path is the bare numpy call

        def run(x, y):
            if _is_int(x):
                _int_zero_check(node, y)
                return int_fn(x, y)
            return float_fn(x, y)
        return run
    return factory


def trunc_div(x, y):
    """C-style integer division (rounding toward zero), as TF's TruncateDiv and scatter_div."""
    q = np.floor_divide(x, y)
    return np.where((np.mod(x, y) != 0) & ((x < 0) != (y < 0)), q + 1, q).astype(q.dtype)


def _cast_like(result, x):
    return array_module(result).asarray(result).astype(x.dtype, copy=False)


# -- arithmetic --------------------------------------------------------------------------------
@tf_export("math.add", "add")
def add(x, y, name=None) -> Tensor:
    """tf.add(x, y, name=None): x + y elementwise, with broadcasting (strings concatenate)."""
    return binary("Add", x, y, name, "Add")


def _add_grad(op, grad):
    return [grad, grad]  # broadcasting is undone centrally by tf.gradients


def _add_kernel(node, ctx):
    t = node.attr.get("T")
    if t is not None and dtypes.as_dtype(t) != dtypes.string:
        return np.add

    def run(x, y):
        if isinstance(x, (bytes, np.ndarray)) and np.asarray(x).dtype == object:
            return np.char.add(np.asarray(x, dtype=bytes), np.asarray(y, dtype=bytes)).astype(object)
        return np.add(x, y)
    return run


register("Add", _broadcast_infer, _add_kernel, grad=_add_grad, dtypes=NUMERIC + (dtypes.string,))
register_gpu("Add")
register("AddV2", _broadcast_infer, _add_kernel, grad=_add_grad, dtypes=NUMERIC + (dtypes.string,))
register_gpu("AddV2")


@tf_export("math.subtract", "subtract")
def subtract(x, y, name=None) -> Tensor:
    """tf.subtract(x, y, name=None): x - y elementwise, with broadcasting."""
    return binary("Sub", x, y, name, "Sub")


register("Sub", _broadcast_infer, pure(np.subtract), grad=lambda op, g: [g, -g], dtypes=NUMERIC)
register_gpu("Sub")


@tf_export("math.multiply", "multiply")
def multiply(x, y, name=None) -> Tensor:
    """tf.multiply(x, y, name=None): x * y elementwise, with broadcasting."""
    return binary("Mul", x, y, name, "Mul")


def _conj(t: Tensor) -> Tensor:
    """conj(t) for complex t (the gradient convention TF uses), t itself otherwise."""
    return make_op("Conj", [t], {"T": t.dtype}).outputs[0] if t.dtype.is_complex else t


def _mul_grad(op, grad):
    x, y = op.inputs
    return [multiply(grad, _conj(y)), multiply(_conj(x), grad)]


register("Mul", _broadcast_infer, pure(np.multiply), grad=_mul_grad, dtypes=NUMERIC)
register_gpu("Mul")

_TRUEDIV_TABLE = {dtypes.uint8: dtypes.float32, dtypes.int8: dtypes.float32, dtypes.uint16: dtypes.float32,
                  dtypes.int16: dtypes.float32, dtypes.int32: dtypes.float64, dtypes.int64: dtypes.float64,
                  dtypes.float16: None, dtypes.float32: None, dtypes.float64: None,
                  dtypes.complex64: None, dtypes.complex128: None}


@tf_export("math.truediv", "truediv")
def truediv(x, y, name=None) -> Tensor:
    """tf.truediv(x, y, name=None): Python 3 division; integer inputs are cast to float first
    (int8/int16/uint8/uint16 -> float32, int32/int64 -> float64)."""
    with name_scope(name, "truediv", [x, y]) as scope:
        x, y = binary_inputs(x, y, "RealDiv")
        target = _TRUEDIV_TABLE.get(x.dtype, ...)
        if target is ...:
            raise TypeError(f"Invalid dtype {x.dtype!r} in __truediv__")
        if target is not None:
            x, y = cast(x, target), cast(y, target)
        return make_op("RealDiv", [x, y], {"T": x.dtype}, name=scope).outputs[0]


@tf_export("math.divide", "divide")
def divide(x, y, name=None) -> Tensor:
    """tf.divide(x, y, name=None): x / y (Python 3 true division)."""
    return truediv(x, y, name=name)


@tf_export("math.realdiv", "realdiv")
def realdiv(x, y, name=None) -> Tensor:
    """tf.realdiv(x, y, name=None): x / y for real types (integer inputs truncate)."""
    return binary("RealDiv", x, y, name, "RealDiv")


@tf_export("div")
def div(x, y, name=None) -> Tensor:
    """tf.div(x, y, name=None): TF1 Python-2 division, floor division for integer inputs."""
    with name_scope(name, "div", [x, y]) as scope:
        x, y = binary_inputs(x, y, "Div")
        op_type = "RealDiv" if x.dtype in FLOAT_COMPLEX else "FloorDiv"
        return make_op(op_type, [x, y], {"T": x.dtype}, name=scope).outputs[0]


def _realdiv_grad(op, grad):
    x, y = op.inputs
    return [realdiv(grad, _conj(y)), multiply(grad, _conj(realdiv(realdiv(-x, y), y)))]


register("RealDiv", _broadcast_infer, _divlike_kernel(trunc_div, np.true_divide), grad=_realdiv_grad,
         dtypes=NUMERIC)
register_gpu("RealDiv")
register("Div", _broadcast_infer, _divlike_kernel(trunc_div, np.true_divide), grad=_realdiv_grad, dtypes=NUMERIC)
register_gpu("Div")


@tf_export("math.div_no_nan", "math.divide_no_nan", "div_no_nan")
def div_no_nan(x, y, name=None) -> Tensor:
    """tf.div_no_nan(x, y, name=None): x / y, or 0 where y == 0."""
    with name_scope(name, "div_no_nan", [x, y]) as scope:
        x, y = binary_inputs(x, y, "DivNoNan")
        return make_op("DivNoNan", [x, y], {"T": x.dtype}, name=scope).outputs[0]


def _div_no_nan_kernel(node, ctx):
    def run(x, y):
        xp = array_module(x, y)
        x, y = xp.asarray(x), xp.asarray(y)
        safe = xp.where(y == 0, xp.ones_like(y), y)
        return xp.where(y == 0, xp.zeros((), x.dtype), x / safe).astype(x.dtype, copy=False)
    return run


def _div_no_nan_grad(op, grad):
    x, y = op.inputs
    return [div_no_nan(grad, y), multiply(grad, div_no_nan(div_no_nan(-x, y), y))]


register("DivNoNan", _broadcast_infer, _div_no_nan_kernel, grad=_div_no_nan_grad, dtypes=FLOAT_COMPLEX)
register_gpu("DivNoNan")


@tf_export("math.reciprocal_no_nan")
def reciprocal_no_nan(x, name=None) -> Tensor:
    """tf.math.reciprocal_no_nan(x, name=None): 1 / x, or 0 where x == 0 (a DivNoNan of one by x,
    as TF builds it)."""
    with name_scope(name, "reciprocal_no_nan", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        one = convert_to_tensor(1, dtype=x.dtype, name="one")
        return make_op("DivNoNan", [one, x], {"T": x.dtype}, name=scope).outputs[0]


@tf_export("math.floordiv", "floor_div", "floordiv")
def floordiv(x, y, name=None) -> Tensor:
    """tf.floordiv(x, y, name=None): floor(x / y); integer division by zero is an error."""
    return binary("FloorDiv", x, y, name, "floordiv")


floor_div = floordiv


def _float_floordiv(x, y):
    return _cast_like(np.floor(np.true_divide(x, y)), x)


register("FloorDiv", _broadcast_infer, _divlike_kernel(np.floor_divide, _float_floordiv), grad=None, dtypes=REAL)
register_gpu("FloorDiv")


@tf_export("math.nextafter")
def nextafter(x1, x2, name=None) -> Tensor:
    """tf.math.nextafter(x1, x2, name=None): the next representable value after x1 in the
    direction of x2, elementwise (float32 or float64)."""
    return binary("NextAfter", x1, x2, name, "NextAfter")


# TF's gradient: the incoming one for x1 (as if nextafter were x1 itself), zeros for x2
register("NextAfter", _broadcast_infer, pure(np.nextafter), grad=lambda op, g: [g, zeros_like(g)],
         dtypes=(dtypes.float32, dtypes.float64), dtype_param="x1")
register_gpu("NextAfter")


@tf_export("math.floormod", "math.mod", "floormod", "mod")
def floormod(x, y, name=None) -> Tensor:
    """tf.floormod(x, y, name=None) (alias tf.mod): remainder with the sign of the divisor."""
    return binary("FloorMod", x, y, name, "FloorMod")


mod = floormod


def _floormod_grad(op, grad):
    x, y = op.inputs
    return [grad, multiply(grad, -floordiv(x, y))]


register("FloorMod", _broadcast_infer, _divlike_kernel(np.mod, np.mod), grad=_floormod_grad, dtypes=REAL)
register_gpu("FloorMod")


@tf_export("math.truncatediv", "truncatediv")
def truncatediv(x, y, name=None) -> Tensor:
    """tf.truncatediv(x, y, name=None): division rounding toward zero."""
    return binary("TruncateDiv", x, y, name, "TruncateDiv")


@tf_export("math.truncatemod", "truncatemod")
def truncatemod(x, y, name=None) -> Tensor:
    """tf.truncatemod(x, y, name=None): remainder with the sign of the dividend (C fmod)."""
    return binary("TruncateMod", x, y, name, "TruncateMod")


register("TruncateDiv", _broadcast_infer,
         _divlike_kernel(trunc_div, lambda x, y: _cast_like(np.trunc(np.true_divide(x, y)), x)), grad=None,
         dtypes=REAL)
register("TruncateMod", _broadcast_infer, _divlike_kernel(np.fmod, np.fmod), grad=None, dtypes=REAL)


@tf_export("math.pow", "pow")
def pow(x, y, name=None) -> Tensor:
    """tf.pow(x, y, name=None): x ** y elementwise."""
    return binary("Pow", x, y, name, "Pow")


def _pow_kernel(node, ctx):
    def run(x, y):
        if _is_int(x):
            if (y < 0).any():
                raise errors.InvalidArgumentError(node, node.name,
                                                  "Integers to negative integer powers are not allowed")
        return tf_pow(x, y)
    return run


register("Pow", _broadcast_infer, _pow_kernel,   # gradient: math_grad.py
         dtypes=FLOATS + (dtypes.int32, dtypes.int64) + COMPLEX)
register_gpu("Pow")


@tf_export("math.atan2", "atan2")
def atan2(y, x, name=None) -> Tensor:
    """tf.atan2(y, x, name=None): the angle of the point (x, y) elementwise, in [-pi, pi]."""
    return binary("Atan2", y, x, name, "Atan2")


register("Atan2", _broadcast_infer, pure(np.arctan2), dtypes=FLOATS, dtype_param="y")   # gradient: math_grad.py


def _x_zero_kernel(fn: Callable):
    """Kernel of an op that is 0 wherever x == 0 (even where fn(x, y) would be inf or nan)."""
    def factory(node, ctx):
        def run(x, y):
            x, y = np.asarray(x), np.asarray(y)
            with np.errstate(divide="ignore", invalid="ignore"):
                out = np.where(x == 0, np.zeros((), x.dtype), fn(x, y))
            return out.astype(x.dtype, copy=False)
        return run
    return factory


@tf_export("math.xlogy")
def xlogy(x, y, name=None) -> Tensor:
    """tf.math.xlogy(x, y, name=None): x * log(y), and 0 where x == 0."""
    return binary("Xlogy", x, y, name, "Xlogy")


@tf_export("math.xdivy")
def xdivy(x, y, name=None) -> Tensor:
    """tf.math.xdivy(x, y, name=None): x / y, and 0 where x == 0."""
    return binary("Xdivy", x, y, name, "Xdivy")


@tf_export("math.xlog1py")
def xlog1py(x, y, name=None) -> Tensor:
    """tf.math.xlog1py(x, y, name=None): x * log1p(y), and 0 where x == 0."""
    return binary("Xlog1py", x, y, name, "Xlog1py")


register("Xlogy", _broadcast_infer, _x_zero_kernel(lambda x, y: x * np.log(y)), dtypes=FLOAT_COMPLEX)
register("Xdivy", _broadcast_infer, _x_zero_kernel(np.true_divide), dtypes=FLOAT_COMPLEX)
register("Xlog1py", _broadcast_infer, _x_zero_kernel(lambda x, y: x * np.log1p(y)), dtypes=FLOAT_COMPLEX)


@tf_export("math.multiply_no_nan")
def multiply_no_nan(x, y, name=None) -> Tensor:
    """tf.math.multiply_no_nan(x, y, name=None): x * y, and 0 where y == 0 (even if x is inf or
    nan)."""
    return binary("MulNoNan", x, y, name, "MulNoNan")


def _mul_no_nan_kernel(node, ctx):
    def run(x, y):
        x, y = np.asarray(x), np.asarray(y)
        with np.errstate(invalid="ignore"):
            return np.where(y == 0, np.zeros((), x.dtype), x * y).astype(x.dtype, copy=False)
    return run


register("MulNoNan", _broadcast_infer, _mul_no_nan_kernel,
         grad=lambda op, g: [multiply_no_nan(g, op.inputs[1]), multiply_no_nan(op.inputs[0], g)],
         dtypes=FLOAT_COMPLEX)


@tf_export("math.polyval")
def polyval(coeffs, x, name=None) -> Tensor:
    """tf.math.polyval(coeffs, x, name=None): coeffs[0] * x**(n-1) + ... + coeffs[n-1], by
    Horner's rule (0 for no coefficients)."""
    if not isinstance(coeffs, (list, tuple)):
        raise ValueError(f"Argument coeffs must be list type, got {type(coeffs).__name__}")
    with name_scope(name, "polyval", list(coeffs) + [x]):
        x = convert_to_tensor(x, name="x")
        if not coeffs:
            return multiply(x, np.zeros((), x.dtype.as_numpy_dtype))
        result = convert_to_tensor(coeffs[0], dtype=x.dtype)
        for c in coeffs[1:]:
            result = add(multiply(result, x), c)
        return result


@tf_export("math.squared_difference", "squared_difference")
def squared_difference(x, y, name=None) -> Tensor:
    """tf.squared_difference(x, y, name=None): (x - y)**2 elementwise."""
    return binary("SquaredDifference", x, y, name, "SquaredDifference")


def _sqdiff_grad(op, grad):
    x, y = op.inputs
    gx = multiply(multiply(grad, 2), subtract(x, y))
    return [gx, -gx]


register("SquaredDifference", _broadcast_infer, pure(lambda x, y: np.square(np.subtract(x, y))),
         grad=_sqdiff_grad, dtypes=NUMERIC)
register_gpu("SquaredDifference")


@tf_export("math.scalar_mul", "scalar_mul")
def scalar_mul(scalar, x, name=None):
    """tf.scalar_mul(scalar, x, name=None): a scalar times a Tensor or IndexedSlices."""
    base = x.values if isinstance(x, IndexedSlices) else convert_to_tensor(x)
    scalar = convert_to_tensor(scalar, dtype=base.dtype, name="scalar")
    if scalar.shape.ndims != 0:
        raise ValueError(f"Only scalar multiply works, got shape {scalar.shape}")
    if isinstance(x, IndexedSlices):
        return IndexedSlices(multiply(scalar, x.values, name), x.indices, x.dense_shape)
    return multiply(scalar, base, name)


@tf_export("math.maximum", "maximum")
def maximum(x, y, name=None) -> Tensor:
    """tf.maximum(x, y, name=None): elementwise max (NaN propagates), with broadcasting."""
    return binary("Maximum", x, y, name, "Maximum")


@tf_export("math.minimum", "minimum")
def minimum(x, y, name=None) -> Tensor:
    """tf.minimum(x, y, name=None): elementwise min (NaN propagates), with broadcasting."""
    return binary("Minimum", x, y, name, "Minimum")


def _select_grad(selector: Callable):
    # TF splits by x>=y (max) / x<=y (min): ties go entirely to x.
    def grad_fn(op, grad):
        x, y = op.inputs
        xmask = selector(x, y)
        return [multiply(grad, cast(xmask, grad.dtype)),
                multiply(grad, cast(logical_not(xmask), grad.dtype))]
    return grad_fn


register("Maximum", _broadcast_infer, pure(np.maximum), grad=_select_grad(lambda x, y: greater_equal(x, y)),
         dtypes=REAL)
register_gpu("Maximum")
register("Minimum", _broadcast_infer, pure(np.minimum), grad=_select_grad(lambda x, y: less_equal(x, y)),
         dtypes=REAL)
register_gpu("Minimum")


# -- comparisons and logic ---------------------------------------------------------------------
def _compare(op_type: str, np_fn, allowed):
    def fn(x, y, name=None) -> Tensor:
        return binary(op_type, x, y, name, op_type)
    register(op_type, _bool_broadcast_infer, pure(np_fn), grad=None, dtypes=allowed)
    register_gpu(op_type)
    fn.__name__ = op_type
    return fn


equal = _compare("Equal", np.equal, None)
tf_export("math.equal", "equal")(equal)
not_equal = _compare("NotEqual", np.not_equal, None)
tf_export("math.not_equal", "not_equal")(not_equal)
less = _compare("Less", np.less, REAL)
tf_export("math.less", "less")(less)
less_equal = _compare("LessEqual", np.less_equal, REAL)
tf_export("math.less_equal", "less_equal")(less_equal)
greater = _compare("Greater", np.greater, REAL)
tf_export("math.greater", "greater")(greater)
greater_equal = _compare("GreaterEqual", np.greater_equal, REAL)
tf_export("math.greater_equal", "greater_equal")(greater_equal)
equal.__doc__ = "tf.equal(x, y, name=None): elementwise x == y (bool), with broadcasting."
not_equal.__doc__ = "tf.not_equal(x, y, name=None): elementwise x != y (bool), with broadcasting."
less.__doc__ = "tf.less(x, y, name=None): elementwise x < y (bool)."
less_equal.__doc__ = "tf.less_equal(x, y, name=None): elementwise x <= y (bool)."
greater.__doc__ = "tf.greater(x, y, name=None): elementwise x > y (bool)."
greater_equal.__doc__ = "tf.greater_equal(x, y, name=None): elementwise x >= y (bool)."


def _check_bool(op_type: str, *ts: Tensor) -> None:
    for param, t in zip(("x", "y"), ts):
        if t.dtype != dtypes.bool:
            raise TypeError(f"Input '{param}' of '{op_type}' Op has type {t.dtype.name} that does not match "
                            "expected type of bool.")


def _logical(op_type: str, x, y, name, default) -> Tensor:
    with name_scope(name, default, [x, y]) as scope:
        x, y = binary_inputs(x, y, op_type)
        _check_bool(op_type, x, y)
        return make_op(op_type, [x, y], name=scope).outputs[0]


@tf_export("math.logical_and", "logical_and")
def logical_and(x, y, name=None) -> Tensor:
    """tf.logical_and(x, y, name=None): elementwise x AND y of bool tensors."""
    return _logical("LogicalAnd", x, y, name, "LogicalAnd")


@tf_export("math.logical_or", "logical_or")
def logical_or(x, y, name=None) -> Tensor:
    """tf.logical_or(x, y, name=None): elementwise x OR y of bool tensors."""
    return _logical("LogicalOr", x, y, name, "LogicalOr")


@tf_export("math.logical_not", "logical_not")
def logical_not(x, name=None) -> Tensor:
    """tf.logical_not(x, name=None): elementwise NOT of a bool tensor."""
    with name_scope(name, "LogicalNot", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        _check_bool("LogicalNot", x)
        return make_op("LogicalNot", [x], name=scope).outputs[0]


@tf_export("math.logical_xor", "logical_xor")
def logical_xor(x, y, name="LogicalXor") -> Tensor:
    """tf.logical_xor(x, y, name='LogicalXor'): (x | y) & ~(x & y), as TF composes it."""
    x, y = binary_inputs(x, y, "LogicalXor")
    _check_bool("LogicalXor", x, y)
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


register("LogicalAnd", _bool_broadcast_infer, pure(np.logical_and), grad=None)
register_gpu("LogicalAnd")
register("LogicalOr", _bool_broadcast_infer, pure(np.logical_or), grad=None)
register_gpu("LogicalOr")
register("LogicalNot", lambda op: [(dtypes.bool, op.inputs[0].shape)], pure(np.logical_not), grad=None)
register_gpu("LogicalNot")


# -- add_n -------------------------------------------------------------------------------------
@tf_export("math.add_n", "add_n")
def add_n(inputs, name=None):
    """tf.add_n(inputs, name=None): elementwise sum of a list of same-shape, same-dtype tensors."""
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a list of at least one Tensor/IndexedSlices with the same "
                         "dtype and shape")
    inputs = [convert_to_tensor(i) for i in inputs]   # IndexedSlices: summed into place
    if len(inputs) == 1:
        if name:
            return identity(inputs[0], name=name)
        return inputs[0]
    with name_scope(name, "AddN", inputs) as scope:
        if any(t.dtype != inputs[0].dtype for t in inputs):
            raise TypeError("inputs must be a list of at least one Tensor/IndexedSlices with the same "
                            f"dtype and shape (op 'AddN'); got dtypes {[t.dtype.name for t in inputs]}")
        return make_op("AddN", inputs, {"N": len(inputs), "T": inputs[0].dtype}, name=scope).outputs[0]


def _add_n_infer(op):
    shape = op.inputs[0].shape
    for t in op.inputs[1:]:
        if t.dtype != op.inputs[0].dtype:
            raise ValueError(f"AddN inputs must share a dtype, got {op.inputs[0].dtype.name} and {t.dtype.name}")
        try:
            shape = shape.merge_with(t.shape)
        except ValueError:
            raise ValueError(f"Shapes must be equal rank, or dimensions must be equal: {shape} vs {t.shape}") \
                from None
    return [(op.inputs[0].dtype, shape)]


def _add_n_kernel(node, ctx):
    def run(*xs):
        total = np.add(xs[0], xs[1])
        for x in xs[2:]:
            # into the first sum's own buffer where it can take the next sum's shape and dtype
            if type(total) is type(x) is np.ndarray and x.shape == total.shape and x.dtype == total.dtype:
                np.add(total, x, out=total)
            else:
                total = np.add(total, x)
        return total
    return run


register("AddN", _add_n_infer, _add_n_kernel, grad=lambda op, g: [g] * len(op.inputs))
register_gpu("AddN")


@tf_export("math.accumulate_n", "accumulate_n")
def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    """tf.accumulate_n(inputs, shape=None, tensor_dtype=None, name=None): same sum as add_n."""
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and shape")
    inputs = [convert_to_tensor(i) for i in inputs]
    if tensor_dtype is not None and any(t.dtype != dtypes.as_dtype(tensor_dtype) for t in inputs):
        raise TypeError(f"tensor_dtype is {tensor_dtype}, but input is of another type")
    if shape is not None:
        for t in inputs:
            t.shape.assert_is_compatible_with(shape)
    return add_n(inputs, name=name)
