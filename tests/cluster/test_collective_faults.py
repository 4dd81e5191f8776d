"""Faults of a collective (MultiWorkerMirroredStrategy) job with real processes on loopback.

A ping of a task whose process is gone fails at once (its host refuses the connection) on every
transport, where a stopped (slow) task is only unanswered and is reached again once it goes on:
so a worker SIGKILLed during an all-reduce fails the others' step at their first ping of it
(tests/cluster/test_multi_worker_mirrored.py), not after a ping's timeout. And when the killed
worker is started again, the job goes on: with MonitoredTrainingSession and with an Estimator
(train_and_evaluate, RunConfig(train_distribute=MWMS)), the surviving worker's session recovers
from the UnavailableError, restores the chief's last checkpoint as the restarted worker does, the
group meets again with the new process, and every process finishes and exits
(tests/cluster/mwms_trainer.py trains; `--gate` holds worker 1 mid-training, to be killed there).
"""
from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed import channel as channel_mod
from tensorweave.distributed import sockets
from tensorweave.framework import errors
from tensorweave.ops import collective_ops as co

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tf_config_job import EXIT_TIMEOUT_S, TFConfigJob

HERE = os.path.dirname(os.path.abspath(__file__))
TRAINER = os.path.join(HERE, "mwms_trainer.py")
GATE, LAST_STEP = 15, 40   # worker 1 waits after step GATE until released; checkpoints every 5 steps


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads whether a process stopped from /proc")
@pytest.mark.parametrize("transport", ["auto", "ipc", "tcp"])
def test_a_ping_of_a_killed_task_is_refused_at_once_and_a_stopped_one_is_waited_for(start_cluster, monkeypatch,
                                                                                     transport):
    c = start_cluster({"local": 1}, env={"TENSORWEAVE_TRANSPORT": transport})
    monkeypatch.setattr(sockets, "TRANSPORT", transport)
    address, task = c.address("local", 0), c.task_name("local", 0)
    pinged = channel_mod.Channel(address, task, 60.0)
    try:
        incarnation = pinged.ping(timeout_s=60)["incarnation"]
        c.pause("local", 0)   # alive, answering nothing: a ping times out, refused by nobody
        try:
            fresh = channel_mod.Channel(address, task, 60.0)   # (a connection made while it is stopped)
            for ch in (pinged, fresh):
                with pytest.raises(errors.UnavailableError) as unanswered:
                    ch.ping(timeout_s=0.5)
                assert "refused" not in str(unanswered.value)
        finally:
            c.resume("local", 0)
        for ch in (pinged, fresh):   # going on, it is reached again
            assert ch.ping(timeout_s=60)["incarnation"] == incarnation
        fresh.close()
        c.kill("local", 0)
        fresh = channel_mod.Channel(address, task, 60.0)
        for ch in (pinged, fresh):
            started = time.monotonic()
            with pytest.raises(errors.UnavailableError, match="connection refused: nothing listens there"):
                ch.ping(timeout_s=60)
            assert time.monotonic() - started < 60   # the refusal is the answer: the ping's timeout is not waited out
        fresh.close()
        c.restart("local", 0)   # a call still waits for a task that starts (again)
        assert pinged.call("get_status", {})["incarnation"] != incarnation
    finally:
        pinged.close()


class CollectiveJob(TFConfigJob):
    """The processes of one MultiWorkerMirroredStrategy job (tests/cluster/mwms_trainer.py) of `workers` workers."""

    def __init__(self, model_dir: str, workers: int, args=(), env=None):
        super().__init__(TRAINER, {"worker": workers}, model_dir, args, env)


def _checkpoint_step(model_dir: str) -> int:
    path = tf.train.latest_checkpoint(model_dir)
    return int(tf.train.load_variable(path, "global_step")) if path else -1


def _kill_mid_training(job: CollectiveJob, victim: int) -> None:
    """Worker 1 holds after step GATE; the chief checkpoints that step and waits in the next
    step's all-reduce for worker 1. The victim is killed there, and worker 1 released (the chief
    killed, worker 1 meets its death in that all-reduce)."""
    deadline = time.monotonic() + EXIT_TIMEOUT_S
    while _checkpoint_step(job.model_dir) < GATE:
        assert time.monotonic() < deadline and all(p.poll() is None for p in job.procs.values()), job.describe()
        time.sleep(0.05)
    assert _checkpoint_step(job.model_dir) == GATE   # (no step past it without worker 1)
    job.kill("worker", victim)
    open(os.path.join(job.model_dir, "gate"), "w").close()


def _kill_mid_training_and_restart(job: CollectiveJob, victim: int) -> None:
    _kill_mid_training(job, victim)
    job.start("worker", victim)


def _assert_restarted_and_finished(job: CollectiveJob, codes: dict, victim: int) -> None:
    for key, code in codes.items():
        assert code == 0, f"{key} exited with {code}:\n{job.describe()}"
    assert _checkpoint_step(job.model_dir) == LAST_STEP
    survivor = job.output("worker", 1 - victim)
    # the survivor's step failed (a refused ping of the dead worker, or, when the new process was
    # up first, its other incarnation), its session recovered and restored the checkpoint of the
    # step it was held at, as the restarted worker did
    assert "A task was lost (UnavailableError" in survivor, survivor[-4000:]
    assert "connection refused" in survivor or f"/job:worker/replica:0/task:{victim} was restarted" in survivor, \
        survivor[-4000:]
    restored = f"Restoring parameters from {os.path.join(job.model_dir, f'model.ckpt-{GATE}')}"
    after_loss = survivor[survivor.index("A task was lost"):]
    assert restored in after_loss, after_loss[-4000:]
    assert restored in job.output("worker", victim), job.output("worker", victim)[-4000:]


@pytest.mark.parametrize("victim", [1, 0], ids=["worker 1", "the chief, worker 0, the group's leader"])
def test_a_killed_worker_started_again_rejoins_a_monitored_training_session_job(tmp_path, victim):
    with CollectiveJob(str(tmp_path), 2, [f"--last_step={LAST_STEP}", f"--gate={GATE}"]) as job:
        for i in range(2):
            job.start("worker", i)
        _kill_mid_training_and_restart(job, victim)
        _assert_restarted_and_finished(job, job.wait_all(), victim)
        chief, worker = job.result("worker", 0), job.result("worker", 1)
        assert chief["step"] == worker["step"] == LAST_STEP
        assert chief["weights"] == worker["weights"]   # mirrored again: the same checkpoint, the same steps since
        reader = tf.train.load_checkpoint(str(tmp_path))
        np.testing.assert_array_equal(reader.get_tensor("w"), np.array(chief["weights"], np.float32))


def test_a_killed_worker_started_again_rejoins_an_estimator_train_and_evaluate_job(tmp_path):
    with CollectiveJob(str(tmp_path), 2, ["estimator", f"--last_step={LAST_STEP}", f"--gate={GATE}"]) as job:
        for task in (("worker", 0), ("worker", 1), ("evaluator", 0)):
            job.start(*task)
        _kill_mid_training_and_restart(job, 1)
        _assert_restarted_and_finished(job, job.wait_all(), 1)
        chief, worker = job.result("worker", 0), job.result("worker", 1)
        assert chief["is_chief"] and not worker["is_chief"] and chief["weights"] == worker["weights"]
        evals = [e for f in (tmp_path / "eval").iterdir() for e in tf.train.summary_iterator(str(f))
                 if any(v.tag == "mae" for v in e.summary.value)]
        assert evals and max(e.step for e in evals) == LAST_STEP   # the evaluator saw the final checkpoint


RECOVERY_TIMEOUT_S = 15


@pytest.mark.parametrize("victim", [1, 0], ids=["worker 1", "the chief, worker 0, the group's leader"])
def test_a_worker_killed_and_never_started_again_ends_the_survivor_with_unavailable_naming_it(tmp_path, victim):
    """Gone for good: the survivor's session recovers and its step fails again at the group's
    forming (the dead member's host refuses the ping) until TENSORWEAVE_RECOVERY_TIMEOUT_S has
    passed since the loss; then it exits with UnavailableError naming the dead worker. Nobody
    hangs (before, it recovered forever, a failing step every ~12 s)."""
    with CollectiveJob(str(tmp_path), 2, [f"--last_step={LAST_STEP}", f"--gate={GATE}"],
                       env={"TENSORWEAVE_RECOVERY_TIMEOUT_S": str(RECOVERY_TIMEOUT_S)}) as job:
        for i in range(2):
            job.start("worker", i)
        _kill_mid_training(job, victim)
        killed = time.monotonic()
        codes = job.wait_all()
        took = time.monotonic() - killed
        survivor = job.output("worker", 1 - victim)
    assert codes[("worker", 1 - victim)] not in (0, "hung"), survivor[-4000:]
    assert took >= RECOVERY_TIMEOUT_S   # (not given up on before the window: a restart there recovers)
    gave_up = [line for line in survivor.splitlines() if line.startswith("tensorweave.framework.errors.")][-1]
    assert gave_up.startswith("tensorweave.framework.errors.UnavailableError: No step could be run for "), gave_up
    assert f"(TENSORWEAVE_RECOVERY_TIMEOUT_S={RECOVERY_TIMEOUT_S}): it is gone for good" in gave_up, gave_up
    assert f"Task /job:worker/replica:0/task:{victim} at {job.cluster['worker'][victim]} is unavailable: " \
           "connection refused" in gave_up, gave_up
    # each attempt in the window failed at the forming's first ping of the dead worker, which the
    # group's leader (or the member, of the dead leader) makes a few seconds into it, not after a timeout
    losses = [line for line in survivor.splitlines() if "A task was lost (UnavailableError" in line]
    assert len(losses) > 1 and all("connection refused" in line for line in losses), survivor[-4000:]
    assert "not up after" not in survivor


def test_a_member_killed_fails_the_group_forming_again_at_once_and_one_never_up_after_the_window(start_cluster):
    """Plain sessions, no timeout. A member seen up in a group and then killed: the survivor's
    run that meets its death fails (a refused ping), and so does each later run, while the group
    forms again, at its first ping (the refusal is the answer). A member never up is waited for
    (it may be starting) for TENSORWEAVE_RECOVERY_TIMEOUT_S, then the forming fails naming it."""
    env = {"TENSORWEAVE_RECOVERY_TIMEOUT_S": "5"}
    c = start_cluster({"worker": 3}, env=env)
    x = np.arange(5, dtype=np.float32)

    def run(c, rank: int, size: int):
        with tf.Graph().as_default():
            with tf.device(f"/job:worker/task:{rank}"):
                reduced = co.all_reduce(tf.constant(x), size, group_key=1, instance_key=1)
            with tf.Session(c.target("worker", rank)) as sess:
                try:
                    return sess.run(reduced)
                except errors.UnavailableError as e:
                    return e

    def together(c, ranks, size: int = 3) -> list:
        results: dict = {}
        threads = [threading.Thread(target=lambda r=r: results.__setitem__(r, run(c, r, size)), daemon=True)
                   for r in ranks]
        for t in threads:
            t.start()
        for t in threads:
            t.join(EXIT_TIMEOUT_S)
        assert not any(t.is_alive() for t in threads), "a member's run hung"
        return [results[r] for r in ranks]

    for got in together(c, [0, 1, 2]):
        np.testing.assert_array_equal(got, 3 * x)
    c.kill("worker", 2)
    gone = "Task /job:worker/replica:0/task:2 at {} is unavailable: connection refused".format(c.address("worker", 2))
    for attempt in range(2):   # the group's run, then its forming again
        for rank, got in enumerate(together(c, [0, 1])):
            assert isinstance(got, errors.UnavailableError), got
            assert gone in str(got) and "not up after" not in str(got), (attempt, rank, got)
    fresh = start_cluster({"worker": 2}, env=env)
    fresh.kill("worker", 1)   # before any group
    got = together(fresh, [0], size=2)[0]
    assert isinstance(got, errors.UnavailableError), got
    assert "Task /job:worker/replica:0/task:1" in str(got) and "connection refused" in str(got), got
    assert "not up after" in str(got) and "(TENSORWEAVE_RECOVERY_TIMEOUT_S=5)" in str(got), got
