"""Math ops on complex numbers' parts: complex (Complex), real (Real), imag (Imag) and angle
(Angle), with TF's gradients; on real inputs real() is the input, imag() zeros and angle() 0 or
pi by sign, as in TF."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import broadcast_shapes
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.fill import ones_like, zeros_like
from tensorweave.ops.array.sort import where
from tensorweave.ops.helpers import COMPLEX, make_op
from tensorweave.ops.math.binary import less, multiply
from tensorweave.ops.math.unary import reciprocal
from tensorweave.ops.registry import pure, register


_PART_OF = {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}
_COMPLEX_OF = {dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128}


@tf_export("complex", "dtypes.complex")
def complex(real, imag, name=None) -> Tensor:
    """tf.complex(real, imag, name=None): real + imag * 1j elementwise (float32 -> complex64,
    float64 -> complex128)."""
    with name_scope(name, "Complex", [real, imag]) as scope:
        re = convert_to_tensor(real, name="real")
        im = convert_to_tensor(imag, dtype=re.dtype, name="imag")
        if re.dtype not in _COMPLEX_OF:
            raise TypeError(f"real and imag must be float32 or float64, got {re.dtype.name}")
        return make_op("Complex", [re, im], {"T": re.dtype, "Tout": _COMPLEX_OF[re.dtype]}, name=scope).outputs[0]


register("Complex", lambda op: [(op.get_attr("Tout"), broadcast_shapes(op.inputs[0].shape, op.inputs[1].shape))],
         lambda node, ctx: (lambda re, im: (np.asarray(re) + 1j * np.asarray(im)).astype(
             dtypes.as_dtype(node.attr["Tout"]).as_numpy_dtype)),
         grad=lambda op, g: [real(g), imag(g)])


def _part(op_type: str, x, name) -> Tensor:
    with name_scope(name, op_type, [x]) as scope:
        return make_op(op_type, [x], {"T": x.dtype, "Tout": _PART_OF[x.dtype]}, name=scope).outputs[0]


@tf_export("math.real", "real")
def real(input, name=None) -> Tensor:
    """tf.real(input, name=None): the real part (a real input is returned as it is)."""
    x = convert_to_tensor(input, name="input")
    return _part("Real", x, name) if x.dtype in COMPLEX else x


@tf_export("math.imag", "imag")
def imag(input, name=None) -> Tensor:
    """tf.imag(input, name=None): the imaginary part (zeros for a real input)."""
    x = convert_to_tensor(input, name="input")
    return _part("Imag", x, name) if x.dtype in COMPLEX else zeros_like(x, name=name)


@tf_export("math.angle", "angle")
def angle(input, name=None) -> Tensor:
    """tf.angle(input, name=None): the argument of each complex number (for a real input, pi
    where it is negative and 0 elsewhere)."""
    x = convert_to_tensor(input, name="input")
    if x.dtype in COMPLEX:
        return _part("Angle", x, name)
    with name_scope(name, "Angle", [x]) as scope:
        return where(less(x, 0), multiply(np.pi, ones_like(x)), zeros_like(x), name=scope)


def _part_infer(op):
    return [(op.get_attr("Tout"), op.inputs[0].shape)]


def _angle_grad(op, grad):
    x = op.inputs[0]
    z = reciprocal(complex(imag(x), real(x)))
    return [-multiply(complex(grad, zeros_like(grad)), z)]


register("Real", _part_infer, pure(np.real), grad=lambda op, g: [complex(g, zeros_like(g))], dtypes=COMPLEX,
         dtype_param="input")
register("Imag", _part_infer, pure(np.imag), grad=lambda op, g: [complex(zeros_like(g), g)], dtypes=COMPLEX,
         dtype_param="input")
register("Angle", _part_infer, pure(np.angle), grad=_angle_grad, dtypes=COMPLEX, dtype_param="input")
