"""Tests that need CuPy and a CUDA GPU (issue 25): each skips, with the reason, where either is
missing. The fixture `run_both` gives `run_both(op_type, attrs, inputs)`, which runs an op's GPU
kernel on CuPy arrays and its CPU kernel on numpy arrays and compares them."""
from __future__ import annotations

import numpy as np
import pytest

from tensorweave.framework.graph_def import NodeDef
from tensorweave.ops import registry
from tensorweave.ops.helpers import cupy as _cupy


def _no_gpu_reason():
    if _cupy is None:
        return "CuPy is not installed (tensorweave's GPUs are CuPy's)"
    try:
        count = _cupy.cuda.runtime.getDeviceCount()
    except _cupy.cuda.runtime.CUDARuntimeError as e:   # no driver, no device
        return f"CUDA finds no GPU: {e}"
    return None if count else "CUDA finds no GPU"


@pytest.fixture
def cupy():
    reason = _no_gpu_reason()
    if reason:
        pytest.skip(reason)
    return _cupy


@pytest.fixture
def run_both(cupy):
    return _run_both


def _run_both(op_type: str, attrs: dict, inputs: list, rtol: float = 1e-5, atol: float = 1e-6):
    """Runs `op_type`'s GPU kernel (registry.kernel_for(op, "GPU")) on `inputs` moved to the GPU
    (those its registration keeps in host memory stay numpy) and its CPU kernel on the numpy
    `inputs`; asserts each output the GPU kernel leaves in device memory is a CuPy array with the
    CPU's dtype and values. `attrs`: the NodeDef's attributes as plain data ("T": "float32").
    Returns the GPU outputs, as numpy arrays."""
    node = NodeDef(op_type.lower(), op_type, attr=dict(attrs))
    host_in, host_out = registry.HOST_MEMORY.get(op_type, ((), ()))
    cpu = registry.kernel_for(op_type, "CPU")(node, None)(*inputs)
    on_gpu = [v if i in host_in else _cupy.asarray(v) for i, v in enumerate(inputs)]
    with _cupy.cuda.Device(0):
        gpu = registry.kernel_for(op_type, "GPU")(node, None)(*on_gpu)
    several = isinstance(cpu, tuple)
    cpu, gpu = (cpu, gpu) if several else ((cpu,), (gpu,))
    assert len(gpu) == len(cpu), op_type
    out = []
    for i, (g, c) in enumerate(zip(gpu, cpu)):
        if i not in host_out:
            assert isinstance(g, _cupy.ndarray), f"{op_type} output {i} is a {type(g).__name__}, not in device memory"
            g = g.get()
        c = np.asarray(c)
        assert g.dtype == c.dtype, f"{op_type} output {i}: {g.dtype} on the GPU, {c.dtype} on the CPU"
        assert g.shape == c.shape, f"{op_type} output {i}: {g.shape} on the GPU, {c.shape} on the CPU"
        if c.dtype.kind in "biu":
            np.testing.assert_array_equal(g, c, err_msg=f"{op_type} output {i}")
        else:
            np.testing.assert_allclose(g, c, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{op_type} output {i}")
        out.append(g)
    return tuple(out) if several else out[0]
