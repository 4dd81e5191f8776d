"""ops/cudnn.py's way back to im2col, without a GPU: a cuDNN that cannot make a handle, or that
refuses a convolution, gives None (the caller runs im2col's kernel), and a refused convolution is
not built again each step. (tests/gpu/test_cudnn.py runs cuDNN itself on a GPU.)"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tensorweave.ops import cudnn
from tensorweave.ops.nn.conv_kernels import Geometry


class _Frontend:
    """Stands for the `cudnn` module: its handle and its graph builder fail as told."""
    data_type = SimpleNamespace(HALF="half", FLOAT="float", DOUBLE="double")

    def __init__(self, handle_error=None):
        self.handle_error, self.graphs = handle_error, 0

    def create_handle(self):
        if self.handle_error:
            raise self.handle_error
        return "handle"

    def pygraph(self, **kwargs):
        self.graphs += 1
        raise RuntimeError("cudnnGraphNotSupportedError: no engine for this convolution")


@pytest.fixture
def frontend(monkeypatch):
    """Installs a _Frontend (and numpy arrays standing for CuPy's) into ops/cudnn; returns a setter."""
    monkeypatch.setattr(cudnn, "cupy", SimpleNamespace(ndarray=np.ndarray, cuda=SimpleNamespace(
        Device=lambda: SimpleNamespace(id=0))))
    monkeypatch.setattr(cudnn, "_devices", {})

    def install(fake):
        monkeypatch.setattr(cudnn, "_api", fake)
        return fake
    return install


X, W, G = np.ones((1, 5, 5, 2), np.float32), np.ones((3, 3, 2, 4), np.float32), Geometry(1, 1, 1, 1, 1, 1, 1, 1)


def test_no_handle_means_im2col(frontend):
    frontend(_Frontend(RuntimeError("CUDNN_STATUS_NOT_INITIALIZED")))
    assert cudnn.conv2d(X, W, G, 5, 5) is None
    assert cudnn.conv2d_filter_grad(X, np.ones((1, 5, 5, 4), np.float32), 3, 3, G) is None


def test_a_refused_convolution_means_im2col_and_is_not_built_again(frontend):
    fake = frontend(_Frontend())
    for _ in range(3):
        assert cudnn.conv2d(X, W, G, 5, 5) is None
    assert fake.graphs == 1
    assert cudnn.conv2d_input_grad(X.shape, W, np.ones((1, 5, 5, 4), np.float32), G) is None
    assert fake.graphs == 2


def test_without_the_frontend_nothing_is_asked(frontend):
    frontend(False)   # (api() found no frontend)
    assert cudnn.api() is None and cudnn.conv2d(X, W, G, 5, 5) is None
