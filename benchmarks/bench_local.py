"""Local (single-process) runtime benchmarks: per-op overhead and an MLP forward pass, beside TensorFlow.

    python benchmarks/bench_local.py [--repeats 300] [--rounds 3]
    TF_PYTHON=none python benchmarks/bench_local.py     # tensorweave alone (default TF: /opt/tfvenv/bin/python)

Prints medians over repeated Session.run calls of one planned signature:
- per-op cost of a 200-op chain of scalar float32 adds, as planned by default (elementwise trees
  fused, runtime/fusion.py) and with ConfigProto.graph_options.optimizer_options.global_jit_level
  = OFF (one kernel call per op); TF's figure is its default (no XLA);
- step time of a 3-layer MLP forward pass (784-512-512-10, batch 128) and, for scale, the
  same three matmuls in plain numpy.
The same graph-building code runs under both frameworks; they alternate for --rounds rounds and
each figure is the median over rounds, so that load from other processes falls on both alike.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from _harness import load_average, run_json, tf_python


def _median_seconds(fn, repeats: int) -> float:
    fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _config(tf, jit_off: bool):
    if not jit_off:
        return None
    config = tf.ConfigProto()
    config.graph_options.optimizer_options.global_jit_level = tf.OptimizerOptions.OFF
    return config


def bench_add_chain(tf, repeats: int, jit_off: bool = False, length: int = 200) -> float:
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        y = x
        for _ in range(length):
            y = y + 1.0
        with tf.Session(config=_config(tf, jit_off)) as sess:
            t = _median_seconds(lambda: sess.run(y, {x: 1.0}), repeats)
    return t / length


def bench_mlp(tf, repeats: int, batch: int = 128) -> float:
    weights, data = _mlp_data(batch)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 784])
        h = x
        for i, w in enumerate(weights):
            h = tf.matmul(h, tf.constant(w)) + tf.constant(np.zeros(w.shape[1], np.float32))
            if i < len(weights) - 1:
                h = tf.nn.relu(h)
        with tf.Session() as sess:
            return _median_seconds(lambda: sess.run(h, {x: data}), repeats)


def _mlp_data(batch: int):
    rng = np.random.default_rng(0)
    sizes = [784, 512, 512, 10]
    weights = [rng.standard_normal((a, b)).astype(np.float32) * 0.05 for a, b in zip(sizes, sizes[1:])]
    return weights, rng.standard_normal((batch, 784)).astype(np.float32)


def bench_numpy_mlp(repeats: int, batch: int = 128) -> float:
    weights, data = _mlp_data(batch)

    def numpy_forward():
        a = data
        for i, w in enumerate(weights):
            a = a @ w + np.zeros(w.shape[1], np.float32)
            if i < len(weights) - 1:
                a = np.maximum(a, 0)
        return a
    return _median_seconds(numpy_forward, repeats)


def run_all(framework: str, repeats: int) -> dict:
    if framework == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
        return {"add_chain": bench_add_chain(tf, repeats), "mlp": bench_mlp(tf, max(20, repeats // 5))}
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import tensorweave as tf
    return {"add_chain": bench_add_chain(tf, repeats), "add_chain_unfused": bench_add_chain(tf, repeats, True),
            "mlp": bench_mlp(tf, max(20, repeats // 5)), "numpy_mlp": bench_numpy_mlp(max(20, repeats // 5))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3, help="alternating tensorweave/TF rounds")
    parser.add_argument("--framework", choices=["tensorweave", "tf"], default="tensorweave")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.json:
        print(json.dumps(run_all(args.framework, args.repeats)))
        return
    load0, py = load_average(), tf_python()
    ours, theirs = [], []
    for _ in range(max(1, args.rounds)):
        ours.append(run_all("tensorweave", args.repeats))
        tf_result = py and run_json(py, __file__, ["--framework", "tf", "--repeats", args.repeats])
        if tf_result:
            theirs.append(tf_result)

    def median(results, key):
        return statistics.median(r[key] for r in results)
    print(f"medians over {len(ours)} rounds of {args.repeats} runs")
    ref = theirs and median(theirs, "add_chain")
    for key, label in (("add_chain", "fused (default)"), ("add_chain_unfused", "global_jit_level OFF")):
        line = f"add chain (200 scalar adds), {label}: {median(ours, key) * 1e6:.3f} us per op"
        if ref:
            line += f"; TensorFlow {ref * 1e6:.3f} us per op; {median(ours, key) / ref:.2f}x TF's time"
        print(line)
    t_tw, t_np = median(ours, "mlp"), median(ours, "numpy_mlp")
    line = (f"MLP 784-512-512-10 forward, batch 128: {t_tw * 1e3:.3f} ms per step "
            f"(numpy alone {t_np * 1e3:.3f} ms; ratio numpy/tensorweave {t_np / t_tw:.2f})")
    if theirs:
        line += f"; TensorFlow {median(theirs, 'mlp') * 1e3:.3f} ms; {t_tw / median(theirs, 'mlp'):.2f}x TF's time"
    print(line)
    print(f"(load average {load0} at start, {load_average()} at end, {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
