"""Convolution and pooling kernels (NHWC) written once for numpy and CuPy: the GPU kernels of
Conv2D, DepthwiseConv2dNative, their backprops, MaxPool, AvgPool and their gradients (Conv2D's
and its gradients only where cuDNN's, ops/cudnn.py, is missing or refuses). A window's inputs
are gathered by one strided copy (im2col) and the arithmetic is one GEMM per batch chunk (cuBLAS
on CuPy); gradients to the input are scatter-added window offset by window offset (col2im), but
MaxPoolGrad of float32 and float64 on a GPU is one CUDA kernel with col2im's bits. On
the CPU the oneDNN and conv_kernels kernels run instead; these give their numbers when run with
numpy (tests/unit/test_gpu_nn_kernels.py)."""
from __future__ import annotations

import functools

import numpy as np

from tensorweave.ops.helpers import array_module, cupy
from tensorweave.ops.nn.conv_kernels import Geometry
from tensorweave.ops.nn.pool_kernels import pool_counts

_CHUNK_ELEMS = 1 << 27   # patch elements per batch chunk: bounds the im2col buffer (512 MiB of float32)


def _pad(x, g: Geometry, value=0):
    """x with g's (nonnegative) padding around its two spatial axes."""
    if not (g.pt or g.pb or g.pl or g.pr):
        return x
    n, h, w, c = x.shape
    out = array_module(x).full((n, h + g.pt + g.pb, w + g.pl + g.pr, c), value, dtype=x.dtype)
    out[:, g.pt:g.pt + h, g.pl:g.pl + w] = x
    return out


def windows(xpad, oh: int, ow: int, kh: int, kw: int, g: Geometry):
    """The (n, oh, ow, kh, kw, c) view of padded input windows:
    windows[n, y, x, i, j] = xpad[n, y * sh + i * dh, x * sw + j * dw]."""
    s_n, s_h, s_w, s_c = xpad.strides
    return array_module(xpad).lib.stride_tricks.as_strided(
        xpad, (xpad.shape[0], oh, ow, kh, kw, xpad.shape[3]),
        (s_n, s_h * g.sh, s_w * g.sw, s_h * g.dh, s_w * g.dw, s_c))


def _patches(xpad, oh, ow, kh, kw, g):
    """im2col: the windows copied out, one (kh * kw * c)-long row per output position."""
    return array_module(xpad).ascontiguousarray(windows(xpad, oh, ow, kh, kw, g)).reshape(
        -1, kh * kw * xpad.shape[3])


def _chunks(n: int, per_image: int):
    nb = max(1, min(n, _CHUNK_ELEMS // max(1, per_image)))
    return [(b0, min(n, b0 + nb)) for b0 in range(0, n, nb)]


def col2im(cols, x_shape, g: Geometry):
    """The input gradient from per-window gradients cols (n, oh, ow, kh, kw, c): each window
    offset's slab scatter-added where it was read from; the padding's share dropped."""
    xp = array_module(cols)
    n, oh, ow, kh, kw, c = cols.shape
    h, w = x_shape[1], x_shape[2]
    if not (oh and ow):
        return xp.zeros((n, h, w, c), cols.dtype)
    hp = max(h + g.pt + g.pb, (oh - 1) * g.sh + (kh - 1) * g.dh + 1)
    wp = max(w + g.pl + g.pr, (ow - 1) * g.sw + (kw - 1) * g.dw + 1)
    dx = xp.zeros((n, hp, wp, c), cols.dtype)
    for i in range(kh):
        ys = slice(i * g.dh, i * g.dh + (oh - 1) * g.sh + 1, g.sh)
        for j in range(kw):
            xs = slice(j * g.dw, j * g.dw + (ow - 1) * g.sw + 1, g.sw)
            dx[:, ys, xs] += cols[:, :, :, i, j]
    return xp.ascontiguousarray(dx[:, g.pt:g.pt + h, g.pl:g.pl + w])


# -- Conv2D ------------------------------------------------------------------------------------
def conv2d(x, w, g: Geometry, oh: int, ow: int):
    """out[n, y, x, o] = sum_{i, j, c} xpad[n, y*sh + i*dh, x*sw + j*dw, c] * w[i, j, c, o]."""
    xp = array_module(x, w)
    kh, kw, ci, co = w.shape
    n = x.shape[0]
    out = xp.empty((n, oh, ow, co), xp.result_type(x.dtype, w.dtype))
    xpad, wm = _pad(x, g), w.reshape(kh * kw * ci, co)
    for b0, b1 in _chunks(n, oh * ow * kh * kw * ci):
        out[b0:b1] = xp.matmul(_patches(xpad[b0:b1], oh, ow, kh, kw, g), wm).reshape(b1 - b0, oh, ow, co)
    return out


def conv2d_filter_grad(x, dy, kh: int, kw: int, g: Geometry):
    """d(loss)/d(filter) of conv2d: patches^T @ dy, summed over batch chunks."""
    xp = array_module(x, dy)
    n, oh, ow, co = dy.shape
    ci = x.shape[3]
    dw = xp.zeros((kh * kw * ci, co), xp.result_type(x.dtype, dy.dtype))
    xpad = _pad(x, g)
    for b0, b1 in _chunks(n, oh * ow * kh * kw * ci):
        dw += xp.matmul(_patches(xpad[b0:b1], oh, ow, kh, kw, g).T, dy[b0:b1].reshape(-1, co))
    return dw.reshape(kh, kw, ci, co)


def conv2d_input_grad(x_shape, w, dy, g: Geometry):
    """d(loss)/d(input) of conv2d: per batch chunk, the windows' gradients dy @ filter^T, col2im'd."""
    xp = array_module(w, dy)
    n, h, wd, ci = x_shape
    kh, kw, _, co = w.shape
    oh, ow = dy.shape[1], dy.shape[2]
    dx = xp.empty((n, h, wd, ci), xp.result_type(dy.dtype, w.dtype))
    wt = w.reshape(kh * kw * ci, co).T
    for b0, b1 in _chunks(n, oh * ow * kh * kw * ci):
        cols = xp.matmul(dy[b0:b1].reshape(-1, co), wt).reshape(b1 - b0, oh, ow, kh, kw, ci)
        dx[b0:b1] = col2im(cols, (b1 - b0, h, wd, ci), g)
    return dx


# -- depthwise: the same patches, one small GEMM per channel (batched) --------------------------
def depthwise(x, w, g: Geometry, oh: int, ow: int):
    """out[n, y, x, c*m + q] = sum_{i, j} xpad[n, y*sh + i*dh, x*sw + j*dw, c] * w[i, j, c, q]."""
    xp = array_module(x, w)
    kh, kw, c, m = w.shape
    n, k = x.shape[0], kh * kw
    out = xp.empty((n, oh, ow, c * m), xp.result_type(x.dtype, w.dtype))
    xpad, wc = _pad(x, g), w.reshape(k, c, m).transpose(1, 0, 2)            # (c, k, m)
    for b0, b1 in _chunks(n, oh * ow * k * c):
        cols = _patches(xpad[b0:b1], oh, ow, kh, kw, g).reshape(-1, k, c).transpose(2, 0, 1)   # (c, p, k)
        out[b0:b1] = xp.matmul(cols, wc).transpose(1, 0, 2).reshape(b1 - b0, oh, ow, c * m)
    return out


def depthwise_filter_grad(x, dy, kh: int, kw: int, g: Geometry):
    xp = array_module(x, dy)
    n, oh, ow, cm = dy.shape
    c, k = x.shape[3], kh * kw
    m = cm // c if c else 0
    dw = xp.zeros((c, k, m), xp.result_type(x.dtype, dy.dtype))
    xpad = _pad(x, g)
    for b0, b1 in _chunks(n, oh * ow * k * c):
        cols = _patches(xpad[b0:b1], oh, ow, kh, kw, g).reshape(-1, k, c).transpose(2, 1, 0)   # (c, k, p)
        dw += xp.matmul(cols, dy[b0:b1].reshape(-1, c, m).transpose(1, 0, 2))
    return dw.transpose(1, 0, 2).reshape(kh, kw, c, m)


def depthwise_input_grad(x_shape, w, dy, g: Geometry):
    xp = array_module(w, dy)
    n, h, wd, c = x_shape
    kh, kw, _, m = w.shape
    oh, ow, k = dy.shape[1], dy.shape[2], kh * kw
    dx = xp.empty((n, h, wd, c), xp.result_type(dy.dtype, w.dtype))
    wc = w.reshape(k, c, m).transpose(1, 2, 0)                                # (c, m, k)
    for b0, b1 in _chunks(n, oh * ow * k * c):
        cols = xp.matmul(dy[b0:b1].reshape(-1, c, m).transpose(1, 0, 2), wc)     # (c, p, k)
        cols = cols.transpose(1, 2, 0).reshape(b1 - b0, oh, ow, kh, kw, c)
        dx[b0:b1] = col2im(cols, (b1 - b0, h, wd, c), g)
    return dx


# -- pooling -----------------------------------------------------------------------------------
def _pool_geometry(h, w, oh, ow, kh, kw, sh, sw, pt, pl) -> Geometry:
    return Geometry(sh, sw, 1, 1, pt, max(0, (oh - 1) * sh + kh - h - pt), pl, max(0, (ow - 1) * sw + kw - w - pl))


def _lowest(dtype):
    return -np.inf if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min


def max_pool(x, oh, ow, kh, kw, sh, sw, pt, pl):
    """The maximum over each window; SAME padding never contributes."""
    g = _pool_geometry(x.shape[1], x.shape[2], oh, ow, kh, kw, sh, sw, pt, pl)
    return windows(_pad(x, g, _lowest(x.dtype)), oh, ow, kh, kw, g).max(axis=(3, 4))


def max_pool_grad(x, y, grad, kh, kw, sh, sw, pt, pl):
    """Each output's gradient to the first input of its window (row-major) equal to its
    maximum, as TF's kernels route it."""
    xp = array_module(x, y, grad)
    if xp is cupy and x.dtype in (np.float32, np.float64):
        return _max_pool_grad_cuda(x, y, grad, kh, kw, sh, sw, pt, pl)
    n, h, w, c = x.shape
    oh, ow = y.shape[1], y.shape[2]
    g = _pool_geometry(h, w, oh, ow, kh, kw, sh, sw, pt, pl)
    win = xp.ascontiguousarray(windows(_pad(x, g, _lowest(x.dtype)), oh, ow, kh, kw, g)).reshape(n, oh, ow, kh * kw, c)
    first = (win == y[:, :, :, None]).astype(xp.int8).argmax(axis=3)
    routed = (xp.arange(kh * kw).reshape(1, 1, 1, -1, 1) == first[:, :, :, None]) * grad[:, :, :, None]
    return col2im(routed.astype(grad.dtype, copy=False).reshape(n, oh, ow, kh, kw, c), x.shape, g)


@functools.cache
def _max_pool_grad_kernel():
    # one thread an input element: each window offset (a, b) that reads it, in col2im's order
    # (the same bits), adds its window's gradient where the element is the window's first
    # maximum (the padding, `lowest`, counted in the search as the numpy code's -inf)
    return cupy.ElementwiseKernel(
        "raw T x, raw T y, raw T grad, int32 h, int32 w, int32 c, int32 oh, int32 ow, int32 kh, int32 kw, "
        "int32 sh, int32 sw, int32 pt, int32 pl, T lowest", "T dx", """
        const int ch = i % c;
        const long long pixel = i / c;
        const int xx = pixel % w, yy = (pixel / w) % h;
        const long long img = pixel / ((long long)w * h);
        T acc = 0;
        for (int a = 0; a < kh; ++a) {
            const int ty = yy + pt - a;
            if (ty < 0 || ty % sh != 0 || ty / sh >= oh) continue;
            const int oy = ty / sh;
            for (int b = 0; b < kw; ++b) {
                const int tx = xx + pl - b;
                if (tx < 0 || tx % sw != 0 || tx / sw >= ow) continue;
                const int ox = tx / sw;
                const long long o = ((img * oh + oy) * ow + ox) * c + ch;
                const T top = y[o];
                int first = 0;
                for (int k = 0; k < kh * kw; ++k) {
                    const int iy = oy * sh + k / kw - pt, ix = ox * sw + k % kw - pl;
                    const T v = (iy >= 0 && iy < h && ix >= 0 && ix < w) ? x[((img * h + iy) * w + ix) * c + ch]
                                                                          : lowest;
                    if (v == top) { first = k; break; }
                }
                if (first == a * kw + b) acc += grad[o];
            }
        }
        dx = acc;
        """, "tensorweave_max_pool_grad")


def _max_pool_grad_cuda(x, y, grad, kh, kw, sh, sw, pt, pl):
    """max_pool_grad's numbers in one CUDA kernel, where the array code launches kh * kw + 6."""
    x, y, grad = (cupy.ascontiguousarray(a) for a in (x, y, grad))
    n, h, w, c = x.shape
    dx = cupy.empty(x.shape, x.dtype)
    _max_pool_grad_kernel()(x, y, grad, h, w, c, y.shape[1], y.shape[2], kh, kw, sh, sw, pt, pl, -np.inf, dx)
    return dx


def _acc_type(dtype):
    return np.float32 if dtype == np.float16 else dtype


def avg_pool(x, oh, ow, kh, kw, sh, sw, pt, pl):
    """The mean over each window's valid (unpadded) inputs."""
    xp = array_module(x)
    h, w, acc = x.shape[1], x.shape[2], _acc_type(x.dtype)
    g = _pool_geometry(h, w, oh, ow, kh, kw, sh, sw, pt, pl)
    inv = xp.asarray((1.0 / pool_counts(h, w, oh, ow, kh, kw, sh, sw, pt, pl)).astype(acc))
    return (windows(_pad(x, g), oh, ow, kh, kw, g).sum(axis=(3, 4), dtype=acc) * inv).astype(x.dtype, copy=False)


def avg_pool_grad(x_shape, grad, kh, kw, sh, sw, pt, pl):
    xp = array_module(grad)
    n, h, w, c = x_shape
    oh, ow, acc = grad.shape[1], grad.shape[2], _acc_type(grad.dtype)
    g = _pool_geometry(h, w, oh, ow, kh, kw, sh, sw, pt, pl)
    share = grad.astype(acc) * xp.asarray((1.0 / pool_counts(h, w, oh, ow, kh, kw, sh, sw, pt, pl)).astype(acc))
    cols = xp.broadcast_to(share[:, :, :, None, None], (n, oh, ow, kh, kw, c))
    return col2im(cols, x_shape, g).astype(grad.dtype, copy=False)
