"""tf.data: sources, transformations, iterators and the pipeline's threads, against numpy and
TF's documented semantics (orders, shapes, errors)."""
from __future__ import annotations

import collections
import gzip
import os
import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.data.dataset_ops import _bounded_draws

pytestmark = pytest.mark.usefixtures("graph")


def drain(dataset_or_next, sess=None, feed=None, limit=10_000):
    nxt = dataset_or_next.make_one_shot_iterator().get_next() if isinstance(dataset_or_next, tf.data.Dataset) \
        else dataset_or_next
    own = sess is None
    sess = sess or tf.Session()
    out = []
    try:
        for _ in range(limit):
            out.append(sess.run(nxt, feed))
    except tf.errors.OutOfRangeError:
        pass
    finally:
        if own:
            sess.close()
    return out


def ints(values):
    return [int(v) for v in values]


# -- sources -----------------------------------------------------------------------------------------
def test_from_tensor_slices_nested_structures_and_static_shapes():
    ds = tf.data.Dataset.from_tensor_slices({"x": np.arange(6).reshape(3, 2), "y": (["a", "b", "c"], [1., 2., 3.])})
    assert ds.output_types == {"x": tf.int64, "y": (tf.string, tf.float32)}
    assert ds.output_shapes["x"].as_list() == [2] and ds.output_classes["x"] is tf.Tensor
    out = drain(ds)
    assert len(out) == 3 and out[2]["y"][0] == b"c" and out[1]["x"].tolist() == [2, 3]
    assert drain(tf.data.Dataset.from_tensors([1, 2, 3]))[0].tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="not compatible"):
        tf.data.Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))


def test_range_zip_concatenate_take_skip_shard():
    assert ints(drain(tf.data.Dataset.range(5))) == [0, 1, 2, 3, 4]
    assert ints(drain(tf.data.Dataset.range(2, 11, 3))) == [2, 5, 8]
    z = tf.data.Dataset.zip((tf.data.Dataset.range(3), tf.data.Dataset.range(10, 20)))
    assert [tuple(ints(e)) for e in drain(z)] == [(0, 10), (1, 11), (2, 12)]
    c = tf.data.Dataset.range(2).concatenate(tf.data.Dataset.range(5, 7))
    assert ints(drain(c)) == [0, 1, 5, 6]
    r = tf.data.Dataset.range(10)
    assert ints(drain(r.skip(3).take(4))) == [3, 4, 5, 6]
    assert ints(drain(r.shard(3, 1))) == [1, 4, 7]
    assert ints(drain(r.take(-1))) == list(range(10)) and drain(r.skip(-1)) == []


def test_from_generator_types_shapes_and_bad_elements():
    def gen(n):
        for i in range(n):
            yield i, [float(i)] * i
    ds = tf.data.Dataset.from_generator(gen, (tf.int32, tf.float32), (tf.TensorShape([]), tf.TensorShape([None])),
                                        args=(3,))
    out = drain(ds)
    assert [int(a) for a, _ in out] == [0, 1, 2] and out[2][1].tolist() == [2.0, 2.0]
    bad = tf.data.Dataset.from_generator(lambda: iter([1, "x", 3]), tf.int32, tf.TensorShape([]))
    nxt = bad.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(nxt) == 1
        with pytest.raises(tf.errors.InvalidArgumentError, match="could not be converted"):
            sess.run(nxt)
        assert sess.run(nxt) == 3   # the pipeline goes on after a bad element


# -- transformations ---------------------------------------------------------------------------------
def test_map_filter_flat_map_and_captures():
    k = tf.constant(10, tf.int64)
    ds = tf.data.Dataset.range(6).map(lambda x: (x, x * k)).filter(lambda a, b: tf.equal(a % 2, 0))
    assert [tuple(ints(e)) for e in drain(ds)] == [(0, 0), (2, 20), (4, 40)]
    fm = tf.data.Dataset.range(3).flat_map(lambda x: tf.data.Dataset.from_tensors(x).repeat(x))
    assert ints(drain(fm)) == [1, 2, 2]
    d = tf.data.Dataset.from_tensor_slices({"a": [1, 2]}).map(lambda e: {"a": e["a"], "sq": e["a"] * e["a"]})
    assert [(int(e["a"]), int(e["sq"])) for e in drain(d)] == [(1, 1), (2, 4)]


def test_interleave_follows_tensorflows_cycle():
    ds = tf.data.Dataset.range(1, 6).interleave(lambda x: tf.data.Dataset.from_tensors(x).repeat(6),
                                                cycle_length=2, block_length=4)
    want = [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5]
    assert ints(drain(ds)) == want
    par = tf.data.Dataset.range(1, 6).interleave(lambda x: tf.data.Dataset.from_tensors(x).repeat(6),
                                                 cycle_length=2, block_length=4, num_parallel_calls=2)
    assert ints(drain(par)) == want


def test_parallel_map_keeps_order_and_runs_ahead():
    pulled = []

    def gen():
        for i in range(100):
            pulled.append(i)
            yield i
    ds = tf.data.Dataset.from_generator(gen, tf.int64, tf.TensorShape([])).map(lambda x: x * 3,
                                                                               num_parallel_calls=4)
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(nxt) == 0
        assert len(pulled) >= 4   # four calls in flight, not one
        assert [int(sess.run(nxt)) for _ in range(20)] == [3 * i for i in range(1, 21)]


def test_parallel_map_calls_really_run_at_once(tmp_path):
    """Two reads of named pipes: the second pipe gets a reader only if the second call starts
    while the first still waits for its writer."""
    fifos = [str(tmp_path / f"fifo{i}") for i in range(2)]
    for f in fifos:
        os.mkfifo(f)
    nxt = tf.data.Dataset.from_tensor_slices(fifos).map(tf.read_file, num_parallel_calls=2) \
        .make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        got = []
        consumer = threading.Thread(target=lambda: got.append(sess.run(nxt)))
        consumer.start()
        deadline, fd = time.time() + 10, None
        while fd is None and time.time() < deadline:
            try:
                fd = os.open(fifos[1], os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                time.sleep(0.01)
        if fd is not None:
            os.write(fd, b"second")
            os.close(fd)
        with open(fifos[0], "wb") as f:   # also unblocks a sequential map, so the test ends either way
            f.write(b"first")
        consumer.join(10)
        assert fd is not None, "the second call never started while the first was waiting"
        assert got == [b"first"] and sess.run(nxt) == b"second"


def test_prefetch_fills_its_buffer_in_a_thread_while_the_consumer_waits():
    pulled = []

    def gen():
        for i in range(50):
            pulled.append(threading.current_thread().name)
            yield i
    ds = tf.data.Dataset.from_generator(gen, tf.int64, tf.TensorShape([])).prefetch(10)
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(nxt) == 0
        deadline = time.time() + 5
        while len(pulled) < 11 and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)   # (time for a 12th pull, were the thread to pull before it has room)
        assert len(pulled) == 11   # 1 consumed + 10 buffered, no more (TF's prefetch waits for room first)
        assert threading.current_thread().name not in pulled


def test_batch_padded_batch_and_drop_remainder():
    ds = tf.data.Dataset.range(7).map(lambda x: (x, tf.fill([2], x))).batch(3)
    assert ds.output_shapes[1].as_list() == [None, 2]
    out = drain(ds)
    assert [ints(b[0]) for b in out] == [[0, 1, 2], [3, 4, 5], [6]] and out[1][1].tolist() == [[3, 3], [4, 4], [5, 5]]
    dropped = tf.data.Dataset.range(7).batch(3, drop_remainder=True)
    assert dropped.output_shapes.as_list() == [3] and len(drain(dropped)) == 2
    pb = tf.data.Dataset.range(1, 5).map(lambda x: tf.fill([x], x)).padded_batch(2, padded_shapes=[None],
                                                                                 padding_values=tf.constant(-1,
                                                                                                            tf.int64))
    out = drain(pb)
    assert out[0].tolist() == [[1, -1], [2, 2]] and out[1].tolist() == [[3, 3, 3, -1], [4, 4, 4, 4]]
    strings = drain(tf.data.Dataset.from_tensor_slices(["a", "bb", "c"]).batch(2))
    assert [list(s) for s in strings] == [[b"a", b"bb"], [b"c"]]
    mixed = tf.data.Dataset.range(1, 4).map(lambda x: tf.fill([x], x)).batch(2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot batch tensors with different shapes"):
        drain(mixed)


def test_shuffle_is_a_permutation_seeded_and_reshuffled():
    def orders(seed, reshuffle=True, graph_seed=None):
        g = tf.Graph()
        with g.as_default():
            if graph_seed is not None:
                tf.set_random_seed(graph_seed)
            ds = tf.data.Dataset.range(20).shuffle(20, seed=seed, reshuffle_each_iteration=reshuffle).repeat(2)
            out = ints(drain(ds))
        return out[:20], out[20:]
    a1, a2 = orders(3)
    assert sorted(a1) == list(range(20)) and sorted(a2) == list(range(20)) and a1 != list(range(20))
    assert a1 != a2 and orders(3) == (a1, a2) and orders(4)[0] != a1
    b1, b2 = orders(3, reshuffle=False)
    assert b1 == b2
    assert orders(None, graph_seed=5) == orders(None, graph_seed=5)
    # with a buffer of 5 the element at position p was read by then: it is at most p + 4
    first = ints(drain(tf.data.Dataset.range(100).shuffle(5, seed=1)))
    assert sorted(first) == list(range(100)) and all(v <= p + 4 for p, v in enumerate(first))


def test_a_seeded_shuffle_restarts_alike_at_every_initialization_whatever_other_passes_read():
    # TF's ShuffleDataset: each initialization makes the dataset anew (its seed generator seeded
    # alike), each pass takes its seed once at its start; so no order depends on how far an
    # earlier pass read, nor on other iterators of the same dataset read meanwhile, in this
    # thread or concurrently (the passes once drew from one generator the session kept)
    with tf.Graph().as_default():
        ds = tf.data.Dataset.range(50).shuffle(50, seed=3).repeat(2)
        its = [tf.data.make_initializable_iterator(ds) for _ in range(3)]
        nexts = [it.get_next() for it in its]
        with tf.Session() as sess:
            sess.run(its[0].initializer)
            want = [int(sess.run(nexts[0])) for _ in range(100)]
            assert sorted(want[:50]) == sorted(want[50:]) == list(range(50)) and want[:50] != want[50:]
            for read_first in (3, 70):
                sess.run(its[0].initializer)
                for _ in range(read_first):
                    sess.run(nexts[0])
                sess.run([it.initializer for it in its])
                got: list = [[], [], []]
                for _ in range(50):   # two iterators read in turn, then all three at once
                    for k in (0, 1):
                        got[k].append(int(sess.run(nexts[k])))

                def read(k):
                    got[k].extend(int(sess.run(nexts[k])) for _ in range(100 - len(got[k])))
                threads = [threading.Thread(target=read, args=(k,)) for k in (1, 2)]
                for t in threads:
                    t.start()
                read(0)
                for t in threads:
                    t.join()
                assert got == [want, want, want], read_first


def test_stages_over_tensor_slices_give_the_elements_and_batches_of_the_general_pipeline():
    # from_tensor_slices and the stages that only move elements work on row numbers and gather each
    # batch at once; an identity map in front forces the element-by-element pipeline: same values
    x = np.arange(46 * 3, dtype=np.float32).reshape(46, 3)
    names = np.array([b"r%d" % i for i in range(46)], dtype=object)

    def pipelines(tail):
        rows = tf.data.Dataset.from_tensor_slices((x, {"name": names, "i": np.arange(46)}))
        return tail(rows), tail(rows.map(lambda a, b: (a, b)))

    tails = [lambda d: d.shuffle(10, seed=7).repeat(2).batch(8),
             lambda d: d.repeat(3).shuffle(50, seed=1).skip(5).take(100).batch(16, drop_remainder=True),
             lambda d: d.shard(3, 1).shuffle(4, seed=2, reshuffle_each_iteration=False).repeat(2).batch(5),
             lambda d: d.shuffle(100, seed=3).take(4).repeat(3).batch(3),    # shuffle passes cut short by take
             lambda d: d.shuffle(46, seed=4).repeat(2)]                       # unbatched rows
    for tail in tails:
        fast, general = (drain(d) for d in pipelines(tail))
        assert len(fast) == len(general) > 0
        for (fx, fd), (gx, gd) in zip(fast, general):
            np.testing.assert_array_equal(fx, gx)
            assert fx.dtype == gx.dtype == np.float32 and fd["i"].dtype == gd["i"].dtype == np.int64
            for key in ("name", "i"):
                assert np.asarray(fd[key]).tolist() == np.asarray(gd[key]).tolist()
    firsts = drain(tf.data.Dataset.from_tensor_slices(x).shuffle(46, seed=5).repeat(2).batch(46))
    assert sorted(firsts[0][:, 0].tolist()) == x[:, 0].tolist() and firsts[0].tolist() != firsts[1].tolist()
    assert [len(b) for b in drain(tf.data.Dataset.from_tensor_slices(x).batch(20))] == [20, 20, 6]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Batch size must be greater than zero"):
        drain(tf.data.Dataset.from_tensor_slices(x).batch(tf.constant(0, tf.int64)))


def test_shuffle_draws_the_numbers_of_one_numpy_call_per_draw():
    # shuffle takes its bounded draws from numpy an array at a time; the values, and the generator
    # after a pass that stopped midway, are those of one rng.integers(bound) per draw
    highs = [np.full(5, 9), np.arange(6, 0, -1)]
    fast, slow = np.random.default_rng(11), np.random.default_rng(11)
    assert list(_bounded_draws(fast, iter(highs))) == [int(slow.integers(h)) for a in highs for h in a]
    assert fast.integers(1 << 40) == slow.integers(1 << 40)
    draws = _bounded_draws(fast, iter(highs))
    taken = [next(draws) for _ in range(7)]
    draws.close()
    assert taken == [int(slow.integers(h)) for h in [9] * 5 + [6, 5]]
    assert fast.integers(1 << 40) == slow.integers(1 << 40)


def test_repeat_and_cache_replay_the_first_pass():
    pulled = []

    def gen():
        for i in range(3):
            pulled.append(i)
            yield i
    ds = tf.data.Dataset.from_generator(gen, tf.int64, tf.TensorShape([])).cache().repeat(3)
    assert ints(drain(ds)) == [0, 1, 2] * 3 and pulled == [0, 1, 2]
    assert drain(tf.data.Dataset.range(0).repeat()) == []


def test_cache_to_a_file_is_read_by_later_sessions(tmp_path):
    prefix = str(tmp_path / "cache")
    calls = []

    def gen():
        calls.append(1)
        yield from [(1, "a"), (2, "bc")]
    ds = tf.data.Dataset.from_generator(gen, (tf.int64, tf.string), (tf.TensorShape([]), tf.TensorShape([])))
    cached = ds.map(lambda x, s: (tf.fill([x], x), s)).cache(prefix).repeat(2)
    first = drain(cached)
    assert len(calls) == 1 and os.path.exists(prefix + ".tw-cache")
    second = drain(cached)
    assert len(calls) == 1
    for a, b in zip(first, second):
        assert a[0].tolist() == b[0].tolist() and a[1] == b[1]
    assert [x[1] for x in second] == [b"a", b"bc", b"a", b"bc"]


def test_map_errors_belong_to_their_element():
    ds = tf.data.Dataset.from_tensor_slices(["1", "x", "3"]).map(lambda s: tf.string_to_number(s))
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(nxt) == 1.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="could not correctly convert string: x"):
            sess.run(nxt)
        assert sess.run(nxt) == 3.0
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(nxt)


def test_sparse_components_from_parse_example_batch():
    ex = [tf.train.Example(features=tf.train.Features(feature={
        "v": tf.train.Feature(int64_list=tf.train.Int64List(value=list(range(i))))})).SerializeToString()
        for i in range(1, 4)]
    ds = tf.data.Dataset.from_tensor_slices(ex).map(lambda s: tf.parse_single_example(
        s, {"v": tf.VarLenFeature(tf.int64)})["v"]).batch(3)
    assert ds.output_classes is tf.SparseTensor
    sp = drain(ds)[0]
    assert sp.indices.tolist() == [[0, 0], [1, 0], [1, 1], [2, 0], [2, 1], [2, 2]]
    assert sp.values.tolist() == [0, 0, 1, 0, 1, 2] and sp.dense_shape.tolist() == [3, 3]


# -- files ---------------------------------------------------------------------------------------------
def test_file_datasets_and_list_files(tmp_path):
    paths = []
    for k in range(2):
        p = str(tmp_path / f"part{k}.tfrecord")
        with tf.python_io.TFRecordWriter(p) as w:
            for i in range(3):
                w.write(f"{k}-{i}".encode())
        paths.append(p)
    assert [r.decode() for r in drain(tf.data.TFRecordDataset(paths))] == ["0-0", "0-1", "0-2", "1-0", "1-1", "1-2"]
    inter = drain(tf.data.TFRecordDataset(paths, num_parallel_reads=2))
    assert [r.decode() for r in inter] == ["0-0", "1-0", "0-1", "1-1", "0-2", "1-2"]
    gz = str(tmp_path / "lines.txt.gz")
    with gzip.open(gz, "wb") as f:
        f.write(b"alpha\r\nbeta\ngamma")
    assert drain(tf.data.TextLineDataset(gz, compression_type="GZIP")) == [b"alpha", b"beta", b"gamma"]
    fixed = str(tmp_path / "fixed.bin")
    with open(fixed, "wb") as f:
        f.write(b"HH" + bytes(range(12)) + b"F")
    recs = drain(tf.data.FixedLengthRecordDataset([fixed], 4, header_bytes=2, footer_bytes=1))
    assert recs == [bytes(range(0, 4)), bytes(range(4, 8)), bytes(range(8, 12))]
    files = drain(tf.data.Dataset.list_files(str(tmp_path / "part*.tfrecord"), shuffle=False))
    assert [f.decode() for f in files] == paths
    with pytest.raises(tf.errors.InvalidArgumentError, match="No files matched pattern"):
        drain(tf.data.Dataset.list_files(str(tmp_path / "none*")))


def test_bad_files_name_the_file_and_the_pipeline_goes_on(tmp_path):
    good = str(tmp_path / "good.tfrecord")
    with tf.python_io.TFRecordWriter(good) as w:
        w.write(b"fine")
    bad = str(tmp_path / "bad.tfrecord")
    data = bytearray(open(good, "rb").read())
    data[-1] ^= 0xFF
    with open(bad, "wb") as f:
        f.write(bytes(data))
    nxt = tf.data.TFRecordDataset([bad, str(tmp_path / "missing.tfrecord"), good]).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DataLossError, match="bad.tfrecord"):
            sess.run(nxt)
        with pytest.raises(tf.errors.NotFoundError, match="missing.tfrecord"):
            sess.run(nxt)
        assert sess.run(nxt) == b"fine"
    short = str(tmp_path / "short.bin")
    with open(short, "wb") as f:
        f.write(b"abc")
    with pytest.raises(tf.errors.InvalidArgumentError, match="short.bin.*not an exact multiple"):
        drain(tf.data.FixedLengthRecordDataset([short], 4))


# -- iterators -----------------------------------------------------------------------------------------
def test_initializable_iterator_with_placeholders_and_reinitialization():
    n = tf.placeholder(tf.int64, [])
    it = tf.data.Dataset.range(n).make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="not been initialized"):
            sess.run(nxt)
        sess.run(it.initializer, {n: 2})
        assert ints([sess.run(nxt), sess.run(nxt)]) == [0, 1]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(nxt)
        sess.run(it.initializer, {n: 1})
        assert sess.run(nxt) == 0
    with pytest.raises(ValueError, match="placeholder"):
        tf.data.Dataset.range(n).make_one_shot_iterator()


def test_reinitializable_and_feedable_iterators():
    train = tf.data.Dataset.range(100).map(lambda x: x * 2)
    val = tf.data.Dataset.range(3).map(lambda x: -x)
    it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    nxt = it.get_next()
    to_train, to_val = it.make_initializer(train), it.make_initializer(val)
    with pytest.raises(TypeError, match="Expected output types"):
        it.make_initializer(tf.data.Dataset.from_tensors(1.0))
    handle = tf.placeholder(tf.string, [])
    feedable = tf.data.Iterator.from_string_handle(handle, train.output_types, train.output_shapes)
    fnext = feedable.get_next()
    a = train.make_one_shot_iterator()
    b = val.make_initializable_iterator()
    with tf.Session() as sess:
        sess.run(to_train)
        assert ints([sess.run(nxt) for _ in range(3)]) == [0, 2, 4]
        sess.run(to_val)
        assert ints([sess.run(nxt) for _ in range(3)]) == [0, -1, -2]
        ha, hb = sess.run([a.string_handle(), b.string_handle()])
        sess.run(b.initializer)
        assert ints([sess.run(fnext, {handle: ha}), sess.run(fnext, {handle: hb}), sess.run(fnext, {handle: ha})]) \
            == [0, 0, 2]
        with pytest.raises(tf.errors.InvalidArgumentError, match="Not an iterator string handle"):
            sess.run(fnext, {handle: b"nonsense"})


def test_get_next_blocking_honours_the_run_timeout():
    def slow():
        yield 1
        time.sleep(1.5)
        yield 2
    nxt = tf.data.Dataset.from_generator(slow, tf.int64, tf.TensorShape([])).prefetch(1) \
        .make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(nxt) == 1
        start = time.time()
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(nxt, options=tf.RunOptions(timeout_in_ms=200))
        assert time.time() - start < 1.2
        assert sess.run(nxt) == 2   # the pipeline was not harmed


def test_closing_the_session_stops_pipeline_threads():
    before = {t for t in threading.enumerate() if t.name.startswith("tw-data")}
    nxt = tf.data.Dataset.range(10 ** 9).map(lambda x: x + 1, num_parallel_calls=2).prefetch(4) \
        .make_one_shot_iterator().get_next()
    sess = tf.Session()
    sess.run(nxt)
    sess.close()
    deadline = time.time() + 5
    while time.time() < deadline and {t for t in threading.enumerate() if t.name.startswith("tw-data")} - before:
        time.sleep(0.05)
    assert not {t for t in threading.enumerate() if t.name.startswith("tw-data") and t.is_alive()} - before


def test_namespace_helpers():
    ds = tf.data.Dataset.range(2)
    assert tf.data.get_output_types(ds) == tf.int64 and tf.data.get_output_shapes(ds).as_list() == []
    assert tf.data.experimental.AUTOTUNE == -1
    assert ints(drain(tf.data.make_one_shot_iterator(ds).get_next())) == [0, 1]
    with pytest.raises(RuntimeError, match="eager"):
        iter(ds)
    assert isinstance(collections.OrderedDict, type) and os.sep
