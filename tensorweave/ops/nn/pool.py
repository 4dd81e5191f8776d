"""Pooling and local response normalization: MaxPool, AvgPool, MaxPoolGrad, AvgPoolGrad, LRN,
LRNGrad and the max_pool, avg_pool, lrn wrappers."""
from __future__ import annotations

from functools import partial

import numpy as np

import tensorweave.ops.onednn as onednn
from tensorweave.framework import dtypes
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value_as_shape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import FLOATS, check_output_size, invalid, make_op
from tensorweave.ops.nn import im2col, pool_kernels
from tensorweave.ops.nn.util import (as_str, check_data_format, check_padding, fmt_dims, from_nhwc, nhwc_dims, rank4,
                                      shape_tensor, spatial_axes, to_nhwc, window_out, window_pads)
from tensorweave.ops.registry import register, register_gpu


def _pool_attrs(ksize, strides, padding, data_format, op_name):
    fmt = check_data_format(data_format, op_name)
    pad, _ = check_padding(padding, op_name, allow_explicit=False)

    def four(v, what):
        v = [int(v)] if isinstance(v, (int, np.integer)) else [int(e) for e in v]
        if len(v) == 1:
            v = v * 2
        if len(v) == 2:
            v = [1, 1] + v if fmt == "NCHW" else [1] + v + [1]
        if len(v) != 4:
            raise ValueError(f"{op_name}: {what} should be of length 1, 2 or 4 but was {len(v)}")
        return v
    return {"ksize": four(ksize, "ksize"), "strides": four(strides, "strides"), "padding": pad,
            "data_format": fmt}


def _pool_geom(attrs, h, w, op_name):
    """(kh, kw, sh, sw, oh, ow, pt, pl) in NHWC terms; validates the window."""
    fmt = as_str(attrs.get("data_format", "NHWC"))      # TF's MaxPoolWithArgmax has none: NHWC
    c_axis, (ha, wa) = spatial_axes(fmt)
    k, s = list(attrs["ksize"]), list(attrs["strides"])
    if k[0] != 1 or k[c_axis] != 1 or s[0] != 1 or s[c_axis] != 1:
        raise ValueError(f"{op_name}: Pooling is not yet supported on the batch nor depth dimensions.")
    if min(k) < 1 or min(s) < 1:
        raise ValueError(f"{op_name}: Sliding window ksize and stride must be positive, got {k} and {s}")
    pad = as_str(attrs["padding"])
    kh, kw, sh, sw = k[ha], k[wa], s[ha], s[wa]
    if h is None or w is None:
        return kh, kw, sh, sw, window_out(h, kh, sh, 1, pad), window_out(w, kw, sw, 1, pad), 0, 0
    oh, pt, _ = window_pads(h, kh, sh, 1, pad)
    ow, pl, _ = window_pads(w, kw, sw, 1, pad)
    if pad == "VALID" and (kh > h or kw > w):
        raise ValueError(f"{op_name}: window {kh}x{kw} is larger than the input {h}x{w} with VALID padding")
    return kh, kw, sh, sw, oh, ow, pt, pl


def _pool_infer(op):
    x = op.inputs[0]
    fmt = as_str(op._attrs.get("data_format", "NHWC"))
    n, h, w, c = nhwc_dims(rank4(x.shape, "input"), fmt)
    _, _, _, _, oh, ow, _, _ = _pool_geom(op.attrs, h, w, op.name)
    return [(x.dtype, TensorShape(fmt_dims([n, oh, ow, c], fmt)))]


def _node_pool_attrs(node):
    return {k: node.attr[k] for k in ("ksize", "strides", "padding")} | {
        "data_format": as_str(node.attr.get("data_format", "NHWC"))}


def _pool_kernel(fn, fast=None):
    """A MaxPool/AvgPool kernel factory: oneDNN's `fast` kernel where it applies, else `fn`
    (numpy's; or, without `fast`, im2col's for both devices)."""
    def factory(node, ctx):
        attrs = _node_pool_attrs(node)
        fmt = attrs["data_format"]

        def run(x):
            xn = to_nhwc(x, fmt)
            kh, kw, sh, sw, oh, ow, pt, pl = _pool_geom(attrs, xn.shape[1], xn.shape[2], node.name)
            y = None
            if fast is not None:
                xn = np.ascontiguousarray(xn) if fmt != "NHWC" else xn
                y = fast(xn, oh, ow, kh, kw, sh, sw, pt, pl)
            return from_nhwc(fn(xn, oh, ow, kh, kw, sh, sw, pt, pl) if y is None else y, fmt)
        return run
    return factory


@tf_export("nn.max_pool", "nn.max_pool2d")
def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):
    """tf.nn.max_pool(value, ksize, strides, padding, data_format='NHWC', name=None): the
    maximum over each window; SAME padding never contributes."""
    value = convert_to_tensor(input if value is None else value)
    attrs = _pool_attrs(ksize, strides, padding, data_format, "MaxPool")
    attrs["T"] = value.dtype
    return make_op("MaxPool", [value], attrs, name=name or "MaxPool").outputs[0]


@tf_export("nn.avg_pool", "nn.avg_pool2d")
def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):
    """tf.nn.avg_pool(value, ksize, strides, padding, data_format='NHWC', name=None): the mean
    over each window; with SAME, divides by the number of valid (unpadded) inputs."""
    value = convert_to_tensor(input if value is None else value)
    attrs = _pool_attrs(ksize, strides, padding, data_format, "AvgPool")
    attrs["T"] = value.dtype
    return make_op("AvgPool", [value], attrs, name=name or "AvgPool").outputs[0]


def _max_pool_grad_infer(op):
    x, y, g = op.inputs
    rank4(x.shape, "orig_input")
    if not y.shape.is_compatible_with(g.shape):
        raise ValueError(f"Shapes {y.shape} and {g.shape} are incompatible")
    return [(x.dtype, x.shape)]


def _max_pool_grad_kernel(node, ctx, gpu=False):
    attrs = _node_pool_attrs(node)
    fmt = attrs["data_format"]

    def run(x, y, g):
        xn, yn, gn = (np.ascontiguousarray(to_nhwc(a, fmt)) if fmt != "NHWC" and not gpu else to_nhwc(a, fmt)
                      for a in (x, y, g))
        kh, kw, sh, sw, oh, ow, pt, pl = _pool_geom(attrs, xn.shape[1], xn.shape[2], node.name)
        if yn.shape != gn.shape or yn.shape[1:3] != (oh, ow):
            raise invalid(node, f"Expected orig_output and grad of shape {[xn.shape[0], oh, ow, xn.shape[3]]}, "
                                  f"got {list(y.shape)} and {list(g.shape)}")
        if gpu:
            return from_nhwc(im2col.max_pool_grad(xn, yn, gn, kh, kw, sh, sw, pt, pl), fmt)
        dx = onednn.max_pool_grad(xn, gn, kh, kw, sh, sw, pt, pl, y=yn)
        return from_nhwc(pool_kernels.max_pool_grad(xn, yn, gn, kh, kw, sh, sw, pt, pl) if dx is None else dx, fmt)
    return run


def _pool_op_attrs(op):
    return {k: op.get_attr(k) for k in ("ksize", "strides", "padding", "data_format")}


def _max_pool_grad(op, grad):
    attrs = dict(_pool_op_attrs(op), T=op.inputs[0].dtype)
    return [make_op("MaxPoolGrad", [op.inputs[0], op.outputs[0], grad], attrs, name="MaxPoolGrad").outputs[0]]


def _avg_pool_grad(op, grad):
    attrs = dict(_pool_op_attrs(op), T=grad.dtype)
    return [make_op("AvgPoolGrad", [shape_tensor(op.inputs[0]), grad], attrs, name="AvgPoolGrad").outputs[0]]


def _avg_pool_grad_infer(op):
    sizes, g = op.inputs
    xs = constant_value_as_shape(sizes)
    check_output_size(op, xs)
    return [(g.dtype, xs if xs.ndims is not None else TensorShape([None] * 4))]


def _avg_pool_grad_kernel(node, ctx, gpu=False):
    attrs = _node_pool_attrs(node)
    fmt = attrs["data_format"]

    def run(sizes, g):
        n, h, w, c = nhwc_dims([int(v) for v in sizes], fmt)
        check_output_size(node, [n, h, w, c])
        gn = to_nhwc(g, fmt) if gpu else np.ascontiguousarray(to_nhwc(g, fmt))
        kh, kw, sh, sw, oh, ow, pt, pl = _pool_geom(attrs, h, w, node.name)
        if gn.shape != (n, oh, ow, c):
            raise invalid(node, f"grad shape {list(g.shape)} does not match the pooled shape of "
                                  f"orig_input_shape {list(sizes)}")
        if gpu:
            return from_nhwc(im2col.avg_pool_grad((n, h, w, c), gn, kh, kw, sh, sw, pt, pl), fmt)
        dx = onednn.avg_pool_grad((n, h, w, c), gn, kh, kw, sh, sw, pt, pl)
        return from_nhwc(pool_kernels.avg_pool_grad((n, h, w, c), gn, kh, kw, sh, sw, pt, pl) if dx is None else dx,
                         fmt)
    return run


register("MaxPool", _pool_infer, _pool_kernel(pool_kernels.max_pool, onednn.max_pool), grad=_max_pool_grad)
register_gpu("MaxPool", kernel=_pool_kernel(im2col.max_pool))
register("AvgPool", _pool_infer, _pool_kernel(pool_kernels.avg_pool, onednn.avg_pool), grad=_avg_pool_grad,
         dtypes=FLOATS, dtype_param="value")
register_gpu("AvgPool", kernel=_pool_kernel(im2col.avg_pool))
register("MaxPoolGrad", _max_pool_grad_infer, _max_pool_grad_kernel, grad=None)
register_gpu("MaxPoolGrad", kernel=partial(_max_pool_grad_kernel, gpu=True))
register("AvgPoolGrad", _avg_pool_grad_infer, _avg_pool_grad_kernel,
         grad=lambda op, g: [None, make_op("AvgPool", [g], dict(_pool_op_attrs(op), T=g.dtype),
                                           name="AvgPool").outputs[0]])
register_gpu("AvgPoolGrad", host_inputs=(0,), kernel=partial(_avg_pool_grad_kernel, gpu=True))


# -- LRN ---------------------------------------------------------------------------------------
@tf_export("nn.local_response_normalization", "nn.lrn")
def local_response_normalization(input, depth_radius=5, bias=1, alpha=1, beta=0.5, name=None):
    """tf.nn.local_response_normalization(input, depth_radius=5, bias=1, alpha=1, beta=0.5,
    name=None): input / (bias + alpha * sum of squares over 2*depth_radius+1 channels) ** beta."""
    input = convert_to_tensor(input)
    attrs = {"depth_radius": int(depth_radius), "bias": float(bias), "alpha": float(alpha),
             "beta": float(beta), "T": input.dtype}
    return make_op("LRN", [input], attrs, name=name or "LRN").outputs[0]


lrn = local_response_normalization


def _lrn_params(a):
    return int(a["depth_radius"]), float(a["bias"]), float(a["alpha"]), float(a["beta"])


def _lrn_infer(op):
    x = op.inputs[0]
    rank4(x.shape, "input")
    return [(x.dtype, x.shape)]


def _lrn_kernel(node, ctx):
    r, b, a, be = _lrn_params(node.attr)
    return lambda x: pool_kernels.lrn(x, r, b, a, be)


def _lrn_grad_kernel(node, ctx):
    r, b, a, be = _lrn_params(node.attr)
    return lambda g, x, y: pool_kernels.lrn_grad(g, x, r, b, a, be)


def _lrn_grad(op, grad):
    attrs = {k: op.get_attr(k) for k in ("depth_radius", "bias", "alpha", "beta")}
    attrs["T"] = grad.dtype
    return [make_op("LRNGrad", [grad, op.inputs[0], op.outputs[0]], attrs, name="LRNGrad").outputs[0]]


register("LRN", _lrn_infer, _lrn_kernel, grad=_lrn_grad, dtypes=(dtypes.float16, dtypes.float32), dtype_param="input")
register_gpu("LRN")
register("LRNGrad", lambda op: [(op.inputs[0].dtype, op.inputs[1].shape.merge_with(op.inputs[0].shape))],
         _lrn_grad_kernel, grad=None)
register_gpu("LRNGrad")


# -- MaxPoolWithArgmax -------------------------------------------------------------------------
@tf_export("nn.max_pool_with_argmax")
def max_pool_with_argmax(input, ksize, strides, padding, data_format="NHWC", Targmax=None, name=None,
                         output_dtype=None, include_batch_in_index=False):
    """tf.nn.max_pool_with_argmax(input, ksize, strides, padding, data_format='NHWC', Targmax=None,
    name=None, output_dtype=None, include_batch_in_index=False) -> (output, argmax): NHWC max
    pooling and, for each output, the flattened index ((y * width + x) * channels + c, plus
    b * height * width * channels with include_batch_in_index) of the first maximum."""
    if as_str(data_format) != "NHWC":
        raise ValueError(f"max_pool_with_argmax supports data_format 'NHWC' only, got {data_format!r}")
    index_dtype = dtypes.as_dtype(output_dtype or Targmax or dtypes.int64)
    x = convert_to_tensor(input, name="input")
    attrs = _pool_attrs(ksize, strides, padding, "NHWC", "MaxPoolWithArgmax")
    del attrs["data_format"]        # not an attribute of TF's MaxPoolWithArgmax
    attrs.update(T=x.dtype, Targmax=index_dtype, include_batch_in_index=bool(include_batch_in_index))
    op = make_op("MaxPoolWithArgmax", [x], attrs, name=name or "MaxPoolWithArgmax")
    return op.outputs[0], op.outputs[1]


def _argmax_pool(node, x: np.ndarray) -> tuple:
    attrs = _node_pool_attrs(node)
    n, h, w, c = x.shape
    kh, kw, sh, sw, oh, ow, pt, pl = _pool_geom(attrs, h, w, node.name)
    best = np.full((n, oh, ow, c), -np.inf)
    arg = np.zeros((n, oh, ow, c), np.int64)
    rows, cols = np.arange(oh) * sh - pt, np.arange(ow) * sw - pl
    for i in range(kh):
        for j in range(kw):
            r, q = rows + i, cols + j
            ok = ((r >= 0) & (r < h))[:, None] & ((q >= 0) & (q < w))[None, :]
            vals = x[:, np.clip(r, 0, h - 1)][:, :, np.clip(q, 0, w - 1)]
            vals = np.where(ok[None, :, :, None], vals, -np.inf)
            better = vals > best
            best = np.where(better, vals, best)
            flat = (np.clip(r, 0, h - 1)[:, None] * w + np.clip(q, 0, w - 1)[None, :])[None, :, :, None] * c \
                + np.arange(c)
            arg = np.where(better, flat, arg)
    if node.attr.get("include_batch_in_index"):
        arg = arg + (np.arange(n) * h * w * c)[:, None, None, None]
    return best.astype(x.dtype), arg


def _max_pool_argmax_kernel(node, ctx):
    index_dt = dtypes.as_dtype(node.attr["Targmax"]).as_numpy_dtype

    def run(x):
        x = np.asarray(x)
        if x.ndim != 4:
            raise invalid(node, f"input must be 4-dimensional, got shape {list(x.shape)}")
        out, arg = _argmax_pool(node, x)
        return out, arg.astype(index_dt)
    return run


def _max_pool_argmax_infer(op):
    y = _pool_infer(op)[0]
    return [y, (op.get_attr("Targmax"), y[1])]


def _max_pool_argmax_grad(op, grad, unused_argmax_grad):
    attrs = {k: op.get_attr(k) for k in ("ksize", "strides", "padding", "include_batch_in_index")}
    attrs.update(T=grad.dtype, Targmax=op.get_attr("Targmax"))
    return [make_op("MaxPoolGradWithArgmax", [op.inputs[0], grad, op.outputs[1]], attrs).outputs[0]]


def _max_pool_grad_argmax_kernel(node, ctx):
    with_batch = bool(node.attr.get("include_batch_in_index"))

    def run(x, g, argmax):
        x, g, argmax = np.asarray(x), np.asarray(g), np.asarray(argmax, np.int64)
        n = x.shape[0]
        per_image = int(np.prod(x.shape[1:]))
        flat = argmax.reshape(n, -1) + (0 if with_batch else (np.arange(n) * per_image)[:, None])
        out = np.zeros(x.size, g.dtype)
        np.add.at(out, flat.reshape(-1), g.reshape(-1))
        return out.reshape(x.shape)
    return run


register("MaxPoolWithArgmax", _max_pool_argmax_infer, _max_pool_argmax_kernel, grad=_max_pool_argmax_grad)
register("MaxPoolGradWithArgmax", lambda op: [(op.inputs[1].dtype, op.inputs[0].shape)],
         _max_pool_grad_argmax_kernel, grad=None)
