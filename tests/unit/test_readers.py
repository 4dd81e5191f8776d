"""Reader ops over queues of file names: records, keys, counters, and bad files."""
from __future__ import annotations

import gzip
import os

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")
FIX = os.path.join(os.path.dirname(__file__), "fixtures", "tf_records")


def filenames(names):
    """A closed FIFOQueue holding `names` (what string_input_producer gives, without threads)."""
    q = tf.FIFOQueue(32, tf.string)
    return q, q.enqueue_many([names]), q.close()


def read_all(reader, names, n=1000, up_to=None):
    q, fill, close = filenames(names)
    key, value = reader.read(q) if up_to is None else reader.read_up_to(q, up_to)
    out = []
    with tf.Session() as sess:
        sess.run(fill)
        sess.run(close)
        try:
            for _ in range(n):
                out.append(sess.run([key, value]))
        except tf.errors.OutOfRangeError as e:
            assert "is closed and has insufficient elements" in str(e)
        produced, completed = sess.run([reader.num_records_produced(), reader.num_work_units_completed()])
    return out, produced, completed


def test_fixed_length_reader_header_footer_hop_and_partial_records(tmp_path):
    a, b = str(tmp_path / "a.bin"), str(tmp_path / "b.bin")
    with open(a, "wb") as f:
        f.write(b"HDR" + bytes(range(10)) + b"FT")
    with open(b, "wb") as f:
        f.write(b"HDR" + b"xy")                  # shorter than one record: no records at all
    out, produced, completed = read_all(tf.FixedLengthRecordReader(4, header_bytes=3, footer_bytes=2), [a, b])
    assert out == [[f"{a}:0".encode(), bytes(range(4))], [f"{a}:1".encode(), bytes(range(4, 8))]]
    assert (produced, completed) == (2, 2)
    hop, _, _ = read_all(tf.FixedLengthRecordReader(4, header_bytes=3, footer_bytes=2, hop_bytes=2), [a])
    assert [v for _, v in hop] == [bytes(range(0, 4)), bytes(range(2, 6)), bytes(range(4, 8)), bytes(range(6, 10))]


def test_tfrecord_reader_reads_tensorflows_files_with_compression():
    plain = list(tf.python_io.tf_record_iterator(os.path.join(FIX, "examples.tfrecord")))
    out, produced, _ = read_all(tf.TFRecordReader(options=tf.python_io.TFRecordOptions("GZIP")),
                                [os.path.join(FIX, "examples.tfrecord.gz")])
    assert [v for _, v in out] == plain and produced == 4
    assert out[1][0] == (os.path.join(FIX, "examples.tfrecord.gz") + f":{16 + len(plain[0])}").encode()


def test_text_whole_file_and_identity_readers(tmp_path):
    p = str(tmp_path / "t.txt.gz")
    with gzip.open(p, "wb") as f:
        f.write(b"header\nl1\r\nl2")
    plain = str(tmp_path / "t.txt")
    with open(plain, "wb") as f:
        f.write(b"header\nl1\r\nl2")
    out, _, _ = read_all(tf.TextLineReader(skip_header_lines=1), [plain])
    assert out == [[f"{plain}:2".encode(), b"l1"], [f"{plain}:3".encode(), b"l2"]]
    whole, _, _ = read_all(tf.WholeFileReader(), [plain, p])
    assert whole[0] == [plain.encode(), b"header\nl1\r\nl2"] and whole[1][1] == open(p, "rb").read()
    ident, _, _ = read_all(tf.IdentityReader(), ["w1", "w2"])
    assert ident == [[b"w1", b"w1"], [b"w2", b"w2"]]


def test_read_up_to_stays_within_one_file_and_reset(tmp_path):
    paths = []
    for k in range(2):
        p = str(tmp_path / f"f{k}.txt")
        with open(p, "w") as f:
            f.write("\n".join(f"{k}-{i}" for i in range(5)))
        paths.append(p)
    batches, produced, completed = read_all(tf.TextLineReader(), paths, up_to=3)
    assert [list(v) for _, v in batches] == [[b"0-0", b"0-1", b"0-2"], [b"0-3", b"0-4"], [b"1-0", b"1-1", b"1-2"],
                                             [b"1-3", b"1-4"]]
    assert (produced, completed) == (10, 2)
    reader = tf.TextLineReader()
    q, fill, close = filenames(paths)
    key, _ = reader.read(q)
    with tf.Session() as sess:
        sess.run(fill)
        sess.run(close)
        sess.run(key)
        sess.run(reader.reset())
        assert sess.run(reader.num_records_produced()) == 0
        assert sess.run(key) == f"{paths[1]}:1".encode()   # reset dropped the rest of the first file


def test_bad_files_name_the_file_and_reading_goes_on(tmp_path):
    good = str(tmp_path / "good.tfrecord")
    with tf.python_io.TFRecordWriter(good) as w:
        w.write(b"ok")
    bad = str(tmp_path / "bad.tfrecord")
    data = bytearray(open(good, "rb").read())
    data[9] ^= 0xFF   # the length's checksum
    with open(bad, "wb") as f:
        f.write(bytes(data))
    missing = str(tmp_path / "missing.tfrecord")
    reader = tf.TFRecordReader()
    q, fill, close = filenames([bad, missing, good])
    _, value = reader.read(q)
    with tf.Session() as sess:
        sess.run(fill)
        sess.run(close)
        with pytest.raises(tf.errors.DataLossError, match="corrupted record at 0 in file .*bad.tfrecord"):
            sess.run(value)
        with pytest.raises(tf.errors.NotFoundError, match="missing.tfrecord"):
            sess.run(value)
        assert sess.run(value) == b"ok"
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(value)


def test_reader_waits_for_work_and_honours_the_timeout():
    q = tf.FIFOQueue(4, tf.string)
    _, value = tf.IdentityReader().read(q)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(value, options=tf.RunOptions(timeout_in_ms=100))
        sess.run(q.enqueue("late"))
        assert sess.run(value) == b"late"
    assert np.dtype(object)


def test_match_filenames_once_feeds_string_input_producer(tmp_path):
    for name in ("b.txt", "a.txt", "c.csv"):
        (tmp_path / name).write_text(name)
    files = tf.train.match_filenames_once(str(tmp_path / "*.txt"))
    key, value = tf.WholeFileReader().read(tf.train.string_input_producer(files, shuffle=False, num_epochs=1))
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert [f.decode() for f in sess.run(files)] == [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        assert [sess.run(value), sess.run(value)] == [b"a.txt", b"b.txt"]
        coord.request_stop()
        coord.join(threads)
