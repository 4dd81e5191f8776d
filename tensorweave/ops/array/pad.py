"""Array ops that repeat, pad, reverse or broadcast tensors: tile, pad, reverse, broadcast_to,
meshgrid."""
from __future__ import annotations

import numpy as np

from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape, as_shape, broadcast_shapes, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value, constant_value_as_shape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import stack
from tensorweave.ops.array.core import index_tensor, reshape, size
from tensorweave.ops.helpers import array_module, check_output_size, dense, invalid, make_op, static_ints
from tensorweave.ops.registry import register, register_gpu


# -- Tile --------------------------------------------------------------------------------------
@tf_export("manip.tile", "tile")
def tile(input, multiples, name=None) -> Tensor:
    """tf.tile(input, multiples, name=None): repeats `input` multiples[i] times along dim i."""
    input = convert_to_tensor(input)
    return make_op("Tile", [input, index_tensor(multiples)], name=name or "Tile").outputs[0]


def _tile_infer(op):
    x, m = op.inputs
    mult = static_ints(m)
    nd = x.shape.ndims
    if m.shape.ndims not in (None, 1):
        raise ValueError(f"Tile: multiples must be 1-D, got shape {m.shape}")
    n = m.shape[0].value if m.shape.ndims == 1 else None
    if nd is not None and n is not None and n != nd:
        raise ValueError(f"Tile: shape must be rank {nd} but multiples has length {n}")
    if nd is None:
        return [(x.dtype, unknown_shape(n))]
    if mult is None:
        return [(x.dtype, unknown_shape(nd))]
    if any(k < 0 for k in mult):
        raise ValueError(f"Tile: expected multiples >= 0, got {mult}")
    out = [None if d is None else d * k for d, k in zip(x.shape.as_tuple_or_none(), mult)]
    check_output_size(op, out)
    return [(x.dtype, TensorShape(out))]


def _tile_kernel(node, ctx):
    def run(x, m):
        m, xp = [int(k) for k in np.reshape(m, -1)], array_module(x)
        if len(m) != len(np.shape(x)):
            raise invalid(node, f"Expected multiples argument to be a vector of length {len(np.shape(x))} but got "
                                f"length {len(m)}")
        if any(k < 0 for k in m):
            raise invalid(node, f"Expected multiples >= 0, got {m}")
        check_output_size(node, [d * k for d, k in zip(np.shape(x), m)])
        return xp.tile(x, m) if m else xp.asarray(x)
    return run


register("Tile", _tile_infer, _tile_kernel)   # gradient: array_grad.py
register_gpu("Tile", host_inputs=(1,))


# -- Pad, PadV2, MirrorPad ---------------------------------------------------------------------
@tf_export("pad")
def pad(tensor, paddings, mode: str = "CONSTANT", name=None, constant_values=0) -> Tensor:
    """tf.pad(tensor, paddings, mode='CONSTANT', name=None, constant_values=0): paddings is an
    [rank, 2] int tensor; mode is CONSTANT, REFLECT or SYMMETRIC (any case)."""
    tensor = convert_to_tensor(tensor)
    p = index_tensor(paddings)
    mode = mode.upper()
    if mode == "CONSTANT":
        if not isinstance(constant_values, Tensor) and np.all(np.asarray(constant_values) == 0):
            return make_op("Pad", [tensor, p], name=name or "Pad").outputs[0]
        cv = convert_to_tensor(constant_values, dtype=tensor.dtype)
        return make_op("PadV2", [tensor, p, cv], name=name or "PadV2").outputs[0]
    if mode in ("REFLECT", "SYMMETRIC"):
        return make_op("MirrorPad", [tensor, p], {"mode": mode}, name=name or "MirrorPad").outputs[0]
    raise ValueError(f"Unknown padding mode: {mode}")


def _pad_infer(op):
    x, p = op.inputs[0], op.inputs[1]
    nd = x.shape.ndims
    if p.shape.ndims is not None:
        if p.shape.ndims != 2 or p.shape[1].value not in (None, 2):
            raise ValueError(f"{op.type}: paddings must be a matrix with 2 columns, got shape {p.shape}")
        n = p.shape[0].value
        if nd is not None and n is not None and n != nd:
            raise ValueError(f"{op.type}: the first dimension of paddings must be the rank of inputs "
                             f"[{n},2] vs {nd}")
        if nd is None:
            nd = n
    if op.type == "PadV2" and op.inputs[2].shape.ndims not in (None, 0):
        raise ValueError(f"PadV2: constant_values must be a scalar, got shape {op.inputs[2].shape}")
    pv = constant_value(p)
    if pv is None or nd is None or x.shape.ndims is None:
        return [(x.dtype, unknown_shape(nd))]
    pv = np.reshape(pv, (-1, 2))
    dims = x.shape.as_tuple_or_none()
    out = []
    for d, (a, b) in zip(dims, pv.tolist()):
        # MirrorPad's limits (paddings below the dimension size) are checked at run time, as in TF.
        _check_pad(op.type, None, d, a, b, ValueError)
        out.append(None if d is None else d + a + b)
    check_output_size(op, out)
    return [(x.dtype, TensorShape(out))]


def _check_pad(op_type, mode, d, a, b, exc):
    if a < 0 or b < 0:
        raise exc(f"{op_type}: paddings must be non-negative: {a} {b}")
    if mode is not None and d is not None:
        limit = d - 1 if mode == "REFLECT" else d
        if a > limit or b > limit:
            minus_one = " - 1" if mode == "REFLECT" else ""
            raise exc(f"{op_type}: paddings must be no greater than the dimension size{minus_one}"
                      f": {a}, {b} greater than {limit}")


def _pad_kernel(node, ctx):
    mode = node.attr.get("mode") if node.op == "MirrorPad" else None

    def run(x, p, cv=0):
        xp = array_module(x)
        x = xp.asarray(x)
        p = np.reshape(p, (-1, 2)).astype(np.int64)
        if p.shape[0] != x.ndim:
            raise invalid(node, f"The first dimension of paddings must be the rank of inputs "
                                f"[{p.shape[0]},2] vs {x.ndim}")
        for d, (a, b) in zip(x.shape, p.tolist()):
            try:
                _check_pad(node.op, mode, d, a, b, ValueError)
            except ValueError as e:
                raise invalid(node, str(e)) from None
        check_output_size(node, [d + a + b for d, (a, b) in zip(x.shape, p.tolist())])
        if not x.ndim:
            return x
        if mode is None:   # x written into a filled array: np.pad's own bookkeeping costs ~40 us a call
            pairs = p.tolist()
            out = xp.full([d + a + b for d, (a, b) in zip(x.shape, pairs)], np.asarray(cv, dtype=x.dtype)[()],
                          dtype=x.dtype)   # (cv: in host memory)
            out[tuple(slice(a, a + d) for d, (a, _) in zip(x.shape, pairs))] = x
            return out
        return xp.pad(x, p.tolist(), mode=mode.lower())
    return run


register("Pad", _pad_infer, _pad_kernel)     # gradient: array_grad.py
register_gpu("Pad", host_inputs=(1,))
register("PadV2", _pad_infer, _pad_kernel)   # gradient: array_grad.py
register_gpu("PadV2", host_inputs=(1, 2))


def _mirror_pad_grad_kernel(node, ctx):
    offset = 1 if node.attr["mode"] == "REFLECT" else 0

    def run(g, p):
        xp = array_module(g)
        g = xp.asarray(g)
        p = np.reshape(p, (-1, 2)).astype(np.int64)
        for ax, (a, b) in enumerate(p.tolist()):
            g = xp.moveaxis(g, ax, 0)
            n = g.shape[0] - a - b
            core = g[a:a + n].copy()
            if a:
                core[offset:offset + a] += g[:a][::-1]
            if b:
                core[n - offset - b:n - offset] += g[a + n:][::-1]
            g = xp.moveaxis(core, 0, ax)
        return g
    return run


def _mirror_pad_grad_infer(op):
    g, p = op.inputs
    pv = constant_value(p)
    if pv is None or g.shape.ndims is None:
        return [(g.dtype, unknown_shape(g.shape.ndims))]
    pv = np.reshape(pv, (-1, 2))
    return [(g.dtype, TensorShape([None if d is None else d - a - b
                                   for d, (a, b) in zip(g.shape.as_tuple_or_none(), pv.tolist())]))]


register("MirrorPadGrad", _mirror_pad_grad_infer, _mirror_pad_grad_kernel,
         grad=lambda op, grad: [pad(dense(grad), op.inputs[1], mode=op.get_attr("mode")), None])
register_gpu("MirrorPadGrad", host_inputs=(1,))
register("MirrorPad", _pad_infer, _pad_kernel,
         grad=lambda op, grad: [make_op("MirrorPadGrad", [dense(grad), op.inputs[1]],
                                        {"mode": op.get_attr("mode")}).outputs[0], None])
register_gpu("MirrorPad", host_inputs=(1,))


# -- ReverseV2 ---------------------------------------------------------------------------------
@tf_export("manip.reverse", "reverse", "reverse_v2")
def reverse(tensor, axis, name=None) -> Tensor:
    """tf.reverse(tensor, axis, name=None) (TF1's reverse_v2): reverses the given dimensions."""
    tensor = convert_to_tensor(tensor)
    if isinstance(axis, (int, np.integer)):
        axis = [int(axis)]
    return make_op("ReverseV2", [tensor, index_tensor(axis)], name=name or "ReverseV2").outputs[0]


reverse_v2 = reverse


def _reverse_infer(op):
    x, a = op.inputs
    axes = static_ints(a)
    nd = x.shape.ndims
    if axes is not None and nd is not None:
        seen = set()
        for ax in axes:
            if not -nd <= ax < nd:
                raise ValueError(f"ReverseV2: axis {ax} is out of valid range [{-nd}, {nd})")
            if ax % nd in seen:
                raise ValueError(f"ReverseV2: axis {ax % nd} specified more than once")
            seen.add(ax % nd)
    return [(x.dtype, x.shape)]


def _reverse_kernel(node, ctx):
    def run(x, a):
        axes, xp = [int(v) for v in np.reshape(a, -1)], array_module(x)
        nd = len(np.shape(x))
        for ax in axes:
            if not -nd <= ax < nd:
                raise invalid(node, f"'axis'[{ax}] = {ax} is out of valid range [{-nd}, {nd})")
        return xp.flip(x, axis=tuple(axes)) if axes else xp.asarray(x)
    return run


register("ReverseV2", _reverse_infer, _reverse_kernel,
         grad=lambda op, grad: [reverse(dense(grad), op.inputs[1]), None])
register_gpu("ReverseV2", host_inputs=(1,))


# -- ReverseSequence ---------------------------------------------------------------------------
@tf_export("reverse_sequence")
def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None, seq_dim=None,
                     batch_dim=None) -> Tensor:
    """tf.reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None,
    seq_dim=None, batch_dim=None): for each b along batch_axis, reverses the first
    seq_lengths[b] elements along seq_axis (the rest stay in place)."""
    if seq_dim is not None:
        if seq_axis is not None:
            raise ValueError("Cannot specify both 'seq_axis' and 'seq_dim'")
        seq_axis = seq_dim
    if batch_dim is not None:
        if batch_axis is not None:
            raise ValueError("Cannot specify both 'batch_axis' and 'batch_dim'")
        batch_axis = batch_dim
    input = convert_to_tensor(input, name="input")
    seq_lengths = convert_to_tensor(seq_lengths, name="seq_lengths")
    attrs = {"seq_dim": int(seq_axis), "batch_dim": int(batch_axis or 0), "T": input.dtype,
             "Tlen": seq_lengths.dtype}
    return make_op("ReverseSequence", [input, seq_lengths], attrs, name=name or "ReverseSequence").outputs[0]


def _reverse_sequence_infer(op):
    x, lengths = op.inputs
    seq, batch, nd = op.get_attr("seq_dim"), op.get_attr("batch_dim"), x.shape.ndims
    if lengths.shape.ndims not in (None, 1):
        raise ValueError(f"ReverseSequence: seq_lengths must be a vector, got shape {lengths.shape}")
    if nd is not None:
        if not (0 <= seq < nd and 0 <= batch < nd) or seq == batch:
            raise ValueError(f"ReverseSequence: seq_dim {seq} and batch_dim {batch} must be different dimensions "
                             f"of an input of rank {nd}")
        if lengths.shape.ndims == 1 and not lengths.shape[0].is_compatible_with(x.shape[batch]):
            raise ValueError(f"ReverseSequence: seq_lengths has {lengths.shape[0]} entries for a batch dimension "
                             f"of {x.shape[batch]}")
    return [(x.dtype, x.shape)]


def _reverse_sequence_kernel(node, ctx):
    seq, batch = node.attr["seq_dim"], node.attr["batch_dim"]

    def run(x, lengths):
        xp = array_module(x, lengths)
        x = xp.asarray(x)
        lengths = xp.asarray(lengths).reshape(-1)
        if lengths.shape[0] != x.shape[batch]:
            raise invalid(node, f"len(seq_lens) != input.dims({batch}), ({lengths.shape[0]} vs. {x.shape[batch]})")
        if bool((lengths < 0).any()) or bool((lengths > x.shape[seq]).any()):   # (on a GPU: a wait for it)
            raise invalid(node, f"seq_lens must be in [0, {x.shape[seq]}], got {lengths.tolist()}")
        # position t of row b reads t' = L_b - 1 - t when t < L_b, else t itself
        t = xp.arange(x.shape[seq])
        src = xp.where(t[None, :] < lengths[:, None], lengths[:, None] - 1 - t[None, :], t[None, :])   # [batch, seq]
        moved = xp.moveaxis(x, (batch, seq), (0, 1))
        src = xp.broadcast_to(src.reshape(src.shape + (1,) * (moved.ndim - 2)), src.shape + moved.shape[2:])
        out = xp.take_along_axis(moved, src, axis=1)
        return xp.moveaxis(out, (0, 1), (batch, seq))
    return run


register("ReverseSequence", _reverse_sequence_infer, _reverse_sequence_kernel,
         grad=lambda op, grad: [reverse_sequence(dense(grad), op.inputs[1], op.get_attr("seq_dim"),
                                                 op.get_attr("batch_dim")), None])
register_gpu("ReverseSequence")


# -- Roll ----------------------------------------------------------------------------------------
@tf_export("manip.roll", "roll")
def roll(input, shift, axis, name=None) -> Tensor:
    """tf.roll(input, shift, axis, name=None): elements shifted along `axis` by `shift` (both a
    scalar or matching vectors), wrapping around."""
    input = convert_to_tensor(input)
    shift_t, axis_t = index_tensor(shift), index_tensor(axis)
    return make_op("Roll", [input, shift_t, axis_t], {"T": input.dtype, "Tshift": shift_t.dtype,
                                                     "Taxis": axis_t.dtype}, name=name or "Roll").outputs[0]


def _roll_kernel(node, ctx):
    def run(x, shift, axis):
        xp = array_module(x)
        x = xp.asarray(x)
        shift, axis = np.reshape(shift, -1).tolist(), np.reshape(axis, -1).tolist()
        if len(shift) != len(axis):
            raise invalid(node, f"shift and axis must have the same size, got {len(shift)} and {len(axis)}")
        for a in axis:
            if not -x.ndim <= a < x.ndim:
                raise invalid(node, f"axis {a} is out of range for a tensor of rank {x.ndim}")
        return xp.roll(x, shift, axis) if shift else x
    return run


register("Roll", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], _roll_kernel,
         grad=lambda op, grad: [roll(dense(grad), -op.inputs[1], op.inputs[2]), None, None])
register_gpu("Roll", host_inputs=(1, 2))


# -- BroadcastTo -------------------------------------------------------------------------------
@tf_export("broadcast_to")
def broadcast_to(input, shape, name=None) -> Tensor:
    """tf.broadcast_to(input, shape, name=None): broadcasts `input` to `shape` (numpy rules)."""
    input = convert_to_tensor(input)
    return make_op("BroadcastTo", [input, index_tensor(shape)], name=name or "BroadcastTo").outputs[0]


def _broadcast_to_infer(op):
    x, s = op.inputs
    target = constant_value_as_shape(s)
    if target.ndims is None or x.shape.ndims is None:
        return [(x.dtype, target)]
    if x.shape.ndims > target.ndims:
        raise ValueError(f"BroadcastTo: rank of input ({x.shape.ndims}) must be no greater than rank of "
                         f"output shape ({target.ndims}); shapes {x.shape} and {target}")
    dims = list(target.as_tuple_or_none())
    src = x.shape.as_tuple_or_none()
    for i, d in enumerate(src):
        j = target.ndims - len(src) + i
        if d is not None and d != 1 and dims[j] is not None and dims[j] != d:
            raise ValueError(f"BroadcastTo: incompatible shapes {x.shape} and {target}")
    check_output_size(op, dims)
    return [(x.dtype, TensorShape(dims))]


def _broadcast_to_kernel(node, ctx):
    def run(x, s):
        s = np.reshape(s, -1).tolist()   # (host memory: a numpy array)
        if min(s, default=0) >= 0:
            check_output_size(node, s)
        try:
            return array_module(x).broadcast_to(x, tuple(s))
        except ValueError:
            raise invalid(node, f"Incompatible shapes: {list(np.shape(x))} vs. {s}") from None
    return run


register("BroadcastTo", _broadcast_to_infer, _broadcast_to_kernel)   # gradient: array_grad.py
register_gpu("BroadcastTo", host_inputs=(1,))


# -- BroadcastArgs -----------------------------------------------------------------------------
@tf_export("broadcast_dynamic_shape")
def broadcast_dynamic_shape(shape_x, shape_y) -> Tensor:
    """tf.broadcast_dynamic_shape(shape_x, shape_y): the 1-D shape tensor of the broadcast of
    tensors of shapes `shape_x` and `shape_y` (numpy rules); InvalidArgumentError at run time
    when they do not broadcast."""
    x = index_tensor(shape_x, name="shape_x")
    y = index_tensor(shape_y, name="shape_y", dtype=x.dtype)
    if x.dtype != y.dtype:
        raise TypeError(f"BroadcastArgs: shape_x and shape_y must have one dtype, got {x.dtype.name} and "
                        f"{y.dtype.name}")
    return make_op("BroadcastArgs", [x, y], {"T": x.dtype}, name="BroadcastArgs").outputs[0]


def _broadcast_args_infer(op):
    x, y = (s.shape.with_rank(1) if s.shape.ndims is not None else unknown_shape(1) for s in op.inputs)
    n = None if x[0].value is None or y[0].value is None else max(x[0].value, y[0].value)
    return [(op.inputs[0].dtype, TensorShape([n]))]


def _broadcast_args_kernel(node, ctx):
    def run(x, y):
        x, y = np.asarray(x), np.asarray(y)
        try:
            return np.asarray(np.broadcast_shapes(tuple(x.tolist()), tuple(y.tolist())), dtype=x.dtype)
        except ValueError:
            raise invalid(node, f"Incompatible shapes: [{','.join(map(str, x.tolist()))}] vs. "
                                f"[{','.join(map(str, y.tolist()))}]") from None
    return run


register("BroadcastArgs", _broadcast_args_infer, _broadcast_args_kernel, grad=None)
register_gpu("BroadcastArgs", host_inputs=(0, 1), host_outputs=(0,))


@tf_export("broadcast_static_shape")
def broadcast_static_shape(shape_x, shape_y) -> TensorShape:
    """tf.broadcast_static_shape(shape_x, shape_y): the TensorShape of the broadcast of two
    TensorShapes (unknown where either is); ValueError when they cannot broadcast."""
    shape_x, shape_y = as_shape(shape_x), as_shape(shape_y)
    try:
        return broadcast_shapes(shape_x, shape_y)
    except ValueError:
        pass
    raise ValueError(f"Incompatible shapes for broadcasting. Two shapes are compatible if for each dimension pair "
                     f"they are either equal or one of them is 1. Received: {shape_x} and {shape_y}.")


# -- meshgrid ----------------------------------------------------------------------------------
@tf_export("meshgrid")
def meshgrid(*args, **kwargs) -> list:
    """tf.meshgrid(*args, indexing='xy', name='meshgrid'): N-D coordinate grids from 1-D
    tensors ('xy' swaps the first two output dimensions, as numpy)."""
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", "meshgrid")
    if kwargs:
        raise TypeError(f"'{list(kwargs)[0]}' is an invalid keyword argument for this function")
    if indexing not in ("xy", "ij"):
        raise ValueError("indexing parameter must be either 'xy' or 'ij'")
    with name_scope(name, "meshgrid", [a for a in args if isinstance(a, Tensor)]):
        xs = [convert_to_tensor(a) for a in args]
        n = len(xs)
        sizes = [size(x) for x in xs]
        if indexing == "xy" and n > 1:
            sizes[0], sizes[1] = sizes[1], sizes[0]
        target = stack(sizes)
        out = []
        for i, x in enumerate(xs):
            pos = i
            if indexing == "xy" and n > 1 and i < 2:
                pos = 1 - i
            s = [1] * n
            s[pos] = -1
            out.append(broadcast_to(reshape(x, s), target))
        return out
