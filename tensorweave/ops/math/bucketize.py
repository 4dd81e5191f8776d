"""Bucketize: the index of the bucket each value falls in, given sorted boundaries (TF's
math_ops._bucketize, which bucketized feature columns build on; TF exports it only as a raw op)."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.ops.helpers import make_op
from tensorweave.ops.registry import register


def bucketize(input, boundaries, name=None):
    """The bucket of each element of `input` (int32, its shape): i where boundaries[i-1] <= x <
    boundaries[i]; 0 below the first boundary, len(boundaries) from the last one on."""
    boundaries = [float(b) for b in boundaries]
    if any(a > b for a, b in zip(boundaries, boundaries[1:])):
        raise ValueError("Expected sorted boundaries")
    return make_op("Bucketize", [convert_to_tensor(input)], {"boundaries": boundaries},
                   name=name or "Bucketize").outputs[0]


def _kernel(node, ctx):
    # The attr is a list of 32-bit floats: a float64 input meets the float32 boundaries, as in TF.
    boundaries = np.asarray(node.attr["boundaries"], dtype=np.float32).astype(np.float64)
    return lambda x: np.searchsorted(boundaries, np.asarray(x, dtype=np.float64), side="right").astype(np.int32)


register("Bucketize", lambda op: [(dtypes.int32, op.inputs[0].shape)], _kernel, grad=None,
         dtypes=(dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64), dtype_param="input")
