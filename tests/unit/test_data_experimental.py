"""tf.data.experimental and the Dataset methods they stand for (unbatch, enumerate, reduce):
values against plain-Python references of TF's semantics (element order, remainders, bucket
boundaries), sampling by its distribution, real CSV / TFRecord / sqlite files, and bad input."""
from __future__ import annotations

import collections
import gzip
import sqlite3

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")
E = tf.data.experimental


def drain(dataset, limit=10_000):
    nxt = dataset.make_one_shot_iterator().get_next()
    out = []
    with tf.Session() as sess:
        try:
            for _ in range(limit):
                out.append(sess.run(nxt))
        except tf.errors.OutOfRangeError:
            pass
    return out


def run(fetches):
    with tf.Session() as sess:
        return sess.run(fetches)


def as_lists(values):
    return [np.asarray(v).tolist() for v in values]


# -- Dataset methods ----------------------------------------------------------------------------------
def test_unbatch_enumerate_and_reduce():
    x = np.arange(12).reshape(2, 3, 2)
    ds = tf.data.Dataset.from_tensor_slices((x, x * 10)).unbatch()
    assert ds.output_shapes[0].as_list() == [2]
    assert [(a.tolist(), b.tolist()) for a, b in drain(ds)] == [(r.tolist(), (r * 10).tolist()) for r in
                                                                x.reshape(6, 2)]
    assert as_lists(drain(tf.data.Dataset.range(4).batch(3).apply(E.unbatch()))) == [0, 1, 2, 3]
    pairs = drain(tf.data.Dataset.range(3, 6).enumerate(start=5))
    assert [(int(i), int(v)) for i, v in pairs] == [(5, 3), (6, 4), (7, 5)]
    assert [(int(i), int(v)) for i, v in drain(tf.data.Dataset.range(2).apply(E.enumerate_dataset()))] == [(0, 0),
                                                                                                          (1, 1)]
    total, count = tf.data.Dataset.range(1, 6).reduce((np.int64(0), np.int64(0)), lambda s, x: (s[0] + x, s[1] + 1))
    assert run([total, count]) == [15, 5]
    # a state whose shape grows: the traced shape is relaxed, as TF re-traces
    grown = tf.data.Dataset.range(3).reduce(tf.zeros([0], tf.int64), lambda s, x: tf.concat([s, [x]], 0))
    assert run(grown).tolist() == [0, 1, 2]
    with pytest.raises(TypeError, match="must match the initial state"):
        tf.data.Dataset.range(3).reduce(np.int32(0), lambda s, x: x)
    with pytest.raises(ValueError, match="scalar"):
        tf.data.Dataset.range(3).unbatch()
    legacy = tf.data.Dataset.range(6).map_with_legacy_function(lambda x: x * 3).filter_with_legacy_function(
        lambda x: x % 2 > 0)
    assert as_lists(drain(legacy)) == [3, 9, 15]


def windows_of(n, size, shift, stride, drop):
    out, start = [], 0
    while start < n:
        w = list(range(start, n))[:(size - 1) * stride + 1:stride]
        if drop and len(w) < size:
            break
        out.append(w)
        start += shift
    return out


@pytest.mark.parametrize("size,shift,stride,drop", [(3, 2, 1, False), (3, 2, 1, True), (2, 4, 3, False),
                                                    (3, 1, 4, False), (3, None, 1, True), (4, 3, 2, True)])
def test_window_against_python(size, shift, stride, drop):
    ds = tf.data.Dataset.range(10).window(size, shift, stride, drop)
    expect = windows_of(10, size, shift or size, stride, drop)
    assert as_lists(drain(ds.flat_map(lambda w: w.batch(size)))) == expect
    assert run(E.cardinality(ds)) == len(expect)
    # a window of tuples is a tuple of datasets
    pairs = tf.data.Dataset.range(10).map(lambda x: (x, tf.as_string(x))).window(size, shift, stride, drop)
    out = drain(pairs.flat_map(lambda a, b: tf.data.Dataset.zip((a, b)).batch(size)))
    assert [(a.tolist(), b.tolist()) for a, b in out] == [(w, [str(v).encode() for v in w]) for w in expect]


def test_unbatch_of_ragged_first_dimensions_is_an_error_naming_the_op():
    ds = tf.data.Dataset.from_tensors((np.zeros((2, 1)), np.zeros(3))).unbatch()
    with pytest.raises(tf.errors.InvalidArgumentError, match="unbatch: component 1 has first dimension 3"):
        drain(ds)


# -- transformations ----------------------------------------------------------------------------------
def windows_reference(values, key, size, reduce):
    """TF's group_by_window: a window is reduced when full; the partial ones at the end, in key order."""
    out, groups = [], collections.defaultdict(list)
    for v in values:
        k = key(v)
        groups[k].append(v)
        if len(groups[k]) == size(k):
            out.extend(reduce(groups.pop(k)))
    for k in sorted(groups):
        out.extend(reduce(groups[k]))
    return out


def test_group_by_window_against_python():
    values = list(range(23))
    ds = tf.data.Dataset.range(23).apply(E.group_by_window(lambda x: x % 3, lambda k, w: w.batch(2), window_size=4))
    expect = windows_reference(values, lambda v: v % 3, lambda k: 4,
                               lambda w: [w[i:i + 2] for i in range(0, len(w), 2)])
    assert as_lists(drain(ds)) == expect
    # window_size_func: a key's window size; reduce_func sees the key
    ds = tf.data.Dataset.range(20).apply(E.group_by_window(
        lambda x: x % 2, lambda k, w: tf.data.Dataset.from_tensors(w.reduce(k * 100, lambda s, x: s + x)),
        window_size_func=lambda k: k + 2))
    expect = windows_reference(range(20), lambda v: v % 2, lambda k: k + 2, lambda w: [w[0] % 2 * 100 + sum(w)])
    assert as_lists(drain(ds)) == expect


def test_group_by_window_key_must_be_int64():
    with pytest.raises(ValueError, match="group_by_window: `key_func` must return a single tf.int64 scalar"):
        tf.data.Dataset.range(5).apply(E.group_by_window(lambda x: tf.cast(x, tf.int32), lambda k, w: w, 2))
    with pytest.raises(ValueError, match="exactly one of window_size"):
        E.group_by_window(lambda x: x, lambda k, w: w)


def test_group_by_reducer_in_order_of_first_appearance():
    values = [5, 2, 8, 3, 9, 4, 1]
    reducer = E.Reducer(lambda k: (k * 0, k), lambda s, x: (s[0] + x, s[1]), lambda total, key: (key, total))
    ds = tf.data.Dataset.from_tensor_slices(np.array(values, np.int64)).apply(
        E.group_by_reducer(lambda x: x % 3, reducer))
    sums = collections.OrderedDict()
    for v in values:
        sums[v % 3] = sums.get(v % 3, 0) + v
    assert [(int(k), int(t)) for k, t in drain(ds)] == list(sums.items())


def test_bucket_by_sequence_length_buckets_and_padding():
    lengths = [1, 3, 5, 2, 7, 4, 6, 8, 2]
    boundaries, sizes = [3, 5], [2, 2, 2]

    def source():
        return tf.data.Dataset.from_generator(lambda: ([n] * n for n in lengths), tf.int64, [None])

    def reference(pad_to):
        out, buckets = [], collections.defaultdict(list)
        for n in lengths:
            b = int(np.searchsorted(boundaries, n, side="right"))
            buckets[b].append(n)
            if len(buckets[b]) == sizes[b]:
                out.append((b, buckets.pop(b)))
        out += [(b, buckets[b]) for b in sorted(buckets)]
        return [[[n] * n + [0] * (pad_to(b, batch) - n) for n in batch] for b, batch in out]

    ds = source().apply(E.bucket_by_sequence_length(lambda x: tf.shape(x)[0], boundaries, sizes))
    assert as_lists(drain(ds)) == reference(lambda b, batch: max(batch))
    ds = source().apply(E.bucket_by_sequence_length(lambda x: tf.shape(x)[0], [3, 9], sizes,
                                                    pad_to_bucket_boundary=True))
    boundaries[:] = [3, 9]
    assert as_lists(drain(ds)) == reference(lambda b, batch: [3, 9][b] - 1)
    # (sequence, label) pairs: only the unknown dimension is padded, the scalar label batched
    pairs = tf.data.Dataset.from_generator(lambda: (([n] * n, n * 10) for n in lengths), (tf.int64, tf.int64),
                                           ([None], []))
    out = drain(pairs.apply(E.bucket_by_sequence_length(lambda x, y: tf.shape(x)[0], [3, 9], sizes,
                                                        pad_to_bucket_boundary=True)))
    assert [s.tolist() for s, _ in out] == reference(lambda b, batch: [3, 9][b] - 1)
    assert [y.tolist() for _, y in out] == [[row[0] * 10 for row in s.tolist()] for s, _ in out]
    with pytest.raises(ValueError, match="bucket_batch_sizes"):
        E.bucket_by_sequence_length(len, [3, 5], [2, 2])


def test_scan_take_while_unique_ignore_errors():
    ds = tf.data.Dataset.range(6).apply(E.scan(np.int64(1), lambda s, x: (s * 2, s + x)))
    assert as_lists(drain(ds)) == [2 ** i + i for i in range(6)]
    assert as_lists(drain(tf.data.Dataset.range(10).apply(E.take_while(lambda x: x * x < 20)))) == [0, 1, 2, 3, 4]
    ds = tf.data.Dataset.from_tensor_slices(["b", "a", "b", "c", "a"]).apply(E.unique())
    assert drain(ds) == [b"b", b"a", b"c"]
    with pytest.raises(TypeError, match="unique"):
        tf.data.Dataset.from_tensor_slices([1.0]).apply(E.unique())
    ds = tf.data.Dataset.from_tensor_slices([1., 0., 4.]).map(lambda x: tf.check_numerics(1. / x, "inf"))
    assert as_lists(drain(ds.apply(E.ignore_errors()))) == [1.0, 0.25]
    with pytest.raises(TypeError, match="new state must match"):
        tf.data.Dataset.range(3).apply(E.scan(np.float32(0), lambda s, x: (x, x)))


def test_dense_to_sparse_batch_holds_every_entry():
    ds = tf.data.Dataset.range(1, 6).map(lambda x: tf.fill([x], x)).apply(E.dense_to_sparse_batch(2, [5]))
    batches = drain(ds)
    assert len(batches) == 3
    for b, batch in enumerate(batches):
        dense = np.zeros(batch.dense_shape, np.int64)
        dense[tuple(batch.indices.T)] = batch.values
        rows = [n for n in range(1, 6)][2 * b:2 * b + 2]
        assert batch.dense_shape.tolist() == [len(rows), 5]
        assert dense.tolist() == [[n] * n + [0] * (5 - n) for n in rows]
    too_long = tf.data.Dataset.range(7, 8).map(lambda x: tf.fill([x], x)).apply(E.dense_to_sparse_batch(2, [5]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="dense_to_sparse_batch"):
        drain(too_long)


def test_map_and_batch_parallel_interleave_shuffle_and_repeat():
    assert as_lists(drain(tf.data.Dataset.range(7).apply(E.map_and_batch(lambda x: x * 2, 3)))) == [
        [0, 2, 4], [6, 8, 10], [12]]
    assert as_lists(drain(tf.data.Dataset.range(7).apply(E.map_and_batch(lambda x: x, 3, drop_remainder=True,
                                                                         num_parallel_calls=2)))) == [[0, 1, 2],
                                                                                                      [3, 4, 5]]
    ds = tf.data.Dataset.range(3).apply(E.parallel_interleave(lambda x: tf.data.Dataset.range(x * 10, x * 10 + 3), 2))
    assert as_lists(drain(ds)) == [0, 10, 1, 11, 2, 12, 20, 21, 22]
    out = as_lists(drain(tf.data.Dataset.range(10).apply(E.shuffle_and_repeat(5, count=3, seed=4))))
    assert len(out) == 30 and all(sorted(out[i:i + 10]) == list(range(10)) for i in (0, 10, 20))
    assert out[:10] != out[10:20] or out[10:20] != out[20:]


def test_cardinality_follows_tf_rules():
    d = tf.data.Dataset.range(10)
    cases = [(d, 10), (d.repeat(), E.INFINITE_CARDINALITY), (d.filter(lambda x: True), E.UNKNOWN_CARDINALITY),
             (d.batch(3), 4), (d.batch(3, drop_remainder=True), 3), (d.take(4).skip(1), 3), (d.shard(3, 1), 3),
             (d.shard(3, 0), 4), (tf.data.Dataset.zip((d, d.take(2))), 2), (d.concatenate(d), 20), (d.repeat(0), 0),
             (d.map(lambda x: x).prefetch(2).shuffle(3), 10), (d.repeat().take(7), 7), (d.repeat(3), 30),
             (d.interleave(lambda x: tf.data.Dataset.range(x)), E.UNKNOWN_CARDINALITY),
             (tf.data.Dataset.from_tensor_slices(np.zeros((6, 2))), 6), (tf.data.Dataset.from_tensors(1), 1),
             (d.filter(lambda x: True).apply(E.assert_cardinality(10)), 10)]
    assert run([E.cardinality(ds) for ds, _ in cases]) == [n for _, n in cases]
    assert tf.data.INFINITE_CARDINALITY == -1 and tf.data.UNKNOWN_CARDINALITY == -2


def test_assert_cardinality_fails_on_more_or_fewer():
    with pytest.raises(tf.errors.FailedPreconditionError, match="expected to contain 3 elements but contained at "
                                                                "least 4"):
        drain(tf.data.Dataset.range(5).apply(E.assert_cardinality(3)))
    with pytest.raises(tf.errors.FailedPreconditionError, match="but contained only 2"):
        drain(tf.data.Dataset.range(2).apply(E.assert_cardinality(3)))
    assert as_lists(drain(tf.data.Dataset.range(3).apply(E.assert_cardinality(3)))) == [0, 1, 2]


def test_pad_to_cardinality_and_from_list():
    ds = tf.data.Dataset.range(3).map(lambda x: {"a": x, "b": tf.fill([2], tf.cast(x, tf.float32))})
    out = drain(ds.apply(E.pad_to_cardinality(5)))
    assert [(int(e["a"]), e["b"].tolist(), bool(e["valid"])) for e in out] == [
        (0, [0., 0.], True), (1, [1., 1.], True), (2, [2., 2.], True), (0, [0., 0.], False), (0, [0., 0.], False)]
    with pytest.raises(tf.errors.FailedPreconditionError):
        drain(ds.apply(E.pad_to_cardinality(2)))
    assert [(int(a), b) for a, b in drain(E.from_list([(1, "a"), (2, "b")]))] == [(1, b"a"), (2, b"b")]
    assert [e["x"].tolist() for e in drain(E.from_list([{"x": [1, 2]}, {"x": [3, 4]}]))] == [[1, 2], [3, 4]]
    with pytest.raises(ValueError, match="empty"):
        E.from_list([])


# -- choosing and sampling ----------------------------------------------------------------------------
def test_choose_from_datasets_skips_exhausted_inputs():
    choices = [0, 1, 1, 1, 0, 0, 0, 1, 2]
    sources = [list(range(3)), list(range(10, 12)), [20]]
    ds = E.choose_from_datasets([tf.data.Dataset.from_tensor_slices(np.array(s, np.int64)) for s in sources],
                                tf.data.Dataset.from_tensor_slices(np.array(choices, np.int64)))
    its = [iter(s) for s in sources]
    expect = [v for v in (next(its[c], None) for c in choices) if v is not None]
    assert as_lists(drain(ds)) == expect
    stopping = E.choose_from_datasets([tf.data.Dataset.range(1), tf.data.Dataset.range(5, 9)],
                                      tf.data.Dataset.from_tensor_slices(np.array([1, 0, 0, 1], np.int64)),
                                      stop_on_empty_dataset=True)
    assert as_lists(drain(stopping)) == [5, 0]
    with pytest.raises(TypeError, match="scalar tf.int64"):
        E.choose_from_datasets([tf.data.Dataset.range(1)], tf.data.Dataset.range(2).map(lambda x: tf.cast(x, tf.int32)))
    bad = E.choose_from_datasets([tf.data.Dataset.range(1)], tf.data.Dataset.from_tensors(np.int64(3)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Selector index out of range"):
        drain(bad)


def test_sample_from_datasets_follows_the_weights():
    sources = [tf.data.Dataset.from_tensors(np.int64(i)).repeat() for i in range(3)]
    draws = as_lists(drain(E.sample_from_datasets(sources, [0.6, 0.0, 0.4], seed=7).take(4000)))
    counts = np.bincount(draws, minlength=3) / 4000
    assert counts[1] == 0 and abs(counts[0] - 0.6) < 0.04 and abs(counts[2] - 0.4) < 0.04
    again = as_lists(drain(E.sample_from_datasets(sources, [0.6, 0.0, 0.4], seed=7).take(4000)))
    assert again == draws   # a seeded sample is the same each time
    # finite inputs: every element comes out once, each input's in its own order
    finite = E.sample_from_datasets([tf.data.Dataset.range(5), tf.data.Dataset.range(100, 103)], seed=3)
    out = as_lists(drain(finite))
    assert sorted(out) == [0, 1, 2, 3, 4, 100, 101, 102] and [v for v in out if v < 100] == [0, 1, 2, 3, 4]
    # weights as a dataset: one weight vector per element
    per_step = tf.data.Dataset.from_tensor_slices(np.array([[1., 0.], [0., 1.]] * 10, np.float32))
    ds = E.sample_from_datasets([tf.data.Dataset.range(100), tf.data.Dataset.range(100, 200)], per_step, seed=1)
    assert as_lists(drain(ds)) == [v for i in range(10) for v in (i, 100 + i)]


def test_sampling_only_exhausted_inputs_still_honours_a_deadline():
    # the only live input has weight 0: the selector never picks it, as in TF; the step can still end
    ds = E.sample_from_datasets([tf.data.Dataset.range(0), tf.data.Dataset.range(5)], [1.0, 0.0], seed=2)
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.DeadlineExceededError):
        sess.run(nxt, options=tf.RunOptions(timeout_in_ms=300))


def test_rejection_resample_reaches_the_target_distribution():
    target = np.array([0.1, 0.2, 0.3, 0.4])
    data = tf.data.Dataset.range(8000).map(lambda x: x % 4)
    for initial in (None, [0.25] * 4):
        ds = data.apply(E.rejection_resample(lambda x: tf.cast(x, tf.int32), target, initial_dist=initial, seed=5))
        assert ds.output_types == (tf.int32, tf.int64)   # the class as class_func gives it
        out = drain(ds)
        assert all(int(c) == int(x) for c, x in out)
        freq = np.bincount([int(c) for c, _ in out], minlength=4) / len(out)
        assert np.abs(freq - target).max() < 0.03


def test_random_dataset_and_counter():
    a = as_lists(drain(E.RandomDataset(seed=3).take(500)))
    assert all(0 <= v < 2 ** 32 for v in a) and len(set(a)) > 490
    assert as_lists(drain(E.RandomDataset(seed=3).take(500))) == a
    assert abs(np.mean(a) / 2 ** 32 - 0.5) < 0.05
    c = E.Counter(2, 3, tf.int32).take(4)
    assert c.output_types == tf.int32 and as_lists(drain(c)) == [2, 5, 8, 11]
    assert as_lists(drain(E.Counter(5, -2).take(3))) == [5, 3, 1]


def test_copy_and_prefetch_to_a_cpu_device():
    ds = tf.data.Dataset.range(4).apply(E.prefetch_to_device("/cpu:0", 2)).apply(E.copy_to_device("/cpu:0"))
    assert as_lists(drain(ds)) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="prefetch_to_device: device '/gpu:0' is not a CPU"):
        E.prefetch_to_device("/gpu:0")


# -- running a dataset ------------------------------------------------------------------------------
def test_get_single_element():
    x, y = E.get_single_element(tf.data.Dataset.from_tensors((np.int32(4), "s")))
    assert run([x, y]) == [4, b"s"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="more than one element"):
        run(E.get_single_element(tf.data.Dataset.range(2)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="empty"):
        run(E.get_single_element(tf.data.Dataset.range(0)))


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_tfrecord_writer_writes_a_file_tfrecord_dataset_reads(tmp_path, compression):
    path = str(tmp_path / "out.tfrecord")
    records = [b"one", b"", b"three" * 50]
    op = E.TFRecordWriter(path, compression).write(tf.data.Dataset.from_tensor_slices(records))
    run(op)
    if compression:
        with gzip.open(path) as f:
            assert f.read(8)   # a real gzip stream
    assert drain(tf.data.TFRecordDataset(path, compression_type=compression)) == records
    with pytest.raises(TypeError, match="scalar string"):
        E.TFRecordWriter(path).write(tf.data.Dataset.range(2))


# -- CSV files ---------------------------------------------------------------------------------------
def write(path, text):
    path.write_text(text)
    return str(path)


def test_csv_dataset_types_defaults_header_and_select(tmp_path):
    path = write(tmp_path / "a.csv", 'a,b,c\n1,2.5,x\n3,,"y, z"\n4,5,\n')
    ds = E.CsvDataset(path, [tf.int32, tf.constant(9.0), tf.constant("zz")], header=True)
    assert ds.output_types == (tf.int32, tf.float32, tf.string)
    assert [tuple(np.asarray(v).item() for v in e) for e in drain(ds)] == [(1, 2.5, b"x"), (3, 9.0, b"y, z"),
                                                                             (4, 5.0, b"zz")]
    multi = write(tmp_path / "m.csv", '"head\ner",x\na,"multi\nline ""q"""\nb,plain\n')
    ds = E.CsvDataset(multi, [tf.string, tf.string], header=True)   # quoted line breaks, as TF reads them
    assert drain(ds) == [(b"a", b'multi\nline "q"'), (b"b", b"plain")]
    ds = E.CsvDataset([path, path], [tf.constant(0.0)], header=True, select_cols=[1])
    assert [float(e[0]) for e in drain(ds)] == [2.5, 0.0, 5.0] * 2
    tsv = write(tmp_path / "b.tsv", "1\tNA\n2\t7\n")
    ds = E.CsvDataset(tsv, [tf.int64, tf.constant([-1], tf.int64)], field_delim="\t", na_value="NA")
    assert [tuple(int(v) for v in e) for e in drain(ds)] == [(1, -1), (2, 7)]
    gz = tmp_path / "c.csv.gz"
    with gzip.open(gz, "wt") as f:
        f.write("5,6\n7,8\n")
    ds = E.CsvDataset(str(gz), [tf.int32, tf.int32], compression_type="GZIP")
    assert [tuple(int(v) for v in e) for e in drain(ds)] == [(5, 6), (7, 8)]
    ds = E.CsvDataset(str(gz), [tf.int32], compression_type="GZIP", exclude_cols=[0])
    assert [int(e[0]) for e in drain(ds)] == [6, 8]


def test_csv_dataset_bad_input_names_the_file_and_record(tmp_path):
    path = write(tmp_path / "bad.csv", "1,2\n3,x\n5\n,6\n")
    ds = E.CsvDataset(path, [tf.int32, tf.int32])
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert [int(v) for v in sess.run(nxt)] == [1, 2]
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"CSVDataset .*Field 1 in record 1 of .*bad.csv "
                                                                 r"is not a valid int32: x"):
            sess.run(nxt)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Expect 2 fields but have 1 in record 2"):
            sess.run(nxt)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Field 0 is required but missing in record 3"):
            sess.run(nxt)
    with pytest.raises(TypeError, match="CsvDataset: record_defaults\\[1\\] has DataType bool"):
        E.CsvDataset(path, [tf.int32, tf.bool])
    with pytest.raises(ValueError, match="select_cols"):
        E.CsvDataset(path, [tf.int32], select_cols=[1, 0])
    with pytest.raises(tf.errors.NotFoundError):
        drain(E.CsvDataset(str(tmp_path / "missing.csv"), [tf.int32]))


def test_make_csv_dataset_infers_names_types_and_labels(tmp_path):
    path = write(tmp_path / "t.csv", "a,b,c\n1,2.5,x\n3,,y\n4,5,\n6,7,w\n")
    ds = E.make_csv_dataset(path, batch_size=3, shuffle=False, num_epochs=1)
    assert ds.output_types == {"a": tf.int32, "b": tf.float32, "c": tf.string}
    out = drain(ds)
    assert [{k: np.asarray(v).tolist() for k, v in e.items()} for e in out] == [
        {"a": [1, 3, 4], "b": [2.5, 0.0, 5.0], "c": [b"x", b"y", b""]}, {"a": [6], "b": [7.0], "c": [b"w"]}]
    ds = E.make_csv_dataset(path, batch_size=2, label_name="a", select_columns=["a", "c"], shuffle=False,
                            num_epochs=1)
    feats, labels = zip(*drain(ds))
    assert [f["c"].tolist() for f in feats] == [[b"x", b"y"], [b"", b"w"]] and list(feats[0]) == ["c"]
    assert [v.tolist() for v in labels] == [[1, 3], [4, 6]]
    # forever (num_epochs=None), shuffled: full batches only, each pass every row
    rows = as_lists(drain(E.make_csv_dataset(path, batch_size=2, shuffle=True, shuffle_seed=1,
                                             column_defaults=[0, 0.0, ""]).map(lambda x: x["a"]), limit=6))
    assert all(len(r) == 2 for r in rows) and sorted(sum(rows, [])) == sorted([1, 3, 4, 6] * 3)
    with pytest.raises(ValueError, match="label_name"):
        E.make_csv_dataset(path, 2, label_name="nope")
    # TF's inference: the narrowest of int32, int64, float32, float64 (finite), string for every value
    wide = write(tmp_path / "w.csv", "i,l,f,d,s\n1,1,1,2.5,1\n2,3000000000,1.5,1e300,inf\n")
    ds = E.make_csv_dataset(wide, batch_size=2, num_epochs=1, shuffle=False)
    assert ds.output_types == {"i": tf.int32, "l": tf.int64, "f": tf.float32, "d": tf.float64, "s": tf.string}
    assert drain(ds)[0]["l"].tolist() == [1, 3000000000]


# -- TFRecord files of Examples -------------------------------------------------------------------
def example(i: int) -> bytes:
    feats = {"x": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
             "y": tf.train.Feature(float_list=tf.train.FloatList(value=[i / 2]))}
    return tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString()


def test_make_batched_features_dataset_and_parse_example_dataset(tmp_path):
    for part in range(2):
        with tf.python_io.TFRecordWriter(str(tmp_path / f"p{part}.tfrecord")) as w:
            for i in range(part * 5, part * 5 + 5):
                w.write(example(i))
    features = {"x": tf.FixedLenFeature([], tf.int64), "y": tf.FixedLenFeature([], tf.float32)}
    ds = E.make_batched_features_dataset(str(tmp_path / "p*.tfrecord"), 4, features, label_key="y", num_epochs=1,
                                         shuffle=False)
    out = drain(ds)
    assert [b[0]["x"].tolist() for b in out] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [b[1].tolist() for b in out][0] == [0.0, 0.5, 1.0, 1.5]
    shuffled = drain(E.make_batched_features_dataset(str(tmp_path / "p*.tfrecord"), 5, features, num_epochs=2,
                                                     shuffle_seed=3, drop_final_batch=True))
    assert sorted(v for b in shuffled for v in b["x"].tolist()) == sorted(list(range(10)) * 2)
    parsed = tf.data.TFRecordDataset(str(tmp_path / "p0.tfrecord")).batch(5).apply(E.parse_example_dataset(features))
    assert drain(parsed)[0]["y"].tolist() == [0.0, 0.5, 1.0, 1.5, 2.0]


# -- SQL ----------------------------------------------------------------------------------------------
def test_sql_dataset_reads_sqlite_rows(tmp_path):
    path = str(tmp_path / "db.sqlite")
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE t (name TEXT, n INTEGER, w REAL)")
    db.executemany("INSERT INTO t VALUES (?, ?, ?)", [("a", 1, 0.5), ("b", 2, 1.5), ("c", 3, 2.5)])
    db.commit()
    db.close()
    ds = E.SqlDataset("sqlite", path, "SELECT name, n, w FROM t WHERE n >= 2 ORDER BY n",
                      (tf.string, tf.int32, tf.float64))
    assert [(a, int(b), float(c)) for a, b, c in drain(ds)] == [(b"b", 2, 1.5), (b"c", 3, 2.5)]
    with pytest.raises(tf.errors.InvalidArgumentError, match="SqlDataset: column 0 holds 'a', which is not a int64"):
        drain(E.SqlDataset("sqlite", path, "SELECT name FROM t", (tf.int64,)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="SqlDataset: query"):
        drain(E.SqlDataset("sqlite", path, "SELECT nope FROM t", (tf.int64,)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="only supported database driver is 'sqlite'"):
        drain(E.SqlDataset("mysql", path, "SELECT n FROM t", (tf.int64,)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="readonly|read-only"):   # opened read-only
        drain(E.SqlDataset("sqlite", path, "DELETE FROM t RETURNING n", (tf.int64,)))


# -- options -----------------------------------------------------------------------------------------
def test_option_enums_and_autotune_options():
    o = tf.data.Options()
    o.experimental_distribute.auto_shard_policy = E.AutoShardPolicy.DATA
    o.experimental_external_state_policy = E.ExternalStatePolicy.FAIL
    o.autotune.enabled = False
    ds = tf.data.Dataset.range(3).with_options(o)
    got = ds.options()
    assert got.experimental_distribute.auto_shard_policy == E.AutoShardPolicy.DATA == 2
    assert got.experimental_external_state_policy == E.ExternalStatePolicy.FAIL and got.autotune.enabled is False
    assert [p.name for p in E.AutoShardPolicy] == ["OFF", "AUTO", "FILE", "DATA", "HINT"]
    assert tf.data.AUTOTUNE == E.AUTOTUNE == -1 and E.SHARD_HINT == -1
    assert tf.data.ThreadingOptions is E.ThreadingOptions
    with pytest.raises(TypeError):
        o.autotune.cpu_budget = "many"


# -- optionals and tables -------------------------------------------------------------------------------
def test_get_next_as_optional_and_optional_values():
    it = tf.data.Dataset.range(2).map(lambda x: (x, tf.cast(x, tf.float32) / 2)).make_initializable_iterator()
    opt = E.get_next_as_optional(it)
    has, value = opt.has_value(), opt.get_value()
    assert opt.value_structure[1].dtype == tf.float32
    with tf.Session() as sess:
        sess.run(it.initializer)
        assert [(bool(h), int(a), float(b)) for h, (a, b) in (sess.run([has, value]) for _ in range(2))] == [
            (True, 0, 0.0), (True, 1, 0.5)]
        assert not sess.run(has)   # the end: an empty Optional, not OutOfRangeError
        with pytest.raises(tf.errors.InvalidArgumentError, match="OptionalGetValue.*does not have a value"):
            sess.run(value)
    full = E.Optional.from_value({"a": tf.constant([1, 2])})
    empty = E.Optional.none_from_structure(tf.TensorSpec([], tf.int32))
    got = run([full.has_value(), full.get_value(), empty.has_value()])
    assert got[0] and got[1]["a"].tolist() == [1, 2] and not got[2]
    assert empty.value_structure.dtype == tf.int32


def test_tables_from_datasets():
    pairs = tf.data.Dataset.zip((tf.data.Dataset.range(100), tf.data.Dataset.range(100).map(
        lambda x: tf.as_string(x * 2))))
    table = E.table_from_dataset(pairs, default_value="n/a", key_dtype=tf.int64)
    words = tf.data.Dataset.from_tensor_slices(["the", "cat", "sat"])
    index = E.index_table_from_dataset(words)
    buckets = E.index_table_from_dataset(words, num_oov_buckets=2)
    first_two = E.index_table_from_dataset(words, vocab_size=2)
    empty = E.index_table_from_dataset(words.take(0))
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        assert sess.run(table.lookup(tf.constant([0, 7, 500], tf.int64))).tolist() == [b"0", b"14", b"n/a"]
        assert sess.run(index.lookup(tf.constant(["sat", "the", "dog"]))).tolist() == [2, 0, -1]
        ids = sess.run(buckets.lookup(tf.constant(["cat", "dog", "dog"])))
        assert ids[0] == 1 and 3 <= ids[1] < 5 and ids[1] == ids[2]
        assert sess.run(first_two.lookup(tf.constant(["cat", "sat"]))).tolist() == [1, -1]
        assert sess.run(empty.lookup(tf.constant(["the"]))).tolist() == [-1]
    with pytest.raises(ValueError, match="default_value"):
        E.table_from_dataset(tf.data.Dataset.zip((words, words)))
    with pytest.raises(TypeError, match="key_dtype"):
        E.index_table_from_dataset(words, key_dtype=tf.float32)
    E.index_table_from_dataset(words, vocab_size=5)   # fewer keys than vocab_size: its initializer fails
    with tf.Session() as sess, pytest.raises(tf.errors.FailedPreconditionError, match="expected to contain 5"):
        sess.run(tf.tables_initializer())
