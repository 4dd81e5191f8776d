"""Image geometry: flips (and random flips), rot90, transpose_image, crop_to_bounding_box,
pad_to_bounding_box, central_crop, resize_image_with_crop_or_pad. Images are 3-D
[height, width, channels] or 4-D [batch, height, width, channels]; TF's composites of reverse,
transpose, slice and pad, with TF's static argument checks."""
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
from tensorweave.ops.array.core import shape as shape_of, transpose
from tensorweave.ops.array.pad import pad, reverse
from tensorweave.ops.array.slicing import slice as slice_
from tensorweave.ops.helpers import TFNodes, invalid, make_op
from tensorweave.ops.image.color import check_image
from tensorweave.ops.math.binary import maximum, minimum
from tensorweave.ops.math.cast import cast
from tensorweave.ops.random import op_generator, seed_attrs
from tensorweave.ops.registry import register


def _image(image, name: str = "image") -> Tensor:
    image = check_image(convert_to_tensor(image, name=name))
    if image.shape.ndims is not None and image.shape.ndims > 4:
        raise ValueError(f"'{name}' (shape {image.shape}) must have either 3 or 4 dimensions.")
    return image


def _batched(image: Tensor) -> bool:
    return image.shape.ndims == 4


# -- flips, rotations ----------------------------------------------------------------------------
@tf_export("image.flip_left_right")
def flip_left_right(image):
    """tf.image.flip_left_right(image): reverses the width dimension."""
    with name_scope(None, "flip_left_right", [image]):
        image = _image(image)
        return reverse(image, [2 if _batched(image) else 1])


@tf_export("image.flip_up_down")
def flip_up_down(image):
    """tf.image.flip_up_down(image): reverses the height dimension."""
    with name_scope(None, "flip_up_down", [image]):
        image = _image(image)
        return reverse(image, [1 if _batched(image) else 0])


def _random_flip_kernel(node, ctx):
    rng = op_generator(node, ctx)
    axis = node.attr["axis"]

    def run(image):
        x = np.asarray(image)
        if x.ndim == 3:
            flip = rng.random(dtype=np.float32) < 0.5
            return (np.flip(x, axis) if flip else x), np.array([flip])
        if x.ndim != 4:
            raise invalid(node, f"image must be 3-D or 4-D, got shape {list(x.shape)}")
        flips = np.rint(rng.random(len(x), dtype=np.float32)).astype(bool)
        out = x.copy()
        out[flips] = np.flip(x[flips], axis + 1)
        return out, flips
    return run


def _random_flip_grad(op, grad, _):
    axis = op.get_attr("axis")
    flips = op.outputs[1]
    if op.inputs[0].shape.ndims == 3:
        cond = make_op("Reshape", [flips, convert_to_tensor([], dtype=dtypes.int32)]).outputs[0]
        return [make_op("Select", [cond, reverse(grad, [axis]), grad]).outputs[0]]
    return [make_op("Select", [flips, reverse(grad, [axis + 1]), grad]).outputs[0]]


def _random_flip_tf(op) -> list:
    """TF1's random_flip_*: an image reversed where a uniform draw is below 1/2 (a batch: one
    rounded draw per image), with the flips as a second output (IdentityN)."""
    ndims = op.inputs[0].shape.ndims
    if ndims not in (3, 4):
        raise ValueError(f"Operation '{op.name}' (a random flip) has an image of unknown rank: TensorFlow's form "
                         "of it needs a 3-D or 4-D image")
    b, dtype, f32, int32 = TFNodes(op), op.inputs[0].dtype, dtypes.float32, dtypes.int32
    seeds = {"seed": op.get_attr("seed"), "seed2": op.get_attr("seed2")}
    axis = op.get_attr("axis") + (ndims == 4)
    if ndims == 3:
        draw = b.node("draw", "RandomUniform", [b.const("draw_shape", [], int32)], dtype=f32, T=int32, **seeds)
        flip = b.node("flip", "Less", [draw, b.const("half", 0.5, f32)], T=f32)
        flips = b.node("flips", "Reshape", [flip, b.const("flips_shape", [1], int32)], T=dtypes.bool, Tshape=int32)
    else:
        shape = b.node("shape", "Shape", [b.input(0)], T=dtype, out_type=int32)
        first = [b.const(name, [value], int32) for name, value in (("begin", 0), ("end", 1), ("strides", 1))]
        batch = b.node("batch", "StridedSlice", [shape] + first, T=int32, Index=int32, shrink_axis_mask=1)
        draw_shape = b.node("draw_shape", "Pack", [batch], N=1, T=int32, axis=0)
        draw = b.node("draw", "RandomUniform", [draw_shape], dtype=f32, T=int32, **seeds)
        flip = flips = b.node("flips", "Cast", [b.node("rounded", "Round", [draw], T=f32)], SrcT=f32, DstT=dtypes.bool)
    reversed_ = b.node("reversed", "ReverseV2", [b.input(0), b.const("axis", [axis], int32)], T=dtype, Tidx=int32)
    chosen = b.node("chosen", "Select", [flip, reversed_, b.input(0)], T=dtype)
    b.node(None, "IdentityN", [chosen, flips], T=[dtype, dtypes.bool])
    return b.nodes


register("RandomFlip", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape), (dtypes.bool, TensorShape([None]))],
         _random_flip_kernel, grad=_random_flip_grad, stateful=True, tf_lowering=_random_flip_tf)


def _random_flip(image, axis: int, seed, scope: str):
    with name_scope(None, scope, [image]) as name:
        image = _image(image)
        return make_op("RandomFlip", [image], dict(seed_attrs(seed), axis=axis), name=name).outputs[0]


@tf_export("image.random_flip_left_right")
def random_flip_left_right(image, seed=None):
    """tf.image.random_flip_left_right(image, seed=None): flips the width dimension with
    probability 1/2 (each image of a 4-D batch on its own draw)."""
    return _random_flip(image, 1, seed, "random_flip_left_right")


@tf_export("image.random_flip_up_down")
def random_flip_up_down(image, seed=None):
    """tf.image.random_flip_up_down(image, seed=None): flips the height dimension with
    probability 1/2 (each image of a 4-D batch on its own draw)."""
    return _random_flip(image, 0, seed, "random_flip_up_down")


@tf_export("image.rot90")
def rot90(image, k=1, name=None):
    """tf.image.rot90(image, k=1, name=None): rotates counter-clockwise by k * 90 degrees."""
    with name_scope(name, "rot90", [image, k]):
        image = _image(image)
        kv = constant_value(convert_to_tensor(k))
        if kv is None:
            raise ValueError("rot90 needs k known when the graph is built")
        k = int(kv) % 4
        h, w = (1, 2) if _batched(image) else (0, 1)
        perm = list(range(image.shape.ndims or 3))
        perm[h], perm[w] = w, h
        if k == 0:
            return image
        if k == 1:
            return transpose(reverse(image, [w]), perm)
        if k == 2:
            return reverse(image, [h, w])
        return reverse(transpose(image, perm), [w])


@tf_export("image.transpose", "image.transpose_image")
def transpose_image(image):
    """tf.image.transpose_image(image): swaps height and width."""
    with name_scope(None, "transpose_image", [image]):
        image = _image(image)
        return transpose(image, [0, 2, 1, 3] if _batched(image) else [1, 0, 2])


# -- crops and pads ------------------------------------------------------------------------------
def _static(v):
    """A Python int when `v` is known at build time."""
    if isinstance(v, (int, np.integer)):
        return int(v)
    c = constant_value(convert_to_tensor(v))
    return None if c is None else int(c)


def _dims(image: Tensor) -> tuple:
    """(height, width) of an image: Python ints when static, else int32 tensors."""
    h, w = (1, 2) if _batched(image) else (0, 1)
    dims = image.shape.as_list() if image.shape.ndims is not None else [None] * 3
    dyn = None
    out = []
    for i in (h, w):
        if dims[i] is not None:
            out.append(dims[i])
        else:
            dyn = shape_of(image) if dyn is None else dyn
            out.append(dyn[i])
    return tuple(out)


def _check(cond, msg: str) -> None:
    if cond is False:
        raise ValueError(msg)


def _ge(a, b):
    return None if a is None or b is None else a >= b


@tf_export("image.crop_to_bounding_box")
def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """tf.image.crop_to_bounding_box(image, offset_height, offset_width, target_height,
    target_width): the box whose top-left corner is at the offsets."""
    with name_scope(None, "crop_to_bounding_box", [image]):
        image = _image(image)
        height, width = _dims(image)
        oh, ow, th, tw = (_static(v) for v in (offset_height, offset_width, target_height, target_width))
        _check(_ge(ow, 0), "offset_width must be >= 0.")
        _check(_ge(oh, 0), "offset_height must be >= 0.")
        _check(_ge(tw, 1), "target_width must be > 0.")
        _check(_ge(th, 1), "target_height must be > 0.")
        _check(_ge(width, None if ow is None or tw is None else tw + ow) if isinstance(width, int) else None,
               "width must be >= target + offset.")
        _check(_ge(height, None if oh is None or th is None else th + oh) if isinstance(height, int) else None,
               "height must be >= target + offset.")
        begin = [offset_height, offset_width, 0]
        size = [target_height, target_width, -1]
        if _batched(image):
            begin, size = [0] + begin, [-1] + size
        return slice_(image, stack([cast(convert_to_tensor(b), dtypes.int32) for b in begin]),
                      stack([cast(convert_to_tensor(s), dtypes.int32) for s in size]))


@tf_export("image.pad_to_bounding_box")
def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """tf.image.pad_to_bounding_box(image, offset_height, offset_width, target_height,
    target_width): zero-pads to the target size with the image's top-left at the offsets."""
    with name_scope(None, "pad_to_bounding_box", [image]):
        image = _image(image)
        height, width = _dims(image)
        oh, ow, th, tw = (_static(v) for v in (offset_height, offset_width, target_height, target_width))
        after_w = target_width - offset_width - width
        after_h = target_height - offset_height - height
        _check(_ge(oh, 0), "offset_height must be >= 0")
        _check(_ge(ow, 0), "offset_width must be >= 0")
        if isinstance(after_w, int):
            _check(after_w >= 0, "width must be <= target - offset")
        if isinstance(after_h, int):
            _check(after_h >= 0, "height must be <= target - offset")
        rows = [[offset_height, after_h], [offset_width, after_w], [0, 0]]
        if _batched(image):
            rows = [[0, 0]] + rows
        paddings = stack([stack([cast(convert_to_tensor(v), dtypes.int32) for v in r]) for r in rows])
        return pad(image, paddings)


@tf_export("image.central_crop")
def central_crop(image, central_fraction):
    """tf.image.central_crop(image, central_fraction): the central `central_fraction` of the
    height and width (fraction in (0, 1])."""
    if central_fraction <= 0.0 or central_fraction > 1.0:
        raise ValueError("central_fraction must be within (0, 1]")
    with name_scope(None, "central_crop", [image]):
        image = _image(image)
        if central_fraction == 1.0:
            return image
        height, width = _dims(image)
        if isinstance(height, int) and isinstance(width, int):
            top = int((height - height * central_fraction) / 2)
            left = int((width - width * central_fraction) / 2)
            return crop_to_bounding_box(image, top, left, height - 2 * top, width - 2 * left)
        hf, wf = cast(height, dtypes.float64), cast(width, dtypes.float64)
        top = cast((hf - hf * central_fraction) / 2, dtypes.int32)
        left = cast((wf - wf * central_fraction) / 2, dtypes.int32)
        return crop_to_bounding_box(image, top, left, height - 2 * top, width - 2 * left)


def _max(a, b):
    return max(a, b) if isinstance(a, int) and isinstance(b, int) else maximum(a, b)


def _min(a, b):
    return min(a, b) if isinstance(a, int) and isinstance(b, int) else minimum(a, b)


@tf_export("image.resize_image_with_crop_or_pad", "image.resize_with_crop_or_pad")
def resize_image_with_crop_or_pad(image, target_height, target_width):
    """tf.image.resize_image_with_crop_or_pad(image, target_height, target_width): crops the
    centre or pads evenly with zeros to exactly the target size."""
    with name_scope(None, "resize_image_with_crop_or_pad", [image]):
        image = _image(image)
        th, tw = _static(target_height), _static(target_width)
        if th is not None and th <= 0:
            raise ValueError("target_height must be > 0.")
        if tw is not None and tw <= 0:
            raise ValueError("target_width must be > 0.")
        target_height = target_height if th is None else th
        target_width = target_width if tw is None else tw
        height, width = _dims(image)
        width_diff, height_diff = target_width - width, target_height - height
        crop_w, pad_w = _max(-width_diff // 2, 0), _max(width_diff // 2, 0)
        crop_h, pad_h = _max(-height_diff // 2, 0), _max(height_diff // 2, 0)
        cropped = crop_to_bounding_box(image, crop_h, crop_w, _min(target_height, height), _min(target_width, width))
        return pad_to_bounding_box(cropped, pad_h, pad_w, target_height, target_width)
