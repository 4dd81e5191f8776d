"""tf.train.SessionRunHook and the records hooks exchange with a MonitoredSession:
SessionRunArgs, SessionRunContext, SessionRunValues."""
from __future__ import annotations

import collections

from tensorweave.framework.tf_export import tf_export


@tf_export("train.SessionRunHook", "estimator.SessionRunHook")
class SessionRunHook:
    """A hook into MonitoredSession: begin (before the graph is finalized),
    after_create_session, before_run / after_run around every run call, and end."""

    def begin(self):
        """Called once before the session is created; may still add ops to the graph."""

    def after_create_session(self, session, coord):
        """Called when a (new) session is created, after initialisation and before any run."""

    def before_run(self, run_context):
        """Called before each run; may return SessionRunArgs to add fetches, feeds or options."""
        return None

    def after_run(self, run_context, run_values):
        """Called after each successful run with the values of what before_run asked for."""

    def end(self, session):
        """Called once at the end of the session (not when it ends with an error)."""


@tf_export("train.SessionRunArgs", "estimator.SessionRunArgs")
class SessionRunArgs(collections.namedtuple("SessionRunArgs", ["fetches", "feed_dict", "options"])):
    """tf.train.SessionRunArgs(fetches, feed_dict=None, options=None): what a hook adds to a run."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


@tf_export("train.SessionRunContext", "estimator.SessionRunContext")
class SessionRunContext:
    """tf.train.SessionRunContext(original_args, session): the run a hook is called around."""

    def __init__(self, original_args, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self):
        """The SessionRunArgs the caller passed to run()."""
        return self._original_args

    @property
    def session(self):
        return self._session

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        """Asks the MonitoredSession to stop after this run (should_stop() becomes True)."""
        self._stop_requested = True


@tf_export("train.SessionRunValues", "estimator.SessionRunValues")
class SessionRunValues(collections.namedtuple("SessionRunValues", ["results", "options", "run_metadata"])):
    """tf.train.SessionRunValues(results, options, run_metadata): what before_run asked for."""
