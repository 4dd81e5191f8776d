"""tf.linalg: decompositions, solvers, functions of matrices and the diagonal/band ops, against
numpy/scipy, with gradients against central finite differences (float64)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import tensorweave as tf
from unit_helpers import check_grad, run

R = np.random.RandomState(7)
A = R.randn(2, 4, 4)
SPD = A @ A.transpose(0, 2, 1) + 4 * np.eye(4)
B = R.randn(2, 4, 3)
TALL = R.randn(5, 3)
WIDE = R.randn(3, 5)


def _spd(a):
    return tf.matmul(a, a, transpose_b=True) + 3 * tf.eye(4, dtype=tf.float64)


def _sym(a):
    return a + tf.matrix_transpose(a)


# -- values ----------------------------------------------------------------------------------------
def test_decompositions_match_numpy():
    chol, (q, r), (s, u, v), (e, ev) = run([tf.cholesky(SPD), tf.qr(TALL), tf.svd(A), tf.self_adjoint_eig(SPD)])
    np.testing.assert_allclose(chol, np.linalg.cholesky(SPD), atol=1e-12)
    np.testing.assert_allclose(q @ r, TALL, atol=1e-12)
    np.testing.assert_allclose(np.triu(r), r)
    np.testing.assert_allclose(s, np.linalg.svd(A, compute_uv=False), atol=1e-12)
    np.testing.assert_allclose(u @ (s[..., None] * np.swapaxes(v, -1, -2)), A, atol=1e-12)
    np.testing.assert_allclose(e, np.linalg.eigvalsh(SPD), atol=1e-12)
    np.testing.assert_allclose(SPD @ ev, ev * e[:, None, :], atol=1e-10)


def test_decomposition_shapes_and_full_matrices():
    x = tf.placeholder(tf.float32, [None, 5, 3])
    q, r = tf.qr(x, full_matrices=True)
    s, u, v = tf.svd(x, full_matrices=True)
    assert q.shape.as_list() == [None, 5, 5] and r.shape.as_list() == [None, 5, 3]
    assert s.shape.as_list() == [None, 3] and u.shape.as_list() == [None, 5, 5] and v.shape.as_list() == [None, 3, 3]
    assert tf.svd(tf.placeholder(tf.complex64, [2, 2]), compute_uv=False).dtype == tf.float32
    assert tf.self_adjoint_eigvals(tf.placeholder(tf.complex64, [2, 2])).dtype == tf.complex64
    val = R.randn(2, 5, 3).astype(np.float32)
    qv, rv, sv, uv, vv = run([q, r, s, u, v], {x: val})
    assert qv.shape == (2, 5, 5) and uv.shape == (2, 5, 5) and vv.shape == (2, 3, 3)
    np.testing.assert_allclose(qv @ rv, val, atol=1e-5)
    np.testing.assert_allclose(uv[:, :, :3] * sv[:, None, :] @ np.swapaxes(vv, 1, 2), val, atol=1e-5)


def test_functions_of_matrices_match_numpy_and_scipy():
    inv, det, (sign, logabs), logdet, expm, sqrtm, rank = run([
        tf.matrix_inverse(SPD), tf.matrix_determinant(A), tf.linalg.slogdet(A), tf.linalg.logdet(SPD),
        tf.linalg.expm(A * 0.3), tf.linalg.sqrtm(SPD), tf.linalg.matrix_rank(np.diag([1.0, 2.0, 0.0]))])
    np.testing.assert_allclose(inv, np.linalg.inv(SPD), atol=1e-12)
    np.testing.assert_allclose(det, np.linalg.det(A), atol=1e-10)
    np.testing.assert_allclose(sign, np.linalg.slogdet(A)[0])
    np.testing.assert_allclose(logabs, np.linalg.slogdet(A)[1], atol=1e-12)
    np.testing.assert_allclose(logdet, np.linalg.slogdet(SPD)[1], atol=1e-12)
    np.testing.assert_allclose(expm[1], scipy.linalg.expm(A[1] * 0.3), atol=1e-10)
    np.testing.assert_allclose(sqrtm[0] @ sqrtm[0], SPD[0], atol=1e-8)
    assert rank == 2
    adj_inv = run(tf.matrix_inverse(A, adjoint=True))
    np.testing.assert_allclose(adj_inv, np.linalg.inv(np.swapaxes(A, 1, 2)), atol=1e-10)


def test_solvers_match_numpy():
    low = np.tril(A) + 3 * np.eye(4)
    solve, solve_adj, tri, tri_up_adj, chol_solve = run([
        tf.matrix_solve(A, B), tf.matrix_solve(A, B, adjoint=True), tf.matrix_triangular_solve(low + np.triu(A, 1), B),
        tf.matrix_triangular_solve(low.transpose(0, 2, 1), B, lower=False, adjoint=True),
        tf.cholesky_solve(tf.cholesky(SPD), B)])
    np.testing.assert_allclose(solve, np.linalg.solve(A, B), atol=1e-10)
    np.testing.assert_allclose(solve_adj, np.linalg.solve(A.transpose(0, 2, 1), B), atol=1e-10)
    np.testing.assert_allclose(tri, np.linalg.solve(low, B), atol=1e-10)   # the upper triangle is never read
    np.testing.assert_allclose(tri_up_adj, np.linalg.solve(low, B), atol=1e-10)
    np.testing.assert_allclose(chol_solve, np.linalg.solve(SPD, B), atol=1e-10)


def test_lstsq_fast_slow_and_regularized():
    b_tall, b_wide = R.randn(5, 2), R.randn(3, 2)
    fast, slow, under, reg = run([tf.linalg.lstsq(TALL, b_tall), tf.linalg.lstsq(TALL, b_tall, fast=False),
                                  tf.linalg.lstsq(WIDE, b_wide), tf.linalg.lstsq(TALL, b_tall, l2_regularizer=0.5)])
    np.testing.assert_allclose(fast, np.linalg.lstsq(TALL, b_tall, rcond=None)[0], atol=1e-10)
    np.testing.assert_allclose(slow, fast, atol=1e-10)
    np.testing.assert_allclose(under, np.linalg.lstsq(WIDE, b_wide, rcond=None)[0], atol=1e-10)  # minimum norm
    np.testing.assert_allclose(reg, np.linalg.solve(TALL.T @ TALL + 0.5 * np.eye(3), TALL.T @ b_tall), atol=1e-10)
    rank_deficient = np.ones((4, 2))
    slow_rd = run(tf.linalg.lstsq(rank_deficient, np.ones((4, 1)), fast=False))
    np.testing.assert_allclose(slow_rd, [[0.5], [0.5]], atol=1e-10)
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank deficient"):
        run(tf.linalg.lstsq(rank_deficient, np.ones((4, 1))))


def test_linalg_errors_name_the_problem():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cholesky decomposition was not successful"):
        run(tf.cholesky(-np.eye(3)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="not invertible"):
        run(tf.matrix_inverse(np.zeros((2, 2))))
    with pytest.raises(tf.errors.InvalidArgumentError, match="not invertible"):
        run(tf.matrix_solve(np.zeros((2, 2)), np.ones((2, 1))))
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.matrix_inverse(tf.zeros([3, 4]))
    with pytest.raises(ValueError, match="at least rank 2"):
        tf.cholesky(tf.zeros([3]))
    with pytest.raises(TypeError, match="DataType int32 not in list"):
        tf.cholesky(tf.zeros([3, 3], tf.int32))


def test_diag_band_and_eye_match_numpy():
    x = np.arange(24.0).reshape(2, 3, 4)
    out = run({"part": tf.linalg.diag_part(x), "part_k1": tf.linalg.diag_part(x, k=1),
               "band": tf.linalg.diag_part(x, k=(-1, 1), padding_value=9),
               "diag": tf.linalg.diag([[1.0, 2.0]]), "diag_k": tf.linalg.diag([1.0, 2.0], k=-1),
               "diag_rect": tf.linalg.diag([1.0, 2.0], num_rows=2, num_cols=4),
               "set": tf.linalg.set_diag(x, np.zeros((2, 3))), "bp": tf.linalg.band_part(x, 0, 1),
               "tdiag": tf.diag([[1, 2], [3, 4]]), "tpart": tf.diag_part(np.arange(16).reshape(2, 2, 2, 2)),
               "eye": tf.eye(2, 3, batch_shape=[2]), "trace": tf.trace(x)})
    np.testing.assert_array_equal(out["part"], np.diagonal(x, axis1=1, axis2=2))
    np.testing.assert_array_equal(out["part_k1"], np.diagonal(x, 1, axis1=1, axis2=2))
    # TF 1.15's layout of a band: diagonals from k[1] down to k[0], each starting at its first element
    np.testing.assert_array_equal(out["band"][0], [[1, 6, 11], [0, 5, 10], [4, 9, 9]])
    np.testing.assert_array_equal(out["diag"], [np.diag([1.0, 2.0])])
    np.testing.assert_array_equal(out["diag_k"], np.diag([1.0, 2.0], -1))
    np.testing.assert_array_equal(out["diag_rect"], np.eye(2, 4) * [1, 2, 0, 0])
    expect = x.copy()
    expect[:, [0, 1, 2], [0, 1, 2]] = 0
    np.testing.assert_array_equal(out["set"], expect)
    np.testing.assert_array_equal(out["bp"], np.triu(np.tril(x, 1)))
    assert out["tdiag"].shape == (2, 2, 2, 2) and out["tdiag"][1, 0, 1, 0] == 3 and out["tdiag"].sum() == 10
    np.testing.assert_array_equal(out["tpart"], [[0, 5], [10, 15]])
    np.testing.assert_array_equal(out["eye"], np.broadcast_to(np.eye(2, 3), (2, 2, 3)))
    np.testing.assert_array_equal(out["trace"], np.trace(x, axis1=1, axis2=2))
    n = tf.placeholder(tf.int32, [])
    np.testing.assert_array_equal(run(tf.eye(n), {n: 3}), np.eye(3))


def test_cross_tensordot_einsum_norm_matvec():
    a, b = R.randn(4, 3), R.randn(4, 3)
    t1, t2 = R.randn(2, 3, 4), R.randn(4, 3, 5)
    out = run([tf.cross(a, b), tf.tensordot(t1, t2, [[1, 2], [1, 0]]), tf.tensordot(t1, t2, 1),
               tf.norm(t1, ord=1, axis=[1, 2]), tf.norm(t1, ord=np.inf, axis=[-2, -1], keepdims=True),
               tf.linalg.matvec(a.T, b[:, 0]), tf.linalg.adjoint(t1)])
    np.testing.assert_allclose(out[0], np.cross(a, b))
    np.testing.assert_allclose(out[1], np.tensordot(t1, t2, [[1, 2], [1, 0]]))
    np.testing.assert_allclose(out[2], np.tensordot(t1, t2, 1))
    np.testing.assert_allclose(out[3], np.linalg.norm(t1, 1, axis=(1, 2)))
    np.testing.assert_allclose(out[4], np.linalg.norm(t1, np.inf, axis=(1, 2))[:, None, None])
    np.testing.assert_allclose(out[5], a.T @ b[:, 0])
    np.testing.assert_allclose(out[6], t1.transpose(0, 2, 1))
    ph = tf.placeholder(tf.float64)
    axes = tf.placeholder(tf.int32, [2, 2])
    np.testing.assert_allclose(run(tf.tensordot(ph, t2, axes), {ph: t1, axes: [[1, 2], [1, 0]]}),
                               np.tensordot(t1, t2, [[1, 2], [1, 0]]))


# -- gradients -------------------------------------------------------------------------------------
@pytest.mark.parametrize("build", [
    lambda a: tf.cholesky(_spd(a)),
    lambda a: tf.matrix_inverse(a + 4 * tf.eye(4, dtype=tf.float64)),
    lambda a: tf.matrix_inverse(a + 4 * tf.eye(4, dtype=tf.float64), adjoint=True),
    lambda a: tf.matrix_determinant(a),
    lambda a: tf.linalg.slogdet(a)[1],
    lambda a: tf.linalg.logdet(_spd(a)),
    lambda a: tf.self_adjoint_eig(_sym(a))[0],
    lambda a: tf.abs(tf.self_adjoint_eig(_sym(a))[1]),   # eigenvectors are defined up to sign
    lambda a: tf.self_adjoint_eigvals(_sym(a)),
    lambda a: tf.svd(a, compute_uv=False),
    lambda a: tf.linalg.expm(a * 0.5),
    lambda a: tf.linalg.diag_part(a, k=(-1, 2)),
    lambda a: tf.linalg.set_diag(a, tf.linalg.diag_part(a) ** 2),
    lambda a: tf.linalg.band_part(a, 1, 0),
    lambda a: tf.trace(a),
    lambda a: tf.linalg.diag(a[0]),
], ids=["cholesky", "inv", "inv_adjoint", "det", "slogdet", "logdet", "eigh_values", "eigh_vectors", "eigvalsh",
        "svd_values", "expm", "diag_part_band", "set_diag", "band_part", "trace", "diag"])
def test_square_matrix_gradients(build):
    check_grad(build, R.randn(4, 4) * 0.5, tol=1e-5)


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
def test_svd_gradient_through_all_factors(shape, full):
    if full and abs(shape[0] - shape[1]) > 1:
        pytest.skip("TF defines the full_matrices gradient only for |m - n| <= 1")

    def build(a):
        s, u, v = tf.svd(a, full_matrices=full)
        k = min(shape)
        # u, v are defined up to the sign of each column pair: use sign-invariant products
        return tf.concat([tf.reshape(s, [-1]), tf.reshape(tf.matmul(u[:, :k] * s, v[:, :k], transpose_b=True), [-1])],
                         0)
    check_grad(build, R.randn(*shape), tol=1e-5)


def test_qr_gradient():
    def build(a):
        q, r = tf.qr(a)
        return tf.concat([tf.reshape(q, [-1]), tf.reshape(r, [-1])], 0)
    values = R.randn(5, 3)
    values *= np.sign(np.diag(np.linalg.qr(values)[1]))   # keep r's diagonal away from sign flips
    check_grad(build, values, tol=1e-5)


@pytest.mark.parametrize("build", [
    lambda a, b: tf.matrix_solve(a + 4 * tf.eye(4, dtype=tf.float64), b),
    lambda a, b: tf.matrix_solve(a + 4 * tf.eye(4, dtype=tf.float64), b, adjoint=True),
    lambda a, b: tf.matrix_triangular_solve(a + 4 * tf.eye(4, dtype=tf.float64), b),
    lambda a, b: tf.matrix_triangular_solve(a + 4 * tf.eye(4, dtype=tf.float64), b, lower=False, adjoint=True),
    lambda a, b: tf.cholesky_solve(tf.cholesky(_spd(a)), b),
    lambda a, b: tf.linalg.lstsq(a[:, :3], b),
    lambda a, b: tf.linalg.lstsq(tf.transpose(a[:, :3]), b[:3], l2_regularizer=0.3),
    lambda a, b: tf.linalg.matvec(a, b[:, 0]),
], ids=["solve", "solve_adjoint", "triangular", "triangular_upper_adjoint", "cholesky_solve", "lstsq_tall",
        "lstsq_wide_regularized", "matvec"])
def test_solver_gradients(build):
    check_grad(build, R.randn(4, 4) * 0.5, R.randn(4, 2), tol=1e-5)


def test_lstsq_gradient_with_unknown_shapes_uses_the_right_branch():
    check_grad(lambda a, b: tf.linalg.lstsq(a, b), R.randn(5, 3), R.randn(5, 2), dynamic=True, tol=1e-5)
    check_grad(lambda a, b: tf.linalg.lstsq(a, b), R.randn(3, 5), R.randn(3, 2), dynamic=True, tol=1e-5)


def test_cross_tensordot_gradients():
    check_grad(tf.cross, R.randn(4, 3), R.randn(4, 3))
    check_grad(lambda a, b: tf.tensordot(a, b, [[1, 2], [1, 0]]), R.randn(2, 3, 4), R.randn(4, 3, 5))
    check_grad(lambda a, b: tf.tensordot(a, b, 1), R.randn(2, 3), R.randn(3, 2), dynamic=True)


@pytest.mark.parametrize("eq,shapes", [
    ("ii->", [(3, 3)]), ("ii->i", [(3, 3)]), ("iii->i", [(2, 2, 2)]), ("ij->", [(2, 3)]),
    ("iij,jk->ik", [(3, 3, 2), (2, 4)]), ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("bij,bjk->bik", [(1, 2, 3), (4, 3, 2)]), ("...i,...i->...", [(5, 3), (3,)]), ("ijk->kji", [(2, 3, 4)]),
])
def test_einsum_gradients_with_diagonals_ellipses_and_broadcasting(eq, shapes):
    values = [R.randn(*s) for s in shapes]
    np.testing.assert_allclose(run(tf.einsum(eq, *values)), np.einsum(eq, *values), atol=1e-12)
    check_grad(lambda *xs: tf.einsum(eq, *xs), *values)
    if "..." not in eq:
        check_grad(lambda *xs: tf.einsum(eq, *xs), *values, dynamic=True)
