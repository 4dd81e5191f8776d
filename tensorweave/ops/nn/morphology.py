"""Morphological ops: dilation2d (Dilation2D, with Dilation2DBackpropInput and
Dilation2DBackpropFilter) and erosion2d built on it. Grayscale dilation takes, per window, the
maximum of input + filter; the gradient flows to the (first) position that attained it."""
from __future__ import annotations

import itertools

import numpy as np

from tensorweave.framework.api import name_scope
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.pad import reverse
from tensorweave.ops.helpers import REAL, invalid, make_op
from tensorweave.ops.math.unary import negative
from tensorweave.ops.nn.conv_nd import pad_spatial, window_geometry, window_index
from tensorweave.ops.nn.util import as_str, window_out
from tensorweave.ops.registry import register


def _four(values, what: str) -> list:
    values = [int(v) for v in values]
    if len(values) != 4 or values[0] != 1 or values[3] != 1:
        raise ValueError(f"{what} must be [1, rows, cols, 1], got {values}")
    return values


@tf_export("nn.dilation2d")
def dilation2d(input, filter=None, strides=None, rates=None, padding=None, name=None, filters=None,
               dilations=None, data_format="NHWC"):
    """tf.nn.dilation2d(input, filter, strides, rates, padding, name=None): the grayscale
    dilation of NHWC input by filter [rows, cols, depth]: out[b, y, x, c] = max over (i, j) of
    input[b, y*stride + i*rate, x*stride + j*rate, c] + filter[i, j, c]."""
    filter = filters if filter is None else filter
    rates = dilations if rates is None else rates
    if as_str(data_format) != "NHWC":
        raise ValueError(f"dilation2d supports data_format 'NHWC' only, got {data_format!r}")
    padding = as_str(padding).upper()
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"padding must be 'SAME' or 'VALID', got {padding!r}")
    x = convert_to_tensor(input, name="input")
    f = convert_to_tensor(filter, dtype=x.dtype, name="filter")
    attrs = {"strides": _four(strides, "strides"), "rates": _four(rates, "rates"), "padding": padding, "T": x.dtype}
    return make_op("Dilation2D", [x, f], attrs, name=name or "dilation2d").outputs[0]


@tf_export("nn.erosion2d")
def erosion2d(value, kernel, strides, rates, padding, name=None):
    """tf.nn.erosion2d(value, kernel, strides, rates, padding, name=None): the grayscale erosion,
    min over (i, j) of value[...] - kernel[i, j, c] (dilation of -value by the reflected
    kernel, negated)."""
    with name_scope(name, "erosion2d", [value, kernel]) as scope:
        kernel = convert_to_tensor(kernel, name="kernel")
        return negative(dilation2d(negative(value), reverse(kernel, [0, 1]), strides, rates, padding), name=scope)


def _infer(op):
    x, f = op.inputs
    xs = x.shape.with_rank(4) if x.shape.ndims is not None else unknown_shape(4)
    fs = f.shape.with_rank(3) if f.shape.ndims is not None else unknown_shape(3)
    st, r, pad = op.get_attr("strides"), op.get_attr("rates"), op.get_attr("padding")
    rows = None if fs[0].value is None else window_out(xs[1].value, fs[0].value, st[1], r[1], as_str(pad))
    cols = None if fs[1].value is None else window_out(xs[2].value, fs[1].value, st[2], r[2], as_str(pad))
    return [(x.dtype, TensorShape([xs[0], rows, cols, xs[3].merge_with(fs[2])]))]


def _forward(node, x: np.ndarray, f: np.ndarray) -> tuple:
    """(output, the arg-max offset of each output, geometry, padded input)."""
    x, f = np.asarray(x), np.asarray(f)
    if x.ndim != 4 or f.ndim != 3 or x.shape[3] != f.shape[2]:
        raise invalid(node, f"input [batch, rows, cols, depth] and filter [rows, cols, depth] must agree, got "
                            f"{list(x.shape)} and {list(f.shape)}")
    st, r = list(node.attr["strides"])[1:3], list(node.attr["rates"])[1:3]
    geom = window_geometry(x.shape[1:3], f.shape[:2], st, r, as_str(node.attr["padding"]))
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = pad_spatial(x, geom, low)
    out_shape = (x.shape[0], geom[0][0], geom[1][0], x.shape[3])
    best = np.full(out_shape, low, dtype=np.float64 if x.dtype.kind == "f" else x.dtype)
    arg = np.zeros(out_shape, np.int64)
    for k, offset in enumerate(itertools.product(range(f.shape[0]), range(f.shape[1]))):
        value = xp[window_index(xp, offset, geom, st, r)] + f[offset]
        better = value > best if k else np.ones(out_shape, bool)
        best = np.where(better, value, best)
        arg = np.where(better, k, arg)
    return best.astype(x.dtype), arg, geom, xp, st, r


def _dilation_kernel(node, ctx):
    return lambda x, f: _forward(node, x, f)[0]


def _backprop_input_kernel(node, ctx):
    def run(x, f, g):
        _, arg, geom, xp, st, r = _forward(node, x, f)
        dxp = np.zeros(xp.shape, np.asarray(g).dtype)
        for k, offset in enumerate(itertools.product(range(np.shape(f)[0]), range(np.shape(f)[1]))):
            dxp[window_index(dxp, offset, geom, st, r)] += np.where(arg == k, g, 0)
        (_, top, _), (_, left, _) = geom
        x = np.asarray(x)
        return np.ascontiguousarray(dxp[:, top:top + x.shape[1], left:left + x.shape[2]])
    return run


def _backprop_filter_kernel(node, ctx):
    def run(x, f, g):
        _, arg, _, _, _, _ = _forward(node, x, f)
        f = np.asarray(f)
        df = np.zeros(f.shape, np.asarray(g).dtype)
        for k, offset in enumerate(itertools.product(range(f.shape[0]), range(f.shape[1]))):
            df[offset] = np.where(arg == k, g, 0).sum(axis=(0, 1, 2))
        return df
    return run


def _attrs(op) -> dict:
    return {k: op.get_attr(k) for k in ("strides", "rates", "padding", "T")}


def _dilation_grad(op, grad):
    x, f = op.inputs
    return [make_op("Dilation2DBackpropInput", [x, f, grad], _attrs(op)).outputs[0],
            make_op("Dilation2DBackpropFilter", [x, f, grad], _attrs(op)).outputs[0]]


register("Dilation2D", _infer, _dilation_kernel, grad=_dilation_grad, dtypes=REAL, dtype_param="input")
register("Dilation2DBackpropInput", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], _backprop_input_kernel,
         grad=None)
register("Dilation2DBackpropFilter", lambda op: [(op.inputs[1].dtype, op.inputs[1].shape)], _backprop_filter_kernel,
         grad=None)
