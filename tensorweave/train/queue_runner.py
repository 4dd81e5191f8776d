"""tf.train.QueueRunner: threads that run a queue's enqueue ops until the queue closes or their
Coordinator stops; tf.train.add_queue_runner and tf.train.start_queue_runners."""
from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import Optional

from tensorweave.client.session import BaseSession
from tensorweave.framework import errors
from tensorweave.framework.api import GraphKeys
from tensorweave.framework.graph import get_default_graph, get_default_session
from tensorweave.framework.importer import prefixed
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import QueueRunnerDef
from tensorweave.train.meta_graph import register_proto_function


_log = logging.getLogger("tensorweave")

TURN_S = 0.005        # how long one thread of a runner runs its op before the next one's turn
TURN_WAIT_S = 0.05    # a turn's run that lasts longer than this lets the others run beside it


class _Turns:
    """Which of a runner's threads runs its enqueue op now. CPython runs one thread's Python at a
    time, and threads that hand the GIL to each other at every small numpy call ran seed 003's
    input pipeline at less than half of one thread's rate. So the running threads take turns of
    TURN_S, in order (every enqueue op gets its share, as batch_join needs); a run that blocks (a
    full queue, a remote value, a slow file) for TURN_WAIT_S lets the others run beside it. A
    passed turn wakes only its new owner: every wake-up costs a GIL hand-over."""

    def __init__(self):
        self._lock = threading.Lock()
        self._waits: dict[int, threading.Condition] = {}   # the threads that run (started, not ended)
        self._owner: Optional[int] = None
        self._turn_began = 0.0
        self._running: Optional[float] = None   # when the owner's current run began

    def join(self, i: int) -> None:
        with self._lock:
            self._waits[i] = threading.Condition(self._lock)
            if self._owner is None:
                self._owner, self._turn_began = i, time.monotonic()

    def begin(self, i: int) -> bool:
        """Waits for thread i's turn: True when it has it, False when it runs beside an owner
        whose run is blocked."""
        with self._lock:
            while self._owner != i:
                if self._running is not None and time.monotonic() - self._running > TURN_WAIT_S:
                    return False
                self._waits[i].wait(TURN_WAIT_S)
            self._running = time.monotonic()
            return True

    def end(self, i: int, mine: bool) -> None:
        if mine:
            with self._lock:
                self._running = None
                if time.monotonic() - self._turn_began > TURN_S:
                    self._pass(i)

    def leave(self, i: int) -> None:
        with self._lock:
            del self._waits[i]
            if self._owner == i:
                self._running = None
                self._pass(i)

    def _pass(self, i: int) -> None:
        order = sorted(self._waits)
        self._owner = ([j for j in order if j > i] or order or [None])[0]
        self._turn_began = time.monotonic()
        if self._owner is not None:
            self._waits[self._owner].notify()


@tf_export("train.QueueRunner", "train.queue_runner.QueueRunner")
class QueueRunner:
    """tf.train.QueueRunner(queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
    queue_closed_exception_types=None).

    create_threads(sess, coord) starts one thread per enqueue op, each running its op in a
    loop; when one hits a queue_closed_exception_types error (default OutOfRangeError: its
    input ran out) it stops, and the last one to stop runs close_op (default queue.close()).
    With a coordinator, a further thread runs cancel_op (default queue.close(
    cancel_pending_enqueues=True)) once the coordinator stops, which releases enqueues that
    wait on a full queue. Other errors are reported to the coordinator."""

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None, queue_runner_def=None, import_scope=None):
        self._lock = threading.Lock()
        self._runs_per_session: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._exceptions_raised: list = []
        if queue_runner_def is not None:
            if queue or enqueue_ops:
                raise ValueError("queue_runner_def and queue are mutually exclusive.")
            self._init_from_def(queue_runner_def, import_scope)
            return
        if not queue or not enqueue_ops:
            raise ValueError("Must provide queue and enqueue_ops.")
        if queue_closed_exception_types is not None:
            if (not isinstance(queue_closed_exception_types, tuple) or not queue_closed_exception_types
                    or not all(isinstance(t, type) and issubclass(t, errors.OpError)
                               for t in queue_closed_exception_types)):
                raise TypeError("queue_closed_exception_types, when provided, must be a tuple of tf.error types, "
                                f"but saw: {queue_closed_exception_types}")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True)
        self._queue_closed_exception_types = tuple(queue_closed_exception_types or (errors.OutOfRangeError,))

    def _init_from_def(self, d, import_scope) -> None:
        g = get_default_graph()
        if not isinstance(d, QueueRunnerDef):
            raise TypeError(f"queue_runner_def must be a QueueRunnerDef proto, not {type(d).__name__}")

        def element(name):
            return g.as_graph_element(prefixed(name, import_scope))
        self._queue = element(d.queue_name)
        self._enqueue_ops = [element(n) for n in d.enqueue_op_name]
        self._close_op = element(d.close_op_name)
        self._cancel_op = element(d.cancel_op_name)
        self._queue_closed_exception_types = tuple(
            errors.exception_type_from_error_code(c) for c in d.queue_closed_exception_types) or (
            errors.OutOfRangeError,)

    def to_proto(self, export_scope=None):
        """This runner as TF's QueueRunnerDef naming its queue and ops, or None when its queue is
        outside export_scope."""
        if export_scope and not self.name.startswith(export_scope + "/"):
            return None

        def strip(name: str) -> str:
            return name[len(export_scope) + 1:] if export_scope else name
        return QueueRunnerDef(queue_name=strip(self.name), enqueue_op_name=[strip(op.name) for op in self._enqueue_ops],
                              close_op_name=strip(self._close_op.name), cancel_op_name=strip(self._cancel_op.name),
                              queue_closed_exception_types=[errors.error_code_from_exception_type(c)
                                                            for c in self._queue_closed_exception_types])

    @staticmethod
    def from_proto(queue_runner_def, import_scope=None) -> "QueueRunner":
        """The QueueRunner that to_proto described, over the ops of the default graph."""
        return QueueRunner(queue_runner_def=queue_runner_def, import_scope=import_scope)

    queue = property(lambda self: self._queue)
    enqueue_ops = property(lambda self: self._enqueue_ops)
    close_op = property(lambda self: self._close_op)
    cancel_op = property(lambda self: self._cancel_op)
    queue_closed_exception_types = property(lambda self: self._queue_closed_exception_types)

    @property
    def exceptions_raised(self) -> list:
        """Exceptions the threads raised while running without a coordinator."""
        return self._exceptions_raised

    @property
    def name(self) -> str:
        return self._queue.name

    def _run(self, sess, enqueue_op, coord, turns: _Turns, index: int) -> None:
        decremented = False
        turns.join(index)
        try:
            enqueue = sess.make_callable(enqueue_op)
            while True:
                if coord is not None and coord.should_stop():
                    break
                mine = turns.begin(index)
                try:
                    enqueue()
                except self._queue_closed_exception_types:
                    with self._lock:
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        if self._runs_per_session[sess] == 0:
                            try:
                                sess.run(self._close_op)
                            except Exception as e:  # noqa: BLE001 - TF ignores errors of close_op
                                _log.debug("Ignored exception: %s", e)
                    return
                finally:
                    turns.end(index, mine)
        except Exception as e:
            if coord is not None:
                coord.request_stop(e)
            else:
                _log.error("Exception in QueueRunner: %s", e)
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            turns.leave(index)
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess, cancel_op, coord) -> None:
        coord.wait_for_stop()
        try:
            coord.raise_requested_exception()
        except (errors.AbortedError, errors.UnavailableError):
            # A task was lost: this session is being given up, and its cancel op would only try
            # to reach the lost task (or close queues the next session still needs).
            return
        except Exception:  # noqa: BLE001 - any other stop still cancels
            pass
        try:
            sess.run(cancel_op)
        except Exception as e:  # noqa: BLE001 - the session may be closed or a task gone
            _log.debug("Ignored exception: %s", e)

    def create_threads(self, sess, coord=None, daemon: bool = False, start: bool = False) -> list:
        """The threads that run the enqueue ops in `sess` (none when they already run there);
        registered with `coord`, started when `start`."""
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        turns = _Turns()
        threads = [threading.Thread(target=self._run, args=(sess, op, coord, turns, i),
                                    name=f"QueueRunnerThread-{self.name}-{op.name}")
                   for i, op in enumerate(self._enqueue_ops)]
        if coord is not None:
            threads.append(threading.Thread(target=self._close_on_stop, args=(sess, self._cancel_op, coord),
                                            name=f"QueueRunnerThread-{self.name}-close_on_stop"))
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if daemon:
                t.daemon = True
            if start:
                t.start()
        return threads


register_proto_function(GraphKeys.QUEUE_RUNNERS, QueueRunnerDef,
                        lambda qr, export_scope=None: qr.to_proto(export_scope), QueueRunner.from_proto)


@tf_export("train.add_queue_runner", "train.queue_runner.add_queue_runner")
def add_queue_runner(qr: QueueRunner, collection: str = GraphKeys.QUEUE_RUNNERS) -> None:
    """tf.train.add_queue_runner(qr, collection='queue_runners')."""
    get_default_graph().add_to_collection(collection, qr)


@tf_export("train.start_queue_runners", "train.queue_runner.start_queue_runners")
def start_queue_runners(sess=None, coord=None, daemon: bool = True, start: bool = True,
                        collection: str = GraphKeys.QUEUE_RUNNERS) -> list:
    """tf.train.start_queue_runners(sess=None, coord=None, daemon=True, start=True,
    collection='queue_runners'): starts the threads of every QueueRunner of the graph's
    collection in `sess` (default: the default session); returns them."""
    if sess is None:
        sess = get_default_session()
        if not sess:
            raise ValueError("Cannot start queue runners: No default session is registered. Use `with "
                             "sess.as_default()` or pass an explicit session to tf.start_queue_runners(sess=sess)")
    if not isinstance(sess, BaseSession):
        # A MonitoredSession starts its queue runners itself (TF accepts and ignores it here).
        if type(sess).__name__ in ("MonitoredSession", "SingularMonitoredSession"):
            return []
        raise TypeError(f"sess must be a `tf.Session` object. Given class: {type(sess)}")
    runners = sess.graph.get_collection(collection)
    if not runners:
        _log.warning("`tf.train.start_queue_runners()` was called when no queue runners were defined. You can "
                     "safely remove the call to this deprecated function.")
    threads = []
    with sess.graph.as_default():
        for qr in runners:
            threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
