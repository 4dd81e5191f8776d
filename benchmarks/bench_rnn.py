"""RNN throughput: an LSTM language-model training step, tensorweave beside TensorFlow.

    python benchmarks/bench_rnn.py [--steps 10] [--rounds 3] [--vocab 10000]
    TF_PYTHON=/opt/tfvenv/bin/python python benchmarks/bench_rnn.py     # adds TF figures and ratios

- lm_step: the PTB tutorial's small model at batch 32 x 35 steps: word embedding (vocab 10000,
  200 wide), two BasicLSTMCell(200) layers in tf.nn.dynamic_rnn, a softmax over the vocabulary,
  gradients clipped by global norm 5, one SGD step.
- lstm_loop: one BasicLSTMCell(200) layer in dynamic_rnn over [32, 35, 200] inputs, forward and
  backward (gradients of the variables and inputs): the while loop and its gradient alone.
The same graph-building code runs under both; they alternate for --rounds rounds and each
figure is the median step time over rounds x steps, so that load from other processes on a
shared machine falls on both alike. The load average is printed with the figures, and so is each
side's CPU time a step (user + system, all its threads): on a machine busier than its cores the
wall time measures the scheduler as much as the program, the CPU time much less.

    python benchmarks/bench_rnn.py --baseline /tmp/old     # a checkout of an earlier tensorweave too

--baseline runs that checkout's own benchmarks/bench_rnn.py --json in each round, between ours and
TF's: before and after figures from one run.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time

import numpy as np

from _harness import load_average, run_json, tf_python

BATCH, STEPS, HIDDEN = 32, 35, 200
# Steps run before the timed ones: a training run's steady state, past the plans' profile and
# serial/parallel trials (runtime/inter_op.py, the loops' choices), which take the first ~20 steps.
WARMUP = 25


def lm_step(tf, vocab: int):
    rng = np.random.RandomState(0)
    words = tf.placeholder(tf.int32, [BATCH, STEPS])
    targets = tf.placeholder(tf.int32, [BATCH, STEPS])
    init = tf.random_uniform_initializer(-0.1, 0.1, seed=1)
    with tf.variable_scope("model", initializer=init):
        embedding = tf.get_variable("embedding", [vocab, HIDDEN])
        inputs = tf.nn.embedding_lookup(embedding, words)
        cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(HIDDEN) for _ in range(2)])
        outputs, _ = tf.nn.dynamic_rnn(cell, inputs, dtype=tf.float32)
        w = tf.get_variable("softmax_w", [HIDDEN, vocab])
        b = tf.get_variable("softmax_b", [vocab])
        logits = tf.matmul(tf.reshape(outputs, [-1, HIDDEN]), w) + b
        loss = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.reshape(targets, [-1]), logits=logits)) / BATCH
        params = tf.trainable_variables()
        grads, _ = tf.clip_by_global_norm(tf.gradients(loss, params), 5.0)
        train = tf.train.GradientDescentOptimizer(1.0).apply_gradients(zip(grads, params))
    feed = {words: rng.randint(0, vocab, [BATCH, STEPS]), targets: rng.randint(0, vocab, [BATCH, STEPS])}
    return [train, loss], feed


def lstm_loop(tf, vocab: int):
    x = tf.placeholder(tf.float32, [BATCH, STEPS, HIDDEN])
    with tf.variable_scope("loop", initializer=tf.random_uniform_initializer(-0.1, 0.1, seed=2)):
        outputs, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(HIDDEN), x, dtype=tf.float32)
    loss = tf.reduce_sum(outputs) + tf.reduce_sum(state.c)
    grads = tf.gradients(loss, tf.trainable_variables() + [x])
    return [loss] + grads, {x: np.random.RandomState(0).randn(BATCH, STEPS, HIDDEN).astype(np.float32)}


BENCHES = {"lm_step": lm_step, "lstm_loop": lstm_loop}
LABELS = {"lm_step": f"LSTM LM training step (2x{HIDDEN}, batch {BATCH} x {STEPS} steps)",
          "lstm_loop": f"dynamic_rnn LSTM({HIDDEN}) forward+backward (batch {BATCH} x {STEPS} steps)"}


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(tf, build, steps: int, vocab: int) -> tuple:
    """Median seconds per step after WARMUP steps, and median CPU seconds per step."""
    graph = tf.Graph()
    with graph.as_default():
        fetches, feed = build(tf, vocab)
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(WARMUP):
                sess.run(fetches, feed)
            samples, cpu = [], []
            for _ in range(steps):
                start, cpu_start = time.perf_counter(), _cpu_seconds()
                sess.run(fetches, feed)
                samples.append(time.perf_counter() - start)
                cpu.append(_cpu_seconds() - cpu_start)
    return statistics.median(samples), statistics.median(cpu)


def run_all(framework: str, steps: int, vocab: int) -> dict:
    if framework == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf
        from tensorflow.python.ops import rnn_cell_impl   # TF 2's home of tf.compat.v1.nn.rnn_cell
        tf.disable_eager_execution()
        tf.nn.rnn_cell = rnn_cell_impl
    else:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
        import tensorweave as tf
    out = {}
    for name, build in BENCHES.items():
        out[name], out[name + "_cpu"] = measure(tf, build, steps, vocab)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3, help="alternating tensorweave/TF rounds")
    parser.add_argument("--vocab", type=int, default=10000)
    parser.add_argument("--framework", choices=["tensorweave", "tf"], default="tensorweave")
    parser.add_argument("--baseline", help="a checkout of an earlier tensorweave, measured in each round too")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.json:
        print(json.dumps(run_all(args.framework, args.steps, args.vocab)))
        return
    load0, py = load_average(), tf_python()
    common = ["--steps", args.steps, "--vocab", args.vocab]
    runs: dict = {"tensorweave": [], "baseline": [], "TensorFlow": []}
    for _ in range(max(1, args.rounds)):
        runs["tensorweave"].append(run_all("tensorweave", args.steps, args.vocab))
        if args.baseline:
            runs["baseline"].append(run_json(sys.executable, os.path.join(args.baseline, "benchmarks", "bench_rnn.py"),
                                             common))
        if py:
            runs["TensorFlow"].append(run_json(py, __file__, ["--framework", "tf", *common]))
    runs = {side: [r for r in results if r] for side, results in runs.items()}
    print(f"median over {len(runs['tensorweave'])} rounds x {args.steps} steps; vocabulary {args.vocab}")
    for key, label in LABELS.items():
        print(label)
        medians = {}
        for side, results in runs.items():
            if results:
                medians[side] = statistics.median(r[key] for r in results)
                cpu = [r[key + "_cpu"] for r in results if key + "_cpu" in r]
                cpu_text = f", CPU {statistics.median(cpu) * 1e3:.1f} ms/step" if cpu else ""
                print(f"  {side:12s} {medians[side] * 1e3:8.1f} ms/step{cpu_text}")
        for side in ("tensorweave", "baseline"):
            if side in medians and "TensorFlow" in medians:
                cpu = [statistics.median(r[key + "_cpu"] for r in runs[s]) for s in (side, "TensorFlow")
                       if all(key + "_cpu" in r for r in runs[s])]
                cpu_text = f" ({cpu[0] / cpu[1]:.2f}x its CPU time)" if len(cpu) == 2 else ""
                print(f"  {side} takes {medians[side] / medians['TensorFlow']:.2f}x TF's time{cpu_text}")
    print(f"(load average {load0} at start, {load_average()} at end, {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
