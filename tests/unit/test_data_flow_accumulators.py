"""tf.ConditionalAccumulator and tf.SparseConditionalAccumulator against TensorFlow's recorded
values (fixtures/record_accumulators.py), and their blocking takes."""
from __future__ import annotations

import json
import os
import threading
import time

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")
TF = json.load(open(os.path.join(os.path.dirname(__file__), "fixtures", "accumulators.json")))


def test_dense_mean_sum_stale_drop_and_set_global_step_match_tensorflow():
    want = TF["dense"]
    mean = tf.ConditionalAccumulator(tf.float32, shape=[3])
    total = tf.ConditionalAccumulator(tf.float32, shape=[3], reduction_type="SUM")
    assert mean.accumulator_ref.dtype == tf.resource and mean.name == "conditional_accumulator"
    with tf.Session() as s:
        for acc in (mean, total):
            s.run(acc.apply_grad([1.0, 2.0, 3.0], local_step=0))
            s.run(acc.apply_grad([0.5, -1.0, 4.0], local_step=0))
        assert s.run(mean.num_accumulated()) == 2
        got = s.run(mean.take_grad(2))
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, want["mean"])
        np.testing.assert_array_equal(s.run(total.take_grad(2)), want["sum"])
        s.run(mean.apply_grad([9.0, 9.0, 9.0], local_step=0))
        assert s.run(mean.num_accumulated()) == want["after_stale"]
        s.run(mean.apply_grad([3.0, 3.0, 3.0], local_step=1))
        s.run(mean.set_global_step(5))
        s.run(mean.apply_grad([7.0, 7.0, 7.0], local_step=4))
        s.run(mean.apply_grad([1.0, 1.0, 1.0], local_step=5))
        assert s.run(mean.num_accumulated()) == want["after_set_global_step"]
        np.testing.assert_array_equal(s.run(mean.take_grad(2)), want["mean_after_set_global_step"])


def test_sparse_mean_is_per_index_and_sum_matches_tensorflow():
    want = TF["sparse"]
    acc = tf.SparseConditionalAccumulator(tf.float32, shape=[4, 2])
    total = tf.SparseConditionalAccumulator(tf.float32, shape=[4, 2], reduction_type="SUM")
    with tf.Session() as s:
        s.run(acc.apply_grad([0, 2], [[2.0, 2.0], [1.0, 1.0]], [4, 2], local_step=0))
        s.run(acc.apply_grad([2, 3], [[10.0, 10.0], [1.0, 1.0]], local_step=0))
        r = s.run(acc.take_grad(2))
        s.run(total.apply_grad([1, 3], [[1.0, 2.0], [3.0, 4.0]], [4, 2], local_step=0))
        s.run(total.apply_grad([3], [[5.0, 6.0]], [4, 2], local_step=0))
        t = s.run(total.take_indexed_slices_grad(2))
    for got, w in ((r, want["mean"]), (t, want["sum"])):
        np.testing.assert_array_equal(got.indices, w["indices"])
        np.testing.assert_array_equal(got.values, w["values"])
        np.testing.assert_array_equal(got.dense_shape if hasattr(got, "dense_shape") else got.shape, w["shape"])


def test_sparse_rows_with_one_index_in_one_gradient_are_summed_and_counted_once():
    # Plain SGD applies the sum of repeated rows; the mean over replicas must keep that sum.
    acc = tf.SparseConditionalAccumulator(tf.float32, shape=[3, 1])
    with tf.Session() as s:
        for _ in range(2):
            s.run(acc.apply_indexed_slices_grad(
                tf.IndexedSlices(tf.constant([[1.0], [2.0], [4.0]]), tf.constant([2, 0, 2]), tf.constant([3, 1]))))
        r = s.run(acc.take_indexed_slices_grad(2))
    np.testing.assert_array_equal(r.indices, [0, 2])
    np.testing.assert_array_equal(r.values, [[2.0], [5.0]])


def test_take_waits_for_num_required_gradients_then_advances_the_global_step():
    acc = tf.ConditionalAccumulator(tf.float64, shape=[])
    g = tf.placeholder(tf.float64, [])
    step = tf.placeholder(tf.int64, [])
    apply, take = acc.apply_grad(g, local_step=step), acc.take_grad(3)
    with tf.Session() as s:
        box = {}
        t = threading.Thread(target=lambda: box.setdefault("v", s.run(take)), daemon=True)
        t.start()
        for i in range(2):
            s.run(apply, {g: float(i), step: 0})
        time.sleep(0.2)
        assert t.is_alive()
        s.run(apply, {g: 5.0, step: 0})
        t.join(5)
        assert box["v"] == 2.0
        s.run(apply, {g: 1.0, step: 0})   # global step is now 1: stale
        assert s.run(acc.num_accumulated()) == 0
        with pytest.raises(tf.errors.DeadlineExceededError):
            s.run(take, options=tf.RunOptions(timeout_in_ms=100))


def test_cancelled_takes_fail_until_the_next_set_global_step():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[1])
    take = acc.take_grad(1)
    with tf.Session() as s:
        box = {}
        t = threading.Thread(target=lambda: box.setdefault("e", _error(lambda: s.run(take))), daemon=True)
        t.start()
        time.sleep(0.1)
        s.run(acc._cancel_takes())
        t.join(5)
        assert isinstance(box["e"], tf.errors.CancelledError)
        s.run(acc.apply_grad([1.0]))
        with pytest.raises(tf.errors.CancelledError):
            s.run(take)
        s.run(acc.set_global_step(0))
        np.testing.assert_array_equal(s.run(take), [1.0])


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - returned to the test
        return e
    return None


def test_bad_arguments_give_clear_errors():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
    x = tf.placeholder(tf.float32)
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match="num_required must be positive, but was 0"):
            s.run(acc.take_grad(0))
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"expects a gradient of shape \[2\], got \[3\]"):
            s.run(acc.apply_grad(x), {x: [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="incompatible"):
        acc.apply_grad([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="float16, float32 or float64"):
        tf.ConditionalAccumulator(tf.int32)
    with pytest.raises(ValueError, match="reduction_type"):
        tf.ConditionalAccumulator(tf.float32, reduction_type="MAX")
    a = tf.ConditionalAccumulator(tf.float32, shape=[2], shared_name="acc")
    b = tf.ConditionalAccumulator(tf.float64, shape=[2], shared_name="acc")
    with tf.Session() as s:
        s.run(a.num_accumulated())
        with pytest.raises(tf.errors.InvalidArgumentError, match="Shared accumulator 'acc'"):
            s.run(b.num_accumulated())
