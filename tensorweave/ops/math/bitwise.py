"""Math ops on the bits of integers (tf.bitwise): bitwise_and, bitwise_or, bitwise_xor, invert,
left_shift, right_shift (arithmetic for signed types; shifts outside [0, bits) are as TF's:
left_shift gives 0, right_shift the sign fill)."""
from __future__ import annotations

import numpy as np

from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import INTS
from tensorweave.ops.math.binary import binary
from tensorweave.ops.math.unary import unary
from tensorweave.framework.shapes import broadcast_shapes
from tensorweave.ops.registry import pure, register


def _infer(op):
    x, y = op.inputs
    return [(x.dtype, broadcast_shapes(x.shape, y.shape))]


def _shift(left: bool):
    def run(x, y):
        x, y = np.asarray(x), np.asarray(y)
        bits = x.dtype.itemsize * 8
        in_range = (y >= 0) & (y < bits)
        safe = np.where(in_range, y, 0).astype(x.dtype)
        shifted = np.left_shift(x, safe) if left else np.right_shift(x, safe)
        overflow = np.zeros((), x.dtype) if left else np.where(x < 0, np.asarray(-1).astype(x.dtype), 0)
        return np.where(in_range, shifted, overflow).astype(x.dtype)
    return run


for _op, _fn in (("BitwiseAnd", np.bitwise_and), ("BitwiseOr", np.bitwise_or), ("BitwiseXor", np.bitwise_xor),
                 ("LeftShift", _shift(True)), ("RightShift", _shift(False))):
    register(_op, _infer, pure(_fn), grad=None, dtypes=INTS)
register("Invert", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], pure(np.invert), grad=None, dtypes=INTS)


@tf_export("bitwise.bitwise_and")
def bitwise_and(x, y, name=None):
    """tf.bitwise.bitwise_and(x, y, name=None)."""
    return binary("BitwiseAnd", x, y, name, "BitwiseAnd")


@tf_export("bitwise.bitwise_or")
def bitwise_or(x, y, name=None):
    """tf.bitwise.bitwise_or(x, y, name=None)."""
    return binary("BitwiseOr", x, y, name, "BitwiseOr")


@tf_export("bitwise.bitwise_xor")
def bitwise_xor(x, y, name=None):
    """tf.bitwise.bitwise_xor(x, y, name=None)."""
    return binary("BitwiseXor", x, y, name, "BitwiseXor")


@tf_export("bitwise.left_shift")
def left_shift(x, y, name=None):
    """tf.bitwise.left_shift(x, y, name=None): x << y."""
    return binary("LeftShift", x, y, name, "LeftShift")


@tf_export("bitwise.right_shift")
def right_shift(x, y, name=None):
    """tf.bitwise.right_shift(x, y, name=None): x >> y (arithmetic for signed x)."""
    return binary("RightShift", x, y, name, "RightShift")


@tf_export("bitwise.invert")
def invert(x, name=None):
    """tf.bitwise.invert(x, name=None): ~x."""
    return unary("Invert", x, name, "Invert")
