"""tf.train.Supervisor, for the older programs that use it: a chief initialises or restores
the model and runs the standard services (summaries, steps/sec, checkpoints every
save_model_secs) in threads; the others wait for the chief (polling with a short backoff, see
session_manager.py). `managed_session()` is the usual entry point."""
from __future__ import annotations

import contextlib
import logging
import os
import time

from tensorweave.framework import errors
from tensorweave.framework.api import GraphKeys
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import meta_graph_pb2
from tensorweave.ops.grouping import group
from tensorweave.ops.state.variables import global_variables, global_variables_initializer, \
    local_variables_initializer, report_uninitialized_variables
from tensorweave.summary.summary import Summary, merge_all
from tensorweave.summary.writer import FileWriter, SessionLog
from tensorweave.train.coordinator import Coordinator, LooperThread
from tensorweave.train.graph_io import write_graph
from tensorweave.train.saver import Saver
from tensorweave.train.session_manager import SessionManager
from tensorweave.train.training_util import global_step as read_global_step

_log = logging.getLogger("tensorweave")


def _first_in_collection(key: str):
    items = get_default_graph().get_collection(key)
    if len(items) > 1:
        _log.info("Found %d %s operations. Returning the first one.", len(items), key)
    return items[0] if items else None


@tf_export("train.Supervisor")
class Supervisor:
    """tf.train.Supervisor(graph=None, ready_op=USE_DEFAULT, ready_for_local_init_op=USE_DEFAULT,
    is_chief=True, init_op=USE_DEFAULT, init_feed_dict=None, local_init_op=USE_DEFAULT,
    logdir=None, summary_op=USE_DEFAULT, saver=USE_DEFAULT, global_step=USE_DEFAULT,
    save_summaries_secs=120, save_model_secs=600, recovery_wait_secs=30, stop_grace_secs=120,
    checkpoint_basename='model.ckpt', session_manager=None, summary_writer=USE_DEFAULT,
    init_fn=None, local_init_run_options=None). Finalizes the graph."""

    USE_DEFAULT = 0

    def __init__(self, graph=None, ready_op=USE_DEFAULT, ready_for_local_init_op=USE_DEFAULT, is_chief=True,
                 init_op=USE_DEFAULT, init_feed_dict=None, local_init_op=USE_DEFAULT, logdir=None,
                 summary_op=USE_DEFAULT, saver=USE_DEFAULT, global_step=USE_DEFAULT, save_summaries_secs=120,
                 save_model_secs=600, recovery_wait_secs=30, stop_grace_secs=120, checkpoint_basename="model.ckpt",
                 session_manager=None, summary_writer=USE_DEFAULT, init_fn=None, local_init_run_options=None):
        graph = graph if graph is not None else get_default_graph()
        d = Supervisor.USE_DEFAULT
        with graph.as_default():
            self._ready_op = ready_op if ready_op is not d else self._default(GraphKeys.READY_OP,
                                                                               report_uninitialized_variables)
            self._ready_for_local_init_op = (ready_for_local_init_op if ready_for_local_init_op is not d
                                             else _first_in_collection(GraphKeys.READY_FOR_LOCAL_INIT_OP))
            self._init_op = init_op if init_op is not d else self._default(GraphKeys.INIT_OP,
                                                                            global_variables_initializer)
            self._init_feed_dict = init_feed_dict
            self._local_init_op = local_init_op if local_init_op is not d else self._default(
                GraphKeys.LOCAL_INIT_OP, lambda: group(local_variables_initializer()))
            self._saver = saver if saver is not d else self._default(
                GraphKeys.SAVERS, lambda: Saver() if global_variables() else None)
            self._summary_op = summary_op if summary_op is not d else self._default(GraphKeys.SUMMARY_OP, merge_all)
            self._global_step = global_step if global_step is not d else _first_in_collection(GraphKeys.GLOBAL_STEP)
        self._graph = graph
        self._is_chief = is_chief
        self._coord = Coordinator()
        self._recovery_wait_secs = recovery_wait_secs
        self._stop_grace_secs = stop_grace_secs
        self._init_fn = init_fn
        self._local_init_run_options = local_init_run_options
        self._logdir = None
        self._save_summaries_secs = None
        self._save_model_secs = None
        self._save_path = None
        self._summary_writer = None
        self._graph_added_to_summary = False
        if is_chief:
            self._logdir = logdir
            self._save_summaries_secs = save_summaries_secs
            self._save_model_secs = save_model_secs
            if logdir:
                self._save_path = os.path.join(logdir, checkpoint_basename)
            if summary_writer is d:
                if logdir:
                    self._summary_writer = FileWriter(logdir)
            else:
                self._summary_writer = summary_writer
        self._session_manager = session_manager or SessionManager(
            local_init_op=self._local_init_op, ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op, graph=graph,
            recovery_wait_secs=recovery_wait_secs, local_init_run_options=local_init_run_options)
        graph.finalize()

    @staticmethod
    def _default(key: str, make):
        op = _first_in_collection(key)
        if op is None:
            op = make()
            if op is not None:
                get_default_graph().add_to_collection(key, op)
        return op

    is_chief = property(lambda self: self._is_chief)
    session_manager = property(lambda self: self._session_manager)
    coord = property(lambda self: self._coord)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    summary_writer = property(lambda self: self._summary_writer)
    summary_op = property(lambda self: self._summary_op)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)
    global_step = property(lambda self: self._global_step)
    saver = property(lambda self: self._saver)
    save_model_secs = property(lambda self: self._save_model_secs)
    save_path = property(lambda self: self._save_path)

    def _write_graph(self) -> None:
        if self._logdir:
            write_graph(self._graph.as_graph_def(add_shapes=True), self._logdir, "graph.pbtxt")   # as TF's
        if self._summary_writer and not self._graph_added_to_summary:
            self._summary_writer.add_graph(self._graph)
            graph_def = self._graph.as_graph_def(add_shapes=True)
            self._summary_writer.add_meta_graph(meta_graph_pb2.MetaGraphDef(graph_def=graph_def))
            self._graph_added_to_summary = True

    def start_standard_services(self, sess) -> list:
        """The chief's threads: summaries and steps/sec every save_summaries_secs, checkpoints
        every save_model_secs."""
        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services. Because only chief supervisors "
                               "can write events.")
        if not self._logdir:
            _log.warning("Standard services need a 'logdir' passed to the SessionManager")
            return []
        if self._global_step is not None and self._summary_writer:
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START),
                                                 read_global_step(sess, self._global_step))
        threads = []
        if self._save_summaries_secs and self._summary_writer:
            if self._summary_op is not None:
                threads.append(_SummaryThread(self, sess))
            if self._global_step is not None:
                threads.append(_StepCounterThread(self, sess))
        if self._saver and self._save_model_secs:
            threads.append(_CheckpointThread(self, sess))
        for t in threads:
            t.start()
        return threads

    def prepare_or_wait_for_session(self, master="", config=None, wait_for_checkpoint=False, max_wait_secs=7200,
                                    start_standard_services=True):
        """The chief: a session initialised or restored from logdir (and its services started);
        the others: a session once the chief made the model ready. Starts the queue runners."""
        self._coord.clear_stop()
        if self._summary_writer:
            self._summary_writer.reopen()
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master, init_op=self._init_op, saver=self._saver, checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs, config=config,
                init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            self._write_graph()
            if start_standard_services:
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(master, config=config, max_wait_secs=max_wait_secs)
        if start_standard_services:
            self.start_queue_runners(sess)
        return sess

    def start_queue_runners(self, sess, queue_runners=None) -> list:
        """Starts the threads of the graph's queue runners (or `queue_runners`) under this
        supervisor's coordinator."""
        if queue_runners is None:
            queue_runners = self._graph.get_collection(GraphKeys.QUEUE_RUNNERS)
        threads = []
        for qr in queue_runners:
            threads.extend(qr.create_threads(sess, coord=self._coord, daemon=True, start=True))
        return threads

    def loop(self, timer_interval_secs, target, args=None, kwargs=None) -> LooperThread:
        """Starts a LooperThread calling target every timer_interval_secs until stopped."""
        looper = LooperThread(self._coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def stop(self, threads=None, close_summary_writer=True, ignore_live_threads=False) -> None:
        """Stops the services and queue runners (re-raising the first error one reported)."""
        self._coord.request_stop()
        try:
            self._coord.join(threads, stop_grace_period_secs=self._stop_grace_secs,
                             ignore_live_threads=ignore_live_threads)
        finally:
            if close_summary_writer and self._summary_writer:
                self._summary_writer.add_session_log(SessionLog(status=SessionLog.STOP))
                self._summary_writer.close()
                self._graph_added_to_summary = False

    def request_stop(self, ex=None) -> None:
        self._coord.request_stop(ex=ex)

    def should_stop(self) -> bool:
        return self._coord.should_stop()

    def stop_on_exception(self):
        return self._coord.stop_on_exception()

    def wait_for_stop(self) -> None:
        self._coord.wait_for_stop()

    def summary_computed(self, sess, summary, global_step=None) -> None:
        """Writes a summary the program computed itself (at the global step by default)."""
        if not self._summary_writer:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = read_global_step(sess, self._global_step)
        self._summary_writer.add_summary(summary, global_step)

    @contextlib.contextmanager
    def managed_session(self, master="", config=None, start_standard_services=True, close_summary_writer=True):
        """A context giving a ready session; leaving it stops the services (re-raising an error
        one of them, or the block, hit; OutOfRangeError is a clean stop) and closes it."""
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(master=master, config=config,
                                                    start_standard_services=start_standard_services)
            yield sess
        except Exception as e:  # noqa: BLE001 - reported to the coordinator, re-raised by stop()
            self.request_stop(e)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    try:
                        sess.close()
                    except Exception:  # noqa: BLE001 - closing is best effort
                        pass

    # TF's CamelCase aliases
    PrepareSession = prepare_or_wait_for_session
    StartQueueRunners = start_queue_runners
    StartStandardServices = start_standard_services
    Stop = stop
    RequestStop = request_stop
    Loop = loop
    ShouldStop = should_stop
    StopOnException = stop_on_exception
    WaitForStop = wait_for_stop
    SummaryComputed = summary_computed


@tf_export("train.basic_train_loop")
def basic_train_loop(supervisor, train_step_fn, args=None, kwargs=None, master=""):
    """tf.train.basic_train_loop(supervisor, train_step_fn, args=None, kwargs=None, master=''):
    calls train_step_fn(sess, *args, **kwargs) in supervisor.managed_session(master) until the
    supervisor stops, starting over after an AbortedError (a task of the cluster restarted)."""
    args = list(args or [])
    kwargs = dict(kwargs or {})
    while True:
        try:
            with supervisor.managed_session(master) as sess:
                while not supervisor.should_stop():
                    train_step_fn(sess, *args, **kwargs)
            return
        except errors.AbortedError:
            continue


class _SummaryThread(LooperThread):
    def __init__(self, sv: Supervisor, sess):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess

    def run_loop(self):
        if self._sv.global_step is not None:
            summary, step = self._sess.run([self._sv.summary_op, self._sv.global_step])
        else:
            summary, step = self._sess.run(self._sv.summary_op), None
        if self._sv.summary_writer:
            self._sv.summary_writer.add_summary(summary, step)


class _StepCounterThread(LooperThread):
    def __init__(self, sv: Supervisor, sess):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess
        self._tag = f"{sv.global_step.op.name}/sec"
        self._last_time = 0.0
        self._last_step = 0

    def start_loop(self):
        self._last_time = time.time()
        self._last_step = read_global_step(self._sess, self._sv.global_step)

    def run_loop(self):
        step = read_global_step(self._sess, self._sv.global_step)
        now = time.time()
        elapsed = now - self._last_time
        rate = (step - self._last_step) / elapsed if elapsed > 0 else float("inf")
        self._last_step, self._last_time = step, now
        if self._sv.summary_writer:
            self._sv.summary_writer.add_summary(Summary(value=[Summary.Value(tag=self._tag, simple_value=rate)]),
                                                step)
        _log.info("%s: %g", self._tag, rate)


class _CheckpointThread(LooperThread):
    def __init__(self, sv: Supervisor, sess):
        super().__init__(sv.coord, sv.save_model_secs)
        self._sv, self._sess = sv, sess

    def run_loop(self):
        _log.info("Saving checkpoint to path %s", self._sv.save_path)
        self._sv.saver.save(self._sess, self._sv.save_path, global_step=self._sv.global_step)
        if self._sv.summary_writer and self._sv.global_step is not None:
            self._sv.summary_writer.add_session_log(
                SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._sv.save_path),
                read_global_step(self._sess, self._sv.global_step))
