"""tf.keras.layers core layers in graph mode: outputs and shapes against TF 2.15 (fixtures/
record_keras_engine.py), the learning phase, masks, regularization losses, config round trips."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.recorded import assert_same, decode

keras = tf.keras
K = tf.keras.backend
L = tf.keras.layers

with open(os.path.join(os.path.dirname(__file__), "fixtures", "keras_engine.json"), encoding="utf-8") as f:
    RECORDED = json.load(f)["core_layers"]


def double_plus_one(t):
    return t * 2.0 + 1.0


def test_core_layer_outputs_and_shapes_match_tf():
    x = decode(RECORDED["x"])
    inp = keras.Input((3, 4))
    masking = L.Masking(0.0)
    outs = {
        "flatten": L.Flatten()(inp),
        "reshape": L.Reshape((4, 3))(inp),
        "reshape_infer": L.Reshape((-1, 2))(inp),
        "permute": L.Permute((2, 1))(inp),
        "repeat": L.RepeatVector(2)(L.Flatten()(inp)),
        "masking": masking(inp),
        "activation": L.Activation("sigmoid")(inp),
        "dropout": L.Dropout(0.5)(inp),
        "lambda": L.Lambda(lambda t: t * 2.0 + 1.0)(inp),
        "activity": L.ActivityRegularization(l1=0.1, l2=0.01)(inp),
    }
    names = sorted(outs)
    assert {n: outs[n].shape.as_list() for n in names} == RECORDED["shapes"]
    sess = K.get_session()
    values = sess.run([outs[n] for n in names], {inp: x})
    assert_same(values, [RECORDED["outputs"][n] for n in names])
    assert_same([sess.run(masking.compute_mask(inp), {inp: x})], [RECORDED["mask"]])
    assert_same([sess.run(K.keras_mask(outs["masking"]), {inp: x})], [RECORDED["mask"]])


def test_dense_on_rank_3_and_compute_output_shape():
    dense = L.Dense(5, kernel_initializer="ones", bias_initializer=keras.initializers.Constant(0.5))
    x = keras.Input((2, 3))
    y = dense(x)
    assert y.shape.as_list() == [None, 2, 5]
    assert dense.compute_output_shape((None, 7, 3)).as_list() == [None, 7, 5]
    got = K.get_session().run(y, {x: np.ones((1, 2, 3))})
    np.testing.assert_allclose(got, np.full((1, 2, 5), 3.5))
    with pytest.raises(ValueError, match="last dimension of the inputs to `Dense` should be defined"):
        L.Dense(2)(tf.placeholder(tf.float32, [None, None]))


def test_dropout_follows_the_learning_phase_and_the_training_argument():
    x = keras.Input((1000,))
    y = L.Dropout(0.5, seed=1)(x)
    y_train = L.Dropout(0.5, seed=1)(x, training=True)
    ones = np.ones((1, 1000), np.float32)
    sess = K.get_session()
    np.testing.assert_array_equal(sess.run(y, {x: ones}), ones)       # the learning phase defaults to test
    dropped = sess.run(y, {x: ones, K.learning_phase(): True})
    assert set(np.unique(dropped)) <= {0.0, 2.0} and 300 < np.count_nonzero(dropped) < 700
    assert np.count_nonzero(sess.run(y_train, {x: ones})) < 1000
    rows = sess.run(L.Dropout(0.5, noise_shape=(None, 1), seed=3)(x, training=True), {x: np.ones((8, 1000))})
    assert all(len(set(row)) == 1 for row in rows)      # one draw per sample, any batch size
    f = K.function([x, K.learning_phase()], [y])
    assert np.count_nonzero(f([ones, 1])[0]) < 1000
    np.testing.assert_array_equal(f([ones, 0])[0], ones)


def test_set_learning_phase_fixes_the_phase_at_build_time():
    K.set_learning_phase(1)
    x = keras.Input((1000,))
    y = L.Dropout(0.5)(x)
    assert np.count_nonzero(K.get_session().run(y, {x: np.ones((1, 1000))})) < 1000
    with pytest.raises(ValueError, match="0 or 1"):
        K.set_learning_phase(2)


def test_masking_mask_reaches_a_layer_that_takes_it():
    class MeanOverUnmasked(L.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.supports_masking = True

        def call(self, inputs, mask=None):
            if mask is None:
                return K.mean(inputs, axis=1)
            weights = K.cast(K.expand_dims(mask, -1), inputs.dtype)
            return K.sum(inputs * weights, axis=1) / K.sum(weights, axis=1)

        def compute_mask(self, inputs, mask=None):
            return None

    x = keras.Input((3, 2))
    y = MeanOverUnmasked()(L.Masking()(x))
    data = np.array([[[1, 2], [0, 0], [3, 4]]], np.float32)
    np.testing.assert_allclose(K.get_session().run(y, {x: data}), [[2.0, 3.0]])
    assert K.keras_mask(L.Flatten()(L.Masking()(x))) is None    # a layer without masking support drops it
    model = keras.Model(x, MeanOverUnmasked()(x))      # a mask given to a model's call reaches its layers
    features, mask = tf.placeholder(tf.float32, [None, 3, 2]), tf.placeholder(tf.bool, [None, 3])
    got = K.get_session().run(model(features, mask=mask), {features: data, mask: [[True, False, True]]})
    np.testing.assert_allclose(got, [[2.0, 3.0]])


def test_regularizers_become_layer_losses():
    x = keras.Input((3,))
    dense = L.Dense(2, kernel_initializer="ones", kernel_regularizer=keras.regularizers.l1_l2(0.1, 0.01),
                    bias_regularizer="l2", activity_regularizer=keras.regularizers.l1(1.0))
    y = dense(x)
    act = L.ActivityRegularization(l2=0.5)
    act(y)
    assert len(dense.losses) == 3 and len(act.losses) == 1
    sess = K.get_session()
    kernel_loss, bias_loss = sess.run(dense.losses[:2])
    assert kernel_loss == pytest.approx(0.1 * 6 + 0.01 * 6) and bias_loss == 0.0
    data = np.ones((2, 3), np.float32)     # outputs 3.0 each; the activity penalty is divided by the batch
    assert sess.run(dense.losses[2], {x: data}) == pytest.approx(1.0 * 12 / 2)
    assert sess.run(act.losses[0], {x: data}) == pytest.approx(0.5 * 36 / 2)


def test_core_layer_configs_round_trip():
    layers = [L.Dense(3, activation="relu", kernel_initializer="he_normal", kernel_constraint="unit_norm",
                      bias_regularizer=keras.regularizers.l2(0.5), name="d"),
              L.Activation("tanh"), L.Dropout(0.25, noise_shape=(None, 1), seed=3), L.Flatten("channels_first"),
              L.Reshape((2, -1)), L.Permute((2, 1)), L.RepeatVector(4), L.Masking(-1.0),
              L.ActivityRegularization(0.1, 0.2), L.Lambda(double_plus_one, output_shape=(5,))]
    for layer in layers:
        config = layer.get_config()
        json.dumps(config)
        clone = type(layer).from_config(config) if not isinstance(layer, L.Lambda) else \
            L.Lambda.from_config(config, custom_objects={"double_plus_one": double_plus_one})
        assert clone.get_config() == config
    assert layers[0].get_config()["kernel_initializer"] == {"class_name": "VarianceScaling",
                                                            "config": {"scale": 2.0, "mode": "fan_in",
                                                                       "distribution": "truncated_normal",
                                                                       "seed": None, "dtype": "float32"}}
    with pytest.raises(ValueError, match="wraps a lambda"):
        L.Lambda(lambda t: t).get_config()


def test_lambda_infers_its_output_shape_and_passes_arguments():
    layer = L.Lambda(lambda t, k: K.concatenate([t, t * k]), arguments={"k": 3.0})
    x = keras.Input((2,))
    y = layer(x)
    assert y.shape.as_list() == [None, 4]
    assert layer.compute_output_shape((None, 2)).as_list() == [None, 4]
    np.testing.assert_allclose(K.get_session().run(y, {x: [[1.0, 2.0]]}), [[1, 2, 3, 6]])


def test_reshape_and_permute_errors():
    with pytest.raises(ValueError, match="total size of new array must be unchanged"):
        L.Reshape((5,))(keras.Input((3, 4)))
    with pytest.raises(ValueError, match="Can only specify one unknown dimension"):
        L.Reshape((-1, -1))(keras.Input((3, 4)))
    with pytest.raises(ValueError, match="Invalid permutation `dims`"):
        L.Permute((1, 3))
    with pytest.raises(ValueError, match="expected ndim=3, found ndim=2"):
        L.Permute((2, 1))(keras.Input((3,)))


def test_initializers_resolve_keras_names_and_defaults():
    inits = keras.initializers
    assert inits.serialize(inits.get("glorot_uniform")) == {"class_name": "GlorotUniform",
                                                     "config": {"seed": None, "dtype": "float32"}}
    he = inits.get("he_normal")
    assert isinstance(he, inits.VarianceScaling) and (he.scale, he.mode, he.distribution) == \
        (2.0, "fan_in", "truncated_normal")
    assert inits.get("normal").get_config()["stddev"] == 0.05
    assert inits.get("uniform").get_config()["minval"] == -0.05
    assert isinstance(inits.deserialize({"class_name": "Constant", "config": {"value": 3.0}}), inits.Constant)
    fn = lambda shape, dtype=None: tf.zeros(shape, dtype)  # noqa: E731
    assert inits.get(fn) is fn and inits.get(None) is None
    with pytest.raises(ValueError, match="Unknown initializer: nope"):
        inits.get("nope")
    values = K.get_session().run(inits.RandomNormal(seed=1)((20000,)))
    assert abs(values.std() - 0.05) < 0.002 and abs(values.mean()) < 0.002


def test_activations_by_name():
    A = keras.activations
    assert A.get(None) is A.linear and A.get("relu") is A.relu and A.serialize(A.tanh) == "tanh"
    assert A.deserialize("softmax") is A.softmax
    with pytest.raises(ValueError, match="Unknown activation function: nope"):
        A.get("nope")
    with pytest.raises(ValueError, match="Cannot apply softmax to a tensor that is 1D"):
        A.softmax(tf.constant([1.0, 2.0]))
    x = np.array([[-1.0, 0.5, 2.0]], np.float32)
    got = K.get_session().run([A.selu(tf.constant(x)), A.softsign(tf.constant(x)), A.exponential(tf.constant(x))])
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    np.testing.assert_allclose(got[0], scale * np.where(x > 0, x, alpha * (np.exp(x) - 1)), rtol=1e-5)
    np.testing.assert_allclose(got[1], x / (1 + np.abs(x)), rtol=1e-6)
    np.testing.assert_allclose(got[2], np.exp(x), rtol=1e-6)


def test_constraints_project_as_keras_defines_them():
    C = keras.constraints
    w = np.array([[3.0, -0.1], [4.0, 0.2]], np.float32)
    norms = np.sqrt((w ** 2).sum(0, keepdims=True))
    eps = K.epsilon()
    t = tf.constant(w)
    got = K.get_session().run([C.MaxNorm(2.0)(t), C.NonNeg()(t), C.UnitNorm()(t),
                               C.MinMaxNorm(1.0, 3.0, rate=0.5)(t)])
    np.testing.assert_allclose(got[0], w * np.clip(norms, 0, 2) / (eps + norms), rtol=1e-5)
    np.testing.assert_array_equal(got[1], np.maximum(w, 0))
    np.testing.assert_allclose(got[2], w / (eps + norms), rtol=1e-5)
    desired = 0.5 * np.clip(norms, 1, 3) + 0.5 * norms
    np.testing.assert_allclose(got[3], w * desired / (eps + norms), rtol=1e-5)
    for name, cls in (("max_norm", C.MaxNorm), ("non_neg", C.NonNeg), ("unit_norm", C.UnitNorm),
                      ("min_max_norm", C.MinMaxNorm)):
        c = C.get(name)
        assert isinstance(c, cls) and C.deserialize(C.serialize(c)).get_config() == c.get_config()


def test_regularizers_get_serialize_deserialize():
    R = keras.regularizers
    reg = R.get("l1_l2")
    assert isinstance(reg, R.L1L2) and R.serialize(reg) == {"class_name": "L1L2",
                                                           "config": {"l1": pytest.approx(0.01),
                                                                      "l2": pytest.approx(0.01)}}
    assert R.deserialize(R.serialize(R.l2(0.5))).get_config() == {"l1": 0.0, "l2": 0.5}
    assert K.get_session().run(R.l1(0.5)(tf.constant([1.0, -2.0]))) == 1.5
    dense = tf.layers.Dense(2, kernel_regularizer=R.l2(0.5))     # usable by tf.layers too (TF1 programs)
    dense(tf.ones([1, 3]))
    assert len(tf.losses.get_regularization_losses()) == 1


def test_clone_model_makes_new_layers_with_new_weights():
    inp = keras.Input((3,), name="x")
    model = keras.Model(inp, L.Dense(2, name="out")(L.Dense(4, activation="relu", name="hidden")(inp)))
    clone = keras.models.clone_model(model)
    assert [layer.name for layer in clone.layers] == ["x", "hidden", "out"]
    assert not set(map(id, clone.weights)) & set(map(id, model.weights))
    clone.set_weights(model.get_weights())
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    want, got = K.get_session().run([model.output, clone.output], {model.input: data, clone.input: data})
    np.testing.assert_allclose(got, want, rtol=1e-6)
    seq = keras.Sequential([L.Dense(2, input_shape=(3,))])
    seq_clone = keras.models.clone_model(seq)
    assert isinstance(seq_clone, keras.Sequential) and seq_clone.output_shape == (None, 2)


def test_custom_object_scope_resolves_names_while_open():
    config = L.Lambda(double_plus_one).get_config()
    with pytest.raises(ValueError, match="Unknown function in Lambda layer: double_plus_one"):
        L.Lambda.from_config(config)
    with keras.utils.custom_object_scope({"double_plus_one": double_plus_one}):
        assert L.Lambda.from_config(config).function is double_plus_one
        assert "double_plus_one" in keras.utils.get_custom_objects()
    assert "double_plus_one" not in keras.utils.get_custom_objects()
