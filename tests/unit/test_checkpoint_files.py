"""Checkpoint files: TensorFlow's own V2 checkpoints read back (values recorded by TF), ours
opened with safetensors alone, and every bad file raising the error class that names it."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.ops.checkpoint import bundle

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "tf_checkpoints")
TF_CKPT = os.path.join(FIXTURES, "model.ckpt-3")
with open(os.path.join(FIXTURES, "expected.json")) as _f:
    EXPECTED = json.load(_f)


def _value(name):
    e = EXPECTED[name]
    if e["dtype"] == "string":
        return np.array([s.encode() for s in e["value"]], dtype=object).reshape(e["shape"])
    return np.array(e["value"], dtype=e["dtype"]).reshape(e["shape"])


def test_reads_tensorflow_v2_checkpoint_values_dtypes_and_shapes():
    reader = tf.train.NewCheckpointReader(TF_CKPT)
    names = ["dense/kernel", "dense/bias", "global_step", "counts", "flags", "half", "words", "emb"]
    assert sorted(reader.get_variable_to_shape_map()) == sorted(names)
    for name in names:
        got, want = reader.get_tensor(name), _value(name)
        assert got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_array_equal(got, want)
    assert reader.get_variable_to_dtype_map()["half"] == tf.float16
    assert reader.get_variable_to_shape_map()["emb"] == [10, 3]
    assert reader.has_tensor("emb") and not reader.has_tensor("emb/part_0")
    with pytest.raises(errors.NotFoundError, match="Key nope not found"):
        reader.get_tensor("nope")


def test_reads_tensorflow_sharded_checkpoint_and_state_file():
    d = os.path.join(FIXTURES, "sharded")
    assert tf.train.latest_checkpoint(d) == os.path.join(d, "model.ckpt")
    assert tf.train.list_variables(d) == [("a", [3, 4]), ("c", [5])]
    np.testing.assert_array_equal(tf.train.load_variable(d, "a"), _value("sharded/a"))
    np.testing.assert_array_equal(tf.train.load_variable(d, "c:0"), _value("sharded/c"))
    state = tf.train.get_checkpoint_state(FIXTURES)
    assert state.model_checkpoint_path == TF_CKPT and state.all_model_checkpoint_paths == [TF_CKPT]


def test_saver_restores_tensorflow_checkpoint_into_other_partitioning():
    with tf.Graph().as_default():
        kernel = tf.get_variable("dense/kernel", [3, 4])
        words = tf.Variable(np.array([b"", b"", b""], dtype=object), name="words")
        emb2 = tf.get_variable("emb", [10, 3], partitioner=tf.fixed_size_partitioner(2))
        with tf.Session() as sess:
            tf.train.Saver([kernel, words, emb2]).restore(sess, TF_CKPT)
            np.testing.assert_array_equal(sess.run(kernel), _value("dense/kernel"))
            np.testing.assert_array_equal(sess.run(words), _value("words"))
            np.testing.assert_array_equal(sess.run(emb2.as_tensor()), _value("emb"))


def test_init_from_checkpoint_sets_initializers_from_tensorflow_checkpoint():
    with tf.Graph().as_default():
        with tf.variable_scope("model"):
            kernel = tf.get_variable("kernel", [3, 4])
            bias = tf.get_variable("bias", [4], dtype=tf.float64)
        emb = tf.get_variable("embedding", [10, 3], partitioner=tf.fixed_size_partitioner(4))
        tf.train.init_from_checkpoint(TF_CKPT, {"dense/": "model/", "emb": "embedding"})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(kernel), _value("dense/kernel"))
            np.testing.assert_array_equal(sess.run(bias), _value("dense/bias"))
            np.testing.assert_array_equal(sess.run(emb.as_tensor()), _value("emb"))
    with tf.Graph().as_default():
        tf.get_variable("x", [2])
        with pytest.raises(ValueError, match="Tensor missing is not found"):
            tf.train.init_from_checkpoint(TF_CKPT, {"missing": "x"})


def _save(tmp_path, **values):
    with tf.Graph().as_default():
        vs = [tf.Variable(v, name=k) for k, v in values.items()]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return tf.train.Saver(vs).save(sess, str(tmp_path / "m"), write_meta_graph=False)


def test_our_data_files_open_with_safetensors_alone(tmp_path):
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    path = _save(tmp_path, w=w, n=np.int64(5), c=np.array([1 + 2j, 3j], np.complex128),
                 s=np.array([b"ab", b"", b"xyz"], dtype=object))
    data = load_file(path + ".data-00000-of-00001")
    np.testing.assert_array_equal(data["w"], w)
    assert data["n"] == 5 and data["n"].dtype == np.int64
    assert bytes(data["s"]) == b"abxyz" and data["s#lengths"].tolist() == [2, 0, 3]
    index = json.load(open(path + ".index"))
    assert index["entries"]["c"]["dtype"] == "complex128" and index["entries"]["w"]["shape"] == [3, 4]
    reader = tf.train.NewCheckpointReader(path)
    np.testing.assert_array_equal(reader.get_tensor("c"), [1 + 2j, 3j])
    np.testing.assert_array_equal(reader.get_tensor("s"), np.array([b"ab", b"", b"xyz"], dtype=object))


def _restore_into(path, **values):
    with tf.Graph().as_default():
        vs = [tf.Variable(v, name=k) for k, v in values.items()]
        with tf.Session() as sess:
            tf.train.Saver(vs).restore(sess, path)
            return sess.run(vs)


def test_missing_and_truncated_files_name_the_file(tmp_path):
    w = np.ones((64, 64), np.float32)
    path = _save(tmp_path, w=w)
    data = path + ".data-00000-of-00001"
    saved = open(data, "rb").read()
    with open(data, "wb") as f:
        f.write(saved[: len(saved) // 2])
    with pytest.raises(errors.DataLossError, match="m.data-00000-of-00001"):
        _restore_into(path, w=w)
    with open(data, "wb") as f:   # same size, flipped bytes: the checksum catches it
        f.write(saved[:-8] + b"\x00\x01\x02\x03\x04\x05\x06\x07")
    with pytest.raises(errors.DataLossError, match="checksum mismatch"):
        _restore_into(path, w=w)
    os.remove(data)
    with pytest.raises(errors.NotFoundError, match="m.data-00000-of-00001 not found"):
        _restore_into(path, w=w)
    with open(path + ".index", "w") as f:
        f.write('{"format": "tensorw')
    with pytest.raises(errors.DataLossError, match=r"m.index is truncated"):
        tf.train.NewCheckpointReader(path)
    with pytest.raises(ValueError, match="not a valid checkpoint"):
        _restore_into(str(tmp_path / "nothing"), w=w)


def test_a_data_file_deleted_while_it_is_opened_is_not_found_not_data_loss(tmp_path, monkeypatch):
    """A trainer rotating its checkpoints (max_to_keep) may delete one between a reader's look and
    its open: that is NotFoundError, which an evaluator skips, never DataLossError."""
    w = np.ones((4, 4), np.float32)
    path = _save(tmp_path, w=w)
    real_open = bundle.safe_open

    def deleted_first(file, **kwargs):
        os.remove(file)
        return real_open(file, **kwargs)
    monkeypatch.setattr(bundle, "safe_open", deleted_first)
    with pytest.raises(errors.NotFoundError, match="m.data-00000-of-00001 not found"):
        _restore_into(path, w=w)


def test_truncated_tensorflow_index_is_data_loss(tmp_path):
    prefix = str(tmp_path / "model.ckpt-3")
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(TF_CKPT + suffix, prefix + suffix)
    raw = open(prefix + ".index", "rb").read()
    with open(prefix + ".index", "wb") as f:
        f.write(raw[:100] + raw[-48:])
    with pytest.raises(errors.DataLossError, match="model.ckpt-3.index"):
        tf.train.NewCheckpointReader(prefix)


def test_shape_dtype_and_name_mismatches_name_the_variable(tmp_path):
    path = _save(tmp_path, w=np.zeros((2, 3), np.float32))
    with pytest.raises(errors.InvalidArgumentError, match=r"variable w .*Expected \[3,3\] got \[2,3\]"):
        _restore_into(path, w=np.zeros((3, 3), np.float32))
    with pytest.raises(errors.InvalidArgumentError, match="tensor_name = w; expected dtype float64 does not equal "
                                                          "original dtype float32"):
        _restore_into(path, w=np.zeros((2, 3), np.float64))
    with pytest.raises(errors.NotFoundError, match="Key other not found in checkpoint"):
        _restore_into(path, other=np.zeros((2, 3), np.float32))


def test_checkpoints_iterator_yields_each_new_checkpoint_until_timeout_fn_says_stop(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert list(tf.train.checkpoints_iterator(str(tmp_path), timeout=0)) == []   # none yet
            first = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=1)
            # without timeout_fn: the current checkpoint, then the iteration ends on the timeout
            assert list(tf.train.checkpoints_iterator(str(tmp_path), timeout=0)) == [first]
            saved, timeouts = [first], []

            def timeout_fn():   # on the first timeout a trainer writes another checkpoint
                timeouts.append(1)
                if len(timeouts) == 1:
                    sess.run(v.assign(2.0))
                    saved.append(saver.save(sess, str(tmp_path / "model.ckpt"), global_step=2))
                return len(timeouts) > 1

            got = list(tf.train.checkpoints_iterator(str(tmp_path), timeout=0, timeout_fn=timeout_fn))
    assert got == saved and len(timeouts) == 2
    assert tf.train.load_variable(got[-1], "v") == 2.0


def test_atomic_writes_leave_only_their_file_and_sweep_what_a_dead_writer_left(tmp_path):
    # a file of a saver killed mid-write (a pid that is gone), a temporary of a live writer (ours)
    dead = bundle.temporary_name(str(tmp_path / "model.ckpt-1.meta")).replace(f"-{os.getpid()}-", "-999999999-")
    live = bundle.temporary_name(str(tmp_path / "graph.pbtxt"))
    for path in (dead, live):
        with open(path, "w") as f:
            f.write("partial")

    def write(text):
        def to(tmp):
            with open(tmp, "w") as f:
                f.write(text)
        return to

    bundle.write_atomically(str(tmp_path / "checkpoint"), write("state"))
    assert sorted(os.listdir(tmp_path)) == sorted(["checkpoint", os.path.basename(live)])
    assert (tmp_path / "checkpoint").read_text() == "state"

    def fails(tmp):
        write("half")(tmp)
        raise OSError(28, os.strerror(28))
    with pytest.raises(tf.errors.ResourceExhaustedError, match="checkpoint"):
        bundle.write_atomically(str(tmp_path / "checkpoint"), fails)
    assert sorted(os.listdir(tmp_path)) == sorted(["checkpoint", os.path.basename(live)])   # the old file stays
    assert (tmp_path / "checkpoint").read_text() == "state"
    # safetensors' own hidden temporary lands in a directory of ours, gone with it
    bundle.write_bundle(str(tmp_path / "model.ckpt-2"), [("v", "", np.arange(3.0))])
    assert sorted(os.listdir(tmp_path)) == sorted(["checkpoint", os.path.basename(live), "model.ckpt-2.index",
                                                   "model.ckpt-2.data-00000-of-00001"])
