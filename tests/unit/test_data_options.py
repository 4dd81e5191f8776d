"""tf.data.Options: set with Dataset.with_options, read back merged with options(); the private
thread pool size caps a parallel map's threads; performance hints are accepted."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import tensorweave as tf


def _elements(ds, n):
    it = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        return [sess.run(it) for _ in range(n)]


def test_options_read_back_merged_over_inputs():
    a, b = tf.data.Options(), tf.data.Options()
    a.experimental_threading.private_threadpool_size = 3
    a.experimental_optimization.map_fusion = True
    b.experimental_deterministic = False
    b.experimental_optimization.noop_elimination = True
    left = tf.data.Dataset.range(4).with_options(a).map(lambda x: x + 1)
    right = tf.data.Dataset.range(4).with_options(b)
    merged = tf.data.Dataset.zip((left, right)).options()
    assert merged.experimental_threading.private_threadpool_size == 3
    assert merged.experimental_deterministic is False
    assert merged.experimental_optimization.map_fusion and merged.experimental_optimization.noop_elimination
    assert merged.experimental_slack is None and merged.experimental_threading.max_intra_op_parallelism is None
    assert tf.data.Dataset.range(3).options() == tf.data.Options()
    assert right.options() == b and left.options() != b
    # with_options is the identity on the elements
    assert [tuple(map(int, e)) for e in _elements(tf.data.Dataset.zip((left, right)), 4)] == [(i + 1, i)
                                                                                             for i in range(4)]


def test_conflicting_options_and_bad_names_are_errors():
    a, b = tf.data.Options(), tf.data.Options()
    a.experimental_deterministic, b.experimental_deterministic = True, False
    with pytest.raises(ValueError, match="experimental_deterministic"):
        tf.data.Dataset.range(2).with_options(a).with_options(b)
    with pytest.raises(AttributeError, match="experimental_determinism"):
        a.experimental_determinism = True
    with pytest.raises(TypeError, match="private_threadpool_size"):
        a.experimental_threading.private_threadpool_size = "4"
    with pytest.raises(TypeError, match="tf.data.Options"):
        tf.data.Dataset.range(2).with_options({"experimental_deterministic": True})


def test_private_threadpool_size_caps_parallel_map_threads():
    seen = set()

    def record(x):   # a call long enough that the map keeps it on its worker threads
        threading.Event().wait(0.005)
        seen.add(threading.current_thread().name)
        return x

    options = tf.data.Options()
    options.experimental_threading.private_threadpool_size = 2
    options.experimental_threading.max_intra_op_parallelism = 1
    ds = tf.data.Dataset.range(40).map(lambda x: tf.py_func(record, [x], tf.int64), num_parallel_calls=8)
    got = _elements(ds.with_options(options), 40)
    assert [int(v) for v in got] == list(range(40))   # deterministic: in input order
    workers = {name for name in seen if name.startswith("tw-data-")}
    assert workers and all(name.rsplit("-", 1)[1] in ("0", "1") for name in workers), workers


def test_experimental_optimization_hints_keep_results():
    options = tf.data.Options()
    for name in ("map_and_batch_fusion", "map_fusion", "map_parallelization", "noop_elimination", "autotune"):
        setattr(options.experimental_optimization, name, True)
    options.experimental_slack = True
    ds = tf.data.Dataset.range(10).map(lambda x: x * 3).batch(4).with_options(options)
    got = _elements(ds, 3)
    np.testing.assert_array_equal(np.concatenate(got), np.arange(10) * 3)
