"""Array ops that cut blocks out of tensors: slice and strided_slice (and Tensor.__getitem__)."""
from __future__ import annotations

import builtins
import numbers

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value_as_shape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import stack
from tensorweave.ops.array.core import constant, index_tensor, shape
from tensorweave.ops.array.fill import ones_like
from tensorweave.ops.helpers import array_module, check_output_size, dense, invalid, make_op, static_int, static_ints
from tensorweave.ops.registry import register, register_gpu


newaxis = None
tf_export("newaxis")(newaxis)


def _partial_ints(t) -> "list | None":
    """Per-element build-time values of a 1-D int tensor (None where unknown), or None."""
    v = static_ints(t)
    if v is not None:
        return v
    if t.op.type == "Pack" and t.op.get_attr("axis") == 0:
        return [static_int(x) for x in t.op.inputs]
    n = t.shape[0].value if t.shape.ndims == 1 else None
    return None if n is None else [None] * n


# -- Slice -------------------------------------------------------------------------------------
@tf_export("slice")
def slice(input_, begin, size, name=None) -> Tensor:
    """tf.slice(input_, begin, size, name=None): the block starting at `begin` of extent `size`
    (size -1 takes everything to the end of that dimension)."""
    input_ = convert_to_tensor(input_)
    begin_t = index_tensor(begin)
    size_t = index_tensor(size, dtype=begin_t.dtype if not isinstance(size, Tensor) else None)
    return make_op("Slice", [input_, begin_t, size_t], name=name or "Slice").outputs[0]


def _slice_infer(op):
    x, b, s = op.inputs
    nd = x.shape.ndims
    n = b.shape[0].value if b.shape.ndims == 1 else None
    if nd is not None and n is not None and n != nd:
        raise ValueError(f"Slice: begin has {n} entries but the input has rank {nd}")
    begin, sizes = _partial_ints(b), _partial_ints(s)
    if nd is None:
        nd = n if n is not None else (len(sizes) if sizes is not None else None)
        if nd is None:
            return [(x.dtype, unknown_shape())]
        return [(x.dtype, TensorShape([sz if sz is not None and sz >= 0 else None
                                       for sz in (sizes or [None] * nd)]))]
    dims = x.shape.as_tuple_or_none()
    begin = begin or [None] * nd
    sizes = sizes or [None] * nd
    out = []
    # As TF's shape function: out-of-range begin/size are runtime errors (InvalidArgumentError);
    # only a size below -1, or a negative `dim - begin` for size -1, fails at build time.
    for d, bb, sz in zip(dims, begin, sizes):
        if sz is not None and sz < -1:
            raise ValueError(f"Out of bounds slicing on dimension of length {d}: sizes vector cannot be < -1, "
                             f"but was {sz}")
        if sz is not None and sz >= 0:
            out.append(sz)
        elif sz == -1 and d is not None and bb is not None:
            if bb > d:
                raise ValueError(f"Negative dimension size caused by subtracting {bb} from {d}")
            out.append(d - bb)
        else:
            out.append(None)
    return [(x.dtype, TensorShape(out))]


def _slice_kernel(node, ctx):
    def run(x, b, s):
        x = array_module(x).asarray(x)
        b = [int(v) for v in np.reshape(b, -1)]
        s = [int(v) for v in np.reshape(s, -1)]
        if len(b) != x.ndim or len(s) != x.ndim:
            raise invalid(node, f"Expected begin and size arguments to be 1-D tensors of size {x.ndim}, but got "
                                f"shapes [{len(b)}] and [{len(s)}] instead.")
        idx = []
        for i, (d, bb, sz) in enumerate(zip(x.shape, b, s)):
            if sz == -1:
                sz = d - bb
            if not 0 <= bb <= d or not 0 <= sz <= d - bb:
                raise invalid(node, f"Expected size[{i}] in [0, {d - bb}], but got {sz}" if 0 <= bb <= d else
                              f"Expected begin[{i}] in [0, {d}], but got {bb}")
            idx.append(_builtin_slice(bb, bb + sz))
        return x[tuple(idx)]
    return run


_builtin_slice = builtins.slice   # this module's `slice` is tf.slice


register("Slice", _slice_infer, _slice_kernel)   # gradient: array_grad.py
register_gpu("Slice", host_inputs=(1, 2))


# -- StridedSlice ------------------------------------------------------------------------------
_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def _dense_spec(ndim: int, begin, end, strides, masks: dict, exc):
    """Expands a sparse strided-slice spec into one entry per output position:
    ('new',), ('shrink', index, input_dim) or ('slice', start, stop, step, input_dim)."""
    n = len(begin)
    bm, em, elm, nm, sm = (masks[k] for k in _MASKS)
    if bin(elm).count("1") > 1:
        raise exc("Multiple ellipses in slice spec not allowed")
    consumed = sum(1 for i in range(n) if not (elm >> i) & 1 and not (nm >> i) & 1)
    entries, dim = [], 0
    seen_ellipsis = False
    for i in range(n):
        if (elm >> i) & 1:
            seen_ellipsis = True
            for _ in range(ndim - consumed):
                entries.append(("slice", None, None, 1, dim))
                dim += 1
        elif (nm >> i) & 1:
            entries.append(("new",))
        elif (sm >> i) & 1:
            entries.append(("shrink", begin[i], dim))
            dim += 1
        else:
            if strides[i] == 0:
                raise exc(f"strides[{i}] must be non-zero")
            entries.append(("slice", None if (bm >> i) & 1 else begin[i], None if (em >> i) & 1 else end[i],
                            strides[i], dim))
            dim += 1
    if dim > ndim:
        raise exc(f"Index out of range using input dim {dim - 1}; input has only {ndim} dims")
    if not seen_ellipsis:
        while dim < ndim:
            entries.append(("slice", None, None, 1, dim))
            dim += 1
    return entries


@tf_export("strided_slice")
def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name=None) -> Tensor:
    """tf.strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0,
    ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0, var=None, name=None): numpy-style
    slicing; bit i of a mask applies to the i-th entry of begin/end/strides."""
    input_ = convert_to_tensor(input_)
    begin_t = index_tensor(begin)
    end_t = index_tensor(end, dtype=begin_t.dtype if not isinstance(end, Tensor) else None)
    strides_t = ones_like(begin_t) if strides is None else index_tensor(
        strides, dtype=begin_t.dtype if not isinstance(strides, Tensor) else None)
    attrs = dict(zip(_MASKS, (int(begin_mask), int(end_mask), int(ellipsis_mask), int(new_axis_mask),
                              int(shrink_axis_mask))))
    return make_op("StridedSlice", [input_, begin_t, end_t, strides_t], attrs, name=name or "StridedSlice").outputs[0]


class _Unknown:
    """A strided-slice spec value unknown at build time."""

    def __repr__(self):
        return "?"


_UNK = _Unknown()


def _strided_shape(x_shape: TensorShape, b, e, s, masks: dict) -> TensorShape:
    begin, end, strides = _partial_ints(b), _partial_ints(e), _partial_ints(s)
    n = next((len(v) for v in (begin, end, strides) if v is not None), None)
    if n is None or x_shape.ndims is None:
        return unknown_shape()
    begin, end, strides = ([_UNK if x is None else x for x in v] if v is not None else [_UNK] * n
                           for v in (begin, end, strides))
    if not len(begin) == len(end) == len(strides):
        raise ValueError(f"StridedSlice: begin, end and strides must have the same length, got "
                         f"{len(begin)}, {len(end)} and {len(strides)}")
    dims = x_shape.as_tuple_or_none()
    if not dims and any(not (masks["new_axis_mask"] >> i) & 1 and not (masks["ellipsis_mask"] >> i) & 1
                        for i in range(n)):
        raise ValueError("Attempting to slice scalar input.")
    out = []
    for entry in _dense_spec(len(dims), begin, end, strides, masks, ValueError):
        if entry[0] == "new":
            out.append(1)
        elif entry[0] == "shrink":
            i, d = entry[1], dims[entry[2]]
            if i is not _UNK and d is not None and not -d <= i < d:
                raise ValueError(f"slice index {i} of dimension {entry[2]} out of bounds.")
        else:
            _, start, stop, step, k = entry
            d = dims[k]
            if d is None or _UNK in (start, stop, step):
                out.append(None)
            else:
                out.append(len(range(*_builtin_slice(start, stop, step).indices(d))))
    return TensorShape(out)


def _strided_slice_infer(op):
    x, b, e, s = op.inputs
    masks = {k: op.get_attr(k) for k in _MASKS}
    for t in (b, e, s):
        if t.shape.ndims not in (None, 1):
            raise ValueError(f"StridedSlice: begin, end and strides must be 1-D, got shape {t.shape}")
    return [(x.dtype, _strided_shape(x.shape, b, e, s, masks))]


def _strided_index(node, masks: dict, shape: tuple, b, e, s) -> tuple:
    """The numpy index tuple for one run; InvalidArgumentError naming the node when invalid."""
    begin, end, strides = ([int(v) for v in np.reshape(t, -1)] for t in (b, e, s))
    n = len(begin)
    if not n == len(end) == len(strides):
        raise invalid(node, "Expected begin, end, and strides to be 1D equal size tensors, but got shapes "
                            f"[{len(begin)}], [{len(end)}], and [{len(strides)}] instead.")

    def fail(msg):
        return invalid(node, msg)

    if not shape and any(not (masks["new_axis_mask"] >> i) & 1 and not (masks["ellipsis_mask"] >> i) & 1
                         for i in range(n)):
        raise fail("Attempting to slice scalar input.")
    idx = []
    for entry in _dense_spec(len(shape), begin, end, strides, masks, fail):
        if entry[0] == "new":
            idx.append(None)
        elif entry[0] == "shrink":
            i, d = entry[1], shape[entry[2]]
            if not -d <= i < d:
                raise fail(f"slice index {i} of dimension {entry[2]} out of bounds.")
            idx.append(i)
        else:
            idx.append(_builtin_slice(entry[1], entry[2], entry[3]))
    return tuple(idx)


def _masks_of(node) -> dict:
    return {k: int(node.attr.get(k, 0)) for k in _MASKS}


def _strided_slice_kernel(node, ctx):
    masks = _masks_of(node)
    seen: dict = {}   # (shape, begin, end, strides) -> index: the same slice is planned once

    def run(x, b, e, s):
        x = array_module(x).asarray(x)
        key = (x.shape, np.asarray(b).tobytes(), np.asarray(e).tobytes(), np.asarray(s).tobytes())
        idx = seen.get(key)
        if idx is None:
            idx = _strided_index(node, masks, x.shape, b, e, s)
            if len(seen) < 64:
                seen[key] = idx
        return x[idx]
    return run


def _strided_slice_grad(op, grad):
    x, b, e, s = op.inputs
    attrs = {k: op.get_attr(k) for k in _MASKS}
    dx = make_op("StridedSliceGrad", [shape(x, out_type=b.dtype), b, e, s, dense(grad)], attrs).outputs[0]
    return [dx, None, None, None]


register("StridedSlice", _strided_slice_infer, _strided_slice_kernel, grad=_strided_slice_grad)
register_gpu("StridedSlice", host_inputs=(1, 2, 3))


def _strided_slice_grad_infer(op):
    out = constant_value_as_shape(op.inputs[0])
    check_output_size(op, out)
    return [(op.inputs[4].dtype, out)]


def _strided_slice_grad_kernel(node, ctx):
    masks = _masks_of(node)

    def run(shp, b, e, s, dy):
        shp = tuple(int(v) for v in np.reshape(shp, -1))
        xp = array_module(dy)
        dy = xp.asarray(dy)
        check_output_size(node, shp)
        out = xp.zeros(shp, dtype=dy.dtype)
        out[_strided_index(node, masks, shp, b, e, s)] = dy
        return out
    return run


def _strided_slice_grad_grad(op, grad):
    _, b, e, s, _ = op.inputs
    attrs = {k: op.get_attr(k) for k in _MASKS}
    return [None, None, None, None, strided_slice(dense(grad), b, e, s, **attrs)]


register("StridedSliceGrad", _strided_slice_grad_infer, _strided_slice_grad_kernel, grad=_strided_slice_grad_grad)
register_gpu("StridedSliceGrad", host_inputs=(0, 1, 2, 3))


# -- Tensor.__getitem__ ------------------------------------------------------------------------
def _check_index(idx) -> None:
    if isinstance(idx, (numbers.Integral, np.integer)):
        return
    if isinstance(idx, Tensor) and idx.dtype in (dtypes.int32, dtypes.int64) and idx.shape.ndims in (None, 0):
        return
    raise TypeError("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar "
                    f"tf.int32/tf.int64 tensors are valid indices, got {idx!r}")


def _slice_helper(tensor, slice_spec, var=None) -> Tensor:
    """Tensor.__getitem__: numpy basic indexing through one StridedSlice named 'strided_slice'."""
    if not isinstance(slice_spec, (list, tuple)):
        slice_spec = [slice_spec]
    begin, end, strides = [], [], []
    masks = dict.fromkeys(_MASKS, 0)
    for i, s in enumerate(slice_spec):
        if isinstance(s, _builtin_slice):
            for part in (s.start, s.stop, s.step):
                if part is not None:
                    _check_index(part)
            begin.append(0 if s.start is None else s.start)
            end.append(0 if s.stop is None else s.stop)
            strides.append(1 if s.step is None else s.step)
            if s.start is None:
                masks["begin_mask"] |= 1 << i
            if s.stop is None:
                masks["end_mask"] |= 1 << i
        elif s is Ellipsis:
            begin.append(0), end.append(0), strides.append(1)
            masks["ellipsis_mask"] |= 1 << i
        elif s is None:
            begin.append(0), end.append(0), strides.append(1)
            masks["new_axis_mask"] |= 1 << i
        else:
            _check_index(s)
            begin.append(s)
            end.append(s + 1)
            strides.append(1)
            masks["shrink_axis_mask"] |= 1 << i
    with name_scope(None, "strided_slice", [tensor]) as scope:
        if begin:
            packed = [stack(v) for v in (begin, end, strides)]
        else:
            packed = [constant(np.zeros(0, np.int32)) for _ in range(3)]
        return strided_slice(tensor, *packed, **masks, var=var, name=scope)


Tensor._override_operator("__getitem__", _slice_helper)
