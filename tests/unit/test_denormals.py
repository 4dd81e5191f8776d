"""Denormals flushed to zero while kernels run, as TF's CPU runtime computes (framework/denormals.py):
in a step, on every thread that runs its kernels; the calling thread's own modes restored after.
TF's recorded values for the same ops: test_tf_recorded_values.py (exp_underflow, ...)."""
from __future__ import annotations

import ctypes
import ctypes.util
import threading

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import denormals
from tensorweave.ops import intra_op
from tensorweave.runtime import inter_op

pytestmark = [pytest.mark.usefixtures("graph"),
              pytest.mark.skipif(not denormals.AVAILABLE, reason="flushing denormals is x86-64 Linux only")]

TINY = np.float32(1e-39)   # a denormal float32 (the smallest normal is 1.2e-38)


def _product():
    """A float32 product whose exact value is a denormal: 0.0 where they are flushed."""
    return np.float32(1e-20) * np.float32(1e-19)


def test_a_step_flushes_and_the_callers_thread_gets_its_own_modes_back():
    x = tf.placeholder(tf.float32, [None])
    with tf.Session() as sess:
        got = sess.run([tf.exp(x), x * 1.0], {x: np.array([-100.0, 1.0], np.float32)})
        assert got[0][0] == 0 and got[0][1] == np.exp(np.float32(1.0))
        assert sess.run(x + 0.0, {x: np.array([TINY], np.float32)})[0] == 0   # (a denormal input reads as 0)
    assert _product() != 0 and np.exp(np.float32(-100.0)) != 0


def test_a_caller_that_flushes_already_keeps_flushing():
    own = denormals.enter()
    try:
        assert _product() == 0
        with tf.Session() as sess:
            sess.run(tf.constant(1.0) + 1.0)
        assert _product() == 0
    finally:
        denormals.leave(own)
    assert _product() != 0


def test_the_runtimes_threads_flush():
    assert intra_op._get_pool().submit(_product).result() == 0
    pool, seen, done = inter_op.InterOpPool(2, "denormals-test"), [], threading.Event()
    try:
        pool.submit(lambda: (seen.append(_product()), done.set()))
        assert done.wait(30) and seen == [0]
    finally:
        pool.close()


def test_a_dataset_map_on_worker_threads_flushes():
    ds = tf.data.Dataset.from_tensor_slices(np.full(64, -100.0, np.float32)).map(tf.exp, num_parallel_calls=4)
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    with tf.Session() as sess:
        assert [sess.run(nxt) for _ in range(64)] == [0] * 64


def test_a_kernels_parts_on_other_threads_compute_as_its_thread():
    x = np.full(4 * intra_op._MIN_ELEMS, 1e-20, np.float32)
    for flushing in (False, True):
        with denormals.computed_as(flushing):
            out = intra_op.split_elementwise(np.multiply, x, np.float32(1e-19))
        assert (out == 0).all() if flushing else (out != 0).all()


def test_kernels_round_to_nearest_whatever_the_caller_rounds_to():
    """TF's kernels run rounding to nearest (ScopedSetRound beside the flushing); a caller that
    rounds downward gets its own mode back after the step."""
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    fe_downward = 0x400   # (x86's FE_DOWNWARD; 1/3 rounds up to nearest in float32)
    third = np.float32(1) / np.float32(3)
    x = tf.placeholder(tf.float32, [])
    with tf.Session() as sess:
        assert libm.fesetround(fe_downward) == 0
        try:
            got = sess.run(x / 3.0, {x: 1.0})
            downward = np.float32(1) / np.float32(3)
        finally:
            libm.fesetround(0)
    assert got == third and downward == np.nextafter(third, np.float32(0))
