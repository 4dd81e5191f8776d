"""The rank-generic convolution and pooling wrappers: convolution, conv_transpose, pool,
avg_pool_v2 / max_pool_v2 (1-, 2- or 3-D by rank, over conv.py, pool.py, conv3d.py and
pool3d.py), the 1-D pools and conv1d_transpose, atrous (dilated) convolutions and
with_space_to_batch; and the window helpers of N-d sliding-window kernels (morphology.py)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import stack
from tensorweave.ops.array.core import expand_dims, identity, squeeze
from tensorweave.ops.array.space import batch_to_space_nd, space_to_batch_nd
from tensorweave.ops.math.array_composites import required_space_to_batch_paddings
from tensorweave.ops.nn.conv import conv2d, conv2d_transpose
from tensorweave.ops.nn.conv3d import conv3d, conv3d_transpose
from tensorweave.ops.nn.impl import conv1d
from tensorweave.ops.nn.pool import avg_pool, max_pool
from tensorweave.ops.nn.pool3d import avg_pool3d, max_pool3d
from tensorweave.ops.nn.util import as_str, check_padding, shape_tensor, window_pads


# -- sliding windows over [batch, *spatial, channels] ----------------------------------------------
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


@tf_export("nn.convolution")
def convolution(input, filter=None, padding=None, strides=None, dilation_rate=None, name=None,
                data_format=None, filters=None, dilations=None):
    """tf.nn.convolution(input, filter, padding, strides=None, dilation_rate=None, name=None,
    data_format=None): N-d convolution (1-, 2- or 3-D by the input's rank) with dilations."""
    filter = filters if filter is None else filter
    dilation_rate = dilations if dilation_rate is None else dilation_rate
    with name_scope(name, "convolution", [input, filter]) as scope:
        x = convert_to_tensor(input, name="input")
        filter = convert_to_tensor(filter, dtype=x.dtype, name="filter")
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


@tf_export("nn.conv1d_transpose")
def conv1d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NWC",
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


@tf_export("nn.conv_transpose")
def conv_transpose(input, filters, output_shape, strides, padding="SAME", data_format=None, dilations=None,
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


@tf_export("nn.atrous_conv2d")
def atrous_conv2d(value, filters, rate, padding, name=None):
    """tf.nn.atrous_conv2d(value, filters, rate, padding, name=None): conv2d of NHWC value with
    `rate`-dilated filters (stride 1)."""
    return conv2d(value, filters, [1, 1, 1, 1], padding, dilations=[1, int(rate), int(rate), 1],
                  name=name or "atrous_conv2d")


@tf_export("nn.atrous_conv2d_transpose")
def atrous_conv2d_transpose(value, filters, output_shape, rate, padding, name=None):
    """tf.nn.atrous_conv2d_transpose(value, filters, output_shape, rate, padding, name=None): the
    gradient of atrous_conv2d with respect to its input."""
    return conv2d_transpose(value, filters, output_shape, [1, 1, 1, 1], padding,
                            dilations=[1, int(rate), int(rate), 1], name=name or "atrous_conv2d_transpose")


def _pool1d(fn, input, ksize, strides, padding, data_format, name):
    cf = _channels_first(data_format)
    with name_scope(name, fn.__name__ + "1d", [input]) as scope:
        x = expand_dims(convert_to_tensor(input, name="input"), 2 if cf else 1)
        k, s = _full(ksize, 1, cf)[2 if cf else 1], _full(strides, 1, cf)[2 if cf else 1]
        y = fn(x, [1, 1, 1, k] if cf else [1, 1, k, 1], [1, 1, 1, s] if cf else [1, 1, s, 1], padding,
               data_format="NCHW" if cf else "NHWC")
        return squeeze(y, [2 if cf else 1], name=scope)


@tf_export("nn.max_pool1d")
def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):
    """tf.nn.max_pool1d(input, ksize, strides, padding, data_format='NWC', name=None)."""
    return _pool1d(max_pool, input, ksize, strides, padding, data_format, name)


@tf_export("nn.avg_pool1d")
def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):
    """tf.nn.avg_pool1d(input, ksize, strides, padding, data_format='NWC', name=None)."""
    return _pool1d(avg_pool, input, ksize, strides, padding, data_format, name)


def _pool_v2(kind: str, input, ksize, strides, padding, data_format, name, num_spatial=None):
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


@tf_export("nn.max_pool_v2")
def max_pool_v2(input, ksize, strides, padding, data_format=None, name=None):
    """tf.nn.max_pool_v2(input, ksize, strides, padding, data_format=None, name=None): max pooling
    of a 3-, 4- or 5-D input (ksize and strides: 1, N or N + 2 ints)."""
    return _pool_v2("max", input, ksize, strides, padding, data_format, name)


@tf_export("nn.avg_pool_v2")
def avg_pool_v2(input, ksize, strides, padding, data_format=None, name=None):
    """tf.nn.avg_pool_v2(input, ksize, strides, padding, data_format=None, name=None)."""
    return _pool_v2("avg", input, ksize, strides, padding, data_format, name)


@tf_export("nn.with_space_to_batch")
def with_space_to_batch(input, dilation_rate, padding, op, filter_shape=None, spatial_dims=None,
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
    padding, _ = check_padding(padding, "with_space_to_batch", allow_explicit=False)
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


@tf_export("nn.pool")
def pool(input, window_shape, pooling_type, padding, dilation_rate=None, strides=None, name=None,
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
