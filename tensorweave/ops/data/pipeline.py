"""The runtime of tf.data: what a dataset op outputs (a `DatasetValue`, a recipe) and the
generators that produce its elements when an iterator runs it.

An element is a flat list of arrays (the dataset's components). A stage is a generator over its
input's generator. Stages that run ahead of their consumer do it in threads of their own:
`prefetch` (a bounded buffer filled by one thread), `map` with num_parallel_calls (that many calls
in flight on a pool, results in input order) and `interleave` with num_parallel_calls (each open
input element read ahead by its own thread). numpy releases the GIL in its kernels, so input work
overlaps the consumer's compute.

A failure that belongs to one element (a map function's error, a damaged record) travels as an
`ElementError` in that element's place: the iterator raises it for that get_next and the pipeline
goes on with the next element, as TensorFlow's does. A consumer whose step is cancelled or timed
out while a stage waits gets `NOT_READY` instead: every stage passes it up without losing its
place, so the next get_next resumes where this one gave up.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Callable, Iterator, Optional

import numpy as np

from tensorweave.framework import denormals, errors

_WAIT_SLICE = 0.05
_tls = threading.local()


class ElementError:
    """A failure in place of one element."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error


NOT_READY = object()   # in place of an element: the waiting consumer gave up (see the docstring)


def passes(item) -> bool:
    """True for what stages hand up untouched: NOT_READY and ElementErrors."""
    return item is NOT_READY or isinstance(item, ElementError)


def give_up() -> bool:
    """Asked while a stage waits: True when the consumer waiting in this thread should stop
    (the IteratorResource installs the check for the thread that calls get_next)."""
    check = getattr(_tls, "check", None)
    return check is not None and check()


def set_wait_check(check: Optional[Callable[[], bool]]) -> None:
    _tls.check = check


def as_element_error(e: BaseException) -> ElementError:
    if isinstance(e, errors.OpError):
        return ElementError(e)
    return ElementError(errors.InvalidArgumentError(None, None, f"{type(e).__name__}: {e}"))


INFINITE, UNKNOWN = -1, -2   # cardinalities that are not counts (tf.data.INFINITE_CARDINALITY, ...)


class DatasetValue:
    """A dataset at run time: `elements()` starts a fresh pass over it; `cardinality` is its
    number of elements when known without running it (else INFINITE or UNKNOWN)."""

    cardinality = UNKNOWN

    def elements(self) -> Iterator:
        raise NotImplementedError


# -- threads that run ahead ----------------------------------------------------------------------
def _take(buf: queue.Queue):
    while True:
        try:
            return buf.get(timeout=_WAIT_SLICE)
        except queue.Empty:
            if give_up():
                return NOT_READY


def run_ahead(source: Callable[[], Iterator], size: int, name: str) -> Iterator:
    """Yields the items of source() while a daemon thread keeps up to `size` of them ready. As
    TF's prefetch thread, it waits for room before it pulls the next item: the source is never
    more than `size` items ahead of the consumer (a generator with side effects runs no further)."""
    room = threading.Semaphore(max(int(size), 1))
    buf: queue.Queue = queue.Queue()
    stop = threading.Event()
    end = object()

    def work():
        denormals.flush_this_thread()   # (it runs the pipeline's functions: kernels)
        try:
            items = source()
            while not stop.is_set():   # (the consumer is gone)
                if room.acquire(timeout=_WAIT_SLICE):
                    buf.put(next(items))
            return
        except StopIteration:
            pass
        except BaseException as e:  # noqa: BLE001 - handed to the consumer in place of an element
            buf.put(as_element_error(e))
        buf.put(end)

    thread = threading.Thread(target=work, name=f"tw-data-{name}", daemon=True)
    thread.start()
    try:
        while True:
            item = _take(buf)
            if item is end:
                return
            if item is not NOT_READY:
                room.release()
            yield item
    finally:
        stop.set()


_PROBE = 16                # calls timed before parallel_map decides how to run the rest
_SHORT_CALL_S = 2e-3       # calls shorter than this are better run in the consuming thread


def parallel_map(inputs: Iterator, fn: Callable[[object], object], calls: int, name: str) -> Iterator:
    """fn over inputs by `calls` worker threads, up to 2 * calls elements ahead of the consumer,
    results in input order. The workers time the first _PROBE calls: when they are short (mostly
    Python, which the GIL runs one thread at a time) the threads only add hand-offs, so the
    workers stop and the consumer runs the remaining calls itself. Long calls (codecs, file reads,
    large numpy kernels: they release the GIL) stay on the workers. Items that `passes` are
    handed on untouched."""
    cap = getattr(_tls, "max_threads", None)
    calls = min(calls, cap) if cap else calls
    window = 2 * calls
    cond = threading.Condition()
    results: dict = {}
    state = {"read": 0, "end": False, "stop": False, "taken": 0, "inline": False, "timed": 0, "spent": 0.0}
    read_lock = threading.Lock()

    def work():
        denormals.flush_this_thread()   # (it runs the map function: kernels)
        while True:
            with cond:
                while not state["stop"] and not state["inline"] and state["read"] - state["taken"] >= window:
                    cond.wait(_WAIT_SLICE)
                if state["stop"] or state["inline"]:
                    return
            with read_lock:
                if state["end"] or state["inline"]:
                    return
                try:
                    item = next(inputs)
                except StopIteration:
                    state["end"] = True
                    with cond:
                        cond.notify_all()
                    return
                except BaseException as e:  # noqa: BLE001 - the input failed: its error ends the pass
                    item = as_element_error(e)
                    state["end"] = True
                seq = state["read"]
                state["read"] += 1
            start = time.perf_counter()
            out = item if passes(item) else fn(item)
            took = time.perf_counter() - start
            with cond:
                results[seq] = out
                if not passes(item) and state["timed"] < _PROBE:
                    state["timed"] += 1
                    state["spent"] += took
                    if state["timed"] == _PROBE and state["spent"] / _PROBE < _SHORT_CALL_S:
                        state["inline"] = True
                cond.notify_all()

    workers = [threading.Thread(target=work, name=f"tw-data-{name}-{i}", daemon=True) for i in range(calls)]
    for w in workers:
        w.start()
    try:
        want = 0
        while True:
            with cond:
                while want not in results:
                    if (state["end"] or state["inline"]) and want >= state["read"] and not any(
                            w.is_alive() for w in workers):
                        break
                    cond.wait(_WAIT_SLICE)
                    if want not in results and give_up():
                        break
                out = results.pop(want, NOT_READY)
                if out is not NOT_READY:
                    want += 1
                    state["taken"] = want
                    cond.notify_all()
                elif state["end"] and want >= state["read"]:
                    return
                elif state["inline"] and want >= state["read"] and not any(w.is_alive() for w in workers):
                    break
            yield out
        with read_lock:   # the workers have stopped: the rest runs here
            for item in inputs:
                yield item if passes(item) else fn(item)
    finally:
        with cond:
            state["stop"] = True
            cond.notify_all()


# -- stacking ------------------------------------------------------------------------------------
def with_thread_cap(inputs: Iterator, threads: int) -> Iterator:
    """inputs, with every parallel_map that starts while it is read running at most `threads`
    workers (tf.data's private_threadpool_size)."""
    while True:
        outer, _tls.max_threads = getattr(_tls, "max_threads", None), threads
        try:
            item = next(inputs)
        except StopIteration:
            return
        finally:
            _tls.max_threads = outer
        yield item


def stack(values: list, what: str) -> np.ndarray:
    """Values of one component (same shape) stacked along a new first axis."""
    first = np.asarray(values[0]) if not isinstance(values[0], bytes) else None
    if first is None or first.dtype == object:
        shape = () if first is None else first.shape
        out = np.empty((len(values),) + shape, dtype=object)
        for i, v in enumerate(values):
            if np.shape(v) != shape:
                raise errors.InvalidArgumentError(None, None, f"Cannot batch tensors with different shapes in "
                                                              f"{what}. First element had shape {list(shape)} and "
                                                              f"element {i} had shape {list(np.shape(v))}.")
            out[i] = v
        return out
    try:
        return np.stack(values)
    except ValueError:
        shapes = [np.shape(v) for v in values]
        bad = next(i for i, s in enumerate(shapes) if s != shapes[0])
        raise errors.InvalidArgumentError(None, None, f"Cannot batch tensors with different shapes in {what}. First "
                                                      f"element had shape {list(shapes[0])} and element {bad} had "
                                                      f"shape {list(shapes[bad])}.") from None


def batch_sparse(indices: list, values: list, shapes: list) -> list:
    """SparseTensors of one rank batched into one of rank + 1 (dense shape: the largest)."""
    rank = len(shapes[0])
    for i, s in enumerate(shapes):
        if len(s) != rank:
            raise errors.InvalidArgumentError(None, None, f"Cannot batch SparseTensors of different ranks: "
                                                          f"{rank} and {len(s)} (element {i})")
    rows = [np.concatenate([np.full((len(ix), 1), b, dtype=np.int64), np.asarray(ix, np.int64).reshape(-1, rank)], 1)
            for b, ix in enumerate(indices)]
    dense = np.max(np.stack([np.asarray(s, np.int64) for s in shapes]), axis=0) if rank else np.zeros(0, np.int64)
    vals = np.concatenate([np.asarray(v) for v in values]) if values else np.zeros(0)
    if vals.dtype != np.asarray(values[0]).dtype:
        vals = vals.astype(np.asarray(values[0]).dtype)
    return [np.concatenate(rows) if rows else np.zeros((0, rank + 1), np.int64), vals,
            np.concatenate([[len(indices)], dense]).astype(np.int64)]
