"""The main job, shortened: seed 003's CIFAR-10 trainer (examples/cifar10/) on a local cluster of
one ps and two workers under `tensorweave launch`, asynchronous, synchronous and with bounded
staleness (--staleness=0: the workers in step, neither waiting for the other at the end), then the
evaluation of its checkpoint; the same trainer with MultiWorkerMirroredStrategy on two workers and
no ps; and the same trainer file in one plain process."""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tensorweave as tf

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
EXAMPLE = os.path.join(REPO, "examples", "cifar10")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A small embedded data set in CIFAR-10's format (the trainer writes a full one if missing)."""
    d = str(tmp_path_factory.mktemp("cifar10_data"))
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import cifar10_input as ci; "
            "ci.write_embedded_dataset(sys.argv[2], per_train_file=400, test_records=300)")
    subprocess.run([sys.executable, "-c", code, EXAMPLE, d], check=True, env=_env(), timeout=120)
    return d


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("TF_CONFIG", None)
    return env


def _run(args: list, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=_env(), cwd=REPO,
                          timeout=timeout)


def _losses(output: str) -> list:
    return [float(m) for m in re.findall(r"loss (\d+\.\d+)", output)]


def _trained(r: subprocess.CompletedProcess, train_dir: str, steps: int) -> None:
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    losses = _losses(r.stdout)   # one per 5 steps; a single batch's loss is too noisy to compare two
    assert len(losses) >= 10 and np.mean(losses[-4:]) < np.mean(losses[:4]), r.stdout[-2000:]
    assert f"Done: {steps} steps" in r.stdout
    assert os.path.exists(os.path.join(train_dir, "checkpoint"))
    assert glob.glob(os.path.join(train_dir, "model.ckpt-*.index"))
    assert glob.glob(os.path.join(train_dir, "events.out.tfevents.*"))


@pytest.mark.parametrize("mode", ["async", "sync", "staleness"])
def test_cluster_trains_checkpoints_and_evaluates(mode, data_dir, tmp_path):
    train_dir = str(tmp_path / "train")
    steps = 80
    args = ["-m", "tensorweave.cli", "launch", "--ps", "1", "--workers", "2", "examples/cifar10/cifar10_train.py",
            f"--data_dir={data_dir}", f"--train_dir={train_dir}", f"--max_steps={steps}", "--log_frequency=5",
            "--batch_size=32"]
    if mode == "sync":
        args.append("--sync_replicas")
    if mode == "staleness":
        args.append("--staleness=0")
    r = _run(args, timeout=240)
    _trained(r, train_dir, steps)
    if mode == "staleness":
        assert "asynchronous (at most 0 steps apart)" in r.stdout
    assert "[worker:0] step" in r.stdout          # per-task prefixes; the chief reports progress
    e = _run([os.path.join(EXAMPLE, "cifar10_eval.py"), f"--checkpoint_dir={train_dir}", f"--data_dir={data_dir}",
              f"--eval_dir={tmp_path / 'eval'}", "--run_once", "--batch_size=50"], timeout=120)
    assert e.returncode == 0, e.stdout[-2000:] + e.stderr[-2000:]
    precision = float(re.search(r"precision @ 1 = (\d\.\d+)", e.stdout).group(1))
    assert 0.0 <= precision <= 1.0
    assert glob.glob(str(tmp_path / "eval" / "events.out.tfevents.*"))


def test_multi_worker_mirrored_keeps_the_workers_equal_and_the_chief_checkpoints(data_dir, tmp_path):
    """--strategy=multi_worker_mirrored on `launch --workers 2` (no ps): every variable (weights,
    their moving averages, the loss averages, the global step) ends equal on both workers, the
    chief's checkpoint holds those values, and the evaluation reads it."""
    train_dir, values = str(tmp_path / "train"), tmp_path / "values"
    values.mkdir()
    steps = 12
    r = _run(["-m", "tensorweave.cli", "launch", "--workers", "2", os.path.join(HERE, "cifar10_final_values.py"),
              str(values), "--strategy=multi_worker_mirrored", f"--data_dir={data_dir}", f"--train_dir={train_dir}",
              f"--max_steps={steps}", "--log_frequency=3", "--batch_size=16"], timeout=240)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "multi_worker_mirrored" in r.stdout and f"Done: {steps} steps" in r.stdout
    assert re.search(r"\[worker:0\] step \d+/12 +\d+ examples/s", r.stdout) and "[worker:1] step" not in r.stdout
    chief, other = np.load(values / "worker-0.npz"), np.load(values / "worker-1.npz")
    names = {n.replace("|", "/") for n in chief.files}
    assert {"conv1/weights", "conv1/weights/ExponentialMovingAverage", "total_loss/avg", "global_step"} <= names
    assert sorted(chief.files) == sorted(other.files)
    for name in chief.files:
        np.testing.assert_array_equal(other[name], chief[name], err_msg=name)
    assert int(chief["global_step"]) == steps
    assert tf.train.latest_checkpoint(train_dir).endswith(f"model.ckpt-{steps}")
    reader = tf.train.load_checkpoint(train_dir)
    for name in ("conv1/weights", "local3/weights/ExponentialMovingAverage", "softmax_linear/biases"):
        np.testing.assert_array_equal(reader.get_tensor(name), chief[name.replace("/", "|")], err_msg=name)
    assert len(glob.glob(os.path.join(train_dir, "events.out.tfevents.*"))) == 1   # the chief's summaries only
    e = _run([os.path.join(EXAMPLE, "cifar10_eval.py"), f"--checkpoint_dir={train_dir}", f"--data_dir={data_dir}",
              f"--eval_dir={tmp_path / 'eval'}", "--run_once", "--batch_size=50"], timeout=120)
    assert e.returncode == 0, e.stdout[-2000:] + e.stderr[-2000:]
    assert f"step {steps}: precision @ 1 = " in e.stdout


def test_same_trainer_in_one_plain_process(data_dir, tmp_path):
    train_dir = str(tmp_path / "train")
    r = _run([os.path.join(EXAMPLE, "cifar10_train.py"), f"--data_dir={data_dir}", f"--train_dir={train_dir}",
              "--max_steps=80", "--log_frequency=5", "--batch_size=32"], timeout=180)
    _trained(r, train_dir, 80)
    # a rerun resumes from the checkpoint instead of starting over
    r = _run([os.path.join(EXAMPLE, "cifar10_train.py"), f"--data_dir={data_dir}", f"--train_dir={train_dir}",
              "--max_steps=85", "--log_frequency=1", "--batch_size=32"], timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]
    steps = [int(s) for s in re.findall(r"step (\d+)/85", r.stdout)]
    assert steps and min(steps) > 80, r.stdout


def test_the_xception_model_trains_and_evaluates(data_dir, tmp_path):
    train_dir = str(tmp_path / "train")
    r = _run([os.path.join(EXAMPLE, "cifar10_train.py"), f"--data_dir={data_dir}", f"--train_dir={train_dir}",
              "--model=xception", "--xception_middle_repeats=1", "--max_steps=60", "--log_frequency=5",
              "--batch_size=16"], timeout=240)
    # (60 steps of 16 are too few for its loss to fall reliably: it runs, logs finite losses, saves)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    losses = _losses(r.stdout)
    assert len(losses) >= 10 and all(np.isfinite(losses)) and "Done: 60 steps" in r.stdout
    assert glob.glob(os.path.join(train_dir, "model.ckpt-*.index"))
    e = _run([os.path.join(EXAMPLE, "cifar10_eval.py"), f"--checkpoint_dir={train_dir}", f"--data_dir={data_dir}",
              f"--eval_dir={tmp_path / 'eval'}", "--run_once", "--batch_size=50", "--model=xception",
              "--xception_middle_repeats=1"], timeout=120)
    assert e.returncode == 0, e.stdout[-2000:] + e.stderr[-2000:]
    assert 0.0 <= float(re.search(r"precision @ 1 = (\d\.\d+)", e.stdout).group(1)) <= 1.0


_NET_OPS = {"Conv2D", "BiasAdd", "Relu", "MaxPool", "LRN", "Reshape", "MatMul", "Add", "L2Loss",
            "SparseSoftmaxCrossEntropyWithLogits", "Mean", "AddN"}


def test_two_gpu_towers_train_each_on_its_gpu(data_dir, tmp_path):
    """--num_gpus=2 (on two stand-in GPUs): a tower per GPU, the variables on the CPU, the mean of
    the towers' gradients applied; each tower's ops run on its own GPU (or, lacking a GPU kernel,
    on the CPU by soft placement), never on the other's."""
    train_dir = str(tmp_path / "train")
    r = subprocess.run([sys.executable, os.path.join(EXAMPLE, "cifar10_train.py"), f"--data_dir={data_dir}",
                        f"--train_dir={train_dir}", "--max_steps=60", "--log_frequency=5", "--batch_size=32",
                        "--num_gpus=2", "--log_device_placement"], capture_output=True, text=True,
                       env=dict(_env(), TENSORWEAVE_STANDIN_GPUS="2"), cwd=REPO, timeout=240)
    _trained(r, train_dir, 60)
    assert "2 GPU tower(s) per worker" in r.stdout
    placed = {m[0]: (m[1], m[2]) for m in re.findall(r"^(\S+): \((\w+)\): (\S+)$", r.stderr, re.M)}
    for i in (0, 1):
        assert placed[f"tower_{i}/Reshape"][1].endswith(f"/device:GPU:{i}"), placed[f"tower_{i}/Reshape"]
        tower = {n: d for n, (op, d) in placed.items()
                 if op in _NET_OPS and re.match(rf"(gradients\w*/)?tower_{i}/", n)}
        assert len(tower) > 20 and all(d.endswith((f"/device:GPU:{i}", "/device:CPU:0")) for d in tower.values()), tower
    assert placed["conv1/weights"][1].endswith("/device:CPU:0") and placed["local3/weights"][1].endswith("CPU:0")
