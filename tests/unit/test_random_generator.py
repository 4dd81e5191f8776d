"""tf.random.experimental.Generator: TF's Philox numbers for a given seed, bit for bit (recorded
from TF 2.21 by fixtures/record_tf_random_generator.py), the state advancing with each
session.run of a draw, skip, split, reset, and tf.random.split / fold_in."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tensorweave as tf

REC = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "tf_random_generator.npz"))
G = tf.random.experimental.Generator


def _runs(gen, fetches) -> list:
    """(value, state after) of each fetch, each in its own session.run after initialization."""
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return [(sess.run(f), sess.run(gen.state)) for f in fetches]


def _check(case, runs):
    for i, (value, state) in enumerate(runs):
        want = REC[f"{case}/{i}"]
        assert value.dtype == want.dtype and value.shape == want.shape
        np.testing.assert_array_equal(value, want)
        np.testing.assert_array_equal(state, REC[f"{case}/state{i}"])


@pytest.mark.parametrize("seed", [0, 7, 2 ** 40 + 3])
def test_create_rng_state_matches_tf(seed):
    np.testing.assert_array_equal(tf.random.experimental.create_rng_state(seed, "philox"), REC[f"rng_state/{seed}"])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_float_draws_match_tf_and_advance_per_run(dtype):
    with tf.Graph().as_default():
        g = G.from_seed(7)
        n = g.normal([5, 3], dtype=dtype)
        _check(f"normal/{dtype}", _runs(g, [n, n, g.normal([2], mean=3.0, stddev=2.0, dtype=dtype)]))
    with tf.Graph().as_default():
        g = G.from_seed(1234)
        u = g.uniform([7], dtype=dtype)
        _check(f"uniform/{dtype}", _runs(g, [u, u, g.uniform([3], minval=-2.0, maxval=5.0, dtype=dtype)]))
    with tf.Graph().as_default():
        g = G.from_seed(99)
        t = g.truncated_normal([301], dtype=dtype)
        _check(f"truncated/{dtype}", _runs(g, [t, t]))
        assert np.abs(REC[f"truncated/{dtype}/0"]).max() < 2


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_uniform_int_matches_tf(dtype):
    with tf.Graph().as_default():
        g = G.from_seed(5)
        u = g.uniform([9], minval=-3, maxval=1000, dtype=dtype)
        _check(f"uniform_int/{dtype}", _runs(g, [u, u]))


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "uint64"])
def test_uniform_full_int_matches_tf(dtype):
    with tf.Graph().as_default():
        g = G.from_seed(2 ** 40 + 3)
        u = g.uniform_full_int([6], dtype=dtype)
        _check(f"full_int/{dtype}", _runs(g, [u, u]))
        full = g.uniform([6], minval=None, maxval=None, dtype=dtype)   # uniform's full-range form
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(full), REC[f"full_int/{dtype}/0"])


def test_from_key_counter_carries_a_64_bit_counter():
    with tf.Graph().as_default():
        g = G.from_key_counter(key=12345, counter=[2 ** 63 + 11, 4], alg="philox")
        _check("key_counter", _runs(g, [g.normal([3])]))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(g.key) == 12345


def test_skip_returns_the_old_state_and_advances_as_draws_would():
    with tf.Graph().as_default():
        g = G.from_seed(3)
        _check("skip", _runs(g, [g.skip(10), g.normal([4])]))


def test_split_children_draw_from_keys_of_the_parent():
    with tf.Graph().as_default():
        g = G.from_seed(3)
        with tf.Session() as sess:
            sess.run(g.state.initializer)
            children = g.split(2)
            sess.run([c.state.initializer for c in children])
            np.testing.assert_array_equal(sess.run(g.state), REC["split/parent_state"])
            for i, c in enumerate(children):
                np.testing.assert_array_equal(sess.run(c.state), [0, 0, REC["split/keys"][i]])
                np.testing.assert_array_equal(sess.run(c.normal([3])), REC[f"split/child{i}/0"])
        seeds = g.make_seeds(4)
        assert seeds.shape.as_list() == [2, 4] and seeds.dtype == tf.int64


def test_reset_ops_restart_the_stream():
    with tf.Graph().as_default():
        g = G.from_seed(7)
        n = g.normal([5, 3])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(n)
            sess.run(n)
            sess.run(g.reset_from_seed(7))
            np.testing.assert_array_equal(sess.run(n), first)
            sess.run(g.reset([7, 0, 0]))
            np.testing.assert_array_equal(sess.run(n), first)
            sess.run(g.reset_from_key_counter(0, [7, 0]))
            np.testing.assert_array_equal(sess.run(n), REC["normal/float32/0"])


def test_copy_from_and_from_state_start_where_the_source_is():
    with tf.Graph().as_default():
        g = G.from_state(tf.random.experimental.create_rng_state(7, "philox"), alg=tf.random.Algorithm.PHILOX)
        copy = G(copy_from=g)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(copy.normal([5, 3])), REC["normal/float32/0"])
            np.testing.assert_array_equal(sess.run(g.normal([5, 3])), REC["normal/float32/0"])


def test_global_generator_is_replaceable_and_nondeterministic_states_differ():
    with tf.Graph().as_default():
        g = G.from_seed(7)
        tf.random.experimental.set_global_generator(g)
        assert tf.random.experimental.get_global_generator() is g
        a, b = G.from_non_deterministic_state(), G.from_non_deterministic_state()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert not np.array_equal(sess.run(a.state), sess.run(b.state))
    with tf.Graph().as_default():   # a new graph gets a generator of its own
        fresh = tf.random.get_global_generator()
        assert fresh is not g and fresh.state.graph is tf.get_default_graph()


@pytest.mark.parametrize("sk,seed", [("s12", [1, 2]), ("big", [2 ** 40 + 5, -(2 ** 35)])])
def test_stateless_split_and_fold_in_match_tf(sk, seed):
    seed = np.array(seed, np.int64)
    with tf.Graph().as_default(), tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.random.split(seed)), REC[f"seed_split/{sk}"])
        got = sess.run(tf.random.experimental.stateless_split(seed.astype(np.int32), num=3))
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, REC[f"seed_split3/{sk}"])
        np.testing.assert_array_equal(sess.run(tf.random.fold_in(seed, 7)), REC[f"fold_in/{sk}"])
        np.testing.assert_array_equal(sess.run(tf.random.fold_in(seed, np.int64(2 ** 40 + 1))),
                                      REC[f"fold_in_big/{sk}"])


def test_bad_arguments_are_named():
    with tf.Graph().as_default():
        g = G.from_seed(1)
        with pytest.raises(ValueError, match="minval and maxval must be both"):
            g.uniform([2], maxval=5, minval=None, dtype=tf.int32)
        with pytest.raises(ValueError, match="ThreeFry|not supported"):
            G.from_seed(1, alg="threefry")
        with pytest.raises(ValueError, match="state"):
            G(state=None)
        bad = G(state=[1, 2, 3], alg=1)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match="minval < maxval"):
                sess.run(bad.uniform([2], minval=5, maxval=5, dtype=tf.int32))
