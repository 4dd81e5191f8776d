"""Bounding boxes: tf.image.sample_distorted_bounding_box (TensorFlow's sampling algorithm) and
tf.image.draw_bounding_boxes (TensorFlow's outlines and default colour table)."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import INTS, invalid, make_op
from tensorweave.ops.random import get_seed, op_generator
from tensorweave.ops.registry import register


def _crop(rng, width: int, height: int, min_area: float, max_area: float, aspect: float):
    """TF's GenerateRandomCrop: a (x, y, w, h) rectangle or None."""
    if max_area <= 0 or aspect <= 0 or width <= 0 or height <= 0 or min_area > max_area:
        return None
    min_a, max_a = min_area * width * height, max_area * width * height
    h = int(np.rint(np.sqrt(min_a / aspect)))
    max_h = int(np.rint(np.sqrt(max_a / aspect)))
    if np.rint(max_h * aspect) > width:
        max_h = int((width + 0.5 - 1e-7) / aspect)
        if np.rint(max_h * aspect) > width:
            max_h -= 1
    max_h = min(max_h, height)
    h = min(h, max_h)
    if h < max_h:
        h += int(rng.integers(0, max_h - h + 1))
    w = int(np.rint(h * aspect))
    area = float(w * h)
    if area < min_a:
        h += 1
        w = int(np.rint(h * aspect))
        area = float(w * h)
    if area > max_a:
        h -= 1
        w = int(np.rint(h * aspect))
        area = float(w * h)
    if area < min_a or area > max_a or w > width or h > height or w <= 0 or h <= 0:
        return None
    y = int(rng.integers(0, height - h)) if h < height else 0
    x = int(rng.integers(0, width - w)) if w < width else 0
    return x, y, w, h


def _covers(rect, boxes, min_covered: float) -> bool:
    x, y, w, h = rect
    for (bx0, by0, bx1, by1) in boxes:
        area = (bx1 - bx0) * (by1 - by0)
        if area <= 0:
            continue
        iw = min(x + w, bx1) - max(x, bx0)
        ih = min(y + h, by1) - max(y, by0)
        if iw > 0 and ih > 0 and iw * ih / area >= min_covered:
            return True
    return False


def _sample_kernel(node, ctx):
    rng = op_generator(node, ctx)
    a = node.attr

    def run(image_size, boxes, min_covered):
        size = np.asarray(image_size).reshape(-1)
        if size.shape != (3,):
            raise invalid(node, f"image_size must be 1-dimensional with 3 elements, got shape {list(np.shape(size))}")
        height, width = int(size[0]), int(size[1])
        b = np.asarray(boxes, dtype=np.float32).reshape(-1, 4)
        if not len(b):
            if not a["use_image_if_no_bounding_boxes"]:
                raise invalid(node, "No bounding boxes provided as input. One must enable "
                                    "use_image_if_no_bounding_boxes if you wish to not provide any bounding boxes.")
            b = np.array([[0, 0, 1, 1]], dtype=np.float32)
        if (b < 0).any() or (b > 1).any():
            raise invalid(node, "All bounding box coordinates must be in [0.0, 1.0]")
        pixel = [(int(x0 * width), int(y0 * height), int(x1 * width), int(y1 * height)) for y0, x0, y1, x1 in b]
        lo_r, hi_r = a["aspect_ratio_range"]
        lo_a, hi_a = a["area_range"]
        rect = None
        for _ in range(a["max_attempts"]):
            aspect = float(np.float32(rng.random()) * np.float32(hi_r - lo_r) + np.float32(lo_r))
            cand = _crop(rng, width, height, lo_a, hi_a, aspect)
            if cand is not None and _covers(cand, pixel, float(min_covered)):
                rect = cand
                break
        x, y, w, h = rect if rect is not None else (0, 0, width, height)
        dt = np.asarray(image_size).dtype
        box = np.array([[[y / height, x / width, (y + h) / height, (x + w) / width]]], dtype=np.float32)
        return np.array([y, x, 0], dtype=dt), np.array([h, w, -1], dtype=dt), box
    return run


register("SampleDistortedBoundingBoxV2",
         lambda op: [(op.inputs[0].dtype, TensorShape([3])), (op.inputs[0].dtype, TensorShape([3])),
                     (dtypes.float32, TensorShape([1, 1, 4]))],
         _sample_kernel, grad=None, stateful=True, dtypes=dict([(0, ("image_size", INTS))]))


@tf_export("image.sample_distorted_bounding_box")
def sample_distorted_bounding_box(image_size, bounding_boxes, seed=None, seed2=None, min_object_covered=0.1,
                                  aspect_ratio_range=None, area_range=None, max_attempts=None,
                                  use_image_if_no_bounding_boxes=None, name=None):
    """tf.image.sample_distorted_bounding_box(image_size, bounding_boxes, seed=None, seed2=None,
    min_object_covered=0.1, aspect_ratio_range=None, area_range=None, max_attempts=None,
    use_image_if_no_bounding_boxes=None, name=None) -> (begin, size, bboxes): a random crop of
    an image of `image_size` ([height, width, channels]) covering at least `min_object_covered`
    of one of `bounding_boxes` ([batch, N, 4] of [ymin, xmin, ymax, xmax] in [0, 1]), within the
    aspect-ratio and area ranges (defaults [0.75, 1.33] and [0.05, 1]); the whole image when
    `max_attempts` (default 100) draws find none. Feed begin and size to tf.slice."""
    s1, s2 = get_seed(seed)
    if seed2 is not None:
        s2 = seed2
    attrs = {"seed": s1 or 0, "seed2": s2 or 0,
             "aspect_ratio_range": [float(v) for v in (aspect_ratio_range or (0.75, 1.33))],
             "area_range": [float(v) for v in (area_range or (0.05, 1.0))],
             "max_attempts": int(max_attempts or 100),
             "use_image_if_no_bounding_boxes": bool(use_image_if_no_bounding_boxes)}
    if attrs["aspect_ratio_range"][0] <= 0 or attrs["area_range"][0] <= 0 or attrs["area_range"][1] > 1:
        raise ValueError("aspect_ratio_range must be positive and area_range within (0, 1]")
    size = convert_to_tensor(image_size, name="image_size")
    boxes = convert_to_tensor(bounding_boxes, dtype=dtypes.float32, name="bounding_boxes")
    covered = convert_to_tensor(min_object_covered, dtype=dtypes.float32, name="min_object_covered")
    op = make_op("SampleDistortedBoundingBoxV2", [size, boxes, covered], attrs,
                 name=name or "SampleDistortedBoundingBoxV2")
    return tuple(op.outputs)


_COLORS = np.array([[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1], [0.5, 0, 0.5, 1], [0.5, 0.5, 0, 1],
                    [0.5, 0, 0, 1], [0, 0, 0.5, 1], [0, 1, 1, 1], [1, 0, 1, 1]], dtype=np.float32)


def _draw_kernel(node, ctx):
    def run(images, boxes, *colors):
        x = np.asarray(images)
        if x.ndim != 4:
            raise invalid(node, f"The rank of the images should be 4, got shape {list(x.shape)}")
        depth = x.shape[3]
        if depth not in (1, 3, 4):
            raise invalid(node, "Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA)")
        boxes = np.asarray(boxes, dtype=np.float32)
        if boxes.ndim != 3 or boxes.shape[2] != 4 or boxes.shape[0] != x.shape[0]:
            raise invalid(node, f"boxes must be [batch, num_boxes, 4], got shape {list(boxes.shape)}")
        table = np.asarray(colors[0], dtype=np.float32) if colors and np.size(colors[0]) else _COLORS.copy()
        if depth == 1 and not (colors and np.size(colors[0])):
            table[:, 0] = 1
        if table.shape[1] < depth:
            table = np.concatenate([table, np.ones((len(table), depth - table.shape[1]), np.float32)], 1)
        out = x.copy()
        height, width = x.shape[1], x.shape[2]
        for b in range(x.shape[0]):
            for i, (y0, x0, y1, x1) in enumerate(boxes[b]):
                color = table[i % len(table)][:depth].astype(x.dtype)
                top, bottom = int(np.float32(y0) * (height - 1)), int(np.float32(y1) * (height - 1))
                left, right = int(np.float32(x0) * (width - 1)), int(np.float32(x1) * (width - 1))
                if top > bottom or left > right or top >= height or bottom < 0 or left >= width or right < 0:
                    continue
                r0, r1 = max(top, 0), min(bottom, height - 1)
                c0, c1 = max(left, 0), min(right, width - 1)
                if top >= 0:
                    out[b, top, c0:c1 + 1] = color
                if bottom < height:
                    out[b, bottom, c0:c1 + 1] = color
                if left >= 0:
                    out[b, r0:r1 + 1, left] = color
                if right < width:
                    out[b, r0:r1 + 1, right] = color
        return out
    return run


register("DrawBoundingBoxesV2", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], _draw_kernel, grad=None,
         dtypes=(dtypes.float16, dtypes.float32), dtype_param="images")


@tf_export("image.draw_bounding_boxes")
def draw_bounding_boxes(images, boxes, name=None, colors=None):
    """tf.image.draw_bounding_boxes(images, boxes, name=None, colors=None): outlines each box
    ([ymin, xmin, ymax, xmax] in [0, 1]) of `boxes` [batch, N, 4] on the float images, in
    TF's colour table (or `colors`, [num_colors, 4]) cycled per box."""
    images = convert_to_tensor(images, name="images")
    inputs = [images, convert_to_tensor(boxes, dtype=dtypes.float32, name="boxes")]
    if colors is not None:
        inputs.append(convert_to_tensor(colors, dtype=dtypes.float32, name="colors"))
    return make_op("DrawBoundingBoxesV2", inputs, name=name or "DrawBoundingBoxes").outputs[0]
