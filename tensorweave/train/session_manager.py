"""tf.train.SessionManager: makes a session whose model is ready, by initialising or restoring
it (the chief: prepare_session, recover_session) or by waiting for another task to do so
(wait_for_session).

Readiness is `ready_op` returning an empty list of uninitialised variable names. Unlike TF,
which sleeps recovery_wait_secs (30 s) between checks, a waiting task polls every 20 ms for
its first second of waiting, then with a backoff (growing by a quarter each time to at most
0.5 s, and never more than recovery_wait_secs): a worker that starts beside its chief (which
initialises the model within about a second of starting, while the worker waits) sees the
model ready within 20 ms of it, for a check (one small step on the ps tasks) ~50 times a
second at most, and a long wait settles at two checks a second.
"""
from __future__ import annotations

import logging
import time

import numpy as np

from tensorweave.client.session import Session
from tensorweave.distributed import connector
from tensorweave.framework import errors
from tensorweave.framework.device import DeviceSpec, task_name
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.train.checkpoint_management import get_checkpoint_state


_log = logging.getLogger("tensorweave")
POLL_START_S = 0.02
POLL_FLAT_S = 1.0    # (how long the checks stay POLL_START_S apart before they back off)
POLL_GROWTH = 1.25   # (doubling, a check could come up to the whole wait so far after the chief was ready)
POLL_MAX_S = 0.5


def ready(op, sess, msg: str) -> tuple:
    """(True, None) when `op` (a ready op: uninitialised variable names) reports nothing, else
    (False, why). An uninitialised variable read by `op` also counts as not ready."""
    if op is None:
        return True, None
    try:
        value = sess.run(op)
        if value is None or np.asarray(value).dtype == np.int32 or np.size(value) == 0:
            return True, None
        names = ", ".join(v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in np.asarray(value).ravel())
        return False, "Variables not initialized: " + names
    except errors.FailedPreconditionError as e:
        if "uninitialized" not in str(e):
            _log.warning("%s : error [%s]", msg, e)
            raise
        return False, str(e)


def check_tasks_answer(sess, config=None) -> None:
    """UnavailableError naming the first task the graph's ops are pinned to that does not
    answer within the session's connect timeout (`config` is its ConfigProto: see
    connector.connect_timeout_s). A new session checks before its first run, so that a lost
    task is reported here, plainly, rather than met by the master while it registers the
    graph's partitions."""
    if not sess.sess_str:
        return
    connection = connector.Connection(sess.sess_str, connector.connect_timeout_s(config))
    tasks = set()
    for op in sess.graph.get_operations():
        if op.device:
            spec = DeviceSpec.from_string(op.device)
            if spec.job is not None and spec.job in connection.cluster:
                tasks.add(task_name(spec.job, spec.task or 0))
    for task in sorted(tasks - {connection.task}):
        try:
            client = connection.client_for(task)
        except errors.InvalidArgumentError:
            continue   # the placer reports a task that is not in the cluster
        client.get_status()


def _maybe_name(obj) -> str:
    if obj is None:
        return "None"
    return getattr(obj, "name", None) or str(obj)


class Backoff:
    """Poll intervals: `start` seconds until they add up to `flat` seconds, then growing by
    POLL_GROWTH up to `cap`."""

    def __init__(self, cap: float, start: float = POLL_START_S, flat: float = POLL_FLAT_S):
        self._next = min(start, cap)
        self._cap = cap
        self._flat = flat
        self._waited = 0.0

    def next(self) -> float:
        wait = self._next
        self._waited += wait
        if self._waited >= self._flat - 1e-9:   # (a sum of 0.02s: not exact)
            self._next = min(self._next * POLL_GROWTH, self._cap)
        return wait


@tf_export("train.SessionManager")
class SessionManager:
    """tf.train.SessionManager(local_init_op=None, ready_op=None, ready_for_local_init_op=None,
    graph=None, recovery_wait_secs=30, local_init_run_options=None, local_init_feed_dict=None)."""

    def __init__(self, local_init_op=None, ready_op=None, ready_for_local_init_op=None, graph=None,
                 recovery_wait_secs=30, local_init_run_options=None, local_init_feed_dict=None):
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError("If you pass a ready_for_local_init_op you must also pass a local_init_op , "
                             f"ready_for_local_init_op [{ready_for_local_init_op}]")
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph if graph is not None else get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_run_options = local_init_run_options
        self._local_init_feed_dict = local_init_feed_dict
        self._target = None

    def _poll_cap(self) -> float:
        return max(0.001, min(POLL_MAX_S, float(self._recovery_wait_secs)))

    # -- restoring -------------------------------------------------------------------------------
    def _restore_checkpoint(self, master, saver=None, checkpoint_dir=None, checkpoint_filename_with_path=None,
                            wait_for_checkpoint=False, max_wait_secs=7200, config=None) -> tuple:
        """(a new session, whether a checkpoint was restored into it)."""
        self._target = master
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError("Can not provide both checkpoint_dir and checkpoint_filename_with_path.")
        sess = Session(self._target, graph=self._graph, config=config)
        try:
            check_tasks_answer(sess, config)
            if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
                return sess, False
            if checkpoint_filename_with_path:
                saver.restore(sess, checkpoint_filename_with_path)
                return sess, True
            deadline = time.monotonic() + max_wait_secs
            backoff = Backoff(self._poll_cap())
            ckpt = get_checkpoint_state(checkpoint_dir)
            while not ckpt or not ckpt.model_checkpoint_path:
                if not wait_for_checkpoint or time.monotonic() >= deadline:
                    return sess, False
                _log.info("Waiting for checkpoint to be available.")
                time.sleep(backoff.next())
                ckpt = get_checkpoint_state(checkpoint_dir)
            saver.restore(sess, ckpt.model_checkpoint_path)
            saver.recover_last_checkpoints(ckpt.all_model_checkpoint_paths)
            return sess, True
        except BaseException:
            _safe_close(sess)
            raise

    def prepare_session(self, master, init_op=None, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False, max_wait_secs=7200,
                        config=None, init_feed_dict=None, init_fn=None):
        """A session whose model is ready: restored from the latest checkpoint in checkpoint_dir
        (or checkpoint_filename_with_path) when there is one, else initialised with init_op
        and init_fn; then local_init_op. RuntimeError when that does not make it ready."""
        sess, restored = self._restore_checkpoint(master, saver, checkpoint_dir, checkpoint_filename_with_path,
                                                  wait_for_checkpoint, max_wait_secs, config)
        try:
            if not restored:
                if init_op is None and not init_fn and self._local_init_op is None:
                    raise RuntimeError("Model is not initialized and no init_op or init_fn or local_init_op was "
                                       "given")
                if init_op is not None:
                    sess.run(init_op, feed_dict=init_feed_dict)
                if init_fn:
                    init_fn(sess)
            ok, msg = self._try_run_local_init_op(sess)
            if not ok:
                raise RuntimeError(f"Init operations did not make model ready for local_init.  Init op: "
                                   f"{_maybe_name(init_op)}, init fn: {init_fn}, error: {msg}")
            ok, msg = self._model_ready(sess)
            if not ok:
                raise RuntimeError(f"Init operations did not make model ready.  Init op: {_maybe_name(init_op)}, "
                                   f"init fn: {init_fn}, local_init_op: {self._local_init_op}, error: {msg}")
        except BaseException:
            _safe_close(sess)
            raise
        return sess

    def recover_session(self, master, saver=None, checkpoint_dir=None, checkpoint_filename_with_path=None,
                        wait_for_checkpoint=False, max_wait_secs=7200, config=None) -> tuple:
        """(session, True) when a checkpoint restored a ready model, else (session, False)."""
        sess, restored = self._restore_checkpoint(master, saver, checkpoint_dir, checkpoint_filename_with_path,
                                                  wait_for_checkpoint, max_wait_secs, config)
        ok, msg = self._try_run_local_init_op(sess)
        if not restored:
            return sess, False
        source = checkpoint_dir or checkpoint_filename_with_path
        if not ok:
            _log.info("Restoring model from %s did not make model ready for local init: %s", source, msg)
            return sess, False
        ok, msg = self._model_ready(sess)
        if not ok:
            _log.info("Restoring model from %s did not make model ready: %s", source, msg)
            return sess, False
        _log.info("Restored model from %s", source)
        return sess, True

    def _resume_session(self, master, config=None):
        """After a lost task: a new session on the model as its tasks still hold it, when every
        variable is still initialised (no task restarted: the lost one came back as the same
        incarnation, after a partition or a stall), then local_init_op; else None, and the
        chief restores or initialises as prepare_session does. TF restores either way, which
        rolls a partitioned job back to its last checkpoint."""
        sess = Session(master, graph=self._graph, config=config)
        try:
            check_tasks_answer(sess, config)
            ok, _ = self._model_ready(sess)
            if ok:
                ok, _ = self._try_run_local_init_op(sess)
            if ok:
                ok, _ = self._model_ready(sess)
        except BaseException:
            _safe_close(sess)
            raise
        if not ok:
            _safe_close(sess)
            return None
        _log.info("The model survived on its tasks (no task restarted): continuing without restoring a checkpoint.")
        return sess

    # -- waiting ---------------------------------------------------------------------------------
    def wait_for_session(self, master, config=None, max_wait_secs=float("Inf")):
        """A session on `master` once another task made the model ready (running local_init_op
        as soon as ready_for_local_init_op allows); DeadlineExceededError after max_wait_secs."""
        self._target = master
        if max_wait_secs is None:
            max_wait_secs = float("Inf")
        deadline = time.monotonic() + max_wait_secs
        backoff = Backoff(self._poll_cap())
        sess = Session(self._target, graph=self._graph, config=config)
        try:
            check_tasks_answer(sess, config)
            while True:
                not_ready = None
                ok, not_ready_local = self._try_run_local_init_op(sess)
                if ok:
                    ok, not_ready = self._model_ready(sess)
                    if ok:
                        return sess
                wait = backoff.next()
                if time.monotonic() + wait > deadline:
                    raise errors.DeadlineExceededError(
                        None, None, f"Session was not ready after waiting {max_wait_secs:g} secs. "
                                    f"Ready_for_local_init_op: {not_ready_local}, ready: {not_ready}")
                _log.debug("Waiting for model to be ready.  Ready_for_local_init_op:  %s, ready: %s",
                           not_ready_local, not_ready)
                time.sleep(wait)
        except BaseException:
            _safe_close(sess)
            raise

    # -- readiness -------------------------------------------------------------------------------
    def _model_ready(self, sess) -> tuple:
        return ready(self._ready_op, sess, "Model not ready")

    def _model_ready_for_local_init(self, sess) -> tuple:
        return ready(self._ready_for_local_init_op, sess, "Model not ready for local init")

    def _try_run_local_init_op(self, sess) -> tuple:
        if self._local_init_op is None:
            return True, None
        ok, msg = self._model_ready_for_local_init(sess)
        if not ok:
            return False, msg
        _log.info("Running local_init_op.")
        sess.run(self._local_init_op, feed_dict=self._local_init_feed_dict, options=self._local_init_run_options)
        _log.info("Done running local_init_op.")
        return True, None


def _safe_close(sess) -> None:
    try:
        sess.close()
    except Exception:  # noqa: BLE001 - closing is best effort
        pass
