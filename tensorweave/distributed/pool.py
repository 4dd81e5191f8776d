"""The threads a server runs requests on: an idle one if there is one, else a new one, up to a
limit (framework/limits.REQUEST_THREADS) of requests running at once, those that a thread
outside the pool runs (`try_claim`: the transport's IO-role threads) included.

The pool grows rather than queues because a request may block (a Recv waiting for a peer, a
dequeue): with a fixed pool, sync training deadlocks once every thread waits for a request
still queued behind them. At the limit a request waits for a thread that finishes at most
QUEUE_WAIT_S (a burst is absorbed), then is refused (the transport answers
ResourceExhaustedError naming the limit) rather than left to wait on threads that may all be
blocked; the IO thread itself keeps answering pings, pushes and aborts, so blocked steps can
still be released. Idle threads exit after a while.
"""
from __future__ import annotations

import collections
import logging
import queue
import threading
import time
from typing import Callable

from tensorweave.framework import denormals, limits

_IDLE_THREAD_S = 30.0
QUEUE_WAIT_S = 1.0
_log = logging.getLogger("tensorweave.distributed")


class RequestPool:
    """Runs each task on an idle thread, or on a new one while fewer than the limit run."""

    def __init__(self, name: str, max_threads: int = 0):
        self._name = name
        self._max = max_threads or limits.value(limits.REQUEST_THREADS)
        self._lock = threading.Lock()
        self._idle = 0
        self._threads = 0
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._waiting: collections.deque = collections.deque()   # (since, fn, refuse) at the limit
        self._claimed = 0    # requests run by threads outside the pool
        self._stopped = False

    @property
    def max_threads(self) -> int:
        return self._max

    @property
    def threads(self) -> int:
        """Threads alive now (busy or idle)."""
        return self._threads

    def _running(self) -> int:
        return self._threads - self._idle + self._claimed

    def submit(self, fn: Callable[[], None], refuse: Callable[[], None]) -> None:
        """Runs fn on a pool thread. When the limit's worth of requests run, fn waits for one
        to finish up to QUEUE_WAIT_S; refuse() is called instead when none did (by `expire`)."""
        with self._lock:
            if self._stopped:
                return
            if self._running() >= self._max:
                self._waiting.append((time.monotonic(), fn, refuse))
                return
            if self._hand_to_idle(fn):
                return
        self._start((time.monotonic(), fn, refuse))

    def try_claim(self) -> bool:
        """Lets a thread outside the pool run one request, counted against the limit; False
        when the limit's worth run already (or others wait for a thread)."""
        with self._lock:
            if self._stopped or self._waiting or self._running() >= self._max:
                return False
            self._claimed += 1
            return True

    def release_claim(self) -> None:
        """The request of a try_claim finished: a request waiting for a thread may start."""
        with self._lock:
            self._claimed -= 1
            if not self._waiting or self._stopped:
                return
            waiting = self._waiting.popleft()
            if self._hand_to_idle(waiting[1]):
                return
        self._start(waiting, first=True)

    def _hand_to_idle(self, fn: Callable[[], None]) -> bool:
        """(Under the lock.) Gives fn to an idle thread; False when there is none, the new
        thread that is to run it counted already."""
        if self._idle > 0:
            self._idle -= 1
            self._q.put(fn)
            return True
        self._threads += 1
        return False

    def _start(self, waiting: tuple, first: bool = False) -> None:
        """Starts a thread for the request `waiting` (since, fn, refuse); when the system will
        not start another, the request waits for a thread (at the head of the line if `first`)."""
        try:
            threading.Thread(target=self._loop, args=(waiting[1],), name=self._name, daemon=True).start()
        except RuntimeError:
            with self._lock:
                self._threads -= 1
                if first:
                    self._waiting.appendleft(waiting)
                else:
                    self._waiting.append(waiting)

    def expire(self, now: float) -> None:
        """Refuses the tasks that waited for a thread longer than QUEUE_WAIT_S (called often)."""
        refused = []
        with self._lock:
            while self._waiting and now - self._waiting[0][0] > QUEUE_WAIT_S:
                refused.append(self._waiting.popleft()[2])
        for refuse in refused:
            refuse()

    def _loop(self, fn) -> None:
        denormals.flush_this_thread()   # (the thread runs a step's kernels)
        try:
            while fn is not None:
                try:
                    fn()
                except Exception:  # noqa: BLE001 - a task's failure must not end its thread uncounted
                    _log.exception("request thread: unexpected error")
                with self._lock:
                    if self._stopped:
                        return
                    if self._waiting:   # a task that waited for a thread takes this one
                        fn = self._waiting.popleft()[1]
                        continue
                    self._idle += 1
                try:
                    fn = self._q.get(timeout=_IDLE_THREAD_S)
                except queue.Empty:
                    with self._lock:
                        try:
                            fn = self._q.get_nowait()
                        except queue.Empty:
                            self._idle -= 1
                            return
        finally:
            with self._lock:
                self._threads -= 1

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            n, self._idle = self._idle, 0
        for _ in range(n):
            self._q.put(None)
