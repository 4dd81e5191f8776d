"""tf.nn activations, softmax family, bias_add, l2_loss, softmax cross-entropies, in_top_k
against numpy references computed here."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.nn import losses as losses_module

from unit_helpers import run

rng = np.random.RandomState(42)


pytestmark = pytest.mark.usefixtures("graph", "kernels")


X = rng.randn(3, 5).astype(np.float32) * 3
SCALE, ALPHA = 1.0507009873554805, 1.6732632423543772


@pytest.mark.parametrize("fn,ref", [
    (tf.nn.relu, lambda x: np.maximum(x, 0)),
    (tf.nn.relu6, lambda x: np.minimum(np.maximum(x, 0), 6)),
    (tf.nn.elu, lambda x: np.where(x < 0, np.exp(x) - 1, x)),
    (tf.nn.selu, lambda x: np.where(x < 0, SCALE * ALPHA * (np.exp(x) - 1), SCALE * x)),
    (tf.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x)),
    (tf.nn.softplus, lambda x: np.log1p(np.exp(x))),
    (tf.nn.softsign, lambda x: x / (1 + np.abs(x))),
])
def test_activations(fn, ref):
    y = fn(tf.constant(X))
    assert y.dtype == tf.float32 and y.shape.as_list() == [3, 5]
    out = run(y)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ref(X.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_leaky_relu_alpha_and_op_name():
    y = tf.nn.leaky_relu(tf.constant(X), alpha=0.01)
    assert y.op.type == "LeakyRelu"
    np.testing.assert_allclose(run(y), np.where(X > 0, X, 0.01 * X), rtol=1e-6)


def test_relu_int():
    assert run(tf.nn.relu(tf.constant([-2, 3]))).tolist() == [0, 3]


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_and_log_softmax():
    np.testing.assert_allclose(run(tf.nn.softmax(tf.constant(X))), np_softmax(X), rtol=1e-5)
    np.testing.assert_allclose(run(tf.nn.log_softmax(tf.constant(X))), np.log(np_softmax(X)), rtol=1e-5, atol=1e-6)
    x3 = rng.randn(2, 3, 4)
    np.testing.assert_allclose(run(tf.nn.softmax(tf.constant(x3), axis=1)), np_softmax(x3, 1), rtol=1e-10)
    np.testing.assert_allclose(run(tf.nn.softmax(tf.constant(x3), dim=0)), np_softmax(x3, 0), rtol=1e-10)
    np.testing.assert_allclose(run(tf.nn.log_softmax(tf.constant(x3), axis=1)), np.log(np_softmax(x3, 1)),
                               rtol=1e-10)
    assert tf.nn.softmax(tf.constant(x3), axis=1).shape.as_list() == [2, 3, 4]


def test_softmax_scalar_is_error():
    with pytest.raises(ValueError, match="Softmax"):
        tf.nn.softmax(tf.constant(1.0))


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_bias_add(fmt):
    x = rng.randn(2, 3, 4, 5)
    c = 3 if fmt == "NCHW" else 5
    b = rng.randn(c)
    y = tf.nn.bias_add(tf.constant(x), tf.constant(b), data_format=fmt)
    ref = x + (b.reshape(1, c, 1, 1) if fmt == "NCHW" else b)
    np.testing.assert_allclose(run(y), ref)
    assert y.shape.as_list() == [2, 3, 4, 5]


def test_bias_add_errors():
    with pytest.raises(ValueError, match="BiasAdd"):
        tf.nn.bias_add(tf.constant(np.zeros((2, 3))), tf.constant(np.zeros(4)))
    with pytest.raises(ValueError, match="BiasAdd"):
        tf.nn.bias_add(tf.constant(np.zeros((2, 3))), tf.constant(np.zeros((3, 1))))
    with pytest.raises(ValueError, match="BiasAdd"):
        tf.nn.bias_add(tf.constant(np.zeros(3)), tf.constant(np.zeros(3)))


def test_l2_loss():
    y = tf.nn.l2_loss(tf.constant(X))
    assert y.shape.as_list() == [] and y.dtype == tf.float32
    np.testing.assert_allclose(run(y), (X.astype(np.float64) ** 2).sum() / 2, rtol=1e-5)


def test_softmax_xent():
    logits = rng.randn(4, 5)
    labels = np_softmax(rng.randn(4, 5))
    ref = -(labels * np.log(np_softmax(logits))).sum(-1)
    y = tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.constant(labels), logits=tf.constant(logits))
    assert y.shape.as_list() == [4]
    np.testing.assert_allclose(run(y), ref, rtol=1e-10)
    y1 = tf.nn.softmax_cross_entropy_with_logits(labels=tf.constant(labels), logits=tf.constant(logits))
    np.testing.assert_allclose(run(y1), ref, rtol=1e-10)
    # other axis and rank 3
    l3, g3 = rng.randn(2, 5, 3), np_softmax(rng.randn(2, 5, 3), 1)
    y3 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.constant(g3), logits=tf.constant(l3), axis=1)
    assert y3.shape.as_list() == [2, 3]
    np.testing.assert_allclose(run(y3), -(g3 * np.log(np_softmax(l3, 1))).sum(1), rtol=1e-10)


def test_softmax_xent_positional_is_error():
    with pytest.raises(ValueError, match="softmax_cross_entropy_with_logits"):
        tf.nn.softmax_cross_entropy_with_logits(tf.constant(X), tf.constant(X))


def test_sparse_softmax_xent():
    logits = rng.randn(4, 5).astype(np.float32)
    labels = np.array([0, 4, 2, 2])
    y = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant(labels), logits=tf.constant(logits))
    assert y.shape.as_list() == [4] and y.dtype == tf.float32
    ref = -np.log(np_softmax(logits.astype(np.float64)))[np.arange(4), labels]
    np.testing.assert_allclose(run(y), ref, rtol=1e-5)
    l3 = rng.randn(2, 3, 5)
    lab3 = rng.randint(0, 5, (2, 3))
    y3 = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant(lab3), logits=tf.constant(l3))
    assert y3.shape.as_list() == [2, 3]
    ref3 = -np.log(np_softmax(l3)).reshape(6, 5)[np.arange(6), lab3.reshape(-1)].reshape(2, 3)
    np.testing.assert_allclose(run(y3), ref3, rtol=1e-10)


def test_sparse_softmax_xent_errors():
    lab = tf.placeholder(tf.int32, [2])
    y = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=lab, logits=tf.constant(np.zeros((2, 3))), name="xent")
    with pytest.raises(tf.errors.InvalidArgumentError, match="xent") as e:
        run(y, {lab: [0, 3]})
    assert "outside the valid range" in str(e.value)
    with pytest.raises(tf.errors.InvalidArgumentError, match="xent"):
        run(y, {lab: [-1, 0]})
    with pytest.raises(ValueError, match="Rank mismatch"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([[0]]), logits=tf.constant([[1.0]]))
    with pytest.raises(TypeError, match="SparseSoftmaxCrossEntropyWithLogits"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([0.0]), logits=tf.constant([[1.0]]))


def test_sparse_softmax_xent_large_rows_exact():
    """Rows processed in cache-sized blocks on the intra-op threads give the bits of the whole-array
    formula (log-softmax, then exp for the backprop), infinities and NaN rows included."""
    logits = (rng.randn(300, 3000) * 4).astype(np.float32)
    logits[0, 7], logits[1, :], logits[2, 5] = np.inf, -np.inf, np.nan
    labels = rng.randint(0, 3000, 300)
    x = tf.constant(logits)
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant(labels), logits=x)
    got_loss, got_back = run([loss, loss.op.outputs[1]])
    with np.errstate(all="ignore"):
        s = logits - logits.max(axis=-1, keepdims=True)
        logp = s - np.log(np.exp(s).sum(axis=-1, keepdims=True))
        back = np.exp(logp)
        back[np.arange(300), labels] -= 1
    assert got_loss.tobytes() == (-logp[np.arange(300), labels]).tobytes()
    assert got_back.tobytes() == back.tobytes()


def test_sparse_softmax_xent_rows_each_part_writes_only_its_rows(monkeypatch):
    """The intra-op threads' parts of the sparse cross-entropy write their own rows only: a part's
    last block of rows stops at the part's end (it ran into the next part's rows, which that
    part's thread was computing at the same time: a wrong loss now and then on a loaded machine)."""
    parts = []

    def parts_in_turn(n, work_elems, fn):   # the second part, its rows marked, then the first
        fn(150, n)
        parts.append(fn)
    monkeypatch.setattr(losses_module, "parallel_ranges", parts_in_turn)
    logits = (rng.randn(300, 3000) * 4).astype(np.float32)
    loss, back = losses_module._sparse_xent_rows(logits, rng.randint(0, 3000, 300))
    loss[150:], back[150:] = 7.0, 7.0
    parts[0](0, 150)
    assert (loss[150:] == 7.0).all() and (back[150:] == 7.0).all()


@pytest.mark.parametrize("sparse", [True, False])
def test_softmax_xent_gradient_second_term(sparse):
    """The gradient of the loss alone is grad_loss * backprop: TF skips the softmax term for the
    zeros tf.gradients stands in for the unused backprop output (no Softmax op is built); a
    gradient that does flow into the backprop output adds (g - sum(g * s)) * s."""
    logits = rng.randn(3, 4)
    labels = np.array([1, 0, 3])
    x = tf.constant(logits)
    onehot = np.eye(4)[labels]
    if sparse:
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant(labels), logits=x)
    else:
        loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.constant(onehot), logits=x)
    s = np_softmax(logits)
    graph = tf.get_default_graph()
    before = {op.name for op in graph.get_operations()}
    grad_loss, = tf.gradients(tf.reduce_sum(loss), x)
    assert not [op for op in graph.get_operations() if op.name not in before and op.type == "Softmax"]
    np.testing.assert_allclose(run(grad_loss), s - onehot, rtol=1e-12)
    w = rng.randn(3, 4)
    both, = tf.gradients(tf.reduce_sum(loss) + tf.reduce_sum(loss.op.outputs[1] * w), x)
    second = (w - (w * s).sum(-1, keepdims=True)) * s
    np.testing.assert_allclose(run(both), s - onehot + second, rtol=1e-10)


def test_in_top_k():
    pred = np.array([[0.1, 0.8, 0.1], [0.3, 0.3, 0.4], [0.5, 0.5, 0.0], [np.nan, 0.1, 0.2]], np.float32)
    targets = np.array([1, 0, 1, 1])
    y = tf.nn.in_top_k(tf.constant(pred), tf.constant(targets), 1)
    assert y.dtype == tf.bool and y.shape.as_list() == [4]
    # ties count in the target's favour; a row with a non-finite value is False
    assert run(y).tolist() == [True, False, True, False]
    assert run(tf.nn.in_top_k(tf.constant(pred), tf.constant(targets), 2)).tolist() == [True, True, True, False]
    with pytest.raises(ValueError, match="InTopKV2"):
        tf.nn.in_top_k(tf.constant(pred), tf.constant([1, 2]), 1)
