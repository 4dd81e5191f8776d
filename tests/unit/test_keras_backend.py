"""tf.keras.backend in graph mode: the Keras session and variable initialisation, the learning
phase, K.function with updates, gradients, get/set values, and the math wrappers against numpy."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.recorded import decode

K = tf.keras.backend


def test_get_session_is_made_once_per_graph_and_initialises_keras_variables():
    v = K.variable([[1.0, 2.0]], name="v")
    plain = tf.get_variable("plain", shape=[2], initializer=tf.ones_initializer())
    sess = K.get_session()
    assert K.get_session() is sess and sess.graph is tf.get_default_graph()
    np.testing.assert_array_equal(sess.run(v), [[1.0, 2.0]])
    # Keras initialises only the variables it made (TF 1.15): a tf.get_variable stays the program's
    assert not sess.run(tf.is_variable_initialized(plain))
    w = K.variable(np.zeros(3), dtype="float64")       # made after the first get_session
    np.testing.assert_array_equal(K.get_session().run(w), np.zeros(3))
    assert w.dtype.base_dtype == tf.float64
    with tf.Graph().as_default() as g:
        assert K.get_session() is not sess and K.get_session().graph is g


def test_get_session_prefers_the_default_session_and_set_session():
    v = K.variable(3.0)
    with tf.Session() as sess:
        assert K.get_session() is sess
        assert sess.run(v) == 3.0          # initialised in that session too
    other = tf.Session()
    K.set_session(other)
    assert K.get_session() is other and K.get_value(v) == 3.0
    K.set_value(v, 5.0)
    assert other.run(v) == 5.0


def test_set_value_does_not_reinitialise_and_existing_values_survive():
    v = K.variable([1.0, 2.0])
    K.set_value(v, [7.0, 8.0])
    K.variable(0.0)                        # a new variable: only it is initialised on the next use
    np.testing.assert_array_equal(K.get_value(v), [7.0, 8.0])
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        K.set_value(v, [1.0, 2.0, 3.0])
    a, b = K.variable(1.0), K.variable(2.0)
    K.batch_set_value([(a, 10.0), (b, 20.0)])
    assert K.batch_get_value([a, b]) == [10.0, 20.0] and K.eval(a) == 10.0


def test_clear_session_starts_a_new_graph_and_names():
    first = tf.keras.layers.Dense(1)
    graph = tf.get_default_graph()
    K.clear_session()
    assert tf.get_default_graph() is not graph
    assert first.name == "dense" and tf.keras.layers.Dense(1).name == "dense"
    assert K.get_uid("x") == 1 and K.get_uid("x") == 2
    K.reset_uids()
    assert K.get_uid("x") == 1


def test_learning_phase_is_a_bool_placeholder_with_default_false():
    phase = K.learning_phase()
    assert phase is K.learning_phase()
    assert phase.op.type == "PlaceholderWithDefault" and phase.name == "keras_learning_phase:0"
    assert phase.dtype == tf.bool and phase.shape.as_list() == []
    y = K.in_train_phase(tf.constant(1.0), tf.constant(2.0))
    sess = K.get_session()
    assert sess.run(y) == 2.0 and sess.run(y, {phase: True}) == 1.0
    K.set_learning_phase(1)
    assert K.learning_phase() == 1 and K.in_train_phase(3, 4) == 3
    with tf.Graph().as_default():
        assert K.learning_phase().op.type == "PlaceholderWithDefault"


def test_function_runs_outputs_and_updates():
    x = K.placeholder(shape=(None, 2))
    counter, total = K.variable(0.0), K.variable(0.0)
    f = K.function([x], [K.sum(x, axis=1), K.mean(x)], updates=[(counter, counter + 1.0),
                                                               tf.assign_add(total, K.sum(x))])
    sums, mean = f([np.array([[1.0, 2.0], [3.0, 4.0]])])
    np.testing.assert_array_equal(sums, [3.0, 7.0])
    assert mean == 2.5
    assert K.batch_get_value([counter, total]) == [1.0, 10.0]
    f([np.ones((1, 2))])
    assert K.batch_get_value([counter, total]) == [2.0, 12.0]
    step = K.variable(0.0)
    read_then_bump = K.function([], [step * 1.0], updates=[(step, step + 1.0)])
    assert [read_then_bump([])[0] for _ in range(3)] == [0.0, 1.0, 2.0]     # outputs see the value before updates
    with pytest.raises(ValueError, match="expects 1 input values, got 2"):
        f([np.ones((1, 2)), np.ones((1, 2))])


def test_gradients_of_a_keras_expression():
    w = K.variable([[1.0], [2.0]])
    x = K.placeholder(shape=(None, 2))
    loss = K.sum(K.square(K.dot(x, w)))
    (grad,) = K.gradients(loss, [w])
    data = np.array([[1.0, 1.0], [0.5, -1.0]], np.float32)
    got = K.get_session().run(grad, {x: data})
    np.testing.assert_allclose(got, 2 * data.T @ (data @ np.array([[1.0], [2.0]])), rtol=1e-6)


def test_shapes_dtypes_and_configuration():
    p = K.placeholder(shape=(None, 3, 4), dtype="int32", name="p")
    assert K.int_shape(p) == (None, 3, 4) and K.ndim(p) == 3 and K.dtype(p) == "int32"
    assert K.int_shape(K.placeholder(ndim=2)) == (None, None)
    assert K.is_placeholder(p) and not K.is_keras_tensor(p)
    assert K.is_keras_tensor(tf.keras.Input((2,)))
    assert K.floatx() == "float32" and K.epsilon() == 1e-7 and K.image_data_format() == "channels_last"
    K.set_floatx("float64")
    try:
        assert K.variable(1.0).dtype.base_dtype == tf.float64
        assert tf.keras.layers.Dense(1)(K.placeholder(shape=(None, 2))).dtype == tf.float64
    finally:
        K.set_floatx("float32")
    with pytest.raises(ValueError, match="Unknown floatx type"):
        K.set_floatx("int8")
    assert K.count_params(K.zeros((3, 4))) == 12
    np.testing.assert_array_equal(K.eval(K.ones((2,))), [1.0, 1.0])
    np.testing.assert_array_equal(K.eval(K.eye(2)), np.eye(2))


def test_math_wrappers_match_numpy():
    a = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]], np.float32)
    b = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    c = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10
    x = K.constant(a)
    cases = {
        "dot": (K.dot(x, K.constant(b)), a @ b),
        "dot3": (K.dot(K.constant(c), K.constant(b.T)), c @ b.T),
        "sum": (K.sum(x, axis=1, keepdims=True), a.sum(1, keepdims=True)),
        "mean": (K.mean(x, axis=(0, 1)), a.mean()),
        "max": (K.max(x, axis=0), a.max(0)),
        "min": (K.min(x), a.min()),
        "prod": (K.prod(x, axis=-1), a.prod(-1)),
        "std": (K.std(x, axis=0), a.std(0)),
        "var": (K.var(x), a.var()),
        "concat": (K.concatenate([x, x], axis=-1), np.concatenate([a, a], -1)),
        "reshape": (K.reshape(x, (3, 2)), a.reshape(3, 2)),
        "permute": (K.permute_dimensions(K.constant(c), (2, 0, 1)), c.transpose(2, 0, 1)),
        "batch_flatten": (K.batch_flatten(K.constant(c)), c.reshape(2, -1)),
        "repeat": (K.repeat(x, 2), np.repeat(a[:, None], 2, 1)),
        "expand_squeeze": (K.squeeze(K.expand_dims(x, 1), 1), a),
        "abs": (K.abs(x), np.abs(a)),
        "sqrt": (K.sqrt(x), np.sqrt(np.maximum(a, 0))),
        "exp": (K.exp(x), np.exp(a)),
        "square": (K.square(x), a ** 2),
        "pow": (K.pow(x, 2.0), a ** 2),
        "clip": (K.clip(x, -1.0, 2.0), np.clip(a, -1, 2)),
        "maximum": (K.maximum(x, 0.0), np.maximum(a, 0)),
        "relu": (K.relu(x, alpha=0.1, max_value=4.0), np.where(a > 0, np.minimum(a, 4), 0.1 * a)),
        "relu_threshold": (K.relu(x, threshold=2.0), np.where(a > 2, a, 0)),
        # a threshold with a cap clips at 0, not at the threshold (as TF 2.15's K.relu gives)
        "relu_threshold_max": (K.relu(x, threshold=2.0, max_value=4.0), np.clip(np.where(a > 2, a, 0), 0, 4)),
        "relu_negative_threshold_max": (K.relu(x, threshold=-3.0, max_value=4.0),
                                        np.clip(np.where(a > -3, a, 0), 0, 4)),
        "relu_alpha_threshold_max": (K.relu(x, alpha=0.1, threshold=2.0, max_value=4.0),
                                     np.clip(np.where(a > 2, a, 0), 0, 4) - 0.1 * np.maximum(2 - a, 0)),
        "sigmoid": (K.sigmoid(x), 1 / (1 + np.exp(-a))),
        "hard_sigmoid": (K.hard_sigmoid(x), np.clip(0.2 * a + 0.5, 0, 1)),
        "softmax": (K.softmax(x), np.exp(a) / np.exp(a).sum(-1, keepdims=True)),
        "elu": (K.elu(x, 0.5), np.where(a > 0, a, 0.5 * (np.exp(a) - 1))),
        "argmax": (K.argmax(x), a.argmax(-1)),
        "switch": (K.switch(K.greater(x, 0.0), x, -x), np.abs(a)),
        "logsumexp": (K.logsumexp(x, axis=1), np.log(np.exp(a).sum(1))),
        "l2_normalize": (K.l2_normalize(x, axis=1), a / np.linalg.norm(a, axis=1, keepdims=True)),
        "one_hot": (K.one_hot(K.constant([0, 2], "int32"), 3), np.eye(3)[[0, 2]]),
        "gather": (K.gather(x, [1]), a[[1]]),
        "batch_dot": (K.batch_dot(K.constant(c), K.constant(c), axes=(2, 2)), np.einsum("bik,bjk->bij", c, c)),
    }
    names = sorted(cases)
    values = K.get_session().run([cases[n][0] for n in names])
    for name, got in zip(names, values):
        np.testing.assert_allclose(got, cases[name][1], rtol=1e-5, atol=1e-6, err_msg=name)


def test_crossentropies_match_tf():
    with open(os.path.join(os.path.dirname(__file__), "fixtures", "keras_backend.json"), encoding="utf-8") as f:
        recorded = json.load(f)
    logits = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, -1.0]], np.float32)
    probs = tf.constant(np.array([[0.2, 0.3, 0.5], [0.0, 1.0, 0.0]], np.float32))
    one_hot = tf.constant(np.array([[0, 0, 1], [0, 1, 0]], np.float32))
    sparse = tf.constant(np.array([2, 1], np.int32))
    binary = tf.constant(np.array([[1, 0, 1], [0, 1, 1]], np.float32))
    x = tf.constant(logits)
    cases = {
        "cce_probs": K.categorical_crossentropy(one_hot, probs),
        "cce_softmax": K.categorical_crossentropy(one_hot, tf.nn.softmax(x)),
        "cce_logits": K.categorical_crossentropy(one_hot, x, from_logits=True),
        "scce_probs": K.sparse_categorical_crossentropy(sparse, probs),
        "scce_softmax": K.sparse_categorical_crossentropy(sparse, tf.nn.softmax(x)),
        "scce_logits_3d": K.sparse_categorical_crossentropy(tf.reshape(sparse, [1, 2]), x[None], from_logits=True),
        "bce_probs": K.binary_crossentropy(binary, probs),
        "bce_sigmoid": K.binary_crossentropy(binary, tf.sigmoid(x)),
        "bce_logits": K.binary_crossentropy(binary, x, from_logits=True),
    }
    names = sorted(cases)
    assert names == sorted(recorded["cases"])
    values = K.get_session().run([cases[n] for n in names])
    for name, got in zip(names, values):
        want = decode(recorded["cases"][name])
        assert got.shape == want.shape, name
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
    assert recorded["plain_initialized_by_get_session"] is False


def test_sequences_randomness_convolution_and_pooling():
    img = np.arange(2 * 4 * 4 * 1, dtype=np.float32).reshape(2, 4, 4, 1)
    kernel = np.ones((2, 2, 1, 1), np.float32)
    x = K.constant(img)
    ops = [K.reverse(K.constant([[1, 2], [3, 4]]), 1), K.arange(1, 7, 2), K.arange(-3),
           K.cumprod(K.constant([1, 2, 3])), K.conv2d(x, K.constant(kernel)), K.pool2d(x, (2, 2), strides=(2, 2)),
           K.pool2d(x, (2, 2), strides=(2, 2), pool_mode="avg"), K.map_fn(lambda t: t * 2.0, K.constant([1.0, 2.0])),
           K.foldl(lambda a, t: a + t, K.constant([1.0, 2.0, 3.0])), K.random_binomial((1000,), p=0.3, seed=2)]
    rev, rng, empty, cp, conv, mx, avg, mapped, folded, coins = K.get_session().run(ops)
    np.testing.assert_array_equal(rev, [[2, 1], [4, 3]])
    np.testing.assert_array_equal(rng, [1, 3, 5])
    assert empty.shape == (0,) and rng.dtype == np.int32
    np.testing.assert_array_equal(cp, [1, 2, 6])
    windows = img[:, :-1, :-1] + img[:, 1:, :-1] + img[:, :-1, 1:] + img[:, 1:, 1:]
    np.testing.assert_array_equal(conv, windows)
    blocks = img.reshape(2, 2, 2, 2, 2, 1)
    np.testing.assert_array_equal(mx, blocks.max(axis=(2, 4)))
    np.testing.assert_allclose(avg, blocks.mean(axis=(2, 4)))
    np.testing.assert_array_equal(mapped, [2.0, 4.0])
    assert folded == 6.0
    assert set(np.unique(coins)) <= {0.0, 1.0} and 200 < coins.sum() < 400
    with pytest.raises(ValueError, match="Invalid pooling mode"):
        K.pool2d(x, (2, 2), pool_mode="median")
