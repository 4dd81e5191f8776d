"""Math ops, matrix decompositions: Cholesky, QR (Qr), singular values (Svd) and the
eigendecomposition of self-adjoint matrices (SelfAdjointEigV2), with TF's gradients, and
logdet and matrix_rank built on them. numpy does the arithmetic."""
from __future__ import annotations

import warnings

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import Dimension, TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.dispatch import add_dispatch_support
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import expand_dims, matrix_transpose, shape
from tensorweave.ops.array.diag import matrix_band_part, matrix_diag, matrix_diag_part, matrix_set_diag
from tensorweave.ops.array.fill import fill, ones_like, zeros_like
from tensorweave.ops.array.gather import one_hot
from tensorweave.ops.array.sort import where
from tensorweave.ops.helpers import invalid, make_op
from tensorweave.ops.math.binary import add, divide, greater, multiply, subtract
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.linalg import eye, matmul
from tensorweave.ops.math.matrix_functions import LINALG_TYPES, adjoint, batch_of, check_square, matrix_shape
from tensorweave.ops.math.reduction import reduce_max, reduce_sum
from tensorweave.ops.math.solvers import matrix_triangular_solve
from tensorweave.ops.math.unary import log, reciprocal, square
from tensorweave.ops.registry import register


def _dims(s: TensorShape) -> tuple:
    return (Dimension(None), Dimension(None)) if s.ndims is None else (s[-2], s[-1])


def _min_dim(a: Dimension, b: Dimension) -> Dimension:
    return Dimension(None if a.value is None or b.value is None else min(a.value, b.value))


def _batched(x: np.ndarray, fn, out_shapes: list, dtype) -> list:
    """Runs fn on each innermost matrix of x (numpy's linalg functions are batched, but not for
    empty batches or matrices): a list of arrays shaped batch + each of out_shapes."""
    batch = x.shape[:-2]
    outs = [np.zeros(batch + tuple(s), dtype) for s in out_shapes]
    if x.size:
        res = fn(x)
        res = res if isinstance(res, tuple) else (res,)
        for o, r in zip(outs, res):
            o[...] = r
    return outs


# -- Cholesky --------------------------------------------------------------------------------------
@tf_export("linalg.cholesky", "cholesky")
@add_dispatch_support
def cholesky(input, name=None) -> Tensor:
    """tf.linalg.cholesky(input, name=None): the lower-triangular L with L @ L^H = input for each
    innermost positive-definite matrix (only the lower triangle of input is read)."""
    with name_scope(name, "Cholesky", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        return make_op("Cholesky", [x], {"T": x.dtype}, name=scope).outputs[0]


def _cholesky_kernel(node, ctx):
    def run(x):
        x = np.asarray(x)
        check_square(node, x)
        try:
            return _batched(x, np.linalg.cholesky, [x.shape[-2:]], x.dtype)[0]
        except np.linalg.LinAlgError:
            raise invalid(node, "Cholesky decomposition was not successful. The input might not be valid.") from None
    return run


def _cholesky_grad(op, grad):
    # A = L L^H: dA = Phi(L^H dL) pulled back through L^{-1} (Murray 2016), symmetrised.
    chol = op.outputs[0]
    n = chol.shape[-1].value if chol.shape.ndims is not None and chol.shape[-1].value is not None else \
        shape(chol)[-1]
    l_inverse = matrix_triangular_solve(chol, eye(n, dtype=chol.dtype))
    middle = matmul(chol, grad, adjoint_a=True)
    middle = matrix_set_diag(middle, multiply(matrix_diag_part(middle), 0.5))
    middle = matrix_band_part(middle, -1, 0)
    grad_a = matmul(matmul(l_inverse, middle, adjoint_a=True), l_inverse)
    grad_a = add(grad_a, adjoint(grad_a))
    return [multiply(grad_a, 0.5)]


register("Cholesky", lambda op: [(op.inputs[0].dtype, matrix_shape(op.inputs[0].shape, square=True))],
         _cholesky_kernel, grad=_cholesky_grad, dtypes=LINALG_TYPES, dtype_param="input")


@tf_export("linalg.logdet")
@add_dispatch_support
def logdet(matrix, name=None) -> Tensor:
    """tf.linalg.logdet(matrix, name=None): log(det(matrix)) of each innermost Hermitian
    positive-definite matrix, from its Cholesky factor."""
    with name_scope(name, "logdet", [matrix]):
        chol = cholesky(matrix)
        diag = matrix_diag_part(chol)
        if diag.dtype.is_complex:
            diag = cast(make_op("ComplexAbs", [diag], {"Tout": dtypes.float32 if diag.dtype == dtypes.complex64
                                                       else dtypes.float64}).outputs[0], diag.dtype)
        return multiply(reduce_sum(log(diag), -1), 2.0)


# -- Qr --------------------------------------------------------------------------------------------
@tf_export("linalg.qr", "qr")
def qr(input, full_matrices=False, name=None):
    """tf.linalg.qr(input, full_matrices=False, name=None) -> (q, r): input = q @ r with q's
    columns orthonormal and r upper triangular; [.., M, K] and [..., K, N] with K = min(M, N),
    or [..., M, M] and [..., M, N] when full_matrices."""
    with name_scope(name, "Qr", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        op = make_op("Qr", [x], {"full_matrices": bool(full_matrices), "T": x.dtype}, name=scope)
        return op.outputs[0], op.outputs[1]


def _qr_infer(op):
    x = op.inputs[0]
    s = matrix_shape(x.shape)
    m, n = _dims(s)
    k = m if op.get_attr("full_matrices") else _min_dim(m, n)
    batch = batch_of(s)
    return [(x.dtype, batch.concatenate([m, k])), (x.dtype, batch.concatenate([k, n]))]


def _qr_kernel(node, ctx):
    full = bool(node.attr.get("full_matrices"))

    def run(x):
        x = np.asarray(x)
        if x.ndim < 2:
            raise invalid(node, f"input must be at least a matrix, got shape {list(x.shape)}")
        m, n = x.shape[-2:]
        k = m if full else min(m, n)
        q, r = _batched(x, lambda a: np.linalg.qr(a, mode="complete" if full else "reduced"), [(m, k), (k, n)],
                        x.dtype)
        if not x.size and k:
            q[...] = np.eye(m, k, dtype=x.dtype)
        return q, r
    return run


def _tri_solve_right(x: Tensor, r: Tensor) -> Tensor:
    """x @ adjoint(inv(r)) for upper-triangular r."""
    return adjoint(matrix_triangular_solve(r, adjoint(x), lower=False, adjoint=False))


def _qr_grad(op, dq, dr):
    q, r = op.outputs
    a = op.inputs[0]
    m, n = _dims(a.shape)
    if op.get_attr("full_matrices") or m.value is None or n.value is None or m.value < n.value:
        raise NotImplementedError("QrGrad is implemented only for full_matrices=False and matrices of known "
                                  "shape with at least as many rows as columns (as in TF).")
    qdq = matmul(q, dq, adjoint_a=True)
    qdq_ = subtract(qdq, adjoint(qdq))
    rdr = matmul(r, dr, adjoint_b=True)
    rdr_ = subtract(rdr, adjoint(rdr))
    tril = matrix_band_part(add(qdq_, rdr_), -1, 0)
    grad_a = matmul(q, add(dr, _tri_solve_right(tril, r)))
    grad_b = _tri_solve_right(subtract(dq, matmul(q, qdq)), r)
    return [add(grad_a, grad_b)]


register("Qr", _qr_infer, _qr_kernel, grad=_qr_grad, dtypes=LINALG_TYPES, dtype_param="input")


# -- Svd -------------------------------------------------------------------------------------------
@tf_export("linalg.svd", "svd")
def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """tf.linalg.svd(tensor, full_matrices=False, compute_uv=True, name=None) -> s, or (s, u, v):
    tensor = u @ diag(s) @ adjoint(v), singular values in descending order. Note v, not v^H."""
    with name_scope(name, "Svd", [tensor]) as scope:
        x = convert_to_tensor(tensor, name="tensor")
        op = make_op("Svd", [x], {"full_matrices": bool(full_matrices), "compute_uv": bool(compute_uv),
                                  "T": x.dtype}, name=scope)
        s, u, v = op.outputs
        return (s, u, v) if compute_uv else s


def _real_of(dt) -> dtypes.DType:
    return {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(dt, dt)


def _svd_infer(op):
    x = op.inputs[0]
    s = matrix_shape(x.shape)
    m, n = _dims(s)
    k = _min_dim(m, n)
    batch = batch_of(s)
    if not op.get_attr("compute_uv"):
        return [(_real_of(x.dtype), batch.concatenate([k])), (x.dtype, TensorShape([0])), (x.dtype, TensorShape([0]))]
    full = op.get_attr("full_matrices")
    return [(_real_of(x.dtype), batch.concatenate([k])), (x.dtype, batch.concatenate([m, m if full else k])),
            (x.dtype, batch.concatenate([n, n if full else k]))]


def _svd_kernel(node, ctx):
    full, uv = bool(node.attr.get("full_matrices")), bool(node.attr.get("compute_uv", True))

    def run(x):
        x = np.asarray(x)
        if x.ndim < 2:
            raise invalid(node, f"input must be at least a matrix, got shape {list(x.shape)}")
        m, n = x.shape[-2:]
        k = min(m, n)
        real = np.zeros((), x.dtype).real.dtype
        if not uv:
            s = _batched(x, lambda a: np.linalg.svd(a, compute_uv=False), [(k,)], real)[0]
            return s, np.zeros(0, x.dtype), np.zeros(0, x.dtype)
        mu, nv = (m, n) if full else (k, k)

        def fn(a):
            u, s, vh = np.linalg.svd(a, full_matrices=full)
            return s, u, np.conj(np.swapaxes(vh, -1, -2))
        s, u, v = _batched(x, fn, [(k,), (m, mu), (n, nv)], x.dtype)
        if not x.size:
            u[...], v[...] = np.eye(m, mu, dtype=x.dtype), np.eye(n, nv, dtype=x.dtype)
        return s.real.astype(real), u, v
    return run


def _safe_reciprocal(x: Tensor, epsilon: float = 1e-20) -> Tensor:
    return multiply(x, reciprocal(add(multiply(x, x), epsilon)))


def _svd_grad(op, grad_s, grad_u, grad_v):
    """The gradient of the SVD (Townsend 2016; Giles 2008), for real and complex inputs with
    distinct singular values; |m - n| <= 1 when full_matrices."""
    a = op.inputs[0]
    grad_s_mat = matrix_diag(cast(grad_s, a.dtype))
    if not op.get_attr("compute_uv"):
        _, u, v = svd(a, compute_uv=True)
        return [matmul(u, matmul(grad_s_mat, v, adjoint_b=True))]
    m, n = (d.value for d in _dims(a.shape))
    if m is None or n is None:
        raise NotImplementedError("SVD gradient has not been implemented for input with unknown inner matrix "
                                  "shape (as in TF).")
    s, u, v = op.outputs
    use_adjoint = m > n
    if use_adjoint:   # work with A^H = V S U^H and take the adjoint at the end
        m, n, u, v, grad_u, grad_v = n, m, v, u, grad_v, grad_u
    if op.get_attr("full_matrices") and abs(m - n) > 1:
        raise NotImplementedError("svd gradient is not implemented for abs(m - n) > 1 when full_matrices is True")
    s = cast(s, a.dtype)
    s_mat = matrix_diag(s)
    s_2 = square(s)
    f = matrix_set_diag(_safe_reciprocal(subtract(expand_dims(s_2, -2), expand_dims(s_2, -1))), zeros_like(s))
    s_inv_mat = matrix_diag(_safe_reciprocal(s))
    v1, grad_v1 = v[..., :, :m], grad_v[..., :, :m]
    u_gu = matmul(u, grad_u, adjoint_a=True)
    v_gv = matmul(v1, grad_v1, adjoint_a=True)
    f_u, f_v = multiply(f, u_gu), multiply(f, v_gv)
    term1_nouv = add(add(grad_s_mat, matmul(add(f_u, adjoint(f_u)), s_mat)), matmul(s_mat, add(f_v, adjoint(f_v))))
    term1 = matmul(u, matmul(term1_nouv, v1, adjoint_b=True))
    if m == n:
        grad_a = term1
    else:
        gv1t = matrix_transpose(grad_v1, conjugate=True)
        term2_nous = subtract(gv1t, matmul(matmul(gv1t, v1), v1, adjoint_b=True))
        if op.get_attr("full_matrices"):
            v2, grad_v2 = v[..., :, m:n], grad_v[..., :, m:n]
            term2_nous = subtract(term2_nous, matmul(matmul(v1, grad_v2, adjoint_a=True), v2, adjoint_b=True))
        grad_a = add(term1, matmul(matmul(u, s_inv_mat), term2_nous))
    if use_adjoint:
        grad_a = matrix_transpose(grad_a, conjugate=True)
    grad_a.set_shape(a.shape)
    return [grad_a]


register("Svd", _svd_infer, _svd_kernel, grad=_svd_grad, dtypes=LINALG_TYPES, dtype_param="input")


@tf_export("linalg.matrix_rank")
def matrix_rank(a, tol=None, validate_args=False, name=None) -> Tensor:
    """tf.linalg.matrix_rank(a, tol=None, validate_args=False, name=None): the number of singular
    values above tol (default: eps * max(M, N) * largest singular value), int32."""
    with name_scope(name, "matrix_rank", [a, tol]):
        a = convert_to_tensor(a, name="a")
        s = svd(a, compute_uv=False)
        if tol is None:
            m, n = _dims(a.shape)
            size = max(m.value, n.value) if m.value is not None and n.value is not None else \
                cast(reduce_max(shape(a)[-2:]), s.dtype)
            eps = np.finfo(s.dtype.as_numpy_dtype).eps
            tol = multiply(multiply(reduce_max(s, -1, keepdims=True), eps), size)
        return reduce_sum(cast(greater(s, convert_to_tensor(tol, dtype=s.dtype)), dtypes.int32), -1)


# -- SelfAdjointEigV2 ------------------------------------------------------------------------------
def _eig(tensor, compute_v: bool, name):
    with name_scope(name, "SelfAdjointEigV2", [tensor]) as scope:
        x = convert_to_tensor(tensor, name="tensor")
        return make_op("SelfAdjointEigV2", [x], {"compute_v": compute_v, "T": x.dtype}, name=scope).outputs


@tf_export("linalg.eigh", "self_adjoint_eig")
def self_adjoint_eig(tensor, name=None):
    """tf.linalg.eigh(tensor, name=None) -> (e, v): eigenvalues (ascending) and eigenvectors (the
    columns of v) of each innermost self-adjoint matrix; only its lower triangle is read."""
    e, v = _eig(tensor, True, name)
    return e, v


@tf_export("linalg.eigvalsh", "self_adjoint_eigvals")
def self_adjoint_eigvals(tensor, name=None) -> Tensor:
    """tf.linalg.eigvalsh(tensor, name=None): the eigenvalues (ascending) of each innermost
    self-adjoint matrix."""
    return _eig(tensor, False, name)[0]


def _eig_infer(op):
    x = op.inputs[0]
    s = matrix_shape(x.shape, square=True)
    n = _dims(s)[1]
    batch = batch_of(s)
    v_shape = batch.concatenate([n, n]) if op.get_attr("compute_v") else TensorShape([0])
    return [(x.dtype, batch.concatenate([n])), (x.dtype, v_shape)]   # TF keeps complex eigenvalues complex


def _eig_kernel(node, ctx):
    compute_v = bool(node.attr.get("compute_v", True))

    def run(x):
        x = np.asarray(x)
        check_square(node, x)
        n = x.shape[-1]
        if not compute_v:
            return _batched(x, np.linalg.eigvalsh, [(n,)], x.dtype)[0], np.zeros(0, x.dtype)
        return tuple(_batched(x, np.linalg.eigh, [(n,), (n, n)], x.dtype))
    return run


def _eig_grad(op, grad_e, grad_v):
    e, v = op.outputs
    a = op.inputs[0]
    if not op.get_attr("compute_v"):
        _, v = self_adjoint_eig(a)
        grad_a = matmul(v, matmul(matrix_diag(grad_e), v, adjoint_b=True))
    else:
        f = matrix_set_diag(reciprocal(subtract(expand_dims(e, -2), expand_dims(e, -1))), zeros_like(e))
        inner = add(matrix_diag(grad_e), multiply(f, matmul(v, grad_v, adjoint_a=True)))
        grad_a = matmul(v, matmul(inner, v, adjoint_b=True))
    # The op reads only the lower triangle: fold the gradient onto it.
    grad_a = matrix_band_part(add(grad_a, adjoint(grad_a)), -1, 0)
    return [matrix_set_diag(grad_a, multiply(matrix_diag_part(grad_a), 0.5))]


register("SelfAdjointEigV2", _eig_infer, _eig_kernel, grad=_eig_grad, dtypes=LINALG_TYPES, dtype_param="input")


# -- Lu and the functions of its factors -----------------------------------------------------------
@tf_export("linalg.lu")
def lu(input, output_idx_type=dtypes.int32, name=None):
    """tf.linalg.lu(input, output_idx_type=tf.int32, name=None) -> (lu, p): the LU decomposition
    with partial pivoting of each innermost square matrix: `lu` packs the unit lower-triangular L
    (its diagonal not stored) and upper-triangular U, and input[..., p, :] = L @ U."""
    with name_scope(name, "Lu", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        op = make_op("Lu", [x], {"T": x.dtype, "output_idx_type": dtypes.as_dtype(output_idx_type)}, name=scope)
        return op.outputs[0], op.outputs[1]


def _lu_infer(op):
    s = matrix_shape(op.inputs[0].shape, square=True)
    return [(op.inputs[0].dtype, s), (op.get_attr("output_idx_type"), s[:-1] if s.ndims is not None else s)]


def _lu_kernel(node, ctx):
    import scipy.linalg
    idx_dt = dtypes.as_dtype(node.attr.get("output_idx_type", dtypes.int32)).as_numpy_dtype

    def run(x):
        x = np.asarray(x)
        check_square(node, x)
        n = x.shape[-1]
        flat = x.reshape((-1, n, n))
        packed, perms = np.empty_like(flat), np.tile(np.arange(n, dtype=idx_dt), (flat.shape[0], 1))
        with warnings.catch_warnings():  # a singular matrix still has (a singular) U, as in TF
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            for i, a in enumerate(flat):
                packed[i], swaps = scipy.linalg.lu_factor(a, check_finite=False) if n else (a, ())
                for row, other in enumerate(swaps):  # LAPACK's row interchanges as one permutation
                    perms[i, [row, other]] = perms[i, [other, row]]
        return packed.reshape(x.shape), perms.reshape(x.shape[:-1])
    return run


def _lu_factors(lower_upper: Tensor) -> tuple:
    """The unit lower-triangular L and the upper-triangular U packed in `lower_upper`."""
    lower = matrix_set_diag(matrix_band_part(lower_upper, -1, 0), ones_like(matrix_diag_part(lower_upper)))
    return lower, matrix_band_part(lower_upper, 0, -1)


def _permutation_matrix(perm: Tensor, dtype) -> Tensor:
    """P with (P @ x)[i] = x[perm[i]]."""
    return one_hot(perm, shape(perm)[-1], dtype=dtype)


def _lu_grad(op, grad_lu, grad_perm):
    # P A = L U: dA = P^T L^{-H} (tril_-1(L^H dL) + triu(dU U^H)) U^{-H}, for the square matrices Lu takes
    lower_upper, perm = op.outputs
    lower, upper = _lu_factors(lower_upper)
    grad_l = matrix_band_part(grad_lu, -1, 0)
    grad_l = matrix_set_diag(grad_l, zeros_like(matrix_diag_part(grad_l)))
    middle = matmul(lower, grad_l, adjoint_a=True)
    middle = add(matrix_set_diag(matrix_band_part(middle, -1, 0), zeros_like(matrix_diag_part(middle))),
                 matrix_band_part(matmul(matrix_band_part(grad_lu, 0, -1), upper, adjoint_b=True), 0, -1))
    grad_perm_a = matrix_triangular_solve(lower, middle, lower=True, adjoint=True)
    grad_perm_a = adjoint(matrix_triangular_solve(upper, adjoint(grad_perm_a), lower=False))
    return [matmul(_permutation_matrix(perm, grad_perm_a.dtype), grad_perm_a, adjoint_a=True)]


register("Lu", _lu_infer, _lu_kernel, grad=_lu_grad, dtypes=LINALG_TYPES, dtype_param="input")


@tf_export("linalg.lu_reconstruct")
def lu_reconstruct(lower_upper, perm, validate_args=False, name=None) -> Tensor:
    """tf.linalg.lu_reconstruct(lower_upper, perm, validate_args=False, name=None): the matrix
    whose tf.linalg.lu is (lower_upper, perm): P^T L U."""
    with name_scope(name, "lu_reconstruct", [lower_upper, perm]):
        lower_upper = convert_to_tensor(lower_upper, name="lower_upper")
        lower, upper = _lu_factors(lower_upper)
        return matmul(_permutation_matrix(convert_to_tensor(perm, name="perm"), lower_upper.dtype),
                      matmul(lower, upper), adjoint_a=True)


@tf_export("linalg.lu_solve")
def lu_solve(lower_upper, perm, rhs, validate_args=False, name=None) -> Tensor:
    """tf.linalg.lu_solve(lower_upper, perm, rhs, validate_args=False, name=None): X with A X = rhs
    for the A whose tf.linalg.lu is (lower_upper, perm): two triangular solves of rhs[perm]."""
    with name_scope(name, "lu_solve", [lower_upper, perm, rhs]):
        lower_upper = convert_to_tensor(lower_upper, name="lower_upper")
        rhs = convert_to_tensor(rhs, dtype=lower_upper.dtype, name="rhs")
        lower, _ = _lu_factors(lower_upper)
        permuted = matmul(_permutation_matrix(convert_to_tensor(perm, name="perm"), rhs.dtype), rhs)
        return matrix_triangular_solve(lower_upper, matrix_triangular_solve(lower, permuted, lower=True), lower=False)


@tf_export("linalg.lu_matrix_inverse")
def lu_matrix_inverse(lower_upper, perm, validate_args=False, name=None) -> Tensor:
    """tf.linalg.lu_matrix_inverse(lower_upper, perm, validate_args=False, name=None): the inverse
    of the matrix whose tf.linalg.lu is (lower_upper, perm)."""
    with name_scope(name, "lu_matrix_inverse", [lower_upper, perm]):
        lower_upper = convert_to_tensor(lower_upper, name="lower_upper")
        n = shape(lower_upper)[-1]
        return lu_solve(lower_upper, perm, eye(n, batch_shape=shape(lower_upper)[:-2], dtype=lower_upper.dtype))


# -- pinv ------------------------------------------------------------------------------------------
@tf_export("linalg.pinv")
def pinv(a, rcond=None, validate_args=False, name=None) -> Tensor:
    """tf.linalg.pinv(a, rcond=None, validate_args=False, name=None): the Moore-Penrose
    pseudo-inverse of each innermost matrix, from its SVD: singular values at most rcond times
    the largest count as zero; rcond defaults to 10 * max(rows, cols) * the dtype's epsilon."""
    with name_scope(name, "pinv", [a, rcond]):
        a = convert_to_tensor(a, name="a")
        if not a.dtype.is_floating:
            raise TypeError(f"Input `a` must have `float`-like `dtype` (saw {a.dtype.name}).")
        if rcond is None:
            dims, eps = [d.value for d in _dims(matrix_shape(a.shape))], float(np.finfo(a.dtype.as_numpy_dtype).eps)
            rcond = 10.0 * eps * max(dims) if None not in dims else \
                multiply(cast(reduce_max(shape(a)[-2:]), a.dtype), 10.0 * eps)
        s, u, v = svd(a, full_matrices=False, compute_uv=True)
        cutoff = multiply(convert_to_tensor(rcond, dtype=a.dtype, name="rcond"), reduce_max(s, axis=-1))
        s = where(greater(s, expand_dims(cutoff, -1)), s, fill(shape(s), np.array(np.inf, s.dtype.as_numpy_dtype)))
        return matmul(divide(v, expand_dims(s, -2)), u, adjoint_b=True)
