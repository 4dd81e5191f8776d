"""The GPU kernels of the convolution, pooling, LRN, fused batch norm and random ops on CuPy
inputs against the same kernels on numpy inputs (tests/unit/test_gpu_nn_kernels.py checks those
give the CPU kernels' numbers), and a small conv net on the GPU against the CPU. Skips without
CuPy or a GPU."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import dtypes
from tensorweave.ops.nn import im2col
from tensorweave.ops.nn.util import window_pads

RNG = np.random.default_rng(2025)
TOL = {np.float16: (1e-2, 1e-2), np.float32: (1e-4, 1e-5), np.float64: (1e-10, 1e-12)}


def _fmt(a, fmt):
    return a if fmt == "NHWC" else np.ascontiguousarray(a.transpose(0, 3, 1, 2))


def _sizes(shape, fmt):
    return np.array(_fmt(np.empty(shape), fmt).shape, np.int32)


def _normal(shape, dtype):
    return RNG.standard_normal(shape).astype(dtype)


# (input NHWC shape, filter h, w, out channels, strides, dilations, padding, data_format, dtype)
CONVS = [
    ((2, 9, 8, 3), 3, 3, 4, 1, 1, "SAME", "NHWC", np.float32),
    ((2, 9, 8, 5), 3, 2, 4, 2, 1, "VALID", "NHWC", np.float32),
    ((3, 11, 10, 4), 5, 5, 6, 1, 2, "SAME", "NHWC", np.float32),
    ((1, 7, 7, 2), 2, 3, 3, 3, 1, "SAME", "NCHW", np.float32),
    ((2, 8, 9, 3), 3, 3, 2, 2, 1, [[0, 0], [1, 2], [0, 1], [0, 0]], "NHWC", np.float32),
    ((2, 6, 7, 3), 3, 2, 4, 1, 1, "SAME", "NHWC", np.float64),
    ((2, 6, 7, 3), 3, 3, 4, 1, 1, "SAME", "NHWC", np.float16),
    ((16, 24, 24, 64), 5, 5, 64, 1, 1, "SAME", "NHWC", np.float32),     # the CIFAR-10 net's second conv
]


def _conv_attrs(strides, dilations, padding, fmt):
    four = (lambda v: [1, 1, v, v]) if fmt == "NCHW" else (lambda v: [1, v, v, 1])
    explicit = [] if isinstance(padding, str) else [int(v) for pair in padding for v in pair]
    return dict(strides=four(strides), dilations=four(dilations), padding="EXPLICIT" if explicit else padding,
                explicit_paddings=explicit, data_format=fmt)


@pytest.mark.parametrize("shape,kh,kw,co,strides,dilations,padding,fmt,dtype", CONVS)
def test_conv2d_and_its_gradients(run_both, shape, kh, kw, co, strides, dilations, padding, fmt, dtype):
    attrs, (rtol, atol) = _conv_attrs(strides, dilations, padding, fmt), TOL[dtype]
    x, w = _fmt(_normal(shape, dtype), fmt), _normal((kh, kw, shape[3], co), dtype)
    (y,) = run_both("Conv2D", attrs, [x, w], rtol, atol)
    dy = _normal(y.shape, dtype)
    run_both("Conv2DBackpropInput", attrs, [_sizes(shape, fmt), w, dy], rtol, atol)
    run_both("Conv2DBackpropFilter", attrs, [x, np.array(w.shape, np.int32), dy], rtol, atol)


@pytest.mark.parametrize("shape,kh,kw,co,strides,dilations,padding,fmt,dtype", CONVS[:4] + CONVS[5:7])
def test_depthwise_conv2d_and_its_gradients(run_both, shape, kh, kw, co, strides, dilations, padding, fmt, dtype):
    attrs, (rtol, atol) = _conv_attrs(strides, dilations, padding, fmt), TOL[dtype]
    x, w = _fmt(_normal(shape, dtype), fmt), _normal((kh, kw, shape[3], 2), dtype)
    (y,) = run_both("DepthwiseConv2dNative", attrs, [x, w], rtol, atol)
    dy = _normal(y.shape, dtype)
    run_both("DepthwiseConv2dNativeBackpropInput", attrs, [_sizes(shape, fmt), w, dy], rtol, atol)
    run_both("DepthwiseConv2dNativeBackpropFilter", attrs, [x, np.array(w.shape, np.int32), dy], rtol, atol)


# (input NHWC shape, window, strides, padding, data_format, dtype)
POOLS = [((2, 9, 8, 3), 3, 2, "SAME", "NHWC", np.float32), ((2, 9, 8, 3), 2, 2, "VALID", "NHWC", np.float32),
         ((3, 11, 10, 4), 3, 1, "SAME", "NHWC", np.float64), ((1, 7, 6, 2), 3, 3, "SAME", "NCHW", np.float32),
         ((2, 8, 8, 5), (2, 3), (1, 2), "VALID", "NHWC", np.float16),
         ((16, 24, 24, 64), 3, 2, "SAME", "NHWC", np.float32)]


@pytest.mark.parametrize("shape,k,s,padding,fmt,dtype", POOLS)
@pytest.mark.parametrize("ties", [False, True])
def test_pooling_and_its_gradients(run_both, shape, k, s, padding, fmt, dtype, ties):
    kh, kw = (k, k) if isinstance(k, int) else k
    sh, sw = (s, s) if isinstance(s, int) else s
    four = (lambda a, b: [1, 1, a, b]) if fmt == "NCHW" else (lambda a, b: [1, a, b, 1])
    attrs, (rtol, atol) = dict(ksize=four(kh, kw), strides=four(sh, sw), padding=padding, data_format=fmt), TOL[dtype]
    x = _fmt((RNG.integers(0, 3, shape) if ties else RNG.standard_normal(shape)).astype(dtype), fmt)
    (y,) = run_both("MaxPool", attrs, [x], rtol, atol)
    run_both("MaxPoolGrad", attrs, [x, y, _normal(y.shape, dtype)], rtol, atol)
    (a,) = run_both("AvgPool", attrs, [x], rtol, atol)
    run_both("AvgPoolGrad", attrs, [_sizes(shape, fmt), _normal(a.shape, dtype)], rtol, atol)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_lrn_and_its_gradient(run_both, dtype):
    attrs, (rtol, atol) = dict(depth_radius=4, bias=1.0, alpha=0.001 / 9.0, beta=0.75), TOL[dtype]
    x = _normal((4, 6, 6, 64), dtype)
    (y,) = run_both("LRN", attrs, [x], rtol, atol)
    run_both("LRNGrad", attrs, [_normal(x.shape, dtype), x, y], rtol, atol)


@pytest.mark.parametrize("op", ["FusedBatchNorm", "FusedBatchNormV3"])
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("training", [True, False])
def test_fused_batch_norm_and_its_gradient(run_both, op, fmt, training):
    c = 6
    x = _fmt(_normal((4, 5, 5, c), np.float32), fmt)
    scale, offset = _normal(c, np.float32), _normal(c, np.float32)
    mean, var = (np.zeros(0, np.float32),) * 2 if training else (_normal(c, np.float32), RNG.random(c, np.float32) + .5)
    attrs = dict(epsilon=1e-3, data_format=fmt, is_training=training, exponential_avg_factor=1.0)
    out = run_both(op, attrs, [x, scale, offset, mean, var], 1e-4, 1e-5)
    saved = (out[3], out[4]) if training else (mean, var)
    run_both(op.replace("Norm", "NormGrad"), attrs, [_normal(x.shape, np.float32), x, scale, *saved], 1e-4, 1e-5)


RANDOM = [("RandomUniform", dict(dtype=dtypes.float32), ()), ("RandomUniform", dict(dtype=dtypes.float16), ()),
          ("RandomStandardNormal", dict(dtype=dtypes.float32), ()), ("TruncatedNormal", dict(dtype=dtypes.float64), ()),
          ("RandomUniformInt", dict(Tout=dtypes.int32), (np.int32(-5), np.int32(7)))]


@pytest.mark.parametrize("op,attrs,bounds", RANDOM)
def test_seeded_random_ops_draw_the_cpu_s_numbers(run_both, op, attrs, bounds):
    run_both(op, dict(attrs, seed=87654321, seed2=11), [np.array([64, 33], np.int32), *bounds], 0, 0)


@pytest.mark.parametrize("op,bounds", [("StatelessRandomUniform", ()), ("StatelessRandomNormal", ()),
                                       ("StatelessTruncatedNormal", ()),
                                       ("StatelessRandomUniformInt", (np.int64(0), np.int64(1000)))])
def test_stateless_random_ops_draw_the_cpu_s_numbers(run_both, op, bounds):
    dtype = dtypes.int64 if bounds else dtypes.float32
    run_both(op, dict(dtype=dtype), [np.array([17, 9], np.int32), np.array([3, 4], np.int64), *bounds], 0, 0)


def _conv_net(device):
    g = tf.Graph()
    with g.as_default(), tf.device(device):
        tf.set_random_seed(7)
        x = tf.placeholder(tf.float32, [8, 24, 24, 3])
        labels = tf.placeholder(tf.int32, [8])
        w1 = tf.Variable(tf.truncated_normal([5, 5, 3, 64], stddev=0.05, seed=1))
        h = tf.nn.relu(tf.nn.conv2d(x, w1, [1, 1, 1, 1], "SAME"))
        h = tf.nn.lrn(tf.nn.max_pool(h, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"), 4, 1.0, 0.001 / 9.0, 0.75)
        flat = tf.nn.dropout(tf.reshape(h, [8, -1]), keep_prob=0.5, seed=3)
        w2 = tf.Variable(tf.random_normal([12 * 12 * 64, 10], stddev=0.01, seed=2))
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                            logits=tf.matmul(flat, w2)))
        fetches = [loss] + tf.gradients(loss, [w1, w2])
        init = tf.global_variables_initializer()
    return g, [x, labels], fetches, init


def test_a_conv_net_on_the_gpu_gives_the_cpu_s_numbers(cupy):
    feeds = [_normal((8, 24, 24, 3), np.float32), RNG.integers(0, 10, 8).astype(np.int32)]
    results = []
    for device, config in (("", tf.ConfigProto(device_count={"GPU": 0})),
                           ("/gpu:0", tf.ConfigProto(allow_soft_placement=True))):
        g, placeholders, fetches, init = _conv_net(device)
        with tf.Session(graph=g, config=config) as sess:
            sess.run(init)
            results.append(sess.run(fetches, dict(zip(placeholders, feeds))))
    for got, want in zip(results[1], results[0]):
        assert not isinstance(got, cupy.ndarray)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,k,s,padding", [((2, 9, 8, 3), 3, 2, "SAME"), ((1, 7, 6, 2), 3, 3, "SAME"),
                                               ((2, 8, 8, 5), 2, 1, "VALID"), ((16, 24, 24, 64), 3, 2, "SAME")])
def test_max_pool_grad_cuda_kernel_gives_the_array_codes_bits(cupy, shape, k, s, padding, dtype):
    """MaxPoolGrad's CUDA kernel against the array code it stands for on a GPU, run with numpy:
    the same bits (windows that overlap, ties, SAME's padding)."""
    (oh, pt, _), (ow, pl, _) = (window_pads(size, k, s, 1, padding) for size in shape[1:3])
    x = np.round(_normal(shape, dtype) * 2)   # ties in most windows
    y = im2col.max_pool(x, oh, ow, k, k, s, s, pt, pl)
    g = _normal(y.shape, dtype)
    want = im2col.max_pool_grad(x, y, g, k, k, s, s, pt, pl)
    got = im2col.max_pool_grad(*(cupy.asarray(v) for v in (x, y, g)), k, k, s, s, pt, pl)
    assert got.dtype == want.dtype and np.array_equal(got.get(), want)
