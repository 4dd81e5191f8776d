"""tf.image functions composed from ops of families on image's level or above (nn, strings), as
TF 1.15 composes them: ssim, ssim_multiscale, psnr, total_variation, sobel_edges,
image_gradients (differentiable wherever their ops are) and is_jpeg."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import control_dependencies, name_scope
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, stack
from tensorweave.ops.array.core import identity, reshape, shape, shape_n
from tensorweave.ops.array.fill import zeros
from tensorweave.ops.array.pad import pad, tile
from tensorweave.ops.debugging.printing import Assert
from tensorweave.ops.image.color import convert_image_dtype
from tensorweave.ops.math.binary import equal, greater_equal, pow as pow_, squared_difference, subtract
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_all, reduce_mean, reduce_prod, reduce_sum
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.math.unary import abs as abs_, log, square
from tensorweave.ops.nn.activations import relu, softmax
from tensorweave.ops.nn.conv import depthwise_conv2d
from tensorweave.ops.nn.pool import avg_pool
from tensorweave.ops.strings.transform import substr


@tf_export("image.image_gradients")
def image_gradients(image):
    """tf.image.image_gradients(image): (dy, dx) of a [batch, h, w, d] image, each the image's
    shape: I(y+1, x) - I(y, x) and I(y, x+1) - I(y, x), zero in the last row / column."""
    image = convert_to_tensor(image, name="image")
    if image.shape.ndims != 4:
        raise ValueError(f"image_gradients expects a 4D tensor [batch_size, h, w, d], not {image.shape}.")
    image_shape = shape(image)
    batch, height, width, depth = (image_shape[i] for i in range(4))
    dy = image[:, 1:, :, :] - image[:, :-1, :, :]
    dx = image[:, :, 1:, :] - image[:, :, :-1, :]
    dy = reshape(concat([dy, zeros(stack([batch, 1, width, depth]), image.dtype)], 1), image_shape)
    dx = reshape(concat([dx, zeros(stack([batch, height, 1, depth]), image.dtype)], 2), image_shape)
    return dy, dx


_SOBEL = np.transpose(np.asarray([[[-1, -2, -1], [0, 0, 0], [1, 2, 1]],
                                  [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]]), (1, 2, 0))[:, :, None, :]


@tf_export("image.sobel_edges")
def sobel_edges(image):
    """tf.image.sobel_edges(image): the vertical and horizontal Sobel responses of each channel
    of a [batch, h, w, d] float image (edges reflected): [batch, h, w, d, 2]."""
    image = convert_to_tensor(image, name="image")
    image_shape = shape(image)
    kernels = tile(convert_to_tensor(_SOBEL, dtype=image.dtype), stack([1, 1, image_shape[-1], 1]),
                   name="sobel_filters")
    padded = pad(image, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    output = depthwise_conv2d(padded, kernels, [1, 1, 1, 1], "VALID")
    output = reshape(output, concat([image_shape, [2]], 0))
    output.set_shape(image.shape.concatenate([2]))
    return output


@tf_export("image.total_variation")
def total_variation(images, name=None):
    """tf.image.total_variation(images, name=None): the sum of absolute differences of
    neighbouring pixels: a scalar for a 3-D image, one value per image of a 4-D batch."""
    with name_scope(name, "total_variation"):
        images = convert_to_tensor(images, name="images")
        if images.shape.ndims == 3:
            dif1, dif2, axis = images[1:, :, :] - images[:-1, :, :], images[:, 1:, :] - images[:, :-1, :], None
        elif images.shape.ndims == 4:
            dif1, dif2 = images[:, 1:, :, :] - images[:, :-1, :, :], images[:, :, 1:, :] - images[:, :, :-1, :]
            axis = [1, 2, 3]
        else:
            raise ValueError("'images' must be either 3 or 4-dimensional.")
        return reduce_sum(abs_(dif1), axis=axis) + reduce_sum(abs_(dif2), axis=axis)


def _compatible_images(img1, img2):
    """TF's _verify_compatible_image_shapes, static part: rank >= 3, the last three dims agree."""
    for img in (img1, img2):
        if img.shape.ndims is not None and img.shape.ndims < 3:
            raise ValueError(f"Shape must be at least rank 3 but is rank {img.shape.ndims}")
    if img1.shape.ndims is not None and img2.shape.ndims is not None:
        img1.shape[-3:].assert_is_compatible_with(img2.shape[-3:])


def _as_float_images(img1, img2, max_val):
    """The images as float32 in [0, 1]-scaled units, and max_val converted alike."""
    _compatible_images(img1, img2)
    max_val = convert_image_dtype(cast(max_val, img1.dtype), dtypes.float32)
    return convert_image_dtype(img1, dtypes.float32), convert_image_dtype(img2, dtypes.float32), max_val


@tf_export("image.psnr")
def psnr(a, b, max_val, name=None):
    """tf.image.psnr(a, b, max_val, name=None): the peak signal-to-noise ratio in dB,
    20 log10(max_val) - 10 log10(mse) over the last three dims (float32)."""
    with name_scope(name, "PSNR"):
        a, b, max_val = _as_float_images(convert_to_tensor(a, name="a"), convert_to_tensor(b, name="b"), max_val)
        mse = reduce_mean(squared_difference(a, b), [-3, -2, -1])
        return subtract(20 * log(max_val) / np.float32(np.log(10.0)), np.float32(10 / np.log(10)) * log(mse),
                        name="psnr")


def _gaussian_kernel(size, sigma):
    """TF's _fspecial_gauss: a [size, size, 1, 1] Gaussian that sums to one (a softmax)."""
    coords = cast(range_(size), sigma.dtype)
    coords -= cast(size - 1, sigma.dtype) / 2.0
    g = square(coords) * (-0.5 / square(sigma))
    g = reshape(reshape(g, [1, -1]) + reshape(g, [-1, 1]), [1, -1])
    return reshape(softmax(g), stack([size, size, 1, 1]))


def _ssim_per_channel(img1, img2, max_val, filter_size, filter_sigma, k1, k2):
    """(ssim, contrast-structure) per channel, averaged over height and width."""
    size = convert_to_tensor(filter_size, dtypes.int32)
    sigma = convert_to_tensor(filter_sigma, img1.dtype)
    shape1, shape2 = shape_n([img1, img2])
    checks = [Assert(reduce_all(greater_equal(s[-3:-1], size)), [s, size], summarize=8) for s in (shape1, shape2)]
    with control_dependencies(checks):
        img1 = identity(img1)
    kernel = tile(_gaussian_kernel(size, sigma), stack([1, 1, shape1[-1], 1]))

    def reducer(x):
        x_shape = shape(x)
        flat = reshape(x, concat([[-1], x_shape[-3:]], 0))
        y = depthwise_conv2d(flat, kernel, [1, 1, 1, 1], "VALID")
        return reshape(y, concat([x_shape[:-3], shape(y)[1:]], 0))

    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    mean0, mean1 = reducer(img1), reducer(img2)
    num0 = mean0 * mean1 * 2.0
    den0 = square(mean0) + square(mean1)
    luminance = (num0 + c1) / (den0 + c1)
    num1 = reducer(img1 * img2) * 2.0
    den1 = reducer(square(img1) + square(img2))
    cs = (num1 - num0 + c2) / (den1 - den0 + c2)   # MATLAB's MS-SSIM: no compensation factor
    return reduce_mean(luminance * cs, [-3, -2]), reduce_mean(cs, [-3, -2])


@tf_export("image.ssim")
def ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03):
    """tf.image.ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03):
    the structural similarity of two batches of [h, w, c] images (Wang et al. 2004, an 11x11
    Gaussian window of sigma 1.5), averaged over the channels: one float32 per image."""
    with name_scope(None, "SSIM"):
        img1, img2, max_val = _as_float_images(convert_to_tensor(img1, name="img1"),
                                               convert_to_tensor(img2, name="img2"), max_val)
        per_channel, _ = _ssim_per_channel(img1, img2, max_val, filter_size, filter_sigma, k1, k2)
        return reduce_mean(per_channel, [-1])


_MSSSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


@tf_export("image.ssim_multiscale")
def ssim_multiscale(img1, img2, max_val, power_factors=_MSSSIM_WEIGHTS, filter_size=11, filter_sigma=1.5, k1=0.01,
                    k2=0.03):
    """tf.image.ssim_multiscale(img1, img2, max_val, power_factors=(0.0448, 0.2856, 0.3001,
    0.2363, 0.1333), ...): multi-scale SSIM (Wang et al. 2003): contrast-structure at each
    scale (halved by 2x2 average pooling, odd sizes padded symmetrically) and SSIM at the last,
    combined by a weighted geometric mean; one float32 per image."""
    with name_scope(None, "MS-SSIM"):
        img1, img2, max_val = _as_float_images(convert_to_tensor(img1, name="img1"),
                                               convert_to_tensor(img2, name="img2"), max_val)
        imgs = [img1, img2]
        heads = [shape(x)[:-3] for x in imgs]
        tails = [shape(x)[-3:] for x in imgs]
        mcs = []
        for k in range(len(power_factors)):
            with name_scope(None, f"Scale{k}"):
                if k > 0:
                    flat = [reshape(x, concat([[-1], t], 0)) for x, t in zip(imgs, tails)]
                    remainder = tails[0] % convert_to_tensor([2, 2, 1], dtypes.int32)
                    # padding by the remainder (zero for even sizes) is TF's cond'ed symmetric pad
                    padding = pad(reshape(remainder, [3, 1]), [[1, 0], [1, 0]])
                    down = [avg_pool(pad(x, padding, mode="SYMMETRIC"), [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
                            for x in flat]
                    tails = [shape(x)[1:] for x in down]
                    imgs = [reshape(x, concat([h, t], 0)) for x, h, t in zip(down, heads, tails)]
                per_channel, cs = _ssim_per_channel(imgs[0], imgs[1], max_val, filter_size, filter_sigma, k1, k2)
                mcs.append(relu(cs))
        mcs.pop()   # the last scale contributes its full SSIM instead
        values = stack(mcs + [relu(per_channel)], axis=-1)
        weights = convert_to_tensor(np.asarray(power_factors, np.float32))
        return reduce_mean(reduce_prod(pow_(values, weights), [-1]), [-1])


@tf_export("image.is_jpeg", "io.is_jpeg")
def is_jpeg(contents, name=None):
    """tf.image.is_jpeg(contents, name=None): a bool tensor, whether the string starts with
    JPEG's magic bytes (\\xff\\xd8\\xff); what decode_image tests first."""
    with name_scope(name, "is_jpeg"):
        return equal(substr(contents, 0, 3), b"\xff\xd8\xff", name=name)
