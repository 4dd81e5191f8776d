"""Math ops, reduction family: reduce_sum/mean/max/min/prod/any/all/logsumexp, the variance,
standard deviation and euclidean norm, argmax/argmin, cumsum/cumprod/cumulative_logsumexp, count_nonzero and
bincount. (Segment reductions are in segment.py.)"""
from __future__ import annotations

import math

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import rank, reshape, shape, stop_gradient
from tensorweave.ops.array.fill import ones_like, zeros_like
from tensorweave.ops.array.pad import broadcast_to
from tensorweave.ops.array.sort import where, where_v2
from tensorweave.ops.helpers import (BOOL, FLOATS, NUMERIC, REAL, TFNodes, array_module, check_dtype,
                                    check_output_size, invalid, make_op, same_as_input, static_int)
from tensorweave.ops.math.binary import (add, equal, floordiv, greater, greater_equal, less, maximum, multiply,
                                         not_equal, realdiv, subtract)
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.math.unary import abs, exp, is_finite, log, sqrt
from tensorweave.ops.registry import register, register_gpu

# reduce_variance, reduce_std and reduce_euclidean_norm are tf.math names only.


# -- shared axis handling ----------------------------------------------------------------------
def resolve_keepdims(keepdims, keep_dims) -> bool:
    if keepdims is not None and keep_dims is not None and bool(keepdims) != bool(keep_dims):
        raise ValueError("The `keep_dims` argument is deprecated; use only `keepdims`.")
    value = keepdims if keepdims is not None else keep_dims
    return bool(value) if value is not None else False


def _axis(axis, reduction_indices):
    if axis is not None and reduction_indices is not None:
        raise ValueError("Cannot specify both 'axis' and 'reduction_indices'.")
    return axis if axis is not None else reduction_indices


def _reduction_dims(x: Tensor, axis) -> Tensor:
    """The axes tensor of a reduction (TF's _ReductionDims): all axes when axis is None."""
    if axis is not None:
        if isinstance(axis, Tensor):
            return axis
        if not (isinstance(axis, np.ndarray) and axis.dtype.kind == "i"):
            axis = np.asarray(axis, dtype=np.int32)
        return convert_to_tensor(axis, name="Const")
    if x.shape.ndims is not None:
        return convert_to_tensor(np.arange(x.shape.ndims, dtype=np.int32), name="Const")
    return range_(0, rank(x))


def _norm_axes(axes, ndim: int, node=None) -> tuple:
    out = []
    for a in (axes.reshape(-1) if type(axes) is np.ndarray else np.reshape(np.asarray(axes), -1)).tolist():
        if not -ndim <= a < max(ndim, 1) or (ndim == 0 and a not in (0, -1)):
            msg = f"Invalid reduction dimension ({a} for input with {ndim} dimension(s)"
            if node is None:
                raise ValueError(msg)
            raise invalid(node, msg)
        a = a % ndim if ndim else 0
        if a in out:
            msg = "Invalid reduction arguments: Axes contains duplicate dimension: " + str(a)
            if node is None:
                raise ValueError(msg)
            raise invalid(node, msg)
        out.append(a)
    return tuple(out) if ndim else ()


def _reduction_infer(out_dtype=None):
    def infer(op):
        x, axes_t = op.inputs
        dt = out_dtype or x.dtype
        keep = op.get_attr("keep_dims")
        if axes_t.dtype not in (dtypes.int32, dtypes.int64):
            raise ValueError(f"reduction_indices must be int32 or int64, got {axes_t.dtype.name}")
        axes = constant_value(axes_t)
        nd = x.shape.ndims
        if nd is None:
            return [(dt, unknown_shape())]
        if axes is None:
            # TF's ReductionShape: unknown axes give an unknown rank unless keep_dims.
            return [(dt, unknown_shape(nd) if keep else unknown_shape())]
        red = _norm_axes(axes, nd)
        dims = x.shape.as_tuple_or_none()
        out = [1 if i in red else d for i, d in enumerate(dims)] if keep else \
            [d for i, d in enumerate(dims) if i not in red]
        return [(dt, TensorShape(out))]
    return infer


def _reducer(np_fn, int_mean: bool = False):
    """Kernel factory for a reduction: normalises axes (host memory) at run time, keeps TF's
    dtype; `np_fn(x, axes, keepdims)` computes with x's array module."""
    def factory(node, ctx):
        keep = bool(node.attr.get("keep_dims", False))

        def run(x, axes):
            xp = array_module(x)
            x = xp.asarray(x)
            red = _norm_axes(axes, x.ndim, node)
            # (no axes: the input itself, as TF forwards it; numpy's sum would add -0.0 to +0.0)
            out = xp.asarray(np_fn(x, red, keep)) if len(red) else x.copy()
            if out.dtype != x.dtype and x.dtype != object:
                out = out.astype(x.dtype)
            return out[()] if out.ndim == 0 else out
        return run
    return factory


# On numpy arrays the ufuncs' reduce, which np.sum, np.prod and np.mean call after several
# microseconds of Python (a loss's mean and its gradient's shape products are many of a small
# step's ops); CuPy's arrays take CuPy's functions through numpy's.
def _sum_np(x, axes, keep):
    acc = np.float32 if x.dtype == np.float16 else x.dtype
    return (np.add.reduce if type(x) is np.ndarray else np.sum)(x, axis=axes, keepdims=keep, dtype=acc)


def _prod_np(x, axes, keep):
    return (np.multiply.reduce if type(x) is np.ndarray else np.prod)(x, axis=axes, keepdims=keep, dtype=x.dtype)


def _mean_np(x, axes, keep):
    n = math.prod(x.shape[a] for a in axes)
    if x.dtype.kind in "iu":   # (summed in 64 bits: TF's mean of 1,000 int8 127s is 127, not a wrapped sum's)
        s = np.sum(x, axis=axes, keepdims=keep, dtype=np.uint64 if x.dtype.kind == "u" else np.int64)
        if n == 0:
            return np.zeros_like(s).astype(x.dtype)
        q = np.abs(s) // n   # C++ integer division truncates toward zero
        return np.where(s < 0, -q, q).astype(x.dtype)
    acc = np.float32 if x.dtype == np.float16 else x.dtype
    if n == 0:  # TF's 0/0; numpy would also warn "Mean of empty slice"
        return _sum_np(x, axes, keep) * np.nan
    if type(x) is not np.ndarray:
        return np.mean(x, axis=axes, keepdims=keep, dtype=acc)
    # np.mean's own steps: the sum, divided by the count as a numpy intp (in place in an array)
    total, count = _sum_np(x, axes, keep), np.intp(n)
    if type(total) is np.ndarray:
        return np.true_divide(total, count, out=total, casting="unsafe")
    return total.dtype.type(total / count)


def _extreme_np(fn, fill):
    def run(x, axes, keep):
        if x.size == 0:   # TF's identity of the reduction (lowest or highest value) fills the output
            shape = [1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes]
            return array_module(x).full(shape, fill(x.dtype), x.dtype)
        return fn(x, axis=axes, keepdims=keep)
    return run


def _lowest(dt):
    return -np.inf if dt.kind == "f" else np.iinfo(dt).min


def _highest(dt):
    return np.inf if dt.kind == "f" else np.iinfo(dt).max


def _reduce(op_type: str, x, axis, keepdims, name) -> Tensor:
    x = convert_to_tensor(x, name="input_tensor")
    axes = _reduction_dims(x, axis)
    with name_scope(name, op_type, [x, axes]) as scope:
        return make_op(op_type, [x, axes], {"keep_dims": keepdims, "Tidx": axes.dtype}, name=scope).outputs[0]


def reduced_shape(input_shape: Tensor, axes: Tensor) -> Tensor:
    """The shape of a reduction's output with kept dims (TF's math_ops.reduced_shape)."""
    return make_op("ReducedShape", [input_shape, axes], name="reduced_shape").outputs[0]


def _reduced_shape_kernel(node, ctx):
    def run(shape, axes):
        shape = np.array(shape, copy=True)
        for a in np.reshape(axes, -1).tolist():
            shape[a % len(shape)] = 1
        return shape
    return run


def _tf_axes(b: TFNodes, rank: str) -> str:
    """TF's form of a reduction's axes (the op's input 1): flat, int32, each mod the rank."""
    int32, axes = dtypes.int32, b.input(1)
    if b.op.inputs[1].dtype != int32:
        axes = b.node("axes", "Cast", [axes], SrcT=b.op.inputs[1].dtype, DstT=int32)
    axes = b.node("flat_axes", "Reshape", [axes, b.const("flat", [-1], int32)], T=int32, Tshape=int32)
    return b.node("wrapped_axes", "FloorMod", [b.node("shifted_axes", "AddV2", [axes, rank], T=int32), rank], T=int32)


def _reduced_shape_tf(op) -> list:
    """TF's reduced_shape: DynamicStitch of range(rank) and the axes over the shape and ones."""
    b, int32, dtype = TFNodes(op), dtypes.int32, op.inputs[0].dtype
    rank = b.node("rank", "Size", [b.input(0)], T=dtype, out_type=int32)
    axes = _tf_axes(b, rank)
    positions = b.node("positions", "Range", [b.const("zero", 0, int32), rank, b.const("one", 1, int32)], Tidx=int32)
    axes_shape = b.node("axes_shape", "Shape", [axes], T=int32, out_type=int32)
    ones = b.node("ones", "Fill", [axes_shape, b.const("ones_value", 1, dtype)], T=dtype, index_type=int32)
    b.node(None, "DynamicStitch", [positions, axes, b.input(0), ones], N=2, T=dtype)
    return b.nodes


register("ReducedShape", same_as_input(), _reduced_shape_kernel, grad=None, tf_lowering=_reduced_shape_tf)
register_gpu("ReducedShape", host_inputs=(0, 1), host_outputs=(0,))   # (shapes: TF's is host memory throughout)


def _kept_dims_grad(op, grad):
    """grad reshaped to the kept-dims output shape, and the input's runtime shape."""
    input_shape = shape(op.inputs[0])
    return reshape(grad, reduced_shape(input_shape, op.inputs[1])), input_shape


def _sum_grad(op, grad):
    grad, input_shape = _kept_dims_grad(op, grad)
    return [broadcast_to(grad, input_shape), None]


def _mean_grad(op, grad):
    sum_grad = _sum_grad(op, grad)[0]
    x, y = op.inputs[0], op.outputs[0]
    n_in, n_out = x.shape.num_elements(), y.shape.num_elements()
    if n_in is not None and n_out is not None:
        factor = cast(n_in // max(n_out, 1), sum_grad.dtype)
    else:
        factor = floordiv(reduce_prod(shape(x)), maximum(reduce_prod(shape(y)), 1))
        factor = cast(factor, sum_grad.dtype)
    return [realdiv(sum_grad, factor), None]


def _min_max_grad(op, grad):
    # TF splits the gradient equally among tied extreme values.
    x, axes = op.inputs
    input_shape = shape(x)
    kept = reduced_shape(input_shape, axes)
    y = reshape(op.outputs[0], kept)
    grad = reshape(grad, kept)
    indicators = cast(equal(y, x), grad.dtype)
    num_selected = reshape(reduce_sum(indicators, axes), kept)
    return [multiply(realdiv(indicators, num_selected), grad), None]


def _prod_grad(op, grad):
    grad, input_shape = _kept_dims_grad(op, grad)
    grad = broadcast_to(grad, input_shape)
    others = make_op("ProdOfOthers", [op.inputs[0], op.inputs[1]], name="prod_of_others").outputs[0]
    return [multiply(grad, others), None]


def _prod_of_others_kernel(node, ctx):
    # For each element, the product of the other elements of its reduction group, computed with
    # exclusive cumulative products from both ends (TF's formula: exact when some inputs are 0).
    def run(x, axes):
        x = np.asarray(x)
        red = _norm_axes(axes, x.ndim, node)
        other = [i for i in range(x.ndim) if i not in red]
        perm = list(red) + other
        xt = np.transpose(x, perm)
        n_red = int(np.prod([x.shape[i] for i in red])) if red else 1
        flat = xt.reshape(n_red, -1)
        ones = np.ones((1, flat.shape[1]), dtype=x.dtype)
        left = np.cumprod(np.concatenate([ones, flat[:-1]], axis=0), axis=0, dtype=x.dtype)
        right = np.cumprod(np.concatenate([ones, flat[::-1][:-1]], axis=0), axis=0, dtype=x.dtype)[::-1]
        y = (left * right).reshape(xt.shape)
        return np.transpose(y, np.argsort(perm))
    return run


def _prod_of_others_tf(op) -> list:
    """TF's _ProdGrad: the reduced axes moved first and flattened, exclusive cumulative products
    from both ends multiplied, moved back."""
    b, int32, dtype = TFNodes(op), dtypes.int32, op.inputs[0].dtype
    rank = b.node("rank", "Rank", [b.input(0)], T=dtype)
    reduced = _tf_axes(b, rank)
    zero = b.const("zero", 0, int32)
    positions = b.node("positions", "Range", [zero, rank, b.const("one", 1, int32)], Tidx=int32)
    other = b.node("other_axes", "ListDiff", [positions, reduced], T=int32, out_idx=int32)
    perm = b.node("perm", "ConcatV2", [reduced, other, zero], N=2, T=int32, Tidx=int32)
    shape = b.node("shape", "Shape", [b.input(0)], T=dtype, out_type=int32)
    sizes = [b.node(f"{part}_size", "Prod", [b.node(f"{part}_dims", "GatherV2", [shape, axes, zero], Tparams=int32,
                                                    Tindices=int32, Taxis=int32), zero], T=int32, Tidx=int32)
             for part, axes in (("reduced", reduced), ("other", other))]
    permuted = b.node("permuted", "Transpose", [b.input(0), perm], T=dtype, Tperm=int32)
    matrix = b.node("matrix", "Reshape", [permuted, b.node("matrix_shape", "Pack", sizes, N=2, T=int32, axis=0)],
                    T=dtype, Tshape=int32)
    left, right = (b.node(f"{side}_products", "Cumprod", [matrix, zero], T=dtype, Tidx=int32, exclusive=True,
                          reverse=side == "right") for side in ("left", "right"))
    products = b.node("products", "Mul", [left, right], T=dtype)
    products = b.node("permuted_products", "Reshape",
                      [products, b.node("permuted_shape", "Shape", [permuted], T=dtype, out_type=int32)],
                      T=dtype, Tshape=int32)
    b.node(None, "Transpose", [products, b.node("inverse_perm", "InvertPermutation", [perm], T=int32)], T=dtype,
           Tperm=int32)
    return b.nodes


register("ProdOfOthers", same_as_input(), _prod_of_others_kernel, grad=None, tf_lowering=_prod_of_others_tf)

register("Sum", _reduction_infer(), _reducer(_sum_np), grad=_sum_grad, dtypes=NUMERIC, dtype_param="input")
register_gpu("Sum", host_inputs=(1,))
register("Mean", _reduction_infer(), _reducer(_mean_np), grad=_mean_grad, dtypes=NUMERIC, dtype_param="input")
register_gpu("Mean", host_inputs=(1,))
register("Prod", _reduction_infer(), _reducer(_prod_np), grad=_prod_grad, dtypes=NUMERIC, dtype_param="input")
register_gpu("Prod", host_inputs=(1,))
register("Max", _reduction_infer(), _reducer(_extreme_np(np.max, _lowest)), grad=_min_max_grad, dtypes=REAL,
         dtype_param="input")
register_gpu("Max", host_inputs=(1,))
register("Min", _reduction_infer(), _reducer(_extreme_np(np.min, _highest)), grad=_min_max_grad, dtypes=REAL,
         dtype_param="input")
register_gpu("Min", host_inputs=(1,))
register("Any", _reduction_infer(dtypes.bool), _reducer(lambda x, a, k: np.any(x, axis=a, keepdims=k)),
         grad=None, dtypes=BOOL, dtype_param="input")
register_gpu("Any", host_inputs=(1,))
register("All", _reduction_infer(dtypes.bool), _reducer(lambda x, a, k: np.all(x, axis=a, keepdims=k)),
         grad=None, dtypes=BOOL, dtype_param="input")
register_gpu("All", host_inputs=(1,))


def _reduction_fn(op_type: str, doc: str):
    def fn(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
        return _reduce(op_type, input_tensor, _axis(axis, reduction_indices), resolve_keepdims(keepdims, keep_dims),
                       name)
    fn.__doc__ = doc
    return fn


_SIG = "(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None)"
reduce_sum = _reduction_fn("Sum", f"tf.reduce_sum{_SIG}: sum over `axis` (all axes if None).")
tf_export("math.reduce_sum", "reduce_sum")(reduce_sum)
reduce_mean = _reduction_fn("Mean", f"tf.reduce_mean{_SIG}: mean over `axis`; integer inputs give a truncated "
                                    "integer mean.")
tf_export("math.reduce_mean", "reduce_mean")(reduce_mean)
reduce_prod = _reduction_fn("Prod", f"tf.reduce_prod{_SIG}: product over `axis`.")
tf_export("math.reduce_prod", "reduce_prod")(reduce_prod)
reduce_max = _reduction_fn("Max", f"tf.reduce_max{_SIG}: maximum over `axis`.")
tf_export("math.reduce_max", "reduce_max")(reduce_max)
reduce_min = _reduction_fn("Min", f"tf.reduce_min{_SIG}: minimum over `axis`.")
tf_export("math.reduce_min", "reduce_min")(reduce_min)
reduce_any = _reduction_fn("Any", f"tf.reduce_any{_SIG}: logical or over `axis`.")
tf_export("math.reduce_any", "reduce_any")(reduce_any)
reduce_all = _reduction_fn("All", f"tf.reduce_all{_SIG}: logical and over `axis`.")
tf_export("math.reduce_all", "reduce_all")(reduce_all)


@tf_export("math.reduce_logsumexp", "reduce_logsumexp")
def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                     keep_dims=None) -> Tensor:
    """tf.reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None, ...): log(sum(exp(x)))
    computed stably by subtracting the (finite part of the) max; its gradient is the softmax."""
    keep = resolve_keepdims(keepdims, keep_dims)
    axis = _axis(axis, reduction_indices)
    with name_scope(name, "ReduceLogSumExp", [input_tensor]) as scope:
        x = convert_to_tensor(input_tensor, name="input_tensor")
        check_dtype("ReduceLogSumExp", "input", x, FLOATS)
        raw_max = reduce_max(x, axis=axis, keepdims=True)
        my_max = stop_gradient(where(is_finite(raw_max), raw_max, zeros_like(raw_max)))
        result = log(reduce_sum(exp(subtract(x, my_max)), axis, keepdims=keep))
        if not keep:
            my_max = reshape(my_max, shape(result))
        return add(result, my_max, name=scope)


@tf_export("math.reduce_variance")
def reduce_variance(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """tf.math.reduce_variance(input_tensor, axis=None, keepdims=False, name=None): the mean of
    the squared deviations from the mean over `axis` (real |x - mean|^2 for complex x)."""
    with name_scope(name, "reduce_variance", [input_tensor]):
        x = convert_to_tensor(input_tensor, name="input_tensor")
        deviation = subtract(x, reduce_mean(x, axis, keepdims=True))
        magnitude = abs(deviation) if x.dtype.is_complex else deviation
        squared = multiply(magnitude, magnitude)
        return reduce_mean(squared, axis, keepdims=bool(keepdims))


@tf_export("math.reduce_std")
def reduce_std(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """tf.math.reduce_std(input_tensor, axis=None, keepdims=False, name=None): the square root of
    reduce_variance."""
    with name_scope(name, "reduce_std", [input_tensor]):
        return sqrt(reduce_variance(input_tensor, axis, keepdims))


@tf_export("math.reduce_euclidean_norm")
def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """tf.math.reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    sqrt(sum(x^2)) over `axis`, in x's dtype (integers truncate)."""
    with name_scope(name, "reduce_euclidean_norm", [input_tensor]):
        x = convert_to_tensor(input_tensor, name="input_tensor")
        if x.dtype.is_integer:
            y = cast(sqrt(cast(reduce_sum(multiply(x, x), axis, keepdims=bool(keepdims)), dtypes.float64)), x.dtype)
            return y
        return sqrt(reduce_sum(multiply(x, x), axis, keepdims=bool(keepdims)))


def _flat_diff(x):
    x = reshape(convert_to_tensor(x, name="x"), [-1])
    return subtract(x[1:], x[:-1]), x


@tf_export("math.is_non_decreasing", "debugging.is_non_decreasing", "is_non_decreasing")
def is_non_decreasing(x, name=None) -> Tensor:
    """tf.is_non_decreasing(x, name=None): whether x's elements, in row-major order, never
    decrease (True for fewer than two elements)."""
    with name_scope(name, "is_non_decreasing", [x]):
        diff, flat = _flat_diff(x)
        check_dtype("is_non_decreasing", "x", flat, REAL)
        return reduce_all(greater_equal(diff, zeros_like(diff)))


@tf_export("math.is_strictly_increasing", "debugging.is_strictly_increasing", "is_strictly_increasing")
def is_strictly_increasing(x, name=None) -> Tensor:
    """tf.is_strictly_increasing(x, name=None): whether x's elements, in row-major order, always
    increase (True for fewer than two elements)."""
    with name_scope(name, "is_strictly_increasing", [x]):
        diff, flat = _flat_diff(x)
        check_dtype("is_strictly_increasing", "x", flat, REAL)
        return reduce_all(greater(diff, zeros_like(diff)))


# -- argmax / argmin ---------------------------------------------------------------------------
def _arg(op_type, input, axis, name, dimension, output_type):
    if axis is not None and dimension is not None:
        raise ValueError("Cannot specify both 'axis' and 'dimension'")
    axis = axis if axis is not None else dimension
    axis = 0 if axis is None else axis
    output_type = dtypes.as_dtype(output_type)
    if output_type not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"Value passed to parameter 'output_type' has DataType {output_type.name} not in "
                        f"list of allowed values: int32, int64 (op '{op_type}')")
    with name_scope(name, op_type, [input]) as scope:
        x = convert_to_tensor(input, name="input")
        dim = axis if isinstance(axis, Tensor) else convert_to_tensor(axis, dtype=dtypes.int32, name="dimension")
        return make_op(op_type, [x, dim], {"output_type": output_type, "Tidx": dim.dtype},
                       name=scope).outputs[0]


def _arg_infer(op):
    x, dim = op.inputs
    out = op.get_attr("output_type")
    nd = x.shape.ndims
    if nd is None:
        return [(out, unknown_shape())]
    d = constant_value(dim)
    if d is None:
        return [(out, unknown_shape(max(nd - 1, 0)))]
    d = int(d)
    if not -max(nd, 1) <= d < max(nd, 1):
        raise ValueError(f"Expected dimension in the range [{-nd}, {nd}), but got {d}")
    d %= max(nd, 1)
    dims = x.shape.as_tuple_or_none()
    return [(out, TensorShape([v for i, v in enumerate(dims) if i != d]))]


def _arg_kernel(np_fn):
    def factory(node, ctx):
        out = dtypes.as_dtype(node.attr["output_type"]).as_numpy_dtype

        def run(x, dim):
            xp = array_module(x)
            x = xp.asarray(x)
            d = int(dim)   # host memory
            if not -max(x.ndim, 1) <= d < max(x.ndim, 1):
                raise invalid(node, f"Expected dimension in the range [{-x.ndim}, {x.ndim}), but got {d}")
            if x.ndim and x.shape[d] == 0:
                raise invalid(node, f"Reduction axis {d} is empty in shape {list(x.shape)}")
            r = xp.asarray(np_fn(x, axis=d if x.ndim else None)).astype(out)
            return r[()] if r.ndim == 0 else r
        return run
    return factory


register("ArgMax", _arg_infer, _arg_kernel(np.argmax), grad=None, dtypes=NUMERIC, dtype_param="input")
register_gpu("ArgMax", host_inputs=(1,))
register("ArgMin", _arg_infer, _arg_kernel(np.argmin), grad=None, dtypes=NUMERIC, dtype_param="input")
register_gpu("ArgMin", host_inputs=(1,))


@tf_export("math.argmax", "argmax")
def argmax(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):
    """tf.argmax(input, axis=None, name=None, dimension=None, output_type=tf.int64): index of the
    largest value along `axis` (default 0; `dimension` is the TF1 alias)."""
    return _arg("ArgMax", input, axis, name, dimension, output_type)


@tf_export("math.argmin", "argmin")
def argmin(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):
    """tf.argmin(input, axis=None, name=None, dimension=None, output_type=tf.int64)."""
    return _arg("ArgMin", input, axis, name, dimension, output_type)


@tf_export("arg_max")
def arg_max(input, dimension, output_type=dtypes.int64, name=None):
    """tf.arg_max(input, dimension, output_type=tf.int64, name=None): deprecated TF1 argmax."""
    return _arg("ArgMax", input, dimension, name, None, output_type)


@tf_export("arg_min")
def arg_min(input, dimension, output_type=dtypes.int64, name=None):
    """tf.arg_min(input, dimension, output_type=tf.int64, name=None): deprecated TF1 argmin."""
    return _arg("ArgMin", input, dimension, name, None, output_type)


# -- cumsum / cumprod --------------------------------------------------------------------------
def _cumulative(op_type, x, axis, exclusive, reverse, name) -> Tensor:
    with name_scope(name, op_type, [x]) as scope:
        x = convert_to_tensor(x, name="x")
        axis = axis if isinstance(axis, Tensor) else convert_to_tensor(axis, dtype=dtypes.int32, name="axis")
        return make_op(op_type, [x, axis], {"exclusive": bool(exclusive), "reverse": bool(reverse),
                                          "Tidx": axis.dtype}, name=scope).outputs[0]


def _cum_infer(op):
    x, axis = op.inputs
    a = constant_value(axis)
    nd = x.shape.ndims
    if a is not None and nd is not None and not -nd <= int(a) < nd:
        raise ValueError(f"axis {int(a)} is out of range [{-nd}, {nd})")
    return [(x.dtype, x.shape)]


def _cum_kernel(np_fn, identity):
    def factory(node, ctx):
        exclusive, reverse = bool(node.attr.get("exclusive")), bool(node.attr.get("reverse"))

        def run(x, axis):
            xp = array_module(x)
            x = xp.asarray(x)
            a = int(axis)
            if not -x.ndim <= a < x.ndim:
                raise invalid(node, f"axis {a} is out of range [{-x.ndim}, {x.ndim})")
            a %= x.ndim
            if reverse:
                x = xp.flip(x, a)
            out = np_fn(x, axis=a, dtype=x.dtype)   # (a numpy function: CuPy's, given a CuPy array)
            if exclusive:
                along = (slice(None),) * a
                lead = xp.full_like(out[along + (slice(0, 1),)], identity)
                out = xp.concatenate([lead, out[along + (slice(0, x.shape[a] - 1),)]], axis=a)
            if reverse:
                out = xp.flip(out, a)
            return xp.ascontiguousarray(out)
        return run
    return factory


def _cumsum_grad(op, grad):
    return [cumsum(grad, op.inputs[1], exclusive=op.get_attr("exclusive"),
                   reverse=not op.get_attr("reverse")), None]


def _cumprod_grad(op, grad):
    x, axis = op.inputs
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")
    prod = cumprod(x, axis, exclusive=exclusive, reverse=reverse)
    out = cumsum(multiply(prod, grad), axis, exclusive=exclusive, reverse=not reverse)
    return [realdiv(out, x), None]


register("Cumsum", _cum_infer, _cum_kernel(np.cumsum, 0), grad=_cumsum_grad, dtypes=NUMERIC)
register_gpu("Cumsum", host_inputs=(1,))
register("Cumprod", _cum_infer, _cum_kernel(np.cumprod, 1), grad=_cumprod_grad, dtypes=NUMERIC)


def _logaddexp_accumulate(x, axis, dtype):
    return np.logaddexp.accumulate(x, axis=axis, dtype=dtype)


def _cumulative_logsumexp_grad(op, grad):
    """TF's: the incoming gradient split by sign, each part's log carried back by a reversed
    cumulative_logsumexp (stable where the gradient is large and the outputs small)."""
    x, axis = op.inputs
    out = op.outputs[0]
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")
    lowest = convert_to_tensor(np.finfo(grad.dtype.as_numpy_dtype).min, dtype=grad.dtype)

    def part(mask, magnitude):
        log_part = where_v2(mask, log(where_v2(mask, magnitude, ones_like(grad))), lowest)
        return exp(add(cumulative_logsumexp(subtract(log_part, out), axis, exclusive=exclusive,
                                            reverse=not reverse), x))
    return [subtract(part(greater(grad, 0), grad), part(less(grad, 0), -grad)), None]


register("CumulativeLogsumexp", _cum_infer, _cum_kernel(_logaddexp_accumulate, -np.inf),
         grad=_cumulative_logsumexp_grad, dtypes=FLOATS)


@tf_export("math.cumulative_logsumexp")
def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None) -> Tensor:
    """tf.math.cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None): the
    running log(sum(exp(x))) along `axis`, computed without overflow (exclusive: the first
    is -inf)."""
    return _cumulative("CumulativeLogsumexp", x, axis, exclusive, reverse, name)


@tf_export("math.cumsum", "cumsum")
def cumsum(x, axis=0, exclusive=False, reverse=False, name=None) -> Tensor:
    """tf.cumsum(x, axis=0, exclusive=False, reverse=False, name=None): running sum along `axis`."""
    return _cumulative("Cumsum", x, axis, exclusive, reverse, name)


@tf_export("math.cumprod", "cumprod")
def cumprod(x, axis=0, exclusive=False, reverse=False, name=None) -> Tensor:
    """tf.cumprod(x, axis=0, exclusive=False, reverse=False, name=None): running product."""
    return _cumulative("Cumprod", x, axis, exclusive, reverse, name)


# -- count_nonzero -----------------------------------------------------------------------------
@tf_export("math.count_nonzero", "count_nonzero")
def count_nonzero(input_tensor=None, axis=None, keepdims=None, dtype=dtypes.int64, name=None,
                  reduction_indices=None, keep_dims=None, input=None) -> Tensor:
    """tf.count_nonzero(input_tensor=None, axis=None, keepdims=None, dtype=tf.int64, name=None,
    reduction_indices=None, keep_dims=None, input=None): the number of non-zero (or non-empty
    string / True) elements along `axis` (`input` is the deprecated spelling of input_tensor)."""
    if input_tensor is not None and input is not None:
        raise ValueError("Cannot specify both 'input' and 'input_tensor'.")
    input_tensor = input if input_tensor is None else input_tensor
    if input_tensor is None:
        raise ValueError("count_nonzero: input_tensor is required")
    keep = resolve_keepdims(keepdims, keep_dims)
    axis = _axis(axis, reduction_indices)
    with name_scope(name, "count_nonzero", [input_tensor]):
        x = convert_to_tensor(input_tensor, name="input_tensor")
        zero = convert_to_tensor(b"" if x.dtype == dtypes.string else 0, dtype=x.dtype, name="zeros")
        nonzero = cast(not_equal(x, zero), dtypes.int64)
        return cast(reduce_sum(nonzero, axis=axis, keepdims=keep), dtype)


# -- bincount ----------------------------------------------------------------------------------
@tf_export("math.bincount", "bincount")
def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=dtypes.int32) -> Tensor:
    """tf.bincount(arr, weights=None, minlength=None, maxlength=None, dtype=tf.int32): counts of
    each value of a non-negative int32 array (summing `weights` instead when given)."""
    with name_scope(None, "bincount", [arr, weights]):
        arr = convert_to_tensor(arr, name="arr", dtype=dtypes.int32)
        if weights is not None:
            weights = convert_to_tensor(weights, name="weights")
            dtype = weights.dtype
        else:
            weights = convert_to_tensor(np.zeros([0], dtypes.as_dtype(dtype).as_numpy_dtype), name="weights")
        lo = convert_to_tensor(-1 if minlength is None else minlength, dtype=dtypes.int32, name="minlength")
        hi = convert_to_tensor(-1 if maxlength is None else maxlength, dtype=dtypes.int32, name="maxlength")
        return make_op("Bincount", [arr, lo, hi, weights], {"T": weights.dtype}, name="Bincount").outputs[0]


def _bincount_kernel(node, ctx):
    def run(arr, lo, hi, weights):
        arr, weights = np.asarray(arr).reshape(-1), np.asarray(weights)
        if arr.size and arr.min() < 0:
            raise invalid(node, "Input arr must be non-negative!")
        size = int(arr.max()) + 1 if arr.size else 0
        if int(lo) >= 0:
            size = max(size, int(lo))
        if int(hi) >= 0:
            size = min(size, int(hi))
        check_output_size(node, [size])
        keep = arr < size
        w = weights.reshape(-1)[keep] if weights.size else None
        out = np.bincount(arr[keep], weights=w, minlength=size)[:size]
        return out.astype(weights.dtype)
    return run


def _bincount_infer(op):
    lo, hi = static_int(op.inputs[1]), static_int(op.inputs[2])
    if lo is not None and hi is not None:   # the output holds at least minlength (or maxlength if less)
        check_output_size(op, [lo if hi < 0 else min(lo, hi)])
    return [(op.get_attr("T"), TensorShape([None]))]


register("Bincount", _bincount_infer, _bincount_kernel, grad=None)
