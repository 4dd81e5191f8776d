"""Errors of TF's class that name the culprit: a full disk while writing any of our files is
ResourceExhaustedError naming the file (a real 64 KiB tmpfs, mounted when run as root); a record
length past its file is DataLossError naming file and offset before anything is allocated; a
fixed-length reader's sizes are checked when it is built; a checkpoint index of the wrong shape is
DataLossError naming the index."""
from __future__ import annotations

import errno
import gzip
import json
import os
import struct
import subprocess

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.errors import os_error
from tensorweave.ops.io.tfrecord import frame, masked_crc32c

pytestmark = pytest.mark.usefixtures("graph")


@pytest.fixture
def full_disk(tmp_path):
    """A directory on a 64 KiB tmpfs of its own, unmounted afterwards whatever happens."""
    where = tmp_path / "small"
    where.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"cannot mount a tmpfs to fill up: {e}")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill up (needs root): {done.stderr.strip()}")
    try:
        yield str(where)
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30)


def leftovers(directory: str) -> list:
    """Temporaries in `directory`: ours (named for their writer) and safetensors' hidden ones."""
    return [n for n in os.listdir(directory) if ".tempstate-" in n or "_temp_" in n or n.startswith(".tmp")]


def saver_session(values, extra=None):
    v = tf.Variable(values, name="v")
    if extra is not None:
        tf.constant(extra, name="big_constant")   # only in the meta graph, not in the checkpoint
    saver = tf.train.Saver()
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    return v, saver, sess


@pytest.mark.parametrize("checkpoint_format", ["safetensors", "tensorflow"])
def test_a_checkpoint_that_fills_the_disk_is_resource_exhausted_naming_the_data_file(full_disk, monkeypatch,
                                                                                     checkpoint_format):
    monkeypatch.setenv("TENSORWEAVE_CHECKPOINT_FORMAT", checkpoint_format)
    _, saver, sess = saver_session(np.arange(100_000, dtype=np.float32))
    with sess, pytest.raises(tf.errors.ResourceExhaustedError) as e:
        saver.save(sess, os.path.join(full_disk, "model.ckpt"), global_step=1)
    assert os.path.join(full_disk, "model.ckpt-1.data-00000-of-00001") in e.value.message
    assert "No space left on device" in e.value.message
    assert leftovers(full_disk) == []    # the failed write took its temporaries with it


def test_a_meta_graph_that_fills_the_disk_is_resource_exhausted_naming_it(full_disk):
    _, saver, sess = saver_session(np.float32(1), extra=np.zeros(100_000, np.float32))
    with sess, pytest.raises(tf.errors.ResourceExhaustedError) as e:
        saver.save(sess, os.path.join(full_disk, "model.ckpt"), global_step=1)
    assert os.path.join(full_disk, "model.ckpt-1.meta") in e.value.message
    assert leftovers(full_disk) == []


def test_a_saved_model_that_fills_the_disk_is_resource_exhausted_and_leaves_nothing(full_disk):
    _, _, sess = saver_session(np.float32(1), extra=np.zeros(100_000, np.float32))
    export_dir = os.path.join(full_disk, "export")
    with sess, pytest.raises(tf.errors.ResourceExhaustedError) as e:
        builder = tf.saved_model.builder.SavedModelBuilder(export_dir)
        builder.add_meta_graph_and_variables(sess, ["serve"])
        builder.save()
    assert "saved_model.pb" in e.value.message and full_disk in e.value.message
    assert leftovers(full_disk) == [] and not tf.saved_model.contains_saved_model(export_dir)


def test_an_event_file_that_fills_the_disk_is_resource_exhausted_naming_it(full_disk):
    tf.constant(np.zeros(100_000, np.float32))
    writer = tf.summary.FileWriter(os.path.join(full_disk, "logs"))
    with pytest.raises(tf.errors.ResourceExhaustedError) as e:
        writer.add_graph(tf.get_default_graph())
        writer.flush()
    assert os.path.join(full_disk, "logs", "events.out.tfevents.") in e.value.message
    writer.close()


def test_a_tfrecord_file_that_fills_the_disk_is_resource_exhausted_naming_it(full_disk):
    path = os.path.join(full_disk, "data.tfrecord")
    with pytest.raises(tf.errors.ResourceExhaustedError) as e:
        with tf.python_io.TFRecordWriter(path) as w:
            for _ in range(10):
                w.write(b"x" * 20_000)
    assert path in e.value.message


def test_a_quota_is_resource_exhausted_too(tmp_path):
    # root is exempt from quotas, so the errno is given to the mapping every writer goes through
    got = os_error(OSError(errno.EDQUOT, os.strerror(errno.EDQUOT)), str(tmp_path / "f"))
    assert isinstance(got, tf.errors.ResourceExhaustedError) and str(tmp_path / "f") in got.message


# -- record lengths ---------------------------------------------------------------------------------
def with_bad_length(path: str, length: int, compressed: bool = False, first: bytes = b"abc") -> int:
    """One good record (`first`), then a header claiming `length` bytes with a valid checksum;
    returns the bad record's offset."""
    header = struct.pack("<Q", length)
    data = frame(first) + header + struct.pack("<I", masked_crc32c(header)) + b"xyz"
    if compressed:
        data = gzip.compress(data)
    with open(path, "wb") as f:
        f.write(data)
    return len(frame(first))


@pytest.mark.parametrize("length", [2 ** 64 - 1, 2 ** 40])
def test_a_record_longer_than_its_file_is_data_loss_before_any_allocation(tmp_path, length):
    path = str(tmp_path / "bad.tfrecord")
    offset = with_bad_length(path, length)
    it = tf.python_io.tf_record_iterator(path)
    assert next(it) == b"abc"
    with pytest.raises(tf.errors.DataLossError) as e:
        next(it)
    assert f"record size too large ({length} bytes)" in e.value.message
    assert f"at {offset} in file {path}" in e.value.message

    ds = tf.data.TFRecordDataset(path).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(ds) == b"abc"
        with pytest.raises(tf.errors.DataLossError, match="record size too large"):
            sess.run(ds)


def test_a_huge_length_in_a_compressed_file_is_data_loss(tmp_path):
    path = str(tmp_path / "bad.tfrecord.gz")
    with_bad_length(path, 2 ** 64 - 1, compressed=True)
    with pytest.raises(tf.errors.DataLossError, match="record size too large"):
        list(tf.python_io.tf_record_iterator(path, tf.python_io.TFRecordOptions("GZIP")))


def test_a_reader_op_and_an_event_file_check_lengths_too(tmp_path):
    path = str(tmp_path / "events.out.tfevents.1.host")
    first = tf.summary.Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString()
    offset = with_bad_length(path, 2 ** 40, first=first)
    events = tf.train.summary_iterator(path)
    assert next(events).file_version == "brain.Event:2"
    with pytest.raises(tf.errors.DataLossError) as e:
        next(events)
    assert f"at {offset} in file {path}" in e.value.message

    q = tf.FIFOQueue(4, tf.string)
    key, value = tf.TFRecordReader().read(q)
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[path]]))
        assert sess.run(value) == first
        with pytest.raises(tf.errors.DataLossError, match="record size too large"):
            sess.run(value)


# -- reader arguments -------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, named", [
    (dict(record_bytes=4, hop_bytes=-1), "hop_bytes must be >= 0"),
    (dict(record_bytes=4, header_bytes=-3), "header_bytes must be >= 0"),
    (dict(record_bytes=4, footer_bytes=-2), "footer_bytes must be >= 0"),
    (dict(record_bytes=0), "record_bytes must be > 0"),
    (dict(record_bytes=-8), "record_bytes must be > 0"),
])
def test_fixed_length_reader_sizes_are_checked_when_it_is_built(kwargs, named):
    with pytest.raises(tf.errors.InvalidArgumentError, match=named):
        tf.FixedLengthRecordReader(**kwargs)
    if "hop_bytes" not in kwargs:
        with pytest.raises(tf.errors.InvalidArgumentError, match=named):
            tf.data.FixedLengthRecordDataset(["x"], **kwargs)


def test_fixed_length_dataset_sizes_fed_at_run_time_are_checked_then(tmp_path):
    path = str(tmp_path / "r.bin")
    with open(path, "wb") as f:
        f.write(bytes(12))
    header = tf.placeholder(tf.int64, [])
    ds = tf.data.FixedLengthRecordDataset([path], 4, header_bytes=header)
    it = ds.make_initializable_iterator()
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="header_bytes must be >= 0"):
        sess.run(it.initializer, {header: -4})
        sess.run(it.get_next())


def test_a_record_longer_than_the_file_reads_nothing_rather_than_allocating(tmp_path):
    path = str(tmp_path / "r.bin")
    with open(path, "wb") as f:
        f.write(bytes(12))
    q = tf.FIFOQueue(4, tf.string)
    _, value = tf.FixedLengthRecordReader(2 ** 40).read(q)
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[path]]))
        sess.run(q.close())
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(value)


# -- checkpoint indexes -----------------------------------------------------------------------------
def saved(tmp_path, values=np.arange(6, dtype=np.float32)):
    v, saver, sess = saver_session(values)
    with sess:
        prefix = saver.save(sess, str(tmp_path / "model.ckpt"))
    return v, saver, prefix


def rewrite_index(prefix: str, change) -> None:
    with open(prefix + ".index") as f:
        index = json.load(f)
    change(index["entries"]["v"])
    with open(prefix + ".index", "w") as f:
        json.dump(index, f)


@pytest.mark.parametrize("change", [
    lambda e: e["parts"][0].update(key=5),
    lambda e: e["parts"][0].update(file="0"),
    lambda e: e.update(shape=["6"]),
    lambda e: e.update(dtype=7),
    lambda e: e.update(parts=None),
], ids=["integer key", "string file", "string shape", "integer dtype", "no parts"])
def test_a_checkpoint_index_of_the_wrong_shape_is_data_loss_naming_it(tmp_path, change):
    v, saver, prefix = saved(tmp_path)
    rewrite_index(prefix, change)
    with tf.Session() as sess, pytest.raises(tf.errors.DataLossError) as e:
        saver.restore(sess, prefix)
    assert prefix + ".index" in e.value.message
    with pytest.raises(tf.errors.DataLossError):
        tf.train.load_checkpoint(prefix).get_tensor("v")


def test_a_tensor_whose_bytes_do_not_fit_its_indexed_shape_is_data_loss(tmp_path):
    v, saver, prefix = saved(tmp_path)

    def grow(entry):
        entry["shape"] = [600]
        entry["parts"][0]["length"] = [600]
    rewrite_index(prefix, grow)
    with pytest.raises(tf.errors.DataLossError, match="data-00000-of-00001.*corrupted index"):
        tf.train.load_checkpoint(prefix).get_tensor("v")


def test_a_tensorflow_index_with_a_runaway_varint_is_data_loss(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORWEAVE_CHECKPOINT_FORMAT", "tensorflow")
    _, saver, prefix = saved(tmp_path)
    with open(prefix + ".index", "rb") as f:
        data = bytearray(f.read())
    data[-48:-8] = b"\xff" * 40    # the footer's block handles: varints that never end
    with open(prefix + ".index", "wb") as f:
        f.write(data)
    with pytest.raises(tf.errors.DataLossError, match="model.ckpt.index"):
        tf.train.load_checkpoint(prefix).get_tensor("v")


def test_a_gfile_that_fills_the_disk_is_resource_exhausted_naming_it(full_disk):
    path = os.path.join(full_disk, "notes.txt")
    with pytest.raises(tf.errors.ResourceExhaustedError) as e:
        with tf.gfile.GFile(path, "w") as f:
            f.write("x" * 100_000)
    assert path in e.value.message
