"""Array ops that select by a mask: boolean_mask and sequence_mask (composites of gather,
where and comparisons)."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import constant, expand_dims, reshape, shape, squeeze
from tensorweave.ops.array.fill import range as range_
from tensorweave.ops.array.gather import gather
from tensorweave.ops.array.slicing import strided_slice
from tensorweave.ops.array.sort import where
from tensorweave.ops.math.binary import less, maximum
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_max, reduce_prod


# -- boolean_mask ------------------------------------------------------------------------------
@tf_export("boolean_mask")
def boolean_mask(tensor, mask, name: str = "boolean_mask", axis=None) -> Tensor:
    """tf.boolean_mask(tensor, mask, name='boolean_mask', axis=None): the entries of `tensor`
    where the K-D `mask` (aligned at dimension `axis`) is True, flattened along those K dims."""
    with name_scope(name, "boolean_mask") as _:
        tensor = convert_to_tensor(tensor, name="tensor")
        mask = convert_to_tensor(mask, name="mask")
        km = mask.shape.ndims
        if km == 0:
            raise ValueError("boolean_mask: mask cannot be scalar.")
        if km is None:
            raise ValueError("boolean_mask: number of mask dimensions must be specified, even if some dimensions "
                             "are None. E.g. shape=[None] is ok, but shape=None is not.")
        axis = 0 if axis is None else int(axis)
        st = tensor.shape
        if st.ndims is not None and not st[axis:axis + km].is_compatible_with(mask.shape):
            raise ValueError(f"boolean_mask: shapes {st[axis:axis + km]} and {mask.shape} are incompatible "
                             f"(tensor {st}, mask {mask.shape})")
        block = st[axis:axis + km].num_elements() if st.ndims is not None else None
        if st.is_fully_defined():
            dims = st.as_list()
            flat = reshape(tensor, dims[:axis] + [block] + dims[axis + km:])
        else:
            ts = shape(tensor)
            lead = block if block is not None else reduce_prod(
                strided_slice(ts, [axis], [axis + km], [1]), [0])
            parts = [strided_slice(ts, [0], [axis], [1]), reshape(lead, [1]),
                     strided_slice(ts, [axis + km], [0], [1], end_mask=1)]
            flat = reshape(tensor, concat(parts, 0))
            if st.ndims is not None:
                flat.set_shape(st[:axis].concatenate([block]).concatenate(st[axis + km:]))
        idx = squeeze(where(reshape(mask, [-1])), axis=[1])
        return gather(flat, idx, axis=axis)


# -- sequence_mask -----------------------------------------------------------------------------
@tf_export("sequence_mask")
def sequence_mask(lengths, maxlen=None, dtype=dtypes.bool, name=None) -> Tensor:
    """tf.sequence_mask(lengths, maxlen=None, dtype=tf.bool, name=None): mask[..., j] = j < lengths[...];
    maxlen defaults to max(lengths)."""
    with name_scope(name, "SequenceMask"):
        lengths = convert_to_tensor(lengths)
        static_lengths = constant_value(lengths) if maxlen is None else None
        if static_lengths is not None and np.size(static_lengths):
            # TF's shape inference folds max(constant lengths): the mask's last dim is static.
            maxlen = constant(max(int(np.max(static_lengths)), 0), dtype=lengths.dtype)
        elif maxlen is None:
            maxlen = reduce_max(lengths)
            maxlen = maximum(constant(0, dtype=maxlen.dtype), maxlen)
        else:
            maxlen = convert_to_tensor(maxlen)
        if maxlen.shape.ndims not in (None, 0):
            raise ValueError("maxlen must be scalar for sequence_mask")
        row = range_(constant(0, dtype=maxlen.dtype), maxlen, constant(1, dtype=maxlen.dtype))
        lens = expand_dims(lengths, -1)
        if lens.dtype != maxlen.dtype:
            lens = cast(lens, maxlen.dtype)
        result = less(row, lens)
        dtype = dtypes.as_dtype(dtype) if dtype is not None else None
        return result if dtype is None or dtype == dtypes.bool else cast(result, dtype)
