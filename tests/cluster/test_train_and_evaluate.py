"""tf.estimator.train_and_evaluate as a real cluster: 1 ps + chief + worker + evaluator, one process
each on loopback ports, TF_CONFIG per process (tests/cluster/estimator_trainer.py). Every process
exits by itself, the ps included; the final checkpoint has reached max_steps; the evaluator's
metrics of that checkpoint are in model_dir/eval, where TensorBoard reads them; a chief SIGKILLed
mid-training and started again restores the last checkpoint and finishes the job."""
from __future__ import annotations

import glob
import os
import subprocess
import sys
import time

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import tensorweave as tf
from tf_config_job import EXIT_TIMEOUT_S, REPO, TFConfigJob

HERE = os.path.dirname(os.path.abspath(__file__))
TRAINER = os.path.join(HERE, "estimator_trainer.py")
TASKS = [("ps", 0), ("chief", 0), ("worker", 0), ("evaluator", 0)]


class EstimatorCluster(TFConfigJob):
    """The processes of one Estimator cluster (estimator_trainer.py MODEL_DIR MAX_STEPS *extra): a ps, a
    chief (or master) and a worker in the cluster, the evaluator beside it; always killed at the end."""

    def __init__(self, model_dir: str, max_steps: int, extra=(), chief_job: str = "chief"):
        super().__init__(TRAINER, {"ps": 1, chief_job: 1, "worker": 1}, model_dir, [str(max_steps), *extra])
        self.max_steps = max_steps

    def log(self, job: str, index: int = 0) -> str:
        """Everything the task printed, each start's output apart."""
        return "\n--- restarted ---\n".join(self.output(job, index, run, 0) + self.output(job, index, run, 1)
                                           for run in range(len(self.logs.get((job, index), []))))


def _checkpoint_step(model_dir: str) -> int:
    path = tf.train.latest_checkpoint(model_dir)
    return int(tf.train.load_variable(path, "global_step")) if path else -1


def _assert_finished(c: EstimatorCluster, codes: dict, overshoot: int = 2) -> int:
    for key, code in codes.items():
        assert code == 0, f"{key} exited with {code}:\n{c.log(*key)[-6000:]}"
    final = _checkpoint_step(c.model_dir)
    # Each trainer stops once it sees the global step at max_steps, judged from the step's value
    # read in its last run; with two asynchronous trainers each may have one step in flight past
    # it (as in TF: global steps of asynchronous replicas are not fenced).
    assert c.max_steps <= final <= c.max_steps + overshoot
    acc = EventAccumulator(os.path.join(c.model_dir, "eval"), size_guidance={"scalars": 0})
    acc.Reload()
    assert {"loss", "mae"} <= set(acc.Tags()["scalars"])
    last = acc.Scalars("mae")[-1]
    # the evaluator stops after the first checkpoint at or past max_steps (TF's rule); a trainer's
    # step in flight may have made the chief's last checkpoint one step later
    assert c.max_steps <= last.step <= final and 0 <= last.value < 0.5
    assert "Exiting evaluation, global_step=" in c.log("evaluator")
    assert "ps 0: 2 of 2 trainers have finished." in c.log("ps")
    return final


def test_ps_chief_worker_evaluator_train_evaluate_and_all_exit(tmp_path):
    # ("both": the chief waits for the worker's first step, so both train however late the worker starts)
    with EstimatorCluster(str(tmp_path), max_steps=60, extra=["both"]) as c:
        for job, index in TASKS:
            c.start(job, index)
        codes = c.wait_all()
        _assert_finished(c, codes)
        # both trainers trained: the worker's own steps are in its log, the chief wrote the summaries
        assert "loss = " in c.log("worker") and "loss = " in c.log("chief")
        train_acc = EventAccumulator(str(tmp_path), size_guidance={"scalars": 0})
        train_acc.Reload()
        assert "loss" in train_acc.Tags()["scalars"]


def test_sync_replicas_through_training_hooks_stop_exactly_at_max_steps(tmp_path):
    """SyncReplicasOptimizer in the model_fn, its hook in training_hooks (chief or not from the
    RunConfig): one global step per aggregated pair of gradients, so the last checkpoint and the
    evaluator's last evaluation are at max_steps exactly."""
    with EstimatorCluster(str(tmp_path), max_steps=30, extra=["sync"]) as c:
        for job, index in TASKS:
            c.start(job, index)
        assert _assert_finished(c, c.wait_all(), overshoot=0) == 30


def test_the_legacy_master_layout_trains_evaluates_and_ends(tmp_path):
    """TF_CONFIG with a `master` job instead of `chief`: the master trains, checkpoints and
    evaluates after its checkpoints (no evaluator task); worker 0 writes the training summaries.
    ("both": the master waits for the worker's first step, whose summaries the test reads: on a
    loaded machine the master alone reached max_steps before the worker's process had stepped.)"""
    with EstimatorCluster(str(tmp_path), max_steps=40, chief_job="master", extra=["both"]) as c:
        for job, index in (("ps", 0), ("master", 0), ("worker", 0)):
            c.start(job, index)
        codes = c.wait_all()
        for key, code in codes.items():
            assert code == 0, f"{key} exited with {code}:\n{c.log(*key)[-6000:]}"
        final = _checkpoint_step(c.model_dir)
        assert 40 <= final <= 42
        acc = EventAccumulator(os.path.join(c.model_dir, "eval"), size_guidance={"scalars": 0})
        acc.Reload()
        assert acc.Scalars("mae")[-1].step == final
        assert "ps 0: 2 of 2 trainers have finished." in c.log("ps")
        # worker 0, not the master, writes the training summaries (its first step always does; how
        # many steps it takes, and so whether its step counter reaches a report, is up to scheduling)
        assert "global_step/sec" not in c.log("master")
        train = EventAccumulator(c.model_dir, size_guidance={"scalars": 0})
        train.Reload()
        assert "loss" in train.Tags()["scalars"]


def test_a_killed_chief_restarts_from_the_last_checkpoint(tmp_path):
    with EstimatorCluster(str(tmp_path), max_steps=3000) as c:
        for job, index in TASKS:
            c.start(job, index)
        deadline = time.monotonic() + EXIT_TIMEOUT_S
        while _checkpoint_step(c.model_dir) < 10:   # a checkpoint past the first one
            assert time.monotonic() < deadline and c.procs[("chief", 0)].poll() is None, c.log("chief")[-4000:]
            time.sleep(0.05)
        c.procs[("chief", 0)].kill()
        c.procs[("chief", 0)].wait()
        saved = _checkpoint_step(c.model_dir)
        if saved >= c.max_steps:
            pytest.skip("the cluster finished its 3000 steps before the chief could be killed")
        c.start("chief", 0)
        codes = c.wait_all()
        _assert_finished(c, codes)
        restarted = c.log("chief").split("--- restarted ---")[1]
        assert "Restoring parameters from " in restarted and "model.ckpt-" in restarted
        assert len(glob.glob(os.path.join(c.model_dir, "model.ckpt-*.index"))) >= 1


def test_tensorweave_launch_runs_an_estimator_cluster_with_an_evaluator_to_the_end(tmp_path):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TENSORWEAVE_CONNECT_TIMEOUT_S="20")
    env.pop("TF_CONFIG", None)
    r = subprocess.run([sys.executable, "-m", "tensorweave.cli", "launch", "--ps", "1", "--chief", "1", "--workers",
                        "1", "--evaluator", "1", TRAINER, str(tmp_path), "40"], env=env, cwd=REPO,
                       capture_output=True, text=True, timeout=EXIT_TIMEOUT_S)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = r.stdout + r.stderr
    # every task, the ps too, returned from train_and_evaluate by itself and printed its line
    for job in ("ps", "chief", "worker", "evaluator"):
        assert f'"task": ["{job}", 0]' in out, out[-4000:]
    assert 40 <= _checkpoint_step(str(tmp_path)) <= 42


def test_the_mnist_estimator_example_as_a_launched_cluster_exports_its_final_model(tmp_path):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TENSORWEAVE_CONNECT_TIMEOUT_S="20")
    env.pop("TF_CONFIG", None)
    model_dir = str(tmp_path / "model")
    r = subprocess.run([sys.executable, "-m", "tensorweave.cli", "launch", "--ps", "1", "--chief", "1", "--workers",
                        "2", "--evaluator", "1", os.path.join(REPO, "examples", "mnist_estimator.py"),
                        f"--model_dir={model_dir}", "--max_steps=120"], env=env, cwd=REPO,
                       capture_output=True, text=True, timeout=EXIT_TIMEOUT_S)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for task in ('"ps", 0', '"chief", 0', '"worker", 0', '"worker", 1', '"evaluator", 0'):
        assert '{"task": [' + task + "]}" in r.stdout, r.stdout[-3000:]
    (export,) = glob.glob(os.path.join(model_dir, "export", "mnist", "*"))   # FinalExporter: one export
    graph = tf.Graph()
    with graph.as_default(), tf.Session(graph=graph) as session:
        meta_graph = tf.saved_model.loader.load(session, ["serve"], export)
        signature = meta_graph.signature_def["serving_default"]
        images = np.random.RandomState(0).rand(3, 784).astype(np.float32)
        probabilities = session.run(signature.outputs["probabilities"].name, {signature.inputs["images"].name: images})
    np.testing.assert_allclose(probabilities.sum(1), 1.0, rtol=1e-5)


def test_a_killed_ps_restarts_and_the_trainers_recover_and_finish(tmp_path):
    with EstimatorCluster(str(tmp_path), max_steps=3000) as c:
        for job, index in TASKS:
            c.start(job, index)
        deadline = time.monotonic() + EXIT_TIMEOUT_S
        while _checkpoint_step(c.model_dir) < 10:
            assert time.monotonic() < deadline and c.procs[("ps", 0)].poll() is None, c.log("ps")[-4000:]
            time.sleep(0.05)
        c.procs[("ps", 0)].kill()
        c.procs[("ps", 0)].wait()
        if _checkpoint_step(c.model_dir) >= c.max_steps:
            pytest.skip("the cluster finished its 3000 steps before the ps could be killed")
        c.start("ps", 0)
        _assert_finished(c, c.wait_all())
        # the chief restored the model onto the new ps from its last checkpoint
        assert "Restoring parameters from " in c.log("chief")
