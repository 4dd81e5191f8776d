"""tf.summary: the summary ops' Summary protos against the ones TensorFlow recorded (same
tags, values, histogram buckets, image pixels, WAV bytes), TF's tag naming, and event files
read back with TensorBoard's own reader."""
from __future__ import annotations

import base64
import io
import json
import os
import warnings

import numpy as np
import pytest
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.compat.proto import summary_pb2

import tensorweave as tf
from tensorweave.framework import errors

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
with open(os.path.join(FIXTURES, "tf_summaries.json")) as _f:
    RECORDED = json.load(_f)
INPUTS = {k: np.array(v["value"], dtype=v["dtype"]).reshape(v["shape"]) for k, v in RECORDED["inputs"].items()}


def _build():
    x = tf.placeholder(tf.float32, [], name="x")
    loss = tf.square(x, name="loss")
    return x, dict(
        scalar=tf.summary.scalar("loss", loss),
        family=tf.summary.scalar("lr", x * 0.1, family="train"),
        hist=tf.summary.histogram("weights", tf.constant(INPUTS["hist"])),
        hist_ints=tf.summary.histogram("ints", tf.constant(INPUTS["hist_ints"])),
        img_float=tf.summary.image("pic", tf.constant(INPUTS["img_float"]), max_outputs=2),
        img_neg=tf.summary.image("neg", tf.constant(INPUTS["img_neg"])),
        img_uint8=tf.summary.image("rgba", tf.constant(INPUTS["img_uint8"]), max_outputs=3),
        audio=tf.summary.audio("sound", tf.constant(INPUTS["audio"]), 8000, max_outputs=2),
        text=tf.summary.text("note", tf.constant(["hello", "world"])),
        tensor=tf.summary.tensor_summary("t", tf.constant([[1.5, 2.0]])))


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)))


def test_summary_ops_match_tensorflows_protos():
    with tf.Graph().as_default():
        x, ops = _build()
        assert {k: t.op.name for k, t in ops.items()} == RECORDED["op_names"]
        with tf.Session() as sess:
            got = sess.run(ops, {x: 2.0})
    for key, raw in got.items():
        ours, theirs = summary_pb2.Summary.FromString(raw), summary_pb2.Summary.FromString(
            base64.b64decode(RECORDED[key]))
        assert [v.tag for v in ours.value] == [v.tag for v in theirs.value], key
        for a, b in zip(ours.value, theirs.value):
            kind = b.WhichOneof("value")
            assert a.WhichOneof("value") == kind and a.metadata == b.metadata, key
            if kind == "image":   # PNG bytes differ by encoder settings; pixels must not
                assert (a.image.height, a.image.width, a.image.colorspace) == \
                    (b.image.height, b.image.width, b.image.colorspace)
                np.testing.assert_array_equal(_pixels(a.image.encoded_image_string),
                                              _pixels(b.image.encoded_image_string))
            elif kind == "histo":
                assert list(a.histo.bucket_limit) == list(b.histo.bucket_limit)
                assert list(a.histo.bucket) == list(b.histo.bucket)
                assert (a.histo.min, a.histo.max, a.histo.num) == (b.histo.min, b.histo.max, b.histo.num)
                np.testing.assert_allclose([a.histo.sum, a.histo.sum_squares], [b.histo.sum, b.histo.sum_squares],
                                           rtol=1e-12)
            else:   # scalars, audio (WAV bytes), text and tensors are identical
                assert a == b, key


def test_tags_follow_op_names_and_collections():
    with tf.Graph().as_default():
        a = tf.summary.scalar("loss", 1.0)
        b = tf.summary.scalar("loss", 2.0)
        c = tf.summary.scalar("bad name!", 3.0, family="fam ily")
        d = tf.summary.scalar("private", 4.0, collections=["mine"])
        with tf.name_scope("tower"):
            e = tf.summary.histogram("h", [1.0, 2.0])
        assert tf.get_collection(tf.GraphKeys.SUMMARIES) == [a, b, c, e]
        assert tf.get_collection("mine") == [d]
        merged = tf.summary.merge_all()
        assert tf.summary.merge_all("empty") is None
        dup = tf.summary.merge([a, a])
        with tf.Session() as sess:
            tags = [v.tag for v in summary_pb2.Summary.FromString(sess.run(merged)).value]
            assert tags == ["loss", "loss_1", "fam_ily/fam_ily/bad_name_", "tower/h"]
            with pytest.raises(errors.InvalidArgumentError, match="Duplicate tag loss found in summary inputs"):
                sess.run(dup)


def test_bad_summary_inputs_raise_naming_the_op():
    with tf.Graph().as_default():
        h = tf.summary.histogram("nan_hist", tf.constant([1.0, np.nan]))
        with pytest.raises(ValueError, match="Tensor must be 4-D with last dim 1, 3, or 4"):
            tf.summary.image("img", tf.zeros([2, 4, 4, 2]))
        p = tf.placeholder(tf.float32, [None], name="p")
        s = tf.summary.scalar("s", p)
        with pytest.raises(ValueError, match="Expected tensor .* to have dtype string"):
            tf.summary.text("t", tf.constant(1.0))
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError, match="Nan in summary histogram for: nan_hist"):
                sess.run(h)
            with pytest.raises(errors.InvalidArgumentError, match=r"tags and values not the same shape: \[\] != \[2\]"):
                sess.run(s, {p: [1.0, 2.0]})


def test_file_writer_events_read_back_with_tensorboard(tmp_path):
    logdir = str(tmp_path)
    rng = np.random.RandomState(0)
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [], name="x")
        w = tf.Variable(rng.randn(50).astype(np.float32), name="w")
        tf.summary.scalar("loss", x * x)
        tf.summary.histogram("weights", w)
        tf.summary.image("input", tf.reshape(tf.range(12, dtype=tf.float32), [1, 2, 2, 3]), max_outputs=1)
        merged = tf.summary.merge_all()
        with tf.Session() as sess, tf.summary.FileWriter(logdir, g) as writer:
            sess.run(w.initializer)
            for step in range(4):
                writer.add_summary(sess.run(merged, {x: float(step)}), global_step=step)
            writer.add_session_log(tf.SessionLog(status=tf.SessionLog.STOP), 4)
            meta = tf.RunMetadata()
            sess.run(merged, {x: 1.0}, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                     run_metadata=meta)
            writer.add_run_metadata(meta, "step4", 4)
            with pytest.raises(ValueError, match="already used"):
                writer.add_run_metadata(meta, "step4", 4)
            assert writer.get_logdir() == logdir
            wv = sess.run(w)
    files = os.listdir(logdir)
    assert len(files) == 1 and files[0].startswith("events.out.tfevents.")
    acc = EventAccumulator(logdir, size_guidance={"histograms": 0, "scalars": 0})
    acc.Reload()
    tags = acc.Tags()
    assert tags["scalars"] == ["loss"] and tags["histograms"] == ["weights"] and tags["images"] == ["input/image"]
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(0, 0.0), (1, 1.0), (2, 4.0), (3, 9.0)]
    h = acc.Histograms("weights")[-1].histogram_value
    assert (h.min, h.max, h.num) == (float(wv.min()), float(wv.max()), 50.0)
    img = acc.Images("input/image")[0]
    np.testing.assert_array_equal(_pixels(img.encoded_image_string).reshape(-1),
                                  (np.arange(12, dtype=np.float32) * (255.0 / 11.0)).astype(np.uint8))
    graph = acc.Graph()
    nodes = {n.name: n for n in graph.node}
    assert nodes["w"].op == "VarHandleOp" and nodes["mul"].input == ["x", "x"]
    assert acc.RunMetadata("step4").step_stats.dev_stats
    events = list(tf.train.summary_iterator(os.path.join(logdir, files[0])))
    assert events[0].file_version == "brain.Event:2"
    assert [e.session_log.status for e in events if e.HasField("session_log")] == [tf.SessionLog.STOP]


def test_reopen_cache_and_closed_writer(tmp_path):
    w = tf.summary.FileWriter(str(tmp_path / "a"))
    w.add_summary(tf.Summary(value=[tf.Summary.Value(tag="v", simple_value=1.5)]), 1)
    w.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        w.add_summary(tf.Summary(value=[tf.Summary.Value(tag="v", simple_value=2.5)]), 2)
    assert "closed FileWriter" in str(caught[0].message)
    w.reopen()
    w.add_summary(tf.Summary(value=[tf.Summary.Value(tag="v", simple_value=3.5)]), 3)
    w.close()
    files = os.listdir(tmp_path / "a")
    assert len(files) == 2
    # One value in each file. (Not through EventAccumulator: it orders files by name, and two
    # writers of one second are told apart by a process-wide counter, so ".10" sorts before ".9".)
    written = [[(e.step, v.simple_value) for e in tf.train.summary_iterator(str(tmp_path / "a" / f))
                for v in e.summary.value] for f in files]
    assert sorted(written) == [[(1, 1.5)], [(3, 3.5)]]
    with tf.Graph().as_default():
        cached = tf.summary.FileWriterCache.get(str(tmp_path / "b"))
        assert tf.summary.FileWriterCache.get(str(tmp_path / "b")) is cached
        tf.summary.FileWriterCache.clear()
        assert tf.summary.FileWriterCache.get(str(tmp_path / "b")) is not cached
        tf.summary.FileWriterCache.clear()


def test_reads_tensorflows_event_file():
    d = os.path.join(FIXTURES, "tf_events")
    events = list(tf.train.summary_iterator(os.path.join(d, os.listdir(d)[0])))
    steps = [(e.step, [v.tag for v in e.summary.value][:2]) for e in events if e.HasField("summary")]
    assert steps == [(0, ["loss_1", "train/train/lr"]), (1, ["loss_1", "train/train/lr"]),
                     (2, ["loss_1", "train/train/lr"])]
    assert events[0].file_version == "brain.Event:2"
    assert [e.summary.value[0].simple_value for e in events if e.HasField("summary")] == [0.25, 2.25, 6.25]
