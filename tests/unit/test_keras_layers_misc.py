"""tf.keras.layers normalization, embedding, merge, advanced activation, noise and spatial dropout
layers in graph mode: outputs, gradients and variables against TF 2.15 (fixtures/
keras_layer_cases.py), batch normalization's moving statistics and the learning phase, masks,
get_config round trips of every recorded layer, and the errors of inputs that do not match."""
from __future__ import annotations

import json

import numpy as np
import pytest

import tensorweave as tf
from fixtures import keras_layer_cases as cases
from keras_layer_recordings import check_case

L = tf.keras.layers
K = tf.keras.backend
CONV_MODULES = {"tensorweave.keras.layers.convolutional", "tensorweave.keras.layers.pooling",
                "tensorweave.keras.layers.local"}
MISC_CASES = [name for name, case in cases.CASES.items() if getattr(L, case[0]).__module__ not in CONV_MODULES]


@pytest.mark.parametrize("name", MISC_CASES)
def test_layer_matches_tf(name):
    check_case(name)


@pytest.mark.parametrize("name", list(cases.CASES))
def test_get_config_round_trip(name):
    cls, kwargs, shapes, call_kwargs, dtype = cases.CASES[name]
    layer, xs, y, feeds, _ = cases.build(tf, name)
    config = layer.get_config()
    json.dumps(config)   # a config is JSON
    clone = getattr(L, cls).from_config(config)
    assert type(clone) is type(layer) and clone.get_config() == config
    again = L.deserialize(json.loads(json.dumps(L.serialize(layer))))
    assert type(again) is type(layer) and again.name == layer.name
    inputs = list(xs) if isinstance(shapes, list) else xs[0]
    y2 = clone(inputs, **call_kwargs)
    assert y2.shape.as_list() == y.shape.as_list()
    assert clone.compute_output_shape([x.shape for x in xs] if isinstance(shapes, list) else xs[0].shape).as_list() \
        == y.shape.as_list()
    clone.set_weights(layer.get_weights())
    a, b = K.get_session().run([y, y2], feeds)
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_batch_normalization_follows_the_learning_phase_and_updates_moving_statistics():
    x = tf.keras.Input((3,))
    bn = L.BatchNormalization(momentum=0.5, epsilon=0.0)
    y = bn(x)
    assert len(bn.updates) == 2
    data = np.array([[1.0, 2.0, 3.0], [3.0, 6.0, 9.0]], np.float32)
    sess = K.get_session()
    np.testing.assert_allclose(sess.run(y, {x: data}), data, rtol=1e-6)   # test phase: moving mean 0, variance 1
    sess.run(bn.updates, {x: data})   # a no-op in the test phase
    np.testing.assert_allclose(sess.run(bn.moving_mean), [0, 0, 0])
    train = sess.run(y, {x: data, K.learning_phase(): True})
    np.testing.assert_allclose(train, [[-1, -1, -1], [1, 1, 1]], rtol=1e-6)
    sess.run(bn.updates, {x: data, K.learning_phase(): True})
    np.testing.assert_allclose(sess.run(bn.moving_mean), 0.5 * data.mean(0), rtol=1e-6)
    np.testing.assert_allclose(sess.run(bn.moving_variance), 0.5 + 0.5 * data.var(0), rtol=1e-6)
    fixed = L.BatchNormalization()
    assert fixed(x, training=False) is not None and fixed.updates == []


def test_batch_normalization_in_a_model_trained_by_fit_style_updates():
    inp = tf.keras.Input((4, 4, 2))
    out = L.BatchNormalization()(L.Conv2D(3, 3, padding="same")(inp), training=True)
    model = tf.keras.Model(inp, out)
    assert [w.name for w in model.non_trainable_weights] == ["batch_normalization/moving_mean:0",
                                                             "batch_normalization/moving_variance:0"]
    assert len(model.updates) == 2


def test_embedding_mask_and_masked_average():
    ids = tf.keras.Input((4,), dtype="int32")
    emb = L.Embedding(5, 2, mask_zero=True, embeddings_initializer="ones")
    vectors = emb(ids)
    mean = L.GlobalAveragePooling1D()(vectors)
    data = np.array([[1, 2, 0, 0], [3, 0, 0, 0]], np.int32)
    sess = K.get_session()
    np.testing.assert_array_equal(sess.run(K.keras_mask(vectors), {ids: data}), data != 0)
    emb.set_weights([np.arange(10, dtype=np.float32).reshape(5, 2)])
    np.testing.assert_allclose(sess.run(mean, {ids: data}), [[3.0, 4.0], [6.0, 7.0]])
    assert K.keras_mask(mean) is None
    fixed = L.Embedding(5, 2, input_length=4)
    assert fixed.compute_output_shape((None, 4)).as_list() == [None, 4, 2]
    model = tf.keras.Sequential([L.Embedding(5, 2, input_length=3), L.Flatten(), L.Dense(1)])
    assert model.output_shape == (None, 1)
    with pytest.raises(ValueError, match='"input_length" is 3, but received input has shape'):
        model.layers[0].compute_output_shape((None, 4))


def test_merge_layers_check_their_input_shapes():
    a, b = tf.keras.Input((3,)), tf.keras.Input((4,))
    with pytest.raises(ValueError, match=r"Layer add: Operands could not be broadcast together with shapes "
                                         r"\(3,\) \(4,\)"):
        L.Add()([a, b])
    with pytest.raises(ValueError, match=r"Layer concatenate: a `Concatenate` layer requires inputs with matching "
                                         r"shapes except for the concat axis. Got inputs shapes: "
                                         r"\[\(None, 2, 3\), \(None, 3, 4\)\]"):
        L.Concatenate()([tf.keras.Input((2, 3)), tf.keras.Input((3, 4))])
    with pytest.raises(ValueError, match=r"Layer dot: Dimension incompatibility 3 != 4"):
        L.Dot(axes=1)([a, b])
    with pytest.raises(ValueError, match="should be called on a list of at least 2 inputs"):
        L.Maximum()([a])
    with pytest.raises(ValueError, match="exactly 2 inputs"):
        L.Subtract()([a, a, a])
    with pytest.raises(ValueError, match="different batch sizes"):
        L.Add()([tf.placeholder(tf.float32, [2, 3]), tf.placeholder(tf.float32, [5, 3])])
    assert L.concatenate([a, b]).shape.as_list() == [None, 7]
    assert L.add([a, a]).shape.as_list() == [None, 3]
    assert L.dot([a, a], axes=-1, normalize=True).shape.as_list() == [None, 1]
    c = L.Concatenate(axis=1)
    assert c.compute_output_shape([(None, 2, 3), (None, None, 3)]).as_list() == [None, None, 3]


def test_merge_masks_combine():
    ids_a, ids_b = tf.keras.Input((3,), dtype="int32"), tf.keras.Input((3,), dtype="int32")
    ea, eb = L.Embedding(4, 2, mask_zero=True)(ids_a), L.Embedding(4, 2, mask_zero=True)(ids_b)
    added = L.Add()([ea, eb])
    joined = L.Concatenate(axis=1)([ea, eb])
    a = np.array([[1, 0, 2]], np.int32)
    b = np.array([[1, 3, 0]], np.int32)
    sess = K.get_session()
    np.testing.assert_array_equal(sess.run(K.keras_mask(added), {ids_a: a, ids_b: b}), [[True, False, False]])
    np.testing.assert_array_equal(sess.run(K.keras_mask(joined), {ids_a: a, ids_b: b}),
                                  [[True, False, True, True, True, False]])


def test_activation_layer_arguments():
    with pytest.raises(ValueError, match="max_value of Relu layer cannot be negative value: -1"):
        L.ReLU(max_value=-1)
    x = tf.placeholder(tf.float32, [None, 4])
    y = L.ReLU(max_value=6.0)(x)
    got = K.get_session().run(y, {x: [[-1.0, 2.0, 7.0, 0.5]]})
    np.testing.assert_allclose(got, [[0.0, 2.0, 6.0, 0.5]])
    prelu = L.PReLU(alpha_initializer=tf.keras.initializers.Constant(0.25))
    out = prelu(x)
    assert prelu.weights[0].name == "p_re_lu/alpha:0" and prelu.weights[0].shape.as_list() == [4]
    np.testing.assert_allclose(K.get_session().run(out, {x: [[-4.0, 2.0, -1.0, 0.0]]}), [[-1.0, 2.0, -0.25, 0.0]])


@pytest.mark.parametrize("layer", [lambda: L.GaussianNoise(0.5), lambda: L.GaussianDropout(0.3),
                                   lambda: L.AlphaDropout(0.3, seed=1), lambda: L.SpatialDropout1D(0.5),
                                   lambda: L.SpatialDropout2D(0.5), lambda: L.SpatialDropout3D(0.5)],
                         ids=["gaussian_noise", "gaussian_dropout", "alpha_dropout", "spatial1d", "spatial2d",
                              "spatial3d"])
def test_noise_layers_act_only_in_training(layer):
    made = layer()
    rank = getattr(made, "rank", 1) + 2
    shape = (8,) + (6,) * (rank - 2) + (16,)
    x = tf.placeholder(tf.float32, (None,) + shape[1:])
    y, y_train = made(x), made(x, training=True)
    data = np.random.RandomState(0).uniform(0.5, 1.5, shape).astype(np.float32)
    sess = K.get_session()
    np.testing.assert_array_equal(sess.run(y, {x: data}), data)
    noisy = sess.run(y_train, {x: data})
    assert not np.allclose(noisy, data)
    assert not np.allclose(sess.run(y, {x: data, K.learning_phase(): True}), data)
    if type(made).__name__.startswith("Spatial"):
        kept = noisy != 0   # one draw per sample and channel: every position agrees
        per_channel = kept.reshape(shape[0], -1, shape[-1])
        assert (per_channel == per_channel[:, :1, :]).all() and 0 < kept.mean() < 1
        np.testing.assert_allclose(noisy[kept], data[kept] * 2, rtol=1e-6)
    elif type(made).__name__ == "AlphaDropout":
        big = np.random.RandomState(1).normal(size=(20000, 16)).astype(np.float32)
        z = tf.placeholder(tf.float32, [None, 16])
        out = sess.run(made(z, training=True), {z: big})
        assert abs(out.mean() - big.mean()) < 0.05 and abs(out.std() - big.std()) < 0.05


def test_functional_model_of_these_layers_round_trips_through_json():
    a, b = tf.keras.Input((6, 6, 2)), tf.keras.Input((6, 6, 2))
    x = L.Conv2D(3, 3, padding="same", activation="relu")(a)
    y = L.SeparableConv2D(3, 3, padding="same")(L.ZeroPadding2D(1)(L.Cropping2D(1)(b)))
    m = L.BatchNormalization()(L.concatenate([x, y]))
    m = L.GlobalAveragePooling2D()(L.UpSampling2D()(L.MaxPooling2D()(m)))
    out = L.Dense(2)(L.add([m, L.LeakyReLU()(L.Dense(6)(m))]))
    model = tf.keras.Model([a, b], out)
    clone = tf.keras.models.model_from_json(model.to_json())
    assert [type(layer).__name__ for layer in clone.layers] == [type(layer).__name__ for layer in model.layers]
    weights = [cases.weight_array(w.name, w.shape.as_list()) for w in model.weights]
    model.set_weights(weights)
    clone.set_weights(weights)
    feeds = {a: cases.input_array((2, 6, 6, 2), 0, "float32"), b: cases.input_array((2, 6, 6, 2), 1, "float32")}
    want = K.get_session().run(model.output, feeds)
    got = K.get_session().run(clone.output, {clone.inputs[0]: feeds[a], clone.inputs[1]: feeds[b]})
    np.testing.assert_allclose(got, want, rtol=1e-6)
