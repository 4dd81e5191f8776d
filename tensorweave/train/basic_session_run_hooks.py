"""The hooks TF1 programs pass to MonitoredSession: StopAtStepHook, CheckpointSaverHook (and
CheckpointSaverListener), SummarySaverHook, LoggingTensorHook, StepCounterHook, NanTensorHook,
GlobalStepWaiterHook, FinalOpsHook, FeedFnHook, ProfilerHook, and their timer
SecondOrStepTimer.

Hooks that read the global step fetch a read of it made once per graph
(`global_step_read`), created in begin() while the graph can still change.
"""
from __future__ import annotations

import logging
import os
import time
from typing import Optional

import numpy as np

from tensorweave.client.timeline import Timeline
from tensorweave.framework import dtypes, errors
from tensorweave.framework.api import GraphKeys
from tensorweave.framework.config import RunOptions
from tensorweave.framework.graph import Operation, Tensor, get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import meta_graph_pb2
from tensorweave.ops.checkpoint.bundle import write_atomically
from tensorweave.summary.summary import Summary
from tensorweave.summary.writer import FileWriterCache, SessionLog
from tensorweave.train.graph_io import write_graph
from tensorweave.train.session_run_hook import SessionRunArgs, SessionRunHook
from tensorweave.train.training_util import get_global_step

_log = logging.getLogger("tensorweave")
SummaryWriterCache = FileWriterCache   # tf.train.SummaryWriterCache: one FileWriter per directory
GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"


def global_step_read(graph=None) -> Optional[Tensor]:
    """A tensor reading the global step (its initial value until it is initialized), made
    once per graph and cached in a collection; None when the graph has no global step."""
    graph = graph or get_default_graph()
    cached = graph.get_collection(GLOBAL_STEP_READ_KEY)
    if cached:
        return cached[0]
    step = get_global_step(graph)
    if step is None:
        return None
    with graph.as_default(), graph.name_scope(None), graph.control_dependencies(None):
        with graph.name_scope(step.op.name + "/"):
            value = step.initialized_value() if hasattr(step, "initialized_value") else step
            read = value + 0
    graph.add_to_collection(GLOBAL_STEP_READ_KEY, read)
    return read


def _require_global_step(hook_name: str) -> Tensor:
    step = global_step_read()
    if step is None:
        raise RuntimeError(f"Global step should be created to use {hook_name}.")
    return step


def _as_graph_element(obj):
    """A tensor (or op) from a tensor, an op, a variable or a name (':0' optional). The name of
    a variable means its value, as in TF1 (not its resource handle)."""
    graph = get_default_graph()
    if not isinstance(obj, str):
        if not isinstance(obj, (Tensor, Operation)) and hasattr(obj, "_as_graph_element"):
            return obj._as_graph_element()
        return obj
    if ":" in obj:
        el = graph.as_graph_element(obj)
    else:
        el = graph.as_graph_element(obj + ":0")
        try:
            graph.as_graph_element(obj + ":1")
        except (KeyError, ValueError):
            pass
        else:
            raise ValueError(f"Name {obj} is ambiguous, as this `Operation` has multiple outputs (at least 2).")
    if isinstance(el, Tensor) and el.dtype == dtypes.resource:
        for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES) + graph.get_collection(GraphKeys.LOCAL_VARIABLES):
            if getattr(v, "handle", None) is el:
                return v._as_graph_element()
    return el


# -- timers ---------------------------------------------------------------------------------------
@tf_export("train.SecondOrStepTimer", "estimator.SecondOrStepTimer")
class SecondOrStepTimer:
    """tf.train.SecondOrStepTimer(every_secs=None, every_steps=None): triggers once every
    every_secs seconds or every every_steps steps."""

    def __init__(self, every_secs=None, every_steps=None):
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if every_secs is not None and every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")
        self._every_secs = every_secs
        self._every_steps = every_steps
        self.reset()

    def reset(self) -> None:
        self._last_triggered_step: Optional[int] = None
        self._last_triggered_time: Optional[float] = None

    def should_trigger_for_step(self, step) -> bool:
        """Whether `step` is due (always the first time, never the same step twice)."""
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None and time.time() >= self._last_triggered_time + self._every_secs:
            return True
        return self._every_steps is not None and step >= self._last_triggered_step + self._every_steps

    def update_last_triggered_step(self, step) -> tuple:
        """Records a trigger at `step`; returns (seconds, steps) since the last one, or
        (None, None) the first time."""
        now = time.time()
        if self._last_triggered_time is None:
            elapsed = (None, None)
        else:
            elapsed = (now - self._last_triggered_time, step - self._last_triggered_step)
        self._last_triggered_time = now
        self._last_triggered_step = step
        return elapsed

    def last_triggered_step(self):
        return self._last_triggered_step


class _NeverTriggerTimer:
    def reset(self) -> None:
        pass

    def should_trigger_for_step(self, step) -> bool:
        return False

    def update_last_triggered_step(self, step) -> tuple:
        return None, None

    def last_triggered_step(self):
        return None


# -- stopping -------------------------------------------------------------------------------------
@tf_export("train.StopAtStepHook", "estimator.StopAtStepHook")
class StopAtStepHook(SessionRunHook):
    """tf.train.StopAtStepHook(num_steps=None, last_step=None): requests a stop once the global
    step reaches last_step (or num_steps more than when the session was created)."""

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self):
        self._global_step_tensor = _require_global_step("StopAtStepHook")

    def after_create_session(self, session, coord):
        if self._last_step is None:
            self._last_step = session.run(self._global_step_tensor) + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        # The fetched value is the step before this run; read it again when it may be done.
        if run_values.results + 1 >= self._last_step:
            if run_context.session.run(self._global_step_tensor) >= self._last_step:
                run_context.request_stop()


@tf_export("train.NanLossDuringTrainingError", "estimator.NanLossDuringTrainingError")
class NanLossDuringTrainingError(RuntimeError):
    """Raised by NanTensorHook when the loss is NaN."""

    def __str__(self):
        return "NaN loss during training."


@tf_export("train.NanTensorHook", "estimator.NanTensorHook")
class NanTensorHook(SessionRunHook):
    """tf.train.NanTensorHook(loss_tensor, fail_on_nan_loss=True): raises
    NanLossDuringTrainingError (or only stops) when the loss becomes NaN."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results):
            message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                _log.error(message)
                raise NanLossDuringTrainingError
            _log.warning(message)
            run_context.request_stop()


@tf_export("train.GlobalStepWaiterHook", "estimator.GlobalStepWaiterHook")
class GlobalStepWaiterHook(SessionRunHook):
    """tf.train.GlobalStepWaiterHook(wait_until_step): holds this worker's first run until the
    global step reaches wait_until_step (to let others warm up the model first)."""

    def __init__(self, wait_until_step):
        self._wait_until_step = wait_until_step

    def begin(self):
        self._worker_is_started = False
        self._global_step_tensor = _require_global_step("_GlobalStepWaiterHook")

    def before_run(self, run_context):
        if self._worker_is_started:
            return None
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        _log.info("Waiting for global step %d before starting training.", self._wait_until_step)
        last_logged = 0
        while True:
            current = run_context.session.run(self._global_step_tensor)
            if current >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if current - last_logged > 1000:
                _log.info("Waiting for global step %d before starting training. Current step is %d.",
                          self._wait_until_step, current)
                last_logged = current
            time.sleep(0.1)


# -- saving ---------------------------------------------------------------------------------------
@tf_export("train.CheckpointSaverListener", "estimator.CheckpointSaverListener")
class CheckpointSaverListener:
    """tf.train.CheckpointSaverListener: called by CheckpointSaverHook around each save
    (after_save may return True to stop training)."""

    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value):
        pass


@tf_export("train.CheckpointSaverHook", "estimator.CheckpointSaverHook")
class CheckpointSaverHook(SessionRunHook):
    """tf.train.CheckpointSaverHook(checkpoint_dir, save_secs=None, save_steps=None, saver=None,
    checkpoint_basename='model.ckpt', scaffold=None, listeners=None, save_graph_def=True): saves
    a checkpoint when the session is created, every save_secs seconds or save_steps steps, and
    at the end."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None, checkpoint_basename="model.ckpt",
                 scaffold=None, listeners=None, save_graph_def=True):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = listeners or []
        self._steps_per_run = 1
        self._save_graph_def = save_graph_def

    def begin(self):
        self._summary_writer = SummaryWriterCache.get(self._checkpoint_dir)
        self._global_step_tensor = _require_global_step("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord):
        global_step = session.run(self._global_step_tensor)
        if self._save_graph_def:
            # (here, not in begin: other hooks may still add ops in begin)
            graph = get_default_graph()
            graph_def = graph.as_graph_def(add_shapes=True)
            write_graph(graph_def, self._checkpoint_dir, "graph.pbtxt")     # with shapes, as TF's
            self._summary_writer.add_graph(graph)
            self._summary_writer.add_meta_graph(meta_graph_pb2.MetaGraphDef(graph_def=graph_def))
        self._save(session, global_step)   # the state at step `global_step`
        self._timer.update_last_triggered_step(global_step)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        if self._timer.should_trigger_for_step(run_values.results + self._steps_per_run):
            global_step = run_context.session.run(self._global_step_tensor)
            if self._timer.should_trigger_for_step(global_step):
                self._timer.update_last_triggered_step(global_step)
                if self._save(run_context.session, global_step):
                    run_context.request_stop()

    def end(self, session):
        last_step = session.run(self._global_step_tensor)
        if last_step != self._timer.last_triggered_step():
            self._save(session, last_step)
        for listener in self._listeners:
            listener.end(session, last_step)

    def _save(self, session, step) -> bool:
        """Saves a checkpoint at `step`; whether a listener asked to stop."""
        _log.info("Saving checkpoints for %d into %s.", step, self._save_path)
        for listener in self._listeners:
            listener.before_save(session, step)
        self._get_saver().save(session, self._save_path, global_step=step, write_meta_graph=self._save_graph_def)
        self._summary_writer.add_session_log(SessionLog(status=SessionLog.CHECKPOINT,
                                                        checkpoint_path=self._save_path), step)
        should_stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                _log.info("A CheckpointSaverListener requested that training be stopped. listener: %s", listener)
                should_stop = True
        return should_stop

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = get_default_graph().get_collection(GraphKeys.SAVERS)
        if not savers:
            raise RuntimeError(f"No items in collection {GraphKeys.SAVERS}. Please add a saver to the collection or "
                               "provide a saver or scaffold.")
        if len(savers) > 1:
            raise RuntimeError(f"More than one item in collection {GraphKeys.SAVERS}. Please indicate which one to "
                               "use by passing it to the constructor.")
        self._saver = savers[0]
        return self._saver


@tf_export("train.SummarySaverHook", "estimator.SummarySaverHook")
class SummarySaverHook(SessionRunHook):
    """tf.train.SummarySaverHook(save_steps=None, save_secs=None, output_dir=None,
    summary_writer=None, scaffold=None, summary_op=None): evaluates the summary op every
    save_steps steps (or save_secs seconds) and writes it to an event file."""

    def __init__(self, save_steps=None, save_secs=None, output_dir=None, summary_writer=None, scaffold=None,
                 summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = SummaryWriterCache.get(self._output_dir)
        self._next_step = None
        self._global_step_tensor = _require_global_step("SummarySaverHook")

    def before_run(self, run_context):
        self._request_summary = self._next_step is None or self._timer.should_trigger_for_step(self._next_step)
        requests = {"global_step": self._global_step_tensor}
        if self._request_summary and self._get_summary_op() is not None:
            requests["summary"] = self._get_summary_op()
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values):
        if not self._summary_writer:
            return
        global_step = run_values.results["global_step"] + 1
        if self._next_step is None or self._request_summary:
            global_step = run_context.session.run(self._global_step_tensor)
        if self._next_step is None:
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), global_step)
        if self._request_summary:
            self._timer.update_last_triggered_step(global_step)
            for summary in run_values.results.get("summary", ()):
                self._summary_writer.add_summary(summary, global_step)
        self._next_step = global_step + 1

    def end(self, session=None):
        if self._summary_writer:
            self._summary_writer.flush()

    def _get_summary_op(self):
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return None
        return op if isinstance(op, list) else [op]


# -- watching -------------------------------------------------------------------------------------
@tf_export("train.LoggingTensorHook", "estimator.LoggingTensorHook")
class LoggingTensorHook(SessionRunHook):
    """tf.train.LoggingTensorHook(tensors, every_n_iter=None, every_n_secs=None, at_end=False,
    formatter=None): logs the values of `tensors` (a list, or a dict tag -> tensor or name)."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False, formatter=None):
        only_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if not isinstance(tensors, dict):
            self._tag_order = list(tensors)
            tensors = {item: item for item in tensors}
        else:
            self._tag_order = sorted(tensors.keys())
        self._tensors = tensors
        self._formatter = formatter
        self._timer = (_NeverTriggerTimer() if only_at_end
                       else SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter))
        self._log_at_end = at_end

    def begin(self):
        self._timer.reset()
        self._iter_count = 0
        self._current_tensors = {tag: _as_graph_element(t) for tag, t in self._tensors.items()}

    def before_run(self, run_context):
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current_tensors) if self._should_trigger else None

    def _log_tensors(self, values: dict) -> None:
        elapsed_secs, _ = self._timer.update_last_triggered_step(self._iter_count)
        if self._formatter:
            _log.info(self._formatter(values))
            return
        with np.printoptions(suppress=True):
            stats = ", ".join(f"{tag} = {values[tag]!s}" for tag in self._tag_order)   # str(): TF's "%s"
        if elapsed_secs is not None:
            _log.info("%s (%.3f sec)", stats, elapsed_secs)
        else:
            _log.info("%s", stats)

    def after_run(self, run_context, run_values):
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session):
        if self._log_at_end:
            self._log_tensors(session.run(self._current_tensors))


@tf_export("train.StepCounterHook", "estimator.StepCounterHook")
class StepCounterHook(SessionRunHook):
    """tf.train.StepCounterHook(every_n_steps=100, every_n_secs=None, output_dir=None,
    summary_writer=None): logs (and, with a summary writer, records) global steps per second."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None, summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._last_global_step = None
        self._steps_per_run = 1
        self._warned = 0

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = SummaryWriterCache.get(self._output_dir)
        self._global_step_tensor = _require_global_step("StepCounterHook")
        self._summary_tag = get_global_step().op.name + "/sec"

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def _log_and_record(self, elapsed_steps, elapsed_time, global_step) -> None:
        steps_per_sec = elapsed_steps / elapsed_time
        if self._summary_writer is not None:
            self._summary_writer.add_summary(_scalar_summary(self._summary_tag, steps_per_sec), global_step)
        _log.info("%s: %g", self._summary_tag, steps_per_sec)

    def after_run(self, run_context, run_values):
        stale = run_values.results
        if self._timer.should_trigger_for_step(stale + self._steps_per_run):
            global_step = run_context.session.run(self._global_step_tensor)
            if self._timer.should_trigger_for_step(global_step):
                elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(global_step)
                if elapsed_time is not None:
                    self._log_and_record(elapsed_steps, elapsed_time, global_step)
        if stale == self._last_global_step and self._warned < 5:
            self._warned += 1
            _log.warning("It seems that global step (tf.train.get_global_step) has not been increased. Current value "
                         "(could be stable): %s vs previous value: %s.", stale, self._last_global_step)
        self._last_global_step = stale


def _scalar_summary(tag: str, value: float) -> Summary:
    return Summary(value=[Summary.Value(tag=tag, simple_value=value)])


@tf_export("train.FinalOpsHook", "estimator.FinalOpsHook")
class FinalOpsHook(SessionRunHook):
    """tf.train.FinalOpsHook(final_ops, final_ops_feed_dict=None): evaluates final_ops when the
    session ends (final_ops_values)."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session):
        if self._final_ops is not None:
            try:
                self._final_ops_values = session.run(self._final_ops, feed_dict=self._final_ops_feed_dict)
            except (errors.OutOfRangeError, StopIteration):
                _log.warning("FinalOpsHook's ops depend on an input that ran out: they should read variables "
                             "only, not another batch.")
                raise


@tf_export("train.FeedFnHook", "estimator.FeedFnHook")
class FeedFnHook(SessionRunHook):
    """tf.train.FeedFnHook(feed_fn): feeds feed_fn() into every run."""

    def __init__(self, feed_fn):
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


@tf_export("train.ProfilerHook", "estimator.ProfilerHook")
class ProfilerHook(SessionRunHook):
    """tf.train.ProfilerHook(save_steps=None, save_secs=None, output_dir='', show_dataflow=True,
    show_memory=False): every save_steps steps (or save_secs seconds) traces one run and writes
    its Chrome trace to output_dir/timeline-<global step>.json."""

    def __init__(self, save_steps=None, save_secs=None, output_dir="", show_dataflow=True, show_memory=False):
        self._output_file = os.path.join(output_dir, "timeline-{}.json")
        self._output_dir = output_dir
        self._file_writer = SummaryWriterCache.get(output_dir)
        self._show_dataflow = show_dataflow
        self._show_memory = show_memory
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        self._next_step = None
        self._global_step_tensor = _require_global_step("ProfilerHook")

    def before_run(self, run_context):
        self._request_trace = self._next_step is not None and self._timer.should_trigger_for_step(self._next_step)
        options = RunOptions(trace_level=RunOptions.FULL_TRACE) if self._request_trace else None
        return SessionRunArgs({"global_step": self._global_step_tensor}, options=options)

    def after_run(self, run_context, run_values):
        stale = run_values.results["global_step"]
        if self._next_step is None:
            self._timer.update_last_triggered_step(stale)
        global_step = stale + 1
        if self._request_trace:
            global_step = run_context.session.run(self._global_step_tensor)
            self._timer.update_last_triggered_step(global_step)
            self._save(global_step, self._output_file.format(global_step), run_values.run_metadata.step_stats)
            self._file_writer.add_run_metadata(run_values.run_metadata, f"step_{global_step}")
        self._next_step = global_step + 1

    def _save(self, step: int, path: str, step_stats) -> None:
        _log.info("Saving timeline for %d into '%s'.", step, path)
        trace = Timeline(step_stats).generate_chrome_trace_format(show_dataflow=self._show_dataflow,
                                                                  show_memory=self._show_memory)
        if self._output_dir:
            os.makedirs(self._output_dir, exist_ok=True)

        def write(tmp: str) -> None:
            with open(tmp, "w") as f:
                f.write(trace)
        write_atomically(path, write)
