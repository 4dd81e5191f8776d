"""Initializers: values, dtypes, fan computations and statistics against numpy formulas."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.state import initializers as init_ops


def _value(init, shape, dtype=tf.float32):
    t = init(shape, dtype=dtype)
    with tf.Session() as sess:
        return sess.run(t)


def test_constant_family(graph):
    np.testing.assert_array_equal(_value(tf.zeros_initializer(), [2, 3]), np.zeros((2, 3)))
    ones = _value(tf.ones_initializer(dtype=tf.int32), [4], dtype=None)
    assert ones.dtype == np.int32 and list(ones) == [1, 1, 1, 1]
    np.testing.assert_array_equal(_value(tf.constant_initializer(2.5), [3]), [2.5] * 3)
    np.testing.assert_array_equal(_value(tf.constant_initializer([1, 2]), [4]), [1, 2, 2, 2])
    np.testing.assert_array_equal(_value(tf.constant_initializer([[1, 2], [3, 4]]), [2, 2]), [[1, 2], [3, 4]])
    with pytest.raises(TypeError, match="Invalid type for initial value"):
        tf.constant_initializer({"a": 1})
    with pytest.raises(TypeError):
        tf.constant_initializer([1, 2, 3], verify_shape=True)([2])


@pytest.mark.parametrize("shape,fans", [([], (1, 1)), ([7], (7, 7)), ([3, 5], (3, 5)),
                                        ([3, 3, 16, 32], (144, 288)), ([2, 4, 4, 8, 6], (256, 192))])
def test_compute_fans(shape, fans):
    assert init_ops._compute_fans(shape) == fans


@pytest.mark.parametrize("mode", ["fan_in", "fan_out", "fan_avg"])
def test_variance_scaling_uniform(graph, mode):
    shape = [60, 40, 30]
    fan_in, fan_out = 60 * 40, 30 * 60
    n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
    v = _value(tf.variance_scaling_initializer(2.0, mode, "uniform", seed=1), shape)
    limit = math.sqrt(3 * 2.0 / n)
    assert v.shape == tuple(shape) and v.dtype == np.float32
    assert np.abs(v).max() <= limit and np.abs(v).max() > 0.99 * limit
    assert abs(v.var() - 2.0 / n) < 0.03 * 2.0 / n


def test_variance_scaling_normals(graph):
    shape = [400, 300]
    tn = _value(tf.variance_scaling_initializer(distribution="truncated_normal", seed=2), shape)
    un = _value(tf.variance_scaling_initializer(distribution="untruncated_normal", seed=3), shape)
    target = math.sqrt(1.0 / 400)
    # the truncation correction makes the truncated samples' stddev the target one
    assert abs(tn.std() - target) < 0.02 * target
    assert np.abs(tn).max() <= 2 * target / 0.87962566103423978 + 1e-6
    assert abs(un.std() - target) < 0.02 * target and np.abs(un).max() > 3.5 * target


def test_glorot(graph):
    shape = [200, 300]
    u = _value(tf.glorot_uniform_initializer(seed=1), shape)
    limit = math.sqrt(6.0 / 500)
    assert np.abs(u).max() <= limit and abs(u.var() - limit ** 2 / 3) < 0.03 * limit ** 2 / 3
    n = _value(tf.glorot_normal_initializer(seed=2), shape)
    assert abs(n.std() - math.sqrt(2.0 / 500)) < 0.02 * math.sqrt(2.0 / 500)
    assert tf.initializers.glorot_uniform is init_ops.GlorotUniform
    he = tf.initializers.he_normal(seed=1)
    assert (he.scale, he.mode, he.distribution) == (2.0, "fan_in", "truncated_normal")


def test_random_initializers(graph):
    n = _value(tf.random_normal_initializer(1.0, 0.5, seed=1), [100000])
    assert abs(n.mean() - 1.0) < 0.01 and abs(n.std() - 0.5) < 0.01
    t = _value(tf.truncated_normal_initializer(0.0, 0.1, seed=2), [100000])
    assert np.abs(t).max() <= 0.2 + 1e-6
    u = _value(tf.random_uniform_initializer(-1.0, 2.0, seed=3), [100000])
    assert u.min() >= -1 and u.max() < 2 and abs(u.mean() - 0.5) < 0.02
    i = _value(tf.random_uniform_initializer(0, 5, dtype=tf.int32), [1000], dtype=None)
    assert i.dtype == np.int32 and set(np.unique(i)) == set(range(5))
    uus = _value(tf.uniform_unit_scaling_initializer(1.5, seed=4), [100, 50])
    assert np.abs(uus).max() <= math.sqrt(3 / 100) * 1.5


def test_seeded_initializer_is_reproducible(graph):
    a = _value(tf.glorot_uniform_initializer(seed=5), [10, 10])
    b = _value(tf.glorot_uniform_initializer(seed=5), [10, 10])
    np.testing.assert_array_equal(a, b)


def test_orthogonal_and_identity(graph):
    q = _value(tf.orthogonal_initializer(gain=2.0, seed=1), [6, 4])
    np.testing.assert_allclose(q.T @ q, 4.0 * np.eye(4), atol=1e-5)
    w = _value(tf.orthogonal_initializer(seed=2), [3, 3, 2, 8]).reshape(-1, 8)  # 18 x 8: orthonormal columns
    np.testing.assert_allclose(w.T @ w, np.eye(8), atol=1e-5)
    r = _value(tf.orthogonal_initializer(seed=3), [2, 5])  # rows < cols: orthonormal rows
    np.testing.assert_allclose(r @ r.T, np.eye(2), atol=1e-5)
    np.testing.assert_array_equal(_value(tf.initializers.identity(gain=3.0), [2, 3]), 3.0 * np.eye(2, 3))
    with pytest.raises(ValueError, match="at least two-dimensional"):
        tf.orthogonal_initializer()([5])
    with pytest.raises(ValueError, match="only be used for 2D"):
        tf.initializers.identity()([2, 2, 2])


def test_argument_errors():
    with pytest.raises(ValueError, match="`scale` must be positive float"):
        tf.variance_scaling_initializer(scale=0.0)
    with pytest.raises(ValueError, match="Invalid `mode` argument"):
        tf.variance_scaling_initializer(mode="fan_sum")
    with pytest.raises(ValueError, match="Invalid `distribution` argument"):
        tf.variance_scaling_initializer(distribution="cauchy")
    with pytest.raises(ValueError, match="Expected floating point type"):
        tf.random_normal_initializer(dtype=tf.int32)
    with pytest.raises(ValueError, match="Expected floating point type"):
        tf.truncated_normal_initializer(dtype=tf.int64)


def test_get_config_round_trip():
    init = tf.variance_scaling_initializer(3.0, "fan_out", "uniform", seed=9)
    again = tf.variance_scaling_initializer.from_config(init.get_config())
    assert (again.scale, again.mode, again.distribution, again.seed) == (3.0, "fan_out", "uniform", 9)


def test_used_by_get_variable(graph):
    with tf.variable_scope("layer", initializer=tf.variance_scaling_initializer(seed=3)):
        w = tf.get_variable("w", [3, 3, 8, 16])
        b = tf.get_variable("b", [16], initializer=tf.zeros_initializer())
    assert w.initial_value.op.name == "layer/w/Initializer/truncated_normal"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        wv, bv = sess.run([w, b])
    assert wv.std() < 2 * math.sqrt(1.0 / 72) and not bv.any()
