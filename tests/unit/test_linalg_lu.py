"""tf.linalg.lu and the functions of its factors, pinv, tridiagonal_solve and tridiagonal_matmul:
values and gradients as TF 2.21 records them (tf_linalg_lu.npz, by
fixtures/record_tf_linalg_lu.py: TF's pivot convention), against numpy/scipy, and gradients
against central differences."""
from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.linalg

import tensorweave as tf
from unit_helpers import check_grad, run

REC = dict(np.load(os.path.join(os.path.dirname(__file__), "fixtures", "tf_linalg_lu.npz")))
R = np.random.RandomState(11)


def test_lu_and_its_functions_are_tfs():
    a, rhs = tf.constant(REC["a"]), tf.constant(REC["rhs"])
    lu, perm = tf.linalg.lu(a)
    sol = tf.linalg.lu_solve(lu, perm, rhs)
    w = REC["w_lu"][..., :3]
    got = run({"lu/lu": lu, "lu/perm": perm, "lu/inverse": tf.linalg.lu_matrix_inverse(lu, perm),
               "lu/reconstruct": tf.linalg.lu_reconstruct(lu, perm), "lu_solve/x": sol,
               "lu_solve/grad_lu": tf.gradients(tf.reduce_sum(sol * w), lu)[0],
               "lu_solve/grad_rhs": tf.gradients(tf.reduce_sum(sol * w), rhs)[0]})
    assert got["lu/perm"].dtype == np.int32
    np.testing.assert_array_equal(got["lu/perm"], REC["lu/perm"])
    assert not np.array_equal(REC["lu/perm"][1], np.arange(4))  # the recorded case pivots
    for key, value in got.items():
        np.testing.assert_allclose(value, REC[key], rtol=1e-10, atol=1e-12, err_msg=key)


def test_lu_factors_reproduce_the_matrix_and_scipys():
    a = R.randn(3, 5, 5).astype(np.float32)
    lu, perm = run(tf.linalg.lu(a, output_idx_type=tf.int64))
    assert lu.dtype == np.float32 and perm.dtype == np.int64 and perm.shape == (3, 5)
    for i in range(3):
        lower, upper = np.tril(lu[i], -1) + np.eye(5), np.triu(lu[i])
        np.testing.assert_allclose(lower @ upper, a[i][perm[i]], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(lu[i], scipy.linalg.lu_factor(a[i])[0], rtol=1e-5, atol=1e-6)


def test_lu_gradient_matches_finite_differences():
    a = R.randn(2, 4, 4) + 3 * np.eye(4)
    check_grad(lambda x: tf.linalg.lu(x)[0], a, tol=1e-6)
    check_grad(lambda x: tf.linalg.lu_solve(*tf.linalg.lu(x), tf.constant(R.randn(2, 4, 2))), a, tol=1e-6)
    check_grad(lambda x: tf.linalg.lu_matrix_inverse(*tf.linalg.lu(x)), a, tol=1e-6)


def test_lu_of_a_non_square_matrix_is_an_error():
    with pytest.raises(ValueError):
        tf.linalg.lu(tf.zeros([3, 4]))
    x = tf.placeholder(tf.float64)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="Lu"):
        sess.run(tf.linalg.lu(x)[0], {x: np.zeros((3, 4))})


def test_pinv_is_tfs_and_numpys():
    p = tf.constant(REC["p"])
    x = tf.linalg.pinv(p)
    got, grad = run([x, tf.gradients(tf.reduce_sum(x * REC["p"].T), p)[0]])
    np.testing.assert_allclose(got, REC["pinv/x"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad, REC["pinv/grad"], rtol=1e-9, atol=1e-11)
    rank_deficient = np.outer(R.randn(4), R.randn(3)).astype(np.float32)  # rank 1: the rest is cut off
    np.testing.assert_allclose(run(tf.linalg.pinv(rank_deficient)), np.linalg.pinv(rank_deficient, rcond=1e-5),
                               rtol=1e-4, atol=1e-5)
    check_grad(tf.linalg.pinv, R.randn(2, 3, 5), tol=1e-6)
    with pytest.raises(TypeError, match="float"):
        tf.linalg.pinv(tf.constant([[1, 2], [3, 4]]))


def _dense(diags: np.ndarray) -> np.ndarray:
    return np.diag(diags[1]) + np.diag(diags[0, :-1], 1) + np.diag(diags[2, 1:], -1)


def test_tridiagonal_solve_is_tfs():
    diags, b = tf.constant(REC["diags"]), tf.constant(REC["tri_rhs"])
    x = tf.linalg.tridiagonal_solve(diags, b)
    got = run([x] + tf.gradients(tf.reduce_sum(x * REC["tri_rhs"]), [diags, b]))
    for value, key in zip(got, ("x", "grad_diags", "grad_rhs")):
        np.testing.assert_allclose(value, REC["tridiagonal_solve/" + key], rtol=1e-10, atol=1e-12, err_msg=key)


def test_tridiagonal_solve_formats_and_vectors():
    diags = R.randn(3, 6) + [[0.0], [4.0], [0.0]]
    dense, b = _dense(diags), R.randn(6, 2)
    expected = np.linalg.solve(dense, b)
    compact, sequence, matrix, vector, transposed = run([
        tf.linalg.tridiagonal_solve(diags, b),
        tf.linalg.tridiagonal_solve([diags[0], diags[1], diags[2]], b, diagonals_format="sequence"),
        tf.linalg.tridiagonal_solve(dense, b, diagonals_format="matrix", partial_pivoting=False),
        tf.linalg.tridiagonal_solve(diags, b[:, 0]),
        tf.linalg.tridiagonal_solve(diags, b.T, transpose_rhs=True)])
    for got in (compact, sequence, matrix, transposed):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vector, expected[:, 0], rtol=1e-12, atol=1e-12)
    batch = np.stack([diags, diags * 0.5 + [[0.0], [2.0], [0.0]]]).astype(np.float32)
    got = run(tf.linalg.tridiagonal_solve(batch, np.stack([b, b]).astype(np.float32)))
    for i in range(2):
        np.testing.assert_allclose(got[i], np.linalg.solve(_dense(batch[i]), b), rtol=1e-4, atol=1e-5)
    check_grad(lambda d, r: tf.linalg.tridiagonal_solve(d, r), np.stack([diags, diags]), np.stack([b, b]), tol=1e-6)


def test_tridiagonal_solve_bad_input():
    with pytest.raises(ValueError, match=r"\[\.\.\., 3, M\]"):
        tf.linalg.tridiagonal_solve(tf.zeros([4, 5]), tf.zeros([5, 1]))
    with pytest.raises(ValueError, match="diagonals_format"):
        tf.linalg.tridiagonal_solve(tf.zeros([3, 5]), tf.zeros([5, 1]), diagonals_format="banded")
    d = tf.placeholder(tf.float64)
    out = tf.linalg.tridiagonal_solve(d, tf.ones([3, 1], tf.float64))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="TridiagonalSolve.*not invertible"):
            sess.run(out, {d: np.zeros((3, 3))})
        with pytest.raises(tf.errors.InvalidArgumentError, match="TridiagonalSolve"):
            sess.run(out, {d: np.zeros((3, 4))})


def test_tridiagonal_matmul_matches_numpy_and_differentiates():
    diags, b = R.randn(2, 3, 5), R.randn(2, 5, 3)
    got, from_sequence, from_matrix = run([
        tf.linalg.tridiagonal_matmul(diags, b),
        tf.linalg.tridiagonal_matmul([diags[:, 0], diags[:, 1], diags[:, 2]], b, diagonals_format="sequence"),
        tf.linalg.tridiagonal_matmul(np.stack([_dense(d) for d in diags]), b, diagonals_format="matrix")])
    expected = np.stack([_dense(diags[i]) @ b[i] for i in range(2)])
    for value in (got, from_sequence, from_matrix):
        np.testing.assert_allclose(value, expected, rtol=1e-12, atol=1e-12)
    check_grad(lambda d, r: tf.linalg.tridiagonal_matmul(d, r), diags, b, tol=1e-6)
