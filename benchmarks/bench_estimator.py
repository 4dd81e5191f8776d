"""tf.estimator training of the MNIST-style model: examples/mnist_estimator.py's model_fn (784-128-10,
Adam) and data (synthetic MNIST, batch 64) and its RunConfig cadence (checkpoints every 100 steps,
summaries every 50), trained locally (Estimator.train) and as a cluster of 1 ps + chief + worker
(train_and_evaluate; real processes on loopback, TF_CONFIG per process, no evaluator), under
tensorweave and under TensorFlow's Estimator (tf.compat.v1.estimator, TF 2.15 with
tensorflow-estimator) in the same run.

    TF_PYTHON=/opt/tf215venv/bin/python python benchmarks/bench_estimator.py [--steps 400] [--job_steps 4000]
        [--baseline DIR]

Printed, medians over --rounds rounds that alternate tensorweave and TF:
  local        examples/s of Estimator.train, from its 20th step to its last (and examples per CPU
               second of the process over the same steps: a loaded machine's wall clock says little)
  job          examples/s of the cluster while both trainers train (from the later one's 20th step
               to the earlier one's last; asynchronous: a step is one batch)
  first step   seconds from starting the job's processes to the worker's (not the chief's) first step
and the ratios tensorweave/TF, and the load average. The TF side runs the very same example
code: its `import tensorweave as tf` is given tf.compat.v1. --baseline DIR also trains locally,
in each round, with the tensorweave of another checkout (an earlier commit): before and after
figures from one run.

tensorweave's processes run with their bytecode compiled beforehand, as an installed package's is
(pip compiles it at install; TF's site-packages have theirs): into a temporary
PYTHONPYCACHEPREFIX, since this checkout may be run with PYTHONDONTWRITEBYTECODE=1, under which
each process would otherwise compile every module it imports (~0.6 s of CPU, 3 processes at once).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Optional

from _harness import free_ports, load_average, run_json, tf_python

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 64
WARMUP = 20


def import_framework(framework: str, repo: str = REPO):
    """(tf, the example module) with the example's `import tensorweave as tf` bound to `tf`
    (tensorweave: the one of checkout `repo`)."""
    if framework == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
        tf.logging.set_verbosity(tf.logging.ERROR)
        sys.modules["tensorweave"] = tf   # (only in this TF process: the example then runs on TF)
    else:
        sys.path.insert(0, repo)   # (this checkout's tensorweave, not an installed one)
        import tensorweave as tf
    sys.path.insert(0, os.path.join(REPO, "examples"))
    import mnist_estimator
    return tf, mnist_estimator


def make_estimator(tf, example, model_dir: str):
    x, y = example.synthetic_mnist(2000, seed=1)

    def train_input_fn():
        return tf.data.Dataset.from_tensor_slices(({"images": x}, y)).shuffle(2000).repeat().batch(BATCH)

    def eval_input_fn():
        return tf.data.Dataset.from_tensor_slices(({"images": x[:500]}, y[:500])).batch(500)

    config = tf.estimator.RunConfig(model_dir=model_dir, save_checkpoints_steps=100, save_summary_steps=50,
                                    log_step_count_steps=100)
    estimator = tf.estimator.Estimator(example.model_fn, config=config, params={"learning_rate": 1e-3})
    return estimator, train_input_fn, eval_input_fn


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def step_times_hook(tf, times: list, cpu_times: Optional[list] = None):
    class StepTimes(tf.train.SessionRunHook):
        """The wall-clock time (and the process's CPU seconds) at the end of each of this
        process's training steps."""

        def after_run(self, run_context, run_values):
            times.append(time.time())
            if cpu_times is not None:
                cpu_times.append(cpu_seconds())
    return StepTimes()


def run_local(framework: str, steps: int, repo: str = REPO) -> dict:
    tf, example = import_framework(framework, repo)
    times: list = []
    cpu: list = []
    with tempfile.TemporaryDirectory() as model_dir:
        estimator, train_input_fn, _ = make_estimator(tf, example, model_dir)
        estimator.train(train_input_fn, max_steps=steps, hooks=[step_times_hook(tf, times, cpu)])
    examples = BATCH * (len(times) - WARMUP)
    return {"local": examples / (times[-1] - times[WARMUP - 1]), "local_cpu": examples / (cpu[-1] - cpu[WARMUP - 1])}


def run_task(framework: str, steps: int, model_dir: str, out: str) -> None:
    """One task of the job, from TF_CONFIG; a trainer writes its step times to `out`."""
    tf, example = import_framework(framework)
    times: list = []
    estimator, train_input_fn, eval_input_fn = make_estimator(tf, example, model_dir)
    tf.estimator.train_and_evaluate(
        estimator, tf.estimator.TrainSpec(train_input_fn, max_steps=steps, hooks=[step_times_hook(tf, times)]),
        tf.estimator.EvalSpec(eval_input_fn, steps=1))
    with open(out, "w") as f:
        json.dump(times, f)


def compiled_bytecode_env(python: str, cache: str) -> dict:
    """The environment of processes that find their bytecode compiled in `cache`: every module a
    task imports, compiled there by one warm-up process (tensorweave's whole package, and the
    third-party modules an Estimator task loads)."""
    env = dict(PYTHONPYCACHEPREFIX=cache, PYTHONDONTWRITEBYTECODE="")
    warm = ("import sys, tempfile; sys.path.insert(0, sys.argv[1]); import bench_estimator as b; "
            "tf, example = b.import_framework('tensorweave'); import tensorweave.distributed.server; "
            "b.make_estimator(tf, example, tempfile.mkdtemp()); tf.estimator.train_and_evaluate; "
            "import compileall; compileall.compile_dir(sys.argv[2], quiet=1)")
    subprocess.run([python, "-c", warm, os.path.dirname(os.path.abspath(__file__)), os.path.join(REPO, "tensorweave")],
                   env=dict(os.environ, **env), check=True, stdout=subprocess.DEVNULL)
    return env


def run_job(python: str, framework: str, steps: int, timeout_s: float = 150, env: Optional[dict] = None) -> dict:
    """1 ps + chief + worker as processes (`env` added to their environment); the job's examples/s
    and launch-to-worker-first-step."""
    ports = free_ports(3)
    cluster = {"ps": [f"localhost:{ports[0]}"], "chief": [f"localhost:{ports[1]}"], "worker": [f"localhost:{ports[2]}"]}
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TF_CPP_MIN_LOG_LEVEL="3", **(env or {}))
    with tempfile.TemporaryDirectory() as tmp:
        procs, outs = {}, {}
        start = time.time()
        for job in ("ps", "chief", "worker"):
            outs[job] = os.path.join(tmp, job + ".json")
            task_env = dict(env, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": job, "index": 0}}))
            procs[job] = subprocess.Popen(
                [python, os.path.abspath(__file__), "--task", "--framework", framework, "--steps", str(steps),
                 "--model_dir", os.path.join(tmp, "model"), "--out", outs[job]],
                env=task_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            for job in ("chief", "worker"):
                _, err = procs[job].communicate(timeout=max(1.0, start + timeout_s - time.time()))
                if procs[job].returncode:
                    print(f"({framework} {job} failed: {err.decode(errors='replace')[-800:]})")
                    return {}
        except subprocess.TimeoutExpired:
            print(f"({framework} job did not finish in {timeout_s:.0f} s)")
            return {}
        finally:
            for proc in procs.values():   # (TF's ps serves forever; tensorweave's has exited or is exiting)
                if proc.poll() is None:
                    proc.kill()
                proc.communicate()
        chief, worker = (json.load(open(outs[job])) for job in ("chief", "worker"))
    print(f"({framework} job: the chief made {len(chief)} steps, the worker {len(worker)})")
    result = {"first_step_s": worker[0] - start if worker else None, "job": None}
    if min(len(chief), len(worker)) >= WARMUP:   # (else the job was over before both trained)
        lo, hi = max(chief[WARMUP - 1], worker[WARMUP - 1]), min(chief[-1], worker[-1])
        if hi > lo:
            result["job"] = BATCH * sum(lo < t <= hi for t in chief + worker) / (hi - lo)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=400, help="local training steps")
    parser.add_argument("--job_steps", type=int, default=4000, help="global steps of the ps job")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--framework", choices=["tensorweave", "tf"], default="tensorweave")
    parser.add_argument("--baseline", help="a checkout of an earlier tensorweave, trained locally in each round too")
    parser.add_argument("--repo", default=REPO, help="(internal) the checkout whose tensorweave --json runs")
    parser.add_argument("--task", action="store_true", help="(internal) run one task from TF_CONFIG")
    parser.add_argument("--model_dir")
    parser.add_argument("--out")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.task:
        run_task(args.framework, args.steps, args.model_dir, args.out)
        return
    if args.json:
        print(json.dumps(run_local(args.framework, args.steps, args.repo)))
        return
    load0, py = load_average(), tf_python("/opt/tf215venv/bin/python")   # (tf.estimator: TF 2.15)
    results: dict = {"tensorweave": [], "tf": []}
    sides = [("tensorweave", "tensorweave", sys.executable, REPO), ("tf", "tf", py, REPO)]
    if args.baseline:
        results["baseline"] = []
        sides.insert(1, ("baseline", "tensorweave", sys.executable, os.path.abspath(args.baseline)))
    with tempfile.TemporaryDirectory() as cache:
        envs = {"tensorweave": compiled_bytecode_env(sys.executable, cache), "tf": {}}
        if args.baseline:   # (its bytecode compiled into the same prefix, under its own path)
            envs["baseline"] = envs["tensorweave"]
            subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(args.baseline, "tensorweave")],
                           env=dict(os.environ, **envs["baseline"]), check=True, stdout=subprocess.DEVNULL)
        for _ in range(max(1, args.rounds)):
            for side, framework, python, repo in sides:
                if python is None:
                    continue
                local = run_json(python, __file__, ["--framework", framework, "--steps", args.steps, "--repo", repo],
                                 timeout=300, env=envs[side])
                if local and side != "baseline":
                    local.update(run_job(python, framework, args.job_steps, env=envs[framework]))
                if local:
                    results[side].append(local)
    print(f"MNIST-style Estimator, batch {BATCH}; median of {args.rounds} rounds; local {args.steps} steps, "
          f"1 ps + chief + worker {args.job_steps} global steps")
    for key, label, unit in (("local", "local Estimator.train", "examples/s"),
                             ("local_cpu", "local Estimator.train", "examples per CPU second"),
                             ("job", "1 ps + chief + worker", "examples/s"),
                             ("first_step_s", "launch to the worker's first step", "s")):
        line = f"{label}:"
        medians = {}
        for framework, rows in results.items():
            values = [r[key] for r in rows if r.get(key) is not None]
            if values:
                medians[framework] = statistics.median(values)
                line += f" {framework} {medians[framework]:.{0 if unit != 's' else 2}f} {unit};"
        for side, name in (("tensorweave", "ratio"), ("baseline", "baseline/tf")):
            if side in medians and "tf" in medians:
                line += f" {name} {medians[side] / medians['tf']:.2f}x"
        print(line)
    print(f"(load average {load0} at start, {load_average()} at end, {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
