"""tf.train.Coordinator: stops a set of threads together and reports the first error one of
them hit; tf.train.LooperThread: a thread that runs a function periodically until stopped."""
from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from typing import Optional

from tensorweave.framework import errors
from tensorweave.framework.tf_export import tf_export


_log = logging.getLogger("tensorweave")
_JOIN_POLL_S = 0.05


@tf_export("train.Coordinator")
class Coordinator:
    """tf.train.Coordinator(clean_stop_exception_types=None).

    Threads loop `while not coord.should_stop()`; any of them may `request_stop(ex)`, and the
    first exception reported is re-raised by `join()`. Exceptions of
    clean_stop_exception_types (default: OutOfRangeError) stop cleanly, without being raised."""

    def __init__(self, clean_stop_exception_types=None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise: Optional[tuple] = None
        self._joined = False
        self._registered_threads: set = set()

    def _filter_exception(self, ex):
        value = ex[1] if isinstance(ex, tuple) else ex
        return None if isinstance(value, self._clean_stop_exception_types) else ex

    def request_stop(self, ex=None) -> None:
        """Asks every thread to stop. `ex` (an exception, or a sys.exc_info() tuple) is kept to be
        re-raised by join(), unless another was reported first or it is a clean-stop type."""
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined:
                # Nobody will join again to report it: raise it here.
                if isinstance(ex, tuple):
                    raise ex[1].with_traceback(ex[2])
                if ex is not None:
                    raise ex
            if not self._stop_event.is_set():
                if ex is not None and self._exc_info_to_raise is None:
                    if isinstance(ex, tuple):
                        _log.info("Error reported to Coordinator: %s", ex[1])
                        self._exc_info_to_raise = ex
                    else:
                        _log.info("Error reported to Coordinator: %s, %s", type(ex), ex)
                        self._exc_info_to_raise = (type(ex), ex, ex.__traceback__)
                self._stop_event.set()

    def clear_stop(self) -> None:
        """Forgets a stop request and its exception, so the coordinator can be used again."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self) -> bool:
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        """A context in which any exception becomes request_stop(exception) (and is swallowed)."""
        try:
            yield
        except BaseException:  # noqa: BLE001 - TF reports every exception to the coordinator
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout: Optional[float] = None) -> bool:
        """Waits until a stop is requested (or timeout seconds); True if it was."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads=None, stop_grace_period_secs: float = 120, ignore_live_threads: bool = False) -> None:
        """Waits for the threads (and the registered ones) to end or a stop to be requested, then
        up to stop_grace_period_secs for them to end; re-raises the first exception reported;
        RuntimeError for threads still alive unless ignore_live_threads."""
        with self._lock:
            threads = list(self._registered_threads if threads is None else self._registered_threads.union(threads))
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(_JOIN_POLL_S):
            pass
        deadline = time.monotonic() + stop_grace_period_secs
        wait = 0.001
        while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
            time.sleep(wait)
            wait = max(min(2 * wait, 0.1, deadline - time.monotonic()), 0.001)
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise:
                _, value, tb = self._exc_info_to_raise
                raise value.with_traceback(tb)
            if stragglers:
                if ignore_live_threads:
                    _log.info("Coordinator stopped with threads still running: %s", " ".join(stragglers))
                else:
                    raise RuntimeError("Coordinator stopped with threads still running: " + " ".join(stragglers))

    @property
    def joined(self) -> bool:
        return self._joined

    def raise_requested_exception(self) -> None:
        """Re-raises the exception reported with request_stop, if any."""
        with self._lock:
            if self._exc_info_to_raise:
                _, value, tb = self._exc_info_to_raise
                raise value.with_traceback(tb)


@tf_export("train.LooperThread")
class LooperThread(threading.Thread):
    """tf.train.LooperThread(coord, timer_interval_secs, target=None, args=None, kwargs=None):
    calls `target` (or `run_loop`) every timer_interval_secs (back to back when None) until
    the coordinator stops; an exception stops the coordinator."""

    def __init__(self, coord: Coordinator, timer_interval_secs, target=None, args=None, kwargs=None):
        if not isinstance(coord, Coordinator):
            raise ValueError(f"'coord' argument must be a Coordinator: {coord}")
        super().__init__()
        self.daemon = True
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._loop_target = target
        if self._loop_target:
            self._loop_args = args or ()
            self._loop_kwargs = kwargs or {}
        elif args or kwargs:
            raise ValueError("'args' and 'kwargs' argument require that you also pass 'target'")
        self._coord.register_thread(self)

    @staticmethod
    def loop(coord, timer_interval_secs, target, args=None, kwargs=None) -> "LooperThread":
        """Starts and returns a LooperThread calling target(*args, **kwargs) periodically."""
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def run(self) -> None:
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_timer_time = time.time()
                while not self._coord.wait_for_stop(next_timer_time - time.time()):
                    next_timer_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self) -> None:
        """Called once when the thread starts."""

    def stop_loop(self) -> None:
        """Called once when the thread stops."""

    def run_loop(self) -> None:
        if self._loop_target:
            self._loop_target(*self._loop_args, **self._loop_kwargs)
