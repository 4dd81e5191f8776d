"""Local training throughput: the CIFAR-10 tutorial's network and an MLP, in examples/second.

    python benchmarks/bench_training.py [--steps 30] [--rounds 3] [--contend 2] [--no-memory]
    TF_PYTHON=/path/to/python-with-tensorflow python benchmarks/bench_training.py   # adds TF ratios

The same graph-building code runs under tensorweave and, when TensorFlow is importable here
or through TF_PYTHON, under tf.compat.v1 in the same run; the ratio tensorweave/TF is printed.
The two alternate for --rounds rounds and each figure is the median over rounds, so that load
from other processes on a shared machine falls on both alike; the load average and each side's
CPU time a step are printed. --contend N starts N busy-loop processes for the whole measurement
(both frameworks under the same contention).
- CIFAR-10 tutorial shapes: batch 64 of 24x24x3, conv 5x5x64 + relu, max pool 3x3/2, conv
  5x5x64 + relu, max pool 3x3/2, dense 384 + relu, dense 10, softmax cross-entropy, SGD.
- MLP 784-512-512-10 at batch 128, SGD.
Then the peak memory of single CNN training steps (tracemalloc) is printed step by step, and
the process's resident set after 10, 100 and 300 steps: neither may grow with the number of
steps.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import tracemalloc

import numpy as np

from _harness import add_contend_arg, busy_loops, load_average, run_json, tf_python

MIB = 1 << 20


def cifar_model(tf, batch: int = 64):
    images = tf.placeholder(tf.float32, [batch, 24, 24, 3])
    labels = tf.placeholder(tf.int64, [batch])
    init = tf.truncated_normal_initializer(stddev=5e-2, seed=1)

    def conv(x, cin, name):
        with tf.variable_scope(name):
            k = tf.get_variable("weights", [5, 5, cin, 64], initializer=init)
            b = tf.get_variable("biases", [64], initializer=tf.constant_initializer(0.1))
            return tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, k, [1, 1, 1, 1], padding="SAME"), b))

    h = conv(images, 3, "conv1")
    h = tf.nn.max_pool(h, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")
    h = conv(h, 64, "conv2")
    h = tf.nn.max_pool(h, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")
    h = tf.reshape(h, [batch, -1])
    dim = h.get_shape()[1].value if hasattr(h.get_shape()[1], "value") else h.get_shape()[1]
    with tf.variable_scope("local3"):
        w = tf.get_variable("weights", [dim, 384], initializer=tf.truncated_normal_initializer(stddev=0.04, seed=2))
        h = tf.nn.relu(tf.matmul(h, w) + tf.get_variable("biases", [384], initializer=tf.constant_initializer(0.1)))
    with tf.variable_scope("softmax_linear"):
        w = tf.get_variable("weights", [384, 10], initializer=tf.truncated_normal_initializer(stddev=1 / 384.0, seed=3))
        logits = tf.matmul(h, w) + tf.get_variable("biases", [10], initializer=tf.constant_initializer(0.0))
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    rng = np.random.RandomState(0)
    feed = {images: rng.rand(batch, 24, 24, 3).astype(np.float32), labels: rng.randint(0, 10, batch)}
    return train_op, feed, batch


def mlp_model(tf, batch: int = 128):
    x = tf.placeholder(tf.float32, [batch, 784])
    y = tf.placeholder(tf.int64, [batch])
    h = x
    sizes = [784, 512, 512, 10]
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        with tf.variable_scope(f"layer{i}"):
            w = tf.get_variable("w", [a, b], initializer=tf.truncated_normal_initializer(stddev=0.05, seed=i))
            h = tf.matmul(h, w) + tf.get_variable("b", [b], initializer=tf.zeros_initializer())
            if i < 2:
                h = tf.nn.relu(h)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    rng = np.random.RandomState(0)
    feed = {x: rng.rand(batch, 784).astype(np.float32), y: rng.randint(0, 10, batch)}
    return train_op, feed, batch


# Steps run before the timed ones: a training run's steady state, past the plan's profile and its
# serial/parallel trials (runtime/inter_op.py), which take tensorweave's first ~35 steps.
WARMUP = 40


def measure(tf, build, steps: int) -> tuple:
    """(median examples/second over `steps` training steps after WARMUP steps, the process's CPU
    milliseconds per step over them: every thread's, oneDNN's and TF's pools too)."""
    graph = tf.Graph()
    with graph.as_default():
        train_op, feed, batch = build(tf)
        sess = tf.Session(graph=graph)
        sess.run(tf.global_variables_initializer())
        for _ in range(WARMUP):
            sess.run(train_op, feed)
        samples, cpu0 = [], time.process_time()
        for _ in range(steps):
            start = time.perf_counter()
            sess.run(train_op, feed)
            samples.append(time.perf_counter() - start)
        cpu_ms = 1e3 * (time.process_time() - cpu0) / steps
        sess.close()
    return batch / statistics.median(samples), cpu_ms


def step_memory(tf, build, steps: int = 6) -> list:
    """Peak traced memory (MiB) of each of `steps` CNN training steps after a warm-up step, and
    what stays allocated after each: numpy reports its buffers to tracemalloc, so this counts
    every activation, gradient and scratch buffer of a step."""
    graph = tf.Graph()
    with graph.as_default():
        train_op, feed, _ = build(tf)
        sess = tf.Session(graph=graph)
        sess.run(tf.global_variables_initializer())
        sess.run(train_op, feed)
        tracemalloc.start()
        rows = []
        try:
            for _ in range(steps):
                tracemalloc.reset_peak()
                base = tracemalloc.get_traced_memory()[0]
                sess.run(train_op, feed)
                current, peak = tracemalloc.get_traced_memory()
                rows.append(((peak - base) / MIB, current / MIB))
        finally:
            tracemalloc.stop()
            sess.close()
    return rows


def resident_mib() -> float:
    """This process's resident set (Linux), which also counts what C libraries (oneDNN's
    primitives, BLAS buffers) allocate outside tracemalloc's view."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MIB


def rss_over_steps(tf, build, marks=(10, 100, 300)) -> list:
    """(steps run, resident MiB) at each mark of a run of CNN training steps."""
    graph = tf.Graph()
    with graph.as_default():
        train_op, feed, _ = build(tf)
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            rows, done = [], 0
            for mark in marks:
                for _ in range(mark - done):
                    sess.run(train_op, feed)
                done = mark
                rows.append((mark, resident_mib()))
    return rows


def run_all(framework: str, steps: int) -> dict:
    if framework == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
    else:
        import tensorweave as tf
    (cifar, cifar_cpu), (mlp, mlp_cpu) = measure(tf, cifar_model, steps), measure(tf, mlp_model, steps)
    return {"cifar10": cifar, "cifar10_cpu_ms": cifar_cpu, "mlp": mlp, "mlp_cpu_ms": mlp_cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3, help="alternating tensorweave/TF rounds")
    parser.add_argument("--framework", choices=["tensorweave", "tf"], default="tensorweave")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-memory", action="store_true", help="skip the step-memory and resident-set checks")
    add_contend_arg(parser)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(run_all(args.framework, args.steps)))
        return
    load0, py = load_average(), tf_python()
    ours, theirs = [], []
    if args.contend:
        print(f"{args.contend} busy-loop processes run for the length of the measurement")
    with busy_loops(args.contend):
        for _ in range(max(1, args.rounds)):
            ours.append(run_all("tensorweave", args.steps))
            tf_result = py and run_json(py, __file__, ["--framework", "tf", "--steps", args.steps])
            if tf_result:
                theirs.append(tf_result)
    rounds = f"median of {len(ours)} rounds x {args.steps} steps"
    for key, label in (("cifar10", "CIFAR-10 tutorial net, batch 64"), ("mlp", "MLP 784-512-512-10, batch 128")):
        mine, cpu = statistics.median(r[key] for r in ours), statistics.median(r[key + "_cpu_ms"] for r in ours)
        line = (f"{label}: tensorweave {mine:.0f} examples/s, {cpu:.1f} ms CPU a step ({rounds}; rounds "
                + " / ".join(f"{r[key]:.0f}" for r in ours) + ")")
        if theirs:
            ref, ref_cpu = (statistics.median(r[k] for r in theirs) for k in (key, key + "_cpu_ms"))
            line += (f"; TensorFlow {ref:.0f} examples/s, {ref_cpu:.1f} ms CPU (rounds "
                     + " / ".join(f"{r[key]:.0f}" for r in theirs) + f"); ratio {mine / ref:.2f}x, "
                     f"CPU {cpu / ref_cpu:.2f}x")
        print(line)
    if args.no_memory:
        print(f"(load average {load0} at start, {load_average()} at end, {os.cpu_count()} CPUs)")
        return
    import tensorweave
    rows = step_memory(tensorweave, cifar_model)
    print("CIFAR-10 step memory (tensorweave, tracemalloc): peak above the step's start, per step: "
          + ", ".join(f"{p:.1f}" for p, _ in rows) + " MiB; held after each step: "
          + ", ".join(f"{c:.1f}" for _, c in rows) + " MiB")
    if os.path.exists("/proc/self/statm"):
        print("CIFAR-10 resident set (tensorweave): " + ", ".join(f"{m:.0f} MiB after {n} steps"
                                                              for n, m in rss_over_steps(tensorweave, cifar_model)))
    print(f"(load average {load0} at start, {load_average()} at end, {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
