"""A GPU's Conv2D and its two gradients: cuDNN (ops/cudnn.py) against im2col + cuBLAS
(ops/nn/im2col.py), the two paths the GPU kernels choose between, on the CIFAR-10 tutorial
net's convolutions (batch 128, NHWC float32, 5x5 SAME) and a strided and a float16 one.

    python benchmarks/bench_gpu_conv.py [--calls 200] [--windows 5]

For each path and convolution: the host's time a call (what a step that is bound by the host,
as the tutorial net's is, pays: the calls are queued without waiting) and the device's time a
call (CUDA events around the same calls), medians of --windows windows of --calls calls, and
the largest difference between the two paths' results relative to the result's largest value.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tensorweave.ops import cudnn
from tensorweave.ops.helpers import cupy
from tensorweave.ops.nn import im2col
from tensorweave.ops.nn.conv_kernels import Geometry
from tensorweave.ops.nn.util import window_pads

# (name, input NHWC, filter HWIO, stride, dtype)
CASES = [("tutorial conv1", (128, 24, 24, 3), (5, 5, 3, 64), 1, "float32"),
         ("tutorial conv2", (128, 12, 12, 64), (5, 5, 64, 64), 1, "float32"),
         ("3x3 stride 2", (64, 32, 32, 128), (3, 3, 128, 128), 2, "float32"),
         ("tutorial conv2 float16", (128, 12, 12, 64), (5, 5, 64, 64), 1, "float16")]


def timed(call, calls: int, windows: int) -> tuple:
    """(host us a call, device us a call): medians over `windows` windows."""
    call()
    cupy.cuda.Device().synchronize()
    host, device = [], []
    for _ in range(windows):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        t = time.perf_counter()
        for _ in range(calls):
            call()
        host.append((time.perf_counter() - t) / calls * 1e6)
        end.record()
        end.synchronize()
        device.append(cupy.cuda.get_elapsed_time(start, end) / calls * 1e3)
    return statistics.median(host), statistics.median(device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--windows", type=int, default=5)
    args = parser.parse_args()
    if cupy is None or cudnn.api() is None:
        sys.exit("needs CuPy and the cuDNN frontend (the extra `gpu`) and a GPU")
    print(f"cuDNN frontend {cudnn.api().__version__}, libcudnn {cudnn.api().backend_version()}; "
          f"{args.windows} windows of {args.calls} calls")
    print(f"{'convolution':24} {'op':8} {'cuDNN host/device us':>22} {'im2col host/device us':>23} {'diff':>8}")
    rng = np.random.default_rng(0)
    for name, x_shape, w_shape, s, dtype in CASES:
        (n, h, w, _), (kh, kw, _, co) = x_shape, w_shape
        (oh, pt, pb), (ow, pl, pr) = window_pads(h, kh, s, 1, "SAME"), window_pads(w, kw, s, 1, "SAME")
        g = Geometry(s, s, 1, 1, pt, pb, pl, pr)
        x, f = (cupy.asarray(rng.standard_normal(v).astype(dtype)) for v in (x_shape, w_shape))
        dy = cupy.asarray(rng.standard_normal((n, oh, ow, co)).astype(dtype))
        pairs = {"fprop": (lambda: cudnn.conv2d(x, f, g, oh, ow), lambda: im2col.conv2d(x, f, g, oh, ow)),
                 "dgrad": (lambda: cudnn.conv2d_input_grad(x_shape, f, dy, g),
                           lambda: im2col.conv2d_input_grad(x_shape, f, dy, g)),
                 "wgrad": (lambda: cudnn.conv2d_filter_grad(x, dy, kh, kw, g),
                           lambda: im2col.conv2d_filter_grad(x, dy, kh, kw, g))}
        for op, (with_cudnn, with_im2col) in pairs.items():
            a, b = with_cudnn(), with_im2col()
            if a is None:
                print(f"{name:24} {op:8} {'cuDNN refused':>22}")
                continue
            diff = float(abs(a.astype("float64") - b).max() / max(1e-30, float(abs(b).max())))
            (ch, cd), (ih, idev) = timed(with_cudnn, args.calls, args.windows), timed(with_im2col, args.calls,
                                                                                    args.windows)
            print(f"{name:24} {op:8} {ch:10.1f} / {cd:9.1f} {ih:11.1f} / {idev:9.1f} {diff:8.1e}")


if __name__ == "__main__":
    main()
