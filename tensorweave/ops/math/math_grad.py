"""Gradients of math ops that need ops of a module loaded after theirs (log for Pow, gather for
the segment sums): registered here, once both are imported, as TF's math_grad.py does."""
from __future__ import annotations

from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import rank, reshape, shape
from tensorweave.ops.array.fill import fill
from tensorweave.ops.array.gather import gather
from tensorweave.ops.math.binary import add, greater, greater_equal, maximum, multiply, pow, subtract
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.unary import log
from tensorweave.ops.registry import RegisterGradient


@RegisterGradient("Pow")
def _pow_grad(op, grad):
    x, y = op.inputs
    z = op.outputs[0]
    gx = multiply(multiply(grad, y), pow(x, subtract(y, 1)))
    # log(x) only where x > 0: TF's guard against the false singularity at x <= 0.
    mask = cast(greater(x, 0), x.dtype)
    safe_x = add(multiply(x, mask), subtract(1, mask))
    log_x = multiply(log(safe_x), mask)
    gy = multiply(multiply(grad, z), log_x)
    return [gx, gy]


def _gather_drop_negatives(grad, ids):
    """grad[ids] with zero rows where ids < 0 (TF's _GatherDropNegatives)."""
    safe = maximum(ids, 0)
    gathered = gather(grad, safe)
    mask = cast(greater_equal(ids, 0), grad.dtype)
    # mask has ids' shape; append unit dims so it broadcasts over each row's trailing dims.
    extra = subtract(rank(gathered), rank(ids))
    mask_shape = concat([shape(ids), fill(reshape(extra, [1]), 1)], 0)
    return multiply(gathered, reshape(mask, mask_shape))


@RegisterGradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(op, grad):
    return [_gather_drop_negatives(grad, op.inputs[1]), None, None]


@RegisterGradient("SegmentSum")
def _segment_sum_grad(op, grad):
    return [gather(grad, op.inputs[1]), None]
