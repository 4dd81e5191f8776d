"""tf.debugging namespace: the TF1 `tf.debugging.*` checks and Assert."""
from __future__ import annotations

from tensorweave.ops.debugging.asserts import (  # noqa: F401
    assert_equal, assert_greater, assert_greater_equal, assert_integer, assert_less, assert_less_equal,
    assert_negative, assert_non_negative, assert_non_positive, assert_none_equal, assert_positive, assert_rank,
    assert_rank_at_least, assert_scalar, assert_type)
from tensorweave.ops.debugging.numerics import check_numerics  # noqa: F401
from tensorweave.ops.debugging.printing import Assert  # noqa: F401
from tensorweave.ops.math.unary import is_finite, is_inf, is_nan  # noqa: F401

__all__ = [n for n in dir() if not n.startswith("_") and n != "annotations"]
