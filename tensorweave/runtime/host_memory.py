"""The host allocator's policy for large kernel buffers (TF's BFC allocator keeps what a step freed
for the next step; glibc's malloc, under numpy, did not for the largest).

glibc serves an allocation above its mmap threshold (at most 32 MiB by its own adjustment) with a
fresh mmap and unmaps it on free, so every step's large tensors (an LSTM language model's
[1120, 10000] logits and their gradients, 45 MB each) were page-faulted in anew: a 45 MB add and
exp took 2.5x the time of the same work in reused memory (docs/PERFORMANCE.md, "tf.keras fit: the
IMDB LSTM"). Raising the mmap and trim thresholds keeps such buffers in the heap, reused from step
to step; a process keeps up to its peak of them, as TF's allocator does.

Applied once, when the runtime is imported; left alone where the user chose glibc's malloc
settings (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, GLIBC_TUNABLES) or set
TENSORWEAVE_KEEP_HOST_BUFFERS=0, and off glibc.
"""
from __future__ import annotations

import ctypes
import os

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3   # glibc's mallopt parameters (malloc.h)
LARGEST_KEPT = 1 << 28    # buffers up to 256 MiB come from the heap
TRIM_ABOVE = 1 << 29      # free heap memory above 512 MiB goes back to the system


def keep_large_host_buffers() -> bool:
    """Sets glibc's thresholds (see the module's docstring); whether they were set."""
    if os.environ.get("TENSORWEAVE_KEEP_HOST_BUFFERS", "1") == "0":
        return False
    if any(k in os.environ for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")) or \
            "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):
            return False
    except (AttributeError, ValueError, OSError):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, LARGEST_KEPT) and mallopt(_M_TRIM_THRESHOLD, TRIM_ABOVE))


KEPT = keep_large_host_buffers()
