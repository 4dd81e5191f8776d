"""runtime/executor.py's Plan: what a step holds while it runs, and what its errors name."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")
SERIAL = tf.ConfigProto(inter_op_parallelism_threads=1, use_per_session_threads=True)   # (the serial run)


def test_a_step_lets_go_of_a_value_after_its_last_reader(traced_peak):
    """TF's executor frees a tensor once its last consumer has run: from its second run (the
    first shows the values' sizes), a chain of 24 products of 1 MiB values holds a few of them at
    a time, not all 48 (it did), and its numbers are the chain's; a value fetched from the
    middle of the chain is kept for the caller."""
    n, layers = 512, 24
    rng = np.random.RandomState(0)
    weights = [(rng.randn(n, n) / np.sqrt(n)).astype(np.float32) for _ in range(layers)]
    x = tf.placeholder(tf.float32, [n, n])
    h, middle = x, None
    for i, w in enumerate(weights):
        h = tf.nn.relu(tf.matmul(h, tf.constant(w)))
        middle = h if i == layers // 2 else middle
    feed = rng.randn(n, n).astype(np.float32)
    with tf.Session(config=SERIAL) as sess:
        sess.run([h, middle], {x: feed})   # (the plan for these fetches is made: its constants)
        got = []
        assert traced_peak(lambda: got.append(sess.run([h, middle], {x: feed}))) < 8 * n * n * 4
        again = sess.run([h, middle], {x: feed})
    want = feed
    for i, w in enumerate(weights):
        want = np.maximum(want @ w, 0)
        if i == layers // 2:
            np.testing.assert_allclose(got[0][1], want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[0][0], want, rtol=1e-4, atol=1e-5)
    for a, b in zip(got[0], again):
        np.testing.assert_array_equal(a, b)


def test_an_error_after_released_values_names_its_node():
    """A failing op in a run that lets go of values (1 MiB ones here) is named as in any run."""
    x = tf.placeholder(tf.float32, [None, 64])
    y = tf.nn.relu(tf.matmul(x, tf.ones([64, 64])))
    checked = tf.debugging.check_numerics(tf.log(y - 1.0), "the log of y - 1", name="checked")
    out = tf.reduce_sum(tf.matmul(checked, tf.ones([64, 2])))
    with tf.Session(config=SERIAL) as sess:
        got = sess.run(out, {x: np.ones([4096, 64], np.float32)})
        assert got == pytest.approx(4096 * 2 * 64 * np.log(63.0), rel=1e-5)
        with pytest.raises(tf.errors.InvalidArgumentError, match="the log of y - 1") as e:
            sess.run(out, {x: np.zeros([4096, 64], np.float32)})
        assert "checked" in str(e.value)
