"""The tutorials' distributed recipe as a tf.estimator program: a model_fn of tf.layers, a tf.data
input_fn, RunConfig from TF_CONFIG, tf.estimator.train_and_evaluate, and a SavedModel export of
the final model (an MNIST-shaped problem on synthetic data: no download).

The same program runs as every task; TF_CONFIG says which:

    tensorweave launch --ps 1 --chief 1 --workers 2 --evaluator 1 examples/mnist_estimator.py \\
        --model_dir=/tmp/mnist_estimator
    python examples/mnist_estimator.py --model_dir=/tmp/mnist_estimator      # locally, no TF_CONFIG
    tensorweave launch --workers 2 --evaluator 1 examples/mnist_estimator.py \
        --model_dir=/tmp/mnist_collective --strategy=multi_worker_mirrored    # a collective job, no ps

The ps tasks serve the variables and exit once every trainer has finished; the chief and workers
train asynchronously to --max_steps. With --strategy=multi_worker_mirrored
(RunConfig(train_distribute=tf.distribute.experimental.MultiWorkerMirroredStrategy()), the one
line that changes) there is no ps: every worker keeps a copy of the variables, kept equal by
all-reducing the gradients of each step, and worker 0 (or the chief) checkpoints. The evaluator
evaluates each new checkpoint and, after the final one, FinalExporter writes
model_dir/export/mnist/<timestamp>, a SavedModel
(tf.saved_model.loader.load, tag "serve", signature "serving_default": images in, classes and
probabilities out). Each task prints one JSON line when it is done.
"""
from __future__ import annotations

import argparse
import json
import logging

import numpy as np

import tensorweave as tf


def synthetic_mnist(n: int, seed: int):
    """n noisy images (784 values in [0, 1]) of 10 fixed random "digit" prototypes, and their labels."""
    prototypes = np.random.RandomState(42).rand(10, 784).astype(np.float32)
    rng = np.random.RandomState(seed)
    y = rng.randint(0, 10, n)
    x = np.clip(prototypes[y] + 0.6 * rng.randn(n, 784), 0.0, 1.0).astype(np.float32)
    return x, y.astype(np.int64)


def model_fn(features, labels, mode, params):
    """A 784-128-10 classifier: softmax cross-entropy, Adam, accuracy."""
    hidden = tf.layers.dense(features["images"], 128, activation=tf.nn.relu)
    logits = tf.layers.dense(hidden, 10)
    classes = tf.argmax(logits, 1)
    predictions = {"classes": classes, "probabilities": tf.nn.softmax(logits)}
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions=predictions)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.train.AdamOptimizer(params["learning_rate"]).minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op,
                                      eval_metric_ops={"accuracy": tf.metrics.accuracy(labels, classes)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--max_steps", type=int, default=600)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--strategy", choices=("none", "multi_worker_mirrored"), default="none",
                        help="multi_worker_mirrored: a collective job of workers (no ps)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    x_train, y_train = synthetic_mnist(2000, seed=1)
    x_test, y_test = synthetic_mnist(500, seed=2)

    def train_input_fn():
        data = tf.data.Dataset.from_tensor_slices(({"images": x_train}, y_train))
        return data.shuffle(2000).repeat().batch(args.batch_size)

    def eval_input_fn():
        return tf.data.Dataset.from_tensor_slices(({"images": x_test}, y_test)).batch(500)

    strategy = (tf.distribute.experimental.MultiWorkerMirroredStrategy() if args.strategy == "multi_worker_mirrored"
                else None)
    config = tf.estimator.RunConfig(model_dir=args.model_dir, save_checkpoints_steps=100, save_summary_steps=50,
                                    log_step_count_steps=100, train_distribute=strategy)
    estimator = tf.estimator.Estimator(model_fn, config=config, params={"learning_rate": args.learning_rate})
    serving_input_fn = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"images": tf.placeholder(tf.float32, [None, 784], name="images")})
    train_spec = tf.estimator.TrainSpec(train_input_fn, max_steps=args.max_steps)
    eval_spec = tf.estimator.EvalSpec(eval_input_fn, steps=None, start_delay_secs=0, throttle_secs=0,
                                      exporters=[tf.estimator.FinalExporter("mnist", serving_input_fn)])
    result = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
    line = {"task": [config.task_type, config.task_id]}
    if result is not None:   # locally: the last evaluation and the exports
        metrics, exports = result
        line.update(accuracy=float(metrics["accuracy"]), global_step=int(metrics["global_step"]),
                    exports=[e.decode() for e in exports if e])
    print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
