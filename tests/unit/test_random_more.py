"""tf.random's stateless ops: the same seed gives the same numbers in any session, another seed
others; the distributions are right."""
from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.stats

import tensorweave as tf
from unit_helpers import run


@pytest.mark.parametrize("build", [
    lambda seed: tf.random.stateless_uniform([2000], seed),
    lambda seed: tf.random.stateless_uniform([2000], seed, minval=3, maxval=9, dtype=tf.int64),
    lambda seed: tf.random.stateless_normal([2000], seed, mean=2.0, stddev=0.5),
    lambda seed: tf.random.stateless_truncated_normal([2000], seed, dtype=tf.float64),
    lambda seed: tf.random.stateless_categorical(np.log([[0.2, 0.8], [0.5, 0.5]]), 500, seed),
], ids=["uniform", "uniform_int", "normal", "truncated_normal", "categorical"])
def test_same_seed_same_numbers(build):
    seed = tf.placeholder(tf.int32, [2])
    out = build(seed)
    with tf.Session() as sess:
        a = sess.run(out, {seed: [1, 2]})
        b = sess.run(out, {seed: [1, 2]})
        c = sess.run(out, {seed: [2, 1]})
    with tf.Session() as sess:
        d = sess.run(out, {seed: [1, 2]})
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, d)
    assert not np.array_equal(a, c)


def test_stateless_distributions():
    u, ui, n, t, cat = run([tf.random.stateless_uniform([20000], [3, 4], minval=-1.0, maxval=3.0),
                            tf.random.stateless_uniform([20000], [3, 4], minval=3, maxval=9, dtype=tf.int32),
                            tf.random.stateless_normal([20000], [5, 6], mean=2.0, stddev=0.5),
                            tf.random.stateless_truncated_normal([20000], [7, 8]),
                            tf.random.stateless_multinomial(np.log([[0.2, 0.8]]), 20000, [9, 9])])
    assert u.dtype == np.float32 and u.min() >= -1 and u.max() < 3
    assert scipy.stats.kstest(u, scipy.stats.uniform(-1, 4).cdf).pvalue > 1e-3
    assert ui.dtype == np.int32 and set(np.unique(ui)) == set(range(3, 9))
    assert scipy.stats.kstest(n, scipy.stats.norm(2.0, 0.5).cdf).pvalue > 1e-3
    assert np.abs(t).max() <= 2.0 and abs(t.std() - 0.88) < 0.03
    assert cat.dtype == np.int64 and abs(cat.mean() - 0.8) < 0.02


def test_stateless_seed_must_be_a_pair_of_ints():
    with pytest.raises(ValueError, match=r"shape \[2\]"):
        tf.random.stateless_normal([3], [1, 2, 3])
    with pytest.raises(TypeError, match="int32 or int64"):
        tf.random.stateless_normal([3], [1.0, 2.0])


# -- TF's own numbers: tf_stateless_random.npz, recorded by fixtures/record_tf_stateless_random.py ----
_RECORDED = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "tf_stateless_random.npz"))
_SEEDS = {"s12": [1, 2], "neg": [-7, 123456789], "big": [2 ** 40 + 5, -(2 ** 35)]}
_BUILD = {
    "uniform": lambda seed, dt: tf.random.stateless_uniform([3, 7], seed, dtype=dt),
    "normal": lambda seed, dt: tf.random.stateless_normal([5, 3], seed, dtype=dt),
    "truncated": lambda seed, dt: tf.random.stateless_truncated_normal([401], seed, dtype=dt),
    "uniform_range": lambda seed, dt: tf.random.stateless_uniform([9], seed, minval=-2.0, maxval=5.0),
    "uniform_int": lambda seed, dt: tf.random.stateless_uniform([11], seed, minval=-3,
                                                                maxval=1000 if dt == "int32" else 2 ** 40, dtype=dt),
    "categorical": lambda seed, dt: tf.random.stateless_categorical(
        np.log([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]]).astype(np.float32), 13, seed),
    "multinomial": lambda seed, dt: tf.compat.v1.random.stateless_multinomial(
        np.log([[0.5, 0.25, 0.25]]), 6, seed, output_dtype=tf.int32),
}


@pytest.mark.parametrize("case", sorted(k for k in _RECORDED.files if not k.endswith("int32seed")))
def test_stateless_numbers_are_tfs_bit_for_bit(case):
    kind, dtype, seed = case.split("/")
    got = run(_BUILD[kind](np.array(_SEEDS[seed], np.int64), dtype))
    expected = _RECORDED[case]
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_stateless_int32_seed_is_tfs():
    np.testing.assert_array_equal(run(tf.random.stateless_uniform([6], np.array([5, -9], np.int32))),
                                  _RECORDED["uniform/float32/int32seed"])
