"""tf.keras.estimator.model_to_estimator on a real cluster: 1 ps + chief by TF_CONFIG, one process
each on loopback ports (tests/cluster/keras_estimator_trainer.py). The chief warm-starts from the
Keras model's weights (model_dir/keras/keras_model.ckpt), trains to max_steps with the variables on
the ps, and both processes exit by themselves; with one trainer the steps are the same as a local
run's, so the final weights equal a local model_to_estimator's, and the loss has gone down."""
from __future__ import annotations

import os
import sys
import time

import numpy as np

import tensorweave as tf
import test_train_and_evaluate as estimator_cluster

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import keras_estimator_trainer as trainer  # noqa: E402 - the trainer's model and inputs, for the reference run

WAIT_S = 120


def test_ps_and_chief_train_a_keras_model_as_a_local_run_does(tmp_path, monkeypatch):
    monkeypatch.setattr(estimator_cluster, "TRAINER", os.path.join(HERE, "keras_estimator_trainer.py"))
    model_dir, max_steps = str(tmp_path / "cluster"), 30
    with estimator_cluster.EstimatorCluster(model_dir, max_steps=max_steps) as c:
        c.cluster = {"ps": c.cluster["ps"], "chief": c.cluster["chief"]}
        c.start("chief")
        # every task writes the warm-start checkpoint unless it is there: the chief's first
        deadline = time.monotonic() + WAIT_S
        while not os.path.exists(os.path.join(model_dir, "keras", "checkpoint")) and time.monotonic() < deadline:
            assert c.procs[("chief", 0)].poll() is None, c.log("chief")[-6000:]
            time.sleep(0.2)
        c.start("ps")
        codes = c.wait_all()
        for key, code in codes.items():
            assert code == 0, f"{key} exited with {code}:\n{c.log(*key)[-6000:]}"
        assert "ps 0: 1 of 1 trainers have finished." in c.log("ps")
    checkpoint = tf.train.latest_checkpoint(model_dir)
    assert int(tf.train.load_variable(checkpoint, "global_step")) == max_steps

    local = trainer.estimator(str(tmp_path / "local"))
    start = local.evaluate(trainer.eval_input_fn)
    local.train(trainer.train_input_fn, max_steps=max_steps)
    for name in ["dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"]:
        np.testing.assert_allclose(tf.train.load_variable(checkpoint, name), local.get_variable_value(name),
                                   rtol=1e-4, atol=1e-5)
    tf.reset_default_graph()   # the same layer names again
    trained = trainer.estimator(model_dir).evaluate(trainer.eval_input_fn)
    assert trained["global_step"] == max_steps and trained["loss"] < start["loss"] / 2
