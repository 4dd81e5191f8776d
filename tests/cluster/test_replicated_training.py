"""Between-graph replicated training with real processes (examples/distributed_trainer.py, seed
000's trainer): asynchronous and synchronous training end on their own with every process
exiting 0, synchronous training on identical data gives exactly plain gradient descent's
numbers, backup workers, and a non-chief that waits for the chief without TF's 30 s sleeps."""
from __future__ import annotations

import sys
import os
import time

import numpy as np
import pytest

import tensorweave as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainer_procs import TRAINER, TrainerCluster

sys.path.insert(0, os.path.dirname(TRAINER))
import distributed_trainer


def _all_exit_zero(c: TrainerCluster, timeout: float = 60) -> None:
    for key in list(c.procs):
        rc = c.wait(*key, timeout=timeout)   # (AssertionError with the task's stacks if it hangs)
        assert rc == 0, f"{key} exited {rc}\n" + c.describe()


def _plain_gd(steps: int, flags) -> tuple:
    """w, b after `steps` steps of plain gradient descent on the trainer's shared batch."""
    x, y = distributed_trainer.batch(flags, 0)
    with tf.Graph().as_default():
        w = tf.get_variable("w", [distributed_trainer.FEATURES, 1], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(x), w) + b - tf.constant(y)))
        train = tf.train.GradientDescentOptimizer(flags.learning_rate).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(steps):
                s.run(train)
            return s.run([w, b])


def test_async_training_converges_and_every_process_exits_zero():
    with TrainerCluster(ps=1, workers=2, args=["--last_step=150"]) as c:
        c.start_all()
        _all_exit_zero(c)
        results = [c.result("worker", i) for i in range(2)]
        assert c.result("ps", 0) == {"job": "ps", "task": 0, "done": True}
    w_true, b_true = distributed_trainer.true_params()
    for r in results:
        assert r["global_step"] >= 150
        assert r["loss"] < 1e-3
        np.testing.assert_allclose(r["w"], w_true.ravel(), atol=0.02)
    assert results[0]["local_steps"] + results[1]["local_steps"] >= 150


def test_sync_training_on_identical_data_is_exactly_plain_gradient_descent():
    flags = distributed_trainer.make_parser().parse_args(["--same_data=true"])
    with TrainerCluster(ps=1, workers=2, args=["--sync=true", "--same_data=true", "--last_step=60"]) as c:
        start = time.monotonic()
        c.start_all()
        _all_exit_zero(c)
        took = time.monotonic() - start
        chief, other = c.result("worker", 0), c.result("worker", 1)
    assert chief["global_step"] == other["global_step"] >= 60
    w, b = _plain_gd(chief["global_step"], flags)
    np.testing.assert_array_equal(np.asarray(chief["w"], np.float32), w.ravel())
    assert np.float32(chief["b"]) == b
    assert took < 30


def test_backup_workers_finish_steps_without_the_slow_one_and_the_end_releases_everyone():
    # Three workers, two gradients per step: the slow one's late gradients are dropped, and when
    # the chief stops, whoever waits on the token queue is released (exit 0, nobody killed).
    with TrainerCluster(ps=1, workers=3, args=["--sync=true", "--replicas_to_aggregate=2", "--last_step=40"]) as c:
        c.start("ps", 0)
        c.start("worker", 0)
        c.start("worker", 1)
        c.start("worker", 2, extra=["--step_delay=0.1"])
        _all_exit_zero(c)
        results = [c.result("worker", i) for i in range(3)]
    assert all(r["global_step"] >= 40 for r in results)
    assert results[2]["local_steps"] < results[0]["local_steps"]
    assert all(r["loss"] < 0.5 for r in results)


def test_a_waiting_non_chief_is_ready_within_a_second_of_the_chiefs_initialisation(start_cluster):
    c = start_cluster({"ps": 1, "worker": 2})
    g = tf.Graph()
    with g.as_default(), tf.device("/job:ps/task:0"):
        v = tf.Variable(3.0, name="v")
        init = tf.global_variables_initializer()
        ready_op = tf.report_uninitialized_variables()
    box = {}

    def non_chief():
        with g.as_default():
            sm = tf.train.SessionManager(ready_op=ready_op, graph=g)
            sess = sm.wait_for_session(c.target("worker", 1), max_wait_secs=30)
            box["ready_at"] = time.monotonic()
            box["v"] = sess.run(v)
            sess.close()

    import threading
    t = threading.Thread(target=non_chief, daemon=True)
    t.start()
    time.sleep(2.0)   # the non-chief polls while nothing is initialised
    assert "ready_at" not in box
    with tf.Session(c.target("worker", 0), graph=g) as chief:
        chief.run(init)
        initialised_at = time.monotonic()
    t.join(10)
    assert box["v"] == 3.0
    assert box["ready_at"] - initialised_at < 1.0


@pytest.mark.parametrize("sync", [False, True])
def test_examples_run_under_tensorweave_launch(sync):
    import subprocess
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(TRAINER)) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("TF_CONFIG", None)
    proc = subprocess.run([sys.executable, "-m", "tensorweave.cli", "launch", "--ps", "1", "--workers", "2", TRAINER,
                           "--job_name={job_name}", "--task_index={task_index}", "--last_step=50",
                           f"--sync={str(sync).lower()}"], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if '"job": "worker"' in ln]
    assert len(lines) == 2 and '"job": "ps", "task": 0, "done": true' in proc.stdout


def test_seed_004_recipe_trains_under_launch_and_a_second_run_continues_from_model_dir(tmp_path):
    import json
    import subprocess
    script = os.path.join(os.path.dirname(TRAINER), "tf_config_trainer.py")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(TRAINER)) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("TF_CONFIG", None)

    def launch(steps):
        proc = subprocess.run([sys.executable, "-m", "tensorweave.cli", "launch", "--ps", "1", "--workers", "2",
                               "--no_prefix", script, f"--model_dir={tmp_path}", f"--train_steps={steps}"],
                              capture_output=True, text=True, timeout=180, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    first = launch(100)
    assert len(first) == 2 and all(r["global_step"] >= 100 for r in first)
    chief = next(r for r in first if r["chief"])
    assert chief["start_step"] < 100   # (from scratch; the other worker may already be training)
    second = launch(200)
    chief2 = next(r for r in second if r["chief"])
    assert chief2["start_step"] >= 100     # restored from model_dir, not initialised again
    assert all(r["global_step"] >= 200 and r["test_accuracy"] > 0.9 for r in second)
