"""GPU kernel tests (issue 25): each op's GPU kernel on CuPy arrays against its CPU kernel on numpy
arrays. They need CuPy (the extra `gpu`) and a CUDA GPU, and skip with the reason without them."""
from __future__ import annotations

import numpy as np
import pytest

from tensorweave.framework.graph_def import NodeDef
from tensorweave.ops import registry
from tensorweave.ops.helpers import cupy as _cupy
from tensorweave.runtime.devices import Gpu
from tensorweave.runtime.executor import KernelContext
from tensorweave.runtime.resources import ResourceManager


def _why_no_gpu():
    if _cupy is None:
        return "CuPy (the extra `gpu`) is not installed"
    try:
        count = _cupy.cuda.runtime.getDeviceCount()
    except _cupy.cuda.runtime.CUDARuntimeError as e:   # no driver, no device
        return f"CuPy finds no GPU: {e}"
    return None if count else "CuPy finds no GPU"


@pytest.fixture
def cupy():
    """The cupy module; skips the test when CuPy or a GPU is missing."""
    reason = _why_no_gpu()
    if reason:
        pytest.skip(reason)
    return _cupy


@pytest.fixture
def run_both(cupy):
    """`run_both(op_type, attrs, inputs, rtol, atol)` (below); skips without CuPy or a GPU."""
    return _run_both


def _run_both(op_type: str, attrs: dict, inputs: list, rtol: float = 1e-5, atol: float = 1e-6) -> tuple:
    """Runs `op_type`'s CPU kernel on `inputs` (numpy) and its GPU kernel, as the executor wraps it
    on GPU:0, on the same values (those at the op's host-memory positions in host memory, the rest
    on the device); asserts each output is where the op says (host or device) and equals the CPU
    one (dtype, shape, values within rtol and atol times the output's largest magnitude; NaN
    where the CPU has NaN). Returns the CPU outputs (numpy), always a tuple."""
    node = NodeDef("kernel_under_test", op_type, tuple(f"input{i}" for i in range(len(inputs))),
                   "/device:GPU:0", dict(attrs))
    inputs = [np.asarray(v) for v in inputs]
    want = registry.kernel_for(op_type, "CPU")(node, KernelContext(ResourceManager()))(*inputs)
    want = want if isinstance(want, tuple) else (want,)
    host_in, host_out = registry.host_memory(op_type, len(inputs), len(want))
    gpu = Gpu(0, 0)
    kernel = gpu.kernel(registry.kernel_for(op_type, "GPU")(node, KernelContext(ResourceManager())), node, host_in,
                        host_out)
    got = kernel(*[v if i in host_in else gpu.to_device(v) for i, v in enumerate(inputs)])
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        if i in host_out:
            assert isinstance(g, (np.ndarray, np.generic)), f"{op_type} output {i}: {type(g)} is not in host memory"
        else:
            assert isinstance(g, _cupy.ndarray), f"{op_type} output {i}: {type(g)} is not in device memory"
            g = _cupy.asnumpy(g)
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape, f"{op_type} output {i}: {g.dtype}{g.shape} vs " \
                                                          f"{w.dtype}{w.shape}"
        if w.dtype.kind in "fc":
            scale = max(1.0, float(np.nanmax(np.abs(w.astype(np.complex128 if w.dtype.kind == "c" else np.float64)),
                                             initial=0)))
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol * scale, equal_nan=True,
                                       err_msg=f"{op_type} output {i}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{op_type} output {i}")
    return want
