"""tf.estimator.experimental's training hooks: InMemoryEvaluatorHook (evaluate the model being
trained, in the training process, every N steps, without a checkpoint) and
make_stop_at_checkpoint_step_hook (the workers stop once the chief has checkpointed last_step)."""
from __future__ import annotations

import logging
import os
import time

from tensorweave.estimator.estimator import Estimator, global_step_of_checkpoint
from tensorweave.framework.api import GraphKeys
from tensorweave.framework.graph import Graph, get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import placeholder
from tensorweave.ops.grouping import group
from tensorweave.ops.state.variable_ops import assign
from tensorweave.train.basic_session_run_hooks import SecondOrStepTimer, StopAtStepHook, global_step_read
from tensorweave.train.scaffold import Scaffold
from tensorweave.train.session_run_hook import SessionRunArgs, SessionRunHook

_log = logging.getLogger("tensorweave")


@tf_export("estimator.experimental.InMemoryEvaluatorHook")
class InMemoryEvaluatorHook(SessionRunHook):
    """tf.estimator.experimental.InMemoryEvaluatorHook(estimator, input_fn, steps=None,
    hooks=None, name=None, every_n_iter=100): a training hook that evaluates the model being
    trained, as Estimator.evaluate would, when the session starts, every every_n_iter steps and at
    the end: an evaluation graph of its own, into which the training session's global variables
    are copied. Its results go to eval_dir(name). Local training only."""

    def __init__(self, estimator, input_fn, steps=None, hooks=None, name=None, every_n_iter=100):
        if every_n_iter is None or every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if estimator.config.num_ps_replicas > 0 or estimator.config.num_worker_replicas > 1:
            raise ValueError("InMemoryEvaluator supports only single machine (aka Local) setting.")
        self._estimator = estimator
        self._input_fn = input_fn
        self._eval_dir = estimator.eval_dir(name)
        self._hooks = [h for h in (hooks or [])] + estimator._eval_steps_hooks(steps)
        for h in self._hooks:
            if not isinstance(h, SessionRunHook):
                raise TypeError(f"Hooks must be a SessionRunHook, given: {h}")
        self._timer = SecondOrStepTimer(every_steps=every_n_iter)

    def begin(self):
        self._timer.reset()
        self._iter_count = 0
        self._graph = Graph()
        with self._graph.as_default():
            self._scaffold, self._update_op, self._eval_dict, self._all_hooks = \
                self._estimator._evaluate_build_graph(self._input_fn, self._hooks, checkpoint_path=None)
            if self._scaffold.saver is not None:
                raise ValueError("InMemoryEvaluator does not support custom saver")
            if self._scaffold.init_fn is not None:
                raise ValueError("InMemoryEvaluator does not support custom init_fn")
            eval_vars = self._graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
            self._eval_vars = {v.name: v for v in eval_vars}
            self._placeholders = {v.name: placeholder(v.dtype) for v in eval_vars}

    def after_create_session(self, session, coord):
        graph = get_default_graph()
        if graph.get_collection(GraphKeys.SAVEABLE_OBJECTS):
            raise ValueError("InMemoryEvaluator does not support saveables other than global variables.")
        train_vars = {v.name: v for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)}
        shared = sorted(set(self._placeholders) & set(train_vars))
        self._train_vars = {name: train_vars[name] for name in shared}
        with self._graph.as_default():
            self._var_feed_op = group(*[assign(self._eval_vars[name], self._placeholders[name]) for name in shared])
        self._evaluate(session)

    def _evaluate(self, train_session) -> None:
        values = train_session.run(self._train_vars)
        feeds = {self._placeholders[name]: value for name, value in values.items()}

        def feed_variables(scaffold, session):
            session.run(self._var_feed_op, feed_dict=feeds)
        scaffold = Scaffold(init_fn=feed_variables, copy_from_scaffold=self._scaffold)
        with self._graph.as_default():
            self._estimator._evaluate_run(None, scaffold, self._update_op, self._eval_dict, self._all_hooks,
                                          self._eval_dir)
        self._timer.update_last_triggered_step(self._iter_count)

    def after_run(self, run_context, run_values):
        self._iter_count += 1
        if self._timer.should_trigger_for_step(self._iter_count):
            self._evaluate(run_context.session)

    def end(self, session):
        self._evaluate(session)


class _StopAtCheckpointStepHook(SessionRunHook):
    """Stops once model_dir's latest checkpoint has reached last_step, looking when this
    worker's own reading of the global step has."""

    def __init__(self, model_dir, last_step, wait_after_file_check_secs=30):
        if last_step is None:
            raise ValueError("last_step must be specified.")
        if model_dir is None:
            raise ValueError("model_dir must be specified.")
        self._model_dir = model_dir
        self._last_step = last_step
        self._wait_after_file_check_secs = wait_after_file_check_secs

    def begin(self):
        self._global_step_tensor = global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use StopAtCheckpointStepHook.")

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        if run_values.results + 1 >= self._last_step:
            if global_step_of_checkpoint(self._model_dir) >= self._last_step:
                run_context.request_stop()
            else:
                time.sleep(self._wait_after_file_check_secs)


@tf_export("estimator.experimental.make_stop_at_checkpoint_step_hook")
def make_stop_at_checkpoint_step_hook(estimator, last_step, wait_after_file_check_secs=30):
    """tf.estimator.experimental.make_stop_at_checkpoint_step_hook(estimator, last_step,
    wait_after_file_check_secs=30): the chief stops at last_step (StopAtStepHook); a worker once
    the chief's checkpoint in model_dir has reached it, checking every
    wait_after_file_check_secs seconds from then on."""
    if not isinstance(estimator, Estimator):
        raise TypeError(f"`estimator` must have type `tf.estimator.Estimator`. Got: {type(estimator)}")
    if estimator.config.is_chief:
        return StopAtStepHook(last_step=last_step)
    return _StopAtCheckpointStepHook(model_dir=os.fspath(estimator.model_dir), last_step=last_step,
                                     wait_after_file_check_secs=wait_after_file_check_secs)
