"""A ps and two workers (examples/distributed_trainer.py) in three network namespaces, each
with its own address and network stack (netns.py), under network faults: a partition shorter
than the recovery window is ridden out without restoring a checkpoint, one longer than the
operation timeout ends each worker with a clean error, a restarted ps is restored, a 50 ms
round trip and packet loss only slow training down. Run as root with `ip` and `nft`; skipped
otherwise. Each test prints one summary line (run with -s to see them)."""
from __future__ import annotations

import datetime
import json
import os
import sys
import time

import pytest

import tensorweave as tf
from tensorweave.distributed.cluster import free_ports

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainer_procs import StepWatcher, TrainerCluster

LOST = "A task was lost ("
RESTORED = ("Restoring parameters", "Restored model from")


@pytest.fixture(autouse=True)
def _short_connect_timeout(monkeypatch):
    # (the test's own reads of a partitioned or killed ps give up after a second)
    monkeypatch.setenv("TENSORWEAVE_CONNECT_TIMEOUT_S", "1")


def _cluster(lab, args, env=None) -> TrainerCluster:
    """A ps and two workers, each in its namespace of `lab` (["ps", "w0", "w1"]), over TCP."""
    ports = free_ports(3)   # (distinct: the same-host socket files of all three share one /tmp)
    hosts = {"ps": [f"{lab.address('ps')}:{ports[0]}"],
             "worker": [f"{lab.address(f'w{i}')}:{ports[1 + i]}" for i in (0, 1)]}
    return TrainerCluster(ps=1, workers=2, args=args, env=env, hosts=hosts,
                          wrap=lambda job, i, argv: lab.command("ps" if job == "ps" else f"w{i}", argv))


def _first_logged(log: str, text: str) -> float:
    """The wall-clock time of the first log line holding `text` (logging's asctime)."""
    line = next(ln for ln in log.splitlines() if text in ln)
    return datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()


def _summary(name: str, **facts) -> None:
    print(f"\nNETNS {name}: " + json.dumps(facts, default=str), flush=True)


def _watch_until_workers_exit(c: TrainerCluster, watch: StepWatcher, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while (c.alive("worker", 0) or c.alive("worker", 1)) and time.monotonic() < deadline:
        watch.read()
        time.sleep(0.05)


def _exit_codes(c: TrainerCluster) -> dict:
    """Every task's exit code, the workers' first (the ps ends once each has reported)."""
    try:
        return {key: c.wait(*key, timeout=30) for key in [("worker", 0), ("worker", 1), ("ps", 0)]}
    except AssertionError as e:
        raise AssertionError(f"{e}\n{c.describe()}") from None


def test_a_5s_partition_from_the_ps_is_ridden_out_without_restoring(netns_lab, tmp_path):
    lab = netns_lab(["ps", "w0", "w1"])
    args = ["--last_step=100000", "--step_delay=0.01", "--verbose=true", f"--checkpoint_dir={tmp_path}",
            "--save_checkpoint_steps=100000"]   # (one checkpoint, at step 0: a restore would go back there)
    with _cluster(lab, args) as c:
        c.start_all()
        watch = StepWatcher(c.hosts["ps"][0])   # (from the root namespace, which the partition spares)
        cut_at = watch.wait_for(50)
        cut, cut_wall = time.monotonic(), time.time()
        lab.partition("ps", ["w0", "w1"])
        time.sleep(5)
        lab.heal("ps")
        healed = time.monotonic()
        went_on_to = watch.wait_for(max(v for _, v in watch.seen) + 100, timeout=60)
        assert c.alive("worker", 0) and c.alive("worker", 1), c.describe()
        during = [v for t, v in watch.seen if cut < t < healed]
        after = [v for t, v in watch.seen if t > healed]
        chief_log = c.stderr("worker", 0)
        logs = chief_log + c.stderr("worker", 1)
        watch.close()
    assert LOST in chief_log, chief_log[-3000:]   # the partition outlasted the heartbeats: the ps was lost
    assert "continuing without restoring a checkpoint" in chief_log, chief_log[-3000:]
    assert not any(r in logs for r in RESTORED), logs[-3000:]
    assert min(after) >= max([cut_at, *during]), watch.seen   # the global step never went back
    _summary("5 s partition (ps | workers)", at_global_step=cut_at, seen_during=[min(during, default=None),
                                                                                 max(during, default=None)],
             went_on_to=went_on_to, seconds_to_detect=round(_first_logged(chief_log, LOST) - cut_wall, 2))


def test_a_20s_partition_ends_each_worker_with_a_clean_error_within_the_operation_timeout(netns_lab):
    lab = netns_lab(["ps", "w0", "w1"])
    timeout_s = 8
    args = ["--last_step=100000", "--step_delay=0.01", "--verbose=true", f"--operation_timeout_ms={timeout_s * 1000}"]
    with _cluster(lab, args) as c:
        c.start_all()
        watch = StepWatcher(c.hosts["ps"][0])
        cut_at = watch.wait_for(30)
        watch.close()
        lab.partition("ps", ["w0", "w1"])
        cut = time.monotonic()
        took, codes = {}, {}
        for i in (0, 1):   # before the 20 s are over: no worker waits for the partition to end
            codes[i] = c.wait("worker", i, timeout=20 - (time.monotonic() - cut))
            took[i] = round(time.monotonic() - cut, 1)
        lab.heal("ps")
        errs = [c.stderr("worker", i) for i in (0, 1)]
    for i in (0, 1):
        assert codes[i] not in (0, None), errs[i][-3000:]
        last = [ln for ln in errs[i].splitlines() if "Error" in ln][-1]
        assert "UnavailableError" in last or "DeadlineExceededError" in last, errs[i][-3000:]
        assert "Traceback" in errs[i] and "Fatal Python error" not in errs[i], errs[i][-3000:]
    assert any("operation_timeout_in_ms" in e or "DeadlineExceededError" in e for e in errs), errs[0][-3000:]
    _summary("20 s partition, operation_timeout_in_ms=8000", at_global_step=cut_at, seconds_to_exit=took,
             errors=[[ln for ln in e.splitlines() if "Error" in ln][-1][:240] for e in errs])


def test_a_restarted_ps_in_its_namespace_is_restored_from_the_checkpoint(netns_lab, tmp_path):
    lab = netns_lab(["ps", "w0", "w1"])
    args = ["--last_step=300", "--step_delay=0.01", "--verbose=true", f"--checkpoint_dir={tmp_path}",
            "--save_checkpoint_steps=20"]
    with _cluster(lab, args) as c:
        c.start_all()
        watch = StepWatcher(c.hosts["ps"][0])
        killed_at = watch.wait_for(60)
        killed_wall = time.time()
        c.kill("ps", 0)
        saved_step = int(tf.train.latest_checkpoint(str(tmp_path)).rsplit("-", 1)[1])
        c.start("ps", 0)
        _watch_until_workers_exit(c, watch, 90)
        codes = _exit_codes(c)
        assert all(rc == 0 for rc in codes.values()), c.describe()
        results = [c.result("worker", i) for i in (0, 1)]
        after = [v for t, v in watch.seen if t > c.started_at[("ps", 0)]]
        chief_log = c.stderr("worker", 0)
        watch.close()
    assert LOST in chief_log and any(r in chief_log for r in RESTORED), chief_log[-3000:]
    assert after and saved_step <= killed_at + 25 and min(after) >= saved_step, (saved_step, watch.seen)
    assert all(r["global_step"] >= 300 and r["loss"] < 0.5 for r in results)
    _summary("ps killed and restarted", at_global_step=killed_at, latest_checkpoint_step=saved_step,
             seen_after_restart=[min(after), max(after)], final_global_step=[r["global_step"] for r in results],
             seconds_to_detect=round(_first_logged(chief_log, LOST) - killed_wall, 2))


def _seconds_per_global_step(c: TrainerCluster, watch: StepWatcher, first: int, last: int) -> float:
    watch.wait_for(first)
    start = time.monotonic()
    watch.wait_for(last)
    return (time.monotonic() - start) / (last - first)


def test_training_over_a_50ms_round_trip_and_10_percent_loss(netns_lab):
    # A direct link, then each worker's connections to the ps through a relay adding 25 ms each
    # way, then that with 10 % of the packets dropped each way: slower, never wrong.
    args = ["--last_step=100000"]
    figures = {}
    for name in ("direct", "50 ms", "50 ms + 10 % loss"):
        lab = netns_lab(["ps", "w0", "w1"])
        with _cluster(lab, args) as c:
            if name != "direct":
                ps_port = int(c.hosts["ps"][0].rsplit(":", 1)[1])
                for w in ("w0", "w1"):
                    lab.delay(w, "ps", ps_port, one_way_ms=25)
            if "loss" in name:
                lab.lose("ps", ["w0", "w1"], percent=10)
            c.start_all()
            watch = StepWatcher(c.hosts["ps"][0])
            per_step = _seconds_per_global_step(c, watch, 20, 60)
            watch.close()
            assert all(c.alive(*key) for key in c.procs), c.describe()
        lab.close()
        figures[name] = round(per_step * 2 * 1000, 1)   # two workers: each made every other step
    # a worker's step is at least a round trip to the ps (pull the variables, push the update)
    assert figures["50 ms"] >= 50 and figures["50 ms + 10 % loss"] >= 50, figures
    _summary("worker step time (ms) over the ps link", **figures)
