"""Random ops: shapes, dtypes, seeding rules and distribution moments (seeded, so never flaky)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import special

import tensorweave as tf
from tensorweave.ops import random as random_ops

from unit_helpers import run


def test_get_seed_rules(graph):
    assert tf.get_seed(None) == (None, None)
    assert tf.get_seed(7) == (random_ops.DEFAULT_GRAPH_SEED, 7)
    tf.set_random_seed(3)
    assert graph.seed == 3
    tf.constant(1.0)
    s1 = tf.get_seed(None)
    tf.constant(2.0)
    s2 = tf.get_seed(None)
    assert s1[0] == s2[0] == 3 and s1[1] != s2[1]  # op seed from the graph's op counter
    assert tf.get_seed(5) == (3, 5)
    tf.set_random_seed(0)
    assert tf.get_seed(0) == (0, 2 ** 31 - 1)  # (0, 0) would mean nondeterministic
    assert tf.random.set_random_seed is tf.set_random_seed


def test_names_shapes_dtypes(graph):
    n = tf.random_normal([2, 3], mean=1.0, stddev=2.0)
    u = tf.random_uniform([4], dtype=tf.float64)
    t = tf.truncated_normal(tf.TensorShape([5]))
    i = tf.random_uniform([3, 2], maxval=10, dtype=tf.int64)
    assert n.name == "random_normal:0" and n.op.type in ("Add", "AddV2")
    assert [o.name for o in n.op.inputs] == ["random_normal/mul:0", "random_normal/mean:0"]
    assert u.name == "random_uniform:0" and t.name == "truncated_normal:0"
    assert i.op.type == "RandomUniformInt"
    assert n.shape.as_list() == [2, 3] and n.dtype == tf.float32
    assert u.dtype == tf.float64 and t.shape.as_list() == [5]
    assert i.dtype == tf.int64 and i.shape.as_list() == [3, 2]
    vals = run([n, u, t, i])
    assert [v.dtype for v in vals] == [np.float32, np.float64, np.float32, np.int64]
    assert [v.shape for v in vals] == [(2, 3), (4,), (5,), (3, 2)]


def test_dynamic_shape(graph):
    p = tf.placeholder(tf.int32, [2])
    n = tf.random_normal(p)
    assert n.shape.as_list() == [None, None]
    assert run(n, {p: [3, 4]}).shape == (3, 4)


def test_dtype_errors(graph):
    with pytest.raises(ValueError, match="Must specify maxval for integer dtype"):
        tf.random_uniform([2], dtype=tf.int32)
    with pytest.raises(ValueError, match="Invalid dtype"):
        tf.random_uniform([2], dtype=tf.string)
    with pytest.raises(TypeError, match="not in list of allowed values"):
        tf.random_normal([2], dtype=tf.int32)
    bad = tf.random_uniform([2], minval=5, maxval=5, dtype=tf.int32, name="empty_range")
    with pytest.raises(tf.errors.InvalidArgumentError, match="empty_range") as e:
        run(bad)
    assert "Need minval < maxval" in str(e.value)


def test_same_seeds_same_sequences_across_sessions(graph):
    tf.set_random_seed(42)
    a = tf.random_normal([4])
    b = tf.random_uniform([4])
    with tf.Session() as s1:
        first = [s1.run([a, b]) for _ in range(2)]
    with tf.Session() as s2:
        second = [s2.run([a, b]) for _ in range(2)]
    for x, y in zip(first, second):
        np.testing.assert_array_equal(x[0], y[0])
        np.testing.assert_array_equal(x[1], y[1])
    assert not np.array_equal(first[0][0], first[1][0])  # each run draws new numbers


def test_runs_in_different_plans_continue_one_stream(graph):
    a = tf.random_normal([3], seed=1)
    with tf.Session() as sess:
        x = sess.run(a)
        y, _ = sess.run([a, tf.constant(0)])  # another signature: same op, next draw
    assert not np.array_equal(x, y)


def test_op_seeds(graph):
    a = tf.random_normal([6], seed=7)
    b = tf.random_normal([6], seed=7)
    c = tf.random_normal([6], seed=8)
    va, vb, vc = run([a, b, c])
    np.testing.assert_array_equal(va, vb)  # same (graph, op) seeds: same numbers, as in TF
    assert not np.array_equal(va, vc)
    tf.set_random_seed(1)
    d = tf.random_normal([6])
    e = tf.random_normal([6])
    vd, ve = run([d, e])
    assert not np.array_equal(vd, ve)  # different ops differ under a graph seed


def test_unseeded_ops_differ_between_sessions(graph):
    a = tf.random_normal([8])
    assert not np.array_equal(run(a), run(a))


def test_normal_moments(graph):
    n = tf.random_normal([200000], mean=3.0, stddev=2.0, seed=1)
    v = run(n)
    assert abs(v.mean() - 3.0) < 0.05 and abs(v.std() - 2.0) < 0.05


def test_truncated_normal_bounds_and_std(graph):
    t = tf.truncated_normal([200000], mean=1.0, stddev=0.5, seed=2)
    v = run(t)
    assert v.min() >= 0.0 and v.max() <= 2.0
    assert abs(v.std() - 0.5 * 0.87962566103423978) < 0.01
    assert abs(v.mean() - 1.0) < 0.01


def test_uniform_ranges(graph):
    f = tf.random_uniform([100000], minval=-2.0, maxval=3.0, seed=3)
    i = tf.random_uniform([100000], minval=-3, maxval=4, dtype=tf.int32, seed=4)
    h = tf.random_uniform([1000], dtype=tf.float16, seed=5)
    vf, vi, vh = run([f, i, h])
    assert vf.min() >= -2.0 and vf.max() < 3.0 and abs(vf.mean() - 0.5) < 0.05
    assert set(np.unique(vi)) == set(range(-3, 4))
    assert vh.dtype == np.float16 and vh.max() < 1.0 and vh.min() >= 0.0


def test_random_shuffle(graph):
    x = np.arange(20).reshape(10, 2)
    s = tf.random_shuffle(x, seed=1)
    assert s.shape.as_list() == [10, 2]
    v = run(s)
    np.testing.assert_array_equal(np.sort(v[:, 0]), x[:, 0])
    np.testing.assert_array_equal(v[:, 1], v[:, 0] + 1)  # rows move whole


def test_multinomial(graph):
    logits = np.log([[0.1, 0.2, 0.7], [0.5, 0.5, 1e-30]])
    m = tf.multinomial(logits, 20000, seed=1)
    c = tf.random.categorical(logits, 5, dtype=tf.int32)
    assert m.dtype == tf.int64 and m.shape.as_list() == [2, 20000]
    assert c.dtype == tf.int32 and c.name.startswith("categorical/")
    v = run(m)
    np.testing.assert_allclose(np.bincount(v[0], minlength=3) / 20000, [0.1, 0.2, 0.7], atol=0.02)
    assert v[1].max() <= 1 and abs((v[1] == 0).mean() - 0.5) < 0.02
    with pytest.raises(ValueError, match="rank 2"):
        tf.multinomial([1.0, 2.0], 3)


def test_gamma_and_poisson(graph):
    g = tf.random_gamma([50000], alpha=[2.0, 5.0], beta=2.0, seed=1)
    p = tf.random_poisson([3.0], [50000], seed=2)
    assert g.shape.as_list() == [50000, 2] and p.shape.as_list() == [50000, 1]
    vg, vp = run([g, p])
    np.testing.assert_allclose(vg.mean(axis=0), [1.0, 2.5], rtol=0.03)
    assert abs(vp.mean() - 3.0) < 0.05 and vp.dtype == np.float32


def test_gamma_broadcasts_alpha_with_beta_and_differentiates_implicitly(graph):
    """As TF's: alpha is broadcast to beta's shape, and d sample / d alpha holds the sample's cdf
    value u = P(alpha, beta x) fixed (finite differences of scipy's inverse at u)."""
    alpha = tf.constant(np.array([0.4, 3.0]))
    beta = np.array([[1.0], [4.0]])
    g = tf.random_gamma([5], alpha, beta=beta, dtype=tf.float64, seed=3)
    assert g.shape.as_list() == [5, 2, 2]
    x, (grad,) = run([g, tf.gradients(tf.reduce_sum(g * [[1.0, 2.0]]), alpha)])
    a = np.array([0.4, 3.0])
    u, h = special.gammainc(a, beta * x), 1e-6
    dx = (special.gammaincinv(a + h, u) - special.gammaincinv(a - h, u)) / (2 * h) / beta
    np.testing.assert_allclose(grad, (dx * [1.0, 2.0]).sum((0, 1)), rtol=1e-5)


def test_random_namespace(graph):
    assert tf.random.normal is tf.random_normal and tf.random.uniform is tf.random_uniform
    assert tf.random.shuffle is tf.random_shuffle and tf.random.truncated_normal is tf.truncated_normal


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [(1 << 18) + 1, 600_000])
@pytest.mark.parametrize("half_kept", [False, True])
def test_large_uniform_draws_in_parts_give_one_draws_numbers_and_state(dtype, n, half_kept):
    """A large RandomUniform is drawn in parts on the intra-op threads (PCG64 jumped ahead to each
    part): the numbers and the generator's next draws are those of one rng.random call, also with
    an odd count and after a float32 that left half of a 64-bit output for the next one."""
    whole, parts = np.random.default_rng([3, 4]), np.random.default_rng([3, 4])
    if half_kept:
        whole.random(dtype=dtype), parts.random(dtype=dtype)
    expected = whole.random((n,), dtype=dtype)
    got = random_ops.uniform_in_parts(parts, (n,), dtype)
    assert got.dtype == dtype and got.view(np.uint8).tobytes() == expected.view(np.uint8).tobytes()
    assert parts.bit_generator.state == whole.bit_generator.state
    np.testing.assert_array_equal(parts.random(3, dtype=np.float32), whole.random(3, dtype=np.float32))


def test_large_seeded_random_uniform_op_draws_the_generators_stream(graph):
    u = tf.random_uniform([600, 1001], seed=5)
    with tf.Session() as sess:
        first, second = sess.run(u), sess.run(u)
    stream = np.random.default_rng([tf.get_default_graph().seed or random_ops.DEFAULT_GRAPH_SEED, 5])
    np.testing.assert_array_equal(first, stream.random((600, 1001), dtype=np.float32))
    np.testing.assert_array_equal(second, stream.random((600, 1001), dtype=np.float32))


def test_uniform_in_parts_leaves_other_generators_whole():
    """Only PCG64 jumps ahead: another bit generator draws the numbers in one call."""
    whole, other = (np.random.Generator(np.random.MT19937(9)) for _ in range(2))
    np.testing.assert_array_equal(random_ops.uniform_in_parts(other, (1 << 19,), np.float32),
                                  whole.random((1 << 19,), dtype=np.float32))
    assert other.bit_generator.state["state"]["pos"] == whole.bit_generator.state["state"]["pos"]
