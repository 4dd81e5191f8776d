"""tf.train.Coordinator, LooperThread, QueueRunner and start_queue_runners with real threads."""
from __future__ import annotations

import contextlib
import threading
import time

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")


def test_coordinator_stops_threads_and_reraises_the_first_error():
    coord = tf.train.Coordinator()
    seen = []

    def worker(i):
        with coord.stop_on_exception():
            while not coord.should_stop():
                if i == 1:
                    raise ValueError("worker 1 failed")
                seen.append(i)
                time.sleep(0.01)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    assert coord.wait_for_stop(5)
    with pytest.raises(ValueError, match="worker 1 failed"):
        coord.join(threads)
    assert coord.joined and not any(t.is_alive() for t in threads)
    coord.clear_stop()
    assert not coord.should_stop() and not coord.joined
    coord.raise_requested_exception()   # cleared: nothing to raise


def test_clean_stop_exceptions_are_not_raised_and_stragglers_are_reported():
    coord = tf.train.Coordinator()
    coord.request_stop(tf.errors.OutOfRangeError(None, None, "input ran out"))
    coord.join([])
    coord = tf.train.Coordinator()
    release = threading.Event()
    t = threading.Thread(target=release.wait, name="straggler", daemon=True)
    t.start()
    coord.request_stop()
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="straggler"):
        coord.join([t], stop_grace_period_secs=0.2)
    assert 0.15 < time.monotonic() - start < 2
    coord2 = tf.train.Coordinator()
    coord2.register_thread(t)
    coord2.request_stop()
    coord2.join(stop_grace_period_secs=0.05, ignore_live_threads=True)
    release.set()


def test_looper_thread_calls_its_target_until_stopped():
    coord = tf.train.Coordinator()
    calls = []
    tf.train.LooperThread.loop(coord, 0.02, target=calls.append, args=(1,))
    time.sleep(0.2)
    coord.request_stop()
    coord.join(stop_grace_period_secs=2)
    assert 4 <= len(calls) <= 15


def test_queue_runner_threads_fill_a_queue_and_stop_with_the_coordinator():
    counter = tf.Variable(0, dtype=tf.int32)
    q = tf.FIFOQueue(4, tf.int32, shapes=[()])
    qr = tf.train.QueueRunner(q, [q.enqueue(counter.assign_add(1))] * 2)
    tf.train.add_queue_runner(qr)
    deq = q.dequeue()
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(s, coord)
        assert len(threads) == 3   # two enqueue threads and the one that closes on stop
        assert qr.create_threads(s, coord) == []   # already running in this session
        got = [s.run(deq) for _ in range(20)]
        assert len(set(got)) == 20 and min(got) >= 1
        coord.request_stop()
        start = time.monotonic()
        coord.join(threads, stop_grace_period_secs=5)
        assert time.monotonic() - start < 2   # the blocked enqueues were cancelled, not waited out
        assert s.run(q.is_closed())
    assert qr.name == "fifo_queue" and qr.queue is q


def test_queue_runner_closes_the_queue_when_its_input_runs_out():
    data = tf.train.limit_epochs(tf.constant([1, 2, 3]), num_epochs=2)
    q = tf.FIFOQueue(10, tf.int32, shapes=[()])
    tf.train.add_queue_runner(tf.train.QueueRunner(q, [q.enqueue_many([data])]))
    deq = q.dequeue()
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(s, coord)
        got = []
        with pytest.raises(tf.errors.OutOfRangeError):
            while True:
                got.append(s.run(deq))
        coord.request_stop()
        coord.join(threads)
    assert got == [1, 2, 3, 1, 2, 3]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_queue_runner_errors_without_a_coordinator_are_kept():
    x = tf.placeholder(tf.float32, [])
    q = tf.FIFOQueue(4, tf.float32, shapes=[()])
    qr = tf.train.QueueRunner(q, [q.enqueue(x)])
    with tf.Session() as s:
        threads = qr.create_threads(s, start=True)
        for t in threads:
            t.join(5)
    assert len(qr.exceptions_raised) == 1
    assert isinstance(qr.exceptions_raised[0], tf.errors.InvalidArgumentError)


def test_bad_arguments():
    q = tf.FIFOQueue(4, tf.float32, shapes=[()])
    with pytest.raises(ValueError, match="Must provide queue and enqueue_ops"):
        tf.train.QueueRunner(q, [])
    with pytest.raises(TypeError, match="tuple of tf.error types"):
        tf.train.QueueRunner(q, [q.enqueue(1.0)], queue_closed_exception_types=(ValueError,))
    with pytest.raises(ValueError, match="No default session"):
        tf.train.start_queue_runners()
    with pytest.raises(TypeError, match="must be a `tf.Session`"):
        tf.train.start_queue_runners(sess=object())
    with tf.Session() as s:
        assert tf.train.start_queue_runners(s) == []


def test_numbers_through_a_queue_runner_match_numpy():
    rows = np.random.RandomState(0).rand(12, 3).astype(np.float32)
    data = tf.constant(rows)
    q = tf.FIFOQueue(5, tf.float32, shapes=[[3]])
    tf.train.add_queue_runner(tf.train.QueueRunner(q, [q.enqueue_many([tf.train.limit_epochs(data, 1)])]))
    total = tf.reduce_sum(q.dequeue_many(4), axis=0)
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(s, coord)
        sums = [s.run(total) for _ in range(3)]
        coord.request_stop()
        coord.join(threads)
    np.testing.assert_allclose(sums, rows.reshape(3, 4, 3).sum(axis=1), rtol=1e-6)


@contextlib.contextmanager
def _runner_threads(enqueue_ops, q, started=None):
    """A session whose QueueRunner over `enqueue_ops` runs (only the threads of ops `started`
    and the one that closes the queue on stop, when given); stopped and joined on exit."""
    qr = tf.train.QueueRunner(q, enqueue_ops)
    with tf.Session() as s:
        coord = tf.train.Coordinator()
        threads = qr.create_threads(s, coord)
        running = threads if started is None else [threads[i] for i in started] + [threads[-1]]
        for t in running:
            t.start()
        yield s
        coord.request_stop()
        coord.join(running, stop_grace_period_secs=5)


def test_every_enqueue_op_of_a_runner_gets_its_share():
    # Blocked enqueues are served in arrival order, so no op of a runner is starved: each one's
    # elements keep arriving. How many per batch depends on how the OS schedules the threads (a
    # loaded machine may pause one for a while), so the test waits for every op's share with a
    # deadline far beyond any pause rather than counting a fixed number of batches.
    q = tf.FIFOQueue(16, tf.int32, shapes=[()])
    deq = q.dequeue_many(50)
    counts = np.zeros(3, dtype=np.int64)
    with _runner_threads([q.enqueue(tf.constant(k)) for k in range(3)], q) as s:
        deadline = time.monotonic() + 120
        while counts.min() < 50 and time.monotonic() < deadline:
            counts += np.bincount(s.run(deq), minlength=3)
    assert counts.min() >= 50, counts


def test_a_blocked_enqueue_thread_does_not_stop_the_others():
    never = tf.FIFOQueue(1, tf.int32, shapes=[()])   # nothing is ever put here
    q = tf.FIFOQueue(8, tf.int32, shapes=[()])
    deq = q.dequeue_many(30)
    with _runner_threads([q.enqueue(never.dequeue()), q.enqueue(tf.constant(7))], q) as s:
        start = time.monotonic()
        assert s.run(deq, options=tf.RunOptions(timeout_in_ms=5000)).tolist() == [7] * 30
        assert time.monotonic() - start < 5
        s.run(never.close())   # releases the blocked thread (with OutOfRangeError, as in TF)


def test_threads_that_are_never_started_do_not_hold_up_the_others():
    q = tf.FIFOQueue(8, tf.int32, shapes=[()])
    deq = q.dequeue_many(20)
    with _runner_threads([q.enqueue(tf.constant(k)) for k in range(3)], q, started=[2]) as s:
        assert s.run(deq, options=tf.RunOptions(timeout_in_ms=5000)).tolist() == [2] * 20
