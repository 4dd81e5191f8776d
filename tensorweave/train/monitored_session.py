"""tf.train.MonitoredSession, SingularMonitoredSession, MonitoredTrainingSession and the session
creators (ChiefSessionCreator, WorkerSessionCreator).

A MonitoredSession is a stack of wrappers around a tf.Session:

  _RecoverableSession   recreates the session when a task was lost (AbortedError,
                        UnavailableError): the chief restores the latest checkpoint onto a
                        restarted task (a new incarnation), the others wait for it; when no
                        task restarted (a partition, a stall) the model its tasks still hold
                        is kept, not rolled back (TF restores; so does every
                        MultiWorkerMirroredStrategy worker, whose copies must stay equal
                        to a restarted worker's). Gives up with the last error
                        once neither a session nor a run succeeded for
                        TENSORWEAVE_RECOVERY_TIMEOUT_S seconds after the loss (default 600): a
                        task gone for good ends the program, it does not hang it or retry it
                        forever (a MultiWorkerMirroredStrategy worker makes its session alone,
                        and only its runs meet the lost worker).
  _CoordinatedSession   a Coordinator and the queue-runner threads; closing stops them.
  _HookedSession        calls the hooks around each run, merging their fetches and feeds.

Leaving `with MonitoredSession(...)` on OutOfRangeError or StopIteration is a clean stop: the
input ran out, or training ended elsewhere (a worker blocked on SyncReplicasOptimizer's token
queue is released with OutOfRangeError when the chief stops).
"""
from __future__ import annotations

import inspect
import logging
import threading
import time
from typing import Optional

from tensorweave.distributed import sockets
from tensorweave.framework import errors
from tensorweave.framework.api import GraphKeys
from tensorweave.framework.config import RunMetadata, RunOptions
from tensorweave.framework.distribution_context import current_entry
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.train.basic_session_run_hooks import CheckpointSaverHook, StepCounterHook, SummarySaverHook
from tensorweave.train.coordinator import Coordinator
from tensorweave.train.queue_runner import start_queue_runners
from tensorweave.train.scaffold import Scaffold
from tensorweave.train.session_manager import SessionManager
from tensorweave.train.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunValues


_log = logging.getLogger("tensorweave")
PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)
USE_DEFAULT = object()
_ABANDON_GRACE_S = 1.0


def steps_or_secs(steps, secs, default_steps, default_secs):
    """A (steps, secs) pair of intervals of which USE_DEFAULT marks those not given: with neither
    given the defaults, with one given the other None."""
    if steps is USE_DEFAULT and secs is USE_DEFAULT:
        return default_steps, default_secs
    return (None if steps is USE_DEFAULT else steps), (None if secs is USE_DEFAULT else secs)


# -- session creators -----------------------------------------------------------------------------
@tf_export("train.SessionCreator")
class SessionCreator:
    """tf.train.SessionCreator: makes a tf.Session (create_session)."""

    def create_session(self):
        raise NotImplementedError(f"create_session is not implemented for {self}.")


class _ScaffoldedCreator(SessionCreator):
    def __init__(self, scaffold, master, config):
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config
        self._session_manager: Optional[SessionManager] = None

    def _get_session_manager(self) -> SessionManager:
        if self._session_manager is None:
            self._session_manager = SessionManager(
                local_init_op=self._scaffold.local_init_op, local_init_feed_dict=self._scaffold.local_init_feed_dict,
                ready_op=self._scaffold.ready_op, ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
                graph=get_default_graph())
        return self._session_manager


@tf_export("train.ChiefSessionCreator")
class ChiefSessionCreator(_ScaffoldedCreator):
    """tf.train.ChiefSessionCreator(scaffold=None, master='', config=None, checkpoint_dir=None,
    checkpoint_filename_with_path=None): initialises the model, or restores it from the latest
    checkpoint in checkpoint_dir."""

    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        super().__init__(scaffold, master, config)
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path

    def create_session(self):
        self._scaffold.finalize()
        return self._get_session_manager().prepare_session(
            self._master, saver=self._scaffold.saver, checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename_with_path, config=self._config,
            init_op=self._scaffold.init_op, init_feed_dict=self._scaffold.init_feed_dict,
            init_fn=self._scaffold.init_fn)

    def _resume_session(self):
        """After a lost task (MonitoredSession's recovery): a session on the model as its tasks
        still hold it, or None when a task restarted and create_session must restore it."""
        self._scaffold.finalize()
        return self._get_session_manager()._resume_session(self._master, config=self._config)


class _MirroredChiefSessionCreator(ChiefSessionCreator):
    """A MultiWorkerMirroredStrategy worker's (each keeps its own copies of the variables, kept
    equal by collectives): after a lost task it restores the latest checkpoint (or initialises)
    as the restarted worker does, never keeps the copies it holds, which would then differ from
    the restarted one's (TF's ChiefSessionCreator always restores)."""

    def _resume_session(self):
        return None


@tf_export("train.WorkerSessionCreator")
class WorkerSessionCreator(_ScaffoldedCreator):
    """tf.train.WorkerSessionCreator(scaffold=None, master='', config=None, max_wait_secs=1800):
    waits (polling with a short backoff) until the chief has made the model ready."""

    def __init__(self, scaffold=None, master="", config=None, max_wait_secs=30 * 60):
        super().__init__(scaffold, master, config)
        self._max_wait_secs = max_wait_secs

    def create_session(self):
        self._scaffold.finalize()
        return self._get_session_manager().wait_for_session(self._master, config=self._config,
                                                            max_wait_secs=self._max_wait_secs)


# -- the wrappers ---------------------------------------------------------------------------------
class _WrappedSession:
    def __init__(self, sess):
        self._sess = sess
        self._wrapped_is_stoppable = isinstance(sess, _WrappedSession)

    graph = property(lambda self: self._sess.graph)
    sess_str = property(lambda self: self._sess.sess_str)

    def should_stop(self) -> bool:
        if self._check_stop():
            return True
        if self._sess:
            return self._wrapped_is_stoppable and self._sess.should_stop()
        return True

    def _check_stop(self) -> bool:
        return False

    def close(self) -> None:
        if self._sess:
            try:
                self._sess.close()
            except PREEMPTION_ERRORS as e:
                _log.error("An error occurred when attempting to close the session (a lost task?): %s", e)
            finally:
                self._sess = None

    def run(self, *args, **kwargs):
        return self._sess.run(*args, **kwargs)

    def run_step_fn(self, step_fn, raw_session, run_with_hooks):
        return step_fn(_MonitoredSession.StepContext(raw_session, run_with_hooks or self.run))

    def raw(self):
        """The tf.Session at the bottom of the stack."""
        s = self._sess
        while isinstance(s, _WrappedSession):
            s = s._sess
        return s


class _HookedSession(_WrappedSession):
    def __init__(self, sess, hooks):
        super().__init__(sess)
        self._hooks = hooks
        self._should_stop = False

    def _check_stop(self) -> bool:
        return self._should_stop

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested.")
        actual_fetches = {"caller": fetches}
        run_context = SessionRunContext(original_args=SessionRunArgs(fetches, feed_dict), session=self._sess)
        options = options or RunOptions()
        feed_dict = self._call_hook_before_run(run_context, actual_fetches, feed_dict, options)
        run_metadata = run_metadata or RunMetadata()
        outputs = _WrappedSession.run(self, fetches=actual_fetches, feed_dict=feed_dict, options=options,
                                      run_metadata=run_metadata)
        for hook in self._hooks:
            hook.after_run(run_context, SessionRunValues(results=outputs[hook] if hook in outputs else None,
                                                         options=options, run_metadata=run_metadata))
        self._should_stop = self._should_stop or run_context.stop_requested
        return outputs["caller"]

    def _call_hook_before_run(self, run_context, fetch_dict, user_feed_dict, options):
        hook_feeds: dict = {}
        for hook in self._hooks:
            request = hook.before_run(run_context)
            if request is None:
                continue
            if request.fetches is not None:
                fetch_dict[hook] = request.fetches
            if request.feed_dict:
                _raise_if_feeds_intersect(hook_feeds, request.feed_dict, "Same tensor is fed by two hooks.")
                hook_feeds.update(request.feed_dict)
            if request.options:
                _merge_run_options(options, request.options)
        if not hook_feeds:
            return user_feed_dict
        if not user_feed_dict:
            return hook_feeds
        _raise_if_feeds_intersect(user_feed_dict, hook_feeds, "Same tensor is fed by a SessionRunHook and user.")
        hook_feeds.update(user_feed_dict)
        return hook_feeds


def _raise_if_feeds_intersect(a: dict, b: dict, message: str) -> None:
    both = set(a) & set(b)
    if both:
        raise RuntimeError(message + " Conflict(s): " + str(list(both)))


def _merge_run_options(options: RunOptions, incoming: RunOptions) -> None:
    options.trace_level = max(options.trace_level, incoming.trace_level)
    options.timeout_in_ms = max(options.timeout_in_ms, incoming.timeout_in_ms)
    options.inter_op_thread_pool = max(options.inter_op_thread_pool, incoming.inter_op_thread_pool)
    options.output_partition_graphs = max(options.output_partition_graphs, incoming.output_partition_graphs)
    options.report_tensor_allocations_upon_oom = (options.report_tensor_allocations_upon_oom
                                                  or incoming.report_tensor_allocations_upon_oom)


class _CoordinatedSession(_WrappedSession):
    def __init__(self, sess, coord: Coordinator, stop_grace_period_secs: float = 120):
        super().__init__(sess)
        self._coord = coord
        self._stop_grace_period_secs = stop_grace_period_secs

    def _check_stop(self) -> bool:
        # An exception a thread reported to the coordinator is raised here, in the main thread.
        self._coord.raise_requested_exception()
        return self._coord.should_stop()

    def close(self) -> None:
        self._coord.request_stop()
        try:
            self._coord.join(stop_grace_period_secs=self._stop_grace_period_secs, ignore_live_threads=True)
        finally:
            try:
                _WrappedSession.close(self)
            except Exception:  # noqa: BLE001 - join already reported what matters
                pass

    def abandon(self) -> None:
        """Closes after losing a task: the tf.Session first, so that the threads' cancel ops
        (which would close queues the next session still needs) cannot run, then the threads
        are stopped and given a short grace; their errors are symptoms of the loss."""
        raw = self.raw()
        if raw is not None:
            # (bounded: closing talks to the tasks, and one of them is gone)
            closer = threading.Thread(target=_quiet_close, args=(raw,), name="tensorweave-abandon", daemon=True)
            closer.start()
            closer.join(_ABANDON_GRACE_S + sockets.PROBE_INTERVAL_S)
        self._coord.request_stop()
        try:
            self._coord.join(stop_grace_period_secs=min(self._stop_grace_period_secs, _ABANDON_GRACE_S),
                             ignore_live_threads=True)
        except Exception:  # noqa: BLE001
            pass
        self._sess = None

    def run(self, *args, **kwargs):
        # A thread that lost a task stops the coordinator: recover before running into it.
        self._coord.raise_requested_exception()
        try:
            return self._sess.run(*args, **kwargs)
        except PREEMPTION_ERRORS:
            raise
        except Exception as original:
            # A failure here may come from a lost task a thread saw first: raise that instead.
            try:
                self._coord.raise_requested_exception()
            except PREEMPTION_ERRORS as e:
                raise e from original
            except Exception:  # noqa: BLE001
                pass
            raise


def _quiet_close(sess) -> None:
    try:
        sess.close()
    except Exception:  # noqa: BLE001 - the task is gone
        pass


class _RecoverableSession(_WrappedSession):
    def __init__(self, sess_creator):
        self._sess_creator = sess_creator
        self._lost_since: Optional[float] = None
        self._run_started: Optional[float] = None   # of the run that lost a task
        super().__init__(self._create_session())

    def _lost(self, e: errors.OpError, where: str, run_started: Optional[float] = None) -> None:
        if self._lost_since is None:
            self._lost_since = time.monotonic()
            self._run_started = run_started
        self._abandon()
        self._give_up_if_late(e, "No step could be run")
        _log.info("A task was lost (%s: %s) %s; a new session will be created.", type(e).__name__, e, where)

    def _abandon(self) -> None:
        sess, self._sess = self._sess, None
        if isinstance(sess, _CoordinatedSession):
            sess.abandon()
        elif sess is not None:
            try:
                sess.close()
            except Exception:  # noqa: BLE001
                pass

    def _create_session(self):
        while True:
            try:
                return self._sess_creator.create_session(after_loss=self._lost_since is not None)
            except PREEMPTION_ERRORS as e:
                if self._lost_since is None:
                    self._lost_since, self._run_started = time.monotonic(), None
                self._give_up_if_late(e, "No session could be created")
                _log.info("An error was raised while a session was being created (a lost task?); retrying: %s", e)
                time.sleep(0.1)

    def _give_up_if_late(self, e: errors.OpError, what: str) -> None:
        """Raises `e`'s class (its message kept: it names the task) once recovery is past its
        deadline: the lost task is gone for good."""
        deadline, why = self._recovery_deadline()
        if time.monotonic() > deadline:
            waited = time.monotonic() - self._lost_since
            raise type(e)(e.node_def, e.op, f"{what} for {waited:.1f} s after a task was lost ({why}): it is "
                                            f"gone for good; last error: {e.message}") from e

    def _recovery_deadline(self) -> tuple:
        """(when recovery gives up, what set it): TENSORWEAVE_RECOVERY_TIMEOUT_S after the loss,
        or, when sooner, the session config's operation_timeout_in_ms after the start of the
        run that lost the task (that run was bound by it: its caller gets an error in time)."""
        timeout_s = sockets.recovery_timeout_s()
        deadline, why = self._lost_since + timeout_s, f"TENSORWEAVE_RECOVERY_TIMEOUT_S={timeout_s:g}"
        config = getattr(getattr(self._sess_creator, "session_creator", None), "_config", None)
        op_timeout_ms = getattr(config, "operation_timeout_in_ms", 0) or 0
        start = self._run_started if self._run_started is not None else self._lost_since
        if op_timeout_ms > 0 and start + op_timeout_ms / 1000 < deadline:
            deadline, why = start + op_timeout_ms / 1000, f"operation_timeout_in_ms={op_timeout_ms}"
        return deadline, why

    def _check_stop(self) -> bool:
        try:
            if self._sess:
                return self._sess._check_stop()
            return True
        except PREEMPTION_ERRORS as e:
            self._lost(e, "while checking whether to stop")
        except Exception:  # noqa: BLE001 - should_stop returns True rather than raise
            return True
        self._sess = self._create_session()
        return False

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        while True:
            if not self._sess:
                self._sess = self._create_session()   # (gives up with the last error, unretried)
            started = time.monotonic()
            try:
                out = self._sess.run(fetches, feed_dict=feed_dict, options=options, run_metadata=run_metadata)
            except PREEMPTION_ERRORS as e:
                self._lost(e, "during a run", started)
                continue
            self._lost_since = None
            return out

    def run_step_fn(self, step_fn, raw_session, run_with_hooks):
        while True:
            if not self._sess:
                self._sess = self._create_session()
            started = time.monotonic()
            try:
                out = self._sess.run_step_fn(step_fn, self._sess.raw(), None)
            except PREEMPTION_ERRORS as e:
                self._lost(e, "during step_fn", started)
                continue
            self._lost_since = None
            return out


# -- MonitoredSession -----------------------------------------------------------------------------
class _MonitoredSession:
    class StepContext:
        """What step_fn gets: the raw session and run_with_hooks (a run that calls the hooks)."""

        def __init__(self, session, run_with_hooks_fn):
            self._session = session
            self._run_with_hooks_fn = run_with_hooks_fn

        @property
        def session(self):
            return self._session

        def run_with_hooks(self, *args, **kwargs):
            return self._run_with_hooks_fn(*args, **kwargs)

        def request_stop(self):
            raise StopIteration("step_fn has requested the iterations to stop.")

    class _CoordinatedSessionCreator(SessionCreator):
        def __init__(self, session_creator, hooks, stop_grace_period_secs):
            self.session_creator = session_creator
            self._hooks = hooks
            self.coord: Optional[Coordinator] = None
            self.tf_sess = None
            self._stop_grace_period_secs = stop_grace_period_secs

        def create_session(self, after_loss: bool = False):
            # After a lost task a chief keeps the model its tasks still hold (a partition is not
            # a failure); only a restarted task's lost state is restored from the checkpoint.
            resume = getattr(self.session_creator, "_resume_session", None) if after_loss else None
            self.tf_sess = (resume and resume()) or self.session_creator.create_session()
            self.coord = Coordinator(clean_stop_exception_types=[])
            if get_default_graph().get_collection(GraphKeys.QUEUE_RUNNERS):
                start_queue_runners(sess=self.tf_sess, coord=self.coord)
            for hook in self._hooks:
                hook.after_create_session(self.tf_sess, self.coord)
            return _CoordinatedSession(_HookedSession(self.tf_sess, self._hooks), self.coord,
                                       self._stop_grace_period_secs)

    def __init__(self, session_creator, hooks, should_recover: bool, stop_grace_period_secs: float = 120):
        self._graph_was_finalized = get_default_graph().finalized
        self._hooks = list(hooks or [])
        for h in self._hooks:
            h.begin()
        self._coordinated_creator = self._CoordinatedSessionCreator(
            session_creator or ChiefSessionCreator(), self._hooks, stop_grace_period_secs)
        if should_recover:
            self._sess = _RecoverableSession(self._coordinated_creator)
        else:
            self._sess = self._coordinated_creator.create_session()

    @property
    def graph(self):
        return self._tf_sess().graph

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs like tf.Session.run, calling the hooks around it (and recovering lost tasks)."""
        return self._sess.run(fetches, feed_dict=feed_dict, options=options, run_metadata=run_metadata)

    def run_step_fn(self, step_fn):
        """Calls step_fn(step_context) once; step_context.session is the raw session,
        step_context.run_with_hooks runs with the hooks, step_context.request_stop() stops."""
        params = list(inspect.signature(step_fn).parameters)
        if params not in (["step_context"], ["self", "step_context"]):
            raise ValueError("`step_fn` may either have one `step_context` argument, or `self` and `step_context` "
                             f"arguments if it's an instance method. Got {tuple(params)} instead.")
        return self._sess.run_step_fn(step_fn, self._tf_sess(), run_with_hooks=None)

    def should_stop(self) -> bool:
        return self._sess is None or self._sess.should_stop()

    def close(self) -> None:
        self._close_internal()

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None

    def _close_internal(self, exception_type=None) -> None:
        try:
            if not exception_type:
                for h in self._hooks:
                    h.end(self._coordinated_creator.tf_sess)
        finally:
            try:
                if self._sess is None:
                    raise RuntimeError("Session is already closed.")
                self._sess.close()
            finally:
                self._sess = None
                self._coordinated_creator.tf_sess = None
                self._coordinated_creator.coord = None
                if not self._graph_was_finalized:
                    get_default_graph()._unsafe_unfinalize()

    def _is_closed(self) -> bool:
        return self._sess is None

    def _tf_sess(self):
        return self._coordinated_creator.tf_sess


@tf_export("train.MonitoredSession")
class MonitoredSession(_MonitoredSession):
    """tf.train.MonitoredSession(session_creator=None, hooks=None, stop_grace_period_secs=120):
    a session that initialises or restores its model, runs hooks, runs the queue runners, and
    recreates itself when a task is lost."""

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        super().__init__(session_creator, hooks, should_recover=True, stop_grace_period_secs=stop_grace_period_secs)


@tf_export("train.SingularMonitoredSession")
class SingularMonitoredSession(_MonitoredSession):
    """tf.train.SingularMonitoredSession(hooks=None, scaffold=None, master='', config=None,
    checkpoint_dir=None, stop_grace_period_secs=120, checkpoint_filename_with_path=None): a
    MonitoredSession of one chief that does not recover, with raw_session()."""

    def __init__(self, hooks=None, scaffold=None, master="", config=None, checkpoint_dir=None,
                 stop_grace_period_secs=120, checkpoint_filename_with_path=None):
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config, checkpoint_dir=checkpoint_dir,
                                      checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, should_recover=False, stop_grace_period_secs=stop_grace_period_secs)

    def raw_session(self):
        return self._tf_sess()


@tf_export("train.MonitoredTrainingSession")
def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None, scaffold=None, hooks=None,
                             chief_only_hooks=None, save_checkpoint_secs=USE_DEFAULT,
                             save_summaries_steps=USE_DEFAULT, save_summaries_secs=USE_DEFAULT, config=None,
                             stop_grace_period_secs=120, log_step_count_steps=100, max_wait_secs=7200,
                             save_checkpoint_steps=USE_DEFAULT, summary_dir=None):
    """tf.train.MonitoredTrainingSession(...): a MonitoredSession for training. The chief
    initialises or restores the model and (with checkpoint_dir / summary_dir) saves
    checkpoints every save_checkpoint_secs (default 600) or save_checkpoint_steps, summaries
    every save_summaries_steps (default 100) or save_summaries_secs, and logs global steps/sec
    every log_step_count_steps; the others wait up to max_wait_secs for the chief. Inside the
    scope() of a between-graph tf.distribute strategy, the strategy says who is chief (as TF's
    distribute coordinator does), and every MultiWorkerMirroredStrategy worker initialises its own
    variables, and after a lost worker restores them from the latest checkpoint (or initialises
    them) as the restarted one does, re-forming the collective group with it on the next step."""
    save_summaries_steps, save_summaries_secs = steps_or_secs(save_summaries_steps, save_summaries_secs, 100, None)
    save_checkpoint_steps, save_checkpoint_secs = steps_or_secs(save_checkpoint_steps, save_checkpoint_secs, None, 600)
    scaffold = scaffold or Scaffold()
    strategy = current_entry()
    chief_creator, creates_own = ChiefSessionCreator, False
    if strategy is not None and strategy[0].extended.experimental_between_graph:
        # TF's worker context of a between-graph strategy: the chief saves; a worker that keeps its
        # own copies of the variables (MultiWorkerMirroredStrategy) initialises or restores them itself
        ext = strategy[0].extended
        is_chief = ext.should_checkpoint
        if ext.experimental_should_init:
            chief_creator, creates_own = _MirroredChiefSessionCreator, True
    if not is_chief:
        creator = (chief_creator(scaffold=scaffold, checkpoint_dir=checkpoint_dir, master=master, config=config)
                   if creates_own else
                   WorkerSessionCreator(scaffold=scaffold, master=master, config=config, max_wait_secs=max_wait_secs))
        return MonitoredSession(session_creator=creator, hooks=hooks or [],
                                stop_grace_period_secs=stop_grace_period_secs)
    all_hooks = list(chief_only_hooks or [])
    creator = chief_creator(scaffold=scaffold, checkpoint_dir=checkpoint_dir, master=master, config=config)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir and log_step_count_steps and log_step_count_steps > 0:
        all_hooks.append(StepCounterHook(output_dir=summary_dir, every_n_steps=log_step_count_steps))
    if summary_dir and ((save_summaries_steps and save_summaries_steps > 0)
                        or (save_summaries_secs and save_summaries_secs > 0)):
        all_hooks.append(SummarySaverHook(scaffold=scaffold, save_steps=save_summaries_steps,
                                          save_secs=save_summaries_secs, output_dir=summary_dir))
    if checkpoint_dir and ((save_checkpoint_secs and save_checkpoint_secs > 0)
                           or (save_checkpoint_steps and save_checkpoint_steps > 0)):
        all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_steps=save_checkpoint_steps,
                                             save_secs=save_checkpoint_secs, scaffold=scaffold))
    all_hooks.extend(hooks or [])
    return MonitoredSession(session_creator=creator, hooks=all_hooks, stop_grace_period_secs=stop_grace_period_secs)
