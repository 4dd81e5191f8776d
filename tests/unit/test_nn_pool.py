"""max_pool, avg_pool (+ grads), lrn and fused_batch_norm against numpy loops."""
import numpy as np
import pytest

import tensorweave as tf

from unit_helpers import run

rng = np.random.RandomState(3)


pytestmark = pytest.mark.usefixtures("graph", "kernels")


def windows(x, k, s, padding):
    """Yields (oy, ox, list of (iy, ix)) of valid input positions per output, row-major."""
    h, w = x.shape[1:3]
    if padding == "SAME":
        oh, ow = -(-h // s[0]), -(-w // s[1])
        pt = max((oh - 1) * s[0] + k[0] - h, 0) // 2
        pl = max((ow - 1) * s[1] + k[1] - w, 0) // 2
    else:
        oh, ow, pt, pl = (h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1, 0, 0
    for oy in range(oh):
        for ox in range(ow):
            pos = [(oy * s[0] + i - pt, ox * s[1] + j - pl) for i in range(k[0]) for j in range(k[1])]
            yield oy, ox, [(a, b) for a, b in pos if 0 <= a < h and 0 <= b < w], oh, ow


def ref_pool(x, k, s, padding, kind, g=None):
    out = dx = None
    for oy, ox, pos, oh, ow in windows(x, k, s, padding):
        if out is None:
            out = np.zeros((x.shape[0], oh, ow, x.shape[3]))
            dx = np.zeros(x.shape)
        vals = np.stack([x[:, a, b] for a, b in pos])
        if kind == "max":
            out[:, oy, ox] = vals.max(0)
            if g is not None:
                first = vals.argmax(0)  # the first maximum in row-major window order
                for p, (a, b) in enumerate(pos):
                    dx[:, a, b] += np.where(first == p, g[:, oy, ox], 0)
        else:
            out[:, oy, ox] = vals.mean(0)
            if g is not None:
                for a, b in pos:
                    dx[:, a, b] += g[:, oy, ox] / len(pos)
    return out, dx


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("k,s,padding", [((3, 3), (2, 2), "SAME"), ((2, 2), (2, 2), "VALID"),
                                         ((3, 2), (1, 2), "SAME"), ((3, 3), (2, 1), "VALID")])
def test_pool_and_grad(kind, fmt, k, s, padding):
    x = rng.randn(2, 7, 6, 3)
    x[0, 0, 0, 0] = x[0, 0, 1, 0] = 5.0  # a tie: the gradient goes to the first maximum
    ref, _ = ref_pool(x, k, s, padding, kind)
    g = rng.randn(*ref.shape)
    _, ref_dx = ref_pool(x, k, s, padding, kind, g)
    to = (lambda a: a.transpose(0, 3, 1, 2)) if fmt == "NCHW" else (lambda a: a)
    ksize = [1, 1, *k] if fmt == "NCHW" else [1, *k, 1]
    strides = [1, 1, *s] if fmt == "NCHW" else [1, *s, 1]
    fn = tf.nn.max_pool if kind == "max" else tf.nn.avg_pool
    xt = tf.constant(to(x))
    y = fn(xt, ksize, strides, padding, data_format=fmt)
    assert y.shape.as_list() == list(to(ref).shape)
    (dx,) = tf.gradients(y, [xt], grad_ys=[tf.constant(to(g))])
    out, out_dx = run([y, dx])
    np.testing.assert_allclose(out, to(ref), rtol=1e-12)
    np.testing.assert_allclose(out_dx, to(ref_dx), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k,s,padding", [((3, 3), (2, 2), "SAME"), ((2, 2), (3, 3), "VALID"),
                                         ((1, 1), (2, 2), "SAME"), ((4, 3), (1, 2), "SAME"),
                                         ((3, 3), (3, 2), "VALID"), ((2, 3), (2, 2), "SAME")])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_grad_ties_and_chunks(k, s, padding, dtype, monkeypatch):
    """Relu-like inputs (many equal zeros and small integers) in batch chunks of one image: every
    window's gradient goes to its first maximum in row-major order."""
    from tensorweave.ops.nn import pool_kernels as nn_pool_kernels
    monkeypatch.setattr(nn_pool_kernels, "_GRAD_CHUNK", 1)
    monkeypatch.setattr(nn_pool_kernels, "_FWD_CHUNK", 1)
    x = np.maximum(rng.randint(-3, 3, (3, 7, 8, 2)), 0).astype(dtype)
    ref, _ = ref_pool(x, k, s, padding, "max")
    g = rng.randn(*ref.shape).astype(dtype)
    _, ref_dx = ref_pool(x, k, s, padding, "max", g)
    xt = tf.constant(x)
    y = tf.nn.max_pool(xt, [1, *k, 1], [1, *s, 1], padding)
    (dx,) = tf.gradients(y, [xt], grad_ys=[tf.constant(g)])
    out, out_dx = run([y, dx])
    assert out.dtype == dtype and out_dx.dtype == dtype
    np.testing.assert_array_equal(out, ref.astype(dtype))
    np.testing.assert_allclose(out_dx, ref_dx, rtol=1e-6, atol=1e-6)


def test_max_pool_float32_and_errors():
    x = rng.randn(1, 4, 4, 2).astype(np.float32)
    y = tf.nn.max_pool(tf.constant(x), [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    assert y.dtype == tf.float32 and run(y).dtype == np.float32
    with pytest.raises(ValueError, match="MaxPool"):
        tf.nn.max_pool(tf.constant(x), [2, 2, 2, 1], [1, 2, 2, 1], "VALID")
    with pytest.raises(ValueError, match="MaxPool"):
        tf.nn.max_pool(tf.constant(x), [1, 2, 2, 1], [1, 2, 2, 1], "FULL")
    with pytest.raises(ValueError, match="MaxPool"):
        tf.nn.max_pool(tf.constant(x), [1, 5, 5, 1], [1, 1, 1, 1], "VALID")
    with pytest.raises(ValueError, match="AvgPool"):
        tf.nn.avg_pool(tf.constant(x[0]), [1, 2, 2, 1], [1, 1, 1, 1], "VALID")
    with pytest.raises(TypeError, match="AvgPool"):
        tf.nn.avg_pool(tf.constant(np.zeros((1, 2, 2, 1), np.int32)), [1, 2, 2, 1], [1, 1, 1, 1], "VALID")


def ref_lrn(x, r, bias, alpha, beta):
    c = x.shape[-1]
    out = np.zeros_like(x)
    for ch in range(c):
        lo, hi = max(0, ch - r), min(c, ch + r + 1)
        out[..., ch] = x[..., ch] / (bias + alpha * (x[..., lo:hi] ** 2).sum(-1)) ** beta
    return out


def test_lrn_defaults_and_params():
    x = rng.randn(2, 3, 3, 12).astype(np.float32)
    y = tf.nn.lrn(tf.constant(x))
    np.testing.assert_allclose(run(y), ref_lrn(x.astype(np.float64), 5, 1, 1, 0.5), rtol=1e-5)
    y2 = tf.nn.local_response_normalization(tf.constant(x), depth_radius=2, bias=2.0, alpha=1e-3, beta=0.75)
    np.testing.assert_allclose(run(y2), ref_lrn(x.astype(np.float64), 2, 2, 1e-3, 0.75), rtol=1e-5)
    with pytest.raises(TypeError, match="LRN"):
        tf.nn.lrn(tf.constant(np.zeros((1, 1, 1, 2), np.float64)))


def test_lrn_grad_finite_difference():
    x = rng.randn(1, 2, 2, 6).astype(np.float32)
    g = rng.randn(*x.shape).astype(np.float32)
    xt = tf.constant(x)
    (dx,) = tf.gradients(tf.nn.lrn(xt, 2, 1.5, 0.3, 0.75), [xt], grad_ys=[tf.constant(g)])
    out = run(dx)
    x64, num = x.astype(np.float64), np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x64)
        e[idx] = 1e-6
        num[idx] = ((ref_lrn(x64 + e, 2, 1.5, 0.3, 0.75) - ref_lrn(x64 - e, 2, 1.5, 0.3, 0.75)) * g).sum() / 2e-6
    np.testing.assert_allclose(out, num, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_fused_batch_norm_training(fmt):
    x = rng.randn(4, 3, 2, 5) * 2 + 1
    scale, offset = rng.rand(5) + 0.5, rng.randn(5)
    xin = x.transpose(0, 3, 1, 2) if fmt == "NCHW" else x
    y, m, v = tf.nn.fused_batch_norm(tf.constant(xin), tf.constant(scale), tf.constant(offset), epsilon=1e-3,
                                     data_format=fmt)
    assert y.shape.as_list() == list(xin.shape) and m.shape.as_list() == [5] and v.shape.as_list() == [5]
    out, om, ov = run([y, m, v])
    mean, var = x.mean((0, 1, 2)), x.var((0, 1, 2))
    ref = (x - mean) / np.sqrt(var + 1e-3) * scale + offset
    np.testing.assert_allclose(out.transpose(0, 2, 3, 1) if fmt == "NCHW" else out, ref, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(om, mean, rtol=1e-12)
    n = x.size // 5
    np.testing.assert_allclose(ov, var * n / (n - 1), rtol=1e-12)  # Bessel-corrected


def test_fused_batch_norm_inference_and_errors():
    x = rng.randn(2, 2, 2, 3).astype(np.float32)
    sc, of, mu, va = (rng.rand(3).astype(np.float32) + 0.5 for _ in range(4))
    y, m, v = tf.nn.fused_batch_norm(tf.constant(x), sc, of, mean=mu, variance=va, epsilon=1e-3, is_training=False)
    out, om = run([y, m])
    np.testing.assert_allclose(out, (x - mu) / np.sqrt(va + 1e-3) * sc + of, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(om, mu)
    with pytest.raises(ValueError, match="mean"):
        tf.nn.fused_batch_norm(tf.constant(x), sc, of, is_training=False)
    with pytest.raises(ValueError, match="FusedBatchNormV3"):
        tf.nn.fused_batch_norm(tf.constant(x), np.ones(4, np.float32), of)
