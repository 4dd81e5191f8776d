"""`import tensorweave as tf` keeps every public name it has ever exported: a refactor that moves
code must not drop one. The recorded list grows with deliberate additions
(tests/unit/fixtures/record_public_api.py rewrites it)."""
from __future__ import annotations

import json
import os

import pytest

from fixtures.record_public_api import NAMESPACES, public_names

_RECORDED = json.load(open(os.path.join(os.path.dirname(__file__), "fixtures", "public_api.json")))


@pytest.mark.parametrize("path", NAMESPACES)
def test_namespace_keeps_recorded_names(path):
    missing = sorted(set(_RECORDED[path or "tf"]) - set(public_names(path)))
    assert not missing, f"tf.{path or ''} lost public names: {missing}"


def test_every_namespace_is_recorded():
    assert sorted(_RECORDED) == sorted(p or "tf" for p in NAMESPACES)
