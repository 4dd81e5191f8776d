"""Inter-op parallelism (ConfigProto.inter_op_parallelism_threads): steps whose branches are
independent, with one inter-op thread and with the default (0: the cores the process may use),
beside TensorFlow running the same graphs in the same run.

    python benchmarks/bench_parallel.py [--steps 40] [--rounds 2] [--cases towers,gan,cifar]
    TF_PYTHON=/path/to/python-with-tensorflow python benchmarks/bench_parallel.py   # TF_PYTHON=none: no TF

- towers: a 4-tower in-graph model (one MLP 784-512-512-10 on each quarter of a batch of 512,
  shared variables, the towers' gradients averaged, one GradientDescent update), a training step;
- gan: a GAN step (generator 100-256-784, discriminator 784-256-1, batch 256): two optimizers,
  each minimizing its own loss over its own var_list, both run in one Session.run;
- cifar: one CIFAR-10 worker (examples/cifar10's tutorial net, its loss and training op, local,
  a fed batch of 64 synthetic 24x24x3 images) given 1, 2, ... all cores (its CPU affinity): the
  examples/s curve.

The "forced parallel" rows (TENSORWEAVE_INTER_OP=parallel, tensorweave alone) run every plan in
parallel, whatever the measurement chose: what parallel dispatch gives on this machine now.

Each figure comes from a process of its own (a fresh global pool, its own affinity): the median
step time over --steps steps after 20 warm-up steps (tensorweave chooses serial or parallel
dispatch for a plan within its first 35 steps). The frameworks alternate for --rounds rounds; the
medians of the rounds are printed with the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "examples", "cifar10"))

from _harness import load_average, run_json, tf_python  # noqa: E402

WARMUP = 40


def towers_step(tf, np):
    """(fetches, feed, examples per step) of the 4-tower training step."""
    rng = np.random.RandomState(0)
    batch, towers, sizes = 512, 4, [784, 512, 512, 10]
    x = tf.placeholder(tf.float32, [batch, 784])
    y = tf.placeholder(tf.int64, [batch])
    weights = [tf.Variable(rng.randn(a, b).astype(np.float32) * 0.05) for a, b in zip(sizes, sizes[1:])]
    biases = [tf.Variable(np.zeros(b, np.float32)) for b in sizes[1:]]
    opt = tf.train.GradientDescentOptimizer(0.01)
    grads = []
    for xs, ys in zip(tf.split(x, towers), tf.split(y, towers)):
        h = xs
        for i, (w, b) in enumerate(zip(weights, biases)):
            h = tf.matmul(h, w) + b
            if i < len(weights) - 1:
                h = tf.nn.relu(h)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ys, logits=h))
        grads.append(opt.compute_gradients(loss, weights + biases))
    averaged = [(tf.add_n([g for g, _ in pairs]) / towers, pairs[0][1]) for pairs in zip(*grads)]
    train = opt.apply_gradients(averaged)
    feed = {x: rng.randn(batch, 784).astype(np.float32), y: rng.randint(0, 10, batch)}
    return train, feed, batch


def gan_step(tf, np):
    """(fetches, feed, examples per step) of a GAN step: two optimizers with var_lists."""
    rng = np.random.RandomState(0)
    batch = 256
    z = tf.placeholder(tf.float32, [batch, 100])
    real = tf.placeholder(tf.float32, [batch, 784])

    def dense(name, x, n_in, n_out, act):
        with tf.variable_scope(name, reuse=tf.AUTO_REUSE):
            w = tf.get_variable("w", [n_in, n_out], initializer=tf.random_normal_initializer(0.0, 0.05, seed=1))
            b = tf.get_variable("b", [n_out], initializer=tf.zeros_initializer())
        return act(tf.matmul(x, w) + b)

    def discriminator(x):
        return dense("d2", dense("d1", x, 784, 256, tf.nn.relu), 256, 1, tf.identity)

    fake = dense("g2", dense("g1", z, 100, 256, tf.nn.relu), 256, 784, tf.tanh)
    d_real, d_fake = discriminator(real), discriminator(fake)
    xent = tf.nn.sigmoid_cross_entropy_with_logits
    d_loss = tf.reduce_mean(xent(labels=tf.ones_like(d_real), logits=d_real)) + \
        tf.reduce_mean(xent(labels=tf.zeros_like(d_fake), logits=d_fake))
    g_loss = tf.reduce_mean(xent(labels=tf.ones_like(d_fake), logits=d_fake))
    d_vars = [v for v in tf.trainable_variables() if v.name.startswith("d")]
    g_vars = [v for v in tf.trainable_variables() if v.name.startswith("g")]
    d_train = tf.train.AdamOptimizer(2e-4).minimize(d_loss, var_list=d_vars)
    g_train = tf.train.AdamOptimizer(2e-4).minimize(g_loss, var_list=g_vars)
    feed = {z: rng.uniform(-1, 1, (batch, 100)).astype(np.float32),
            real: rng.uniform(-1, 1, (batch, 784)).astype(np.float32)}
    return [d_train, g_train], feed, batch


def cifar_step(tf, np):
    """(fetches, feed, examples per step) of examples/cifar10's training step, batch 64."""
    import cifar10
    rng = np.random.RandomState(0)
    batch = 64
    images = tf.placeholder(tf.float32, [batch, 24, 24, 3])
    labels = tf.placeholder(tf.int32, [batch])
    global_step = tf.train.get_or_create_global_step()
    total = cifar10.loss(cifar10.inference(images), labels)
    train = cifar10.train(total, global_step, batch, 50000)
    train = train[0] if isinstance(train, tuple) else train
    feed = {images: rng.rand(batch, 24, 24, 3).astype(np.float32), labels: rng.randint(0, 10, batch)}
    return train, feed, batch


CASES = {"towers": towers_step, "gan": gan_step, "cifar": cifar_step}


def measure(case: str, threads: int, steps: int) -> dict:
    """This process's figure: median step time of `case` with inter_op_parallelism_threads=`threads`."""
    import numpy as np
    from backend import tf   # examples/cifar10's: tensorweave, or TF's compat.v1 (CIFAR10_BACKEND)
    fetches, feed, batch = CASES[case](tf, np)
    config = tf.ConfigProto(inter_op_parallelism_threads=threads)
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(WARMUP):
            sess.run(fetches, feed)
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            sess.run(fetches, feed)
            times.append(time.perf_counter() - start)
        parallel_plans = None
        master = getattr(sess, "_master", None)
        if hasattr(master, "_plans"):   # (tensorweave: how many of its plans chose parallel dispatch)
            parallel_plans = sum(any(c.mode == 3 for c in getattr(p, "_inter_op_choices", {}).values())
                                 for p in master._plans.values())
    step = statistics.median(times)
    return {"step_ms": step * 1e3, "batch": batch, "parallel_plans": parallel_plans,
            "cores": len(os.sched_getaffinity(0))}


def run_one(python: str, backend: str, case: str, threads: int, cores: int, steps: int, forced: bool) -> dict:
    args = ["--case", case, "--threads", threads, "--cores", cores, "--steps", steps]
    env = {"CIFAR10_BACKEND": backend, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    if forced:
        env["TENSORWEAVE_INTER_OP"] = "parallel"
    return run_json(python, __file__, args, timeout=1800, env=env) or {}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cases", default="towers,gan,cifar")
    parser.add_argument("--case")      # (one measurement, in a process of its own)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--cores", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.case:
        if args.cores:
            os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:args.cores])
        print(json.dumps(measure(args.case, args.threads, args.steps)))
        return
    all_cores = len(os.sched_getaffinity(0))
    runs = []   # (case, label, threads, cores, parallel dispatch forced: tensorweave alone)
    for case in args.cases.split(","):
        if case == "cifar":
            runs += [(case, f"{k} core{'s' if k > 1 else ''}", 0, k, False) for k in sorted({1, 2, all_cores})
                     if k <= all_cores]
        else:
            runs += [(case, "inter_op=1", 1, 0, False), (case, "inter_op=0 (all cores)", 0, 0, False),
                     (case, "inter_op=0, forced parallel", 0, 0, True)]
    backends = [("tensorweave", sys.executable)]
    tf_py = tf_python()
    if tf_py:
        backends.append(("tensorflow", tf_py))
    load0 = load_average()
    results: dict = {}
    for _ in range(args.rounds):
        for case, label, threads, cores, forced in runs:
            for backend, python in backends[:1] if forced else backends:
                r = run_one(python, backend, case, threads, cores, args.steps, forced)
                if r:
                    results.setdefault((case, label, backend), []).append(r)
    print(f"{'case':8} {'setting':28} {'tensorweave ms (ex/s)':>28} {'TensorFlow ms (ex/s)':>22} {'ratio':>6}")
    for case, label, *_ in runs:
        cells, ms = [], []
        for backend, _ in backends:
            rs = results.get((case, label, backend))
            if not rs:
                cells.append("-")
                ms.append(None)
                continue
            step = statistics.median(r["step_ms"] for r in rs)
            rate = rs[0]["batch"] / step * 1e3
            chosen = [r["parallel_plans"] for r in rs if r.get("parallel_plans") is not None]
            extra = f" [parallel plans {'/'.join(map(str, chosen))}]" if chosen else ""
            cells.append(f"{step:.2f} ({rate:.0f}){extra}")
            ms.append(step)
        ratio = f"{ms[0] / ms[1]:.2f}x" if len(ms) > 1 and ms[0] and ms[1] else ""
        print(f"{case:8} {label:28} {cells[0]:>28} {(cells[1] if len(cells) > 1 else '-'):>22} {ratio:>6}")
    print(f"(medians of {args.rounds} rounds of {args.steps} steps after {WARMUP} warm-up; [parallel plans]: "
          f"per round, how many of the run's plans chose parallel dispatch; ratio: tensorweave's time over TF's; "
          f"load average {load0} at start, {load_average()} at end, {all_cores} cores)")


if __name__ == "__main__":
    main()
