"""Segment reductions (sorted, unsorted, sparse) and the space/depth/batch block moves and
image patches: values against numpy, gradients against central finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from unit_helpers import check_grad, run

R = np.random.RandomState(5)
DATA = R.uniform(0.5, 2.0, (6, 3))
IDS = np.array([0, 0, 1, 3, 3, 3])
UIDS = np.array([2, 0, -1, 2, 0, 2])


def _reference(data, ids, n, fn, empty):
    out = np.full((n,) + data.shape[1:], empty, dtype=data.dtype)
    for s in range(n):
        rows = data[ids == s]
        if len(rows):
            out[s] = fn(rows, axis=0)
    return out


@pytest.mark.parametrize("op,fn,empty", [(tf.segment_sum, np.sum, 0), (tf.segment_mean, np.mean, 0),
                                         (tf.segment_max, np.max, 0), (tf.segment_min, np.min, 0),
                                         (tf.segment_prod, np.prod, 1)], ids=lambda v: getattr(v, "__name__", ""))
def test_sorted_segments(op, fn, empty):
    np.testing.assert_allclose(run(op(DATA, IDS)), _reference(DATA, IDS, 4, fn, empty))
    check_grad(lambda d: op(d, IDS), DATA)


@pytest.mark.parametrize("op,fn,empty", [
    (tf.unsorted_segment_sum, np.sum, 0), (tf.unsorted_segment_max, np.max, np.finfo(np.float64).min),
    (tf.unsorted_segment_min, np.min, np.finfo(np.float64).max), (tf.unsorted_segment_prod, np.prod, 1),
    (tf.unsorted_segment_mean, np.mean, 0),
    (tf.unsorted_segment_sqrt_n, lambda r, axis: r.sum(axis) / np.sqrt(len(r)), 0),
], ids=lambda v: getattr(v, "__name__", ""))
def test_unsorted_segments(op, fn, empty):
    np.testing.assert_allclose(run(op(DATA, UIDS, 4)), _reference(DATA, UIDS, 4, fn, empty))
    check_grad(lambda d: op(d, [2, 0, -1, 2, 1, 2], 3), DATA)   # no empty segment: max/min would be inf


@pytest.mark.parametrize("op,ufunc,start", [(tf.math.unsorted_segment_sum, np.add, 0),
                                             (tf.math.unsorted_segment_max, np.maximum, np.finfo(np.float32).min),
                                             (tf.math.unsorted_segment_prod, np.multiply, 1)],
                         ids=["sum", "max", "prod"])
@pytest.mark.parametrize("repeats", [1, 3, 20])
def test_unsorted_segments_combine_rows_in_order_with_the_bits_of_ufunc_at(op, ufunc, start, repeats):
    # each segment's rows combined in the order they come, as TF's kernel adds them (float sums
    # depend on the order): an id repeated up to `repeats` times, shuffled; NaN and -0.0 among them
    r = np.random.RandomState(repeats)
    ids = r.permutation(np.repeat(np.arange(40), r.randint(1, repeats + 1, 40)))
    data = (r.randn(ids.size, 3) * 1e3).astype(np.float32)
    data[r.randint(0, ids.size, 3), 0] = np.nan
    data[r.randint(0, ids.size, 3), 1] = -0.0
    expected = np.full((45, 3), start, np.float32)
    with np.errstate(over="ignore"):   # (products overflow to inf, in the kernel too)
        ufunc.at(expected, ids, data)   # (segments 40-44 empty: TF's 0, lowest float, 1)
    got = run(op(data, ids, 45))
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))


def test_unsorted_segment_max_of_ints_and_prod_gradient_with_zeros():
    out = run(tf.unsorted_segment_max(np.array([3, 1, 7], np.int32), [1, 1, 1], 2))
    np.testing.assert_array_equal(out, [np.iinfo(np.int32).min, 7])
    data = np.array([[0.0, 2.0], [3.0, 0.0], [4.0, 0.0], [5.0, 1.0]])
    check_grad(lambda d: tf.unsorted_segment_prod(d, [0, 0, 1, 1], 2), data)
    check_grad(lambda d: tf.segment_prod(d, [0, 0, 1, 1]), data)


def test_segment_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="not increasing"):
        run(tf.segment_sum(DATA, [1, 0, 0, 2, 2, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        run(tf.unsorted_segment_sum(DATA, UIDS, 2))


@pytest.mark.parametrize("op,scale", [(tf.sparse_segment_sum, lambda c: 1), (tf.sparse_segment_mean, lambda c: c),
                                      (tf.sparse_segment_sqrt_n, np.sqrt)], ids=["sum", "mean", "sqrt_n"])
def test_sparse_segments(op, scale):
    idx, ids = np.array([0, 2, 2, 5]), np.array([0, 0, 2, 2])
    expect = np.zeros((3, 3))
    for i, s in zip(idx, ids):
        expect[s] += DATA[i]
    counts = np.bincount(ids, minlength=3)
    expect /= np.asarray([scale(max(c, 1)) for c in counts])[:, None]
    np.testing.assert_allclose(run(op(DATA, idx, ids)), expect)
    with_n = run(op(DATA, idx, ids, num_segments=5))
    assert with_n.shape == (5, 3)
    np.testing.assert_allclose(with_n[:3], expect)
    check_grad(lambda d: op(d, idx, ids), DATA)
    check_grad(lambda d: op(d, idx, ids, num_segments=4), DATA, dynamic=True)


# -- space / depth / batch -------------------------------------------------------------------------
IMG = R.randn(2, 4, 6, 3)


def _s2d_reference(x, bs):
    n, h, w, c = x.shape
    out = np.zeros((n, h // bs, w // bs, bs * bs * c))
    for i in range(h // bs):
        for j in range(w // bs):
            for di in range(bs):
                for dj in range(bs):
                    out[:, i, j, (di * bs + dj) * c:(di * bs + dj + 1) * c] = x[:, i * bs + di, j * bs + dj]
    return out


def test_space_to_depth_and_back():
    s2d, back, nchw = run([tf.space_to_depth(IMG, 2), tf.depth_to_space(tf.space_to_depth(IMG, 2), 2),
                           tf.space_to_depth(IMG.transpose(0, 3, 1, 2), 2, data_format="NCHW")])
    np.testing.assert_array_equal(s2d, _s2d_reference(IMG, 2))
    np.testing.assert_array_equal(back, IMG)
    np.testing.assert_array_equal(nchw, s2d.transpose(0, 3, 1, 2))
    check_grad(lambda x: tf.space_to_depth(x, 2), IMG)
    check_grad(lambda x: tf.depth_to_space(x, 2), R.randn(1, 2, 2, 8))
    with pytest.raises(ValueError, match="divisible by 4"):
        tf.space_to_depth(tf.zeros([1, 6, 6, 1]), 4)


def test_space_to_batch_nd_matches_tf1_example_and_inverts():
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 4, 4, 1)
    out = run(tf.space_to_batch_nd(x, [2, 2], [[0, 0], [0, 0]]))
    np.testing.assert_array_equal(out[:, :, :, 0], [[[1, 3], [9, 11]], [[2, 4], [10, 12]], [[5, 7], [13, 15]],
                                                    [[6, 8], [14, 16]]])   # TF's documented example (d)
    padded = tf.space_to_batch_nd(IMG, [2, 3], [[1, 1], [0, 3]])
    assert padded.shape.as_list() == [12, 3, 3, 3]
    np.testing.assert_array_equal(run(tf.batch_to_space_nd(padded, [2, 3], [[1, 1], [0, 3]])), IMG)
    np.testing.assert_array_equal(run(tf.space_to_batch(x, [[0, 0], [0, 0]], block_size=2)), out)
    np.testing.assert_array_equal(run(tf.batch_to_space(out, [[0, 0], [0, 0]], block_size=2)), x)
    check_grad(lambda v: tf.space_to_batch_nd(v, [2, 3], [[1, 1], [0, 3]]), IMG)
    check_grad(lambda v: tf.batch_to_space_nd(v, [2, 2], [[0, 1], [1, 0]]), R.randn(8, 2, 2, 1))
    paddings, crops = run(tf.required_space_to_batch_paddings([5, 7], [2, 3], [[1, 0], [0, 1]]))
    np.testing.assert_array_equal(paddings, [[1, 0], [0, 2]])
    np.testing.assert_array_equal(crops, [[0, 0], [0, 1]])


def _patches_reference(x, k, s, r, padding):
    n, h, w, c = x.shape
    eff = [k[i] + (k[i] - 1) * (r[i] - 1) for i in (0, 1)]
    if padding == "VALID":
        out = [(size - e) // st + 1 for size, e, st in zip((h, w), eff, s)]
        before = [0, 0]
    else:
        out = [-(-size // st) for size, st in zip((h, w), s)]
        before = [max((o - 1) * st + e - size, 0) // 2 for o, st, e, size in zip(out, s, eff, (h, w))]
    res = np.zeros((n, out[0], out[1], k[0] * k[1] * c))
    for i in range(out[0]):
        for j in range(out[1]):
            patch = []
            for a in range(k[0]):
                for b in range(k[1]):
                    y, z = i * s[0] + a * r[0] - before[0], j * s[1] + b * r[1] - before[1]
                    patch.append(x[:, y, z] if 0 <= y < h and 0 <= z < w else np.zeros((n, c)))
            res[:, i, j] = np.concatenate(patch, axis=1)
    return res


@pytest.mark.parametrize("k,s,r,padding", [((2, 2), (1, 1), (1, 1), "VALID"), ((3, 2), (2, 3), (1, 1), "SAME"),
                                           ((2, 3), (1, 2), (2, 1), "SAME"), ((2, 2), (3, 3), (1, 2), "VALID")])
def test_extract_image_patches(k, s, r, padding):
    ksizes, strides, rates = [1, *k, 1], [1, *s, 1], [1, *r, 1]
    out = tf.extract_image_patches(IMG, ksizes, strides, rates, padding)
    value = run(out)
    np.testing.assert_allclose(value, _patches_reference(IMG, k, s, r, padding))
    assert out.shape.as_list() == list(value.shape)
    check_grad(lambda x: tf.extract_image_patches(x, ksizes, strides, rates, padding), IMG[:1, :, :4, :2])


@pytest.mark.parametrize("ufunc", [np.add, np.subtract, np.maximum], ids=["add", "subtract", "maximum"])
@pytest.mark.parametrize("ids_shape,row_shape", [((300,), (7,)), ((300,), (200,)), ((30, 10), (4, 5)), ((2,), (3,)),
                                                 ((300,), ())], ids=["rows", "wide", "nd-ids", "two", "scalars"])
def test_accumulate_rows_has_the_bits_of_ufunc_at(ufunc, ids_shape, row_shape):
    # the helper behind scatter_add, the sparse optimizers' sums of repeated rows and the segment
    # kernels: ids repeated up to 60 times (a Zipf law, as word ids come), NaN and -0.0 among the rows
    from tensorweave.ops.helpers import accumulate_rows
    r = np.random.RandomState(len(ids_shape) + len(row_shape))
    ids = ((r.zipf(1.3, size=ids_shape) - 1) % 50).astype(np.int32)
    rows = (r.randn(*ids_shape, *row_shape) * 10.0 ** r.uniform(-6, 6, ids_shape + row_shape)).astype(np.float32)
    rows.reshape(-1)[r.randint(0, rows.size, 5)] = np.nan
    rows.reshape(-1)[r.randint(0, rows.size, 9)] = -0.0
    start = r.randn(50, *row_shape).astype(np.float32)
    expected, got = start.copy(), start.copy()
    ufunc.at(expected, ids, rows)
    accumulate_rows(ufunc, got, ids, rows)
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))
    distinct = r.permutation(50)[:20]   # (one fancy-indexed pass)
    ufunc.at(expected, distinct, 1.5)
    accumulate_rows(ufunc, got, distinct, 1.5)
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))
