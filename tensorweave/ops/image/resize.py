"""Resizing: ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic and ResizeArea with TF1's
sampling rules (legacy corners unless align_corners / half_pixel_centers), and
tf.image.resize_images over them.

Every method but nearest is separable: one weight matrix per axis, built from TF's formulas in
float32, and the image is resampled with two matrix products.
"""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import stack
from tensorweave.ops.array.core import expand_dims, shape, squeeze
from tensorweave.ops.helpers import REAL, check_output_size, invalid, make_op, static_ints
from tensorweave.ops.image.color import check_image
from tensorweave.ops.image.geometry import pad_to_bounding_box
from tensorweave.ops.math.binary import maximum, minimum
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.unary import floor, round as round_
from tensorweave.ops.registry import register


_F = np.float32


def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return _F(in_size - 1) / _F(out_size - 1)
    return _F(in_size) / _F(out_size)


def _bilinear_weights(in_size: int, out_size: int, align: bool, half: bool) -> np.ndarray:
    scale = _scale(in_size, out_size, align)
    o = np.arange(out_size, dtype=_F)
    pos = (o + _F(0.5)) * scale - _F(0.5) if half else o * scale
    floor = np.floor(pos)
    lower = np.maximum(floor, 0).astype(np.int64) if half else pos.astype(np.int64)
    upper = np.minimum(np.ceil(pos).astype(np.int64) if half else lower + 1, in_size - 1)
    lerp = (pos - floor).astype(_F)
    w = np.zeros((out_size, in_size), dtype=_F)
    np.add.at(w, (np.arange(out_size), np.minimum(lower, in_size - 1)), _F(1) - lerp)
    np.add.at(w, (np.arange(out_size), upper), lerp)
    return w


def _keys(x: np.ndarray, a: float = -0.75) -> np.ndarray:
    """Keys' cubic convolution kernel (TF1's legacy a = -0.75)."""
    x = np.abs(x)
    return np.where(x <= 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                    np.where(x < 2, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0)).astype(_F)


def _bicubic_weights(in_size: int, out_size: int, align: bool, half: bool) -> np.ndarray:
    scale = _scale(in_size, out_size, align)
    o = np.arange(out_size, dtype=_F)
    pos = (o + _F(0.5)) * scale - _F(0.5) if half else o * scale
    loc = np.floor(pos).astype(np.int64)
    # TF looks the weights up in a 1024-entry table of the kernel
    delta = np.rint((pos - loc) * 1024) / 1024
    w = np.zeros((out_size, in_size), dtype=_F)
    rows = np.arange(out_size)
    for k, dist in ((-1, 1 + delta), (0, delta), (1, 1 - delta), (2, 2 - delta)):
        np.add.at(w, (rows, np.clip(loc + k, 0, in_size - 1)), _keys(dist))
    return w


def _area_weights(in_size: int, out_size: int, align: bool, half: bool) -> np.ndarray:
    scale = _scale(in_size, out_size, align)
    w = np.zeros((out_size, in_size), dtype=_F)
    for y in range(out_size):
        lo, hi = _F(y) * scale, _F(y + 1) * scale
        for i in range(int(np.floor(lo)), int(np.ceil(hi))):
            if i < lo:
                part = scale if i + 1 > hi else _F(i + 1) - lo
            else:
                part = hi - _F(i) if i + 1 > hi else _F(1)
            w[y, min(in_size - 1, max(0, i))] += part
    return w / scale


def _separable_kernel(weights_fn):
    def factory(node, ctx):
        align = bool(node.attr.get("align_corners", False))
        half = bool(node.attr.get("half_pixel_centers", False))

        def run(images, size):
            x = _checked(node, images, size)
            oh, ow = (int(v) for v in np.reshape(size, -1))
            wy = weights_fn(x.shape[1], oh, align, half)
            wx = weights_fn(x.shape[2], ow, align, half)
            x = x.astype(_F, copy=False)
            return np.einsum("yi,bijc,xj->byxc", wy, x, wx, optimize=True).astype(_F, copy=False)
        return run
    return factory


def _checked(node, images, size) -> np.ndarray:
    x = np.asarray(images)
    if x.ndim != 4:
        raise invalid(node, f"input must be 4-dimensional{list(x.shape)}")
    size = np.reshape(size, -1)
    if size.shape != (2,):
        raise invalid(node, f"shape_t must have two elements{list(np.shape(size))}")
    if (size <= 0).any() or 0 in x.shape[1:3]:
        raise invalid(node, f"input and output sizes should be greater than 0, got input {list(x.shape)} and "
                            f"output size {size.tolist()}")
    check_output_size(node, [x.shape[0], int(size[0]), int(size[1]), x.shape[3]])
    return x


def _nearest_kernel(node, ctx):
    align = bool(node.attr.get("align_corners", False))
    half = bool(node.attr.get("half_pixel_centers", False))

    def index(in_size: int, out_size: int) -> np.ndarray:
        return _nearest_index(in_size, out_size, align, half)

    def run(images, size):
        x = _checked(node, images, size)
        oh, ow = (int(v) for v in np.reshape(size, -1))
        return x[:, index(x.shape[1], oh)][:, :, index(x.shape[2], ow)]
    return run


def _resize_infer(float_out: bool):
    def infer(op):
        x = op.inputs[0]
        if x.shape.ndims not in (None, 4):
            raise ValueError(f"Shape must be rank 4 but is rank {x.shape.ndims}")
        size = static_ints(op.inputs[1])
        hw = [None, None] if size is None else size
        shape = TensorShape([x.shape[0].value if x.shape.ndims else None] + hw +
                            [x.shape[3].value if x.shape.ndims else None])
        check_output_size(op, shape)
        return [(dtypes.float32 if float_out else x.dtype, shape)]
    return infer


def _grad_kernel(weights_fn):
    """d(image): the transposed resampling of the output gradient (float32 image of the
    original's shape)."""
    def factory(node, ctx):
        align = bool(node.attr.get("align_corners", False))
        half = bool(node.attr.get("half_pixel_centers", False))

        def run(grads, original):
            g = np.asarray(grads, dtype=_F)
            h, w = np.asarray(original).shape[1:3]
            if weights_fn is None:   # nearest: each output pixel's gradient goes to its source pixel
                out = np.zeros((g.shape[0], h, w, g.shape[3]), dtype=_F)
                iy = _nearest_index(h, g.shape[1], align, half)
                ix = _nearest_index(w, g.shape[2], align, half)
                np.add.at(out, (slice(None), iy[:, None], ix[None, :]), g)
                return out.astype(np.asarray(original).dtype, copy=False)
            wy = weights_fn(h, g.shape[1], align, half)
            wx = weights_fn(w, g.shape[2], align, half)
            out = np.einsum("yi,byxc,xj->bijc", wy, g, wx, optimize=True)
            return out.astype(np.asarray(original).dtype, copy=False)
        return run
    return factory


def _nearest_index(in_size: int, out_size: int, align: bool, half: bool) -> np.ndarray:
    scale = _scale(in_size, out_size, align)
    o = np.arange(out_size, dtype=_F)
    pos = (o + _F(0.5)) * scale if half else o * scale
    idx = np.round(pos) if align else np.floor(pos)
    return np.minimum(idx.astype(np.int64), in_size - 1)


for _op, _fn in (("ResizeBilinear", _bilinear_weights), ("ResizeBicubic", _bicubic_weights),
                 ("ResizeNearestNeighbor", None)):
    register(_op + "Grad", lambda op: [(op.inputs[1].dtype, op.inputs[1].shape)], _grad_kernel(_fn), grad=None)


def _resize_grad(op, grad):
    attrs = {"align_corners": op.get_attr("align_corners"), "half_pixel_centers": op.get_attr("half_pixel_centers")}
    images = op.inputs[0]
    if not images.dtype.is_floating:
        return [None, None]
    return [make_op(op.type + "Grad", [grad, images], attrs).outputs[0], None]


_SIZE = (1, ("size", (dtypes.int32,)))
register("ResizeBilinear", _resize_infer(True), _separable_kernel(_bilinear_weights), grad=_resize_grad,
         dtypes=dict([(0, ("images", REAL)), _SIZE]))
register("ResizeBicubic", _resize_infer(True), _separable_kernel(_bicubic_weights), grad=_resize_grad,
         dtypes=dict([(0, ("images", REAL)), _SIZE]))
register("ResizeArea", _resize_infer(True), _separable_kernel(_area_weights), grad=None,
         dtypes=dict([(0, ("images", REAL)), _SIZE]))
register("ResizeNearestNeighbor", _resize_infer(False), _nearest_kernel, grad=_resize_grad,
         dtypes=dict([(0, ("images", REAL)), _SIZE]))


def _resize(op_type: str, images, size, align_corners, half_pixel_centers, name):
    if align_corners and half_pixel_centers:
        raise ValueError("If half_pixel_centers is True, align_corners must be False.")
    images = convert_to_tensor(images, name="images")
    size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
    attrs = {"align_corners": bool(align_corners), "half_pixel_centers": bool(half_pixel_centers)}
    return make_op(op_type, [images, size], attrs, name=name or op_type).outputs[0]


@tf_export("image.resize_bilinear")
def resize_bilinear(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """tf.image.resize_bilinear(images, size, align_corners=False, name=None,
    half_pixel_centers=False): bilinear resampling of a 4-D batch to `size` (float32)."""
    return _resize("ResizeBilinear", images, size, align_corners, half_pixel_centers, name)


@tf_export("image.resize_bicubic")
def resize_bicubic(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """tf.image.resize_bicubic(...): bicubic (Keys, a = -0.75) resampling (float32)."""
    return _resize("ResizeBicubic", images, size, align_corners, half_pixel_centers, name)


@tf_export("image.resize_area")
def resize_area(images, size, align_corners=False, name=None):
    """tf.image.resize_area(images, size, align_corners=False, name=None): area averaging
    (float32)."""
    return _resize("ResizeArea", images, size, align_corners, False, name)


@tf_export("image.resize_nearest_neighbor")
def resize_nearest_neighbor(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """tf.image.resize_nearest_neighbor(...): nearest-neighbour resampling (keeps the dtype)."""
    return _resize("ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers, name)


@tf_export("image.ResizeMethod")
class ResizeMethod:
    """tf.image.ResizeMethod (TF1's values)."""
    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


_METHODS = {ResizeMethod.BILINEAR: resize_bilinear, ResizeMethod.NEAREST_NEIGHBOR: resize_nearest_neighbor,
            ResizeMethod.BICUBIC: resize_bicubic, ResizeMethod.AREA: resize_area,
            "bilinear": resize_bilinear, "nearest": resize_nearest_neighbor, "bicubic": resize_bicubic,
            "area": resize_area}


@tf_export("image.resize_images", "image.resize")
def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False, preserve_aspect_ratio=False,
                  name=None):
    """tf.image.resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False,
    preserve_aspect_ratio=False, name=None), also TF 1's tf.image.resize: a 3-D image or 4-D
    batch resized to size [new_height, new_width] (float32 except for NEAREST_NEIGHBOR; the
    image itself when its static size already is `size`)."""
    if method not in _METHODS:
        raise ValueError("Resize method is not implemented.")
    with name_scope(name, "resize", [images, size]):
        images = check_image(convert_to_tensor(images, name="images"))
        batched = images.shape.ndims != 3
        if not batched:
            images = expand_dims(images, 0)
        size_t = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        if size_t.shape.ndims not in (None, 1) or (size_t.shape.ndims == 1 and size_t.shape[0].value not in (None, 2)):
            raise ValueError("'size' must be a 1-D Tensor of 2 elements: new_height, new_width")
        new = static_ints(size_t)
        h, w = (images.shape[1].value, images.shape[2].value) if images.shape.ndims == 4 else (None, None)
        if preserve_aspect_ratio and None not in (new, h, w):
            factor = min(np.float32(new[0]) / np.float32(h), np.float32(new[1]) / np.float32(w))
            new = [int(np.round(factor * np.float32(h))), int(np.round(factor * np.float32(w)))]
            size_t = convert_to_tensor(new, dtype=dtypes.int32)
        elif preserve_aspect_ratio:   # TF's graph of the same computation, for sizes known at run time
            dims = shape(images)
            f_h, f_w = cast(dims[1], dtypes.float32), cast(dims[2], dtypes.float32)
            factor = minimum(cast(size_t[0], dtypes.float32) / f_h, cast(size_t[1], dtypes.float32) / f_w)
            size_t = stack([cast(round_(factor * f_h), dtypes.int32), cast(round_(factor * f_w), dtypes.int32)])
            new = None
        if new is not None and [h, w] == list(new):
            out = images
        else:
            out = _METHODS[method](images, size_t, align_corners=align_corners)
        return out if batched else squeeze(out, [0])


@tf_export("image.resize_image_with_pad")
def resize_image_with_pad(image, target_height, target_width, method=ResizeMethod.BILINEAR, align_corners=False):
    """tf.image.resize_image_with_pad(image, target_height, target_width,
    method=ResizeMethod.BILINEAR, align_corners=False): the image scaled by one factor to fit
    [target_height, target_width] (sizes floored), then centred and zero-padded to it."""
    with name_scope(None, "resize_image_with_pad", [image]):
        image = convert_to_tensor(image, name="image")
        if image.shape.ndims not in (None, 3, 4):
            raise ValueError("'image' must have either 3 or 4 dimensions.")
        for what, v in (("target_width", target_width), ("target_height", target_height)):
            if isinstance(v, (int, np.integer)) and v <= 0:
                raise ValueError(f"{what} must be > 0.")
        batched = image.shape.ndims == 4
        if not batched:   # as TF: an image of unknown rank is one 3-D image
            image = expand_dims(image, 0)
            image.set_shape([None] * 4)
        dims = shape(image)
        f_height, f_width = (cast(image.shape[i].value if image.shape[i].value is not None else dims[i],
                                  dtypes.float32) for i in (1, 2))
        f_target_height, f_target_width = cast(target_height, dtypes.float32), cast(target_width, dtypes.float32)
        ratio = maximum(f_width / f_target_width, f_height / f_target_height)
        resized_height, resized_width = f_height / ratio, f_width / ratio
        new_size = stack([cast(floor(resized_height), dtypes.int32), cast(floor(resized_width), dtypes.int32)])
        pad_height = maximum(0, cast(floor((f_target_height - resized_height) / 2), dtypes.int32))
        pad_width = maximum(0, cast(floor((f_target_width - resized_width) / 2), dtypes.int32))
        resized = resize_images(image, new_size, method, align_corners=align_corners)
        padded = pad_to_bounding_box(resized, pad_height, pad_width, target_height, target_width)
        return padded if batched else squeeze(padded, [0])
