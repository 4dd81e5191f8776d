"""Helpers shared by the unit tests: `from unit_helpers import run` (pytest puts tests/unit on
sys.path; the name is unique so that tests/cluster modules never shadow it)."""
from __future__ import annotations

import numpy as np

import tensorweave as tf


def run(fetches, feed=None):
    """`fetches` (any fetch structure) evaluated in a new Session on the default graph."""
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def run_all(*fetches, feed=None):
    """Each of `fetches` evaluated in one new Session: their values, or the value when there is one."""
    with tf.Session() as sess:
        out = sess.run(list(fetches), feed_dict=feed)
    return out if len(out) > 1 else out[0]


def check(sess, t, expected, dtype=None, feed=None):
    """Runs `t` in `sess` and asserts it equals `expected` exactly, with its shape (runtime and
    compatible static) and, when given, its dtype (static and runtime); returns the value."""
    out = np.asarray(sess.run(t, feed))
    expected = np.asarray(expected)
    np.testing.assert_array_equal(out, expected)
    assert out.shape == expected.shape
    assert t.shape.is_compatible_with(expected.shape), (t.shape, expected.shape)
    if dtype is not None:
        assert t.dtype == dtype and out.dtype == dtype.as_numpy_dtype
    return out


_R = np.random.RandomState(3)


def _numeric(sess, loss, phs, values, feed_extra, delta=1e-6):
    grads = []
    for i, v in enumerate(values):
        gnum = np.zeros_like(v)
        flat = gnum.reshape(-1)
        for j in range(v.size):
            out = []
            for sign in (1, -1):
                pert = v.copy().reshape(-1)
                pert[j] += sign * delta
                feed = dict(feed_extra)
                feed.update({p: (pert.reshape(v.shape) if k == i else values[k]) for k, p in enumerate(phs)})
                out.append(sess.run(loss, feed))
            flat[j] = (out[0] - out[1]) / (2 * delta)
        grads.append(gnum)
    return grads


def check_grad(build, *values, dynamic=False, tol=1e-6):
    """d/dx of sum(build(x...) * w) for a random w: tf.gradients vs central differences in float64
    (dynamic: the placeholders have unknown shapes)."""
    values = [np.asarray(v, np.float64) for v in values]
    with tf.Graph().as_default():
        phs = [tf.placeholder(tf.float64, None if dynamic else v.shape) for v in values]
        y = build(*phs)
        with tf.Session() as sess:
            base = {p: v for p, v in zip(phs, values)}
            y_val = np.asarray(sess.run(y, base))
            w = tf.placeholder(tf.float64, None if dynamic else y_val.shape)
            loss = tf.reduce_sum(y * w)
            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                     for g in tf.gradients(loss, phs)]
            w_val = _R.uniform(0.5, 1.5, y_val.shape)
            feed = dict(base)
            feed[w] = w_val
            analytic = sess.run(grads, feed)
            numeric = _numeric(sess, loss, phs, values, {w: w_val})
    for a, n, v in zip(analytic, numeric, values):
        assert np.shape(a) == v.shape
        np.testing.assert_allclose(a, n, rtol=tol, atol=tol)
