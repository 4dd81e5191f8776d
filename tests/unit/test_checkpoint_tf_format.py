"""Checkpoints in TensorFlow's own format (TENSORWEAVE_CHECKPOINT_FORMAT=tensorflow): TF 2.21's
files (tests/unit/fixtures/record_tf_checkpoints.py) restored, the same variables written back by
tensorweave byte for byte (one file, and two shards merged), read back with every reader, and bad
files raising the error that names them. TF itself restoring tensorweave's files is checked by
the recording script (its record: fixtures/tf_checkpoints/verified.json)."""
from __future__ import annotations

import base64
import json
import os
import shutil

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.ops.checkpoint.io_ops import merge_v2_checkpoints, save_v2, sharded_filename
from tensorweave.ops.checkpoint.tf_bundle import (_block_entries, _varint, is_tf_index, merge_tf_bundles, read_table,
                                                   table_bytes, write_tf_bundle)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_checkpoints")
TF_CKPT = os.path.join(FIXTURES, "model.ckpt")
TF_SHARDED = os.path.join(FIXTURES, "sharded", "model.ckpt")
with open(os.path.join(FIXTURES, "values.json")) as _f:
    RECORDED = json.load(_f)


def _value(e) -> np.ndarray:
    if e["dtype"] == "string":
        return np.array([base64.b64decode(s) for s in e["value"]], dtype=object).reshape(e["shape"])
    if e["dtype"].startswith("complex"):
        return np.array([complex(*x) for x in e["value"]], dtype=e["dtype"]).reshape(e["shape"])
    return np.array(e["value"], dtype=e["dtype"]).reshape(e["shape"])


VALUES = {name: _value(e) for name, e in RECORDED["model.ckpt"].items()}
SHARDED = {name: _value(e) for name, e in RECORDED["sharded/model.ckpt"].items()}


def _assert_same(got, want, name):
    assert got.dtype == want.dtype and got.shape == want.shape, name
    np.testing.assert_array_equal(got, want, err_msg=name)


def _variables(emb_parts: int) -> dict:
    """The fixture's variables in the default graph ('emb' partitioned in `emb_parts`)."""
    out = {name: tf.Variable(v, name=name) for name, v in VALUES.items() if name != "emb"}
    out["emb"] = tf.get_variable("emb", initializer=tf.constant(VALUES["emb"]),
                                 partitioner=tf.fixed_size_partitioner(emb_parts))
    return out


def _run_all(sess, variables: dict) -> dict:
    return {n: sess.run(v.as_tensor() if n == "emb" else v) for n, v in variables.items()}


def test_tensorflow_written_checkpoint_restores_every_dtype():
    assert RECORDED["tensorflow"] == "2.21.0"
    with tf.Graph().as_default():
        variables = {name: tf.Variable(np.full_like(v, b"" if v.dtype == object else 0), name=name)
                     for name, v in VALUES.items() if name != "emb"}
        variables["emb"] = tf.get_variable("emb", [10, 3], partitioner=tf.fixed_size_partitioner(2))
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, TF_CKPT)
            for name, got in _run_all(sess, variables).items():
                _assert_same(got, VALUES[name], name)
    assert tf.train.list_variables(TF_CKPT) == sorted((n, list(v.shape)) for n, v in VALUES.items())
    _assert_same(tf.train.load_checkpoint(TF_CKPT).get_tensor("words"), VALUES["words"], "words")


def _save_in_tensorflow_format(tmp_path, monkeypatch, **save_args) -> str:
    """The fixture's variables saved by tensorweave's Saver in TF's format; the prefix written."""
    monkeypatch.setenv("TENSORWEAVE_CHECKPOINT_FORMAT", "tensorflow")
    with tf.Graph().as_default():
        _variables(3)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return tf.train.Saver().save(sess, str(tmp_path / "model.ckpt"), **save_args)


def test_saver_writes_tensorflows_files_byte_for_byte(tmp_path, monkeypatch):
    path = _save_in_tensorflow_format(tmp_path, monkeypatch, write_meta_graph=False)
    for suffix in (".index", ".data-00000-of-00001"):
        with open(path + suffix, "rb") as ours, open(TF_CKPT + suffix, "rb") as tfs:
            assert ours.read() == tfs.read(), suffix


def test_tensorflow_format_reads_back_with_every_reader(tmp_path, monkeypatch):
    _save_in_tensorflow_format(tmp_path, monkeypatch, global_step=5)
    path = tf.train.latest_checkpoint(str(tmp_path))
    assert path == str(tmp_path / "model.ckpt-5") and is_tf_index(path + ".index")
    reader = tf.train.NewCheckpointReader(path)
    assert reader.get_variable_to_shape_map() == {n: list(v.shape) for n, v in VALUES.items()}
    assert reader.get_variable_to_dtype_map()["d/uint64"] == tf.uint64
    for name, want in VALUES.items():
        _assert_same(reader.get_tensor(name), want, name)
    assert tf.train.list_variables(str(tmp_path)) == sorted((n, list(v.shape)) for n, v in VALUES.items())
    with tf.Graph().as_default():   # into another partitioning, and through the meta graph's saver
        saver = tf.train.import_meta_graph(path + ".meta")
        emb = tf.get_variable("emb2", [10, 3], partitioner=tf.fixed_size_partitioner(4))
        tf.train.init_from_checkpoint(str(tmp_path), {"emb": emb})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(emb.as_tensor()), VALUES["emb"])
            saver.restore(sess, path)
            words = [v for v in tf.global_variables() if v.op.name == "words"]
            _assert_same(sess.run(words[0]), VALUES["words"], "words")


def test_sharded_save_merges_into_tensorflows_index_byte_for_byte(tmp_path, monkeypatch):
    """SaveV2 per shard and MergeV2Checkpoints as TF's sharded Saver runs them (shard 0: a and
    e's first part; shard 1: c and e's second part): the merged files equal TF's."""
    monkeypatch.setenv("TENSORWEAVE_CHECKPOINT_FORMAT", "tensorflow")
    e = SHARDED["e"]
    shards = [[("a", "", SHARDED["a"]), ("e", "6 2 0,3:0,2", e[:3])],
              [("c", "", SHARDED["c"]), ("e", "6 2 3,3:0,2", e[3:])]]
    prefix = str(tmp_path / "model.ckpt")
    with tf.Graph().as_default():
        temp = [sharded_filename(prefix + "_temp_x/part", i, 2) for i in range(2)]
        saves = [save_v2(t, [n for n, _, _ in s], [spec for _, spec, _ in s], [v for _, _, v in s])
                 for t, s in zip(temp, shards)]
        with tf.control_dependencies(saves):
            merge = merge_v2_checkpoints(tf.stack(temp), prefix)
        assert saves[0].get_attr("_checkpoint_format") == "tensorflow"
        with tf.Session() as sess:
            sess.run(merge)
    assert sorted(os.listdir(tmp_path)) == ["model.ckpt.data-00000-of-00002", "model.ckpt.data-00001-of-00002",
                                            "model.ckpt.index"]
    for suffix in (".index", ".data-00000-of-00002", ".data-00001-of-00002"):
        with open(prefix + suffix, "rb") as ours, open(TF_SHARDED + suffix, "rb") as tfs:
            assert ours.read() == tfs.read(), suffix
    reader = tf.train.NewCheckpointReader(prefix)
    for name, want in SHARDED.items():
        _assert_same(reader.get_tensor(name), want, name)


def test_merge_rejects_a_tensor_two_shards_saved_whole(tmp_path):
    for i in range(2):
        write_tf_bundle(str(tmp_path / f"s{i}"), [("a", "", np.ones(2))])
    with pytest.raises(errors.InvalidArgumentError, match="Duplicate tensor keyed by b'a' .* prefix: .*s1"):
        merge_tf_bundles([str(tmp_path / "s0"), str(tmp_path / "s1")], str(tmp_path / "m"))


def test_default_format_stays_safetensors_and_the_setting_is_checked(tmp_path, monkeypatch):
    monkeypatch.delenv("TENSORWEAVE_CHECKPOINT_FORMAT", raising=False)
    with tf.Graph().as_default() as g:
        v = tf.Variable([1.0, 2.0], name="v")
        saver = tf.train.Saver([v])
        assert "_checkpoint_format" not in g.get_operation_by_name("save/SaveV2").node_def.attr
        with tf.Session() as sess:
            sess.run(v.initializer)
            path = saver.save(sess, str(tmp_path / "m"), write_meta_graph=False)
        with open(path + ".index", "rb") as f:
            assert f.read(1) == b"{"
        monkeypatch.setenv("TENSORWEAVE_CHECKPOINT_FORMAT", "tf2")
        with pytest.raises(ValueError, match="TENSORWEAVE_CHECKPOINT_FORMAT='tf2': expected one of safetensors, "
                                             "tensorflow"):
            tf.train.Saver([v])


def _copy(prefix: str, directory) -> str:
    for name in os.listdir(os.path.dirname(prefix)):
        if name.startswith(os.path.basename(prefix) + "."):
            shutil.copy(os.path.join(os.path.dirname(prefix), name), directory)
    return os.path.join(str(directory), os.path.basename(prefix))


def test_corrupt_index_and_data_are_data_loss_naming_the_file(tmp_path):
    prefix = _copy(TF_CKPT, tmp_path)
    with open(prefix + ".index", "rb") as f:
        index = f.read()
    with open(prefix + ".index", "wb") as f:    # one byte of the data block: its crc no longer matches
        f.write(index[:20] + bytes([index[20] ^ 1]) + index[21:])
    with pytest.raises(errors.DataLossError, match=r"model.ckpt.index: block checksum mismatch"):
        tf.train.NewCheckpointReader(prefix)
    with open(prefix + ".index", "wb") as f:
        f.write(index)
    with open(prefix + ".data-00000-of-00001", "r+b") as f:   # d/bool, first: [True, False, True]
        f.seek(1)
        f.write(b"\x01")
    with pytest.raises(errors.DataLossError, match=r"Checksum mismatch for a tensor in .*model.ckpt.data-00000"):
        tf.train.NewCheckpointReader(prefix).get_tensor("d/bool")


def test_a_malformed_record_with_a_good_checksum_is_data_loss_naming_the_tensor(tmp_path):
    """An index whose blocks check out but whose entry for tensor "w" is not a BundleEntryProto
    (a writer's bug, not disk corruption): the reader names the file and the tensor."""
    header = read_table(TF_CKPT + ".index")[b""]
    prefix = str(tmp_path / "bad")
    with open(prefix + ".index", "wb") as f:
        f.write(table_bytes([(b"", header), (b"w", b"\xff\xff\xff")]))
    with pytest.raises(errors.DataLossError, match=r"bad.index, tensor w: a malformed BundleEntryProto record"):
        tf.train.NewCheckpointReader(prefix)


def test_missing_data_shard_is_not_found_naming_it(tmp_path):
    prefix = _copy(TF_SHARDED, tmp_path)
    os.remove(prefix + ".data-00001-of-00002")
    reader = tf.train.NewCheckpointReader(prefix)
    np.testing.assert_array_equal(reader.get_tensor("a"), SHARDED["a"])
    with pytest.raises(errors.NotFoundError, match=r"model.ckpt.data-00001-of-00002 not found"):
        reader.get_tensor("c")
    with tf.Graph().as_default():
        c = tf.Variable(np.zeros(5, np.int64), name="c")
        with tf.Session() as sess, pytest.raises(errors.NotFoundError, match=r"data-00001-of-00002 not found"):
            tf.train.Saver([c]).restore(sess, prefix)


def test_table_of_several_blocks_reads_back(tmp_path):
    """A table past one 256 KiB block (index entries with separator keys); the recording script
    compared such an index with TF's byte for byte."""
    items = [(b"v%05d/" % i + b"x" * 100, bytes(i % 7) * 3) for i in range(4000)]
    raw = table_bytes([(b"", b"")] + items)
    footer = raw[-48:]
    _, pos = _varint(footer, _varint(footer, 0)[1])
    index_offset, pos = _varint(footer, pos)
    index_size, _ = _varint(footer, pos)
    separators = [key for key, _ in _block_entries(raw[index_offset:index_offset + index_size])]
    assert len(separators) == 2 and separators[1] == b"w"   # a short separator, then the successor of the last
    path = str(tmp_path / "t.index")
    with open(path, "wb") as f:
        f.write(raw)
    assert list(read_table(path).items()) == [(b"", b"")] + items


def test_slices_taking_whole_dimensions_are_keyed_as_tf_keys_them(tmp_path):
    """A slice spec's '-' (a whole dimension) is TF's full extent: an empty extent in the entry,
    (0, -1) in the slice's key; the reader finds the bytes by the same key."""
    full = np.arange(8, dtype=np.int32).reshape(4, 2)
    prefix = str(tmp_path / "m")
    write_tf_bundle(prefix, [("t", "4 2 0,2:-", full[:2]), ("t", "4 2 2,2:-", full[2:])])
    reader = tf.train.NewCheckpointReader(prefix)
    np.testing.assert_array_equal(reader.get_tensor("t"), full)
    np.testing.assert_array_equal(reader._bundle.load(reader._bundle.entries["t"].parts[1]), full[2:])
