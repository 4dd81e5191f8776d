"""Array ops, core: constants, placeholders, identity, and the shape ops every other family
builds on (shape, size, rank, reshape, expand_dims, squeeze, transpose). Python values become
Const tensors here, through the conversion function this module registers."""
from __future__ import annotations

import math

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import Dimension, TensorShape, as_shape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor, register_tensor_conversion_function
from tensorweave.framework.tensor_util import constant_value, constant_value_as_shape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import (array_module, check_axis, dense, invalid, make_op, np_dtype, same_as_input,
                                    static_ints)
from tensorweave.ops.registry import ALL, register, register_gpu


# -- Const -------------------------------------------------------------------------------------
def _to_numpy(value, dtype):
    """A Python/numpy value as an array of `dtype` (TF's rules: no silent float->int)."""
    if dtype is None:
        dtype = dtypes.dtype_of_value(value)
    if dtype is dtypes.string:
        arr = np.asarray(value, dtype=object)
        flat = [v.encode("utf-8") if isinstance(v, str) else bytes(v) if isinstance(v, np.bytes_) else v
                for v in arr.reshape(-1)]
        for v in flat:
            if not isinstance(v, bytes):
                raise TypeError(f"Expected string, got {v!r} of type '{type(v).__name__}' instead.")
        out = np.empty(len(flat), dtype=object)
        out[:] = flat
        return out.reshape(arr.shape), dtype
    try:
        raw = np.asarray(value)
    except ValueError as e:
        raise ValueError(f"Cannot convert {value!r} to a tensor: {e}") from None
    if raw.dtype == object:
        raise TypeError(f"Failed to convert object of type {type(value).__name__} to Tensor. "
                        f"Contents: {value!r}. Consider casting elements to a supported type.")
    if (dtype.is_integer or dtype.is_bool) and raw.dtype.kind == "f":
        if raw.size and not np.all(np.mod(raw, 1) == 0):
            bad = raw.reshape(-1)[np.flatnonzero(np.mod(raw.reshape(-1), 1))[0]]
            raise TypeError(f"Expected {dtype.name}, got {float(bad)!r} of type 'float' instead.")
    if dtype.is_integer and raw.dtype.kind in "iu" and raw.size:
        info = np.iinfo(dtype.as_numpy_dtype)
        if raw.min() < info.min or raw.max() > info.max:
            raise TypeError(f"Value out of range for {dtype.name}: {value!r}")
    if raw.dtype.kind == "c" and not dtype.is_complex:
        raise TypeError(f"Expected {dtype.name}, got complex value {value!r}")
    return raw.astype(dtype.as_numpy_dtype, copy=False), dtype


@tf_export("constant")
def constant(value, dtype=None, shape=None, name: str = "Const", verify_shape: bool = False) -> Tensor:
    """tf.constant(value, dtype=None, shape=None, name='Const', verify_shape=False)."""
    dtype = dtypes.as_dtype(dtype) if dtype is not None else None
    arr, dtype = _to_numpy(value, dtype)
    if shape is not None:
        shape = tuple(as_shape(shape).as_list())
        size = int(np.prod(shape, dtype=np.int64))
        if verify_shape and arr.shape != shape:
            raise TypeError(f"Expected Tensor's shape: {shape}, got {arr.shape}.")
        if arr.size == 1:
            arr = np.full(shape, arr.reshape(-1)[0], dtype=arr.dtype)
        elif arr.size == size:
            arr = arr.reshape(shape)
        elif 0 < arr.size < size:
            arr = np.concatenate([arr.reshape(-1), np.repeat(arr.reshape(-1)[-1:], size - arr.size)]).reshape(shape)
        else:
            raise TypeError(f"Expected Tensor's shape: {shape}, got {arr.shape}.")
    return make_op("Const", [], {"value": arr, "dtype": dtype}, name=name).outputs[0]


def _const_kernel(node, ctx):
    dtype = dtypes.as_dtype(node.attr["dtype"])
    arr = np.asarray(node.attr["value"])
    if dtype is not dtypes.string:
        arr = arr.astype(dtype.as_numpy_dtype, copy=False)
    value = arr[()] if arr.ndim == 0 else arr
    if isinstance(value, np.ndarray):
        value = value.copy() if value.flags.writeable else value
        value.flags.writeable = False
    return lambda: value


register("Const", lambda op: [(op.get_attr("dtype"), TensorShape(op.get_attr("value").shape))],
         _const_kernel, grad=None)
register_gpu("Const")


def _constant_conversion(value, dtype=None, name=None) -> Tensor:
    return constant(value, dtype=dtype, name=name or "Const")


register_tensor_conversion_function(object, _constant_conversion, priority=200)


def _shape_conversion(value, dtype=None, name=None) -> Tensor:
    """A fully known TensorShape as its dimensions (a Dimension as its value), as TF's
    constant_op: int32 unless a dimension needs int64; only int32 or int64 may be asked for."""
    dims = [value.value] if isinstance(value, Dimension) else (value.as_list() if value.ndims is not None else None)
    if dims is None or None in dims:
        what = "unknown Dimension ?" if isinstance(value, Dimension) else f"a partially known TensorShape {value}"
        raise ValueError(f"Cannot convert {what} to a Tensor.")
    wide = any(d >= 2 ** 31 for d in dims)
    if dtype is None:
        dtype = dtypes.int64 if wide else dtypes.int32
    elif dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"Cannot convert TensorShape {value} to dtype {dtype.name}. Allowed dtypes are int32 and "
                        "int64.")
    elif dtype is dtypes.int32 and wide:
        raise ValueError(f"Cannot convert TensorShape {value} to dtype int32; a dimension is too large. Consider "
                         "using int64.")
    return constant(dims[0] if isinstance(value, Dimension) else dims, dtype=dtype, name=name or "shape_as_tensor")


register_tensor_conversion_function((TensorShape, Dimension), _shape_conversion, priority=100)
# The public convert_to_tensor is framework's, declared here beside the conversion of Python values:
# `tf.convert_to_tensor([1, 2])` as a program's first call then loads the conversions it needs.
tf_export("convert_to_tensor")(convert_to_tensor)


# -- Placeholder -------------------------------------------------------------------------------
@tf_export("placeholder")
def placeholder(dtype, shape=None, name=None) -> Tensor:
    """tf.placeholder(dtype, shape=None, name=None): a tensor that must be fed."""
    shape = unknown_shape() if shape is None else as_shape(shape)
    return make_op("Placeholder", [], {"dtype": dtypes.as_dtype(dtype), "shape": shape}, name=name).outputs[0]


def _placeholder_kernel(node, ctx):
    dt = dtypes.as_dtype(node.attr["dtype"]).name
    shape = node.attr.get("shape")
    shape_s = "<unknown>" if shape is None else "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"

    def unfed():
        raise errors.InvalidArgumentError(
            node, node.name, f"You must feed a value for placeholder tensor '{node.name}' with dtype {dt}"
            f" and shape {shape_s}")
    return unfed


register("Placeholder", lambda op: [(op.get_attr("dtype"), op.get_attr("shape"))],
         _placeholder_kernel, grad=None)
register_gpu("Placeholder")


@tf_export("placeholder_with_default")
def placeholder_with_default(input, shape, name=None) -> Tensor:
    """tf.placeholder_with_default(input, shape, name=None): `input` unless fed."""
    input = convert_to_tensor(input)
    return make_op("PlaceholderWithDefault", [input], {"dtype": input.dtype, "shape": as_shape(shape)},
                   name=name or "PlaceholderWithDefault").outputs[0]


def _pwd_infer(op):
    shape = op.get_attr("shape")
    if not op.inputs[0].shape.is_compatible_with(shape):
        raise ValueError(f"Shapes {op.inputs[0].shape} and {shape} are incompatible")
    return [(op.inputs[0].dtype, shape)]


register("PlaceholderWithDefault", _pwd_infer, lambda node, ctx: (lambda x: x),
         grad=lambda op, g: [g])
register_gpu("PlaceholderWithDefault")


# -- Identity ----------------------------------------------------------------------------------
@tf_export("identity")
def identity(input, name=None) -> Tensor:
    """tf.identity(input, name=None)."""
    if hasattr(input, "_as_graph_element") and not isinstance(input, Tensor) and hasattr(input, "value"):
        input = input.value()
    input = convert_to_tensor(input)
    return make_op("Identity", [input], name=name or "Identity").outputs[0]


register("Identity", same_as_input(0), lambda node, ctx: (lambda x: x), grad=lambda op, g: [g])
register_gpu("Identity")


@tf_export("guarantee_const")
def guarantee_const(input, name=None) -> Tensor:
    """tf.guarantee_const(input, name=None): `input` unchanged, promising the runtime that it is
    constant over the session (TF's GuaranteeConst; here it runs as Identity)."""
    input = convert_to_tensor(input, name="input")
    return make_op("GuaranteeConst", [input], {"T": input.dtype}, name=name or "GuaranteeConst").outputs[0]


# no gradient, as in TF: tf.gradients through it raises LookupError (its value is promised constant)
register("GuaranteeConst", same_as_input(0), lambda node, ctx: (lambda x: x))
register_gpu("GuaranteeConst")


def index_tensor(value, name: str = None, dtype=None) -> Tensor:
    """An int32/int64 tensor from a Python int/list (int64 only when a value needs it)."""
    if isinstance(value, Tensor):
        return value
    if hasattr(value, "_as_graph_element") or hasattr(value, "value") and callable(getattr(value, "value")):
        return convert_to_tensor(value)
    if isinstance(value, TensorShape):
        if not value.is_fully_defined():
            raise ValueError(f"Cannot convert a partially known TensorShape {value} to a Tensor.")
        value = value.as_list()
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return convert_to_tensor(list(value), name=name or "stack")   # packed by tf.stack
    if dtype is None:
        arr = np.asarray(value)
        dtype = dtypes.int64 if arr.size and arr.dtype.kind in "iu" and (
            arr.max() >= 2**31 or arr.min() < -2**31) else dtypes.int32
    return constant(value, dtype=dtype, name=name or "Const")


# -- StopGradient ------------------------------------------------------------------------------
@tf_export("stop_gradient")
def stop_gradient(input, name=None) -> Tensor:
    """tf.stop_gradient(input, name=None): identity whose gradient is never computed."""
    input = convert_to_tensor(input)
    return make_op("StopGradient", [input], name=name or "StopGradient").outputs[0]


register("StopGradient", same_as_input(0), lambda node, ctx: (lambda x: x), grad=None)
register_gpu("StopGradient")


# -- Shape, ShapeN, Size, Rank -----------------------------------------------------------------
@tf_export("shape")
def shape(input, name=None, out_type=dtypes.int32) -> Tensor:
    """tf.shape(input, name=None, out_type=tf.int32): the runtime shape as a 1-D tensor.
    A fully defined static shape becomes a constant, as in TF1."""
    input = convert_to_tensor(input)
    out_type = dtypes.as_dtype(out_type)
    if input.shape.is_fully_defined():
        return constant(input.shape.as_list(), dtype=out_type, name=name or "Shape")
    return make_op("Shape", [input], {"out_type": out_type}, name=name or "Shape").outputs[0]


def _shape_infer(op):
    return [(op.get_attr("out_type"), TensorShape([op.inputs[0].shape.ndims]))]


def _shape_kernel(node, ctx):
    dt = np_dtype(node, "out_type")
    return lambda x: np.array(x.shape if type(x) is np.ndarray else np.shape(x), dtype=dt)


register("Shape", _shape_infer, _shape_kernel, grad=None)
register_gpu("Shape", host_outputs=(0,))


def _broadcast_gradient_args_kernel(node, ctx):
    """TF's BroadcastGradientArgs (in the gradients TF 1 wrote for broadcasting ops): the axes each
    input's gradient sums over, those where the input's shape, padded on the left with ones, is 1;
    none when the shapes are equal."""
    def reduction_axes(s0, s1):
        s0, s1 = [int(d) for d in np.reshape(s0, -1)], [int(d) for d in np.reshape(s1, -1)]
        dt = np_dtype(node, "T")
        if s0 == s1:
            return np.zeros(0, dt), np.zeros(0, dt)
        rank = max(len(s0), len(s1))
        p0, p1 = [1] * (rank - len(s0)) + s0, [1] * (rank - len(s1)) + s1
        if any(a != b and a != 1 and b != 1 for a, b in zip(p0, p1)):
            raise invalid(node, f"Incompatible shapes: [{','.join(map(str, s0))}] vs. [{','.join(map(str, s1))}]")
        return (np.array([i for i, a in enumerate(p0) if a == 1], dt),
                np.array([i for i, b in enumerate(p1) if b == 1], dt))
    return reduction_axes


register("BroadcastGradientArgs", lambda op: [(op.inputs[0].dtype, TensorShape([None]))] * 2,
         _broadcast_gradient_args_kernel, grad=None, dtypes={0: ("s0", (dtypes.int32, dtypes.int64)),
                                                              1: ("s1", (dtypes.int32, dtypes.int64))})
register_gpu("BroadcastGradientArgs", host_inputs=(0, 1), host_outputs=(0, 1))


@tf_export("shape_n")
def shape_n(input, out_type=dtypes.int32, name=None) -> list:
    """tf.shape_n(input, out_type=tf.int32, name=None): the shapes of a list of tensors."""
    inputs = [convert_to_tensor(x) for x in input]
    op = make_op("ShapeN", inputs, {"N": len(inputs), "out_type": dtypes.as_dtype(out_type)}, name=name or "ShapeN")
    return op.outputs


def _shape_n_kernel(node, ctx):
    dt = np_dtype(node, "out_type")
    return lambda *xs: tuple(np.array(np.shape(x), dtype=dt) for x in xs)


register("ShapeN", lambda op: [(op.get_attr("out_type"), TensorShape([x.shape.ndims])) for x in op.inputs],
         _shape_n_kernel, grad=None)
register_gpu("ShapeN", host_outputs=ALL)


@tf_export("size")
def size(input, name=None, out_type=dtypes.int32) -> Tensor:
    """tf.size(input, name=None, out_type=tf.int32): the number of elements."""
    input = convert_to_tensor(input)
    out_type = dtypes.as_dtype(out_type)
    n = input.shape.num_elements()
    if n is not None:
        return constant(n, dtype=out_type, name=name or "Size")
    return make_op("Size", [input], {"out_type": out_type}, name=name or "Size").outputs[0]


def _size_kernel(node, ctx):
    dt = np_dtype(node, "out_type")
    return lambda x: np.array(math.prod(np.shape(x)), dtype=dt)


register("Size", lambda op: [(op.get_attr("out_type"), TensorShape([]))], _size_kernel, grad=None)
register_gpu("Size", host_outputs=(0,))


@tf_export("rank")
def rank(input, name=None) -> Tensor:
    """tf.rank(input, name=None): the number of dimensions, int32."""
    input = convert_to_tensor(input)
    if input.shape.ndims is not None:
        return constant(input.shape.ndims, dtype=dtypes.int32, name=name or "Rank")
    return make_op("Rank", [input], name=name or "Rank").outputs[0]


register("Rank", lambda op: [(dtypes.int32, TensorShape([]))],
         lambda node, ctx: (lambda x: np.array(len(np.shape(x)), dtype=np.int32)), grad=None)
register_gpu("Rank", host_outputs=(0,))


# -- Reshape -----------------------------------------------------------------------------------
@tf_export("manip.reshape", "reshape")
def reshape(tensor, shape, name=None) -> Tensor:
    """tf.reshape(tensor, shape, name=None); one dimension of `shape` may be -1."""
    tensor = convert_to_tensor(tensor)
    shape_t = index_tensor(shape)
    return make_op("Reshape", [tensor, shape_t], name=name or "Reshape").outputs[0]


def _reshape_infer(op):
    x, s = op.inputs
    if s.shape.ndims not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {s.shape.ndims}")
    value = constant_value(s)
    n_in = x.shape.num_elements()
    if value is not None:
        dims = [int(d) for d in np.reshape(value, -1)]
        if sum(d == -1 for d in dims) > 1 or any(d < -1 for d in dims):
            raise ValueError(f"Reshape: only one input size may be -1, and no size may be below -1, got {dims}")
        known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
        if -1 in dims:
            if n_in is not None:
                if known == 0 or n_in % known:
                    raise ValueError(f"Reshape: dimension size must be evenly divisible by {known} but is "
                                     f"{n_in}")
                dims[dims.index(-1)] = n_in // known
            else:
                dims[dims.index(-1)] = None
        elif n_in is not None and n_in != known:
            raise ValueError(f"Cannot reshape a tensor with {n_in} elements to shape {dims} ({known} elements)")
        return [(x.dtype, TensorShape(dims))]
    out = constant_value_as_shape(s)
    if out.ndims is not None and n_in is not None:
        unknown = [i for i, d in enumerate(out.as_list()) if d is None]
        if len(unknown) == 1:
            known = int(np.prod([d for d in out.as_list() if d is not None], dtype=np.int64))
            if known and n_in % known == 0:
                dims = out.as_list()
                dims[unknown[0]] = n_in // known
                out = TensorShape(dims)
    return [(x.dtype, out)]


def _reshape_kernel(node, ctx):
    def run(x, s):
        s = np.reshape(s, -1).tolist()
        try:
            return np.reshape(x, s)
        except ValueError:
            raise invalid(node, f"Input to reshape is a tensor with {np.size(x)} values, but the requested "
                                f"shape has {int(np.prod([d for d in s if d >= 0]))}") from None
    return run


def _reshape_grad(op, grad):
    return [reshape(dense(grad), shape(op.inputs[0])), None]


register("Reshape", _reshape_infer, _reshape_kernel, grad=_reshape_grad)
register_gpu("Reshape", host_inputs=(1,))


# -- ExpandDims, Squeeze -----------------------------------------------------------------------
@tf_export("expand_dims")
def expand_dims(input, axis=None, name=None, dim=None) -> Tensor:
    """tf.expand_dims(input, axis=None, name=None, dim=None): inserts a size-1 dimension at `axis`
    (`dim` is the deprecated TF1 spelling)."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    input = convert_to_tensor(input)
    axis_t = index_tensor(axis)
    return make_op("ExpandDims", [input, axis_t], name=name or "ExpandDims").outputs[0]


def _expand_dims_infer(op):
    x, a = op.inputs
    axis = static_ints(a)
    nd = x.shape.ndims
    if axis is None or len(axis) != 1:
        if axis is not None:
            raise ValueError(f"ExpandDims: 'dim' must be a tensor with a single value, got {axis}")
        return [(x.dtype, unknown_shape() if nd is None else unknown_shape(nd + 1))]
    if nd is None:
        return [(x.dtype, unknown_shape())]
    ax = check_axis(axis[0], nd, "ExpandDims", extra=1)
    dims = list(x.shape.as_tuple_or_none())
    dims.insert(ax, 1)
    return [(x.dtype, TensorShape(dims))]


def _expand_dims_kernel(node, ctx):
    def run(x, a):
        ax = int(np.reshape(a, -1)[0])
        nd = len(np.shape(x))
        if not -nd - 1 <= ax <= nd:
            raise invalid(node, f"Tried to expand dim index {ax} for tensor with {nd} dimensions.")
        return array_module(x).expand_dims(x, ax)
    return run


register("ExpandDims", _expand_dims_infer, _expand_dims_kernel,
         grad=lambda op, grad: [reshape(dense(grad), shape(op.inputs[0])), None])
register_gpu("ExpandDims", host_inputs=(1,))


@tf_export("squeeze")
def squeeze(input, axis=None, name=None, squeeze_dims=None) -> Tensor:
    """tf.squeeze(input, axis=None, name=None, squeeze_dims=None): removes size-1 dimensions
    (all of them, or those in `axis`; `squeeze_dims` is the deprecated TF1 spelling)."""
    if axis is not None and squeeze_dims is not None:
        raise ValueError("Cannot specify both 'axis' and 'squeeze_dims'")
    axis = squeeze_dims if axis is None else axis
    if axis is None:
        axis = []
    elif isinstance(axis, int):
        axis = [axis]
    input = convert_to_tensor(input)
    return make_op("Squeeze", [input], {"squeeze_dims": [int(a) for a in axis]}, name=name or "Squeeze").outputs[0]


def _squeeze_infer(op):
    x = op.inputs[0]
    axes = op.get_attr("squeeze_dims")
    nd = x.shape.ndims
    if nd is None:
        return [(x.dtype, unknown_shape())]
    dims = list(x.shape.as_tuple_or_none())
    norm = set()
    for a in axes:
        if not -nd <= a < nd:
            raise ValueError(f"Tried to squeeze dim index {a} for tensor with {nd} dimensions.")
        a %= nd
        if dims[a] is not None and dims[a] != 1:
            raise ValueError(f"Can not squeeze dim[{a}], expected a dimension of 1, got {dims[a]}")
        norm.add(a)
    if not axes:
        if any(d is None for d in dims):
            return [(x.dtype, unknown_shape())]
        return [(x.dtype, TensorShape([d for d in dims if d != 1]))]
    return [(x.dtype, TensorShape([d for i, d in enumerate(dims) if i not in norm]))]


def _squeeze_kernel(node, ctx):
    axes = tuple(node.attr["squeeze_dims"])

    def run(x):
        nd = len(np.shape(x))
        for a in axes:
            if not -nd <= a < nd:
                raise invalid(node, f"Tried to squeeze dim index {a} for tensor with {nd} dimensions.")
            if np.shape(x)[a] != 1:
                raise invalid(node, f"Can not squeeze dim[{a % nd}], expected a dimension of 1, got "
                                    f"{np.shape(x)[a]}")
        xp = array_module(x)
        return xp.squeeze(x, axis=tuple(a % nd for a in axes)) if axes else xp.squeeze(x)
    return run


register("Squeeze", _squeeze_infer, _squeeze_kernel,
         grad=lambda op, grad: [reshape(dense(grad), shape(op.inputs[0]))])
register_gpu("Squeeze")


# -- Transpose, ConjugateTranspose, InvertPermutation ------------------------------------------
@tf_export("transpose")
def transpose(a, perm=None, name: str = "transpose", conjugate: bool = False) -> Tensor:
    """tf.transpose(a, perm=None, name='transpose', conjugate=False); perm defaults to the
    reversed dimensions; `conjugate` also conjugates complex values."""
    a = convert_to_tensor(a)
    op_type = "ConjugateTranspose" if conjugate and a.dtype.is_complex else "Transpose"
    with name_scope(name, "transpose", [a]) as scope:
        if perm is None:
            nd = a.shape.ndims
            if nd is not None:
                perm = constant(np.arange(nd - 1, -1, -1, dtype=np.int32), name="perm")
            else:   # reverse(range(0, rank(a))), built from the raw ops (fill.py and pad.py wrap them)
                r = rank(a)
                with name_scope("range") as range_scope:
                    dims = make_op("Range", [constant(0, name="start"), r, constant(1, name="delta")],
                                   {"Tidx": dtypes.int32}, name=range_scope).outputs[0]
                perm = make_op("ReverseV2", [dims, constant([0])], name="ReverseV2").outputs[0]
        perm = index_tensor(perm, name="perm")
        return make_op(op_type, [a, perm], name=scope).outputs[0]


def _transpose_infer(op):
    x, p = op.inputs
    perm = static_ints(p)
    nd = x.shape.ndims
    if perm is None:
        n = p.shape[0].value if p.shape.ndims == 1 else None
        if nd is not None and n is not None and n != nd:
            raise ValueError(f"Transpose: perm has {n} entries but the input has rank {nd}")
        return [(x.dtype, unknown_shape(nd if nd is not None else n))]
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"Transpose: perm {perm} is not a permutation of [0..{len(perm)})")
    if nd is None:
        return [(x.dtype, unknown_shape(len(perm)))]
    if len(perm) != nd:
        raise ValueError(f"Transpose: dimension must be {nd} but is {len(perm)} (perm {perm})")
    dims = x.shape.as_tuple_or_none()
    return [(x.dtype, TensorShape([dims[i] for i in perm]))]


def _transpose_kernel(conj: bool):
    def factory(node, ctx):
        def run(x, p):
            p, nd = np.reshape(p, -1).tolist(), len(np.shape(x))
            if len(p) != nd or sorted(p) != list(range(len(p))):
                raise invalid(node, f"transpose expects a permutation of rank {nd}, got {p}")
            xp = array_module(x)
            y = xp.transpose(x, p)
            return xp.conj(y) if conj else y
        return run
    return factory


def _transpose_grad(op, grad):
    p = op.inputs[1]
    perm = static_ints(p)
    inv = constant(np.argsort(perm).astype(np.int32)) if perm is not None else invert_permutation(p)
    return [transpose(dense(grad), inv, conjugate=op.type == "ConjugateTranspose"), None]


register("Transpose", _transpose_infer, _transpose_kernel(False), grad=_transpose_grad)
register("ConjugateTranspose", _transpose_infer, _transpose_kernel(True), grad=_transpose_grad)
register_gpu("Transpose", "ConjugateTranspose", host_inputs=(1,))


@tf_export("math.invert_permutation", "invert_permutation")
def invert_permutation(x, name=None) -> Tensor:
    """tf.invert_permutation(x, name=None): y[x[i]] = i for a 1-D int32/int64 permutation."""
    x = index_tensor(x)
    return make_op("InvertPermutation", [x], name=name or "InvertPermutation").outputs[0]


def _invert_permutation_kernel(node, ctx):
    def run(x):
        x = np.asarray(x)
        if x.ndim != 1 or sorted(x.tolist()) != list(range(x.size)):
            raise invalid(node, f"{x.tolist()} is not a permutation of [0..{x.size})")
        return np.argsort(x).astype(x.dtype)
    return run


register("InvertPermutation", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape.with_rank(1))],
         _invert_permutation_kernel, grad=None)
register_gpu("InvertPermutation", host_inputs=(0,), host_outputs=(0,))


def swap_axes_perm(x: Tensor, axis: int, other: int = -1):
    """The permutation swapping dims `axis` and `other` of x (its own inverse): a list when x's
    rank is known, else an int32 tensor computed at run time (so callers never need a static
    rank); None when the two are statically the same dim."""
    nd = x.shape.ndims
    if nd is not None:
        a, b = check_axis(axis, nd, "transpose"), check_axis(other, nd, "transpose")
        if a == b:
            return None
        perm = list(range(nd))
        perm[a], perm[b] = b, a
        return perm
    if axis == other:
        return None
    r = rank(x)
    dims = make_op("Range", [constant(0), r, constant(1)], {"Tidx": dtypes.int32}, name="range").outputs[0]

    def normalised(ax: int) -> Tensor:
        return constant(ax) if ax >= 0 else make_op("AddV2", [r, constant(ax)], {"T": dtypes.int32}).outputs[0]

    a, b = normalised(axis), normalised(other)

    def where_equal(value: Tensor, then: Tensor, otherwise: Tensor) -> Tensor:
        cond = make_op("Equal", [dims, value], {"T": dtypes.int32}).outputs[0]
        return make_op("SelectV2", [cond, then, otherwise]).outputs[0]
    return where_equal(a, b, where_equal(b, a, dims))


@tf_export("linalg.matrix_transpose", "linalg.transpose", "matrix_transpose")
def matrix_transpose(a, name: str = "matrix_transpose", conjugate: bool = False) -> Tensor:
    """tf.linalg.matrix_transpose(a, name='matrix_transpose', conjugate=False): swaps the last
    two dimensions."""
    a = convert_to_tensor(a)
    nd = a.shape.ndims
    if nd is not None and nd < 2:
        raise ValueError(f"matrix_transpose: argument 'a' should be a (batch) matrix, with rank >= 2. "
                         f"Found: {a.shape}")
    with name_scope(name, "matrix_transpose", [a]):
        perm = swap_axes_perm(a, -2, -1)
    return transpose(a, perm, name=name, conjugate=conjugate)
