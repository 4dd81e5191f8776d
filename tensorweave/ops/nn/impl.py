"""tf.nn functions TF builds in Python from primitive ops (TF's nn_impl.py): moments,
sufficient_statistics, normalize_moments, weighted_moments, batch_normalization, l2_normalize,
dropout, the sigmoid/weighted cross-entropies, the softmax cross-entropy wrappers (any rank, any
axis), embedding_lookup, xw_plus_b, relu_layer, zero_fraction, conv1d, log_poisson_loss, swish (silu)."""
from __future__ import annotations

import contextlib
import math
import numbers

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import colocate_with, name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import (constant, expand_dims, rank, reshape, shape, size, squeeze,
                                        stop_gradient, swap_axes_perm, transpose)
from tensorweave.ops.array.fill import ones_like, zeros_like
from tensorweave.ops.array.gather import gather
from tensorweave.ops.array.partition import dynamic_partition, dynamic_stitch
from tensorweave.ops.array.slicing import slice as slice_
from tensorweave.ops.array.sort import where
from tensorweave.ops.helpers import make_op
from tensorweave.ops.math.binary import (add, equal, floordiv, floormod, greater_equal, less, logical_and, maximum,
                                         multiply, squared_difference, subtract, truediv)
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.clip import clip_by_norm
from tensorweave.ops.math.linalg import matmul
from tensorweave.ops.math.reduction import reduce_mean, reduce_prod, reduce_sum
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.math.unary import abs, exp, log, log1p, negative, reciprocal, rsqrt, sigmoid, square
from tensorweave.ops.nn.activations import bias_add, relu
from tensorweave.ops.nn.conv import conv2d
from tensorweave.ops.nn.util import dims
from tensorweave.ops.random import random_uniform


def _sentinel_check(sentinel, name: str) -> None:
    if sentinel is not None:
        raise ValueError(f"Only call `{name}` with named arguments (labels=..., logits=..., ...)")


# -- moments / batch normalization -------------------------------------------------------------
@tf_export("nn.moments")
def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """tf.nn.moments(x, axes, shift=None, name=None, keep_dims=False) -> (mean, variance) over
    `axes`; float16 inputs are reduced in float32 and the results cast back."""
    keep = bool(keep_dims if keep_dims is not None else keepdims)
    with name_scope(name, "moments", [x, axes]):
        x = convert_to_tensor(x)
        y = cast(x, dtypes.float32) if x.dtype == dtypes.float16 else x
        mean = reduce_mean(y, axes, keepdims=True, name="mean")
        variance = reduce_mean(squared_difference(y, stop_gradient(mean)), axes, keepdims=True,
                                  name="variance")
        if not keep:
            mean = squeeze(mean, axes)
            variance = squeeze(variance, axes)
        if x.dtype == dtypes.float16:
            return cast(mean, dtypes.float16), cast(variance, dtypes.float16)
        return mean, variance


@tf_export("nn.batch_normalization")
def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """tf.nn.batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    scale * (x - mean) / sqrt(variance + variance_epsilon) + offset (offset/scale may be None)."""
    with name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        x = convert_to_tensor(x)
        inv = rsqrt(add(variance, variance_epsilon))
        if scale is not None:
            inv = multiply(inv, scale)
        inv = cast(inv, x.dtype)
        shift = subtract(offset, multiply(mean, inv)) if offset is not None else \
            negative(multiply(mean, inv))
        return add(multiply(x, inv), cast(shift, x.dtype))


@tf_export("linalg.l2_normalize", "math.l2_normalize", "nn.l2_normalize")
def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """tf.nn.l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    x / sqrt(max(sum(x**2, axis), epsilon))."""
    axis = dim if axis is None else axis
    with name_scope(name, "l2_normalize", [x]) as scope:
        x = convert_to_tensor(x)
        square_sum = reduce_sum(square(x), axis, keepdims=True)
        x_inv_norm = rsqrt(maximum(square_sum, cast(epsilon, square_sum.dtype)))
        return multiply(x, x_inv_norm, name=scope)


# -- dropout -----------------------------------------------------------------------------------
@tf_export("nn.dropout")
def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """tf.nn.dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    keeps each unit with probability keep_prob (= 1 - rate), scaling kept units by 1/keep_prob;
    `noise_shape` (broadcastable to x's shape) shares the keep decision across dimensions."""
    if keep_prob is not None and rate is not None:
        raise ValueError("Cannot specify both 'rate' and 'keep_prob'.")
    if keep_prob is None and rate is None:
        raise ValueError("You must provide a rate to dropout.")
    with name_scope(name, "dropout", [x]) as scope:
        x = convert_to_tensor(x)
        if not x.dtype.is_floating:
            raise ValueError(f"x has to be a floating point tensor since it's going to be scaled. Got a "
                             f"{x.dtype.name} tensor instead.")
        if rate is None:
            if isinstance(keep_prob, numbers.Real) and not 0 < keep_prob <= 1:
                raise ValueError(f"keep_prob must be a scalar tensor or a float in the range (0, 1], got "
                                 f"{keep_prob}")
            if isinstance(keep_prob, numbers.Real) and keep_prob == 1:
                return x
            keep = convert_to_tensor(keep_prob, dtype=x.dtype, name="keep_prob")
            rate_t = subtract(np.asarray(1, x.dtype.as_numpy_dtype), keep)
        else:
            if isinstance(rate, numbers.Real) and not 0 <= rate < 1:
                raise ValueError(f"rate must be a scalar tensor or a float in the range [0, 1), got {rate}")
            if isinstance(rate, numbers.Real) and rate == 0:
                return x
            rate_t = convert_to_tensor(rate, dtype=x.dtype, name="rate")
            keep = subtract(np.asarray(1, x.dtype.as_numpy_dtype), rate_t)
        if keep.shape.ndims not in (None, 0):
            raise ValueError(f"keep_prob/rate must be a scalar, got shape {keep.shape}")
        shape = _noise_shape(x, noise_shape)
        random = random_uniform(shape, seed=seed, dtype=x.dtype)
        keep_mask = cast(greater_equal(random, rate_t), x.dtype)
        ret = multiply(multiply(x, truediv(np.asarray(1, x.dtype.as_numpy_dtype), keep)), keep_mask, name=scope)
        # keep_prob is a scalar at run time even when its static shape is unknown: x's shape stays.
        ret.set_shape(x.shape)
        return ret


def _noise_shape(x, noise_shape):
    if noise_shape is None:
        return [int(d) for d in x.shape.as_list()] if x.shape.is_fully_defined() else shape(x)
    if isinstance(noise_shape, Tensor):
        return noise_shape
    dims = list(noise_shape)
    if x.shape.ndims is not None and len(dims) == x.shape.ndims:
        # None entries take x's size, as TF's _get_noise_shape does.
        dims = [x.shape[i].value if d is None else d for i, d in enumerate(dims)]
    return dims


# -- cross-entropies ---------------------------------------------------------------------------
@tf_export("nn.sigmoid_cross_entropy_with_logits")
def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """tf.nn.sigmoid_cross_entropy_with_logits(labels=..., logits=...): the elementwise logistic
    loss, max(x, 0) - x * z + log(1 + exp(-|x|))."""
    _sentinel_check(_sentinel, "sigmoid_cross_entropy_with_logits")
    with name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, dtype=logits.dtype, name="labels")
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError(f"logits and labels must have the same shape ({logits.shape} vs {labels.shape})")
        zeros = zeros_like(logits)
        cond = greater_equal(logits, zeros)
        relu_logits = where(cond, logits, zeros)
        neg_abs_logits = where(cond, negative(logits), logits)
        return add(subtract(relu_logits, multiply(logits, labels)),
                   log1p(exp(neg_abs_logits)), name=scope)


@tf_export("nn.weighted_cross_entropy_with_logits")
def weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None, name=None, targets=None):
    """tf.nn.weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None,
    name=None, targets=None): the logistic loss with positive examples weighted by pos_weight
    (`targets` is TF 1.15's deprecated spelling of `labels`)."""
    if labels is not None and targets is not None:
        raise ValueError("Cannot specify both 'labels' and 'targets'.")
    labels = targets if labels is None else labels
    with name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, dtype=logits.dtype, name="targets")
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError(f"logits and targets must have the same shape ({logits.shape} vs {labels.shape})")
        one = np.asarray(1, logits.dtype.as_numpy_dtype)
        pos_weight = convert_to_tensor(pos_weight, dtype=logits.dtype, name="pos_weight")
        log_weight = add(one, multiply(subtract(pos_weight, one), labels))
        return add(multiply(subtract(one, labels), logits),
                   multiply(log_weight, add(log1p(exp(negative(abs(logits)))),
                                                     relu(negative(logits)))), name=scope)


def _flatten_outer(t):
    """t as a 2-D [-1, last] tensor, and the outer shape (list or tensor) to restore."""
    d = dims(t.shape)
    if d is not None and len(d) == 2:
        return t, None
    outer = d[:-1] if d is not None and None not in d[:-1] else slice_(shape(t), [0], [rank(t) - 1])
    if d is not None and d[-1] is not None:
        return reshape(t, [-1, d[-1]]), outer
    last = slice_(shape(t), expand_dims(rank(t) - 1, 0), [1])
    flat = reshape(t, concat([constant([-1]), last], 0))
    flat.set_shape([None, None if d is None else d[-1]])
    return flat, outer


@tf_export("nn.softmax_cross_entropy_with_logits_v2")
def softmax_cross_entropy_with_logits_v2(labels, logits, axis=None, name=None, dim=None):
    """tf.nn.softmax_cross_entropy_with_logits_v2(labels, logits, axis=None, name=None, dim=None):
    -sum(labels * log_softmax(logits), axis); gradients flow into labels too."""
    axis = -1 if axis is None and dim is None else (dim if axis is None else axis)
    with name_scope(name, "softmax_cross_entropy_with_logits", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, dtype=logits.dtype, name="labels")
        ndims = logits.shape.ndims
        if ndims is not None and labels.shape.ndims is not None and ndims != labels.shape.ndims:
            raise ValueError(f"softmax_cross_entropy_with_logits: logits and labels must have the same rank "
                             f"({logits.shape} vs {labels.shape})")
        if ndims == 0:
            raise ValueError("softmax_cross_entropy_with_logits: logits must have rank >= 1")
        perm = swap_axes_perm(logits, axis)
        if perm is not None:
            logits, labels = transpose(logits, perm), transpose(labels, perm)
        lg2, outer = _flatten_outer(logits)
        lb2, _ = _flatten_outer(labels)
        precise = lg2.dtype == dtypes.float16
        if precise:
            lg2, lb2 = cast(lg2, dtypes.float32), cast(lb2, dtypes.float32)
        loss = make_op("SoftmaxCrossEntropyWithLogits", [lg2, lb2], {"T": lg2.dtype},
                       name="SoftmaxCrossEntropyWithLogits" if outer is not None or precise else scope).outputs[0]
        if outer is not None:
            loss = reshape(loss, outer, name=None if precise else scope)
        if precise:
            loss = cast(loss, dtypes.float16, name=scope)
        return loss


@tf_export("nn.softmax_cross_entropy_with_logits")
def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1, name=None, axis=None):
    """tf.nn.softmax_cross_entropy_with_logits(labels=..., logits=..., dim=-1, name=None): as _v2
    but labels get no gradient (TF1's deprecated version)."""
    _sentinel_check(_sentinel, "softmax_cross_entropy_with_logits")
    with name_scope(name, "softmax_cross_entropy_with_logits_sg", [logits, labels]) as scope:
        labels = stop_gradient(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, axis=dim if axis is None else axis,
                                                name=scope)


@tf_export("nn.sparse_softmax_cross_entropy_with_logits")
def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """tf.nn.sparse_softmax_cross_entropy_with_logits(labels=..., logits=..., name=None): the
    cross-entropy of integer class labels; a label outside [0, num_classes) is
    InvalidArgumentError at run time on the CPU, and NaN loss and gradient rows on a GPU (TF's)."""
    _sentinel_check(_sentinel, "sparse_softmax_cross_entropy_with_logits")
    with name_scope(name, "SparseSoftmaxCrossEntropyWithLogits", [labels, logits]) as scope:
        labels = convert_to_tensor(labels)
        logits = convert_to_tensor(logits)
        lr, gr = labels.shape.ndims, logits.shape.ndims
        if gr == 0:
            raise ValueError(f"Logits cannot be scalars - received shape {logits.shape}.")
        if lr is not None and gr is not None and lr != gr - 1:
            raise ValueError(f"Rank mismatch: Rank of labels (received {lr}) should equal rank of logits minus 1 "
                             f"(received {gr}).")
        ld, gd = dims(labels.shape), dims(logits.shape)
        if ld is not None and gd is not None:
            for a, b in zip(ld, gd[:-1]):
                if a is not None and b is not None and a != b:
                    raise ValueError(f"Shape mismatch: The shape of labels (received {labels.shape}) should equal "
                                     f"the shape of logits except for the last dimension (received {logits.shape}).")
        precise = logits.dtype == dtypes.float16
        lg = cast(logits, dtypes.float32) if precise else logits
        if gr == 2:
            cost = make_op("SparseSoftmaxCrossEntropyWithLogits", [lg, labels],
                           {"T": lg.dtype, "Tlabels": labels.dtype},
                           name="SparseSoftmaxCrossEntropyWithLogits" if precise else scope).outputs[0]
        else:
            lg2, _ = _flatten_outer(lg)
            cost = make_op("SparseSoftmaxCrossEntropyWithLogits", [lg2, reshape(labels, [-1])],
                        {"T": lg.dtype, "Tlabels": labels.dtype}, name="SparseSoftmaxCrossEntropyWithLogits").outputs[0]
            cost = reshape(cost, ld if ld is not None and None not in ld else shape(labels),
                           name=None if precise else scope)
        return cast(cost, dtypes.float16, name=scope) if precise else cost


# -- embedding_lookup --------------------------------------------------------------------------
@tf_export("nn.embedding_lookup")
def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True, max_norm=None):
    """tf.nn.embedding_lookup(params, ids, partition_strategy='mod', name=None,
    validate_indices=True, max_norm=None): rows `ids` of `params` (a tensor, a Variable, or a list
    of them sharded by 'mod' (id % n) or 'div' (contiguous blocks)). A single params' gradient
    is the IndexedSlices of gather's gradient; a PartitionedVariable is its list of parts, and a
    variable is read sparsely (only the rows looked up leave its task)."""
    params = _param_list(params)
    if not params:
        raise ValueError("Need at least one param")
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}")
    with name_scope(name, "embedding_lookup", params + [ids]) as scope:
        np_ = len(params)
        ids = convert_to_tensor(ids, name="ids")
        if np_ == 1:
            with _colocate(params[0]):
                result = _gather(params[0], ids, name=scope if max_norm is None else None)
            return result if max_norm is None else _clip(result, max_norm, scope)
        flat_ids = reshape(ids, [-1])
        original_indices = range_(size(flat_ids))
        if partition_strategy == "mod":
            p_assignments = floormod(flat_ids, np_)
            new_ids = floordiv(flat_ids, np_)
        else:
            sizes = [_dim0(p) for p in params]
            if None in sizes:
                raise ValueError("embedding_lookup with partition_strategy='div' needs params of known first "
                                 "dimension")
            total = sum(sizes)
            ids_per, extras = divmod(total, np_)
            ids_per_c = np.asarray(ids_per, np.int64 if flat_ids.dtype == dtypes.int64 else np.int32)
            p_assignments = maximum(floordiv(flat_ids, ids_per_c + 1),
                                       floordiv(flat_ids - extras, ids_per_c))
            is_in_first = less(p_assignments, extras)
            new_ids = where(is_in_first, floormod(flat_ids, ids_per_c + 1),
                            floormod(flat_ids - extras, ids_per_c))
        p_assignments = cast(p_assignments, dtypes.int32)
        gather_ids = dynamic_partition(new_ids, p_assignments, np_)
        pindices = dynamic_partition(original_indices, p_assignments, np_)
        partitioned = []
        for p, pids in zip(params, gather_ids):
            with _colocate(p):
                partitioned.append(_gather(p, pids))
        ret = dynamic_stitch(pindices, partitioned)
        element_shape = _element_shape(params)
        ids_shape = shape(ids)
        out_shape = concat([ids_shape, slice_(shape(ret), [1], [-1])], 0)
        ret = reshape(ret, out_shape, name=scope if max_norm is None else None)
        if ids.shape.ndims is not None and element_shape is not None:
            ret.set_shape(ids.shape.concatenate(element_shape))
        return ret if max_norm is None else _clip(ret, max_norm, scope)


def _param_list(params) -> list:
    if hasattr(params, "_get_variable_list"):   # a PartitionedVariable: its parts
        return list(params._get_variable_list())
    return list(params) if isinstance(params, (list, tuple)) else [params]


def _gather(p, ids, name=None):
    """Rows `ids` of `p`; a resource variable gathers on its own task (ResourceGather)."""
    if getattr(p, "_is_resource_variable", False) is True:
        return p.sparse_read(ids, name=name)
    return gather(p, ids, name=name)


def _dim0(p):
    shape = p.get_shape() if hasattr(p, "get_shape") else convert_to_tensor(p).shape
    return shape[0].value if shape.ndims else None


def _element_shape(params):
    shape = params[0].get_shape() if hasattr(params[0], "get_shape") else None
    return None if shape is None or shape.ndims is None else shape[1:]


def _colocate(p):
    try:
        return colocate_with(p)
    except (TypeError, ValueError, AttributeError):
        return contextlib.nullcontext()


def _clip(x, max_norm, name):
    axes = list(range(1, x.shape.ndims)) if x.shape.ndims else -1
    return clip_by_norm(x, max_norm, axes=axes, name=name)


# -- small composites --------------------------------------------------------------------------
@tf_export("nn.xw_plus_b")
def xw_plus_b(x, weights, biases, name=None):
    """tf.nn.xw_plus_b(x, weights, biases, name=None): matmul(x, weights) + biases."""
    with name_scope(name, "xw_plus_b", [x, weights, biases]) as scope:
        return bias_add(matmul(x, weights), biases, name=scope)


@tf_export("nn.relu_layer")
def relu_layer(x, weights, biases, name=None):
    """tf.nn.relu_layer(x, weights, biases, name=None): relu(matmul(x, weights) + biases)."""
    with name_scope(name, "relu_layer", [x, weights, biases]) as scope:
        return relu(bias_add(matmul(x, weights), biases), name=scope)


@tf_export("math.zero_fraction", "nn.zero_fraction")
def zero_fraction(value, name=None):
    """tf.nn.zero_fraction(value, name=None): the fraction of zeros in value (float32)."""
    with name_scope(name, "zero_fraction", [value]):
        value = convert_to_tensor(value, name="value")
        zero = zeros_like(value)
        return reduce_mean(cast(equal(value, zero), dtypes.float32))


@tf_export("nn.conv1d")
def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None, data_format=None,
           name=None, input=None, dilations=None):
    """tf.nn.conv1d(value, filters, stride, padding, data_format='NWC'): a conv2d over a height-1
    image; filters [width, in_channels, out_channels]."""
    value = input if value is None else value
    fmt = data_format or "NWC"
    if fmt not in ("NWC", "NCW", "NHWC", "NCHW"):
        raise ValueError(f"conv1d: data_format must be 'NWC' or 'NCW', got {data_format!r}")
    nchw = fmt in ("NCW", "NCHW")
    with name_scope(name, "conv1d", [value, filters]) as scope:
        value = convert_to_tensor(value)
        x = expand_dims(value, 2 if nchw else 1)
        f = expand_dims(convert_to_tensor(filters, dtype=value.dtype), 0)
        s = [int(stride)] if isinstance(stride, (int, np.integer)) else [int(v) for v in stride]
        s = s[0] if len(s) == 1 else (s[2] if nchw else s[1])
        d = 1 if dilations is None else (int(dilations) if isinstance(dilations, (int, np.integer))
                                         else int(list(dilations)[-1]))
        y = conv2d(x, f, [1, 1, s, 1] if not nchw else [1, 1, 1, s], padding,
                   data_format="NCHW" if nchw else "NHWC",
                   dilations=[1, 1, d, 1] if not nchw else [1, 1, 1, d])
        return squeeze(y, [2 if nchw else 1], name=scope)


# -- statistics and small composite losses ---------------------------------------------------
def _keep(keep_dims, keepdims) -> bool:
    if keep_dims is not None and keepdims is not None:
        raise ValueError("Cannot specify both 'keep_dims' and 'keepdims'")
    return bool(keepdims if keepdims is not None else keep_dims)


@tf_export("nn.sufficient_statistics")
def sufficient_statistics(x, axes, shift=None, keep_dims=None, name=None, keepdims=None):
    """tf.nn.sufficient_statistics(x, axes, shift=None, keep_dims=False, name=None) ->
    (count, mean_ss, variance_ss, shift): the element count over `axes`, sum(x - shift) and
    sum((x - shift)^2) (plain sums when shift is None)."""
    axes = sorted(set(int(a) for a in axes))
    keep = _keep(keep_dims, keepdims)
    with name_scope(name, "sufficient_statistics", [x, shift]):
        x = convert_to_tensor(x, name="x")
        dims = x.shape.as_list() if x.shape.ndims is not None else None
        if dims is not None and all(dims[d] is not None for d in axes):
            n = 1
            for d in axes:
                n *= dims[d]
            counts = constant(n, dtype=x.dtype)
        else:
            counts = reduce_prod(gather(cast(shape(x), x.dtype), axes), name="count")
        if shift is not None:
            shift = convert_to_tensor(shift, name="shift")
            m_ss, v_ss = subtract(x, shift), squared_difference(x, shift)
        else:
            m_ss, v_ss = x, square(x)
        m_ss = reduce_sum(m_ss, axes, keepdims=keep, name="mean_ss")
        v_ss = reduce_sum(v_ss, axes, keepdims=keep, name="var_ss")
    return counts, m_ss, v_ss, shift


@tf_export("nn.normalize_moments")
def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    """tf.nn.normalize_moments(counts, mean_ss, variance_ss, shift, name=None) -> (mean, variance)
    from sufficient statistics."""
    with name_scope(name, "normalize", [counts, mean_ss, variance_ss, shift]):
        divisor = reciprocal(counts, name="divisor")
        if shift is not None:
            shifted_mean = multiply(mean_ss, divisor, name="shifted_mean")
            mean = add(shifted_mean, shift, name="mean")
        else:
            shifted_mean = multiply(mean_ss, divisor, name="mean")
            mean = shifted_mean
        variance = subtract(multiply(variance_ss, divisor), square(shifted_mean), name="variance")
    return mean, variance


@tf_export("nn.weighted_moments")
def weighted_moments(x, axes, frequency_weights, name=None, keep_dims=None, keepdims=None):
    """tf.nn.weighted_moments(x, axes, frequency_weights, name=None, keep_dims=False) ->
    (mean, variance) with each element of x weighted by (broadcast) frequency_weights."""
    keep = _keep(keep_dims, keepdims)
    with name_scope(name, "weighted_moments", [x, frequency_weights, axes]):
        x = convert_to_tensor(x, name="x")
        w = convert_to_tensor(frequency_weights, name="frequency_weights")
        needs_cast = x.dtype == dtypes.float16
        if needs_cast:
            x = cast(x, dtypes.float32)
        if w.dtype != x.dtype:
            w = cast(w, x.dtype)
        # keepdims=True throughout so the results broadcast against x.
        weighted_sum = reduce_sum(w * x, axes, name="weighted_input_sum", keepdims=True)
        sum_of_weights = reduce_sum(w + zeros_like(x), axes, name="sum_of_weights", keepdims=True)
        divisor = reciprocal(sum_of_weights, name="inv_weight_sum")
        mean = multiply(weighted_sum, divisor)
        distsq = reduce_sum(w * squared_difference(x, mean), axes, name="weighted_distsq", keepdims=True)
        variance = multiply(distsq, divisor)
        if not keep:
            mean, variance = squeeze(mean, axis=list(axes)), squeeze(variance, axis=list(axes))
        if needs_cast:
            mean, variance = cast(mean, dtypes.float16), cast(variance, dtypes.float16)
        return mean, variance


@tf_export("nn.log_poisson_loss")
def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """tf.nn.log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    exp(log_input) - log_input * targets, plus Stirling's term for targets > 1 when
    compute_full_loss."""
    with name_scope(name, "log_poisson_loss", [log_input, targets]):
        log_input = convert_to_tensor(log_input, name="log_input")
        targets = convert_to_tensor(targets, name="targets")
        if not targets.shape.is_compatible_with(log_input.shape):
            raise ValueError(f"log_input and targets must have the same shape ({log_input.shape} vs "
                             f"{targets.shape})")
        result = exp(log_input) - log_input * targets
        if compute_full_loss:
            half = constant(0.5, dtype=targets.dtype)
            two_pi = constant(2 * math.pi, dtype=targets.dtype)
            stirling = targets * log(targets) - targets + half * log(two_pi * targets)
            zeros = zeros_like(targets)
            in_unit = logical_and(targets >= zeros, targets <= ones_like(targets))
            result += where(in_unit, zeros, stirling)
        return result


@tf_export("nn.silu", "nn.swish")
def swish(features, beta=1.0, name=None):
    """tf.nn.swish(features, beta=1.0) (also tf.nn.silu, TF 2's name): features *
    sigmoid(beta * features); beta a scalar tensor or number, cast to features' dtype."""
    with name_scope(name, "swish", [features]):
        features = convert_to_tensor(features, name="features")
        if isinstance(beta, (int, float)) and beta == 1.0:
            return features * sigmoid(features)
        beta = cast(convert_to_tensor(beta, name="beta"), features.dtype)
        return features * sigmoid(beta * features)
