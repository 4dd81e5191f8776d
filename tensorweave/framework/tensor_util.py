"""Build-time constant folding for shape functions: the value of a tensor when it is knowable
without running the graph (Const, and shape arithmetic on fully-known shapes)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tf_export import tf_export


def constant_value(tensor) -> Optional[np.ndarray]:
    """The numpy value of `tensor` if it can be computed at build time, else None."""
    if not hasattr(tensor, "op"):
        return np.asarray(tensor) if tensor is not None else None
    op = tensor.op
    t = op.type
    if t == "Const":
        return np.asarray(op.get_attr("value"))
    if t in ("Identity", "StopGradient") and op.inputs:
        return constant_value(op.inputs[0])
    if t == "Shape":
        shape = op.inputs[0].shape
        if shape.is_fully_defined():
            return np.array(shape.as_list(), dtype=op.get_attr("out_type").as_numpy_dtype)
        return None
    if t == "Size":
        n = op.inputs[0].shape.num_elements()
        return None if n is None else np.array(n, dtype=op.get_attr("out_type").as_numpy_dtype)
    if t == "Rank":
        nd = op.inputs[0].shape.ndims
        return None if nd is None else np.array(nd, dtype=np.int32)
    if t == "Cast":
        v = constant_value(op.inputs[0])
        return None if v is None else v.astype(dtypes.as_dtype(op.get_attr("DstT")).as_numpy_dtype)
    if t == "Pack":
        vals = [constant_value(x) for x in op.inputs]
        if any(v is None for v in vals):
            return None
        return np.stack(vals, axis=op.get_attr("axis"))
    if t == "ConcatV2":
        vals = [constant_value(x) for x in op.inputs]
        if any(v is None for v in vals):
            return None
        return np.concatenate(vals[:-1], axis=int(vals[-1]))
    return None


@tf_export("get_static_value")
def get_static_value(tensor, partial=False):
    """tf.get_static_value(tensor, partial=False): the numpy value of `tensor` when it can be
    computed without running the graph (constants and shape arithmetic on known shapes), else
    None; a value that is not a tensor is returned as is. With partial=True a Pack of partly
    known elements gives an object array holding None where an element is unknown."""
    if not hasattr(tensor, "op"):
        return tensor
    value = constant_value(tensor)
    if value is None and partial and tensor.op.type == "Pack":
        value = np.array([constant_value(x) for x in tensor.op.inputs], dtype=object)
    if value is not None:
        # TF1: a value the graph folded at build time must not be changed by a feed
        tensor.graph.prevent_feeding(tensor)
    return value


def constant_value_as_shape(tensor) -> TensorShape:
    """The TensorShape a 1-D shape tensor describes, with None for dims unknown at build time."""
    value = constant_value(tensor)
    if value is not None:
        return TensorShape([None if d < 0 else int(d) for d in np.reshape(value, -1)])
    shape = tensor.shape
    if shape.ndims == 1 and shape[0].value is not None:
        op = tensor.op
        if op.type == "Shape":
            return op.inputs[0].shape
        if op.type == "Pack":
            dims = []
            for x in op.inputs:
                v = constant_value(x)
                dims.append(None if v is None or int(v) < 0 else int(v))
            return TensorShape(dims)
        if op.type == "ConcatV2":
            result = TensorShape([])
            for x in op.inputs[:-1]:
                result = result.concatenate(constant_value_as_shape(x))
            return result
        return unknown_shape(shape[0].value)
    return unknown_shape()
