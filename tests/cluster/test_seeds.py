"""The seeds' cluster programs, each run as its own process, print the tutorials' numbers."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed.cluster import free_ports

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEEDS = os.path.join(REPO, "examples", "seeds")


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env["TENSORWEAVE_CONNECT_TIMEOUT_S"] = "20"
    env.pop("TF_CONFIG", None)
    env.update(extra)
    return env


def run_seed(name, *args, env=None, timeout=60):
    proc = subprocess.run([sys.executable, os.path.join(SEEDS, name), *args], capture_output=True, text=True,
                          env=env or _env(), timeout=timeout, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def two_workers():
    """Runs `create_worker.py 0` and `create_worker.py 1` (two terminals in the tutorial)."""
    ports = ",".join(map(str, free_ports(2)))
    env = _env(TENSORWEAVE_SEED_PORTS=ports)
    procs = [subprocess.Popen([sys.executable, os.path.join(SEEDS, "create_worker.py"), str(i)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
             for i in range(2)]
    try:
        for i, p in enumerate(procs):
            assert p.stdout.readline().strip() == f"Starting server #{i}"
        yield env
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)
            p.stdout.close()
            p.stderr.close()


def test_local_server_says_hello():
    assert run_seed("local_server.py").strip() == "b'Hello, distributed TensorFlow!'"


def test_238_across_two_worker_processes(two_workers):
    assert run_seed("distributed_238.py", env=two_workers).strip() == "238"


def test_distributed_mean_and_the_unequal_slices_exercise(two_workers):
    out = float(run_seed("distributed_mean.py", env=two_workers).strip())
    assert 0.2 < out < 0.8      # the mean of 100 uniform numbers
    got, ref = run_seed("distributed_mean_unequal.py", env=dict(two_workers, SEED="3")).split()
    np.testing.assert_allclose(float(got), float(ref), rtol=1e-6)
    data = np.random.RandomState(3).random_sample(100).astype(np.float32)
    np.testing.assert_allclose(float(got), data.mean(), rtol=1e-6)


def test_in_graph_replication_trains_on_a_ps_and_two_workers(start_cluster):
    c = start_cluster({"ps": 1, "worker": 2})
    out = run_seed("in_graph_replication.py", "--cluster", json.dumps(c.spec), "--steps", "60").splitlines()
    first, last = (float(v) for v in out[0].replace("loss", "").split("->"))
    assert first > 1.0 and last < 1e-4
    assert out[1] == "w [2.0, -3.0, 0.5] b [1.0]"


def test_the_mnist_sample_seed_004_names_trains_on_a_launched_cluster_and_exports_for_serving(tmp_path):
    """Seed 004's recipe: the sample's program unchanged on every task of 1 ps + chief + worker +
    evaluator with TF_CONFIG set per process (by `tensorweave launch`); every task ends by itself
    and the chief's export serves the Keras CNN's probabilities for [None, 28, 28] images."""
    model_dir, export_dir = str(tmp_path / "model"), str(tmp_path / "export")
    proc = subprocess.run(
        [sys.executable, "-m", "tensorweave.cli", "launch", "--ps", "1", "--chief", "1", "--workers", "1",
         "--evaluator", "1", os.path.join(SEEDS, "mnist_sample.py"), f"--model_dir={model_dir}",
         f"--export_dir={export_dir}", "--max_steps=24", "--batch_size=16", "--ckpt_steps=12", "--eval_secs=0"],
        capture_output=True, text=True, env=_env(), timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = [json.loads(line.partition("] ")[2]) for line in proc.stdout.splitlines() if '] {"task"' in line]
    assert sorted(tuple(line["task"]) for line in lines) == [("chief", 0), ("evaluator", 0), ("ps", 0), ("worker", 0)]
    (chief,) = [line for line in lines if line["task"] == ["chief", 0]]
    with tf.Graph().as_default(), tf.Session() as sess:
        meta_graph = tf.saved_model.loader.load(sess, ["serve"], chief["export"])
        signature = meta_graph.signature_def["serving_default"]     # the one export output, also the default
        assert sorted(signature.outputs) == ["classes", "probabilities"]
        probabilities = sess.run(signature.outputs["probabilities"].name,
                                 {signature.inputs["image"].name: np.random.RandomState(0).rand(3, 28, 28)})
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
