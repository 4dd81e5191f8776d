"""numpy kernels of 3-D max and average pooling (channels last) and their gradients, for any
number of spatial dimensions. Each kernel walks the window offsets (kd*kh*kw strided slices of
the whole padded input), never single positions."""
from __future__ import annotations

import itertools

import numpy as np

from tensorweave.ops.nn.conv3d_kernels import pad_spatial


def _windows(outs, ks, strides):
    """(offset, slices of the padded input that offset reads for every output position)."""
    for offset in itertools.product(*(range(k) for k in ks)):
        yield tuple(slice(i, i + (o - 1) * s + 1, s) for i, o, s in zip(offset, outs, strides))


def _counts(spatial, outs, ks, strides, pads) -> np.ndarray:
    """How many real (unpadded) inputs each window covers, shaped [1, *outs, 1]."""
    ones = pad_spatial(np.ones((1, *spatial, 1), np.int64), pads)
    counts = np.zeros((1, *outs, 1), np.int64)
    for sl in _windows(outs, ks, strides):
        counts += ones[(slice(None),) + sl]
    return counts


def _lowest(dtype):
    return -np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


def max_pool(x: np.ndarray, ks, strides, pads, outs) -> np.ndarray:
    xp = pad_spatial(x, pads, value=_lowest(x.dtype))
    out = None
    for sl in _windows(outs, ks, strides):
        v = xp[(slice(None),) + sl]
        out = v.copy() if out is None else np.maximum(out, v, out=out)
    return out if out is not None else np.zeros((x.shape[0], *outs, x.shape[-1]), x.dtype)


def avg_pool(x: np.ndarray, ks, strides, pads, outs) -> np.ndarray:
    """The mean over each window's real inputs (padding is not counted), as TF computes it."""
    xp = pad_spatial(x, pads)
    total = np.zeros((x.shape[0], *outs, x.shape[-1]), np.result_type(x.dtype, np.float32)
                     if not np.issubdtype(x.dtype, np.floating) else x.dtype)
    for sl in _windows(outs, ks, strides):
        total += xp[(slice(None),) + sl]
    return (total / _counts(x.shape[1:-1], outs, ks, strides, pads)).astype(x.dtype, copy=False)


def max_pool_grad(x: np.ndarray, y: np.ndarray, dy: np.ndarray, ks, strides, pads) -> np.ndarray:
    """Routes each window's gradient to every input within 1e-5 of the window's max (TF's CPU
    MaxPool3DGrad rule, which shares the gradient between tied maxima)."""
    outs = y.shape[1:-1]
    xp = pad_spatial(x, pads, value=_lowest(x.dtype))
    dxp = np.zeros(xp.shape, dy.dtype)
    for sl in _windows(outs, ks, strides):
        idx = (slice(None),) + sl
        dxp[idx] += np.where(np.abs(xp[idx] - y) < 1e-5, dy, 0)
    crop = tuple(slice(b, b + s) for (b, _), s in zip(pads, x.shape[1:-1]))
    return np.ascontiguousarray(dxp[(slice(None),) + crop])


def avg_pool_grad(x_shape, dy: np.ndarray, ks, strides, pads) -> np.ndarray:
    n, *spatial, c = (int(v) for v in x_shape)
    outs = dy.shape[1:-1]
    share = dy / _counts(spatial, outs, ks, strides, pads)
    dxp = np.zeros((n, *(s + b + a for s, (b, a) in zip(spatial, pads)), c), dy.dtype)
    for sl in _windows(outs, ks, strides):
        dxp[(slice(None),) + sl] += share
    crop = tuple(slice(b, b + s) for (b, _), s in zip(pads, spatial))
    return np.ascontiguousarray(dxp[(slice(None),) + crop])
