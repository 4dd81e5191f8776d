"""The CIFAR-10 tutorial network's kernels one by one, against this machine's sgemm and TensorFlow.

    python benchmarks/bench_conv.py [--rounds 3] [--reps 15]
    TF_PYTHON=/opt/tfvenv/bin/python python benchmarks/bench_conv.py      # adds TF's times

Each kernel runs alone in a session (its inputs are variables, the op is run as a target, so
nothing is fed or fetched; a gradient row includes the forward op it needs) at the tutorial's
shapes: batch 64 of 24x24x3, two 5x5x64 SAME convolutions, 3x3/2 max pools. Also the NCHW and
depthwise/separable paths at conv2's shape, and the whole SGD training step. Printed per kernel:
the median time, the GFLOP/s it achieves, this machine's measured sgemm GFLOP/s (2048x2048x2048,
the limit for work that lands in BLAS), and TensorFlow's median time for the same kernel when
TensorFlow is available (this interpreter, $TF_PYTHON, or /opt/tfvenv/bin/python). tensorweave
and TensorFlow run in alternating rounds so that load from other processes falls on both alike;
each figure is the median over rounds. Where oneDNN's kernels are installed
(tensorweave.ops.onednn), the same kernels also run with TENSORWEAVE_ONEDNN=0, the numpy kernels
alone, in a column of their own. The load average is printed.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from _harness import load_average, run_json, tf_python

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B = 64


def _conv_gflop(h, ci, kh=5, co=64):
    return 2 * B * h * h * kh * kh * ci * co / 1e9


def _var(tf, rng, shape):
    return tf.Variable(rng.standard_normal(shape).astype(np.float32))


def _conv(h, ci, what, fmt="NHWC"):
    def build(tf, rng):
        xs = [B, h, h, ci] if fmt == "NHWC" else [B, ci, h, h]
        ys = [B, h, h, 64] if fmt == "NHWC" else [B, 64, h, h]
        x, w, dy = _var(tf, rng, xs), _var(tf, rng, [5, 5, ci, 64]), _var(tf, rng, ys)
        if what == "fwd":
            return tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", data_format=fmt)
        if what == "filter":
            return tf.nn.conv2d_backprop_filter(x, [5, 5, ci, 64], dy, [1, 1, 1, 1], "SAME", data_format=fmt)
        return tf.nn.conv2d_backprop_input(xs, w, dy, [1, 1, 1, 1], "SAME", data_format=fmt)
    return build


def _pool(h, grad):
    def build(tf, rng):
        x = _var(tf, rng, [B, h, h, 64])
        y = tf.nn.max_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
        return tf.gradients(y, x, grad_ys=_var(tf, rng, [B, h // 2, h // 2, 64]))[0] if grad else y
    return build


def _depthwise(what):
    def build(tf, rng):
        x, w = _var(tf, rng, [B, 12, 12, 64]), _var(tf, rng, [3, 3, 64, 1])
        y = tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME")
        if what == "fwd":
            return y
        return tf.gradients(y, x if what == "input" else w, grad_ys=_var(tf, rng, [B, 12, 12, 64]))[0]
    return build


def _separable(tf, rng):
    x = _var(tf, rng, [B, 12, 12, 64])
    return tf.nn.separable_conv2d(x, _var(tf, rng, [3, 3, 64, 1]), _var(tf, rng, [1, 1, 64, 64]), [1, 1, 1, 1],
                                  "SAME")


def _relu(tf, rng):
    return tf.nn.relu(_var(tf, rng, [B, 24, 24, 64]))


def _relu_grad(tf, rng):
    x = _var(tf, rng, [B, 24, 24, 64])
    return tf.gradients(tf.nn.relu(x), x, grad_ys=_var(tf, rng, [B, 24, 24, 64]))[0]


def _bias_add(tf, rng):
    return tf.nn.bias_add(_var(tf, rng, [B, 24, 24, 64]), _var(tf, rng, [64]))


def _bias_add_grad(tf, rng):
    x, b = _var(tf, rng, [B, 24, 24, 64]), _var(tf, rng, [64])
    return tf.gradients(tf.nn.bias_add(x, b), b, grad_ys=_var(tf, rng, [B, 24, 24, 64]))[0]


def _xent(tf, rng):
    logits = _var(tf, rng, [B, 10])
    labels = tf.constant(rng.randint(0, 10, B).astype(np.int64))
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    return tf.gradients(loss, logits)[0]


def _step(tf, rng):
    """The tutorial net's SGD training step (forward, backward, update), as bench_training.py's. A
    stateful update is the target: TF's graph optimizer prunes a group of stateless ops."""
    x = tf.Variable(rng.rand(B, 24, 24, 3).astype(np.float32), trainable=False)
    y = tf.Variable(rng.randint(0, 10, B).astype(np.int32), trainable=False)

    def var(shape, std):
        return tf.Variable((rng.randn(*shape) * std).astype(np.float32))
    k1, b1 = var([5, 5, 3, 64], 5e-2), tf.Variable(np.zeros(64, np.float32))
    c1 = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, k1, [1, 1, 1, 1], "SAME"), b1))
    p1 = tf.nn.max_pool(c1, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
    k2, b2 = var([5, 5, 64, 64], 5e-2), tf.Variable(np.zeros(64, np.float32))
    c2 = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(p1, k2, [1, 1, 1, 1], "SAME"), b2))
    p2 = tf.nn.max_pool(c2, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
    flat = tf.reshape(p2, [B, 6 * 6 * 64])
    w3, b3 = var([6 * 6 * 64, 384], 0.04), tf.Variable(np.zeros(384, np.float32))
    h3 = tf.nn.relu(tf.matmul(flat, w3) + b3)
    w4, b4 = var([384, 10], 1 / 384.0), tf.Variable(np.zeros(10, np.float32))
    logits = tf.matmul(h3, w4) + b4
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    return tf.train.GradientDescentOptimizer(0.1).minimize(loss)


# (name, GFLOP of one run or 0 for memory-bound kernels, builder(tf, rng) -> op or tensor to run)
KERNELS = [
    ("Conv2D conv1 24x24x3->64", _conv_gflop(24, 3), _conv(24, 3, "fwd")),
    ("Conv2DBackpropFilter conv1", _conv_gflop(24, 3), _conv(24, 3, "filter")),
    ("Conv2DBackpropInput conv1", _conv_gflop(24, 3), _conv(24, 3, "input")),
    ("Conv2D conv2 12x12x64->64", _conv_gflop(12, 64), _conv(12, 64, "fwd")),
    ("Conv2DBackpropFilter conv2", _conv_gflop(12, 64), _conv(12, 64, "filter")),
    ("Conv2DBackpropInput conv2", _conv_gflop(12, 64), _conv(12, 64, "input")),
    ("Conv2D conv2 NCHW", _conv_gflop(12, 64), _conv(12, 64, "fwd", "NCHW")),
    ("Conv2DBackpropFilter conv2 NCHW", _conv_gflop(12, 64), _conv(12, 64, "filter", "NCHW")),
    ("Conv2DBackpropInput conv2 NCHW", _conv_gflop(12, 64), _conv(12, 64, "input", "NCHW")),
    ("MaxPool 24x24x64 3x3/2", 0.0, _pool(24, False)),
    ("MaxPool + MaxPoolGrad 24x24x64", 0.0, _pool(24, True)),
    ("MaxPool 12x12x64 3x3/2", 0.0, _pool(12, False)),
    ("MaxPool + MaxPoolGrad 12x12x64", 0.0, _pool(12, True)),
    ("Relu 24x24x64", 0.0, _relu),
    ("Relu + ReluGrad 24x24x64", 0.0, _relu_grad),
    ("BiasAdd 24x24x64", 0.0, _bias_add),
    ("BiasAddGrad 24x24x64", 0.0, _bias_add_grad),
    ("SparseSoftmaxXent + grad 64x10", 0.0, _xent),
    ("DepthwiseConv2d 3x3 12x12x64", 2 * B * 144 * 9 * 64 / 1e9, _depthwise("fwd")),
    ("DepthwiseBackpropInput", 2 * B * 144 * 9 * 64 / 1e9, _depthwise("input")),
    ("DepthwiseBackpropFilter", 2 * B * 144 * 9 * 64 / 1e9, _depthwise("filter")),
    ("separable_conv2d 3x3 + 1x1 64", (2 * B * 144 * 9 * 64 + 2 * B * 144 * 64 * 64) / 1e9, _separable),
    ("whole SGD step, batch 64", 0.0, _step),
]


def _median_run(sess, target, reps: int) -> float:
    for _ in range(2):
        sess.run(target)
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        sess.run(target)
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def run_all(framework: str, reps: int, only=None) -> dict:
    """{kernel name: median seconds} for one framework."""
    if framework == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
    else:
        sys.path.insert(0, REPO)
        import tensorweave as tf
    out = {}
    for name, _, build in KERNELS:
        if only and only not in name:
            continue
        with tf.Graph().as_default():
            target = build(tf, np.random.RandomState(0))
            target = getattr(target, "op", target)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                out[name] = _median_run(sess, target, reps)
    return out


def sgemm_gflops(n: int = 2048, reps: int = 7) -> float:
    a = np.random.rand(n, n).astype(np.float32)
    b = np.random.rand(n, n).astype(np.float32)
    c = np.empty((n, n), np.float32)
    np.matmul(a, b, out=c)
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        np.matmul(a, b, out=c)
        samples.append(time.perf_counter() - t)
    time.sleep(0.5)   # OpenBLAS's threads spin for a while after a call, taking a core from the next kernel
    return 2 * n ** 3 / statistics.median(samples) / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="alternating tensorweave/TF rounds")
    ap.add_argument("--reps", type=int, default=15, help="timed runs per kernel per round")
    ap.add_argument("--only", default=None, help="only kernels whose name contains this")
    ap.add_argument("--no-tf", action="store_true", help="skip TensorFlow")
    ap.add_argument("--framework", choices=["tensorweave", "tf"], default="tensorweave", help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.json:
        print(json.dumps(run_all(args.framework, args.reps, args.only)))
        return
    load0 = load_average()
    py = None if args.no_tf else tf_python()
    ours, theirs, numpy_only, gemm = [], [], [], []
    sys.path.insert(0, REPO)
    from tensorweave.ops import onednn
    only = ["--only", args.only] if args.only else []
    for _ in range(max(1, args.rounds)):
        gemm.append(sgemm_gflops())
        ours.append(run_all("tensorweave", args.reps, args.only))
        if onednn.AVAILABLE:
            numpy_only.append(run_json(sys.executable, __file__, ["--framework", "tensorweave", "--reps", args.reps]
                                       + only, env={"TENSORWEAVE_ONEDNN": "0"}))
        if py is None:
            continue
        result = run_json(py, __file__, ["--framework", "tf", "--reps", args.reps] + only)
        if result is None:
            py = None
            continue
        theirs.append(result)
    sgemm = statistics.median(gemm)
    flops = {name: f for name, f, _ in KERNELS}
    print(f"sgemm 2048x2048x2048 (numpy's BLAS, this machine): {sgemm:.0f} GFLOP/s "
          f"(median of {len(gemm)}); medians of {len(ours)} rounds x {args.reps} runs")
    numpy_only = [r for r in numpy_only if r]
    kernels = "oneDNN" if onednn.AVAILABLE else "numpy"
    beside = " (beside them: numpy's alone, TENSORWEAVE_ONEDNN=0)" if numpy_only else ""
    print(f"tensorweave's kernels: {kernels}{beside}")
    head = f"{'kernel':34s} {'tensorweave':>11s} {'GFLOP/s':>8s} {'% sgemm':>8s}"
    if numpy_only:
        head += f" {'numpy only':>11s} {'GFLOP/s':>8s}"
    if theirs:
        head += f" {'TensorFlow':>11s} {'GFLOP/s':>8s} {'tw/TF time':>10s}"
    print(head)
    for name in ours[0]:
        mine = statistics.median(r[name] for r in ours)
        f = flops.get(name, 0.0)
        rate = f"{f / mine:8.1f} {100 * f / mine / sgemm:7.0f}%" if f else f"{'-':>8s} {'-':>8s}"
        line = f"{name:34s} {mine * 1e3:8.2f} ms {rate}"
        if numpy_only:
            slow = statistics.median(r[name] for r in numpy_only)
            line += f" {slow * 1e3:8.2f} ms " + (f"{f / slow:8.1f}" if f else f"{'-':>8s}")
        if theirs:
            ref = statistics.median(r[name] for r in theirs)
            line += f" {ref * 1e3:8.2f} ms " + (f"{f / ref:8.1f}" if f else f"{'-':>8s}") + f" {mine / ref:9.2f}x"
        print(line)
    print(f"(load average {load0} at start, {load_average()} at end, {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
