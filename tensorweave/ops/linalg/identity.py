"""tf.linalg.LinearOperatorIdentity and LinearOperatorScaledIdentity: [batches of] the N x N
identity, and of c * I for a [batch of] scalar c, held as N (and c) only: products return (scaled)
arguments, broadcast against the batch shape."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import expand_dims, reshape, shape
from tensorweave.ops.array.diag import matrix_diag_part, matrix_set_diag
from tensorweave.ops.array.fill import ones, zeros
from tensorweave.ops.debugging.asserts import assert_equal, assert_non_negative, assert_positive
from tensorweave.ops.grouping import no_op, with_dependencies
from tensorweave.ops.linalg.full_matrix import checked_tensor
from tensorweave.ops.linalg.linear_operator import (
    LinearOperator, abs_, assert_no_entries_with_modulus_zero, broadcast_static_shapes, forced_hint)
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.complex_parts import imag, real
from tensorweave.ops.math.linalg import conj, eye
from tensorweave.ops.math.matrix_functions import adjoint as adjoint_matrix
from tensorweave.ops.math.unary import log, sqrt


def checked_size(value, name: str, rank: int, assert_proper: bool):
    """An int32 `name` of `rank` dims (0: a size, 1: a shape), non-negative: checked now where its
    value is known, at run time when `assert_proper` asks."""
    t = convert_to_tensor(value, name=name)
    if not t.dtype.is_integer:
        raise TypeError(f"Argument {name} must be integer type.  Found: {t.dtype.name}")
    if t.shape.ndims is not None and t.shape.ndims != rank:
        raise ValueError(f"Argument {name} must be a {rank}-D Tensor.  Found: {t.shape}")
    known = constant_value(t)
    if known is not None and (np.asarray(known) < 0).any():
        raise ValueError(f"Argument {name} must be non-negative.  Found: {known}")
    t = cast(t, dtypes.int32)
    if assert_proper and known is None:
        t = with_dependencies([assert_non_negative(t, message=f"Argument {name} must be non-negative.")], t)
    return t


class _BaseIdentity(LinearOperator):
    """What both identities share: num_rows and a batch shape."""

    def _init_rows(self, num_rows, assert_proper_shapes):
        self._num_rows = checked_size(num_rows, "num_rows", 0, assert_proper_shapes)
        self._num_rows_static = constant_value(self._num_rows)
        self._assert_proper_shapes = assert_proper_shapes

    def _rows(self):
        return int(self._num_rows_static) if self._num_rows_static is not None else self._num_rows

    def _batch_and_rows(self) -> TensorShape:
        n = None if self._num_rows_static is None else int(self._num_rows_static)
        return self._static_batch().concatenate([n, n])

    def _shape(self):
        return self._batch_and_rows()

    def _shape_tensor(self):
        return concat([self.batch_shape_tensor(), reshape(self._num_rows, [1]), reshape(self._num_rows, [1])], 0)


@tf_export("linalg.LinearOperatorIdentity")
class LinearOperatorIdentity(_BaseIdentity):
    """tf.linalg.LinearOperatorIdentity(num_rows, batch_shape=None, dtype=None,
    is_non_singular=True, is_self_adjoint=True, is_positive_definite=True, is_square=True,
    assert_proper_shapes=False, name='LinearOperatorIdentity'): the [batch of] N x N identity."""

    def __init__(self, num_rows, batch_shape=None, dtype=None, is_non_singular=True, is_self_adjoint=True,
                 is_positive_definite=True, is_square=True, assert_proper_shapes=False,
                 name="LinearOperatorIdentity"):
        for hint, what in ((is_non_singular, "non-singular"), (is_self_adjoint, "self-adjoint"),
                           (is_positive_definite, "positive definite"), (is_square, "square")):
            forced_hint(hint, True, f"An identity operator is always {what}.")
        self._init_rows(num_rows, assert_proper_shapes)
        self._batch_shape_arg = None if batch_shape is None else checked_size(
            batch_shape, "batch_shape", 1, assert_proper_shapes)
        self._batch_static = TensorShape([]) if batch_shape is None else TensorShape(
            None if constant_value(self._batch_shape_arg) is None else constant_value(self._batch_shape_arg).tolist())
        super().__init__(dtypes.float32 if dtype is None else dtype, [], True, True, True, True, name)

    def _static_batch(self):
        return self._batch_static

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        with self._name_scope(name):
            return self._batch_shape_arg if self._batch_shape_arg is not None else convert_to_tensor(
                [], dtype=dtypes.int32)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = adjoint_matrix(x) if adjoint_arg else x
        if self._batch_shape_arg is None or x.shape[:-2] == broadcast_static_shapes(x.shape[:-2], self._batch_static):
            return x
        return x + zeros(concat([self._batch_shape_arg, [1, 1]], 0), dtype=x.dtype)   # x, broadcast to the batch

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._matmul(rhs, adjoint_arg=adjoint_arg)

    def _determinant(self):
        return ones(self.batch_shape_tensor(), dtype=self.dtype)

    def _log_abs_determinant(self):
        return zeros(self.batch_shape_tensor(), dtype=self.dtype)

    def _trace(self):
        return ones(self.batch_shape_tensor(), dtype=self.dtype) * cast(self._num_rows, self.dtype)

    def _diag_part(self):
        return ones(concat([self.batch_shape_tensor(), reshape(self._num_rows, [1])], 0), dtype=self.dtype)

    def _eigvals(self):
        return self._diag_part()

    def _cond(self):
        return ones(self.batch_shape_tensor(), dtype=self.dtype)

    def _to_dense(self):
        batch = self._batch_static.as_list() if self._batch_static.is_fully_defined() else self.batch_shape_tensor()
        return eye(self._rows(), batch_shape=batch or None, dtype=self.dtype)

    def _add_to_tensor(self, x):
        return matrix_set_diag(x, matrix_diag_part(x) + 1)

    def _assert_non_singular(self):
        return no_op("assert_non_singular")

    _assert_positive_definite = _assert_self_adjoint = _assert_non_singular

    def _adjoint(self):
        return self

    _inverse = _cholesky = _adjoint

    def _matmul_operator(self, other):
        return other if self._batch_shape_arg is None else super()._matmul_operator(other)


@tf_export("linalg.LinearOperatorScaledIdentity")
class LinearOperatorScaledIdentity(_BaseIdentity):
    """tf.linalg.LinearOperatorScaledIdentity(num_rows, multiplier, is_non_singular=None,
    is_self_adjoint=None, is_positive_definite=None, is_square=True, assert_proper_shapes=False,
    name='LinearOperatorScaledIdentity'): multiplier * I, the multiplier's shape the batch shape."""

    def __init__(self, num_rows, multiplier, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=True, assert_proper_shapes=False,
                 name="LinearOperatorScaledIdentity"):
        self._multiplier = checked_tensor(multiplier, "multiplier")
        if not self._multiplier.dtype.is_complex:
            is_self_adjoint = forced_hint(is_self_adjoint, True, "A real diagonal operator is always self adjoint.")
        if not is_square:
            raise ValueError("A ScaledIdentity operator is always square.")
        self._init_rows(num_rows, assert_proper_shapes)
        super().__init__(self._multiplier.dtype, [self._multiplier], is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name)

    multiplier = property(lambda self: self._multiplier)

    def _static_batch(self):
        return self._multiplier.shape

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        with self._name_scope(name):
            return shape(self._multiplier)

    def _scale(self, adjoint: bool):
        return conj(self._multiplier) if adjoint else self._multiplier

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = adjoint_matrix(x) if adjoint_arg else x
        return x * expand_dims(expand_dims(self._scale(adjoint), -1), -1)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = adjoint_matrix(rhs) if adjoint_arg else rhs
        return rhs / expand_dims(expand_dims(self._scale(adjoint), -1), -1)

    def _n(self):
        return cast(self._num_rows, self.dtype)

    def _determinant(self):
        return self._multiplier ** self._n()

    def _log_abs_determinant(self):
        return cast(self._num_rows, self.dtype.real_dtype) * log(abs_(self._multiplier))

    def _trace(self):
        return self._n() * self._multiplier

    def _diag_part(self):
        return expand_dims(self._multiplier, -1) * ones(reshape(self._num_rows, [1]), dtype=self.dtype)

    _eigvals = _diag_part

    def _cond(self):
        return ones(shape(self._multiplier), dtype=self.dtype.real_dtype)

    def _to_dense(self):
        return expand_dims(expand_dims(self._multiplier, -1), -1) * eye(self._rows(), dtype=self.dtype)

    def _add_to_tensor(self, x):
        return matrix_set_diag(x, matrix_diag_part(x) + expand_dims(self._multiplier, -1))

    def _assert_non_singular(self):
        return assert_no_entries_with_modulus_zero(self._multiplier, "LinearOperator was singular")

    def _assert_positive_definite(self):
        return assert_positive(real(self._multiplier), message="LinearOperator was not positive definite.")

    def _assert_self_adjoint(self):
        if not self.dtype.is_complex:
            return no_op("assert_self_adjoint")
        return assert_equal(imag(self._multiplier), 0.0, message="LinearOperator was not self-adjoint")

    def _with(self, multiplier, **hints):
        return LinearOperatorScaledIdentity(self._num_rows, multiplier, **hints)

    def _adjoint(self):
        return self._with(conj(self._multiplier), is_non_singular=self.is_non_singular,
                          is_self_adjoint=self.is_self_adjoint, is_positive_definite=self.is_positive_definite)

    def _inverse(self):
        return self._with(1.0 / self._multiplier, is_non_singular=self.is_non_singular,
                          is_self_adjoint=self.is_self_adjoint, is_positive_definite=self.is_positive_definite)

    def _cholesky(self):
        return self._with(sqrt(self._multiplier), is_non_singular=True, is_self_adjoint=True,
                          is_positive_definite=True)
