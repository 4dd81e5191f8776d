"""Keras multi-worker fault tolerance (TF 1.15's MultiWorkerTrainingState, driven by ModelCheckpoint)
with real processes: 2 workers fit under MultiWorkerMirroredStrategy from TF_CONFIG
(keras_mwms_trainer.py --restart); worker 1 is SIGKILLed in the middle of epoch 2, the chief's step
fails, and the job is started again: each worker's fit loads the backup the chief wrote at the end
of epoch 1 (OUT_DIR/backup/training_state) and resumes at epoch 2 with those weights, ending where an
uninterrupted training ends; a fit that ends normally leaves no backup."""
from __future__ import annotations

import os
import sys
import time

import numpy as np

import tensorweave as tf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import keras_mwms_trainer as trainer  # noqa: E402
from tf_config_job import EXIT_TIMEOUT_S, TFConfigJob  # noqa: E402

TRAINER = os.path.join(HERE, "keras_mwms_trainer.py")
EPOCHS, STEPS, GATE = 4, 4, 2


def _uninterrupted(initial) -> list:
    """The model from `initial` trained EPOCHS epochs in one process, without a strategy, on the global
    batches: the weights at each epoch's end."""
    tf.keras.backend.clear_session()
    model = trainer.build_and_compile_model()
    model.set_weights([np.array(w, np.float32) for w in initial])
    dataset = tf.data.Dataset.from_tensor_slices((trainer.X, trainer.Y)).repeat().batch(trainer.GLOBAL_BATCH)
    ends = []
    record = tf.keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: ends.append(model.get_weights()))
    model.fit(dataset, epochs=EPOCHS, steps_per_epoch=STEPS, callbacks=[record], verbose=0)
    tf.keras.backend.clear_session()
    return ends


def _assert_close(got, want) -> None:
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.array(g, np.float32), w, rtol=1e-5, atol=1e-6)


def test_a_fit_killed_mid_epoch_resumes_from_the_backed_up_epoch_and_weights_and_removes_the_backup(tmp_path):
    out = str(tmp_path)
    with TFConfigJob(TRAINER, {"worker": 2}, out, ["--restart", f"--epochs={EPOCHS}", f"--steps={STEPS}",
                                                   f"--gate={GATE}"]) as job:
        for i in range(2):
            job.start("worker", i)
        deadline = time.monotonic() + EXIT_TIMEOUT_S
        while not os.path.exists(os.path.join(out, "held")):   # worker 1 holds in epoch GATE, after its batch 0
            assert time.monotonic() < deadline and all(p.poll() is None for p in job.procs.values()), job.describe()
            time.sleep(0.05)
        job.kill("worker", 1)
        codes = job.wait_all()
        assert codes[("worker", 0)] not in (0, "hung"), job.describe()   # the chief's step failed
        assert "UnavailableError" in job.output("worker", 0), job.output("worker", 0)[-4000:]
        first = [line for line in job.lines("worker", 0) if "end" in line]
        assert [line["end"] for line in first] == list(range(GATE))   # epochs 0 and 1 ended, 2 did not
        backed_up = first[-1]["weights"]
        # the chief's backup: a TF-format checkpoint of the weights and the epoch, left by the killed job
        assert sorted(os.listdir(tmp_path)) == ["backup", "ckpt-1.h5", "ckpt-2.h5", "held"]
        prefix = os.path.join(out, "backup", "training_state")
        assert tf.train.load_variable(prefix, "_ckpt_saved_epoch/.ATTRIBUTES/VARIABLE_VALUE") == GATE - 1
        keys = [f"layer_with_weights-{i}/{name}/.ATTRIBUTES/VARIABLE_VALUE" for i in range(2)
                for name in ("kernel", "bias")]
        _assert_close([tf.train.load_variable(prefix, key) for key in keys], backed_up)

        os.remove(os.path.join(out, "held"))
        for i in range(2):   # the job started again (the gate holds only a fit that began at epoch 0)
            job.start("worker", i)
        codes = job.wait_all()
        assert codes == {("worker", 0): 0, ("worker", 1): 0}, job.describe()
        for i in range(2):
            lines = job.lines("worker", i)
            begins = [line for line in lines if "begin" in line]
            result = lines[-1]
            # resumed at the epoch after the backed-up one, from its weights (not this run's fresh ones)
            assert [line["begin"] for line in begins] == list(range(GATE, EPOCHS)) and result["epochs"] == [2, 3]
            assert begins[0]["weights"] == backed_up and result["initial"] != backed_up
            resumed = result["weights"]
        assert job.result("worker", 0)["weights"] == job.result("worker", 1)["weights"]
        initial = job.lines("worker", 0, run=0)[0]["weights"]   # (the first run's epoch 0 began from it)
    # the interrupted and resumed job ends where one uninterrupted training from the same start ends
    ends = _uninterrupted(initial)
    _assert_close(backed_up, ends[GATE - 1])
    _assert_close(resumed, ends[-1])
    # a fit that ended normally removed the backup (and the other worker's temporary files)
    assert sorted(os.listdir(tmp_path)) == [f"ckpt-{e}.h5" for e in range(1, EPOCHS + 1)]
