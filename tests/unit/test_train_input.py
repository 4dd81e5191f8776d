"""tf.train's queue-based input functions: producers, epochs, batching, shuffling, padding,
keep_input filters, with queue-runner threads in a local session."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")


def _drain(fetch, limit=1000):
    """Runs `fetch` with queue runners until OutOfRange; returns the values."""
    out = []
    with tf.Session() as s:
        s.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(s, coord)
        try:
            for _ in range(limit):
                out.append(s.run(fetch))
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    return out


def test_string_input_producer_gives_num_epochs_in_order_then_stops():
    q = tf.train.string_input_producer(["a.txt", "b.txt", "c.txt"], num_epochs=2, shuffle=False)
    assert q.name == "input_producer"
    assert [v.op.name for v in tf.local_variables()] == ["input_producer/limit_epochs/epochs"]
    got = _drain(q.dequeue())
    assert got == [b"a.txt", b"b.txt", b"c.txt"] * 2


def test_shuffled_epochs_are_permutations():
    q = tf.train.range_input_producer(10, num_epochs=3, shuffle=True, seed=5)
    got = _drain(q.dequeue())
    assert len(got) == 30
    epochs = [sorted(got[i:i + 10]) for i in range(0, 30, 10)]
    assert all(e == list(range(10)) for e in epochs) and got[:10] != list(range(10))


def test_empty_string_input_is_refused():
    with pytest.raises(ValueError, match="non-null input tensor"):
        tf.train.string_input_producer([])


def test_slice_input_producer_keeps_rows_together_and_batch_covers_every_example():
    xs = np.arange(10, dtype=np.float32).reshape(10, 1) * 10
    ys = np.arange(10, dtype=np.int32)
    x, y = tf.train.slice_input_producer([tf.constant(xs), tf.constant(ys)], num_epochs=1, shuffle=True, seed=1)
    bx, by = tf.train.batch([x, y], batch_size=4, allow_smaller_final_batch=True)
    assert bx.shape.as_list() == [None, 1] and by.shape.as_list() == [None]
    batches = _drain([bx, by])
    assert [len(b[1]) for b in batches] == [4, 4, 2]
    seen_y = np.concatenate([b[1] for b in batches])
    seen_x = np.concatenate([b[0] for b in batches])
    assert sorted(seen_y) == list(range(10))
    np.testing.assert_array_equal(seen_x[:, 0], seen_y * 10.0)   # each x with its own y


def test_batch_without_allow_smaller_final_batch_drops_the_remainder():
    data = tf.train.limit_epochs(tf.constant(np.arange(10, dtype=np.int64)), num_epochs=1)
    b = tf.train.batch([data], batch_size=3, enqueue_many=True, num_threads=2)
    assert b.shape.as_list() == [3] and b.name == "batch:0"
    got = _drain(b)
    assert len(got) == 3 and sorted(np.concatenate(got)) != list(range(10))
    assert len(set(np.concatenate(got))) == 9


def test_shuffle_batch_gives_every_example_once_in_random_order():
    data = tf.train.limit_epochs(tf.constant(np.arange(40, dtype=np.int32)), num_epochs=1)
    b = tf.train.shuffle_batch([data], batch_size=8, capacity=30, min_after_dequeue=10, enqueue_many=True, seed=2,
                               allow_smaller_final_batch=True)
    got = np.concatenate(_drain(b))
    assert sorted(got) == list(range(40)) and list(got) != list(range(40))
    with pytest.raises(ValueError, match="must be bigger than min_after_dequeue"):
        tf.train.shuffle_batch([data], 2, capacity=5, min_after_dequeue=5)


def test_batch_join_and_shuffle_batch_join_take_from_every_input():
    a = tf.train.limit_epochs(tf.constant([1, 2, 3]), num_epochs=1)
    c = tf.train.limit_epochs(tf.constant([10, 20, 30]), num_epochs=1)
    b = tf.train.batch_join([[a], [c]], batch_size=2, enqueue_many=True, allow_smaller_final_batch=True)
    assert sorted(np.concatenate(_drain(b))) == [1, 2, 3, 10, 20, 30]
    d = tf.train.limit_epochs(tf.constant([4, 5]), num_epochs=1)
    e = tf.train.limit_epochs(tf.constant([6, 7]), num_epochs=1)
    sb = tf.train.shuffle_batch_join([{"v": d}, {"v": e}], batch_size=2, capacity=10, min_after_dequeue=1,
                                     enqueue_many=True, allow_smaller_final_batch=True)
    assert isinstance(sb, dict)
    assert sorted(np.concatenate([r["v"] for r in _drain(sb)])) == [4, 5, 6, 7]


def test_maybe_batch_keeps_only_the_marked_examples():
    values = tf.train.limit_epochs(tf.constant(np.arange(12, dtype=np.int32)), num_epochs=1)
    b = tf.train.maybe_batch([values], tf.equal(values % 2, 0), batch_size=2, enqueue_many=True,
                             allow_smaller_final_batch=True)
    assert sorted(np.concatenate(_drain(b))) == [0, 2, 4, 6, 8, 10]
    with pytest.raises(ValueError, match="cannot be a vector"):
        tf.train.maybe_batch([tf.constant(1)], tf.constant([True]), batch_size=1)


def test_dynamic_pad_pads_variable_length_examples():
    n = tf.train.range_input_producer(4, num_epochs=1, shuffle=False).dequeue() + 1
    b = tf.train.batch([tf.range(n)], batch_size=2, dynamic_pad=True)
    assert b.shape.as_list() == [2, None]
    got = _drain(b)
    np.testing.assert_array_equal(got[0], [[0, 0], [0, 1]])
    np.testing.assert_array_equal(got[1], [[0, 1, 2, 0], [0, 1, 2, 3]])


def test_queues_report_how_full_they_are_under_tfs_summary_names():
    x = tf.constant([1.0, 2.0])
    tf.train.batch([x], 5, capacity=10)
    tf.train.shuffle_batch([x], 5, capacity=20, min_after_dequeue=10)
    tf.train.string_input_producer(["a"])
    summaries = tf.get_collection(tf.GraphKeys.SUMMARIES)
    assert [s.op.name for s in summaries] == ["batch/fraction_of_10_full", "shuffle_batch/fraction_over_10_of_10_full",
                                              "input_producer/fraction_of_32_full"]
    with tf.Session() as s:
        s.run(tf.get_default_graph().get_operation_by_name("batch/fifo_queue_enqueue"))   # one example in
        proto = tf.Summary()
        proto.ParseFromString(s.run(summaries[0]))
    assert proto.value[0].tag == "batch/fraction_of_10_full" and abs(proto.value[0].simple_value - 0.1) < 1e-7
