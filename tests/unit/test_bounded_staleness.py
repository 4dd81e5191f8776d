"""Bounded-staleness training (train/bounded_staleness.py, ops/data_flow/staleness.py) in one
process: the barrier's rule with threads standing in for workers, and the optimizer's graph.
tests/cluster/test_bounded_staleness_cluster.py runs it with real worker processes."""
from __future__ import annotations

import logging
import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.data_flow.staleness import StalenessBarrier, staleness_barrier_advance
from tensorweave.runtime.executor import StepContext
from tensorweave.train.bounded_staleness import BoundedStalenessOptimizer

NODE = type("Node", (), {"name": "advance", "op": "_StalenessBarrierAdvance"})()


def advance_within(barrier, worker: int, seconds: float = 0.3) -> bool:
    """True when the worker's advance returned, False when it was still held at the deadline."""
    try:
        barrier.advance(StepContext(deadline=time.monotonic() + seconds), NODE, worker)
        return True
    except tf.errors.DeadlineExceededError as e:
        assert "staleness barrier 'b'" in e.message and f"worker {worker}'s step" in e.message
        return False


def run_workers(barrier, steps: list, records: list) -> None:
    """Each worker i advances steps[i] times in a thread of its own; after each release it
    records (its clock, the lowest clock of the others)."""
    def work(i):
        for _ in range(steps[i]):
            barrier.advance(None, NODE, i)
            with barrier.lock:
                records.append((i, barrier.clock[i], min(c for j, c in enumerate(barrier.clock) if j != i)))
    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(steps))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
        assert not t.is_alive(), "a worker stayed blocked"


def test_a_worker_more_than_staleness_ahead_is_held_until_the_slowest_steps():
    barrier = StalenessBarrier("b", num_workers=2, staleness=2, worker_timeout=600)
    assert advance_within(barrier, 0) and advance_within(barrier, 0)   # 2 ahead of worker 1 (never seen: clock 0)
    assert not advance_within(barrier, 0)                               # its 3rd step done: 3 ahead, held
    assert advance_within(barrier, 1)                                   # the slowest steps: 3 - 1 = 2
    assert not advance_within(barrier, 0)                               # clock 4 vs 1
    assert barrier.clock == [4, 1]


@pytest.mark.parametrize("staleness", [0, 1, 3])
def test_no_worker_is_released_more_than_staleness_ahead(staleness):
    barrier = StalenessBarrier("b", num_workers=3, staleness=staleness, worker_timeout=600)
    records = []
    run_workers(barrier, [12, 12, 12], records)
    assert len(records) == 36
    assert max(own - slowest for _, own, slowest in records) <= staleness


def test_a_finished_worker_holds_nobody_back():
    barrier = StalenessBarrier("b", num_workers=2, staleness=0, worker_timeout=600)
    assert not advance_within(barrier, 1)   # 1 ahead of worker 0
    barrier.leave(0)
    assert all(advance_within(barrier, 1) for _ in range(5))


def test_a_silent_worker_is_dropped_after_the_timeout_and_rejoins_at_the_slowest_clock(caplog):
    barrier = StalenessBarrier("b", num_workers=3, staleness=0, worker_timeout=0.5)
    records = []
    with caplog.at_level(logging.WARNING, logger="tensorweave"):
        run_workers(barrier, [6, 6, 0], records)   # worker 2 never steps: the others must not hang
    assert [m for m in caplog.messages if "worker 2 (at step 0) not heard from" in m]
    # worker 2 comes back at the slowest clock (not 6 steps behind), and is in the bound again:
    # one step ahead of the others, it is held
    barrier.worker_timeout = 600   # (0 and 1 are silent now)
    slowest = min(barrier.clock[:2])
    assert slowest >= 6 and not advance_within(barrier, 2)
    assert barrier.clock[2] == slowest + 1


def test_a_reset_fails_the_waiting_worker():
    barrier = StalenessBarrier("b", num_workers=2, staleness=0, worker_timeout=600)
    errs = []

    def wait():
        try:
            barrier.advance(None, NODE, 0)
        except tf.errors.CancelledError as e:
            errs.append(e)
    t = threading.Thread(target=wait, daemon=True)
    t.start()
    barrier.close_on_reset()
    t.join(60)
    assert not t.is_alive() and "was dropped" in errs[0].message


def test_one_worker_with_staleness_trains_as_its_optimizer_alone():
    x = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    w0 = np.array([0.5, -0.5], np.float32)
    with tf.Graph().as_default():
        w = tf.Variable(w0)
        gs = tf.train.get_or_create_global_step()
        opt = BoundedStalenessOptimizer(tf.train.GradientDescentOptimizer(0.1), staleness=0, num_workers=1,
                                        worker_index=0)
        train = opt.minimize(tf.reduce_sum(tf.square(tf.tensordot(x, w, 1))), global_step=gs)
        with tf.train.MonitoredTrainingSession(hooks=[opt.make_session_run_hook()]) as sess:
            for _ in range(3):
                sess.run(train)
            got, step = sess.run([w, gs])
    want = w0.astype(np.float64)
    for _ in range(3):
        want = want - 0.1 * 2 * x.T.astype(np.float64) @ (x.astype(np.float64) @ want)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert step == 3


def test_graph_for_tensorflow_trains_without_the_barrier():
    with tf.Graph().as_default() as g:
        w = tf.Variable([1.0])
        opt = BoundedStalenessOptimizer(tf.train.GradientDescentOptimizer(0.1), 2, 2, 1)
        opt.minimize(tf.reduce_sum(w), global_step=tf.train.get_or_create_global_step())
    nodes = {n.name: n for n in g.as_graph_def().node}
    assert nodes["bounded_staleness/advance"].op == "NoOp"
    assert any(i.startswith("^") for i in nodes["bounded_staleness/advance"].input)   # still after the update
    assert nodes["bounded_staleness/leave"].op == "NoOp"


def test_unbounded_is_the_wrapped_optimizers_update():
    with tf.Graph().as_default() as g:
        w = tf.Variable([1.0])
        opt = BoundedStalenessOptimizer(tf.train.GradientDescentOptimizer(0.1), None, 2, 0)
        train = opt.minimize(tf.reduce_sum(w))
        assert opt.leave_op is None and train.type != "_StalenessBarrierAdvance"
        assert not [op for op in g.get_operations() if "Staleness" in op.type]


@pytest.mark.parametrize("kwargs, message", [
    ({"staleness": -1}, "staleness must be an int >= 0"),
    ({"staleness": 1.5}, "staleness must be an int >= 0"),
    ({"num_workers": 0}, "num_workers must be a positive int"),
    ({"worker_index": 2}, r"worker_index must be in \[0, 2\)"),
    ({"worker_timeout_secs": 0}, "worker_timeout_secs must be positive"),
])
def test_bad_arguments_are_named(kwargs, message):
    args = {"staleness": 1, "num_workers": 2, "worker_index": 0, **kwargs}
    with pytest.raises(ValueError, match=message):
        BoundedStalenessOptimizer(tf.train.GradientDescentOptimizer(0.1), **args)


def test_a_barrier_asked_for_with_other_settings_is_an_error_naming_the_op():
    with tf.Graph().as_default():
        first = staleness_barrier_advance("shared", 2, 1, 60.0, 0, name="first")
        other = staleness_barrier_advance("shared", 2, 3, 60.0, 1, name="other")
        outside = staleness_barrier_advance("shared2", 2, 1, 60.0, 5, name="outside")
        with tf.Session() as sess:
            sess.run(first)
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"other.*created for \(num_workers, staleness\) "
                                                                     r"= \(2, 1\).*requested as \(2, 3\)"):
                sess.run(other)
            with pytest.raises(tf.errors.InvalidArgumentError, match="outside.*worker 5 is not one of the 2 workers"):
                sess.run(outside)
