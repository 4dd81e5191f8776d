"""tf.FIFOQueue, RandomShuffleQueue, PaddingFIFOQueue, PriorityQueue in a local session: order,
capacity, blocking with threads, closing, deadlines, padding, priorities, errors."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")


def _in_thread(fn):
    """Starts fn in a thread; returns (thread, box) where box gets 'value' or 'error'."""
    box: dict = {}

    def body():
        try:
            box["value"] = fn()
        except Exception as e:  # noqa: BLE001 - checked by the test
            box["error"] = e
    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t, box


def test_fifo_order_names_and_shapes():
    q = tf.FIFOQueue(10, [tf.int32, tf.string], shapes=[[2], []])
    enq = q.enqueue_many(([[1, 2], [3, 4], [5, 6]], ["a", "b", "c"]))
    one = q.dequeue()
    two = q.dequeue_many(2)
    assert q.name == "fifo_queue" and q.queue_ref.dtype == tf.resource
    assert enq.name == "fifo_queue_EnqueueMany" and enq.type == "QueueEnqueueManyV2"
    assert one[0].shape.as_list() == [2] and one[1].shape.as_list() == []
    assert two[0].shape.as_list() == [2, 2] and two[1].shape.as_list() == [2]
    with tf.Session() as s:
        s.run(enq)
        assert s.run(q.size()) == 3
        a, b = s.run(one)
        np.testing.assert_array_equal(a, [1, 2])
        assert b == b"a"
        a, b = s.run(two)
        np.testing.assert_array_equal(a, [[3, 4], [5, 6]])
        assert list(b) == [b"b", b"c"]
        assert s.run(q.size()) == 0 and not s.run(q.is_closed())


def test_single_component_and_named_queue():
    q = tf.FIFOQueue(5, tf.float32)
    assert isinstance(q.dequeue(), tf.Tensor)
    nq = tf.FIFOQueue(5, [tf.int32, tf.float32], shapes=[[], []], names=["i", "f"])
    enq = nq.enqueue({"i": 3, "f": 1.5})
    out = nq.dequeue()
    assert sorted(out) == ["f", "i"]
    with tf.Session() as s:
        s.run(enq)
        assert s.run(out) == {"i": 3, "f": 1.5}
    with pytest.raises(ValueError, match="must enqueue a dictionary"):
        nq.enqueue([1, 2.0])
    with pytest.raises(ValueError, match="do not match names"):
        nq.enqueue({"i": 1, "x": 2.0})
    with pytest.raises(ValueError, match="must have names"):
        q.enqueue({"a": 1.0})


def test_dequeue_waits_for_an_enqueue_from_another_thread():
    q = tf.FIFOQueue(3, tf.float32, shapes=[()])
    x = tf.placeholder(tf.float32, [])
    enq, deq = q.enqueue(x), q.dequeue()
    with tf.Session() as s:
        t, box = _in_thread(lambda: s.run(deq))
        time.sleep(0.2)
        assert t.is_alive()
        s.run(enq, {x: 7.0})
        t.join(5)
        assert box == {"value": 7.0}


def test_enqueue_blocks_while_full_and_enqueue_many_beyond_capacity_streams():
    q = tf.FIFOQueue(2, tf.int32, shapes=[()])
    enq_many = q.enqueue_many([list(range(10))])
    deq = q.dequeue()
    with tf.Session() as s:
        t, box = _in_thread(lambda: s.run(enq_many))
        time.sleep(0.2)
        assert t.is_alive() and s.run(q.size()) == 2
        got = [s.run(deq) for _ in range(10)]
        t.join(5)
        assert got == list(range(10)) and "error" not in box


def test_dequeue_many_larger_than_capacity_takes_elements_as_they_come():
    q = tf.FIFOQueue(3, tf.int32, shapes=[()])
    x = tf.placeholder(tf.int32, [])
    enq, deq = q.enqueue(x), q.dequeue_many(8)
    with tf.Session() as s:
        t, box = _in_thread(lambda: s.run(deq))
        for i in range(8):
            s.run(enq, {x: i})
        t.join(5)
        np.testing.assert_array_equal(box["value"], np.arange(8))


def test_shuffle_dequeue_many_beyond_what_capacity_leaves_after_min_after_dequeue():
    # capacity 10 with min_after_dequeue 6 leaves at most 4 to take at once: a dequeue_many(9)
    # must take them while the queue is full, or enqueues and the dequeue wait on each other.
    q = tf.RandomShuffleQueue(10, 6, tf.int32, shapes=[()], seed=1)
    x = tf.placeholder(tf.int32, [])
    enq, deq = q.enqueue(x), q.dequeue_many(9)
    with tf.Session() as s:
        t, box = _in_thread(lambda: s.run(deq))
        for i in range(15):
            s.run(enq, {x: i}, options=tf.RunOptions(timeout_in_ms=5000))
        t.join(5)
        assert len(box["value"]) == 9 and len(set(box["value"].tolist())) == 9
        assert s.run(q.size()) == 6


def test_dequeues_are_served_in_arrival_order_without_interleaving():
    q = tf.FIFOQueue(10, tf.int32, shapes=[()])
    x = tf.placeholder(tf.int32, [None])
    enq = q.enqueue_many([x])
    first, second = q.dequeue_many(3), q.dequeue_many(3)
    with tf.Session() as s:
        t1, b1 = _in_thread(lambda: s.run(first))
        time.sleep(0.1)
        t2, b2 = _in_thread(lambda: s.run(second))
        time.sleep(0.1)
        for i in range(6):
            s.run(enq, {x: [i]})
        t1.join(5)
        t2.join(5)
    np.testing.assert_array_equal(b1["value"], [0, 1, 2])
    np.testing.assert_array_equal(b2["value"], [3, 4, 5])


def test_closed_queue_refuses_enqueues_then_drains_then_out_of_range():
    q = tf.FIFOQueue(5, tf.float32, shapes=[()])
    enq, deq, close = q.enqueue(1.0), q.dequeue(), q.close()
    with tf.Session() as s:
        s.run(enq)
        s.run(close)
        assert s.run(q.is_closed())
        with pytest.raises(tf.errors.CancelledError, match="FIFOQueue 'fifo_queue' is closed"):
            s.run(enq)
        assert s.run(deq) == 1.0
        with pytest.raises(tf.errors.OutOfRangeError, match=r"closed and has insufficient elements \(requested 1, "
                                                             r"current size 0\)") as e:
            s.run(deq)
        assert "fifo_queue_Dequeue" in str(e.value)


def test_close_releases_a_blocked_dequeue_with_out_of_range():
    q = tf.FIFOQueue(5, tf.float32, shapes=[()])
    deq, close = q.dequeue_many(2), q.close()
    with tf.Session() as s:
        s.run(q.enqueue(1.0))
        t, box = _in_thread(lambda: s.run(deq))
        time.sleep(0.1)
        s.run(close)
        t.join(5)
        assert isinstance(box["error"], tf.errors.OutOfRangeError)
        assert s.run(q.size()) == 1   # the element the failed dequeue_many held is back


def test_pending_enqueues_continue_after_close_unless_cancelled():
    q = tf.FIFOQueue(1, tf.int32, shapes=[()])
    enq2, deq = q.enqueue(2), q.dequeue()
    with tf.Session() as s:
        s.run(q.enqueue(1))
        t, box = _in_thread(lambda: s.run(enq2))
        time.sleep(0.1)
        s.run(q.close())
        assert s.run(deq) == 1
        t.join(5)
        assert "error" not in box and s.run(deq) == 2
    q3 = tf.FIFOQueue(1, tf.int32, shapes=[()])
    blocked, cancel = q3.enqueue(5), q3.close(cancel_pending_enqueues=True)
    with tf.Session() as s:
        s.run(q3.enqueue(4))
        t, box = _in_thread(lambda: s.run(blocked))
        time.sleep(0.1)
        s.run(cancel)
        t.join(5)
        assert isinstance(box["error"], tf.errors.CancelledError)
        assert s.run(q3.dequeue()) == 4


def test_dequeue_up_to_returns_what_a_closed_queue_has_left():
    q = tf.FIFOQueue(10, tf.int32, shapes=[()])
    upto = q.dequeue_up_to(4)
    assert upto.shape.as_list() == [None]
    with tf.Session() as s:
        s.run(q.enqueue_many([[1, 2, 3, 4, 5, 6]]))
        s.run(q.close())
        np.testing.assert_array_equal(s.run(upto), [1, 2, 3, 4])
        np.testing.assert_array_equal(s.run(upto), [5, 6])
        with pytest.raises(tf.errors.OutOfRangeError):
            s.run(upto)


def test_deadlines_from_run_options_and_config_leave_the_queue_intact():
    q = tf.FIFOQueue(5, tf.float32, shapes=[()])
    deq = q.dequeue_many(3)
    with tf.Session() as s:
        s.run(q.enqueue_many([[1.0, 2.0]]))
        start = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError, match="Timed out waiting for notification"):
            s.run(deq, options=tf.RunOptions(timeout_in_ms=150))
        assert 0.1 < time.monotonic() - start < 2.0
        assert s.run(q.size()) == 2
    with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=100)) as s:
        with pytest.raises(tf.errors.DeadlineExceededError):
            s.run(q.dequeue())


def test_closing_the_session_releases_a_blocked_dequeue():
    q = tf.FIFOQueue(5, tf.float32, shapes=[()])
    deq = q.dequeue()
    s = tf.Session()
    t, box = _in_thread(lambda: s.run(deq))
    time.sleep(0.1)
    s.close()
    t.join(5)
    assert isinstance(box["error"], tf.errors.CancelledError)


def test_dequeue_many_needs_shapes_and_shape_mismatch_names_the_component():
    q = tf.FIFOQueue(5, tf.float32)
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match="DequeueMany and DequeueUpTo require the components"):
            s.run(q.dequeue_many(1))
    q2 = tf.FIFOQueue(5, tf.float32, shapes=[[2]])
    x = tf.placeholder(tf.float32)
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Shape mismatch in tuple component 0. Expected "
                                                                 r"\[2\], got \[3\]"):
            s.run(q2.enqueue(x), {x: [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError):
        q2.enqueue([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="fully defined"):
        tf.FIFOQueue(5, tf.float32, shapes=[[None]])


def test_shared_name_is_one_queue_and_must_agree():
    g = tf.get_default_graph()
    a = tf.FIFOQueue(5, tf.int32, shapes=[()], shared_name="shared_q", name="a")
    b = tf.FIFOQueue(5, tf.int32, shapes=[()], shared_name="shared_q", name="b")
    c = tf.FIFOQueue(7, tf.int32, shapes=[()], shared_name="shared_q", name="c")
    with tf.Session(graph=g) as s:
        s.run(a.enqueue(42))
        assert s.run(b.dequeue()) == 42
        with pytest.raises(tf.errors.InvalidArgumentError, match="Shared queue 'shared_q' has capacity 5"):
            s.run(c.size())


def test_random_shuffle_queue_keeps_min_after_dequeue_and_is_a_permutation():
    tf.set_random_seed(3)
    q = tf.RandomShuffleQueue(20, min_after_dequeue=5, dtypes=tf.int32, shapes=[()], seed=7)
    deq = q.dequeue()
    assert q.queue_ref.op.get_attr("min_after_dequeue") == 5
    with tf.Session() as s:
        s.run(q.enqueue_many([list(range(10))]))
        got = [s.run(deq) for _ in range(5)]
        with pytest.raises(tf.errors.DeadlineExceededError):   # 5 left = min_after_dequeue: waits
            s.run(deq, options=tf.RunOptions(timeout_in_ms=100))
        s.run(q.close())
        got += list(s.run(q.dequeue_many(5)))
    assert sorted(got) == list(range(10)) and got != list(range(10))
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        q = tf.RandomShuffleQueue(20, min_after_dequeue=5, dtypes=tf.int32, shapes=[()], seed=7)
        with tf.Session() as s:
            s.run(q.enqueue_many([list(range(10))]))
            s.run(q.close())
            again = list(s.run(q.dequeue_many(10)))
    assert again == got   # the same seeds shuffle the same way


def test_padding_fifo_queue_pads_batches_to_the_longest():
    q = tf.PaddingFIFOQueue(5, [tf.int32, tf.string], shapes=[[None], [None]])
    x, y = tf.placeholder(tf.int32, [None]), tf.placeholder(tf.string, [None])
    enq, batch = q.enqueue((x, y)), q.dequeue_many(2)
    assert batch[0].shape.as_list() == [2, None]
    with tf.Session() as s:
        s.run(enq, {x: [1], y: ["a"]})
        s.run(enq, {x: [2, 3, 4], y: ["b", "c"]})
        ints, strs = s.run(batch)
    np.testing.assert_array_equal(ints, [[1, 0, 0], [2, 3, 4]])
    assert strs.tolist() == [[b"a", b""], [b"b", b"c"]]
    with pytest.raises(ValueError, match="list of shapes"):
        tf.PaddingFIFOQueue(5, tf.int32, shapes=None)


def test_priority_queue_dequeues_smallest_priority_first():
    q = tf.PriorityQueue(10, [tf.string], shapes=[[]])
    assert q.dtypes == [tf.int64, tf.string]
    enq = q.enqueue_many(([5, 1, 3], ["five", "one", "three"]))
    deq = q.dequeue_many(3)
    with tf.Session() as s:
        s.run(enq)
        pri, names = s.run(deq)
    np.testing.assert_array_equal(pri, [1, 3, 5])
    assert list(names) == [b"one", b"three", b"five"]


def test_from_list_selects_a_queue_at_run_time():
    q1 = tf.FIFOQueue(5, tf.int32, shapes=[()])
    q2 = tf.FIFOQueue(5, tf.int32, shapes=[()])
    i = tf.placeholder(tf.int32, [])
    sel = tf.QueueBase.from_list(i, [q1, q2])
    with tf.Session() as s:
        s.run(sel.enqueue(10), {i: 1})
        s.run(sel.enqueue(20), {i: 0})
        assert s.run(q1.dequeue()) == 20 and s.run(q2.dequeue()) == 10
    with pytest.raises(TypeError, match="matching component dtypes"):
        tf.QueueBase.from_list(0, [q1, tf.FIFOQueue(5, tf.float32)])
