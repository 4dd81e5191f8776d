"""tf.TensorArray over tensor lists: values, shapes, errors, and gradients (finite differences)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")
XV = np.random.RandomState(0).randn(5, 3)


def grad_error(x, y):
    with tf.Session() as sess:
        y_shape = list(sess.run(tf.shape(y), {x: XV}))
        return tf.test.compute_gradient_error(x, x.shape.as_list(), y, y_shape, x_init_value=XV)


def test_write_read_stack_size_and_shape_inference():
    ta = tf.TensorArray(tf.float32, size=3)
    ta = ta.write(0, [1.0, 2.0]).write(2, tf.constant([5.0, 6.0]))
    assert ta.element_shape.as_list() == [2]
    read, stacked, size = ta.read(2), ta.stack(), ta.size()
    assert read.shape.as_list() == [2] and stacked.shape.as_list() == [None, 2]
    with tf.Session() as sess:
        r, s, n = sess.run([read, stacked, size])
    np.testing.assert_array_equal(r, [5, 6])
    np.testing.assert_array_equal(s, [[1, 2], [0, 0], [5, 6]])   # the unwritten element reads as zeros
    assert n == 3
    with pytest.raises(ValueError, match="Inconsistent shapes"):
        ta.write(1, [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="dtype"):
        ta.write(1, tf.constant([1, 2]))


def test_fixed_size_write_out_of_range_is_an_error_dynamic_grows():
    fixed = tf.TensorArray(tf.float32, size=2).write(3, 1.0)
    grown = tf.TensorArray(tf.float32, size=0, dynamic_size=True).write(3, 1.0)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="TensorListSetItem"):
            sess.run(fixed.stack())
        np.testing.assert_array_equal(sess.run(grown.stack()), [0, 0, 0, 1])
        assert sess.run(grown.size()) == 4


def test_unstack_gather_scatter_split_concat():
    x = tf.placeholder(tf.float64, [5, 3])
    ta = tf.TensorArray(tf.float64, size=5).unstack(x)
    gathered = ta.gather([4, 0])
    scattered = tf.TensorArray(tf.float64, size=6).scatter([5, 0, 1, 2, 3], x).stack()
    split = tf.TensorArray(tf.float64, size=2).split(x, [2, 3])
    concat = split.concat()
    with tf.Session() as sess:
        g, sc, c, piece = sess.run([gathered, scattered, concat, split.read(1)], {x: XV})
    np.testing.assert_array_equal(g, XV[[4, 0]])
    np.testing.assert_array_equal(sc, np.concatenate([XV[1:], np.zeros([1, 3]), XV[:1]]))
    np.testing.assert_array_equal(c, XV)
    np.testing.assert_array_equal(piece, XV[2:])
    for y in (gathered, scattered, concat, split.read(1)):
        assert grad_error(x, y) < 1e-8


def test_tensor_arrays_as_while_loop_variables_with_gradient():
    x = tf.placeholder(tf.float64, [5, 3])
    inputs = tf.TensorArray(tf.float64, size=5).unstack(x)

    def body(t, h, out):
        h = tf.tanh(h + inputs.read(t))
        return t + 1, h, out.write(t, h * 2.0)

    _, h, out = tf.while_loop(lambda t, h, out: t < 5, body,
                              [0, tf.zeros([3], tf.float64), tf.TensorArray(tf.float64, size=0, dynamic_size=True)])
    assert isinstance(out, tf.TensorArray) and out.element_shape.as_list() == [3]
    stacked = out.stack()
    expected, hh = [], np.zeros(3)
    for t in range(5):
        hh = np.tanh(hh + XV[t])
        expected.append(2 * hh)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(stacked, {x: XV}), expected, rtol=1e-12)
    assert grad_error(x, stacked) < 1e-6
    assert grad_error(x, h) < 1e-6


def test_construction_errors():
    with pytest.raises(ValueError, match="Size must be provided"):
        tf.TensorArray(tf.float32)
    with pytest.raises(ValueError, match="both a flow and size"):
        tf.TensorArray(tf.float32, size=2, flow=tf.TensorArray(tf.float32, size=1).flow)
