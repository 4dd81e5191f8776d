"""TF 1.15's multi-worker Keras tutorial program (keras_mwms_trainer.py) on 2 worker processes that
`tensorweave launch --workers 2` starts with TF_CONFIG: Model.fit under MultiWorkerMirroredStrategy
starts each task's server and runs Keras's session on it (the distribute coordinator), the program
starting no Server itself; a program that starts its own Server, and one that also sets Keras's
session on it (the way before), run the same.
Both workers end with identical weights, equal to one process training on the concatenated global
batch, and only the chief writes the ModelCheckpoint files and TensorBoard logs."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import tensorweave as tf

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import keras_mwms_trainer as trainer  # noqa: E402


def _launch_workers(layout, out_dir, *args) -> list:
    """The JSON lines of `tensorweave launch *layout keras_mwms_trainer.py out_dir *args`, the chief's
    first; the launcher and its processes killed (their process group) however it ends."""
    temp = out_dir.parent / f"{out_dir.name}-tmp"   # the workers' temporary files
    temp.mkdir()
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), TMPDIR=str(temp))
    env.pop("TF_CONFIG", None)
    proc = subprocess.Popen([sys.executable, "-m", "tensorweave.cli", "launch", *layout,
                             os.path.join(HERE, "keras_mwms_trainer.py"), str(out_dir), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=600)   # (a guard against a hang, not a timing assumption)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, out + err
    lines = [json.loads(line.split("] ", 1)[1]) for line in out.splitlines() if "] {" in line]
    return sorted(lines, key=lambda r: not r["chief"])


def _single_process(initial):
    """The same model from `initial` trained in one process, without a strategy, on the global batches."""
    tf.keras.backend.clear_session()
    model = trainer.build_and_compile_model()
    model.set_weights([np.array(w, np.float32) for w in initial])
    dataset = tf.data.Dataset.from_tensor_slices((trainer.X, trainer.Y)).repeat().batch(trainer.GLOBAL_BATCH)
    history = model.fit(dataset, epochs=2, steps_per_epoch=3, verbose=0)
    evaluated = model.evaluate(dataset, steps=2, verbose=0)
    predicted = model.predict(trainer.X[:5])
    weights = model.get_weights()
    tf.keras.backend.clear_session()
    return weights, history.history["loss"], evaluated, predicted


@pytest.mark.parametrize("layout,args", [
    (["--workers", "2"], []), (["--workers", "2"], ["--own_server"]),
    (["--workers", "2"], ["--own_server", "--set_session"]), (["--chief", "1", "--workers", "1"], [])],
    ids=["coordinator starts the server", "program's own server", "program's own session", "chief and worker"])
def test_tutorial_program_fits_on_two_workers_as_one_process_on_the_global_batch(tmp_path, layout, args):
    chief, worker = _launch_workers(layout, tmp_path, *args)
    tasks = [["chief", 0], ["worker", 0]] if "--chief" in layout else [["worker", 0], ["worker", 1]]
    assert (chief["task"], chief["chief"], worker["task"], worker["chief"]) == (tasks[0], True, tasks[1], False)
    assert bool(chief["own_server"]) == bool(worker["own_server"]) == bool(args)
    assert chief["initial"] == worker["initial"]   # the chief's random initial values, broadcast
    assert chief["weights"] == worker["weights"] and chief["loss"] == worker["loss"]
    assert chief["evaluated"] == worker["evaluated"] and chief["predicted"] == worker["predicted"]
    weights, loss, evaluated, predicted = _single_process(chief["initial"])
    for got, want in zip(chief["weights"], weights):
        np.testing.assert_allclose(np.array(got, np.float32), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(chief["loss"], loss, rtol=1e-5)
    np.testing.assert_allclose(chief["evaluated"], evaluated, rtol=1e-5)   # loss and mae over both workers' rows
    np.testing.assert_allclose(chief["predicted"], predicted, rtol=1e-5, atol=1e-6)
    assert np.any(np.abs(np.array(chief["weights"][0]) - np.array(chief["initial"][0])) > 1e-3)   # it trained
    # the chief's checkpoints only (the other worker's went to a temporary directory, removed), holding
    # the final weights; one worker's TensorBoard events
    assert sorted(os.listdir(tmp_path)) == ["ckpt-1.h5", "ckpt-2.h5", "logs"]
    assert set(os.listdir(f"{tmp_path}-tmp")) <= {f"tensorweave-{os.getuid()}"}   # (the transport's sockets)
    assert len(os.listdir(tmp_path / "logs")) == 1
    tf.keras.backend.clear_session()
    model = trainer.build_and_compile_model()
    model.load_weights(str(tmp_path / "ckpt-2.h5"))
    for got, want in zip(model.get_weights(), chief["weights"]):
        np.testing.assert_array_equal(got, np.array(want, np.float32))
    tf.keras.backend.clear_session()
