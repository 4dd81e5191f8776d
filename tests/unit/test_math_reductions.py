"""Reductions, arg reductions, cumulative ops, segment sums, clipping against numpy."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

from unit_helpers import run_all


X = np.random.RandomState(1).uniform(-3, 3, (2, 3, 4)).astype(np.float32)

REDUCTIONS = [("reduce_sum", np.sum, "Sum"), ("reduce_mean", np.mean, "Mean"), ("reduce_max", np.max, "Max"),
              ("reduce_min", np.min, "Min"), ("reduce_prod", np.prod, "Prod")]


@pytest.mark.parametrize("name,ref,op_type", REDUCTIONS)
@pytest.mark.parametrize("axis", [None, 0, -1, [0, 2], (1,), []])
@pytest.mark.parametrize("keep", [False, True])
def test_reductions(graph, name, ref, op_type, axis, keep):
    x = tf.constant(X)
    z = getattr(tf, name)(x, axis=axis, keepdims=keep)
    assert z.op.type == op_type and z.op.name == op_type and z.dtype == tf.float32
    np_axis = tuple(axis) if isinstance(axis, (list, tuple)) else axis
    expected = ref(X.astype(np.float64), axis=np_axis, keepdims=keep)
    assert z.shape.as_list() == list(expected.shape)
    out = run_all(z)
    assert np.asarray(out).dtype == np.float32
    np.testing.assert_allclose(out, expected.astype(np.float32), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,ref,op_type", REDUCTIONS)
def test_reductions_runtime_shapes_and_tensor_axis(graph, name, ref, op_type):
    x = tf.placeholder(tf.float32, [None, 3, None])
    ax = tf.placeholder(tf.int32, [None])
    fn = getattr(tf, name)
    z1, z2, z3 = fn(x, axis=1), fn(x, ax), fn(x, ax, keepdims=True)
    assert z1.shape.as_list() == [None, None]
    assert z2.shape.ndims is None
    assert z3.shape.as_list() == [None, None, None]
    out = run_all(z1, z2, z3, feed={x: X, ax: [0, -1]})
    np.testing.assert_allclose(out[0], ref(X, axis=1), rtol=1e-5)
    np.testing.assert_allclose(out[1], ref(X, axis=(0, 2)), rtol=1e-5)
    np.testing.assert_allclose(out[2], ref(X, axis=(0, 2), keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("name,ref,op_type", REDUCTIONS)
def test_reduction_over_no_axes_is_the_input_itself(graph, name, ref, op_type):
    """No axes: TF returns the input unchanged, -0.0 included (recorded from TF 2.21; numpy's
    sum over axis=() gives +0.0)."""
    x = np.array([-0.0, 1.5, -0.0, -np.inf], np.float32)
    out = run_all(getattr(tf, name)(tf.constant(x), axis=[]))
    np.testing.assert_array_equal(np.asarray(out).view(np.int32), x.view(np.int32))


def test_tf1_aliases_keep_dims_reduction_indices(graph):
    x = tf.constant(X)
    z = tf.reduce_sum(x, reduction_indices=[1], keep_dims=True)
    assert z.shape.as_list() == [2, 1, 4]
    np.testing.assert_allclose(run_all(z), X.sum(1, keepdims=True), rtol=1e-5)
    with pytest.raises(ValueError):
        tf.reduce_sum(x, axis=0, reduction_indices=0)


def test_int_mean_truncates_and_int_sum(graph):
    x = tf.constant([[-3, -4, 1], [7, 0, 0]])
    m, s, p = tf.reduce_mean(x), tf.reduce_mean(x, 1), tf.reduce_sum(x, 0)
    assert m.dtype == tf.int32 and p.dtype == tf.int32
    out = run_all(m, s, p)
    assert out[0] == 0 and out[0].dtype == np.int32
    np.testing.assert_array_equal(out[1], [-2, 2])
    np.testing.assert_array_equal(out[2], [4, -4, 1])


def test_seed_mean_placeholder(graph):
    x = tf.placeholder(tf.float32, 100)
    data = np.random.random(100)
    out = run_all(tf.reduce_mean(x), feed={x: data})
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, data.astype(np.float32).mean(), rtol=1e-6)


def test_any_all(graph):
    b = tf.constant([[True, False], [True, True]])
    out = run_all(tf.reduce_any(b, 1), tf.reduce_all(b, 1), tf.reduce_all(b))
    np.testing.assert_array_equal(out[0], [True, True])
    np.testing.assert_array_equal(out[1], [False, True])
    assert out[2] == np.False_
    with pytest.raises(TypeError):
        tf.reduce_any(tf.constant([1.0]))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64, np.complex128])
def test_sum_mean_prod_give_numpys_bits(graph, dtype):
    """Sum, Mean and Prod compute as np.sum, np.mean and np.prod do (float16 accumulating in
    float32, as TF's kernels do), to the bit and to the result's type: NaN, infinities, signed
    zeros and values near the largest included (not denormals: steps flush them, as TF's do), for
    every set of axes, with and without kept dims."""
    rng = np.random.RandomState(7)
    x = rng.standard_normal((5, 4, 3)) * 10.0 ** rng.randint(-4, 5, (5, 4, 3))
    x.flat[rng.randint(0, x.size, 20)] = rng.choice([0.0, -0.0, np.inf, -np.inf, np.nan, 6e4, 3e38, -1e-30], 20)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(x.shape)
    with np.errstate(all="ignore"):
        x = x.astype(dtype)
    acc = np.float32 if dtype == np.float16 else dtype
    xt, axes = tf.placeholder(dtype, [None, 4, 3]), tf.placeholder(tf.int32, [None])
    for keep in (False, True):
        fetches = [tf.reduce_sum(xt, axes, keepdims=keep), tf.reduce_mean(xt, axes, keepdims=keep),
                   tf.reduce_prod(xt, axes, keepdims=keep)]
        for axis in ((0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2), (-1, 0)):
            with np.errstate(all="ignore"):
                expected = [np.asarray(np.sum(x, axis, dtype=acc, keepdims=keep)).astype(dtype),
                            np.asarray(np.mean(x, axis, dtype=acc, keepdims=keep)).astype(dtype),
                            np.prod(x, axis, dtype=dtype, keepdims=keep)]
            for got, want in zip(run_all(*fetches, feed={xt: x, axes: list(axis)}), expected):
                assert np.asarray(got).dtype == dtype and np.shape(got) == np.shape(want)
                assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (axis, keep)


def test_empty_reductions(graph):
    e = tf.zeros([0, 2])
    out = run_all(tf.reduce_sum(e, 0), tf.reduce_max(e, 0), tf.reduce_prod(e, 0), tf.reduce_mean(e, 0))
    np.testing.assert_array_equal(out[0], [0, 0])
    np.testing.assert_array_equal(out[1], [-np.inf, -np.inf])
    np.testing.assert_array_equal(out[2], [1, 1])
    assert np.isnan(out[3]).all()


def test_invalid_axis_errors(graph):
    x = tf.constant(X)
    with pytest.raises(ValueError, match="Invalid reduction dimension.*'Sum'"):
        tf.reduce_sum(x, 3)
    ax = tf.placeholder(tf.int32)
    z = tf.reduce_sum(x, ax, name="mysum")
    with pytest.raises(tf.errors.InvalidArgumentError, match="mysum"):
        run_all(z, feed={ax: 5})


def test_reduction_of_unknown_rank_with_axis_none(graph):
    x = tf.placeholder(tf.float32)
    z = tf.reduce_sum(x)
    np.testing.assert_allclose(run_all(z, feed={x: X}), X.sum(), rtol=1e-5)


def test_logsumexp(graph):
    x = tf.constant([[0.0, 1000.0], [-np.inf, -np.inf], [1.0, 2.0]])
    z = tf.reduce_logsumexp(x, axis=1)
    assert z.op.name == "ReduceLogSumExp" and z.shape.as_list() == [3]
    out = run_all(z, tf.reduce_logsumexp(x, 1, keepdims=True))
    np.testing.assert_allclose(out[0], [1000.0, -np.inf, np.log(np.exp(1) + np.exp(2))], rtol=1e-6)
    assert out[1].shape == (3, 1)


def test_argmax_argmin(graph):
    x = tf.constant(X)
    a = tf.argmax(x, 1)
    assert a.dtype == tf.int64 and a.op.type == "ArgMax" and a.shape.as_list() == [2, 4]
    assert a.op.inputs[1].op.name == "ArgMax/dimension"
    b = tf.argmin(x, dimension=-1, output_type=tf.int32)
    assert b.dtype == tf.int32
    out = run_all(a, b, tf.argmax(x))
    np.testing.assert_array_equal(out[0], X.argmax(1))
    np.testing.assert_array_equal(out[1], X.argmin(-1))
    assert out[0].dtype == np.int64 and out[1].dtype == np.int32
    np.testing.assert_array_equal(out[2], X.argmax(0))
    with pytest.raises(ValueError, match="ArgMax"):
        tf.argmax(x, 5)
    np.testing.assert_array_equal(run_all(tf.arg_max(x, 2), tf.arg_min(x, 0))[0], X.argmax(2))


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_cumprod(graph, exclusive, reverse):
    v = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)

    def ref(fn, ident, axis):
        a = np.flip(v, axis) if reverse else v
        c = fn(a, axis=axis)
        if exclusive:
            c = np.concatenate([np.full_like(np.take(c, [0], axis), ident), np.delete(c, -1, axis)], axis)
        return np.flip(c, axis) if reverse else c
    x = tf.constant(v)
    s = tf.cumsum(x, axis=1, exclusive=exclusive, reverse=reverse)
    p = tf.cumprod(x, axis=0, exclusive=exclusive, reverse=reverse)
    assert s.op.type == "Cumsum" and s.shape.as_list() == [2, 3]
    out = run_all(s, p)
    np.testing.assert_allclose(out[0], ref(np.cumsum, 0, 1))
    np.testing.assert_allclose(out[1], ref(np.cumprod, 1, 0))


def test_count_nonzero(graph):
    x = tf.constant([[0, 1, 2], [0, 0, 3]])
    c = tf.count_nonzero(x, axis=1)
    assert c.dtype == tf.int64
    out = run_all(c, tf.count_nonzero(x), tf.count_nonzero(tf.constant(["", "a"])), tf.count_nonzero(x, dtype=tf.int32))
    np.testing.assert_array_equal(out[0], [2, 1])
    assert out[1] == 3 and out[2] == 1 and out[3].dtype == np.int32


def test_segment_sums(graph):
    data = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    u = tf.unsorted_segment_sum(data, tf.constant([2, 0, 2]), 4)
    assert u.shape.as_list() == [4, 2]
    s = tf.segment_sum(data, tf.constant([0, 0, 2]))
    neg = tf.unsorted_segment_sum(data, tf.constant([-1, 1, 1]), 2)
    out = run_all(u, s, neg)
    np.testing.assert_allclose(out[0], [[3, 4], [0, 0], [6, 8], [0, 0]])
    np.testing.assert_allclose(out[1], [[4, 6], [0, 0], [5, 6]])
    np.testing.assert_allclose(out[2], [[0, 0], [8, 10]])
    bad = tf.unsorted_segment_sum(data, tf.constant([0, 5, 1]), 2, name="uss")
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range.*|uss"):
        run_all(bad)
    nonsorted = tf.segment_sum(data, tf.constant([1, 0, 0]), name="ss")
    with pytest.raises(tf.errors.InvalidArgumentError, match="ss"):
        run_all(nonsorted)


def test_bincount(graph):
    arr = tf.constant([1, 1, 3])
    out = run_all(tf.bincount(arr), tf.bincount(arr, minlength=6),
                  tf.bincount(arr, weights=tf.constant([0.5, 1.0, 2.0])), tf.bincount(arr, maxlength=2))
    np.testing.assert_array_equal(out[0], [0, 2, 0, 1])
    assert out[0].dtype == np.int32
    np.testing.assert_array_equal(out[1], [0, 2, 0, 1, 0, 0])
    np.testing.assert_allclose(out[2], [0, 1.5, 0, 2.0])
    np.testing.assert_array_equal(out[3], [0, 2])


def test_clip_ops(graph):
    x = tf.constant([[-2.0, 0.5], [3.0, 4.0]])
    cv = tf.clip_by_value(x, -1.0, 1.0)
    assert cv.op.name == "clip_by_value"
    cn = tf.clip_by_norm(x, 1.0)
    cn_axes = tf.clip_by_norm(x, 1.0, axes=[1])
    gn = tf.global_norm([x, None, tf.constant([1.0])])
    assert gn.op.name == "global_norm/global_norm"
    clipped, norm = tf.clip_by_global_norm([x, tf.constant([1.0])], 2.0)
    out = run_all(cv, cn, cn_axes, gn, clipped[0], clipped[1], norm)
    xv = np.array([[-2.0, 0.5], [3.0, 4.0]])
    np.testing.assert_allclose(out[0], np.clip(xv, -1, 1))
    np.testing.assert_allclose(out[1], xv / np.linalg.norm(xv), rtol=1e-6)
    rows = np.linalg.norm(xv, axis=1, keepdims=True)
    np.testing.assert_allclose(out[2], xv / np.maximum(rows, 1.0), rtol=1e-6)
    total = np.sqrt((xv ** 2).sum() + 1)
    np.testing.assert_allclose(out[3], total, rtol=1e-6)
    np.testing.assert_allclose(out[4], xv * 2 / total, rtol=1e-6)
    np.testing.assert_allclose(out[5], [2 / total], rtol=1e-6)
    np.testing.assert_allclose(out[6], total, rtol=1e-6)
    with pytest.raises(TypeError):
        tf.global_norm(x)
    with pytest.raises(ValueError):
        tf.clip_by_value(tf.constant([1.0]), tf.zeros([3]), 1.0)


def test_clip_by_global_norm_nonfinite_gives_nan(graph):
    clipped, _ = tf.clip_by_global_norm([tf.constant([np.inf, 1.0])], 1.0)
    assert np.isnan(run_all(clipped[0])).all()


def test_unknown_axis_static_shape_as_tf(graph):
    # TF's ReductionShape: axes unknown at build time give unknown rank unless keep_dims.
    x = tf.placeholder(tf.float32, [None, 4])
    axis = tf.placeholder_with_default(1, [])
    assert tf.reduce_sum(x, axis).shape.ndims is None
    assert tf.reduce_max(x, axis, keepdims=True).shape.as_list() == [None, None]
    with tf.Session() as s:
        np.testing.assert_allclose(s.run(tf.reduce_sum(x, axis), {x: np.ones((2, 4))}), [4., 4.])
