"""The GPU kernels of the convolution, pooling, normalization and random ops without a GPU:
their im2col code run with numpy gives the CPU kernels' (oneDNN's where it applies) numbers, and
a small conv net pinned to /gpu:0 on a stand-in GPU gives the CPU graph's numbers with those ops
placed on the GPU (runtime/devices.py: stand-in GPUs check every value crosses the device
boundary it should)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.graph_def import NodeDef
from tensorweave.ops import registry
from tensorweave.runtime import devices
from tensorweave.runtime.executor import KernelContext
from tensorweave.runtime.resources import ResourceManager

RNG = np.random.default_rng(25)


def _kernel(op, device_type, **attr):
    return registry.kernel_for(op, device_type)(NodeDef("k", op, (), "", attr), KernelContext(ResourceManager()))


def _both(op, inputs, rtol=2e-5, **attr):
    """op's GPU kernel run with numpy inputs against its CPU kernel: the same numbers."""
    want = _kernel(op, "CPU", **attr)(*inputs)
    got = _kernel(op, "GPU", **attr)(*inputs)
    assert registry.kernel_for(op, "GPU") is not registry.kernel_for(op, "CPU")   # the im2col kernel, not the CPU's
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * max(1.0, float(np.abs(want).max(initial=0))))
    return want


def _fmt(a, fmt):
    return a if fmt == "NHWC" else np.ascontiguousarray(a.transpose(0, 3, 1, 2))


def _sizes(shape, fmt):
    return np.array(_fmt(np.empty(shape), fmt).shape, np.int32)


# (input NHWC shape, filter h, w, out channels, strides, dilations, padding, data_format, dtype)
CONVS = [
    ((2, 9, 8, 3), 3, 3, 4, 1, 1, "SAME", "NHWC", np.float32),
    ((2, 9, 8, 5), 3, 2, 4, 2, 1, "VALID", "NHWC", np.float32),
    ((3, 11, 10, 4), 5, 5, 6, 1, 2, "SAME", "NHWC", np.float32),
    ((1, 7, 7, 2), 2, 3, 3, 3, 1, "SAME", "NCHW", np.float32),
    ((2, 8, 9, 3), 3, 3, 2, 2, 1, [[0, 0], [1, 2], [0, 1], [0, 0]], "NHWC", np.float32),
    ((2, 6, 7, 3), 3, 2, 4, 1, 1, "SAME", "NHWC", np.float64),
    ((4, 12, 12, 16), 5, 5, 8, 1, 1, "SAME", "NHWC", np.float32),   # the row-GEMM path of conv_kernels
]


def _conv_attrs(strides, dilations, padding, fmt):
    four = (lambda v: [1, 1, v, v]) if fmt == "NCHW" else (lambda v: [1, v, v, 1])
    explicit = [] if isinstance(padding, str) else [int(v) for pair in padding for v in pair]
    return dict(strides=four(strides), dilations=four(dilations), padding="EXPLICIT" if explicit else padding,
                explicit_paddings=explicit, data_format=fmt)


@pytest.mark.parametrize("shape,kh,kw,co,strides,dilations,padding,fmt,dtype", CONVS)
def test_conv2d_and_its_gradients_on_im2col_match_the_cpu_kernels(shape, kh, kw, co, strides, dilations, padding,
                                                                   fmt, dtype):
    attrs = _conv_attrs(strides, dilations, padding, fmt)
    x = _fmt(RNG.standard_normal(shape).astype(dtype), fmt)
    w = RNG.standard_normal((kh, kw, shape[3], co)).astype(dtype)
    y = _both("Conv2D", [x, w], **attrs)
    dy = RNG.standard_normal(y.shape).astype(dtype)
    _both("Conv2DBackpropInput", [_sizes(shape, fmt), w, dy], **attrs)
    _both("Conv2DBackpropFilter", [x, np.array(w.shape, np.int32), dy], **attrs)


@pytest.mark.parametrize("shape,kh,kw,co,strides,dilations,padding,fmt,dtype", CONVS[:4])
def test_depthwise_conv2d_and_its_gradients_on_im2col_match_the_cpu_kernels(shape, kh, kw, co, strides, dilations,
                                                                            padding, fmt, dtype):
    attrs = _conv_attrs(strides, dilations, padding, fmt)
    x = _fmt(RNG.standard_normal(shape).astype(dtype), fmt)
    w = RNG.standard_normal((kh, kw, shape[3], 2)).astype(dtype)     # channel multiplier 2
    y = _both("DepthwiseConv2dNative", [x, w], **attrs)
    dy = RNG.standard_normal(y.shape).astype(dtype)
    _both("DepthwiseConv2dNativeBackpropInput", [_sizes(shape, fmt), w, dy], **attrs)
    _both("DepthwiseConv2dNativeBackpropFilter", [x, np.array(w.shape, np.int32), dy], **attrs)


# (input NHWC shape, window, strides, padding, data_format)
POOLS = [((2, 9, 8, 3), 3, 2, "SAME", "NHWC"), ((2, 9, 8, 3), 2, 2, "VALID", "NHWC"),
         ((3, 11, 10, 4), 3, 1, "SAME", "NHWC"), ((1, 7, 6, 2), 3, 3, "SAME", "NCHW"),
         ((2, 8, 8, 5), (2, 3), (1, 2), "VALID", "NHWC")]


@pytest.mark.parametrize("shape,k,s,padding,fmt", POOLS)
@pytest.mark.parametrize("ties", [False, True])
def test_pooling_and_its_gradients_on_im2col_match_the_cpu_kernels(shape, k, s, padding, fmt, ties):
    kh, kw = (k, k) if isinstance(k, int) else k
    sh, sw = (s, s) if isinstance(s, int) else s
    four = (lambda a, b: [1, 1, a, b]) if fmt == "NCHW" else (lambda a, b: [1, a, b, 1])
    attrs = dict(ksize=four(kh, kw), strides=four(sh, sw), padding=padding, data_format=fmt)
    # ties: small integers, so windows hold their maximum more than once (TF routes to the first)
    x = RNG.integers(0, 3, shape) if ties else RNG.standard_normal(shape)
    x = _fmt(x.astype(np.float32), fmt)
    y = _both("MaxPool", [x], **attrs)
    dy = RNG.standard_normal(y.shape).astype(np.float32)
    _both("MaxPoolGrad", [x, y, dy], **attrs)
    a = _both("AvgPool", [x], **attrs)
    _both("AvgPoolGrad", [_sizes(shape, fmt), RNG.standard_normal(a.shape).astype(np.float32)], **attrs)


def test_the_shared_kernels_are_the_gpu_kernels_of_lrn_batch_norm_and_the_random_ops():
    for op in ("LRN", "LRNGrad", "FusedBatchNormV3", "FusedBatchNormGradV3", "RandomUniform",
               "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt", "StatelessRandomUniform"):
        assert registry.kernel_for(op, "GPU") is registry.kernel_for(op, "CPU"), op
    registry.load("Conv2DBackpropInput"), registry.load("Conv2DBackpropFilter")
    assert registry.HOST_MEMORY["RandomUniform"] == ((0,), ())
    assert registry.HOST_MEMORY["Conv2DBackpropInput"] == ((0,), ())
    assert registry.HOST_MEMORY["Conv2DBackpropFilter"] == ((1,), ())


# -- on a stand-in GPU ---------------------------------------------------------------------------
@pytest.fixture
def standin_gpu(monkeypatch):
    monkeypatch.setenv(devices.STANDIN_ENV, "1")


def _run(build, device, feeds, capsys):
    """build()'s fetches run in a fresh graph with its ops in `device`; a CPU-only session for
    device "", else one that logs where each op went. -> (values, [(node, op type, device)])."""
    g = tf.Graph()
    with g.as_default(), tf.device(device):
        tf.set_random_seed(7)
        placeholders, fetches, init = build()
    config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=bool(device),
                            device_count={} if device else {"GPU": 0})
    capsys.readouterr()
    with tf.Session(graph=g, config=config) as sess:
        sess.run(init)
        values = sess.run(fetches, dict(zip(placeholders, feeds)))
    log = capsys.readouterr().err
    return values, re.findall(r"^(\S+): \((\w+)\): (\S+)$", log, re.M)


def _conv_net():
    x = tf.placeholder(tf.float32, [4, 12, 12, 3])
    labels = tf.placeholder(tf.int32, [4])
    w1 = tf.Variable(tf.truncated_normal([5, 5, 3, 8], stddev=0.1, seed=1))
    h = tf.nn.relu(tf.nn.conv2d(x, w1, [1, 1, 1, 1], "SAME"))
    h = tf.nn.max_pool(h, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
    h = tf.nn.lrn(h, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75)
    h = tf.nn.avg_pool(h, [1, 2, 2, 1], [1, 1, 1, 1], "VALID")
    flat = tf.nn.dropout(tf.reshape(h, [4, -1]), keep_prob=0.7, seed=3)
    w2 = tf.Variable(tf.random_normal([flat.shape[1].value, 5], stddev=0.05, seed=2))
    logits = tf.matmul(flat, w2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    return [x, labels], [loss, logits] + tf.gradients(loss, [w1, w2, x]), tf.global_variables_initializer()


def test_a_conv_net_pinned_to_a_gpu_gives_the_cpu_graph_s_numbers_with_its_ops_on_the_gpu(standin_gpu, capsys):
    feeds = [RNG.standard_normal((4, 12, 12, 3)).astype(np.float32), np.array([0, 1, 2, 4], np.int32)]
    want, on_cpu = _run(_conv_net, "", feeds, capsys)
    got, log = _run(_conv_net, "/gpu:0", feeds, capsys)
    placed = {name: dev for name, _, dev in log}
    assert not on_cpu      # the CPU session logs nothing
    for g, w in zip(got, want):
        assert not devices.on_device(g)      # fetches come back in host memory
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert np.count_nonzero(got[2]) and np.count_nonzero(got[4])
    gpu = "/job:localhost/replica:0/task:0/device:GPU:0"
    for name in ("Conv2D", "MaxPool", "LRN", "AvgPool", "dropout/random_uniform/RandomUniform",
                 "truncated_normal/TruncatedNormal", "random_normal/RandomStandardNormal",
                 "gradients/AvgPool_grad/AvgPoolGrad", "gradients/LRN_grad/LRNGrad",
                 "gradients/MaxPool_grad/MaxPoolGrad",
                 "gradients/Conv2D_grad/Conv2DBackpropInput", "gradients/Conv2D_grad/Conv2DBackpropFilter"):
        assert placed[name] == gpu, (name, placed.get(name))


DEPTHWISE_FILTER = RNG.standard_normal((3, 3, 3, 2)).astype(np.float32)
LOSS_WEIGHTS = RNG.standard_normal((2, 4, 4, 6)).astype(np.float32)


def _depthwise_bn_net():
    x = tf.placeholder(tf.float32, [2, 8, 8, 3])
    w = tf.constant(DEPTHWISE_FILTER)
    h = tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME")
    y, mean, var = tf.nn.fused_batch_norm(h, tf.ones([6]), tf.zeros([6]))
    loss = tf.reduce_sum(y * y * tf.constant(LOSS_WEIGHTS))
    return [x], [y, mean, var] + tf.gradients(loss, [x, w]), tf.no_op()


def test_depthwise_conv_and_fused_batch_norm_on_a_gpu_give_the_cpu_graph_s_numbers(standin_gpu, capsys):
    feeds = [RNG.standard_normal((2, 8, 8, 3)).astype(np.float32)]
    want, _ = _run(_depthwise_bn_net, "", feeds, capsys)
    got, log = _run(_depthwise_bn_net, "/gpu:0", feeds, capsys)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    ops = {"DepthwiseConv2dNative", "FusedBatchNormV3", "FusedBatchNormGradV3",
           "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"}
    on_gpu = {op for _, op, dev in log if dev.endswith("GPU:0")}
    assert ops <= on_gpu, ops - on_gpu


def _random_ops():
    shape = tf.placeholder(tf.int32, [2])
    return [shape], [tf.random_uniform(shape, seed=1), tf.random_normal(shape, seed=2),
                     tf.truncated_normal(shape, seed=3), tf.random_uniform(shape, 0, 100, tf.int64, seed=4),
                     tf.random.stateless_uniform([3, 4], seed=[5, 6])], tf.no_op()


def test_seeded_random_ops_draw_the_same_numbers_on_a_gpu_as_on_the_cpu(standin_gpu, capsys):
    want, _ = _run(_random_ops, "", [np.array([3, 5], np.int32)], capsys)
    got, log = _run(_random_ops, "/gpu:0", [np.array([3, 5], np.int32)], capsys)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    assert len({float(v.reshape(-1)[0]) for v in got}) == len(got)      # five different draws
    random_ops = {op: dev for _, op, dev in log if re.search(r"Random|TruncatedNormal", op)}
    assert len(random_ops) == 5 and all(d.endswith("GPU:0") for d in random_ops.values()), random_ops
