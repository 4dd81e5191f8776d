"""tf.estimator.experimental's early-stopping hooks: training stops when the evaluation metrics in
the estimator's eval directory (written by evaluate(), e.g. by train_and_evaluate's evaluator)
cross a threshold or stop improving.

The chief's hook reads the eval event files every run_every_secs / run_every_steps; when its
predicate holds it sets the global boolean variable `signal_early_stopping/STOP` (on a ps in a
cluster) and stops; the other workers' hooks read that variable on every step and stop too."""
from __future__ import annotations

import collections
import glob
import logging
import operator
import os

from tensorweave.estimator.estimator import Estimator
from tensorweave.framework import dtypes, errors
from tensorweave.framework.api import GraphKeys
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.state.initializers import Constant
from tensorweave.ops.state.variable_ops import assign
from tensorweave.ops.state.variable_scope import AUTO_REUSE, get_variable, variable_scope
from tensorweave.summary.writer import summary_iterator
from tensorweave.train.basic_session_run_hooks import SecondOrStepTimer
from tensorweave.train.session_run_hook import SessionRunArgs, SessionRunHook
from tensorweave.train.training_util import get_global_step

_log = logging.getLogger("tensorweave")


def read_eval_metrics(eval_dir: str) -> collections.OrderedDict:
    """{global step: {tag: value}} of the scalar summaries in eval_dir's event files, by step."""
    by_step: dict = collections.defaultdict(dict)
    for path in sorted(glob.glob(os.path.join(eval_dir, "events.out.tfevents.*"))):
        try:
            for event in summary_iterator(path):
                if not event.HasField("summary"):
                    continue
                metrics = {v.tag: v.simple_value for v in event.summary.value if v.HasField("simple_value")}
                if metrics:
                    by_step[event.step].update(metrics)
        except errors.DataLossError as e:
            _log.warning("Skipping rest of the file due to encountering data corruption error; file path: %s; "
                         "original error raised by `tf.train.summary_iterator`: %s", path, e)
    return collections.OrderedDict(sorted(by_step.items()))


def _get_or_create_stop_var():
    with variable_scope("signal_early_stopping", values=[], reuse=AUTO_REUSE):
        return get_variable("STOP", shape=[], dtype=dtypes.bool, initializer=Constant(False),
                            collections=[GraphKeys.GLOBAL_VARIABLES], trainable=False)


class _StopOnPredicateHook(SessionRunHook):
    """The chief's hook: checks should_stop_fn on its timer; sets STOP and stops when it holds."""

    def __init__(self, should_stop_fn, run_every_secs=60, run_every_steps=None):
        if not callable(should_stop_fn):
            raise TypeError("`should_stop_fn` must be callable.")
        self._should_stop_fn = should_stop_fn
        self._timer = SecondOrStepTimer(every_secs=run_every_secs, every_steps=run_every_steps)

    def begin(self):
        self._global_step_tensor = get_global_step()
        self._stop_op = assign(_get_or_create_stop_var(), True)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        global_step = run_values.results
        if self._timer.should_trigger_for_step(global_step):
            self._timer.update_last_triggered_step(global_step)
            if self._should_stop_fn():
                _log.info("Requesting early stopping at global step %d", global_step)
                run_context.session.run(self._stop_op)
                run_context.request_stop()


class _CheckForStoppingHook(SessionRunHook):
    """A non-chief's hook: stops once the chief has set STOP."""

    def begin(self):
        self._stop_var = _get_or_create_stop_var()

    def before_run(self, run_context):
        return SessionRunArgs(self._stop_var)

    def after_run(self, run_context, run_values):
        if run_values.results:
            _log.info("Early stopping requested, suspending run.")
            run_context.request_stop()


@tf_export("estimator.experimental.make_early_stopping_hook")
def make_early_stopping_hook(estimator, should_stop_fn, run_every_secs=60, run_every_steps=None):
    """tf.estimator.experimental.make_early_stopping_hook(estimator, should_stop_fn,
    run_every_secs=60, run_every_steps=None): a training hook that stops training (every worker)
    once should_stop_fn() returns True; it is called on the chief at most every run_every_secs
    seconds or run_every_steps steps (only one of them may be set)."""
    if not isinstance(estimator, Estimator):
        raise TypeError(f"`estimator` must have type `tf.estimator.Estimator`. Got: {type(estimator)}")
    if run_every_secs is not None and run_every_steps is not None:
        raise ValueError("Only one of `run_every_secs` and `run_every_steps` must be set.")
    if estimator.config.is_chief:
        return _StopOnPredicateHook(should_stop_fn, run_every_secs, run_every_steps)
    return _CheckForStoppingHook()


def _threshold_hook(estimator, metric_name, threshold, higher_is_better, eval_dir, min_steps, run_every_secs,
                    run_every_steps):
    eval_dir = eval_dir or estimator.eval_dir()
    better = operator.gt if higher_is_better else operator.lt

    def crossed():
        for step, metrics in read_eval_metrics(eval_dir).items():
            if step >= min_steps and better(metrics[metric_name], threshold):
                _log.info('At step %s, metric "%s" has value %s which is %s the configured threshold (%s) for early '
                          "stopping.", step, metric_name, metrics[metric_name],
                          "greater than" if higher_is_better else "less than", threshold)
                return True
        return False
    return make_early_stopping_hook(estimator, crossed, run_every_secs, run_every_steps)


def _no_improvement_hook(estimator, metric_name, max_steps_without_improvement, higher_is_better, eval_dir,
                         min_steps, run_every_secs, run_every_steps):
    eval_dir = eval_dir or estimator.eval_dir()
    better = operator.gt if higher_is_better else operator.lt

    def stalled():
        best, best_step = None, None
        for step, metrics in read_eval_metrics(eval_dir).items():
            if step < min_steps:
                continue
            if best is None or better(metrics[metric_name], best):
                best, best_step = metrics[metric_name], step
            if step - best_step >= max_steps_without_improvement:
                _log.info('No %s in metric "%s" for %s steps, which is greater than or equal to max steps (%s) '
                          "configured for early stopping.", "increase" if higher_is_better else "decrease",
                          metric_name, step - best_step, max_steps_without_improvement)
                return True
        return False
    return make_early_stopping_hook(estimator, stalled, run_every_secs, run_every_steps)


@tf_export("estimator.experimental.stop_if_higher_hook")
def stop_if_higher_hook(estimator, metric_name, threshold, eval_dir=None, min_steps=0, run_every_secs=60,
                        run_every_steps=None):
    """Stops training once an evaluation at step >= min_steps has metric_name > threshold."""
    return _threshold_hook(estimator, metric_name, threshold, True, eval_dir, min_steps, run_every_secs,
                           run_every_steps)


@tf_export("estimator.experimental.stop_if_lower_hook")
def stop_if_lower_hook(estimator, metric_name, threshold, eval_dir=None, min_steps=0, run_every_secs=60,
                       run_every_steps=None):
    """Stops training once an evaluation at step >= min_steps has metric_name < threshold."""
    return _threshold_hook(estimator, metric_name, threshold, False, eval_dir, min_steps, run_every_secs,
                           run_every_steps)


@tf_export("estimator.experimental.stop_if_no_increase_hook")
def stop_if_no_increase_hook(estimator, metric_name, max_steps_without_increase, eval_dir=None, min_steps=0,
                             run_every_secs=60, run_every_steps=None):
    """Stops training once metric_name has not increased for max_steps_without_increase steps."""
    return _no_improvement_hook(estimator, metric_name, max_steps_without_increase, True, eval_dir, min_steps,
                                run_every_secs, run_every_steps)


@tf_export("estimator.experimental.stop_if_no_decrease_hook")
def stop_if_no_decrease_hook(estimator, metric_name, max_steps_without_decrease, eval_dir=None, min_steps=0,
                             run_every_secs=60, run_every_steps=None):
    """Stops training once metric_name has not decreased for max_steps_without_decrease steps."""
    return _no_improvement_hook(estimator, metric_name, max_steps_without_decrease, False, eval_dir, min_steps,
                                run_every_secs, run_every_steps)
