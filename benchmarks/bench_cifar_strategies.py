"""The CIFAR-10 example (examples/cifar10/, the tutorial model) trained two ways on this host, for
the same number of global examples: the ps job (1 ps + 2 workers, asynchronous: a global step is
one worker's batch) and MultiWorkerMirroredStrategy on 2 workers and no ps
(--strategy=multi_worker_mirrored: a global step is both workers' batches, all-reduced).

    python benchmarks/bench_cifar_strategies.py [--examples 25600] [--batch_size 32] [--marks 8]

Data: the example's embedded stand-in (scikit-learn's digits drawn as 32x32 colour images in
CIFAR-10's format), written once into --data_dir (default 5 x 2,000 training records, 1,000 test).

What is measured, per mode (each task its own process with TF_CONFIG, as `tensorweave launch`
starts them; this script runs the trainer file unchanged, with one hook added on the chief):
- marks: every --examples / --marks global examples (global step x examples per step) the chief
  saves a checkpoint (all variables, so the moving averages the evaluation restores) and notes
  the training time: seconds since its first step ended (the snapshots' own time, a fraction of a
  second each, included: in the ps job the other worker trains on meanwhile, under the strategy
  both wait).
- examples/s: the global examples trained between the first and the last mark over the training
  time between them.
- precision@1 of each mark's checkpoint on the whole test set (the example's evaluation: the
  central crops, the variables' moving averages), evaluated here after training.
- time to 95%: the target is 0.95 x the ps run's precision@1 at its last mark; a mode's time is
  the training time of its first mark at or above the target ("not reached" if none is).
The two modes alternate for --rounds rounds (medians); the load average is printed.
"""
from __future__ import annotations

import argparse
import json
import os
import runpy
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(REPO, "examples", "cifar10")
TRAINER = os.path.join(EXAMPLE, "cifar10_train.py")
sys.path.insert(0, REPO)
sys.path.insert(0, EXAMPLE)
os.environ.pop("CIFAR10_BACKEND", None)   # the example's modules on tensorweave in this process

import tensorweave as tf  # noqa: E402
import cifar10  # noqa: E402
import cifar10_input  # noqa: E402
from _harness import load_average  # noqa: E402
from tensorweave.cli import blas_threads_env  # noqa: E402  (as `tensorweave launch` sets them)
from tensorweave.distributed.cluster import free_ports  # noqa: E402

MODES = {"ps": {"ps": 1, "worker": 2}, "multi_worker_mirrored": {"worker": 2}}


class _Marks(tf.train.SessionRunHook):
    """On the chief: a checkpoint into OUT/<examples>/ each time another `every` global examples
    are trained, and (examples, step, training seconds) of each in OUT/marks.json."""

    def __init__(self, out: str, every: int, per_step: int):
        self._out, self._every, self._per_step = out, every, per_step

    def begin(self):
        self._step = tf.train.get_global_step()
        self._saver = tf.train.Saver(max_to_keep=None)
        self._next, self._start, self._marks = self._every, None, []

    def after_run(self, run_context, run_values):
        now = time.time()
        step = int(run_context.session.run(self._step))   # (a step fetched beside the train op may be the old one)
        examples = step * self._per_step
        if self._start is None:
            self._start = now
            self._marks.append({"examples": examples, "step": step, "seconds": 0.0, "checkpoint": None})
        if examples < self._next:
            return
        os.makedirs(os.path.join(self._out, str(examples)))
        path = self._saver.save(run_context.session, os.path.join(self._out, str(examples), "model.ckpt"),
                                global_step=step)
        self._marks.append({"examples": examples, "step": step, "seconds": now - self._start,
                            "checkpoint": path})
        while self._next <= examples:
            self._next += self._every
        with open(os.path.join(self._out, "marks.json"), "w") as f:
            json.dump(self._marks, f)


def task_main(out: str, every: int, per_step: int, trainer_args: list) -> None:
    """One task of a job: the trainer as it is, the chief's (worker 0's) MonitoredTrainingSession
    with _Marks."""
    monitored_training_session = tf.train.MonitoredTrainingSession
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    chief = task == {"type": "worker", "index": 0}

    def with_marks(*args, hooks=None, **kwargs):
        hooks = list(hooks or []) + ([_Marks(out, every, per_step)] if chief else [])
        return monitored_training_session(*args, hooks=hooks, **kwargs)
    tf.train.MonitoredTrainingSession = with_marks   # (in this task's process only)
    sys.argv = [TRAINER, *trainer_args]
    runpy.run_path(TRAINER, run_name="__main__")


def run_job(mode: str, examples: int, batch: int, marks: int, data_dir: str) -> dict:
    """One job of `mode`: its examples/s and its (examples, training seconds, precision@1) curve."""
    jobs = MODES[mode]
    per_step = batch * (jobs["worker"] if mode != "ps" else 1)
    if examples % (marks * per_step):
        raise SystemExit(f"--examples must be a multiple of marks x {per_step} (examples per global step of {mode})")
    ports = free_ports(sum(jobs.values()))
    cluster = {job: [f"localhost:{ports.pop()}" for _ in range(n)] for job, n in jobs.items()}
    out = tempfile.mkdtemp(prefix=f"bench_cifar_{mode}_")
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.update(blas_threads_env(sum(jobs.values())))
    args = [f"--data_dir={data_dir}", f"--train_dir={out}/train", f"--max_steps={examples // per_step}",
            f"--batch_size={batch}", "--log_frequency=1000000", "--save_checkpoint_secs=100000"]
    if mode != "ps":
        args.append(f"--strategy={mode}")
    procs = []
    for job, addrs in cluster.items():
        for i in range(len(addrs)):
            task_env = dict(env, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": job, "index": i}}))
            cmd = [sys.executable, os.path.abspath(__file__), "task", out, str(examples // marks), str(per_step),
                   *args]
            with open(os.path.join(out, f"{job}-{i}.log"), "w") as log:
                procs.append((job, subprocess.Popen(cmd, env=task_env, stdout=log, stderr=subprocess.STDOUT,
                                                    start_new_session=True)))
    workers = [p for job, p in procs if job == "worker"]
    try:   # until every worker is done; one that fails ends the job
        while True:
            for i, p in enumerate(workers):
                if p.poll():
                    with open(os.path.join(out, f"worker-{i}.log")) as log:
                        raise RuntimeError(f"{mode}: worker {i} failed\n{log.read()[-3000:]}")
            if all(p.poll() is not None for p in workers):
                break
            time.sleep(0.5)
    finally:
        for _, p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    try:
        with open(os.path.join(out, "marks.json")) as f:
            return summary(json.load(f), data_dir)
    finally:
        shutil.rmtree(out)   # (a few hundred MB of checkpoints)


def precision_at_1(checkpoints: list, data_dir: str, batch: int = 100) -> list:
    """The example's evaluation of each checkpoint: precision @ 1 on the whole test set."""
    test = os.path.join(data_dir, cifar10_input.TEST_FILE)
    records = cifar10_input.num_records([test])
    if records % batch:
        raise SystemExit(f"the test set's {records} records are not a multiple of the evaluation batch {batch}")
    with tf.Graph().as_default():
        images, labels = cifar10_input.inputs(data_dir, batch, eval_data=True)
        top_1 = tf.nn.in_top_k(cifar10.inference(images, "tutorial", is_training=False), labels, 1)
        averages = tf.train.ExponentialMovingAverage(cifar10.MOVING_AVERAGE_DECAY)
        saver = tf.train.Saver(averages.variables_to_restore())
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            out = []
            for path in checkpoints:
                saver.restore(sess, path)   # (a cycle of the file in order: each record once per checkpoint)
                out.append(sum(int(np.sum(sess.run(top_1))) for _ in range(records // batch)) / records)
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)
    return out


def summary(marks: list, data_dir: str) -> dict:
    saved = [m for m in marks if m["checkpoint"]]
    precisions = precision_at_1([m["checkpoint"] for m in saved], data_dir)
    first, last = marks[0], saved[-1]
    rate = (last["examples"] - first["examples"]) / max(last["seconds"], 1e-9)
    return {"rate": rate, "curve": [(m["examples"], m["seconds"], p) for m, p in zip(saved, precisions)]}


def time_to(curve: list, target: float):
    return next((seconds for _, seconds, p in curve if p >= target), None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=25600, help="global examples each job trains on")
    parser.add_argument("--batch_size", type=int, default=32, help="per worker")
    parser.add_argument("--marks", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--data_dir", default="/tmp/bench_cifar_strategies_data")
    args = parser.parse_args()
    if not os.path.exists(os.path.join(args.data_dir, cifar10_input.TEST_FILE)):
        cifar10_input.write_embedded_dataset(args.data_dir, per_train_file=2000, test_records=1000)
    b = args.batch_size
    # (the strategy at half the batch: a global step of the ps job's size, so as many updates)
    rows = [("ps", b), ("multi_worker_mirrored", b), ("multi_worker_mirrored", b // 2)]
    load0 = load_average()
    results: dict = {row: [] for row in rows}
    for _ in range(args.rounds):
        for row in rows:
            results[row].append(run_job(row[0], args.examples, row[1], args.marks, args.data_dir))
    print(f"CIFAR-10 tutorial model, embedded digits, {args.examples} global examples per job, {args.rounds} "
          f"round(s), {os.cpu_count()} CPUs, load average {load0} at start")
    print("| mode | batch per worker | global batch per step | examples/s | final precision@1 | time to 95% of ps |")
    print("|---|---|---|---|---|---|")
    for r in range(args.rounds):
        target = 0.95 * results[rows[0]][r]["curve"][-1][2]
        for mode, batch in rows:
            res = results[(mode, batch)][r]
            reached = time_to(res["curve"], target)
            per_step = batch * (MODES[mode]["worker"] if mode != "ps" else 1)
            print(f"| {mode} | {batch} | {per_step} | {res['rate']:.0f} | {res['curve'][-1][2]:.3f} | "
                  f"{'not reached' if reached is None else f'{reached:.1f} s'} (target {target:.3f}) |")
    for r in range(args.rounds):
        for mode, batch in rows:
            curve = "  ".join(f"{e}:{p:.3f}@{sec:.0f}s" for e, sec, p in results[(mode, batch)][r]["curve"])
            print(f"round {r + 1} {mode} batch {batch}, examples:precision@1@training seconds: {curve}")
    if args.rounds > 1:
        for row in rows:
            print(f"{row[0]} batch {row[1]}: median {statistics.median(x['rate'] for x in results[row]):.0f} "
                  "examples/s")
    print(f"load average {load_average()} at end")


if __name__ == "__main__":
    if sys.argv[1:2] == ["task"]:
        task_main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:])
    else:
        main()
