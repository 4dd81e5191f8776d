"""ops/cudnn.py on a GPU: cuDNN takes Conv2D and its gradients in every geometry TF gives
(strides, dilations, SAME's uneven padding, explicit padding) for float16, float32 and float64,
computes float32 in float32 (no TF32), and the GPU's Conv2D kernels run it, not im2col's.
Skips without CuPy, a GPU or the cuDNN frontend."""
from __future__ import annotations

import numpy as np
import pytest

from tensorweave.ops import cudnn
from tensorweave.ops.nn import im2col
from tensorweave.ops.nn.conv_kernels import Geometry
from tensorweave.ops.nn.util import window_out

RNG = np.random.default_rng(7)

# (input NHWC, filter HWIO, strides, dilations, (pt, pb, pl, pr))
GEOMETRIES = [((128, 24, 24, 3), (5, 5, 3, 64), 1, 1, (2, 2, 2, 2)),     # the CIFAR-10 net's first conv
              ((16, 12, 12, 64), (5, 5, 64, 64), 1, 1, (2, 2, 2, 2)),    # ... its second
              ((2, 9, 8, 5), (3, 2, 5, 4), 2, 1, (0, 0, 0, 0)),          # VALID, stride 2
              ((3, 11, 10, 4), (5, 5, 4, 6), 1, 2, (4, 4, 4, 4)),        # dilation 2, SAME
              ((2, 8, 8, 3), (3, 3, 3, 2), 2, 1, (0, 1, 0, 1)),          # SAME's uneven padding
              ((2, 8, 9, 3), (3, 3, 3, 2), 2, 1, (1, 2, 0, 1)),          # explicit padding
              ((2, 8, 9, 3), (3, 3, 3, 2), 2, 1, (2, 1, 1, 0)),          # ... more before than after
              ((1, 7, 7, 2), (2, 3, 2, 3), 3, 1, (0, 1, 1, 1)),          # SAME, stride 3
              ((64, 32, 32, 128), (3, 3, 128, 128), 2, 1, (0, 1, 0, 1))]  # SAME, stride 2, a large one
# the largest error relative to the result's largest magnitude, against a float64 computation
TOLERANCE = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-13}


@pytest.fixture
def frontend(cupy):
    if cudnn.api() is None:
        pytest.skip("the cuDNN frontend (nvidia-cudnn-frontend, in the extra `gpu`) or its libcudnn is missing")
    return cupy


def _case(cupy, x_shape, w_shape, s, d, pads, dtype):
    (n, h, w, _), (kh, kw, _, co) = x_shape, w_shape
    pt, pb, pl, pr = pads
    oh, ow = window_out(h, kh, s, d, "EXPLICIT", (pt, pb)), window_out(w, kw, s, d, "EXPLICIT", (pl, pr))
    x, f, dy = (RNG.standard_normal(v).astype(dtype) for v in (x_shape, w_shape, (n, oh, ow, co)))
    return Geometry(s, s, d, d, pt, pb, pl, pr), oh, ow, (x, f, dy), [cupy.asarray(v) for v in (x, f, dy)]


def _close(got, want, dtype):
    assert got is not None, "cuDNN refused the convolution"
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    err = np.abs(got.get().astype(np.float64) - want).max() / np.abs(want).max()
    assert err <= TOLERANCE[dtype], f"relative error {err:.2e}"


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("x_shape,w_shape,s,d,pads", GEOMETRIES)
def test_cudnn_convolutions_against_float64(frontend, x_shape, w_shape, s, d, pads, dtype):
    if dtype == "float16" and x_shape[0] >= 64:
        pytest.skip("one large float16 case is enough")
    g, oh, ow, host, (x, f, dy) = _case(frontend, x_shape, w_shape, s, d, pads, dtype)
    x64, f64, dy64 = (v.astype(np.float64) for v in host)
    kh, kw = w_shape[:2]
    _close(cudnn.conv2d(x, f, g, oh, ow), im2col.conv2d(x64, f64, g, oh, ow), dtype)
    _close(cudnn.conv2d_input_grad(x_shape, f, dy, g), im2col.conv2d_input_grad(x_shape, f64, dy64, g), dtype)
    _close(cudnn.conv2d_filter_grad(x, dy, kh, kw, g), im2col.conv2d_filter_grad(x64, dy64, kh, kw, g), dtype)


def test_conv2d_gpu_kernels_run_cudnn(frontend, run_both, monkeypatch):
    """With im2col's Conv2D kernels broken, the GPU's Conv2D ops still give the CPU's numbers."""
    def broken(*args):
        raise AssertionError("im2col ran where cuDNN should have")
    for name in ("conv2d", "conv2d_input_grad", "conv2d_filter_grad"):
        monkeypatch.setattr(im2col, name, broken)
    attrs = dict(strides=[1, 2, 2, 1], dilations=[1, 1, 1, 1], padding="SAME", data_format="NHWC")
    x, w = RNG.standard_normal((2, 9, 8, 3)).astype(np.float32), RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)
    (y,) = run_both("Conv2D", attrs, [x, w], 1e-4, 1e-5)
    dy = RNG.standard_normal(y.shape).astype(np.float32)
    run_both("Conv2DBackpropInput", attrs, [np.array(x.shape, np.int32), w, dy], 1e-4, 1e-5)
    run_both("Conv2DBackpropFilter", attrs, [x, np.array(w.shape, np.int32), dy], 1e-4, 1e-5)


def test_refused_convolution_gives_none(frontend):
    """An integer convolution is not cuDNN's: None (im2col's kernel runs)."""
    x, f = frontend.ones((1, 4, 4, 2), np.int32), frontend.ones((3, 3, 2, 1), np.int32)
    assert cudnn.conv2d(x, f, Geometry(1, 1, 1, 1, 1, 1, 1, 1), 4, 4) is None
