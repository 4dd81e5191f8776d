"""Math ops, linear systems: solve (MatrixSolve), triangular_solve (MatrixTriangularSolve),
least squares (MatrixSolveLs; its gradient is in math_grad.py, which may use cholesky and cond),
cholesky_solve, and matvec. numpy does the arithmetic."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.dispatch import add_dispatch_support
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, stack
from tensorweave.ops.array.core import expand_dims, matrix_transpose, squeeze
from tensorweave.ops.array.diag import band_mask, matrix_band_part, matrix_diag_part
from tensorweave.ops.array.fill import zeros_like
from tensorweave.ops.helpers import adjoint, invalid, make_op
from tensorweave.ops.math.binary import add
from tensorweave.ops.math.linalg import conj, matmul
from tensorweave.ops.math.matrix_functions import LINALG_TYPES, batch_of, check_square, matrix_shape
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.registry import register


def _solve_infer(op):
    a, b = op.inputs[0], op.inputs[1]
    sa = matrix_shape(a.shape, square=True)
    sb = matrix_shape(b.shape)
    if sa.ndims is None or sb.ndims is None:
        return [(a.dtype, sb if sb.ndims is not None else sa if sa.ndims is None else
                 batch_of(sa).concatenate([sa[-1], None]))]
    batch = batch_of(sa).merge_with(batch_of(sb))
    if not sa[-1].is_compatible_with(sb[-2]):
        raise ValueError(f"Dimensions must be equal, but are {sa[-1]} and {sb[-2]}")
    return [(a.dtype, batch.concatenate([sa[-1].merge_with(sb[-2]), sb[-1]]))]


def _check_rhs(node, a: np.ndarray, b: np.ndarray) -> None:
    check_square(node, a)
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2] or b.shape[-2] != a.shape[-1]:
        raise invalid(node, f"Input matrix and right-hand side must have the same batch dimensions and number of "
                            f"rows: {list(a.shape)} vs. {list(b.shape)}")


def _solve(node, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if not a.size or not b.size:
        return np.zeros(b.shape, b.dtype)
    try:
        x = np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        raise invalid(node, "Input matrix is not invertible.") from None
    if not np.all(np.isfinite(x)) and np.all(np.isfinite(a)) and np.all(np.isfinite(b)):
        raise invalid(node, "Input matrix is not invertible.")
    return x.astype(b.dtype, copy=False)


# -- MatrixSolve -----------------------------------------------------------------------------------
@tf_export("linalg.solve", "matrix_solve")
@add_dispatch_support
def matrix_solve(matrix, rhs, adjoint=False, name=None) -> Tensor:
    """tf.linalg.solve(matrix, rhs, adjoint=False, name=None): X with matrix @ X = rhs (or
    adjoint(matrix) @ X = rhs) for each innermost square matrix."""
    with name_scope(name, "MatrixSolve", [matrix, rhs]) as scope:
        a = convert_to_tensor(matrix, name="matrix")
        b = convert_to_tensor(rhs, dtype=a.dtype, name="rhs")
        return make_op("MatrixSolve", [a, b], {"adjoint": bool(adjoint), "T": a.dtype}, name=scope).outputs[0]


def _solve_kernel(node, ctx):
    adj = bool(node.attr.get("adjoint"))

    def run(a, b):
        a, b = np.asarray(a), np.asarray(b)
        _check_rhs(node, a, b)
        return _solve(node, adjoint(a) if adj else a, b)
    return run


def _solve_grad(op, grad):
    a = op.inputs[0]
    c = op.outputs[0]
    adj = op.get_attr("adjoint")
    grad_b = matrix_solve(a, grad, adjoint=not adj)
    grad_a = -matmul(c, grad_b, adjoint_b=True) if adj else -matmul(grad_b, c, adjoint_b=True)
    return [grad_a, grad_b]


register("MatrixSolve", _solve_infer, _solve_kernel, grad=_solve_grad, dtypes=LINALG_TYPES, dtype_param="matrix")


# -- MatrixTriangularSolve -------------------------------------------------------------------------
@tf_export("linalg.triangular_solve", "matrix_triangular_solve")
def matrix_triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None) -> Tensor:
    """tf.linalg.triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None): solves with
    the lower (or upper) triangle of each innermost square matrix; the other triangle is never
    read."""
    with name_scope(name, "MatrixTriangularSolve", [matrix, rhs]) as scope:
        a = convert_to_tensor(matrix, name="matrix")
        b = convert_to_tensor(rhs, dtype=a.dtype, name="rhs")
        return make_op("MatrixTriangularSolve", [a, b], {"lower": bool(lower), "adjoint": bool(adjoint),
                                                         "T": a.dtype}, name=scope).outputs[0]


def _triangular_kernel(node, ctx):
    lower, adj = bool(node.attr.get("lower", True)), bool(node.attr.get("adjoint"))

    def run(a, b):
        a, b = np.asarray(a), np.asarray(b)
        _check_rhs(node, a, b)
        n = a.shape[-1]
        tri = np.where(band_mask(n, n, -1, 0) if lower else band_mask(n, n, 0, -1), a, np.zeros((), a.dtype))
        if n and np.any(np.diagonal(tri, axis1=-2, axis2=-1) == 0):
            raise invalid(node, "Input matrix is not invertible.")
        return _solve(node, adjoint(tri) if adj else tri, b)
    return run


def _triangular_grad(op, grad):
    a = op.inputs[0]
    c = op.outputs[0]
    lower, adj = op.get_attr("lower"), op.get_attr("adjoint")
    grad_b = matrix_triangular_solve(a, grad, lower=lower, adjoint=not adj)
    grad_a = -matmul(c, grad_b, adjoint_b=True) if adj else -matmul(grad_b, c, adjoint_b=True)
    grad_a = matrix_band_part(grad_a, -1, 0) if lower else matrix_band_part(grad_a, 0, -1)
    return [grad_a, grad_b]


register("MatrixTriangularSolve", _solve_infer, _triangular_kernel, grad=_triangular_grad, dtypes=LINALG_TYPES,
         dtype_param="matrix")


@tf_export("linalg.cholesky_solve", "cholesky_solve")
def cholesky_solve(chol, rhs, name=None) -> Tensor:
    """tf.linalg.cholesky_solve(chol, rhs, name=None): X with A @ X = rhs, given the Cholesky
    factor `chol` of A (two triangular solves)."""
    with name_scope(name, "cholesky_solve", [chol, rhs]):
        y = matrix_triangular_solve(chol, rhs, adjoint=False, lower=True)
        return matrix_triangular_solve(chol, y, adjoint=True, lower=True)


# -- MatrixSolveLs ---------------------------------------------------------------------------------
@tf_export("linalg.lstsq", "matrix_solve_ls")
def matrix_solve_ls(matrix, rhs, l2_regularizer=0.0, fast=True, name=None) -> Tensor:
    """tf.linalg.lstsq(matrix, rhs, l2_regularizer=0.0, fast=True, name=None): the least-squares
    solution of matrix @ X = rhs (minimising |matrix @ X - rhs|^2 + l2_regularizer |X|^2).
    fast=True solves the regularized normal equations by Cholesky (differentiable, needs full
    rank unless regularized); fast=False gives the minimum-norm solution of any rank."""
    with name_scope(name, "matrix_solve_ls", [matrix, rhs, l2_regularizer]) as scope:
        a = convert_to_tensor(matrix, name="matrix")
        b = convert_to_tensor(rhs, dtype=a.dtype, name="rhs")
        l2 = convert_to_tensor(l2_regularizer, dtype=dtypes.float64, name="l2_regularizer")
        return make_op("MatrixSolveLs", [a, b, l2], {"fast": bool(fast), "T": a.dtype}, name=scope).outputs[0]


def _lstsq_infer(op):
    a, b = op.inputs[0], op.inputs[1]
    sa, sb = matrix_shape(a.shape), matrix_shape(b.shape)
    if op.inputs[2].shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {op.inputs[2].shape.ndims}")
    if sa.ndims is None or sb.ndims is None:
        return [(a.dtype, batch_of(sb).concatenate([sa[-1], sb[-1]]) if sb.ndims is not None
                 else batch_of(sa).concatenate([sa[-1], None]) if sa.ndims is not None else sa)]
    if not sa[-2].is_compatible_with(sb[-2]):
        raise ValueError(f"Dimensions must be equal, but are {sa[-2]} and {sb[-2]}")
    return [(a.dtype, batch_of(sa).merge_with(batch_of(sb)).concatenate([sa[-1], sb[-1]]))]


def _lstsq_kernel(node, ctx):
    fast = bool(node.attr.get("fast", True))

    def one(a: np.ndarray, b: np.ndarray, lam: float) -> np.ndarray:
        m, n = a.shape
        ah = adjoint(a)
        if not fast:
            if lam:
                a = np.concatenate([a, np.sqrt(lam) * np.eye(n, dtype=a.dtype)])
                b = np.concatenate([b, np.zeros((n, b.shape[1]), b.dtype)])
            return np.linalg.lstsq(a, b, rcond=None)[0]
        try:
            if m >= n:
                gram = ah @ a + lam * np.eye(n, dtype=a.dtype)
                chol = np.linalg.cholesky(gram)
                return np.linalg.solve(adjoint(chol), np.linalg.solve(chol, ah @ b))
            gram = a @ ah + lam * np.eye(m, dtype=a.dtype)
            chol = np.linalg.cholesky(gram)
            return ah @ np.linalg.solve(adjoint(chol), np.linalg.solve(chol, b))
        except np.linalg.LinAlgError:
            raise invalid(node, "Input matrix is rank deficient: the Cholesky decomposition of its Gramian "
                                "was not successful (use l2_regularizer > 0 or fast=False).") from None

    def run(a, b, lam):
        a, b = np.asarray(a), np.asarray(b)
        if a.ndim < 2 or b.ndim != a.ndim or a.shape[:-2] != b.shape[:-2] or a.shape[-2] != b.shape[-2]:
            raise invalid(node, f"matrix and rhs must have the same batch dimensions and number of rows: "
                                f"{list(a.shape)} vs. {list(b.shape)}")
        out = np.zeros(a.shape[:-2] + (a.shape[-1], b.shape[-1]), a.dtype)
        if not a.size or not b.size:
            return out
        fa, fb, fo = a.reshape((-1,) + a.shape[-2:]), b.reshape((-1,) + b.shape[-2:]), out.reshape(
            (-1,) + out.shape[-2:])
        for i in range(fa.shape[0]):
            fo[i] = one(fa[i], fb[i], float(lam))
        return out
    return run


register("MatrixSolveLs", _lstsq_infer, _lstsq_kernel, dtypes=LINALG_TYPES, dtype_param="matrix")  # grad: math_grad


@tf_export("linalg.matvec")
def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False, name=None) -> Tensor:
    """tf.linalg.matvec(a, b, transpose_a=False, adjoint_a=False, ...): a @ b for a (batch of)
    matrix a and vector b."""
    with name_scope(name, "MatVec", [a, b]):
        out = matmul(a, expand_dims(convert_to_tensor(b, name="b"), -1), transpose_a=transpose_a,
                     adjoint_a=adjoint_a)
        return squeeze(out, -1)


# -- tridiagonal matrices: TridiagonalSolve, tridiagonal_matmul ------------------------------------
def _compact_diagonals(diagonals, diagonals_format: str) -> Tensor:
    """diagonals in TF's "compact" form [..., 3, M] (superdiagonal, its last entry unused; main
    diagonal; subdiagonal, its first entry unused) from any of TF's three formats."""
    if diagonals_format == "compact":
        return convert_to_tensor(diagonals, name="diagonals")
    if diagonals_format == "sequence":
        if not isinstance(diagonals, (list, tuple)) or len(diagonals) != 3:
            raise ValueError("Expected diagonals to be a sequence of length 3.")
        superdiag, maindiag, subdiag = (convert_to_tensor(d) for d in diagonals)
        return stack([superdiag, maindiag, subdiag], axis=-2)
    if diagonals_format == "matrix":
        m = convert_to_tensor(diagonals, name="diagonals")
        if m.shape.ndims is not None and m.shape.ndims < 2:
            raise ValueError(f"Expected diagonals to have rank at least 2, got {m.shape.ndims}")
        maindiag = matrix_diag_part(m)
        zero = zeros_like(maindiag[..., :1])
        return stack([concat([matrix_diag_part(m[..., :-1, 1:]), zero], -1), maindiag,
                      concat([zero, matrix_diag_part(m[..., 1:, :-1])], -1)], axis=-2)
    raise ValueError(f"Unrecognized diagonals_format: {diagonals_format}")


@tf_export("linalg.tridiagonal_solve")
def tridiagonal_solve(diagonals, rhs, diagonals_format="compact", transpose_rhs=False, conjugate_rhs=False,
                      name=None, partial_pivoting=True) -> Tensor:
    """tf.linalg.tridiagonal_solve(diagonals, rhs, diagonals_format='compact', transpose_rhs=False,
    conjugate_rhs=False, name=None, partial_pivoting=True): X with A X = rhs for the tridiagonal
    A given as `diagonals` ("compact" [..., 3, M], "sequence" of three [..., M], or "matrix"
    [..., M, M]); rhs [..., M, K] or [..., M]. Solved by LAPACK's gtsv-style banded solver with
    partial pivoting either way (without pivoting TF fails on a zero pivot that this solves)."""
    with name_scope(name, "tridiagonal_solve", [diagonals, rhs]) as scope:
        diags = _compact_diagonals(diagonals, diagonals_format)
        rhs = convert_to_tensor(rhs, dtype=diags.dtype, name="rhs")
        if transpose_rhs:
            rhs = matrix_transpose(rhs, conjugate=conjugate_rhs)
        elif conjugate_rhs:
            rhs = conj(rhs)
        vector = diags.shape.ndims is not None and rhs.shape.ndims == diags.shape.ndims - 1
        if vector:
            rhs = expand_dims(rhs, -1)
        x = make_op("TridiagonalSolve", [diags, rhs], {"partial_pivoting": bool(partial_pivoting), "T": diags.dtype},
                    name=scope if not vector else None).outputs[0]
        return squeeze(x, -1, name=scope) if vector else x


def _tridiagonal_solve_infer(op):
    d, b = op.inputs[0].shape, op.inputs[1].shape
    if d.ndims is not None:
        if d.ndims < 2 or not d[-2].is_compatible_with(3):
            raise ValueError(f"Expected diagonals to have shape [..., 3, M], got {d}")
        if b.ndims is not None and (b.ndims != d.ndims or not d[-1].is_compatible_with(b[-2])):
            raise ValueError(f"Expected rhs to have shape [..., M, K] matching diagonals {d}, got {b}")
    return [(op.inputs[1].dtype, b)]


def _tridiagonal_solve_kernel(node, ctx):
    import scipy.linalg

    def run(diags, b):
        diags, b = np.asarray(diags), np.asarray(b)
        if diags.ndim < 2 or diags.shape[-2] != 3 or b.ndim != diags.ndim or b.shape[:-2] != diags.shape[:-2] \
                or b.shape[-2] != diags.shape[-1]:
            raise invalid(node, f"Expected diagonals [..., 3, M] and rhs [..., M, K] with the same batch shape and "
                                f"M, got {list(diags.shape)} and {list(b.shape)}")
        m = diags.shape[-1]
        banded = np.zeros(diags.shape, np.result_type(diags, b))  # scipy's (1, 1) band layout
        banded[..., 0, 1:], banded[..., 1, :], banded[..., 2, :-1] = diags[..., 0, :-1], diags[..., 1, :], \
            diags[..., 2, 1:]
        flat_a, flat_b = banded.reshape((-1, 3, m)), b.reshape((-1,) + b.shape[-2:])
        out = np.empty(flat_b.shape, banded.dtype)
        for i in range(flat_a.shape[0] if m and b.shape[-1] else 0):
            try:
                out[i] = scipy.linalg.solve_banded((1, 1), flat_a[i], flat_b[i], check_finite=False)
            except np.linalg.LinAlgError:
                raise invalid(node, "The tridiagonal matrix is not invertible.") from None
        return out.reshape(b.shape).astype(b.dtype, copy=False)
    return run


def _three_diagonals_of_product(x: Tensor, y: Tensor) -> Tensor:
    """The compact diagonals of x @ y^T: sums over K of x[i] * y[j] for j = i + 1, i, i - 1."""
    zero = zeros_like(reduce_sum(x[..., :1, :], -1))
    return stack([concat([reduce_sum(x[..., :-1, :] * y[..., 1:, :], -1), zero], -1), reduce_sum(x * y, -1),
                  concat([zero, reduce_sum(x[..., 1:, :] * y[..., :-1, :], -1)], -1)], axis=-2)


def _tridiagonal_solve_grad(op, grad):
    # A X = B: dB = A^{-T} dX (A^T has the sub- and superdiagonals swapped); dA = -dB X^T on A's band
    diags, x = op.inputs[0], op.outputs[0]
    superdiag, maindiag, subdiag = diags[..., 0, :], diags[..., 1, :], diags[..., 2, :]
    zero = zeros_like(maindiag[..., :1])
    transposed = stack([concat([subdiag[..., 1:], zero], -1), maindiag, concat([zero, superdiag[..., :-1]], -1)],
                       axis=-2)
    grad_rhs = make_op("TridiagonalSolve", [transposed, grad],
                       {"partial_pivoting": op.get_attr("partial_pivoting"), "T": diags.dtype}).outputs[0]
    return [-_three_diagonals_of_product(grad_rhs, x), grad_rhs]


register("TridiagonalSolve", _tridiagonal_solve_infer, _tridiagonal_solve_kernel, grad=_tridiagonal_solve_grad,
         dtypes=LINALG_TYPES, dtype_param="diagonals")


@tf_export("linalg.tridiagonal_matmul")
def tridiagonal_matmul(diagonals, rhs, diagonals_format="compact", name=None) -> Tensor:
    """tf.linalg.tridiagonal_matmul(diagonals, rhs, diagonals_format='compact', name=None): A @ rhs
    for the tridiagonal A given as `diagonals` (formats as tridiagonal_solve's); rhs [..., M, N]."""
    with name_scope(name, "tridiagonal_matmul", [diagonals, rhs]) as scope:
        diags = _compact_diagonals(diagonals, diagonals_format)
        rhs = convert_to_tensor(rhs, dtype=diags.dtype, name="rhs")
        zero_row = zeros_like(rhs[..., :1, :])
        above = concat([rhs[..., 1:, :], zero_row], -2)   # row i holds rhs[i + 1]
        below = concat([zero_row, rhs[..., :-1, :]], -2)  # row i holds rhs[i - 1]
        return add(add(expand_dims(diags[..., 0, :], -1) * above, expand_dims(diags[..., 1, :], -1) * rhs),
                   expand_dims(diags[..., 2, :], -1) * below, name=scope)
