"""docs/COMPATIBILITY.md is generated from the tf_export declarations (tools/compat_report.py) and must be
current: a change that adds or removes a public TF name regenerates it."""
from __future__ import annotations

import fnmatch
import json

from repo_tools import load_tool


def test_compatibility_doc_is_current():
    report = load_tool("compat_report")
    with open(report.OUTPUT) as f:
        current = f.read()
    assert current == report.render(), "docs/COMPATIBILITY.md is stale: run python tools/compat_report.py"


def test_every_reason_names_tf_names():
    report = load_tool("compat_report")
    with open(report.FIXTURE) as f:
        namespaces = json.load(f)["namespaces"]
    for ns in report.NAMESPACE_REASONS:
        assert ns in namespaces, ns
    for ns, pattern, _ in report.NAME_REASONS:
        pool = [n for key, names in namespaces.items() if ns in ("*", key) for n in names]
        assert fnmatch.filter(pool, pattern), f"reason pattern {ns}:{pattern} matches no TF name"


def test_namespaces_this_issue_completes_have_nothing_unexplained_missing():
    report = load_tool("compat_report")
    with open(report.FIXTURE) as f:
        namespaces = json.load(f)["namespaces"]
    for ns in ("sparse", "random"):
        _, _, missing = report.classify(ns, namespaces[ns], report.public_names()[ns])
        assert not missing, f"tf.{ns} lacks {missing}"
