"""Input pipelines on a cluster: an iterator (or reader) placed on a task runs its pipeline
there, and bad input (damaged records, short files, not-an-image data) gives TF's error naming
the file or op while the server and the session stay usable."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

REMOTE = "/job:worker/task:1"
TASK1 = "/job:worker/replica:0/task:1/"


@pytest.fixture
def cluster(start_cluster):
    return start_cluster({"worker": 2})


def _traced(sess, fetch, feed=None):
    meta = tf.RunMetadata()
    out = sess.run(fetch, feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    devices = {n.node_name: d.device for d in meta.step_stats.dev_stats for n in d.node_stats}
    return out, devices


def test_iterator_on_a_task_runs_its_pipeline_there(cluster, tmp_path):
    text = tmp_path / "lines.txt"
    text.write_text("alpha\nbeta\ngamma\n")
    g = tf.Graph()
    with g.as_default():
        with tf.device(REMOTE):
            ds = tf.data.TextLineDataset(str(text)).map(tf.strings.upper, num_parallel_calls=2).prefetch(2)
            nxt = ds.make_one_shot_iterator().get_next(name="next_line")
            gen = tf.data.Dataset.from_generator(lambda: iter([1, 2]), tf.int64, tf.TensorShape([]))
            gen_next = gen.make_one_shot_iterator().get_next()
        with tf.Session(cluster.target("worker", 0), graph=g) as sess:
            first, devices = _traced(sess, nxt)
            assert first == b"ALPHA"
            assert any(name.startswith("next_line") and TASK1 in dev for name, dev in devices.items()), devices
            assert [sess.run(nxt), sess.run(nxt)] == [b"BETA", b"GAMMA"]
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(nxt)
            # A Python generator lives in the client's process: on task 1 there is none to run.
            with pytest.raises(tf.errors.FailedPreconditionError, match="lives in the process"):
                sess.run(gen_next)


def test_experimental_pipeline_on_a_task(cluster, tmp_path):
    # functions with several bodies (group_by_window's key, reduce and window size), a window
    # dataset as a function's argument and a CSV reader travel to the task in its graph
    csv = tmp_path / "rows.csv"
    csv.write_text("k,v\n" + "".join(f"{i % 3},{i}\n" for i in range(10)))
    E = tf.data.experimental
    g = tf.Graph()
    with g.as_default():
        with tf.device(REMOTE):
            rows = E.CsvDataset(str(csv), [tf.int64, tf.int64], header=True)
            grouped = rows.apply(E.group_by_window(lambda k, v: k, lambda key, w: w.map(lambda k, v: v).batch(4), 4))
            windows = tf.data.Dataset.range(5).window(2, 1).flat_map(lambda w: w.batch(2))
            nxt = grouped.make_one_shot_iterator().get_next(name="next_group")
            win = windows.make_one_shot_iterator().get_next()
            total = rows.reduce(np.int64(0), lambda s, row: s + row[1])
        with tf.Session(cluster.target("worker", 0), graph=g) as sess:
            first, devices = _traced(sess, nxt)
            assert first.tolist() == [0, 3, 6, 9]
            assert any(name.startswith("next_group") and TASK1 in dev for name, dev in devices.items()), devices
            assert [sess.run(nxt).tolist() for _ in range(2)] == [[1, 4, 7], [2, 5, 8]]
            assert [sess.run(win).tolist() for _ in range(4)] == [[0, 1], [1, 2], [2, 3], [3, 4]]
            assert sess.run(total) == 45


def test_reader_and_queue_on_a_task(cluster, tmp_path):
    data = tmp_path / "records.bin"
    data.write_bytes(bytes(range(12)))
    g = tf.Graph()
    with g.as_default():
        with tf.device(REMOTE):
            q = tf.FIFOQueue(4, tf.string)
            key, value = tf.FixedLengthRecordReader(4).read(q)
        fill = q.enqueue([str(data)])
        with tf.Session(cluster.target("worker", 0), graph=g) as sess:
            sess.run(fill)
            (k, v), devices = _traced(sess, [key, value])
            assert (k, v) == (f"{data}:0".encode(), bytes(range(4)))
            assert any("ReaderRead" in name and TASK1 in dev for name, dev in devices.items()), devices


def test_bad_input_on_a_task_names_the_file_and_the_server_stays_usable(cluster, tmp_path):
    good = str(tmp_path / "good.tfrecord")
    with tf.python_io.TFRecordWriter(good) as w:
        w.write(b"ok")
    data = bytearray(open(good, "rb").read())
    data[-2] ^= 0x10
    bad = str(tmp_path / "bad.tfrecord")
    open(bad, "wb").write(bytes(data))
    short = str(tmp_path / "short.bin")
    open(short, "wb").write(b"abc")
    g = tf.Graph()
    with g.as_default():
        with tf.device(REMOTE):
            records = tf.data.TFRecordDataset([bad, good]).make_one_shot_iterator().get_next()
            fixed = tf.data.FixedLengthRecordDataset([short], 4).make_one_shot_iterator().get_next()
            png = tf.placeholder(tf.string, [])
            decoded = tf.image.decode_png(png, name="decode_the_png")
            ok = tf.reduce_sum(tf.constant(np.arange(4)))
        with tf.Session(cluster.target("worker", 0), graph=g) as sess:
            with pytest.raises(tf.errors.DataLossError, match="bad.tfrecord"):
                sess.run(records)
            assert sess.run(records) == b"ok"
            with pytest.raises(tf.errors.InvalidArgumentError, match="short.bin"):
                sess.run(fixed)
            with pytest.raises(tf.errors.InvalidArgumentError, match="decode_the_png") as info:
                sess.run(decoded, {png: b"GIF89a not a png"})
            assert "PNG" in str(info.value)
            assert sess.run(ok) == 6
    assert cluster.procs[("worker", 1)].poll() is None   # the task is alive
