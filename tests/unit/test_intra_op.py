"""Intra-op parallelism (ops/intra_op.py) and the kernels that split their work over it:
forced to split even small inputs, results equal the unsplit numpy computation."""
import threading
import weakref

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops import onednn
from tensorweave.ops import intra_op
from tensorweave.ops.state import optimizer_updates
from tensorweave.ops.nn import pool_kernels

from unit_helpers import run

pytestmark = pytest.mark.usefixtures("graph")
rng = np.random.RandomState(3)


@pytest.fixture
def split_everything(monkeypatch):
    monkeypatch.setattr(intra_op, "_MIN_ELEMS", 1)
    monkeypatch.setattr(intra_op, "THREADS", 3)
    monkeypatch.setattr(onednn, "AVAILABLE", False)   # the numpy kernels, which split


def test_parallel_ranges_covers_each_index_once_on_several_threads(split_everything):
    seen, threads = [], set()
    other_ran = threading.Event()

    def part(a, b):
        if a == 0:   # the caller's part: until a pool thread has taken one (the caller runs the rest)
            other_ran.wait(30)
        else:
            other_ran.set()
        seen.extend(range(a, b))
        threads.add(threading.get_ident())
    intra_op.parallel_ranges(10, 10, part)
    assert sorted(seen) == list(range(10))
    assert len(threads) >= 2
    seen.clear()
    intra_op.parallel_ranges(2, 10, part)   # fewer items than threads
    assert sorted(seen) == [0, 1]
    intra_op.parallel_ranges(0, 0, part)   # nothing to do: fn not called


def test_parallel_ranges_runs_parts_itself_while_pool_threads_are_busy(split_everything):
    """Parts no pool thread has started run on the caller: a busy pool (or one waiting for a core
    on a loaded machine) does not hold the kernel up."""
    release = threading.Event()
    pool = intra_op._get_pool()
    blockers = [pool.submit(release.wait, 60) for _ in range(pool._max_workers)]
    seen, threads, done = [], set(), threading.Event()

    def part(a, b):
        seen.extend(range(a, b))
        threads.add(threading.get_ident())

    def call():
        intra_op.parallel_ranges(12, 12, part)
        done.set()
    caller = threading.Thread(target=call)
    caller.start()
    try:
        assert done.wait(30)
    finally:
        release.set()
        caller.join()
        for b in blockers:
            b.result()
    assert sorted(seen) == list(range(12)) and threads == {caller.ident}


def test_a_part_the_caller_ran_itself_keeps_nothing_alive(split_everything):
    """A part no pool thread has started is cancelled and run by the caller, but waits in the
    pool's queue until a thread takes it: it must not keep the kernel's arrays alive until then (a
    loaded machine's step held 3-8 values of 1 MiB at once where it holds 3)."""
    release = threading.Event()
    pool = intra_op._get_pool()
    blockers = [pool.submit(release.wait, 60) for _ in range(pool._max_workers)]
    try:
        x = np.ones(12)
        gone = weakref.ref(x)

        def part(a, b, x=x):
            x[a:b] += 1
        intra_op.parallel_ranges(12, 12, part)
        assert (x == 2).all()
        del x, part
        assert gone() is None   # (the pool's threads are still busy: the cancelled parts are queued)
    finally:
        release.set()
        for b in blockers:
            b.result()


def test_parallel_ranges_raises_a_part_error(split_everything):
    def part(a, b):
        if a:
            raise ValueError(f"bad part {a}")
    with pytest.raises(ValueError, match="bad part"):
        intra_op.parallel_ranges(9, 9, part)


def test_split_elementwise_matches_numpy(split_everything):
    x = rng.randn(7, 3, 4).astype(np.float32)
    b = rng.randn(4).astype(np.float32)
    np.testing.assert_array_equal(intra_op.split_elementwise(np.add, x, b), x + b)
    np.testing.assert_array_equal(intra_op.split_elementwise(np.maximum, x, np.zeros((), np.float32)),
                                  np.maximum(x, 0))
    y = rng.randn(7, 3, 4).astype(np.float32)

    def mul(out, x, y):
        np.multiply(x, y, out=out)
    out = intra_op.split_elementwise(mul, x, y, ufunc=False)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, x * y)
    # a result broadcast wider than x is computed whole
    np.testing.assert_array_equal(intra_op.split_elementwise(np.add, x[:1], y), x[:1] + y)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_bias_add_and_grads_split(split_everything, dtype):
    x = rng.randn(6, 5, 4, 3).astype(dtype)
    b = rng.randn(3).astype(dtype)
    g = rng.randn(6, 5, 4, 3).astype(dtype)
    g[0, 0, 0] = np.inf   # inf * 0 stays NaN where the unit is off, as g * (y > 0)
    xt, bt = tf.constant(x), tf.constant(b)
    y = tf.nn.relu(tf.nn.bias_add(xt, bt))
    dx, db = tf.gradients(y, [xt, bt], grad_ys=tf.constant(g))
    nchw = tf.nn.bias_add(tf.constant(x.transpose(0, 3, 1, 2)), bt, data_format="NCHW")
    out, out_dx, out_db, out_nchw = run([y, dx, db, nchw])
    ref = np.maximum(x + b, 0)
    with np.errstate(invalid="ignore"):
        ref_dx = g * (ref > 0)
    assert out.dtype == out_dx.dtype == out_db.dtype == dtype
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(out_dx, ref_dx)
    np.testing.assert_allclose(out_db, ref_dx.sum(axis=(0, 1, 2)), rtol=1e-5)
    np.testing.assert_array_equal(out_nchw, (x + b).transpose(0, 3, 1, 2))


def test_max_pool_and_grad_split_over_threads(split_everything, monkeypatch):
    """Chunks of one image shared out over three threads: every window's gradient still goes to
    its first maximum in row-major order (relu-like inputs, many ties)."""
    monkeypatch.setattr(pool_kernels, "_GRAD_CHUNK", 1)
    monkeypatch.setattr(pool_kernels, "_FWD_CHUNK", 1)
    x = np.maximum(rng.randint(-3, 3, (5, 7, 8, 2)), 0).astype(np.float32)
    g = rng.randn(5, 4, 4, 2).astype(np.float32)
    xt = tf.constant(x)
    y = tf.nn.max_pool(xt, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
    (dx,) = tf.gradients(y, [xt], grad_ys=[tf.constant(g)])
    out, out_dx = run([y, dx])
    ref = np.full(g.shape, -np.inf, np.float32)
    ref_dx = np.zeros_like(x)
    for n, oy, ox, c in np.ndindex(*g.shape):   # SAME, 7x8 -> 4x4 with 3x3/2: pads 1 on top, none left
        rows = [r for r in range(2 * oy - 1, 2 * oy + 2) if 0 <= r < 7]
        cols = [q for q in range(2 * ox, 2 * ox + 3) if 0 <= q < 8]
        window = [(r, q) for r in rows for q in cols]
        best = max(window, key=lambda rq: (x[n, rq[0], rq[1], c], -window.index(rq)))
        ref[n, oy, ox, c] = x[n, best[0], best[1], c]
        ref_dx[n, best[0], best[1], c] += g[n, oy, ox, c]
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_allclose(out_dx, ref_dx, rtol=1e-6, atol=1e-6)


def test_run_calls_returns_each_calls_result_in_order_and_runs_each_once():
    ran = []
    calls = [lambda i=i: ran.append(i) or i * i for i in range(7)]
    assert intra_op.run_calls(calls) == [i * i for i in range(7)]
    assert sorted(ran) == list(range(7))


def test_run_calls_raises_a_calls_error():
    def fail():
        raise ValueError("the third call")
    with pytest.raises(ValueError, match="the third call"):
        intra_op.run_calls([lambda: 1, lambda: 2, fail])


@pytest.mark.parametrize("rule", optimizer_updates._RULES, ids=lambda r: r.op_type)
def test_optimizer_updates_in_chunks_give_the_whole_update(rule, monkeypatch):
    """A large variable's update runs in chunks on several threads (here 8 elements of a 13x5
    variable, a last chunk short; a multiple of a vector, as the chunks are: Ftrl's pow is the C
    library's after the last whole vector, as TF's), into new arrays or its own: every element as
    one whole-array update computes it."""
    var, *slots = (rng.uniform(0.1, 2.0, (13, 5)).astype(np.float32) for _ in range(1 + rule.n_slots))
    grad = rng.standard_normal((13, 5)).astype(np.float32)
    scalars = [np.float32(0.9) if "beta" in s or s in ("rho", "momentum") else np.float32(0.05) for s in rule.scalars]
    attrs = {a: a == "update_slots" for a in rule.attrs if a != "use_locking"}
    whole = optimizer_updates._apply(rule, [var, *slots], scalars, grad, attrs)
    monkeypatch.setattr(intra_op, "_MIN_ELEMS", 8)
    monkeypatch.setattr(intra_op, "THREADS", 3)
    chunked = optimizer_updates._apply(rule, [var, *slots], scalars, grad, attrs)
    in_place = [var.copy(), *(s.copy() for s in slots)]   # (as the kernel writes a large variable)
    optimizer_updates._apply(rule, in_place, scalars, grad, attrs, out=in_place)
    for a, b, c in zip(whole, chunked, in_place):
        assert b.shape == a.shape and b.dtype == a.dtype
        np.testing.assert_array_equal(b, a)
        np.testing.assert_array_equal(c, a)
