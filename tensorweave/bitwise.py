"""tf.bitwise namespace."""
from __future__ import annotations

from tensorweave.ops.math.bitwise import (  # noqa: F401
    bitwise_and, bitwise_or, bitwise_xor, invert, left_shift, right_shift)

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"]
