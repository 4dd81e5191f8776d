"""tf.keras.optimizers against TF 2.15's graph-mode Keras (OptimizerV2, recorded by
fixtures/record_tf_keras.py): three steps of each optimizer on a quadratic, the names of its
weights and variables (checkpoints and HDF5 optimizer weights line up), its iterations and
config; get by name/config/instance/tf.train.Optimizer; get_weights/set_weights."""
import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.keras_cases import OPTIMIZERS, SPARSE_ADAM_IDS, SPARSE_OPTIMIZERS, build_optimizer, build_sparse_adam

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_keras.json")) as f:
    RECORDED = json.load(f)
TF215_ONLY_CONFIG = {"beta"}  # Ftrl's beta came after TF 1.15


@pytest.mark.parametrize("case", range(len(OPTIMIZERS)), ids=[f"{c}{k}" for c, k in OPTIMIZERS])
def test_steps_weights_and_config_match_tf(case):
    class_name, kwargs = OPTIMIZERS[case]
    recorded = RECORDED["optimizers"][case]
    with tf.Graph().as_default():
        w, optimizer, updates = build_optimizer(tf, tf.keras, class_name, kwargs)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            steps = []
            for _ in range(3):
                s.run(updates)
                steps.append(s.run(w))
            assert s.run(optimizer.iterations) == recorded["iterations"]
        assert [v.name for v in optimizer.weights] == recorded["weights"]
        assert [v.name for v in tf.global_variables()] == [
            n for n in recorded["variables"] if n.rpartition("/")[2][:-2] not in TF215_ONLY_CONFIG]
    np.testing.assert_array_equal(steps, np.array(recorded["steps"], np.float32))   # TF's bits
    config = optimizer.get_config()
    want = {k: v for k, v in recorded["config"]["config"].items() if k not in TF215_ONLY_CONFIG}
    assert sorted(config) == sorted(want)
    for key, value in want.items():
        assert config[key] == pytest.approx(value, rel=1e-6), key


@pytest.mark.parametrize("case", range(len(SPARSE_OPTIMIZERS)), ids=[f"{c}{k}" for c, k in SPARSE_OPTIMIZERS])
def test_sparse_gradients_update_as_tf(case):
    """IndexedSlices gradients with a repeated row, and a row without a gradient (which Keras's
    sparse rules leave alone: Ftrl's dense rule would move it)."""
    class_name, kwargs = SPARSE_OPTIMIZERS[case]
    with tf.Graph().as_default():
        w, optimizer, updates = build_optimizer(tf, tf.keras, class_name, kwargs, sparse=True)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            steps = []
            for _ in range(3):
                s.run(updates)
                steps.append(s.run(w))
    np.testing.assert_array_equal(steps, np.array(RECORDED["sparse_optimizers"][case]["steps"], np.float32))


def test_a_variable_constraint_applies_after_each_update():
    with tf.Graph().as_default():
        w = tf.Variable([1.0, -1.0], use_resource=True, constraint=lambda v: tf.clip_by_value(v, -0.5, 0.5))
        step = tf.keras.optimizers.SGD(0.1).minimize(lambda: tf.reduce_sum(w), [w])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(step)
            np.testing.assert_allclose(s.run(w), [0.5, -0.5])


def test_slot_names_follow_the_variable_scope():
    with tf.Graph().as_default():
        with tf.variable_scope("dense"):
            kernel = tf.get_variable("kernel", [2, 2], use_resource=True)
        optimizer = tf.keras.optimizers.Adam()
        optimizer.minimize(lambda: tf.reduce_sum(kernel * kernel), [kernel])
        assert [v.op.name for v in optimizer.weights] == ["Adam/iter", "Adam/dense/kernel/m", "Adam/dense/kernel/v"]
        assert optimizer.get_slot(kernel, "m") is optimizer.weights[1]
        assert optimizer.get_slot_names() == ["m", "v"]


@pytest.mark.parametrize("class_name,kwargs,slots", [
    ("Adam", {"amsgrad": True}, ["a/m", "b/m", "a/v", "b/v", "a/vhat", "b/vhat"]),
    ("Ftrl", {}, ["a/accumulator", "a/linear", "b/accumulator", "b/linear"]),
    ("RMSprop", {"momentum": 0.1, "centered": True}, ["a/rms", "b/rms", "a/momentum", "b/momentum", "a/mg", "b/mg"]),
    ("Nadam", {}, ["momentum_cache", "a/m", "b/m", "a/v", "b/v"])])
def test_weights_order_of_two_variables_is_keras_hdf5_order(class_name, kwargs, slots):
    with tf.Graph().as_default():
        a = tf.Variable([1.0, 2.0], name="a", use_resource=True)
        b = tf.Variable(3.0, name="b", use_resource=True)
        optimizer = getattr(tf.keras.optimizers, class_name)(**kwargs)
        optimizer.get_updates(tf.reduce_sum(a * a) + b * b, [a, b])
        assert [v.op.name for v in optimizer.weights] == [f"{class_name}/{n}" for n in ["iter"] + slots]


def test_get_weights_set_weights_and_lr_alias():
    with tf.Graph().as_default():
        w, optimizer, updates = build_optimizer(tf, tf.keras, "SGD", {"lr": 0.1, "momentum": 0.5})
        assert optimizer.lr is optimizer.learning_rate
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(updates)
            iterations, momentum = optimizer.get_weights()
            assert iterations == 1 and momentum.shape == (3,)
            optimizer.set_weights([np.int64(7), np.ones(3, np.float32)])
            assert s.run(optimizer.iterations) == 7
            np.testing.assert_array_equal(s.run(optimizer.weights[1]), np.ones(3))
            with pytest.raises(ValueError, match="expecting 2 weights"):
                optimizer.set_weights([np.ones(3, np.float32)])
            with pytest.raises(ValueError, match="not compatible"):
                optimizer.set_weights([np.int64(7), np.ones(4, np.float32)])
            optimizer.learning_rate = 0.5   # loaded into "SGD/learning_rate" in the default session
            assert s.run(optimizer.learning_rate) == 0.5


def test_get_by_name_config_instance_and_train_optimizer():
    optimizers = tf.keras.optimizers
    adam = optimizers.get("adam")
    assert type(adam) is optimizers.Adam and adam.get_config()["learning_rate"] == 0.001
    assert type(optimizers.get("RMSprop")) is optimizers.RMSprop
    sgd = optimizers.get({"class_name": "SGD", "config": {"lr": 0.3, "momentum": 0.2, "nesterov": True}})
    assert sgd.get_config() == {"name": "SGD", "learning_rate": 0.3, "decay": 0.0, "momentum": 0.2, "nesterov": True}
    assert optimizers.deserialize(optimizers.serialize(sgd)).get_config() == sgd.get_config()
    assert optimizers.get(sgd) is sgd
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0], use_resource=True)
        wrapped = optimizers.get(tf.train.GradientDescentOptimizer(0.5))
        assert isinstance(wrapped, optimizers.TFOptimizer)
        step = wrapped.get_updates(tf.reduce_sum(v * v), [v])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(step)
            np.testing.assert_allclose(s.run(v), [0.0, 0.0])
            assert s.run(wrapped.iterations) == 1


def test_bad_identifiers_and_arguments_are_value_errors_naming_them():
    with pytest.raises(ValueError, match="Unknown optimizer: no_such_thing"):
        tf.keras.optimizers.get("no_such_thing")
    assert RECORDED["errors"]["optimizers"].startswith("Unknown optimizer")
    with pytest.raises(ValueError, match="Could not interpret optimizer identifier"):
        tf.keras.optimizers.get(0.1)
    with pytest.raises(TypeError, match="Unexpected keyword argument passed to optimizer: beta"):
        tf.keras.optimizers.SGD(beta=1)
    with pytest.raises(ValueError, match="momentum"):
        tf.keras.optimizers.SGD(momentum=1.5)
    with tf.Graph().as_default():
        v = tf.Variable(1.0, use_resource=True)
        u = tf.Variable(1.0, use_resource=True)
        with pytest.raises(ValueError, match="None` for gradient"):
            tf.keras.optimizers.SGD().get_updates(v * 2.0, [v, u])


@pytest.mark.parametrize("amsgrad", [False, True])
def test_sparse_adam_decays_every_row_as_keras(amsgrad):
    """An embedding trained by Adam on rows that change each step gives TF's values to the bit:
    Keras's sparse rule decays m and v of rows without a gradient (m * beta_1) and takes the
    learning rate as lr * (sqrt(1 - beta_2^t) / (1 - beta_1^t))."""
    with tf.Graph().as_default():
        w, ids, updates = build_sparse_adam(tf, tf.keras, amsgrad)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            recorded = RECORDED["sparse_amsgrad_steps" if amsgrad else "sparse_adam_steps"]
            for step_ids, want in zip(SPARSE_ADAM_IDS, recorded):
                s.run(updates, {ids: step_ids})
                np.testing.assert_array_equal(s.run(w), np.array(want, np.float32))
