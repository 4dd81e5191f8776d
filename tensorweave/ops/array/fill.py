"""Array ops that make new tensors: fill, zeros, ones, zeros_like, ones_like (range and linspace:
math/sequences.py)."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import as_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value_as_shape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import constant, index_tensor, reshape, shape
from tensorweave.ops.helpers import array_module, check_output_size, invalid, make_op, same_as_input, static_ints
from tensorweave.ops.registry import register, register_gpu



# -- Fill, zeros, ones, zeros_like, ones_like --------------------------------------------------
@tf_export("fill")
def fill(dims, value, name=None) -> Tensor:
    """tf.fill(dims, value, name=None): a tensor of shape `dims` filled with scalar `value`."""
    dims_t = index_tensor(dims)
    value = convert_to_tensor(value)
    return make_op("Fill", [dims_t, value], name=name or "Fill").outputs[0]


def _fill_infer(op):
    d, v = op.inputs
    if v.shape.ndims not in (None, 0):
        raise ValueError(f"Fill: value must be a scalar, got shape {v.shape}")
    value = static_ints(d)
    if value is not None and any(x < 0 for x in value):
        raise ValueError(f"Fill: dims must be non-negative, got {value}")
    out = constant_value_as_shape(d)
    check_output_size(op, out)
    return [(v.dtype, out)]


def _fill_kernel(node, ctx):
    def run(d, v):
        d = [int(x) for x in np.reshape(d, -1)]
        if any(x < 0 for x in d):
            raise invalid(node, f"dims must be non-negative, got {d}")
        if np.shape(v) != ():
            raise invalid(node, f"value must be a scalar, got shape {list(np.shape(v))}")
        check_output_size(node, d)
        xp = array_module(v)
        if xp is np:
            return np.full(d, v, dtype=np.asarray(v).dtype)
        out = xp.empty(d, dtype=v.dtype)
        out[...] = v   # (a device scalar: no trip through the host)
        return out
    return run


register("Fill", _fill_infer, _fill_kernel)   # gradient: array_grad.py
register_gpu("Fill", host_inputs=(0,))


def _filled(value, shape_arg, dtype, name, default_name):
    dtype = dtypes.as_dtype(dtype)
    with name_scope(name, default_name, [shape_arg] if isinstance(shape_arg, Tensor) else []) as scope:
        if not isinstance(shape_arg, Tensor):
            try:
                dims = as_shape(shape_arg)
                if dims.is_fully_defined() and dims.num_elements() < 1000:
                    return constant(value, dtype=dtype, shape=dims.as_list(), name=scope)
            except (TypeError, ValueError):
                pass
        shape_t = index_tensor(shape_arg, name="shape")
        if shape_t.shape.ndims == 0:
            shape_t = reshape(shape_t, [-1])
        return fill(shape_t, constant(value, dtype=dtype), name=scope)


def _zero(dtype):
    dtype = dtypes.as_dtype(dtype)
    return b"" if dtype is dtypes.string else False if dtype.is_bool else 0


@tf_export("zeros")
def zeros(shape, dtype=dtypes.float32, name=None) -> Tensor:
    """tf.zeros(shape, dtype=tf.float32, name=None)."""
    return _filled(_zero(dtype), shape, dtype, name, "zeros")


@tf_export("ones")
def ones(shape, dtype=dtypes.float32, name=None) -> Tensor:
    """tf.ones(shape, dtype=tf.float32, name=None)."""
    return _filled(True if dtypes.as_dtype(dtype).is_bool else 1, shape, dtype, name, "ones")


@tf_export("zeros_like")
def zeros_like(tensor, dtype=None, name=None, optimize: bool = True) -> Tensor:
    """tf.zeros_like(tensor, dtype=None, name=None, optimize=True)."""
    with name_scope(name, "zeros_like", [tensor] if isinstance(tensor, Tensor) else []) as scope:
        tensor = convert_to_tensor(tensor, name="tensor")
        if optimize and tensor.shape.is_fully_defined() and tensor.dtype is not dtypes.variant:
            return zeros(tensor.shape, dtype=dtype or tensor.dtype, name=scope)
        if dtype is not None and dtypes.as_dtype(dtype) != tensor.dtype:
            return zeros(shape(tensor), dtype=dtype, name=scope)
        return make_op("ZerosLike", [tensor], name=scope).outputs[0]


@tf_export("ones_like")
def ones_like(tensor, dtype=None, name=None, optimize: bool = True) -> Tensor:
    """tf.ones_like(tensor, dtype=None, name=None, optimize=True)."""
    with name_scope(name, "ones_like", [tensor] if isinstance(tensor, Tensor) else []) as scope:
        tensor = convert_to_tensor(tensor, name="tensor")
        dims = shape(tensor) if not (optimize and tensor.shape.is_fully_defined()) else tensor.shape
        out = ones(dims, dtype=dtype or tensor.dtype, name=scope)
        out.set_shape(tensor.shape)
        return out


def _zeros_like_kernel(node, ctx):
    def run(x):
        # a variant (a tensor list of the control-flow family) knows its own zeros
        return x.zeros_like() if hasattr(x, "zeros_like") else array_module(x).zeros_like(x)
    return run


register("ZerosLike", same_as_input(0), _zeros_like_kernel, grad=None)
register("OnesLike", same_as_input(0), lambda node, ctx: (lambda x: array_module(x).ones_like(x)), grad=None)
register_gpu("ZerosLike", "OnesLike")
