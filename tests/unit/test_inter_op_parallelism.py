"""Inter-op parallelism (ConfigProto.inter_op_parallelism_threads, runtime/inter_op.py): ops of
one step on several threads, shown by what they do, not by timing: branches that wait on each
other complete only with two threads; the first failure is the step's error and leaves nothing
running; control dependencies hold; the numbers are the serial ones; TF's pool options."""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

import tensorweave as tf
from tensorweave import cli
from tensorweave.framework import limits
from tensorweave.framework.graph_def import NodeDef
from tensorweave.ops import intra_op
from tensorweave.runtime import inter_op

pytestmark = pytest.mark.usefixtures("graph")


def _config(threads: int, **kw) -> tf.ConfigProto:
    return tf.ConfigProto(inter_op_parallelism_threads=threads, use_per_session_threads=True, **kw)


def _cross_wait():
    """Two branches, each dequeuing what the other enqueues. Serially the first dequeue waits
    for an enqueue that comes after it (blocking ops run in graph order)."""
    qa = tf.FIFOQueue(1, tf.float32, shapes=[[]], name="qa")
    qb = tf.FIFOQueue(1, tf.float32, shapes=[[]], name="qb")
    enq_a = qa.enqueue(1.0)
    with tf.control_dependencies([enq_a]):
        got_b = qb.dequeue()
    enq_b = qb.enqueue(2.0)
    with tf.control_dependencies([enq_b]):
        got_a = qa.dequeue()
    return got_a, got_b


def test_branches_waiting_on_each_other_complete_with_two_threads_and_not_with_one():
    got_a, got_b = _cross_wait()
    with tf.Session(config=_config(2)) as sess:
        for _ in range(5):
            assert sess.run([got_a, got_b], options=tf.RunOptions(timeout_in_ms=60000)) == [1.0, 2.0]
    with tf.Session(config=_config(1)) as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run([got_a, got_b], options=tf.RunOptions(timeout_in_ms=300))


def test_run_options_pick_a_session_pool_and_minus_one_is_the_callers_thread():
    got_a, got_b = _cross_wait()
    config = tf.ConfigProto()
    config.session_inter_op_thread_pool.add(num_threads=2)
    with tf.Session(config=config) as sess:
        assert sess.run([got_a, got_b], options=tf.RunOptions(inter_op_thread_pool=0, timeout_in_ms=60000)) \
            == [1.0, 2.0]
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run([got_a, got_b], options=tf.RunOptions(inter_op_thread_pool=-1, timeout_in_ms=300))
        for bad in (1, -2):
            with pytest.raises(tf.errors.InvalidArgumentError, match=f"Invalid inter_op_thread_pool: {bad}"):
                sess.run(got_a, options=tf.RunOptions(inter_op_thread_pool=bad))


def test_negative_thread_count_runs_on_the_callers_thread():
    got_a, got_b = _cross_wait()
    with tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=-1)) as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run([got_a, got_b], options=tf.RunOptions(timeout_in_ms=300))


def test_a_global_pool_name_keeps_its_thread_count():
    first = tf.ConfigProto()
    first.session_inter_op_thread_pool.add(num_threads=2, global_name="test_inter_op_shared")
    again = tf.ConfigProto()
    again.session_inter_op_thread_pool.add(num_threads=2, global_name="test_inter_op_shared")
    a, b = tf.Session(config=first), tf.Session(config=again)
    assert a._master._pools[0] is b._master._pools[0]
    a.close()
    b.close()
    other = tf.ConfigProto()
    other.session_inter_op_thread_pool.add(num_threads=3, global_name="test_inter_op_shared")
    with pytest.raises(tf.errors.InvalidArgumentError, match="configured previously with num_threads=2"):
        tf.Session(config=other)


def test_first_failure_is_the_steps_error_and_cancels_the_waiting_branches():
    qa = tf.FIFOQueue(2, tf.float32, shapes=[[]], name="qa")
    qb = tf.FIFOQueue(2, tf.float32, shapes=[[]], name="qb")
    x = tf.placeholder(tf.float32, [None])
    bad = tf.reshape(x, [3], name="bad_reshape")   # fed 4 values: fails
    waits = [qa.dequeue(), qb.dequeue()]          # empty queues: they wait until cancelled
    with tf.Session(config=_config(2)) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad_reshape"):
            sess.run([bad] + waits, {x: np.zeros(4, np.float32)}, options=tf.RunOptions(timeout_in_ms=60000))
        # nothing of the failed step is left waiting: the values enqueued now stay in the queues
        sess.run([qa.enqueue(5.0), qb.enqueue(6.0)])
        assert sess.run([qa.size(), qb.size()]) == [1, 1]
        assert sess.run(waits) == [5.0, 6.0]


def test_a_deadline_ends_a_parallel_step_waiting_on_two_queues():
    qa = tf.FIFOQueue(1, tf.float32, shapes=[[]])
    qb = tf.FIFOQueue(1, tf.float32, shapes=[[]])
    with tf.Session(config=_config(2)) as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run([qa.dequeue(), qb.dequeue()], options=tf.RunOptions(timeout_in_ms=300))
        sess.run(qa.enqueue(1.0))
        assert sess.run(qa.size()) == 1


def _towers_model(seed: int = 0):
    """A 4-tower in-graph model (each tower a while loop and a dense layer) trained by two
    optimizers on their own var_lists, with a control dependency from one update to a read."""
    rng = np.random.RandomState(seed)
    x = tf.constant(rng.randn(16, 8).astype(np.float32))
    losses, variables = [], []
    for k in range(4):
        w = tf.Variable(rng.randn(8, 8).astype(np.float32) * 0.3, name=f"w{k}")
        variables.append(w)
        h = tf.matmul(x, w)
        _, h = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, tf.tanh(a) * 1.1), [tf.constant(0), h])
        losses.append(tf.reduce_mean(tf.square(h - float(k))))
    loss = tf.add_n(losses)
    first = tf.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=variables[:2])
    second = tf.train.AdamOptimizer(0.01).minimize(loss, var_list=variables[2:])
    with tf.control_dependencies([first]):
        after_first = tf.identity(variables[0].read_value())
    return tf.group(first, second), loss, after_first, variables


def _train(threads: int, steps: int = 6) -> tuple:
    with tf.Graph().as_default():
        train, loss, after_first, variables = _towers_model()
        sess = tf.Session(config=_config(threads))
        sess.run(tf.global_variables_initializer())
        seen = []
        for _ in range(steps):
            _, value, read = sess.run([train, loss, after_first])
            seen.append((value, read))
            # the read ordered after the first update sees it (the update of this very step)
            np.testing.assert_array_equal(read, sess.run(variables[0]))
        values = sess.run(variables)
        sess.close()
        return seen, values


def _assert_same_training(serial: tuple, parallel: tuple) -> None:
    """Two _train results: every step's loss and read, and the variables after, bit for bit."""
    for (l1, r1), (l2, r2) in zip(serial[0], parallel[0]):
        assert l1 == l2
        np.testing.assert_array_equal(r1, r2)
    for a, b in zip(serial[1], parallel[1]):
        np.testing.assert_array_equal(a, b)


def test_parallel_steps_give_the_serial_numbers_bit_for_bit(monkeypatch):
    monkeypatch.setenv("TENSORWEAVE_INTER_OP", "parallel")
    serial = _train(1)
    parallel = _train(2)
    _assert_same_training(serial, parallel)


def _profiled_as(monkeypatch, long_ops: tuple) -> list:
    """The auto choice, its profile saying that ops of `long_ops` types take a millisecond and
    the rest a microsecond, and its trial keeping the parallel steps; returns the list the
    handed-off ops' names are appended to."""
    monkeypatch.setenv("TENSORWEAVE_INTER_OP", "auto")
    timed = inter_op._timed

    def profiled(plan, vals):
        timed(plan, vals)   # (runs the step, op by op)
        return [1e-3 if i < plan._node_steps and plan._names[i].op in long_ops else 1e-6
                for i in range(len(plan._steps))]
    monkeypatch.setattr(inter_op, "_timed", profiled)
    monkeypatch.setattr(inter_op, "_GAIN", 1e9)
    monkeypatch.setattr(intra_op, "KEEP", 1e9)
    handed_off: list = []
    submit = inter_op.InterOpPool.submit

    def recording_submit(pool, job):
        handed_off.append(job)
        return submit(pool, job)
    monkeypatch.setattr(inter_op.InterOpPool, "submit", recording_submit)
    return handed_off


def test_offloaded_long_ops_give_the_serial_numbers_bit_for_bit(monkeypatch):
    """A profiled plan without blocking ops hands its long ops (here the products and the
    optimizers' updates) to the pool thread and goes on with what does not depend on them:
    every step's numbers, and the read ordered after an update, are the serial ones."""
    serial = _train(1, steps=30)
    handed_off = _profiled_as(monkeypatch, ("MatMul", "BatchMatMulV2", "ResourceApplyAdam",
                                            "ResourceApplyGradientDescent"))
    parallel = _train(2, steps=30)
    assert handed_off   # (the products of the four towers are independent)
    _assert_same_training(serial, parallel)


def test_an_offloaded_ops_failure_is_the_steps_error_and_the_next_step_runs(monkeypatch):
    handed_off = _profiled_as(monkeypatch, ("MatMul",))
    x = tf.placeholder(tf.float32, [None, None])
    w = tf.constant(np.ones((3, 3), np.float32))
    left, right = tf.matmul(x, w, name="left"), tf.matmul(w, x, name="right")
    total = tf.reduce_sum(left) + tf.reduce_sum(right)
    good = np.ones((3, 3), np.float32)
    with tf.Session(config=_config(2)) as sess:
        for _ in range(30):
            assert sess.run(total, {x: good}) == 54.0
        assert handed_off
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(total, {x: np.ones((2, 2), np.float32)})
        assert sess.run(total, {x: good}) == 54.0


def _products_profiled_as(monkeypatch, seconds) -> list:
    """The auto choice, its profile timing each MatMul at seconds() (called as each op is timed)
    and the rest at a microsecond; returns the list the plans' trials are appended to."""
    monkeypatch.setenv("TENSORWEAVE_INTER_OP", "auto")
    timed = inter_op._timed

    def profiled(plan, vals):
        timed(plan, vals)
        return [seconds() if i < plan._node_steps and plan._names[i].op == "MatMul" else 1e-6
                for i in range(len(plan._steps))]
    monkeypatch.setattr(inter_op, "_timed", profiled)
    trials: list = []
    trial = inter_op._Choice.trial

    def recording_trial(choice):
        trials.append(choice)
        return trial(choice)
    monkeypatch.setattr(inter_op._Choice, "trial", recording_trial)
    return trials


@pytest.mark.parametrize("slower_on_a_share", [True, False])
def test_a_plan_whose_ops_take_the_cores_already_is_not_tried(monkeypatch, slower_on_a_share):
    """The profile times each op on the serial step's cores and once on a parallel step's share
    of them: two independent products that take twice as long on a share (oneDNN's team of two
    running on one thread) make a parallel step no shorter, and the plan stays serial without a
    trial (the CIFAR-10 net's trial cost 16 steps of 24-25 ms against 18 serial); products that
    take as long either way are tried side by side."""
    trials = _products_profiled_as(
        monkeypatch, lambda: 2e-3 if slower_on_a_share and intra_op.thread_share() is not None else 1e-3)
    x = tf.placeholder(tf.float32, [3, 3])
    w = tf.constant(np.ones((3, 3), np.float32))
    total = tf.reduce_sum(tf.matmul(x, w)) + tf.reduce_sum(tf.matmul(w, x))
    with tf.Session(config=_config(2)) as sess:
        for _ in range(8):
            assert sess.run(total, {x: np.ones((3, 3), np.float32)}) == 54.0
    assert bool(trials) is not slower_on_a_share


def test_a_plan_in_two_parts_is_tried_where_one_hand_off_per_long_op_would_not_pay(monkeypatch):
    """Two fetched chains of products, of ten and of three: a parallel step that hands off each
    product (30 us each, against 120 us products) models no faster than 0.9 of the serial step,
    but the plan falls in two parts, the short chain's on a thread of its own, which models
    faster: the plan is tried (a GAN step was not, in two runs of three, and stayed serial)."""
    trials = _products_profiled_as(monkeypatch, lambda: 1.2e-4)
    x = tf.placeholder(tf.float32, [3, 3])
    chains = []
    for length in (10, 3):
        h = x
        for _ in range(length):
            h = tf.matmul(h, tf.constant(np.eye(3, dtype=np.float32)))
        chains.append(tf.reduce_sum(h))
    with tf.Session(config=_config(2)) as sess:
        for _ in range(8):
            assert sess.run(chains, {x: np.ones((3, 3), np.float32)}) == [9.0, 9.0]
    assert trials and trials[0].halves is not None


def test_failed_profile_steps_are_their_own_errors_and_the_profile_goes_on(monkeypatch):
    """Steps that fail while the plan's profile times them (here the third and fourth, timed on
    a share of the cores) are those steps' errors alone: the profile goes on with the next steps
    and the plan runs on."""
    monkeypatch.setenv("TENSORWEAVE_INTER_OP", "auto")
    x = tf.placeholder(tf.float32, [None])
    total = tf.reduce_sum(tf.reshape(x, [2, 2]))
    with tf.Session(config=_config(2)) as sess:
        for k in range(12):
            if k in (2, 3):
                with pytest.raises(tf.errors.InvalidArgumentError):
                    sess.run(total, {x: np.ones(3, np.float32)})
            else:
                assert sess.run(total, {x: np.ones(4, np.float32)}) == 4.0


def _recording_halves(monkeypatch) -> list:
    """The list of the plans whose steps ran in two parts (_Halves), one entry a step."""
    runs: list = []
    run = inter_op._Halves.run

    def recording_run(halves, vals, pool):
        runs.append(halves.plan)
        return run(halves, vals, pool)
    monkeypatch.setattr(inter_op._Halves, "run", recording_run)
    return runs


def _keeps_parallel_in_two_parts(choice) -> None:
    """A trial's choice that keeps parallel steps, in two parts where the plan has them."""
    choice.mode = inter_op._PARALLEL
    if choice.halves is not None:
        choice.ways = (inter_op._HALVES,)


def test_a_steps_two_parts_give_the_serial_numbers_bit_for_bit(monkeypatch):
    """The towers' two optimizers each minimize the loss through gradients of their own: the
    second's gradients and update are needed by its target alone, so its part runs on the pool's
    thread beside the rest (in the trial's steps, and in every step once the trial keeps it).
    Every step's numbers, and the read ordered after the first update, are the serial ones."""
    serial = _train(1, steps=50)
    _profiled_as(monkeypatch, ("MatMul", "BatchMatMulV2", "ResourceApplyAdam", "ResourceApplyGradientDescent"))
    runs = _recording_halves(monkeypatch)
    monkeypatch.setattr(inter_op._Choice, "chose", _keeps_parallel_in_two_parts)
    parallel = _train(2, steps=50)
    assert len(runs) >= 20   # (a fourth of the trial's steps, then every step)
    side_ops = {node.op for _, _, names in runs[0].__dict__["_inter_op_choices"][2].halves.side for node in names}
    assert "ResourceApplyAdam" in side_ops and "ResourceApplyGradientDescent" not in side_ops
    _assert_same_training(serial, parallel)


def test_the_side_part_waits_for_the_shared_values_it_reads(monkeypatch):
    """The side part's first op reads a value the step's thread makes late (a py_func that
    sleeps): it waits for it, and every step gives the serial numbers."""
    _profiled_as(monkeypatch, ("MatMul", "PyFunc"))
    runs = _recording_halves(monkeypatch)
    monkeypatch.setattr(inter_op._Choice, "chose", _keeps_parallel_in_two_parts)

    def late(v):
        time.sleep(0.02)
        return v * 2.0
    x = tf.placeholder(tf.float32, [3, 3])
    w = tf.constant(np.arange(9, dtype=np.float32).reshape(3, 3))
    shared = tf.py_func(late, [x], tf.float32)
    shared.set_shape([3, 3])
    fetches = [tf.reduce_sum(tf.matmul(shared, w)), tf.reduce_sum(tf.matmul(w, shared))]
    with tf.Session(config=_config(2)) as sess:
        for k in range(30):
            assert sess.run(fetches, {x: np.full((3, 3), k, np.float32)}) == [216.0 * k, 216.0 * k]
    assert runs


def _in_a_wait(thread: threading.Thread) -> bool:
    """Whether `thread` is blocked in a threading wait (a Condition's or an Event's)."""
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code.co_name == "wait" and frame.f_code.co_filename == threading.__file__:
            return True
        frame = frame.f_back
    return False


def _until(condition, what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.001)


def test_a_part_takes_all_the_cores_while_the_other_waits_for_it_or_is_done():
    """The two parts of a step each split their kernels into their share of the cores, and into
    all of them while the other part waits for this one (a GAN's generator, whose output the
    discriminator's part waits for) or is done: a product then runs on oneDNN's whole team."""
    pool = inter_op.InterOpPool(2, name="halves-test")
    shares: dict = {}
    pool_thread: list = []

    def side_started():
        pool_thread.append(threading.current_thread())
    main_thread = threading.current_thread()

    def record(key):
        def op():
            shares[key] = intra_op.thread_share()
        return op

    def main_first():   # (until the side waits for this thread's next run)
        _until(lambda: pool_thread and _in_a_wait(pool_thread[0]), "waited")
    def side_first():   # (until the step's thread is done, waiting for the side's end)
        _until(lambda: _in_a_wait(main_thread), "waited")
    plan = SimpleNamespace(_execute=lambda vals, steps, offset, names=None: [op() for op in steps])
    main = [([main_first], [None], -1), ([record("main while the side waits")], [None], 1),
            ([record("main while the side runs")], [None], -1)]
    side = [(-1, [side_started], [None]), (1, [side_first], [None]), (1, [record("side after main")], [None])]
    inter_op._Halves(plan, main, side).run([], pool)
    pool.close()
    assert shares == {"main while the side waits": None, "main while the side runs": pool.intra_op_share,
                      "side after main": None}
    assert intra_op.thread_share() is None   # (this thread's own cap, restored)


@pytest.mark.parametrize("own", [5e-3, 2e-5])
def test_a_parallel_step_runs_with_a_short_gil_switch_interval_and_leaves_the_processs_own(monkeypatch, own):
    """While a step runs in parallel, a thread waits at most 100 us for the GIL another holds
    (Python's default: 5 ms, which a step's thread back from a product waited, for the other's
    run of small ops); before and after, and in a serial step, the interval is the process's own
    (a shorter one of its own stays)."""
    monkeypatch.setenv("TENSORWEAVE_INTER_OP", "parallel")
    seen: list = []

    def interval(v):
        seen.append(sys.getswitchinterval())
        return v
    x = tf.placeholder(tf.float32, [3])
    left = tf.py_func(interval, [x], tf.float32)
    right = tf.py_func(interval, [x + 1.0], tf.float32)
    previous = sys.getswitchinterval()
    sys.setswitchinterval(own)
    try:
        for threads in (2, 1):
            with tf.Session(config=_config(threads)) as sess:
                assert sess.run([tf.reduce_sum(left), tf.reduce_sum(right)], {x: np.ones(3, np.float32)}) == [3.0, 6.0]
            assert sys.getswitchinterval() == pytest.approx(own)
    finally:
        sys.setswitchinterval(previous)
    assert seen == pytest.approx([min(own, 1e-4)] * 2 + [own] * 2)


def test_a_session_run_inside_a_parallel_steps_py_func_completes(monkeypatch):
    """A py_func that runs a step of the same session (whose plan would hand ops to the pool) is
    run by the pool's thread in the outer step's parallel ways: the inner step runs serially
    there, where its hand-offs would wait behind the thread waiting for them."""
    _profiled_as(monkeypatch, ("MatMul", "PyFunc"))
    w = tf.constant(np.eye(3, dtype=np.float32))
    inner_x = tf.placeholder(tf.float32, [3, 3])
    inner = tf.matmul(inner_x, w) + tf.matmul(w, inner_x)   # (two independent products: handed off)
    sess = tf.Session(config=_config(2))

    def nested(v):
        return sess.run(inner, {inner_x: v})
    x = tf.placeholder(tf.float32, [3, 3])
    outer = tf.py_func(nested, [x], tf.float32)
    fetches = [tf.reduce_sum(tf.matmul(outer, w)), tf.reduce_sum(tf.matmul(w, x))]
    results: list = []

    def steps():
        for k in range(40):
            results.append(sess.run(fetches, {x: np.full((3, 3), k, np.float32)}))
    runner = threading.Thread(target=steps, daemon=True)
    runner.start()
    runner.join(120)
    sess.close()
    assert not runner.is_alive() and len(results) == 40
    assert results[-1] == [2 * 9 * 39.0, 9 * 39.0]


@pytest.mark.parametrize("failing", ["left", "right"])
def test_a_failure_in_either_part_is_the_steps_error_and_the_next_step_runs(monkeypatch, failing):
    """Two fetched branches, one failing on a bad feed: whichever part it is in, the step raises
    its error (nothing left waiting or running) and the next step runs in two parts again."""
    _profiled_as(monkeypatch, ("MatMul",))
    runs = _recording_halves(monkeypatch)
    monkeypatch.setattr(inter_op._Choice, "chose", _keeps_parallel_in_two_parts)
    x = tf.placeholder(tf.float32, [None, None])
    w = tf.constant(np.ones((3, 3), np.float32))
    shaped = tf.matmul(x, w, name="shaped")                        # fails unless x has 3 columns
    any_shape = tf.matmul(x, tf.transpose(x), name="any_shape")    # takes any x
    branches = {"left": (shaped, any_shape), "right": (any_shape, shaped)}[failing]
    fetches = [tf.reduce_sum(tf.square(b)) for b in branches]
    good = np.ones((3, 3), np.float32)
    with tf.Session(config=_config(2)) as sess:
        for _ in range(40):
            assert sess.run(fetches, {x: good}) == [81.0, 81.0]
        assert runs
        with pytest.raises(tf.errors.InvalidArgumentError, match="shaped"):
            sess.run(fetches, {x: np.ones((2, 2), np.float32)})
        before = len(runs)
        assert sess.run(fetches, {x: good}) == [81.0, 81.0] and len(runs) == before + 1


def test_a_parallel_traced_step_records_every_op(monkeypatch):
    monkeypatch.setenv("TENSORWEAVE_INTER_OP", "parallel")
    a = tf.constant(np.ones((4, 4), np.float32))
    y = tf.add(tf.matmul(a, a, name="left"), tf.matmul(a, a, name="right"), name="sum")
    with tf.Session(config=_config(2)) as sess:
        meta = tf.RunMetadata()
        out = sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    np.testing.assert_array_equal(out, np.full((4, 4), 8.0, np.float32))
    names = {s.node_name for d in meta.step_stats.dev_stats for s in d.node_stats}
    assert {"left", "right", "sum"} <= names


def test_thread_counts_follow_tf(monkeypatch):
    monkeypatch.setenv("TF_NUM_INTEROP_THREADS", "3")
    assert inter_op.inter_op_threads(tf.ConfigProto()) == 3
    assert inter_op.inter_op_threads(tf.ConfigProto(inter_op_parallelism_threads=5)) == 5
    monkeypatch.delenv("TF_NUM_INTEROP_THREADS")
    assert inter_op.inter_op_threads(tf.ConfigProto()) == inter_op.available_cores() >= 1


@pytest.mark.parametrize("files, quota", [
    ({"cpu.max": "150000 100000\n"}, 1.5),
    ({"cpu.max": "50000 100000\n"}, 0.5),   # half a core: one thread
    ({"cpu.max": "max 100000\n"}, None),
    ({"cpu/cpu.cfs_quota_us": "300000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 3.0),
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
    ({}, None),
])
def test_a_containers_cpu_quota_caps_the_default_thread_count(tmp_path, files, quota):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert limits._cgroup_cpu_quota(str(tmp_path)) == quota
    affinity = limits.available_cores(str(tmp_path / "none"))
    expected = affinity if quota is None else min(affinity, int(np.ceil(quota)))
    assert limits.available_cores(str(tmp_path)) == expected


def test_tensorweave_launch_shares_out_the_containers_cpu_quota_not_the_nodes_cores(tmp_path, monkeypatch):
    (tmp_path / "cpu.max").write_text("150000 100000\n")            # 1.5 CPUs: 2 threads' worth
    monkeypatch.setattr(limits.os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    monkeypatch.setattr(cli, "available_cores", lambda: limits.available_cores(str(tmp_path)))
    for var in cli.BLAS_THREAD_VARS:
        monkeypatch.delenv(var, raising=False)
    assert cli.blas_threads_env(1) == {v: "2" for v in cli.BLAS_THREAD_VARS}
    assert cli.blas_threads_env(3) == {v: "1" for v in cli.BLAS_THREAD_VARS}
    (tmp_path / "cpu.max").write_text("max 100000\n")                 # no quota: the 16 cores
    assert cli.blas_threads_env(4) == {v: "4" for v in cli.BLAS_THREAD_VARS}


def test_a_forked_child_gets_pool_threads_of_its_own():
    got_a, got_b = _cross_wait()
    sess = tf.Session(config=_config(2))
    assert sess.run([got_a, got_b], options=tf.RunOptions(timeout_in_ms=60000)) == [1.0, 2.0]   # (threads started)
    pid = os.fork()
    if pid == 0:   # the child: the parent's pool thread is not here; the step needs two threads
        try:
            ok = sess.run([got_a, got_b], options=tf.RunOptions(timeout_in_ms=60000)) == [1.0, 2.0]
        except BaseException:   # noqa: BLE001 - the exit status says
            ok = False
        os._exit(0 if ok else 1)
    try:
        for _ in range(1200):   # (a child stuck on a lock the parent's pool thread held must not hang the test)
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's step did not finish in 120 s")
    finally:
        sess.close()
    assert os.waitstatus_to_exitcode(status) == 0


def test_pool_threads_split_elementwise_work_into_their_share_of_the_cores():
    pool = inter_op.InterOpPool(inter_op.available_cores())   # one thread per core: no split on its threads
    calls: list = []
    done = threading.Event()

    def job():
        intra_op.parallel_ranges(1000, 1 << 24, lambda a, b: calls.append((a, b)))
        done.set()
    pool.submit(job)
    assert done.wait(60)
    pool.close()
    assert calls == [(0, 1000)]
    here: list = []
    intra_op.parallel_ranges(1000, 1 << 24, lambda a, b: here.append((a, b)))
    assert len(here) == min(intra_op.THREADS, 1000)   # (this thread: no cap)
    x = np.arange(1 << 18, dtype=np.float32)
    previous = intra_op.cap_parts(1)
    try:
        np.testing.assert_array_equal(intra_op.split_elementwise(np.multiply, x, x), x * x)
    finally:
        intra_op.cap_parts(previous)


def test_a_distributed_steps_partition_runs_serially_even_when_parallel_is_asked(monkeypatch):
    """A plan with a Recv from another task never goes parallel: with one pool shared by the steps
    a task serves at once, every thread could wait in a Recv while the Sends that would free the
    other tasks' steps are queued (the CIFAR-10 ps job hung so); the serial order sends first."""
    monkeypatch.setenv("TENSORWEAVE_INTER_OP", "parallel")
    names = [NodeDef("recv", "_Recv"), NodeDef("dequeue", "QueueDequeueV2"), NodeDef("dequeue_1", "QueueDequeueV2")]
    choice = inter_op._Choice(SimpleNamespace(_names=names, _node_steps=len(names)))
    assert choice.mode == inter_op._SERIAL and choice.graph is None


def test_a_trial_that_keeps_serial_steps_measures_every_way_again_the_next_time():
    """A trial keeps only the fastest parallel way to measure against serial later; once serial
    steps win, the next trial measures every way again (eight steps of each on a busy machine
    may have ranked them wrongly, and the plan would keep measuring the wrong one)."""
    names = [NodeDef("a", "MatMul"), NodeDef("b", "MatMul")]
    choice = inter_op._Choice(SimpleNamespace(_names=names, _node_steps=len(names)))
    every = (inter_op._OFFLOAD, inter_op._HALVES, inter_op._RUN)
    choice.ways = choice.every_way = every
    choice.trial()
    choice.times = tuple([t] * inter_op._TRIAL_STEPS for t in (1.0, 0.7, 0.8, 0.5))
    choice.chose()
    assert choice.mode == inter_op._PARALLEL and choice.ways == (inter_op._RUN,)
    choice.trial()
    choice.times = ([1.0] * inter_op._TRIAL_STEPS, [1.5] * inter_op._TRIAL_STEPS)
    choice.chose()
    assert choice.mode == inter_op._SERIAL and choice.ways == every
    choice.trial()
    assert len(choice.times) == 1 + len(every)


def test_a_trials_choice_is_tried_again_soon_and_then_less_often():
    """A plan that chose serial in a trial taken while another process held the second core
    (parallel steps slower) is tried again after _FIRST_RECHECK steps and runs in parallel once
    that measures faster; trials that confirm a clear choice come later, at doubling intervals up to
    _RECHECK_STEPS (issue 26: a 300-step program kept a choice made in a busy moment)."""
    names = [NodeDef("a", "MatMul"), NodeDef("b", "MatMul")]
    choice = inter_op._Choice(SimpleNamespace(_names=names, _node_steps=len(names)))

    def trial(parallel_seconds: float) -> None:
        choice.times = ([1.0] * inter_op._TRIAL_STEPS, [parallel_seconds] * inter_op._TRIAL_STEPS)
        choice.chose()

    def steps_until_trial() -> int:
        steps = 0
        while choice.mode != inter_op._TRIAL:
            choice.counted()
            steps += 1
        return steps

    trial(1.05)   # (close)
    assert choice.mode == inter_op._SERIAL and steps_until_trial() == inter_op._FIRST_RECHECK
    trial(0.5)
    assert choice.mode == inter_op._PARALLEL and steps_until_trial() == inter_op._FIRST_RECHECK   # (a change)
    gaps = []
    for _ in range(4):
        trial(0.5)
        gaps.append(steps_until_trial())
    assert gaps == [min(inter_op._RECHECK_STEPS, inter_op._CLEAR_RECHECK * 2 ** k) for k in range(4)]
    trial(0.9)   # (close to the threshold: tried again soon, whichever it chose)
    assert choice.mode == inter_op._PARALLEL and steps_until_trial() == inter_op._FIRST_RECHECK
