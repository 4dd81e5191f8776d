"""Bounded staleness's trade-off on the CIFAR-10 example (examples/cifar10/, the tutorial model):
throughput against the loss reached after a fixed number of global steps, for --staleness 0, 2, 8
and unbounded (plain async), on a local cluster of 1 ps + 2 workers.

    python benchmarks/bench_staleness.py [--steps 200] [--batch_size 64] [--staleness 0,2,8,-1] [--straggler]

Each task is its own process with TF_CONFIG set, as `tensorweave launch` starts them. Examples/s
is the median of the chief's reports after the first quarter of the steps; the loss is the mean of
the chief's batch losses reported over the last quarter (one batch's loss is noisy: compare the
rows, not single digits); wall is the whole job's, start-up included. With --straggler, also
with worker 1 a straggler: stopped for half of every second (SIGSTOP, SIGCONT), as a worker on a
machine it shares; that is where a bound costs throughput, and where plain async applies that
worker's gradients many steps late.
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
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAINER = os.path.join(REPO, "examples", "cifar10", "cifar10_train.py")
sys.path.insert(0, REPO)

from _harness import load_average  # noqa: E402
from tensorweave.cli import blas_threads_env  # noqa: E402  (as `tensorweave launch` sets them)
from tensorweave.distributed.cluster import free_ports  # noqa: E402


def stall_half_the_time(proc, done: threading.Event) -> None:
    """Stops `proc` for 0.5 s of every second until `done` (it is left running)."""
    while not done.is_set() and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGSTOP)
        done.wait(0.5)
        os.killpg(proc.pid, signal.SIGCONT)
        done.wait(0.5)


def run_job(staleness: int, steps: int, data_dir: str, batch: int, straggler: bool) -> dict:
    ports = free_ports(3)
    cluster = {"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{p}" for p in ports[1:]]}
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.update(blas_threads_env(3))
    procs = []
    start = time.time()
    for job, addrs in cluster.items():
        for i in range(len(addrs)):
            task_env = dict(env, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": job, "index": i}}))
            args = [sys.executable, TRAINER, f"--data_dir={data_dir}", f"--train_dir={tempfile.mkdtemp()}",
                    f"--max_steps={steps}", f"--batch_size={batch}", f"--log_frequency={max(steps // 40, 1)}",
                    "--save_checkpoint_secs=600", f"--staleness={staleness}"]
            procs.append((job, subprocess.Popen(args, env=task_env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                                text=True, start_new_session=True)))
    done = threading.Event()
    if straggler:
        threading.Thread(target=stall_half_the_time, args=(procs[2][1], done), daemon=True).start()
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
    return {"rate": statistics.median(rates), "loss": statistics.fmean(losses), "wall": wall}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--staleness", default="0,2,8,-1", help="comma-separated; -1 is unbounded")
    parser.add_argument("--straggler", action="store_true", help="also with worker 1 stopped half the time")
    parser.add_argument("--data_dir", default="/tmp/cifar10_data")
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(TRAINER))
    import cifar10_input   # the example's own data preparation
    cifar10_input.prepare_data(args.data_dir)
    print(f"CIFAR-10 tutorial model, 1 ps + 2 workers, batch {args.batch_size} per worker, {args.steps} global "
          f"steps; load average {load_average()} at start, {os.cpu_count()} CPUs")
    print("| workers | staleness | examples/s | loss (last quarter) | job wall s |")
    print("|---|---|---|---|---|")
    for straggler in (False, True) if args.straggler else (False,):
        for s in (int(v) for v in args.staleness.split(",")):
            r = run_job(s, args.steps, args.data_dir, args.batch_size, straggler)
            workers, bound = "worker 1 stalled half the time" if straggler else "even", s if s >= 0 else "unbounded"
            print(f"| {workers} | {bound} | {r['rate']:.0f} | {r['loss']:.3f} | {r['wall']:.1f} |", flush=True)
    print(f"(load average {load_average()} at end)")


if __name__ == "__main__":
    main()
