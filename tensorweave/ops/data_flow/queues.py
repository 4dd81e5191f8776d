"""tf.QueueBase and the queue classes TF1 programs build: FIFOQueue, RandomShuffleQueue,
PaddingFIFOQueue, PriorityQueue (the ops are in queue_ops.py)."""
from __future__ import annotations

import functools
import hashlib
from typing import Optional

from tensorweave.framework import dtypes as dtypes_lib
from tensorweave.framework.func_graph import init_scope
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.shapes import Dimension, TensorShape, as_shape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import stack
from tensorweave.ops.array.gather import gather
from tensorweave.ops.data_flow import queue_ops
from tensorweave.ops.random import get_seed


def _as_type_list(dtypes) -> list:
    if isinstance(dtypes, (list, tuple)):
        return [dtypes_lib.as_dtype(d) for d in dtypes]
    return [dtypes_lib.as_dtype(dtypes)]


def _as_shape_list(shapes, unknown_dim_allowed: bool = False) -> Optional[list]:
    """TF's normalisation of a queue's `shapes` argument (one shape or a list of shapes)."""
    if unknown_dim_allowed and (not isinstance(shapes, (list, tuple)) or not shapes
                                or any(s is None or isinstance(s, int) for s in shapes)):
        raise ValueError("When providing partial shapes, a list of shapes must be provided.")
    if shapes is None:
        return None
    if isinstance(shapes, TensorShape):
        shapes = [shapes]
    if not isinstance(shapes, (tuple, list)):
        raise TypeError("shapes must be a TensorShape or a list or tuple of TensorShapes.")
    if all(s is None or isinstance(s, int) for s in shapes):
        shapes = [shapes]   # a single shape
    shapes = [as_shape(s) for s in shapes]
    if not unknown_dim_allowed and any(not s.is_fully_defined() for s in shapes):
        raise ValueError(f"All shapes must be fully defined: {shapes}")
    if any(s.ndims is None for s in shapes):
        raise ValueError(f"All shapes must have a defined rank: {shapes}")
    return shapes


def _as_name_list(names, dtypes) -> Optional[list]:
    if names is None:
        return None
    if not isinstance(names, (list, tuple)):
        names = [names]
    if len(names) != len(dtypes):
        raise ValueError("List of names must have the same length as the list of dtypes")
    return list(names)


def _shape_common(a: TensorShape, b: TensorShape) -> TensorShape:
    """The most specific shape compatible with both (unknown where they differ)."""
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return unknown_shape()
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])


@tf_export("io.QueueBase", "queue.QueueBase", "QueueBase")
class QueueBase:
    """tf.QueueBase(dtypes, shapes, names, queue_ref): the operations of every queue kind."""

    def __init__(self, dtypes, shapes, names, queue_ref):
        self._dtypes = list(dtypes)
        if shapes is not None:
            if len(shapes) != len(self._dtypes):
                raise ValueError("Queue shapes must have the same length as dtypes")
            self._shapes = [TensorShape(s) for s in shapes]
        else:
            self._shapes = [unknown_shape() for _ in self._dtypes]
        if names is not None:
            if len(names) != len(self._dtypes):
                raise ValueError("Queue names must have the same length as dtypes")
            self._names = list(names)
        else:
            self._names = None
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name.split("/")[-1]

    @staticmethod
    def from_list(index, queues) -> "QueueBase":
        """A queue that forwards to queues[index] (index: a scalar int32 tensor)."""
        if not queues or not isinstance(queues, list) or not all(isinstance(q, QueueBase) for q in queues):
            raise TypeError("A list of queues expected")
        dtypes = queues[0].dtypes
        if not all(dtypes == q.dtypes for q in queues[1:]):
            raise TypeError("Queues do not have matching component dtypes.")
        names = queues[0].names
        if not all(names == q.names for q in queues[1:]):
            raise TypeError("Queues do not have matching component names.")
        shapes = [functools.reduce(_shape_common, s) for s in zip(*[q.shapes for q in queues])]
        selected = gather(stack([q.queue_ref for q in queues]), index)
        return QueueBase(dtypes, shapes, names, selected)

    queue_ref = property(lambda self: self._queue_ref)
    name = property(lambda self: self._queue_ref.op.name)
    dtypes = property(lambda self: self._dtypes)
    shapes = property(lambda self: self._shapes)
    names = property(lambda self: self._names)

    # -- enqueue ---------------------------------------------------------------------------------
    def _check_enqueue_dtypes(self, vals) -> list:
        if isinstance(vals, dict):
            if not self._names:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(self._names, key=str) != sorted(vals.keys(), key=str):
                raise ValueError(f"Keys in dictionary to enqueue do not match names of Queue.  Dictionary: "
                                 f"({sorted(vals.keys())}), Queue: ({sorted(self._names)})")
            vals = [vals[k] for k in self._names]
        else:
            if self._names:
                raise ValueError("You must enqueue a dictionary in a Queue with names")
            if not isinstance(vals, (list, tuple)):
                vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(f"Queue {self.name} has {len(self._dtypes)} components, but {len(vals)} values were "
                             "given to enqueue")
        return [convert_to_tensor(v, dtype=dt, name=f"component_{i}")
                for i, (v, dt) in enumerate(zip(vals, self._dtypes))]

    def enqueue(self, vals, name=None):
        """Enqueues one element (a tensor, a list/tuple of tensors, or a dict when the queue has
        names); the op blocks while the queue is full."""
        g = get_default_graph()
        with g.name_scope(name or f"{self._name}_enqueue") as scope:
            vals = self._check_enqueue_dtypes(vals)
            for v, shape in zip(vals, self._shapes):
                v.get_shape().assert_is_compatible_with(shape)
            return queue_ops.enqueue(self._queue_ref, vals, False, scope)

    def enqueue_many(self, vals, name=None):
        """Enqueues the slices of `vals` along dimension 0 as separate elements."""
        g = get_default_graph()
        with g.name_scope(name or f"{self._name}_EnqueueMany") as scope:
            vals = self._check_enqueue_dtypes(vals)
            batch = Dimension(vals[0].get_shape().with_rank_at_least(1)[0].value)
            for v, shape in zip(vals, self._shapes):
                vshape = v.get_shape().with_rank_at_least(1)
                batch = batch.merge_with(Dimension(vshape[0].value))
                vshape[1:].assert_is_compatible_with(shape)
            return queue_ops.enqueue(self._queue_ref, vals, True, scope)

    # -- dequeue ---------------------------------------------------------------------------------
    def _dequeue_return_value(self, tensors):
        if self._names:
            return {n: tensors[i] for i, n in enumerate(self._names)}
        if len(tensors) == 1:
            return tensors[0]
        return list(tensors)

    def dequeue(self, name=None):
        """Dequeues one element; blocks until there is one; OutOfRangeError once closed and empty."""
        out = queue_ops.dequeue(self._queue_ref, self._dtypes, name=name or f"{self._name}_Dequeue")
        for t, shape in zip(out, self._shapes):
            t.set_shape(shape)
        return self._dequeue_return_value(out)

    def dequeue_many(self, n, name=None):
        """Dequeues `n` elements concatenated along a new dimension 0."""
        n = convert_to_tensor(n, dtype=dtypes_lib.int32, name="n") if not isinstance(n, Tensor) else n
        out = queue_ops.dequeue(self._queue_ref, self._dtypes, n, name=name or f"{self._name}_DequeueMany")
        known = constant_value(out[0].op.inputs[1])
        batch = TensorShape([None if known is None else int(known)])
        for t, shape in zip(out, self._shapes):
            t.set_shape(batch.concatenate(shape))
        return self._dequeue_return_value(out)

    def dequeue_up_to(self, n, name=None):
        """Like dequeue_many, but a closed queue gives what it has left (at least one element)."""
        n = convert_to_tensor(n, dtype=dtypes_lib.int32, name="n") if not isinstance(n, Tensor) else n
        out = queue_ops.dequeue(self._queue_ref, self._dtypes, n, allow_smaller=True,
                                name=name or f"{self._name}_DequeueUpTo")
        for t, shape in zip(out, self._shapes):
            t.set_shape(TensorShape([None]).concatenate(shape))
        return self._dequeue_return_value(out)

    # -- state -----------------------------------------------------------------------------------
    def close(self, cancel_pending_enqueues=False, name=None):
        """Closes the queue: later enqueues fail; dequeues drain what is left, then fail with
        OutOfRangeError. cancel_pending_enqueues also fails the enqueues already waiting."""
        return queue_ops.close(self._queue_ref, cancel_pending_enqueues, name or f"{self._name}_Close")

    def is_closed(self, name=None):
        return queue_ops.is_closed(self._queue_ref, name or f"{self._name}_IsClosed")

    def size(self, name=None):
        """The number of elements in the queue (an int32 scalar)."""
        return queue_ops.size(self._queue_ref, name or f"{self._name}_Size")


def _make_ref(op_type: str, dtypes, shapes, capacity, shared_name, name, **attrs):
    with init_scope():
        return queue_ops.queue_handle(op_type, dtypes, shapes, capacity, shared_name, name, **attrs)


@tf_export("queue.FIFOQueue", "FIFOQueue")
class FIFOQueue(QueueBase):
    """tf.FIFOQueue(capacity, dtypes, shapes=None, names=None, shared_name=None, name='fifo_queue')."""

    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None, name="fifo_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes)
        names = _as_name_list(names, dtypes)
        ref = _make_ref("FIFOQueueV2", dtypes, shapes, capacity, shared_name, name)
        super().__init__(dtypes, shapes, names, ref)


@tf_export("io.PaddingFIFOQueue", "queue.PaddingFIFOQueue", "PaddingFIFOQueue")
class PaddingFIFOQueue(QueueBase):
    """tf.PaddingFIFOQueue(capacity, dtypes, shapes, names=None, shared_name=None,
    name='padding_fifo_queue'): shapes may have unknown dims; dequeue_many pads them."""

    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None, name="padding_fifo_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes, unknown_dim_allowed=True)
        names = _as_name_list(names, dtypes)
        if len(dtypes) != len(shapes):
            raise ValueError(f"Shapes must be provided for all components, but received {len(dtypes)} dtypes and "
                             f"{len(shapes)} shapes.")
        ref = _make_ref("PaddingFIFOQueueV2", dtypes, shapes, capacity, shared_name, name)
        super().__init__(dtypes, shapes, names, ref)


@tf_export("io.RandomShuffleQueue", "queue.RandomShuffleQueue", "RandomShuffleQueue")
class RandomShuffleQueue(QueueBase):
    """tf.RandomShuffleQueue(capacity, min_after_dequeue, dtypes, shapes=None, names=None,
    seed=None, shared_name=None, name='random_shuffle_queue'): dequeues random elements,
    keeping min_after_dequeue of them while open."""

    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None, seed=None, shared_name=None,
                 name="random_shuffle_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes)
        names = _as_name_list(names, dtypes)
        seed1, seed2 = get_seed(seed)
        if seed1 is None and seed2 is None:
            seed1, seed2 = 0, 0
        elif seed is None and shared_name is not None:
            # Queues sharing a name must agree on their seeds: seed2 from the graph seed and the
            # name only, not from the id of the last op (TF's rule).
            seed2 = int(hashlib.md5((str(seed1) + shared_name).encode("utf-8")).hexdigest()[:8], 16) & 0x7FFFFFFF
        ref = _make_ref("RandomShuffleQueueV2", dtypes, shapes, capacity, shared_name, name,
                        min_after_dequeue=int(min_after_dequeue), seed=int(seed1), seed2=int(seed2))
        super().__init__(dtypes, shapes, names, ref)


@tf_export("io.PriorityQueue", "queue.PriorityQueue", "PriorityQueue")
class PriorityQueue(QueueBase):
    """tf.PriorityQueue(capacity, types, shapes=None, names=None, shared_name=None,
    name='priority_queue'): elements are (int64 priority, *components); smallest first."""

    def __init__(self, capacity, types, shapes=None, names=None, shared_name=None, name="priority_queue"):
        types = _as_type_list(types)
        shapes = _as_shape_list(shapes)
        ref = _make_ref("PriorityQueueV2", types, shapes, capacity, shared_name, name)
        priority_dtypes = [dtypes_lib.int64] + types
        priority_shapes = [TensorShape([])] + shapes if shapes else shapes
        super().__init__(priority_dtypes, priority_shapes, names, ref)
