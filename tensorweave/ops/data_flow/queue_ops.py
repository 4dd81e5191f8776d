"""The queue ops, by TF's names: the handle ops (FIFOQueueV2, RandomShuffleQueueV2,
PaddingFIFOQueueV2, PriorityQueueV2) and the ops on a handle (QueueEnqueueV2,
QueueEnqueueManyV2, QueueDequeueV2, QueueDequeueManyV2, QueueDequeueUpToV2, QueueCloseV2,
QueueIsClosedV2, QueueSizeV2).

A handle op finds or creates its queue in the task's ResourceManager under (container,
shared_name, or its node name when none is given) when its partition is planned, and outputs
the QueueResource as a `resource` value: the placer runs every op that takes the handle on
the queue's task. Enqueues and dequeues are registered blocking: they wait on the queue
(queue_resources.py) without holding anything their step needs.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.ops.data_flow.queue_resources import (PaddingFIFOQueueResource, PriorityQueueResource, QueueResource,
                                                       RandomShuffleQueueResource)
from tensorweave.ops.helpers import make_op
from tensorweave.ops.registry import register


def _handle_infer(op):
    return [(dtypes.resource, TensorShape([]))]


def _check_handle(op) -> None:
    if op.inputs[0].dtype is not dtypes.resource:
        raise ValueError(f"Input 'handle' of '{op.type}' Op has type {op.inputs[0].dtype.name} that does not match "
                         "expected type of resource.")


def _plain_shapes(node) -> list:
    return [None if s is None else list(s) for s in node.attr.get("shapes") or []]


def _handle_kernel(make: Callable) -> Callable:
    """Kernel factory of a queue handle op: the queue, found or created when planned."""
    def factory(node, ctx):
        container = node.attr.get("container") or ""
        shared = node.attr.get("shared_name") or node.name
        fresh = make(node, shared)
        q = ctx.resources.lookup_or_create(container, shared, lambda: fresh)
        if not isinstance(q, QueueResource):
            raise errors.InvalidArgumentError(node, node.name, f"Resource {container}/{shared} is not a queue")
        if q is not fresh:
            q.check_same(fresh, node)
        return lambda: q
    return factory


def _fifo(node, name):
    return QueueResource(name, node.attr["component_types"], _plain_shapes(node), int(node.attr.get("capacity", -1)))


def _padding(node, name):
    shapes = _plain_shapes(node)
    if len(shapes) != len(node.attr["component_types"]):
        raise errors.InvalidArgumentError(node, node.name, "PaddingFIFOQueue: shapes must be given for every "
                                                           "component (they may have unknown dims)")
    return PaddingFIFOQueueResource(name, node.attr["component_types"], shapes, int(node.attr.get("capacity", -1)))


def _priority(node, name):
    shapes = _plain_shapes(node)
    return PriorityQueueResource(name, ["int64"] + list(node.attr["component_types"]),
                                 [[]] + shapes if shapes else None, int(node.attr.get("capacity", -1)))


def _random_shuffle(node, name):
    capacity = int(node.attr.get("capacity", -1))
    after = int(node.attr.get("min_after_dequeue", 0))
    if capacity >= 0 and after >= capacity:
        raise errors.InvalidArgumentError(node, node.name, f"min_after_dequeue ({after}) must be less than capacity "
                                                           f"({capacity})")
    seed, seed2 = int(node.attr.get("seed", 0) or 0), int(node.attr.get("seed2", 0) or 0)
    rng = np.random.default_rng() if seed == 0 and seed2 == 0 else np.random.default_rng([seed, seed2])
    return RandomShuffleQueueResource(name, node.attr["component_types"], _plain_shapes(node), capacity, after, rng)


for _op_type, _make in (("FIFOQueueV2", _fifo), ("PaddingFIFOQueueV2", _padding), ("PriorityQueueV2", _priority),
                        ("RandomShuffleQueueV2", _random_shuffle)):
    register(_op_type, _handle_infer, _handle_kernel(_make), grad=None, stateful=True)


def queue_handle(op_type: str, component_types: list, shapes: list, capacity: int, shared_name, name: str,
                 **attrs):
    """A queue handle op (`op_type`, e.g. "FIFOQueueV2"): its `resource` output."""
    all_attrs = {"component_types": [dtypes.as_dtype(t) for t in component_types],
                 "shapes": [TensorShape(s) for s in shapes or []], "capacity": int(capacity),
                 "container": "", "shared_name": shared_name or ""}
    all_attrs.update(attrs)
    return make_op(op_type, [], all_attrs, name=name).outputs[0]


# -- enqueue -------------------------------------------------------------------------------------
def _enqueue_infer(op):
    _check_handle(op)
    return []


def _enqueue_kernel(node, ctx):
    def enqueue(step, q, *components):
        q.enqueue_many(step, node, [q.check_element(node, components)])
    return enqueue


def _enqueue_many_kernel(node, ctx):
    def enqueue_many(step, q, *components):
        batch = q.check_element(node, components, batched=True)
        sizes = {c.shape[0] if c.ndim else None for c in batch}
        if None in sizes or len(sizes) != 1:
            raise errors.InvalidArgumentError(
                node, node.name, f"{node.op} ({node.name}): every component must have the same size in dimension 0, "
                                 f"got shapes {[list(c.shape) for c in batch]}")
        n = sizes.pop()
        q.enqueue_many(step, node, [tuple(c[i] for c in batch) for i in range(n)])
    return enqueue_many


register("QueueEnqueueV2", _enqueue_infer, _enqueue_kernel, grad=None, stateful=True, needs_step=True, blocking=True)
register("QueueEnqueueManyV2", _enqueue_infer, _enqueue_many_kernel, grad=None, stateful=True, needs_step=True,
         blocking=True)


def enqueue(handle, components: list, many: bool, name: str):
    op_type = "QueueEnqueueManyV2" if many else "QueueEnqueueV2"
    return make_op(op_type, [handle] + list(components),
                   {"Tcomponents": [c.dtype for c in components], "timeout_ms": -1}, name=name)


# -- dequeue -------------------------------------------------------------------------------------
def _dequeue_infer(op):
    _check_handle(op)
    return [(dtypes.as_dtype(t), unknown_shape()) for t in op.get_attr("component_types")]


def _one(values: tuple):
    return values[0] if len(values) == 1 else values


def _dequeue_kernel(node, ctx):
    def dequeue(step, q):
        return _one(q.dequeue_many(step, node, 1)[0])
    return dequeue


def _dequeue_many_kernel(allow_smaller: bool):
    def factory(node, ctx):
        def dequeue_many(step, q, n):
            n = int(n)
            if n < 0:
                raise errors.InvalidArgumentError(node, node.name, f"{node.op} ({node.name}): requested {n} < 0 "
                                                                   "elements")
            q.check_many(node)
            return _one(q.batch(q.dequeue_many(step, node, n, allow_smaller)))
        return dequeue_many
    return factory


register("QueueDequeueV2", _dequeue_infer, _dequeue_kernel, grad=None, stateful=True, needs_step=True, blocking=True)
register("QueueDequeueManyV2", _dequeue_infer, _dequeue_many_kernel(False), grad=None, stateful=True,
         needs_step=True, blocking=True, dtypes={1: ("n", (dtypes.int32,))})
register("QueueDequeueUpToV2", _dequeue_infer, _dequeue_many_kernel(True), grad=None, stateful=True,
         needs_step=True, blocking=True, dtypes={1: ("n", (dtypes.int32,))})


def dequeue(handle, component_types: list, n=None, allow_smaller: bool = False, name: str = None) -> list:
    """The dequeue op's outputs: one element (n None), n elements, or up to n (allow_smaller)."""
    attrs = {"component_types": [dtypes.as_dtype(t) for t in component_types], "timeout_ms": -1}
    if n is None:
        return make_op("QueueDequeueV2", [handle], attrs, name=name).outputs
    op_type = "QueueDequeueUpToV2" if allow_smaller else "QueueDequeueManyV2"
    return make_op(op_type, [handle, n], attrs, name=name).outputs


# -- close, is_closed, size ----------------------------------------------------------------------
def _close_kernel(node, ctx):
    cancel = bool(node.attr.get("cancel_pending_enqueues", False))
    return lambda q: q.close(cancel)


register("QueueCloseV2", _enqueue_infer, _close_kernel, grad=None, stateful=True)
register("QueueIsClosedV2", lambda op: (_check_handle(op), [(dtypes.bool, TensorShape([]))])[1],
         lambda node, ctx: (lambda q: np.bool_(q.closed)), grad=None, stateful=True)
register("QueueSizeV2", lambda op: (_check_handle(op), [(dtypes.int32, TensorShape([]))])[1],
         lambda node, ctx: (lambda q: np.int32(q.size())), grad=None, stateful=True)


def close(handle, cancel_pending_enqueues: bool, name: str):
    return make_op("QueueCloseV2", [handle], {"cancel_pending_enqueues": bool(cancel_pending_enqueues)}, name=name)


def is_closed(handle, name: str):
    return make_op("QueueIsClosedV2", [handle], name=name).outputs[0]


def size(handle, name: str):
    return make_op("QueueSizeV2", [handle], name=name).outputs[0]
