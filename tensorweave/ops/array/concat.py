"""Array ops that join or split tensors: concat, stack/unstack, split. Lists holding tensors
become tensors through tf.stack (the conversion function registered here)."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor, register_tensor_conversion_function
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import constant, identity, index_tensor
from tensorweave.ops.array.fill import zeros_like
from tensorweave.ops.helpers import array_module, check_axis, dense, invalid, make_op, static_int, static_ints
from tensorweave.ops.registry import ALL, register, register_gpu


def _convert_list(values, op_name: str) -> list:
    """Converts a list of tensors/Python values to tensors of one dtype (TypeError otherwise)."""
    values = list(values)
    dtype = next((v.dtype for v in values if isinstance(v, Tensor)), None)
    out = [convert_to_tensor(v, dtype=dtype) if not isinstance(v, Tensor) else v for v in values]
    kinds = {t.dtype for t in out}
    if len(kinds) > 1:
        raise TypeError(f"Tensors in list passed to 'values' of '{op_name}' Op have types "
                        f"[{', '.join(t.dtype.name for t in out)}] that don't all match.")
    return out


def _merge_shapes(shapes: list, op_name: str, skip_axis=None) -> TensorShape:
    """Merges shapes that must agree (except on `skip_axis`); ValueError naming both."""
    merged = unknown_shape()
    for i, s in enumerate(shapes):
        if s.ndims is None:
            continue
        if merged.ndims is not None and merged.ndims != s.ndims:
            raise ValueError(f"{op_name}: shapes must be equal rank, but are {merged.ndims} and {s.ndims} "
                             f"(shapes {merged} and {s})")
        dims = list(s.as_tuple_or_none())
        if skip_axis is not None:
            dims[skip_axis] = None
        if merged.ndims is None:
            merged = TensorShape(dims)
            continue
        m = []
        for k, (a, b) in enumerate(zip(merged.as_tuple_or_none(), dims)):
            if a is not None and b is not None and a != b:
                raise ValueError(f"{op_name}: dimension {k} in both shapes must be equal, but are {a} and {b}. "
                                 f"Shapes are {shapes[0]} and {s}.")
            m.append(a if a is not None else b)
        merged = TensorShape(m)
    return merged


# -- ConcatV2 ----------------------------------------------------------------------------------
@tf_export("concat")
def concat(values, axis, name: str = "concat") -> Tensor:
    """tf.concat(values, axis, name='concat'): joins tensors along `axis`."""
    if not isinstance(values, (list, tuple)):
        values = [values]
    if len(values) == 1:
        with name_scope(name) as scope:
            a = convert_to_tensor(axis, dtype=dtypes.int32, name="concat_dim")
            if a.shape.ndims not in (None, 0):
                raise ValueError(f"concat: axis must be a scalar, got shape {a.shape}")
            return identity(values[0], name=scope)
    values = _convert_list(values, "ConcatV2")
    with name_scope(name) as scope:
        axis_t = axis if isinstance(axis, Tensor) else constant(int(axis), dtype=dtypes.int32, name="axis")
        return make_op("ConcatV2", values + [axis_t], {"N": len(values)}, name=scope).outputs[0]


def _concat_infer(op):
    values, a = op.inputs[:-1], op.inputs[-1]
    dtype = values[0].dtype
    axis = static_int(a)
    nd = next((v.shape.ndims for v in values if v.shape.ndims is not None), None)
    if axis is None or nd is None:
        return [(dtype, unknown_shape(nd))]
    if nd == 0:
        raise ValueError("ConcatV2: can't concatenate scalars (use tf.stack instead)")
    ax = check_axis(axis, nd, "ConcatV2")
    merged = _merge_shapes([v.shape for v in values], "ConcatV2", skip_axis=ax)
    total = 0
    for v in values:
        d = v.shape[ax].value if v.shape.ndims is not None else None
        total = None if total is None or d is None else total + d
    dims = list(merged.as_tuple_or_none())
    dims[ax] = total
    return [(dtype, TensorShape(dims))]


def _concat_kernel(node, ctx):
    def run(*args):
        xs, axis = args[:-1], int(args[-1])
        nd = len(np.shape(xs[0]))
        if not -nd <= axis < nd:
            raise invalid(node, f"ConcatOp : Expected concatenating dimensions in the range [{-nd}, {nd}), "
                                f"but got {axis}")
        try:
            return array_module(*xs).concatenate(xs, axis=axis)
        except ValueError:
            shapes = " vs. ".join(str(list(np.shape(x))) for x in xs)
            raise invalid(node, f"ConcatOp : Dimensions of inputs should match: {shapes}") from None
    return run


def _concat_offset_kernel(node, ctx):
    def run(axis, *shapes):
        axis = int(axis) % len(shapes[0])
        offsets, at = [], 0
        for s in shapes:
            off = np.zeros_like(s)
            off[axis] = at
            at += int(s[axis])
            offsets.append(off)
        return tuple(offsets)
    return run


register("ConcatOffset", lambda op: [(t.dtype, t.shape) for t in op.inputs[1:]], _concat_offset_kernel,
         grad=None)
register_gpu("ConcatOffset", host_inputs=ALL, host_outputs=ALL)


register("ConcatV2", _concat_infer, _concat_kernel)   # gradient: array_grad.py
register_gpu("ConcatV2", host_inputs=(-1,))   # the axis


def _has_tensor(values) -> bool:
    if isinstance(values, (list, tuple)):
        return any(_has_tensor(v) for v in values)
    return isinstance(values, Tensor) or hasattr(values, "_as_graph_element")


# -- Pack, Unpack ------------------------------------------------------------------------------
@tf_export("parallel_stack", "stack")
def stack(values, axis: int = 0, name: str = "stack") -> Tensor:
    """tf.stack(values, axis=0, name='stack'): packs rank-R tensors into one rank-(R+1) tensor.
    A list of Python constants becomes a single constant, as in TF."""
    if axis == 0 and not _has_tensor(values):
        try:
            return convert_to_tensor(values, name=name)
        except (TypeError, ValueError):
            pass
    values = _convert_list(values, "Pack")
    nd = next((v.shape.ndims for v in values if v.shape.ndims is not None), None)
    if nd is not None and not -nd - 1 <= axis < nd + 1:
        raise ValueError(f"Pack: axis = {axis} not in [{-nd - 1}, {nd + 1})")
    return make_op("Pack", values, {"N": len(values), "axis": int(axis)}, name=name).outputs[0]


parallel_stack = stack


def _autopacking_conversion(value, dtype=None, name=None):
    """A list or tuple holding tensors becomes their tf.stack (TF's autopacking)."""
    if not _has_tensor(value):
        return NotImplemented
    return stack([convert_to_tensor(v, dtype=dtype) if _has_tensor(v) else v for v in value],
                 name=name or "packed")


register_tensor_conversion_function((list, tuple), _autopacking_conversion, priority=99)


def _pack_infer(op):
    values = op.inputs
    axis = op.get_attr("axis")
    merged = _merge_shapes([v.shape for v in values], "Pack")
    if merged.ndims is None:
        return [(values[0].dtype, unknown_shape())]
    ax = check_axis(axis, merged.ndims, "Pack", extra=1)
    dims = list(merged.as_tuple_or_none())
    dims.insert(ax, len(values))
    return [(values[0].dtype, TensorShape(dims))]


def _pack_kernel(node, ctx):
    axis = node.attr["axis"]

    def run(*xs):
        try:
            return array_module(*xs).stack(xs, axis=axis)
        except ValueError:
            raise invalid(node, "Shapes of all inputs must match: " +
                          " vs. ".join(str(list(np.shape(x))) for x in xs)) from None
    return run


register("Pack", _pack_infer, _pack_kernel,
         grad=lambda op, grad: unstack(dense(grad), num=op.get_attr("N"), axis=op.get_attr("axis")))
register_gpu("Pack")


@tf_export("unstack")
def unstack(value, num=None, axis: int = 0, name: str = "unstack") -> list:
    """tf.unstack(value, num=None, axis=0, name='unstack'): splits `axis` into a list of tensors."""
    value = convert_to_tensor(value)
    nd = value.shape.ndims
    if nd is not None:
        if not -nd <= axis < nd:
            raise ValueError(f"Unpack: axis = {axis} not in [{-nd}, {nd})")
        if num is None:
            num = value.shape[axis].value
    if num is None:
        raise ValueError(f"Unpack: cannot infer num from shape {value.shape}")
    return make_op("Unpack", [value], {"num": int(num), "axis": int(axis)}, name=name).outputs


def _unpack_infer(op):
    x = op.inputs[0]
    num, axis = op.get_attr("num"), op.get_attr("axis")
    if x.shape.ndims is None:
        return [(x.dtype, unknown_shape())] * num
    ax = check_axis(axis, x.shape.ndims, "Unpack")
    dims = list(x.shape.as_tuple_or_none())
    if dims[ax] is not None and dims[ax] != num:
        raise ValueError(f"Unpack: dimension must be {num} but is {dims[ax]}")
    del dims[ax]
    return [(x.dtype, TensorShape(dims))] * num


def _unpack_kernel(node, ctx):
    num, axis = node.attr["num"], node.attr["axis"]

    def run(x):
        if np.shape(x)[axis] != num:
            raise invalid(node, f"Input shape axis {axis} must equal {num}, got shape {list(np.shape(x))}")
        return tuple(np.take(x, i, axis=axis) for i in range(num))   # (CuPy's take, given CuPy arrays)
    return run


def _unpack_grad(op, *grads):
    grads = [zeros_like(o) if g is None else dense(g) for g, o in zip(grads, op.outputs)]
    return [stack(grads, axis=op.get_attr("axis"))]


register("Unpack", _unpack_infer, _unpack_kernel, grad=_unpack_grad)
register_gpu("Unpack")


# -- Split, SplitV -----------------------------------------------------------------------------
@tf_export("split")
def split(value, num_or_size_splits, axis=0, num=None, name: str = "split") -> list:
    """tf.split(value, num_or_size_splits, axis=0, num=None, name='split'): an int splits into
    that many equal parts; a list of sizes (one may be -1) splits into pieces of those sizes."""
    value = convert_to_tensor(value)
    if isinstance(num_or_size_splits, (int, np.integer)) and not isinstance(num_or_size_splits, bool):
        n = int(num_or_size_splits)
        with name_scope(name) as scope:
            axis_t = index_tensor(axis, name="split_dim")
            return make_op("Split", [axis_t, value], {"num_split": n}, name=scope).outputs
    sizes = index_tensor(num_or_size_splits)
    if num is None:
        sh = sizes.shape
        num = sh[0].value if sh.ndims == 1 else None
        if num is None:
            raise ValueError(f"SplitV: cannot infer num from shape {sh}")
    with name_scope(name) as scope:
        axis_t = index_tensor(axis, name="split_dim")
        return make_op("SplitV", [value, sizes, axis_t], {"num_split": int(num)}, name=scope).outputs


def _split_infer(op):
    a, x = op.inputs
    n = op.get_attr("num_split")
    if n <= 0:
        raise ValueError(f"Split: num_split must be positive, got {n}")
    axis = static_int(a)
    if axis is None or x.shape.ndims is None:
        return [(x.dtype, unknown_shape(x.shape.ndims))] * n
    ax = check_axis(axis, x.shape.ndims, "Split")
    dims = list(x.shape.as_tuple_or_none())
    if dims[ax] is not None:
        if dims[ax] % n:
            raise ValueError(f"Dimension size must be evenly divisible by {n} but is {dims[ax]}")
        dims[ax] //= n
    return [(x.dtype, TensorShape(dims))] * n


def _split_kernel(node, ctx):
    n = node.attr["num_split"]

    def run(a, x):
        axis, nd = int(a), len(np.shape(x))
        if not -nd <= axis < nd:
            raise invalid(node, f"-input rank(-{nd}) <= split_dim < input rank ({nd}), but got {axis}")
        if np.shape(x)[axis] % n:
            raise invalid(node, f"Number of ways to split should evenly divide the split dimension, but got "
                                f"split_dim {axis} (size = {np.shape(x)[axis]}) and num_split {n}")
        # n slices along the axis (views, as np.split's, without its per-call swapaxes)
        size, index = np.shape(x)[axis] // n, [slice(None)] * nd
        pieces = []
        for i in range(n):
            index[axis] = slice(i * size, (i + 1) * size)
            pieces.append(x[tuple(index)])
        return tuple(pieces)
    return run


def _split_grad(op, *grads):
    grads = [zeros_like(o) if g is None else dense(g) for g, o in zip(grads, op.outputs)]
    return [None, concat(grads, op.inputs[0])]


register("Split", _split_infer, _split_kernel, grad=_split_grad)
register_gpu("Split", host_inputs=(0,))


def _resolve_sizes(sizes: list, dim, exc, node=None) -> list:
    if sum(s == -1 for s in sizes) > 1:
        raise exc("SplitV: only one size_splits value may be -1, got " + str(sizes))
    if dim is None:
        return [None if s == -1 else s for s in sizes]
    known = sum(s for s in sizes if s != -1)
    if -1 in sizes:
        if known > dim:
            raise exc(f"SplitV: the sizes {sizes} add up to more than the dimension size {dim}")
        sizes = [dim - known if s == -1 else s for s in sizes]
    elif known != dim:
        raise exc(f"SplitV: determined shape must either match input shape along split_dim exactly if "
                  f"fully specified, or be less than the size of the input along split_dim if not fully "
                  f"specified. Got: {known} vs {dim}")
    return sizes


def _splitv_infer(op):
    x, s, a = op.inputs
    n = op.get_attr("num_split")
    sizes, axis = static_ints(s), static_int(a)
    if sizes is not None and len(sizes) != n:
        raise ValueError(f"SplitV: length of size_splits should be equal to num_split ({len(sizes)} vs {n})")
    if axis is None or x.shape.ndims is None:
        return [(x.dtype, unknown_shape(x.shape.ndims))] * n
    ax = check_axis(axis, x.shape.ndims, "SplitV")
    dims = list(x.shape.as_tuple_or_none())
    if sizes is None:
        dims[ax] = None
        return [(x.dtype, TensorShape(dims))] * n
    out = []
    for d in _resolve_sizes(sizes, dims[ax], ValueError):
        dd = list(dims)
        dd[ax] = d
        out.append((x.dtype, TensorShape(dd)))
    return out


def _splitv_kernel(node, ctx):
    def run(x, s, a):
        axis, nd = int(a), len(np.shape(x))
        if not -nd <= axis < nd:
            raise invalid(node, f"split_dim {axis} out of range for a tensor of rank {nd}")
        try:
            sizes = _resolve_sizes([int(v) for v in np.reshape(s, -1)], np.shape(x)[axis], ValueError)
        except ValueError as e:
            raise invalid(node, str(e)) from None
        return tuple(array_module(x).split(x, np.cumsum(sizes)[:-1].tolist(), axis=axis))
    return run


def _splitv_grad(op, *grads):
    grads = [zeros_like(o) if g is None else dense(g) for g, o in zip(grads, op.outputs)]
    return [concat(grads, op.inputs[2]), None, None]


register("SplitV", _splitv_infer, _splitv_kernel, grad=_splitv_grad)
register_gpu("SplitV", host_inputs=(1, 2))
