"""The GPU kernel tests (issue 25): each op's GPU kernel run on CuPy arrays against the same op's
kernel on numpy arrays (helpers: kernel_check.py). They need CuPy (the extra `gpu`) and a GPU, and
skip saying which is missing; CI has neither."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def cupy():
    cp = pytest.importorskip("cupy", reason="the GPU kernel tests need CuPy (pip install tensorweave[gpu])")
    try:
        count = cp.cuda.runtime.getDeviceCount()
    except cp.cuda.runtime.CUDARuntimeError as e:
        pytest.skip(f"CuPy finds no GPU: {e}")
    if not count:
        pytest.skip("CuPy finds no GPU")
    return cp
