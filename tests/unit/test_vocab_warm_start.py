"""tf.train.warm_start / WarmStartSettings with var_name_to_vocab_info (tf.estimator.VocabInfo):
a checkpointed variable's rows or columns remapped from an old vocabulary file to a new one, with
OOV buckets, a truncated old vocabulary and backup initializers, equal to what TensorFlow 2.15 made
of the same checkpoint and files (fixtures/tf_vocab_warm_start.json, recorded by
fixtures/record_tf_vocab_warm_start.py); and TF's errors."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_vocab_warm_start.json")) as f:
    RECORDED = json.load(f)


@pytest.fixture
def old_model(tmp_path):
    """The recording's checkpoint and vocabulary files, made again here (by tensorweave)."""
    paths = {}
    for name in ("old", "new"):
        paths[name] = str(tmp_path / f"{name}.txt")
        with open(paths[name], "w") as f:
            f.write("\n".join(RECORDED[f"{name}_vocab"]) + "\n")
    with tf.Graph().as_default():
        for name, value in RECORDED["old"].items():
            tf.get_variable(name, initializer=np.array(value, np.float32))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            paths["ckpt"] = tf.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    return paths


def _backup(backup):
    if backup is None:
        return None
    if backup == "ones":
        return tf.ones_initializer()
    return lambda shape, *_, **__: tf.fill(shape, backup)


@pytest.mark.parametrize("case", sorted(RECORDED["cases"]))
def test_vocabulary_remapping_matches_tensorflow(case, old_model):
    want = RECORDED["cases"][case]
    with tf.Graph().as_default():
        var = tf.get_variable(want["variable"], want["shape"], initializer=tf.constant_initializer(100.0))
        info = tf.estimator.VocabInfo(old_model["new"], old_vocab=old_model["old"],
                                      backup_initializer=_backup(want["backup"]), **want["vocab_info"])
        tf.train.warm_start(old_model["ckpt"], [want["variable"]], var_name_to_vocab_info={want["variable"]: info})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(var), np.array(want["value"], np.float32))


def test_an_estimator_warm_starts_through_settings_with_vocab_info(old_model, tmp_path):
    want = RECORDED["cases"]["rows_oov_zeros"]

    def model_fn(features, labels, mode):
        emb = tf.get_variable("emb", want["shape"], initializer=tf.constant_initializer(100.0))
        loss = tf.reduce_sum(emb) * 0.0 + tf.reduce_mean(features)
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=tf.assign_add(tf.train.get_global_step(), 1))

    info = tf.estimator.VocabInfo(old_model["new"], old_vocab=old_model["old"], **want["vocab_info"])
    settings = tf.estimator.WarmStartSettings(old_model["ckpt"], "emb", var_name_to_vocab_info={"emb": info})
    estimator = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "new"), warm_start_from=settings)
    estimator.train(lambda: (tf.constant([[1.0]]), tf.constant([1.0])), steps=1)
    np.testing.assert_array_equal(estimator.get_variable_value("emb"), np.array(want["value"], np.float32))


def test_errors_are_tensorflows(old_model):
    with pytest.raises(ValueError) as e:
        tf.estimator.VocabInfo(old_model["new"], 5, 0, old_model["old"], axis=2)
    assert str(e.value) == RECORDED["errors"]["bad_axis"][1]
    with tf.Graph().as_default():
        tf.get_variable("emb", [4, 3])
        with pytest.raises(ValueError) as e:
            tf.train.warm_start(old_model["ckpt"], ["emb"], var_name_to_vocab_info={
                "nope": tf.estimator.VocabInfo(old_model["new"], 5, 0, old_model["old"])})
    assert str(e.value) == RECORDED["errors"]["unused_vocab_info"][1]
    with tf.Graph().as_default():   # a variable whose vocabulary axis is not new_vocab_size + num_oov_buckets
        tf.get_variable("emb", [6, 3])
        with pytest.raises(ValueError, match="emb.*6 slices along axis 0"):
            tf.train.warm_start(old_model["ckpt"], ["emb"], var_name_to_vocab_info={
                "emb": tf.estimator.VocabInfo(old_model["new"], 5, 0, old_model["old"])})
