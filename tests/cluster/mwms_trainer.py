"""One worker of a MultiWorkerMirroredStrategy job (tests/cluster/test_multi_worker_mirrored.py), as
`tensorweave launch --workers 2 mwms_trainer.py MODEL_DIR` runs it: TF_CONFIG says which; the
worker serves its task in-process and trains a linear model with MonitoredTrainingSession under the
strategy (only the chief checkpoints into MODEL_DIR). With a second argument `estimator`
(`launch --chief 1 --workers 1`), an Estimator with RunConfig(train_distribute=the strategy) does it
through train_and_evaluate.

Options after those (tests/cluster/test_collective_faults.py): `--last_step=N` trains N steps (5;
the Estimator 6), checkpointing every 5 (the Estimator 3); `--gate=G` makes worker 1 wait, after
its step G, until the file MODEL_DIR/gate exists (a worker held mid-training, to be killed there).

Prints one JSON line at the end: the task, its final weights and replica count (and global step)."""
from __future__ import annotations

import json
import logging
import os
import sys
import time

import numpy as np

import tensorweave as tf

X = ((np.arange(48, dtype=np.float32).reshape(16, 3) * 7) % 11 - 5) / 4
Y = (X @ np.array([[0.5], [-1.0], [2.0]], np.float32) + 0.1).astype(np.float32)


class _Gate(tf.train.SessionRunHook):
    """On worker 1 with --gate=G: after its step G it waits until MODEL_DIR/gate exists."""

    def __init__(self, model_dir: str, gate):
        self._path, self._gate = os.path.join(model_dir, "gate"), gate

    def begin(self):
        self._step = tf.train.get_global_step()

    def after_run(self, run_context, run_values):
        if self._gate is not None and run_context.session.run(self._step) >= self._gate:
            while not os.path.exists(self._path):
                time.sleep(0.05)


def _options(args: list) -> dict:
    options = dict(a[2:].split("=", 1) for a in args if a.startswith("--"))
    return {"last_step": int(options["last_step"]) if "last_step" in options else None,
            "gate": int(options["gate"]) if "gate" in options else None}


def _gate_hooks(task_id: int, model_dir: str, gate) -> list:
    return [_Gate(model_dir, gate)] if gate is not None and task_id == 1 else []


def main(model_dir: str, last_step=None, gate=None) -> None:
    strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()
    resolver = strategy.cluster_resolver
    server = tf.train.Server(resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id)
    config = strategy.update_config_proto(tf.ConfigProto(operation_timeout_in_ms=120000))
    with tf.Graph().as_default(), strategy.scope():
        it = strategy.make_dataset_iterator(tf.data.Dataset.from_tensor_slices((X, Y)).repeat().batch(8))
        w = tf.get_variable("w", [3, 1], initializer=tf.random_normal_initializer())
        step = tf.train.get_or_create_global_step()
        opt = tf.train.GradientDescentOptimizer(0.1)

        def replica_step(batch):
            x, y = batch
            return opt.minimize(tf.reduce_sum(tf.square(tf.matmul(x, w) - y)) / 8, global_step=step)
        train = strategy.group(strategy.experimental_run_v2(replica_step, args=(it.get_next(),)))
        scaffold = tf.train.Scaffold(local_init_op=tf.group(tf.local_variables_initializer(), it.initializer))
        hooks = [tf.train.StopAtStepHook(last_step=last_step or 5), *_gate_hooks(resolver.task_id, model_dir, gate)]
        every = {"save_checkpoint_steps": 5} if last_step else {}   # (else the default: at the start and the end)
        with tf.train.MonitoredTrainingSession(master=server.target, is_chief=strategy.extended.should_checkpoint,
                                               checkpoint_dir=model_dir, scaffold=scaffold, config=config,
                                               hooks=hooks, save_summaries_steps=None, log_step_count_steps=None,
                                               **every) as sess:
            while not sess.should_stop():
                sess.run(train)
        with tf.Session(server.target, config=config) as sess:   # (the variables live on in this task)
            weights, gstep = sess.run([w, step])
    print(json.dumps({"task": resolver.task_id, "weights": weights.tolist(), "step": int(gstep),
                      "replicas": strategy.num_replicas_in_sync}), flush=True)


FINAL: dict = {}
GATE: list = []   # (the --gate hook of this worker, for model_fn)


class _FinalValues(tf.train.SessionRunHook):
    """Keeps the trainable variables' values as training ends (in this worker's session)."""

    def end(self, session):
        FINAL.update(session.run({v.op.name: v for v in tf.trainable_variables()}))


def model_fn(features, labels, mode):
    w = tf.get_variable("w", [3, 1], initializer=tf.random_normal_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    pred = tf.matmul(features["x"], w) + b
    loss = tf.losses.mean_squared_error(labels, pred)
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=[_FinalValues(), *GATE],
                                      eval_metric_ops={"mae": tf.metrics.mean_absolute_error(labels, pred)})


def input_fn(input_context=None):
    dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
    if input_context is not None:   # each worker its own part of the data
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return dataset.repeat().batch(4)


def main_estimator(model_dir: str, last_step=None, gate=None) -> None:
    strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()
    config = tf.estimator.RunConfig(train_distribute=strategy, save_checkpoints_steps=5 if last_step else 3,
                                    save_summary_steps=2, log_step_count_steps=2)
    if config.task_type == "worker":
        GATE.extend(_gate_hooks(config.task_id, model_dir, gate))
    est = tf.estimator.Estimator(model_fn, model_dir=model_dir, config=config)
    tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(input_fn, max_steps=last_step or 6),
                                    tf.estimator.EvalSpec(input_fn, steps=2, start_delay_secs=0, throttle_secs=0))
    print(json.dumps({"task": [config.task_type, config.task_id], "is_chief": config.is_chief,
                      "weights": {k: v.tolist() for k, v in FINAL.items()},
                      "replicas": strategy.num_replicas_in_sync}), flush=True)


if __name__ == "__main__":
    if _options(sys.argv[2:])["last_step"]:   # (recoveries and restores logged, on stderr)
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    (main_estimator if "estimator" in sys.argv[2:] else main)(sys.argv[1], **_options(sys.argv[2:]))
