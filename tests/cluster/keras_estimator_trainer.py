"""One task of a model_to_estimator cluster (tests/cluster/test_keras_estimator_cluster.py):
TF_CONFIG says which; a Keras Sequential regression model (its weights set from a fixed seed,
compiled) made an Estimator by tf.keras.estimator.model_to_estimator
and trained by tf.estimator.train_and_evaluate.

    TF_CONFIG=... python keras_estimator_trainer.py MODEL_DIR MAX_STEPS

Prints one JSON line at the end: the task."""
from __future__ import annotations

import json
import logging
import sys

import numpy as np

import tensorweave as tf

keras = tf.keras
_R = np.random.RandomState(3)
X = _R.randn(64, 3).astype(np.float32)
Y = (X @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.25).astype(np.float32)


def keras_model():
    """The same model, with the same starting weights, in every process."""
    model = keras.Sequential([keras.layers.Dense(8, activation="tanh", input_shape=(3,)), keras.layers.Dense(1)])
    rng = np.random.RandomState(7)
    model.set_weights([rng.randn(*w.shape).astype(np.float32) * 0.5 for w in model.get_weights()])
    if hasattr(model, "compile"):   # keras training merged
        model.compile(keras.optimizers.SGD(0.05), "mse", metrics=["mae"])
    else:                           # the attributes TF 1.15's compile sets
        model.optimizer, model.loss, model.loss_weights = keras.optimizers.SGD(0.05), "mse", None
        model._compile_metrics = ["mae"]
    return model


def train_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"dense_input": X}, Y)).batch(8).repeat()


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"dense_input": X}, Y)).batch(16)


def estimator(model_dir: str):
    config = tf.estimator.RunConfig(save_checkpoints_steps=10, save_summary_steps=5, log_step_count_steps=10)
    return keras.estimator.model_to_estimator(keras_model=keras_model(), model_dir=model_dir, config=config)


def main(model_dir: str, max_steps: int) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    est = estimator(model_dir)
    tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(train_input_fn, max_steps=max_steps),
        tf.estimator.EvalSpec(eval_input_fn, steps=None, start_delay_secs=0, throttle_secs=0))
    print(json.dumps({"task": [est.config.task_type, est.config.task_id]}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
