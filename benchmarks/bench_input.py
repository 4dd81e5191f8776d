"""Input pipeline benchmark: seed 003's CIFAR-10 distortion pipeline, in images per second.

    python benchmarks/bench_input.py [--seconds 5] [--rounds 3] [--records 10000]
    TF_PYTHON=/opt/tfvenv/bin/python python benchmarks/bench_input.py   # adds TensorFlow's figures

The pipeline is cifar10_input.distorted_inputs': CIFAR-10-format binary records (1 label byte +
3072 pixel bytes, written here), decode_raw, random crop 24x24 of 32x32, random flip, random
brightness (63), random contrast (0.2-1.8), per_image_standardization, batches of 128. Two paths:
- queue: string_input_producer + FixedLengthRecordReader + shuffle_batch (4 threads,
  min_after_dequeue 1000);
- tf.data: FixedLengthRecordDataset.repeat().map(num_parallel_calls=2).batch(128).prefetch(2).
Each path of each framework runs in a process of its own (pinned to the same 2 cores), the
frameworks alternating for --rounds rounds; figures are medians. The CIFAR-10 tutorial
network's training step (benchmarks/bench_training.py, batch 128) is timed too: the input
rate should stay above it. The machine is shared: the load average is printed with the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from _harness import load_average, tf_python

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RECORD = 1 + 32 * 32 * 3
BATCH = 128


def write_files(directory: str, records: int, files: int = 5) -> list:
    rs = np.random.RandomState(0)
    paths = []
    for k in range(files):
        p = os.path.join(directory, f"data_batch_{k + 1}.bin")
        with open(p, "wb") as f:
            for _ in range(records // files):
                f.write(rs.randint(0, 10, 1).astype(np.uint8).tobytes() + rs.randint(0, 256, 3072).astype(np.uint8)
                        .tobytes())
        paths.append(p)
    return paths


def parse_and_distort(tf, record):
    raw = tf.decode_raw(record, tf.uint8)
    label = tf.cast(tf.strided_slice(raw, [0], [1]), tf.int32)
    image = tf.cast(tf.transpose(tf.reshape(tf.strided_slice(raw, [1], [RECORD]), [3, 32, 32]), [1, 2, 0]),
                    tf.float32)
    image = tf.random_crop(image, [24, 24, 3])
    image = tf.image.random_flip_left_right(image)
    image = tf.image.random_brightness(image, max_delta=63)
    image = tf.image.random_contrast(image, lower=0.2, upper=1.8)
    image = tf.image.per_image_standardization(image)
    image.set_shape([24, 24, 3])
    label.set_shape([1])
    return image, label


def queue_batches(tf, paths):
    queue = tf.train.string_input_producer(paths)
    _, value = tf.FixedLengthRecordReader(record_bytes=RECORD).read(queue)
    image, label = parse_and_distort(tf, value)
    return tf.train.shuffle_batch([image, label], batch_size=BATCH, num_threads=4, capacity=1000 + 3 * BATCH,
                                  min_after_dequeue=1000)


def dataset_batches(tf, paths):
    ds = tf.data.FixedLengthRecordDataset(paths, RECORD).repeat()
    ds = ds.map(lambda r: parse_and_distort(tf, r), num_parallel_calls=2).batch(BATCH).prefetch(2)
    return tf.data.make_one_shot_iterator(ds).get_next() if hasattr(tf.data, "make_one_shot_iterator") \
        else ds.make_one_shot_iterator().get_next()


def measure_path(framework: str, path: str, paths: list, seconds: float) -> float:
    """Images per second of one path (runs in the worker process)."""
    if framework == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf_root
        tf = tf_root.compat.v1
        tf.disable_eager_execution()
        config = tf.ConfigProto(intra_op_parallelism_threads=2, inter_op_parallelism_threads=2)
    else:
        sys.path.insert(0, REPO)
        import tensorweave as tf
        config = tf.ConfigProto()
    if path == "training":
        sys.path.insert(0, HERE)
        from bench_training import cifar_model, measure
        return measure(tf, lambda tf_: cifar_model(tf_, BATCH), max(int(seconds * 4), 10))
    batch = queue_batches(tf, paths) if path == "queue" else dataset_batches(tf, paths)
    with tf.Session(config=config) as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord) if path == "queue" else []
        for _ in range(5):
            sess.run(batch)
        start, n = time.perf_counter(), 0
        while time.perf_counter() - start < seconds:
            sess.run(batch)
            n += BATCH
        rate = n / (time.perf_counter() - start)
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)
    return rate


def run_worker(python: str, framework: str, path: str, paths: list, seconds: float) -> float:
    cmd = ["taskset", "-c", "0,1", python, os.path.abspath(__file__), "--worker", framework, path,
           "--seconds", str(seconds), "--files", json.dumps(paths)]
    env = dict(os.environ, PYTHONPATH=REPO)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    for line in out.stdout.splitlines():
        if line.startswith("RATE "):
            return float(line.split()[1])
    raise RuntimeError(f"{framework} {path} failed:\n{out.stderr[-3000:]}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--records", type=int, default=10000)
    ap.add_argument("--worker", nargs=2, metavar=("FRAMEWORK", "PATH"))
    ap.add_argument("--files")
    args = ap.parse_args()
    if args.worker:
        print("RATE", measure_path(args.worker[0], args.worker[1], json.loads(args.files), args.seconds), flush=True)
        return
    tf_py = tf_python()
    frameworks = [("tensorweave", sys.executable)] + ([("tf", tf_py)] if tf_py else [])
    with tempfile.TemporaryDirectory() as d:
        paths = write_files(d, args.records)
        rates: dict = {}
        for _ in range(args.rounds):
            for path in ("queue", "tf.data"):
                for name, python in frameworks:
                    rates.setdefault((name, path), []).append(run_worker(python, name, path, paths, args.seconds))
        train = [run_worker(sys.executable, "tensorweave", "training", paths, args.seconds) for _ in range(2)]
    print(f"seed 003 distortion pipeline, batch {BATCH}, images/s (median of {args.rounds}), 2 cores; "
          f"load average {load_average()} (the machine is shared)")
    for path in ("queue", "tf.data"):
        ours = statistics.median(rates[("tensorweave", path)])
        line = f"  {path:8s} tensorweave {ours:9.0f}"
        if ("tf", path) in rates:
            theirs = statistics.median(rates[("tf", path)])
            line += f"   TensorFlow {theirs:9.0f}   ratio {ours / theirs:.2f}x TF"
        print(line)
    step = statistics.median(train)
    print(f"  CIFAR-10 tutorial training step (tensorweave, batch {BATCH}): {step:.0f} images/s; the input paths "
          f"run at {min(statistics.median(rates[('tensorweave', p)]) for p in ('queue', 'tf.data')) / step:.1f}x "
          "that rate or more")


if __name__ == "__main__":
    main()
