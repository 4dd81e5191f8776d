"""Parameter-server training of a whole job: 1 ps + 2 workers (--workers), each its own process, training an
MLP 784-512-512-10 at batch 128: with plain tf.Session(server.target) workers asynchronously
(mode plain: the chief initialises, the other waits; 1,000 global steps, GradientDescent(0.1);
examples/s of the job measured on worker 0 after its 20th step), and with
tf.train.MonitoredTrainingSession asynchronously and synchronously (modes async and sync;
SyncReplicasOptimizer, replicas_to_aggregate = the workers). Mode profile is plain with every other step
of worker 0 traced (RunOptions FULL_TRACE): it prints the fractions of a step in compute,
Recv waits, Sends and outside the worker's ops, on each side (docs/PERFORMANCE.md).

    python benchmarks/bench_ps_training.py [--modes plain,profile,async,sync] [--steps 200] [--repeats 3]
                                           [--workers 2] [--contend 2]
    TF_PYTHON=/opt/tfvenv/bin/python python benchmarks/bench_ps_training.py

For each mode it prints, medians over the repeats:
  start-up    from starting the processes to the chief's first training step
  train       the chief's first step to the global step reaching --steps
  examples/s  of the whole job over that time (a global step is one batch asynchronously, two
              batches synchronously)
  wall        from starting the processes to every worker gone, start-up and shutdown included
  workers     how each worker ended: exit code, or "hung" (still running --hang_s seconds after
              the chief ended, then killed)
With TF_PYTHON set, the same program runs under TensorFlow (tf.compat.v1) in the same run,
alternating with tensorweave, and the ratios are printed. The tensorweave tasks get the
environment `tensorweave launch` gives them (the cores shared out as BLAS threads, unless
OMP_NUM_THREADS & co. are set); TensorFlow's run with its own defaults (--tf_same_env gives them
that environment too). The ps tasks serve until the workers
are gone and are then stopped, in both. The load average is printed before and after, and the
CPU time of the job's tasks: all of it, and from the chief's first step to its stop per example
the job trained ("cpu us/ex"). --contend N starts N busy-loop processes for the whole run
(both frameworks under the same contention); --workers 1 gives the single worker's figure a job
of more workers must reach (issue 26 item 4).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from _harness import add_contend_arg, busy_loops, children_cpu_s, free_ports, load_average, tf_python

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 128
WARMUP = 20   # the plain variant times worker 0 after this many of its steps


# -- one task (run in its own process, under tensorweave or TensorFlow) ----------------------------
def task(args) -> None:
    import numpy as np   # (here: the TF interpreter imports nothing of tensorweave)
    if args.framework == "tf":
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
    else:
        import tensorweave as tf
    cluster = tf.train.ClusterSpec(json.loads(args.cluster))
    server = tf.train.Server(cluster, job_name=args.job_name, task_index=args.task_index)
    if args.job_name == "ps":
        print("SERVING", flush=True)
        server.join()
        return
    is_chief = args.task_index == 0
    rng = np.random.RandomState(args.task_index)
    data_x = rng.rand(1024, 784).astype(np.float32)
    data_y = rng.randint(0, 10, 1024).astype(np.int64)
    with tf.device(tf.train.replica_device_setter(worker_device=f"/job:worker/task:{args.task_index}",
                                                  cluster=cluster)):
        x = tf.placeholder(tf.float32, [None, 784])
        y = tf.placeholder(tf.int64, [None])

        def dense(inputs, n_in, n_out, name, relu=True):   # (tf.layers needs Keras 2 in TF 2.16+)
            w = tf.get_variable(name + "/kernel", [n_in, n_out], initializer=tf.glorot_uniform_initializer())
            b = tf.get_variable(name + "/bias", [n_out], initializer=tf.zeros_initializer())
            out = tf.matmul(inputs, w) + b
            return tf.nn.relu(out) if relu else out
        h = dense(x, 784, 512, "dense")
        h = dense(h, 512, 512, "dense_1")
        logits = dense(h, 512, 10, "dense_2", relu=False)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.GradientDescentOptimizer(0.1 if args.plain else 0.01)
        hooks = [tf.train.StopAtStepHook(last_step=args.steps)]
        if args.sync:
            replicas = cluster.num_tasks("worker")
            opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=replicas, total_num_replicas=replicas)
            hooks.append(opt.make_session_run_hook(is_chief))
        train = opt.minimize(loss, global_step=global_step)
    if args.plain:
        plain_session_loop(tf, args, server, is_chief, train, global_step, x, y, data_x, data_y)
        return
    local_steps, first = 0, None
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief, hooks=hooks,
                                           log_step_count_steps=0) as sess:
        while not sess.should_stop():
            i = (local_steps * BATCH) % 1024
            if first is None:
                first = time.time()
                print(f"FIRST {first}", flush=True)
            sess.run(train, {x: data_x[i:i + BATCH], y: data_y[i:i + BATCH]})
            local_steps += 1
        stopped = time.time()
        print(f"STOPPED {stopped}", flush=True)
    print(json.dumps({"task": args.task_index, "local_steps": local_steps, "first": first, "stopped": stopped}),
          flush=True)


def plain_session_loop(tf, args, server, is_chief, train, global_step, x, y, data_x, data_y) -> None:
    """The plain variant: a tf.Session(server.target) per worker; the chief initialises, the
    other polls until the variables are; both train until the global step reaches --steps.
    Worker 0 times from its WARMUP-th step to its last."""
    init = tf.global_variables_initializer()
    uninit = tf.report_uninitialized_variables()
    sess = tf.Session(server.target)
    if is_chief:
        sess.run(init)
    else:
        while len(sess.run(uninit)):
            time.sleep(0.05)
    local_steps, gs, warm = 0, 0, None
    profiles = []
    print(f"FIRST {time.time()}", flush=True)
    while gs < args.steps:
        i = (local_steps * BATCH) % 1024
        feed = {x: data_x[i:i + BATCH], y: data_y[i:i + BATCH]}
        if args.profile and is_chief and local_steps >= WARMUP and local_steps % 2:
            # every other step traced (the untraced ones between keep the two workers' phases mixing)
            options, meta = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), tf.RunMetadata()
            t0 = time.time()
            _, gs = sess.run([train, global_step], feed, options=options, run_metadata=meta)
            profiles.append(step_profile(meta.step_stats, t0, time.time()))
        else:
            _, gs = sess.run([train, global_step], feed)
        local_steps += 1
        if local_steps == WARMUP:
            warm = (time.perf_counter(), gs, local_steps)
    end = time.perf_counter()
    print(f"STOPPED {time.time()}", flush=True)
    if profiles:
        print("PROFILE " + json.dumps({k: statistics.median(p[k] for p in profiles) for k in profiles[0]}), flush=True)
    if warm is not None:
        took = end - warm[0]
        print(f"PLAIN {(gs - warm[1]) * BATCH / took} {(local_steps - warm[2]) * BATCH / took}", flush=True)
    sess.close()


def _union_us(intervals: list) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def step_profile(step_stats, t0: float, t1: float) -> dict:
    """One traced step seen from worker 0, in microseconds: the step's wall time; on the worker,
    the time in compute ops, in _Recv (waiting for the ps's values: its reads, the transfer, its
    scheduling) and in _Send (the gradients' serialisation and socket writes); the rest of the
    wall time outside the worker's ops (the master's dispatch, then waiting for the ps to take
    the gradients, apply them and reply); on the ps, its compute ops (reads, applies) and its
    _Recv waits. Intervals are unions (TF runs ops in parallel), from each op's recorded start
    and duration; both frameworks label an op "name = Op(inputs)"."""
    kinds: dict = {}
    for dev in step_stats.dev_stats:
        side = "ps" if "/job:ps" in dev.device else "worker" if "/job:worker/replica:0/task:0" in dev.device else None
        if side is None:
            continue
        for n in dev.node_stats:
            label = n.timeline_label or ""
            op = label.split(" = ", 1)[1].split("(", 1)[0] if " = " in label else ""
            # (TF records a transfer as a "RecvTensor" entry on the receiving device, not as an op)
            kind = ("recv" if op == "_Recv" or n.node_name == "RecvTensor" else "send" if op == "_Send"
                    else "compute")
            start = n.all_start_micros
            kinds.setdefault((side, kind), []).append((start, start + max(n.all_end_rel_micros, 0)))
    wall = (t1 - t0) * 1e6
    out = {"wall_us": wall}
    for side in ("worker", "ps"):
        for kind in ("compute", "recv", "send"):
            out[f"{side}_{kind}_us"] = _union_us(kinds.get((side, kind), []))
    busy = _union_us([iv for (side, _), ivs in kinds.items() if side == "worker" for iv in ivs])
    out["worker_outside_ops_us"] = wall - busy
    return out


# -- the harness -----------------------------------------------------------------------------------
def tasks_cpu_s(procs) -> float:
    """User + system CPU seconds the running `procs` have used so far (Linux /proc; 0 elsewhere)."""
    total = 0
    for p in procs:
        try:
            with open(f"/proc/{p.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])   # utime, stime (fields 14, 15 of stat(5))
        except (OSError, IndexError, ValueError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


def _lines(f) -> list:
    f.flush()
    f.seek(0)
    return f.read().decode(errors="replace").splitlines()


def run_job(python: str, framework: str, sync: bool, steps: int, hang_s: float, timeout_s: float,
            extra_env: dict, plain: bool = False, profile: bool = False, workers: int = 2) -> dict:
    ports = free_ports(1 + workers)
    cluster = json.dumps({"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{p}" for p in ports[1:]]})
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("TF_CONFIG", None)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.update(extra_env)
    start, cpu0 = time.time(), children_cpu_s()
    procs, outs = {}, {}
    for job, index in [("ps", 0)] + [("worker", i) for i in range(workers)]:
        out = tempfile.TemporaryFile()
        cmd = [python, os.path.abspath(__file__), "--role", "task", "--framework", framework, "--cluster", cluster,
               "--job_name", job, "--task_index", str(index), "--steps", str(steps)] + (["--sync"] if sync else []) + (
            ["--plain"] if plain else []) + (["--profile"] if profile else [])
        procs[(job, index)] = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env,
                                               start_new_session=True)
        outs[(job, index)] = out
    ended: dict = {}
    chief_done = None
    cpu_marks: list = []   # the tasks' CPU seconds at the chief's first step and at its stop
    deadline = start + timeout_s
    while len(ended) < workers and time.time() < deadline:
        for i in range(workers):
            p = procs[("worker", i)]
            if i not in ended and p.poll() is not None:
                ended[i] = (time.time(), str(p.returncode))
        chief_lines = _lines(outs[("worker", 0)])
        if not cpu_marks and any(ln.startswith("FIRST") for ln in chief_lines):
            cpu_marks.append(tasks_cpu_s(procs.values()))
        if chief_done is None and any(ln.startswith("STOPPED") for ln in chief_lines):
            chief_done = time.time()
            cpu_marks.append(tasks_cpu_s(procs.values()))
        if chief_done is not None and time.time() - chief_done > hang_s:
            break
        time.sleep(0.02)
    for i in range(workers):
        if i not in ended:
            ended[i] = (time.time(), "hung")
    wall = max(t for t, _ in ended.values()) - start
    for p in procs.values():
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    cpu = children_cpu_s() - cpu0   # (the three tasks': the busy loops are waited for at the end)
    # (CPU of all three tasks from the chief's first step to its stop, per example the job trained)
    train_cpu = cpu_marks[1] - cpu_marks[0] if len(cpu_marks) == 2 else float("nan")
    cpu_us = 1e6 * train_cpu / (steps * BATCH * (workers if sync else 1))
    lines = _lines(outs[("worker", 0)])
    for f in outs.values():
        f.close()
    first = next((float(ln.split()[1]) for ln in lines if ln.startswith("FIRST")), None)
    stopped = next((float(ln.split()[1]) for ln in lines if ln.startswith("STOPPED")), None)
    if first is None or stopped is None:
        return {"ok": False, "wall": wall, "workers": ",".join(s for _, s in ended.values())}
    examples = steps * BATCH * (workers if sync else 1)
    rate = next((ln.split()[1:] for ln in lines if ln.startswith("PLAIN")), None)
    if plain:
        if rate is None:
            return {"ok": False, "wall": wall, "workers": ",".join(s for _, s in ended.values())}
        prof = next((json.loads(ln.split(" ", 1)[1]) for ln in lines if ln.startswith("PROFILE")), None)
        return {"ok": True, "startup": first - start, "train": stopped - first, "examples_per_s": float(rate[0]),
                "worker0_examples_per_s": float(rate[1]), "wall": wall,
                "workers": ",".join(s for _, s in ended.values()), "profile": prof, "cpu": cpu,
                "train_cpu": train_cpu, "cpu_us_per_example": cpu_us}
    return {"ok": True, "startup": first - start, "train": stopped - first,
            "examples_per_s": examples / (stopped - first),
            "wall": wall, "workers": ",".join(s for _, s in ended.values()), "cpu": cpu,
            "train_cpu": train_cpu, "cpu_us_per_example": cpu_us}


def print_profile(name: str, p: dict) -> None:
    """The headline numbers of step_profile (medians over worker 0's traced steps)."""
    wall = p["wall_us"]

    def pct(key: str) -> str:
        return f"{p[key]:7.0f} us {100 * p[key] / wall:4.0f}%"
    print(f"profile of one async step, {name} (worker 0, medians of traced steps): wall {wall:.0f} us\n"
          f"  worker: compute {pct('worker_compute_us')}  recv wait {pct('worker_recv_us')}  "
          f"send {pct('worker_send_us')}  outside its ops {pct('worker_outside_ops_us')}\n"
          f"  ps:     compute {pct('ps_compute_us')}  recv wait {pct('ps_recv_us')}  send {pct('ps_send_us')}")


def median_of(runs: list, key: str):
    vals = [r[key] for r in runs if r.get("ok")]
    return statistics.median(vals) if vals else float("nan")


def run_modes(args, modes: list, frameworks: list, blas_threads_env) -> dict:
    """{(framework, mode): [run_job's result per repeat]}, the frameworks alternating."""
    results: dict = {}
    for mode in modes:
        for _ in range(args.repeats):
            for name, python in frameworks:   # alternating, so both see the same load
                env = blas_threads_env(1 + args.workers) if name == "tensorweave" or args.tf_same_env else {}
                plain = mode in ("plain", "profile")
                r = run_job(python, name, mode == "sync", args.plain_steps if plain else args.steps, args.hang_s,
                            args.timeout_s, env, plain=plain, profile=mode == "profile", workers=args.workers)
                results.setdefault((name, mode), []).append(r)
                own = f" (worker 0's own {r['worker0_examples_per_s']:6.0f})" if plain and r["ok"] else ""
                print(f"  {name:11s} {mode:5s} " + ("startup {startup:5.1f} s  train {train:6.2f} s  "
                                                    "{examples_per_s:7.0f} ex/s".format(**r) + own +
                                                    "  wall {wall:6.1f} s  cpu {cpu:5.1f} s (training "
                                                    "{train_cpu:5.2f} s)  workers {workers}  load {load:.2f}"
                                                    .format(load=os.getloadavg()[0], **r)
                                                    if r["ok"] else f"failed: {r}"), flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--role", default="bench")
    parser.add_argument("--framework", default="tensorweave")
    parser.add_argument("--cluster")
    parser.add_argument("--job_name")
    parser.add_argument("--task_index", type=int, default=0)
    parser.add_argument("--sync", action="store_true")
    parser.add_argument("--plain", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true", help="plain mode: trace worker 0's steps, print a breakdown")
    parser.add_argument("--steps", type=int, default=200, help="global steps to train (MonitoredTrainingSession)")
    parser.add_argument("--plain_steps", type=int, default=1000, help="global steps to train (plain Session)")
    parser.add_argument("--modes", default="plain,async,sync",
                        help="comma-separated: plain (async, tf.Session), profile (plain, worker 0's steps traced), "
                        "async and sync (MonitoredTrainingSession)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--hang_s", type=float, default=60.0, help="how long a worker may outlive the chief")
    parser.add_argument("--timeout_s", type=float, default=400.0, help="a run's limit")
    parser.add_argument("--tf_same_env", action="store_true", help="give TF's tasks the BLAS thread settings too")
    parser.add_argument("--workers", type=int, default=2, help="worker tasks (1 ps besides)")
    add_contend_arg(parser)
    args = parser.parse_args()
    if args.role == "task":
        task(args)
        return
    # the harness runs here only, under tensorweave's Python (a task may run under TF's)
    sys.path.insert(0, REPO)
    from tensorweave.cli import blas_threads_env   # what `tensorweave launch` sets for each task
    tf_py = tf_python()
    frameworks = [("tensorweave", sys.executable)] + ([("tf", tf_py)] if tf_py else [])
    modes = [m for m in args.modes.split(",") if m]
    print(f"bench_ps_training: 1 ps + {args.workers} worker(s), MLP 784-512-512-10, batch {BATCH}, "
          f"{args.plain_steps} global steps (plain) / {args.steps} (MonitoredTrainingSession), {args.repeats} repeats; "
          f"load average {load_average()}, {os.cpu_count()} cores; "
          f"tensorweave task env {blas_threads_env(1 + args.workers)}"
          + (f"; {args.contend} busy-loop processes running" if args.contend else ""), flush=True)
    with busy_loops(args.contend):
        results = run_modes(args, modes, frameworks, blas_threads_env)
    print(f"\n{'framework':11s} {'mode':5s} {'start-up s':>10s} {'train s':>8s} {'examples/s':>10s} {'wall s':>7s}"
          f" {'cpu us/ex':>9s}  workers")
    for (name, mode), runs in results.items():
        print(f"{name:11s} {mode:5s} {median_of(runs, 'startup'):10.1f} {median_of(runs, 'train'):8.2f} "
              f"{median_of(runs, 'examples_per_s'):10.0f} {median_of(runs, 'wall'):7.1f} "
              f"{median_of(runs, 'cpu_us_per_example'):9.1f}  "
              f"{' | '.join(r['workers'] for r in runs)}")
    for name, _ in frameworks:
        profiles = [r["profile"] for r in results.get((name, "profile"), []) if r.get("ok") and r.get("profile")]
        if profiles:
            print_profile(name, {k: statistics.median(p[k] for p in profiles) for k in profiles[0]})
    if tf_py:
        for mode in modes:
            tw, tf = results[("tensorweave", mode)], results[("tf", mode)]
            speed = median_of(tw, "examples_per_s") / median_of(tf, "examples_per_s")
            cpu = median_of(tw, "cpu_us_per_example") / median_of(tf, "cpu_us_per_example")
            print(f"{mode}: examples/s tensorweave/TF = {speed:.2f}x, "
                  f"wall time tensorweave/TF = {median_of(tw, 'wall') / median_of(tf, 'wall'):.2f}x, "
                  f"CPU time per example tensorweave/TF = {cpu:.2f}x")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
