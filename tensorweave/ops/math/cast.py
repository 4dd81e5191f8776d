"""Math ops, cast family: tf.cast (op "Cast" with attrs SrcT/DstT, which tensor_util folds),
the to_* helpers and saturate_cast."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import FLOAT_COMPLEX, array_module, make_op
from tensorweave.ops.registry import register, register_gpu


# -- casts -------------------------------------------------------------------------------------
@tf_export("cast", "dtypes.cast")
def cast(x, dtype, name=None):
    """tf.cast(x, dtype, name=None): converts element type (floats truncate toward zero when
    cast to ints); returns `x` itself when it already has `dtype`. Works on IndexedSlices."""
    base = dtypes.as_dtype(dtype).base_dtype
    if isinstance(x, Tensor) and x.dtype == base:
        return x
    with name_scope(name, "Cast", [x]) as scope:
        if isinstance(x, IndexedSlices):
            return IndexedSlices(cast(x.values, base, name=scope), x.indices, x.dense_shape)
        x = convert_to_tensor(x, name="x")
        if x.dtype == base:
            return x
        return make_op("Cast", [x], {"SrcT": x.dtype, "DstT": base, "Truncate": False}, name=scope).outputs[0]


def _cast_kernel(node, ctx):
    dst = dtypes.as_dtype(node.attr["DstT"])
    npd = dst.as_numpy_dtype
    src = dtypes.as_dtype(node.attr.get("SrcT", dst))
    if (src == dtypes.string) != (dst == dtypes.string):
        # TF has no Cast kernel to or from strings (tf.strings.to_number / as_string convert).
        tf_names = {"float32": "float", "float64": "double", "float16": "half"}   # TF's DataTypeString
        message = f"Cast {tf_names.get(src.name, src.name)} to {tf_names.get(dst.name, dst.name)} is not supported"

        def unsupported(x):
            raise errors.UnimplementedError(node, node.name, message)
        return unsupported

    def run(x):
        x = array_module(x).asarray(x)
        if x.dtype.kind == "c" and not dst.is_complex:
            x = np.real(x)
        out = x.astype(npd)
        return out[()] if out.ndim == 0 else out
    return run


def _cast_grad(op, grad):
    src, dst = dtypes.as_dtype(op.get_attr("SrcT")), dtypes.as_dtype(op.get_attr("DstT"))
    if src in FLOAT_COMPLEX and dst in FLOAT_COMPLEX:
        return [cast(grad, src)]
    return [None]


register("Cast", lambda op: [(op.get_attr("DstT"), op.inputs[0].shape)], _cast_kernel, grad=_cast_grad)
register_gpu("Cast")


@tf_export("to_float")
def to_float(x, name="ToFloat"):
    """tf.to_float(x, name='ToFloat'): cast to float32 (deprecated TF1 helper)."""
    return cast(x, dtypes.float32, name=name)


@tf_export("to_double")
def to_double(x, name="ToDouble"):
    """tf.to_double(x, name='ToDouble'): cast to float64."""
    return cast(x, dtypes.float64, name=name)


@tf_export("to_int32")
def to_int32(x, name="ToInt32"):
    """tf.to_int32(x, name='ToInt32'): cast to int32."""
    return cast(x, dtypes.int32, name=name)


@tf_export("to_int64")
def to_int64(x, name="ToInt64"):
    """tf.to_int64(x, name='ToInt64'): cast to int64."""
    return cast(x, dtypes.int64, name=name)


@tf_export("to_complex64")
def to_complex64(x, name="ToComplex64"):
    """tf.to_complex64(x, name='ToComplex64'): cast to complex64."""
    return cast(x, dtypes.complex64, name=name)


@tf_export("to_complex128")
def to_complex128(x, name="ToComplex128"):
    """tf.to_complex128(x, name='ToComplex128'): cast to complex128."""
    return cast(x, dtypes.complex128, name=name)


@tf_export("saturate_cast", "dtypes.saturate_cast")
def saturate_cast(value, dtype, name=None) -> Tensor:
    """tf.saturate_cast(value, dtype, name=None): cast, clamping to `dtype`'s range first."""
    with name_scope(name, "saturate_cast", [value]) as scope:
        value = convert_to_tensor(value, name="value")
        dtype = dtypes.as_dtype(dtype)
        src = value.dtype
        if src.is_complex and not dtype.is_complex:
            raise TypeError("saturate_cast of complex to real is not supported")
        if not src.is_bool and not dtype.is_bool and not dtype.is_complex:
            lo, hi = dtype.min, dtype.max
            if src.min < lo:
                lo_t = convert_to_tensor(lo, dtype=src, name="min")
                value = make_op("Maximum", [value, lo_t], {"T": src}).outputs[0]   # binary.py wraps it
            if src.max > hi:
                hi_v = np.asarray(hi, dtype=src.as_numpy_dtype)
                if src.is_floating and float(hi_v) > hi:  # hi rounds up in the float type: step below
                    hi_v = np.nextafter(hi_v, np.asarray(0, hi_v.dtype))
                hi_t = convert_to_tensor(hi_v, dtype=src, name="max")
                value = make_op("Minimum", [value, hi_t], {"T": src}).outputs[0]
        return cast(value, dtype, name=scope)


# -- Bitcast ------------------------------------------------------------------------------------------
_BITCAST_TYPES = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int8, dtypes.int16, dtypes.int32,
                  dtypes.int64, dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64, dtypes.complex64,
                  dtypes.complex128)


def _bitcast_infer(op):
    x, out = op.inputs[0], dtypes.as_dtype(op.get_attr("type"))
    if out not in _BITCAST_TYPES:
        raise TypeError(f"Value passed to parameter 'type' has DataType {out.name} not in list of allowed values")
    a, b = x.dtype.size, out.size
    if x.shape.ndims is None or a == b:
        return [(out, x.shape if a == b else TensorShape(None))]
    dims = x.shape.as_list()
    if a > b:
        return [(out, TensorShape(dims + [a // b]))]
    if not dims or dims[-1] not in (None, b // a):
        raise ValueError(f"Cannot bitcast from {x.dtype.name} to {out.name}: the last dimension of the input "
                         f"({dims[-1] if dims else 'a scalar'}) must be {b // a}")
    return [(out, TensorShape(dims[:-1]))]


def _bitcast_kernel(node, ctx):
    out = dtypes.as_dtype(node.attr["type"]).as_numpy_dtype

    def run(x):
        x = np.ascontiguousarray(x)
        a, b = x.dtype.itemsize, np.dtype(out).itemsize
        if a < b and (x.ndim == 0 or x.shape[-1] != b // a):
            raise errors.InvalidArgumentError(node, node.name, f"Cannot bitcast from {x.dtype} to {np.dtype(out)}: "
                                                               f"shape {list(x.shape)}")
        shape = x.shape + (a // b,) if a > b else x.shape[:-1] if a < b else x.shape
        return x.view(out).reshape(shape)
    return run


register("Bitcast", _bitcast_infer, _bitcast_kernel, grad=None, dtypes=_BITCAST_TYPES, dtype_param="input")


@tf_export("bitcast")
def bitcast(input, type, name=None):
    """tf.bitcast(input, type, name=None): the same bytes read as `type`, no copy of the data:
    a wider input gains a last dimension of size in_bytes / out_bytes, a narrower one loses its
    last dimension, which must be out_bytes / in_bytes."""
    x = convert_to_tensor(input, name="input")
    return make_op("Bitcast", [x], {"T": x.dtype, "type": dtypes.as_dtype(type)}, name=name or "Bitcast").outputs[0]
