"""distributed/arena.py and _arena.c: numpy's large arrays in a shared memfd while its policy is
set, reused when freed, mapped read-only by another process of this user."""
from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from tensorweave.distributed import arena

pytestmark = pytest.mark.skipif(arena.policy() is None, reason="the arena module is not built here")


@pytest.fixture
def in_arena():
    previous = arena.use(arena.policy())
    yield
    arena.use(previous)


def test_large_arrays_come_from_the_arena_small_ones_and_other_threads_from_numpy(in_arena):
    big = np.ones(1 << 20, np.float32)
    small = np.ones(16, np.float32)
    assert arena.ref(big)[2] >= 0 and arena.ref(big)[1] == arena.BYTES and arena.ref(big)[0] > 0
    assert arena.ref(small) == (0, 0, 0)
    other = []
    thread = threading.Thread(target=lambda: other.append(arena.ref(np.ones(1 << 20, np.float32))))
    thread.start()
    thread.join()
    assert other == [(0, 0, 0)]   # (the policy is this thread's)
    np.testing.assert_array_equal(big, 1.0)


def test_a_freed_block_is_reused_and_zeros_from_it_are_zero(in_arena):
    a = np.full(1 << 20, 7.0, np.float32)
    where = arena.ref(a)
    del a
    b = np.zeros(1 << 20, np.float32)   # (calloc of a used block)
    assert arena.ref(b) == where
    assert not b.any()
    b.resize(1 << 21, refcheck=False)   # (realloc past the block: a new one, the values kept)
    assert arena.ref(b) != where and arena.ref(b)[0] > 0
    assert not b.any()


def test_another_process_reads_an_array_where_it_lies(in_arena):
    a = np.arange(1 << 18, dtype=np.float32)
    ref = arena.ref(a)
    code = ("import sys, numpy as np; from tensorweave.distributed import arena; "
            "v = arena.peer_array(int(sys.argv[1]), [int(x) for x in sys.argv[2:5]], 1 << 18, np.float32); "
            "print(v is not None and bool((v == np.arange(1 << 18, dtype=np.float32)).all()), v is not None and "
            "v.flags.writeable)")
    out = subprocess.run([sys.executable, "-c", code, str(os.getpid()), *map(str, ref)], capture_output=True,
                         text=True, timeout=120)
    assert out.stdout.split() == ["True", "False"], out.stderr
    assert arena.peer_array(os.getpid(), (ref[0], ref[1], arena.BYTES), 4, np.float32) is None   # (past its end)
    assert arena.peer_array(os.getpid(), (99999, ref[1], 0), 4, np.float32) is None   # (no such descriptor)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_allocates_from_the_c_library(in_arena):
    pid = os.fork()
    if pid == 0:
        try:
            child = np.ones(1 << 20, np.float32)
            os._exit(0 if arena.ref(child) == (0, 0, 0) and child.sum() == 1 << 20 else 1)
        except BaseException:   # noqa: BLE001 - a forked child must never return into pytest
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
