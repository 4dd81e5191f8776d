"""tf.gfile, TFRecord files (TensorFlow's files read here, ours byte-equal to TensorFlow's),
tf.train.Example parsing against TensorFlow's recorded parse, and damaged records."""
from __future__ import annotations

import gzip
import json
import os
import struct
import zlib

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.helpers import make_op
from unit_helpers import run

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "tf_records")
TF_FILE = os.path.join(FIX, "examples.tfrecord")


def _records():
    return list(tf.python_io.tf_record_iterator(TF_FILE))


# -- gfile -----------------------------------------------------------------------------------------
def test_gfile_round_trip_and_listing(tmp_path):
    d = tmp_path / "a" / "b"
    tf.gfile.MakeDirs(str(d))
    tf.gfile.MakeDirs(str(d))   # existing: fine
    with tf.gfile.GFile(str(d / "t.txt"), "w") as f:
        f.write("line1\nline2\n")
    with tf.gfile.GFile(str(d / "t.txt")) as f:
        assert list(f) == ["line1\n", "line2\n"]
    with tf.io.gfile.GFile(str(d / "t.bin"), "wb") as f:
        f.write(b"\x00\xff")
    assert tf.gfile.Open(str(d / "t.bin"), "rb").read() == b"\x00\xff"
    assert tf.gfile.GFile(str(d / "t.bin"), "rb").size() == 2
    assert tf.gfile.ListDirectory(str(d)) == ["t.bin", "t.txt"]
    assert tf.gfile.Glob(str(d / "*.txt")) == [str(d / "t.txt")]
    assert tf.gfile.Exists(str(d)) and tf.gfile.IsDirectory(str(d)) and not tf.io.gfile.isdir(str(d / "t.txt"))
    st = tf.gfile.Stat(str(d / "t.bin"))
    assert st.length == 2 and not st.is_directory and st.mtime_nsec > 0
    tf.gfile.Copy(str(d / "t.bin"), str(d / "c.bin"))
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.gfile.Copy(str(d / "t.bin"), str(d / "c.bin"))
    tf.gfile.Rename(str(d / "c.bin"), str(d / "t.txt"), overwrite=True)
    assert tf.gfile.GFile(str(d / "t.txt"), "rb").read() == b"\x00\xff"
    walked = list(tf.gfile.Walk(str(tmp_path)))
    assert walked[0] == (str(tmp_path), ["a"], []) and walked[-1][2] == ["t.bin", "t.txt"]
    tf.gfile.Remove(str(d / "t.txt"))
    tf.gfile.DeleteRecursively(str(tmp_path / "a"))
    assert not tf.io.gfile.exists(str(tmp_path / "a"))


@pytest.mark.parametrize("call", [
    lambda p: tf.gfile.GFile(p).read(), lambda p: tf.gfile.Remove(p), lambda p: tf.gfile.Stat(p),
    lambda p: tf.gfile.ListDirectory(p), lambda p: tf.gfile.DeleteRecursively(p),
    lambda p: next(tf.python_io.tf_record_iterator(p))])
def test_missing_files_are_not_found_naming_the_file(tmp_path, call):
    path = str(tmp_path / "missing.bin")
    with pytest.raises(tf.errors.NotFoundError, match="missing.bin"):
        call(path)


# -- TFRecord ------------------------------------------------------------------------------------
def test_tensorflow_files_read_here_in_every_compression():
    plain = _records()
    assert len(plain) == 4
    for suffix, kind in ((".gz", "GZIP"), (".zz", tf.python_io.TFRecordCompressionType.ZLIB)):
        options = tf.python_io.TFRecordOptions(kind)
        assert list(tf.python_io.tf_record_iterator(TF_FILE + suffix, options)) == plain


def test_our_files_are_tensorflows_bytes(tmp_path):
    recs = _records()
    for suffix, kind in (("", None), (".gz", "GZIP"), (".zz", "ZLIB")):
        out = str(tmp_path / ("ours" + suffix))
        with tf.python_io.TFRecordWriter(out, tf.python_io.TFRecordOptions(kind)) as w:
            for r in recs:
                w.write(r)
        with open(out, "rb") as f, open(TF_FILE + suffix, "rb") as g:
            ours, theirs = f.read(), g.read()
        if kind == "GZIP":   # compressors may differ; the framed stream inside may not
            ours, theirs = gzip.decompress(ours), gzip.decompress(theirs)
        elif kind == "ZLIB":
            ours, theirs = zlib.decompress(ours), zlib.decompress(theirs)
        assert ours == theirs


def _damaged(tmp_path, how: str) -> str:
    data = bytearray(open(TF_FILE, "rb").read())
    (n,) = struct.unpack_from("<Q", data)
    if how == "length_crc":
        data[9] ^= 0xFF
    elif how == "data_crc":
        data[12 + n] ^= 0x01   # last byte of the first record's data
    elif how == "truncated":
        data = data[:12 + n + 2]
    p = tmp_path / f"{how}.tfrecord"
    p.write_bytes(bytes(data))
    return str(p)


@pytest.mark.parametrize("how, what", [("length_crc", "corrupted record at 0"), ("data_crc", "corrupted record at 0"),
                                       ("truncated", "truncated record at 0")])
def test_damaged_records_are_data_loss_naming_the_file(tmp_path, how, what):
    path = _damaged(tmp_path, how)
    with pytest.raises(tf.errors.DataLossError, match=what) as info:
        list(tf.python_io.tf_record_iterator(path))
    assert path in str(info.value)


# -- tf.train.Example and parsing --------------------------------------------------------------------
FEATURES = {
    "label": tf.FixedLenFeature([2], tf.int64),
    "pixels": tf.FixedLenFeature([3], tf.float32),
    "name": tf.FixedLenFeature([2], tf.string),
    "tokens": tf.VarLenFeature(tf.int64),
    "opt": tf.FixedLenFeature([], tf.float32, default_value=-1.0),
    "seq": tf.FixedLenSequenceFeature([1], tf.int64, allow_missing=True),
    "seqvals": tf.FixedLenSequenceFeature([], tf.int64, allow_missing=True, default_value=-7),
}


def test_parse_example_matches_tensorflow(graph):
    want = json.load(open(os.path.join(FIX, "parsed.json")))
    ser = tf.placeholder(tf.string, [None])
    parsed = tf.parse_example(ser, FEATURES)
    assert parsed["pixels"].shape.as_list() == [None, 3] and parsed["seqvals"].shape.as_list() == [None, None]
    got = run(parsed, {ser: _records()})
    tok = got["tokens"]
    assert tok.indices.tolist() == want["tokens"]["indices"] and tok.values.tolist() == want["tokens"]["values"]
    assert tok.dense_shape.tolist() == want["tokens"]["dense_shape"]
    for key in ("label", "pixels", "opt", "seq", "seqvals"):
        assert list(got[key].shape) == want[key + ":shape"], key
        np.testing.assert_array_equal(got[key], np.array(want[key]).reshape(want[key + ":shape"]))
        assert got[key].dtype == FEATURES[key].dtype.as_numpy_dtype
    assert [v.decode("latin-1") for v in got["name"].reshape(-1)] == want["name"]


def test_parse_single_example_and_our_protos(graph):
    want = json.load(open(os.path.join(FIX, "parsed.json")))["single"]
    rec = _records()[3]
    ex = tf.train.Example.FromString(rec)
    assert list(ex.features.feature["label"].int64_list.value) == [3, -3000]
    # an Example built here parses as TensorFlow's bytes do
    mine = tf.train.Example(features=tf.train.Features(feature={
        "tokens": tf.train.Feature(int64_list=tf.train.Int64List(value=[0, 1, 2])),
        "pixels": tf.train.Feature(float_list=tf.train.FloatList(value=[1.5, 1.25, -3.0]))})).SerializeToString()
    for serialized in (rec, mine):
        out = run(tf.parse_single_example(serialized, {"tokens": tf.VarLenFeature(tf.int64),
                                                       "pixels": tf.FixedLenFeature([3], tf.float32)}))
        assert [out["tokens"].indices.tolist(), out["tokens"].values.tolist(),
                out["tokens"].dense_shape.tolist()] == want["tokens"]
        assert out["pixels"].tolist() == want["pixels"]


@pytest.mark.parametrize("features, message", [
    ({"label": tf.FixedLenFeature([2], tf.float32)}, "Key: label, Index: 0.  Data types don't match"),
    ({"label": tf.FixedLenFeature([3], tf.int64)}, "Number of int64 values != expected"),
    ({"absent": tf.FixedLenFeature([1], tf.int64)}, "Feature: absent \\(data type: int64\\) is required"),
])
def test_parse_errors_name_the_key(graph, features, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        run(tf.parse_example(_records(), features))


def test_parse_rejects_garbage_and_bad_configs(graph):
    with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse example input"):
        run(tf.parse_example([b"\xff\xff\xff"], {"a": tf.VarLenFeature(tf.int64)}))
    with pytest.raises(ValueError, match="allow_missing"):
        tf.parse_example(_records(), {"a": tf.FixedLenSequenceFeature([], tf.int64)})
    with pytest.raises(ValueError, match="Unsupported dtype"):
        tf.parse_example(_records(), {"a": tf.VarLenFeature(tf.int32)})


# -- whole files ---------------------------------------------------------------------------------------
def test_read_write_and_matching_files(graph, tmp_path):
    target = str(tmp_path / "sub" / "out.bin")
    w = tf.write_file(target, tf.constant(b"\x00payload"))
    files = tf.matching_files(str(tmp_path / "sub" / "*.bin"))
    with tf.Session() as sess:
        sess.run(w)
        assert sess.run(tf.read_file(target)) == b"\x00payload"
        assert [f.decode() for f in sess.run(files)] == [target]
        with pytest.raises(tf.errors.NotFoundError, match="nope.bin") as info:
            sess.run(tf.read_file(str(tmp_path / "nope.bin"), name="reader"))
        assert "reader" in str(info.value)
        assert sess.run(tf.read_file(target)) == b"\x00payload"   # the session is still usable


@pytest.mark.parametrize("op_type", ["ParseExample", "ParseExampleV2"])
def test_tensorflows_own_parse_ops_as_a_graph_def_holds_them(graph, op_type):
    """TF's ParseExample (keys and defaults as inputs) and ParseExampleV2 (1-D key tensors), as a
    TF GraphDef or SavedModel holds them, parse as TensorFlow did (the recorded FEATURES)."""
    want = json.load(open(os.path.join(FIX, "parsed.json")))
    dense = ["label", "name", "opt", "pixels", "seq", "seqvals"]
    shapes = [[2], [2], [], [3], [-1, 1], [-1]]   # a sequence feature's first dimension is -1
    defaults = [tf.zeros([0], tf.int64), tf.constant([], tf.string), tf.constant([-1.0]), tf.zeros([0]),
                tf.zeros([0], tf.int64), tf.constant([-7], tf.int64)]
    attrs = {"sparse_types": [tf.int64], "Tdense": [FEATURES[k].dtype for k in dense],
             "dense_shapes": [tf.TensorShape([None if d == -1 else d for d in s]) for s in shapes]}
    ser, names = tf.constant(_records()), tf.constant([], tf.string)
    if op_type == "ParseExample":
        inputs = [ser, names, tf.constant("tokens")] + [tf.constant(k) for k in dense] + defaults
        attrs.update(Nsparse=1, Ndense=len(dense))
    else:
        inputs = [ser, names, tf.constant(["tokens"]), tf.constant(dense), names] + defaults
        attrs.update(num_sparse=1, ragged_value_types=[], ragged_split_types=[])
    op = make_op(op_type, inputs, attrs)
    assert op.outputs[3 + dense.index("seqvals")].shape.as_list() == [len(_records()), None]
    got = run(list(op.outputs))
    assert [got[0].tolist(), got[1].tolist(), got[2].tolist()] == [want["tokens"]["indices"],
                                                                   want["tokens"]["values"],
                                                                   want["tokens"]["dense_shape"]]
    for key, value in zip(dense, got[3:]):
        if key == "name":
            assert [v.decode("latin-1") for v in value.reshape(-1)] == want["name"]
            continue
        assert list(value.shape) == want[key + ":shape"], key
        np.testing.assert_array_equal(value, np.array(want[key]).reshape(want[key + ":shape"]))
