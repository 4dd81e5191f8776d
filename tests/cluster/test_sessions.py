"""Sessions that span real server processes: feeds and fetches on any task, every fetch
structure, variables shared between client processes, Session.reset, tracing, filters."""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.client import timeline

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PS0, W0, W1 = "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"


@pytest.fixture(scope="module")
def cluster(start_cluster_module, module_env):
    """One ps and two workers for the whole module (the tests only add state they name uniquely)."""
    module_env.setenv("TENSORWEAVE_CONNECT_TIMEOUT_S", "10")
    return start_cluster_module({"ps": 1, "worker": 2})


def test_feeds_and_fetches_on_every_task(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:1"):
            p = tf.placeholder(tf.float32, [3], name="p")
            a = p + 1.0
        with tf.device("/job:ps/task:0"):
            b = a * 2.0
        with tf.device("/job:worker/task:0"):
            c = b + p
        with tf.Session(cluster.target("worker", 0)) as sess:
            feed = np.array([1, 2, 3], np.float32)
            va, vb, vc, vp = sess.run([a, b, c, p], {p: feed})
            np.testing.assert_array_equal(va, feed + 1)
            np.testing.assert_array_equal(vb, (feed + 1) * 2)
            np.testing.assert_array_equal(vc, (feed + 1) * 2 + feed)
            np.testing.assert_array_equal(vp, feed)
            assert vc.dtype == np.float32 and vc.shape == (3,)
            # Feeding an intermediate cuts the graph there; its producer's task is not needed.
            np.testing.assert_array_equal(sess.run(c, {a: np.ones(3, np.float32), p: feed}), 2 + feed)
            assert [d.name for d in sess.list_devices()] == [f"{t}/device:CPU:0" for t in (PS0, W0, W1)]
            assert {(d.device_type, d.memory_limit_bytes) for d in sess.list_devices()} == {("CPU", 268435456)}



def test_tasks_flush_denormals_as_tensorflow_does(cluster):
    """TF's kernels run with denormal results and inputs flushed to zero, on every task."""
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [2], name="p_denormal")
        outs = []
        for task in ("/job:ps/task:0", "/job:worker/task:1"):
            with tf.device(task):
                outs += [tf.exp(p), p * 1e-30]
        with tf.Session(cluster.target("worker", 0)) as sess:
            got = sess.run(outs, {p: np.array([-100.0, 1e-9], np.float32)})
        for exp, product in (got[:2], got[2:]):
            np.testing.assert_array_equal(exp, [0.0, 1.0])   # (numpy alone: exp(-100) is 3.7e-44)
            np.testing.assert_array_equal(product, [np.float32(-100.0) * np.float32(1e-30), 0.0])


def test_values_sent_from_a_ps_variable_are_whole_while_a_client_scatters_into_it(cluster):
    """A sparse update writes into the ps's array only while nothing holds it: a value on its way
    to another task (the transport's buffers, shared memory for these 2 MB) or to a client keeps
    the numbers it was read with."""
    import threading
    rows, width = 2048, 256
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.get_variable("whole_reads_v", [rows, width], initializer=tf.zeros_initializer())
            fill = tf.placeholder(tf.float32, [], name="whole_reads_fill")
            update = tf.scatter_update(v, np.arange(rows, dtype=np.int32), tf.fill([rows, width], fill)).op
            read = v.read_value()
        with tf.device("/job:worker/task:1"):
            spread = tf.reduce_max(read) - tf.reduce_min(read)   # (computed on the worker the value was sent to)
        torn, stop = [], threading.Event()
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(v.initializer)

            def reader():
                while not stop.is_set():
                    value, worker_spread = sess.run([read, spread])
                    if not (value == value[0, 0]).all() or worker_spread != 0:
                        torn.append((np.unique(value)[:4], worker_spread))

            threads = [threading.Thread(target=reader) for _ in range(2)]
            for t in threads:
                t.start()
            try:
                for k in range(1, 60):
                    sess.run(update, {fill: float(k)})
            finally:
                stop.set()
                for t in threads:
                    t.join(60)
            assert sess.run(read)[0, 0] == 59.0
    assert not torn, f"values half written: {torn[:3]}"


def test_every_fetch_structure(cluster):
    Pair = collections.namedtuple("Pair", ["x", "y"])
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            x = tf.constant(3, name="x")
        with tf.device("/job:worker/task:1"):
            y = x * 7
            noop = tf.identity(y).op
        with tf.Session(cluster.target("worker", 0)) as sess:
            assert sess.run(y) == 21 and isinstance(sess.run(y), np.int32)
            assert sess.run([x, y]) == [3, 21]
            assert sess.run((x, y)) == (3, 21)
            assert sess.run({"a": x, "b": [y, (x,)]}) == {"a": 3, "b": [21, (3,)]}
            assert sess.run(Pair(x, y)) == Pair(3, 21)
            assert sess.run(collections.OrderedDict(b=y, a=x)) == collections.OrderedDict(b=21, a=3)
            assert sess.run(noop) is None
            assert sess.run([noop, y, y]) == [None, 21, 21]
            assert sess.run("x:0") == 3 and sess.run([]) == []


def test_trace_covers_every_task_and_makes_a_chrome_trace(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            a = tf.identity(tf.constant(np.arange(4, dtype=np.float32)), name="a")  # sent, not copied
        with tf.device("/job:worker/task:1"):
            b = tf.multiply(a, 2.0, name="b")
        md = tf.RunMetadata()
        with tf.Session(cluster.target("worker", 0)) as sess:
            out = sess.run(b, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
        np.testing.assert_array_equal(out, [0, 2, 4, 6])
        devices = {d.device for d in md.step_stats.dev_stats}
        assert devices == {PS0 + "/device:CPU:0", W1 + "/device:CPU:0"}
        names = {n.node_name for d in md.step_stats.dev_stats for n in d.node_stats}
        assert "b" in names and any("_send" in n for n in names) and any("_recv" in n for n in names)
        trace = json.loads(timeline.Timeline(md.step_stats).generate_chrome_trace_format())
        ops = {e["args"]["name"]: e["name"] for e in trace["traceEvents"] if e["ph"] == "X"}
        assert ops["b"] == "Mul"
        assert any(e["ph"] == "s" for e in trace["traceEvents"])   # the Send -> Recv arrow


def _client_script(target, body):
    return textwrap.dedent(f"""
        import numpy as np
        import tensorweave as tf
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(np.zeros(3, np.float32), name="shared_v")
        sess = tf.Session("{target}")
    """) + textwrap.dedent(body)


def _run_client(script):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_second_client_process_shares_a_variable_and_reset_drops_it(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(np.zeros(3, np.float32), name="shared_v")
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(v.assign(np.array([1, 2, 3], np.float32)))
            # Another client (its own process, its own graph) sees and updates the same storage.
            out = _run_client(_client_script(cluster.target("worker", 1), """
                print(sess.run(v).tolist())
                sess.run(v.assign_add(np.full(3, 10, np.float32)))
            """))
            assert out.strip() == "[1.0, 2.0, 3.0]"
            np.testing.assert_array_equal(sess.run(v), [11, 12, 13])
        # Variables outlive sessions; Session.reset drops them on every task.
        with tf.Session(cluster.target("worker", 0)) as sess:
            np.testing.assert_array_equal(sess.run(v), [11, 12, 13])
        tf.Session.reset(cluster.target("worker", 0))
        with tf.Session(cluster.target("worker", 0)) as sess:
            with pytest.raises(tf.errors.FailedPreconditionError, match="shared_v"):
                sess.run(v)


def test_isolate_session_state_keeps_variables_private(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(np.float32(5), name="isolated_v")
        config = tf.ConfigProto(isolate_session_state=True)
        with tf.Session(cluster.target("worker", 0), config=config) as s1, \
                tf.Session(cluster.target("worker", 0), config=config) as s2:
            s1.run(v.initializer)
            assert s1.run(v) == 5
            with pytest.raises(tf.errors.FailedPreconditionError):
                s2.run(v)


def test_device_filters_keep_the_session_off_other_tasks(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:1"):
            far = tf.constant(1, name="far")
        near = tf.constant(2, name="near")
        config = tf.ConfigProto(device_filters=["/job:worker/task:0"])
        with tf.Session(cluster.target("worker", 0), config=config) as sess:
            assert sess.run(near) == 2
            assert [d.name for d in sess.list_devices()] == [W0 + "/device:CPU:0"]
            with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot assign a device for operation far"):
                sess.run(far)


def test_timeouts_are_deadline_exceeded(cluster):
    from tensorweave.ops import sendrecv as sendrecv_ops
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:1"):
            never = sendrecv_ops.recv(tf.float32, "nobody_sends_this", PS0, W1, name="never")
        with tf.Session(cluster.target("worker", 0)) as sess:
            start = time.monotonic()
            with pytest.raises(tf.errors.DeadlineExceededError):
                sess.run(never, options=tf.RunOptions(timeout_in_ms=300))
            assert time.monotonic() - start < 5
        config = tf.ConfigProto(operation_timeout_in_ms=300)
        with tf.Session(cluster.target("worker", 0), config=config) as sess:
            with pytest.raises(tf.errors.DeadlineExceededError):
                sess.run(never)


def test_log_device_placement_and_soft_placement(cluster, capfd):
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:1/device:GPU:0"):
            g = tf.constant(4, name="on_gpu")
        with tf.Session(cluster.target("worker", 0)) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot assign a device for operation on_gpu"):
                sess.run(g)
        config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=True)
        with tf.Session(cluster.target("worker", 0), config=config) as sess:
            assert sess.run(g) == 4
        assert f"on_gpu: (Const): {W1}/device:CPU:0" in capfd.readouterr().err
