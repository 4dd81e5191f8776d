"""Detection ops: tf.image.non_max_suppression and its variants (NonMaxSuppressionV3/V4/V5,
NonMaxSuppressionWithOverlaps, CombinedNonMaxSuppression), tf.image.crop_and_resize
(CropAndResize and the two ops of its gradient) and tf.image.extract_glimpse (ExtractGlimpse),
following TF's kernels.

Suppression is TF's greedy loop: candidates scoring above the score threshold are taken in order
of score (equal scores: lower index first); a candidate is kept when its overlap (IoU of
[y1, x1, y2, x2] boxes in float32, 0 for an empty box) with every kept box is at most the
threshold. Soft-NMS (V5's soft_nms_sigma > 0) decays a candidate's score by
exp(-iou^2 / (2 sigma)) instead and puts it back in line, as TF's kernel does.
"""
from __future__ import annotations

import heapq

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import shape
from tensorweave.ops.helpers import REAL, check_output_size, dims_with_rank, invalid, make_op, static_int, static_ints
from tensorweave.ops.registry import register

_F = np.float32
_BOX_TYPES = (dtypes.float16, dtypes.float32)


# -- the greedy selection shared by every NMS op ----------------------------------------------------
def _iou(boxes: np.ndarray):
    """sim(i, js): the IoU of box i with boxes js, as TF's IOU computes it in float32."""
    b = boxes.astype(_F, copy=False)
    ymin, ymax = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
    xmin, xmax = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
    area = (ymax - ymin) * (xmax - xmin)

    def sim(i: int, js: list) -> np.ndarray:
        js = np.asarray(js, dtype=np.int64)
        inter = (np.maximum(np.minimum(ymax[i], ymax[js]) - np.maximum(ymin[i], ymin[js]), _F(0)) *
                 np.maximum(np.minimum(xmax[i], xmax[js]) - np.maximum(xmin[i], xmin[js]), _F(0)))
        with np.errstate(divide="ignore", invalid="ignore"):
            out = inter / (area[i] + area[js] - inter)
        return np.where((area[i] <= 0) | (area[js] <= 0), _F(0), out).astype(_F, copy=False)
    return sim


def _greedy(scores: np.ndarray, sim, max_out: int, threshold, score_threshold, soft_sigma=0.0):
    """TF's DoNonMaxSuppressionOp: the selected indices and their (soft-decayed) scores."""
    scores = np.asarray(scores, dtype=_F).reshape(-1)
    threshold, score_threshold = _F(threshold), _F(score_threshold)
    line = [(-s, i, 0) for i, s in enumerate(scores) if s > score_threshold]   # (-score, index, checked up to)
    heapq.heapify(line)
    scale = _F(-0.5 / soft_sigma) if soft_sigma > 0 else None
    selected: list = []
    kept_scores: list = []
    while len(selected) < max_out and line:
        neg, i, begin = heapq.heappop(line)
        score = original = _F(-neg)
        overlaps = sim(i, selected[begin:])
        if scale is None:
            if not (overlaps > threshold).any():
                selected.append(i)
                kept_scores.append(original)
            continue
        for s in overlaps[::-1]:   # the latest kept boxes are the likeliest to overlap
            score = _F(score * (np.exp(scale * s * s) if s <= threshold else _F(0)))
            if score <= score_threshold:
                break
        if score == original:
            selected.append(i)
            kept_scores.append(original)
        elif score > score_threshold:
            heapq.heappush(line, (-score, i, len(selected)))
    return np.asarray(selected, np.int32), np.asarray(kept_scores, _F)


def _scalar(node, value, what: str):
    if np.ndim(value) != 0:
        raise invalid(node, f"{what} must be 0-D, got shape {list(np.shape(value))}")
    return value[()] if isinstance(value, np.ndarray) else value


def _checked_boxes(node, boxes, scores):
    boxes, scores = np.asarray(boxes), np.asarray(scores)
    if boxes.ndim != 2:
        raise invalid(node, f"boxes must be 2-D{list(boxes.shape)}")
    if boxes.shape[1] != 4:
        raise invalid(node, f"boxes must have 4 columns{list(boxes.shape)}")
    if scores.ndim != 1:
        raise invalid(node, f"scores must be 1-D{list(scores.shape)}")
    if scores.shape[0] != boxes.shape[0]:
        raise invalid(node, f"scores has incompatible shape{list(scores.shape)} (boxes: {list(boxes.shape)})")
    return boxes, scores


def _max_output(node, max_output_size) -> int:
    n = int(_scalar(node, max_output_size, "max_output_size"))
    if n < 0:
        raise invalid(node, f"max_output_size must be non-negative, got {n}")
    return n


def _threshold(node, value, what: str):
    v = _scalar(node, value, what)
    if not 0 <= v <= 1:
        raise invalid(node, f"{what} must be in [0, 1], got {v}")
    return v


def _padded(selected: np.ndarray, n: int, pad: bool) -> np.ndarray:
    return np.concatenate([selected, np.zeros(n - len(selected), selected.dtype)]) if pad else selected


def _nms_kernel(node, ctx):
    """NonMaxSuppressionV3, V4 (padded) and V5 (scores, soft-NMS): one kernel for the three."""
    pad = bool(node.attr.get("pad_to_max_output_size", False))

    def run(boxes, scores, max_output_size, iou_threshold, score_threshold, soft_nms_sigma=0.0):
        boxes, scores = _checked_boxes(node, boxes, scores)
        n = _max_output(node, max_output_size)
        sigma = float(_scalar(node, soft_nms_sigma, "soft_nms_sigma"))
        if sigma < 0:
            raise invalid(node, f"soft_nms_sigma must be non-negative, got {sigma}")
        selected, kept = _greedy(scores, _iou(boxes), n, _threshold(node, iou_threshold, "iou_threshold"),
                                 _scalar(node, score_threshold, "score_threshold"), sigma)
        valid = np.int32(len(selected))
        if node.op == "NonMaxSuppressionV3":
            return selected
        if node.op == "NonMaxSuppressionV4":
            return _padded(selected, n, pad), valid
        return _padded(selected, n, pad), _padded(kept, n, pad).astype(scores.dtype), valid
    return run


def _overlaps_kernel(node, ctx):
    def run(overlaps, scores, max_output_size, overlap_threshold, score_threshold):
        overlaps, scores = np.asarray(overlaps), np.asarray(scores)
        if overlaps.ndim != 2 or overlaps.shape[0] != overlaps.shape[1]:
            raise invalid(node, f"overlaps must be 2-D and square{list(overlaps.shape)}")
        if scores.ndim != 1 or scores.shape[0] != overlaps.shape[0]:
            raise invalid(node, f"scores has incompatible shape{list(scores.shape)} (overlaps: "
                                f"{list(overlaps.shape)})")
        matrix = overlaps.astype(_F, copy=False)
        selected, _ = _greedy(scores, lambda i, js: matrix[i, js], _max_output(node, max_output_size),
                              _scalar(node, overlap_threshold, "overlap_threshold"),
                              _scalar(node, score_threshold, "score_threshold"))
        return selected
    return run


def _nms_infer(op):
    boxes = dims_with_rank(op.inputs[0], 2, "boxes")
    scores = dims_with_rank(op.inputs[1], 1, "scores")
    if op.type == "NonMaxSuppressionWithOverlaps":
        if None not in boxes[:2] and boxes[0] != boxes[1]:
            raise ValueError(f"Dimensions must be equal, but are {boxes[0]} and {boxes[1]}")
    elif boxes[1] not in (None, 4):
        raise ValueError(f"Dimension must be 4 but is {boxes[1]}")
    if None not in (boxes[0], scores[0]) and boxes[0] != scores[0]:
        raise ValueError(f"Dimensions must be equal, but are {boxes[0]} and {scores[0]}")
    scalars = ("max_output_size", "iou_threshold", "score_threshold", "soft_nms_sigma")
    for t, what in zip(op.inputs[2:], scalars):
        dims_with_rank(t, 0, what)
    pad = op.type in ("NonMaxSuppressionV4", "NonMaxSuppressionV5") and op.get_attr("pad_to_max_output_size")
    selected = TensorShape([static_int(op.inputs[2]) if pad else None])
    out = [(dtypes.int32, selected)]
    if op.type == "NonMaxSuppressionV5":
        out.append((op.inputs[1].dtype, selected))
    if op.type in ("NonMaxSuppressionV4", "NonMaxSuppressionV5"):
        out.append((dtypes.int32, TensorShape([])))
    return out


_NMS_DTYPES = {0: ("boxes", _BOX_TYPES), 1: ("scores", _BOX_TYPES), 2: ("max_output_size", (dtypes.int32,)),
               3: ("iou_threshold", _BOX_TYPES), 4: ("score_threshold", _BOX_TYPES)}
for _op in ("NonMaxSuppressionV3", "NonMaxSuppressionV4"):
    register(_op, _nms_infer, _nms_kernel, grad=None, dtypes=_NMS_DTYPES)
register("NonMaxSuppressionV5", _nms_infer, _nms_kernel, grad=None,
         dtypes={**_NMS_DTYPES, 5: ("soft_nms_sigma", _BOX_TYPES)})
register("NonMaxSuppressionWithOverlaps", _nms_infer, _overlaps_kernel, grad=None,
         dtypes={0: ("overlaps", (dtypes.float32,)), 1: ("scores", (dtypes.float32,)),
                 2: ("max_output_size", (dtypes.int32,)), 3: ("overlap_threshold", (dtypes.float32,)),
                 4: ("score_threshold", (dtypes.float32,))})


def _nms_inputs(boxes, scores, max_output_size, iou_threshold, score_threshold, *more):
    boxes = convert_to_tensor(boxes, name="boxes")
    scores = convert_to_tensor(scores, name="scores")
    thresholds = [convert_to_tensor(v, dtype=boxes.dtype if boxes.dtype in _BOX_TYPES else dtypes.float32, name=n)
                  for v, n in zip((iou_threshold, score_threshold) + more,
                                  ("iou_threshold", "score_threshold", "soft_nms_sigma"))]
    return [boxes, scores, convert_to_tensor(max_output_size, dtype=dtypes.int32, name="max_output_size")] + thresholds


@tf_export("image.non_max_suppression")
def non_max_suppression(boxes, scores, max_output_size, iou_threshold=0.5, score_threshold=float("-inf"), name=None):
    """tf.image.non_max_suppression(boxes, scores, max_output_size, iou_threshold=0.5,
    score_threshold=float('-inf'), name=None): the int32 indices of at most max_output_size
    boxes ([num_boxes, 4] of [y1, x1, y2, x2]) kept by greedy non-maximum suppression, in order
    of decreasing score; gather them with tf.gather(boxes, indices)."""
    with name_scope(name, "non_max_suppression"):
        inputs = _nms_inputs(boxes, scores, max_output_size, iou_threshold, score_threshold)
        return make_op("NonMaxSuppressionV3", inputs, name="NonMaxSuppressionV3").outputs[0]


@tf_export("image.non_max_suppression_with_scores")
def non_max_suppression_with_scores(boxes, scores, max_output_size, iou_threshold=0.5,
                                    score_threshold=float("-inf"), soft_nms_sigma=0.0, name=None):
    """tf.image.non_max_suppression_with_scores(...): (selected_indices, selected_scores); with
    soft_nms_sigma > 0, Soft-NMS (Bodla et al.): overlapping boxes' scores decay by
    exp(-iou^2 / (2 sigma)) instead of being dropped, and the decayed scores are returned."""
    with name_scope(name, "non_max_suppression_with_scores"):
        inputs = _nms_inputs(boxes, scores, max_output_size, iou_threshold, score_threshold, soft_nms_sigma)
        op = make_op("NonMaxSuppressionV5", inputs, {"pad_to_max_output_size": False}, name="NonMaxSuppressionV5")
        return op.outputs[0], op.outputs[1]


@tf_export("image.non_max_suppression_padded")
def non_max_suppression_padded(boxes, scores, max_output_size, iou_threshold=0.5, score_threshold=float("-inf"),
                               pad_to_max_output_size=False, name=None):
    """tf.image.non_max_suppression_padded(...): (selected_indices, valid_outputs); with
    pad_to_max_output_size the indices are zero-padded to max_output_size and valid_outputs
    says how many are real."""
    with name_scope(name, "non_max_suppression_padded"):
        inputs = _nms_inputs(boxes, scores, max_output_size, iou_threshold, score_threshold)
        op = make_op("NonMaxSuppressionV4", inputs, {"pad_to_max_output_size": bool(pad_to_max_output_size)},
                     name="NonMaxSuppressionV4")
        return op.outputs[0], op.outputs[1]


@tf_export("image.non_max_suppression_overlaps")
def non_max_suppression_overlaps(overlaps, scores, max_output_size, overlap_threshold=0.5,
                                 score_threshold=float("-inf"), name=None):
    """tf.image.non_max_suppression_overlaps(overlaps, scores, max_output_size,
    overlap_threshold=0.5, score_threshold=float('-inf'), name=None): greedy selection as
    non_max_suppression, with a given [n, n] overlap matrix in place of boxes' IoU."""
    with name_scope(name, "non_max_suppression_overlaps"):
        inputs = [convert_to_tensor(overlaps, dtypes.float32, name="overlaps"),
                  convert_to_tensor(scores, dtypes.float32, name="scores"),
                  convert_to_tensor(max_output_size, dtypes.int32, name="max_output_size"),
                  convert_to_tensor(overlap_threshold, dtypes.float32, name="overlap_threshold"),
                  convert_to_tensor(score_threshold, dtypes.float32, name="score_threshold")]
        return make_op("NonMaxSuppressionWithOverlaps", inputs, name="NonMaxSuppressionWithOverlaps").outputs[0]


# -- combined (batched, per class) NMS --------------------------------------------------------------
def _combined_kernel(node, ctx):
    pad_per_class, clip = bool(node.attr["pad_per_class"]), bool(node.attr["clip_boxes"])

    def run(boxes, scores, max_per_class, max_total, iou_threshold, score_threshold):
        boxes, scores = np.asarray(boxes, _F), np.asarray(scores, _F)
        if boxes.ndim != 4 or boxes.shape[3] != 4:
            raise invalid(node, f"boxes must be 4-D [batch, num_boxes, q, 4]{list(boxes.shape)}")
        if scores.ndim != 3 or scores.shape[:2] != boxes.shape[:2]:
            raise invalid(node, f"scores must be 3-D [batch, num_boxes, num_classes] matching boxes"
                                f"{list(scores.shape)}")
        batch, _, q, _ = boxes.shape
        classes = scores.shape[2]
        if q not in (1, classes):
            raise invalid(node, f"third dimension of boxes must be either 1 or {classes}")
        per_class, total = _max_output(node, max_per_class), int(_scalar(node, max_total, "max_total_size"))
        if total <= 0:
            raise invalid(node, f"max_total_size must be > 0, got {total}")
        size = min(per_class * classes, total) if pad_per_class else total
        check_output_size(node, [batch, size, 4])
        thr = _threshold(node, iou_threshold, "iou_threshold")
        score_thr = _scalar(node, score_threshold, "score_threshold")
        out_boxes = np.zeros((batch, size, 4), _F)
        out_scores, out_classes = np.zeros((batch, size), _F), np.zeros((batch, size), _F)
        valid = np.zeros(batch, np.int32)
        for b in range(batch):
            found = []   # (score, class, box index)
            for c in range(classes):
                class_boxes = boxes[b, :, c if q > 1 else 0]
                selected, kept = _greedy(scores[b, :, c], _iou(class_boxes), per_class, thr, score_thr)
                found += [(s, c, i) for i, s in zip(selected, kept)]
            found.sort(key=lambda t: -t[0])   # stable: equal scores keep class order
            found = found[:size]
            valid[b] = len(found)
            for k, (s, c, i) in enumerate(found):
                box = boxes[b, i, c if q > 1 else 0]
                out_boxes[b, k] = np.clip(box, 0, 1) if clip else box
                out_scores[b, k], out_classes[b, k] = s, c
        return out_boxes, out_scores, out_classes, valid
    return run


def _combined_infer(op):
    boxes = dims_with_rank(op.inputs[0], 4, "boxes")
    scores = dims_with_rank(op.inputs[1], 3, "scores")
    for i, what in ((2, "max_output_size_per_class"), (3, "max_total_size"), (4, "iou_threshold"),
                    (5, "score_threshold")):
        dims_with_rank(op.inputs[i], 0, what)
    if boxes[3] not in (None, 4):
        raise ValueError(f"Dimension must be 4 but is {boxes[3]}")
    batch = boxes[0] if boxes[0] is not None else scores[0]
    per_class, total = static_int(op.inputs[2]), static_int(op.inputs[3])
    size = total
    if op.get_attr("pad_per_class"):
        size = None if None in (per_class, total, scores[2]) else min(per_class * scores[2], total)
    return [(dtypes.float32, TensorShape([batch, size, 4])), (dtypes.float32, TensorShape([batch, size])),
            (dtypes.float32, TensorShape([batch, size])), (dtypes.int32, TensorShape([batch]))]


register("CombinedNonMaxSuppression", _combined_infer, _combined_kernel, grad=None,
         dtypes={0: ("boxes", (dtypes.float32,)), 1: ("scores", (dtypes.float32,)),
                 2: ("max_output_size_per_class", (dtypes.int32,)), 3: ("max_total_size", (dtypes.int32,)),
                 4: ("iou_threshold", (dtypes.float32,)), 5: ("score_threshold", (dtypes.float32,))})


@tf_export("image.combined_non_max_suppression")
def combined_non_max_suppression(boxes, scores, max_output_size_per_class, max_total_size, iou_threshold=0.5,
                                 score_threshold=float("-inf"), pad_per_class=False, clip_boxes=True, name=None):
    """tf.image.combined_non_max_suppression(boxes, scores, max_output_size_per_class,
    max_total_size, iou_threshold=0.5, score_threshold=float('-inf'), pad_per_class=False,
    clip_boxes=True, name=None): greedy NMS per batch element and class (boxes
    [batch, num_boxes, q, 4], q 1 or num_classes; scores [batch, num_boxes, num_classes]),
    then the best max_total_size of them: (nmsed_boxes, nmsed_scores, nmsed_classes,
    valid_detections), zero-padded; boxes clipped to [0, 1] when clip_boxes."""
    with name_scope(name, "combined_non_max_suppression"):
        inputs = [convert_to_tensor(boxes, dtypes.float32, name="boxes"),
                  convert_to_tensor(scores, dtypes.float32, name="scores"),
                  convert_to_tensor(max_output_size_per_class, dtypes.int32, name="max_output_size_per_class"),
                  convert_to_tensor(max_total_size, dtypes.int32, name="max_total_size"),
                  convert_to_tensor(iou_threshold, dtypes.float32, name="iou_threshold"),
                  convert_to_tensor(score_threshold, dtypes.float32, name="score_threshold")]
        op = make_op("CombinedNonMaxSuppression", inputs,
                     {"pad_per_class": bool(pad_per_class), "clip_boxes": bool(clip_boxes)},
                     name="CombinedNonMaxSuppression")
        return tuple(op.outputs)


# -- crop_and_resize --------------------------------------------------------------------------------
def _sample_positions(a, b, size: int, crop: int):
    """Where TF samples a crop from coordinate a to b of an axis of `size` pixels: float32
    positions, and which of them fall inside the image."""
    if crop > 1:
        scale = (_F(b) - _F(a)) * _F(size - 1) / _F(crop - 1)
        pos = _F(a) * _F(size - 1) + np.arange(crop, dtype=_F) * scale
    else:
        pos = np.array([0.5 * (float(a) + float(b)) * (size - 1)], _F)
    return pos.astype(_F, copy=False), (pos >= 0) & (pos <= size - 1)


def _lerp_indices(pos: np.ndarray, size: int):
    lo = np.clip(np.floor(pos), 0, size - 1).astype(np.int64)
    hi = np.clip(np.ceil(pos), 0, size - 1).astype(np.int64)
    return lo, hi, (pos - np.floor(pos)).astype(_F)


def _nearest_indices(pos: np.ndarray, size: int):
    return np.clip(np.floor(pos + _F(0.5)), 0, size - 1).astype(np.int64)


def _crop_checks(node, boxes, box_ind, batch: int):
    boxes, box_ind = np.asarray(boxes, _F), np.asarray(box_ind)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise invalid(node, f"boxes must be 2-D [num_boxes, 4]{list(boxes.shape)}")
    if box_ind.ndim != 1 or box_ind.shape[0] != boxes.shape[0]:
        raise invalid(node, f"box_index has incompatible shape{list(box_ind.shape)} (boxes: {list(boxes.shape)})")
    if box_ind.size and (box_ind.min() < 0 or box_ind.max() >= batch):
        raise invalid(node, f"box_index has values outside [0, batch_size): {box_ind.tolist()} (batch_size {batch})")
    return boxes, box_ind


def _crop_size(node, crop_size):
    size = np.reshape(crop_size, -1)
    if size.shape != (2,):
        raise invalid(node, f"crop_size must be a 1-D tensor of length 2, got shape {list(np.shape(crop_size))}")
    if (size <= 0).any():
        raise invalid(node, f"crop dimensions must be positive, got {size.tolist()}")
    return int(size[0]), int(size[1])


def _crop_and_resize_kernel(node, ctx):
    method, extrapolation = node.attr["method"], _F(node.attr["extrapolation_value"])
    if method not in ("bilinear", "nearest"):
        raise invalid(node, f"method must be 'bilinear' or 'nearest', got {method!r}")

    def run(image, boxes, box_ind, crop_size):
        image = np.asarray(image)
        if image.ndim != 4:
            raise invalid(node, f"input image must be 4-D{list(image.shape)}")
        batch, h, w, depth = image.shape
        if h <= 0 or w <= 0:
            raise invalid(node, f"image dimensions must be positive{list(image.shape)}")
        boxes, box_ind = _crop_checks(node, boxes, box_ind, batch)
        ch, cw = _crop_size(node, crop_size)
        check_output_size(node, [len(boxes), ch, cw, depth])
        out = np.full((len(boxes), ch, cw, depth), extrapolation, _F)
        for k, (y1, x1, y2, x2) in enumerate(boxes):
            py, vy = _sample_positions(y1, y2, h, ch)
            px, vx = _sample_positions(x1, x2, w, cw)
            img = image[box_ind[k]].astype(_F, copy=False)
            if method == "nearest":
                crop = img[_nearest_indices(py, h)][:, _nearest_indices(px, w)]
            else:
                y0, y1_, ly = _lerp_indices(py, h)
                x0, x1_, lx = _lerp_indices(px, w)
                lx = lx[None, :, None]
                top = img[y0][:, x0] + (img[y0][:, x1_] - img[y0][:, x0]) * lx
                bottom = img[y1_][:, x0] + (img[y1_][:, x1_] - img[y1_][:, x0]) * lx
                crop = top + (bottom - top) * ly[:, None, None]
            out[k] = np.where((vy[:, None] & vx[None, :])[..., None], crop, extrapolation)
        return out
    return run


def _grad_image_kernel(node, ctx):
    method, dt = node.attr["method"], dtypes.as_dtype(node.attr["T"]).as_numpy_dtype

    def run(grads, boxes, box_ind, image_size):
        size = [int(v) for v in np.reshape(image_size, -1)]
        if len(size) != 4 or min(size) <= 0:
            raise invalid(node, f"image_size must be 4 positive dims [batch, height, width, depth], got {size}")
        batch, h, w, depth = size
        grads = np.asarray(grads, _F)
        boxes, box_ind = _crop_checks(node, boxes, box_ind, batch)
        if grads.ndim != 4 or grads.shape[0] != len(boxes) or grads.shape[3] != depth:
            raise invalid(node, f"grads has incompatible shape{list(grads.shape)}")
        check_output_size(node, size)
        out = np.zeros(size, np.float64)
        for k, (y1, x1, y2, x2) in enumerate(boxes):
            py, vy = _sample_positions(y1, y2, h, grads.shape[1])
            px, vx = _sample_positions(x1, x2, w, grads.shape[2])
            g = grads[k] * (vy[:, None] & vx[None, :])[..., None]
            b = box_ind[k]
            if method == "nearest":
                np.add.at(out[b], (_nearest_indices(py, h)[:, None], _nearest_indices(px, w)[None, :]), g)
                continue
            y0, y1_, ly = _lerp_indices(py, h)
            x0, x1_, lx = _lerp_indices(px, w)
            ly, lx = ly[:, None, None], lx[None, :, None]
            for ys, wy in ((y0, 1 - ly), (y1_, ly)):
                for xs, wx in ((x0, 1 - lx), (x1_, lx)):
                    np.add.at(out[b], (ys[:, None], xs[None, :]), g * wy * wx)
        return out.astype(dt)
    return run


def _grad_boxes_kernel(node, ctx):
    def run(grads, image, boxes, box_ind):
        image, grads = np.asarray(image), np.asarray(grads, _F)
        batch, h, w, _ = image.shape
        boxes, box_ind = _crop_checks(node, boxes, box_ind, batch)
        out = np.zeros((len(boxes), 4), _F)
        ch, cw = grads.shape[1:3]
        for k, (y1, x1, y2, x2) in enumerate(boxes):
            py, vy = _sample_positions(y1, y2, h, ch)
            px, vx = _sample_positions(x1, x2, w, cw)
            img = image[box_ind[k]].astype(_F, copy=False)
            y0, y1_, ly = _lerp_indices(py, h)
            x0, x1_, lx = _lerp_indices(px, w)
            ly, lx = ly[:, None, None], lx[None, :, None]
            tl, tr = img[y0][:, x0], img[y0][:, x1_]
            bl, br = img[y1_][:, x0], img[y1_][:, x1_]
            g = grads[k] * (vy[:, None] & vx[None, :])[..., None]
            dy = ((1 - lx) * (bl - tl) + lx * (br - tr)) * g   # d(out)/d(in_y) times the gradient
            dx = ((1 - ly) * (tr - tl) + ly * (br - bl)) * g
            ry = np.arange(ch, dtype=_F)[:, None, None] * ((h - 1) / (ch - 1)) if ch > 1 else None
            rx = np.arange(cw, dtype=_F)[None, :, None] * ((w - 1) / (cw - 1)) if cw > 1 else None
            if ry is None:
                out[k, 0] = out[k, 2] = dy.sum() * 0.5 * (h - 1)
            else:
                out[k, 0], out[k, 2] = (dy * (h - 1 - ry)).sum(), (dy * ry).sum()
            if rx is None:
                out[k, 1] = out[k, 3] = dx.sum() * 0.5 * (w - 1)
            else:
                out[k, 1], out[k, 3] = (dx * (w - 1 - rx)).sum(), (dx * rx).sum()
        return out
    return run


def _crop_infer(op):
    image = dims_with_rank(op.inputs[0], 4, "image")
    boxes = dims_with_rank(op.inputs[1], 2, "boxes")
    ind = dims_with_rank(op.inputs[2], 1, "box_ind")
    dims_with_rank(op.inputs[3], 1, "crop_size")
    if boxes[1] not in (None, 4):
        raise ValueError(f"Dimension must be 4 but is {boxes[1]}")
    crop = static_ints(op.inputs[3]) or [None, None]
    shape_ = TensorShape([boxes[0] if boxes[0] is not None else ind[0]] + crop + [image[3]])
    check_output_size(op, shape_)
    return [(dtypes.float32, shape_)]


def _grad_image_infer(op):
    size = static_ints(op.inputs[3])
    return [(dtypes.as_dtype(op.get_attr("T")), TensorShape(size if size else [None] * 4))]


def _crop_and_resize_grad(op, grad):
    image = op.inputs[0]
    image_size = image.shape.as_list() if image.shape.is_fully_defined() else shape(image)
    d_image = None
    if image.dtype in (dtypes.float16, dtypes.float32, dtypes.float64):
        d_image = make_op("CropAndResizeGradImage", [grad, op.inputs[1], op.inputs[2],
                                                     convert_to_tensor(image_size, dtypes.int32)],
                          {"T": image.dtype, "method": op.get_attr("method")}).outputs[0]
    # TF's choice: the boxes' gradient of nearest sampling is approximated by bilinear's
    d_boxes = make_op("CropAndResizeGradBoxes", [grad, image, op.inputs[1], op.inputs[2]],
                      {"method": "bilinear"}).outputs[0]
    return [d_image, d_boxes, None, None]


register("CropAndResize", _crop_infer, _crop_and_resize_kernel, grad=_crop_and_resize_grad,
         dtypes={0: ("image", REAL), 1: ("boxes", (dtypes.float32,)), 2: ("box_ind", (dtypes.int32,)),
                 3: ("crop_size", (dtypes.int32,))})
register("CropAndResizeGradImage", _grad_image_infer, _grad_image_kernel, grad=None,
         dtypes={0: ("grads", (dtypes.float32,)), 1: ("boxes", (dtypes.float32,)), 2: ("box_ind", (dtypes.int32,)),
                 3: ("image_size", (dtypes.int32,))})
register("CropAndResizeGradBoxes", lambda op: [(dtypes.float32, op.inputs[2].shape)], _grad_boxes_kernel, grad=None,
         dtypes={0: ("grads", (dtypes.float32,)), 1: ("image", REAL), 2: ("boxes", (dtypes.float32,)),
                 3: ("box_ind", (dtypes.int32,))})


@tf_export("image.crop_and_resize")
def crop_and_resize(image, boxes, box_ind=None, crop_size=None, method="bilinear", extrapolation_value=0,
                    name=None, box_indices=None):
    """tf.image.crop_and_resize(image, boxes, box_ind, crop_size, method='bilinear',
    extrapolation_value=0, name=None): for each box [y1, x1, y2, x2] (normalized: 0 and 1 are
    the first and last pixel; y1 > y2 flips) of image[box_ind[i]], a crop resampled to crop_size
    [crop_height, crop_width]: float32 [num_boxes, crop_height, crop_width, depth]; samples
    outside the image are extrapolation_value. Differentiable in image and boxes."""
    if box_ind is None:
        box_ind = box_indices
    if box_ind is None or crop_size is None:
        raise TypeError("crop_and_resize() needs box_ind (or box_indices) and crop_size")
    inputs = [convert_to_tensor(image, name="image"), convert_to_tensor(boxes, dtypes.float32, name="boxes"),
              convert_to_tensor(box_ind, dtypes.int32, name="box_ind"),
              convert_to_tensor(crop_size, dtypes.int32, name="crop_size")]
    attrs = {"method": method, "extrapolation_value": float(extrapolation_value)}
    return make_op("CropAndResize", inputs, attrs, name=name or "CropAndResize").outputs[0]


# -- extract_glimpse --------------------------------------------------------------------------------
def _glimpse_kernel(node, ctx):
    centered, normalized = bool(node.attr["centered"]), bool(node.attr["normalized"])
    rng = np.random.default_rng()

    def run(images, size, offsets):
        images, offsets = np.asarray(images, _F), np.asarray(offsets, _F)
        if images.ndim != 4:
            raise invalid(node, f"input must be a 4-D tensor{list(images.shape)}")
        batch, h, w, channels = images.shape
        size = np.reshape(size, -1)
        if size.shape != (2,) or (size <= 0).any():
            raise invalid(node, f"size must be a vector of 2 positive sizes, got {size.tolist()}")
        if offsets.shape != (batch, 2):
            raise invalid(node, f"offsets must be a [batch_size, 2] matrix{list(offsets.shape)}")
        gh, gw = int(size[0]), int(size[1])
        check_output_size(node, [batch, gh, gw, channels])
        out = np.empty((batch, gh, gw, channels), _F)
        for b in range(batch):
            y, x = offsets[b]
            if normalized:   # offsets in [-1, 1] (centered) or [0, 1] of the image's size
                y, x = y * _F(h), x * _F(w)
            if centered:
                y, x = y / _F(2) + _F(h) / _F(2), x / _F(2) + _F(w) / _F(2)
            top, left = int(y - _F(gh) / _F(2)), int(x - _F(gw) / _F(2))   # truncated toward zero, as TF's
            lo, hi = (images[b].min(), images[b].max()) if images[b].size else (0, 0)
            # outside the image: uniform noise over the image's range (the v1 op's `noise` attribute
            # defaults to "uniform", which TF's kernel honours whatever uniform_noise says)
            out[b] = lo + rng.random((gh, gw, channels), dtype=_F) * (hi - lo)
            y0, y1, x0, x1 = max(top, 0), min(top + gh, h), max(left, 0), min(left + gw, w)
            if y0 < y1 and x0 < x1:
                out[b, y0 - top:y1 - top, x0 - left:x1 - left] = images[b, y0:y1, x0:x1]
        return out
    return run


def _glimpse_infer(op):
    images = dims_with_rank(op.inputs[0], 4, "input")
    dims_with_rank(op.inputs[1], 1, "size")
    dims_with_rank(op.inputs[2], 2, "offsets")
    size = static_ints(op.inputs[1]) or [None, None]
    return [(dtypes.float32, TensorShape([images[0]] + size + [images[3]]))]


register("ExtractGlimpse", _glimpse_infer, _glimpse_kernel, grad=None, stateful=True,
         dtypes={0: ("input", (dtypes.float32,)), 1: ("size", (dtypes.int32,)), 2: ("offsets", (dtypes.float32,))})


@tf_export("image.extract_glimpse")
def extract_glimpse(input, size, offsets, centered=True, normalized=True, uniform_noise=True, name=None):
    """tf.image.extract_glimpse(input, size, offsets, centered=True, normalized=True,
    uniform_noise=True, name=None): from each image of a float32 [batch, h, w, c] batch, the
    `size` [glimpse_height, glimpse_width] window around offsets[i] = (y, x): pixels when
    normalized=False, else fractions of the size; relative to the image's centre (in [-1, 1]
    when normalized) when centered, else to its top-left corner. Where the window leaves the
    image it holds uniform noise over the image's range of values, as TF's op gives it."""
    inputs = [convert_to_tensor(input, dtypes.float32, name="input"),
              convert_to_tensor(size, dtypes.int32, name="size"),
              convert_to_tensor(offsets, dtypes.float32, name="offsets")]
    attrs = {"centered": bool(centered), "normalized": bool(normalized), "uniform_noise": bool(uniform_noise),
             "noise": "uniform"}
    return make_op("ExtractGlimpse", inputs, attrs, name=name or "ExtractGlimpse").outputs[0]
