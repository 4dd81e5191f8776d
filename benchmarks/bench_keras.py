"""tf.keras `fit` in graph mode, tensorweave beside TensorFlow 2.15's Keras 2 (the TF 1.x training
loop under tf.compat.v1.disable_v2_behavior(); TF 2.16+ dropped it): examples/s of two models on
synthetic data (nothing downloaded).

    python benchmarks/bench_keras.py [--examples 4096] [--rounds 3]
    TF_PYTHON=none python benchmarks/bench_keras.py             # tensorweave only

- cnn: the Keras MNIST CNN (Conv2D 32 3x3 relu, Conv2D 64 3x3 relu, MaxPooling2D 2x2, Dropout
  0.25, Flatten, Dense 128 relu, Dropout 0.5, Dense 10 softmax), Adadelta, categorical
  cross-entropy with accuracy, batch 128, [28, 28, 1] images.
- lstm: the Keras IMDB LSTM text classifier (Embedding 20000x128, LSTM 128 with dropout 0.2 and
  recurrent_dropout 0.2, Dense 1 sigmoid), Adam, binary cross-entropy with accuracy, batch 32,
  sequences of 80 word ids.

Each model runs in a process of its own: it is built and compiled, one train_on_batch warms it
up, then one `fit` epoch over --examples examples is timed. tensorweave and TF alternate for
--rounds rounds; medians, the ratio and the load average are printed, and examples per CPU second
(user + system, all threads: on a machine busier than its cores the wall time measures the
scheduler as much as the program). $TF_PYTHON (default /opt/tf215venv/bin/python) must have
TensorFlow 2.15. --baseline DIR also runs a checkout of an earlier tensorweave (its own
benchmarks/bench_keras.py) in each round: before and after figures from one run.
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

MODELS = ("cnn", "lstm")


def build(keras, model: str):
    layers = keras.layers
    if model == "cnn":
        net = keras.Sequential([
            layers.Conv2D(32, (3, 3), activation="relu", input_shape=(28, 28, 1)),
            layers.Conv2D(64, (3, 3), activation="relu"), layers.MaxPooling2D((2, 2)), layers.Dropout(0.25),
            layers.Flatten(), layers.Dense(128, activation="relu"), layers.Dropout(0.5),
            layers.Dense(10, activation="softmax")])
        net.compile(loss="categorical_crossentropy", optimizer="adadelta", metrics=["accuracy"])
        return net, 128
    net = keras.Sequential([layers.Embedding(20000, 128, input_length=80),
                            layers.LSTM(128, dropout=0.2, recurrent_dropout=0.2),
                            layers.Dense(1, activation="sigmoid")])
    net.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
    return net, 32


def data(model: str, n: int):
    rng = np.random.RandomState(0)
    if model == "cnn":
        return rng.rand(n, 28, 28, 1).astype(np.float32), np.eye(10, dtype=np.float32)[rng.randint(0, 10, n)]
    return rng.randint(1, 20000, (n, 80)).astype(np.int32), rng.randint(0, 2, (n, 1)).astype(np.float32)


def run_model(framework: str, model: str, examples: int) -> dict:
    if framework == "tf":
        import tensorflow as tf
        tf.compat.v1.disable_v2_behavior()
        keras = tf.keras
    else:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        import tensorweave as tf
        keras = tf.keras
    np.random.seed(0)
    net, batch = build(keras, model)
    x, y = data(model, examples)
    net.train_on_batch(x[:batch], y[:batch])
    start, cpu_start = time.perf_counter(), _cpu_seconds()
    net.fit(x, y, batch_size=batch, epochs=1, verbose=0)
    return {"seconds": time.perf_counter() - start, "cpu_seconds": _cpu_seconds() - cpu_start, "examples": examples}


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--framework", choices=["tensorweave", "tf"], default="tensorweave")
    parser.add_argument("--model", choices=MODELS, help="(internal) run one model and print JSON")
    parser.add_argument("--baseline", help="a checkout of an earlier tensorweave, measured in each round too")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.model:
        print(json.dumps(run_model(args.framework, args.model, args.examples)))
        return
    tf215 = tf_python("/opt/tf215venv/bin/python")
    here = os.path.abspath(__file__)
    runs = [("tensorweave", sys.executable, here)]
    if args.baseline:
        runs.append(("baseline", sys.executable, os.path.join(args.baseline, "benchmarks", "bench_keras.py")))
    if tf215:
        runs.append(("tf", tf215, here))
    models = [m for m in args.models.split(",") if m]
    load0 = load_average()
    rates: dict = {(m, side): [] for m in models for side, _, _ in runs}
    cpu_rates: dict = {key: [] for key in rates}
    for _ in range(max(1, args.rounds)):
        for model in models:
            for side, python, script in runs:
                framework = "tf" if side == "tf" else "tensorweave"
                out = run_json(python, script, ["--framework", framework, "--model", model,
                                                "--examples", args.examples], timeout=1800)
                if out:
                    rates[model, side].append(out["examples"] / out["seconds"])
                    if "cpu_seconds" in out:
                        cpu_rates[model, side].append(out["examples"] / out["cpu_seconds"])
    print(f"tf.keras fit, one epoch of {args.examples} examples; medians of {args.rounds} alternating rounds")
    for model in models:
        print(model)
        medians, cpu_medians = {}, {}
        for side, _, _ in runs:
            if rates[model, side]:
                medians[side] = statistics.median(rates[model, side])
                line = f"  {side:12s} {medians[side]:8,.0f} examples/s"
                if cpu_rates[model, side]:
                    cpu_medians[side] = statistics.median(cpu_rates[model, side])
                    line += f", {cpu_medians[side]:,.0f} examples per CPU second"
                print(line)
        for side in ("tensorweave", "baseline"):
            if side in medians and "tf" in medians:
                line = f"  {side} ratio {medians[side] / medians['tf']:.2f}x TF's examples/s"
                if side in cpu_medians and "tf" in cpu_medians:
                    line += f" ({cpu_medians[side] / cpu_medians['tf']:.2f}x per CPU second)"
                print(line)
    print(f"(load average {load0} at start, {load_average()} at end, {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
