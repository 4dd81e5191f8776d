"""3-D convolution ops: Conv3D, Conv3DBackpropInputV2, Conv3DBackpropFilterV2 (kernels in
conv3d_kernels.py) and the conv3d, conv3d_transpose, conv3d_backprop_filter_v2 wrappers.

Layouts are NDHWC (TF's default) or NCDHW; kernels compute channels last.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value_as_shape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import FLOATS, check_output_size, invalid, make_op
from tensorweave.ops.nn import conv3d_kernels as kernels
from tensorweave.ops.nn.util import (as_str, backprop_grads, check_conv_windows, dims, shape_tensor, window_attr,
                                      window_out, window_pads)
from tensorweave.ops.registry import register


# -- layouts and attributes, shared with pool3d.py ---------------------------------------------
def check_format_5d(data_format, op_name: str) -> str:
    fmt = "NDHWC" if data_format is None else as_str(data_format)
    if fmt not in ("NDHWC", "NCDHW"):
        raise ValueError(f"{op_name}: data_format must be 'NDHWC' or 'NCDHW', got {data_format!r}")
    return fmt


def to_last(x: np.ndarray, fmt: str) -> np.ndarray:
    return x if fmt == "NDHWC" else x.transpose(0, 2, 3, 4, 1)


def from_last(x: np.ndarray, fmt: str) -> np.ndarray:
    return x if fmt == "NDHWC" else np.ascontiguousarray(x.transpose(0, 4, 1, 2, 3))


def last_dims(d: list, fmt: str) -> list:
    """[n, d, h, w, c] from 5 dims in `fmt` order."""
    return list(d) if fmt == "NDHWC" else [d[0], d[2], d[3], d[4], d[1]]


def fmt_dims(d: list, fmt: str) -> list:
    return list(d) if fmt == "NDHWC" else [d[0], d[4], d[1], d[2], d[3]]


five = partial(window_attr, spatial=3)


def spatial(value: list, fmt: str) -> list:
    """The three spatial entries of a 5-element attr."""
    return list(value[2:]) if fmt == "NCDHW" else list(value[1:4])


def check_padding_5d(padding, op_name: str) -> str:
    p = as_str(padding).upper() if isinstance(padding, (str, bytes)) else None
    if p not in ("SAME", "VALID"):
        raise ValueError(f"{op_name}: padding must be 'SAME' or 'VALID', got {padding!r}")
    return p


def rank5(shape: TensorShape, what: str) -> list:
    d = dims(shape)
    if d is not None and len(d) != 5:
        raise ValueError(f"Shape must be rank 5 but is rank {len(d)} for {what}")
    return d if d is not None else [None] * 5


def geometry(sizes, ks, strides, dilations, padding) -> tuple:
    """(kernels.Geometry, output sizes) for spatial `sizes` (ints)."""
    outs, pads = [], []
    for size, k, s, d in zip(sizes, ks, strides, dilations):
        o, before, after = window_pads(size, k, s, d, padding)
        outs.append(o)
        pads.append((before, after))
    return kernels.Geometry(tuple(strides), tuple(dilations), tuple(pads)), outs


# -- Conv3D -------------------------------------------------------------------------------------
def _attrs(strides, padding, data_format, dilations, op_name: str) -> dict:
    fmt = check_format_5d(data_format, op_name)
    st, dil = five(strides, fmt, "strides", op_name), five(dilations, fmt, "dilations", op_name)
    check_conv_windows(st, dil, 1 if fmt == "NCDHW" else 4, op_name)
    return {"strides": st, "padding": check_padding_5d(padding, op_name), "data_format": fmt, "dilations": dil}


def _op_attrs(op) -> dict:
    return {k: op.get_attr(k) for k in ("strides", "padding", "data_format", "dilations")}


def _node_geometry(node):
    fmt = as_str(node.attr["data_format"])
    return (fmt, spatial(node.attr["strides"], fmt), spatial(node.attr.get("dilations") or [1] * 5, fmt),
            as_str(node.attr["padding"]))


@tf_export("nn.conv3d")
def conv3d(input, filter=None, strides=None, padding=None, data_format="NDHWC",
           dilations=(1, 1, 1, 1, 1), name=None, filters=None):
    """tf.nn.conv3d(input, filter, strides, padding, data_format='NDHWC', dilations=[1, 1, 1, 1, 1],
    name=None): 3-D cross-correlation of a 5-D input with a [depth, height, width, in_channels,
    out_channels] filter; strides and dilations have 5 entries (batch and channel ones 1)."""
    filter = filters if filter is None else filter
    if filter is None or strides is None or padding is None:
        raise TypeError("conv3d() missing required arguments: filter, strides and padding")
    input = convert_to_tensor(input)
    filter = convert_to_tensor(filter, dtype=input.dtype)
    attrs = dict(_attrs(strides, padding, data_format, dilations, "Conv3D"), T=input.dtype)
    return make_op("Conv3D", [input, filter], attrs, name=name or "Conv3D").outputs[0]


def _out_shape(attrs, xd, fd) -> TensorShape:
    fmt = as_str(attrs["data_format"])
    n, *sp, c = last_dims(xd, fmt)
    if c is not None and fd[3] is not None and c != fd[3]:
        raise ValueError(f"Depth of input ({c}) must equal the input depth of filter ({fd[3]})")
    st, dil = spatial(attrs["strides"], fmt), spatial(attrs["dilations"], fmt)
    outs = [None if k is None else window_out(s, k, stv, d, as_str(attrs["padding"]))
            for s, k, stv, d in zip(sp, fd[:3], st, dil)]
    return TensorShape(fmt_dims([n, *outs, fd[4]], fmt))


def _conv3d_infer(op):
    x, f = op.inputs
    return [(x.dtype, _out_shape(_op_attrs(op), rank5(x.shape, "input"), rank5(f.shape, "filter")))]


def _conv3d_kernel(node, ctx):
    fmt, st, dil, pad = _node_geometry(node)

    def run(x, w):
        x = to_last(x, fmt)
        if x.shape[4] != w.shape[3]:
            raise invalid(node, f"input depth must be equal to filter depth: {x.shape[4]} vs {w.shape[3]}")
        g, _ = geometry(x.shape[1:4], w.shape[:3], st, dil, pad)
        return from_last(kernels.conv(x, w, g), fmt)
    return run


def _conv3d_grad(op, grad):
    attrs = _op_attrs(op)
    x, f = op.inputs
    return [_backprop_input(shape_tensor(x), f, grad, attrs), _backprop_filter(x, shape_tensor(f), grad, attrs)]


register("Conv3D", _conv3d_infer, _conv3d_kernel, grad=_conv3d_grad, dtypes=FLOATS, dtype_param="input")


# -- the backprops ------------------------------------------------------------------------------
def _backprop_input(input_sizes, filter, out_backprop, attrs, name=None):
    return make_op("Conv3DBackpropInputV2", [input_sizes, filter, out_backprop], dict(attrs, T=out_backprop.dtype),
                   name=name or "Conv3DBackpropInputV2").outputs[0]


def _backprop_filter(input, filter_sizes, out_backprop, attrs, name=None):
    return make_op("Conv3DBackpropFilterV2", [input, filter_sizes, out_backprop], dict(attrs, T=out_backprop.dtype),
                   name=name or "Conv3DBackpropFilterV2").outputs[0]


def _sizes(t, what: str) -> list:
    named = constant_value_as_shape(t)
    d = dims(named) if named.ndims is not None else [None] * 5
    if len(d) != 5:
        raise ValueError(f"{what} must be a 5-element vector, got {named}")
    return d


def _check_dy(op, xd, fd, dyd) -> None:
    if None in xd or None in fd:
        return
    fwd = _out_shape(_op_attrs(op), xd, fd)
    if not fwd.is_compatible_with(TensorShape(dyd)):
        raise ValueError(f"{op.type}: out_backprop shape {TensorShape(dyd)} does not match the forward output shape "
                         f"{fwd} for input {TensorShape(xd)} and filter {TensorShape(fd)}")


def _backprop_input_infer(op):
    sizes, f, dy = op.inputs
    xd = _sizes(sizes, "input_sizes")
    check_output_size(op, xd)
    _check_dy(op, xd, rank5(f.shape, "filter"), rank5(dy.shape, "out_backprop"))
    return [(dy.dtype, TensorShape(xd))]


def _backprop_filter_infer(op):
    x, sizes, dy = op.inputs
    fd = _sizes(sizes, "filter_sizes")
    check_output_size(op, fd)
    _check_dy(op, rank5(x.shape, "input"), fd, rank5(dy.shape, "out_backprop"))
    return [(dy.dtype, TensorShape(fd))]


def _backprop_input_kernel(node, ctx):
    fmt, st, dil, pad = _node_geometry(node)

    def run(sizes, w, dy):
        xs = last_dims([int(v) for v in sizes], fmt)
        check_output_size(node, xs)
        dy = to_last(dy, fmt)
        g, outs = geometry(xs[1:4], w.shape[:3], st, dil, pad)
        if list(dy.shape) != [xs[0], *outs, w.shape[4]] or xs[4] != w.shape[3]:
            raise invalid(node, f"Conv3DBackpropInputV2: shapes do not agree: input_sizes {list(sizes)}, "
                                f"filter {list(w.shape)}, out_backprop {list(dy.shape)}")
        return from_last(kernels.conv_input_grad(xs, w, dy, g), fmt)
    return run


def _backprop_filter_kernel(node, ctx):
    fmt, st, dil, pad = _node_geometry(node)

    def run(x, sizes, dy):
        fs = [int(v) for v in sizes]
        check_output_size(node, fs)
        x, dy = to_last(x, fmt), to_last(dy, fmt)
        g, outs = geometry(x.shape[1:4], fs[:3], st, dil, pad)
        if list(dy.shape) != [x.shape[0], *outs, fs[4]] or x.shape[4] != fs[3]:
            raise invalid(node, f"Conv3DBackpropFilterV2: shapes do not agree: input {list(x.shape)}, "
                                f"filter_sizes {fs}, out_backprop {list(dy.shape)}")
        return kernels.conv_filter_grad(x, dy, fs[:3], g)
    return run


_input_grad, _filter_grad = backprop_grads("Conv3D", _op_attrs, _backprop_input, _backprop_filter)


register("Conv3DBackpropInputV2", _backprop_input_infer, _backprop_input_kernel, grad=_input_grad)
register("Conv3DBackpropFilterV2", _backprop_filter_infer, _backprop_filter_kernel, grad=_filter_grad)


@tf_export("nn.conv3d_backprop_filter", "nn.conv3d_backprop_filter_v2")
def conv3d_backprop_filter_v2(input, filter_sizes, out_backprop, strides, padding,
                              data_format="NDHWC", dilations=(1, 1, 1, 1, 1), name=None):
    """tf.nn.conv3d_backprop_filter_v2(input, filter_sizes, out_backprop, strides, padding,
    data_format='NDHWC', dilations=[1, 1, 1, 1, 1], name=None): the gradient of conv3d with
    respect to its filter."""
    input = convert_to_tensor(input)
    attrs = _attrs(strides, padding, data_format, dilations, "Conv3DBackpropFilterV2")
    return _backprop_filter(input, convert_to_tensor(filter_sizes, dtype=dtypes.int32),
                            convert_to_tensor(out_backprop, dtype=input.dtype), attrs, name)


conv3d_backprop_filter = conv3d_backprop_filter_v2


@tf_export("nn.conv3d_transpose")
def conv3d_transpose(value=None, filter=None, output_shape=None, strides=None, padding="SAME",
                     data_format="NDHWC", name=None, input=None, filters=None, dilations=None):
    """tf.nn.conv3d_transpose(value, filter, output_shape, strides, padding='SAME',
    data_format='NDHWC', name=None): the gradient of conv3d with respect to its input; `filter`
    is [depth, height, width, output_channels, in_channels]."""
    value = convert_to_tensor(input if value is None else value)
    filter = convert_to_tensor(filters if filter is None else filter, dtype=value.dtype)
    output_shape = convert_to_tensor(output_shape, dtype=dtypes.int32)
    fmt = check_format_5d(data_format, "conv3d_transpose")
    c_axis = 1 if fmt == "NCDHW" else 4
    fd, vd = dims(filter.shape), dims(value.shape)
    if vd is not None and fd is not None and None not in (vd[c_axis], fd[4]) and vd[c_axis] != fd[4]:
        raise ValueError(f"conv3d_transpose: input channels does not match filter's input channels, "
                         f"{vd[c_axis]} != {fd[4]}")
    attrs = _attrs(strides, padding, fmt, dilations, "Conv3DBackpropInputV2")
    return _backprop_input(output_shape, filter, value, attrs, name or "conv3d_transpose")
