"""numpy kernels of 3-D convolution (channels last: [batch, depth, height, width, channels]) and
its two backprops, written for any number of spatial dimensions.

The forward and backprop-filter kernels are im2col in chunks of the batch: the chunk's patches
(about 1M elements) are copied out of a strided view of the padded input and multiplied with the
filter in one BLAS call. The backprop-input kernel is col2im: one GEMM of the filter with the
output gradient per chunk, then a strided add per kernel offset (kd*kh*kw adds, each over the
whole chunk). Memory stays bounded by the chunk size.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided

_CHUNK_ELEMS = 1 << 20


@dataclass(frozen=True)
class Geometry:
    """Strides, dilations and (before, after) pads per spatial axis."""
    strides: tuple
    dilations: tuple
    pads: tuple


def out_size(size: int, k: int, s: int, d: int) -> int:
    eff = (k - 1) * d + 1
    return max(0, (size - eff) // s + 1) if size >= eff else 0


def pad_spatial(x: np.ndarray, pads, value=0) -> np.ndarray:
    """x padded on its spatial axes (all but the first and last) by `pads` (before, after)."""
    if not any(p for pair in pads for p in pair):
        return x
    return np.pad(x, [(0, 0)] + [tuple(p) for p in pads] + [(0, 0)], constant_values=value)


def patch_view(xp: np.ndarray, outs, ks, g: Geometry) -> np.ndarray:
    """A read-only view [n, *out, *k, c] of the windows of a padded input."""
    s_n, *s_sp, s_c = xp.strides
    shape = (xp.shape[0], *outs, *ks, xp.shape[-1])
    strides = (s_n, *(s * st for s, st in zip(s_sp, g.strides)), *(s * d for s, d in zip(s_sp, g.dilations)), s_c)
    return as_strided(xp, shape, strides, writeable=False)


def _outs(xp_shape, ks, g: Geometry) -> tuple:
    return tuple(out_size(size, k, s, d) for size, k, s, d in zip(xp_shape[1:-1], ks, g.strides, g.dilations))


def _chunk(n: int, per: int) -> int:
    return max(1, min(n, _CHUNK_ELEMS // max(per, 1)))


def conv(x: np.ndarray, w: np.ndarray, g: Geometry) -> np.ndarray:
    """out[n, *o, co] = sum over window offsets and channels of xpad * w; w is [*k, ci, co]."""
    *ks, ci, co = w.shape
    dtype = np.result_type(x.dtype, w.dtype)
    xp = pad_spatial(x, g.pads)
    outs = _outs(xp.shape, ks, g)
    n = x.shape[0]
    out = np.zeros((n, *outs, co), dtype)
    k = int(np.prod(ks)) * ci
    per = int(np.prod(outs)) * k
    if out.size == 0 or per == 0:
        return out
    wm = w.reshape(k, co)
    view = patch_view(xp, outs, ks, g)
    nb = _chunk(n, per)
    for b0 in range(0, n, nb):
        b1 = min(n, b0 + nb)
        cols = np.ascontiguousarray(view[b0:b1]).reshape(-1, k)
        np.matmul(cols, wm, out=out[b0:b1].reshape(-1, co))
    return out


def conv_filter_grad(x: np.ndarray, dy: np.ndarray, ks, g: Geometry) -> np.ndarray:
    """d(loss)/d(filter) of `conv`: the sum over batch chunks of patches^T @ dy."""
    ci, co = x.shape[-1], dy.shape[-1]
    dtype = np.result_type(x.dtype, dy.dtype)
    xp = pad_spatial(x, g.pads)
    outs = tuple(dy.shape[1:-1])
    k = int(np.prod(ks)) * ci
    dw = np.zeros((k, co), dtype)
    per = int(np.prod(outs)) * k
    n = x.shape[0]
    if per and n:
        view = patch_view(xp, outs, ks, g)
        nb = _chunk(n, per)
        for b0 in range(0, n, nb):
            b1 = min(n, b0 + nb)
            cols = np.ascontiguousarray(view[b0:b1]).reshape(-1, k)
            dw += cols.T @ dy[b0:b1].reshape(-1, co)
    return dw.reshape(*ks, ci, co)


def conv_input_grad(x_shape, w: np.ndarray, dy: np.ndarray, g: Geometry) -> np.ndarray:
    """d(loss)/d(input) of `conv` (col2im): cols = dy @ w^T per batch chunk, added back window
    offset by window offset into a padded gradient, which is then cropped."""
    n, *sp, ci = (int(v) for v in x_shape)
    *ks, _, co = w.shape
    outs = tuple(dy.shape[1:-1])
    dtype = np.result_type(dy.dtype, w.dtype)
    padded = [max(s + b + a, (o - 1) * st + (k - 1) * d + 1 if o else 0)
              for s, (b, a), o, k, st, d in zip(sp, g.pads, outs, ks, g.strides, g.dilations)]
    dxp = np.zeros((n, *padded, ci), dtype)
    k = int(np.prod(ks)) * ci
    per = int(np.prod(outs)) * k
    if per and n:
        wm = w.reshape(k, co)
        nb = _chunk(n, per)
        for b0 in range(0, n, nb):
            b1 = min(n, b0 + nb)
            cols = (dy[b0:b1].reshape(-1, co) @ wm.T).reshape(b1 - b0, *outs, *ks, ci)
            for offset in itertools.product(*(range(kk) for kk in ks)):
                window = tuple(slice(i * d, i * d + (o - 1) * st + 1, st)
                               for i, d, o, st in zip(offset, g.dilations, outs, g.strides))
                dxp[(slice(b0, b1),) + window] += cols[(slice(None),) * (1 + len(outs)) + offset]
    crop = tuple(slice(b, b + s) for (b, _), s in zip(g.pads, sp))
    return np.ascontiguousarray(dxp[(slice(None),) + crop])
