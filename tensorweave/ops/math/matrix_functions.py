"""Math ops, functions of (batches of) square matrices: inverse (MatrixInverse), determinant
(MatrixDeterminant), sign and log of |det| (LogMatrixDeterminant), exponential
(MatrixExponential), square root (MatrixSquareRoot) and logarithm (MatrixLogarithm), plus the
shape helpers the other linear-algebra modules share. numpy does the arithmetic (scipy.linalg
the matrix exponential, square root and logarithm, imported when such a kernel is first built)."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.dispatch import add_dispatch_support
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import expand_dims, matrix_transpose, shape
from tensorweave.ops.array.fill import zeros_like
from tensorweave.ops.helpers import COMPLEX, invalid, make_op
from tensorweave.ops.math.binary import multiply
from tensorweave.ops.math.linalg import conj, matmul
from tensorweave.ops.registry import register


LINALG_TYPES = (dtypes.float32, dtypes.float64) + COMPLEX


# -- shape helpers shared by the linear-algebra modules ----------------------------------------
def matrix_shape(s: TensorShape, square: bool = False) -> TensorShape:
    """s checked to be a (batch of) matrix (square when asked), with the two sizes merged."""
    if s.ndims is None:
        return s
    if s.ndims < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {s.ndims}")
    if square:
        if not s[-1].is_compatible_with(s[-2]):
            raise ValueError(f"Dimensions must be equal, but are {s[-2]} and {s[-1]}")
        n = s[-1].merge_with(s[-2])
        return s[:-2].concatenate([n, n])
    return s


def batch_of(s: TensorShape) -> TensorShape:
    return unknown_shape() if s.ndims is None else s[:-2]


def check_square(node, x: np.ndarray, what: str = "Input") -> None:
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise invalid(node, f"{what} must be a (batch of) square matrices, got shape {list(x.shape)}")


@tf_export("linalg.adjoint")
@add_dispatch_support
def adjoint(matrix, name=None) -> Tensor:
    """tf.linalg.adjoint(matrix, name=None): the conjugate transpose of each innermost matrix."""
    with name_scope(name, "adjoint", [matrix]):
        return matrix_transpose(convert_to_tensor(matrix, name="matrix"), conjugate=True)


def _square_infer(op):
    x = op.inputs[0]
    return [(x.dtype, matrix_shape(x.shape, square=True))]


def _unary_matrix_op(op_type: str, x, name, attrs=None) -> Tensor:
    with name_scope(name, op_type, [x]) as scope:
        x = convert_to_tensor(x, name="input")
        return make_op(op_type, [x], dict(attrs or {}, T=x.dtype), name=scope).outputs[0]


# -- MatrixInverse ---------------------------------------------------------------------------------
@tf_export("linalg.inv", "matrix_inverse")
@add_dispatch_support
def matrix_inverse(input, adjoint=False, name=None) -> Tensor:
    """tf.linalg.inv(input, adjoint=False, name=None): the inverse of each innermost square
    matrix (of its adjoint when `adjoint`); a singular one is InvalidArgumentError."""
    return _unary_matrix_op("MatrixInverse", input, name, {"adjoint": bool(adjoint)})


def _inverse_kernel(node, ctx):
    adj = bool(node.attr.get("adjoint"))

    def run(x):
        x = np.asarray(x)
        check_square(node, x)
        if adj:
            x = np.conj(np.swapaxes(x, -1, -2))
        try:
            out = np.linalg.inv(x) if x.size else x.copy()
        except np.linalg.LinAlgError:
            raise invalid(node, "Input is not invertible.") from None
        return out.astype(x.dtype, copy=False)
    return run


def _inverse_grad(op, grad):
    # d inv(A) = -inv(A) dA inv(A); with `adjoint` the op inverts A^H, whose gradient is the adjoint.
    ainv = op.outputs[0]
    if op.get_attr("adjoint"):
        return [-matmul(ainv, matmul(grad, ainv, adjoint_a=True))]
    return [-matmul(ainv, matmul(grad, ainv, adjoint_b=True), adjoint_a=True)]


register("MatrixInverse", _square_infer, _inverse_kernel, grad=_inverse_grad, dtypes=LINALG_TYPES,
         dtype_param="input")


# -- MatrixDeterminant, LogMatrixDeterminant -------------------------------------------------------
@tf_export("linalg.det", "matrix_determinant")
@add_dispatch_support
def matrix_determinant(input, name=None) -> Tensor:
    """tf.linalg.det(input, name=None): the determinant of each innermost square matrix."""
    return _unary_matrix_op("MatrixDeterminant", input, name)


def _det_infer(op):
    x = op.inputs[0]
    return [(x.dtype, batch_of(matrix_shape(x.shape, square=True)))]


def _det_kernel(node, ctx):
    def run(x):
        x = np.asarray(x)
        check_square(node, x)
        out = np.asarray(np.linalg.det(x) if x.shape[-1] else np.ones(x.shape[:-2], x.dtype))
        return out.astype(x.dtype, copy=False)
    return run


def _batch_scalars(t: Tensor) -> Tensor:
    """t of shape [...] reshaped to [..., 1, 1] to scale each matrix of a batch."""
    return expand_dims(expand_dims(t, -1), -1)


def _det_grad(op, grad):
    # d det(A) / dA = det(A) inv(A)^H
    a_adj_inv = matrix_inverse(op.inputs[0], adjoint=True)
    return [multiply(_batch_scalars(multiply(grad, op.outputs[0])), a_adj_inv)]


register("MatrixDeterminant", _det_infer, _det_kernel, grad=_det_grad, dtypes=LINALG_TYPES, dtype_param="input")


@tf_export("linalg.slogdet")
def slogdet(input, name=None):
    """tf.linalg.slogdet(input, name=None) -> (sign, log_abs_determinant) of each innermost square
    matrix: det = sign * exp(log_abs_determinant), without overflow."""
    with name_scope(name, "LogMatrixDeterminant", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        op = make_op("LogMatrixDeterminant", [x], {"T": x.dtype}, name=scope)
        return op.outputs[0], op.outputs[1]


def _slogdet_infer(op):
    x = op.inputs[0]
    batch = batch_of(matrix_shape(x.shape, square=True))
    return [(x.dtype, batch), (x.dtype, batch)]


def _slogdet_kernel(node, ctx):
    def run(x):
        x = np.asarray(x)
        check_square(node, x)
        sign, logabs = np.linalg.slogdet(x)
        return np.asarray(sign).astype(x.dtype), np.asarray(logabs).astype(x.dtype)
    return run


def _slogdet_grad(op, grad_sign, grad_logabs):
    # d log|det A| / dA = inv(A)^H; the sign is piecewise constant.
    a_adj_inv = matrix_inverse(op.inputs[0], adjoint=True)
    return [multiply(_batch_scalars(conj(grad_logabs)), a_adj_inv)]


register("LogMatrixDeterminant", _slogdet_infer, _slogdet_kernel, grad=_slogdet_grad, dtypes=LINALG_TYPES,
         dtype_param="input")


# -- MatrixExponential, MatrixSquareRoot, MatrixLogarithm ------------------------------------------
def _scipy_matrix_kernel(fn_name: str, complex_only: bool = False):
    def factory(node, ctx):
        import scipy.linalg
        fn = getattr(scipy.linalg, fn_name)

        def run(x):
            x = np.asarray(x)
            check_square(node, x)
            if complex_only and x.dtype.kind != "c":
                raise invalid(node, "only complex inputs are supported")
            flat = x.reshape((-1,) + x.shape[-2:])
            out = np.empty_like(flat)
            for i, m in enumerate(flat):
                r = fn(m)
                r = r[0] if isinstance(r, tuple) else r
                out[i] = r if x.dtype.kind == "c" else np.real(r)
            return out.reshape(x.shape)
        return run
    return factory


@tf_export("linalg.expm")
def matrix_exponential(input, name=None) -> Tensor:
    """tf.linalg.expm(input, name=None): the matrix exponential of each innermost square matrix."""
    return _unary_matrix_op("MatrixExponential", input, name)


def _expm_grad(op, grad):
    # The Frechet derivative of expm at A^H applied to G is the top-right block of
    # expm([[A^H, G], [0, A^H]]) (the block-triangular identity of Mathias, 1996).
    a_h = matrix_transpose(op.inputs[0], conjugate=True)
    block = matrix_exponential(concat([concat([a_h, grad], -1), concat([zeros_like(a_h), a_h], -1)], -2))
    n = a_h.shape[-1].value if a_h.shape.ndims is not None else None
    if n is None:
        n = shape(a_h)[-1]
    return [block[..., :n, n:]]


register("MatrixExponential", _square_infer, _scipy_matrix_kernel("expm"), grad=_expm_grad, dtypes=LINALG_TYPES,
         dtype_param="input")


@tf_export("linalg.sqrtm", "matrix_square_root")
def matrix_square_root(input, name=None) -> Tensor:
    """tf.linalg.sqrtm(input, name=None): the principal square root of each innermost square
    matrix (not differentiable, as in TF)."""
    return _unary_matrix_op("MatrixSquareRoot", input, name)


register("MatrixSquareRoot", _square_infer, _scipy_matrix_kernel("sqrtm"), grad=None, dtypes=LINALG_TYPES,
         dtype_param="input")


@tf_export("linalg.logm")
def matrix_logarithm(input, name=None) -> Tensor:
    """tf.linalg.logm(input, name=None): the principal logarithm of each innermost square
    complex matrix (complex64/complex128 only, as in TF)."""
    return _unary_matrix_op("MatrixLogarithm", input, name)


register("MatrixLogarithm", _square_infer, _scipy_matrix_kernel("logm", complex_only=True), grad=None,
         dtypes=COMPLEX, dtype_param="input")
