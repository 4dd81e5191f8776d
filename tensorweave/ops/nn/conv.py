"""Convolution ops: Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter, DepthwiseConv2dNative
and its backprops; the conv2d, conv2d_transpose, depthwise_conv2d, separable_conv2d wrappers."""
from __future__ import annotations

from functools import partial
from typing import Callable, Optional

import numpy as np

import tensorweave.ops.cudnn as cudnn
import tensorweave.ops.onednn as onednn
from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value_as_shape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import shape
from tensorweave.ops.helpers import check_output_size, invalid, make_op
from tensorweave.ops.intra_op import run_calls
from tensorweave.ops.nn import conv_kernels, im2col
from tensorweave.ops.nn.util import (as_str, backprop_grads, check_conv_windows, check_data_format, check_padding,
                                      dims, fmt_dims, from_nhwc, nhwc_dims, rank4, shape_tensor, spatial_axes, to_nhwc,
                                      window_attr, window_out, window_pads)
from tensorweave.ops.registry import register, register_gpu


# -- attribute handling ------------------------------------------------------------------------
_four = partial(window_attr, spatial=2)


def _attrs(strides, padding, data_format, dilations, op_name: str) -> dict:
    fmt = check_data_format(data_format, op_name)
    pad, explicit = check_padding(padding, op_name)
    attrs = {"strides": _four(strides, fmt, "strides", op_name), "padding": pad,
             "data_format": fmt, "dilations": _four(dilations, fmt, "dilations", op_name),
             "explicit_paddings": [v for p in explicit for v in p] if explicit else []}
    return attrs


def _geometry(attrs, in_h, in_w, kh, kw, op_name: str):
    """(Geometry in NHWC terms, out_h, out_w) from an op's attrs; None sizes stay None."""
    fmt = attrs["data_format"]
    st, dil = attrs["strides"], attrs["dilations"]
    c_axis, (ha, wa) = spatial_axes(fmt)
    check_conv_windows(st, dil, c_axis, op_name)
    pad = as_str(attrs["padding"])
    ex = list(attrs.get("explicit_paddings") or [0] * 8)
    if pad == "EXPLICIT" and len(ex) != 8:
        raise ValueError(f"{op_name}: explicit_paddings must have 8 entries, got {len(ex)}")
    if pad != "EXPLICIT":
        ex = [0] * 8
    eh, ew = (ex[2 * ha], ex[2 * ha + 1]), (ex[2 * wa], ex[2 * wa + 1])
    if in_h is None or in_w is None:
        return None, window_out(in_h, kh, st[ha], dil[ha], pad, eh), window_out(in_w, kw, st[wa], dil[wa], pad, ew)
    oh, pt, pb = window_pads(in_h, kh, st[ha], dil[ha], pad, eh)
    ow, pl, pr = window_pads(in_w, kw, st[wa], dil[wa], pad, ew)
    return conv_kernels.Geometry(st[ha], st[wa], dil[ha], dil[wa], pt, pb, pl, pr), oh, ow


def _node_attrs(node) -> dict:
    a = node.attr
    return {"strides": list(a["strides"]), "padding": as_str(a["padding"]),
            "data_format": as_str(a.get("data_format", "NHWC")),
            "dilations": list(a.get("dilations") or [1, 1, 1, 1]),
            "explicit_paddings": list(a.get("explicit_paddings") or [])}


def _op_attrs(op) -> dict:
    return {k: op.get_attr(k) for k in ("strides", "padding", "data_format", "dilations", "explicit_paddings")}


def _conv_out_shape(op, xd, fd, depthwise: bool):
    """Static NHWC->fmt output shape of a (depthwise) conv; checks channel agreement."""
    attrs = _op_attrs(op)
    fmt = as_str(attrs["data_format"])
    n, h, w, c = nhwc_dims(xd, fmt)
    kh, kw, fci, fco = fd
    if c is not None and fci is not None:
        if depthwise and c != fci:
            raise ValueError(f"input and filter must have the same depth: {c} vs {fci}")
        if not depthwise and (fci == 0 or c % fci != 0):
            raise ValueError(f"Depth of input ({c}) is not a multiple of input depth of filter ({fci})")
    _, oh, ow = _geometry(attrs, None, None, 1, 1, op.name)  # validates strides/dilations
    st, dil, pad = attrs["strides"], attrs["dilations"], as_str(attrs["padding"])
    _, (ha, wa) = spatial_axes(fmt)
    ex = list(attrs["explicit_paddings"] or [0] * 8)
    oh = None if kh is None else window_out(h, kh, st[ha], dil[ha], pad, ex[2 * ha:2 * ha + 2])
    ow = None if kw is None else window_out(w, kw, st[wa], dil[wa], pad, ex[2 * wa:2 * wa + 2])
    if depthwise:
        co = None if fci is None or fco is None else fci * fco
    else:
        co = fco
    return TensorShape(fmt_dims([n, oh, ow, co], fmt))


# -- Conv2D ------------------------------------------------------------------------------------
@tf_export("nn.conv2d")
def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,
           data_format="NHWC", dilations=(1, 1, 1, 1), name=None, filters=None):
    """tf.nn.conv2d(input, filter, strides, padding, use_cudnn_on_gpu=True, data_format='NHWC',
    dilations=[1, 1, 1, 1], name=None): 2-D cross-correlation of a 4-D input with a
    [height, width, in_channels, out_channels] filter. `padding` is 'SAME', 'VALID' or a list of
    4 [before, after] pairs in data_format order."""
    if filter is None:
        filter = filters
    if filter is None or strides is None or padding is None:
        raise TypeError("conv2d() missing required arguments: filter, strides and padding")
    input = convert_to_tensor(input)
    filter = convert_to_tensor(filter, dtype=input.dtype)
    attrs = _attrs(strides, padding, data_format, dilations, "Conv2D")
    attrs["use_cudnn_on_gpu"] = bool(use_cudnn_on_gpu)
    attrs["T"] = input.dtype
    return make_op("Conv2D", [input, filter], attrs, name=name or "Conv2D").outputs[0]


def _conv2d_infer(op):
    x, f = op.inputs
    if not x.dtype.is_floating and x.dtype not in (dtypes.int32,):
        raise ValueError(f"Conv2D does not support dtype {x.dtype.name}")
    xd, fd = rank4(x.shape, "input"), rank4(f.shape, "filter")
    return [(x.dtype, _conv_out_shape(op, xd, fd, False))]


def _conv2d_kernel(node, ctx, gpu=False):
    """Conv2D's kernel: oneDNN's (or conv_kernels') on the CPU; with `gpu`, cuDNN's where it
    takes the convolution, else im2col's, written against its inputs' array module."""
    attrs = _node_attrs(node)
    fmt = attrs["data_format"]
    ws = conv_kernels.Workspace()

    def run(x, w):
        x = to_nhwc(x, fmt)
        if x.shape[3] != w.shape[2]:
            raise invalid(node, f"input depth must be evenly divisible by filter depth: {x.shape[3]} vs "
                                  f"{w.shape[2]} (grouped convolution is not supported)")
        g, oh, ow = _geometry(attrs, x.shape[1], x.shape[2], w.shape[0], w.shape[1], node.name)
        if gpu:
            y = cudnn.conv2d(x, w, g, oh, ow)
            return from_nhwc(im2col.conv2d(x, w, g, oh, ow) if y is None else y, fmt)
        y = onednn.conv2d(x, w, g, oh, ow)
        return from_nhwc(conv_kernels.conv2d_nhwc(x, w, g, ws) if y is None else y, fmt)
    return run


def conv2d_bias_kernel(node, relu: bool):
    """Conv2D `node` and the BiasAdd reading it (and the Relu reading that, with `relu`) as one
    kernel run(x, w, bias): oneDNN's fused convolution (onednn.conv2d_bias), or None where it
    does not apply or would give other bits (the ops' own kernels then run). A plan's fusion
    pass (runtime/fusion.py) makes it where nothing else reads the intermediate values, as
    grappler's remapper makes TF's _FusedConv2D."""
    attrs = _node_attrs(node)

    def run(x, w, bias):
        if (attrs["data_format"] != "NHWC" or type(x) is not np.ndarray or type(w) is not np.ndarray
                or type(bias) is not np.ndarray or x.ndim != 4 or w.ndim != 4 or x.shape[3] != w.shape[2]):
            return None
        g, oh, ow = _geometry(attrs, x.shape[1], x.shape[2], w.shape[0], w.shape[1], node.name)
        return onednn.conv2d_bias(x, w, bias, g, oh, ow, relu, run_calls)
    return run


def _conv2d_grad(op, grad):
    attrs = _op_attrs(op)
    x, f = op.inputs
    dx = _conv_backprop_input(shape_tensor(x), f, grad, attrs)
    df = _conv_backprop_filter(x, shape_tensor(f), grad, attrs)
    return [dx, df]


register("Conv2D", _conv2d_infer, _conv2d_kernel, grad=_conv2d_grad)
register_gpu("Conv2D", kernel=partial(_conv2d_kernel, gpu=True))


# -- Conv2DBackpropInput / Conv2DBackpropFilter ------------------------------------------------
def _conv_backprop_input(input_sizes, filter, out_backprop, attrs, name=None):
    attrs = dict(attrs, T=out_backprop.dtype)
    return make_op("Conv2DBackpropInput", [input_sizes, filter, out_backprop], attrs,
                   name=name or "Conv2DBackpropInput").outputs[0]


def _conv_backprop_filter(input, filter_sizes, out_backprop, attrs, name=None):
    attrs = dict(attrs, T=out_backprop.dtype)
    return make_op("Conv2DBackpropFilter", [input, filter_sizes, out_backprop], attrs,
                   name=name or "Conv2DBackpropFilter").outputs[0]


@tf_export("nn.conv2d_backprop_input")
def conv2d_backprop_input(input_sizes, filter=None, out_backprop=None, strides=None, padding=None,
                          use_cudnn_on_gpu=True, data_format="NHWC", dilations=(1, 1, 1, 1), name=None,
                          filters=None):
    """tf.nn.conv2d_backprop_input(input_sizes, filter, out_backprop, strides, padding, ...)."""
    filter = filters if filter is None else filter
    out_backprop = convert_to_tensor(out_backprop)
    attrs = _attrs(strides, padding, data_format, dilations, "Conv2DBackpropInput")
    return _conv_backprop_input(convert_to_tensor(input_sizes, dtype=dtypes.int32),
                                convert_to_tensor(filter, dtype=out_backprop.dtype), out_backprop, attrs, name)


@tf_export("nn.conv2d_backprop_filter")
def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding, use_cudnn_on_gpu=True,
                           data_format="NHWC", dilations=(1, 1, 1, 1), name=None):
    """tf.nn.conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding, ...)."""
    input = convert_to_tensor(input)
    attrs = _attrs(strides, padding, data_format, dilations, "Conv2DBackpropFilter")
    return _conv_backprop_filter(input, convert_to_tensor(filter_sizes, dtype=dtypes.int32),
                                 convert_to_tensor(out_backprop, dtype=input.dtype), attrs, name)


def _explicit_pairs(padding, explicit_paddings):
    """TF's padding="EXPLICIT" with a flat explicit_paddings list, as the [before, after] pairs
    tf.nn.conv2d takes; 'SAME'/'VALID' as they are."""
    if as_str(padding).upper() != "EXPLICIT":
        return padding
    flat = list(explicit_paddings)
    return [flat[i:i + 2] for i in range(0, len(flat), 2)]


@tf_export("conv2d_backprop_input_v2")
def conv2d_backprop_input_v2(input, filter, out_backprop, strides, padding, use_cudnn_on_gpu=True,
                             explicit_paddings=(), data_format="NHWC", dilations=(1, 1, 1, 1), name=None):
    """tf.conv2d_backprop_input_v2(input, filter, out_backprop, strides, padding, ...): as
    tf.nn.conv2d_backprop_input, taking the input tensor itself (only its shape is used) for
    input_sizes."""
    padding = _explicit_pairs(padding, explicit_paddings)
    return conv2d_backprop_input(shape(input), filter, out_backprop, strides, padding,
                                 data_format=data_format, dilations=dilations, name=name)


@tf_export("conv2d_backprop_filter_v2")
def conv2d_backprop_filter_v2(input, filter, out_backprop, strides, padding, use_cudnn_on_gpu=True,
                              explicit_paddings=(), data_format="NHWC", dilations=(1, 1, 1, 1), name=None):
    """tf.conv2d_backprop_filter_v2(input, filter, out_backprop, strides, padding, ...): as
    tf.nn.conv2d_backprop_filter, taking the filter tensor itself (only its shape is used) for
    filter_sizes."""
    padding = _explicit_pairs(padding, explicit_paddings)
    return conv2d_backprop_filter(input, shape(filter), out_backprop, strides, padding,
                                  data_format=data_format, dilations=dilations, name=name)


def _check_dy(op, xd, fd, dyd, depthwise):
    """The output gradient's static shape must be the forward output's shape."""
    if None in xd or None in fd:
        return
    fwd = _conv_out_shape(op, xd, fd, depthwise)
    if not fwd.is_compatible_with(TensorShape(dyd)):
        raise ValueError(f"Conv2DCustomBackprop: out_backprop shape {TensorShape(dyd)} does not match the "
                         f"forward output shape {fwd} for input {TensorShape(xd)} and filter {TensorShape(fd)}")


def _sizes_dims(sizes, what: str) -> list:
    """The 4 dims an input_sizes/filter_sizes vector names (None where unknown at build time)."""
    named = constant_value_as_shape(sizes)
    result = dims(named) if named.ndims is not None else [None] * 4
    if len(result) != 4:
        raise ValueError(f"{what} must be a 4-element vector, got {named}")
    return result


def _backprop_input_infer(op):
    sizes, f, dy = op.inputs
    xd = _sizes_dims(sizes, "input_sizes")
    check_output_size(op, xd)
    fd, dyd = rank4(f.shape, "filter"), rank4(dy.shape, "out_backprop")
    _check_dy(op, xd, fd, dyd, op.type.startswith("Depthwise"))
    return [(dy.dtype, TensorShape(xd))]


def _backprop_filter_infer(op):
    x, sizes, dy = op.inputs
    fd = _sizes_dims(sizes, "filter_sizes")
    check_output_size(op, fd)
    xd, dyd = rank4(x.shape, "input"), rank4(dy.shape, "out_backprop")
    _check_dy(op, xd, fd, dyd, op.type.startswith("Depthwise"))
    return [(dy.dtype, TensorShape(fd))]


def _backprop_input_kernel(node, ctx, gpu=False):
    attrs = _node_attrs(node)
    fmt = attrs["data_format"]
    ws = conv_kernels.Workspace()
    depthwise = node.op.startswith("Depthwise")

    def run(sizes, w, dy):
        n, h, wd, c = nhwc_dims([int(v) for v in sizes], fmt)
        check_output_size(node, [n, h, wd, c])
        dy = to_nhwc(dy, fmt)
        g, oh, ow = _geometry(attrs, h, wd, w.shape[0], w.shape[1], node.name)
        want_c = w.shape[2] * w.shape[3] if depthwise else w.shape[3]
        if (dy.shape[0], dy.shape[1], dy.shape[2], dy.shape[3]) != (n, oh, ow, want_c) or c != w.shape[2]:
            raise invalid(node, f"Conv2DCustomBackpropInput: shapes do not agree: input_sizes "
                                  f"{list(sizes)}, filter {list(w.shape)}, out_backprop {list(dy.shape)}")
        if gpu:
            if depthwise or (dx := cudnn.conv2d_input_grad((n, h, wd, c), w, dy, g)) is None:
                dx = (im2col.depthwise_input_grad if depthwise else im2col.conv2d_input_grad)((n, h, wd, c), w, dy, g)
            return from_nhwc(dx, fmt)
        if (dx := onednn.conv2d_input_grad((n, h, wd, c), w, dy, g, depthwise)) is None:
            dx = (conv_kernels.depthwise_input_grad_nhwc((n, h, wd, c), w, dy, g) if depthwise else
                  conv_kernels.conv2d_input_grad_nhwc((n, h, wd, c), w, dy, g, ws))
        return from_nhwc(np.ascontiguousarray(dx), fmt)
    return run


def _backprop_filter_kernel(node, ctx, gpu=False):
    attrs = _node_attrs(node)
    fmt = attrs["data_format"]
    ws = conv_kernels.Workspace()
    depthwise = node.op.startswith("Depthwise")

    def run(x, sizes, dy):
        kh, kw, ci, co = (int(v) for v in sizes)
        check_output_size(node, [kh, kw, ci, co])
        x, dy = to_nhwc(x, fmt), to_nhwc(dy, fmt)
        g, oh, ow = _geometry(attrs, x.shape[1], x.shape[2], kh, kw, node.name)
        want_c = ci * co if depthwise else co
        if dy.shape[1:] != (oh, ow, want_c) or x.shape[3] != ci or dy.shape[0] != x.shape[0]:
            raise invalid(node, f"Conv2DCustomBackpropFilter: shapes do not agree: input {list(x.shape)}, "
                                  f"filter_sizes {list(sizes)}, out_backprop {list(dy.shape)}")
        if gpu:
            if depthwise or (dw := cudnn.conv2d_filter_grad(x, dy, kh, kw, g)) is None:
                dw = (im2col.depthwise_filter_grad if depthwise else im2col.conv2d_filter_grad)(x, dy, kh, kw, g)
            return dw
        if (dw := onednn.conv2d_filter_grad(x, dy, kh, kw, g, depthwise)) is not None:
            return dw
        if depthwise:
            return conv_kernels.depthwise_filter_grad_nhwc(x, dy, kh, kw, g)
        return conv_kernels.conv2d_filter_grad_nhwc(x, dy, kh, kw, g, ws)
    return run


def conv2d_grads_kernel(filter_node, input_node=None, bias_grad: Optional[Callable] = None):
    """Conv2DBackpropFilter `filter_node`, with the Conv2DBackpropInput `input_node` and the
    BiasAddGrad kernel `bias_grad` of the same out_backprop where given, as one kernel
    run(x, filter_sizes, dy, input_sizes, w, bias_dy) -> [dw, dx or None, db or None] (the bias's
    gradient of bias_dy, the value BiasAdd's gradient passed on as dy; None for what is not
    computed): the products at once on this thread and the intra-op threads, each on one thread
    (onednn.conv2d_grad_calls: the team's bits), the bias's gradient on the thread free first; or
    None where that does not apply (the ops' own kernels then run). A plan's fusion pass
    (runtime/fusion.py) makes it where the ops read one out_backprop, as TF's executor would run
    them at once."""
    attrs = _node_attrs(filter_node)
    same = attrs["data_format"] == "NHWC" and filter_node.op == "Conv2DBackpropFilter" and (
        input_node is None or (input_node.op == "Conv2DBackpropInput" and _node_attrs(input_node) == attrs))

    def run(x, filter_sizes, dy, input_sizes, w, bias_dy):
        w_shape = tuple(int(v) for v in filter_sizes)
        plain = same and len(w_shape) == 4 and all(type(a) is np.ndarray and a.ndim == 4 for a in (x, dy))
        if not plain or (input_node is not None and (
                type(w) is not np.ndarray or tuple(int(v) for v in input_sizes) != x.shape)):
            return None
        g, oh, ow = _geometry(attrs, x.shape[1], x.shape[2], w_shape[0], w_shape[1], filter_node.name)
        if dy.shape != (x.shape[0], oh, ow, w_shape[3]) or \
                (calls := onednn.conv2d_grad_calls(x, dy, w_shape, g, w)) is None:
            return None
        if bias_grad is not None:
            calls.append(lambda: bias_grad(bias_dy))
        out = run_calls(calls)
        dx = np.ascontiguousarray(out.pop(0)) if input_node is not None else None
        return [out[0], dx, out[1] if bias_grad is not None else None]
    return run


_input_grad, _filter_grad = backprop_grads("Conv2D", _op_attrs, _conv_backprop_input, _conv_backprop_filter)


register("Conv2DBackpropInput", _backprop_input_infer, _backprop_input_kernel, grad=_input_grad)
register_gpu("Conv2DBackpropInput", host_inputs=(0,), kernel=partial(_backprop_input_kernel, gpu=True))
register("Conv2DBackpropFilter", _backprop_filter_infer, _backprop_filter_kernel, grad=_filter_grad)
register_gpu("Conv2DBackpropFilter", host_inputs=(1,), kernel=partial(_backprop_filter_kernel, gpu=True))


@tf_export("nn.conv2d_transpose")
def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None, padding="SAME",
                     data_format="NHWC", name=None, input=None, filters=None, dilations=None):
    """tf.nn.conv2d_transpose(value, filter, output_shape, strides, padding='SAME',
    data_format='NHWC', name=None): the gradient of conv2d with respect to its input; `filter` is
    [height, width, output_channels, in_channels]."""
    value = input if value is None else value
    filter = filters if filter is None else filter
    value = convert_to_tensor(value)
    filter = convert_to_tensor(filter, dtype=value.dtype)
    output_shape = convert_to_tensor(output_shape, dtype=dtypes.int32)
    fmt = check_data_format(data_format, "conv2d_transpose")
    c_axis = 1 if fmt == "NCHW" else 3
    fd, vd = dims(filter.shape), dims(value.shape)
    if vd is not None and fd is not None and vd[c_axis] is not None and fd[3] is not None \
            and vd[c_axis] != fd[3]:
        raise ValueError(f"conv2d_transpose: input channels does not match filter's input channels, "
                         f"{vd[c_axis]} != {fd[3]} (value shape {value.shape}, filter shape {filter.shape})")
    os_ = dims(constant_value_as_shape(output_shape)) if output_shape.shape.ndims == 1 else None
    if os_ is not None and len(os_) == 4 and fd is not None and os_[c_axis] is not None \
            and fd[2] is not None and os_[c_axis] != fd[2]:
        raise ValueError(f"conv2d_transpose: output_shape does not match filter's output channels, "
                         f"{os_[c_axis]} != {fd[2]}")
    attrs = _attrs(strides, padding, fmt, dilations, "Conv2DBackpropInput")
    return _conv_backprop_input(output_shape, filter, value, attrs, name or "conv2d_transpose")


# -- depthwise ---------------------------------------------------------------------------------
@tf_export("nn.depthwise_conv2d_native")
def depthwise_conv2d_native(input, filter, strides, padding, data_format="NHWC",
                            dilations=(1, 1, 1, 1), name=None):
    """tf.nn.depthwise_conv2d_native(input, filter, strides, padding, data_format='NHWC',
    dilations=[1, 1, 1, 1], name=None): filter [h, w, in_channels, channel_multiplier]."""
    input = convert_to_tensor(input)
    filter = convert_to_tensor(filter, dtype=input.dtype)
    attrs = _attrs(strides, padding, data_format, dilations, "DepthwiseConv2dNative")
    attrs["T"] = input.dtype
    return make_op("DepthwiseConv2dNative", [input, filter], attrs, name=name or "DepthwiseConv2dNative").outputs[0]


@tf_export("nn.depthwise_conv2d")
def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None, data_format=None,
                     dilations=None):
    """tf.nn.depthwise_conv2d(input, filter, strides, padding, rate=None, name=None,
    data_format=None): per-channel conv; `rate` (or dilations) is the 2-D dilation."""
    rate = dilations if rate is None else rate
    fmt = check_data_format(data_format, "depthwise_conv2d")
    return depthwise_conv2d_native(input, filter, strides, padding, fmt,
                                   _four(rate or 1, fmt, "rate", "depthwise_conv2d"), name=name or "depthwise")


def _depthwise_infer(op):
    x, f = op.inputs
    xd, fd = rank4(x.shape, "input"), rank4(f.shape, "filter")
    return [(x.dtype, _conv_out_shape(op, xd, fd, True))]


def _depthwise_kernel(node, ctx, gpu=False):
    attrs = _node_attrs(node)
    fmt = attrs["data_format"]

    def run(x, w):
        x = to_nhwc(x, fmt)
        if x.shape[3] != w.shape[2]:
            raise invalid(node, f"input and filter must have the same depth: {x.shape[3]} vs {w.shape[2]}")
        g, oh, ow = _geometry(attrs, x.shape[1], x.shape[2], w.shape[0], w.shape[1], node.name)
        if gpu:
            return from_nhwc(im2col.depthwise(x, w, g, oh, ow), fmt)
        y = onednn.conv2d(x, w, g, oh, ow, depthwise=True)
        return from_nhwc(conv_kernels.depthwise_nhwc(x, w, g) if y is None else y, fmt)
    return run


def _depthwise_grad(op, grad):
    attrs = dict(_op_attrs(op), T=grad.dtype)
    x, f = op.inputs
    dx = make_op("DepthwiseConv2dNativeBackpropInput", [shape_tensor(x), f, grad], attrs,
                 name="DepthwiseConv2dNativeBackpropInput").outputs[0]
    df = make_op("DepthwiseConv2dNativeBackpropFilter", [x, shape_tensor(f), grad], attrs,
                 name="DepthwiseConv2dNativeBackpropFilter").outputs[0]
    return [dx, df]


register("DepthwiseConv2dNative", _depthwise_infer, _depthwise_kernel, grad=_depthwise_grad)
register_gpu("DepthwiseConv2dNative", kernel=partial(_depthwise_kernel, gpu=True))


@tf_export("nn.depthwise_conv2d_backprop_input", "nn.depthwise_conv2d_native_backprop_input")
def depthwise_conv2d_native_backprop_input(input_sizes, filter, out_backprop, strides, padding,
                                           data_format="NHWC", dilations=(1, 1, 1, 1), name=None):
    """tf.nn.depthwise_conv2d_native_backprop_input(input_sizes, filter, out_backprop, strides,
    padding, data_format='NHWC', dilations=[1, 1, 1, 1], name=None): the input gradient of
    depthwise_conv2d_native (also tf.nn.depthwise_conv2d_backprop_input)."""
    out_backprop = convert_to_tensor(out_backprop)
    attrs = dict(_attrs(strides, padding, data_format, dilations, "DepthwiseConv2dNativeBackpropInput"),
                 T=out_backprop.dtype)
    return make_op("DepthwiseConv2dNativeBackpropInput", [convert_to_tensor(input_sizes, dtype=dtypes.int32),
                                                          convert_to_tensor(filter, dtype=out_backprop.dtype),
                                                          out_backprop], attrs,
                   name=name or "DepthwiseConv2dNativeBackpropInput").outputs[0]


@tf_export("nn.depthwise_conv2d_backprop_filter", "nn.depthwise_conv2d_native_backprop_filter")
def depthwise_conv2d_native_backprop_filter(input, filter_sizes, out_backprop, strides, padding,
                                            data_format="NHWC", dilations=(1, 1, 1, 1), name=None):
    """tf.nn.depthwise_conv2d_native_backprop_filter(input, filter_sizes, out_backprop, strides,
    padding, data_format='NHWC', dilations=[1, 1, 1, 1], name=None): the filter gradient of
    depthwise_conv2d_native (also tf.nn.depthwise_conv2d_backprop_filter)."""
    input = convert_to_tensor(input)
    attrs = dict(_attrs(strides, padding, data_format, dilations, "DepthwiseConv2dNativeBackpropFilter"),
                 T=input.dtype)
    return make_op("DepthwiseConv2dNativeBackpropFilter", [input, convert_to_tensor(filter_sizes, dtype=dtypes.int32),
                                                           convert_to_tensor(out_backprop, dtype=input.dtype)], attrs,
                   name=name or "DepthwiseConv2dNativeBackpropFilter").outputs[0]
register("DepthwiseConv2dNativeBackpropInput", _backprop_input_infer, _backprop_input_kernel, grad=None)
register_gpu("DepthwiseConv2dNativeBackpropInput", host_inputs=(0,), kernel=partial(_backprop_input_kernel, gpu=True))
register("DepthwiseConv2dNativeBackpropFilter", _backprop_filter_infer, _backprop_filter_kernel, grad=None)
register_gpu("DepthwiseConv2dNativeBackpropFilter", host_inputs=(1,), kernel=partial(_backprop_filter_kernel, gpu=True))


@tf_export("nn.separable_conv2d")
def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding, rate=None,
                     name=None, data_format=None, dilations=None):
    """tf.nn.separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,
    rate=None, name=None, data_format=None): depthwise conv then a 1x1 conv mixing channels."""
    with name_scope(name, "separable_conv2d", [input, depthwise_filter, pointwise_filter]) as scope:
        input = convert_to_tensor(input)
        pointwise_filter = convert_to_tensor(pointwise_filter, dtype=input.dtype)
        pd = dims(pointwise_filter.shape)
        if pd is not None and (len(pd) != 4 or pd[0] not in (1, None) or pd[1] not in (1, None)):
            raise ValueError(f"separable_conv2d: pointwise_filter must be [1, 1, in, out], got "
                             f"{pointwise_filter.shape}")
        fmt = check_data_format(data_format, "separable_conv2d")
        depthwise = depthwise_conv2d(input, depthwise_filter, strides, padding, rate=rate or dilations,
                                     name="depthwise", data_format=fmt)
        return conv2d(depthwise, pointwise_filter, [1, 1, 1, 1], "VALID", data_format=fmt, name=scope)
