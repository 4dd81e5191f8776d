"""tf.contrib.slim.queues: QueueRunners(session), a context in which the graph's queue runners
feed their queues (started on entry, stopped and joined on exit)."""
from __future__ import annotations

import contextlib
import threading

from tensorweave.framework.api import GraphKeys, get_collection
from tensorweave.framework.tf_export import tf_export
from tensorweave.train.coordinator import Coordinator

_queue_runner_lock = threading.Lock()


@tf_export("contrib.slim.queues.NestedQueueRunnerError")
class NestedQueueRunnerError(Exception):
    """Raised when QueueRunners contexts are nested."""


@tf_export("contrib.slim.queues.QueueRunners")
@contextlib.contextmanager
def QueueRunners(session):
    """Starts the QUEUE_RUNNERS of the graph under a Coordinator for the block and stops and joins
    their threads after it (closing the session when one does not stop)."""
    if not _queue_runner_lock.acquire(blocking=False):
        raise NestedQueueRunnerError("QueueRunners cannot be nested")
    coord = Coordinator()
    threads = []
    try:
        for qr in get_collection(GraphKeys.QUEUE_RUNNERS):
            threads.extend(qr.create_threads(session, coord=coord, daemon=True, start=True))
        yield
    finally:
        coord.request_stop()
        try:
            coord.join(threads, stop_grace_period_secs=120)
        except RuntimeError:
            session.close()
        finally:
            _queue_runner_lock.release()
