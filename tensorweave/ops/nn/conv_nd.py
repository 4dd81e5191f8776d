"""3-D convolution and pooling (Conv3D, Conv3DBackpropInputV2, Conv3DBackpropFilterV2, MaxPool3D,
AvgPool3D and their gradients), and the rank-generic wrappers: convolution, conv_transpose,
pool, avg_pool_v2 / max_pool_v2, the 1-D pools and transposed convolution, atrous (dilated)
convolutions and with_space_to_batch. The kernels loop over kernel offsets, one strided slice
and one BLAS product per offset, for any number of spatial dimensions."""
from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value, constant_value_as_shape
from tensorweave.ops.array.concat import stack
from tensorweave.ops.array.core import expand_dims, identity, squeeze
from tensorweave.ops.array.space import batch_to_space_nd, required_space_to_batch_paddings, space_to_batch_nd
from tensorweave.ops.helpers import FLOATS, invalid, make_op
from tensorweave.ops.nn.conv import conv2d, conv2d_transpose
from tensorweave.ops.nn.impl import conv1d
from tensorweave.ops.nn.pool import avg_pool, max_pool
from tensorweave.ops.nn.util import as_str, shape_tensor, window_out, window_pads
from tensorweave.ops.registry import register

__all__ = []   # tf.nn names: gathered by tensorweave/nn.py


# -- N-d kernels (channels last: [batch, *spatial, channels]) --------------------------------------
def window_geometry(spatial: Sequence[int], ksize: Sequence[int], strides, dilations, padding: str) -> list:
    """(out, pad_before, pad_after) per spatial axis."""
    return [window_pads(s, k, st, d, padding) for s, k, st, d in zip(spatial, ksize, strides, dilations)]


def pad_spatial(x: np.ndarray, geom: list, value=0) -> np.ndarray:
    pads = [(0, 0)] + [(b, a) for _, b, a in geom] + [(0, 0)]
    return np.pad(x, pads, constant_values=value) if any(b or a for _, b, a in geom) else x


def window_index(xp: np.ndarray, offset: tuple, geom: list, strides, dilations) -> tuple:
    """The index of the input positions window offset `offset` reads for every output position."""
    index = [slice(None)]
    for k, (out, _, _), s, d in zip(offset, geom, strides, dilations):
        start = k * d
        index.append(slice(start, start + (out - 1) * s + 1, s) if out else slice(0, 0))
    return tuple(index) + (slice(None),)


def conv_nd(x: np.ndarray, w: np.ndarray, strides, dilations, padding: str) -> np.ndarray:
    n = x.ndim - 2
    geom = window_geometry(x.shape[1:-1], w.shape[:n], strides, dilations, padding)
    xp = pad_spatial(x, geom)
    out = np.zeros((x.shape[0],) + tuple(g[0] for g in geom) + (w.shape[-1],), dtype=x.dtype)
    for offset in itertools.product(*(range(k) for k in w.shape[:n])):
        out += np.tensordot(xp[window_index(xp, offset, geom, strides, dilations)], w[offset], axes=([-1], [0]))
    return out


def conv_nd_input_grad(x_shape, w: np.ndarray, dy: np.ndarray, strides, dilations, padding: str) -> np.ndarray:
    n = len(x_shape) - 2
    geom = window_geometry(x_shape[1:-1], w.shape[:n], strides, dilations, padding)
    padded = (x_shape[0],) + tuple(s + b + a for s, (_, b, a) in zip(x_shape[1:-1], geom)) + (x_shape[-1],)
    dxp = np.zeros(padded, dtype=dy.dtype)
    for offset in itertools.product(*(range(k) for k in w.shape[:n])):
        dxp[window_index(dxp, offset, geom, strides, dilations)] += np.tensordot(dy, w[offset], axes=([-1], [1]))
    crop = (slice(None),) + tuple(slice(b, b + s) for s, (_, b, _) in zip(x_shape[1:-1], geom)) + (slice(None),)
    return np.ascontiguousarray(dxp[crop])


def conv_nd_filter_grad(x: np.ndarray, w_shape, dy: np.ndarray, strides, dilations, padding: str) -> np.ndarray:
    n = x.ndim - 2
    geom = window_geometry(x.shape[1:-1], w_shape[:n], strides, dilations, padding)
    xp = pad_spatial(x, geom)
    dw = np.zeros(w_shape, dtype=dy.dtype)
    axes = list(range(n + 1))
    for offset in itertools.product(*(range(k) for k in w_shape[:n])):
        dw[offset] = np.tensordot(xp[window_index(xp, offset, geom, strides, dilations)], dy, axes=(axes, axes))
    return dw


def pool_nd(x: np.ndarray, ksize, strides, padding: str, kind: str) -> np.ndarray:
    """Max or average pooling (the average counts only positions inside the input, as TF)."""
    n = x.ndim - 2
    ones = [1] * n
    geom = window_geometry(x.shape[1:-1], ksize, strides, ones, padding)
    out_shape = (x.shape[0],) + tuple(g[0] for g in geom) + (x.shape[-1],)
    if kind == "max":
        low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        xp = pad_spatial(x, geom, low)
        out = np.full(out_shape, low, dtype=x.dtype)
        for offset in itertools.product(*(range(k) for k in ksize)):
            np.maximum(out, xp[window_index(xp, offset, geom, strides, ones)], out=out)
        return out
    xp = pad_spatial(x, geom)
    total = np.zeros(out_shape, dtype=x.dtype)
    for offset in itertools.product(*(range(k) for k in ksize)):
        total += xp[window_index(xp, offset, geom, strides, ones)]
    return total / _pool_counts(x.shape, ksize, strides, padding).astype(x.dtype)


def _pool_counts(x_shape, ksize, strides, padding) -> np.ndarray:
    """How many input positions each output window covers, shaped to broadcast."""
    n = len(x_shape) - 2
    geom = window_geometry(x_shape[1:-1], ksize, strides, [1] * n, padding)
    ones_p = pad_spatial(np.ones((1,) + tuple(x_shape[1:-1]) + (1,)), geom)
    counts = np.zeros((1,) + tuple(g[0] for g in geom) + (1,))
    for offset in itertools.product(*(range(k) for k in ksize)):
        counts += ones_p[window_index(ones_p, offset, geom, strides, [1] * n)]
    return np.maximum(counts, 1)


def pool_nd_grad(x: np.ndarray, y: np.ndarray, g: np.ndarray, ksize, strides, padding: str, kind: str) -> np.ndarray:
    """The input gradient of pool_nd: to every position equal to its window's maximum (TF's 3-D
    rule), or spread evenly over each window's positions."""
    n = len(x.shape) - 2
    ones = [1] * n
    geom = window_geometry(x.shape[1:-1], ksize, strides, ones, padding)
    if kind == "max":
        low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        xp = pad_spatial(x, geom, low)
    else:
        xp = np.zeros((x.shape[0],) + tuple(s + b + a for s, (_, b, a) in zip(x.shape[1:-1], geom)) + (x.shape[-1],),
                      dtype=g.dtype)
        g = g / _pool_counts(x.shape, ksize, strides, padding).astype(g.dtype)
    dxp = np.zeros(xp.shape, dtype=g.dtype)
    for offset in itertools.product(*(range(k) for k in ksize)):
        index = window_index(xp, offset, geom, strides, ones)
        dxp[index] += g * (xp[index] == y) if kind == "max" else g
    crop = (slice(None),) + tuple(slice(b, b + s) for s, (_, b, _) in zip(x.shape[1:-1], geom)) + (slice(None),)
    return np.ascontiguousarray(dxp[crop])


# -- 3-D op attrs ----------------------------------------------------------------------------------
def _fmt3(data_format) -> str:
    fmt = "NDHWC" if data_format is None else as_str(data_format)
    if fmt not in ("NDHWC", "NCDHW"):
        raise ValueError(f"data_format must be 'NDHWC' or 'NCDHW', got {data_format!r}")
    return fmt


def _five(value, fmt: str, what: str) -> list:
    """1, 3 or 5 ints -> 5 ints in `fmt` order (batch and channel entries 1)."""
    if value is None:
        return [1] * 5
    value = [int(value)] if isinstance(value, (int, np.integer)) else [int(v) for v in value]
    if len(value) == 1:
        value = value * 3
    if len(value) == 3:
        value = [1, 1] + value if fmt == "NCDHW" else [1] + value + [1]
    if len(value) != 5:
        raise ValueError(f"{what} should be of length 1, 3 or 5, got {len(value)}")
    return value


def _spatial(values: list, fmt: str) -> list:
    return list(values[2:]) if fmt == "NCDHW" else list(values[1:4])


def _check_padding(padding) -> str:
    p = as_str(padding).upper() if isinstance(padding, (str, bytes)) else None
    if p not in ("SAME", "VALID"):
        raise ValueError(f"padding must be 'SAME' or 'VALID', got {padding!r}")
    return p


def _attrs3(strides, padding, data_format, dilations=None, ksize=None) -> dict:
    fmt = _fmt3(data_format)
    attrs = {"strides": _five(strides, fmt, "strides"), "padding": _check_padding(padding), "data_format": fmt}
    if ksize is not None:
        attrs["ksize"] = _five(ksize, fmt, "ksize")
    else:
        attrs["dilations"] = _five(dilations, fmt, "dilations")
    c = 1 if fmt == "NCDHW" else 4
    for key in ("strides", "ksize", "dilations"):
        if key in attrs and (attrs[key][0] != 1 or attrs[key][c] != 1):
            raise ValueError(f"{key} in the batch and depth dimensions must be 1, got {attrs[key]}")
    return attrs


def _node3(node) -> tuple:
    fmt = as_str(node.attr.get("data_format", "NDHWC"))
    sp = {k: _spatial(list(node.attr[k]), fmt) for k in ("strides", "dilations", "ksize") if k in node.attr}
    return fmt, sp, as_str(node.attr["padding"])


def _to_last(x: np.ndarray, fmt: str) -> np.ndarray:
    return x if fmt[-1] == "C" else np.moveaxis(x, 1, -1)


def _from_last(x: np.ndarray, fmt: str) -> np.ndarray:
    return x if fmt[-1] == "C" else np.ascontiguousarray(np.moveaxis(x, -1, 1))


def _shape_to_last(s: list, fmt: str) -> list:
    return list(s) if fmt[-1] == "C" else [s[0]] + list(s[2:]) + [s[1]]


def _shape_from_last(s: list, fmt: str) -> list:
    return list(s) if fmt[-1] == "C" else [s[0], s[-1]] + list(s[1:-1])


def _rank5(shape: TensorShape) -> list:
    if shape.ndims is None:
        return [None] * 5
    if shape.ndims != 5:
        raise ValueError(f"Shape must be rank 5 but is rank {shape.ndims}")
    return list(shape.as_tuple_or_none())


def _op3(op) -> tuple:
    fmt = as_str(op.get_attr("data_format"))
    sp = {k: _spatial(op.get_attr(k), fmt) for k in ("strides", "dilations", "ksize") if k in op._attrs}
    return fmt, sp, as_str(op.get_attr("padding"))


# -- Conv3D ----------------------------------------------------------------------------------------
def conv3d(input, filter=None, strides=None, padding=None, data_format="NDHWC", dilations=(1, 1, 1, 1, 1),  # noqa: A002
           name=None, filters=None):
    """tf.nn.conv3d(input, filter, strides, padding, data_format='NDHWC', dilations=[1, 1, 1, 1, 1],
    name=None): 3-D cross-correlation of a 5-D input with filter [d, h, w, in_channels,
    out_channels]."""
    filter = filters if filter is None else filter  # noqa: A001
    x = convert_to_tensor(input, name="input")
    f = convert_to_tensor(filter, dtype=x.dtype, name="filter")
    attrs = dict(_attrs3(strides, padding, data_format, dilations), T=x.dtype)
    return make_op("Conv3D", [x, f], attrs, name=name or "Conv3D").outputs[0]


def _conv3d_infer(op):
    x, f = op.inputs
    fmt, sp, pad = _op3(op)
    xd, fd = _shape_to_last(_rank5(x.shape), fmt), _rank5(f.shape)
    if xd[-1] is not None and fd[3] is not None and xd[-1] != fd[3]:
        raise ValueError(f"Depth of input ({xd[-1]}) must equal the filter's input depth ({fd[3]})")
    out = [xd[0]] + [None if k is None else window_out(s, k, st, d, pad)
                     for s, k, st, d in zip(xd[1:4], fd[:3], sp["strides"], sp["dilations"])] + [fd[4]]
    return [(x.dtype, TensorShape(_shape_from_last(out, fmt)))]


def _conv3d_kernel(node, ctx):
    fmt, sp, pad = _node3(node)

    def run(x, w):
        x = _to_last(np.asarray(x), fmt)
        if x.ndim != 5 or np.ndim(w) != 5 or x.shape[-1] != np.shape(w)[3]:
            raise invalid(node, f"input [N, D, H, W, C] and filter [d, h, w, C, out] must agree, got "
                                f"{list(x.shape)} and {list(np.shape(w))}")
        return _from_last(conv_nd(x, np.asarray(w), sp["strides"], sp["dilations"], pad), fmt)
    return run


def _conv3d_grad(op, grad):
    x, f = op.inputs
    attrs = {k: op.get_attr(k) for k in ("strides", "padding", "data_format", "dilations")}
    attrs["T"] = grad.dtype
    dx = make_op("Conv3DBackpropInputV2", [shape_tensor(x), f, grad], attrs).outputs[0]
    df = make_op("Conv3DBackpropFilterV2", [x, shape_tensor(f), grad], attrs).outputs[0]
    return [dx, df]


register("Conv3D", _conv3d_infer, _conv3d_kernel, grad=_conv3d_grad, dtypes=FLOATS, dtype_param="input")


def _backprop3_input_kernel(node, ctx):
    fmt, sp, pad = _node3(node)

    def run(sizes, w, dy):
        x_shape = _shape_to_last([int(s) for s in np.reshape(sizes, -1)], fmt)
        return _from_last(conv_nd_input_grad(x_shape, np.asarray(w), _to_last(np.asarray(dy), fmt), sp["strides"],
                                             sp["dilations"], pad), fmt)
    return run


def _backprop3_filter_kernel(node, ctx):
    fmt, sp, pad = _node3(node)

    def run(x, sizes, dy):
        w_shape = [int(s) for s in np.reshape(sizes, -1)]
        return conv_nd_filter_grad(_to_last(np.asarray(x), fmt), w_shape, _to_last(np.asarray(dy), fmt),
                                   sp["strides"], sp["dilations"], pad)
    return run


def _backprop3_input_grad(op, grad):
    sizes, f, dy = op.inputs
    attrs = {k: op.get_attr(k) for k in ("strides", "padding", "data_format", "dilations")}
    return [None, make_op("Conv3DBackpropFilterV2", [grad, shape_tensor(f), dy], dict(attrs, T=grad.dtype)).outputs[0],
            make_op("Conv3D", [grad, f], dict(attrs, T=grad.dtype)).outputs[0]]


register("Conv3DBackpropInputV2", lambda op: [(op.inputs[1].dtype, constant_value_as_shape(op.inputs[0]))],
         _backprop3_input_kernel, grad=_backprop3_input_grad)
register("Conv3DBackpropFilterV2", lambda op: [(op.inputs[0].dtype, constant_value_as_shape(op.inputs[1]))],
         _backprop3_filter_kernel, grad=None)


def conv3d_backprop_filter(input, filter_sizes, out_backprop, strides, padding, data_format="NDHWC",  # noqa: A002
                           dilations=(1, 1, 1, 1, 1), name=None):
    """tf.nn.conv3d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,
    data_format='NDHWC', dilations=[1, 1, 1, 1, 1], name=None): the filter gradient of conv3d."""
    x = convert_to_tensor(input, name="input")
    attrs = dict(_attrs3(strides, padding, data_format, dilations), T=x.dtype)
    return make_op("Conv3DBackpropFilterV2", [x, convert_to_tensor(filter_sizes, dtype=dtypes.int32),
                                              convert_to_tensor(out_backprop, dtype=x.dtype)], attrs,
                   name=name or "Conv3DBackpropFilterV2").outputs[0]


def conv3d_transpose(value=None, filter=None, output_shape=None, strides=None, padding="SAME",  # noqa: A002
                     data_format="NDHWC", name=None, input=None, filters=None, dilations=None):  # noqa: A002
    """tf.nn.conv3d_transpose(value, filter, output_shape, strides, padding='SAME',
    data_format='NDHWC', name=None): the gradient of conv3d with respect to its input; filter is
    [d, h, w, output_channels, in_channels]."""
    value = input if value is None else value
    filter = filters if filter is None else filter  # noqa: A001
    v = convert_to_tensor(value, name="value")
    attrs = dict(_attrs3(strides, padding, data_format, dilations), T=v.dtype)
    return make_op("Conv3DBackpropInputV2", [convert_to_tensor(output_shape, dtype=dtypes.int32),
                                             convert_to_tensor(filter, dtype=v.dtype), v], attrs,
                   name=name or "conv3d_transpose").outputs[0]


# -- MaxPool3D, AvgPool3D --------------------------------------------------------------------------
def _pool3d(op_type: str, input, ksize, strides, padding, data_format, name) -> Tensor:  # noqa: A002
    x = convert_to_tensor(input, name="input")
    attrs = dict(_attrs3(strides, padding, data_format, ksize=ksize), T=x.dtype)
    return make_op(op_type, [x], attrs, name=name or op_type).outputs[0]


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """tf.nn.max_pool3d(input, ksize, strides, padding, data_format='NDHWC', name=None)."""
    return _pool3d("MaxPool3D", input, ksize, strides, padding, data_format, name)


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """tf.nn.avg_pool3d(input, ksize, strides, padding, data_format='NDHWC', name=None): the mean of
    each window (positions outside the input are not counted)."""
    return _pool3d("AvgPool3D", input, ksize, strides, padding, data_format, name)


def _pool3d_infer(op):
    x = op.inputs[0]
    fmt, sp, pad = _op3(op)
    xd = _shape_to_last(_rank5(x.shape), fmt)
    out = [xd[0]] + [window_out(s, k, st, 1, pad) for s, k, st in zip(xd[1:4], sp["ksize"], sp["strides"])] + [xd[4]]
    return [(x.dtype, TensorShape(_shape_from_last(out, fmt)))]


def _pool3d_kernel(kind: str):
    def factory(node, ctx):
        fmt, sp, pad = _node3(node)

        def run(x):
            x = np.asarray(x)
            if x.ndim != 5:
                raise invalid(node, f"input must be 5-dimensional, got shape {list(x.shape)}")
            return _from_last(pool_nd(_to_last(x, fmt), sp["ksize"], sp["strides"], pad, kind), fmt)
        return run
    return factory


def _pool3d_attrs(op) -> dict:
    return {k: op.get_attr(k) for k in ("ksize", "strides", "padding", "data_format")}


register("MaxPool3D", _pool3d_infer, _pool3d_kernel("max"), dtypes=FLOATS, dtype_param="input",
         grad=lambda op, g: [make_op("MaxPool3DGrad", [op.inputs[0], op.outputs[0], g],
                                     dict(_pool3d_attrs(op), T=g.dtype, TInput=g.dtype)).outputs[0]])
register("AvgPool3D", _pool3d_infer, _pool3d_kernel("avg"), dtypes=FLOATS, dtype_param="input",
         grad=lambda op, g: [make_op("AvgPool3DGrad", [shape_tensor(op.inputs[0]), g],
                                     dict(_pool3d_attrs(op), T=g.dtype)).outputs[0]])


def _max_pool3d_grad_kernel(node, ctx):
    fmt, sp, pad = _node3(node)

    def run(x, y, g):
        return _from_last(pool_nd_grad(_to_last(np.asarray(x), fmt), _to_last(np.asarray(y), fmt),
                                       _to_last(np.asarray(g), fmt), sp["ksize"], sp["strides"], pad, "max"), fmt)
    return run


def _avg_pool3d_grad_kernel(node, ctx):
    fmt, sp, pad = _node3(node)

    def run(sizes, g):
        x_shape = _shape_to_last([int(s) for s in np.reshape(sizes, -1)], fmt)
        g = _to_last(np.asarray(g), fmt)
        return _from_last(pool_nd_grad(np.zeros(x_shape, g.dtype), None, g, sp["ksize"], sp["strides"], pad, "avg"),
                          fmt)
    return run


register("MaxPool3DGrad", lambda op: [(op.inputs[2].dtype, op.inputs[0].shape)], _max_pool3d_grad_kernel,
         grad=None)
register("AvgPool3DGrad", lambda op: [(op.inputs[1].dtype, constant_value_as_shape(op.inputs[0]))],
         _avg_pool3d_grad_kernel, grad=None)


# -- rank-generic wrappers -------------------------------------------------------------------------
def _num_spatial(x: Tensor, what: str, fallback=None) -> int:
    """The number of spatial dims: from x's rank, else from `fallback` (a filter's rank minus 2,
    a window's length or a data format's), as TF decides it."""
    nd = x.shape.ndims
    n = nd - 2 if nd is not None else fallback
    if n not in (1, 2, 3):
        raise ValueError(f"{what}: the input must have rank 3, 4 or 5 (or the rank must follow from the filter, "
                         f"window or data_format), got shape {x.shape}")
    return n


def _channels_first(data_format) -> bool:
    return data_format is not None and as_str(data_format).startswith("NC")


def _default_format(n: int, channels_first: bool) -> str:
    return {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}[n][int(channels_first)]


def _full(values, n: int, channels_first: bool) -> list:
    """n spatial ints (or one) -> n + 2 ints with 1 for the batch and channel dims."""
    values = [1] * n if values is None else \
        ([int(values)] * n if isinstance(values, (int, np.integer)) else [int(v) for v in values])
    if len(values) == 1:
        values = values * n
    if len(values) == n + 2:
        return values
    return [1, 1] + values if channels_first else [1] + values + [1]


def convolution(input, filter=None, padding=None, strides=None, dilation_rate=None, name=None,  # noqa: A002
                data_format=None, filters=None, dilations=None):
    """tf.nn.convolution(input, filter, padding, strides=None, dilation_rate=None, name=None,
    data_format=None): N-d convolution (1-, 2- or 3-D by the input's rank) with dilations."""
    filter = filters if filter is None else filter  # noqa: A001
    dilation_rate = dilations if dilation_rate is None else dilation_rate
    with name_scope(name, "convolution", [input, filter]) as scope:
        x = convert_to_tensor(input, name="input")
        filter = convert_to_tensor(filter, dtype=x.dtype, name="filter")  # noqa: A001
        n = _num_spatial(x, "convolution", None if filter.shape.ndims is None else filter.shape.ndims - 2)
        cf = _channels_first(data_format)
        fmt = _default_format(n, cf) if data_format is None else as_str(data_format)
        strides, rate = _full(strides, n, cf), _full(dilation_rate, n, cf)
        sp = slice(2, None) if cf else slice(1, -1)
        if n == 1:
            return conv1d(x, filter, strides[sp][0], padding, data_format=fmt, dilations=rate[sp][0], name=scope)
        if n == 2:
            return conv2d(x, filter, strides, padding, data_format=fmt, dilations=rate, name=scope)
        return conv3d(x, filter, strides, padding, data_format=fmt, dilations=rate, name=scope)


def conv1d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NWC",  # noqa: A002
                     dilations=None, name=None):
    """tf.nn.conv1d_transpose(input, filters, output_shape, strides, padding='SAME',
    data_format='NWC', dilations=None, name=None): the gradient of conv1d with respect to its
    input; filters [width, output_channels, in_channels]."""
    with name_scope(name, "conv1d_transpose", [input, filters, output_shape]) as scope:
        cf = _channels_first(data_format)
        x = expand_dims(convert_to_tensor(input, name="input"), 2 if cf else 1)
        f = expand_dims(convert_to_tensor(filters, name="filters"), 0)
        out_shape = convert_to_tensor(output_shape, dtype=dtypes.int32, name="output_shape")
        out_shape = stack([out_shape[0], out_shape[1], 1, out_shape[2]]) if cf else \
            stack([out_shape[0], 1, out_shape[1], out_shape[2]])
        s = _full(strides, 1, cf)[2 if cf else 1]
        d = _full(dilations, 1, cf)[2 if cf else 1]
        y = conv2d_transpose(x, f, out_shape, [1, 1, 1, s] if cf else [1, 1, s, 1], padding,
                             data_format="NCHW" if cf else "NHWC", dilations=[1, 1, 1, d] if cf else [1, 1, d, 1])
        return squeeze(y, [2 if cf else 1], name=scope)


def conv_transpose(input, filters, output_shape, strides, padding="SAME", data_format=None, dilations=None,  # noqa: A002
                   name=None):
    """tf.nn.conv_transpose(input, filters, output_shape, strides, padding='SAME',
    data_format=None, dilations=None, name=None): the transposed 1-, 2- or 3-D convolution."""
    x = convert_to_tensor(input, name="input")
    filters = convert_to_tensor(filters, dtype=x.dtype, name="filters")
    n = _num_spatial(x, "conv_transpose", None if filters.shape.ndims is None else filters.shape.ndims - 2)
    cf = _channels_first(data_format)
    fmt = _default_format(n, cf) if data_format is None else as_str(data_format)
    if n == 1:
        return conv1d_transpose(x, filters, output_shape, strides, padding, fmt, dilations, name)
    if n == 2:
        return conv2d_transpose(x, filters, output_shape, _full(strides, 2, cf), padding, data_format=fmt,
                                dilations=_full(dilations, 2, cf), name=name)
    return conv3d_transpose(x, filters, output_shape, _full(strides, 3, cf), padding, data_format=fmt,
                            dilations=_full(dilations, 3, cf), name=name)


def atrous_conv2d(value, filters, rate, padding, name=None):
    """tf.nn.atrous_conv2d(value, filters, rate, padding, name=None): conv2d of NHWC value with
    `rate`-dilated filters (stride 1)."""
    return conv2d(value, filters, [1, 1, 1, 1], padding, dilations=[1, int(rate), int(rate), 1],
                  name=name or "atrous_conv2d")


def atrous_conv2d_transpose(value, filters, output_shape, rate, padding, name=None):
    """tf.nn.atrous_conv2d_transpose(value, filters, output_shape, rate, padding, name=None): the
    gradient of atrous_conv2d with respect to its input."""
    return conv2d_transpose(value, filters, output_shape, [1, 1, 1, 1], padding,
                            dilations=[1, int(rate), int(rate), 1], name=name or "atrous_conv2d_transpose")


def _pool1d(fn, input, ksize, strides, padding, data_format, name):  # noqa: A002
    cf = _channels_first(data_format)
    with name_scope(name, fn.__name__ + "1d", [input]) as scope:
        x = expand_dims(convert_to_tensor(input, name="input"), 2 if cf else 1)
        k, s = _full(ksize, 1, cf)[2 if cf else 1], _full(strides, 1, cf)[2 if cf else 1]
        y = fn(x, [1, 1, 1, k] if cf else [1, 1, k, 1], [1, 1, 1, s] if cf else [1, 1, s, 1], padding,
               data_format="NCHW" if cf else "NHWC")
        return squeeze(y, [2 if cf else 1], name=scope)


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """tf.nn.max_pool1d(input, ksize, strides, padding, data_format='NWC', name=None)."""
    return _pool1d(max_pool, input, ksize, strides, padding, data_format, name)


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """tf.nn.avg_pool1d(input, ksize, strides, padding, data_format='NWC', name=None)."""
    return _pool1d(avg_pool, input, ksize, strides, padding, data_format, name)


def _pool_v2(kind: str, input, ksize, strides, padding, data_format, name, num_spatial=None):  # noqa: A002
    x = convert_to_tensor(input, name="input")
    n = _num_spatial(x, kind + "_pool", num_spatial if num_spatial is not None else
                     None if data_format is None else len(as_str(data_format)) - 2)
    cf = _channels_first(data_format)
    fmt = _default_format(n, cf) if data_format is None else as_str(data_format)
    if n == 1:
        return _pool1d(max_pool if kind == "max" else avg_pool, x, ksize, strides, padding, fmt, name)
    if n == 2:
        fn = max_pool if kind == "max" else avg_pool
        return fn(x, _full(ksize, 2, cf), _full(strides, 2, cf), padding, data_format=fmt, name=name)
    fn = max_pool3d if kind == "max" else avg_pool3d
    return fn(x, _full(ksize, 3, cf), _full(strides, 3, cf), padding, data_format=fmt, name=name)


def max_pool_v2(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """tf.nn.max_pool_v2(input, ksize, strides, padding, data_format=None, name=None): max pooling
    of a 3-, 4- or 5-D input (ksize and strides: 1, N or N + 2 ints)."""
    return _pool_v2("max", input, ksize, strides, padding, data_format, name)


def avg_pool_v2(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """tf.nn.avg_pool_v2(input, ksize, strides, padding, data_format=None, name=None)."""
    return _pool_v2("avg", input, ksize, strides, padding, data_format, name)


def with_space_to_batch(input, dilation_rate, padding, op, filter_shape=None, spatial_dims=None,  # noqa: A002
                        data_format=None):
    """tf.nn.with_space_to_batch(input, dilation_rate, padding, op, filter_shape=None,
    spatial_dims=None, data_format=None): op(input, num_spatial_dims, padding) computed on the
    space_to_batch_nd of input by dilation_rate, then batch_to_space_nd back, so that a
    VALID/SAME op with rate 1 acts as the dilated op. SAME padding needs filter_shape."""
    x = convert_to_tensor(input, name="input")
    rate = np.asarray(constant_value(convert_to_tensor(dilation_rate, dtype=dtypes.int32)), np.int64).reshape(-1)
    n = len(rate)
    if spatial_dims is None:
        spatial_dims = list(range(2, n + 2)) if _channels_first(data_format) else list(range(1, n + 1))
    spatial_dims = [int(d) for d in spatial_dims]
    if sorted(spatial_dims) != spatial_dims or len(spatial_dims) != n or spatial_dims[0] < 1:
        raise ValueError(f"spatial_dims must be {n} increasing dims >= 1, got {spatial_dims}")
    padding = _check_padding(padding)
    if np.all(rate == 1):
        return op(x, n, padding)
    if padding == "SAME":
        if filter_shape is None:
            raise ValueError("filter_shape must be specified for SAME padding")
        k = np.asarray(constant_value(convert_to_tensor(filter_shape, dtype=dtypes.int32)), np.int64).reshape(-1)
        extra = (k - 1) * rate
        base = np.stack([extra // 2, extra - extra // 2], 1)
    else:
        base = np.zeros((n, 2), np.int64)
    # space_to_batch_nd needs the block dims right after the batch: dims in between get block 1.
    first, last = spatial_dims[0], spatial_dims[-1]
    block, base_full = [], []
    for d in range(first, last + 1):
        if d in spatial_dims:
            i = spatial_dims.index(d)
            block.append(int(rate[i]))
            base_full.append(base[i].tolist())
        else:
            block.append(1)
            base_full.append([0, 0])
    if first != 1:
        raise ValueError("with_space_to_batch: spatial_dims must start right after the batch dimension here")
    x_shape = shape_tensor(x)
    paddings, crops = required_space_to_batch_paddings(x_shape[first:last + 1], block, base_full)
    converted = space_to_batch_nd(x, block, paddings)
    result = op(converted, n, "VALID")
    return batch_to_space_nd(result, block, crops)


def pool(input, window_shape, pooling_type, padding, dilation_rate=None, strides=None, name=None,  # noqa: A002
         data_format=None, dilations=None):
    """tf.nn.pool(input, window_shape, pooling_type, padding, dilation_rate=None, strides=None,
    name=None, data_format=None): 'MAX' or 'AVG' pooling of a 1-, 2- or 3-D input; a dilation
    rate > 1 (strides 1, VALID padding, as in TF) pools through with_space_to_batch."""
    dilation_rate = dilations if dilation_rate is None else dilation_rate
    pooling_type = as_str(pooling_type).upper()
    if pooling_type not in ("MAX", "AVG"):
        raise ValueError(f"Invalid pooling_type: {pooling_type}")
    with name_scope(name, pooling_type.lower() + "_pool", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        window = [int(w) for w in np.reshape(window_shape, -1)]
        n = _num_spatial(x, "pool", len(window))
        strides = [1] * n if strides is None else [int(s) for s in np.reshape(strides, -1)]
        rate = [1] * n if dilation_rate is None else [int(r) for r in np.reshape(dilation_rate, -1)]
        if any(r > 1 for r in rate) and as_str(padding).upper() == "SAME":
            raise ValueError("pooling with SAME padding is not implemented for dilation_rate > 1")
        if any(r > 1 for r in rate) and any(s > 1 for s in strides):
            raise ValueError("strides > window_shape not supported due to inconsistency between CPU and GPU "
                             "implementations (strides must be 1 when dilation_rate > 1)")
        kind = "max" if pooling_type == "MAX" else "avg"
        cf = _channels_first(data_format)

        def op(converted, num_spatial, pad):
            return _pool_v2(kind, converted, window, strides, pad, data_format, None, num_spatial)
        if cf and any(r > 1 for r in rate):
            raise ValueError("pool: a dilation_rate > 1 needs channels-last data")
        return identity(with_space_to_batch(x, rate, padding, op, filter_shape=window, data_format=data_format),
                        name=scope)

