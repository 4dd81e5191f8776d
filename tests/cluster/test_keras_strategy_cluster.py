"""tf.keras under tf.distribute.experimental.ParameterServerStrategy with real ps processes: a model
built and compiled in the strategy's scope keeps its weights (and the optimizer's slots) on the ps
tasks round-robin, the worker's Keras session runs fit/evaluate/predict through its server, and the
numbers are those of the same model trained in one process."""
from __future__ import annotations

import json

import numpy as np

import tensorweave as tf

X = (np.arange(48, dtype=np.float32).reshape(16, 3) % 7 - 3) / 4
Y = (X @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.25).astype(np.float32)


def _fit(strategy, session):
    K = tf.keras.backend
    K.clear_session()
    if session is not None:
        K.set_session(session())
    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.layers.Dense(4, activation="tanh", input_shape=(3,), kernel_initializer="ones"),
            tf.keras.layers.Dense(1, kernel_initializer="ones")])
        model.compile(tf.keras.optimizers.Adam(0.05), "mse", metrics=["mae"])
    history = model.fit(X, Y, batch_size=8, epochs=3, verbose=0, shuffle=False).history
    devices = {w.op.name: w.device for w in model.weights + model.optimizer.weights}
    results = [history["loss"], history["mean_absolute_error"], model.evaluate(X, Y, batch_size=8, verbose=0),
               model.predict(X[:4])] + model.get_weights()
    K.clear_session()
    return results, devices


def test_keras_fit_under_parameter_server_strategy_keeps_weights_on_the_ps_tasks(start_cluster, monkeypatch):
    c = start_cluster({"ps": 2, "worker": 1})
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": c.spec, "task": {"type": "worker", "index": 0}}))
    strategy = tf.distribute.experimental.ParameterServerStrategy()
    config = tf.ConfigProto()
    strategy.configure(config)
    got, devices = _fit(strategy, lambda: tf.Session(c.target("worker", 0), config=config))
    ps = [f"/job:ps/replica:0/task:{i}/device:CPU:0" for i in range(2)]
    assert [devices[n] for n in ("dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias")] == ps * 2
    for name in ("dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"):   # slots beside their variable
        assert devices[f"training/Adam/{name}/m"] == devices[f"training/Adam/{name}/v"] == devices[name]
    monkeypatch.delenv("TF_CONFIG")
    plain, _ = _fit(tf.distribute.OneDeviceStrategy("/cpu:0"), None)
    for g, w in zip(got, plain):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
