"""Array ops that move spatial blocks between dimensions: space_to_depth / depth_to_space,
space_to_batch_nd / batch_to_space_nd (and TF1's 4-D space_to_batch / batch_to_space), and
extract_image_patches (required_space_to_batch_paddings: math/array_composites.py)."""
from __future__ import annotations

import numpy as np

from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import index_tensor
from tensorweave.ops.helpers import check_output_size, dense, invalid, make_op, static_ints
from tensorweave.ops.registry import register



def _fmt(node_or_op) -> str:
    v = node_or_op.attr.get("data_format", "NHWC") if hasattr(node_or_op, "attr") else \
        node_or_op.get_attr("data_format")
    return v.decode() if isinstance(v, bytes) else v


# -- SpaceToDepth, DepthToSpace --------------------------------------------------------------------
def _block_op(op_type: str, input, block_size, name, data_format) -> Tensor:
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"{op_type}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    if int(block_size) < 2:
        raise ValueError(f"Value for attr 'block_size' of {int(block_size)} must be at least minimum 2")
    x = convert_to_tensor(input, name="input")
    return make_op(op_type, [x], {"block_size": int(block_size), "data_format": data_format, "T": x.dtype},
                   name=name or op_type).outputs[0]


@tf_export("nn.space_to_depth", "space_to_depth")
def space_to_depth(input, block_size, name=None, data_format="NHWC") -> Tensor:
    """tf.space_to_depth(input, block_size, name=None, data_format='NHWC'): each block_size x
    block_size spatial block becomes one position with block_size^2 times the channels."""
    return _block_op("SpaceToDepth", input, block_size, name, data_format)


@tf_export("nn.depth_to_space", "depth_to_space")
def depth_to_space(input, block_size, name=None, data_format="NHWC") -> Tensor:
    """tf.depth_to_space(input, block_size, name=None, data_format='NHWC'): the inverse of
    space_to_depth."""
    return _block_op("DepthToSpace", input, block_size, name, data_format)


def _block_infer(to_depth: bool):
    def infer(op):
        x = op.inputs[0]
        s = x.shape.with_rank(4) if x.shape.ndims is not None else unknown_shape(4)
        bs = op.get_attr("block_size")
        nchw = _fmt(op) == "NCHW"
        n, c, h, w = (s[0], s[1], s[2], s[3]) if nchw else (s[0], s[3], s[1], s[2])
        if to_depth:
            for d in (h, w):
                if d.value is not None and d.value % bs:
                    raise ValueError(f"Dimension size must be evenly divisible by {bs} but is {d.value}")
            h, w, c = h // bs, w // bs, c * (bs * bs)
        else:
            if c.value is not None and c.value % (bs * bs):
                raise ValueError(f"Dimension size must be evenly divisible by {bs * bs} but is {c.value}")
            h, w, c = h * bs, w * bs, c // (bs * bs)
        return [(x.dtype, TensorShape([n, c, h, w] if nchw else [n, h, w, c]))]
    return infer


def _block_kernel(to_depth: bool):
    def factory(node, ctx):
        bs = int(node.attr["block_size"])
        nchw = _fmt(node) == "NCHW"

        def run(x):
            x = np.asarray(x)
            if x.ndim != 4:
                raise invalid(node, f"input rank should be 4 instead of {x.ndim}")
            if nchw:
                x = x.transpose(0, 2, 3, 1)
            n, h, w, c = x.shape
            if to_depth:
                if h % bs or w % bs:
                    raise invalid(node, f"Image width {w} and height {h} should be divisible by block_size: {bs}")
                y = x.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
                y = y.reshape(n, h // bs, w // bs, bs * bs * c)
            else:
                if c % (bs * bs):
                    raise invalid(node, f"Input depth dimension {c} should be divisible by: {bs * bs}")
                y = x.reshape(n, h, w, bs, bs, c // (bs * bs)).transpose(0, 1, 3, 2, 4, 5)
                y = y.reshape(n, h * bs, w * bs, c // (bs * bs))
            return np.ascontiguousarray(y.transpose(0, 3, 1, 2) if nchw else y)
        return run
    return factory


register("SpaceToDepth", _block_infer(True), _block_kernel(True),
         grad=lambda op, g: [depth_to_space(dense(g), op.get_attr("block_size"), data_format=_fmt(op))])
register("DepthToSpace", _block_infer(False), _block_kernel(False),
         grad=lambda op, g: [space_to_depth(dense(g), op.get_attr("block_size"), data_format=_fmt(op))])


# -- SpaceToBatchND, BatchToSpaceND ----------------------------------------------------------------
@tf_export("manip.space_to_batch_nd", "space_to_batch_nd")
def space_to_batch_nd(input, block_shape, paddings, name=None) -> Tensor:
    """tf.space_to_batch_nd(input, block_shape, paddings, name=None): zero-pads the M spatial
    dims (1..M) by `paddings` ([M, 2]), then moves each block_shape block into the batch dim."""
    x = convert_to_tensor(input, name="input")
    block = index_tensor(block_shape, name="block_shape")
    pads = index_tensor(paddings, name="paddings")
    return make_op("SpaceToBatchND", [x, block, pads], {"T": x.dtype, "Tblock_shape": block.dtype,
                                                        "Tpaddings": pads.dtype},
                   name=name or "SpaceToBatchND").outputs[0]


@tf_export("manip.batch_to_space_nd", "batch_to_space_nd")
def batch_to_space_nd(input, block_shape, crops, name=None) -> Tensor:
    """tf.batch_to_space_nd(input, block_shape, crops, name=None): the inverse of
    space_to_batch_nd, cropping `crops` ([M, 2]) from the spatial dims."""
    x = convert_to_tensor(input, name="input")
    block = index_tensor(block_shape, name="block_shape")
    crops_t = index_tensor(crops, name="crops")
    return make_op("BatchToSpaceND", [x, block, crops_t], {"T": x.dtype, "Tblock_shape": block.dtype,
                                                           "Tcrops": crops_t.dtype},
                   name=name or "BatchToSpaceND").outputs[0]


def _space_batch_infer(to_batch: bool):
    def infer(op):
        x, block_t, pads_t = op.inputs
        block, pads = static_ints(block_t), static_ints(pads_t)
        m = block_t.shape[0].value if block_t.shape.ndims == 1 else None
        if x.shape.ndims is None:
            return [(x.dtype, unknown_shape())]
        if block is None or pads is None:
            return [(x.dtype, unknown_shape(x.shape.ndims))]
        m = len(block)
        dims = x.shape.as_tuple_or_none()
        if len(dims) < m + 1:
            raise ValueError(f"input rank should be >= {m + 1} instead of {len(dims)}")
        prod = int(np.prod(block, dtype=np.int64))
        out = list(dims)
        for i in range(m):
            d, lo, hi = dims[i + 1], pads[2 * i], pads[2 * i + 1]
            if d is None:
                continue
            if to_batch:
                if (d + lo + hi) % block[i]:
                    raise ValueError(f"padded_shape[{i}]={d + lo + hi} is not divisible by block_shape[{i}]="
                                     f"{block[i]}")
                out[i + 1] = (d + lo + hi) // block[i]
            else:
                out[i + 1] = d * block[i] - lo - hi
        if dims[0] is not None:
            if not to_batch and dims[0] % prod:
                raise ValueError(f"Input batch dimension ({dims[0]}) is not divisible by product of block sizes "
                                 f"({prod})")
            out[0] = dims[0] * prod if to_batch else dims[0] // prod
        check_output_size(op, out)
        return [(x.dtype, TensorShape(out))]
    return infer


def _space_to_batch_np(node, x: np.ndarray, block: list, pads: np.ndarray) -> np.ndarray:
    m = len(block)
    if x.ndim < m + 1:
        raise invalid(node, f"input rank should be >= {m + 1} instead of {x.ndim}")
    if np.any(pads < 0):
        raise invalid(node, f"paddings must be non-negative, got {pads.tolist()}")
    check_output_size(node, [x.shape[0]] + [d + int(lo) + int(hi) for d, (lo, hi) in zip(x.shape[1:], pads)] +
                      list(x.shape[m + 1:]))   # the padded input: as many elements as the output
    x = np.pad(x, [(0, 0)] + [tuple(p) for p in pads] + [(0, 0)] * (x.ndim - m - 1))
    b = x.shape[0]
    spatial = x.shape[1:m + 1]
    for i in range(m):
        if spatial[i] % block[i]:
            raise invalid(node, f"padded_shape[{i}]={spatial[i]} is not divisible by block_shape[{i}]={block[i]}")
    rest = x.shape[m + 1:]
    shape = [b]
    for i in range(m):
        shape += [spatial[i] // block[i], block[i]]
    y = x.reshape(shape + list(rest))
    perm = [2 * i + 2 for i in range(m)] + [0] + [2 * i + 1 for i in range(m)] + list(range(2 * m + 1, y.ndim))
    y = y.transpose(perm)
    return np.ascontiguousarray(y.reshape([b * int(np.prod(block))] + [s // k for s, k in zip(spatial, block)]
                                          + list(rest)))


def _batch_to_space_np(node, x: np.ndarray, block: list, crops: np.ndarray) -> np.ndarray:
    m = len(block)
    if x.ndim < m + 1:
        raise invalid(node, f"input rank should be >= {m + 1} instead of {x.ndim}")
    prod = int(np.prod(block))
    if x.shape[0] % prod:
        raise invalid(node, f"Input batch dimension ({x.shape[0]}) is not divisible by product of block sizes "
                            f"({prod})")
    b = x.shape[0] // prod
    spatial = x.shape[1:m + 1]
    rest = x.shape[m + 1:]
    y = x.reshape(list(block) + [b] + list(spatial) + list(rest))
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, y.ndim))
    y = y.transpose(perm).reshape([b] + [s * k for s, k in zip(spatial, block)] + list(rest))
    index = [slice(None)]
    for i in range(m):
        lo, hi = int(crops[i][0]), int(crops[i][1])
        if lo < 0 or hi < 0 or lo + hi > y.shape[i + 1]:
            raise invalid(node, f"crops must be non-negative and at most the block-scaled size, got "
                                f"{crops.tolist()}")
        index.append(slice(lo, y.shape[i + 1] - hi))
    return np.ascontiguousarray(y[tuple(index)])


def _space_batch_kernel(to_batch: bool):
    def factory(node, ctx):
        def run(x, block, pads):
            block = [int(b) for b in np.reshape(block, -1)]
            pads = np.asarray(pads).reshape(-1, 2)
            if any(b < 1 for b in block) or len(pads) != len(block):
                raise invalid(node, f"block_shape must be positive with one [2] row of paddings/crops per block "
                                    f"dimension, got {block} and {pads.tolist()}")
            x = np.asarray(x)
            return _space_to_batch_np(node, x, block, pads) if to_batch else _batch_to_space_np(node, x, block, pads)
        return run
    return factory


register("SpaceToBatchND", _space_batch_infer(True), _space_batch_kernel(True),
         grad=lambda op, g: [batch_to_space_nd(dense(g), op.inputs[1], op.inputs[2]), None, None])
register("BatchToSpaceND", _space_batch_infer(False), _space_batch_kernel(False),
         grad=lambda op, g: [space_to_batch_nd(dense(g), op.inputs[1], op.inputs[2]), None, None])


@tf_export("nn.space_to_batch", "space_to_batch")
def space_to_batch(input, paddings, block_size=None, name=None, block_shape=None) -> Tensor:
    """tf.space_to_batch(input, paddings, block_size=None, name=None, block_shape=None): the 4-D
    NHWC space_to_batch_nd with a square block (`block_shape` is the TF 1.15 alias)."""
    block_size = block_shape if block_size is None else block_size
    if block_size is None:
        raise ValueError("space_to_batch needs block_size")
    return space_to_batch_nd(input, [int(block_size)] * 2, paddings, name=name or "SpaceToBatchND")


@tf_export("batch_to_space")
def batch_to_space(input, crops, block_size, name=None, block_shape=None) -> Tensor:
    """tf.batch_to_space(input, crops, block_size, name=None, block_shape=None): the 4-D NHWC
    batch_to_space_nd with a square block."""
    block_size = block_shape if block_size is None else block_size
    return batch_to_space_nd(input, [int(block_size)] * 2, crops, name=name or "BatchToSpaceND")


# -- ExtractImagePatches ---------------------------------------------------------------------------
@tf_export("extract_image_patches", "image.extract_image_patches")
def extract_image_patches(images, ksizes=None, strides=None, rates=None, padding=None, name=None,
                          sizes=None) -> Tensor:
    """tf.extract_image_patches(images, ksizes, strides, rates, padding, name=None, sizes=None):
    the ksize_rows x ksize_cols patches of NHWC `images` (spaced by `rates`, taken every
    `strides`), each flattened into the depth dimension: [batch, out_rows, out_cols,
    ksize_rows * ksize_cols * depth]."""
    ksizes = sizes if ksizes is None else ksizes
    padding = padding.decode() if isinstance(padding, bytes) else padding
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"padding must be 'SAME' or 'VALID', got {padding!r}")
    for what, v in (("ksizes", ksizes), ("strides", strides), ("rates", rates)):
        if v is None or len(v) != 4 or v[0] != 1 or v[3] != 1:
            raise ValueError(f"{what} must be a list of 4 ints [1, rows, cols, 1], got {v}")
    x = convert_to_tensor(images, name="images")
    attrs = {"ksizes": [int(v) for v in ksizes], "strides": [int(v) for v in strides],
             "rates": [int(v) for v in rates], "padding": padding, "T": x.dtype}
    return make_op("ExtractImagePatches", [x], attrs, name=name or "ExtractImagePatches").outputs[0]


@tf_export("image.extract_patches")
def extract_patches(images, sizes, strides, rates, padding, name=None) -> Tensor:
    """tf.image.extract_patches(images, sizes, strides, rates, padding, name=None): as
    tf.extract_image_patches, with `sizes` for ksizes."""
    return extract_image_patches(images, sizes, strides, rates, padding, name=name)


def _patch_geometry(size, k: int, s: int, r: int, padding: str) -> tuple:
    """(output size, padding before) along one axis; output None when size is unknown."""
    eff = k + (k - 1) * (r - 1)
    if size is None:
        return None, 0
    if padding == "VALID":
        return max((size - eff + s) // s, 0), 0
    out = -(-size // s)
    return out, max((out - 1) * s + eff - size, 0) // 2


def _patches_infer(op):
    """[batch, out spatial..., prod(ksizes) * depth] for ExtractImagePatches (4-D, with rates)
    and ExtractVolumePatches (5-D, no rates)."""
    x = op.inputs[0]
    k, st = op.get_attr("ksizes"), op.get_attr("strides")
    r = op.get_attr("rates") if op.type == "ExtractImagePatches" else [1] * len(k)
    s = x.shape.with_rank(len(k)) if x.shape.ndims is not None else unknown_shape(len(k))
    pad = op.get_attr("padding")
    spatial = [_patch_geometry(s[a].value, k[a], st[a], r[a], pad)[0] for a in range(1, len(k) - 1)]
    return [(x.dtype, TensorShape([s[0]] + spatial + [s[-1] * int(np.prod(k[1:-1]))]))]


def _patches_kernel(node, ctx):
    k, st = node.attr["ksizes"], node.attr["strides"]
    r = node.attr["rates"] if node.op == "ExtractImagePatches" else [1] * len(k)
    pad = node.attr["padding"]
    pad = pad.decode() if isinstance(pad, bytes) else pad
    n = len(k) - 2   # spatial dimensions

    def run(x):
        x = np.asarray(x)
        if x.ndim != n + 2:
            raise invalid(node, f"input must be {n + 2}-dimensional, got shape {list(x.shape)}")
        outs = []
        g = x
        for a in range(n):   # gather axis a's windows: its dimension becomes [out, k], zero off the input
            size = x.shape[a + 1]
            out, before = _patch_geometry(size, k[a + 1], st[a + 1], r[a + 1], pad)
            pos = np.arange(out)[:, None] * st[a + 1] + np.arange(k[a + 1])[None, :] * r[a + 1] - before
            outs.append(out)
            if size == 0 or g.size == 0:
                g = np.zeros(g.shape[:1 + 2 * a] + pos.shape + g.shape[2 + 2 * a:], x.dtype)
                continue
            g = np.take(g, np.clip(pos, 0, size - 1), axis=1 + 2 * a)
            valid = ((pos >= 0) & (pos < size)).reshape((1,) * (1 + 2 * a) + pos.shape + (1,) * (n - a))
            g = np.where(valid, g, np.zeros((), x.dtype))
        # [b, o1, k1, ..., on, kn, c] -> [b, o1..on, k1..kn, c]
        order = [0] + [1 + 2 * a for a in range(n)] + [2 + 2 * a for a in range(n)] + [2 * n + 1]
        return np.ascontiguousarray(g.transpose(order).reshape([x.shape[0]] + outs + [-1]))
    return run


register("ExtractImagePatches", _patches_infer, _patches_kernel)   # gradient: array_grad.py


@tf_export("extract_volume_patches")
def extract_volume_patches(input, ksizes, strides, padding, name=None) -> Tensor:
    """tf.extract_volume_patches(input, ksizes, strides, padding, name=None): the 3-D extension of
    extract_image_patches: the ksize_planes x ksize_rows x ksize_cols patches of NDHWC `input`,
    taken every `strides`, each flattened into the depth dimension: [batch, out_planes, out_rows,
    out_cols, ksize_planes * ksize_rows * ksize_cols * depth]."""
    padding = padding.decode() if isinstance(padding, bytes) else padding
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"extract_volume_patches: padding must be 'SAME' or 'VALID', got {padding!r}")
    for what, v in (("ksizes", ksizes), ("strides", strides)):
        if v is None or len(v) != 5 or v[0] != 1 or v[4] != 1:
            raise ValueError(f"extract_volume_patches: {what} must be a list of 5 ints [1, planes, rows, cols, 1], "
                             f"got {v}")
    x = convert_to_tensor(input, name="input")
    attrs = {"ksizes": [int(v) for v in ksizes], "strides": [int(v) for v in strides], "padding": padding,
             "T": x.dtype}
    return make_op("ExtractVolumePatches", [x], attrs, name=name or "ExtractVolumePatches").outputs[0]


register("ExtractVolumePatches", _patches_infer, _patches_kernel)   # gradient: array_grad.py
