"""oneDNN's kernels (tensorweave.ops.onednn) against the numpy kernels they stand in for: every
convolution geometry, pooling with ties, MatMul's transposes; and the ways it must step aside
(other dtypes, TENSORWEAVE_ONEDNN=0, a forked child) or share itself (two threads at once)."""
import itertools
import os
import platform
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tensorweave.ops.onednn as onednn
from tensorweave.ops import intra_op
from tensorweave.ops.nn import conv_kernels, pool_kernels
from tensorweave.ops.nn.util import window_pads

needs_onednn = pytest.mark.skipif(not onednn.AVAILABLE, reason="oneDNN is not installed (pip install -e .[onednn])")


def assert_is_product(got, a, b, ta: bool, tb: bool) -> None:
    """got is op(a) op(b) to float32 rounding: within a millionth of sum |a| |b| of the float64
    product (a sum of k float32 terms that cancel may be far from numpy's own float32 sum, in
    proportion to its terms, not to the result)."""
    a64, b64 = (a.T if ta else a).astype(np.float64), (b.T if tb else b).astype(np.float64)
    np.testing.assert_array_less(np.abs(got - a64 @ b64), 1e-6 * (np.abs(a64) @ np.abs(b64)) + 1e-30)
rng = np.random.RandomState(11)


def test_the_test_extra_installs_onednn_where_its_wheel_exists():
    if sys.platform == "linux" and platform.machine() == "x86_64":
        assert onednn.AVAILABLE, "pip install -e .[test] should install onednn-cpu-gomp; libdnnl did not load"


def geometry(h, w, k, s, d, padding):
    oh, pt, pb = window_pads(h, k, s, d, padding, (0, 0))
    ow, pl, pr = window_pads(w, k, s, d, padding, (0, 0))
    return conv_kernels.Geometry(s, s, d, d, pt, pb, pl, pr), oh, ow


CONV_CASES = [(h, ci, co, k, s, d, p) for h, ci, co, k, s, d, p in itertools.product(
    [7, 8], [1, 3, 16], [4, 16], [1, 3, 5], [1, 2, 3], [1, 2], ["SAME", "VALID"])
    if (s == 1 or d == 1) and (k - 1) * d < 7]


@needs_onednn
@pytest.mark.parametrize("h,ci,co,k,s,d,padding", CONV_CASES)
def test_convolution_and_both_gradients_match_the_numpy_kernels(h, ci, co, k, s, d, padding):
    g, oh, ow = geometry(h, 9, k, s, d, padding)
    x = rng.randn(2, h, 9, ci).astype(np.float32)
    f = rng.randn(k, k, ci, co).astype(np.float32)
    ws = conv_kernels.Workspace()
    want = conv_kernels.conv2d_nhwc(x, f, g, ws)
    dy = rng.randn(*want.shape).astype(np.float32)
    got = [onednn.conv2d(x, f, g, oh, ow), onednn.conv2d_input_grad(x.shape, f, dy, g),
           onednn.conv2d_filter_grad(x, dy, k, k, g)]
    wants = [want, conv_kernels.conv2d_input_grad_nhwc(x.shape, f, dy, g, ws),
             conv_kernels.conv2d_filter_grad_nhwc(x, dy, k, k, g, ws)]
    for name, a, b in zip(("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"), got, wants):
        if name == "Conv2DBackpropInput" and ci < onednn._MIN_INPUT_GRAD_CHANNELS:
            assert a is None, "an image's gradient is numpy's (faster there)"
            continue
        assert a is not None, f"{name}: oneDNN declined a plain geometry"
        assert a.shape == b.shape and a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * np.abs(b).max(), err_msg=name)


@needs_onednn
@pytest.mark.parametrize("m,k,s,d,padding", [(1, 3, 1, 1, "SAME"), (2, 3, 2, 1, "SAME"), (3, 5, 1, 2, "VALID"),
                                             (1, 1, 1, 1, "VALID"), (2, 3, 3, 1, "VALID")])
def test_depthwise_convolution_and_both_gradients_match_the_numpy_kernels(m, k, s, d, padding):
    g, oh, ow = geometry(9, 9, k, s, d, padding)
    x = rng.randn(2, 9, 9, 6).astype(np.float32)
    f = rng.randn(k, k, 6, m).astype(np.float32)
    want = conv_kernels.depthwise_nhwc(x, f, g)
    dy = rng.randn(*want.shape).astype(np.float32)
    got = [onednn.conv2d(x, f, g, oh, ow, depthwise=True), onednn.conv2d_input_grad(x.shape, f, dy, g, True),
           onednn.conv2d_filter_grad(x, dy, k, k, g, True)]
    wants = [want, conv_kernels.depthwise_input_grad_nhwc(x.shape, f, dy, g),
             conv_kernels.depthwise_filter_grad_nhwc(x, dy, k, k, g)]
    for name, a, b in zip(("forward", "input gradient", "filter gradient"), got, wants):
        assert a is not None, f"depthwise {name}: oneDNN declined"
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * np.abs(b).max(), err_msg=name)


@needs_onednn
def test_a_transposed_nchw_view_is_taken_and_inputs_are_left_unchanged():
    x = rng.randn(2, 16, 8, 9).astype(np.float32).transpose(0, 2, 3, 1)
    f = rng.randn(3, 3, 16, 8).astype(np.float32)
    before = x.copy()
    g, oh, ow = geometry(8, 9, 3, 1, 1, "SAME")
    np.testing.assert_allclose(onednn.conv2d(x, f, g, oh, ow),
                               conv_kernels.conv2d_nhwc(before, f, g, conv_kernels.Workspace()), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(x, before)


POOL_CASES = list(itertools.product([7, 12], [2, 3], [1, 2, 3], ["SAME", "VALID"]))


@needs_onednn
@pytest.mark.parametrize("h,k,s,padding", POOL_CASES)
def test_pooling_and_its_gradients_match_the_numpy_kernels_ties_included(h, k, s, padding):
    x = rng.randn(3, h, 9, 5).astype(np.float32)
    x[0] = np.round(x[0])   # some ties
    x[1] = 0                # every window a tie, as after a ReLU: the gradient goes to the first
    oh, pt, _ = window_pads(h, k, s, 1, padding, (0, 0))
    ow, pl, _ = window_pads(9, k, s, 1, padding, (0, 0))
    window = (k, k, s, s, pt, pl)
    y = pool_kernels.max_pool(x, oh, ow, *window)
    g = rng.randn(*y.shape).astype(np.float32)
    np.testing.assert_array_equal(onednn.max_pool(x, oh, ow, *window), y)
    np.testing.assert_allclose(onednn.avg_pool(x, oh, ow, *window), pool_kernels.avg_pool(x, oh, ow, *window),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(onednn.max_pool_grad(x, g, *window), pool_kernels.max_pool_grad(x, y, g, *window),
                               rtol=1e-6, atol=1e-6)
    pooled = onednn.max_pool(x, oh, ow, *window)   # (its argmax recorded: the gradient reads it)
    np.testing.assert_array_equal(onednn.max_pool_grad(x, g, *window, y=pooled), onednn.max_pool_grad(x, g, *window))
    np.testing.assert_allclose(onednn.avg_pool_grad(x.shape, g, *window),
                               pool_kernels.avg_pool_grad(x.shape, g, *window), rtol=1e-6, atol=1e-6)


@needs_onednn
@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("order", ["C", "F"])
def test_matmul_matches_numpy_for_every_transpose_and_memory_order(ta, tb, order):
    m, k, n = 64, 300, 40
    a = np.asarray(rng.randn(*((k, m) if ta else (m, k))), np.float32, order=order)
    b = np.asarray(rng.randn(*((n, k) if tb else (k, n))), np.float32, order=order)
    got = onednn.matmul(a, b, ta, tb)
    assert_is_product(got, a, b, ta, tb)


@needs_onednn
@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("m,k,n", [(32, 128, 128), (128, 32, 128), (7, 290, 45), (256, 158, 2)])
def test_a_slice_of_columns_is_read_in_place_with_the_bits_of_its_copy(ta, tb, m, k, n):
    # (an LSTM's kernel split per gate: a view whose rows lie a whole kernel's width apart)
    a_rows, a_cols = (k, m) if ta else (m, k)
    b_rows, b_cols = (n, k) if tb else (k, n)
    a = rng.randn(a_rows, 3 * a_cols).astype(np.float32)[:, a_cols:2 * a_cols]
    b = rng.randn(b_rows, 4 * b_cols).astype(np.float32)[:, 3 * b_cols:]
    got = onednn.matmul(a, b, ta, tb)
    np.testing.assert_array_equal(got, onednn.matmul(np.ascontiguousarray(a), np.ascontiguousarray(b), ta, tb))
    assert_is_product(got, a, b, ta, tb)


@needs_onednn
@pytest.mark.parametrize("m,k,n", [(100, 784, 256), (784, 100, 256), (256, 256, 10), (8, 100000, 8), (1, 65536, 1),
                                   (1, 16384, 8), (8, 16384, 1), (3, 1 << 20, 1), (16, 65536, 16), (8, 1 << 20, 1)])
def test_small_matmuls_give_the_same_bits_whatever_the_thread_count(monkeypatch, m, k, n):
    """Below _GEMM_SERIAL_MAX multiply-adds a product gives the calling thread's bits, a 1-core
    machine's numbers: from _GEMM_TEAM_MIN it runs on the team while the cores are free (as here),
    but only where the team gives those bits (the last two shapes' teams split k)."""
    monkeypatch.setattr(onednn, "_cores_taken", lambda team: False)
    for ta, tb in itertools.product([False, True], repeat=2):
        a = rng.randn(*((k, m) if ta else (m, k))).astype(np.float32)
        b = rng.randn(*((n, k) if tb else (k, n))).astype(np.float32)
        results, team = [], onednn._lib.omp_get_max_threads()
        for threads in (1, 2, 1):
            onednn._lib.omp_set_num_threads(threads)
            results.append(onednn.matmul(a, b, ta, tb))
        onednn._lib.omp_set_num_threads(team)
        np.testing.assert_array_equal(results[0], results[1])
        np.testing.assert_array_equal(results[1], results[2])
        assert_is_product(results[0], a, b, ta, tb)


@needs_onednn
@pytest.mark.parametrize("m,k,n", [(256, 784, 256), (1, 65536, 1), (1, 16384, 8), (8, 100000, 8)])
def test_large_matmuls_on_a_busy_machine_leave_the_team_only_where_the_bits_stay(monkeypatch, m, k, n):
    """Above _GEMM_SERIAL_MAX a product runs on the OpenMP team while its cores are free; with
    them taken it runs on the calling thread where the probe found that gives the team's bits
    for its shape and layout, and stays on the team where it does not (a row times a matrix
    may be split along k). The bounds are lowered here to keep the products small."""
    monkeypatch.setattr(onednn, "_GEMM_TEAM_MIN", 1 << 15)
    monkeypatch.setattr(onednn, "_GEMM_SERIAL_MAX", 1 << 15)
    for ta, tb in itertools.product([False, True], repeat=2):
        a = rng.randn(*((k, m) if ta else (m, k))).astype(np.float32)
        b = rng.randn(*((n, k) if tb else (k, n))).astype(np.float32)
        monkeypatch.setattr(onednn, "_cores_taken", lambda team: False)
        free = onednn.matmul(a, b, ta, tb)
        monkeypatch.setattr(onednn, "_cores_taken", lambda team: True)
        busy = onednn.matmul(a, b, ta, tb)
        np.testing.assert_array_equal(free, busy)
        assert_is_product(free, a, b, ta, tb)
        key = next(key for key in onednn._SERIAL_BITS if key[2:5] == (m, n, k) and key[:2] == (
            b"T" if ta else b"N", b"T" if tb else b"N"))
        gemm = key[:7]   # (the key's last element is the team's size)
        pa, pb = (np.ascontiguousarray(x) for x in (a, b))
        team, serial = onednn._sgemm(gemm, pa, pb, False), onednn._sgemm(gemm, pa, pb, True)
        if onednn._SERIAL_BITS[key]:   # (where the probe saw other bits, these operands' sums may still agree)
            np.testing.assert_array_equal(team.view(np.int32), serial.view(np.int32))


@needs_onednn
@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
def test_a_large_product_of_slices_of_columns_on_a_busy_machine(monkeypatch, ta, tb):
    """(An LSTM's gradient of all its steps' input products: a gate's columns of a [time * batch,
    4 * units] matrix.) The probe of the team's bits runs on operands laid out as the slices, rows
    a whole matrix's width apart: a dense copy read with the slices' row stride read past its end."""
    monkeypatch.setattr(onednn, "_GEMM_TEAM_MIN", 1 << 15)
    monkeypatch.setattr(onednn, "_GEMM_SERIAL_MAX", 1 << 15)
    monkeypatch.setattr(onednn, "_SERIAL_BITS", {})
    monkeypatch.setattr(onednn, "_cores_taken", lambda team: True)
    m, k, n = 2560, 128, 128
    a_rows, a_cols = (k, m) if ta else (m, k)
    b_rows, b_cols = (n, k) if tb else (k, n)
    a = rng.randn(a_rows, 4 * a_cols).astype(np.float32)[:, a_cols:2 * a_cols]
    b = rng.randn(b_rows, 4 * b_cols).astype(np.float32)[:, 3 * b_cols:]
    got = onednn.matmul(a, b, ta, tb)
    assert_is_product(got, a, b, ta, tb)
    assert len(onednn._SERIAL_BITS) == 1


@needs_onednn
def test_small_convolutions_leave_the_team_only_where_the_bits_stay():
    """The MNIST CNN's first layer (1 -> 32 channels, 3x3, batch 128: 25M multiply-adds): each
    kernel gives the bits the team gives, whether the probe sent it to the calling thread (the
    forward; the filter gradient, summed from the batch's parts as the team splits it) or kept
    it on the team."""
    g, oh, ow = geometry(28, 28, 3, 1, 1, "VALID")
    x = rng.randn(128, 28, 28, 1).astype(np.float32)
    f = rng.randn(3, 3, 1, 32).astype(np.float32)
    dy = rng.randn(128, oh, ow, 32).astype(np.float32)
    got = {"forward": onednn.conv2d(x, f, g, oh, ow), "filter": onednn.conv2d_filter_grad(x, dy, 3, 3, g)}
    operands = {"forward": (x, f), "filter": (x, dy)}
    for kind, out in got.items():
        key = (x.shape, f.shape, dy.shape, g, False)
        assert (kind, key) in onednn._SERIAL_BITS
        team, serial = (onednn._conv_run(kind, on_one_thread, *operands[kind], key) for on_one_thread in (False, True))
        np.testing.assert_array_equal(out.view(np.int32), team.view(np.int32))
        assert onednn._SERIAL_BITS[kind, key] == np.array_equal(team.view(np.int32), serial.view(np.int32))
    ws = conv_kernels.Workspace()
    np.testing.assert_allclose(got["forward"], conv_kernels.conv2d_nhwc(x, f, g, ws), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got["filter"], conv_kernels.conv2d_filter_grad_nhwc(x, dy, 3, 3, g, ws),
                               rtol=1e-3, atol=1e-2)


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"), reason="no /proc/loadavg")
def test_a_team_needs_free_cores_beside_the_calling_thread():
    assert not onednn._cores_taken(1)
    with open("/proc/loadavg", "rb") as f:
        running = int(f.read().split()[3].split(b"/")[0])
    assert isinstance(onednn._cores_taken(2), bool)
    assert onednn._cores_taken(os.cpu_count() + running + 1)


def test_what_onednn_does_not_take_is_left_to_numpy():
    x64 = rng.randn(2, 8, 8, 3)
    g, oh, ow = geometry(8, 8, 3, 1, 1, "SAME")
    assert onednn.conv2d(x64, rng.randn(3, 3, 3, 4), g, oh, ow) is None
    assert onednn.max_pool(x64, 4, 4, 2, 2, 2, 2, 0, 0) is None
    assert onednn.conv2d(np.zeros((0, 8, 8, 3), np.float32), np.ones((3, 3, 3, 4), np.float32), g, oh, ow) is None
    assert onednn.matmul(np.ones((4, 4), np.float32), np.ones((4, 4), np.float32), False, False) is None  # tiny
    assert onednn.matmul(np.ones((64, 600)), np.ones((600, 64)), False, False) is None                   # float64


@needs_onednn
def test_two_threads_may_run_the_same_primitive_at_once():
    g, oh, ow = geometry(12, 12, 5, 1, 1, "SAME")
    f = rng.randn(5, 5, 16, 16).astype(np.float32)
    xs = [rng.randn(4, 12, 12, 16).astype(np.float32) for _ in range(2)]
    wants = [conv_kernels.conv2d_nhwc(x, f, g, conv_kernels.Workspace()) for x in xs]
    bad = []

    def work(i):
        for _ in range(50):
            if not np.allclose(onednn.conv2d(xs[i], f, g, oh, ow), wants[i], rtol=1e-4, atol=1e-3):
                bad.append(i)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not bad and not any(t.is_alive() for t in threads)


@needs_onednn
def test_the_primitive_cache_stays_bounded():
    f = rng.randn(3, 3, 2, 2).astype(np.float32)
    for h in range(3, 3 + onednn._CACHE_SIZE + 20):
        g, oh, ow = geometry(h, 3, 3, 1, 1, "SAME")
        x = rng.randn(1, h, 3, 2).astype(np.float32)
        np.testing.assert_allclose(onednn.conv2d(x, f, g, oh, ow),
                                   conv_kernels.conv2d_nhwc(x, f, g, conv_kernels.Workspace()), rtol=1e-4, atol=1e-4)
    assert len(onednn._plans) <= onednn._CACHE_SIZE


CHILD = """
import os, numpy as np
import tensorweave.ops.onednn as onednn
from tensorweave.ops.nn import conv_kernels
g = conv_kernels.Geometry(1, 1, 1, 1, 1, 1, 1, 1)
x, f = np.ones((2, 6, 6, 8), np.float32), np.ones((3, 3, 8, 8), np.float32)
print(onednn.AVAILABLE, onednn.conv2d(x, f, g, 6, 6) is not None, flush=True)
pid = os.fork()
if pid == 0:
    print("child", onednn.AVAILABLE, onednn.conv2d(x, f, g, 6, 6) is None, flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""


@needs_onednn
def test_a_forked_child_uses_the_numpy_kernels_instead_of_hanging():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["True", "True", "child", "False", "True"], out.stderr


KERNELS_AT_LOAD = """
import os, sys, time, numpy as np
import tensorweave.ops.onednn as onednn
print(onednn._kernels_made.name, flush=True)
time.sleep(float(sys.argv[2]))   # (exits, forks or multiplies while sgemm may still make its kernels)
a, b = np.arange(12, dtype=np.float32).reshape(3, 4) / 7, np.arange(20, dtype=np.float32).reshape(4, 5) / 3
if sys.argv[1] == "fork":
    pid = os.fork()
    if pid == 0:   # (a forked child steps aside from oneDNN: its threads are not there)
        os._exit(0 if not onednn.AVAILABLE and onednn.matmul(a, b, False, False) is None else 3)
    print(os.waitpid(pid, 0)[1] == 0, flush=True)
elif sys.argv[1] == "product":
    big_a, big_b = np.tile(a, (64, 64)), np.tile(b, (64, 64))
    print(np.allclose(onednn._sgemm((b"N", b"N", 192, 320, 256, 256, 320), big_a, big_b, True),
                      big_a.astype(np.float64) @ big_b, rtol=1e-5), flush=True)
"""


@needs_onednn
@pytest.mark.parametrize("then", ["exit", "fork", "product"])
@pytest.mark.parametrize("after_s", ["0", "0.01"])
def test_sgemms_kernels_are_made_on_a_thread_of_their_own_when_the_library_loads(then, after_s):
    """sgemm makes its kernels on its first call (25 ms): a thread does, when the library loads, so
    that a process's first product does not wait for them. A process that exits, forks or
    multiplies while they are being made does so as without the thread."""
    out = subprocess.run([sys.executable, "-c", KERNELS_AT_LOAD, then, after_s], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["tensorweave-onednn-kernels"] + ([] if then == "exit" else ["True"]), out.stderr
    onednn._kernels_made.join(60)
    assert not onednn._kernels_made.is_alive()


def test_tensorweave_onednn_0_turns_it_off():
    env = dict(os.environ, TENSORWEAVE_ONEDNN="0")
    out = subprocess.run([sys.executable, "-c", "from tensorweave.ops import onednn; print(onednn.AVAILABLE)"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.stdout.strip() == "False", out.stderr


@needs_onednn
def test_bias_add_and_relu_grad_are_exactly_tf_s_nan_inf_and_subnormals_included():
    x = rng.randn(64, 24, 24, 8).astype(np.float32)
    b = rng.randn(8).astype(np.float32)
    x.flat[:3] = [np.nan, np.inf, -np.inf]
    np.testing.assert_array_equal(onednn.bias_add(x, b), x + b)
    y = np.maximum(rng.randn(*x.shape).astype(np.float32), 0)
    g = rng.randn(*x.shape).astype(np.float32)
    y.flat[:8] = [0, 0, 1, np.nan, np.inf, 3, 1e-45, 0]     # 1e-45: a subnormal, still > 0
    g.flat[:8] = [np.nan, np.inf, np.nan, 1, 1, -np.inf, 2, -np.inf]
    with np.errstate(invalid="ignore"):
        want = g * (y > 0)                                   # TF's multiply: NaN g at y <= 0 stays NaN
    np.testing.assert_array_equal(onednn.relu_grad(g, y), want)
    assert onednn.bias_add(x[:1, :2], b) is None             # small: numpy's
    assert onednn.relu_grad(g, y.astype(np.float64)) is None


@needs_onednn
@pytest.mark.parametrize("ci,relu", [(1, True), (16, True), (16, False)])
def test_fused_convolution_gives_conv_bias_add_and_relu_bits_and_steps_aside_for_nan_or_overflow(ci, relu):
    g, oh, ow = geometry(8, 8, 3, 1, 1, "SAME")
    x = rng.randn(32, 8, 8, ci).astype(np.float32)
    w = rng.randn(3, 3, ci, 16).astype(np.float32)
    b = rng.randn(16).astype(np.float32)
    want = onednn.conv2d(x, w, g, oh, ow) + b
    if relu:
        want = np.maximum(want, np.float32(0))
    got = onednn.conv2d_bias(x, w, b, g, oh, ow, relu)
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
    for bad in (np.nan, np.inf, 3e38):   # the post-op ReLU would make a NaN (or inf - inf) 0
        x[1, 2, 3, 0] = bad
        assert onednn.conv2d_bias(x, w, b, g, oh, ow, relu) is None
    assert onednn.conv2d_bias(x[..., :1].astype(np.float64), w[:, :, :1], b, g, oh, ow, relu) is None


@needs_onednn
def test_max_pool_grad_reads_the_forward_argmax_only_for_that_output_of_that_input_while_it_lives():
    x = rng.randn(4, 8, 8, 16).astype(np.float32)
    g = rng.randn(4, 4, 4, 16).astype(np.float32)
    window = (2, 2, 2, 2, 0, 0)
    y = onednn.max_pool(x, 4, 4, *window)
    want = onednn.max_pool_grad(x, g, *window)
    np.testing.assert_array_equal(onednn.max_pool_grad(x, g, *window, y=y), want)
    other = -x   # another input: pooled again
    wider = (3, 3, 2, 2, 0, 0)   # another window, the same output shape (a hand-built graph's): pooled again
    np.testing.assert_array_equal(onednn.max_pool_grad(x, g, *wider, y=y), onednn.max_pool_grad(x, g, *wider))
    np.testing.assert_array_equal(onednn.max_pool_grad(other, g, *window, y=y), onednn.max_pool_grad(other, g, *window))
    x[...] = -x   # (values are never changed in place by a step; here it shows the recorded argmax is read)
    assert not np.array_equal(onednn.max_pool_grad(x, g, *window, y=y), onednn.max_pool_grad(x, g, *window))
    key = id(y)
    del y
    assert key not in onednn._ARGMAX


BLAS_THREADS = """
import numpy, threadpoolctl
import tensorweave.ops.onednn as onednn
assert onednn.AVAILABLE
print(max(lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"))
"""


@needs_onednn
@pytest.mark.parametrize("setting, expected", [(None, 1), ("2", 2)])
def test_numpys_blas_runs_on_the_calling_thread_unless_the_user_says(setting, expected):
    """With oneDNN's kernels loaded, numpy's BLAS threads (which spin after each product, holding
    the core oneDNN's team needs) are not used; OPENBLAS_NUM_THREADS set by the user stands."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    if setting is not None:
        env["OPENBLAS_NUM_THREADS"] = setting
    out = subprocess.run([sys.executable, "-c", BLAS_THREADS], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[-1]) == expected


@needs_onednn
@pytest.mark.parametrize("batch", [16, 64])   # (a small batch the team may split other than by parts: refused)
@pytest.mark.parametrize("with_input", [True, False])
def test_a_convolutions_gradient_calls_give_the_teams_bits(batch, with_input):
    """conv2d_grad_calls's calls, each on one thread, give conv2d_input_grad's and
    conv2d_filter_grad's bits (called here in turn; a plan runs them on threads at once)."""
    g, _, _ = geometry(12, 12, 3, 1, 1, "VALID")
    x = rng.randn(batch, 12, 12, 16).astype(np.float32)
    f = rng.randn(3, 3, 16, 32).astype(np.float32)
    dy = rng.randn(batch, 10, 10, 32).astype(np.float32)
    calls = onednn.conv2d_grad_calls(x, dy, f.shape, g, f if with_input else None)
    key = (x.shape, f.shape, dy.shape, g, False)
    kinds = ("filter", "input") if with_input else ("filter",)
    assert (calls is not None) == all(onednn._conv_serial_agrees(kind, key) for kind in kinds)
    if calls is None:   # (a team that splits otherwise than by parts of the batch: the team's kernels run)
        return
    assert len(calls) == 1 + with_input
    got = [call() for call in calls]
    assert got[-1].tobytes() == onednn.conv2d_filter_grad(x, dy, 3, 3, g).tobytes()
    if with_input:
        assert got[0].tobytes() == onednn.conv2d_input_grad(x.shape, f, dy, g).tobytes()


@needs_onednn
def test_convolution_gradient_calls_refuse_an_images_gradient_and_other_dtypes():
    g, _, _ = geometry(12, 12, 3, 1, 1, "VALID")
    dy = rng.randn(2, 10, 10, 8).astype(np.float32)
    image, f3 = rng.randn(2, 12, 12, 3).astype(np.float32), rng.randn(3, 3, 3, 8).astype(np.float32)
    assert onednn.conv2d_grad_calls(image, dy, f3.shape, g, f3) is None   # (numpy's col2im is faster there)
    assert onednn.conv2d_grad_calls(rng.randn(2, 12, 12, 16), dy, (3, 3, 16, 8), g) is None


@needs_onednn
@pytest.mark.parametrize("n,ci", [(32, 1), (33, 16)])   # (an odd batch: the first half the larger)
def test_fused_convolution_by_halves_of_the_batch_gives_the_whole_bits(n, ci):
    """With run_calls, the fused forward runs as two calls, a half of the batch each."""
    g, oh, ow = geometry(8, 8, 3, 1, 1, "SAME")
    x = rng.randn(n, 8, 8, ci).astype(np.float32)
    w = rng.randn(3, 3, ci, 16).astype(np.float32)
    b = rng.randn(16).astype(np.float32)
    made = []

    def run_calls(calls):   # (in turn; intra_op.run_calls makes them at once)
        made.append(len(calls))
        return [call() for call in calls]
    got = onednn.conv2d_bias(x, w, b, g, oh, ow, True, run_calls)
    assert got.tobytes() == onednn.conv2d_bias(x, w, b, g, oh, ow, True).tobytes()
    halves_agree = onednn._SERIAL_BITS[("halves", "bias_relu", (x.shape, w.shape, got.shape, g, False))]
    assert made == ([2] if halves_agree else [])   # (the probe found the halves' bits, or they are not used)
    x[0, 0, 0, 0] = np.nan   # (steps aside as without halves)
    assert onednn.conv2d_bias(x, w, b, g, oh, ow, True, run_calls) is None and len(made) <= 1


@needs_onednn
def test_fused_convolution_of_a_large_input_finds_a_nan_or_huge_value_in_either_half():
    g, oh, ow = geometry(64, 64, 3, 1, 1, "SAME")
    x = rng.rand(16, 64, 64, 16).astype(np.float32)   # (2^20 elements: their extent on two threads)
    w = (rng.randn(3, 3, 16, 8) * 0.1).astype(np.float32)
    b = rng.randn(8).astype(np.float32)
    assert onednn.conv2d_bias(x, w, b, g, oh, ow, True, intra_op.run_calls) is not None
    for where, bad in (((0, 1, 2, 3), np.nan), ((15, 60, 61, 2), -3e38), ((9, 0, 0, 0), np.inf)):
        x[where] = bad
        assert onednn.conv2d_bias(x, w, b, g, oh, ow, True, intra_op.run_calls) is None, bad
        x[where] = 0.5


@needs_onednn
def test_a_thread_with_one_core_s_share_makes_no_team_for_a_small_product(monkeypatch):
    """A thread of a parallel step or a pipelined loop's side part (intra_op.cap_parts(1)) runs a
    product below _GEMM_SERIAL_MAX on itself, the calling thread's bits, and never probes the team:
    a second thread's team is a second set of OpenMP threads, and once those outnumber the cores
    GNU OpenMP stops the spin that keeps the first thread's team quick."""
    monkeypatch.setattr(onednn, "_GEMM_TEAM_MIN", 1 << 15)
    monkeypatch.setattr(onednn, "_SERIAL_BITS", {})
    monkeypatch.setattr(onednn, "_cores_taken", lambda team: False)
    a, b = rng.randn(64, 512).astype(np.float32), rng.randn(512, 64).astype(np.float32)
    got = []

    def capped():
        intra_op.cap_parts(1)
        got.append(onednn.matmul(a, b, False, False))
    thread = threading.Thread(target=capped)
    thread.start()
    thread.join()
    assert onednn._SERIAL_BITS == {}
    np.testing.assert_array_equal(got[0], onednn._sgemm((b"N", b"N", 64, 64, 512, 512, 64), a, b, True))


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"), reason="no /proc/loadavg")
@needs_onednn
def test_the_last_team_s_spinning_threads_leave_their_cores_free_for_the_next(monkeypatch, tmp_path):
    """For a moment after a team's product its idle threads spin (GOMP_SPINCOUNT), and count as
    running tasks in /proc/loadavg: they are the next team's, not another task's."""
    loadavg = tmp_path / "loadavg"
    loadavg.write_bytes(b"0.50 0.40 0.30 2/180 4242\n")   # (this thread and one more running)
    fd = os.open(loadavg, os.O_RDONLY)
    monkeypatch.setattr(onednn, "_loadavg", fd)
    monkeypatch.setattr(onednn, "_CPUS", 2)
    try:
        monkeypatch.setattr(onednn, "_team_spins", [0.0])
        a, b = rng.randn(64, 512).astype(np.float32), rng.randn(512, 64).astype(np.float32)
        onednn._sgemm((b"N", b"N", 64, 64, 512, 512, 64), a, b, True)
        assert onednn._cores_taken(2)   # another task runs
        onednn._sgemm((b"N", b"N", 64, 64, 512, 512, 64), a, b, False)
        assert not onednn._cores_taken(2)   # the one that runs is the team's own thread, spinning
        onednn._team_spins[0] = time.perf_counter() - 1.0   # (its spin long over)
        assert onednn._cores_taken(2)
    finally:
        os.close(fd)


@needs_onednn
def test_gnu_openmp_spins_a_moment_unless_the_user_chose_a_wait_policy():
    code = "import os, tensorweave.ops.onednn; print(os.environ.get('GOMP_SPINCOUNT'), os.environ['OMP_WAIT_POLICY'])"
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    default = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert default.stdout.split() == [str(onednn._TEAM_SPIN), "PASSIVE"]
    chosen = subprocess.run([sys.executable, "-c", code], env={**env, "OMP_WAIT_POLICY": "ACTIVE"},
                            capture_output=True, text=True, check=True)
    assert chosen.stdout.split() == ["None", "ACTIVE"]
