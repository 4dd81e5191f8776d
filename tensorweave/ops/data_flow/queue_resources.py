"""The storage of a queue, held by a task's ResourceManager: FIFO, random shuffle, padding FIFO
and priority queues, with TF's semantics for capacity, closing and blocking.

An element is a tuple of numpy arrays, one per component. Enqueues wait while the queue is
full, dequeues while it holds too few elements; both give up when their step is cancelled or
reaches its deadline (waiting.py). A closed queue refuses new enqueues (CancelledError) and
fails a dequeue it cannot satisfy (OutOfRangeError); with cancel_pending_enqueues the
enqueues already waiting fail too. A dequeue_many takes elements as they come, in arrival
order of the dequeues; one that fails puts back what it took.
"""
from __future__ import annotations

import collections
import heapq
import itertools
from typing import Optional, Sequence

import numpy as np

from tensorweave.framework import dtypes as dtypes_lib, errors
from tensorweave.ops.data_flow.waiting import NOT_YET, Waitable


def shape_str(shape) -> str:
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _compatible(want, got: tuple) -> bool:
    if want is None:
        return True
    return len(want) == len(got) and all(w is None or w == g for w, g in zip(want, got))


class QueueResource(Waitable):
    """A FIFO queue. Subclasses change where elements go and which one leaves first."""

    type_name = "FIFOQueue"

    def __init__(self, name: str, component_types: Sequence[str], shapes: Optional[list], capacity: int):
        super().__init__()
        self.name = name
        self.component_types = list(component_types)
        self.np_dtypes = [dtypes_lib.as_dtype(t).as_numpy_dtype for t in self.component_types]
        # One shape per component (a list with None for unknown dims), or None when not given.
        self.shapes = [None if s is None else tuple(s) for s in shapes] if shapes else None
        self.capacity = capacity
        self.closed = False
        self.enqueues_cancelled = False
        self._store: collections.deque = collections.deque()

    # -- storage: what subclasses change ---------------------------------------------------------
    def _size(self) -> int:
        return len(self._store)

    def _available(self) -> int:
        """How many elements a dequeue may take now."""
        return len(self._store)

    def _push(self, element: tuple) -> None:
        self._store.append(element)

    def _pop(self) -> tuple:
        return self._store.popleft()

    def _put_back(self, taken: list) -> None:
        """Returns elements a failed dequeue took, so the next dequeue gets them first."""
        self._store.extendleft(reversed(taken))

    # -- checks ----------------------------------------------------------------------------------
    def describe(self) -> tuple:
        return (type(self).__name__, self.component_types, self.shapes, self.capacity)

    def check_same(self, other: "QueueResource", node) -> None:
        """InvalidArgumentError when a queue built under a shared name differs from this one."""
        for what, mine, theirs in (("type", type(self).__name__, type(other).__name__),
                                   ("component types", self.component_types, other.component_types),
                                   ("shapes", self.shapes, other.shapes), ("capacity", self.capacity, other.capacity)):
            if mine != theirs:
                raise errors.InvalidArgumentError(
                    node, node.name, f"Shared queue '{self.name}' has {what} {mine} but requested {what} was {theirs}")

    def check_element(self, node, element: Sequence, batched: bool = False) -> tuple:
        """The components as arrays of the queue's dtypes; InvalidArgumentError naming the
        component whose shape does not fit."""
        if len(element) != len(self.np_dtypes):
            raise errors.InvalidArgumentError(node, node.name, f"{node.op} ({node.name}): expected "
                                              f"{len(self.np_dtypes)} components, got {len(element)}")
        out = []
        for i, (value, dt) in enumerate(zip(element, self.np_dtypes)):
            arr = np.asarray(value, dtype=dt)
            got = arr.shape[1:] if batched else arr.shape
            want = self.shapes[i] if self.shapes else None
            if not _compatible(want, got):
                if batched:
                    raise errors.InvalidArgumentError(
                        node, node.name, f"Shape mismatch in tuple component {i}. Expected [?,{shape_str(want)[1:]}, "
                                         f"got {shape_str(arr.shape)}")
                raise errors.InvalidArgumentError(
                    node, node.name, f"Shape mismatch in tuple component {i}. Expected {shape_str(want)}, got "
                                     f"{shape_str(arr.shape)}")
            out.append(arr)
        return tuple(out)

    def check_many(self, node) -> None:
        if not self.shapes or any(s is None or None in s for s in self.shapes):
            raise errors.InvalidArgumentError(
                node, node.name, f"{self.type_name}'s DequeueMany and DequeueUpTo require the components to have "
                                 "specified shapes.")

    # -- operations ------------------------------------------------------------------------------
    def _closed_error(self, node) -> errors.CancelledError:
        return errors.CancelledError(node, node.name, f"{self.type_name} '{self.name}' is closed.")

    def _has_room(self) -> bool:
        return self.capacity < 0 or self._size() < self.capacity

    def enqueue_many(self, step, node, elements: list) -> None:
        """Adds `elements` in order, as room allows; waits while the queue is full."""
        with self.lock:
            if self.closed:
                raise self._closed_error(node)
        pending = collections.deque(elements)

        def try_once():
            if self.enqueues_cancelled:
                raise self._closed_error(node)
            pushed = False
            while pending and self._has_room():
                self._push(pending.popleft())
                pushed = True
            if pushed:
                self.wake("dequeue")
            return None if not pending else NOT_YET

        self.attempt("enqueue", try_once, step, node, f"room in {self.type_name} '{self.name}'", ready=self._has_room)

    def dequeue_many(self, step, node, n: int, allow_smaller: bool = False) -> list:
        """Takes `n` elements, waiting for them; on a closed queue takes what is left (at
        least one) when `allow_smaller`, else fails with OutOfRangeError. Elements are taken
        once all `n` are there, or earlier when the queue is full (to make room for the rest)."""
        taken: list = []

        def ready() -> bool:
            return self.closed or self._available() >= n - len(taken) or not self._has_room()

        def try_once():
            if self.closed and len(taken) + self._available() < n:
                left = len(taken) + self._available()
                if allow_smaller and left > 0:
                    while self._available():
                        taken.append(self._pop())
                    self.wake("enqueue")
                    return taken
                self._put_back(taken)
                taken.clear()
                raise errors.OutOfRangeError(
                    node, node.name, f"{self.type_name} '{self.name}' is closed and has insufficient elements "
                                     f"(requested {n}, current size {self._size()})")
            if not ready():
                return NOT_YET
            took = False
            while len(taken) < n and self._available() > 0:
                taken.append(self._pop())
                took = True
            if took:
                self.wake("enqueue")
            return taken if len(taken) >= n else NOT_YET

        def put_back():
            if taken:
                self._put_back(taken)
                taken.clear()

        return self.attempt("dequeue", try_once, step, node, f"elements of {self.type_name} '{self.name}'",
                            on_fail=put_back, ready=ready)

    def close(self, cancel_pending_enqueues: bool) -> None:
        with self.lock:
            self.closed = True
            if cancel_pending_enqueues:
                self.enqueues_cancelled = True
            self.wake()

    def size(self) -> int:
        with self.lock:
            return self._size()

    def close_on_reset(self) -> None:
        """The session or container holding this queue went away: its waiters fail."""
        self.close(True)
        self.drop(errors.CancelledError(None, None, f"{self.type_name} '{self.name}' was dropped: its session "
                                                    "was closed or its container reset"))

    # -- batches ---------------------------------------------------------------------------------
    def batch(self, elements: list) -> tuple:
        """Stacks elements into one array per component (dequeue_many's result)."""
        out = []
        for i, dt in enumerate(self.np_dtypes):
            if elements:
                out.append(np.stack([e[i] for e in elements]))
            else:
                out.append(np.zeros((0,) + tuple(self.shapes[i]), dtype=dt))
        return tuple(out)


class RandomShuffleQueueResource(QueueResource):
    """Dequeues a random element; while open, keeps at least min_after_dequeue elements."""

    type_name = "RandomShuffleQueue"

    def __init__(self, name, component_types, shapes, capacity, min_after_dequeue: int, rng: np.random.Generator):
        super().__init__(name, component_types, shapes, capacity)
        self.min_after_dequeue = min_after_dequeue
        self._rng = rng
        self._store = []

    def describe(self) -> tuple:
        return super().describe() + (self.min_after_dequeue,)

    def _available(self) -> int:
        if self.closed:
            return len(self._store)
        return max(0, len(self._store) - self.min_after_dequeue)

    def _pop(self) -> tuple:
        store = self._store
        i = int(self._rng.integers(len(store)))
        store[i], store[-1] = store[-1], store[i]
        return store.pop()

    def _put_back(self, taken: list) -> None:
        self._store.extend(taken)


class PaddingFIFOQueueResource(QueueResource):
    """A FIFO queue whose components may have unknown dims: dequeue_many pads each batch to
    its largest element, with zeros (empty strings for strings)."""

    type_name = "PaddingFIFOQueue"

    def check_many(self, node) -> None:
        return

    def batch(self, elements: list) -> tuple:
        out = []
        for i, dt in enumerate(self.np_dtypes):
            parts = [e[i] for e in elements]
            if not parts:
                out.append(np.zeros((0,) + tuple(0 if d is None else d for d in self.shapes[i]), dtype=dt))
                continue
            full = tuple(max(p.shape[d] for p in parts) for d in range(parts[0].ndim))
            fill = b"" if np.dtype(dt) == np.dtype(object) else 0
            batch = np.full((len(parts),) + full, fill, dtype=dt)
            for j, p in enumerate(parts):
                batch[(j,) + tuple(slice(0, s) for s in p.shape)] = p
            out.append(batch)
        return tuple(out)


class PriorityQueueResource(QueueResource):
    """Component 0 of each element is its int64 priority; the smallest leaves first (ties in
    arrival order)."""

    type_name = "PriorityQueue"

    def __init__(self, name, component_types, shapes, capacity):
        super().__init__(name, component_types, shapes, capacity)
        self._store = []
        self._arrivals = itertools.count()

    def _push(self, element: tuple) -> None:
        heapq.heappush(self._store, (int(element[0]), next(self._arrivals), element))

    def _pop(self) -> tuple:
        return heapq.heappop(self._store)[2]

    def _put_back(self, taken: list) -> None:
        for e in taken:
            self._push(e)

    def check_element(self, node, element, batched: bool = False) -> tuple:
        out = super().check_element(node, element, batched)
        if out[0].ndim != (1 if batched else 0):
            raise errors.InvalidArgumentError(
                node, node.name, f"Expected the priority (component 0) to be {'a vector' if batched else 'a scalar'}, "
                                 f"got shape {shape_str(out[0].shape)}")
        return out
