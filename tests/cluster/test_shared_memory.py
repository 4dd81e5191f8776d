"""Large tensors between processes of one host travel in shared memory (distributed/shm.py):
real server processes on loopback ports. A variable fetched and a tensor pushed arrive exactly,
through a buffer of the sender's pool (only headers cross the Unix socket); the user's fetched
array is writable and its own; a peer that starts after its client first looked for it is still
reached over its Unix socket; a killed server's buffer files are deleted by the next sweep."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed import shm

pytestmark = pytest.mark.skipif(shm.directory() is None, reason="no private shared-memory directory here")
N = 1 << 20   # 4 MiB of float32


def _files_of(pid: int) -> list:
    return [n for n in os.listdir(shm.directory()) if n.startswith(f"{pid}-")]


def test_a_large_fetch_and_feed_travel_in_shared_memory_and_a_killed_servers_files_are_swept(start_cluster):
    c = start_cluster({"worker": 1})
    pid = c.procs[("worker", 0)].pid
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:0"):
            v = tf.Variable(tf.range(N, dtype=tf.float32), name="big")
            x = tf.placeholder(tf.float32, [N])
            doubled = x * 2.0
        with tf.Session(c.target("worker")) as sess:
            sess.run(v.initializer)
            for _ in range(3):   # (the buffer is reused once each fetched array is gone)
                got = sess.run(v)
                np.testing.assert_array_equal(got, np.arange(N, dtype=np.float32))
                got[0] = -1.0   # the user's own array
                assert not got.flags.owndata   # handed over from shared memory, not copied
                del got
            files = _files_of(pid)
            assert files, "the server sent its 4 MiB reply without shared memory"
            assert len(files) <= 2
            feed = np.random.RandomState(0).rand(N).astype(np.float32)
            np.testing.assert_array_equal(sess.run(doubled, {x: feed}), feed * 2)   # the request's way too
            assert _files_of(os.getpid())
            np.testing.assert_array_equal(sess.run(v)[:3], [0, 1, 2])   # the stored value never changed
    c.kill("worker", 0)
    shm.sweep()
    assert not _files_of(pid)
