"""Whole TF1 programs, end to end, tensorweave beside TensorFlow: three tutorial-shaped programs
(our own code in the shape of TensorFlow-Examples' scripts; synthetic data, nothing downloaded).

    python benchmarks/bench_programs.py [--steps 300] [--rounds 3] [--programs summaries,autoencoder,gan]
    TF_PYTHON=none python benchmarks/bench_programs.py       # tensorweave only
    python benchmarks/bench_programs.py --baseline /work/main  # and an earlier checkout, alternating
    python benchmarks/bench_programs.py --contend 2            # with 2 busy-loop processes running

- summaries: `tensorboard_advanced.py`'s MLP (784-256-256-10, batch 100, ReLU, softmax
  cross-entropy, SGD through tf.gradients + apply_gradients) writing, every step, histogram
  summaries of every weight, gradient and activation and scalar summaries of the loss and
  accuracy (merge_all, FileWriter.add_summary).
- autoencoder: `autoencoder.py`'s MLP 784-256-128-256-784 (sigmoid), mean squared error,
  RMSProp (learning rate 0.01), batch 256.
- gan: `gan.py`'s generator 100-256-784 and discriminator 784-256-1, two Adam optimizers
  (learning rate 2e-4), each with its var_list, both trained in one Session.run, batch 128.
- word2vec: `word2vec.py`'s skip-gram model (an embedding of 50,000 words by 200, nce_loss with 64
  sampled classes, SGD with learning rate 0.1, batch 128): each step looks up and updates a few
  hundred of the embedding's and the NCE weights' rows (word ids drawn from a Zipf law).
- matmul, histogram: the two kernels the summaries program spends its time in, alone: a
  Session.run of the first layer's product (a fed [100, 784] batch times a [784, 256]
  variable), and of a histogram summary of a [784, 256] variable (10x the steps). Besides the
  whole, the median of the single runs (each timed) is printed: on a loaded machine the whole
  is mostly the runs that lost their core, the median is the kernel's own cost.

Each program runs in a process of its own; the figure is the time from building the graph to
the end of the last step (graph, variable initialization, --steps steps). Not timed: imports,
the lazy ones the programs' names trigger on first use included (tensorweave imports its
Session, optimizers and summary writer when first named; TF has imported all of it), and the
synthetic data, the same numpy work for both.
tensorweave and TF alternate for --rounds rounds; the medians, the ratios tensorweave/TF
(below 1: tensorweave faster) and the load average are printed, and beside each the CPU time
(user + system, all threads, of the same span: on a machine busier than its cores the wall time
measures the scheduler as much as the program). --baseline DIR also runs the programs against an
earlier checkout's tensorweave (this script's programs, that checkout's package) in each round:
before and after figures from one run. --contend N starts N busy-loop processes for the whole
command (every side of every round runs beside them: a shared machine's contention, issue 26).
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import statistics
import sys
import tempfile
import time

import numpy as np

from _harness import add_contend_arg, busy_loops, load_average, run_json, tf_python

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = ("summaries", "autoencoder", "gan", "word2vec", "matmul", "histogram")


@functools.lru_cache(maxsize=None)
def synthetic_mnist(n: int = 5000, seed: int = 0):
    """Images in [0, 1) (float32 [n, 784]) and one-hot labels [n, 10]."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 10, n)
    images = (rng.rand(n, 784) * (rng.rand(n, 784) < 0.2)).astype(np.float32)
    return images, np.eye(10, dtype=np.float32)[labels]


def batches(images, labels, batch: int):
    """Endless consecutive batches, wrapping around."""
    i = 0
    while True:
        if i + batch > len(images):
            i = 0
        yield images[i:i + batch], labels[i:i + batch]
        i += batch


def summaries(tf, steps: int, logdir: str) -> None:
    images, labels = synthetic_mnist()
    x = tf.placeholder(tf.float32, [None, 784], name="InputData")
    y = tf.placeholder(tf.float32, [None, 10], name="LabelData")
    sizes = [784, 256, 256, 10]
    weights = {f"w{i + 1}": tf.Variable(tf.random_normal([a, b]), name=f"W{i + 1}")
               for i, (a, b) in enumerate(zip(sizes, sizes[1:]))}
    biases = {f"b{i + 1}": tf.Variable(tf.random_normal([b]), name=f"b{i + 1}") for i, b in enumerate(sizes[1:])}

    with tf.name_scope("Model"):
        layer_1 = tf.nn.relu(tf.add(tf.matmul(x, weights["w1"]), biases["b1"]))
        tf.summary.histogram("relu1", layer_1)
        layer_2 = tf.nn.relu(tf.add(tf.matmul(layer_1, weights["w2"]), biases["b2"]))
        tf.summary.histogram("relu2", layer_2)
        pred = tf.add(tf.matmul(layer_2, weights["w3"]), biases["b3"])
    with tf.name_scope("Loss"):
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=pred, labels=y))
    with tf.name_scope("SGD"):
        optimizer = tf.train.GradientDescentOptimizer(0.01)
        grads = list(zip(tf.gradients(loss, tf.trainable_variables()), tf.trainable_variables()))
        apply_grads = optimizer.apply_gradients(grads_and_vars=grads)
    with tf.name_scope("Accuracy"):
        acc = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1)), tf.float32))
    tf.summary.scalar("loss", loss)
    tf.summary.scalar("accuracy", acc)
    for var in tf.trainable_variables():
        tf.summary.histogram(var.name.replace(":", "_"), var)
    for grad, var in grads:
        tf.summary.histogram(var.name.replace(":", "_") + "/gradient", grad)
    merged = tf.summary.merge_all()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        writer = tf.summary.FileWriter(logdir, graph=tf.get_default_graph())
        feed = batches(images, labels, 100)
        for step in range(steps):
            bx, by = next(feed)
            _, _, summary = sess.run([apply_grads, loss, merged], {x: bx, y: by})
            writer.add_summary(summary, step)
        writer.close()


def autoencoder(tf, steps: int, logdir: str) -> None:
    images, labels = synthetic_mnist()
    sizes = [784, 256, 128]
    x = tf.placeholder(tf.float32, [None, 784])
    pairs = list(zip(sizes, sizes[1:]))
    enc = [(tf.Variable(tf.random_normal([a, b])), tf.Variable(tf.random_normal([b]))) for a, b in pairs]
    dec = [(tf.Variable(tf.random_normal([b, a])), tf.Variable(tf.random_normal([a]))) for a, b in reversed(pairs)]
    h = x
    for w, b in enc + dec:
        h = tf.nn.sigmoid(tf.add(tf.matmul(h, w), b))
    loss = tf.reduce_mean(tf.pow(x - h, 2))
    train = tf.train.RMSPropOptimizer(0.01).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed = batches(images, labels, 256)
        for _ in range(steps):
            bx, _ = next(feed)
            sess.run([train, loss], {x: bx})


def gan(tf, steps: int, logdir: str) -> None:
    images, labels = synthetic_mnist()
    rng = np.random.RandomState(1)

    def glorot(shape):
        return tf.random_normal(shape, stddev=1.0 / np.sqrt(shape[0] / 2.0))
    g_vars = [tf.Variable(glorot([100, 256])), tf.Variable(tf.zeros([256])),
              tf.Variable(glorot([256, 784])), tf.Variable(tf.zeros([784]))]
    d_vars = [tf.Variable(glorot([784, 256])), tf.Variable(tf.zeros([256])),
              tf.Variable(glorot([256, 1])), tf.Variable(tf.zeros([1]))]

    def generator(z):
        h = tf.nn.relu(tf.add(tf.matmul(z, g_vars[0]), g_vars[1]))
        return tf.nn.sigmoid(tf.add(tf.matmul(h, g_vars[2]), g_vars[3]))

    def discriminator(v):
        h = tf.nn.relu(tf.add(tf.matmul(v, d_vars[0]), d_vars[1]))
        return tf.nn.sigmoid(tf.add(tf.matmul(h, d_vars[2]), d_vars[3]))
    gen_input = tf.placeholder(tf.float32, [None, 100])
    disc_input = tf.placeholder(tf.float32, [None, 784])
    disc_real, disc_fake = discriminator(disc_input), discriminator(generator(gen_input))
    gen_loss = -tf.reduce_mean(tf.log(disc_fake))
    disc_loss = -tf.reduce_mean(tf.log(disc_real) + tf.log(1.0 - disc_fake))
    train_gen = tf.train.AdamOptimizer(2e-4).minimize(gen_loss, var_list=g_vars)
    train_disc = tf.train.AdamOptimizer(2e-4).minimize(disc_loss, var_list=d_vars)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed = batches(images, labels, 128)
        for _ in range(steps):
            bx, _ = next(feed)
            z = rng.uniform(-1.0, 1.0, size=[128, 100]).astype(np.float32)
            sess.run([train_gen, train_disc, gen_loss, disc_loss], {disc_input: bx, gen_input: z})


def word2vec(tf, steps: int, logdir: str) -> None:
    vocabulary, width, batch = 50_000, 200, 128
    rng = np.random.RandomState(2)
    words = (rng.zipf(1.3, size=(steps, 2, batch)) - 1) % vocabulary
    x = tf.placeholder(tf.int32, [None])
    y = tf.placeholder(tf.int32, [None, 1])
    embedding = tf.Variable(tf.random_uniform([vocabulary, width], -1.0, 1.0))
    nce_weights = tf.Variable(tf.random_normal([vocabulary, width]))
    nce_biases = tf.Variable(tf.zeros([vocabulary]))
    loss = tf.reduce_mean(tf.nn.nce_loss(weights=nce_weights, biases=nce_biases, labels=y,
                                         inputs=tf.nn.embedding_lookup(embedding, x), num_sampled=64,
                                         num_classes=vocabulary))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for inputs, labels in words:
            sess.run([train, loss], {x: inputs, y: labels[:, None]})


def timed_runs(sess, fetch, feed: dict, runs: int) -> float:
    """Runs `fetch` `runs` times; the median seconds of one run."""
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        sess.run(fetch, feed)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def matmul(tf, steps: int, logdir: str) -> float:
    x = tf.placeholder(tf.float32, [None, 784])
    product = tf.matmul(x, tf.Variable(tf.random_normal([784, 256])))
    batch = synthetic_mnist(100)[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return timed_runs(sess, product, {x: batch}, 10 * steps)


def histogram(tf, steps: int, logdir: str) -> float:
    summary = tf.summary.histogram("weights", tf.Variable(tf.random_normal([784, 256])))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return timed_runs(sess, summary, {}, 10 * steps)


def cpu_seconds() -> float:
    """User + system time of this process, all its threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def import_framework(framework: str, repo: str = REPO):
    if framework == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
        return tf
    sys.path.insert(0, repo)   # (this checkout's tensorweave, or --repo's; not an installed one)
    import tensorweave as tf
    return tf


# the names the programs use, resolved before the clock starts (see the module's docstring)
USED_NAMES = ("Session", "placeholder", "Variable", "random_normal", "random_uniform", "zeros", "matmul", "add",
              "pow", "log", "reduce_mean", "gradients", "global_variables_initializer", "trainable_variables",
              "name_scope", "nn.embedding_lookup", "nn.nce_loss",
              "nn.relu", "nn.sigmoid", "nn.softmax_cross_entropy_with_logits", "summary.histogram",
              "summary.scalar", "summary.merge_all", "summary.FileWriter", "train.GradientDescentOptimizer",
              "train.RMSPropOptimizer", "train.AdamOptimizer")


def resolve_used_names(tf) -> None:
    for name in USED_NAMES:
        functools.reduce(getattr, name.split("."), tf)


def run_program(framework: str, program: str, steps: int, repo: str = REPO) -> dict:
    tf = import_framework(framework, repo)
    resolve_used_names(tf)
    synthetic_mnist(), synthetic_mnist(100)
    with tempfile.TemporaryDirectory() as logdir, tf.Graph().as_default():
        tf.set_random_seed(0)
        start, cpu_start = time.perf_counter(), cpu_seconds()
        run_median = globals()[program](tf, steps, logdir)
        return {"seconds": time.perf_counter() - start, "cpu_seconds": cpu_seconds() - cpu_start,
                "run_median": run_median}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--framework", choices=["tensorweave", "tf"], default="tensorweave")
    parser.add_argument("--program", choices=PROGRAMS, help="(internal) run one program and print JSON")
    parser.add_argument("--baseline", help="a checkout of an earlier tensorweave, measured in each round too")
    parser.add_argument("--repo", default=REPO, help="(internal) the checkout whose tensorweave --program imports")
    parser.add_argument("--json", action="store_true")
    add_contend_arg(parser)
    args = parser.parse_args()
    if args.program:
        print(json.dumps(run_program(args.framework, args.program, args.steps, os.path.abspath(args.repo))))
        return
    with busy_loops(args.contend):
        measure([p for p in args.programs.split(",") if p], args)


def measure(programs: list, args) -> None:
    """Runs `programs` for every side, alternating, and prints the medians."""
    load0, py = load_average(), tf_python()
    # (side, python, the tensorweave checkout it imports)
    runs = [("tensorweave", sys.executable, REPO)]
    if args.baseline:
        runs.append(("baseline", sys.executable, os.path.abspath(args.baseline)))
    if py:
        runs.append(("tf", py, REPO))
    seconds: dict = {(p, f): [] for p in programs for f, _, _ in runs}
    cpu: dict = {key: [] for key in seconds}
    run_medians: dict = {key: [] for key in seconds}
    for _ in range(max(1, args.rounds)):
        for program in programs:
            for side, python, repo in runs:
                out = run_json(python, __file__, ["--framework", "tf" if side == "tf" else "tensorweave",
                                                  "--program", program, "--steps", args.steps, "--repo", repo],
                               timeout=1200)
                if out:
                    seconds[program, side].append(out["seconds"])
                    cpu[program, side].append(out["cpu_seconds"])
                    if out.get("run_median") is not None:
                        run_medians[program, side].append(out["run_median"])
    print(f"whole programs, {args.steps} steps each; medians of {args.rounds} alternating rounds "
          "(graph + init + steps)" + (f"; {args.contend} busy-loop processes running" if args.contend else ""))
    for program in programs:
        print(program)
        medians, cpu_medians = {}, {}
        steps = args.steps * (10 if program in ("matmul", "histogram") else 1)
        for side, _, _ in runs:
            if seconds[program, side]:
                t = medians[side] = statistics.median(seconds[program, side])
                c = cpu_medians[side] = statistics.median(cpu[program, side])
                print(f"  {side:12s} {t:.2f} s ({t / steps * 1e3:.3f} ms/step), CPU {c:.2f} s "
                      f"({c / steps * 1e3:.3f} ms/step)")
        for side in ("tensorweave", "baseline"):
            if side in medians and "tf" in medians:
                print(f"  {side} ratio {medians[side] / medians['tf']:.2f}x TF's time "
                      f"(CPU time {cpu_medians[side] / cpu_medians['tf']:.2f}x)")
        if "tensorweave" in medians and "baseline" in medians:
            print(f"  tensorweave / baseline {medians['tensorweave'] / medians['baseline']:.2f}x the time "
                  f"(CPU time {cpu_medians['tensorweave'] / cpu_medians['baseline']:.2f}x)")
        singles = {f: statistics.median(run_medians[program, f]) for f, _, _ in runs if run_medians[program, f]}
        if singles:
            line = "  median single run:" + "".join(f" {f} {t * 1e3:.3f} ms;" for f, t in singles.items())
            if "tensorweave" in singles and "tf" in singles:
                line += f" ratio {singles['tensorweave'] / singles['tf']:.2f}x TF's time"
            print(line)
    print(f"(load average {load0} at start, {load_average()} at end, {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
