"""Math ops, clipping family (TF's clip_ops): clip_by_value, clip_by_norm, global_norm,
clip_by_global_norm. All are composites of other ops, so their gradients come for free."""
from __future__ import annotations

import collections.abc

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import stack
from tensorweave.ops.array.core import identity, size
from tensorweave.ops.array.fill import ones_like
from tensorweave.ops.array.sort import where
from tensorweave.ops.helpers import make_op
from tensorweave.ops.math.binary import add, greater, maximum, minimum, multiply, subtract, truediv
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.math.unary import rsqrt, sqrt


def _values(t, name: str) -> Tensor:
    return convert_to_tensor(t.values if isinstance(t, IndexedSlices) else t, name=name)


def _like(t, dense: Tensor):
    return IndexedSlices(dense, t.indices, t.dense_shape) if isinstance(t, IndexedSlices) else dense


@tf_export("clip_by_value")
def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """tf.clip_by_value(t, clip_value_min, clip_value_max, name=None): min(max(t, lo), hi)
    elementwise; the bounds may broadcast into t but must not grow its shape."""
    with name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as scope:
        values = _values(t, "t")
        t_min = minimum(values, clip_value_max)
        values.shape.merge_with(t_min.shape)
        t_max = maximum(t_min, clip_value_min, name=scope)
        values.shape.merge_with(t_max.shape)
        return _like(t, t_max)


@tf_export("clip_by_norm")
def clip_by_norm(t, clip_norm, axes=None, name=None):
    """tf.clip_by_norm(t, clip_norm, axes=None, name=None): t * clip_norm / max(l2norm(t), clip_norm),
    the norm taken over `axes` (all axes when None)."""
    with name_scope(name, "clip_by_norm", [t, clip_norm]) as scope:
        values = _values(t, "t")
        l2sum = reduce_sum(multiply(values, values), axes, keepdims=True)
        pred = greater(l2sum, 0)
        # The two-sided where keeps the gradient of sqrt finite at a zero norm (TF's trick).
        l2sum_safe = where(pred, l2sum, ones_like(l2sum))
        l2norm = where(pred, sqrt(l2sum_safe), l2sum)
        intermediate = multiply(values, clip_norm)
        values.shape.merge_with(intermediate.shape)
        clipped = identity(truediv(intermediate, maximum(l2norm, clip_norm)), name=scope)
        return _like(t, clipped)


@tf_export("clip_by_average_norm")
def clip_by_average_norm(t, clip_norm, name=None):
    """tf.clip_by_average_norm(t, clip_norm, name=None): t * clip_norm / max(l2norm(t) / size(t),
    clip_norm), i.e. t scaled down so that its average L2-norm (norm over number of elements) is
    at most clip_norm; float32 `t`, as TF1."""
    with name_scope(name, "clip_by_average_norm", [t, clip_norm]) as scope:
        values = convert_to_tensor(t, name="t")
        n_element = cast(size(values), dtypes.float32)
        l2norm_inv = rsqrt(reduce_sum(multiply(values, values)))
        scale = minimum(multiply(l2norm_inv, n_element), truediv(1.0, clip_norm))
        return identity(multiply(multiply(values, clip_norm), scale), name=scope)


def _check_sequence(t_list) -> list:
    if not isinstance(t_list, collections.abc.Sequence) or isinstance(t_list, (str, bytes)):
        raise TypeError("t_list should be a sequence")
    return list(t_list)


def _half_squared_norm(v: Tensor) -> Tensor:
    return make_op("L2Loss", [v]).outputs[0]   # tf.nn.l2_loss (nn/ wraps it, above math/)


@tf_export("linalg.global_norm", "global_norm")
def global_norm(t_list, name=None) -> Tensor:
    """tf.global_norm(t_list, name=None): sqrt(sum of squared l2 norms) over a list of tensors
    (None entries are ignored)."""
    t_list = _check_sequence(t_list)
    with name_scope(name, "global_norm", [t for t in t_list if t is not None]):
        values = [_values(t, f"t_{i}") if t is not None else None for i, t in enumerate(t_list)]
        halves = []
        for v in values:
            if v is not None:
                with get_default_graph().colocate_with(v):
                    halves.append(_half_squared_norm(v))
        half_squared_norm = reduce_sum(stack(halves))
        return sqrt(multiply(half_squared_norm, 2.0), name="global_norm")


@tf_export("clip_by_global_norm")
def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """tf.clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None): scales every tensor by
    clip_norm / max(global_norm, clip_norm); returns (clipped list, global norm). A non-finite
    global norm makes every clipped value NaN, as in TF."""
    t_list = _check_sequence(t_list)
    if use_norm is None:
        use_norm = global_norm(t_list, name)
    with name_scope(name, "clip_by_global_norm", [t for t in t_list if t is not None] + [clip_norm]) as scope:
        one = convert_to_tensor(1.0, dtype=use_norm.dtype)
        scale_for_finite = multiply(clip_norm, minimum(truediv(1.0, use_norm),
                                                           truediv(one, clip_norm)))
        scale = add(scale_for_finite, subtract(use_norm, use_norm))
        values = [_values(t, f"t_{i}") if t is not None else None for i, t in enumerate(t_list)]
        clipped = []
        for i, (t, v) in enumerate(zip(t_list, values)):
            if v is None:
                clipped.append(None)
                continue
            with get_default_graph().colocate_with(v):
                clipped.append(_like(t, identity(multiply(v, scale), name=f"{scope[:-1]}_{i}")))
        return clipped, use_norm
