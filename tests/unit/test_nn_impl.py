"""Python composites of tf.nn: moments, batch_normalization, l2_normalize, dropout, the
sigmoid/weighted cross-entropies, embedding_lookup, xw_plus_b, zero_fraction, conv1d."""
import numpy as np
import pytest

import tensorweave as tf

from unit_helpers import run

rng = np.random.RandomState(5)


pytestmark = pytest.mark.usefixtures("graph")


def test_moments():
    x = rng.randn(4, 3, 2)
    m, v = tf.nn.moments(tf.constant(x), [0, 2])
    assert m.shape.as_list() == [3] and v.shape.as_list() == [3]
    om, ov = run([m, v])
    np.testing.assert_allclose(om, x.mean((0, 2)))
    np.testing.assert_allclose(ov, x.var((0, 2)))
    mk, _ = tf.nn.moments(tf.constant(x), [0, 2], keep_dims=True)
    assert mk.shape.as_list() == [1, 3, 1]


def test_batch_normalization_and_l2_normalize():
    x, mu, var, off, sc = rng.randn(5, 3), rng.randn(3), rng.rand(3), rng.randn(3), rng.rand(3)
    y = tf.nn.batch_normalization(tf.constant(x), mu, var, off, sc, 1e-3)
    np.testing.assert_allclose(run(y), (x - mu) / np.sqrt(var + 1e-3) * sc + off)
    y2 = tf.nn.batch_normalization(tf.constant(x), mu, var, None, None, 1e-3)
    np.testing.assert_allclose(run(y2), (x - mu) / np.sqrt(var + 1e-3))
    n = tf.nn.l2_normalize(tf.constant(x), axis=1)
    np.testing.assert_allclose(run(n), x / np.sqrt((x ** 2).sum(1, keepdims=True)))
    n0 = tf.nn.l2_normalize(tf.constant(np.zeros((2, 2))), dim=0)
    assert np.all(run(n0) == 0)


def test_dropout():
    x = np.ones((200, 50), np.float32)
    y = tf.nn.dropout(tf.constant(x), keep_prob=0.25, seed=1)
    out = run(y)
    assert out.dtype == np.float32 and y.shape.as_list() == [200, 50]
    assert set(np.unique(out).tolist()) <= {0.0, 4.0}
    assert 0.2 < (out > 0).mean() < 0.3
    z = run(tf.nn.dropout(tf.constant(x), rate=0.5, noise_shape=[200, 1], seed=2))
    assert np.all((z == 0) | (z == 2)) and np.all(z == z[:, :1])  # shared along the noise-free dim
    assert tf.nn.dropout(tf.constant(x), keep_prob=1.0).op.type == "Const"
    with pytest.raises(ValueError, match="rate"):
        tf.nn.dropout(tf.constant(x), keep_prob=0.5, rate=0.5)
    with pytest.raises(ValueError, match="keep_prob"):
        tf.nn.dropout(tf.constant(x), keep_prob=1.5)
    with pytest.raises(ValueError, match="floating"):
        tf.nn.dropout(tf.constant([1, 2]), keep_prob=0.5)


def test_sigmoid_and_weighted_xent():
    lg, lb = rng.randn(3, 4) * 3, rng.rand(3, 4)
    sig = 1 / (1 + np.exp(-lg))
    y = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant(lb), logits=tf.constant(lg))
    np.testing.assert_allclose(run(y), -(lb * np.log(sig) + (1 - lb) * np.log(1 - sig)), rtol=1e-9)
    w = tf.nn.weighted_cross_entropy_with_logits(targets=tf.constant(lb), logits=tf.constant(lg), pos_weight=3.0)
    np.testing.assert_allclose(run(w), -(3.0 * lb * np.log(sig) + (1 - lb) * np.log(1 - sig)), rtol=1e-9)
    with pytest.raises(ValueError, match="same shape"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant(lb[:2]), logits=tf.constant(lg))
    with pytest.raises(ValueError, match="named arguments"):
        tf.nn.sigmoid_cross_entropy_with_logits(tf.constant(lb), tf.constant(lg))


def test_embedding_lookup_single_and_indexed_slices_grad():
    params = rng.randn(6, 3)
    ids = np.array([[1, 5], [0, 1]])
    v = tf.Variable(params)
    e = tf.nn.embedding_lookup(v, tf.constant(ids))
    assert e.shape.as_list() == [2, 2, 3]
    (g,) = tf.gradients(tf.reduce_sum(e), [v])
    assert isinstance(g, tf.IndexedSlices)
    t = tf.nn.embedding_lookup(tf.constant(params), ids)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        np.testing.assert_allclose(s.run(e), params[ids])
        np.testing.assert_allclose(s.run(t), params[ids])


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_embedding_lookup_partitioned(strategy):
    full = rng.randn(7, 2)
    if strategy == "mod":
        shards = [full[i::3] for i in range(3)]
    else:
        shards = [full[0:3], full[3:5], full[5:7]]
    ids = np.array([0, 6, 3, 4, 1])
    e = tf.nn.embedding_lookup([tf.constant(s) for s in shards], tf.constant(ids), partition_strategy=strategy)
    np.testing.assert_allclose(run(e), full[ids])


def test_small_composites():
    x, w, b = rng.randn(2, 3), rng.randn(3, 4), rng.randn(4)
    np.testing.assert_allclose(run(tf.nn.xw_plus_b(tf.constant(x), tf.constant(w), tf.constant(b))), x @ w + b)
    np.testing.assert_allclose(run(tf.nn.relu_layer(tf.constant(x), tf.constant(w), tf.constant(b))),
                               np.maximum(x @ w + b, 0))
    z = tf.nn.zero_fraction(tf.constant([0.0, 1.0, 0.0, 2.0]))
    assert z.dtype == tf.float32 and run(z) == 0.5
    v, f = rng.randn(2, 7, 3), rng.randn(3, 3, 2)
    y = tf.nn.conv1d(tf.constant(v), tf.constant(f), 2, "VALID")
    ref = np.stack([np.einsum("nkc,kco->no", v[:, i * 2:i * 2 + 3], f) for i in range(3)], 1)
    assert y.shape.as_list() == [2, 3, 2]
    np.testing.assert_allclose(run(y), ref, rtol=1e-9)


def test_namespace_reexports():
    assert tf.nn.sigmoid is tf.sigmoid and tf.nn.tanh is tf.tanh
    assert tf.nn.max_pool2d is tf.nn.max_pool


def test_weighted_cross_entropy_labels_keyword():
    # TF 1.15 signature: (labels=None, logits=None, pos_weight=None, name=None, targets=None).
    z, x = rng.randn(3), rng.rand(3)
    ref = (1 - z) * x + (1 + (2. - 1) * z) * (np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0))
    for t in (tf.nn.weighted_cross_entropy_with_logits(labels=z, logits=x, pos_weight=2.),
              tf.nn.weighted_cross_entropy_with_logits(targets=z, logits=x, pos_weight=2.),
              tf.nn.weighted_cross_entropy_with_logits(z, x, 2.)):
        np.testing.assert_allclose(run(t), ref, rtol=1e-9)
    with pytest.raises(ValueError, match="both"):
        tf.nn.weighted_cross_entropy_with_logits(labels=z, targets=z, logits=x, pos_weight=2.)


def test_sufficient_statistics_and_normalize_moments():
    x = rng.randn(4, 3).astype(np.float32)
    c, m, v, s = tf.nn.sufficient_statistics(tf.constant(x), [0])
    assert s is None and c.dtype == tf.float32 and m.shape.as_list() == [3]
    rc, rm, rv = run([c, m, v])
    assert rc == 4
    np.testing.assert_allclose(rm, x.sum(0), rtol=1e-5)
    np.testing.assert_allclose(rv, (x ** 2).sum(0), rtol=1e-5)
    c2, m2, v2, s2 = tf.nn.sufficient_statistics(tf.constant(x), [0, 1], shift=0.5, keep_dims=True)
    assert m2.shape.as_list() == [1, 1]
    mean, var = tf.nn.normalize_moments(c2, m2, v2, s2)
    np.testing.assert_allclose(run(mean), [[x.mean()]], rtol=1e-5)
    np.testing.assert_allclose(run(var), [[x.var()]], rtol=1e-4)
    p = tf.placeholder(tf.float32, [None, 3])
    c3 = tf.nn.sufficient_statistics(p, [0])[0]
    assert run(c3, {p: x}) == 4


def test_weighted_moments_and_small_composites():
    x = rng.randn(4, 3)
    w = np.array([[1.], [2.], [0.], [1.]])
    mean, var = tf.nn.weighted_moments(tf.constant(x), [0], tf.constant(w))
    ref_m = (w * x).sum(0) / w.sum()
    np.testing.assert_allclose(run(mean), ref_m)
    np.testing.assert_allclose(run(var), (w * (x - ref_m) ** 2).sum(0) / w.sum())
    assert tf.nn.weighted_moments(tf.constant(x), [0, 1], w, keep_dims=True)[0].shape.as_list() == [1, 1]
    # log_poisson_loss numbers recorded from TensorFlow
    t, li = tf.constant([0., 0.5, 1., 2., 5.]), tf.constant([0.1, -0.2, 0.3, 1., 2.])
    np.testing.assert_allclose(run(tf.nn.log_poisson_loss(t, li)), [1.10517, 0.91873, 1.04986, 0.71828, -2.61094],
                               rtol=1e-5)
    np.testing.assert_allclose(run(tf.nn.log_poisson_loss(t, li, compute_full_loss=True))[3:],
                               [1.37009, 2.1599], rtol=1e-4)
    s = tf.nn.swish(tf.constant(x))
    np.testing.assert_allclose(run(s), x / (1 + np.exp(-x)))


def test_math_linalg_debugging_aliases():
    assert tf.math.top_k is tf.nn.top_k and tf.math.in_top_k is tf.nn.in_top_k
    assert tf.math.softplus is tf.nn.softplus and tf.math.log_softmax is tf.nn.log_softmax
    assert tf.linalg.l2_normalize is tf.nn.l2_normalize and tf.linalg.global_norm is tf.global_norm
    assert tf.debugging.is_nan is tf.is_nan and tf.debugging.check_numerics is tf.check_numerics
