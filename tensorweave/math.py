"""tf.math namespace: the TF1 `tf.math.*` names of the math op family."""
from __future__ import annotations

from tensorweave.ops.array.core import invert_permutation  # noqa: F401
from tensorweave.ops.array.sort import top_k  # noqa: F401
from tensorweave.ops.math.binary import (  # noqa: F401
    accumulate_n, add, add_n, atan2, div_no_nan, divide, equal, floordiv, floormod, greater, greater_equal, less,
    less_equal, logical_and, logical_not, logical_or, logical_xor, maximum, minimum, mod, multiply, multiply_no_nan,
    not_equal, polyval, pow, realdiv, scalar_mul, squared_difference, subtract, truediv, truncatediv, truncatemod,
    xdivy, xlog1py, xlogy)
from tensorweave.ops.math.complex_parts import angle, imag, real  # noqa: F401
from tensorweave.ops.math.histogram import confusion_matrix  # noqa: F401
from tensorweave.ops.math.linalg import conj  # noqa: F401
from tensorweave.ops.math.reduction import (  # noqa: F401
    argmax, argmin, bincount, count_nonzero, cumprod, cumsum, is_non_decreasing, is_strictly_increasing, reduce_all,
    reduce_any, reduce_euclidean_norm, reduce_logsumexp, reduce_max, reduce_mean, reduce_min, reduce_prod, reduce_std,
    reduce_sum, reduce_variance)
from tensorweave.ops.math.segment import (  # noqa: F401
    segment_max, segment_mean, segment_min, segment_prod, segment_sum, unsorted_segment_max, unsorted_segment_mean,
    unsorted_segment_min, unsorted_segment_prod, unsorted_segment_sqrt_n, unsorted_segment_sum)
from tensorweave.ops.math.special import (  # noqa: F401
    bessel_i0, bessel_i0e, bessel_i1, bessel_i1e, betainc, digamma, erfc, erfinv, igamma, igammac, lbeta, lgamma,
    ndtri, polygamma, zeta)
from tensorweave.ops.math.unary import (  # noqa: F401
    abs, acos, acosh, asin, asinh, atan, atanh, ceil, cos, cosh, erf, exp, expm1, floor, is_finite, is_inf, is_nan,
    log, log1p, log_sigmoid, negative, reciprocal, rint, round, rsqrt, sigmoid, sign, sin, sinh, sqrt, square, tan,
    tanh)
from tensorweave.ops.nn.activations import log_softmax, softmax, softplus, softsign  # noqa: F401
from tensorweave.ops.nn.impl import l2_normalize, zero_fraction  # noqa: F401
from tensorweave.ops.nn.losses import in_top_k  # noqa: F401

divide_no_nan = div_no_nan

__all__ = [n for n in dir() if not n.startswith("_") and n != "annotations"]
