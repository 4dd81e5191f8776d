"""Shared by the tests that need CuPy and a real GPU (docs: GPU kernels are checked against the
same kernels on numpy inputs). Without CuPy or without a GPU they skip, saying which."""
from __future__ import annotations

import numpy as np
import pytest

from tensorweave.framework.graph_def import NodeDef
from tensorweave.ops import registry
from tensorweave.ops.helpers import cupy as _cupy
from tensorweave.runtime import devices
from tensorweave.runtime.executor import KernelContext
from tensorweave.runtime.resources import ResourceManager


def _why_no_gpu():
    if _cupy is None:
        return "CuPy is not installed (the extra `gpu`)"
    try:
        count = _cupy.cuda.runtime.getDeviceCount()
    except _cupy.cuda.runtime.CUDARuntimeError as e:
        return f"CuPy finds no GPU: {e}"
    return None if count else "CuPy finds no GPU"


@pytest.fixture(scope="session")
def cupy():
    """The cupy module; skips the test without CuPy or a GPU."""
    reason = _why_no_gpu()
    if reason:
        pytest.skip(reason)
    return _cupy


def _kernel(op_type: str, attrs: dict):
    node = NodeDef(op_type.lower(), op_type, (), "", dict(attrs))
    return node, registry.kernel_for(op_type, "GPU")(node, KernelContext(ResourceManager()))


def _run_both(op_type: str, attrs: dict, inputs: list, rtol: float = 1e-5, atol: float = 1e-6):
    """op_type's GPU kernel run as the executor runs it on GPU 0 (device current, host outputs
    moved to the device) on CuPy copies of `inputs` (the op's host-memory inputs stay numpy),
    against the same kernel on the numpy `inputs`: each output on the device and equal within
    rtol/atol (atol scaled by the output's largest magnitude). -> the numpy outputs (a tuple)."""
    cp = _cupy
    host_in, host_out = registry.HOST_MEMORY.get(op_type, ((), ()))
    _, on_host = _kernel(op_type, attrs)
    want = on_host(*inputs)
    node, fn = _kernel(op_type, attrs)
    gpu_fn = devices.Gpu(0, 0).kernel(fn, node, host_in, host_out)
    got = gpu_fn(*[a if i in host_in or not isinstance(a, np.ndarray) else cp.asarray(a)
                   for i, a in enumerate(inputs)])
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        if i not in host_out:
            assert isinstance(g, cp.ndarray), f"{op_type} output {i} is a {type(g).__name__}, not in GPU memory"
        g = cp.asnumpy(g) if isinstance(g, cp.ndarray) else np.asarray(g)
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (op_type, i, g.shape, w.shape, g.dtype, w.dtype)
        scale = max(1.0, float(np.abs(w.astype(np.float64)).max(initial=0))) if w.dtype.kind in "fc" else 1.0
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol * scale, err_msg=f"{op_type} output {i}")
    return want


@pytest.fixture
def run_both(cupy):
    """run_both(op_type, attrs, inputs, rtol=1e-5, atol=1e-6): an op's GPU kernel on CuPy inputs
    against the same kernel on numpy inputs (above); skips without CuPy or a GPU."""
    return _run_both
