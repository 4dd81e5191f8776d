"""A Keras program under tf.distribute.experimental.ParameterServerStrategy, run on every task of a
cluster with a ps (tests/cluster/test_keras_parameter_server.py): TF_CONFIG says which task; no
Server, no session: Model.fit goes through the distribute coordinator, which on a worker starts its
server and trains (variables on the ps tasks, asynchronously), and on a ps serves the variables until
every worker's process has ended, then ends the ps's process.

A worker fits 3 epochs of 4 batches of 8 rows, evaluates, and prints one JSON line: the task, the
devices of the model's and the optimizer's variables, the loss history, the optimizer's iteration
count after fit (the updates of every worker, on the ps) and evaluate's loss."""
from __future__ import annotations

import json
import os
import sys

import numpy as np

import tensorweave as tf

X = ((np.arange(96, dtype=np.float32).reshape(32, 3) * 7) % 11 - 5) / 4
Y = (X @ np.array([[0.5], [-1.0], [2.0]], np.float32) + 0.1).astype(np.float32)
EPOCHS, STEPS = 3, 4


def main(out_dir: str) -> None:
    tf_config = json.loads(os.environ["TF_CONFIG"])
    strategy = tf.distribute.experimental.ParameterServerStrategy()
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="tanh", input_shape=(3,)),
                                     tf.keras.layers.Dense(1)])
        model.compile(loss="mse", optimizer=tf.keras.optimizers.SGD(learning_rate=0.1))
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).repeat().batch(8)
    history = model.fit(dataset, epochs=EPOCHS, steps_per_epoch=STEPS, verbose=0)   # (a ps does not return)
    iterations = int(tf.keras.backend.get_value(model.optimizer.iterations))
    evaluated = float(model.evaluate(dataset, steps=4, verbose=0))
    print(json.dumps({"task": [tf_config["task"]["type"], tf_config["task"]["index"]],
                      "devices": [v.device for v in model.weights + [model.optimizer.iterations]],
                      "loss": [float(v) for v in history.history["loss"]], "iterations": iterations,
                      "evaluated": evaluated}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
