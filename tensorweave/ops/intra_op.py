"""Intra-op parallelism for the large memory-bound parts of numpy kernels (TF's
intra_op_parallelism_threads): numpy releases the GIL inside ufunc loops and copies, so the
halves of a batch processed on two threads use both cores, as BLAS already does for the GEMMs.

Only work of at least _MIN_ELEMS elements is split (below that a thread hand-off, ~30 us, costs
more than it saves). The caller runs the first part itself; the pool's threads never submit work
to the pool, so a split cannot deadlock, and kernels running concurrently on other threads only
share the cores.
"""
from __future__ import annotations

import itertools
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional

import numpy as np

from tensorweave.framework import denormals
from tensorweave.framework.limits import available_cores

_MIN_ELEMS = 1 << 17


def _cores() -> int:
    """OMP_NUM_THREADS when set (`tensorweave launch` sets it, as it does BLAS's, when several tasks
    share one machine's cores), else the cores this process may use (its container's CPU quota)."""
    try:
        return max(1, int(os.environ["OMP_NUM_THREADS"]))
    except (KeyError, ValueError):
        return available_cores()


THREADS = _cores()
_pool: Optional[ThreadPoolExecutor] = None
_pool_lock = threading.Lock()
_this_thread = threading.local()   # .cap: the most parts this thread's splits may use (None: THREADS)


KEEP = 0.95    # a way with threads side by side is kept when its best time is below this share of serial's
CLOSE = 0.15   # ... the choice being close when that share is within this of KEEP


def measured_choice(share: float, previous: Optional[bool], interval: int, recheck: tuple) -> tuple:
    """(whether to keep running side by side, the runs until the choice is measured again) after a
    trial in which the side-by-side way's best run took `share` of the serial way's best (on a
    shared machine other processes only ever add time). `previous` is the last trial's choice
    (None: none), `interval` the runs it was kept, and `recheck` (first, clear, most): a changed
    or close choice is measured again after `first` runs, a clear one after at least `clear`,
    doubling while trials confirm it, up to `most` (the load changes). Inter-op parallelism
    (runtime/inter_op.py) decides a plan's steps by it, a While (ops/control_flow/loop_body.py)
    its pipelined loops."""
    keep = share < KEEP
    first, clear, most = recheck
    confirmed = (previous is None or keep == previous) and abs(share - KEEP) > CLOSE
    return keep, min(most, max(clear, 2 * interval)) if confirmed else first


class _ShortSwitches:
    """`with short_switches:` around the part of a step that runs on several of its threads at
    once (a parallel step, a pipelined loop). While any such part runs, a thread waiting for the GIL
    takes it from the one holding it after _SWITCH_S at most (sys.setswitchinterval), not Python's
    5 ms: a thread back from a kernel (a product, which lets go of the GIL) waited for another's run
    of small ops, which hold it throughout (a GAN step's two parts 3-10% longer, an LSTM language
    model's step 5%). Before the first and after the last, the interval is the process's own."""

    def __init__(self):
        self._forked()

    def _forked(self) -> None:
        if getattr(self, "running", 0):   # (a forked child: the parent's parallel parts are not in it)
            sys.setswitchinterval(self.before)
        self.lock, self.running, self.before = threading.Lock(), 0, 0.0

    def __enter__(self) -> None:
        with self.lock:
            if not self.running:
                self.before = sys.getswitchinterval()
                sys.setswitchinterval(min(self.before, _SWITCH_S))
            self.running += 1

    def __exit__(self, *exc) -> None:
        with self.lock:
            self.running -= 1
            if not self.running:
                sys.setswitchinterval(self.before)


_SWITCH_S = 1e-4
short_switches = _ShortSwitches()
os.register_at_fork(after_in_child=short_switches._forked)   # (a child's threads are its own)


def cap_parts(parts: Optional[int]) -> Optional[int]:
    """Caps the parts the splits made on this thread use at `parts` (None: no cap); returns the
    previous cap. Inter-op parallelism (runtime/inter_op.py) shares the cores between the ops of a
    step running at once: each of its threads splits into its share only (a split's result is
    the same whatever its parts)."""
    previous = getattr(_this_thread, "cap", None)
    _this_thread.cap = parts
    return previous


def thread_share() -> Optional[int]:
    """This thread's share of the cores while it runs ops of a parallel step (cap_parts), or
    None: the kernels' own teams (oneDNN's) stay within it too (ops/onednn.py)."""
    return getattr(_this_thread, "cap", None)


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=max(1, THREADS - 1), thread_name_prefix="tensorweave-intra-op",
                                           initializer=denormals.flush_this_thread)
    return _pool


def parallel_ranges(n: int, work_elems: int, fn: Callable[[int, int], None]) -> None:
    """Calls fn(start, stop) over contiguous parts of range(n), in parallel when the whole is
    `work_elems` elements or more and there are cores to use; returns when all have run."""
    parts = min(getattr(_this_thread, "cap", None) or THREADS, n, max(1, work_elems // _MIN_ELEMS))
    if parts <= 1:
        if n:
            fn(0, n)
        return
    bounds = [n * i // parts for i in range(parts + 1)]
    pool = _get_pool()
    flushing = denormals.flushing()   # (the parts compute as this thread does: framework/denormals.py)
    # (a part's fn in a box: a cancelled part waits in the pool's queue until a thread takes it,
    # and must not keep the step's arrays alive that long)
    boxes = [[fn] for _ in range(1, parts)]
    futures = [pool.submit(_part, flushing, box, bounds[i + 1], bounds[i + 2]) for i, box in enumerate(boxes)]
    error = None
    for i, f in enumerate([None] + futures):
        try:
            # a part no pool thread has started yet (on a machine busier than its cores the woken
            # thread may wait milliseconds for one) the caller runs itself rather than wait for it
            if f is None or f.cancel():
                if i:
                    boxes[i - 1].clear()
                if error is None:
                    fn(bounds[i], bounds[i + 1])
            else:
                f.result()
        except BaseException as e:   # noqa: BLE001 - re-raised once every part has stopped
            error = error or e
    if error is not None:
        raise error


def _part(flushing: bool, box: list, start: int, stop: int) -> None:
    with denormals.computed_as(flushing):
        box[0](start, stop)


def run_calls(calls: list) -> list:
    """Each call's result, the calls made at once on this thread and the intra-op threads: each
    thread takes the next call nobody has taken (so put the long ones first), and a thread that
    finishes early takes the short ones. Its calls must each run on their calling thread alone."""
    results: list = [None] * len(calls)
    taken = itertools.count()   # (its next() is atomic: the GIL)

    def work(_start: int, _stop: int) -> None:
        while (i := next(taken)) < len(calls):
            results[i] = calls[i]()
    parallel_ranges(len(calls), len(calls) * _MIN_ELEMS, work)
    return results


def split_elementwise(fn, x: np.ndarray, *others, ufunc: bool = True) -> np.ndarray:
    """An elementwise kernel over x (and `others`, broadcast against it) computed in parts along
    axis 0 on the intra-op threads. `fn` is a ufunc called as fn(x, *others, out=out), or with
    ufunc=False a function fn(out, x, *others) writing its part. The result has x's shape."""
    others = [np.asarray(o) for o in others]
    if ufunc and (x.ndim == 0 or x.size < _MIN_ELEMS or THREADS == 1):
        return fn(x, *others)   # (before broadcast_shapes, which costs more than a small op)
    shape = np.broadcast_shapes(x.shape, *(o.shape for o in others))
    if x.ndim == 0 or x.size < _MIN_ELEMS or shape != x.shape or THREADS == 1:
        if ufunc:
            return fn(x, *others)
        out = np.empty(shape, np.result_type(x, *others))
        fn(out, x, *others)
        return out
    out = np.empty(shape, np.result_type(x, *others))
    split = [o.ndim == x.ndim and o.shape[0] == x.shape[0] for o in others]

    def part(a: int, b: int) -> None:
        args = [o[a:b] if s else o for o, s in zip(others, split)]
        if ufunc:
            fn(x[a:b], *args, out=out[a:b])
        else:
            fn(out[a:b], x[a:b], *args)
    parallel_ranges(x.shape[0], x.size, part)
    return out


def row_chunks(shape: tuple) -> list:
    """The bounds of chunks of rows (about _MIN_ELEMS elements each) of an array of `shape` (of
    in_chunks's size), for a kernel whose chunks must be whole rows (a sparse update's looked-up
    rows go with their chunk), to run by run_calls."""
    per_chunk = max(1, _MIN_ELEMS // (int(np.prod(shape)) // shape[0]))
    return list(range(0, shape[0], per_chunk)) + [shape[0]]


def in_chunks(arrays: list) -> bool:
    """Whether elementwise_chunks computes over `arrays` in chunks: numpy arrays of one shape of at
    least eight chunks' elements (smaller ones stay in cache whole)."""
    return arrays[0].size >= 8 * _MIN_ELEMS and all(type(a) is np.ndarray and a.shape == arrays[0].shape
                                                    for a in arrays)


def _chunk_slices(size: int) -> list:
    return [slice(start, start + _MIN_ELEMS) for start in range(0, size, _MIN_ELEMS)]


def elementwise_chunks(fn, arrays: list, out: Optional[list] = None) -> list:
    """fn(*arrays), for an elementwise `fn` of arrays that returns a list of arrays of their shape.
    Arrays of in_chunks's size are computed in chunks of _MIN_ELEMS (in flat order) on the
    intra-op threads: every element comes out as from one whole call, but a chunk's intermediates
    stay in cache where a whole call's ten-odd passes (an optimizer update of a large variable)
    each go through memory. Their results go into new arrays, or into `out` (C-contiguous arrays
    of the results' shapes, which may be among `arrays`: each chunk is read before it is written)."""
    if not in_chunks(arrays):
        return fn(*arrays)
    size = arrays[0].size
    flat = [a.reshape(-1) for a in arrays]
    chunks = _chunk_slices(size)
    first = fn(*(a[chunks[0]] for a in flat))
    outs = [np.empty(size, value.dtype) for value in first] if out is None else [o.reshape(-1) for o in out]

    def compute(chunk: slice) -> None:
        for result, value in zip(outs, fn(*(x[chunk] for x in flat)) if chunk.start else first):
            result[chunk] = value
    run_calls([lambda chunk=chunk: compute(chunk) for chunk in chunks])
    return [result.reshape(arrays[0].shape) for result in outs] if out is None else out


def elementwise_into(fn, arrays: list, out: list) -> None:
    """fn(*arrays, *out), for an elementwise `fn` that writes its results into `out` (C-contiguous
    arrays, which may be among `arrays`): over arrays of in_chunks's size, in chunks of
    _MIN_ELEMS on the intra-op threads, as elementwise_chunks."""
    if not in_chunks(arrays):
        fn(*arrays, *out)
        return
    flat = [a.reshape(-1) for a in (*arrays, *out)]
    run_calls([lambda chunk=chunk: fn(*(x[chunk] for x in flat)) for chunk in _chunk_slices(arrays[0].size)])
