"""Conv2D (NHWC/NCHW, SAME/VALID/explicit, strides, dilations), its backprops,
conv2d_transpose, depthwise and separable convs against naive numpy loops."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.nn import conv_kernels as nn_conv_kernels

from unit_helpers import run

rng = np.random.RandomState(7)


pytestmark = pytest.mark.usefixtures("graph", "kernels")


def same_pads(size, k, s, d):
    eff = (k - 1) * d + 1
    out = -(-size // s)
    total = max((out - 1) * s + eff - size, 0)
    return total // 2, total - total // 2


def naive_conv(x, w, s, pads, d, depthwise=False):
    """x NHWC, w HWIO; pads ((t, b), (l, r)); plain loops over output positions."""
    kh, kw = w.shape[:2]
    xp = np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)))
    oh = (xp.shape[1] - (kh - 1) * d[0] - 1) // s[0] + 1
    ow = (xp.shape[2] - (kw - 1) * d[1] - 1) // s[1] + 1
    co = w.shape[2] * w.shape[3] if depthwise else w.shape[3]
    out = np.zeros((x.shape[0], oh, ow, co))
    for y in range(oh):
        for xx in range(ow):
            patch = xp[:, y * s[0]:y * s[0] + (kh - 1) * d[0] + 1:d[0], xx * s[1]:xx * s[1] + (kw - 1) * d[1] + 1:d[1]]
            if depthwise:
                out[:, y, xx] = np.einsum("nijc,ijcm->ncm", patch, w).reshape(x.shape[0], -1)
            else:
                out[:, y, xx] = np.einsum("nijc,ijco->no", patch, w)
    return out


CASES = [  # input NHWC, filter, strides (h, w), dilations, padding
    ((2, 7, 6, 3), (3, 2, 3, 4), (2, 1), (1, 1), "SAME"),
    ((2, 7, 6, 3), (3, 3, 3, 2), (1, 1), (1, 1), "VALID"),
    ((1, 8, 9, 2), (3, 2, 2, 3), (2, 3), (1, 1), "VALID"),
    ((1, 9, 8, 2), (3, 3, 2, 2), (1, 1), (2, 2), "SAME"),
    ((2, 9, 8, 2), (2, 3, 2, 2), (1, 1), (2, 1), "VALID"),
    ((1, 6, 5, 2), (3, 3, 2, 2), (2, 2), (1, 1), [[0, 0], [1, 2], [0, 1], [0, 0]]),
    ((1, 4, 4, 3), (1, 1, 3, 5), (1, 1), (1, 1), "VALID"),
]


def pads_of(xs, ws, st, dil, padding):
    if padding == "SAME":
        return same_pads(xs[1], ws[0], st[0], dil[0]), same_pads(xs[2], ws[1], st[1], dil[1])
    if padding == "VALID":
        return (0, 0), (0, 0)
    return tuple(padding[1]), tuple(padding[2])


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("xs,ws,st,dil,padding", CASES)
def test_conv2d(xs, ws, st, dil, padding, fmt):
    x, w = rng.randn(*xs), rng.randn(*ws)
    ref = naive_conv(x, w, st, pads_of(xs, ws, st, dil, padding), dil)
    if fmt == "NCHW":
        xin = x.transpose(0, 3, 1, 2)
        strides, dils = [1, 1, *st], [1, 1, *dil]
        pad = padding if isinstance(padding, str) else [padding[0], padding[3], padding[1], padding[2]]
    else:
        xin, strides, dils, pad = x, [1, *st, 1], [1, *dil, 1], padding
    y = tf.nn.conv2d(tf.constant(xin), tf.constant(w), strides, pad, data_format=fmt, dilations=dils)
    out = run(y)
    if fmt == "NCHW":
        out = out.transpose(0, 2, 3, 1)
        assert y.shape.as_list() == [ref.shape[0], ref.shape[3], ref.shape[1], ref.shape[2]]
    else:
        assert y.shape.as_list() == list(ref.shape)
    np.testing.assert_allclose(out, ref, rtol=1e-9, atol=1e-9)


def numeric_backprops(x, w, st, pads, dil, dy):
    """d(sum(conv(x, w) * dy)) by linearity: exact gradients through the naive conv."""
    dx = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = 1
        dx[idx] = (naive_conv(e, w, st, pads, dil) * dy).sum()
    dw = np.zeros_like(w)
    for idx in np.ndindex(*w.shape):
        e = np.zeros_like(w)
        e[idx] = 1
        dw[idx] = (naive_conv(x, e, st, pads, dil) * dy).sum()
    return dx, dw


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("xs,ws,st,dil,padding", [CASES[0], CASES[2], CASES[3], CASES[5]])
def test_conv2d_backprops(xs, ws, st, dil, padding, fmt):
    x, w = rng.randn(*xs), rng.randn(*ws)
    pads = pads_of(xs, ws, st, dil, padding)
    dy = rng.randn(*naive_conv(x, w, st, pads, dil).shape)
    ref_dx, ref_dw = numeric_backprops(x, w, st, pads, dil, dy)
    to = (lambda a: a.transpose(0, 3, 1, 2)) if fmt == "NCHW" else (lambda a: a)
    back = (lambda a: a.transpose(0, 2, 3, 1)) if fmt == "NCHW" else (lambda a: a)
    strides = [1, 1, *st] if fmt == "NCHW" else [1, *st, 1]
    dils = [1, 1, *dil] if fmt == "NCHW" else [1, *dil, 1]
    pad = padding if isinstance(padding, str) else (
        [padding[0], padding[3], padding[1], padding[2]] if fmt == "NCHW" else padding)
    dx = tf.nn.conv2d_backprop_input(list(to(x).shape), tf.constant(w), tf.constant(to(dy)), strides, pad,
                                     data_format=fmt, dilations=dils)
    dw = tf.nn.conv2d_backprop_filter(tf.constant(to(x)), list(w.shape), tf.constant(to(dy)), strides, pad,
                                      data_format=fmt, dilations=dils)
    assert dx.shape.as_list() == list(to(x).shape) and dw.shape.as_list() == list(w.shape)
    out_dx, out_dw = run([dx, dw])
    np.testing.assert_allclose(back(out_dx), ref_dx, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out_dw, ref_dw, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("xs,ws,st,dil,padding", [
    ((3, 6, 5, 1), (3, 2, 1, 5), (1, 1), (2, 1), "SAME"),  # few input channels: col2im
    ((3, 5, 5, 3), (2, 2, 3, 2), (1, 1), (1, 1), [[0, 0], [3, 1], [2, 0], [0, 0]]),  # pads past the kernel
    ((3, 7, 6, 2), (3, 3, 2, 2), (2, 2), (1, 2), [[0, 0], [2, 0], [1, 3], [0, 0]]),  # strided col2im
])
def test_conv2d_backprops_chunked(xs, ws, st, dil, padding, monkeypatch):
    monkeypatch.setattr(nn_conv_kernels, "_CHUNK_ELEMS", 60)  # one image per chunk
    x, w = rng.randn(*xs), rng.randn(*ws)
    pads = pads_of(xs, ws, st, dil, padding)
    dy = rng.randn(*naive_conv(x, w, st, pads, dil).shape)
    ref_dx, ref_dw = numeric_backprops(x, w, st, pads, dil, dy)
    strides, dils = [1, *st, 1], [1, *dil, 1]
    dx = tf.nn.conv2d_backprop_input(list(xs), tf.constant(w), tf.constant(dy), strides, padding, dilations=dils)
    dw = tf.nn.conv2d_backprop_filter(tf.constant(x), list(ws), tf.constant(dy), strides, padding, dilations=dils)
    y = tf.nn.conv2d(tf.constant(x), tf.constant(w), strides, padding, dilations=dils)
    out_dx, out_dw, out_y = run([dx, dw, y])
    np.testing.assert_allclose(out_dx, ref_dx, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out_dw, ref_dw, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out_y, naive_conv(x, w, st, pads, dil), rtol=1e-9, atol=1e-9)


def test_conv2d_backprops_float32_cifar_shapes():
    """The CIFAR-10 tutorial's first layer (3 -> 64 channels, 5x5 SAME) in float32: col2im and
    the transposed filter GEMM stay within float32 rounding of a float64 reference."""
    x = rng.rand(4, 12, 12, 3).astype(np.float32)
    w = (rng.randn(5, 5, 3, 64) * 0.05).astype(np.float32)
    dy = rng.randn(4, 12, 12, 64).astype(np.float32)
    g = nn_conv_kernels.Geometry(1, 1, 1, 1, 2, 2, 2, 2)
    dx = tf.nn.conv2d_backprop_input([4, 12, 12, 3], tf.constant(w), tf.constant(dy), [1, 1, 1, 1], "SAME")
    dw = tf.nn.conv2d_backprop_filter(tf.constant(x), [5, 5, 3, 64], tf.constant(dy), [1, 1, 1, 1], "SAME")
    out_dx, out_dw = run([dx, dw])
    assert out_dx.dtype == np.float32 and out_dw.dtype == np.float32
    ws = nn_conv_kernels.Workspace()
    ref_dx = nn_conv_kernels.conv2d_input_grad_nhwc(x.shape, w.astype(np.float64), dy.astype(np.float64), g, ws)
    ref_dw = nn_conv_kernels.conv2d_filter_grad_nhwc(x.astype(np.float64), dy.astype(np.float64), 5, 5, g, ws)
    # the float64 references use the same kernels: check one entry of each by a direct sum
    xp = np.pad(x.astype(np.float64), ((0, 0), (2, 2), (2, 2), (0, 0)))
    assert np.isclose(ref_dw[1, 2, 0, 5], (xp[:, 1:13, 2:14, 0] * dy[..., 5]).sum())
    assert np.isclose(ref_dx[0, 3, 4, 1], sum((dy[0, 3 + 2 - i, 4 + 2 - j] * w[i, j, 1]).sum() for i in range(5)
                                              for j in range(5) if 0 <= 5 - i < 12 and 0 <= 6 - j < 12))
    np.testing.assert_allclose(out_dx, ref_dx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out_dw, ref_dw, rtol=1e-4, atol=1e-4)


def test_conv2d_chunked_batch_matches(monkeypatch):
    monkeypatch.setattr(nn_conv_kernels, "_CHUNK_ELEMS", 200)  # forces one image per chunk
    x, w = rng.randn(5, 6, 6, 3), rng.randn(3, 3, 3, 2)
    y = tf.nn.conv2d(tf.constant(x), tf.constant(w), [1, 1, 1, 1], "SAME")
    dw = tf.nn.conv2d_backprop_filter(tf.constant(x), [3, 3, 3, 2], tf.constant(np.ones((5, 6, 6, 2))),
                                      [1, 1, 1, 1], "SAME")
    out, odw = run([y, dw])
    np.testing.assert_allclose(out, naive_conv(x, w, (1, 1), ((1, 1), (1, 1)), (1, 1)), rtol=1e-9)
    _, ref_dw = numeric_backprops(x, w, (1, 1), ((1, 1), (1, 1)), (1, 1), np.ones((5, 6, 6, 2)))
    np.testing.assert_allclose(odw, ref_dw, rtol=1e-9)


def test_conv2d_float32_dtype_and_unknown_batch():
    x = tf.placeholder(tf.float32, [None, 5, 5, 3])
    y = tf.nn.conv2d(x, tf.constant(np.ones((3, 3, 3, 4), np.float32)), [1, 2, 2, 1], "SAME")
    assert y.shape.as_list() == [None, 3, 3, 4] and y.dtype == tf.float32
    out = run(y, {x: np.ones((2, 5, 5, 3), np.float32)})
    assert out.dtype == np.float32 and out.shape == (2, 3, 3, 4)
    assert out[0, 1, 1, 0] == 27


def test_conv2d_errors():
    x = tf.constant(np.zeros((1, 5, 5, 3)))
    with pytest.raises(ValueError, match="Conv2D") as e:
        tf.nn.conv2d(x, tf.constant(np.zeros((3, 3, 4, 2))), [1, 1, 1, 1], "SAME", name="myconv")
    assert "myconv" in str(e.value) and "1, 5, 5, 3" in str(e.value) and "3, 3, 4, 2" in str(e.value)
    with pytest.raises(ValueError, match="Conv2D"):
        tf.nn.conv2d(x, tf.constant(np.zeros((3, 3, 3, 2))), [2, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="Conv2D"):
        tf.nn.conv2d(x, tf.constant(np.zeros((3, 3, 3, 2))), [1, 1, 1, 1], "FULL")
    with pytest.raises(ValueError, match="Conv2D"):
        tf.nn.conv2d(x, tf.constant(np.zeros((3, 3, 3))), [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="Conv2D"):
        tf.nn.conv2d(x, tf.constant(np.zeros((3, 3, 3, 2))), [1, 1, 1, 1], "SAME", data_format="NWHC")
    ph = tf.placeholder(tf.float64, [1, 5, 5, None])
    y = tf.nn.conv2d(ph, tf.constant(np.zeros((3, 3, 3, 2))), [1, 1, 1, 1], "SAME", name="rt")
    with pytest.raises(tf.errors.InvalidArgumentError, match="rt"):
        run(y, {ph: np.zeros((1, 5, 5, 4))})


def test_conv2d_transpose():
    x, w = rng.randn(2, 3, 3, 4), rng.randn(3, 3, 2, 4)  # filter [h, w, out_c, in_c]
    y = tf.nn.conv2d_transpose(tf.constant(x), tf.constant(w), [2, 6, 6, 2], [1, 2, 2, 1], "SAME")
    assert y.shape.as_list() == [2, 6, 6, 2]
    # conv2d_transpose is the adjoint of conv2d: <conv(z, w), x> == <z, convT(x, w)>
    z = rng.randn(2, 6, 6, 2)
    fwd = naive_conv(z, w, (2, 2), (same_pads(6, 3, 2, 1), same_pads(6, 3, 2, 1)), (1, 1))
    np.testing.assert_allclose((fwd * x).sum(), (run(y) * z).sum(), rtol=1e-9)
    with pytest.raises(ValueError, match="conv2d_transpose"):
        tf.nn.conv2d_transpose(tf.constant(x), tf.constant(rng.randn(3, 3, 2, 5)), [2, 6, 6, 2], [1, 2, 2, 1])
    with pytest.raises(ValueError, match="conv2d_transpose"):
        tf.nn.conv2d_transpose(tf.constant(x), tf.constant(w), [2, 6, 6, 3], [1, 2, 2, 1])


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("st,dil,padding", [((1, 1), (1, 1), "SAME"), ((2, 1), (1, 1), "VALID"),
                                            ((1, 1), (2, 2), "SAME")])
def test_depthwise_conv2d(st, dil, padding, fmt):
    x, w = rng.randn(2, 7, 6, 3), rng.randn(3, 2, 3, 2)
    pads = pads_of(x.shape, w.shape, st, dil, padding)
    ref = naive_conv(x, w, st, pads, dil, depthwise=True)
    to = (lambda a: a.transpose(0, 3, 1, 2)) if fmt == "NCHW" else (lambda a: a)
    strides = [1, 1, *st] if fmt == "NCHW" else [1, *st, 1]
    y = tf.nn.depthwise_conv2d(tf.constant(to(x)), tf.constant(w), strides, padding, rate=list(dil),
                               data_format=fmt)
    assert y.shape.as_list() == list(to(ref).shape)
    np.testing.assert_allclose(run(y), to(ref), rtol=1e-9, atol=1e-9)
    # backprops against the exact linear adjoints
    dy = rng.randn(*ref.shape)
    gx, gw = tf.gradients(tf.reduce_sum(y * tf.constant(to(dy))), [y.op.inputs[0], y.op.inputs[1]])
    out_gx, out_gw = run([gx, gw])
    ref_gx = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = 1
        ref_gx[idx] = (naive_conv(e, w, st, pads, dil, True) * dy).sum()
    ref_gw = np.zeros_like(w)
    for idx in np.ndindex(*w.shape):
        e = np.zeros_like(w)
        e[idx] = 1
        ref_gw[idx] = (naive_conv(x, e, st, pads, dil, True) * dy).sum()
    np.testing.assert_allclose(out_gx, to(ref_gx), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out_gw, ref_gw, rtol=1e-9, atol=1e-9)


def test_depthwise_errors():
    with pytest.raises(ValueError, match="DepthwiseConv2dNative"):
        tf.nn.depthwise_conv2d(tf.constant(np.zeros((1, 5, 5, 3))), tf.constant(np.zeros((3, 3, 2, 1))),
                               [1, 1, 1, 1], "SAME")


def test_separable_conv2d():
    x, dw, pw = rng.randn(1, 6, 6, 2), rng.randn(3, 3, 2, 2), rng.randn(1, 1, 4, 3)
    y = tf.nn.separable_conv2d(tf.constant(x), tf.constant(dw), tf.constant(pw), [1, 1, 1, 1], "VALID")
    mid = naive_conv(x, dw, (1, 1), ((0, 0), (0, 0)), (1, 1), depthwise=True)
    ref = np.einsum("nhwc,co->nhwo", mid, pw[0, 0])
    assert y.shape.as_list() == [1, 4, 4, 3]
    np.testing.assert_allclose(run(y), ref, rtol=1e-9)
    with pytest.raises(ValueError, match="separable_conv2d"):
        tf.nn.separable_conv2d(tf.constant(x), tf.constant(dw), tf.constant(rng.randn(2, 1, 4, 3)),
                               [1, 1, 1, 1], "VALID")


ROW_CASES = [  # input NHWC, filter, strides (h, w), dilations, padding: stride 1 down the rows
    ((3, 7, 6, 3), (3, 3, 3, 4), (1, 1), (1, 1), "SAME"),
    ((2, 8, 7, 2), (3, 2, 2, 3), (1, 2), (2, 1), "VALID"),
    ((2, 6, 6, 3), (2, 3, 3, 2), (1, 1), (1, 2), [[0, 0], [2, 1], [0, 3], [0, 0]]),
]


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("xs,ws,st,dil,padding", ROW_CASES)
@pytest.mark.parametrize("chunk", [1 << 20, 100])
def test_conv2d_row_gemm_path(xs, ws, st, dil, padding, fmt, chunk, monkeypatch):
    """The row-GEMM path (forced on small shapes), whole batch and one image per chunk, in both
    layouts: forward and both backprops equal the naive loops."""
    monkeypatch.setattr(nn_conv_kernels, "_ROW_MIN_K", 1)
    monkeypatch.setattr(nn_conv_kernels, "_CHUNK_ELEMS", chunk)
    x, w = rng.randn(*xs), rng.randn(*ws)
    pads = pads_of(xs, ws, st, dil, padding)
    ref = naive_conv(x, w, st, pads, dil)
    dy = rng.randn(*ref.shape)
    ref_dx, ref_dw = numeric_backprops(x, w, st, pads, dil, dy)
    to = (lambda a: a.transpose(0, 3, 1, 2)) if fmt == "NCHW" else (lambda a: a)
    back = (lambda a: a.transpose(0, 2, 3, 1)) if fmt == "NCHW" else (lambda a: a)
    strides = [1, 1, *st] if fmt == "NCHW" else [1, *st, 1]
    dils = [1, 1, *dil] if fmt == "NCHW" else [1, *dil, 1]
    pad = padding if isinstance(padding, str) else (
        [padding[0], padding[3], padding[1], padding[2]] if fmt == "NCHW" else padding)
    y = tf.nn.conv2d(tf.constant(to(x)), tf.constant(w), strides, pad, data_format=fmt, dilations=dils)
    dx = tf.nn.conv2d_backprop_input(list(to(x).shape), tf.constant(w), tf.constant(to(dy)), strides, pad,
                                     data_format=fmt, dilations=dils)
    dw = tf.nn.conv2d_backprop_filter(tf.constant(to(x)), list(ws), tf.constant(to(dy)), strides, pad,
                                      data_format=fmt, dilations=dils)
    out, out_dx, out_dw = run([y, dx, dw])
    np.testing.assert_allclose(back(out), ref, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(back(out_dx), ref_dx, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out_dw, ref_dw, rtol=1e-9, atol=1e-9)


def test_conv2d_cifar_conv2_float32_row_path():
    """The tutorial's second layer (5x5, 64 -> 64, SAME) takes the row-GEMM path in float32:
    float32 results, within float32 rounding of a float64 computation of the same sums."""
    x = rng.rand(3, 12, 12, 64).astype(np.float32)
    w = (rng.randn(5, 5, 64, 64) * 0.05).astype(np.float32)
    dy = rng.randn(3, 12, 12, 64).astype(np.float32)
    g = nn_conv_kernels.Geometry(1, 1, 1, 1, 2, 2, 2, 2)
    assert nn_conv_kernels._row_path(64, 5, g)
    y = tf.nn.conv2d(tf.constant(x), tf.constant(w), [1, 1, 1, 1], "SAME")
    dx = tf.nn.conv2d_backprop_input([3, 12, 12, 64], tf.constant(w), tf.constant(dy), [1, 1, 1, 1], "SAME")
    dw = tf.nn.conv2d_backprop_filter(tf.constant(x), [5, 5, 64, 64], tf.constant(dy), [1, 1, 1, 1], "SAME")
    out, out_dx, out_dw = run([y, dx, dw])
    assert out.dtype == out_dx.dtype == out_dw.dtype == np.float32
    x64, w64, dy64 = x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64)
    xp = np.pad(x64, ((0, 0), (2, 2), (2, 2), (0, 0)))
    ref = np.einsum("nyxijc,ijco->nyxo", np.lib.stride_tricks.sliding_window_view(xp, (5, 5), (1, 2))
                    .transpose(0, 1, 2, 4, 5, 3), w64)
    ref_dw = np.einsum("nyxijc,nyxo->ijco", np.lib.stride_tricks.sliding_window_view(xp, (5, 5), (1, 2))
                       .transpose(0, 1, 2, 4, 5, 3), dy64)
    dyp = np.pad(dy64, ((0, 0), (2, 2), (2, 2), (0, 0)))
    ref_dx = np.einsum("nyxijo,ijco->nyxc", np.lib.stride_tricks.sliding_window_view(dyp, (5, 5), (1, 2))
                       .transpose(0, 1, 2, 4, 5, 3), w64[::-1, ::-1])
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out_dx, ref_dx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out_dw, ref_dw, rtol=1e-4, atol=1e-3)
