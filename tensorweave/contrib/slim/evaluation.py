"""tf.contrib.slim.evaluation: evaluate a checkpoint once (evaluate_once) or each new checkpoint
of a directory as it appears (evaluation_loop): restore, run eval_op num_evals times (metric
updates), write the summaries to logdir at the global step of the checkpoint, return final_op."""
from __future__ import annotations

import logging

from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.state.variable_ops import assign_add
from tensorweave.summary.summary import merge_all
from tensorweave.summary.writer import FileWriterCache
from tensorweave.train.basic_session_run_hooks import FinalOpsHook
from tensorweave.train.checkpoint_utils import checkpoints_iterator
from tensorweave.train.evaluation import StopAfterNEvalsHook, evaluate_once as training_evaluate_once, \
    get_or_create_eval_step
from tensorweave.train.monitored_session import ChiefSessionCreator, MonitoredSession
from tensorweave.train.saver import Saver
from tensorweave.train.scaffold import Scaffold
from tensorweave.train.session_run_hook import SessionRunHook
from tensorweave.train.training_util import get_or_create_global_step, global_step as read_global_step

_log = logging.getLogger("tensorweave")
_USE_DEFAULT = 0


@tf_export("contrib.slim.evaluation.SummaryAtEndHook")
class SummaryAtEndHook(SessionRunHook):
    """tf.contrib.training.SummaryAtEndHook(log_dir=None, summary_writer=None, summary_op=None,
    feed_dict=None): runs summary_op (default: every summary) once when the session ends and
    writes it to log_dir at the global step."""

    def __init__(self, log_dir=None, summary_writer=None, summary_op=None, feed_dict=None):
        self._replace_summary_op = summary_op is None
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = log_dir
        self._feed_dict = feed_dict
        self._global_step = None

    def begin(self):
        if self._replace_summary_op:
            self._summary_op = merge_all()
        self._global_step = get_or_create_global_step()

    def after_create_session(self, session, coord):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)

    def end(self, session):
        if self._summary_op is not None:
            step = read_global_step(session, self._global_step)
            summary = session.run(self._summary_op, self._feed_dict)
            if self._summary_writer:
                self._summary_writer.add_summary(summary, step)
        if self._summary_writer:
            self._summary_writer.flush()


def _hooks(num_evals, logdir, summary_op, summary_op_feed_dict, hooks) -> list:
    if summary_op is _USE_DEFAULT:
        summary_op = merge_all()
    found = [StopAfterNEvalsHook(num_evals)]
    if summary_op is not None:
        found.append(SummaryAtEndHook(log_dir=logdir, summary_op=summary_op, feed_dict=summary_op_feed_dict))
    return found + list(hooks or [])


@tf_export("contrib.slim.evaluation.evaluate_once", "contrib.slim.evaluate_once")
def evaluate_once(master, checkpoint_path, logdir, num_evals=1, initial_op=None, initial_op_feed_dict=None,
                  eval_op=None, eval_op_feed_dict=None, final_op=None, final_op_feed_dict=None,
                  summary_op=_USE_DEFAULT, summary_op_feed_dict=None, variables_to_restore=None, session_config=None,
                  hooks=None):
    """tf.contrib.slim.evaluation.evaluate_once: restores checkpoint_path (variables_to_restore, or
    all), runs initial_op, then eval_op num_evals times, writes summary_op (default: every summary)
    to logdir, and returns the value of final_op."""
    saver = Saver(variables_to_restore) if variables_to_restore is not None else None
    return training_evaluate_once(
        checkpoint_path, master=master,
        scaffold=Scaffold(init_op=initial_op, init_feed_dict=initial_op_feed_dict, saver=saver),
        eval_ops=eval_op, feed_dict=eval_op_feed_dict, final_ops=final_op, final_ops_feed_dict=final_op_feed_dict,
        hooks=_hooks(num_evals, logdir, summary_op, summary_op_feed_dict, hooks), config=session_config)


@tf_export("contrib.slim.evaluation.evaluation_loop", "contrib.slim.evaluation_loop")
def evaluation_loop(master, checkpoint_dir, logdir, num_evals=1, initial_op=None, initial_op_feed_dict=None,
                    init_fn=None, eval_op=None, eval_op_feed_dict=None, final_op=None, final_op_feed_dict=None,
                    summary_op=_USE_DEFAULT, summary_op_feed_dict=None, variables_to_restore=None,
                    eval_interval_secs=60, max_number_of_evaluations=None, session_config=None, timeout=None,
                    timeout_fn=None, hooks=None):
    """tf.contrib.slim.evaluation.evaluation_loop: evaluate_once for each new checkpoint of
    checkpoint_dir (at most one per eval_interval_secs), until max_number_of_evaluations are done
    or no checkpoint appears within timeout seconds; returns the last value of final_op."""
    all_hooks = _hooks(num_evals, logdir, summary_op, summary_op_feed_dict, hooks)
    saver = Saver(variables_to_restore) if variables_to_restore is not None else None
    scaffold = Scaffold(init_op=initial_op, init_feed_dict=initial_op_feed_dict, init_fn=init_fn, saver=saver)
    eval_step = get_or_create_eval_step()
    eval_ops = eval_op
    if eval_op is not None:
        update_eval_step = assign_add(eval_step, 1)
        for h in all_hooks:
            if isinstance(h, StopAfterNEvalsHook):
                h._set_evals_completed_tensor(update_eval_step)
        if isinstance(eval_op, dict):
            eval_ops = {**eval_op, "update_eval_step": update_eval_step}
        elif isinstance(eval_op, (tuple, list)):
            eval_ops = list(eval_op) + [update_eval_step]
        else:
            eval_ops = [eval_op, update_eval_step]
    final_ops_hook = FinalOpsHook(final_op, final_op_feed_dict)
    all_hooks.append(final_ops_hook)
    done = 0
    for checkpoint_path in checkpoints_iterator(checkpoint_dir, eval_interval_secs, timeout, timeout_fn):
        creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_filename_with_path=checkpoint_path, master=master,
                                      config=session_config)
        with MonitoredSession(session_creator=creator, hooks=all_hooks) as session:
            _log.info("Restoring parameters from %s", checkpoint_path)
            if eval_ops is not None:
                while not session.should_stop():
                    session.run(eval_ops, eval_op_feed_dict)
        done += 1
        if max_number_of_evaluations is not None and done >= max_number_of_evaluations:
            break
    return final_ops_hook.final_ops_values
