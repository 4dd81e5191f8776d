"""One task of a premade-Estimator cluster (tests/cluster/test_premade_cluster.py): TF_CONFIG says
which; the iris premade-estimator tutorial's DNNClassifier (3 classes, 4 numeric columns) trained
and evaluated by tf.estimator.train_and_evaluate.

    TF_CONFIG=... python premade_trainer.py MODEL_DIR MAX_STEPS

Prints one JSON line at the end: the task."""
from __future__ import annotations

import json
import logging
import sys

import numpy as np

import tensorweave as tf

NUMERIC = ("SepalLength", "SepalWidth", "PetalLength", "PetalWidth")
MEANS = [(5.0, 3.4, 1.5, 0.2), (5.9, 2.8, 4.3, 1.3), (6.6, 3.0, 5.6, 2.0)]
_R = np.random.RandomState(5)
X = np.concatenate([_R.normal(m, 0.15, size=(30, 4)) for m in MEANS]).astype(np.float32)
Y = np.repeat(np.arange(3), 30)
FEATURES = {name: X[:, i] for i, name in enumerate(NUMERIC)}


def train_input_fn():
    return tf.data.Dataset.from_tensor_slices((dict(FEATURES), Y)).shuffle(90, seed=1).batch(10).repeat()


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices((dict(FEATURES), Y)).batch(30)


def main(model_dir: str, max_steps: int) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    config = tf.estimator.RunConfig(save_checkpoints_steps=20, save_summary_steps=10, log_step_count_steps=20,
                                    tf_random_seed=1)   # (the same init every run: only the async order varies)
    est = tf.estimator.DNNClassifier(hidden_units=[10, 10], n_classes=3, model_dir=model_dir, config=config,
                                     feature_columns=[tf.feature_column.numeric_column(k) for k in NUMERIC])
    tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(train_input_fn, max_steps=max_steps),
        tf.estimator.EvalSpec(eval_input_fn, steps=None, start_delay_secs=0, throttle_secs=0))
    print(json.dumps({"task": [config.task_type, config.task_id]}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
