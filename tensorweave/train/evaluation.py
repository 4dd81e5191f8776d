"""One evaluation pass over a checkpoint (TF's training/evaluation.py, public as
tf.contrib.training.evaluate_once and StopAfterNEvalsHook): restore, run the metric update ops
until the input ends or N evaluations are done, then read the metric values once.

The number of evaluations done is the local variable `eval_step` (collection EVAL_STEP), counted
up by every run, so a hook can stop after N of them."""
from __future__ import annotations

import logging
import math
import time

from tensorweave.framework import dtypes
from tensorweave.framework.api import GraphKeys, control_dependencies
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import identity
from tensorweave.ops.state.initializers import Zeros
from tensorweave.ops.state.variable_ops import assign_add
from tensorweave.ops.state.variable_scope import get_variable
from tensorweave.train.basic_session_run_hooks import FinalOpsHook
from tensorweave.train.monitored_session import ChiefSessionCreator, MonitoredSession
from tensorweave.train.session_run_hook import SessionRunArgs, SessionRunHook

_log = logging.getLogger("tensorweave")


def get_or_create_eval_step():
    """The graph's evaluation counter: an int64 local variable `eval_step` in EVAL_STEP."""
    steps = get_default_graph().get_collection(GraphKeys.EVAL_STEP)
    if len(steps) == 1:
        return steps[0]
    if len(steps) > 1:
        raise ValueError("Multiple tensors added to tf.GraphKeys.EVAL_STEP")
    return get_variable("eval_step", shape=[], dtype=dtypes.int64, initializer=Zeros(), trainable=False,
                        collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.EVAL_STEP])


@tf_export("contrib.training.StopAfterNEvalsHook")
class StopAfterNEvalsHook(SessionRunHook):
    """tf.contrib.training.StopAfterNEvalsHook(num_evals, log_progress=True): stops an evaluation
    after num_evals runs (None: when the input ends), logging 'Evaluation [i/N]'."""

    def __init__(self, num_evals, log_progress=True):
        self._num_evals = num_evals
        self._evals_completed = None
        self._log_progress = log_progress
        self._log_frequency = 1 if (num_evals is None or num_evals < 20) else math.floor(num_evals / 10.0)

    def _set_evals_completed_tensor(self, updated_eval_step) -> None:
        self._evals_completed = updated_eval_step

    def before_run(self, run_context):
        return SessionRunArgs({"evals_completed": self._evals_completed})

    def after_run(self, run_context, run_values):
        done = run_values.results["evals_completed"]
        if self._log_progress:
            if self._num_evals is None:
                _log.info("Evaluation [%d]", done)
            elif done % self._log_frequency == 0 or done == self._num_evals:
                _log.info("Evaluation [%d/%d]", done, self._num_evals)
        if self._num_evals is not None and done >= self._num_evals:
            run_context.request_stop()


@tf_export("contrib.training.evaluate_once")
def evaluate_once(checkpoint_path, master="", scaffold=None, eval_ops=None, feed_dict=None, final_ops=None,
                  final_ops_feed_dict=None, hooks=None, config=None):
    """tf.contrib.training.evaluate_once(checkpoint_path, master='', scaffold=None, eval_ops=None,
    feed_dict=None, final_ops=None, final_ops_feed_dict=None, hooks=None, config=None): restores
    checkpoint_path (initialises when None), runs eval_ops until the input ends or a hook stops,
    and returns the values of final_ops read once at the end."""
    eval_step = get_or_create_eval_step()
    hooks = list(hooks or [])
    if eval_ops is not None:
        update_eval_step = assign_add(eval_step, 1, use_locking=True)
        if isinstance(eval_ops, dict):
            eval_ops["update_eval_step"] = update_eval_step
            updates = list(eval_ops.values())
        elif isinstance(eval_ops, (tuple, list)):
            eval_ops = updates = list(eval_ops) + [update_eval_step]
        else:
            eval_ops = updates = [eval_ops, update_eval_step]
        with control_dependencies(updates):
            eval_step_value = identity(eval_step.read_value())
        for h in hooks:
            if isinstance(h, StopAfterNEvalsHook):
                h._set_evals_completed_tensor(eval_step_value)
    _log.info("Starting evaluation at %s", time.strftime("%Y-%m-%dT%H:%M:%S"))
    start = time.time()
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_filename_with_path=checkpoint_path, master=master,
                                  config=config)
    final_ops_hook = FinalOpsHook(final_ops, final_ops_feed_dict)
    hooks.append(final_ops_hook)
    with MonitoredSession(session_creator=creator, hooks=hooks) as session:
        if eval_ops is not None:
            while not session.should_stop():
                session.run(eval_ops, feed_dict)
    _log.info("Inference Time : %.5fs", time.time() - start)
    return final_ops_hook.final_ops_values
