"""numpy convolution kernels (NHWC) shared by Conv2D, its backprops and conv2d_transpose.

All the arithmetic is in a few large GEMMs on contiguous buffers, in chunks of the batch so that
scratch memory stays bounded (_CHUNK_ELEMS patch elements per chunk, reused buffers: a fresh
large array page-faults on every step):
- row GEMMs, for stride 1 down the rows and patch rows of at least _ROW_MIN_K elements (the
  5x5x64 layers): a chunk's patches are laid out rows outermost, (padded row, image, output
  column, kw * in_channels), five times smaller than full im2col; kernel row i's patches for
  every output row are then one contiguous block, so the forward is kh GEMMs summed and the
  filter gradient kh GEMMs, one per kernel row;
- full im2col otherwise (strides, few input channels): one GEMM per chunk.
The copies that build patches are split over the intra-op threads. The backprop-input kernel
is, for stride 1 and as many input as output channels, the forward kernel on the re-padded
output gradient with the spatially flipped, in/out-transposed filter; with a stride or few input
channels it is col2im: one GEMM of the filter with dy per chunk, scatter-added offset by offset.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided

from tensorweave.ops.intra_op import parallel_ranges

_CHUNK_ELEMS = 1 << 20   # patch elements per chunk (bounds scratch memory): measured best for CIFAR-sized convs
_ROW_MIN_K = 128         # narrowest patch row (kw * in_channels) the row-GEMM path takes


class Workspace:
    """Reused scratch buffers (fresh large allocations page-fault on every step)."""

    def __init__(self):
        self._free: list = []
        self._lock = threading.Lock()

    def get(self, n: int, dtype) -> np.ndarray:
        with self._lock:
            fits = [i for i, b in enumerate(self._free) if b.dtype == dtype and b.size >= n]
            if fits:
                return self._free.pop(min(fits, key=lambda i: self._free[i].size))
        return np.empty(n, dtype)

    def put(self, buf: np.ndarray) -> None:
        with self._lock:
            if len(self._free) < 4:
                self._free.append(buf)


@dataclass(frozen=True)
class Geometry:
    """Spatial geometry of one 2-D convolution in NHWC terms."""
    sh: int
    sw: int
    dh: int
    dw: int
    pt: int
    pb: int
    pl: int
    pr: int


def pad_nhwc(x: np.ndarray, pt: int, pb: int, pl: int, pr: int, value=0) -> np.ndarray:
    """Pads (positive) or crops (negative) the two spatial axes."""
    if pt < 0 or pb < 0 or pl < 0 or pr < 0:
        h, w = x.shape[1], x.shape[2]
        x = x[:, max(0, -pt):h - max(0, -pb), max(0, -pl):w - max(0, -pr)]
        pt, pb, pl, pr = max(pt, 0), max(pb, 0), max(pl, 0), max(pr, 0)
    if not (pt or pb or pl or pr):
        return x
    n, h, w, c = x.shape
    out = np.full((n, h + pt + pb, w + pl + pr, c), value, dtype=x.dtype)
    out[:, pt:pt + h, pl:pl + w] = x
    return out


def _patch_view(xp: np.ndarray, oh: int, ow: int, kh: int, kw: int, g: Geometry) -> np.ndarray:
    n, _, _, c = xp.shape
    s_n, s_h, s_w, s_c = xp.strides
    return as_strided(xp, (n, oh, ow, kh, kw, c),
                      (s_n, s_h * g.sh, s_w * g.sw, s_h * g.dh, s_w * g.dw, s_c), writeable=False)


def _out_size(size: int, k: int, s: int, d: int) -> int:
    eff = (k - 1) * d + 1
    return max(0, (size - eff) // s + 1) if size >= eff else 0


def _padded_chunks(x: np.ndarray, g: Geometry, nb: int, ws: Workspace):
    """Yields (b0, b1, chunk of x padded by g's pads) over the batch. A padded chunk lives in a
    reused buffer whose border is zeroed once per call: no padded copy of the whole batch (a
    fresh large array page-faults on every step). Negative pads crop."""
    pt, pb, pl, pr = g.pt, g.pb, g.pl, g.pr
    if pt < 0 or pb < 0 or pl < 0 or pr < 0:
        h, w = x.shape[1], x.shape[2]
        x = x[:, max(0, -pt):h - max(0, -pb), max(0, -pl):w - max(0, -pr)]
        pt, pb, pl, pr = max(pt, 0), max(pb, 0), max(pl, 0), max(pr, 0)
    n, h, w, c = x.shape
    if not (pt or pb or pl or pr):
        for b0 in range(0, n, nb):
            yield b0, min(n, b0 + nb), x[b0:b0 + nb]
        return
    hp, wp = h + pt + pb, w + pl + pr
    size = min(nb, n) * hp * wp * c
    buf = ws.get(size, x.dtype)
    try:
        xp = buf[:size].reshape(min(nb, n), hp, wp, c)
        xp.fill(0)
        for b0 in range(0, n, nb):
            b1 = min(n, b0 + nb)
            xp[:b1 - b0, pt:pt + h, pl:pl + w] = x[b0:b1]
            yield b0, b1, xp[:b1 - b0]
    finally:
        ws.put(buf)


def _row_path(c: int, kw: int, g: Geometry) -> bool:
    """Whether a conv takes the row-GEMM path: stride 1 down the rows (so each kernel row's
    patches are one contiguous block of the row-major patch buffer) and patch rows wide enough
    (kw * in_channels) for an efficient GEMM; otherwise full im2col."""
    return g.sh == 1 and kw * c >= _ROW_MIN_K


def _copy_images(dst: np.ndarray, src: np.ndarray, axis: int = 0) -> None:
    """np.copyto(dst, src), split along `axis` over the intra-op threads."""
    def part(a, b):
        sl = (slice(None),) * axis + (slice(a, b),)
        np.copyto(dst[sl], src[sl])
    parallel_ranges(dst.shape[axis], dst.size, part)


def _row_patches(xp: np.ndarray, rows: int, ow: int, kw: int, g: Geometry, buf: np.ndarray) -> np.ndarray:
    """(rows, n, ow, kw * c) patches of a padded chunk, rows outermost: patches[y, n, x] holds the
    kw * c inputs of padded row y that output column x sees. Kernel row i's patches for every
    output row are then the contiguous block patches[i * dh:i * dh + oh]."""
    n, _, _, c = xp.shape
    s_n, s_h, s_w, s_c = xp.strides
    view = as_strided(xp, (rows, n, ow, kw, c), (s_h, s_n, s_w * g.sw, s_w * g.dw, s_c), writeable=False)
    patches = buf[:rows * n * ow * kw * c].reshape(rows, n, ow, kw, c)
    _copy_images(patches, view)
    return patches.reshape(rows, n * ow, kw * c)


def _gemm_sum(blocks, mats, out: np.ndarray, tmp: np.ndarray) -> None:
    """out = sum_i blocks[i] @ mats[i] (2-D operands, out and tmp preallocated)."""
    for i, (a, b) in enumerate(zip(blocks, mats)):
        if i == 0:
            np.matmul(a, b, out=out)
        else:
            np.matmul(a, b, out=tmp)
            out += tmp


def conv2d_nhwc(x: np.ndarray, w: np.ndarray, g: Geometry, ws: Workspace) -> np.ndarray:
    """out[n, y, x, o] = sum_{i, j, c} xpad[n, y*sh + i*dh, x*sw + j*dw, c] * w[i, j, c, o]."""
    kh, kw, ci, co = w.shape
    dtype = np.result_type(x.dtype, w.dtype)
    if kh == kw == 1 and g.sh == g.sw == 1 and not (g.pt or g.pb or g.pl or g.pr):
        n, h, wd, c = x.shape
        return np.matmul(x.reshape(-1, c), w.reshape(c, co)).reshape(n, h, wd, co)
    n, h, wd, c = x.shape
    hp, wp = max(0, h + g.pt + g.pb), max(0, wd + g.pl + g.pr)
    oh, ow = _out_size(hp, kh, g.sh, g.dh), _out_size(wp, kw, g.sw, g.dw)
    out = np.empty((n, oh, ow, co), dtype)
    if out.size == 0 or kh * kw * c == 0:
        out[...] = 0
        return out
    if _row_path(c, kw, g):
        _conv_rows(x, w.astype(dtype, copy=False), g, oh, ow, ws, out)
        return out
    per = oh * ow * kh * kw * c
    wm = w.reshape(kh * kw * c, co)
    nb = max(1, min(n, _CHUNK_ELEMS // per))
    buf = ws.get(nb * per, dtype)
    try:
        for b0, b1, xp in _padded_chunks(x, g, nb, ws):
            cols = buf[:(b1 - b0) * per].reshape(b1 - b0, oh, ow, kh, kw, c)
            _copy_images(cols, _patch_view(xp, oh, ow, kh, kw, g))
            np.matmul(cols.reshape(-1, kh * kw * c), wm, out=out[b0:b1].reshape(-1, co))
    finally:
        ws.put(buf)
    return out


def _conv_rows(x, w, g: Geometry, oh: int, ow: int, ws: Workspace, out: np.ndarray) -> None:
    """The row-GEMM forward: per batch chunk, one patch buffer kw*c wide and kh GEMMs summed."""
    n, c = x.shape[0], x.shape[3]
    kh, kw, _, co = w.shape
    rows = oh + (kh - 1) * g.dh
    per = rows * ow * kw * c
    nb = max(1, min(n, _CHUNK_ELEMS // per))
    mats = [w[i].reshape(kw * c, co) for i in range(kh)]
    buf, obuf = ws.get(nb * per, out.dtype), ws.get(2 * nb * oh * ow * co, out.dtype)
    try:
        for b0, b1, xp in _padded_chunks(x, g, nb, ws):
            m = b1 - b0
            patches = _row_patches(xp, rows, ow, kw, g, buf)
            o = obuf[:m * oh * ow * co].reshape(oh, m, ow, co)
            tmp = obuf[m * oh * ow * co:2 * m * oh * ow * co].reshape(-1, co)
            _gemm_sum([patches[i * g.dh:i * g.dh + oh].reshape(-1, kw * c) for i in range(kh)], mats,
                      o.reshape(-1, co), tmp)
            _copy_images(out[b0:b1], o.transpose(1, 0, 2, 3))
    finally:
        ws.put(obuf)
        ws.put(buf)


def conv2d_filter_grad_nhwc(x: np.ndarray, dy: np.ndarray, kh: int, kw: int, g: Geometry,
                            ws: Workspace) -> np.ndarray:
    """d(loss)/d(filter) of conv2d_nhwc: sum over batch chunks of patches^T @ dy."""
    n, _, _, c = x.shape
    co = dy.shape[3]
    dtype = np.result_type(x.dtype, dy.dtype)
    oh, ow = dy.shape[1], dy.shape[2]
    k = kh * kw * c
    per = oh * ow * k
    if per == 0 or n == 0:
        return np.zeros((kh, kw, c, co), dtype)
    if _row_path(c, kw, g):
        return _filter_grad_rows(x, dy.astype(dtype, copy=False), kh, kw, g, ws)
    dw = np.empty((k, co), dtype)
    nb = max(1, min(n, _CHUNK_ELEMS // per))
    buf = ws.get(nb * per, dtype)
    tmp = np.empty_like(dw) if nb < n else None
    try:
        for b0, b1, xp in _padded_chunks(x, g, nb, ws):
            cols = buf[:(b1 - b0) * per].reshape(b1 - b0, oh, ow, kh, kw, c)
            _copy_images(cols, _patch_view(xp, oh, ow, kh, kw, g))
            np.matmul(cols.reshape(-1, k).T, dy[b0:b1].reshape(-1, co), out=dw if b0 == 0 else tmp)
            if b0:
                dw += tmp
    finally:
        ws.put(buf)
    return dw.reshape(kh, kw, c, co)


def _filter_grad_rows(x, dy, kh: int, kw: int, g: Geometry, ws: Workspace) -> np.ndarray:
    """The row-GEMM filter gradient: kernel row i's gradient is its patch block^T @ dy, with dy
    laid out rows outermost like the patches."""
    n, _, _, c = x.shape
    oh, ow, co = dy.shape[1], dy.shape[2], dy.shape[3]
    rows = oh + (kh - 1) * g.dh
    per = rows * ow * kw * c
    nb = max(1, min(n, _CHUNK_ELEMS // per))
    dw = np.empty((kh, kw * c, co), dy.dtype)
    tmp = np.empty((kw * c, co), dy.dtype) if nb < n else None
    buf, dbuf = ws.get(nb * per, dy.dtype), ws.get(nb * oh * ow * co, dy.dtype)
    try:
        for b0, b1, xp in _padded_chunks(x, g, nb, ws):
            m = b1 - b0
            patches = _row_patches(xp, rows, ow, kw, g, buf)
            dyr = dbuf[:m * oh * ow * co].reshape(oh, m, ow, co)
            _copy_images(dyr, dy[b0:b1].transpose(1, 0, 2, 3))
            dyr = dyr.reshape(-1, co)
            for i in range(kh):
                block = patches[i * g.dh:i * g.dh + oh].reshape(-1, kw * c).T
                if b0 == 0:
                    np.matmul(block, dyr, out=dw[i])
                else:
                    np.matmul(block, dyr, out=tmp)
                    dw[i] += tmp
    finally:
        ws.put(dbuf)
        ws.put(buf)
    return dw.reshape(kh, kw, c, co)


def conv2d_input_grad_nhwc(x_shape, w: np.ndarray, dy: np.ndarray, g: Geometry,
                           ws: Workspace) -> np.ndarray:
    """d(loss)/d(input) of conv2d_nhwc.

    Two ways, chosen by the data each moves: the patches of dy are kh*kw*out_channels wide, the
    columns of col2im kh*kw*in_channels. With few input channels (the first layer) or a stride
    (which would zero-dilate dy), col2im; otherwise a stride-1 conv of the re-padded dy with
    the flipped, transposed filter, which keeps the GEMM's output narrow dimension wide."""
    n, h, wd, c = (int(v) for v in x_shape)
    kh, kw, ci, co = w.shape
    if g.sh > 1 or g.sw > 1 or 4 * ci <= co:
        return _col2im_input_grad((n, h, wd, c), w, dy, g, ws)
    dyd = dy
    eff_h, eff_w = (kh - 1) * g.dh + 1, (kw - 1) * g.dw + 1
    top, left = eff_h - 1 - g.pt, eff_w - 1 - g.pl
    bottom = h + eff_h - 1 - dyd.shape[1] - top
    right = wd + eff_w - 1 - dyd.shape[2] - left
    wflip = np.ascontiguousarray(w[::-1, ::-1].transpose(0, 1, 3, 2))
    if dyd.shape[1] == 0 or dyd.shape[2] == 0:
        return np.zeros((n, h, wd, c), np.result_type(dy.dtype, w.dtype))
    return conv2d_nhwc(dyd, wflip, Geometry(1, 1, g.dh, g.dw, top, bottom, left, right), ws)


def _col2im_input_grad(x_shape, w: np.ndarray, dy: np.ndarray, g: Geometry,
                       ws: Workspace) -> np.ndarray:
    """cols = filter @ dy^T (one GEMM per batch chunk), scatter-added window offset by window
    offset into a channel-major padded gradient: laid out (c, n, h, w), each add runs over
    contiguous output rows instead of a few channels at a time."""
    n, h, wd, c = x_shape
    kh, kw, ci, co = w.shape
    oh, ow = dy.shape[1], dy.shape[2]
    dtype = np.result_type(dy.dtype, w.dtype)
    hp = max(h + g.pt + g.pb, (oh - 1) * g.sh + (kh - 1) * g.dh + 1 if oh else 0)
    wp = max(wd + g.pl + g.pr, (ow - 1) * g.sw + (kw - 1) * g.dw + 1 if ow else 0)
    dxt = np.zeros((ci, n, hp, wp), dtype)
    k, per = kh * kw * ci, kh * kw * ci * oh * ow
    if per and n:
        wmat = w.reshape(k, co)
        nb = max(1, min(n, _CHUNK_ELEMS // per))
        buf = ws.get(nb * per, dtype)
        try:
            for b0 in range(0, n, nb):
                b1 = min(n, b0 + nb)
                cols = buf[:(b1 - b0) * per].reshape(k, (b1 - b0) * oh * ow)
                np.matmul(wmat, dy[b0:b1].reshape(-1, co).T, out=cols)
                cols = cols.reshape(kh, kw, ci, b1 - b0, oh, ow)
                d = dxt[:, b0:b1]
                for i in range(kh):
                    ys = slice(i * g.dh, i * g.dh + (oh - 1) * g.sh + 1, g.sh)
                    for j in range(kw):
                        xs = slice(j * g.dw, j * g.dw + (ow - 1) * g.sw + 1, g.sw)
                        d[:, :, ys, xs] += cols[i, j]
        finally:
            ws.put(buf)
    return np.ascontiguousarray(dxt[:, :, g.pt:g.pt + h, g.pl:g.pl + wd].transpose(1, 2, 3, 0))


# -- depthwise ---------------------------------------------------------------------------------
def depthwise_nhwc(x: np.ndarray, w: np.ndarray, g: Geometry) -> np.ndarray:
    """out[n, y, x, c*m + q] = sum_{i, j} xpad[n, y*sh + i*dh, x*sw + j*dw, c] * w[i, j, c, q].

    One multiply-add per window offset into preallocated buffers, over batch parts on the
    intra-op threads."""
    kh, kw, c, m = w.shape
    xp = pad_nhwc(x, g.pt, g.pb, g.pl, g.pr)
    n, hp, wp, _ = xp.shape
    oh, ow = _out_size(hp, kh, g.sh, g.dh), _out_size(wp, kw, g.sw, g.dw)
    dtype = np.result_type(x.dtype, w.dtype)
    out = np.zeros((n, oh, ow, c, m), dtype)
    if out.size:
        view = _patch_view(xp, oh, ow, kh, kw, g)

        def part(a, b):
            o, tmp = out[a:b], np.empty((b - a, oh, ow, c, m), dtype)
            for i in range(kh):
                for j in range(kw):
                    np.multiply(view[a:b, :, :, i, j, :, None], w[i, j], out=tmp)
                    o += tmp
        parallel_ranges(n, out.size * kh * kw, part)
    return out.reshape(n, oh, ow, c * m)


def depthwise_filter_grad_nhwc(x: np.ndarray, dy: np.ndarray, kh: int, kw: int, g: Geometry) -> np.ndarray:
    n, _, _, c = x.shape
    oh, ow = dy.shape[1], dy.shape[2]
    m = dy.shape[3] // c
    xp = pad_nhwc(x, g.pt, g.pb, g.pl, g.pr)
    dy5 = dy.reshape(n * oh * ow, c, m)
    dw = np.zeros((kh, kw, c, m), np.result_type(x.dtype, dy.dtype))
    if dy5.size:
        view = _patch_view(xp, oh, ow, kh, kw, g)
        for i in range(kh):
            for j in range(kw):
                dw[i, j] = np.einsum("pc,pcm->cm", view[:, :, :, i, j, :].reshape(-1, c), dy5)
    return dw


def depthwise_input_grad_nhwc(x_shape, w: np.ndarray, dy: np.ndarray, g: Geometry) -> np.ndarray:
    n, h, wd, c = (int(v) for v in x_shape)
    kh, kw, _, m = w.shape
    oh, ow = dy.shape[1], dy.shape[2]
    hp, wp = h + g.pt + g.pb, wd + g.pl + g.pr
    dxp = np.zeros((n, hp, wp, c), np.result_type(dy.dtype, w.dtype))
    dy5 = dy.reshape(n, oh, ow, c, m)
    if dy5.size:
        for i in range(kh):
            for j in range(kw):
                y0, x0 = i * g.dh, j * g.dw
                dxp[:, y0:y0 + (oh - 1) * g.sh + 1:g.sh, x0:x0 + (ow - 1) * g.sw + 1:g.sw] += \
                    np.einsum("nhwcm,cm->nhwc", dy5, w[i, j])
    return dxp[:, g.pt:g.pt + h, g.pl:g.pl + wd]
