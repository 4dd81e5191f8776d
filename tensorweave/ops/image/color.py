"""Pixel values: tf.image.convert_image_dtype, brightness, contrast, saturation, hue, gamma,
per_image_standardization, grayscale and HSV conversions, and their random variants.

Kernels follow TensorFlow's formulas (AdjustContrastv2, AdjustSaturation, AdjustHue, RGBToHSV,
HSVToRGB); the rest are TF's composites of graph ops. Images are [..., height, width, channels].
"""
from __future__ import annotations

import math

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import expand_dims, rank, reshape, shape
from tensorweave.ops.array.fill import ones
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.pad import tile
from tensorweave.ops.helpers import FLOATS, REAL, TFNodes, invalid, make_op, same_as_input
from tensorweave.ops.math.binary import add, floordiv, maximum, multiply, pow as pow_, subtract, truediv
from tensorweave.ops.math.cast import cast, saturate_cast
from tensorweave.ops.math.linalg import matmul
from tensorweave.ops.math.reduction import reduce_mean, reduce_prod, reduce_sum
from tensorweave.ops.math.unary import sqrt, square
from tensorweave.ops.random import random_uniform
from tensorweave.ops.registry import register


_IMAGE_TYPES = (dtypes.uint8, dtypes.uint16, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.float16,
                dtypes.float32, dtypes.float64)


def check_image(image: Tensor, min_rank: int = 3, what: str = "image") -> Tensor:
    """TF's static image check: rank at least `min_rank` (when known)."""
    if image.shape.ndims is not None and image.shape.ndims < min_rank:
        raise ValueError(f"'{what}' (shape {image.shape}) must be at least three-dimensional.")
    return image


def _image(image, name: str = "image") -> Tensor:
    return check_image(convert_to_tensor(image, name=name))


# -- convert_image_dtype -------------------------------------------------------------------------
@tf_export("image.convert_image_dtype")
def convert_image_dtype(image, dtype, saturate=False, name=None):
    """tf.image.convert_image_dtype(image, dtype, saturate=False, name=None): integer images span
    [0, dtype.max], float images [0, 1]; converts by scaling (integers shift by powers of two),
    saturating on the way to an integer type when asked."""
    image = convert_to_tensor(image, name="image")
    dtype = dtypes.as_dtype(dtype)
    if not (image.dtype.is_floating or image.dtype.is_integer) or not (dtype.is_floating or dtype.is_integer):
        raise AttributeError("convert_image_dtype converts between integer and floating point images only")
    if dtype == image.dtype:
        return image
    with name_scope(name, "convert_image", [image]):
        src_max = int(np.iinfo(image.dtype.as_numpy_dtype).max) if image.dtype.is_integer else None
        dst_max = int(np.iinfo(dtype.as_numpy_dtype).max) if dtype.is_integer else None
        if src_max is not None and dst_max is not None:
            if src_max > dst_max:
                scaled = floordiv(image, (src_max + 1) // (dst_max + 1))
                return saturate_cast(scaled, dtype) if saturate else cast(scaled, dtype)
            converted = saturate_cast(image, dtype) if saturate else cast(image, dtype)
            return multiply(converted, (dst_max + 1) // (src_max + 1))
        if src_max is None and dst_max is None:
            return cast(image, dtype)
        if src_max is not None:
            return multiply(cast(image, dtype), 1.0 / src_max)
        scaled = multiply(image, dst_max + 0.5)
        return saturate_cast(scaled, dtype) if saturate else cast(scaled, dtype)


def _as_float(image: Tensor) -> Tensor:
    return image if image.dtype in (dtypes.float16, dtypes.float32) else convert_image_dtype(image, dtypes.float32)


# -- brightness ----------------------------------------------------------------------------------
@tf_export("image.adjust_brightness")
def adjust_brightness(image, delta):
    """tf.image.adjust_brightness(image, delta): adds `delta` to every pixel value (of the image as
    floats in [0, 1] when it is an integer image, converted back with saturation)."""
    with name_scope(None, "adjust_brightness", [image, delta]):
        image = convert_to_tensor(image, name="image")
        flt = _as_float(image)
        adjusted = add(flt, cast(delta, flt.dtype), name="adjusted")
        return convert_image_dtype(adjusted, image.dtype, saturate=True)


@tf_export("image.random_brightness")
def random_brightness(image, max_delta, seed=None):
    """tf.image.random_brightness(image, max_delta, seed=None): adjust_brightness by a delta drawn
    uniformly from [-max_delta, max_delta)."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


# -- contrast ------------------------------------------------------------------------------------
def _contrast_kernel(node, ctx):
    def run(images, factor):
        x = np.asarray(images)
        if x.ndim < 3:
            raise invalid(node, f"input must be at least 3-D, got shape {list(x.shape)}")
        acc = np.float32 if x.dtype == np.float16 else x.dtype
        if x.flags.c_contiguous:   # channels interleaved: add.reduce over the strided pixel axis
            # would cost ten times a BLAS product with ones
            flat = x.reshape(x.shape[:-3] + (-1, x.shape[-1]))
            mean = np.dot(np.ones(flat.shape[-2], acc), flat)[..., None, None, :]
        else:   # e.g. the planes of a transposed CHW image (seed 003's records): add.reduce runs along them
            mean = np.add.reduce(x, axis=(-3, -2), dtype=acc, keepdims=True)
        mean = mean / (x.shape[-3] * x.shape[-2])
        out = x - mean
        out *= np.asarray(factor, x.dtype)
        out += mean
        return out.astype(x.dtype, copy=False)
    return run


register("AdjustContrastv2", same_as_input(), _contrast_kernel, grad=None, dtypes=(dtypes.float16, dtypes.float32),
         dtype_param="images")


@tf_export("image.adjust_contrast")
def adjust_contrast(images, contrast_factor):
    """tf.image.adjust_contrast(images, contrast_factor): per image and channel,
    (x - mean) * contrast_factor + mean, the mean over height and width."""
    with name_scope(None, "adjust_contrast", [images, contrast_factor]):
        images = _image(images, "images")
        flt = _as_float(images)
        factor = cast(contrast_factor, dtypes.float32)
        adjusted = make_op("AdjustContrastv2", [flt, factor], name="AdjustContrastv2").outputs[0]
        return convert_image_dtype(adjusted, images.dtype, saturate=True)


@tf_export("image.random_contrast")
def random_contrast(image, lower, upper, seed=None):
    """tf.image.random_contrast(image, lower, upper, seed=None): adjust_contrast by a factor drawn
    uniformly from [lower, upper)."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    factor = random_uniform([], lower, upper, seed=seed)
    return adjust_contrast(image, factor)


# -- per_image_standardization -------------------------------------------------------------------
def _standardize_kernel(node, ctx):
    def run(image):
        x = np.asarray(image, dtype=np.float32)
        if x.ndim < 3:
            raise invalid(node, f"image must be at least 3-D, got shape {list(x.shape)}")
        if x.ndim == 3 and x.size:   # one image (an input pipeline's case): scalar statistics, a BLAS dot
            n = x.size
            out = np.subtract(x, np.float32(float(np.add.reduce(x, axis=None)) / n))
            centered = out.ravel(order="K")   # dense in x's memory order (a view, whatever x's strides)
            out /= np.float32(max(math.sqrt(float(np.dot(centered, centered)) / n), 1 / math.sqrt(n)))
            return out
        flat = x.reshape(x.shape[:-3] + (-1,))
        n = np.float32(flat.shape[-1])
        mean = np.add.reduce(flat, axis=-1) / n
        var = np.maximum(np.einsum("...i,...i->...", flat, flat) / n - mean * mean, np.float32(0))
        scale = np.maximum(np.sqrt(var), np.float32(1) / np.sqrt(n))
        return ((flat - mean[..., None]) / scale[..., None]).reshape(x.shape)
    return run


def _standardize_grad(op, grad):
    # y = (x - m) / s with s = max(std, 1/sqrt(N)): dx = (g - mean g) / s - [std > min] (x - m) mean(g (x - m)) / s^3
    x = cast(op.inputs[0], dtypes.float32)
    axes = [-3, -2, -1]
    m = reduce_mean(x, axes, keepdims=True)
    centered = subtract(x, m)
    std = sqrt(maximum(subtract(reduce_mean(square(x), axes, keepdims=True), square(m)), 0.0))
    n = cast(reduce_prod(shape(x)[-3:]), dtypes.float32)
    min_std = truediv(1.0, sqrt(n))
    s = maximum(std, min_std)
    active = cast(std > min_std, dtypes.float32)   # below the floor the scale is a constant
    g = grad
    dx = truediv(subtract(g, reduce_mean(g, axes, keepdims=True)), s)
    dx = subtract(dx, multiply(active, truediv(multiply(centered, reduce_mean(multiply(g, centered), axes,
                                                                               keepdims=True)), s * s * s)))
    return [cast(dx, op.inputs[0].dtype)] if op.inputs[0].dtype.is_floating else [None]


def _standardize_tf(op) -> list:
    """TF's per_image_standardization: (x - mean) / max(stddev, rsqrt(pixels)) over the last
    three axes, in float32."""
    b, f32, int32 = TFNodes(op), dtypes.float32, dtypes.int32
    x = b.input(0)
    if op.inputs[0].dtype != f32:
        x = b.node("image", "Cast", [x], SrcT=op.inputs[0].dtype, DstT=f32)
    axes = b.const("axes", [-1, -2, -3], int32)

    def unary(name, op_type, y):
        return b.node(name, op_type, [y], T=f32)

    def binary(name, op_type, y, z):
        return b.node(name, op_type, [y, z], T=f32)

    mean = b.node("mean", "Mean", [x, axes], T=f32, Tidx=int32, keep_dims=True)
    squares_mean = b.node("squares_mean", "Mean", [unary("squares", "Square", x), axes], T=f32, Tidx=int32,
                          keep_dims=True)
    stddev = unary("stddev", "Sqrt", unary("variance", "Relu", binary("variance_or_less", "Sub", squares_mean,
                                                                      unary("mean_squared", "Square", mean))))
    dims = b.node("image_dims", "StridedSlice", [b.node("shape", "Shape", [x], T=f32, out_type=int32),
                                                  b.const("begin", [-3], int32), b.const("end", [0], int32),
                                                  b.const("strides", [1], int32)], T=int32, Index=int32, end_mask=1)
    pixels = b.node("pixels", "Cast", [b.node("num_pixels", "Prod", [dims, b.const("axis", 0, int32)], T=int32,
                                               Tidx=int32)], SrcT=int32, DstT=f32)
    scale = binary("scale", "Maximum", stddev, unary("min_stddev", "Rsqrt", pixels))
    binary(None, "RealDiv", binary("centered", "Sub", x, mean), scale)
    return b.nodes


register("PerImageStandardization", lambda op: [(dtypes.float32, op.inputs[0].shape)], _standardize_kernel,
         grad=_standardize_grad, dtypes=REAL, dtype_param="image", tf_lowering=_standardize_tf)


@tf_export("image.per_image_standardization")
def per_image_standardization(image):
    """tf.image.per_image_standardization(image): (x - mean) / max(stddev, 1/sqrt(num_pixels)) over
    each image's height, width and channels; float32."""
    with name_scope(None, "per_image_standardization", [image]):
        image = _image(image)
        return make_op("PerImageStandardization", [image], name="PerImageStandardization").outputs[0]


# -- HSV -----------------------------------------------------------------------------------------
def rgb_to_hsv_np(rgb: np.ndarray) -> np.ndarray:
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    v = np.maximum(np.maximum(r, g), b)
    rng = v - np.minimum(np.minimum(r, g), b)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(v > 0, rng / v, 0).astype(rgb.dtype)
        norm = (1.0 / (6.0 * rng)).astype(rgb.dtype)
        h = np.where(r == v, norm * (g - b), np.where(g == v, norm * (b - r) + rgb.dtype.type(2.0 / 6.0),
                                                      norm * (r - g) + rgb.dtype.type(4.0 / 6.0)))
    h = np.where(rng > 0, h, 0)
    h = np.where(h < 0, h + 1, h)
    return np.stack([h, s, v], axis=-1).astype(rgb.dtype, copy=False)


def hsv_to_rgb_np(hsv: np.ndarray) -> np.ndarray:
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    one = hsv.dtype.type(1)
    dh = h * hsv.dtype.type(6)
    dr = np.clip(np.abs(dh - 3) - 1, 0, 1)
    dg = np.clip(-np.abs(dh - 2) + 2, 0, 1)
    db = np.clip(-np.abs(dh - 4) + 2, 0, 1)
    one_s = one - s
    return np.stack([(one_s + s * dr) * v, (one_s + s * dg) * v, (one_s + s * db) * v], axis=-1).astype(
        hsv.dtype, copy=False)


def _channels3(node, x: np.ndarray) -> np.ndarray:
    if x.ndim < 1 or x.shape[-1] != 3:
        raise invalid(node, f"input must have 3 channels but input only has {x.shape[-1] if x.ndim else 0} channels.")
    return x


register("RGBToHSV", same_as_input(), lambda node, ctx: lambda x: rgb_to_hsv_np(_channels3(node, np.asarray(x))),
         grad=None, dtypes=FLOATS, dtype_param="images")
register("HSVToRGB", same_as_input(), lambda node, ctx: lambda x: hsv_to_rgb_np(_channels3(node, np.asarray(x))),
         grad=None, dtypes=FLOATS, dtype_param="images")


@tf_export("image.rgb_to_hsv")
def rgb_to_hsv(images, name=None):
    """tf.image.rgb_to_hsv(images, name=None): float RGB in [0, 1] to HSV (hue in [0, 1))."""
    return make_op("RGBToHSV", [convert_to_tensor(images)], name=name or "RGBToHSV").outputs[0]


@tf_export("image.hsv_to_rgb")
def hsv_to_rgb(images, name=None):
    """tf.image.hsv_to_rgb(images, name=None): the inverse of rgb_to_hsv."""
    return make_op("HSVToRGB", [convert_to_tensor(images)], name=name or "HSVToRGB").outputs[0]


def _saturation_kernel(node, ctx):
    def run(images, scale):
        x = _channels3(node, np.asarray(images, dtype=np.float32))
        hsv = rgb_to_hsv_np(x)
        hsv[..., 1] = np.clip(hsv[..., 1] * np.float32(scale), 0, 1)
        return hsv_to_rgb_np(hsv).astype(np.asarray(images).dtype, copy=False)
    return run


def _hue_kernel(node, ctx):
    def run(images, delta):
        x = _channels3(node, np.asarray(images, dtype=np.float32))
        hsv = rgb_to_hsv_np(x)
        hsv[..., 0] = np.mod(hsv[..., 0] + np.float32(delta), np.float32(1))
        return hsv_to_rgb_np(hsv).astype(np.asarray(images).dtype, copy=False)
    return run


register("AdjustSaturation", same_as_input(), _saturation_kernel, grad=None,
         dtypes=(dtypes.float16, dtypes.float32), dtype_param="images")
register("AdjustHue", same_as_input(), _hue_kernel, grad=None, dtypes=(dtypes.float16, dtypes.float32),
         dtype_param="images")


def _adjust_hsv(op_type: str, image, value, name, default: str):
    with name_scope(name, default, [image]):
        image = convert_to_tensor(image, name="image")
        flt = _as_float(image)
        out = make_op(op_type, [flt, cast(value, dtypes.float32)], name=op_type).outputs[0]
        return convert_image_dtype(out, image.dtype, saturate=True)


@tf_export("image.adjust_saturation")
def adjust_saturation(image, saturation_factor, name=None):
    """tf.image.adjust_saturation(image, saturation_factor, name=None): multiplies the HSV
    saturation by the factor (clipped to [0, 1])."""
    return _adjust_hsv("AdjustSaturation", image, saturation_factor, name, "adjust_saturation")


@tf_export("image.adjust_hue")
def adjust_hue(image, delta, name=None):
    """tf.image.adjust_hue(image, delta, name=None): rotates the hue by `delta` (in [-1, 1])."""
    if isinstance(delta, (int, float)) and not -1 <= delta <= 1:
        raise ValueError("delta must be in the interval [-1, 1]")
    return _adjust_hsv("AdjustHue", image, delta, name, "adjust_hue")


@tf_export("image.random_saturation")
def random_saturation(image, lower, upper, seed=None):
    """tf.image.random_saturation(image, lower, upper, seed=None): adjust_saturation by a factor
    drawn uniformly from [lower, upper)."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    return adjust_saturation(image, random_uniform([], lower, upper, seed=seed))


@tf_export("image.random_hue")
def random_hue(image, max_delta, seed=None):
    """tf.image.random_hue(image, max_delta, seed=None): adjust_hue by a delta drawn uniformly from
    [-max_delta, max_delta); max_delta in [0, 0.5]."""
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_hue(image, random_uniform([], -max_delta, max_delta, seed=seed))


# -- gamma, grayscale ----------------------------------------------------------------------------
@tf_export("image.adjust_gamma")
def adjust_gamma(image, gamma=1, gain=1):
    """tf.image.adjust_gamma(image, gamma=1, gain=1): gain * image ** gamma (integer images as
    floats in [0, 1], converted back)."""
    if isinstance(gamma, (int, float)) and gamma < 0:
        raise ValueError("Gamma should be a non-negative real number.")
    with name_scope(None, "adjust_gamma", [image, gamma, gain]):
        image = convert_to_tensor(image, name="image")
        flt = _as_float(image)
        adjusted = multiply(cast(gain, flt.dtype), pow_(flt, cast(gamma, flt.dtype)))
        return convert_image_dtype(adjusted, image.dtype, saturate=True)


@tf_export("image.rgb_to_grayscale")
def rgb_to_grayscale(images, name=None):
    """tf.image.rgb_to_grayscale(images, name=None): 0.2989 R + 0.5870 G + 0.1140 B, keeping a
    last dimension of 1 and the input's dtype."""
    with name_scope(name, "rgb_to_grayscale", [images]):
        images = convert_to_tensor(images, name="images")
        flt = convert_image_dtype(images, dtypes.float32)
        gray = reduce_sum(multiply(flt, [0.2989, 0.5870, 0.1140]), -1, keepdims=True)
        return convert_image_dtype(gray, images.dtype)


@tf_export("image.grayscale_to_rgb")
def grayscale_to_rgb(images, name=None):
    """tf.image.grayscale_to_rgb(images, name=None): repeats the single channel three times."""
    with name_scope(name, "grayscale_to_rgb", [images]):
        images = convert_to_tensor(images, name="images")
        if images.shape.ndims is not None and images.shape[-1].value not in (None, 1):
            raise ValueError(f"Last dimension of a grayscale image should be size 1 (shape {images.shape})")
        multiples = concat([ones(expand_dims(rank(images) - 1, 0), dtype=dtypes.int32), [3]], 0)
        return tile(images, multiples)


# -- YIQ and YUV ----------------------------------------------------------------------------------------
def _color_transform(images, kernel, name: str):
    """TF's tensordot of the last axis with a 3x3 kernel (any rank; the kernel in images' dtype)."""
    images = convert_to_tensor(images, name="images")
    if images.shape.ndims is not None and images.shape[-1].value not in (None, 3):
        raise ValueError(f"Dimensions must be equal, but are {images.shape[-1].value} and 3 for '{name}'")
    kernel = convert_to_tensor(np.asarray(kernel), dtype=images.dtype, name="kernel")
    out = reshape(matmul(reshape(images, [-1, 3]), kernel), shape(images), name=name)
    out.set_shape(images.shape)
    return out


@tf_export("image.rgb_to_yiq")
def rgb_to_yiq(images):
    """tf.image.rgb_to_yiq(images): float RGB in [0, 1] (last dim 3) to YIQ (TF's kernel)."""
    return _color_transform(images, [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
                                     [0.114, -0.32134392, 0.31119955]], "rgb_to_yiq")


@tf_export("image.yiq_to_rgb")
def yiq_to_rgb(images):
    """tf.image.yiq_to_rgb(images): YIQ (last dim 3) back to RGB (TF's kernel)."""
    return _color_transform(images, [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
                                     [0.6208248, -0.64720424, 1.70423049]], "yiq_to_rgb")


@tf_export("image.rgb_to_yuv")
def rgb_to_yuv(images):
    """tf.image.rgb_to_yuv(images): float RGB in [0, 1] (last dim 3) to YUV (TF's kernel)."""
    return _color_transform(images, [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
                                     [0.114, 0.43601035, -0.10001026]], "rgb_to_yuv")


@tf_export("image.yuv_to_rgb")
def yuv_to_rgb(images):
    """tf.image.yuv_to_rgb(images): YUV (last dim 3) back to RGB (TF's kernel)."""
    return _color_transform(images, [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]],
                            "yuv_to_rgb")
