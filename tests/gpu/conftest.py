"""Tests that need CuPy and a real GPU: each skips, saying why, where either is missing."""
import pytest


@pytest.fixture
def cupy():
    """The cupy module, when it is installed and finds a GPU."""
    cp = pytest.importorskip("cupy", reason="the gpu extra (CuPy) is not installed")
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("CuPy finds no GPU")
    except cp.cuda.runtime.CUDARuntimeError as e:
        pytest.skip(f"CuPy finds no GPU: {e}")
    return cp
