"""numpy pooling and LRN kernels (NHWC). Windows are visited offset by offset over the valid
output sub-range of each offset, so no padded copy is made; SAME padding never contributes.
Hot loops write into preallocated buffers with `out=` and avoid np.where (several times slower
than a multiply by a boolean mask here)."""
from __future__ import annotations

import numpy as np

from tensorweave.ops import onednn
from tensorweave.ops.helpers import array_module
from tensorweave.ops.intra_op import parallel_ranges


def _range(size: int, out: int, i: int, s: int, p: int):
    """Output range [y0, y1) whose window offset i lands inside [0, size), and the first input."""
    y0 = max(0, -(-(p - i) // s))
    y1 = min(out, (size - 1 - i + p) // s + 1)
    return y0, y1, y0 * s + i - p


def _offsets(h, w, oh, ow, kh, kw, sh, sw, pt, pl):
    """Per window offset (i, j): (output slices, input slices), row-major, empty ones skipped."""
    res = []
    for i in range(kh):
        y0, y1, iy = _range(h, oh, i, sh, pt)
        if y1 <= y0:
            continue
        for j in range(kw):
            x0, x1, ix = _range(w, ow, j, sw, pl)
            if x1 <= x0:
                continue
            res.append((slice(y0, y1), slice(x0, x1),
                        slice(iy, iy + (y1 - y0 - 1) * sh + 1, sh), slice(ix, ix + (x1 - x0 - 1) * sw + 1, sw)))
    return res


def _lowest(dtype):
    return -np.inf if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min


# Max pooling is separable: a window's maximum is the maximum over its rows of each row's maximum
# over the window's columns. Two 1-D passes cost k_h + k_w strided operations instead of
# k_h * k_w, and the 1-D gradient routing below keeps TF's tie rule (the first maximum in
# row-major window order): route to the first row whose column-maximum is the window's maximum,
# then to the first column of that row holding it.
def _axis_offsets(size: int, out: int, k: int, s: int, p: int) -> list:
    """Per window offset i along one axis: (i, output slice, input slice); empty ones skipped."""
    res = []
    for i in range(k):
        o0, o1, i0 = _range(size, out, i, s, p)
        if o1 > o0:
            res.append((i, slice(o0, o1), slice(i0, i0 + (o1 - o0 - 1) * s + 1, s)))
    return res


def _at(axis: int, sl: slice) -> tuple:
    return (slice(None), sl) if axis == 1 else (slice(None), slice(None), sl)


def _max_1d(x: np.ndarray, out: int, k: int, s: int, p: int, axis: int, m=None) -> np.ndarray:
    """Windowed maximum along `axis` (1 or 2) of a 4-D array; padding never contributes."""
    if m is None:
        shape = list(x.shape)
        shape[axis] = out
        m = np.empty(shape, x.dtype)
    offs = _axis_offsets(x.shape[axis], out, k, s, p)
    full = [o for o in offs if o[1] == slice(0, out)]
    if len(full) >= 2:
        np.maximum(x[_at(axis, full[0][2])], x[_at(axis, full[1][2])], out=m)
        done = {full[0][0], full[1][0]}
    elif full:
        np.copyto(m, x[_at(axis, full[0][2])])
        done = {full[0][0]}
    else:
        m.fill(_lowest(x.dtype))
        done = set()
    for i, osl, isl in offs:
        if i not in done:
            dst = m[_at(axis, osl)]
            np.maximum(dst, x[_at(axis, isl)], out=dst)
    return m


def _route_1d(src: np.ndarray, ref: np.ndarray, g: np.ndarray, k: int, s: int, p: int,
              axis: int, d=None) -> np.ndarray:
    """Gradient of the windowed maximum `ref` of `src` along `axis`: each output's gradient goes
    to the first offset of its window where src equals ref.

    `rem` holds what is not routed yet; the last offset takes the remainder without a compare
    (each window's maximum is attained somewhere in it, so elsewhere the remainder is zero).
    Offsets below the stride touch disjoint inputs and come first, so they store instead of add
    and, when they cover every input, the result needs no zero fill."""
    size = src.shape[axis]
    offs = _axis_offsets(size, ref.shape[axis], k, s, p)
    shape = list(src.shape)
    covered = np.zeros(size, bool)
    for i, _, isl in offs:
        if i < s:
            covered[isl] = True
    if d is None:
        d = np.empty(shape, g.dtype)
    if not covered.all():
        d.fill(0)
    rem = None
    for n, (i, osl, isl) in enumerate(offs):
        dst = d[_at(axis, isl)]
        r = (g if rem is None else rem)[_at(axis, osl)]
        if n == len(offs) - 1:
            if i < s:
                np.copyto(dst, r)
            else:
                dst += r
            break
        hit = np.equal(src[_at(axis, isl)], ref[_at(axis, osl)])
        # the routed part in a contiguous temporary: it is read again for the remainder, and
        # along the width a strided operand costs numpy a short inner loop per channel run
        part = np.multiply(r, hit)
        if i < s:
            np.copyto(dst, part)
        else:
            dst += part
        if rem is None and osl == slice(0, ref.shape[axis]):
            rem = np.subtract(g, part)
        else:
            if rem is None:
                rem = g.copy()
            r = rem[_at(axis, osl)]
            r -= part
    return d


# Input elements per batch chunk, measured at the CIFAR-10 shapes: the gradient's dozen
# temporaries stay in L2 with small chunks, and the chunks share out over the intra-op threads.
_FWD_CHUNK = 1 << 18
_GRAD_CHUNK = 1 << 18


def _over_chunks(n: int, per_image: int, chunk: int, fn) -> None:
    """fn(b0, b1) over batch chunks of about `chunk` input elements; the chunks are shared out
    over the intra-op threads."""
    nb = max(1, min(n, chunk // max(1, per_image)))
    starts = range(0, n, nb)

    def run(a, b):
        for b0 in starts[a:b]:
            fn(b0, min(n, b0 + nb))
    parallel_ranges(len(starts), n * per_image, run)


def max_pool(x: np.ndarray, oh, ow, kh, kw, sh, sw, pt, pl) -> np.ndarray:
    n, h, w, c = x.shape
    out = np.empty((n, oh, ow, c), x.dtype)

    def chunk(b0, b1):
        # Rows first: that pass runs over whole contiguous rows, the strided column pass over fewer.
        _max_1d(_max_1d(x[b0:b1], oh, kh, sh, pt, 1), ow, kw, sw, pl, 2, out[b0:b1])
    _over_chunks(n, h * w * c, _FWD_CHUNK, chunk)
    return out


def max_pool_grad(x, y, g, kh, kw, sh, sw, pt, pl) -> np.ndarray:
    """Routes each output gradient to the first maximal input of its window (row-major), as
    TF's CPU kernel: the argmax is recomputed from the input and the pooled output. A window
    holding NaN passes its gradient to its last input."""
    n, h, w, c = x.shape
    ow = y.shape[2]
    if 0 in x.shape or 0 in y.shape:
        return np.zeros(x.shape, g.dtype)
    dx = np.empty(x.shape, g.dtype)

    def chunk(b0, b1):
        xb = x[b0:b1]
        row_max = _max_1d(xb, ow, kw, sw, pl, 2)
        g_rows = _route_1d(row_max, y[b0:b1], g[b0:b1], kh, sh, pt, 1)
        _route_1d(xb, row_max, g_rows, kw, sw, pl, 2, dx[b0:b1])
    _over_chunks(n, h * w * c, _GRAD_CHUNK, chunk)
    return dx


def pool_counts(h, w, oh, ow, kh, kw, sh, sw, pt, pl) -> np.ndarray:
    """Number of valid (unpadded) inputs per output window, shape (oh, ow, 1)."""
    cy = np.zeros(oh)
    cx = np.zeros(ow)
    for i in range(kh):
        y0, y1, _ = _range(h, oh, i, sh, pt)
        cy[y0:max(y0, y1)] += 1
    for j in range(kw):
        x0, x1, _ = _range(w, ow, j, sw, pl)
        cx[x0:max(x0, x1)] += 1
    return np.maximum(np.outer(cy, cx), 1)[:, :, None]


def avg_pool(x, oh, ow, kh, kw, sh, sw, pt, pl) -> np.ndarray:
    n, h, w, c = x.shape
    acc_t = np.float32 if x.dtype == np.float16 else x.dtype
    out = np.zeros((n, oh, ow, c), acc_t)
    offs = _offsets(h, w, oh, ow, kh, kw, sh, sw, pt, pl)
    inv = (1.0 / pool_counts(h, w, oh, ow, kh, kw, sh, sw, pt, pl)).astype(acc_t)

    for oy, ox, iy, ix in offs:
        out[:, oy, ox] += x[:, iy, ix]
    out *= inv
    return out.astype(x.dtype, copy=False)


def avg_pool_grad(x_shape, g, kh, kw, sh, sw, pt, pl) -> np.ndarray:
    n, h, w, c = x_shape
    oh, ow = g.shape[1], g.shape[2]
    acc_t = np.float32 if g.dtype == np.float16 else g.dtype
    dx = np.zeros((n, h, w, c), acc_t)
    gs = g * (1.0 / pool_counts(h, w, oh, ow, kh, kw, sh, sw, pt, pl)).astype(acc_t)
    for oy, ox, iy, ix in _offsets(h, w, oh, ow, kh, kw, sh, sw, pt, pl):
        dx[:, iy, ix] += gs[:, oy, ox]
    return dx.astype(g.dtype, copy=False)


# -- LRN ---------------------------------------------------------------------------------------
_BANDS: dict = {}


def _band(c: int, r: int, dtype, xp=np):
    """[c, c] 0/1 matrix with ones where |i - j| <= r: v @ band sums each channel's window (in
    the memory of `xp`'s arrays: one per GPU, made there once)."""
    key = (c, r, np.dtype(dtype).str, None if xp is np else xp.cuda.Device().id)
    band = _BANDS.get(key)
    if band is None:
        idx = xp.arange(c)
        band = _BANDS[key] = (xp.abs(idx[:, None] - idx[None, :]) <= r).astype(dtype)
    return band


def _window_sum(v, r: int):
    """sum_{c' in [c - r, c + r]} v[..., c'] along the last axis: one GEMM with a band matrix
    (several times faster here than a cumulative sum and two gathers, and exact in float32 up to
    summation order). oneDNN's where it runs float32 products: numpy's BLAS threads spin for a
    while after each product, holding the core oneDNN's team needs next (a CIFAR-10 step on 2
    cores ran no faster than on 1)."""
    xp = array_module(v)
    c = v.shape[-1]
    flat, band = v.reshape(-1, c), _band(c, r, v.dtype, xp)
    out = onednn.matmul(flat, band, False, False) if xp is np else None
    return (xp.matmul(flat, band) if out is None else out).reshape(v.shape)


# LRN's kernels are written against their input's array module: LRN and LRNGrad run them on GPUs too.
def _lrn_norm(x, r: int, bias: float, alpha: float):
    norm = _window_sum(x * x, r)
    norm *= alpha
    norm += bias
    return norm


def lrn(x, r, bias, alpha, beta):
    acc_t = np.float32 if x.dtype == np.float16 else x.dtype
    xf = x.astype(acc_t, copy=False)
    out = _lrn_norm(xf, r, bias, alpha)
    array_module(x).power(out, -beta, out=out)
    out *= xf
    return out.astype(x.dtype, copy=False)


def lrn_grad(g, x, r, bias, alpha, beta):
    xp = array_module(g, x)
    acc_t = np.float32 if x.dtype == np.float16 else x.dtype
    xf, gf = x.astype(acc_t, copy=False), g.astype(acc_t, copy=False)
    norm = _lrn_norm(xf, r, bias, alpha)
    npow = xp.power(norm, -beta)
    t = gf * xf
    t *= npow
    t /= norm
    back = _window_sum(t, r)
    back *= xf
    back *= 2 * alpha * beta
    dx = gf * npow
    dx -= back
    return dx.astype(g.dtype, copy=False)
