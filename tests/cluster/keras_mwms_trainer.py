"""TF 1.15's multi-worker Keras tutorial program, unchanged but for its data and a print (tests/cluster/
test_keras_multi_worker.py): `tensorweave launch --workers 2 keras_mwms_trainer.py OUT_DIR` runs it on
two workers by TF_CONFIG; no Server, no session: Model.fit under the strategy starts them (TF's
distribute coordinator). With `--own_server` the program starts its task's tf.train.Server itself
first, and with `--set_session` also points Keras's session at it (the way before: both still work).
A ModelCheckpoint writes OUT_DIR/ckpt-{epoch}.h5 and a TensorBoard callback OUT_DIR/logs (the chief's
only); after fit, evaluate over 2 batches and predict the first 5 rows.

Prints one JSON line at the end: the task, whether it is the chief, its initial and final weights, the
loss history, evaluate's [loss, mae] and predict's rows."""
from __future__ import annotations

import json
import os
import sys

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


if __name__ == "__main__":
    main(sys.argv[1], "--own_server" in sys.argv[2:], "--set_session" in sys.argv[2:])
