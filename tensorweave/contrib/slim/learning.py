"""tf.contrib.slim.learning: slim's training loop. create_train_op builds a train op (the total
loss, computed after the UPDATE_OPS and one optimizer step); train runs it under a Supervisor
that restores from and checkpoints to logdir, writes summaries, and stops at number_of_steps."""
from __future__ import annotations

import logging
import sys
import time

from tensorweave.framework import errors
from tensorweave.framework.api import GraphKeys, control_dependencies, get_collection, get_collection_ref, \
    name_scope
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import constant
from tensorweave.ops.debugging.numerics import check_numerics as check_numerics_op
from tensorweave.ops.grouping import group, no_op, with_dependencies
from tensorweave.ops.lookup.tables import tables_initializer
from tensorweave.ops.math.binary import equal, floormod, greater_equal
from tensorweave.ops.math.clip import clip_by_norm, global_norm
from tensorweave.ops.state.variables import global_variables_initializer, local_variables_initializer, \
    report_uninitialized_variables, trainable_variables
from tensorweave.summary.summary import histogram, scalar
from tensorweave.train.optimizer import Optimizer
from tensorweave.train.saver import Saver
from tensorweave.train.supervisor import Supervisor
from tensorweave.train.training_util import get_or_create_global_step, global_step as read_global_step

_log = logging.getLogger("tensorweave")
_USE_DEFAULT = object()
_USE_GLOBAL_STEP = 0


@tf_export("contrib.slim.learning.clip_gradient_norms")
def clip_gradient_norms(gradients_to_variables, max_norm) -> list:
    """Each gradient of the (gradient, variable) list clipped to L2 norm max_norm (an
    IndexedSlices' values as one tensor)."""
    return [(g if g is None else IndexedSlices(clip_by_norm(g.values, max_norm), g.indices, g.dense_shape)
             if isinstance(g, IndexedSlices) else clip_by_norm(g, max_norm), v) for g, v in gradients_to_variables]


def scale_gradients(grads_and_vars, gradient_multipliers, name_of, skip_none: bool = False) -> list:
    """Each gradient whose variable, or name_of(variable), keys gradient_multipliers, times that
    multiplier (a number or a tensor); a None gradient so keyed is an error unless skip_none."""
    out = []
    for grad, var in grads_and_vars:
        key = var if var in gradient_multipliers else name_of(var)
        if key in gradient_multipliers and not (grad is None and skip_none):
            if grad is None:
                raise ValueError("Requested multiple of `None` gradient.")
            multiplier = gradient_multipliers[key]
            if not isinstance(multiplier, Tensor):
                multiplier = constant(multiplier, dtype=grad.dtype)
            grad = (IndexedSlices(grad.values * multiplier, grad.indices, grad.dense_shape)
                    if isinstance(grad, IndexedSlices) else grad * multiplier)
        out.append((grad, var))
    return out


@tf_export("contrib.slim.learning.multiply_gradients")
def multiply_gradients(grads_and_vars, gradient_multipliers) -> list:
    """Each gradient scaled by its variable's entry (keyed by the variable or its op name) of
    gradient_multipliers."""
    if not isinstance(grads_and_vars, list):
        raise ValueError("`grads_and_vars` must be a list.")
    if not gradient_multipliers:
        raise ValueError("`gradient_multipliers` is empty.")
    return scale_gradients(grads_and_vars, gradient_multipliers, lambda v: v.op.name)


@tf_export("contrib.slim.learning.add_gradients_summaries")
def add_gradients_summaries(grads_and_vars) -> list:
    """A histogram "<variable>/gradient" and a scalar "<variable>/gradient_norm" per gradient."""
    summaries = []
    for grad, var in grads_and_vars:
        if grad is None:
            _log.info("Var %s has no gradient", var.op.name)
            continue
        values = grad.values if isinstance(grad, IndexedSlices) else grad
        summaries.append(histogram(var.op.name + "/gradient", values))
        summaries.append(scalar(var.op.name + "/gradient_norm", global_norm([values])))
    return summaries


@tf_export("contrib.slim.learning.create_train_op")
def create_train_op(total_loss, optimizer, global_step=_USE_GLOBAL_STEP, update_ops=None, variables_to_train=None,
                    clip_gradient_norm=0, summarize_gradients=False, gate_gradients=Optimizer.GATE_OP,
                    aggregation_method=None, colocate_gradients_with_ops=False, gradient_multipliers=None,
                    check_numerics=True):
    """tf.contrib.slim.learning.create_train_op: a tensor whose value is total_loss and whose
    evaluation first runs update_ops (default: the UPDATE_OPS collection, e.g. batch_norm's
    moving averages), then one optimizer step on variables_to_train (default: the trainable
    variables) with gradients scaled by gradient_multipliers and clipped to clip_gradient_norm,
    incrementing global_step (default: the graph's, created if needed). It is added to TRAIN_OP."""
    if global_step is _USE_GLOBAL_STEP:
        global_step = get_or_create_global_step()
    global_update_ops = list(get_collection(GraphKeys.UPDATE_OPS))
    update_ops = global_update_ops if update_ops is None else list(update_ops)
    if any(all(op is not u for u in update_ops) for op in global_update_ops):
        _log.warning("update_ops in create_train_op does not contain all the update_ops in GraphKeys.UPDATE_OPS")
    if update_ops:
        with control_dependencies(update_ops):
            barrier = no_op(name="update_barrier")
        total_loss = with_dependencies([barrier], total_loss)
    if variables_to_train is None:
        variables_to_train = trainable_variables()
    if not variables_to_train:
        raise ValueError("create_train_op: there are no variables to train")
    grads = optimizer.compute_gradients(total_loss, variables_to_train, gate_gradients=gate_gradients,
                                        aggregation_method=aggregation_method,
                                        colocate_gradients_with_ops=colocate_gradients_with_ops)
    if gradient_multipliers:
        with name_scope("multiply_grads"):
            grads = multiply_gradients(grads, gradient_multipliers)
    if clip_gradient_norm > 0:
        with name_scope("clip_grads"):
            grads = clip_gradient_norms(grads, clip_gradient_norm)
    if summarize_gradients:
        with name_scope("summarize_grads"):
            add_gradients_summaries(grads)
    grad_updates = optimizer.apply_gradients(grads, global_step=global_step)
    with name_scope("train_op"):
        if check_numerics:
            total_loss = check_numerics_op(total_loss, "LossTensor is inf or nan")
        train_op = with_dependencies([grad_updates], total_loss)
    train_ops = get_collection_ref(GraphKeys.TRAIN_OP)
    if all(train_op is not t for t in train_ops):
        train_ops.append(train_op)
    return train_op


def _wait_for_step(sess, global_step, step: int) -> None:
    while read_global_step(sess, global_step) < step:
        time.sleep(1.0)


@tf_export("contrib.slim.learning.train_step")
def train_step(sess, train_op, global_step, train_step_kwargs):
    """One step of `train`: runs train_op and global_step, logs the loss when
    train_step_kwargs["should_log"] is true, and returns (total_loss, should_stop)."""
    start = time.time()
    total_loss, np_global_step = sess.run([train_op, global_step])
    elapsed = time.time() - start
    if "should_log" in train_step_kwargs and sess.run(train_step_kwargs["should_log"]):
        _log.info("global step %d: loss = %.4f (%.3f sec/step)", np_global_step, total_loss, elapsed)
    should_stop = bool(sess.run(train_step_kwargs["should_stop"])) if "should_stop" in train_step_kwargs else False
    return total_loss, should_stop


@tf_export("contrib.slim.learning.train")
def train(train_op, logdir, train_step_fn=train_step, train_step_kwargs=_USE_DEFAULT, log_every_n_steps=1,
          graph=None, master="", is_chief=True, global_step=None, number_of_steps=None, init_op=_USE_DEFAULT,
          init_feed_dict=None, local_init_op=_USE_DEFAULT, init_fn=None, ready_op=_USE_DEFAULT,
          summary_op=_USE_DEFAULT, save_summaries_secs=600, summary_writer=_USE_DEFAULT, startup_delay_steps=0,
          saver=None, save_interval_secs=600, sync_optimizer=None, session_config=None, session_wrapper=None,
          trace_every_n_steps=None, ignore_live_threads=False):
    """tf.contrib.slim.learning.train: runs train_op (from create_train_op) until the global step
    reaches number_of_steps (or forever, or until the input ends), in a Supervisor session on
    `master` that restores the latest checkpoint in logdir or else initialises the variables and
    calls init_fn(sess) (e.g. assign_from_checkpoint_fn for fine-tuning); the chief saves a
    checkpoint every save_interval_secs and at the end, and summaries every save_summaries_secs.
    With sync_optimizer (a SyncReplicasOptimizer or a list of them), the chief runs their token
    queue runners and initial tokens. Returns the last total loss."""
    if train_op is None:
        raise ValueError("train_op cannot be None.")
    if logdir is None:
        if summary_op is not _USE_DEFAULT:
            raise ValueError("Cannot provide summary_op because logdir=None")
        if saver is not None:
            raise ValueError("Cannot provide saver because logdir=None")
        if trace_every_n_steps is not None:
            raise ValueError("Cannot provide trace_every_n_steps because logdir=None")
    if sync_optimizer is not None and not isinstance(sync_optimizer, list):
        sync_optimizer = [sync_optimizer]
    graph = graph or get_default_graph()
    with graph.as_default():
        if global_step is None:
            global_step = get_or_create_global_step()
        saver = saver or Saver()
        if init_op is _USE_DEFAULT:
            init_op = global_variables_initializer()
        if ready_op is _USE_DEFAULT:
            ready_op = report_uninitialized_variables()
        if local_init_op is _USE_DEFAULT:
            local_init_op = group(local_variables_initializer(), tables_initializer())
        if summary_op is _USE_DEFAULT:
            summary_op = Supervisor.USE_DEFAULT
        if summary_writer is _USE_DEFAULT:
            summary_writer = Supervisor.USE_DEFAULT
        ready_for_local_init_op = Supervisor.USE_DEFAULT
        if sync_optimizer is not None:
            if is_chief:   # built before the Supervisor finalizes the graph
                init_tokens_op = [opt.get_init_tokens_op() for opt in sync_optimizer]
                chief_queue_runner = [opt.get_chief_queue_runner() for opt in sync_optimizer]
            local_init_op = group(local_init_op, *[opt.local_step_init_op for opt in sync_optimizer])
            ready_for_local_init_op = group(*[opt.ready_for_local_init_op for opt in sync_optimizer])
        if train_step_kwargs is _USE_DEFAULT:
            with name_scope("train_step"):
                train_step_kwargs = {"should_stop": greater_equal(global_step, number_of_steps)
                                     if number_of_steps else constant(False)}
                if log_every_n_steps > 0:
                    train_step_kwargs["should_log"] = equal(floormod(global_step, log_every_n_steps), 0)
    sv = Supervisor(graph=graph, is_chief=is_chief, logdir=logdir, init_op=init_op, init_feed_dict=init_feed_dict,
                    local_init_op=local_init_op, ready_for_local_init_op=ready_for_local_init_op,
                    ready_op=ready_op, summary_op=summary_op,
                    summary_writer=summary_writer, global_step=global_step, saver=saver,
                    save_summaries_secs=save_summaries_secs, save_model_secs=save_interval_secs, init_fn=init_fn)
    total_loss = None
    should_retry = True
    while should_retry:
        try:
            should_retry = False
            with sv.managed_session(master, start_standard_services=False, config=session_config) as sess:
                _log.info("Starting Session.")
                if session_wrapper is not None:
                    sess = session_wrapper(sess)
                if is_chief:
                    if logdir:
                        sv.start_standard_services(sess)
                elif startup_delay_steps > 0:   # a non-chief lets the chief take the first steps
                    _wait_for_step(sess, global_step, min(startup_delay_steps, number_of_steps or sys.maxsize))
                threads = sv.start_queue_runners(sess)
                _log.info("Starting Queues.")
                if is_chief and sync_optimizer is not None:   # the chief hands out the first tokens
                    sv.start_queue_runners(sess, chief_queue_runner)
                    sess.run(init_tokens_op)
                try:
                    while not sv.should_stop():
                        total_loss, should_stop = train_step_fn(sess, train_op, global_step, train_step_kwargs)
                        if should_stop:
                            _log.info("Stopping Training.")
                            sv.request_stop()
                            break
                except errors.OutOfRangeError as e:
                    _log.info("Caught OutOfRangeError. Stopping Training. %s", e)
                if logdir and sv.is_chief:
                    _log.info("Finished training! Saving model to disk.")
                    sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
                    sv.stop(threads, close_summary_writer=True, ignore_live_threads=ignore_live_threads)
        except errors.AbortedError:
            _log.info("Retrying training!")   # a task of the cluster restarted: start over from the checkpoint
            should_retry = True
    return total_loss
