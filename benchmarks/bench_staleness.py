"""Bounded staleness's trade-off on the CIFAR-10 example (examples/cifar10/, the tutorial model):
throughput against what a fixed number of global steps reaches, for --staleness 0, 2, 8 and
unbounded (plain async), on a local cluster of 1 ps + 2 workers.

    python benchmarks/bench_staleness.py [--steps 200] [--staleness 0,2,8,-1] [--stalls even,slow,alternating]

Each task is its own process with TF_CONFIG set, as `tensorweave launch` starts them. Examples/s
is the median of the chief's reports after the first quarter of the steps; the loss is the mean of
the chief's batch losses reported over the last quarter (one batch's loss is noisy); precision is
cifar10_eval.py's precision @ 1 of the final checkpoint on the test batch; wall is the whole
job's, start-up included. --stalls slows the workers down by stopping them (SIGSTOP, SIGCONT), as
workers on machines they share: `slow` stops worker 1 for half of every second (persistently
slower), `alternating` stops each worker in turn for 1 s (as fast on average, apart for a while).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAINER = os.path.join(REPO, "examples", "cifar10", "cifar10_train.py")
EVAL = os.path.join(REPO, "examples", "cifar10", "cifar10_eval.py")
sys.path.insert(0, REPO)

from _harness import load_average  # noqa: E402
from tensorweave.cli import blas_threads_env  # noqa: E402  (as `tensorweave launch` sets them)
from tensorweave.distributed.cluster import free_ports  # noqa: E402


# How the workers are slowed: (worker stopped or None, seconds), repeated until the job ends.
STALLS = {
    "even": [],
    "slow": [(1, 0.5), (None, 0.5)],   # worker 1 stopped half of every second: persistently slower
    "alternating": [(0, 1.0), (1, 1.0)],   # each in turn for 1 s: as fast on average, apart for a while
}


def stall(workers: list, schedule: list, done: threading.Event) -> None:
    """Stops the workers by `schedule` (SIGSTOP, SIGCONT) until `done`; each is left running."""
    while not done.is_set():
        for who, seconds in schedule:
            proc = workers[who] if who is not None else None
            try:
                if proc is not None:
                    os.killpg(proc.pid, signal.SIGSTOP)
                done.wait(seconds)
                if proc is not None:
                    os.killpg(proc.pid, signal.SIGCONT)
            except ProcessLookupError:   # (it ended)
                return


def run_job(staleness: int, steps: int, data_dir: str, batch: int, stalls: str) -> dict:
    ports = free_ports(3)
    cluster = {"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{p}" for p in ports[1:]]}
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.update(blas_threads_env(3))
    procs = []
    train_dir = tempfile.mkdtemp(prefix="bench_staleness_")
    start = time.time()
    for job, addrs in cluster.items():
        for i in range(len(addrs)):
            task_env = dict(env, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": job, "index": i}}))
            args = [sys.executable, TRAINER, f"--data_dir={data_dir}", f"--train_dir={train_dir}",
                    f"--max_steps={steps}", f"--batch_size={batch}", f"--log_frequency={max(steps // 40, 1)}",
                    "--save_checkpoint_secs=600", f"--staleness={staleness}"]
            procs.append((job, subprocess.Popen(args, env=task_env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                                text=True, start_new_session=True)))
    done = threading.Event()
    if STALLS[stalls]:
        threading.Thread(target=stall, args=([p for _, p in procs[1:]], STALLS[stalls], done), daemon=True).start()
    try:
        out, _ = procs[1][1].communicate(timeout=1800)   # the chief
        procs[2][1].wait(timeout=600)
        wall = time.time() - start
    finally:
        done.set()
        for _, p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    reports = [(int(s), float(r), float(loss))
               for s, r, loss in re.findall(r"step (\d+)/\d+\s+(\d+) examples/s\s+loss (\d+\.\d+)", out)]
    if not reports:
        raise RuntimeError(f"staleness {staleness}: no progress lines\n{out[-2000:]}")
    rates = [r for s, r, _ in reports if s > steps // 4] or [r for _, r, _ in reports]
    losses = [loss for s, _, loss in reports if s > steps * 3 // 4] or [reports[-1][2]]
    evaluated = subprocess.run([sys.executable, EVAL, f"--checkpoint_dir={train_dir}", f"--data_dir={data_dir}",
                                f"--eval_dir={os.path.join(train_dir, 'eval')}", "--run_once"],
                               env=env, capture_output=True, text=True, timeout=600)
    shutil.rmtree(train_dir, ignore_errors=True)
    precision = re.search(r"precision @ 1 = (\d\.\d+)", evaluated.stdout)
    if precision is None:
        raise RuntimeError(f"staleness {staleness}: no precision\n{evaluated.stdout[-2000:]}{evaluated.stderr[-2000:]}")
    return {"rate": statistics.median(rates), "loss": statistics.fmean(losses), "wall": wall,
            "precision": float(precision.group(1))}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--staleness", default="0,2,8,-1", help="comma-separated; -1 is unbounded")
    parser.add_argument("--stalls", default="even", help=f"comma-separated, of {', '.join(STALLS)}")
    parser.add_argument("--data_dir", default="/tmp/cifar10_data")
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(TRAINER))
    import cifar10_input   # the example's own data preparation
    cifar10_input.prepare_data(args.data_dir)
    print(f"CIFAR-10 tutorial model, 1 ps + 2 workers, batch {args.batch_size} per worker, {args.steps} global "
          f"steps; load average {load_average()} at start, {os.cpu_count()} CPUs")
    print("| workers | staleness | examples/s | loss (last quarter) | precision @ 1 | job wall s |")
    print("|---|---|---|---|---|---|")
    for stalls in args.stalls.split(","):
        for s in (int(v) for v in args.staleness.split(",")):
            r = run_job(s, args.steps, args.data_dir, args.batch_size, stalls)
            print(f"| {stalls} | {s if s >= 0 else 'unbounded'} | {r['rate']:.0f} | {r['loss']:.3f} "
                  f"| {r['precision']:.3f} | {r['wall']:.1f} |", flush=True)
    print(f"(load average {load_average()} at end)")


if __name__ == "__main__":
    main()
