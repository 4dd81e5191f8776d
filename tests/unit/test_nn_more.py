"""The rest of tf.nn: rank-generic convolution and pooling (over the 1-, 2- and 3-D ops), transposed
and atrous convolutions, with_space_to_batch, max_pool_with_argmax, dilation2d/erosion2d, crelu and
batch_norm_with_global_normalization, against direct numpy loops, with gradients against
central finite differences."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import tensorweave as tf
from unit_helpers import check_grad, run

R = np.random.RandomState(9)


def _pads(size, k, s, d, padding):
    eff = (k - 1) * d + 1
    if padding == "VALID":
        return (size - eff) // s + 1, 0
    out = -(-size // s)
    return out, max((out - 1) * s + eff - size, 0) // 2


def ref_conv(x, w, strides, dilations, padding):
    """Channels-last N-d cross-correlation by direct loops."""
    n = x.ndim - 2
    geo = [_pads(x.shape[1 + i], w.shape[i], strides[i], dilations[i], padding) for i in range(n)]
    out = np.zeros((x.shape[0],) + tuple(g[0] for g in geo) + (w.shape[-1],))
    for pos in itertools.product(*(range(g[0]) for g in geo)):
        for off in itertools.product(*(range(k) for k in w.shape[:n])):
            src = [pos[i] * strides[i] + off[i] * dilations[i] - geo[i][1] for i in range(n)]
            if all(0 <= src[i] < x.shape[1 + i] for i in range(n)):
                out[(slice(None),) + pos] += x[(slice(None),) + tuple(src)] @ w[off]
    return out


def ref_pool(x, k, s, padding, kind, rate=None):
    n = x.ndim - 2
    rate = rate or [1] * n
    geo = [_pads(x.shape[1 + i], k[i], s[i], rate[i], padding) for i in range(n)]
    out = np.zeros((x.shape[0],) + tuple(g[0] for g in geo) + (x.shape[-1],))
    for pos in itertools.product(*(range(g[0]) for g in geo)):
        vals = []
        for off in itertools.product(*(range(kk) for kk in k)):
            src = [pos[i] * s[i] + off[i] * rate[i] - geo[i][1] for i in range(n)]
            if all(0 <= src[i] < x.shape[1 + i] for i in range(n)):
                vals.append(x[(slice(None),) + tuple(src)])
        vals = np.stack(vals)
        out[(slice(None),) + pos] = vals.max(0) if kind == "max" else vals.mean(0)
    return out


X3 = R.randn(2, 4, 5, 3, 2)
W3 = R.randn(2, 3, 2, 2, 3)


@pytest.mark.parametrize("strides,dilations,padding", [((1, 1, 1), (1, 1, 1), "SAME"), ((2, 1, 2), (1, 1, 1), "VALID"),
                                                       ((1, 1, 1), (2, 1, 1), "SAME"), ((1, 2, 1), (1, 2, 1), "VALID")])
def test_conv3d_matches_loops_and_gradients(strides, dilations, padding):
    out = run(tf.nn.conv3d(X3, W3, [1, *strides, 1], padding, dilations=[1, *dilations, 1]))
    np.testing.assert_allclose(out, ref_conv(X3, W3, strides, dilations, padding), atol=1e-10)
    check_grad(lambda x, w: tf.nn.conv3d(x, w, [1, *strides, 1], padding, dilations=[1, *dilations, 1]), X3, W3)


def test_conv3d_channels_first_transpose_and_shapes():
    first = run(tf.nn.conv3d(X3.transpose(0, 4, 1, 2, 3), W3, [1, 1, 1, 2, 1], "SAME", data_format="NCDHW"))
    np.testing.assert_allclose(first, ref_conv(X3, W3, (1, 2, 1), (1, 1, 1), "SAME").transpose(0, 4, 1, 2, 3),
                               atol=1e-10)
    y = tf.placeholder(tf.float64, [2, 2, 3, 3, 3])
    t = tf.nn.conv3d_transpose(y, W3, [2, 4, 5, 3, 2], [1, 2, 2, 1, 1], "SAME")
    assert t.shape.as_list() == [2, 4, 5, 3, 2]
    # the transpose is the input gradient of the forward conv
    x = tf.placeholder(tf.float64, X3.shape)
    fwd = tf.nn.conv3d(x, W3, [1, 2, 2, 1, 1], "SAME")
    g = tf.gradients(fwd, x, grad_ys=y)[0]
    yv = R.randn(2, 2, 3, 3, 3)
    np.testing.assert_allclose(*run([t, g], {y: yv, x: X3}), atol=1e-10)
    check_grad(lambda v: tf.nn.conv3d_transpose(v, W3, [2, 4, 5, 3, 2], [1, 2, 2, 1, 1], "SAME"), yv)
    w = tf.constant(W3)
    fg, expect = run([tf.nn.conv3d_backprop_filter(X3, W3.shape, yv, [1, 2, 2, 1, 1], "SAME"),
                      tf.gradients(tf.nn.conv3d(X3, w, [1, 2, 2, 1, 1], "SAME"), w, grad_ys=yv)[0]])
    np.testing.assert_allclose(fg, expect, atol=1e-10)


def test_convolution_pool_and_v2_pools_dispatch_by_rank():
    x1, w1 = R.randn(2, 7, 3), R.randn(3, 3, 4)
    x2, w2 = R.randn(2, 6, 5, 3), R.randn(2, 3, 3, 4)
    out = run([tf.nn.convolution(x1, w1, "SAME", dilation_rate=[2]), tf.nn.convolution(x2, w2, "VALID", strides=[2, 1]),
               tf.nn.convolution(X3, W3, "SAME", dilation_rate=[1, 2, 1]),
               tf.nn.max_pool1d(x1, 2, 2, "VALID"), tf.nn.avg_pool1d(x1, 3, 1, "SAME"),
               tf.nn.max_pool_v2(X3.astype(np.float32), 2, 2, "SAME"), tf.nn.avg_pool_v2(x2, [2, 2], [1, 2], "VALID"),
               tf.nn.pool(x2, [2, 2], "MAX", "VALID", dilation_rate=[2, 2]),
               tf.nn.pool(x2, [3, 2], "AVG", "VALID", dilation_rate=[1, 2])])
    np.testing.assert_allclose(out[0], ref_conv(x1, w1, (1,), (2,), "SAME"), atol=1e-10)
    np.testing.assert_allclose(out[1], ref_conv(x2, w2, (2, 1), (1, 1), "VALID"), atol=1e-10)
    np.testing.assert_allclose(out[2], ref_conv(X3, W3, (1, 1, 1), (1, 2, 1), "SAME"), atol=1e-10)
    np.testing.assert_allclose(out[3], ref_pool(x1, (2,), (2,), "VALID", "max"))
    np.testing.assert_allclose(out[4], ref_pool(x1, (3,), (1,), "SAME", "avg"))
    np.testing.assert_allclose(out[5], ref_pool(X3.astype(np.float32), (2, 2, 2), (2, 2, 2), "SAME", "max"))
    np.testing.assert_allclose(out[6], ref_pool(x2, (2, 2), (1, 2), "VALID", "avg"))
    np.testing.assert_allclose(out[7], ref_pool(x2, (2, 2), (1, 1), "VALID", "max", rate=(2, 2)))
    np.testing.assert_allclose(out[8], ref_pool(x2, (3, 2), (1, 1), "VALID", "avg", rate=(1, 2)))
    with pytest.raises(ValueError, match="SAME padding is not implemented"):
        tf.nn.pool(x2, [2, 2], "MAX", "SAME", dilation_rate=[2, 2])


def test_with_space_to_batch_makes_a_valid_conv_atrous():
    x, w = R.randn(1, 7, 8, 2), R.randn(3, 2, 2, 3)

    def op(inp, num_spatial_dims, padding):
        return tf.nn.conv2d(inp, w, [1, 1, 1, 1], padding)
    same = tf.nn.with_space_to_batch(x, [2, 3], "SAME", op, filter_shape=[3, 2])
    valid = tf.nn.with_space_to_batch(x, [2, 3], "VALID", op)
    np.testing.assert_allclose(run(same), ref_conv(x, w, (1, 1), (2, 3), "SAME"), atol=1e-10)
    np.testing.assert_allclose(run(valid), ref_conv(x, w, (1, 1), (2, 3), "VALID"), atol=1e-10)
    atrous = run(tf.nn.atrous_conv2d(x, w, 2, "SAME"))
    np.testing.assert_allclose(atrous, ref_conv(x, w, (1, 1), (2, 2), "SAME"), atol=1e-10)
    check_grad(lambda v: tf.nn.with_space_to_batch(v, [2, 3], "SAME", op, filter_shape=[3, 2]), x)


def test_transposed_convolutions_are_input_gradients():
    x1, w1 = R.randn(2, 7, 3), R.randn(3, 4, 3)
    dy1 = R.randn(2, 4, 4)
    xs = tf.placeholder(tf.float64, x1.shape)
    grad = tf.gradients(tf.nn.conv1d(xs, np.transpose(w1, (0, 2, 1)), 2, "SAME"), xs, grad_ys=dy1)[0]
    w_t = np.transpose(w1, (0, 2, 1))   # conv1d filters [w, in=3, out=4]; transpose takes [w, out=3, in=4]
    t1 = tf.nn.conv1d_transpose(dy1, w_t, [2, 7, 3], 2, "SAME")
    generic = tf.nn.conv_transpose(dy1, w_t, [2, 7, 3], 2, "SAME")
    g, a, b = run([grad, t1, generic], {xs: x1})
    np.testing.assert_allclose(a, g, atol=1e-10)
    np.testing.assert_allclose(b, g, atol=1e-10)
    x2, w2, dy2 = R.randn(1, 7, 7, 2), R.randn(3, 3, 2, 2), R.randn(1, 7, 7, 2)
    xs2 = tf.placeholder(tf.float64, x2.shape)
    g2 = tf.gradients(tf.nn.atrous_conv2d(xs2, w2, 2, "SAME"), xs2, grad_ys=dy2)[0]
    t2 = tf.nn.atrous_conv2d_transpose(dy2, w2, [1, 7, 7, 2], 2, "SAME")
    np.testing.assert_allclose(*run([t2, g2], {xs2: x2}), atol=1e-10)


def test_max_pool_with_argmax_and_its_gradient():
    x = R.randn(2, 5, 4, 3)
    out, arg = run(tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME"))
    np.testing.assert_allclose(out, ref_pool(x, (2, 2), (2, 2), "SAME", "max"))
    for b in range(2):
        np.testing.assert_array_equal(x[b].reshape(-1)[arg[b]], out[b])
    _, arg_b = run(tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME", include_batch_in_index=True))
    np.testing.assert_array_equal(x.reshape(-1)[arg_b], out)
    assert arg.dtype == np.int64
    check_grad(lambda v: tf.nn.max_pool_with_argmax(v, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")[0], x)


def test_max_pool_with_argmax_writes_and_imports_tf_s_node():
    """TF's MaxPoolWithArgmax has no data_format (it is NHWC): our node leaves it out, and a node
    without it (as TF writes it) imports and computes."""
    x = R.randn(2, 5, 4, 3)
    with tf.Graph().as_default() as g:
        tf.nn.max_pool_with_argmax(tf.placeholder(tf.float64, x.shape, name="x"), [1, 2, 2, 1], [1, 2, 2, 1], "SAME",
                                   name="pool")
        want = run(["pool:0", "pool:1"], {"x:0": x})
    (node,) = [n for n in g.as_graph_def().node if n.op == "MaxPoolWithArgmax"]
    assert sorted(node.attr) == ["T", "Targmax", "include_batch_in_index", "ksize", "padding", "strides"]
    with tf.Graph().as_default():
        tf.import_graph_def(g.as_graph_def(), name="")
        for got, expected in zip(run(["pool:0", "pool:1"], {"x:0": x}), want):
            np.testing.assert_array_equal(got, expected)


def _ref_dilation(x, f, s, r, padding):
    geo = [_pads(x.shape[1 + i], f.shape[i], s[i], r[i], padding) for i in range(2)]
    out = np.full((x.shape[0], geo[0][0], geo[1][0], x.shape[3]), -np.inf)
    for y, z in itertools.product(range(geo[0][0]), range(geo[1][0])):
        for i, j in itertools.product(range(f.shape[0]), range(f.shape[1])):
            a, b = y * s[0] + i * r[0] - geo[0][1], z * s[1] + j * r[1] - geo[1][1]
            if 0 <= a < x.shape[1] and 0 <= b < x.shape[2]:
                out[:, y, z] = np.maximum(out[:, y, z], x[:, a, b] + f[i, j])
    return out


@pytest.mark.parametrize("s,r,padding", [((1, 1), (1, 1), "SAME"), ((2, 1), (1, 2), "VALID"), ((1, 2), (2, 1), "SAME")])
def test_dilation_and_erosion(s, r, padding):
    x, f = R.randn(2, 6, 5, 3), R.randn(2, 3, 3)
    dil, ero = run([tf.nn.dilation2d(x, f, [1, *s, 1], [1, *r, 1], padding),
                    tf.nn.erosion2d(x, f, [1, *s, 1], [1, *r, 1], padding)])
    np.testing.assert_allclose(dil, _ref_dilation(x, f, s, r, padding))
    np.testing.assert_allclose(ero, -_ref_dilation(-x, f[::-1, ::-1], s, r, padding))
    check_grad(lambda a, b: tf.nn.dilation2d(a, b, [1, *s, 1], [1, *r, 1], padding), x, f)


def test_crelu_batch_norm_global_and_depthwise_backprops():
    x = R.randn(2, 3, 4)
    np.testing.assert_allclose(run(tf.nn.crelu(x)), np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)], -1))
    np.testing.assert_allclose(run(tf.nn.crelu(x, axis=1)).shape, (2, 6, 4))
    m, v, beta, gamma = R.randn(4), R.uniform(0.5, 1, 4), R.randn(4), R.randn(4)
    for scale in (True, False):
        out = run(tf.nn.batch_norm_with_global_normalization(x, m, v, beta, gamma, 1e-3, scale))
        np.testing.assert_allclose(out, (x - m) / np.sqrt(v + 1e-3) * (gamma if scale else 1) + beta)
    img, w, dy = R.randn(1, 5, 5, 2), R.randn(3, 3, 2, 2), R.randn(1, 5, 5, 4)
    ph = tf.placeholder(tf.float64, img.shape)
    wt = tf.constant(w)
    y = tf.nn.depthwise_conv2d_native(ph, wt, [1, 1, 1, 1], "SAME")
    gx, gw = tf.gradients(y, [ph, wt], grad_ys=dy)
    bx = tf.nn.depthwise_conv2d_backprop_input(img.shape, w, dy, [1, 1, 1, 1], "SAME")
    bw = tf.nn.depthwise_conv2d_native_backprop_filter(img, w.shape, dy, [1, 1, 1, 1], "SAME")
    a, b, c, d = run([gx, gw, bx, bw], {ph: img})
    np.testing.assert_allclose(c, a)
    np.testing.assert_allclose(d, b)


@pytest.mark.parametrize("pseudo_random", [False, True])
@pytest.mark.parametrize("overlapping", [False, True])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_fractional_pooling(kind, overlapping, pseudo_random):
    fn = tf.nn.fractional_max_pool if kind == "max" else tf.nn.fractional_avg_pool
    x = R.randn(2, 10, 9, 3)
    out, rows, cols = run(fn(x, [1.0, 1.44, 1.73, 1.0], pseudo_random=pseudo_random, overlapping=overlapping,
                             seed=5))
    assert out.shape == (2, 6, 5, 3)
    for seq, size, n in ((rows, 10, 6), (cols, 9, 5)):
        assert seq[0] == 0 and seq[-1] == size and len(seq) == n + 1
        assert set(np.diff(seq)) <= {size // n, size // n + 1}
    expect = np.zeros_like(out)
    for i in range(6):
        for j in range(5):
            r1 = min(rows[i + 1] + overlapping, 10)
            c1 = min(cols[j + 1] + overlapping, 9)
            block = x[:, rows[i]:r1, cols[j]:c1]
            expect[:, i, j] = block.max((1, 2)) if kind == "max" else block.mean((1, 2))
    np.testing.assert_allclose(out, expect)
    check_grad(lambda v: fn(v, [1.0, 1.44, 1.73, 1.0], pseudo_random=pseudo_random, overlapping=overlapping,
                            deterministic=True, seed=5)[0], x)
