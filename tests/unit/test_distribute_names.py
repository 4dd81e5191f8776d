"""tf.distribute.Server (tf.train.Server under its other TF name), tf.distribute.RunOptions (the
options of strategy.run) and tf.distribute.experimental_set_strategy (a strategy made current
without a `with` block)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf


def test_server_is_train_server():
    # one class under both of TF's names (its serving is tested as tf.train.Server, in tests/cluster)
    assert tf.distribute.Server is tf.train.Server


def test_run_options_fields_and_defaults_are_tensorflows():
    o = tf.distribute.RunOptions()
    assert o == (True, False, None)
    assert o._fields == ("experimental_enable_dynamic_batch_size", "experimental_bucketizing_dynamic_shape",
                         "experimental_xla_options")
    o = tf.distribute.RunOptions(experimental_bucketizing_dynamic_shape=True)
    assert o.experimental_bucketizing_dynamic_shape and o.experimental_enable_dynamic_batch_size
    assert repr(o).startswith("RunOptions(experimental_enable_dynamic_batch_size=True")


def test_strategy_run_takes_run_options():
    with tf.Graph().as_default():
        strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
        with strategy.scope():
            out = strategy.run(lambda x: x * 2.0, args=(tf.constant([1.0, 2.0]),),
                               options=tf.distribute.RunOptions())
            with pytest.raises(TypeError, match="RunOptions"):
                strategy.run(lambda: 1.0, options={"experimental_enable_dynamic_batch_size": True})
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(strategy.experimental_local_results(out))[0], [2.0, 4.0])


def test_experimental_set_strategy_is_a_scope_until_reset():
    with tf.Graph().as_default() as g:
        strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
        assert not tf.distribute.has_strategy()
        tf.distribute.experimental_set_strategy(strategy)
        assert tf.distribute.get_strategy() is strategy and tf.distribute.in_cross_replica_context()
        v = tf.Variable(1.0)
        assert strategy.extended.variable_created_in_scope(v)
        with tf.Graph().as_default():   # per graph, as TF's
            assert not tf.distribute.has_strategy()
        other = tf.distribute.OneDeviceStrategy("/cpu:0")
        tf.distribute.experimental_set_strategy(other)   # replaces the first
        assert tf.distribute.get_strategy() is other
        tf.distribute.experimental_set_strategy(None)
        assert not tf.distribute.has_strategy() and g._global_distribute_strategy_scope is None
        with other.scope():
            with pytest.raises(RuntimeError, match="inside a `tf.distribute.Strategy` scope"):
                tf.distribute.experimental_set_strategy(strategy)
        assert not tf.distribute.has_strategy()
