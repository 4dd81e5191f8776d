"""The distribute coordinator's worker context (distribute/distribute_coordinator.py) as Keras's
multi-worker fit uses it, without sockets (no session is made, so no server starts): which task
runs, which callbacks a worker keeps (TensorBoard the chief's only, as TF 1.15's
filter_distributed_callbacks), the strategy's session config, and no coordinator inside another."""
from __future__ import annotations

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
