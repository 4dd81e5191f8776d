"""tf.image: the image ops (ops/image/)."""
from __future__ import annotations

from tensorweave.ops.image.boxes import draw_bounding_boxes, sample_distorted_bounding_box  # noqa: F401
from tensorweave.ops.image.codecs import (  # noqa: F401
    decode_bmp, decode_gif, decode_image, decode_jpeg, decode_png, encode_jpeg, encode_png)
from tensorweave.ops.image.color import (  # noqa: F401
    adjust_brightness, adjust_contrast, adjust_gamma, adjust_hue, adjust_saturation, convert_image_dtype,
    grayscale_to_rgb, hsv_to_rgb, per_image_standardization, random_brightness, random_contrast, random_hue,
    random_saturation, rgb_to_grayscale, rgb_to_hsv)
from tensorweave.ops.image.geometry import (  # noqa: F401
    central_crop, crop_to_bounding_box, flip_left_right, flip_up_down, pad_to_bounding_box, random_flip_left_right,
    random_flip_up_down, resize_image_with_crop_or_pad, rot90, transpose_image)
from tensorweave.ops.image.resize import (  # noqa: F401
    ResizeMethod, resize_area, resize_bicubic, resize_bilinear, resize_images, resize_nearest_neighbor)
from tensorweave.ops.random import random_crop  # noqa: F401

resize_with_crop_or_pad = resize_image_with_crop_or_pad
transpose = transpose_image
