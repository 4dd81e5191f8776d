"""tf.train's queue-based input pipeline: producers that feed a queue from a tensor
(input_producer, string_input_producer, range_input_producer, slice_input_producer, with
limit_epochs) and batchers that gather examples into batches through a queue (batch,
maybe_batch, batch_join, shuffle_batch, shuffle_batch_join and their maybe_ forms). Each
adds a QueueRunner to the graph's QUEUE_RUNNERS collection: tf.train.start_queue_runners (or
a MonitoredSession) runs them, and a scalar summary of how full its queue is.
"""
from __future__ import annotations

import itertools

from tensorweave.framework import dtypes
from tensorweave.framework.api import GraphKeys, name_scope
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.shapes import TensorShape, as_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import constant, identity, shape as shape_of, size
from tensorweave.ops.array.gather import gather
from tensorweave.ops.array.partition import dynamic_partition
from tensorweave.ops.control_flow.cond import cond
from tensorweave.ops.grouping import no_op
from tensorweave.ops.data_flow.queues import FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue
from tensorweave.ops.debugging.printing import Assert
from tensorweave.ops.math.binary import greater, maximum
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.random import random_shuffle
from tensorweave.ops.state.variables import Variable
from tensorweave.summary.summary import scalar
from tensorweave.train.queue_runner import QueueRunner, add_queue_runner


# -- producers -----------------------------------------------------------------------------------
@tf_export("train.limit_epochs")
def limit_epochs(tensor, num_epochs=None, name=None):
    """tf.train.limit_epochs(tensor, num_epochs=None, name=None): `tensor`, which raises
    OutOfRangeError once evaluated num_epochs times (counted in a local variable "epochs")."""
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    with name_scope(name, "limit_epochs", [tensor]) as scope:
        epochs = Variable(constant(0, dtype=dtypes.int64), name="epochs", trainable=False,
                          collections=[GraphKeys.LOCAL_VARIABLES])
        counter = epochs.count_up_to(num_epochs)
        with get_default_graph().control_dependencies([counter]):
            return identity(tensor, name=scope)


@tf_export("train.input_producer")
def input_producer(input_tensor, element_shape=None, num_epochs=None, shuffle=True, seed=None, capacity=32,
                   shared_name=None, summary_name=None, name=None, cancel_op=None):
    """tf.train.input_producer(...): a FIFOQueue fed the rows of input_tensor (shuffled when
    `shuffle`), num_epochs times (forever when None), by a QueueRunner; returns the queue."""
    with name_scope(name, "input_producer", [input_tensor]):
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        element_shape = input_tensor.shape[1:].merge_with(as_shape(element_shape) if element_shape is not None
                                                          else TensorShape(None))
        if not element_shape.is_fully_defined():
            raise ValueError("Either `input_tensor` must have a fully defined shape or `element_shape` must be "
                             "specified")
        if shuffle:
            input_tensor = random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        q = FIFOQueue(capacity=capacity, dtypes=[input_tensor.dtype.base_dtype], shapes=[element_shape],
                      shared_name=shared_name, name=name)
        enq = q.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(q, [enq], cancel_op=cancel_op))
        if summary_name is not None:
            scalar(summary_name, cast(q.size(), dtypes.float32) * (1.0 / capacity))
        return q


@tf_export("train.string_input_producer")
def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None,
                          name=None, cancel_op=None):
    """tf.train.string_input_producer(...): input_producer of a non-empty 1-D string tensor
    (typically file names)."""
    not_null_err = "string_input_producer requires a non-null input tensor"
    if isinstance(string_tensor, (list, tuple)) and not string_tensor:   # a Variable or array is checked when run
        raise ValueError(not_null_err)
    with name_scope(name, "input_producer", [string_tensor]) as scope:
        string_tensor = convert_to_tensor(string_tensor, dtype=dtypes.string)
        check = Assert(greater(size(string_tensor), 0), [not_null_err])
        with get_default_graph().control_dependencies([check]):
            string_tensor = identity(string_tensor)
        return input_producer(string_tensor, [], num_epochs, shuffle, seed, capacity, shared_name,
                              f"fraction_of_{capacity}_full", scope, cancel_op)


@tf_export("train.range_input_producer")
def range_input_producer(limit, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None,
                         name=None):
    """tf.train.range_input_producer(...): input_producer of the integers 0 .. limit-1."""
    with name_scope(name, "input_producer", [limit]) as scope:
        return input_producer(range_(limit), [], num_epochs, shuffle, seed, capacity, shared_name,
                              f"fraction_of_{capacity}_full", scope)


@tf_export("train.slice_input_producer")
def slice_input_producer(tensor_list, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None,
                         name=None):
    """tf.train.slice_input_producer(...): one row of every tensor of tensor_list at a time (the
    same row of each), from a range_input_producer over their first dimension."""
    with name_scope(name, "input_producer", tensor_list):
        tensor_list = [convert_to_tensor(t) for t in tensor_list]
        if not tensor_list:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        queue = range_input_producer(shape_of(tensor_list[0])[0], num_epochs=num_epochs, shuffle=shuffle,
                                     seed=seed, capacity=capacity, shared_name=shared_name)
        index = queue.dequeue()
        return [gather(t, index) for t in tensor_list]


# -- batching helpers ----------------------------------------------------------------------------
def _as_tensor_list(tensors) -> list:
    if isinstance(tensors, dict):
        return [tensors[k] for k in sorted(tensors, key=str)]
    return list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]


def _as_tensor_list_list(tensors_list) -> list:
    if not tensors_list:
        raise ValueError("Expected at least one set of tensors")
    if isinstance(tensors_list[0], dict):
        keys = set(tensors_list[0])
        if any(set(t) != keys for t in tensors_list[1:]):
            raise ValueError("All dictionaries in tensors_list must have the same keys")
    return [_as_tensor_list(t) for t in tensors_list]


def _as_original_type(original, tensor_list):
    if isinstance(original, dict):
        if not isinstance(tensor_list, list):
            tensor_list = [tensor_list]
        return {k: tensor_list[i] for i, k in enumerate(sorted(original, key=str))}
    if isinstance(original, Tensor) and isinstance(tensor_list, list) and len(tensor_list) == 1:
        return tensor_list[0]
    return tensor_list


def _validate(tensor_list: list, what: str) -> list:
    if not tensor_list:
        raise ValueError(f"Expected at least one tensor in {what}().")
    for t in tensor_list:
        if isinstance(t, IndexedSlices):
            raise TypeError(f"{what}() batches dense tensors; got an IndexedSlices")
    return [convert_to_tensor(t) for t in tensor_list]


def _validate_keep_input(keep_input, enqueue_many: bool) -> Tensor:
    keep_input = convert_to_tensor(keep_input)
    if keep_input.shape.ndims is None:
        raise ValueError("`keep_input` dimensions must be known at graph construction.")
    if not enqueue_many and keep_input.shape.ndims == 1:
        raise ValueError("`keep_input` cannot be a vector when `enqueue_many=False`.")
    if keep_input.shape.ndims > 1:
        raise ValueError("`keep_input` must be 0 or 1 dimensions.")
    return keep_input


def _dtypes(tensor_list_list: list) -> list:
    types = [t.dtype for t in tensor_list_list[0]]
    for other in tensor_list_list[1:]:
        other_types = [t.dtype for t in other]
        if other_types != types:
            raise TypeError(f"Expected types to be consistent: {', '.join(x.name for x in types)} vs. "
                            f"{', '.join(x.name for x in other_types)}.")
    return types


def _shapes(tensor_list_list: list, shapes, enqueue_many: bool) -> list:
    if shapes is not None:
        return shapes
    out = []
    for i in range(len(tensor_list_list[0])):
        merged = None
        for tl in tensor_list_list:
            s = tl[i].shape
            if s.ndims is None:
                raise ValueError(f"Cannot infer Tensor's rank: {tl[i]}")
            if enqueue_many:
                s = s.with_rank_at_least(1)[1:]
            merged = s if merged is None else merged.merge_with(s)
        out.append(merged)
    return out


def _enqueue_ops(queue, tensor_list_list: list, copies: int, enqueue_many: bool, keep_input: Tensor) -> list:
    enqueue_fn = queue.enqueue_many if enqueue_many else queue.enqueue
    ops = []
    for tl in tensor_list_list:
        if keep_input.shape.ndims == 1:
            keep = cast(keep_input, dtypes.int32)
            op = enqueue_fn([dynamic_partition(x, keep, num_partitions=2)[1] for x in tl])
        else:
            static = constant_value(keep_input)
            if static is not None:
                op = enqueue_fn(tl) if static else no_op()
            else:
                op = cond(keep_input, lambda tl=tl: enqueue_fn(tl), no_op)
        ops.extend([op] * copies)
    return ops


def _batch(tensors_list, batch_size, keep_input, copies, capacity, enqueue_many, shapes, make_queue,
           allow_smaller_final_batch, name, default_name, min_after_dequeue=None):
    tensor_list_list = _as_tensor_list_list(tensors_list)
    flat = list(itertools.chain.from_iterable(tensor_list_list))
    with name_scope(name, default_name, flat + [keep_input]) as scope:
        tensor_list_list = [_validate(tl, default_name) for tl in tensor_list_list]
        keep_input = _validate_keep_input(keep_input, enqueue_many)
        types = _dtypes(tensor_list_list)
        shapes = _shapes(tensor_list_list, shapes, enqueue_many)
        queue = make_queue(types, shapes)
        add_queue_runner(QueueRunner(queue, _enqueue_ops(queue, tensor_list_list, copies, enqueue_many, keep_input)))
        if min_after_dequeue is None:   # how full the queue is, as TF reports it
            scalar(f"fraction_of_{capacity}_full", cast(queue.size(), dtypes.float32) * (1.0 / capacity))
        else:
            room = capacity - min_after_dequeue
            scalar(f"fraction_over_{min_after_dequeue}_of_{room}_full",
                   cast(maximum(0, queue.size() - min_after_dequeue), dtypes.float32) * (1.0 / room))
        if allow_smaller_final_batch:
            dequeued = queue.dequeue_up_to(batch_size, name=scope)
        else:
            dequeued = queue.dequeue_many(batch_size, name=scope)
        return _as_original_type(tensors_list[0], dequeued)


def _fifo(dynamic_pad, capacity, shared_name):
    kind = PaddingFIFOQueue if dynamic_pad else FIFOQueue
    return lambda types, shapes: kind(capacity=capacity, dtypes=types, shapes=shapes, shared_name=shared_name)


def _shuffling(capacity, min_after_dequeue, seed, shared_name):
    if capacity <= min_after_dequeue:
        raise ValueError(f"capacity {capacity} must be bigger than min_after_dequeue {min_after_dequeue}.")
    return lambda types, shapes: RandomShuffleQueue(capacity=capacity, min_after_dequeue=min_after_dequeue,
                                                    seed=seed, dtypes=types, shapes=shapes, shared_name=shared_name)


# -- batchers ------------------------------------------------------------------------------------
@tf_export("train.batch")
def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None, dynamic_pad=False,
          allow_smaller_final_batch=False, shared_name=None, name=None):
    """tf.train.batch(...): batches of `tensors` (a list or dict of tensors, one example each,
    or batches of examples with enqueue_many) through a FIFOQueue of `capacity`, filled by
    num_threads threads; dynamic_pad pads variable dims; allow_smaller_final_batch lets the
    last batch be short once the input ends."""
    return maybe_batch(tensors, True, batch_size, num_threads, capacity, enqueue_many, shapes, dynamic_pad,
                       allow_smaller_final_batch, shared_name, name)


@tf_export("train.maybe_batch")
def maybe_batch(tensors, keep_input, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None,
                dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """tf.train.maybe_batch(...): batch, enqueueing only the examples keep_input marks."""
    return _batch([tensors], batch_size, keep_input, num_threads, capacity, enqueue_many, shapes,
                  _fifo(dynamic_pad, capacity, shared_name), allow_smaller_final_batch, name, "batch")


@tf_export("train.batch_join")
def batch_join(tensors_list, batch_size, capacity=32, enqueue_many=False, shapes=None, dynamic_pad=False,
               allow_smaller_final_batch=False, shared_name=None, name=None):
    """tf.train.batch_join(...): batch over several lists of tensors, one thread each."""
    return maybe_batch_join(tensors_list, True, batch_size, capacity, enqueue_many, shapes, dynamic_pad,
                            allow_smaller_final_batch, shared_name, name)


@tf_export("train.maybe_batch_join")
def maybe_batch_join(tensors_list, keep_input, batch_size, capacity=32, enqueue_many=False, shapes=None,
                     dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """tf.train.maybe_batch_join(...)."""
    return _batch(tensors_list, batch_size, keep_input, 1, capacity, enqueue_many, shapes,
                  _fifo(dynamic_pad, capacity, shared_name), allow_smaller_final_batch, name, "batch_join")


@tf_export("train.shuffle_batch")
def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1, seed=None, enqueue_many=False,
                  shapes=None, allow_smaller_final_batch=False, shared_name=None, name=None):
    """tf.train.shuffle_batch(...): batches of random examples from a RandomShuffleQueue that
    keeps at least min_after_dequeue of them."""
    return maybe_shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, True, num_threads, seed,
                               enqueue_many, shapes, allow_smaller_final_batch, shared_name, name)


@tf_export("train.maybe_shuffle_batch")
def maybe_shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input, num_threads=1, seed=None,
                        enqueue_many=False, shapes=None, allow_smaller_final_batch=False, shared_name=None,
                        name=None):
    """tf.train.maybe_shuffle_batch(...)."""
    return _batch([tensors], batch_size, keep_input, num_threads, capacity, enqueue_many, shapes,
                  _shuffling(capacity, min_after_dequeue, seed, shared_name), allow_smaller_final_batch, name,
                  "shuffle_batch", min_after_dequeue)


@tf_export("train.shuffle_batch_join")
def shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, seed=None, enqueue_many=False,
                       shapes=None, allow_smaller_final_batch=False, shared_name=None, name=None):
    """tf.train.shuffle_batch_join(...)."""
    return maybe_shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, True, seed,
                                    enqueue_many, shapes, allow_smaller_final_batch, shared_name, name)


@tf_export("train.maybe_shuffle_batch_join")
def maybe_shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, keep_input, seed=None,
                             enqueue_many=False, shapes=None, allow_smaller_final_batch=False, shared_name=None,
                             name=None):
    """tf.train.maybe_shuffle_batch_join(...)."""
    return _batch(tensors_list, batch_size, keep_input, 1, capacity, enqueue_many, shapes,
                  _shuffling(capacity, min_after_dequeue, seed, shared_name), allow_smaller_final_batch, name,
                  "shuffle_batch_join", min_after_dequeue)
