"""Shared-memory buffers for same-host tensors (distributed/shm.py): what a receiver gets is the
sender's data, read-only; a buffer is never reused while a received array over it lives; bad
references are refused by name; buffers of dead receivers are taken back; a killed sender's
files are deleted by the next sweep."""
from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading

import msgpack
import numpy as np
import pytest

from tensorweave.distributed import shm, wire
from tensorweave.framework import errors

pytestmark = pytest.mark.skipif(shm.directory() is None, reason="no private shared-memory directory here")
MIB = 1 << 20


@pytest.fixture
def pool():
    p = shm.Pool(limit_bytes=64 * MIB)
    yield p
    p.close()


def test_a_received_array_is_the_sent_data_read_only(pool):
    x = np.arange(MIB // 4, dtype=np.float32).reshape(512, -1)
    name, gen = pool.put(x)
    y = shm.Attached().take(name, gen, x.dtype, x.shape, x.nbytes)
    np.testing.assert_array_equal(y, x)
    assert y.dtype == np.float32 and y.shape == (512, 512) and not y.flags.writeable
    with pytest.raises(ValueError):
        y[0, 0] = 1


def test_a_buffer_is_not_reused_while_a_received_array_lives(pool):
    recv = shm.Attached()
    a = np.full(MIB // 4, 1.0, np.float32)
    name, gen = pool.put(a)
    held = recv.take(name, gen, a.dtype, a.shape, a.nbytes)[10:20]   # a view keeps it too
    name2, _ = pool.put(np.full(MIB // 4, 2.0, np.float32))
    assert name2 != name
    np.testing.assert_array_equal(held, 1.0)
    del held
    gc.collect()
    name3, gen3 = pool.put(np.full(MIB // 4, 3.0, np.float32))
    assert name3 == name and gen3 == gen + 1
    # the old generation is refused now: a stale reference never reads the new data
    with pytest.raises(shm.ShmError, match="generation"):
        recv.take(name, gen, a.dtype, a.shape, a.nbytes)


@pytest.mark.parametrize("name, match", [("../etc/passwd", "bad shared buffer name"), ("1-2-3/..", "bad"),
                                         ("999999-1-1", "cannot be opened")])
def test_bad_references_are_refused_by_name(name, match):
    with pytest.raises(shm.ShmError, match=match):
        shm.Attached().take(name, 1, np.dtype(np.float32), (4,), 16)


def test_a_tensor_larger_than_its_buffer_is_refused(pool):
    name, gen = pool.put(np.ones(MIB // 4, np.float32))
    with pytest.raises(shm.ShmError, match="holds"):
        shm.Attached().take(name, gen, np.dtype(np.float32), (MIB,), 4 * MIB)


def test_the_pool_stays_within_its_limit_and_takes_back_a_dead_receivers_buffers():
    p = shm.Pool(limit_bytes=2 * MIB)
    try:
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        assert p.put(np.ones(MIB // 4, np.float32), peer_pid=dead.pid) is not None
        assert p.put(np.ones(MIB // 4, np.float32), peer_pid=os.getpid()) is not None
        assert p.bytes <= 2 * MIB
        # full: the dead receiver's buffer is taken back, the live one's is not
        name, _ = p.put(np.ones(MIB // 4, np.float32), peer_pid=os.getpid())
        assert p.bytes <= 2 * MIB
        assert p.put(np.ones(MIB // 4, np.float32), peer_pid=os.getpid()) is None   # travels in the socket
        p.release(name, int(p._by_name[name].head[1]))   # a message that never left gives its buffer back
        assert p.put(np.ones(MIB // 4, np.float32)) is not None
    finally:
        p.close()


def test_a_killed_senders_files_are_deleted_by_the_next_sweep():
    code = ("import numpy as np, sys, time\n"
            "from tensorweave.distributed import shm\n"
            "p = shm.pool()\n"
            "print(p.put(np.ones(1 << 18, np.float32))[0], flush=True)\n"
            "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    try:
        name = proc.stdout.readline().strip()
        path = os.path.join(shm.directory(), name)
        assert os.path.exists(path)
        y = shm.Attached().take(name, 1, np.dtype(np.float32), (1 << 18,), 1 << 20)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        assert shm.sweep() >= 1 and not os.path.exists(path)
        np.testing.assert_array_equal(y, 1.0)   # a mapping already held stays valid
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_message_carries_large_tensors_in_shared_memory_and_small_ones_in_frames(pool):
    big, small = np.arange(MIB, dtype=np.float32).reshape(1024, 1024), np.arange(10, dtype=np.int64)
    frames, leases, shared = wire.encode_shared({"a": [big, small], "s": "x"}, pool, os.getpid())
    assert len(leases) == 1 and shared == big.nbytes
    assert sum(len(f) for f in frames) < 1024   # only headers cross the socket
    out = wire.decode(frames, shm.Attached())
    np.testing.assert_array_equal(out["a"][0], big)
    np.testing.assert_array_equal(out["a"][1], small)
    assert out["a"][0].dtype == np.float32 and not out["a"][0].flags.writeable and out["s"] == "x"
    # the same message over a connection that takes no shared memory (tcp) is malformed
    with pytest.raises(wire.WireError, match="shared memory arrived on a connection that takes none"):
        wire.decode(frames)


def test_a_message_that_cannot_be_encoded_gives_its_buffers_back(pool):
    big = np.ones(MIB // 4, np.float32)
    with pytest.raises(errors.InvalidArgumentError, match="Cannot encode"):
        wire.encode_shared([big, object()], pool)
    name, gen = pool.put(big)
    assert gen == 2   # the first use's buffer was free again: reused, one generation on


@pytest.mark.parametrize("desc, match", [
    (["float32", [4], "1-2-3"], "must be"), (["resource", [4], "1-2-3", 1], "unknown dtype"),
    (["float32", [-1], "1-2-3", 1], "non-negative"), (["float32", [4], "1-2-3", -5], "generation"),
    (["float32", [4], "../../x", 1], "bad shared buffer name"), (["float32", [4], "1-2-3", 1, -8], "offset"),
    (["float32", [4], "1-2-3", 1, 0, 0], "must be")])
def test_malformed_shared_tensor_references_are_refused(desc, match):
    head = msgpack.packb([msgpack.ExtType(wire.SHM_EXT, msgpack.packb(desc))])
    with pytest.raises(wire.WireError, match=match):
        wire.decode([head], shm.Attached())


def test_the_receiver_may_own_a_received_array_once_without_a_copy(pool):
    x = np.arange(MIB // 4, dtype=np.float32)
    name, gen = pool.put(x)
    y = shm.Attached().take(name, gen, x.dtype, x.shape, x.nbytes)
    assert shm.owned(y[1:]) is None   # only the whole array
    mine = shm.owned(y)
    assert mine is not None and mine.flags.writeable and np.shares_memory(mine, y)
    assert shm.owned(y) is None   # once: a second fetch of the same value gets a copy
    del y
    gc.collect()
    assert pool._by_name[name].head[0] == 1   # still in use while the owned array lives
    mine[0] = 7.0
    del mine
    gc.collect()
    assert pool._by_name[name].head[0] == 0
    assert shm.owned(np.ones(3)) is None


def test_a_local_array_is_the_next_one_once_nothing_holds_it(pool):
    a = pool.local(MIB // 4, np.float32)
    assert a.flags.writeable and a.dtype == np.float32 and a.shape == (MIB // 4,)
    addr, part = a.__array_interface__["data"][0], a[5:9]
    del a
    b = pool.local(MIB // 4, np.float32)   # a view of the first still holds it
    assert b.__array_interface__["data"][0] != addr
    del part, b
    gc.collect()
    c = pool.local(MIB // 4, np.float32)
    assert c.__array_interface__["data"][0] == addr   # its pages already mapped
    assert pool.local(10, np.float32) is None   # (below shm.MIN_BYTES: numpy's memory serves)


def test_a_scratch_array_sent_whole_becomes_the_receiver_s_without_a_copy(pool):
    s = pool.local(MIB // 4, np.float32, hand_over=True)
    s[...] = np.arange(MIB // 4)
    name, gen = pool.put(s)
    buf = pool._by_name[name]
    assert buf.addr == s.__array_interface__["data"][0]   # the scratch buffer itself went
    got = shm.Attached().take(name, gen, s.dtype, s.shape, s.nbytes)
    np.testing.assert_array_equal(got, np.arange(MIB // 4))
    del s
    gc.collect()
    assert buf.head[0] == 1   # the sender's array gone, the receiver's holds it
    del got
    gc.collect()
    assert buf.head[0] == 0


def test_a_lent_array_is_read_in_place_by_its_receivers_until_lending_ends(pool):
    out = pool.local(MIB // 4, np.float32)
    out[...] = 1.0
    assert pool.lend(out, True) and not pool.lend(out[1:], True)   # (only a whole local array lends)
    frames, leases, shared = wire.encode_shared([out[1024:1024 + MIB // 8], out[MIB // 8:]], pool, os.getpid())
    assert leases == [] and shared == out.nbytes   # references, no buffers taken
    recv = shm.Attached()
    first, second = wire.decode(frames, recv)
    third = wire.decode(frames, recv)[0]   # (any number of receivers)
    out[1024] = 5.0
    assert first[0] == 5.0 and third[0] == 5.0 and second.shape == (MIB // 8,)   # the same memory
    assert not first.flags.writeable
    del first, second, third
    gc.collect()
    assert pool._by_name[pool._locals[out.__array_interface__["data"][0]].name].head[0] == 1   # still the owner's
    pool.lend(out, False)
    name, gen = pool.put(out[:MIB // 8])   # not lent: copied into a buffer of its own
    assert pool._by_name[name].addr != out.__array_interface__["data"][0]


def test_a_group_output_is_shared_and_reused_only_once_no_member_holds_it(pool):
    ref, first = pool.group_output(MIB, 2)   # (the first member's)
    second = shm.Attached().group_output(ref, MIB, 2, 1)   # (the second member's, mapped by name)
    first[:4] = [1, 2, 3, 4]
    assert list(second[:4]) == [1, 2, 3, 4] and second.size == MIB
    del first
    again, other = pool.group_output(MIB, 2)   # (the second member still holds the first buffer)
    assert again != ref
    del second, other
    gc.collect()
    assert pool.group_output(MIB, 2)[0] in (ref, again)   # (both free: one is reused, none made)
    assert pool.bytes < 3 * MIB
    # A member killed while it held the buffer holds it no more.
    ref, first = pool.group_output(MIB, 2)
    child = subprocess.run([sys.executable, "-c", "import os, sys\nfrom tensorweave.distributed import shm\n"
                            f"held = shm.Attached().group_output({list(ref)}, {MIB}, 2, 1)\nos._exit(0)"],
                           env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert child.returncode == 0
    del first
    assert pool.group_output(MIB, 2)[0] == ref


def test_members_meet_at_a_board_the_last_to_post_wakes_the_others_and_its_file_goes_with_drop(pool):
    if shm._futex() is None:
        pytest.skip("no futex here")
    ref, first = pool.board(3)
    others = [shm.attached().board(ref, 3, rank) for rank in (1, 2)]
    first.post(0, 1, [7, 8])
    others[0].post(0, 1)
    assert others[1].behind(0, 1) == 2 and first.behind(1, 1) == 0   # (member 2 has not posted; nobody's word 1)
    met: list = []

    def waiter():   # (as collectives.Link.meet waits: look, then sleep while the bell is as it was)
        while True:
            rung = int(first.bell[0])
            if first.behind(0, 1) is None:
                met.append(first.slots[:, 2:4].tolist())
                return
            first.wait(rung, 30.0)
    thread = threading.Thread(target=waiter)
    thread.start()
    rung = int(first.bell[0])
    others[1].post(0, 1)   # the last: it rings
    assert int(first.bell[0]) != rung
    thread.join(60)
    assert met == [[[7, 8], [0, 0], [0, 0]]]   # every slot as its member wrote it
    name = "-".join(map(str, ref))
    assert os.path.exists(os.path.join(pool.dir, name))
    pool.drop_board(ref)
    assert not os.path.exists(os.path.join(pool.dir, name))
    others[0].post(1, 1)   # (the mappings stay valid)
    with pytest.raises(shm.ShmError):
        shm.attached().board((1, 2, 3), 3, 1)
