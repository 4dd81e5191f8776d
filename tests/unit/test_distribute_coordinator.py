"""The distribute coordinator's worker context (distribute/distribute_coordinator.py) as Keras's
multi-worker fit uses it, without sockets (no session is made, so no server starts): which task
runs, which callbacks a worker keeps (TensorBoard the chief's only, as TF 1.15's
filter_distributed_callbacks), the strategy's session config, and no coordinator inside another."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distribute import distribute_coordinator as dc
from tensorweave.keras.engine.training_distributed import filter_distributed_callbacks

CLUSTER = {"worker": ["localhost:1", "localhost:2"]}


def _strategy(index, cluster=CLUSTER):
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(tf.train.ClusterSpec(cluster),
                                                                    task_type="worker", task_id=index)
    return tf.distribute.experimental.MultiWorkerMirroredStrategy(cluster_resolver=resolver)


@pytest.mark.parametrize("index", [0, 1])
def test_a_worker_runs_in_its_context_with_the_callbacks_it_keeps(index):
    strategy = _strategy(index)
    assert dc.in_multi_worker_mode(strategy) and dc.get_current_worker_context() is None
    board, checkpoint, history = (tf.keras.callbacks.TensorBoard("/nonexistent"),
                                  tf.keras.callbacks.ModelCheckpoint("/nonexistent/w.h5"), tf.keras.callbacks.History())

    def worker_fn(s):
        context = dc.get_current_worker_context()
        assert s is strategy and (context.task_type, context.task_id) == ("worker", index)
        assert context.is_chief == context.should_checkpoint == (index == 0) and context.num_workers == 2
        assert list(context.session_config.device_filters) == [f"/job:worker/task:{index}"]
        return filter_distributed_callbacks([board, checkpoint, history])

    kept = dc.run_distribute_coordinator(worker_fn, strategy)
    assert kept == ([board, checkpoint, history] if index == 0 else [checkpoint, history])
    assert dc.get_current_worker_context() is None


def test_a_local_strategy_is_not_multi_worker_and_contexts_do_not_nest():
    assert not dc.in_multi_worker_mode(tf.distribute.MirroredStrategy(["/cpu:0"]))
    assert not dc.in_multi_worker_mode(tf.distribute.experimental.MultiWorkerMirroredStrategy(
        cluster_resolver=tf.distribute.cluster_resolver.SimpleClusterResolver(tf.train.ClusterSpec({}))))
    strategy = _strategy(0)
    # run_distribute_coordinator inside a worker function runs it in the same context
    assert dc.run_distribute_coordinator(
        lambda s: dc.run_distribute_coordinator(lambda _: dc.get_current_worker_context().task_id, s), strategy) == 0
    context = dc.WorkerContext(strategy, CLUSTER, "worker", 0, tf.ConfigProto())
    with context, pytest.raises(ValueError, match="context of worker:0 is already active"):
        with dc.WorkerContext(strategy, CLUSTER, "worker", 1, tf.ConfigProto()):
            pass


class _Stop(Exception):
    pass


def _fit(tmp_path, index, epochs=4, fail_at=None, initial_epoch=0):
    """A Keras fit in the worker context of task `index` of a 2-worker cluster (no strategy on the
    model, a local session: no server), with ModelCheckpoint(tmp_path/ckpt-{epoch}.h5); `fail_at`:
    the fit fails as that epoch begins. (begun epochs, weights at the first epoch's begin, final weights)."""
    tf.keras.backend.clear_session()
    np.random.seed(index)
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,))])
    model.compile("sgd", "mse")
    begun = []

    def begin(epoch, logs):
        if epoch == fail_at:
            raise _Stop
        begun.append((epoch, model.get_weights()))
    x, y = np.arange(12, dtype=np.float32).reshape(4, 3) / 10, np.ones((4, 2), np.float32)
    callbacks = [tf.keras.callbacks.ModelCheckpoint(str(tmp_path / "ckpt-{epoch}.h5"), save_weights_only=True),
                 tf.keras.callbacks.LambdaCallback(on_epoch_begin=begin)]
    with dc.WorkerContext(_strategy(index), tf.train.ClusterSpec(CLUSTER), "worker", index, tf.ConfigProto(),
                          master_target=""):
        try:
            model.fit(x, y, epochs=epochs, callbacks=callbacks, verbose=0, initial_epoch=initial_epoch)
        except _Stop:
            pass
    return [e for e, _ in begun], begun[0][1] if begun else None, model.get_weights()


def test_model_checkpoint_backs_up_each_epoch_and_a_fit_started_again_resumes_from_the_backup(tmp_path):
    """TF 1.15's MultiWorkerTrainingState: the chief's backup/training_state holds the weights and
    the epoch of the last epoch's end; a fit started again loads it and resumes at the next epoch
    (the user's initial_epoch ignored); a fit that ends normally removes it; another worker's save
    goes to a temporary directory, removed."""
    begun, _, _ = _fit(tmp_path, 0, fail_at=2)
    assert begun == [0, 1] and sorted(os.listdir(tmp_path)) == ["backup", "ckpt-1.h5", "ckpt-2.h5"]
    prefix = str(tmp_path / "backup" / "training_state")
    assert tf.train.load_variable(prefix, "_ckpt_saved_epoch/.ATTRIBUTES/VARIABLE_VALUE") == 1
    saved = tf.train.load_variable(prefix, "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE")
    tf.keras.backend.clear_session()
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,))])
    model.load_weights(str(tmp_path / "ckpt-2.h5"))   # (the user's file: the same weights, without the epoch)
    np.testing.assert_array_equal(model.get_weights()[0], saved)
    # worker 1 started again: it loads the backup too, and its own saves leave nothing behind
    begun, first, _ = _fit(tmp_path, 1, fail_at=3, initial_epoch=1)
    assert begun == [2] and np.array_equal(first[0], saved)
    assert sorted(os.listdir(tmp_path)) == ["backup", "ckpt-1.h5", "ckpt-2.h5"]
    assert tf.train.load_variable(prefix, "_ckpt_saved_epoch/.ATTRIBUTES/VARIABLE_VALUE") == 1   # (not the chief's)
    begun, first, _ = _fit(tmp_path, 0)
    assert begun == [2, 3] and np.array_equal(first[0], saved)
    assert sorted(os.listdir(tmp_path)) == ["ckpt-1.h5", "ckpt-2.h5", "ckpt-3.h5", "ckpt-4.h5"]   # no backup
    tf.keras.backend.clear_session()


def test_a_standalone_client_configures_a_copy_of_the_strategy_for_each_task():
    """Each worker thread of a standalone client gets the strategy configured for its task (TF
    deep-copies it), the program's strategy unchanged; the contexts' chiefs are TF's."""
    cluster = tf.train.ClusterSpec({"ps": ["localhost:1"], "worker": ["localhost:2", "localhost:3"]})
    for strategy in (tf.distribute.experimental.MultiWorkerMirroredStrategy(),
                     tf.distribute.experimental.ParameterServerStrategy()):
        assert not dc.in_multi_worker_mode(strategy)   # (no TF_CONFIG: local)
        copies = []
        for index in range(2):
            config = tf.ConfigProto()
            copy = dc._strategy_for_task(strategy, cluster, "worker", index, config)
            assert copy is not strategy and dc.in_multi_worker_mode(copy) and copy.extended.is_chief == (index == 0)
            assert list(config.device_filters)[-1] == f"/job:worker/task:{index}"
            copies.append(copy)
        assert copies[1].extended.worker_devices == ("/job:worker/replica:0/task:1/device:CPU:0",)
        assert not dc.in_multi_worker_mode(strategy)
    contexts = {(job, i): dc.WorkerContext(None, cluster, job, i, tf.ConfigProto(), master_target="")
                for job, i in [("worker", 0), ("worker", 1), ("evaluator", 0), (None, None)]}
    assert {key: c.is_chief for key, c in contexts.items()} == {("worker", 0): True, ("worker", 1): False,
                                                                ("evaluator", 0): True, (None, None): True}
    assert contexts[("worker", 1)].master_target == ""   # (given: no server is started)
