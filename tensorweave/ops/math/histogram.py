"""Math ops that count into bins: histogram_fixed_width (HistogramFixedWidth),
histogram_fixed_width_bins and confusion_matrix."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import stack
from tensorweave.ops.array.core import reshape, shape
from tensorweave.ops.array.fill import ones_like
from tensorweave.ops.array.gather import scatter_nd
from tensorweave.ops.helpers import INDEX, REAL, check_output_size, invalid, make_op
from tensorweave.ops.math.binary import add, maximum, minimum, multiply, realdiv, subtract
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_max
from tensorweave.ops.math.unary import floor
from tensorweave.ops.registry import register


def _bin_indices(values: np.ndarray, lo, hi, nbins: int) -> np.ndarray:
    """Each value's bin in [lo, hi) split into nbins equal bins; values outside go to the end bins."""
    scaled = (values.astype(np.float64) - float(lo)) / (float(hi) - float(lo)) * nbins
    return np.clip(np.floor(scaled), 0, nbins - 1).astype(np.int64)


@tf_export("histogram_fixed_width")
def histogram_fixed_width(values, value_range, nbins=100, dtype=dtypes.int32, name=None) -> Tensor:
    """tf.histogram_fixed_width(values, value_range, nbins=100, dtype=tf.int32, name=None): the
    counts of `values` in nbins equal bins over value_range = [lo, hi] (values below lo count in
    the first bin, values at or above hi in the last)."""
    with name_scope(name, "histogram_fixed_width", [values, value_range, nbins]) as scope:
        values = convert_to_tensor(values, name="values")
        value_range = convert_to_tensor(value_range, dtype=values.dtype, name="value_range")
        nbins = convert_to_tensor(nbins, dtype=dtypes.int32, name="nbins")
        return make_op("HistogramFixedWidth", [values, value_range, nbins],
                       {"T": values.dtype, "dtype": dtypes.as_dtype(dtype)}, name=scope).outputs[0]


def _histogram_infer(op):
    n = constant_value(op.inputs[2])
    if op.inputs[1].shape.ndims not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {op.inputs[1].shape.ndims}")
    out = [None if n is None else int(n)]
    check_output_size(op, out)
    return [(op.get_attr("dtype"), TensorShape(out))]


def _histogram_kernel(node, ctx):
    out_dt = dtypes.as_dtype(node.attr["dtype"]).as_numpy_dtype

    def run(values, value_range, nbins):
        nbins = int(nbins)
        value_range = np.asarray(value_range).reshape(-1)
        if nbins <= 0:
            raise invalid(node, f"nbins should be a positive number, but got '{nbins}'")
        if value_range.size != 2 or not value_range[0] < value_range[1]:
            raise invalid(node, f"value_range should satisfy value_range[0] < value_range[1], but got "
                                f"{value_range.tolist()}")
        check_output_size(node, [nbins])
        idx = _bin_indices(np.asarray(values).reshape(-1), value_range[0], value_range[1], nbins)
        return np.bincount(idx, minlength=nbins).astype(out_dt)
    return run


register("HistogramFixedWidth", _histogram_infer, _histogram_kernel, grad=None, dtypes=REAL,
         dtype_param="values")


@tf_export("histogram_fixed_width_bins")
def histogram_fixed_width_bins(values, value_range, nbins=100, dtype=dtypes.int32, name=None) -> Tensor:
    """tf.histogram_fixed_width_bins(values, value_range, nbins=100, dtype=tf.int32, name=None):
    the bin index of each of `values` (same shape), binned as histogram_fixed_width."""
    with name_scope(name, "histogram_fixed_width_bins", [values, value_range, nbins]):
        values = convert_to_tensor(values, name="values")
        value_range = convert_to_tensor(value_range, dtype=values.dtype, name="value_range")
        flat = cast(reshape(values, [-1]), dtypes.float64)
        lo, hi = cast(value_range[0], dtypes.float64), cast(value_range[1], dtypes.float64)
        n = cast(convert_to_tensor(nbins, name="nbins"), dtypes.float64)
        scaled = floor(multiply(realdiv(subtract(flat, lo), subtract(hi, lo)), n))
        clipped = minimum(maximum(scaled, 0.0), subtract(n, 1.0))
        return reshape(cast(clipped, dtype), shape(values))


@tf_export("math.confusion_matrix", "confusion_matrix")
def confusion_matrix(labels, predictions, num_classes=None, dtype=dtypes.int32, name=None, weights=None) -> Tensor:
    """tf.confusion_matrix(labels, predictions, num_classes=None, dtype=tf.int32, name=None,
    weights=None): the [num_classes, num_classes] matrix counting (or summing `weights` of) each
    (label, prediction) pair; num_classes defaults to 1 + the largest label or prediction."""
    with name_scope(name, "confusion_matrix", [predictions, labels, num_classes, weights]) as scope:
        labels = convert_to_tensor(labels, name="labels")
        predictions = convert_to_tensor(predictions, name="predictions")
        for t, what in ((labels, "labels"), (predictions, "predictions")):
            if t.dtype not in INDEX:
                raise TypeError(f"{what} must be int32 or int64, got {t.dtype.name}")
        labels, predictions = cast(labels, dtypes.int64), cast(predictions, dtypes.int64)
        if num_classes is None:
            num_classes = add(maximum(reduce_max(predictions), reduce_max(labels)), 1)
        num_classes = cast(convert_to_tensor(num_classes, name="num_classes"), dtypes.int64)
        indices = stack([labels, predictions], axis=1)
        dtype = dtypes.as_dtype(dtype)
        values = ones_like(labels, dtype=dtype) if weights is None else \
            cast(convert_to_tensor(weights, name="weights"), dtype)
        return scatter_nd(indices, values, stack([num_classes, num_classes]), name=scope)
