"""tf.py_func across tasks: the function runs only in the process that built the graph. Pinned
to a task served by the client's own process (a tf.train.Server in the test) it runs; pinned to
a task of another process it fails with TF's error (no callable under its token there: nothing
about the function is ever sent), and that task keeps serving."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

LOCAL, REMOTE = "/job:local/task:0", "/job:local/task:1"


@pytest.fixture
def two_tasks(start_cluster, monkeypatch):
    monkeypatch.setenv("TENSORWEAVE_CONNECT_TIMEOUT_S", "5")
    c = start_cluster({"local": 2}, in_process=(("local", 0),))
    server = tf.train.Server(tf.train.ClusterSpec(c.spec), job_name="local", task_index=0)
    try:
        yield c, server
    finally:
        server.stop()


def test_py_func_runs_in_its_own_process_and_fails_on_a_remote_task(two_tasks):
    c, server = two_tasks
    with tf.Graph().as_default():
        with tf.device(REMOTE):
            x = tf.range(4, dtype=tf.float32) * 2.0
        with tf.device(LOCAL):
            here = tf.py_func(lambda a: a + 1, [x], tf.float32)
        with tf.device(REMOTE):
            there = tf.py_func(lambda a: a + 1, [x], tf.float32, name="remote_py_func")
            after = tf.reduce_sum(x)
        with tf.Session(server.target) as sess:
            np.testing.assert_array_equal(sess.run(here), [1, 3, 5, 7])
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"ValueError: callback pyfunc_\d+ is not found") as info:
                sess.run(there)
            assert "remote_py_func" in info.value.message and "task:1" in info.value.message
            assert sess.run(after) == 12.0  # the remote task survived and still serves
    assert c.procs[("local", 1)].poll() is None
