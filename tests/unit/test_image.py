"""tf.image against TensorFlow's recorded values (fixtures/record_tf_images.py), random image ops
by statistics and seed rules, codecs through Pillow, and bad image data."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from unit_helpers import run

pytestmark = pytest.mark.usefixtures("graph")
FIX = os.path.join(os.path.dirname(__file__), "fixtures")
with open(os.path.join(FIX, "tf_images.json")) as _f:
    RECORDED = json.load(_f)


def _inputs() -> dict:
    rs = np.random.RandomState(0)
    f = rs.rand(2, 5, 6, 3).astype(np.float32)
    return {"f": f, "f3": f[0], "u8": (rs.rand(2, 5, 6, 3) * 255).astype(np.uint8),
            "gray": rs.rand(2, 5, 6, 1).astype(np.float32), "i32": (rs.rand(5, 6, 3) * 2 ** 31).astype(np.int32),
            "big": rs.rand(1, 9, 11, 2).astype(np.float32)}


INPUTS = _inputs()
CASES = RECORDED["cases"]


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{c['fn']}" for i, c in enumerate(CASES)])
def test_matches_tensorflow(case):
    kw = dict(case["kwargs"])
    if "dtype" in kw:
        kw["dtype"] = getattr(tf, kw["dtype"])
    t = getattr(tf.image, case["fn"])(tf.constant(INPUTS[case["input"]]), **kw)
    got = run(t)
    want = np.array(case["value"], dtype=case["dtype"]).reshape(case["shape"])
    assert got.dtype == want.dtype and got.shape == want.shape
    assert t.shape.is_compatible_with(want.shape)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    else:   # integer results after float arithmetic may round one step apart
        assert np.abs(got.astype(np.int64) - want.astype(np.int64)).max() <= 1


# -- codecs ------------------------------------------------------------------------------------------
def _file(name: str) -> bytes:
    with open(os.path.join(FIX, name), "rb") as f:
        return f.read()


def test_png_written_by_tensorflow_decodes_exactly_and_round_trips():
    png = _file("tf_image.png")
    img = INPUTS["u8"][0]
    np.testing.assert_array_equal(run(tf.image.decode_png(png)), img)
    codecs = RECORDED["codecs"]
    np.testing.assert_array_equal(run(tf.image.decode_png(png, channels=1)).reshape(-1), codecs["png_as_gray"])
    np.testing.assert_array_equal(run(tf.image.decode_png(png, channels=4, dtype=tf.uint16)).reshape(-1),
                                  codecs["png_as_rgba16"])
    ours = run(tf.image.encode_png(img))
    np.testing.assert_array_equal(run(tf.image.decode_image(ours)), img)
    assert run(tf.image.decode_image(tf.image.encode_png(img), dtype=tf.float32)).dtype == np.float32


def test_jpeg_written_by_tensorflow_decodes_as_tensorflow_does():
    jpg, codecs = _file("tf_image.jpg"), RECORDED["codecs"]
    rgb = run(tf.image.decode_jpeg(jpg))
    assert rgb.shape == (5, 6, 3) and rgb.dtype == np.uint8
    np.testing.assert_allclose(rgb.reshape(-1), codecs["jpeg_rgb_accurate"], atol=1)
    np.testing.assert_allclose(run(tf.image.decode_jpeg(jpg, channels=1)).reshape(-1), codecs["jpeg_as_gray"], atol=1)
    np.testing.assert_allclose(run(tf.image.decode_jpeg(_file("tf_image_gray.jpg"), channels=3)).reshape(-1),
                               codecs["gray_jpeg_as_rgb"], atol=1)
    ours = run(tf.image.decode_jpeg(tf.image.encode_jpeg(rgb, quality=100, chroma_downsampling=False)))
    assert np.abs(ours.astype(int) - rgb).mean() < 3


@pytest.mark.parametrize("decode, good", [(tf.image.decode_png, "tf_image.png"), (tf.image.decode_jpeg, "tf_image.jpg"),
                                          (tf.image.decode_image, "tf_image.png")])
def test_data_that_is_not_an_image_names_the_op(decode, good):
    bad = tf.placeholder(tf.string, [])
    out = decode(bad, name="decoder")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="decoder") as info:
            sess.run(out, {bad: b"this is not an image at all"})
        assert "PNG" in str(info.value) or "JPEG" in str(info.value) or "Unknown image file format" in str(info.value)
        # the same session still decodes a good image
        assert sess.run(out, {bad: _file(good)}).shape[:2] == (5, 6)


def test_truncated_png_is_invalid_argument():
    with pytest.raises(tf.errors.InvalidArgumentError, match="PNG"):
        run(tf.image.decode_png(_file("tf_image.png")[:40]))


# -- random image ops: statistics and seeds --------------------------------------------------------------
def _draws(build, n: int, feed=None):
    out = build()
    with tf.Session() as sess:
        return [sess.run(out, feed) for _ in range(n)]


def test_random_flips_are_fair_and_exact():
    img = INPUTS["f3"]
    outs = _draws(lambda: tf.image.random_flip_left_right(img), 400)
    flipped = sum(np.array_equal(o, img[:, ::-1]) for o in outs)
    assert sum(np.array_equal(o, img) for o in outs) + flipped == 400
    assert 150 < flipped < 250
    batch = _draws(lambda: tf.image.random_flip_up_down(INPUTS["f"]), 200)
    per_image = [[np.array_equal(o[i], INPUTS["f"][i, ::-1]) for i in range(2)] for o in batch]
    assert 60 < sum(p[0] for p in per_image) < 140 and any(p[0] != p[1] for p in per_image)


def test_random_brightness_contrast_hue_saturation_ranges():
    img = INPUTS["f3"]
    deltas = [float((o - img).mean()) for o in _draws(lambda: tf.image.random_brightness(img, 0.3), 300)]
    assert -0.3 <= min(deltas) < -0.2 and 0.2 < max(deltas) <= 0.3 and abs(np.mean(deltas)) < 0.05
    centered = img - img.mean(axis=(0, 1))
    factors = [float(np.sum((o - img.mean(axis=(0, 1))) * centered) / np.sum(centered ** 2))
               for o in _draws(lambda: tf.image.random_contrast(img, 0.2, 1.8), 200)]
    assert 0.2 <= min(factors) < 0.4 and 1.6 < max(factors) <= 1.8
    for build in (lambda: tf.image.random_hue(img, 0.2), lambda: tf.image.random_saturation(img, 0.5, 1.5)):
        outs = _draws(build, 5)
        assert all(o.shape == img.shape and 0 <= o.min() and o.max() <= 1 + 1e-6 for o in outs)
        assert not np.array_equal(outs[0], outs[1])


def test_random_crop_covers_every_offset():
    img = np.arange(6 * 5).reshape(6, 5, 1).astype(np.float32)
    outs = _draws(lambda: tf.random_crop(img, [4, 3, 1]), 300)
    corners = {(int(o[0, 0, 0]) // 5, int(o[0, 0, 0]) % 5) for o in outs}
    assert corners == {(r, c) for r in range(3) for c in range(3)}
    for o in outs:
        r, c = int(o[0, 0, 0]) // 5, int(o[0, 0, 0]) % 5
        np.testing.assert_array_equal(o, img[r:r + 4, c:c + 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Need value.shape >= size"):
        run(tf.random_crop(img, [7, 3, 1]))


def test_seed_rules_repeat_sequences_across_sessions():
    def sequence(op_seed):
        g = tf.Graph()
        with g.as_default():
            tf.set_random_seed(7)
            img = tf.constant(INPUTS["f3"])
            out = tf.image.random_brightness(tf.image.random_flip_left_right(tf.random_crop(img, [3, 3, 3],
                                                                                            seed=op_seed)), 0.5)
            with tf.Session() as sess:
                return [sess.run(out) for _ in range(4)]
    a, b = sequence(1), sequence(1)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not all(np.array_equal(x, y) for x, y in zip(a, sequence(2)))
    assert not np.array_equal(a[0], a[1])


def test_sample_distorted_bounding_box_honours_its_constraints():
    boxes = [[[0.2, 0.3, 0.6, 0.7]]]
    begin, size, bbox = tf.image.sample_distorted_bounding_box(
        [40, 50, 3], boxes, min_object_covered=0.5, aspect_ratio_range=[0.5, 2.0], area_range=[0.1, 0.8], seed=3)
    with tf.Session() as sess:
        for _ in range(50):
            b, s, box = sess.run([begin, size, bbox])
            h, w = s[0], s[1]
            assert s[2] == -1 and b[2] == 0 and 0 <= b[0] <= 40 - h and 0 <= b[1] <= 50 - w
            assert 0.1 * 2000 - 50 <= h * w <= 0.8 * 2000 + 50 and 0.4 <= w / h <= 2.5
            iy = min(b[0] + h, 24) - max(b[0], 8)
            ix = min(b[1] + w, 35) - max(b[1], 15)
            assert max(iy, 0) * max(ix, 0) / (16 * 20) >= 0.5 or (h, w) == (40, 50)
            np.testing.assert_allclose(box[0, 0], [b[0] / 40, b[1] / 50, (b[0] + h) / 40, (b[1] + w) / 50], 1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError, match="No bounding boxes"):
        run(tf.image.sample_distorted_bounding_box([4, 4, 3], tf.zeros([1, 0, 4]))[0])


def test_contrast_and_standardization_of_a_transposed_chw_image_match_numpy():
    # seed 003's records are CHW bytes transposed to HWC: the kernels see channel planes, not
    # interleaved channels, and must give the same numbers as for a dense HWC image.
    chw = np.random.RandomState(2).randint(0, 256, (3, 5, 6)).astype(np.uint8)
    image = tf.cast(tf.transpose(tf.constant(chw), [1, 2, 0]), tf.float32)
    x = chw.transpose(1, 2, 0).astype(np.float64)
    mean = x.mean(axis=(0, 1))
    np.testing.assert_allclose(run(tf.image.adjust_contrast(image, 1.7)), (x - mean) * 1.7 + mean, rtol=1e-5)
    want = (x - x.mean()) / max(x.std(), 1 / np.sqrt(x.size))
    np.testing.assert_allclose(run(tf.image.per_image_standardization(image)), want, rtol=1e-5, atol=1e-5)


def test_standardization_gradient_matches_finite_differences():
    x0 = INPUTS["f3"].astype(np.float64) * 3
    x = tf.placeholder(tf.float32, x0.shape)
    w = tf.constant(np.random.RandomState(1).randn(*x0.shape).astype(np.float32))
    loss = tf.reduce_sum(tf.image.per_image_standardization(x) * w)
    grad = tf.gradients(loss, x)[0]
    with tf.Session() as sess:
        g = sess.run(grad, {x: x0})
        eps = 1e-2
        for idx in [(0, 0, 0), (2, 3, 1), (4, 5, 2)]:
            xp, xm = x0.copy(), x0.copy()
            xp[idx] += eps
            xm[idx] -= eps
            fd = (sess.run(loss, {x: xp}) - sess.run(loss, {x: xm})) / (2 * eps)
            assert abs(fd - g[idx]) < 2e-2 * max(1, abs(fd))


@pytest.mark.parametrize("build, exc, message", [
    (lambda: tf.image.random_contrast(INPUTS["f3"], 0.5, 0.2), ValueError, "upper must be > lower"),
    (lambda: tf.image.random_brightness(INPUTS["f3"], -1), ValueError, "max_delta must be non-negative"),
    (lambda: tf.image.central_crop(INPUTS["f3"], 1.5), ValueError, "central_fraction"),
    (lambda: tf.image.crop_to_bounding_box(INPUTS["f3"], 0, 0, 9, 2), ValueError, "height must be >= target"),
    (lambda: tf.image.pad_to_bounding_box(INPUTS["f3"], 0, 0, 2, 9), ValueError, "height must be <= target"),
    (lambda: tf.image.resize_images(INPUTS["f3"], [2, 2], method=9), ValueError, "not implemented"),
    (lambda: tf.image.flip_left_right(np.zeros((3, 3), np.float32)), ValueError, "three-dimensional"),
])
def test_argument_errors(build, exc, message):
    with pytest.raises(exc, match=message):
        build()


@pytest.mark.parametrize("resize, kwargs", [(tf.image.resize_bilinear, {}), (tf.image.resize_bicubic, {}),
                                            (tf.image.resize_bilinear, {"align_corners": True}),
                                            (tf.image.resize_nearest_neighbor, {}),
                                            (tf.image.resize_bilinear, {"half_pixel_centers": True})])
def test_resize_gradients_match_finite_differences(resize, kwargs):
    x0 = INPUTS["big"].astype(np.float64)
    x = tf.placeholder(tf.float32, x0.shape)
    w = tf.constant(np.random.RandomState(2).randn(1, 6, 13, 2).astype(np.float32))
    loss = tf.reduce_sum(resize(x, [6, 13], **kwargs) * w)
    grad = tf.gradients(loss, x)[0]
    with tf.Session() as sess:
        g = sess.run(grad, {x: x0})
        assert g.shape == x0.shape
        eps = 1e-2
        for idx in [(0, 0, 0, 0), (0, 4, 5, 1), (0, 8, 10, 0), (0, 3, 7, 1)]:
            xp, xm = x0.copy(), x0.copy()
            xp[idx] += eps
            xm[idx] -= eps
            fd = (sess.run(loss, {x: xp}) - sess.run(loss, {x: xm})) / (2 * eps)
            assert abs(fd - g[idx]) < 1e-2 * max(1, abs(fd)), (idx, fd, g[idx])


def test_tf_io_has_the_image_codecs_as_tf1_does():
    img = np.random.RandomState(3).randint(0, 256, (5, 7, 3)).astype(np.uint8)
    with tf.Session() as sess:
        png = sess.run(tf.io.encode_png(img))
        back, generic = sess.run([tf.io.decode_png(png, channels=3), tf.io.decode_image(png)])
    np.testing.assert_array_equal(back, img)
    np.testing.assert_array_equal(generic, img)
