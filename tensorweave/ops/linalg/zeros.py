"""tf.linalg.LinearOperatorZeros: a [batch of] all-zero M x N matrices, held as their shape."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import reshape, shape
from tensorweave.ops.array.fill import zeros
from tensorweave.ops.linalg.identity import checked_size
from tensorweave.ops.linalg.linear_operator import LinearOperator
from tensorweave.ops.math.binary import minimum
from tensorweave.ops.math.matrix_functions import adjoint as adjoint_matrix


@tf_export("linalg.LinearOperatorZeros")
class LinearOperatorZeros(LinearOperator):
    """tf.linalg.LinearOperatorZeros(num_rows, num_columns=None, batch_shape=None, dtype=None,
    is_non_singular=False, is_self_adjoint=True, is_positive_definite=False, is_square=True,
    assert_proper_shapes=False, name='LinearOperatorZeros'): the [batch of] zero matrices."""

    def __init__(self, num_rows, num_columns=None, batch_shape=None, dtype=None, is_non_singular=False,
                 is_self_adjoint=True, is_positive_definite=False, is_square=True, assert_proper_shapes=False,
                 name="LinearOperatorZeros"):
        if is_non_singular:
            raise ValueError("A Zeros operator is always singular.")
        if is_positive_definite:
            raise ValueError("A Zeros operator is always not positive definite.")
        self._num_rows = checked_size(num_rows, "num_rows", 0, assert_proper_shapes)
        self._num_columns = self._num_rows if num_columns is None else checked_size(
            num_columns, "num_columns", 0, assert_proper_shapes)
        rows, cols = constant_value(self._num_rows), constant_value(self._num_columns)
        if is_square and rows is not None and cols is not None and int(rows) != int(cols):
            raise ValueError(f"LinearOperatorZeros initialized as is_square=True, but got num_rows({int(rows)}) != "
                             f"num_columns({int(cols)})")
        self._batch_shape_arg = None if batch_shape is None else checked_size(
            batch_shape, "batch_shape", 1, assert_proper_shapes)
        known = None if self._batch_shape_arg is None else constant_value(self._batch_shape_arg)
        self._static = (TensorShape([]) if batch_shape is None else TensorShape(
            None if known is None else known.tolist())).concatenate(
            [None if rows is None else int(rows), None if cols is None else int(cols)])
        super().__init__(dtypes.float32 if dtype is None else dtype, [], is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square, name)

    def _shape(self):
        return self._static

    def _batch(self):
        return self._batch_shape_arg if self._batch_shape_arg is not None else convert_to_tensor([], dtypes.int32)

    def _shape_tensor(self):
        return concat([self._batch(), reshape(self._num_rows, [1]), reshape(self._num_columns, [1])], 0)

    def _zeros(self, last_two):
        return zeros(concat([self._batch(), last_two], 0), dtype=self.dtype)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = adjoint_matrix(x) if adjoint_arg else x
        rows = self._num_columns if adjoint else self._num_rows
        x = x + self._zeros([1, 1]) if self._batch_shape_arg is not None else x   # the batch shapes broadcast
        return zeros(concat([shape(x)[:-2], reshape(rows, [1]), shape(x)[-1:]], 0), dtype=self.dtype)

    def _determinant(self):
        return zeros(self._batch(), dtype=self.dtype)

    def _log_abs_determinant(self):
        return zeros(self._batch(), dtype=self.dtype) - float("inf")

    def _trace(self):
        return zeros(self._batch(), dtype=self.dtype)

    def _diag_part(self):
        return self._zeros(reshape(minimum(self._num_rows, self._num_columns), [1]))

    _eigvals = _diag_part

    def _to_dense(self):
        return self._zeros([self._num_rows, self._num_columns])

    def _add_to_tensor(self, x):
        return x + self._zeros([1, 1]) if self._batch_shape_arg is not None else x

    def _adjoint(self):
        return LinearOperatorZeros(self._num_columns, self._num_rows, self._batch_shape_arg, self.dtype,
                                   is_self_adjoint=self.is_self_adjoint, is_square=self.is_square)
