"""tf.linalg.LinearOperator: the base of the operator family. A subclass gives its shape and
`_matmul`; every other method has a dense default here (through to_dense()) that subclasses
replace where their structure makes it cheaper. The hint flags (is_non_singular, is_self_adjoint,
is_positive_definite, is_square) are promises, checked against each other as TF checks them.

What an operator becomes under adjoint(), inverse(), cholesky() and operator @ operator is TF's
linear_operator_algebra: the generic answers (LinearOperatorAdjoint, LinearOperatorInversion, a
LinearOperatorLowerTriangular factor, LinearOperatorComposition) live in their own modules and
are imported from here on first use (`_default`), since they are themselves subclasses of this one."""
from __future__ import annotations

import contextlib
import functools
import importlib

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.dispatch import dispatch_for_types
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import Dimension, TensorShape, broadcast_shapes
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import expand_dims, shape, squeeze
from tensorweave.ops.array.diag import matrix_diag_part
from tensorweave.ops.array.fill import zeros, zeros_like
from tensorweave.ops.array.pad import broadcast_to
from tensorweave.ops.debugging.asserts import assert_equal, assert_less, assert_positive
from tensorweave.ops.math.binary import maximum
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.decompositions import cholesky, logdet, self_adjoint_eigvals, svd
from tensorweave.ops.math.linalg import eye, matmul, trace
from tensorweave.ops.math.matrix_functions import adjoint as adjoint_matrix, matrix_determinant, matrix_inverse, slogdet
from tensorweave.ops.math.reduction import reduce_max, reduce_min, reduce_sum
from tensorweave.ops.math.solvers import cholesky_solve, matrix_solve
from tensorweave.ops.math.unary import abs as abs_, exp, log

# what the base's adjoint(), inverse(), cholesky() and composition return: (module, class) of this
# package, imported on first use (they subclass LinearOperator, so this module cannot import them)
_DEFAULTS = {"adjoint": ("adjoint", "LinearOperatorAdjoint"), "inverse": ("inversion", "LinearOperatorInversion"),
             "cholesky_factor": ("lower_triangular", "LinearOperatorLowerTriangular"),
             "composition": ("composition", "LinearOperatorComposition")}


def _default(kind: str) -> type:
    module, name = _DEFAULTS[kind]
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


# -- helpers the family shares ---------------------------------------------------------------------
def batch_shape_of(*tensors) -> Tensor:
    """The broadcast batch shape (all but the last two dims) of `tensors`, as a 1-D int32 tensor."""
    probe = None
    for t in tensors:
        corner = zeros_like(t[..., :1, :1], dtype=dtypes.int32)
        probe = corner if probe is None else probe + corner
    return shape(probe)[:-2]


def operators_batch_shape(operators) -> Tensor:
    """The broadcast batch shape of `operators`, as a 1-D int32 tensor."""
    return batch_shape_of(*(zeros(concat([op.batch_shape_tensor(), [1, 1]], 0), dtype=op.dtype) for op in operators))


def broadcast_batch(*tensors) -> list:
    """TF's broadcast_matrix_batch_dims: the [..., M, N] `tensors` with their batch dims broadcast
    against each other (kept as they are where they already agree)."""
    tensors = [convert_to_tensor(t) for t in tensors]
    statics = [t.shape[:-2] for t in tensors]
    if all(s.is_fully_defined() for s in statics):
        target = broadcast_static_shapes(*statics)
        return [t if s == target else broadcast_to(t, target.as_list() + [shape(t)[-2], shape(t)[-1]])
                for t, s in zip(tensors, statics)]
    batch = batch_shape_of(*tensors)
    return [broadcast_to(t, concat([batch, shape(t)[-2:]], 0)) for t in tensors]


def broadcast_static_shapes(*shapes) -> TensorShape:
    """Broadcast of static batch shapes (unknown where any is)."""
    return functools.reduce(broadcast_shapes, shapes, TensorShape([]))


def assert_no_entries_with_modulus_zero(x, message: str):
    """An assertion op that no entry of `x` has modulus zero."""
    x = abs_(convert_to_tensor(x))
    return assert_less(cast(0, x.dtype), x, message=message)


def check_hints(is_non_singular, is_self_adjoint, is_positive_definite, is_square) -> tuple:
    """TF's hint rules: positive definite implies non-singular, which (as self-adjoint does)
    implies square; a contradicting False is a ValueError."""
    if is_positive_definite:
        if is_non_singular is False:
            raise ValueError("A positive definite matrix is always non-singular.")
        is_non_singular = True
    if is_non_singular:
        if is_square is False:
            raise ValueError("A non-singular matrix is always square.")
        is_square = True
    if is_self_adjoint:
        if is_square is False:
            raise ValueError("A self-adjoint matrix is always square.")
        is_square = True
    return is_non_singular, is_self_adjoint, is_positive_definite, is_square


def forced_hint(given, value: bool, message: str) -> bool:
    """A hint the operator's kind fixes to `value` (an identity is always non-singular): the
    given hint may be None or `value`, else ValueError(message)."""
    if given is not None and bool(given) != value:
        raise ValueError(message)
    return value


def inherited_hint(own, theirs, what: str):
    """A hint of an operator wrapping another: the wrapped one's, which a contradicting own hint
    may not break."""
    if theirs is not None and own is not None and bool(own) != bool(theirs):
        raise ValueError(f"An operator is {what} if and only if its wrapped operator is.")
    return theirs if own is None else own


def dim_value(d):
    return d.value if isinstance(d, Dimension) else d


@tf_export("linalg.LinearOperator")
class LinearOperator:
    """tf.linalg.LinearOperator(dtype, graph_parents=None, is_non_singular=None,
    is_self_adjoint=None, is_positive_definite=None, is_square=None, name=None): a [batch of]
    linear operator[s] acting like [..., M, N] matrices. Subclasses implement `_shape`,
    `_shape_tensor` and `_matmul`; the rest has dense defaults."""

    def __init__(self, dtype, graph_parents=None, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name=None):
        (self._is_non_singular, self._is_self_adjoint, self._is_positive_definite,
         self._is_square_hint) = check_hints(is_non_singular, is_self_adjoint, is_positive_definite, is_square)
        self._dtype = dtypes.as_dtype(dtype) if dtype is not None else None
        self._graph_parents = list(graph_parents or [])
        self._name = name or type(self).__name__

    # -- hints and identity ---------------------------------------------------------------------
    dtype = property(lambda self: self._dtype)
    name = property(lambda self: self._name)
    graph_parents = property(lambda self: list(self._graph_parents))
    is_non_singular = property(lambda self: self._is_non_singular)
    is_self_adjoint = property(lambda self: self._is_self_adjoint)
    is_positive_definite = property(lambda self: self._is_positive_definite)

    @property
    def is_square(self):
        """The is_square hint, or whether the static dims agree (None when unknown)."""
        rows, cols = dim_value(self.range_dimension), dim_value(self.domain_dimension)
        auto = None if rows is None or cols is None else rows == cols
        if self._is_square_hint is False and auto:
            raise ValueError("User set is_square hint to False, but the operator was square.")
        return auto if self._is_square_hint is None else self._is_square_hint

    @contextlib.contextmanager
    def _name_scope(self, name):
        with name_scope(self._name), name_scope(name) as scope:
            yield scope

    # -- shapes --------------------------------------------------------------------------------
    @property
    def shape(self) -> TensorShape:
        """The static TensorShape [B1, ..., Bb, M, N]."""
        return self._shape()

    def shape_tensor(self, name="shape_tensor") -> Tensor:
        with self._name_scope(name):
            if self.shape.is_fully_defined():
                return convert_to_tensor(self.shape.as_list(), dtype=dtypes.int32)
            return self._shape_tensor()

    @property
    def batch_shape(self) -> TensorShape:
        return self.shape[:-2]

    def batch_shape_tensor(self, name="batch_shape_tensor") -> Tensor:
        with self._name_scope(name):
            if self.batch_shape.is_fully_defined():
                return convert_to_tensor(self.batch_shape.as_list(), dtype=dtypes.int32)
            return self.shape_tensor()[:-2]

    @property
    def tensor_rank(self):
        return self.shape.ndims

    def tensor_rank_tensor(self, name="tensor_rank_tensor") -> Tensor:
        with self._name_scope(name):
            if self.tensor_rank is not None:
                return convert_to_tensor(self.tensor_rank, dtype=dtypes.int32)
            return shape(self.shape_tensor())[0]

    @property
    def domain_dimension(self) -> Dimension:
        return self.shape.dims[-1] if self.shape.ndims is not None else Dimension(None)

    def domain_dimension_tensor(self, name="domain_dimension_tensor") -> Tensor:
        with self._name_scope(name):
            d = dim_value(self.domain_dimension)
            return convert_to_tensor(d, dtype=dtypes.int32) if d is not None else self.shape_tensor()[-1]

    @property
    def range_dimension(self) -> Dimension:
        return self.shape.dims[-2] if self.shape.ndims is not None else Dimension(None)

    def range_dimension_tensor(self, name="range_dimension_tensor") -> Tensor:
        with self._name_scope(name):
            d = dim_value(self.range_dimension)
            return convert_to_tensor(d, dtype=dtypes.int32) if d is not None else self.shape_tensor()[-2]

    def _shape_tensor(self) -> Tensor:
        raise TypeError(f"{type(self).__name__} has a static shape only")

    # -- checks -----------------------------------------------------------------------------------
    def _check_input_dtype(self, arg) -> None:
        if arg.dtype.base_dtype != self.dtype:
            raise TypeError(f"Expected argument to have dtype {self.dtype.name}.  Found: {arg.dtype.name} in tensor "
                            f"{arg.name}")

    def _check_dims(self, x, adjoint: bool, arg_axis: int) -> None:
        own = self.range_dimension if adjoint else self.domain_dimension
        if x.shape.ndims is not None and x.shape.ndims >= -arg_axis:
            got = x.shape.dims[arg_axis]
            if not Dimension(dim_value(own)).is_compatible_with(got):
                raise ValueError(f"Dimensions {dim_value(own)} and {dim_value(got)} are not compatible: "
                                 f"{self.name} of shape {self.shape} cannot act on an argument of shape {x.shape}")

    def _can_use_cholesky(self) -> bool:
        return bool(self.is_self_adjoint and self.is_positive_definite)

    def _max_condition_number_to_be_non_singular(self):
        eps = np.finfo(self.dtype.real_dtype.as_numpy_dtype).eps
        size = cast(self.range_dimension_tensor(), self.dtype.real_dtype) * cast(
            self.domain_dimension_tensor(), self.dtype.real_dtype)
        return 1.0 / (maximum(cast(100.0, self.dtype.real_dtype), size) * eps)

    def assert_non_singular(self, name="assert_non_singular"):
        """An op that fails at run time unless the operator is non-singular."""
        with self._name_scope(name):
            return self._assert_non_singular()

    def _assert_non_singular(self):
        if self._can_use_cholesky():
            return self.assert_positive_definite()
        values = svd(self.to_dense(), compute_uv=False)
        cond = reduce_max(values, axis=-1) / reduce_min(values, axis=-1)
        return assert_less(cond, self._max_condition_number_to_be_non_singular(),
                           message="Singular matrix up to precision epsilon.")

    def assert_positive_definite(self, name="assert_positive_definite"):
        """An op that fails at run time unless the operator is positive definite (x^H A x > 0)."""
        with self._name_scope(name):
            return self._assert_positive_definite()

    def _assert_positive_definite(self):
        if self.is_self_adjoint:
            return assert_positive(abs_(matrix_diag_part(cholesky(self.to_dense()))),
                                   message="Matrix was not positive definite.")
        raise NotImplementedError("assert_positive_definite is not implemented.")

    def assert_self_adjoint(self, name="assert_self_adjoint"):
        """An op that fails at run time unless the operator equals its adjoint."""
        with self._name_scope(name):
            return self._assert_self_adjoint()

    def _assert_self_adjoint(self):
        dense = self.to_dense()
        return assert_equal(dense, adjoint_matrix(dense), message="Matrix was not equal to its adjoint.")

    # -- products and solves ------------------------------------------------------------------------
    def matmul(self, x, adjoint=False, adjoint_arg=False, name="matmul"):
        """A @ x (adjoint: A^H @ x; adjoint_arg: with x^H) for x of shape [..., N, R] whose batch
        dims broadcast with the operator's; an operator x gives their composition."""
        if isinstance(x, LinearOperator):
            left = self.adjoint() if adjoint else self
            right = x.adjoint() if adjoint_arg else x
            if not Dimension(dim_value(left.domain_dimension)).is_compatible_with(right.range_dimension):
                raise ValueError(f"Operators are incompatible. Expected `x` to have dimension "
                                 f"{dim_value(left.domain_dimension)} but got {dim_value(right.range_dimension)}.")
            with self._name_scope(name):
                return left._matmul_operator(right)
        with self._name_scope(name):
            x = convert_to_tensor(x, name="x")
            self._check_input_dtype(x)
            self._check_dims(x, adjoint, -1 if adjoint_arg else -2)
            return self._matmul(x, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _matmul_operator(self, other):
        return _default("composition")([self, other])

    def __matmul__(self, other):
        return self.matmul(other)

    def matvec(self, x, adjoint=False, name="matvec"):
        """A @ x for vectors x of shape [..., N]."""
        with self._name_scope(name):
            x = convert_to_tensor(x, name="x")
            self._check_input_dtype(x)
            self._check_dims(x, adjoint, -1)
            return squeeze(self._matmul(expand_dims(x, -1), adjoint=adjoint, adjoint_arg=False), axis=[-1])

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        raise TypeError(f"{type(self).__name__} does not define _matmul")

    def _check_solvable(self) -> None:
        if self.is_non_singular is False:
            raise NotImplementedError("Exact solve not implemented for an operator that is expected to be singular.")
        if self.is_square is False:
            raise NotImplementedError("Exact solve not implemented for an operator that is expected to not be square.")

    def solve(self, rhs, adjoint=False, adjoint_arg=False, name="solve"):
        """X with A @ X = rhs (adjoint: A^H @ X = rhs; adjoint_arg: rhs^H); an operator rhs gives
        the composition of this operator's inverse with it."""
        self._check_solvable()
        if isinstance(rhs, LinearOperator):
            left = self.adjoint() if adjoint else self
            right = rhs.adjoint() if adjoint_arg else rhs
            with self._name_scope(name):
                return _default("composition")([left.inverse(), right])
        with self._name_scope(name):
            rhs = convert_to_tensor(rhs, name="rhs")
            self._check_input_dtype(rhs)
            self._check_dims(rhs, not adjoint, -1 if adjoint_arg else -2)
            return self._solve(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = adjoint_matrix(rhs) if adjoint_arg else rhs
        dense, rhs = broadcast_batch(self.to_dense(), rhs)
        if self._can_use_cholesky():
            return cholesky_solve(cholesky(dense), rhs)
        return matrix_solve(dense, rhs, adjoint=adjoint)

    def solvevec(self, rhs, adjoint=False, name="solve"):
        """x with A @ x = rhs for vectors rhs of shape [..., M]."""
        self._check_solvable()
        with self._name_scope(name):
            rhs = convert_to_tensor(rhs, name="rhs")
            self._check_input_dtype(rhs)
            self._check_dims(rhs, not adjoint, -1)
            return squeeze(self._solve(expand_dims(rhs, -1), adjoint=adjoint), axis=[-1])

    # -- reductions ------------------------------------------------------------------------------------
    def _check_square(self, what: str) -> None:
        if self.is_square is False:
            raise NotImplementedError(f"{what} not implemented for an operator that is expected to not be square.")

    def determinant(self, name="det"):
        """det(A) for each batch member."""
        self._check_square("Determinant")
        with self._name_scope(name):
            return self._determinant()

    def _determinant(self):
        if self._can_use_cholesky():
            return exp(self.log_abs_determinant())
        return matrix_determinant(self.to_dense())

    def log_abs_determinant(self, name="log_abs_det"):
        """log |det(A)| for each batch member."""
        self._check_square("Determinant")
        with self._name_scope(name):
            return self._log_abs_determinant()

    def _log_abs_determinant(self):
        if self._can_use_cholesky():
            diag = matrix_diag_part(cholesky(self.to_dense()))
            return 2.0 * reduce_sum(log(abs_(diag)), axis=[-1])
        return slogdet(self.to_dense())[1]

    def trace(self, name="trace"):
        """The sum of the diagonal, for each batch member."""
        with self._name_scope(name):
            return self._trace()

    def _trace(self):
        return reduce_sum(self.diag_part(), axis=-1)

    def diag_part(self, name="diag_part"):
        """The diagonal [..., min(M, N)]."""
        with self._name_scope(name):
            return self._diag_part()

    def _diag_part(self):
        return matrix_diag_part(self.to_dense())

    def to_dense(self, name="to_dense"):
        """The [..., M, N] matrix the operator represents."""
        with self._name_scope(name):
            return self._to_dense()

    def _to_dense(self):
        n = dim_value(self.domain_dimension)
        n = self.domain_dimension_tensor() if n is None else n
        batch = self.batch_shape.as_list() if self.batch_shape.is_fully_defined() else self.batch_shape_tensor()
        return self.matmul(eye(n, batch_shape=batch, dtype=self.dtype))

    def add_to_tensor(self, x, name="add_to_tensor"):
        """A + x for a [..., M, N] tensor x."""
        with self._name_scope(name):
            x = convert_to_tensor(x, name="x")
            self._check_input_dtype(x)
            return self._add_to_tensor(x)

    def _add_to_tensor(self, x):
        return self.to_dense() + x

    def eigvals(self, name="eigvals"):
        """The eigenvalues (self-adjoint operators only)."""
        if not self.is_self_adjoint:
            raise NotImplementedError("Only self-adjoint matrices are supported.")
        with self._name_scope(name):
            return self._eigvals()

    def _eigvals(self):
        return self_adjoint_eigvals(self.to_dense())

    def cond(self, name="cond"):
        """The condition number: largest over smallest singular value."""
        with self._name_scope(name):
            return self._cond()

    def _cond(self):
        values = abs_(self.eigvals()) if self.is_self_adjoint else svd(self.to_dense(), compute_uv=False)
        return reduce_max(values, axis=-1) / reduce_min(values, axis=-1)

    # -- the algebra -----------------------------------------------------------------------------------
    def adjoint(self, name="adjoint"):
        """The adjoint operator A^H (the operator itself when self-adjoint)."""
        if self.is_self_adjoint is True:
            return self
        with self._name_scope(name):
            return self._adjoint()

    def _adjoint(self):
        return _default("adjoint")(self)

    H = property(lambda self: self.adjoint(), doc="The adjoint operator.")

    def inverse(self, name="inverse"):
        """The inverse operator A^-1."""
        if self.is_square is False:
            raise ValueError("Cannot take the Inverse: This operator represents a non square matrix.")
        if self.is_non_singular is False:
            raise ValueError("Cannot take the Inverse: This operator represents a singular matrix.")
        with self._name_scope(name):
            return self._inverse()

    def _inverse(self):
        return _default("inverse")(self)

    def cholesky(self, name="cholesky"):
        """The lower triangular L with A = L L^H (self-adjoint positive definite operators only)."""
        if not self._can_use_cholesky():
            raise ValueError("Cannot take the Cholesky decomposition: Not a positive definite self adjoint matrix.")
        with self._name_scope(name):
            return self._cholesky()

    def _cholesky(self):
        return _default("cholesky_factor")(cholesky(self.to_dense()), is_non_singular=True, is_self_adjoint=False,
                                            is_square=True)

    def __repr__(self) -> str:
        return f"<tf.linalg.{type(self).__name__} '{self.name}' shape={self.shape} dtype={self.dtype.name}>"


# -- TF's dispatch: the tf.linalg functions that accept an operator ---------------------------------
class WrappingOperator(LinearOperator):
    """An operator made of one other (the adjoint, the inverse), non-singular, self-adjoint,
    positive-definite and square exactly when that one is: its hints and asserts are the wrapped
    one's."""

    def __init__(self, operator, is_non_singular, is_self_adjoint, is_positive_definite, is_square, name):
        self._operator = operator
        super().__init__(operator.dtype, operator.graph_parents,
                         inherited_hint(is_non_singular, operator.is_non_singular, "non-singular"),
                         inherited_hint(is_self_adjoint, operator.is_self_adjoint, "self-adjoint"),
                         inherited_hint(is_positive_definite, operator.is_positive_definite, "positive-definite"),
                         inherited_hint(is_square, operator._is_square_hint, "square"), name)

    operator = property(lambda self: self._operator)

    def _assert_non_singular(self):
        return self._operator.assert_non_singular()

    def _assert_positive_definite(self):
        return self._operator.assert_positive_definite()

    def _assert_self_adjoint(self):
        return self._operator.assert_self_adjoint()


@dispatch_for_types(matmul, LinearOperator)
def _matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, a_is_sparse=False,
            b_is_sparse=False, name=None):
    if transpose_a or transpose_b:
        raise ValueError("Transposing not supported at this time.")
    if a_is_sparse or b_is_sparse:
        raise ValueError("Packed matrices not supported at this time.")
    if not isinstance(a, LinearOperator):   # a @ B = (B^H a^H)^H
        return adjoint_matrix(b.matmul(a, adjoint=not adjoint_b, adjoint_arg=not adjoint_a, name=name or "matmul"))
    return a.matmul(b, adjoint=adjoint_a, adjoint_arg=adjoint_b, name=name or "matmul")


@dispatch_for_types(adjoint_matrix, LinearOperator)
def _adjoint(matrix, name=None):
    return matrix.adjoint(name or "adjoint")


@dispatch_for_types(cholesky, LinearOperator)
def _cholesky(input, name=None):
    return input.cholesky(name or "cholesky")


@dispatch_for_types(matrix_diag_part, LinearOperator)
def _diag_part(input, name="diag_part", k=0, padding_value=0):
    return input.diag_part(name)


@dispatch_for_types(matrix_determinant, LinearOperator)
def _det(input, name=None):
    return input.determinant(name or "det")


@dispatch_for_types(matrix_inverse, LinearOperator)
def _inverse(input, adjoint=False, name=None):
    inverse = input.inverse(name or "inverse")
    return inverse.adjoint() if adjoint else inverse


@dispatch_for_types(logdet, LinearOperator)
def _logdet(matrix, name=None):
    if matrix.is_positive_definite and matrix.is_self_adjoint:
        return matrix.log_abs_determinant(name or "log_abs_det")
    raise ValueError("Expected matrix to be self-adjoint positive definite.")


@dispatch_for_types(matrix_solve, LinearOperator)
def _solve(matrix, rhs, adjoint=False, name=None):
    if not isinstance(matrix, LinearOperator):
        raise ValueError("Passing in `matrix` as a Tensor and `rhs` as a LinearOperator is not supported.")
    return matrix.solve(rhs, adjoint=adjoint, name=name or "solve")


@dispatch_for_types(trace, LinearOperator)
def _trace(x, name=None):
    return x.trace(name or "trace")
