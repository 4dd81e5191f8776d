"""tf.linalg.LinearOperator and its family: each operator's to_dense() against the matrix built
in numpy from the same parameters, and every method against numpy on that matrix (products and
solves with each adjoint flag, broadcasting against arguments with more batch dims), gradients
through matmul and solve against finite differences, and TF's hint-consistency errors."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg

import tensorweave as tf

LA = tf.linalg
RNG = np.random.RandomState(1234)


def _spd(*shape):
    a = RNG.randn(*shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _well(*shape):
    return RNG.randn(*shape) + 3 * shape[-1] * np.eye(shape[-1])


def _kron(*mats):
    out = mats[0]
    for m in mats[1:]:
        out = np.einsum("...ij,...kl->...ikjl", out, m)
        s = out.shape
        out = out.reshape(s[:-4] + (s[-4] * s[-3], s[-2] * s[-1]))
    return out


def _circulant(kernel):
    n = kernel.shape[-1]
    return np.stack([np.roll(kernel, i, -1) for i in range(n)], -1)   # C[i, j] = kernel[(i - j) mod n]


def _block_circulant(kernel):
    """The doubly block circulant of a 2-D kernel [N0, N1]: blocks circulant(kernel[(i - j) mod N0])."""
    n0 = kernel.shape[0]
    blocks = [_circulant(kernel[i]) for i in range(n0)]
    return np.block([[blocks[(i - j) % n0] for j in range(n0)] for i in range(n0)])


# name: (builder of (operator, expected dense matrix), hints: square non-singular, self-adjoint PD)
def _full():
    m = _well(2, 3, 3)
    return LA.LinearOperatorFullMatrix(m), m


def _full_spd():
    m = _spd(3, 3)
    return LA.LinearOperatorFullMatrix(m, is_self_adjoint=True, is_positive_definite=True), m


def _diag():
    d = RNG.uniform(1, 2, (2, 4)) * np.array([1, -1, 1, 1])
    return LA.LinearOperatorDiag(d), np.apply_along_axis(np.diag, -1, d)


def _diag_pd():
    d = RNG.uniform(1, 2, (4,))
    return LA.LinearOperatorDiag(d, is_positive_definite=True), np.diag(d)


def _identity():
    return LA.LinearOperatorIdentity(3, batch_shape=[2], dtype=tf.float64), np.broadcast_to(np.eye(3), (2, 3, 3))


def _scaled():
    m = np.array([2.0, 0.5])
    return (LA.LinearOperatorScaledIdentity(3, m, is_positive_definite=True),
            m[:, None, None] * np.eye(3))


def _tril():
    m = _well(2, 4, 4)
    return LA.LinearOperatorLowerTriangular(m), np.tril(m)


def _composition():
    a, b = _well(3, 3), _well(2, 3, 3)
    return LA.LinearOperatorComposition([LA.LinearOperatorFullMatrix(a), LA.LinearOperatorFullMatrix(b)]), a @ b


def _block_diag():
    a, b = _well(2, 2, 2), _well(3, 3)
    dense = np.zeros((2, 5, 5))
    dense[:, :2, :2], dense[:, 2:, 2:] = a, b
    return LA.LinearOperatorBlockDiag([LA.LinearOperatorFullMatrix(a), LA.LinearOperatorFullMatrix(b)]), dense


def _block_lower():
    a, b, c = _well(2, 2), RNG.randn(3, 2), _well(3, 3)
    dense = np.zeros((5, 5))
    dense[:2, :2], dense[2:, :2], dense[2:, 2:] = a, b, c
    op = LA.LinearOperatorBlockLowerTriangular([[LA.LinearOperatorFullMatrix(a)],
                                                 [LA.LinearOperatorFullMatrix(b), LA.LinearOperatorFullMatrix(c)]])
    return op, dense


def _kronecker():
    a, b, c = _well(2, 2), _well(2, 3, 3), _well(2, 2)
    ops = [LA.LinearOperatorFullMatrix(m) for m in (a, b, c)]
    return LA.LinearOperatorKronecker(ops), _kron(np.broadcast_to(a, (2, 2, 2)), b, np.broadcast_to(c, (2, 2, 2)))


def _kronecker_spd():
    a, d = _spd(2, 2), RNG.uniform(1, 2, 3)
    op = LA.LinearOperatorKronecker([LA.LinearOperatorFullMatrix(a, is_self_adjoint=True, is_positive_definite=True),
                                     LA.LinearOperatorDiag(d, is_positive_definite=True)])
    return op, _kron(a, np.diag(d))


def _low_rank():
    base, u, d, v = _well(2, 4, 4), RNG.randn(4, 2), RNG.uniform(1, 2, 2), RNG.randn(4, 2)
    op = LA.LinearOperatorLowRankUpdate(LA.LinearOperatorFullMatrix(base), u, diag_update=d, v=v)
    return op, base + u @ np.diag(d) @ v.T


def _low_rank_spd():
    d, u = RNG.uniform(1, 2, 4), RNG.randn(4, 2)
    op = LA.LinearOperatorLowRankUpdate(LA.LinearOperatorDiag(d, is_positive_definite=True), u)
    return op, np.diag(d) + u @ u.T


def _circulant_real():
    kernel = np.array([[4.0, 1.0, 0.5, 1.0], [3.0, -1.0, 0.0, -1.0]])   # symmetric: a real, Hermitian spectrum
    return (LA.LinearOperatorCirculant(np.fft.fft(kernel), input_output_dtype=tf.float64, is_self_adjoint=True),
            _circulant(kernel))


def _circulant_complex():
    kernel = RNG.randn(5) + 1j * RNG.randn(5) + np.array([6, 0, 0, 0, 0])
    return (LA.LinearOperatorCirculant(np.fft.fft(kernel), input_output_dtype=tf.complex128),
            _circulant(kernel))


def _circulant_2d():
    kernel = RNG.randn(2, 3) + 1j * RNG.randn(2, 3)
    kernel[0, 0] += 8
    return (LA.LinearOperatorCirculant2D(np.fft.fft2(kernel), input_output_dtype=tf.complex128),
            _block_circulant(kernel))


def _circulant_3d():
    kernel = RNG.randn(2, 2, 2) + 0j
    kernel[0, 0, 0] += 9
    spectrum = np.fft.fftn(kernel)
    flat = np.fft.ifft(np.eye(8), axis=0)   # columns e_j: the operator as ifft3(spectrum * fft3(e_j))
    dense = np.stack([np.fft.ifftn(spectrum * np.fft.fftn(np.eye(8)[j].reshape(2, 2, 2))).reshape(-1)
                      for j in range(8)], -1)
    del flat
    return LA.LinearOperatorCirculant3D(spectrum, input_output_dtype=tf.complex128), dense


def _toeplitz():
    col, row = np.array([5.0, 1.0, 2.0, -1.0]), np.array([5.0, 3.0, -2.0, 0.5])
    return LA.LinearOperatorToeplitz(col, row), scipy.linalg.toeplitz(col, row)


def _householder():
    v = RNG.randn(2, 4)
    unit = v / np.linalg.norm(v, axis=-1, keepdims=True)
    return LA.LinearOperatorHouseholder(v), np.eye(4) - 2 * unit[..., :, None] * unit[..., None, :]


def _permutation():
    perm = np.array([[2, 0, 3, 1], [1, 0, 2, 3]])
    return LA.LinearOperatorPermutation(perm, dtype=tf.float64), np.eye(4)[perm]


def _tridiag():
    sup, diag, sub = RNG.randn(2, 4), RNG.randn(2, 4) + 6, RNG.randn(2, 4)
    dense = (np.apply_along_axis(np.diag, -1, diag) + np.stack([np.diag(s[:-1], 1) for s in sup])
             + np.stack([np.diag(s[1:], -1) for s in sub]))
    return LA.LinearOperatorTridiag(np.stack([sup, diag, sub], -2)), dense


def _adjoint_op():
    m = _well(3, 3)
    return LA.LinearOperatorAdjoint(LA.LinearOperatorFullMatrix(m)), m.T


def _inversion():
    m = _well(2, 3, 3)
    return LA.LinearOperatorInversion(LA.LinearOperatorFullMatrix(m)), np.linalg.inv(m)


CASES = {f.__name__[1:]: f for f in (
    _full, _full_spd, _diag, _diag_pd, _identity, _scaled, _tril, _composition, _block_diag, _block_lower,
    _kronecker, _kronecker_spd, _low_rank, _low_rank_spd, _circulant_real, _circulant_complex, _circulant_2d,
    _circulant_3d, _toeplitz, _householder, _permutation, _tridiag, _adjoint_op, _inversion)}


def _h(a):
    return np.conj(np.swapaxes(a, -1, -2))


def _close(got, want, what):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8, err_msg=what)


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_method_matches_numpy_on_the_dense_matrix(case):
    with tf.Graph().as_default():
        op, dense = CASES[case]()
        dense = np.asarray(dense)
        n = dense.shape[-1]
        batch = dense.shape[:-2]
        np_dtype = op.dtype.as_numpy_dtype
        x = RNG.randn(3, *batch, n, 2).astype(np_dtype)          # an extra leading batch dim broadcasts
        xh = _h(x)
        vec = RNG.randn(n).astype(np_dtype)
        square = RNG.randn(*dense.shape).astype(np_dtype)
        assert op.shape.as_list() == list(dense.shape)
        assert op.batch_shape.as_list() == list(batch)
        assert op.domain_dimension.value == n and op.range_dimension.value == n and op.tensor_rank == dense.ndim
        fetch = {"dense": op.to_dense(), "shape": op.shape_tensor(), "batch": op.batch_shape_tensor(),
                 "domain": op.domain_dimension_tensor(), "range": op.range_dimension_tensor(),
                 "rank": op.tensor_rank_tensor(),
                 "mm": op.matmul(x), "mm_a": op.matmul(x, adjoint=True), "mm_aa": op.matmul(xh, adjoint_arg=True),
                 "mm_both": op.matmul(xh, adjoint=True, adjoint_arg=True), "mv": op.matvec(vec),
                 "mv_a": op.matvec(vec, adjoint=True), "op_mm": (op @ x),
                 "det": op.determinant(), "logdet": op.log_abs_determinant(), "trace": op.trace(),
                 "diag": op.diag_part(), "add": op.add_to_tensor(square), "adj": op.adjoint().to_dense(),
                 "H": op.H.matmul(x)}
        want = {"dense": dense, "shape": dense.shape, "batch": batch, "domain": n, "range": n, "rank": dense.ndim,
                "mm": dense @ x, "mm_a": _h(dense) @ x, "mm_aa": dense @ x, "mm_both": _h(dense) @ x,
                "mv": dense @ vec, "mv_a": _h(dense) @ vec, "op_mm": dense @ x,
                "det": np.linalg.det(dense), "logdet": np.linalg.slogdet(dense)[1],
                "trace": np.trace(dense, axis1=-2, axis2=-1), "diag": np.diagonal(dense, axis1=-2, axis2=-1),
                "add": dense + square, "adj": _h(dense), "H": _h(dense) @ x}
        if op.is_non_singular is not False:
            inv = np.linalg.inv(dense)
            fetch.update(solve=op.solve(x), solve_a=op.solve(x, adjoint=True), solve_aa=op.solve(xh, adjoint_arg=True),
                         solvevec=op.solvevec(vec), solvevec_a=op.solvevec(vec, adjoint=True),
                         inverse=op.inverse().to_dense(), cond=op.cond())
            want.update(solve=inv @ x, solve_a=_h(inv) @ x, solve_aa=inv @ x, solvevec=inv @ vec,
                        solvevec_a=_h(inv) @ vec, inverse=inv, cond=np.linalg.cond(dense))
        if op.is_self_adjoint:
            fetch["eigvals"] = op.eigvals()
            want["eigvals"] = np.linalg.eigvalsh(dense)
        if op.is_self_adjoint and op.is_positive_definite:
            fetch["chol"] = op.cholesky().to_dense()
            want["chol"] = np.linalg.cholesky(dense)
        with tf.Session() as sess:
            got = sess.run(fetch)
            sess.run([op.assert_non_singular()] if op.is_non_singular is not False else [])
            if op.is_self_adjoint:
                sess.run(op.assert_self_adjoint())
        for key, value in want.items():
            if key == "eigvals":
                value, got[key] = np.sort(value, -1), np.sort(np.real(got[key]), -1)
            _close(got[key], value, f"{case}.{key}")


def test_batch_shapes_broadcast_between_operators_and_arguments():
    with tf.Graph().as_default():
        d = RNG.uniform(1, 2, (2, 1, 3))
        op = LA.LinearOperatorComposition([LA.LinearOperatorDiag(d), LA.LinearOperatorFullMatrix(_well(4, 3, 3))])
        assert op.batch_shape.as_list() == [2, 4]
        x = RNG.randn(3, 5)
        dense = np.apply_along_axis(np.diag, -1, d) @ op.operators[1].to_dense().eval(session=tf.Session())
        with tf.Session() as sess:
            got, shape = sess.run([op.matmul(x), op.batch_shape_tensor()])
        assert list(shape) == [2, 4]
        _close(got, dense @ x, "composition batch broadcast")


def _numeric_grad(f, v, eps=1e-6):
    out = np.zeros_like(v)
    for i in np.ndindex(v.shape):
        up, down = v.copy(), v.copy()
        up[i] += eps
        down[i] -= eps
        out[i] = (f(up) - f(down)) / (2 * eps)
    return out


GRAD_CASES = {
    "full": (lambda: _well(3, 3), LA.LinearOperatorFullMatrix),
    "diag": (lambda: RNG.uniform(1, 2, 3), LA.LinearOperatorDiag),
    "tril": (lambda: _well(3, 3), LA.LinearOperatorLowerTriangular),
    "kronecker": (lambda: _well(2, 2), lambda p: LA.LinearOperatorKronecker(
        [LA.LinearOperatorFullMatrix(p), LA.LinearOperatorDiag(np.array([1.0, 2.0]))])),
    "low_rank": (lambda: RNG.randn(3, 1), lambda p: LA.LinearOperatorLowRankUpdate(
        LA.LinearOperatorDiag(np.array([2.0, 3.0, 4.0])), p)),
}


@pytest.mark.parametrize("method", ["matmul", "solve"])
@pytest.mark.parametrize("kind", sorted(GRAD_CASES))
def test_gradients_through_matmul_and_solve_match_finite_differences(kind, method):
    make_values, make = GRAD_CASES[kind]
    values = make_values()
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float64, values.shape)
        op = make(p)
        n = op.domain_dimension.value
        x0, weights = RNG.randn(n, 2), RNG.randn(n, 2)
        x = tf.placeholder(tf.float64, [n, 2])
        loss = tf.reduce_sum(getattr(op, method)(x) * weights)
        grads = tf.gradients(loss, [p, x])
        with tf.Session() as sess:
            g_p, g_x = sess.run(grads, {p: values, x: x0})

            def f_p(v):
                return sess.run(loss, {p: v, x: x0})

            def f_x(v):
                return sess.run(loss, {p: values, x: v})
            np.testing.assert_allclose(g_p, _numeric_grad(f_p, values), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(g_x, _numeric_grad(f_x, x0), rtol=1e-5, atol=1e-6)


def test_a_user_subclass_gets_the_dense_defaults():
    class Doubling(LA.LinearOperator):
        def __init__(self):
            super().__init__(tf.float64, is_self_adjoint=True, is_positive_definite=True, name="Doubling")

        def _shape(self):
            return tf.TensorShape([3, 3])

        def _matmul(self, x, adjoint=False, adjoint_arg=False):
            return 2 * (tf.linalg.adjoint(x) if adjoint_arg else x)

    op = Doubling()
    assert op.is_square and op.is_non_singular
    with tf.Graph().as_default(), tf.Session() as sess:
        x = RNG.randn(3, 2)
        got = sess.run([op.to_dense(), op.solve(x), op.determinant(), op.log_abs_determinant(), op.trace(),
                        op.eigvals(), op.cholesky().to_dense(), op.shape_tensor()])
        for g, w in zip(got, [2 * np.eye(3), x / 2, 8.0, np.log(8.0), 6.0, [2.0] * 3, np.sqrt(2) * np.eye(3), [3, 3]]):
            _close(g, w, "subclass defaults")


def test_hint_errors_are_tfs():
    m = _well(3, 3)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="positive definite matrix is always non-singular"):
            LA.LinearOperatorFullMatrix(m, is_positive_definite=True, is_non_singular=False)
        with pytest.raises(ValueError, match="non-singular matrix is always square"):
            LA.LinearOperatorFullMatrix(m, is_non_singular=True, is_square=False)
        with pytest.raises(ValueError, match="self-adjoint matrix is always square"):
            LA.LinearOperatorFullMatrix(m, is_self_adjoint=True, is_square=False)
        with pytest.raises(ValueError, match="is_square hint to False, but the operator was square"):
            _ = LA.LinearOperatorFullMatrix(m, is_square=False).is_square
        with pytest.raises(ValueError, match="real diagonal operator is always self adjoint"):
            LA.LinearOperatorDiag([1.0, 2.0], is_self_adjoint=False)
        with pytest.raises(ValueError, match="identity operator is always non-singular"):
            LA.LinearOperatorIdentity(3, is_non_singular=False)
        with pytest.raises(ValueError, match="Zeros operator is always singular"):
            LA.LinearOperatorZeros(3, is_non_singular=True)
        with pytest.raises(ValueError, match="Householder operator is always self adjoint"):
            LA.LinearOperatorHouseholder([1.0, 2.0], is_self_adjoint=False)
        with pytest.raises(tf.errors.InvalidArgumentError, match="always non-positive definite"):
            LA.LinearOperatorHouseholder([1.0, 2.0]).assert_positive_definite()
        with pytest.raises(ValueError, match="Argument num_rows must be non-negative"):
            LA.LinearOperatorIdentity(-1)
        with pytest.raises(TypeError, match="same dtype"):
            LA.LinearOperatorComposition([LA.LinearOperatorDiag([1.0]), LA.LinearOperatorDiag(np.array([1.0]))])
        with pytest.raises(ValueError, match="Operators are incompatible"):
            LA.LinearOperatorComposition([LA.LinearOperatorFullMatrix(m), LA.LinearOperatorDiag(np.ones(2))])
        with pytest.raises(ValueError, match="non-singular operators is always non-singular"):
            LA.LinearOperatorBlockDiag([LA.LinearOperatorIdentity(2)], is_non_singular=False)
        singular = LA.LinearOperatorFullMatrix(m, is_non_singular=False)
        with pytest.raises(NotImplementedError, match="expected to be singular"):
            singular.solve(np.ones((3, 1)))
        with pytest.raises(ValueError, match="Cannot take the Inverse: This operator represents a singular matrix"):
            singular.inverse()
        with pytest.raises(ValueError, match="Cannot take the Cholesky decomposition"):
            LA.LinearOperatorFullMatrix(m).cholesky()
        with pytest.raises(NotImplementedError, match="Only self-adjoint matrices are supported"):
            LA.LinearOperatorFullMatrix(m).eigvals()
        with pytest.raises(TypeError, match="Expected argument to have dtype float32"):
            LA.LinearOperatorIdentity(3).matmul(np.ones((3, 1)))
        with pytest.raises(ValueError, match="not compatible"):
            LA.LinearOperatorFullMatrix(m).matmul(np.ones((4, 1)))


def test_runtime_assertions_fail_on_violated_promises():
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Diagonal contained zero values"):
            sess.run(LA.LinearOperatorDiag([1.0, 0.0]).assert_non_singular())
        with pytest.raises(tf.errors.InvalidArgumentError, match="non-positive entries"):
            sess.run(LA.LinearOperatorDiag([1.0, -2.0]).assert_positive_definite())
        with pytest.raises(tf.errors.InvalidArgumentError, match="not equal to its adjoint"):
            sess.run(LA.LinearOperatorFullMatrix([[1.0, 2.0], [0.0, 1.0]]).assert_self_adjoint())
        with pytest.raises(tf.errors.InvalidArgumentError, match="Singular matrix"):
            sess.run(LA.LinearOperatorFullMatrix([[1.0, 2.0], [2.0, 4.0]]).assert_non_singular())


def test_structured_results_keep_their_structure():
    with tf.Graph().as_default():
        d = LA.LinearOperatorDiag([1.0, 4.0], is_positive_definite=True)
        assert isinstance(d.inverse(), LA.LinearOperatorDiag) and isinstance(d.cholesky(), LA.LinearOperatorDiag)
        assert isinstance(d.matmul(LA.LinearOperatorDiag([2.0, 3.0])), LA.LinearOperatorDiag)
        full = LA.LinearOperatorFullMatrix(_well(2, 2).astype(np.float32))
        assert isinstance(full.matmul(full), LA.LinearOperatorComposition)
        assert isinstance(full.adjoint(), LA.LinearOperatorAdjoint) and full.adjoint().adjoint() is full
        assert isinstance(full.inverse(), LA.LinearOperatorInversion)
        assert isinstance(LA.LinearOperatorKronecker([d, d]).inverse(), LA.LinearOperatorKronecker)
        ident = LA.LinearOperatorIdentity(2)
        assert ident.inverse() is ident and ident.adjoint() is ident
        assert isinstance(full.solve(full), LA.LinearOperatorComposition)
        with tf.Session() as sess:
            _close(sess.run(full.solve(full).to_dense()), np.eye(2), "solve of an operator")


def test_zeros_and_non_square_operators():
    with tf.Graph().as_default(), tf.Session() as sess:
        z = LA.LinearOperatorZeros(2, 3, batch_shape=[4], is_square=False, is_self_adjoint=False)
        assert z.shape.as_list() == [4, 2, 3] and z.is_square is False
        x = np.ones((3, 5), np.float32)
        got = sess.run([z.matmul(x), z.to_dense(), z.add_to_tensor(np.ones((2, 3), np.float32))])
        assert got[0].shape == (4, 2, 5) and not got[0].any() and got[1].shape == (4, 2, 3)
        _close(got[2], np.ones((4, 2, 3)), "zeros add_to_tensor")
        wide = RNG.randn(2, 3)
        op = LA.LinearOperatorFullMatrix(wide)
        assert op.is_square is False
        with pytest.raises(NotImplementedError, match="not be square"):
            op.determinant()
        _close(sess.run(op.matmul(np.ones((2, 1)), adjoint=True)), wide.T @ np.ones((2, 1)), "wide adjoint")


def test_tf_linalg_functions_dispatch_on_operators():
    m, x = _well(2, 2), RNG.randn(2, 2)
    with tf.Graph().as_default(), tf.Session() as sess:
        op = LA.LinearOperatorFullMatrix(m)
        got = sess.run([tf.matmul(op, x), LA.matmul(x, op), LA.matmul(op, x, adjoint_a=True),
                        LA.matmul(x, op, adjoint_b=True), LA.trace(op), LA.det(op), LA.solve(op, x),
                        LA.diag_part(op), LA.adjoint(op).to_dense(), LA.inv(op).to_dense()])
        want = [m @ x, x @ m, m.T @ x, x @ m.T, np.trace(m), np.linalg.det(m), np.linalg.solve(m, x), np.diag(m),
                m.T, np.linalg.inv(m)]
        for g, w in zip(got, want):
            _close(g, w, "dispatch")
        spd = LA.LinearOperatorFullMatrix(_spd(2, 2), is_self_adjoint=True, is_positive_definite=True)
        _close(sess.run(LA.logdet(spd)), np.linalg.slogdet(sess.run(spd.to_dense()))[1], "logdet")
        _close(sess.run(LA.cholesky(spd).to_dense()), np.linalg.cholesky(sess.run(spd.to_dense())), "cholesky")
        with pytest.raises(ValueError, match="self-adjoint positive definite"):
            LA.logdet(op)
        with pytest.raises(ValueError, match="Transposing not supported"):
            tf.matmul(op, x, transpose_a=True)
        _close(sess.run(tf.matmul(m, x)), m @ x, "tensors are not dispatched")


DYNAMIC = {
    "full": lambda m, d: LA.LinearOperatorFullMatrix(m),
    "diag": lambda m, d: LA.LinearOperatorDiag(d),
    "composition": lambda m, d: LA.LinearOperatorComposition(
        [LA.LinearOperatorFullMatrix(m), LA.LinearOperatorDiag(d)]),
    "scaled": lambda m, d: LA.LinearOperatorScaledIdentity(tf.placeholder_with_default(3, []), d[:, 0]),
    "householder": lambda m, d: LA.LinearOperatorHouseholder(d),
    "tridiag": lambda m, d: LA.LinearOperatorTridiag(m, diagonals_format="matrix"),
    "toeplitz": lambda m, d: LA.LinearOperatorToeplitz(d, d),
    "low_rank": lambda m, d: LA.LinearOperatorLowRankUpdate(
        LA.LinearOperatorDiag(d), tf.placeholder_with_default(np.ones((3, 1)), [None, None])),
    "kronecker": lambda m, d: LA.LinearOperatorKronecker([LA.LinearOperatorDiag(d), LA.LinearOperatorFullMatrix(m)]),
    "block_diag": lambda m, d: LA.LinearOperatorBlockDiag([LA.LinearOperatorDiag(d), LA.LinearOperatorFullMatrix(m)]),
}


@pytest.mark.parametrize("case", sorted(DYNAMIC))
def test_operators_of_unknown_static_shape_work_at_run_time(case):
    m_value = _well(2, 3, 3)
    with tf.Graph().as_default(), tf.Session() as sess:
        m, d = tf.placeholder(tf.float64, [None, None, None]), tf.placeholder(tf.float64, [None, None])
        op = DYNAMIC[case](m, d)
        feeds = {m: m_value, d: m_value[..., 0]}
        n = sess.run(op.domain_dimension_tensor(), feeds)
        x = RNG.randn(n, 2)
        shape, dense, y, solved = sess.run([op.shape_tensor(), op.to_dense(), op.matmul(x), op.solve(x)], feeds)
        assert list(shape) == list(dense.shape) and dense.shape[-1] == n
        _close(y, dense @ x, f"{case} matmul")
        _close(solved, np.linalg.solve(dense, np.broadcast_to(x, dense.shape[:-2] + x.shape)), f"{case} solve")


def test_the_algebra_works_in_a_fresh_process():
    """adjoint(), inverse(), cholesky() and @ return classes of modules nothing has imported yet in a
    new process (a KeyError before they were imported on first use)."""
    program = ("import numpy as np, tensorweave as tf\n"
               "m = np.array([[4.0, 1.0], [1.0, 3.0]])\n"
               "op = tf.linalg.LinearOperatorFullMatrix(m)\n"
               "spd = tf.linalg.LinearOperatorFullMatrix(m, is_self_adjoint=True, is_positive_definite=True)\n"
               "print(type(op.adjoint()).__name__, type(op.inverse()).__name__, type(spd.cholesky()).__name__,\n"
               "      type(op @ op).__name__)\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["LinearOperatorAdjoint", "LinearOperatorInversion", "LinearOperatorLowerTriangular",
                                   "LinearOperatorComposition"]
