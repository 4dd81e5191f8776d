"""tf.nn.conv3d, conv3d_transpose, max_pool3d, avg_pool3d against values recorded from TensorFlow
(fixtures/tf_nn3d.npz, fixtures/record_tf_nn3d.py), and their gradients against finite differences."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")
REC = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "tf_nn3d.npz"))
CASES = {
    "conv_same": lambda x, f: tf.nn.conv3d(x, f, [1, 2, 1, 2, 1], "SAME"),
    "conv_valid": lambda x, f: tf.nn.conv3d(x, f, [1, 1, 1, 1, 1], "VALID"),
    "maxpool_same": lambda x, f: tf.nn.max_pool3d(x, [1, 2, 2, 2, 1], [1, 2, 1, 2, 1], "SAME"),
    "maxpool_valid": lambda x, f: tf.nn.max_pool3d(x, [1, 3, 2, 2, 1], [1, 1, 2, 1, 1], "VALID"),
    "avgpool_same": lambda x, f: tf.nn.avg_pool3d(x, [1, 3, 2, 2, 1], [1, 2, 1, 2, 1], "SAME"),
    "avgpool_valid": lambda x, f: tf.nn.avg_pool3d(x, [1, 2, 3, 2, 1], [1, 1, 2, 1, 1], "VALID"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_tensorflow(name):
    dt = tf.float32 if "pool" in name else tf.float64
    x, f = tf.constant(REC["x"], dt), tf.constant(REC["filter"], dt)
    y = CASES[name](x, f)
    assert y.shape.as_list() == list(REC[name + "/y"].shape)
    gx, gf = tf.gradients(tf.reduce_sum(y * REC[name + "/w"].astype(dt.as_numpy_dtype)), [x, f])
    tol = 1e-5 if dt == tf.float32 else 1e-10
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y), REC[name + "/y"], rtol=tol, atol=tol)
        np.testing.assert_allclose(sess.run(gx), REC[name + "/dx"], rtol=tol, atol=tol)
        if name + "/df" in REC:
            np.testing.assert_allclose(sess.run(gf), REC[name + "/df"], rtol=tol, atol=tol)


def test_conv3d_transpose_matches_tensorflow():
    v, f = tf.constant(REC["t_in"]), tf.constant(REC["t_filter"])
    y = tf.nn.conv3d_transpose(v, f, [2, 6, 5, 4, 5], [1, 2, 2, 2, 1], "SAME")
    gv, gf = tf.gradients(tf.reduce_sum(y * REC["transpose/w"]), [v, f])
    with tf.Session() as sess:
        for got, key in zip(sess.run([y, gv, gf]), ("y", "dx", "df")):
            np.testing.assert_allclose(got, REC["transpose/" + key], rtol=1e-10, atol=1e-10)


def test_channels_first_is_the_transposed_channels_last():
    x = REC["x"]
    xf = tf.constant(x.transpose(0, 4, 1, 2, 3))
    f = tf.constant(REC["filter"])
    to_first = (0, 4, 1, 2, 3)
    pairs = [(tf.nn.conv3d(tf.constant(x), f, [1, 2, 1, 2, 1], "SAME"),
              tf.nn.conv3d(xf, f, [1, 1, 2, 1, 2], "SAME", data_format="NCDHW")),
             (tf.nn.max_pool3d(tf.constant(x, tf.float32), [1, 2, 2, 2, 1], [1, 2, 1, 2, 1], "SAME"),
              tf.nn.max_pool3d(tf.cast(xf, tf.float32), [1, 1, 2, 2, 2], [1, 1, 2, 1, 2], "SAME", data_format="NCDHW")),
             (tf.nn.avg_pool3d(tf.constant(x, tf.float32), [1, 3, 2, 2, 1], [1, 2, 1, 2, 1], "SAME"),
              tf.nn.avg_pool3d(tf.cast(xf, tf.float32), [1, 1, 3, 2, 2], [1, 1, 2, 1, 2], "SAME",
                               data_format="NCDHW"))]
    with tf.Session() as sess:
        for last, first in pairs:
            a, b = sess.run([last, first])
            np.testing.assert_allclose(a.transpose(to_first), b, rtol=1e-6)


def test_dilated_strided_conv3d_gradients_by_finite_differences():
    rng = np.random.RandomState(3)
    for fmt, strides, dil, shape in (("NDHWC", [1, 2, 1, 2, 1], [1, 1, 2, 1, 1], [2, 5, 6, 4, 3]),
                                     ("NCDHW", [1, 1, 1, 2, 2], [1, 1, 1, 1, 2], [2, 3, 4, 5, 6])):
        x = tf.placeholder(tf.float64, shape)
        w = tf.placeholder(tf.float64, [2, 2, 3, 3, 2])
        xv, wv = rng.randn(*shape), rng.randn(2, 2, 3, 3, 2)
        y = tf.nn.conv3d(x, w, strides, "SAME", data_format=fmt, dilations=dil)
        with tf.Session() as sess:
            y_shape = list(sess.run(tf.shape(y), {x: xv, w: wv}))
            assert y.shape.as_list() == y_shape
            assert tf.test.compute_gradient_error(x, shape, y, y_shape, x_init_value=xv,
                                                  extra_feed_dict={w: wv}) < 1e-8
            assert tf.test.compute_gradient_error(w, [2, 2, 3, 3, 2], y, y_shape, x_init_value=wv,
                                                  extra_feed_dict={x: xv}) < 1e-8


def test_pooling_gradients_by_finite_differences():
    xv = np.random.RandomState(5).permutation(2 * 4 * 5 * 3 * 2).reshape(2, 4, 5, 3, 2).astype(np.float32) / 10
    x = tf.placeholder(tf.float32, xv.shape)
    for y in (tf.nn.max_pool3d(x, [1, 2, 2, 2, 1], [1, 1, 2, 1, 1], "SAME"),
              tf.nn.avg_pool3d(x, [1, 2, 3, 2, 1], [1, 2, 1, 1, 1], "SAME")):
        with tf.Session():
            assert tf.test.compute_gradient_error(x, list(xv.shape), y, y.shape.as_list(), x_init_value=xv,
                                                  delta=1e-2) < 2e-3


def test_errors_name_the_problem():
    x5 = tf.zeros([1, 4, 4, 4, 2])
    with pytest.raises(ValueError, match="rank 5"):
        tf.nn.conv3d(tf.zeros([1, 4, 4, 2]), tf.zeros([2, 2, 2, 2, 1]), [1, 1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="input depth of filter"):
        tf.nn.conv3d(x5, tf.zeros([2, 2, 2, 3, 1]), [1, 1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="strides in the batch"):
        tf.nn.conv3d(x5, tf.zeros([2, 2, 2, 2, 1]), [2, 1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="padding"):
        tf.nn.max_pool3d(x5, [1, 2, 2, 2, 1], [1, 1, 1, 1, 1], "FULL")
    with pytest.raises(TypeError, match="float64"):
        tf.nn.max_pool3d(tf.zeros([1, 4, 4, 4, 2], tf.float64), [1, 2, 2, 2, 1], [1, 1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="batch nor channel"):
        tf.nn.avg_pool3d(x5, [2, 2, 2, 2, 1], [1, 1, 1, 1, 1], "SAME")
    p = tf.placeholder(tf.float32, [None, None, None, None, None])
    y = tf.nn.conv3d(p, tf.zeros([2, 2, 2, 3, 1]), [1, 1, 1, 1, 1], "SAME")
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="Conv3D"):
        sess.run(y, {p: np.zeros([1, 3, 3, 3, 2], np.float32)})
