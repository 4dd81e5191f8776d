"""Helpers shared by the nn op modules: static-shape helpers, window geometry (SAME/VALID/
explicit padding as TF computes it) and NHWC/NCHW layout conversion."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.ops.array.core import constant, shape
from tensorweave.ops.helpers import array_module, make_op


def dims(shape: TensorShape) -> Optional[list]:
    """The shape as a list (None per unknown dim), or None when the rank is unknown."""
    t = shape.as_tuple_or_none()
    return None if t is None else list(t)


def as_str(v) -> str:
    return v.decode() if isinstance(v, bytes) else v


def spatial_axes(data_format: str) -> tuple:
    """(channel axis, spatial axes) of a 4-D layout."""
    return (1, (2, 3)) if as_str(data_format).startswith("NC") else (3, (1, 2))


def window_attr(value, fmt: str, name: str, op_name: str, spatial: int) -> list:
    """1, `spatial` or `spatial` + 2 ints -> `spatial` + 2 ints in `fmt` order (batch and channel
    entries 1); all 1 for None."""
    if value is None:
        return [1] * (spatial + 2)
    value = [int(value)] if isinstance(value, (int, np.integer)) else [int(v) for v in value]
    if len(value) == 1:
        value = value * spatial
    if len(value) == spatial:
        value = [1, 1] + value if fmt.startswith("NC") else [1] + value + [1]
    if len(value) != spatial + 2:
        raise ValueError(f"{op_name}: {name} should be of length 1, {spatial} or {spatial + 2} but was {len(value)}")
    return value


def check_conv_windows(st, dil, c_axis: int, op_name: str) -> None:
    """TF's limits on a conv's strides and dilations: positive, and 1 on the batch and channel dims."""
    if st[0] != 1 or st[c_axis] != 1:
        raise ValueError(f"{op_name}: Current implementation does not yet support strides in the batch and "
                         "depth dimensions.")
    if dil[0] != 1 or dil[c_axis] != 1:
        raise ValueError(f"{op_name}: Current implementation does not yet support dilations in the batch and "
                         "depth dimensions.")
    if min(st) < 1 or min(dil) < 1:
        raise ValueError(f"{op_name}: strides and dilations must be positive, got {st} and {dil}")


def window_out(size: Optional[int], k: int, s: int, d: int, padding: str,
               explicit: Sequence[int] = (0, 0)) -> Optional[int]:
    """Output length along one spatial axis (TF's GetWindowedOutputSize)."""
    if size is None:
        return None
    eff = (k - 1) * d + 1
    if padding == "SAME":
        return -(-size // s)
    if padding == "VALID":
        return max(0, (size - eff) // s + 1) if size >= eff else 0
    return max(0, (size + explicit[0] + explicit[1] - eff) // s + 1)


def window_pads(size: int, k: int, s: int, d: int, padding: str,
                explicit: Sequence[int] = (0, 0)) -> tuple:
    """(output length, pad before, pad after) along one axis."""
    eff = (k - 1) * d + 1
    if padding == "SAME":
        out = -(-size // s)
        total = max((out - 1) * s + eff - size, 0)
        return out, total // 2, total - total // 2
    if padding == "VALID":
        return max(0, (size - eff) // s + 1) if size >= eff else 0, 0, 0
    pb, pa = int(explicit[0]), int(explicit[1])
    return max(0, (size + pb + pa - eff) // s + 1), pb, pa


def check_padding(padding, op_name: str, allow_explicit: bool = True):
    """Normalizes `padding`: 'SAME'/'VALID' or a list of 4 [before, after] pairs (explicit)."""
    if isinstance(padding, (str, bytes)):
        p = as_str(padding).upper()
        if p not in ("SAME", "VALID"):
            raise ValueError(f"{op_name}: padding must be 'SAME' or 'VALID', got {padding!r}")
        return p, None
    if not allow_explicit:
        raise ValueError(f"{op_name}: padding must be 'SAME' or 'VALID', got {padding!r}")
    pairs = [list(map(int, p)) for p in padding]
    if len(pairs) != 4 or any(len(p) != 2 for p in pairs):
        raise ValueError(f"{op_name}: explicit padding must be a list of 4 [before, after] pairs, got {padding}")
    if any(v < 0 for p in pairs for v in p):
        raise ValueError(f"{op_name}: explicit padding values must be nonnegative, got {padding}")
    return "EXPLICIT", pairs


def check_data_format(data_format, op_name: str) -> str:
    fmt = "NHWC" if data_format is None else as_str(data_format)
    if fmt not in ("NHWC", "NCHW"):
        raise ValueError(f"{op_name}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    return fmt


# -- layouts: kernels compute in NHWC; NCHW values are transposed on the way in and out ------
def to_nhwc(x, fmt):
    return x if fmt == "NHWC" else x.transpose(0, 2, 3, 1)


def from_nhwc(x, fmt):
    return x if fmt == "NHWC" else array_module(x).ascontiguousarray(x.transpose(0, 3, 1, 2))


def nhwc_dims(d, fmt):
    """[n, h, w, c] from a 4-element dims list in `fmt` order."""
    return list(d) if fmt == "NHWC" else [d[0], d[2], d[3], d[1]]


def fmt_dims(d, fmt):
    return list(d) if fmt == "NHWC" else [d[0], d[3], d[1], d[2]]


def shape_tensor(t):
    """t's shape as an int32 tensor: a constant when statically known (no Shape op needed)."""
    if t.shape.is_fully_defined():
        return constant(np.array(t.shape.as_list(), np.int32))
    return shape(t)


def backprop_grads(conv: str, op_attrs, backprop_input, backprop_filter):
    """The gradients of `conv`'s BackpropInput and BackpropFilter ops: each op is linear in its
    tensor inputs, so its gradient is the other backprop op and the forward conv."""
    def input_grad(op, grad):
        attrs = op_attrs(op)
        _, f, dy = op.inputs
        return [None, backprop_filter(grad, shape_tensor(f), dy, attrs),
                make_op(conv, [grad, f], dict(attrs, T=grad.dtype), name=conv).outputs[0]]

    def filter_grad(op, grad):
        attrs = op_attrs(op)
        x, _, dy = op.inputs
        return [backprop_input(shape_tensor(x), grad, dy, attrs), None,
                make_op(conv, [x, grad], dict(attrs, T=grad.dtype), name=conv).outputs[0]]
    return input_grad, filter_grad


def rank4(shape, what):
    d = dims(shape)
    if d is not None and len(d) != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {len(d)} for {what}")
    return d if d is not None else [None] * 4


def embedding_params(params) -> list:
    """Embedding params as a list of shards (a PartitionedVariable gives its parts); plain values
    (numpy arrays, lists) become constant tensors, as TF converts them (Variables and tensors
    pass through)."""
    if hasattr(params, "_get_variable_list"):
        return list(params._get_variable_list())
    params = list(params) if isinstance(params, (list, tuple)) else [params]
    return [p if hasattr(p, "graph") else convert_to_tensor(p, name="params") for p in params]
