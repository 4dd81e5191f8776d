"""tf.linalg.eigh_tridiagonal (TF 2.x, in tf.compat.v1; issue 28): eigenvalues and eigenvectors of
a Hermitian tridiagonal matrix, all or selected by value or index; against scipy/numpy and
TensorFlow's recorded eigenvalues; bad arguments named."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
import scipy.linalg

import tensorweave as tf
from fixtures.tf_additions_cases import CASES, replay
from fixtures.tf_values_cases import case_fetches
from unit_helpers import run

RECORDED = json.load(open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_additions.json")))["cases"]
R = np.random.RandomState(4)
ALPHA, BETA = R.randn(7), R.randn(6)


@pytest.mark.parametrize("name", sorted(n for n in CASES if n.startswith("linalg/")))
def test_matches_tensorflow(name):
    replay(tf, RECORDED, name, case_fetches)


def _assert_eigenpairs(alpha, beta, values, vectors):
    dense = np.diag(alpha.astype(np.result_type(alpha, beta))) + np.diag(beta, 1) + np.diag(np.conj(beta), -1)
    np.testing.assert_allclose(dense @ vectors, vectors * values, atol=1e-10)
    np.testing.assert_allclose(vectors.conj().T @ vectors, np.eye(vectors.shape[1]), atol=1e-10)


def test_all_eigenvalues_and_vectors_are_scipys():
    values, vectors = run(tf.linalg.eigh_tridiagonal(ALPHA, BETA, eigvals_only=False))
    want_values, want_vectors = scipy.linalg.eigh_tridiagonal(ALPHA, BETA)
    np.testing.assert_allclose(values, want_values, atol=1e-12)
    np.testing.assert_allclose(np.abs(vectors), np.abs(want_vectors), atol=1e-10)   # each up to its sign
    _assert_eigenpairs(ALPHA, BETA, values, vectors)
    np.testing.assert_allclose(run(tf.linalg.eigh_tridiagonal(ALPHA, BETA)), want_values, atol=1e-12)


def test_selection_by_value_and_by_index_is_scipys():
    for select, select_range in (("v", (-0.5, 1.0)), ("i", (2, 4))):
        values, vectors = run(tf.linalg.eigh_tridiagonal(ALPHA, BETA, eigvals_only=False, select=select,
                                                         select_range=select_range))
        want = scipy.linalg.eigh_tridiagonal(ALPHA, BETA, eigvals_only=True, select=select, select_range=select_range)
        np.testing.assert_allclose(values, want, atol=1e-12)
        _assert_eigenpairs(ALPHA, BETA, values, vectors)


def test_complex_hermitian_matrix_has_beta_above_and_its_conjugate_below():
    alpha = (R.randn(5) + 0j).astype(np.complex64)
    beta = (R.randn(4) + 1j * R.randn(4)).astype(np.complex64)
    values, vectors = run(tf.linalg.eigh_tridiagonal(alpha, beta, eigvals_only=False))
    assert values.dtype == np.float32 and vectors.dtype == np.complex64
    dense = np.diag(alpha) + np.diag(beta, 1) + np.diag(np.conj(beta), -1)
    np.testing.assert_allclose(values, np.linalg.eigvalsh(dense.astype(np.complex128)), atol=1e-5)
    np.testing.assert_allclose(dense @ vectors, vectors * values, atol=1e-5)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="'select must have a value in"):
        tf.linalg.eigh_tridiagonal(ALPHA, BETA, select="x")
    with pytest.raises(ValueError, match="'alpha' and 'beta' must have the same type"):
        tf.linalg.eigh_tridiagonal(ALPHA, BETA.astype(np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Got empty interval in select_range"):
        run(tf.linalg.eigh_tridiagonal(ALPHA, BETA, select="v", select_range=[1.0, 0.0]))
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match="Got empty index range in select_range"):
        run(tf.linalg.eigh_tridiagonal(ALPHA, BETA, select="i", select_range=[3, 1]))
