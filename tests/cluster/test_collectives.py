"""Collective ops between real server processes on loopback (ops/collective_ops.py,
distributed/collectives.py): each member task runs its own session (between-graph, as
MultiWorkerMirroredStrategy does), all-reduce / gather / broadcast equal numpy's, the same
instance keys meet again on every step, and a killed member fails the others' step with
UnavailableError within the timeout instead of a hang."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed import collectives
from tensorweave.framework import errors
from tensorweave.ops import collective_ops as co

DTYPES = (np.float32, np.float64, np.int32)
SIZES = (0, 1, 7, 1001)   # empty, one element, lengths not divisible by 2 or 4
REDUCTIONS = {("Add", "Id"): np.sum, ("Add", "Div"): None, ("Max", "Id"): np.max, ("Min", "Id"): np.min,
              ("Mul", "Id"): np.prod}


def _member_value(rank: int, step: int, dtype, n: int) -> np.ndarray:
    rng = np.random.RandomState(1000 * step + 10 * rank + n)
    return (rng.randint(-5, 6, n) if np.dtype(dtype).kind == "i" else rng.randn(n) * 10).astype(dtype)


def _expected(op, values: list) -> np.ndarray:
    stacked = np.stack(values)
    if op == ("Add", "Div"):
        total = np.sum(stacked, axis=0, dtype=stacked.dtype)
        return np.trunc(total / len(values)).astype(total.dtype) if total.dtype.kind == "i" \
            else total / total.dtype.type(len(values))
    return REDUCTIONS[op](stacked, axis=0).astype(stacked.dtype)


def _run_members(c, size: int, build, steps: int = 1, config=None) -> list:
    """Runs `build(rank) -> (fetches, feeds(step) -> feed_dict)` in a graph on worker `rank`,
    each member in its own session and thread, for `steps` steps; [rank][step] -> values (or
    the exception a member's step raised)."""
    results: list = [[None] * steps for _ in range(size)]

    def member(rank: int) -> None:
        with tf.Graph().as_default():
            with tf.device(f"/job:worker/task:{rank}"):
                fetches, feeds = build(rank)
            with tf.Session(c.target("worker", rank), config=config) as sess:
                for step in range(steps):
                    try:
                        results[rank][step] = sess.run(fetches, feeds(step))
                    except Exception as e:  # noqa: BLE001 - the test inspects it
                        results[rank][step] = e
                        return
    threads = [threading.Thread(target=member, args=(r,), daemon=True) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads), "a member's session hung"
    return results


def _check(results, want) -> None:
    for rank, per_step in enumerate(results):
        for step, got in enumerate(per_step):
            if isinstance(got, Exception):
                raise got
            for key, value in got.items():
                expect = want(step, key)
                assert value.dtype == expect.dtype and value.shape == expect.shape, (rank, step, key)
                tol = 1e-5 if value.dtype == np.float32 else 1e-12
                np.testing.assert_allclose(value, expect, rtol=tol, atol=tol * 100, err_msg=f"{rank} {step} {key}")
                np.testing.assert_array_equal(value, results[0][step][key])   # identical on every member


@pytest.mark.parametrize("size", [2, 4])
def test_all_reduce_of_every_dtype_length_and_reduction_equals_numpy_on_every_step(start_cluster, size):
    c = start_cluster({"worker": size})
    cases = [(dt, n, op) for dt in DTYPES for n in SIZES for op in REDUCTIONS
             if not (op[0] == "Mul" and np.dtype(dt).kind == "f" and n > 7)]

    def build(rank):
        fetches, phs = {}, {}
        for key, (dt, n, op) in enumerate(cases):
            phs[key] = tf.placeholder(tf.as_dtype(dt), [n])
            fetches[key] = co.all_reduce(phs[key], size, group_key=1, instance_key=key + 1, merge_op=op[0],
                                         final_op=op[1])
        return fetches, lambda step: {phs[k]: _member_value(rank, step, dt, n) for k, (dt, n, _) in enumerate(cases)}

    results = _run_members(c, size, build, steps=2)
    _check(results, lambda step, key: _expected(cases[key][2], [
        _member_value(r, step, cases[key][0], cases[key][1]) for r in range(size)]))


def test_a_16_mib_all_reduce_over_4_tasks_equals_numpy(start_cluster):
    c = start_cluster({"worker": 4})
    n = (4 << 20) + 3   # 16 MiB of float32 and an odd tail

    def value(rank, step):
        return np.full(n, rank + 1, np.float32) + np.arange(n, dtype=np.float32) % 7 * (step + 1)

    def build(rank):
        x = tf.placeholder(tf.float32, [n])
        return {"sum": co.all_reduce(x, 4, 2, 1), "mean": co.all_reduce(x, 4, 2, 2, final_op="Div")}, \
            lambda step: {x: value(rank, step)}

    results = _run_members(c, 4, build, steps=2)
    want = {(step, key): (sum(value(r, step).astype(np.float64) for r in range(4)) / (4 if key == "mean" else 1))
            .astype(np.float32) for step in range(2) for key in ("sum", "mean")}
    _check(results, lambda step, key: want[step, key])


def test_gather_broadcast_and_packed_small_tensors(start_cluster):
    c = start_cluster({"worker": 3})

    def build(rank):
        part = tf.placeholder(tf.int32, [None, 2])
        fetches = {"gathered": co.all_gather(part, 3, group_key=5, instance_key=1)}
        small = [tf.constant(_small(rank, i)) for i in range(len(SMALL_SHAPES))]
        for i, t in enumerate(co.all_reduce_packed(small, 3, group_key=5, instance_key=10, bytes_per_pack=256)):
            fetches[f"packed{i}"] = t
        if rank == 1:
            x = tf.placeholder(tf.float64, [2, 3])
            fetches["bcast"] = co.broadcast_send(x, [2, 3], tf.float64, 3, 5, 2)
            return fetches, lambda step: {part: _part(rank, step), x: _bcast(step)}
        fetches["bcast"] = co.broadcast_recv([2, 3], tf.float64, 3, 5, 2)
        return fetches, lambda step: {part: _part(rank, step)}

    def want(step, key):
        if key.startswith("packed"):
            return sum(_small(r, int(key[6:])) for r in range(3)).astype(_small(0, int(key[6:])).dtype)
        return np.concatenate([_part(r, step) for r in range(3)]) if key == "gathered" else _bcast(step)

    results = _run_members(c, 3, build, steps=2)
    _check(results, want)


SMALL_SHAPES = [(i % 4 + 1, 3) if i % 3 else (i % 5,) for i in range(30)]


def _small(rank, i):
    dtype = np.int32 if i % 4 == 0 else np.float64 if i % 4 == 1 else np.float32
    return (np.arange(int(np.prod(SMALL_SHAPES[i])), dtype=dtype).reshape(SMALL_SHAPES[i]) + rank * i).astype(dtype)


def _part(rank, step):
    return np.arange(2 * (rank + 1), dtype=np.int32).reshape(rank + 1, 2) + 100 * rank + 1000 * step


def _bcast(step):
    return np.arange(6, dtype=np.float64).reshape(2, 3) * (step + 1.5)


@pytest.mark.parametrize("limit", ["operation_timeout_in_ms", "timeout_seconds", "no timeout"])
def test_a_killed_member_fails_the_others_with_unavailable_within_the_timeout(start_cluster, limit):
    """With a timeout, within it; with none, once a ping of the dead member goes unanswered
    (collectives.PROBE_S, PROBE_TIMEOUT_S): never a hang."""
    c = start_cluster({"worker": 3})
    n = 1 << 18
    config = tf.ConfigProto(operation_timeout_in_ms=4000) if limit == "operation_timeout_in_ms" else None
    timeout_s = 4.0 if limit == "timeout_seconds" else 0

    def build(rank):
        x = tf.placeholder(tf.float32, [n])
        return co.all_reduce(x, 3, 7, 1, timeout=timeout_s), lambda step: {x: np.full(n, rank + 1.0, np.float32)}

    results = _run_members(c, 3, build, config=config)   # the group met once
    for per_step in results:
        np.testing.assert_array_equal(per_step[0], np.full(n, 6.0, np.float32))
    c.kill("worker", 2)
    started = time.monotonic()
    results = _run_members(c, 2, build, config=config)
    elapsed = time.monotonic() - started
    for per_step in results:
        assert isinstance(per_step[0], errors.UnavailableError), per_step[0]
        assert "CollectiveReduce" in str(per_step[0])
    assert any("/job:worker/replica:0/task:2" in str(per_step[0]) for per_step in results)   # the dead one named
    assert elapsed < 4.0 + collectives.PROBE_S + collectives.PROBE_TIMEOUT_S + 60.0   # (a loaded machine's slack)
