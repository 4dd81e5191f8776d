"""A tf.keras model built under replica_device_setter keeps its variables (and its optimizer's
slots) on the ps of a real 1 ps + 1 worker cluster; Model.fit in a Keras session on the worker
(backend.set_session(tf.Session("grpc://..."))) trains them there to the same weights as a
local fit, and a second session on the cluster reads those weights from the ps."""
from __future__ import annotations

import numpy as np

import tensorweave as tf

keras = tf.keras
K = keras.backend


def data():
    rng = np.random.RandomState(7)
    x = rng.uniform(-1, 1, (20, 3)).astype(np.float32)
    return x, (x[:, :1] * 2 - x[:, 1:2]).astype(np.float32)


def build():
    model = keras.Sequential([keras.layers.Dense(4, activation="relu", input_shape=(3,)),
                              keras.layers.BatchNormalization(), keras.layers.Dense(1)])
    model.set_weights([np.linspace(-0.5, 0.7, w.size, dtype=np.float32).reshape(w.shape) + (i == 4)
                       for i, w in enumerate(model.get_weights())])
    model.compile(keras.optimizers.SGD(0.05, momentum=0.9), "mse", metrics=["mae"])
    return model


def fit(model):
    x, y = data()
    return model.fit(x, y, batch_size=6, epochs=3, shuffle=False, verbose=0).history


def test_keras_model_trains_with_its_variables_on_the_ps(start_cluster):
    K.clear_session()
    local = build()
    local_history = fit(local)
    local_weights = local.get_weights()
    K.clear_session()

    c = start_cluster({"ps": 1, "worker": 1})
    session = None
    try:
        with tf.device(tf.train.replica_device_setter(ps_tasks=1, worker_device="/job:worker/task:0")):
            session = tf.Session(c.target("worker", 0))
            K.set_session(session)
            model = build()
            history = fit(model)
        graph = tf.get_default_graph()
        variable_devices = {op.name: op.device for op in graph.get_operations() if op.type == "VarHandleOp"}
        assert variable_devices["dense/kernel"] == "/job:ps/task:0"
        assert variable_devices["batch_normalization/moving_mean"] == "/job:ps/task:0"
        assert variable_devices["training/SGD/dense/kernel/momentum"] == "/job:ps/task:0"
        for name in ("loss", "mean_absolute_error"):
            np.testing.assert_allclose(history[name], local_history[name], rtol=1e-5)
        trained = model.get_weights()
        for got, want in zip(trained, local_weights):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        # the values live on the ps: another session on the cluster reads them without initialising
        with tf.Session(c.target("worker", 0), graph=graph) as other:
            for got, want in zip(other.run(model.weights), trained):
                np.testing.assert_allclose(got, want)
    finally:
        K.set_session(None)
        if session is not None:
            session.close()
        K.clear_session()
