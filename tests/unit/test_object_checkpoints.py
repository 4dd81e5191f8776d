"""tf.train.Checkpoint and CheckpointManager in graph mode: TF's object-based key names, TF 2.21
restoring our checkpoint into the same objects and we restoring TF's
(fixtures/record_tf_object_checkpoints.py), numbering, max_to_keep and recovery."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf

import checkpoint_problem

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "tf_object_checkpoints")
RECORDED = json.load(open(os.path.join(FIXTURES, "values.json")))
SLOT_KEYS = {"model/kernel": "model/kernel/.ATTRIBUTES/VARIABLE_VALUE",
             "model/bias": "model/bias/.ATTRIBUTES/VARIABLE_VALUE",
             "kernel/m": "model/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE",
             "kernel/v": "model/kernel/.OPTIMIZER_SLOT/optimizer/v/.ATTRIBUTES/VARIABLE_VALUE",
             "bias/m": "model/bias/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE",
             "bias/v": "model/bias/.OPTIMIZER_SLOT/optimizer/v/.ATTRIBUTES/VARIABLE_VALUE",
             "beta1_power": "optimizer/beta1_power/.ATTRIBUTES/VARIABLE_VALUE",
             "beta2_power": "optimizer/beta2_power/.ATTRIBUTES/VARIABLE_VALUE"}


def _entries(path: str) -> dict:
    reader = tf.train.NewCheckpointReader(path)
    return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map() if k != "_CHECKPOINTABLE_OBJECT_GRAPH"}


@pytest.mark.parametrize("file_format", ["tensorflow", "safetensors"])
def test_our_checkpoint_has_tfs_keys_and_values(tmp_path, monkeypatch, file_format):
    monkeypatch.setenv("TENSORWEAVE_CHECKPOINT_FORMAT", file_format)
    path = checkpoint_problem.write(tf, str(tmp_path))
    assert path == str(tmp_path / "ckpt-1") and tf.train.latest_checkpoint(str(tmp_path)) == path
    ours = _entries(path)
    assert sorted(ours) == RECORDED["tf_keys"]   # what TF's own Checkpoint wrote for the same objects
    for key, want in RECORDED["tf_values"].items():
        np.testing.assert_allclose(ours[key], want, rtol=1e-6)
    if file_format == "tensorflow":   # the recorded file TF restored is what we write today
        fixture = _entries(os.path.join(FIXTURES, "ours", "ckpt-1"))
        assert sorted(fixture) == sorted(ours)
        for key in ours:
            np.testing.assert_array_equal(ours[key], fixture[key])


def test_tensorflow_restored_our_checkpoint_into_the_same_objects():
    """TF 2.21's Checkpoint.restore(ours).assert_consumed() passed and gave each object its value."""
    restored = RECORDED["restored_from_ours"]
    fixture = _entries(os.path.join(FIXTURES, "ours", "ckpt-1"))
    for name, key in SLOT_KEYS.items():
        np.testing.assert_array_equal(np.asarray(restored[name], np.float32), fixture[key])
    assert restored["save_counter"] == 1


def test_we_restore_tensorflows_checkpoint():
    with tf.Graph().as_default():
        zeros = np.zeros_like(checkpoint_problem.KERNEL), np.zeros_like(checkpoint_problem.BIAS)
        ckpt, _, named = checkpoint_problem.build(tf, *zeros)
        status = ckpt.restore(os.path.join(FIXTURES, RECORDED["tf_checkpoint"]))
        status.assert_consumed()
        with tf.Session() as sess:
            status.initialize_or_restore(sess)
            for name, key in SLOT_KEYS.items():
                np.testing.assert_allclose(sess.run(named[name]), RECORDED["tf_values"][key], rtol=1e-6)
            assert sess.run(ckpt.save_counter) == 1


def test_manager_numbers_keeps_max_to_keep_and_recovers(tmp_path):
    directory = str(tmp_path / "run")
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        ckpt = tf.train.Checkpoint(v=v)
        with tf.Session() as sess:
            sess.run(v.initializer)
            manager = tf.train.CheckpointManager(ckpt, directory, max_to_keep=2)
            assert manager.latest_checkpoint is None and manager.checkpoints == []
            paths = []
            for i in range(3):
                sess.run(v.assign(float(i + 10)))
                paths.append(manager.save())
            assert paths == [os.path.join(directory, f"ckpt-{n}") for n in (1, 2, 3)]
            assert manager.checkpoints == paths[1:] and manager.latest_checkpoint == paths[2]
            assert not tf.train.checkpoint_exists(paths[0]) and tf.train.latest_checkpoint(directory) == paths[2]
            assert manager.save(checkpoint_number=100) == os.path.join(directory, "ckpt-100")
            written = ckpt.write(str(tmp_path / "exact"))   # not numbered, not recorded
            assert written == str(tmp_path / "exact")
            assert tf.train.load_variable(written, "v/.ATTRIBUTES/VARIABLE_VALUE") == 12.0
    with tf.Graph().as_default():
        v = tf.Variable(0.0, name="other_name")
        ckpt = tf.train.Checkpoint(v=v)
        manager = tf.train.CheckpointManager(ckpt, directory, max_to_keep=2)   # reads the state back
        assert manager.checkpoints == [os.path.join(directory, "ckpt-3"), os.path.join(directory, "ckpt-100")]
        with tf.Session() as sess:
            assert manager.restore_or_initialize() == os.path.join(directory, "ckpt-100")
            assert sess.run(v) == 12.0 and sess.run(ckpt.save_counter) == 4
            assert manager.save() == os.path.join(directory, "ckpt-5")   # numbering goes on from the restored counter


def test_restore_none_initializes_and_mismatches_are_named(tmp_path):
    with tf.Graph().as_default():
        a = tf.Variable(3.0, name="a")
        ckpt = tf.train.Checkpoint(a=a)
        with tf.Session() as sess:
            ckpt.restore(None).initialize_or_restore(sess)
            assert sess.run(a) == 3.0
            path = ckpt.save(str(tmp_path / "ckpt"))
    with tf.Graph().as_default():
        ckpt = tf.train.Checkpoint(b=tf.Variable(0.0, name="b"))
        status = ckpt.restore(path)
        with pytest.raises(AssertionError, match="no value in checkpoint"):
            status.assert_consumed()
        with pytest.raises(ValueError, match="expecting a trackable object"):
            tf.train.Checkpoint(x=3)
        with pytest.raises(ValueError, match="max_to_keep"):
            tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=0)
        with pytest.raises(ValueError, match="needs a session"):
            ckpt.save(str(tmp_path / "again"))


def test_checkpoint_options_callbacks_and_io_device(tmp_path):
    written = []
    options = tf.train.CheckpointOptions(experimental_io_device="/job:localhost/replica:0/task:0/device:CPU:0",
                                         experimental_write_callbacks=[written.append, lambda: written.append("-")],
                                         enable_async=True)
    assert options.experimental_enable_async_checkpoint
    with tf.Graph().as_default() as g:
        ckpt = tf.train.Checkpoint(v=tf.Variable(2.0, name="v"))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = ckpt.save(str(tmp_path / "ckpt"), options=options)
            manager = tf.train.CheckpointManager(ckpt, str(tmp_path / "m"), max_to_keep=None)
            second = manager.save(options=options)
            manager.sync()
        save_ops = [op for op in g.get_operations() if op.type == "SaveV2"]
        assert save_ops and all(op.device.endswith("device:CPU:0") for op in save_ops)
    assert written == [path, "-", second, "-"]
    assert tf.train.load_variable(second, "v/.ATTRIBUTES/VARIABLE_VALUE") == 2.0
    with pytest.raises(ValueError, match="no argument or the path written"):
        tf.train.CheckpointOptions(experimental_write_callbacks=[lambda a, b: None])
