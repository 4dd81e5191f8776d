"""Fixtures shared by the unit tests (tests/conftest.py also resets the default graph)."""
from __future__ import annotations

import pytest

import tensorweave as tf
from tensorweave.framework import limits
from tensorweave.ops import onednn


@pytest.fixture
def graph():
    """A fresh graph, the default graph while the test runs. A module whose every test needs
    one says `pytestmark = pytest.mark.usefixtures("graph")`."""
    with tf.Graph().as_default() as g:
        yield g


@pytest.fixture
def sess():
    """A session on a fresh graph that is the default graph while the test runs."""
    g = tf.Graph()
    with g.as_default(), tf.Session(graph=g) as s:
        yield s


@pytest.fixture
def limit():
    """limit(LIMIT, value): an override undone after the test."""
    saved = []

    def set_(lim, v):
        saved.append((lim, limits.override(lim, v)))
    yield set_
    for lim, old in reversed(saved):
        limits.override(lim, old)


@pytest.fixture
def traced_peak():
    """traced_peak(run): the most memory numpy and Python held at once while run() ran, in bytes
    above what was held before (tracemalloc)."""
    import tracemalloc

    def peak(run) -> int:
        tracemalloc.start()
        try:
            run()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    return peak


@pytest.fixture(params=["onednn", "numpy"])
def kernels(request, monkeypatch):
    """Runs a test once with oneDNN's kernels (where installed) and once with the numpy kernels
    alone; a module whose ops have both says `pytestmark = pytest.mark.usefixtures("kernels")`."""
    if request.param == "numpy":
        monkeypatch.setattr(onednn, "AVAILABLE", False)
    elif not onednn.AVAILABLE:
        pytest.skip("oneDNN is not installed (pip install -e .[onednn])")
    return request.param
