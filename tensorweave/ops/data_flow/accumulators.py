"""Gradient accumulators (what SyncReplicasOptimizer aggregates with): tf.ConditionalAccumulator
(dense) and tf.SparseConditionalAccumulator (IndexedSlices), their resources and ops.

An accumulator keeps a global step. apply_grad(grad, local_step) drops a gradient computed at
a local_step older than it (stale), else adds it in. take_grad(num_required) waits until
num_required gradients are in, returns their mean (or sum), resets the sum and advances the
global step by one. set_global_step moves the global step. The sparse accumulator keeps one
row per index and, for the mean, divides each row by the number of gradients that had it.

`_AccumulatorCancelTakes` (internal, used by SyncReplicasOptimizer's chief queue runner when
training stops) fails the takes waiting now and any that come before the next
set_global_step: the chief's own thread must not stay blocked on gradients no worker will
send.
"""
from __future__ import annotations

import collections
from typing import Optional

import numpy as np

from tensorweave.framework import dtypes as dtypes_lib, errors
from tensorweave.framework.func_graph import init_scope
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.shapes import TensorShape, as_shape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.data_flow.queue_resources import shape_str
from tensorweave.ops.data_flow.waiting import NOT_YET, Waitable
from tensorweave.ops.helpers import FLOATS, TFNodes, make_op
from tensorweave.ops.math.cast import cast
from tensorweave.ops.registry import register


class _Accumulator(Waitable):
    type_name = "ConditionalAccumulator"

    def __init__(self, name: str, dtype: str, shape: Optional[list], reduction: str):
        super().__init__()
        self.name = name
        self.dtype = dtype
        self.np_dtype = dtypes_lib.as_dtype(dtype).as_numpy_dtype
        # Sums are kept wider than the gradients: n equal gradients then sum exactly to n times
        # one of them, so their mean is that gradient bit for bit (replicas on identical data
        # give exactly plain gradient descent's numbers, however many gradients a take finds).
        self.sum_dtype = np.longdouble if np.dtype(self.np_dtype) == np.float64 else np.float64
        self.shape = None if shape is None else tuple(shape)
        self.reduction = reduction
        self.global_step = 0
        self.counter = 0
        self.takes_cancelled = False

    def describe(self) -> tuple:
        return (type(self).__name__, self.dtype, self.shape, self.reduction)

    def check_same(self, other: "_Accumulator", node) -> None:
        if self.describe() != other.describe():
            raise errors.InvalidArgumentError(
                node, node.name, f"Shared accumulator '{self.name}' was created as {self.describe()}, but is "
                                 f"requested as {other.describe()}")

    def _check_shape(self, node, got: tuple, what: str = "gradient") -> None:
        want = self.shape
        if want is None:
            return
        if len(want) != len(got) or any(w is not None and g is not None and w != g for w, g in zip(want, got)):
            raise errors.InvalidArgumentError(
                node, node.name, f"Shape mismatch: {self.type_name} '{self.name}' expects a {what} of shape "
                                 f"{shape_str(want)}, got {shape_str(got)}")

    def apply(self, node, local_step: int, *grad) -> None:
        with self.lock:
            if local_step < self.global_step:
                return   # stale: computed before the last take
            self._add(node, *grad)
            self.counter += 1
            self.wake("take")

    def take(self, step, node, num_required: int):
        if num_required < 1:
            raise errors.InvalidArgumentError(node, node.name,
                                              f"Argument num_required must be positive, but was {num_required}")

        def try_once():
            if self.takes_cancelled:
                raise errors.CancelledError(node, node.name, f"{self.type_name} '{self.name}': taking gradients "
                                                             "was cancelled (training stopped)")
            if self.counter < num_required:
                return NOT_YET
            out = self._result(node)
            self.counter = 0
            self.global_step += 1
            return out

        return self.attempt("take", try_once, step, node,
                            f"{num_required} gradients in {self.type_name} '{self.name}'",
                            ready=lambda: self.counter >= num_required)

    def set_global_step(self, step: int) -> None:
        with self.lock:
            self.global_step = step
            self.takes_cancelled = False
            self.wake()

    def cancel_takes(self) -> None:
        with self.lock:
            self.takes_cancelled = True
            self.wake()

    def close_on_reset(self) -> None:
        self.drop(errors.CancelledError(None, None, f"{self.type_name} '{self.name}' was dropped: its session was "
                                                    "closed or its container reset"))


class DenseAccumulator(_Accumulator):
    def __init__(self, name, dtype, shape, reduction):
        super().__init__(name, dtype, shape, reduction)
        self._sum: Optional[np.ndarray] = None

    def _add(self, node, grad) -> None:
        g = np.asarray(grad, dtype=self.np_dtype)
        self._check_shape(node, g.shape)
        if self._sum is None or self.counter == 0:
            self._sum = g.astype(self.sum_dtype)
            return
        if self._sum.shape != g.shape:
            raise errors.InvalidArgumentError(
                node, node.name, f"Shape mismatch: {self.type_name} '{self.name}' holds gradients of shape "
                                 f"{shape_str(self._sum.shape)}, got {shape_str(g.shape)}")
        self._sum += g

    def _result(self, node) -> np.ndarray:
        total, self._sum = self._sum, None
        if self.reduction == "MEAN":
            total = total / self.counter
        return np.asarray(total).astype(self.np_dtype)


class SparseAccumulator(_Accumulator):
    type_name = "SparseConditionalAccumulator"

    def __init__(self, name, dtype, shape, reduction):
        # A sparse gradient is never a scalar: TF code passes shape=() to mean "any shape".
        super().__init__(name, dtype, shape if shape else None, reduction)
        self._indices = np.zeros([0], np.int64)
        self._values: Optional[np.ndarray] = None
        self._counts = np.zeros([0], np.int64)
        self._dense_shape: Optional[tuple] = None

    def _add(self, node, indices, values, dense_shape, has_known_shape) -> None:
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        vals = np.asarray(values, dtype=self.np_dtype)
        if vals.ndim == 0 or vals.shape[0] != idx.shape[0]:
            raise errors.InvalidArgumentError(
                node, node.name, f"{self.type_name} '{self.name}': {idx.shape[0]} indices but values of shape "
                                 f"{shape_str(vals.shape)}")
        if has_known_shape:
            shape = tuple(int(d) for d in np.asarray(dense_shape).reshape(-1))
            self._check_shape(node, shape, "gradient dense shape")
            if self._dense_shape is not None and shape != self._dense_shape:
                raise errors.InvalidArgumentError(
                    node, node.name, f"Shape mismatch: {self.type_name} '{self.name}' holds gradients of shape "
                                     f"{shape_str(self._dense_shape)}, got {shape_str(shape)}")
            self._dense_shape = shape
        if self.shape is not None:
            self._check_shape(node, (None,) + vals.shape[1:], "gradient values")
        if self._values is not None and self.counter and self._values.shape[1:] != vals.shape[1:]:
            raise errors.InvalidArgumentError(
                node, node.name, f"Shape mismatch: {self.type_name} '{self.name}' holds rows of shape "
                                 f"{shape_str(self._values.shape[1:])}, got {shape_str(vals.shape[1:])}")
        # Rows of one gradient with the same index are one row (summed), counted once.
        uniq, pos = np.unique(idx, return_inverse=True)
        rows = np.zeros((uniq.shape[0],) + vals.shape[1:], self.np_dtype)
        np.add.at(rows, pos, vals)   # (in the gradient's dtype, as plain gradient descent sums them)
        rows = rows.astype(self.sum_dtype)
        if self.counter == 0 or self._values is None:
            self._indices, self._values, self._counts = uniq, rows, np.ones(uniq.shape, np.int64)
            return
        all_idx = np.concatenate([self._indices, uniq])
        merged, pos = np.unique(all_idx, return_inverse=True)
        values = np.zeros((merged.shape[0],) + vals.shape[1:], self.sum_dtype)
        np.add.at(values, pos, np.concatenate([self._values, rows]))
        counts = np.zeros(merged.shape, np.int64)
        np.add.at(counts, pos, np.concatenate([self._counts, np.ones(uniq.shape, np.int64)]))
        self._indices, self._values, self._counts = merged, values, counts

    def _result(self, node) -> tuple:
        indices, values, counts = self._indices, self._values, self._counts
        self._values = None
        if self.reduction == "MEAN":
            values = values / counts.reshape((-1,) + (1,) * (values.ndim - 1))
        values = np.asarray(values).astype(self.np_dtype)
        if self._dense_shape is not None:
            shape = self._dense_shape
        elif self.shape is not None and None not in self.shape:
            shape = self.shape
        else:
            shape = (int(indices.max()) + 1 if indices.size else 0,) + values.shape[1:]
        self._dense_shape = None
        return indices, values, np.asarray(shape, np.int64)


# -- ops -----------------------------------------------------------------------------------------
def _handle_kernel(cls):
    def factory(node, ctx):
        container = node.attr.get("container") or ""
        shared = node.attr.get("shared_name") or node.name
        shape = node.attr.get("shape")
        fresh = cls(shared, dtypes_lib.as_dtype(node.attr["dtype"]).name, shape,
                    node.attr.get("reduction_type", "MEAN"))
        acc = ctx.resources.lookup_or_create(container, shared, lambda: fresh)
        if not isinstance(acc, _Accumulator):
            raise errors.InvalidArgumentError(node, node.name, f"Resource {container}/{shared} is not an accumulator")
        if acc is not fresh:
            acc.check_same(fresh, node)
        return lambda: acc
    return factory


def _handle_infer(op):
    if op.get_attr("reduction_type") not in ("MEAN", "SUM"):
        raise ValueError(f"reduction_type must be MEAN or SUM, got {op.get_attr('reduction_type')!r}")
    return [(dtypes_lib.resource, TensorShape([]))]


def _on_handle(outputs):
    def infer(op):
        if op.inputs[0].dtype is not dtypes_lib.resource:
            raise ValueError(f"Input 'handle' of '{op.type}' Op has type {op.inputs[0].dtype.name} that does not "
                             "match expected type of resource.")
        return outputs(op)
    return infer


register("ResourceConditionalAccumulator", _handle_infer, _handle_kernel(DenseAccumulator), grad=None,
         stateful=True)
register("SparseConditionalAccumulator", _handle_infer, _handle_kernel(SparseAccumulator), grad=None, stateful=True)


def _apply_kernel(node, ctx):
    return lambda acc, local_step, grad: acc.apply(node, int(local_step), grad)


def _sparse_apply_kernel(node, ctx):
    known = bool(node.attr.get("has_known_shape", False))
    return lambda acc, local_step, idx, vals, shape: acc.apply(node, int(local_step), idx, vals, shape, known)


def _take_kernel(node, ctx):
    return lambda step, acc, num_required: acc.take(step, node, int(num_required))


register("ResourceAccumulatorApplyGradient", _on_handle(lambda op: []), _apply_kernel, grad=None, stateful=True)
register("SparseAccumulatorApplyGradient", _on_handle(lambda op: []), _sparse_apply_kernel, grad=None, stateful=True)
register("ResourceAccumulatorTakeGradient", _on_handle(lambda op: [(op.get_attr("dtype"), unknown_shape())]),
         _take_kernel, grad=None, stateful=True, needs_step=True, blocking=True)
register("SparseAccumulatorTakeGradient",
         _on_handle(lambda op: [(dtypes_lib.int64, TensorShape([None])), (op.get_attr("dtype"), unknown_shape()),
                                (dtypes_lib.int64, TensorShape([None]))]),
         _take_kernel, grad=None, stateful=True, needs_step=True, blocking=True)
for _prefix in ("Resource", ""):   # the dense accumulator's ops, and the sparse one's (TF's ref-handle names)
    register(f"{_prefix}AccumulatorNumAccumulated", _on_handle(lambda op: [(dtypes_lib.int32, TensorShape([]))]),
             lambda node, ctx: (lambda acc: np.int32(acc.counter)), grad=None, stateful=True)
    register(f"{_prefix}AccumulatorSetGlobalStep", _on_handle(lambda op: []),
             lambda node, ctx: (lambda acc, step: acc.set_global_step(int(step))), grad=None, stateful=True)
def _cancel_takes_tf(op) -> list:
    """A NoOp: TensorFlow cancels a blocked take itself when its session closes (the chief queue
    runner's cancel op still closes the dummy queue)."""
    b = TFNodes(op)
    b.node(None, "NoOp", [])
    return b.nodes


register("_AccumulatorCancelTakes", _on_handle(lambda op: []),
         lambda node, ctx: (lambda acc: acc.cancel_takes()), grad=None, stateful=True, tf_lowering=_cancel_takes_tf)


# -- Python classes ------------------------------------------------------------------------------
@tf_export("ConditionalAccumulatorBase")
class ConditionalAccumulatorBase:
    """tf.ConditionalAccumulatorBase(dtype, shape, accumulator_ref)."""

    _op_prefix = "Resource"

    def __init__(self, dtype, shape, accumulator_ref):
        self._dtype = _check_dtype(dtype)
        self._shape = as_shape(shape) if shape is not None else unknown_shape()
        self._accumulator_ref = accumulator_ref
        self._name = accumulator_ref.op.name.split("/")[-1]

    accumulator_ref = property(lambda self: self._accumulator_ref)
    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)

    def num_accumulated(self, name=None):
        """The number of gradients aggregated since the last take (int32 scalar)."""
        return make_op(f"{self._op_prefix}AccumulatorNumAccumulated", [self._accumulator_ref],
                       name=name or f"{self._name}_NumAccumulated").outputs[0]

    def set_global_step(self, new_global_step, name=None):
        """Sets the global step the accumulator checks gradients' local_step against."""
        step = cast(convert_to_tensor(new_global_step), dtypes_lib.int64)
        return make_op(f"{self._op_prefix}AccumulatorSetGlobalStep", [self._accumulator_ref, step],
                       name=name or f"{self._op_prefix}AccumulatorSetGlobalStep")

    def _cancel_takes(self, name=None):
        return make_op("_AccumulatorCancelTakes", [self._accumulator_ref], name=name or "CancelTakes")


def _check_dtype(dtype) -> dtypes_lib.DType:
    dtype = dtypes_lib.as_dtype(dtype)
    if dtype not in FLOATS:   # TF's accumulator kernels exist for these only
        raise TypeError(f"Accumulators hold float16, float32 or float64 gradients, not {dtype.name}")
    return dtype


def _accumulator_ref(op_type: str, dtype, shape, shared_name, name, reduction_type):
    with init_scope():
        return make_op(op_type, [], {"dtype": dtypes_lib.as_dtype(dtype), "shape": shape,
                                     "container": "", "shared_name": shared_name or "",
                                     "reduction_type": reduction_type}, name=name).outputs[0]


@tf_export("ConditionalAccumulator")
class ConditionalAccumulator(ConditionalAccumulatorBase):
    """tf.ConditionalAccumulator(dtype, shape=None, shared_name=None,
    name='conditional_accumulator', reduction_type='MEAN')."""

    def __init__(self, dtype, shape=None, shared_name=None, name="conditional_accumulator", reduction_type="MEAN"):
        dtype = _check_dtype(dtype)
        shape = as_shape(shape) if shape is not None else unknown_shape()
        ref = _accumulator_ref("ResourceConditionalAccumulator", dtype, shape, shared_name, name, reduction_type)
        super().__init__(dtype, shape, ref)

    def apply_grad(self, grad, local_step=0, name=None):
        """Adds `grad` unless local_step is older than the accumulator's global step."""
        grad = convert_to_tensor(grad, self._dtype)
        grad.get_shape().assert_is_compatible_with(self._shape)
        local_step = cast(convert_to_tensor(local_step), dtypes_lib.int64)
        return make_op("ResourceAccumulatorApplyGradient", [self._accumulator_ref, local_step, grad],
                       {"dtype": self._dtype}, name=name or "ResourceAccumulatorApplyGradient")

    def take_grad(self, num_required, name=None):
        """Waits for num_required gradients; returns their mean (or sum) and starts anew."""
        out = make_op("ResourceAccumulatorTakeGradient",
                      [self._accumulator_ref, convert_to_tensor(num_required, dtypes_lib.int32)],
                      {"dtype": self._dtype}, name=name or "ResourceAccumulatorTakeGradient").outputs[0]
        out.set_shape(self._shape)
        return out


SparseTakeGradient = collections.namedtuple("SparseAccumulatorTakeGradient", ["indices", "values", "shape"])


@tf_export("SparseConditionalAccumulator", "sparse.SparseConditionalAccumulator")
class SparseConditionalAccumulator(ConditionalAccumulatorBase):
    """tf.SparseConditionalAccumulator(dtype, shape=None, shared_name=None,
    name='sparse_conditional_accumulator', reduction_type='MEAN')."""

    _op_prefix = ""

    def __init__(self, dtype, shape=None, shared_name=None, name="sparse_conditional_accumulator",
                 reduction_type="MEAN"):
        dtype = _check_dtype(dtype)
        shape = as_shape(shape) if shape is not None else unknown_shape()
        ref = _accumulator_ref("SparseConditionalAccumulator", dtype, shape, shared_name, name, reduction_type)
        super().__init__(dtype, shape, ref)

    def apply_indexed_slices_grad(self, grad, local_step=0, name=None):
        """apply_grad of an IndexedSlices gradient."""
        return self.apply_grad(grad.indices, grad.values, grad.dense_shape, local_step, name)

    def apply_grad(self, grad_indices, grad_values, grad_shape=None, local_step=0, name=None):
        """Adds the rows grad_values at grad_indices (dense shape grad_shape) unless stale."""
        local_step = cast(convert_to_tensor(local_step), dtypes_lib.int64)
        indices = cast(convert_to_tensor(grad_indices), dtypes_lib.int64)
        values = convert_to_tensor(grad_values, self._dtype)
        shape = cast(convert_to_tensor([] if grad_shape is None else grad_shape), dtypes_lib.int64)
        return make_op("SparseAccumulatorApplyGradient", [self._accumulator_ref, local_step, indices, values, shape],
                       {"dtype": self._dtype, "has_known_shape": grad_shape is not None},
                       name=name or "SparseAccumulatorApplyGradient")

    def take_grad(self, num_required, name=None):
        """(indices, values, shape) of the mean (or sum) of num_required gradients."""
        out = make_op("SparseAccumulatorTakeGradient",
                      [self._accumulator_ref, convert_to_tensor(num_required, dtypes_lib.int32)],
                      {"dtype": self._dtype}, name=name or "SparseAccumulatorTakeGradient").outputs
        if self._shape.ndims is not None:
            out[1].set_shape(TensorShape([None]).concatenate(self._shape[1:]))
        return SparseTakeGradient(*out)

    def take_indexed_slices_grad(self, num_required, name=None):
        """take_grad as an IndexedSlices."""
        r = self.take_grad(num_required, name)
        return IndexedSlices(indices=r.indices, values=r.values, dense_shape=r.shape)
