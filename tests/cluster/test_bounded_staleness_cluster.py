"""Bounded-staleness ps training with real processes on loopback: 1 ps (a server process) and 2
workers (tests/cluster/staleness_trainer.py, each serving its own worker task). Every worker logs,
at the start of each step, the step counts on the ps (its own and the other's, counted after each
applied update); the bound is checked on those records, not on timing."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TRAINER = os.path.join(HERE, "staleness_trainer.py")
WORKERS = (("worker", 0), ("worker", 1))


def start_worker(c, index: int, log, **flags):
    args = [sys.executable, TRAINER, "--cluster", json.dumps(c.spec), "--task_index", str(index), "--log", str(log),
            *[f"--{k}={v}" for k, v in flags.items()]]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=c.env, start_new_session=True)


def finish(proc, timeout: float = 240) -> str:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"a worker hung:\n{err.decode(errors='replace')[-3000:]}")
    assert proc.returncode == 0 and b"DONE" in out, err.decode(errors="replace")[-3000:]
    return err.decode(errors="replace")


def records(log) -> list:
    with open(log) as f:
        return [json.loads(line) for line in f]


def assert_bound(recs: list, staleness: int) -> None:
    """At the start of each step, this worker (its own count = the steps it completed) was at most
    `staleness` steps ahead of the other, and the other at most staleness + 1 ahead of it (the
    other's step in flight: counted once applied, before that worker waits)."""
    for r in recs:
        (other,) = r["others"]
        assert r["own"] - other <= staleness, recs
        assert other - r["own"] <= staleness + 1, recs


def run_pair(c, tmp_path, flags0: dict, flags1: dict) -> tuple:
    logs = [tmp_path / "w0.jsonl", tmp_path / "w1.jsonl"]
    procs = [start_worker(c, 0, logs[0], **flags0), start_worker(c, 1, logs[1], **flags1)]
    try:
        errs = [finish(p) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    return [records(log) for log in logs], errs


@pytest.mark.parametrize("staleness, sleep1", [(0, 0.0), (2, 0.3)])
def test_no_worker_runs_more_than_staleness_steps_ahead(start_cluster, tmp_path, staleness, sleep1):
    # staleness 0: in lock step; staleness 2: worker 1 sleeps before each step, and worker 0 gets
    # at most 2 steps ahead of it
    c = start_cluster({"ps": 1, "worker": 2}, in_process=WORKERS)
    (recs0, recs1), _ = run_pair(c, tmp_path, {"staleness": staleness, "steps": 10},
                                 {"staleness": staleness, "steps": 10, "sleep": sleep1})
    assert [r["own"] for r in recs0] == list(range(10)) and [r["own"] for r in recs1] == list(range(10))
    assert_bound(recs0, staleness)
    assert_bound(recs1, staleness)


def test_a_finished_worker_frees_the_others(start_cluster, tmp_path):
    # worker 1 stops after 3 steps (its session's end leaves the bound); worker 0 goes on alone to
    # 12, with a worker timeout far beyond the test's: leaving, not the timeout, released it
    c = start_cluster({"ps": 1, "worker": 2}, in_process=WORKERS)
    (recs0, recs1), _ = run_pair(c, tmp_path, {"staleness": 0, "steps": 12, "worker_timeout": 3600},
                                 {"staleness": 0, "steps": 3, "worker_timeout": 3600})
    assert len(recs0) == 12 and len(recs1) == 3
    assert_bound(recs0[:3], 0)
    assert [r["others"] for r in recs0[4:]] == [[3]] * 8
    assert "not heard from" not in c.stderr("ps", 0)


def test_a_killed_worker_is_dropped_from_the_bound_and_the_others_finish(start_cluster, tmp_path):
    c = start_cluster({"ps": 1, "worker": 2}, in_process=WORKERS)
    logs = [tmp_path / "w0.jsonl", tmp_path / "w1.jsonl"]
    slow = start_worker(c, 1, logs[1], staleness=0, steps=1000, sleep=0.5, worker_timeout=2)
    fast = start_worker(c, 0, logs[0], staleness=0, steps=12, worker_timeout=2)
    try:
        deadline = time.monotonic() + 240
        while not (logs[1].exists() and len(records(logs[1])) >= 2):
            assert slow.poll() is None and fast.poll() is None, "a worker exited early"
            assert time.monotonic() < deadline, "worker 1 did not take 2 steps"
            time.sleep(0.2)
        os.killpg(slow.pid, signal.SIGKILL)
        slow.wait(30)
        finish(fast)
    finally:
        for p in (slow, fast):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    assert len(records(logs[0])) == 12
    # the ps dropped worker 1 once it had stepped (a short worker_timeout may also drop it while it
    # starts, which is no failure: it rejoins)
    dropped_at = [int(n) for n in re.findall(r"worker 1 \(at step (\d+)\) not heard from .* dropped from the bound",
                                             c.stderr("ps", 0))]
    assert dropped_at and max(dropped_at) >= 2, c.stderr("ps", 0)[-3000:]
