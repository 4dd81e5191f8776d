"""Helpers of the GPU kernel tests: an op's kernel built for a device type, run on numpy inputs and
on the same inputs in GPU memory. (A module of its own rather than conftest.py: tests/unit has a
conftest module too, and `from conftest import` finds whichever was imported first.)"""
from __future__ import annotations

import numpy as np

from tensorweave.framework.graph_def import NodeDef
from tensorweave.ops import registry
from tensorweave.runtime.executor import KernelContext
from tensorweave.runtime.resources import ResourceManager


def build_kernel(op_type: str, attrs: dict, device_type: str, ctx: KernelContext = None):
    """The kernel callable of a node of `op_type` with `attrs` for `device_type` ("CPU", "GPU")."""
    node = NodeDef(op_type.lower(), op_type, (), "", dict(attrs))
    return registry.kernel_for(op_type, device_type)(node, ctx or KernelContext(ResourceManager()))


def on_gpu(cp, op_type: str, inputs: list) -> list:
    """`inputs` as the GPU kernel of `op_type` gets them: in device memory, but for its host inputs."""
    host_in = registry.HOST_MEMORY.get(op_type, ((), ()))[0]
    return [v if i in host_in or not isinstance(v, (np.ndarray, np.generic)) else cp.asarray(v)
            for i, v in enumerate(inputs)]


def run_both(cp, op_type: str, attrs: dict, inputs: list, rtol: float = 1e-6, atol: float = 0.0) -> tuple:
    """Runs `op_type`'s CPU kernel on `inputs` (numpy) and its GPU kernel on them in device memory;
    asserts each output agrees, a device output is a CuPy array and a host output (HostMemory) is
    not. Returns (the numpy outputs, the GPU outputs copied back)."""
    want = build_kernel(op_type, attrs, "CPU")(*inputs)
    got = build_kernel(op_type, attrs, "GPU")(*on_gpu(cp, op_type, inputs))
    single = not isinstance(want, tuple)
    want, got = ((want,), (got,)) if single else (want, got)
    host_out = registry.HOST_MEMORY.get(op_type, ((), ()))[1]
    back = []
    for i, (w, g) in enumerate(zip(want, got)):
        if isinstance(w, (np.ndarray, np.generic)):
            assert isinstance(g, cp.ndarray) is (i not in host_out), (op_type, i, type(g))
            g = cp.asnumpy(g) if isinstance(g, cp.ndarray) else g
            assert g.dtype == w.dtype, (op_type, i, g.dtype, w.dtype)
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"{op_type} output {i}")
        back.append(g)
    return (want[0], back[0]) if single else (want, tuple(back))
