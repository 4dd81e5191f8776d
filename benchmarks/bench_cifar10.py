"""The main job's throughput: examples/s of seed 003's CIFAR-10 trainer (examples/cifar10/, the
tutorial model) on a local cluster of 1 ps + 2 workers, beside TensorFlow running the very same
files under tf.compat.v1 (CIFAR10_BACKEND=tensorflow) in the same run.

    python benchmarks/bench_cifar10.py [--steps 300] [--rounds 2]
    TF_PYTHON=/path/to/python-with-tensorflow python benchmarks/bench_cifar10.py   # TF_PYTHON=none: no TF

Each task is its own process with TF_CONFIG set, as `tensorweave launch` starts them (this script
starts them itself so that TensorFlow's tasks run on TensorFlow's Python: this one if it has
TensorFlow, $TF_PYTHON, or /opt/tfvenv/bin/python). The figure is the median of the
chief's examples/s reports after the first quarter of the steps (start-up excluded); the whole
job's wall time, start-up and shutdown included, is printed too. The two frameworks alternate for
--rounds rounds; the load average is printed.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAINER = os.path.join(REPO, "examples", "cifar10", "cifar10_train.py")
sys.path.insert(0, REPO)

from _harness import load_average, tf_python  # noqa: E402
from tensorweave.cli import blas_threads_env  # noqa: E402  (as `tensorweave launch` sets them)
from tensorweave.distributed.cluster import free_ports  # noqa: E402  (below the ephemeral range: 3 tasks bind late)


def run_job(python: str, backend: str, steps: int, data_dir: str, batch: int) -> tuple:
    """(median examples/s after warm-up, wall seconds) of one 1-ps 2-worker job."""
    ports = free_ports(3)
    cluster = {"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{p}" for p in ports[1:]]}
    train_dir = tempfile.mkdtemp(prefix="bench_cifar10_")
    env = dict(os.environ, CIFAR10_BACKEND=backend, PYTHONUNBUFFERED="1",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.update(blas_threads_env(sum(len(a) for a in cluster.values())))
    procs = []
    start = time.time()
    for job, addrs in cluster.items():
        for i in range(len(addrs)):
            task_env = dict(env, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": job, "index": i}}))
            args = [python, TRAINER, f"--data_dir={data_dir}", f"--train_dir={train_dir}", f"--max_steps={steps}",
                    f"--batch_size={batch}", f"--log_frequency={max(steps // 20, 1)}", "--save_checkpoint_secs=600"]
            procs.append((job, subprocess.Popen(args, env=task_env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                                text=True, start_new_session=True)))
    chief = [p for job, p in procs if job == "worker"][0]
    out, _ = chief.communicate(timeout=3600)
    for job, p in procs:
        if job == "worker":
            p.wait(timeout=600)
    wall = time.time() - start
    for job, p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    reports = [(int(s), float(r)) for s, r in re.findall(r"step (\d+)/\d+\s+(\d+) examples/s", out)]
    rates = [r for s, r in reports if s > steps // 4] or [r for _, r in reports]
    if not rates:
        raise RuntimeError(f"{backend}: no progress lines\n{out[-2000:]}")
    return statistics.median(rates), wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--data_dir", default="/tmp/cifar10_data")
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(TRAINER))
    import cifar10_input   # the examples' own data preparation (tensorweave backend)
    cifar10_input.prepare_data(args.data_dir)
    tf_py = tf_python()
    load0 = load_average()
    ours, theirs = [], []
    for _ in range(args.rounds):
        ours.append(run_job(sys.executable, "tensorweave", args.steps, args.data_dir, args.batch_size))
        if tf_py:
            theirs.append(run_job(tf_py, "tensorflow", args.steps, args.data_dir, args.batch_size))
    rate = statistics.median(r for r, _ in ours)
    wall = statistics.median(w for _, w in ours)
    line = (f"CIFAR-10 tutorial model, 1 ps + 2 workers, batch {args.batch_size}, {args.steps} steps: "
            f"tensorweave {rate:.0f} examples/s (job wall time {wall:.1f} s)")
    if theirs:
        tf_rate = statistics.median(r for r, _ in theirs)
        tf_wall = statistics.median(w for _, w in theirs)
        line += (f"; TensorFlow {tf_rate:.0f} examples/s (job wall time {tf_wall:.1f} s); "
                 f"ratio {rate / tf_rate:.2f}x")
    print(line)
    print(f"(medians of {args.rounds} rounds; load average {load0} at start, {load_average()} at end, "
          f"{os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
