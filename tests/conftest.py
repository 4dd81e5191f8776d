"""Every test starts with a fresh default graph and no default session."""
from __future__ import annotations

import pytest

import tensorweave as tf


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def pytest_addoption(parser):
    parser.addoption("--long", action="store_true", default=False,
                     help="long runs of the tests that have one (tests/cluster/test_fuzz.py: a million messages)")
