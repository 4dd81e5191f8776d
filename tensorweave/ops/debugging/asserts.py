"""tf.assert_* checks (TF1 check_ops), each an Assert over a reduced comparison.

A check whose outcome is known at build time behaves as TF1: assert_equal of two constants
that differ raises InvalidArgumentError at once, and assert_rank of a known wrong rank raises
ValueError; a check known to pass still returns an op to depend on.
"""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import rank as rank_of, shape
from tensorweave.ops.grouping import group, no_op
from tensorweave.ops.helpers import make_op
from tensorweave.ops.debugging.printing import Assert
from tensorweave.ops.math.binary import add, equal, greater, greater_equal, less, less_equal, multiply, not_equal, \
    subtract
from tensorweave.ops.math.reduction import reduce_all, reduce_any
from tensorweave.ops.math.unary import abs as abs_
from tensorweave.ops.registry import register


def _static_string(x) -> str:
    if isinstance(x, str):
        return x
    v = constant_value(x) if hasattr(x, "op") else x
    if v is None:
        return str(x)
    v = np.asarray(v)
    if v.dtype == object and v.ndim == 0:
        s = v[()]
        return s.decode() if isinstance(s, bytes) else str(s)
    return str(v)


def _binary_assert(op_name: str, symbol: str, compare, np_compare, x, y, data, summarize, message, name,
                   static_check: bool):
    g = get_default_graph()
    with g.name_scope(name or op_name):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype) if not hasattr(y, "op") else y
        if data is None:
            data = ([message] if message is not None else []) + [
                f"Condition x {symbol} y did not hold element-wise:", f"x ({x.name}) = ", x,
                f"y ({y.name}) = ", y]
        if static_check:
            xs, ys = constant_value(x), constant_value(y)
            if xs is not None and ys is not None and not np.all(np_compare(xs, ys)):
                raise errors.InvalidArgumentError(None, None, "\n".join(_static_string(d) for d in data))
        condition = reduce_all(compare(x, y))
        return Assert(condition, data, summarize=summarize)


@tf_export("debugging.assert_equal", "assert_equal")
def assert_equal(x, y, data=None, summarize=None, message=None, name=None):
    """tf.assert_equal(x, y, data=None, summarize=None, message=None, name=None): an op that
    fails (InvalidArgumentError) unless x == y element-wise."""
    return _binary_assert("assert_equal", "==", equal, np.equal, x, y, data, summarize, message, name,
                          True)


@tf_export("debugging.assert_none_equal", "assert_none_equal")
def assert_none_equal(x, y, data=None, summarize=None, message=None, name=None):
    """tf.assert_none_equal(x, y, ...): fails unless x != y element-wise."""
    return _binary_assert("assert_none_equal", "!=", not_equal, np.not_equal, x, y, data, summarize,
                          message, name, False)


@tf_export("debugging.assert_less", "assert_less")
def assert_less(x, y, data=None, summarize=None, message=None, name=None):
    """tf.assert_less(x, y, ...): fails unless x < y element-wise."""
    return _binary_assert("assert_less", "<", less, np.less, x, y, data, summarize, message, name,
                          False)


@tf_export("debugging.assert_less_equal", "assert_less_equal")
def assert_less_equal(x, y, data=None, summarize=None, message=None, name=None):
    """tf.assert_less_equal(x, y, ...): fails unless x <= y element-wise."""
    return _binary_assert("assert_less_equal", "<=", less_equal, np.less_equal, x, y, data,
                          summarize, message, name, False)


@tf_export("debugging.assert_greater", "assert_greater")
def assert_greater(x, y, data=None, summarize=None, message=None, name=None):
    """tf.assert_greater(x, y, ...): fails unless x > y element-wise."""
    return _binary_assert("assert_greater", ">", greater, np.greater, x, y, data, summarize, message,
                          name, False)


@tf_export("debugging.assert_greater_equal", "assert_greater_equal")
def assert_greater_equal(x, y, data=None, summarize=None, message=None, name=None):
    """tf.assert_greater_equal(x, y, ...): fails unless x >= y element-wise."""
    return _binary_assert("assert_greater_equal", ">=", greater_equal, np.greater_equal, x, y, data,
                          summarize, message, name, False)


def _sign_assert(op_name, symbol, inner, zero_first: bool, x, data, summarize, message, name):
    g = get_default_graph()
    with g.name_scope(name or op_name):
        x = convert_to_tensor(x, name="x")
        if data is None:
            data = [message or "", f"Condition x {symbol} 0 did not hold element-wise:", f"x ({x.name}) = ", x]
        zero = convert_to_tensor(0, dtype=x.dtype)
        a, b = (zero, x) if zero_first else (x, zero)
        return inner(a, b, data=data, summarize=summarize)


@tf_export("debugging.assert_positive", "assert_positive")
def assert_positive(x, data=None, summarize=None, message=None, name=None):
    """tf.assert_positive(x, ...): fails unless x > 0 element-wise."""
    return _sign_assert("assert_positive", ">", assert_less, True, x, data, summarize, message, name)


@tf_export("debugging.assert_negative", "assert_negative")
def assert_negative(x, data=None, summarize=None, message=None, name=None):
    """tf.assert_negative(x, ...): fails unless x < 0 element-wise."""
    return _sign_assert("assert_negative", "<", assert_less, False, x, data, summarize, message, name)


@tf_export("debugging.assert_non_negative", "assert_non_negative")
def assert_non_negative(x, data=None, summarize=None, message=None, name=None):
    """tf.assert_non_negative(x, ...): fails unless x >= 0 element-wise."""
    return _sign_assert("assert_non_negative", ">=", assert_less_equal, True, x, data, summarize, message, name)


@tf_export("debugging.assert_non_positive", "assert_non_positive")
def assert_non_positive(x, data=None, summarize=None, message=None, name=None):
    """tf.assert_non_positive(x, ...): fails unless x <= 0 element-wise."""
    return _sign_assert("assert_non_positive", "<=", assert_less_equal, False, x, data, summarize, message, name)


@tf_export("debugging.assert_rank", "assert_rank")
def assert_rank(x, rank, data=None, summarize=None, message=None, name=None):
    """tf.assert_rank(x, rank, ...): ValueError at build time when x's rank is known and wrong;
    otherwise an op that fails at run time unless rank(x) == rank."""
    g = get_default_graph()
    with g.name_scope(name or "assert_rank"):
        x = convert_to_tensor(x, name="x")
        rank_static = constant_value(rank) if hasattr(rank, "op") else rank
        if rank_static is not None:
            rank_static = int(np.asarray(rank_static))
            if x.shape.ndims is not None:
                if x.shape.ndims != rank_static:
                    prefix = f"{message}.  " if message else ""
                    raise ValueError(f"{prefix}Tensor {x.name} must have rank {rank_static}.  Received rank "
                                     f"{x.shape.ndims}, shape {x.shape}")
                return no_op(name="static_checks_determined_all_ok")
        rank_t = convert_to_tensor(rank, name="rank")
        if data is None:
            data = [message or "", f"Tensor {x.name} must have rank", rank_t, "Received shape: ",
                    shape(x)]
        return Assert(equal(rank_of(x), rank_t), data, summarize=summarize)


# -- static-leaning checks ---------------------------------------------------------------------
@tf_export("debugging.assert_rank_at_least", "assert_rank_at_least")
def assert_rank_at_least(x, rank, data=None, summarize=None, message=None, name=None):
    """tf.assert_rank_at_least(x, rank, data=None, summarize=None, message=None, name=None):
    ValueError at build time when x's rank is known and too small; else a run-time check."""
    g = get_default_graph()
    with g.name_scope(name or "assert_rank_at_least"):
        x = convert_to_tensor(x, name="x")
        rank_static = constant_value(rank) if hasattr(rank, "op") else rank
        if rank_static is not None and x.shape.ndims is not None:
            rank_static = int(np.asarray(rank_static))
            if x.shape.ndims < rank_static:
                prefix = f"{message}.  " if message else ""
                raise ValueError(f"{prefix}Tensor {x.name} must have rank at least {rank_static}.  Received rank "
                                 f"{x.shape.ndims}, shape {x.shape}")
            return no_op("static_checks_determined_all_ok")
        rank_t = convert_to_tensor(rank, name="rank")
        if data is None:
            data = [message or "", f"Tensor {x.name} must have rank at least", rank_t, "Received shape: ",
                    shape(x)]
        return Assert(greater_equal(rank_of(x), rank_t), data, summarize=summarize)


@tf_export("debugging.assert_scalar", "assert_scalar", "contrib.framework.assert_scalar")
def assert_scalar(tensor, name=None, message=None):
    """tf.assert_scalar(tensor, name=None, message=None): `tensor`, after a build-time check that
    it is a scalar (ValueError otherwise)."""
    g = get_default_graph()
    with g.name_scope(name or "assert_scalar"):
        tensor = convert_to_tensor(tensor, name="tensor")
        nd = tensor.shape.ndims
        if nd is None or nd != 0:
            prefix = f"{message}  " if message else ""
            what = "unknown rank" if nd is None else f"rank {nd}"
            raise ValueError(f"{prefix}Expected scalar shape for {tensor.name}, saw shape: {tensor.shape} "
                             f"({what}).")
        return tensor


@tf_export("debugging.assert_type", "assert_type")
def assert_type(tensor, tf_type, message=None, name=None):
    """tf.assert_type(tensor, tf_type, message=None, name=None): TypeError at build time unless
    tensor's dtype is `tf_type`; returns a no_op."""
    g = get_default_graph()
    with g.name_scope(name or "assert_type"):
        tensor = convert_to_tensor(tensor, name="tensor")
        tf_type = dtypes.as_dtype(tf_type)
        if tensor.dtype != tf_type:
            prefix = f"{message} " if message else ""
            raise TypeError(f"{prefix}{tensor.name} must be of type {tf_type!r}; got {tensor.dtype!r}")
        return no_op("statically_determined_correct_type")


@tf_export("debugging.assert_integer", "assert_integer")
def assert_integer(x, message=None, name=None):
    """tf.assert_integer(x, message=None, name=None): TypeError at build time unless x is an
    integer tensor; returns a no_op."""
    g = get_default_graph()
    with g.name_scope(name or "assert_integer"):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_integer:
            prefix = f"{message} " if message else ""
            raise TypeError(f"{prefix}Expected Tensor {x.name} to be integer type; found dtype: {x.dtype!r}")
        return no_op("statically_determined_was_integer")


@tf_export("debugging.assert_near", "assert_near")
def assert_near(x, y, rtol=None, atol=None, data=None, summarize=None, message=None, name=None):
    """tf.assert_near(x, y, rtol=None, atol=None, data=None, summarize=None, message=None,
    name=None): an op that fails (InvalidArgumentError) unless |x - y| < atol + rtol * |y|
    element-wise (strictly, as TF); rtol and atol default to 10 * eps of x's float dtype."""
    with get_default_graph().name_scope(name or "assert_near"):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype)
        eps = np.finfo(x.dtype.real_dtype.as_numpy_dtype).eps
        rtol = 10 * eps if rtol is None else rtol
        atol = 10 * eps if atol is None else atol
        if data is None:
            data = [f"{message}.  " if message else "",
                    f"x and y not equal to tolerance rtol = {_static_string(rtol)}, atol = {_static_string(atol)}",
                    f"x ({x.name}) = ", x, f"y ({y.name}) = ", y]
        tol_dtype = x.dtype.real_dtype
        tol = add(convert_to_tensor(atol, name="atol", dtype=tol_dtype),
                  multiply(convert_to_tensor(rtol, name="rtol", dtype=tol_dtype), abs_(y)))
        return Assert(reduce_all(less(abs_(subtract(x, y)), tol)), data, summarize=summarize)


@tf_export("debugging.assert_proper_iterable", "assert_proper_iterable")
def assert_proper_iterable(values) -> None:
    """tf.assert_proper_iterable(values): TypeError unless `values` is an iterable other than a
    Tensor, SparseTensor, ndarray or string (all of which are iterable by accident)."""
    if isinstance(values, (Tensor, SparseTensor, np.ndarray, bytes, str)):
        raise TypeError(f'Expected argument "values" to be a "proper" iterable.  Found: {type(values)}')
    if not hasattr(values, "__iter__"):
        raise TypeError(f'Expected argument "values" to be iterable.  Found: {type(values)}')


@tf_export("debugging.assert_rank_in", "assert_rank_in")
def assert_rank_in(x, ranks, data=None, summarize=None, message=None, name=None):
    """tf.assert_rank_in(x, ranks, data=None, summarize=None, message=None, name=None):
    ValueError at build time when x's rank is known and not one of `ranks`; otherwise an op that
    fails at run time unless it is."""
    with get_default_graph().name_scope(name or "assert_rank_in"):
        x = convert_to_tensor(x, name="x")
        ranks = [convert_to_tensor(r, name="rank") for r in ranks]
        prefix = f"{message}.  " if message else ""
        known = [constant_value(r) for r in ranks]
        if x.shape.ndims is not None and all(r is not None for r in known):
            if x.shape.ndims not in [int(r) for r in known]:
                raise ValueError(f"{prefix}Tensor {x.name} must have rank in {tuple(int(r) for r in known)}.  "
                                 f"Received rank {x.shape.ndims}, shape {x.shape}")
            return no_op(name="static_checks_determined_all_ok")
        if data is None:
            data = [prefix, f"Tensor {x.name} must have rank in"] + ranks + ["Received shape: ", shape(x)]
        rank_t = rank_of(x)
        return Assert(reduce_any([equal(rank_t, r) for r in ranks]), data, summarize=summarize)


@tf_export("debugging.assert_same_float_dtype", "assert_same_float_dtype")
def assert_same_float_dtype(tensors=None, dtype=None):
    """tf.assert_same_float_dtype(tensors=None, dtype=None): the one float dtype of `tensors`
    (None entries skipped) and `dtype`; float32 when neither is given. ValueError when they
    differ or the dtype is not floating point."""
    expected = dtypes.as_dtype(dtype).base_dtype if dtype is not None else None
    first = None
    for item in tensors or []:
        if item is None:
            continue
        item_type = item.dtype.base_dtype
        if expected is None:
            expected, first = item_type, getattr(item, "name", str(item))
        elif item_type != expected:
            as_first = f" as {first}" if first else ""
            raise ValueError(f"{getattr(item, 'name', str(item))}, type={item_type.name}, must be of the same type "
                             f"({expected.name}){as_first}.")
    if expected is None:
        return dtypes.float32
    if not expected.is_floating:
        raise ValueError(f"Expected floating point type, got {expected.name}.")
    return expected


@tf_export("debugging.assert_shapes")
def assert_shapes(shapes, data=None, summarize=None, message=None, name=None):
    """tf.debugging.assert_shapes(shapes, data=None, summarize=None, message=None, name=None):
    checks a list of (tensor, shape) pairs (or a dict) whose shape entries are ints (exact
    sizes), strings (symbols that must name one size across all tensors), None / "." (any size),
    and a leading "*" or `...` (any number of outer dimensions). Build-time ValueError where
    the shapes are known; otherwise an op that fails at run time."""
    pairs = list(shapes.items()) if isinstance(shapes, dict) else list(shapes)
    prefix = f"{message}.  " if message else ""
    with get_default_graph().name_scope(name or "assert_shapes"):
        rank_checks, size_checks, symbols = [], [], {}
        for x, spec in pairs:
            x = convert_to_tensor(x)
            if not hasattr(spec, "__iter__"):
                raise ValueError(f"{prefix}Tensor {x.name}.  Specified shape must be an iterable.  An iterable has "
                                 f"the attribute `__iter__` or `__getitem__`.  Received specified shape: {spec}")
            spec = tuple(spec)
            if any(s in (Ellipsis, "*") for s in spec[1:]):
                raise ValueError(f"{prefix}Tensor {x.name} specified shape index {spec.index('*')}.  Symbol `...` "
                                 "or `*` for a variable number of unspecified dimensions is only allowed as the "
                                 "first entry")
            outer = bool(spec) and spec[0] in (Ellipsis, "*")
            sizes = spec[1:] if outer else spec
            if outer:
                if len(sizes) > 1:
                    rank_checks.append(assert_rank_at_least(x, len(sizes), data, summarize, message))
            elif len(sizes) <= 1:   # a scalar counts as a vector of one element
                rank_checks.append(assert_rank_in(x, [0, 1], data, summarize, message))
            else:
                rank_checks.append(assert_rank(x, len(sizes), data, summarize, message))
            static = x.shape.as_list() if x.shape.ndims is not None else None
            if static is not None and len(static) == 0:
                static = [1]
            for i, symbol in enumerate(sizes):
                if symbol is None or symbol == ".":
                    continue
                dim = i - len(sizes) if outer else i
                with get_default_graph().control_dependencies(rank_checks):   # read a size after its rank check
                    actual = static[dim] if static is not None and static[dim] is not None else shape(x)[dim]
                if isinstance(symbol, str) and symbol not in symbols:
                    symbols[symbol] = (actual, x, dim)
                    continue
                if isinstance(symbol, str):
                    want, by, at = symbols[symbol]
                    why = f"Specified by tensor {by.name} dimension {at}"
                else:
                    want, why = int(symbol), "Specified explicitly"
                if isinstance(actual, int) and isinstance(want, int):
                    if actual != want:
                        raise ValueError(f"{prefix}{why}.  Tensor {x.name} dimension {dim} must have size {want}.  "
                                         f"Received size {actual}, shape {x.shape}")
                    continue
                actual_t = convert_to_tensor(actual, dtype=dtypes.int32)
                want_t = convert_to_tensor(want, dtype=dtypes.int32)
                size_checks.append(Assert(equal(actual_t, want_t), data or [
                    prefix, why, f"Tensor {x.name} dimension", dim, "must have size", want_t, "Received shape: ",
                    shape(x)], summarize=summarize))
        with get_default_graph().control_dependencies(rank_checks):
            return group(*size_checks)


@tf_export("debugging.is_numeric_tensor", "is_numeric_tensor")
def is_numeric_tensor(tensor) -> bool:
    """tf.is_numeric_tensor(tensor): whether `tensor` is a Tensor of an integer, float or complex
    dtype."""
    return isinstance(tensor, Tensor) and (tensor.dtype.is_integer or tensor.dtype.is_floating
                                           or tensor.dtype.is_complex) and tensor.dtype != dtypes.bool


# -- ensure_shape -------------------------------------------------------------------------------------
def _ensure_shape_infer(op):
    want = TensorShape(op.get_attr("shape"))
    have = op.inputs[0].shape
    if not have.is_compatible_with(want):
        raise ValueError(f"Shapes {have} and {want} are incompatible")
    return [(op.inputs[0].dtype, have.merge_with(want))]


def _ensure_shape_kernel(node, ctx):
    want = node.attr["shape"]

    def run(x):
        have = np.shape(x)
        if want is not None and (len(have) != len(want) or any(w is not None and w != h for h, w in zip(have, want))):
            shown = "<unknown>" if want is None else "[" + ",".join("?" if w is None else str(w) for w in want) + "]"
            raise errors.InvalidArgumentError(
                node, node.name, f"Shape of tensor {node.input[0] if node.input else node.name} "
                                 f"[{','.join(str(d) for d in have)}] is not compatible with expected shape {shown}.")
        return x
    return run


register("EnsureShape", _ensure_shape_infer, _ensure_shape_kernel, grad=lambda op, grad: [grad])


@tf_export("ensure_shape", "debugging.ensure_shape")
def ensure_shape(x, shape, name=None):
    """tf.ensure_shape(x, shape, name=None): x, whose static shape becomes `shape` merged in;
    at run time InvalidArgumentError when x's shape is not compatible with `shape`."""
    x = convert_to_tensor(x, name="x")
    shape = TensorShape(shape) if not isinstance(shape, TensorShape) else shape
    return make_op("EnsureShape", [x], {"shape": shape}, name=name or "EnsureShape").outputs[0]
