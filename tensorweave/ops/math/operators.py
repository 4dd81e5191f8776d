"""The Tensor operator overloads (`x + y`, `-x`, `x @ y`, `x[i]` lives with strided_slice):
TF's binary_op_wrapper rules, installed once the math family's ops exist."""
from __future__ import annotations

from typing import Callable

from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.ops.math.binary import (binary, div, floordiv, floormod, greater, greater_equal, less, less_equal,
                                         logical_and, logical_not, logical_or, logical_xor, multiply, pow, subtract,
                                         truediv)
from tensorweave.ops.math.linalg import matmul
from tensorweave.ops.math.unary import abs, negative


def _binary_overload(fn: Callable, op_name: str):
    """TF's binary_op_wrapper: name scope `op_name`; a non-tensor operand takes the tensor's dtype."""
    def forward(x, y):
        with name_scope(None, op_name, [x, y]) as scope:
            if not isinstance(y, Tensor):
                try:
                    y = _convert_hinted(y, x.dtype, "y")
                except TypeError:
                    if hasattr(type(y), f"__r{op_name}__"):
                        return NotImplemented
                    raise
            return fn(x, y, name=scope)

    def reflected(y, x):  # `x op y` with the tensor on the right
        with name_scope(None, op_name, [x, y]) as scope:
            x = _convert_hinted(x, y.dtype, "x")
            return fn(x, y, name=scope)
    return forward, reflected


def _convert_hinted(value, dtype, name: str) -> Tensor:
    """TF's dtype_hint: the tensor's dtype when the value fits it, else the value's own dtype, so
    that `int_tensor + 1.5` fails in the op with TF's "Input 'y' of 'AddV2' Op has type ..." error."""
    try:
        return convert_to_tensor(value, dtype=dtype, name=name)
    except (TypeError, ValueError):
        return convert_to_tensor(value, name=name)


def _install_overloads() -> None:
    table = [("add", lambda x, y, name: binary("AddV2", x, y, name, "add")),
             ("sub", subtract), ("mul", multiply), ("truediv", truediv), ("div", div),
             ("floordiv", floordiv), ("mod", floormod), ("pow", pow),
             ("and", logical_and), ("or", logical_or), ("xor", logical_xor),
             ("matmul", matmul)]
    for op_name, fn in table:
        forward, reflected = _binary_overload(fn, op_name)
        Tensor._override_operator(f"__{op_name}__", forward)
        Tensor._override_operator(f"__r{op_name}__", reflected)
    Tensor._override_operator("__lt__", lambda x, y: less(x, y))
    Tensor._override_operator("__le__", lambda x, y: less_equal(x, y))
    Tensor._override_operator("__gt__", lambda x, y: greater(x, y))
    Tensor._override_operator("__ge__", lambda x, y: greater_equal(x, y))
    Tensor._override_operator("__neg__", lambda x: negative(x))
    Tensor._override_operator("__abs__", lambda x: abs(x))
    Tensor._override_operator("__invert__", lambda x: logical_not(x))
    # numpy scalars/arrays on the left must defer to our reflected operators.
    Tensor._override_operator("__array_ufunc__", None)


_install_overloads()
