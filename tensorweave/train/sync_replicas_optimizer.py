"""tf.train.SyncReplicasOptimizer: synchronous training of between-graph replicas.

Each worker adds its gradients to one accumulator per variable (on the variable's ps, shared by
name) tagged with its local step, then waits for a token on the token queue. The chief's queue
runner takes the mean of replicas_to_aggregate gradients from every accumulator, applies them
with the wrapped optimizer (global step + 1) and puts total_num_replicas tokens (the new
global step) on the queue. Gradients computed at an older step than the accumulator's are
dropped, so with backup workers (total_num_replicas > replicas_to_aggregate) a step finishes
with the first gradients that arrive and late ones are discarded. Sparse gradients go through
SparseConditionalAccumulators.

The end of training ends every worker, where TF's workers hang: when the chief's session ends
its hook closes the token queue (cancelling what waits on it), which releases each worker
blocked on a token with OutOfRangeError, a clean stop for MonitoredSession; the chief's queue
runner, blocked on gradients no worker will send, is released by its cancel op. The other way
round, a worker whose session ends cleanly leaves one token behind: StopAtStepHook decides on
the global step it read at the start of a run, so a chief that read it just before the last
step can start one run more after every other worker has gone; its gradient alone completes no
step, and without that token it would wait for one forever (TF's chief hangs there).
"""
from __future__ import annotations

import logging

from tensorweave.framework import api, dtypes, errors
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.fill import fill
from tensorweave.ops.grouping import group, no_op, with_dependencies
from tensorweave.ops.data_flow.accumulators import ConditionalAccumulator, SparseConditionalAccumulator
from tensorweave.ops.data_flow.queues import FIFOQueue
from tensorweave.ops.state.variable_ops import assign
from tensorweave.ops.state.variables import Variable, global_variables, report_uninitialized_variables
from tensorweave.framework.api import GraphKeys
from tensorweave.train.optimizer import WrappingOptimizer
from tensorweave.train.queue_runner import QueueRunner
from tensorweave.train.session_manager import ready
from tensorweave.train.session_run_hook import SessionRunHook


_log = logging.getLogger("tensorweave")


@tf_export("train.SyncReplicasOptimizer")
class SyncReplicasOptimizer(WrappingOptimizer):
    """tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate, total_num_replicas=None,
    variable_averages=None, variables_to_average=None, use_locking=False, name='sync_replicas')."""

    def __init__(self, opt, replicas_to_aggregate, total_num_replicas=None, variable_averages=None,
                 variables_to_average=None, use_locking=False, name="sync_replicas"):
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        super().__init__(opt, use_locking, name)
        _log.info("SyncReplicasV2: replicas_to_aggregate=%s; total_num_replicas=%s", replicas_to_aggregate,
                  total_num_replicas)
        self._replicas_to_aggregate = replicas_to_aggregate
        self._gradients_applied = False
        self._variable_averages = variable_averages
        self._variables_to_average = variables_to_average
        self._total_num_replicas = total_num_replicas
        self._tokens_per_step = max(total_num_replicas, replicas_to_aggregate)
        self._global_step = None
        self._sync_token_queue = None
        self._chief_queue_runner = None
        self._accumulator_list: list = []

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Adds this replica's gradients to the accumulators and waits for a token; returns the
        train op. Builds the chief's ops too (the sync op, its queue runner, the init ops)."""
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        grads_and_vars = list(grads_and_vars)
        self._global_step = global_step
        g = get_default_graph()
        train_ops, aggregated, var_list = [], [], []
        local_anchor = no_op()
        with g.colocate_with(local_anchor):
            self._local_step = Variable(initial_value=0, trainable=False, collections=[GraphKeys.LOCAL_VARIABLES],
                                        dtype=global_step.dtype.base_dtype, name="sync_rep_local_step")
        self.local_step_init_op = assign(self._local_step, global_step)
        chief_init_ops = [self.local_step_init_op]
        self.ready_for_local_init_op = report_uninitialized_variables(global_variables())
        with api.name_scope(None, self._name):
            for grad, var in grads_and_vars:
                var_list.append(var)
                with g.device(var.device):
                    if grad is None:
                        aggregated.append(None)
                        continue
                    if isinstance(grad, Tensor):
                        acc = ConditionalAccumulator(grad.dtype, shape=var.get_shape(),
                                                     shared_name=var.name + "/grad_accum")
                        train_ops.append(acc.apply_grad(grad, local_step=self._local_step))
                        aggregated.append(acc.take_grad(self._replicas_to_aggregate))
                    elif isinstance(grad, IndexedSlices):
                        acc = SparseConditionalAccumulator(grad.dtype, shape=var.get_shape(),
                                                           shared_name=var.name + "/grad_accum")
                        train_ops.append(acc.apply_indexed_slices_grad(grad, local_step=self._local_step))
                        aggregated.append(acc.take_indexed_slices_grad(self._replicas_to_aggregate))
                    else:
                        raise ValueError("Unknown grad type!")
                    self._accumulator_list.append((acc, var.device))
            with g.device(global_step.device), api.name_scope(""):
                aggregated = _after_every_take(aggregated)
                update_op = self._opt.apply_gradients(list(zip(aggregated, var_list)), global_step)
                self._sync_token_queue = FIFOQueue(-1, global_step.dtype.base_dtype, shapes=(), name="sync_token_q",
                                                   shared_name="sync_token_q")
                # The chief's queue runner closes this one, never the token queue: a session
                # made again after a lost task needs the token queue open.
                dummy_queue = FIFOQueue(1, dtypes.int32, shapes=(), name="dummy_queue", shared_name="dummy_queue")
                with g.control_dependencies(train_ops):
                    token = self._sync_token_queue.dequeue()
                train_op = assign(self._local_step, token)
                with g.control_dependencies([update_op]):
                    tokens = fill([self._tokens_per_step], global_step)
                    sync_op = self._sync_token_queue.enqueue_many((tokens,))
                if self._variable_averages is not None:
                    with g.control_dependencies([sync_op]), api.name_scope(""):
                        sync_op = self._variable_averages.apply(self._variables_to_average)
                release = [dummy_queue.close(cancel_pending_enqueues=True)]
                for acc, dev in self._accumulator_list:
                    with g.device(dev):
                        release.append(acc._cancel_takes())
                self._chief_queue_runner = QueueRunner(dummy_queue, [sync_op], cancel_op=group(*release))
                self._end_of_training_op = self._sync_token_queue.close(cancel_pending_enqueues=True)
                self._leaving_token_op = self._sync_token_queue.enqueue_many((fill([1], global_step),),
                                                                             name="sync_leaving_token")
            for acc, dev in self._accumulator_list:
                with g.device(dev):
                    chief_init_ops.append(acc.set_global_step(global_step, name="SetGlobalStep"))
            self.chief_init_op = group(*chief_init_ops)
            self._gradients_applied = True
            return train_op

    def get_chief_queue_runner(self) -> QueueRunner:
        """The QueueRunner the chief runs: it aggregates, applies and hands out tokens."""
        if not self._gradients_applied:
            raise ValueError("Should be called after apply_gradients().")
        return self._chief_queue_runner

    def get_init_tokens_op(self, num_tokens=-1):
        """An op putting num_tokens tokens (default replicas_to_aggregate) on the token queue,
        so that the workers can start the first step."""
        if not self._gradients_applied:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        tokens_needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < tokens_needed:
            raise ValueError(f"Too few tokens to finish the first step: {num_tokens} (given) vs {tokens_needed} "
                             "(needed)")
        if num_tokens <= 0:
            return no_op(name="no_init_tokens")
        g = get_default_graph()
        with g.device(self._global_step.device), api.name_scope(""):
            return self._sync_token_queue.enqueue_many((fill([num_tokens], self._global_step),))

    def make_session_run_hook(self, is_chief, num_tokens=-1) -> SessionRunHook:
        """The hook a MonitoredSession needs: runs the init ops, starts the chief's queue runner,
        and at the chief's end releases the workers."""
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)


class _SyncReplicasOptimizerHook(SessionRunHook):
    def __init__(self, sync_optimizer: SyncReplicasOptimizer, is_chief: bool, num_tokens: int):
        self._sync_optimizer = sync_optimizer
        self._is_chief = is_chief
        self._num_tokens = num_tokens

    def begin(self):
        opt = self._sync_optimizer
        if not opt._gradients_applied:
            raise ValueError("SyncReplicasOptimizer.apply_gradient should be called before using the hook.")
        self._ready_for_local_init_op = opt.ready_for_local_init_op
        if self._is_chief:
            self._local_init_op = opt.chief_init_op
            self._q_runner = opt.get_chief_queue_runner()
            self._init_tokens_op = opt.get_init_tokens_op(self._num_tokens)
            self._end_op = opt._end_of_training_op
        else:
            self._local_init_op = opt.local_step_init_op
            self._q_runner = None
            self._init_tokens_op = None
            self._end_op = opt._leaving_token_op

    def after_create_session(self, session, coord):
        ok, msg = ready(self._ready_for_local_init_op, session,
                        "Model is not ready for SyncReplicasOptimizer local init.")
        if not ok:
            raise RuntimeError(f"Init operations did not make model ready for SyncReplicasOptimizer local_init. Init "
                               f"op: {self._local_init_op.name}, error: {msg}")
        session.run(self._local_init_op)
        if self._init_tokens_op is not None:
            session.run(self._init_tokens_op)
        if self._q_runner is not None:
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)

    def end(self, session):
        # The chief: training is over, release the workers waiting for a token (OutOfRangeError).
        # A worker: leave a token for a chief that may start one run more (see the module's text);
        # the queue is closed already when the chief ended first.
        try:
            session.run(self._end_op)
        except errors.CancelledError:
            if self._is_chief:
                raise


def _after_every_take(aggregated: list) -> list:
    """The aggregated gradients, each usable only once every accumulator has been taken from.
    TF lets one variable's update run while another's take still waits; a replica that reads the
    variables then (some updated, some not) is stale for the accumulators already taken, yet its
    gradient still enters the others. Once every take is done, every accumulator drops it."""
    taken = [a for a in aggregated if a is not None]
    if not taken:
        return aggregated
    gate = group(*[(a.values if isinstance(a, IndexedSlices) else a).op for a in taken])
    return [a if a is None
            else IndexedSlices(with_dependencies([gate], a.values), a.indices, a.dense_shape)
            if isinstance(a, IndexedSlices) else with_dependencies([gate], a)
            for a in aggregated]
