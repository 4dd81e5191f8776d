"""A collective job's large arrays in shared memory, where the other members of an all-reduce on
this host read them in place (ops/collective_ops.py): numpy's allocation policy over one memfd of
this process's (_arena.c), set by the worker around each step it runs for a task of a collective
job (a cluster without ps tasks: its variables, gradients and packs then all come from here).

Reading a peer's input through cross-memory attach (shm.read_peer) pins and copies each page, a
third of memcpy's speed here; a peer's arena mapped once is read at memory speed
(docs/PERFORMANCE.md, wave 21). A member maps another's arena through /proc/<pid>/fd/<fd>, which
the kernel allows where it allows cross-memory attach (the same ptrace rule), read-only.

Arrays of at least TENSORWEAVE_ARENA_MIN_BYTES (shm.MIN_BYTES) take it, up to
TENSORWEAVE_ARENA_BYTES in all (shm.POOL_BYTES; 0: off); past that, and without the compiled
module (setup.py builds it where there is a C compiler), numpy allocates as always. A freed
block stays the process's, for the next array it fits (a training step asks for the same sizes
every step), as a caching allocator's memory does: a task holds at most the arena's size so.
A forked child has no arena (MADV_DONTFORK: not mapped there, so the parent's arrays in it are
not the child's to touch, where a shared mapping would have let its writes reach the parent);
its new arrays come from the C library.
"""
from __future__ import annotations

import mmap
import os
import threading
from typing import Optional

import numpy as np

from tensorweave.distributed import shm

try:
    from tensorweave.distributed import _arena
except ImportError:   # (not built: no C compiler where it was installed)
    _arena = None

BYTES = int(os.environ.get("TENSORWEAVE_ARENA_BYTES", "") or shm.POOL_BYTES)
MIN_BYTES = int(os.environ.get("TENSORWEAVE_ARENA_MIN_BYTES", "") or shm.MIN_BYTES)

_lock = threading.Lock()
_opened: Optional[tuple] = None   # (pid, memfd, the allocation policy), once opened
_peers: dict = {}                 # (pid, start time, fd) -> a read-only mapping of that member's arena


def policy() -> Optional[object]:
    """numpy's allocation policy over this process's arena (opened on first use), or None where
    there is none to be had (off, not built, no memfd)."""
    global _opened
    if _opened is None or _opened[0] != os.getpid():
        with _lock:
            if _opened is None or _opened[0] != os.getpid():
                parent = _opened is not None   # (a forked child: its parent's arena is not mapped here)
                fd = _arena.open(BYTES, MIN_BYTES) if _arena is not None and BYTES > 0 and not parent else -1
                _opened = (os.getpid(), fd, _arena.handler() if fd >= 0 else None)
    return _opened[2]


def use(policy_or_none) -> object:
    """Sets numpy's allocation policy for this thread (None: numpy's own); returns the previous."""
    return _arena.use(policy_or_none)


def ref(arr: np.ndarray) -> tuple:
    """(memfd, arena bytes, offset) of a C-contiguous array that lies in this process's arena,
    zeros for any other."""
    if _opened is None or _opened[2] is None or _opened[0] != os.getpid():
        return 0, 0, 0
    offset = _arena.where(arr.__array_interface__["data"][0])
    if offset < 0 or offset + arr.nbytes > BYTES:
        return 0, 0, 0
    return _opened[1], BYTES, offset


def peer_array(pid: int, ref_words, n: int, dtype) -> Optional[np.ndarray]:
    """The read-only array of `n` elements member process `pid` named by ref(), its arena mapped
    here once; None where it cannot be (then read it otherwise)."""
    fd, size, offset = (int(w) for w in ref_words)
    dtype = np.dtype(dtype)
    if size <= 0 or offset < 0 or offset + n * dtype.itemsize > size:
        return None
    key = (pid, shm._start_time(pid), fd)
    mm = _peers.get(key)
    if mm is None:
        try:
            f = os.open(f"/proc/{pid}/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            if os.fstat(f).st_size < size:
                return None
            mm = mmap.mmap(f, size, mmap.MAP_SHARED, mmap.PROT_READ)
        except OSError:
            return None
        finally:
            os.close(f)
        with _lock:
            for gone in [k for k in _peers if shm.gone(k[0])]:
                del _peers[gone]
            _peers[key] = mm
    return np.frombuffer(mm, dtype, count=n, offset=offset)
