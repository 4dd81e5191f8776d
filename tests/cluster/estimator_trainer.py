"""One task of an Estimator cluster (tests/cluster/test_train_and_evaluate.py): TF_CONFIG says which;
a linear model_fn on tf.data input, trained and evaluated by tf.estimator.train_and_evaluate.

    TF_CONFIG=... python estimator_trainer.py MODEL_DIR MAX_STEPS [sync | both]

With `sync` the trainers aggregate their gradients through SyncReplicasOptimizer (its hook among
the model_fn's training hooks, chief or not by RunConfig). With `both` (asynchronous) the chief's
first step waits until the worker has taken one, so that both train however late the worker's
process starts (the chief alone takes MAX_STEPS small steps in a second or two).

Prints one JSON line at the end: the task, and for the evaluator its last metrics."""
from __future__ import annotations

import json
import logging
import os
import sys
import time

import numpy as np

import tensorweave as tf

_R = np.random.RandomState(3)
X = _R.randn(64, 3).astype(np.float32)
Y = (X @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.25).astype(np.float32)


def model_fn(features, labels, mode, params, config):
    w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    pred = tf.matmul(features["x"], w) + b
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"y": pred})
    loss = tf.losses.mean_squared_error(labels, pred)
    optimizer = tf.train.GradientDescentOptimizer(params["learning_rate"])
    hooks = [_WorkerFirst(os.path.join(config.model_dir, "worker_stepped"), config.is_chief)] if params["both"] else []
    if params["sync"]:
        optimizer = tf.train.SyncReplicasOptimizer(optimizer, replicas_to_aggregate=config.num_worker_replicas,
                                                   total_num_replicas=config.num_worker_replicas)
        hooks.append(optimizer.make_session_run_hook(config.is_chief))
    train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=hooks,
                                      eval_metric_ops={"mae": tf.metrics.mean_absolute_error(labels, pred)})


class _WorkerFirst(tf.train.SessionRunHook):
    """The worker marks its first step done with a file; the chief waits for it (at most 120 s)
    before its own first step."""

    def __init__(self, path: str, is_chief: bool):
        self.path, self.is_chief, self.done = path, is_chief, False

    def before_run(self, run_context):
        if self.is_chief and not self.done:
            deadline = time.monotonic() + 120
            while not os.path.exists(self.path) and time.monotonic() < deadline:
                time.sleep(0.05)
            self.done = True

    def after_run(self, run_context, run_values):
        if not self.is_chief and not self.done:
            open(self.path, "w").close()
            self.done = True


def train_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).shuffle(64, seed=1).batch(8).repeat()


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(16)


def main(model_dir: str, max_steps: int, mode: str) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    config = tf.estimator.RunConfig(save_checkpoints_steps=10, save_summary_steps=5, log_step_count_steps=10)
    est = tf.estimator.Estimator(model_fn, model_dir=model_dir, config=config,
                                 params={"learning_rate": 0.05, "sync": mode == "sync", "both": mode == "both"})
    result = tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(train_input_fn, max_steps=max_steps),
        tf.estimator.EvalSpec(eval_input_fn, steps=None, start_delay_secs=0, throttle_secs=0))
    print(json.dumps({"task": [config.task_type, config.task_id], "result": repr(result)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "")
