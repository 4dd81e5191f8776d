"""Gradients of math ops that need ops of a module loaded after theirs (log for Pow, gather for
the segment reductions, where and cond for others), registered by op type as TF's math_grad.py
does. In gradients/, since cond (control_flow/) is built on math ops."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import rank, reshape, shape
from tensorweave.ops.array.fill import fill, ones_like, zeros_like
from tensorweave.ops.array.gather import gather
from tensorweave.ops.array.sort import where_v2
from tensorweave.ops.control_flow.cond import cond
from tensorweave.ops.math.binary import (add, equal, greater, greater_equal, less, maximum, multiply, not_equal, pow,
                                         realdiv, subtract, xdivy, xlogy)
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.decompositions import cholesky
from tensorweave.ops.math.linalg import eye, matmul
from tensorweave.ops.math.matrix_functions import adjoint
from tensorweave.ops.math.segment import segment_sum, unsorted_segment_prod, unsorted_segment_sum
from tensorweave.ops.math.solvers import cholesky_solve
from tensorweave.ops.math.unary import log, log1p, negative, sqrt, square
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


@RegisterGradient("Atan2")
def _atan2_grad(op, grad):
    y, x = op.inputs
    grad_inv = realdiv(grad, add(square(x), square(y)))
    return [multiply(x, grad_inv), multiply(negative(y), grad_inv)]


def _nonzero_x(x):
    return cast(not_equal(x, 0), x.dtype)


@RegisterGradient("Xlogy")
def _xlogy_grad(op, grad):
    x, y = op.inputs
    return [multiply(xlogy(_nonzero_x(x), y), grad), multiply(xdivy(x, y), grad)]


@RegisterGradient("Xdivy")
def _xdivy_grad(op, grad):
    x, y = op.inputs
    return [multiply(xdivy(_nonzero_x(x), y), grad), multiply(xdivy(negative(x), square(y)), grad)]


@RegisterGradient("Xlog1py")
def _xlog1py_grad(op, grad):
    x, y = op.inputs
    nonzero = _nonzero_x(x)
    return [multiply(multiply(nonzero, log1p(y)), grad), multiply(xdivy(x, add(y, 1)), grad)]


# -- segment reductions ---------------------------------------------------------------------------
def _gather_drop_negatives(grad, ids, zero_clipped=None):
    """grad[ids] with zero rows where ids < 0 (TF's _GatherDropNegatives)."""
    safe = maximum(ids, 0) if zero_clipped is None else zero_clipped
    gathered = gather(grad, safe)
    mask = cast(greater_equal(ids, 0), grad.dtype)
    # mask has ids' shape; append unit dims so it broadcasts over each row's trailing dims.
    extra = subtract(rank(gathered), rank(ids))
    mask_shape = concat([shape(ids), fill(reshape(extra, [1]), 1)], 0)
    return multiply(gathered, reshape(mask, mask_shape))


def _broadcast_ids_mask(mask, like):
    extra = subtract(rank(like), rank(mask))
    return reshape(mask, concat([shape(mask), fill(reshape(extra, [1]), 1)], 0))


@RegisterGradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(op, grad):
    return [_gather_drop_negatives(grad, op.inputs[1]), None, None]


@RegisterGradient("SegmentSum")
def _segment_sum_grad(op, grad):
    return [gather(grad, op.inputs[1]), None]


@RegisterGradient("SegmentMean")
def _segment_mean_grad(op, grad):
    data, ids = op.inputs
    counts = segment_sum(ones_like(ids, dtype=grad.dtype), ids)
    scaled = realdiv(grad, _broadcast_ids_mask(counts, grad))
    return [gather(scaled, ids), None]


def _min_max_grad(op, grad, gathered_grad_fn, num_selected):
    """The gradient of a segment max/min: split equally among the elements equal to the result."""
    data = op.inputs[0]
    gathered_outputs = gathered_grad_fn(op.outputs[0])
    is_selected = equal(data, gathered_outputs)
    selected = num_selected(cast(is_selected, grad.dtype))
    gathered = gathered_grad_fn(realdiv(grad, selected))
    return where_v2(is_selected, gathered, zeros_like(data))


@RegisterGradient("SegmentMax")
@RegisterGradient("SegmentMin")
def _segment_min_max_grad(op, grad):
    ids = op.inputs[1]
    return [_min_max_grad(op, grad, lambda t: gather(t, ids), lambda sel: segment_sum(sel, ids)), None]


@RegisterGradient("UnsortedSegmentMax")
@RegisterGradient("UnsortedSegmentMin")
def _unsorted_segment_min_max_grad(op, grad):
    ids, n = op.inputs[1], op.inputs[2]
    return [_min_max_grad(op, grad, lambda t: _gather_drop_negatives(t, ids),
                          lambda sel: unsorted_segment_sum(sel, ids, n)), None, None]


def _prod_grad(data, ids, n, prod, grad):
    """d prod / d x_j = product of the other elements: prod / x_j, or, for the one zero of a
    segment, the product of its non-zero elements (0 with two zeros or more)."""
    is_zero = equal(data, 0)
    num_zeros = unsorted_segment_sum(cast(is_zero, dtypes.int32), ids, n)
    grad = where_v2(greater(num_zeros, 1), zeros_like(grad), grad)
    non_zero_data = where_v2(is_zero, ones_like(data), data)
    non_zero_prod = unsorted_segment_prod(non_zero_data, ids, n)
    clipped = maximum(ids, zeros_like(ids))
    gathered_prod = gather(prod, clipped)
    gathered_non_zero_prod = gather(non_zero_prod, clipped)
    prod_divided_by_el = realdiv(gathered_prod, where_v2(is_zero, ones_like(data), data))
    partial = where_v2(is_zero, gathered_non_zero_prod, prod_divided_by_el)
    return multiply(_gather_drop_negatives(grad, ids, clipped), partial)


@RegisterGradient("UnsortedSegmentProd")
def _unsorted_segment_prod_grad(op, grad):
    data, ids, n = op.inputs
    return [_prod_grad(data, ids, n, op.outputs[0], grad), None, None]


@RegisterGradient("SegmentProd")
def _segment_prod_grad(op, grad):
    data, ids = op.inputs
    return [_prod_grad(data, ids, shape(op.outputs[0], out_type=ids.dtype)[0], op.outputs[0], grad), None]


def _sparse_segment_grad(op, grad, scale_by):
    """Rows of grad gathered by segment (scaled for mean / sqrt_n) and summed into data's rows."""
    data, idx, ids = op.inputs[:3]
    rows = gather(grad, ids)
    if scale_by is not None:
        n = shape(grad, out_type=ids.dtype)[0]
        counts = maximum(unsorted_segment_sum(ones_like(ids, dtype=grad.dtype), ids, n), 1.0)
        scale = scale_by(counts)
        rows = realdiv(rows, _broadcast_ids_mask(gather(scale, ids), rows))
    dense = unsorted_segment_sum(rows, idx, shape(data, out_type=idx.dtype)[0])
    return [dense, None, None] + [None] * (len(op.inputs) - 3)


for _with_n in ("", "WithNumSegments"):
    RegisterGradient("SparseSegmentSum" + _with_n)(lambda op, g: _sparse_segment_grad(op, g, None))
    RegisterGradient("SparseSegmentMean" + _with_n)(lambda op, g: _sparse_segment_grad(op, g, lambda c: c))
    RegisterGradient("SparseSegmentSqrtN" + _with_n)(lambda op, g: _sparse_segment_grad(op, g, sqrt))


# -- least squares --------------------------------------------------------------------------------
def _regularized_gramian_cholesky(a, l2, first_kind: bool):
    gramian = matmul(a, a, adjoint_a=first_kind, adjoint_b=not first_kind)
    n = shape(gramian)[-1]
    return cholesky(add(gramian, multiply(l2, eye(n, dtype=a.dtype))))


@RegisterGradient("MatrixSolveLs")
def _matrix_solve_ls_grad(op, grad):
    """The gradient of the regularized normal-equations solution (fast=True only, as in TF)."""
    if not op.get_attr("fast"):
        raise ValueError("Gradient not defined for fast=False")
    a, b = op.inputs[0], op.inputs[1]
    x = op.outputs[0]
    l2 = cast(op.inputs[2], a.dtype)

    def overdetermined():
        chol = _regularized_gramian_cholesky(a, l2, first_kind=True)
        z = cholesky_solve(chol, grad)
        xzt = matmul(x, z, adjoint_b=True)
        zx_sym = add(xzt, adjoint(xzt))
        return subtract(matmul(b, z, adjoint_b=True), matmul(a, zx_sym)), matmul(a, z)

    def underdetermined():
        chol = _regularized_gramian_cholesky(a, l2, first_kind=False)
        grad_b = cholesky_solve(chol, matmul(a, grad))
        tmp = cholesky_solve(chol, b)
        a1 = negative(matmul(grad_b, matmul(tmp, a, adjoint_a=True)))
        a2 = matmul(tmp, subtract(grad, matmul(a, grad_b, adjoint_a=True)), adjoint_b=True)
        return add(a1, a2), grad_b

    m = a.shape[-2].value if a.shape.ndims is not None else None
    n = a.shape[-1].value if a.shape.ndims is not None else None
    if m is not None and n is not None:
        grad_a, grad_b = overdetermined() if m >= n else underdetermined()
    else:
        dims = shape(a)
        grad_a, grad_b = cond(less(dims[-2], dims[-1]), underdetermined, overdetermined)
    return [grad_a, grad_b, None]


