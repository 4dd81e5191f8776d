"""TF 1.15's multi-worker Keras tutorial program, unchanged but for its data and a print (tests/cluster/
test_keras_multi_worker.py): `tensorweave launch --workers 2 keras_mwms_trainer.py OUT_DIR` runs it on
two workers by TF_CONFIG; no Server, no session: Model.fit under the strategy starts them (TF's
distribute coordinator). With `--own_server` the program starts its task's tf.train.Server itself
first, and with `--set_session` also points Keras's session at it (the way before: both still work).
A ModelCheckpoint writes OUT_DIR/ckpt-{epoch}.h5 and a TensorBoard callback OUT_DIR/logs (the chief's
only); after fit, evaluate over 2 batches and predict the first 5 rows.

Prints one JSON line at the end: the task, whether it is the chief, its initial and final weights, the
loss history, evaluate's [loss, mae] and predict's rows.

`--restart` (tests/cluster/test_keras_multi_worker_restart.py) runs the fault-tolerance program
instead: fit for --epochs=4 epochs of --steps=4 batches (the 32 rows once, so each epoch sees the
same batches) with ModelCheckpoint(OUT_DIR/ckpt-{epoch}.h5) only, printing a JSON line with the
weights at each epoch's begin and end; with `--gate=E` worker 1 holds before batch 1 of epoch E
(creating OUT_DIR/held) until it is killed there."""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

import tensorweave as tf

GLOBAL_BATCH = 8
X = ((np.arange(96, dtype=np.float32).reshape(32, 3) * 7) % 11 - 5) / 4
Y = (X @ np.array([[0.5], [-1.0], [2.0]], np.float32) + 0.1).astype(np.float32)


def build_and_compile_model():
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(4, activation="tanh", input_shape=(3,)),
        tf.keras.layers.Dense(1)])
    model.compile(loss="mse", optimizer=tf.keras.optimizers.SGD(learning_rate=0.1), metrics=["mae"])
    return model


def main(out_dir: str, own_server: bool, set_session: bool) -> None:
    tf_config = json.loads(os.environ["TF_CONFIG"])
    if own_server:
        server = tf.train.Server(tf.train.ClusterSpec(tf_config["cluster"]), job_name=tf_config["task"]["type"],
                                 task_index=tf_config["task"]["index"])
    strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()
    if set_session:
        tf.keras.backend.set_session(tf.Session(server.target,
                                                config=strategy.update_config_proto(tf.ConfigProto())))
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).repeat().batch(GLOBAL_BATCH)
    with strategy.scope():
        model = build_and_compile_model()
    initial = model.get_weights()
    callbacks = [tf.keras.callbacks.ModelCheckpoint(os.path.join(out_dir, "ckpt-{epoch}.h5"), save_weights_only=True),
                 tf.keras.callbacks.TensorBoard(os.path.join(out_dir, "logs"))]
    history = model.fit(dataset, epochs=2, steps_per_epoch=3, callbacks=callbacks, verbose=0)
    evaluated = model.evaluate(dataset, steps=2, verbose=0)
    predicted = model.predict(X[:5])
    task = [tf_config["task"]["type"], tf_config["task"]["index"]]
    print(json.dumps({"task": task, "chief": strategy.extended.should_checkpoint,
                      "own_server": own_server and server.target,
                      "initial": [w.tolist() for w in initial], "weights": [w.tolist() for w in model.get_weights()],
                      "loss": [float(v) for v in history.history["loss"]], "evaluated": [float(v) for v in evaluated],
                      "predicted": predicted.tolist()}),
          flush=True)


class _Epochs(tf.keras.callbacks.Callback):
    """Prints the weights at each epoch's begin and end; on worker 1 with a gate, in a fit that began at
    epoch 0 (not one resumed from a backup), holds before batch 1 of the gate's epoch."""

    def __init__(self, out_dir: str, task: list, gate):
        super().__init__()
        self._out_dir, self._task, self._gate, self._epoch, self._first = out_dir, task, gate, None, None

    def _print(self, when: str, epoch: int) -> None:
        print(json.dumps({"task": self._task, when: epoch, "weights": [w.tolist() for w in self.model.get_weights()]}),
              flush=True)

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        self._first = epoch if self._first is None else self._first
        self._print("begin", epoch)

    def on_epoch_end(self, epoch, logs=None):
        self._print("end", epoch)

    def on_batch_begin(self, batch, logs=None):
        if self._task == ["worker", 1] and self._first == 0 and self._epoch == self._gate and batch == 1:
            open(os.path.join(self._out_dir, "held"), "w").close()
            while True:   # (killed here)
                time.sleep(1)


def main_restart(out_dir: str, epochs: int, steps: int, gate) -> None:
    tf_config = json.loads(os.environ["TF_CONFIG"])
    task = [tf_config["task"]["type"], tf_config["task"]["index"]]
    strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).repeat().batch(GLOBAL_BATCH)
    with strategy.scope():
        model = build_and_compile_model()
    initial = model.get_weights()
    callbacks = [tf.keras.callbacks.ModelCheckpoint(os.path.join(out_dir, "ckpt-{epoch}.h5"), save_weights_only=True),
                 _Epochs(out_dir, task, gate)]
    history = model.fit(dataset, epochs=epochs, steps_per_epoch=steps, callbacks=callbacks, verbose=0)
    print(json.dumps({"task": task, "initial": [w.tolist() for w in initial], "epochs": history.epoch,
                      "loss": [float(v) for v in history.history["loss"]],
                      "weights": [w.tolist() for w in model.get_weights()]}), flush=True)


def _option(name: str, default):
    values = [a.split("=", 1)[1] for a in sys.argv[2:] if a.startswith(f"--{name}=")]
    return int(values[0]) if values else default


if __name__ == "__main__":
    if "--restart" in sys.argv[2:]:
        main_restart(sys.argv[1], _option("epochs", 4), _option("steps", 4), _option("gate", None))
    else:
        main(sys.argv[1], "--own_server" in sys.argv[2:], "--set_session" in sys.argv[2:])
