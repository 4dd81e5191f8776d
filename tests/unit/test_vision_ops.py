"""Issue 28's vision ops beyond the values recorded from TF (test_vision_misc_recorded.py):
gradients against finite differences, greedy NMS against a plain reference, JPEG quality
against Pillow, and bad input: TF's error class, naming the op."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import tensorweave as tf
from unit_helpers import run

pytestmark = pytest.mark.usefixtures("graph")
R = np.random.RandomState(7)


def _numeric_grad(f, x: np.ndarray, eps: float = 1e-3) -> np.ndarray:
    g = np.zeros_like(x, np.float64)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        g[i] = (f(hi) - f(lo)) / (2 * eps)
    return g


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
def test_crop_and_resize_gradients_match_finite_differences(method):
    image = R.rand(2, 5, 6, 2)
    boxes = np.array([[0.13, 0.21, 0.77, 0.88], [0.62, 0.9, 0.07, 0.12], [-0.3, 0.1, 0.4, 1.2]])
    weights = R.rand(3, 3, 4, 2)
    box_ind = [1, 0, 1]
    img_ph, box_ph = tf.placeholder(tf.float64, image.shape), tf.placeholder(tf.float32, boxes.shape)
    loss = tf.reduce_sum(tf.image.crop_and_resize(img_ph, box_ph, box_ind, [3, 4], method=method) * weights)
    d_image, d_boxes = tf.gradients(loss, [img_ph, box_ph])
    with tf.Session() as sess:
        def f(img=image, bx=boxes):
            return sess.run(loss, {img_ph: img, box_ph: bx})
        got_image, got_boxes = sess.run([d_image, d_boxes], {img_ph: image, box_ph: boxes})
        assert got_image.dtype == np.float64
        np.testing.assert_allclose(got_image, _numeric_grad(lambda v: f(img=v), image), atol=1e-3)
        if method == "bilinear":   # nearest's box gradient is TF's bilinear approximation
            np.testing.assert_allclose(got_boxes, _numeric_grad(lambda v: f(bx=v), boxes, 1e-4), rtol=2e-2, atol=2e-2)


def _greedy_reference(boxes, scores, n, thr):
    def iou(a, b):
        ya0, xa0, ya1, xa1 = min(a[0], a[2]), min(a[1], a[3]), max(a[0], a[2]), max(a[1], a[3])
        yb0, xb0, yb1, xb1 = min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])
        inter = max(min(ya1, yb1) - max(ya0, yb0), 0) * max(min(xa1, xb1) - max(xa0, xb0), 0)
        union = (ya1 - ya0) * (xa1 - xa0) + (yb1 - yb0) * (xb1 - xb0) - inter
        return inter / union
    kept = []
    for i in sorted(range(len(scores)), key=lambda i: (-scores[i], i)):
        if len(kept) < n and all(iou(boxes[i], boxes[j]) <= thr for j in kept):
            kept.append(i)
    return kept


def test_non_max_suppression_is_greedy_selection_by_score():
    boxes = np.concatenate([R.rand(300, 2) * 20, R.rand(300, 2) * 20 + 3], 1).astype(np.float32)
    scores = R.rand(300).astype(np.float32)
    got = run(tf.image.non_max_suppression(boxes, scores, 60, iou_threshold=0.35))
    assert got.dtype == np.int32
    assert got.tolist() == _greedy_reference(boxes.astype(np.float64), scores, 60, 0.35)
    # equal scores: the lower index first, as TF's candidate order
    same = run(tf.image.non_max_suppression(np.tile(np.float32([[0, 0, 1, 1]]), [3, 1]), [0.5, 0.5, 0.5], 3, 0.99))
    assert same.tolist() == [0]
    padded, valid = run(tf.image.non_max_suppression_padded(boxes[:5], scores[:5], 8, 0.35,
                                                            pad_to_max_output_size=True))
    assert padded.shape == (8,) and valid == len(_greedy_reference(boxes[:5], scores[:5], 8, 0.35))
    assert (padded[valid:] == 0).all()


def test_non_max_suppression_bad_input_names_the_op():
    with pytest.raises(ValueError, match="rank 2.*NonMaxSuppressionV3"):
        tf.image.non_max_suppression(np.zeros((1, 3, 4), np.float32), np.zeros(3, np.float32), 2)
    boxes = tf.placeholder(tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="NonMaxSuppressionV3.*boxes must be 2-D"):
        run(tf.image.non_max_suppression(boxes, [0.5, 0.4], 2), {boxes: np.zeros((1, 2, 4))})
    with pytest.raises(tf.errors.InvalidArgumentError, match="NonMaxSuppressionV3.*boxes must have 4 columns"):
        run(tf.image.non_max_suppression(boxes, [0.5, 0.4], 2), {boxes: np.zeros((2, 3))})
    with pytest.raises(tf.errors.InvalidArgumentError, match="iou_threshold must be in \\[0, 1\\]"):
        run(tf.image.non_max_suppression(np.zeros((2, 4), np.float32), [0.5, 0.4], 2, iou_threshold=1.5))
    with pytest.raises(tf.errors.InvalidArgumentError, match="CombinedNonMaxSuppression.*third dimension"):
        cboxes = tf.placeholder(tf.float32, [1, 2, None, 4])
        run(tf.image.combined_non_max_suppression(cboxes, np.ones((1, 2, 3), np.float32), 2, 4),
            {cboxes: np.zeros((1, 2, 2, 4))})
    with pytest.raises(TypeError, match="boxes"):
        tf.image.non_max_suppression(np.zeros((2, 4), np.int32), [0.5, 0.4], 2)


def test_crop_and_resize_bad_input_names_the_op():
    image = np.zeros((2, 4, 4, 1), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="CropAndResize.*box_index has values outside"):
        run(tf.image.crop_and_resize(image, [[0, 0, 1, 1]], [2], [2, 2]))
    with pytest.raises(ValueError, match="rank 4.*CropAndResize"):
        tf.image.crop_and_resize(image[0], [[0, 0, 1, 1]], [0], [2, 2])
    size = tf.placeholder(tf.int32, [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="crop dimensions must be positive"):
        run(tf.image.crop_and_resize(image, [[0, 0, 1, 1]], [0], size), {size: [0, 2]})


def _pillow_round_trip(img: np.ndarray, quality: int) -> np.ndarray:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=quality)
    return np.asarray(Image.open(io.BytesIO(buf.getvalue())))


def test_adjust_jpeg_quality_is_a_jpeg_round_trip_at_that_quality():
    img = (np.cumsum(np.cumsum(R.rand(16, 16, 3), 0), 1) * 8 % 256).astype(np.uint8)
    for quality in (10, 90):
        np.testing.assert_array_equal(run(tf.image.adjust_jpeg_quality(img, quality)), _pillow_round_trip(img, quality))
    as_float = run(tf.image.adjust_jpeg_quality(img.astype(np.float32) / 255, tf.constant(30)))
    assert as_float.dtype == np.float32
    np.testing.assert_allclose(as_float * 255, _pillow_round_trip(img, 30), atol=0.6)
    t = tf.image.random_jpeg_quality(img, 5, 95)
    with tf.Session() as sess:
        outs = {sess.run(t).tobytes() for _ in range(8)}
    assert len(outs) > 1   # a fresh quality per run
    with pytest.raises(ValueError, match="less than"):
        tf.image.random_jpeg_quality(img, 50, 50)


def test_jpeg_crop_outside_the_image_and_not_a_jpeg_name_the_op():
    jpg = run(tf.image.encode_jpeg(np.zeros((6, 5, 3), np.uint8)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="DecodeAndCropJpeg.*crop window"):
        run(tf.image.decode_and_crop_jpeg(jpg, [2, 2, 5, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="ExtractJpegShape"):
        run(tf.image.extract_jpeg_shape(b"\x89PNG not a jpeg"))
    assert run(tf.image.is_jpeg(jpg)) and not run(tf.image.is_jpeg(b"\x89PNG"))


def test_identical_images_have_ssim_one_and_infinite_psnr():
    img = R.rand(2, 24, 24, 3).astype(np.float32)
    np.testing.assert_allclose(run(tf.image.ssim(img, img, 1.0)), [1, 1], rtol=1e-5)
    np.testing.assert_allclose(run(tf.image.ssim_multiscale(img, img, 1.0, filter_size=1)), [1, 1], rtol=1e-5)
    assert np.isinf(run(tf.image.psnr(img, img, 1.0))).all()
    with pytest.raises(tf.errors.InvalidArgumentError):   # TF's Assert: the image is smaller than the filter
        run(tf.image.ssim(img[:, :8], img[:, :8], 1.0))


def test_preserve_aspect_ratio_with_sizes_known_only_at_run_time():
    # the static path's values are TF's (test_image.py's recorded resize_images cases)
    image = R.rand(1, 9, 11, 2).astype(np.float32)
    images, size = tf.placeholder(tf.float32, [None, None, None, 2]), tf.placeholder(tf.int32, [2])
    dynamic = tf.image.resize(images, size, preserve_aspect_ratio=True)
    static = tf.image.resize(image, [6, 6], preserve_aspect_ratio=True)
    with tf.Session() as sess:
        got, want = sess.run([dynamic, static], {images: image, size: [6, 6]})
    assert want.shape == (1, 5, 6, 2)
    np.testing.assert_array_equal(got, want)
