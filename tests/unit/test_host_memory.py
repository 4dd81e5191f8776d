"""runtime/host_memory.py: large kernel buffers a step frees are reused by the next step instead of
being unmapped and page-faulted in again (counted in minor page faults of a fresh process)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SCRIPT = """
import resource
import numpy as np
import tensorweave as tf
from tensorweave.runtime import host_memory
x = tf.placeholder(tf.float32, [1120, 10000])
y = tf.exp(x + 1.0)
value = np.zeros([1120, 10000], np.float32)
with tf.Session() as sess:
    sess.run(y, {x: value})
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(3):
        sess.run(y, {x: value})
    print(host_memory.KEPT, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _run(env_extra: dict) -> tuple:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    env.update(env_extra, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    kept, faults = out.stdout.split()
    return kept == "True", int(faults)


@pytest.mark.skipif(not hasattr(os, "confstr") or not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"),
                    reason="glibc's malloc")
def test_large_buffers_reused_across_steps():
    kept, faults = _run({})
    kept_off, faults_off = _run({"TENSORWEAVE_KEEP_HOST_BUFFERS": "0"})
    # three steps of two 45 MB results: thousands of pages (fewer where some are huge pages) each
    # time they are mapped anew, none when the heap keeps them
    assert kept and not kept_off
    assert faults_off > 500 and faults < 100, (faults, faults_off)
    kept, _ = _run({"MALLOC_MMAP_THRESHOLD_": "131072"})   # the user's own setting wins
    assert not kept
