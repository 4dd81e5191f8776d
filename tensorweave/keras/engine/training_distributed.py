"""A compiled Model's train, test and predict functions under a tf.distribute strategy (TF 1.15's
keras/engine/training_distributed.py and distributed_training_utils, graph mode).

A model built and compiled in `strategy.scope()` has its weights as the strategy's variables
(mirrored on each device for MirroredStrategy, on one device for CentralStorageStrategy, ...).
Its functions feed the same placeholders as without a strategy (the global batch: fit's
`batch_size` is the global batch size); each replica takes its share of the batch's rows
(ceil(B/N) each, the last ones fewer), runs the model on them, and computes its loss: a mean
loss (SUM_OVER_BATCH_SIZE, or a loss function) divided by the number of replicas, as TF's
scale_loss_for_distribution, so the replicas' summed gradients are the whole batch's (the
optimizer sums them in its merge_call and updates every copy the same way). The weight
regularization losses enter once. The reported loss is the replicas' losses summed; the metrics
(sync-on-read state, one copy per replica) are read summed over the replicas; predict
concatenates the replicas' outputs in batch order.

Under a multi-worker strategy (MultiWorkerMirroredStrategy on a cluster from TF_CONFIG) fit and
evaluate run through the distribute coordinator (distribute/distribute_coordinator.py, TF's
_train_with_multi_worker): this task's server started if the program did not, Keras's session on
it, and on a worker other than the chief the callbacks that are the chief's only (TensorBoard's
`_chief_worker_only`) left out; ModelCheckpoint saves on every worker (a save reads every worker's
values) but a non-chief's file goes to a temporary directory, removed after.
"""
from __future__ import annotations

from tensorweave.framework import nest
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import identity, shape, size
from tensorweave.ops.array.gather import gather
from tensorweave.ops.grouping import group
from tensorweave.ops.math.binary import add_n, minimum
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.sequences import range as range_
from tensorweave.distribute.distribute_lib import ReduceOp, get_replica_context
from tensorweave.distribute.distribute_coordinator import (get_current_worker_context, in_multi_worker_mode,
                                                            run_distribute_coordinator)
from tensorweave.logging import warning
from tensorweave.keras import backend as K, callbacks as cbks

TRAIN, TEST, PREDICT = "train", "test", "predict"


def check_variables_in_scope(model, strategy) -> None:
    """TF's check at compile: every weight of the model was created in the strategy's scope."""
    for v in model.weights:
        if not strategy.extended.variable_created_in_scope(v):
            raise ValueError(f"Variable ({v.name}) was not created in the distribution strategy scope of ({strategy}). "
                             "It is most likely due to not all layers or the model or optimizer being created outside "
                             "the distribution strategy scope. Try to make sure your code looks similar to the "
                             "following.\nwith strategy.scope():\n  model=_create_model()\n  model.compile(...)")


def filter_distributed_callbacks(callbacks) -> list:
    """The callbacks this worker runs (TF's filter_distributed_callbacks): all on the chief, on
    another worker those that are not the chief's only."""
    callbacks = list(callbacks or [])
    if not any(isinstance(c, cbks.ModelCheckpoint) for c in callbacks):
        warning("ModelCheckpoint callback is not provided. Workers will need to restart training if any fails.")
    if get_current_worker_context().is_chief:
        return callbacks
    return [c for c in callbacks if not c._chief_worker_only]


def run_multi_worker(model, method, callbacks=None, **kwargs):
    """`method(model, callbacks=..., **kwargs)` (training_loops.fit or evaluate): under a
    multi-worker strategy through the distribute coordinator, with the callbacks this worker runs."""
    strategy = model._distribution_strategy
    if not in_multi_worker_mode(strategy):
        return method(model, callbacks=callbacks, **kwargs)
    return run_distribute_coordinator(
        lambda _: method(model, callbacks=filter_distributed_callbacks(callbacks), **kwargs), strategy)


def _row_range(x, replica: int, replicas: int):
    """Indices of replica `replica`'s rows of `x`'s batch: ceil(B/N) rows each, the last fewer."""
    rows = shape(x)[0]
    per = (rows + replicas - 1) // replicas
    return range_(minimum(per * replica, rows), minimum(per * (replica + 1), rows))


def _share(x, replica: int, replicas: int, batch=None):
    """Replica `replica`'s rows of `x`, split as `batch`'s rows are (x's own by default); a
    one-row x (a sample-weight placeholder left at its default [1.0]) gives its row to each."""
    if batch is None:
        return gather(x, _row_range(x, replica, replicas))
    return gather(x, minimum(_row_range(batch, replica, replicas), shape(x)[0] - 1))


def _batch_share(x, replica: int, replicas: int):
    """The fraction of x's batch that is replica `replica`'s: a replica's mean loss times it sums
    over the replicas to the batch's mean (TF divides by the number of replicas, which is the
    same for batches the replicas share evenly)."""
    rows = shape(x)[0]
    return cast(size(_row_range(x, replica, replicas)), K.floatx()) / cast(rows, K.floatx())


def _replica_outputs(model, replica: int, replicas: int) -> tuple:
    """(this replica's inputs, the model's outputs on them)."""
    inputs = [_share(x, replica, replicas) for x in model.inputs]
    with K.name_scope(model.name):
        outputs = model.call(inputs[0] if len(inputs) == 1 else inputs)
    return inputs, nest.flatten(outputs)


def _replica_step(model, mode):
    """One replica's loss (scaled for the sum over replicas) and the ops updating its metrics,
    the weights (TRAIN: the optimizer's merge_call) and the layers' states."""
    ctx = get_replica_context()
    ext = ctx.strategy.extended
    # Every worker of a synchronous multi-worker strategy (its replicas in sync with other workers')
    # is fed the whole global batch: its replicas take their rows after the workers' before it (the
    # regularization enters on worker 0's first only). An asynchronous worker (ParameterServerStrategy)
    # trains on its own batches.
    in_sync_with_others = ext._in_multi_worker_mode() and ctx.num_replicas_in_sync > len(ext.worker_devices)
    first = ext._worker_index * len(ext.worker_devices) if in_sync_with_others else 0
    replica, replicas = first + ctx.replica_id_in_sync_group, ctx.num_replicas_in_sync
    inputs, outputs = _replica_outputs(model, replica, replicas)
    total, updates = None, []
    targets, weights = {}, {}
    for endpoint, output in zip(model._endpoints, outputs):
        if endpoint.skipped:
            continue
        targets[id(endpoint)] = target = _share(endpoint.target, replica, replicas)
        weights[id(endpoint)] = weight = _share(endpoint.sample_weight, replica, replicas, batch=endpoint.target)
        loss, is_mean = model._output_loss(endpoint, target, output, weight)
        share = _batch_share(endpoint.target, replica, replicas)
        if endpoint.loss_metric is not None:   # weighted: a batch counts once, as without a strategy
            updates.append(endpoint.loss_metric.update_state(loss, sample_weight=share))
        if is_mean:
            loss = loss * share
        weighted = endpoint.loss_weight * loss
        total = weighted if total is None else total + weighted
    if total is None:
        total = K.constant(0.0)
    extra = [loss * _batch_share(model.inputs[0], replica, replicas) for loss in model.get_losses_for(inputs)]
    if replica == 0:   # the weight regularization, once (it reads the first copy of the weights)
        extra += model.get_losses_for(None)
    if extra:
        total = total + add_n(extra)
    for (_, metric, _), (endpoint, weighted) in zip(model._compile_metrics, model._metric_sources):
        output = outputs[model._endpoints.index(endpoint)]
        weight = weights[id(endpoint)] if weighted else None
        updates.append(metric.update_state(targets[id(endpoint)], output,
                                           sample_weight=model._metric_weight(weight, output)))
    if mode == TRAIN:
        updates += model.get_updates_for(inputs)
        updates += model.optimizer.get_updates(loss=total, params=model._collected_trainable_weights())
    return total, group(*[u for u in nest.flatten(updates) if u is not None])


def make_function(model, mode):
    """The K.function of `mode` under the model's strategy, over the usual placeholders."""
    strategy = model._distribution_strategy
    phase = model._learning_phase_inputs()
    with K.get_graph().as_default(), strategy.scope():
        K.get_session()   # made here, in the scope, it has the strategy's devices
        if mode == PREDICT:
            def replica_predict():
                ctx = get_replica_context()
                # (each worker predicts the whole batch on its own replicas)
                return _replica_outputs(model, ctx.replica_id_in_sync_group, len(strategy.extended.worker_devices))[1]
            per_replica = strategy.extended.call_for_each_replica(replica_predict)
            outputs = [concat(list(strategy.experimental_local_results(o)), 0) for o in per_replica]
            return K.function(model._feed_inputs() + phase, outputs, updates=model.state_updates,
                              name="distributed_predict_function", **model._function_kwargs)
        inputs, targets, weights = model._feeds()
        with K.name_scope("training" if mode == TRAIN else "evaluation"):
            loss, step = strategy.extended.call_for_each_replica(_replica_step, args=(model, mode))
            loss = strategy.reduce(ReduceOp.SUM, loss)
            step = strategy.group(step)
            with K.get_graph().control_dependencies([step]):
                results = [identity(m.result()) for m in model._all_metrics()]
        if mode == TRAIN:
            for v in model._optimizer_variables():
                K.track_variable(v)
        updates = [step] + (model.get_updates_for(None) if mode == TRAIN else model.state_updates)
        return K.function(inputs + targets + weights + phase, [loss] + results, updates=updates,
                          name=f"distributed_{mode}_function", **model._function_kwargs)
