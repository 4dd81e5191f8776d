"""Ops that size their output from their inputs' values refuse, before allocating, an output past
max_op_output_elements (issue 15, defect 7: Tile/Pad/OneHot asked for ~2^31 elements grew a
server past 4 GB). The shape function refuses it when the size is known while the graph is built;
the kernel when it is known only at run time (a fed size, or a graph from the wire)."""
from __future__ import annotations

import gzip
import zlib

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors, limits
from tensorweave.ops import helpers

BIG = 2 ** 31   # elements: 8 GiB of float32, past the default limit (2^30)
NAMED = (r"output of shape .* exceeds the limit max_op_output_elements = \d+ elements "
         r"\(TENSORWEAVE_MAX_OP_OUTPUT_ELEMENTS\)")

# op type -> build(n): an op of that type whose output holds n elements (n an int or an int32/int64 tensor)
BUILDERS = {
    "Fill": lambda n: tf.fill(tf.stack([n // 4, 4]), 1.0),
    "zeros": lambda n: tf.zeros(tf.stack([n]), tf.float32),
    "ones": lambda n: tf.ones(tf.stack([n, 1]), tf.int32),
    "Range": lambda n: tf.range(n),
    "LinSpace": lambda n: tf.linspace(0.0, 1.0, n),
    "Tile": lambda n: tf.tile(tf.constant([1.0, 2.0]), tf.stack([n // 2])),
    "Pad": lambda n: tf.pad(tf.constant([1.0]), tf.stack([tf.stack([0, n - 1])])),
    "PadV2": lambda n: tf.pad(tf.constant([[1.0, 2.0]]), tf.stack([[0, 1], tf.stack([0, n // 2 - 2])]),
                              constant_values=3.0),
    "OneHot": lambda n: tf.one_hot([0, 1], n // 2),
    "BroadcastTo": lambda n: tf.broadcast_to(tf.constant(1.0), tf.stack([n])),
    "RandomUniform": lambda n: tf.random_uniform(tf.stack([n])),
    "RandomStandardNormal": lambda n: tf.random_normal(tf.stack([2, n // 2])),
}


@pytest.fixture
def small_limit():
    old = limits.override(limits.OP_OUTPUT_ELEMENTS, 1000)
    yield 1000
    limits.override(limits.OP_OUTPUT_ELEMENTS, old)


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_a_size_known_while_building_is_refused_by_the_shape_function(kind):
    with tf.Graph().as_default():
        with pytest.raises(errors.ResourceExhaustedError, match=NAMED):
            BUILDERS[kind](BIG)


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_a_size_known_only_when_run_is_refused_by_the_kernel(kind):
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int64 if kind == "Range" else tf.int32, [])
        out = BUILDERS[kind](n)
        with tf.Session() as sess:
            with pytest.raises(errors.ResourceExhaustedError, match=NAMED):
                sess.run(out, {n: BIG if kind == "Range" else BIG - 2})
            assert sess.run(tf.size(out), {n: 8}) == 8   # a size within the limit runs


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_the_limit_is_configurable_and_exact(kind, small_limit):
    with tf.Graph().as_default():
        assert np.size(tf.Session().run(BUILDERS[kind](1000))) == 1000
        with pytest.raises(errors.ResourceExhaustedError, match=r"exceeds the limit max_op_output_elements = 1000 "):
            BUILDERS[kind](1004)


# -- ops sized by an input's value other than a shape: counts, segment numbers, sizes, indices ----------
S = 2 ** 31 - 1   # a stride no window reaches past: the conv gradients' out_backprop stays [1, 1, 1, 1]
ONE4, ONE5 = [[[[1.0]]]], [[[[[1.0]]]]]


def _i64(*dims):
    return tf.cast(tf.stack(list(dims)), tf.int64)


def _sparse(dense_shape):
    return tf.SparseTensor([[0, 0]], [1.0], dense_shape)


def _make(op_type, inputs, attrs=None):
    return helpers.make_op(op_type, [tf.convert_to_tensor(t) for t in inputs], attrs).outputs[0]


def _ta_write(n):
    return tf.TensorArray(tf.float32, size=0, dynamic_size=True).write(n - 1, 1.0).stack()


# name -> (op type the error names, build(n): an op of that type with n elements, its value when n = 8 or
# None for a random value, whether the shape function knows the size when n is a Python int)
VALUED = {
    "ScatterNd": ("ScatterNd", lambda n: tf.scatter_nd([[1]], [5.0], tf.stack([n])), [0, 5, 0, 0, 0, 0, 0, 0], True),
    "SparseToDense": ("SparseToDense", lambda n: tf.sparse_to_dense([2], tf.stack([n]), 3.0, -1.0),
                      [-1, -1, 3, -1, -1, -1, -1, -1], True),
    "UnsortedSegmentSum": ("UnsortedSegmentSum", lambda n: tf.unsorted_segment_sum([1.0, 2.0, 4.0], [0, 3, 0], n),
                           [5, 0, 0, 2, 0, 0, 0, 0], True),
    "UnsortedSegmentMax": ("UnsortedSegmentMax", lambda n: tf.unsorted_segment_max([1, 2, 4], [0, 3, 0], n),
                           [4, -2 ** 31, -2 ** 31, 2, -2 ** 31, -2 ** 31, -2 ** 31, -2 ** 31], True),
    "UnsortedSegmentMin": ("UnsortedSegmentMin", lambda n: tf.unsorted_segment_min([1, 2, 4], [0, 3, 0], n),
                           [1] + [2 ** 31 - 1] * 2 + [2] + [2 ** 31 - 1] * 4, True),
    "UnsortedSegmentProd": ("UnsortedSegmentProd", lambda n: tf.unsorted_segment_prod([3.0, 2.0, 4.0], [0, 3, 0], n),
                            [12, 1, 1, 2, 1, 1, 1, 1], True),
    "UnsortedSegmentMean": ("UnsortedSegmentSum", lambda n: tf.unsorted_segment_mean([1.0, 2.0, 4.0], [0, 3, 0], n),
                            [2.5, 0, 0, 2, 0, 0, 0, 0], True),
    "UnsortedSegmentSqrtN": ("UnsortedSegmentSum", lambda n: tf.unsorted_segment_sqrt_n([1.0, 2.0, 4.0], [0, 3, 0],
                                                                                       n),
                             [5 / np.sqrt(2), 0, 0, 2, 0, 0, 0, 0], True),
    "UnsortedSegmentJoin": ("UnsortedSegmentJoin", lambda n: tf.strings.unsorted_segment_join(["a", "b"], [1, 1], n,
                                                                                              separator="+"),
                            [b"", b"a+b"] + [b""] * 6, True),
    "SparseSegmentSumWithNumSegments": ("SparseSegmentSumWithNumSegments",
                                        lambda n: tf.sparse.segment_sum([1.0, 2.0], [1, 0], [2, 2], num_segments=n),
                                        [0, 0, 3, 0, 0, 0, 0, 0], True),
    "SegmentSum": ("SegmentSum", lambda n: tf.segment_sum([1.0, 2.0], tf.stack([0, n - 1])),
                   [1, 0, 0, 0, 0, 0, 0, 2], False),
    "Bincount": ("Bincount", lambda n: tf.bincount([1, 1, 3], minlength=n), [0, 2, 0, 1, 0, 0, 0, 0], True),
    "HistogramFixedWidth": ("HistogramFixedWidth", lambda n: tf.histogram_fixed_width([0.1, 0.9, 0.95], [0.0, 1.0],
                                                                                      nbins=n),
                            [1, 0, 0, 0, 0, 0, 0, 2], True),
    "Multinomial": ("Multinomial", lambda n: tf.multinomial([[0.0, 0.0]], n), None, True),
    "StatelessMultinomial": ("StatelessMultinomial",
                             lambda n: tf.random.stateless_multinomial([[0.0, 0.0]], n, seed=[1, 2]), None, True),
    "RandomUniformInt": ("RandomUniformInt", lambda n: tf.random_uniform(tf.stack([n]), maxval=9, dtype=tf.int32),
                         None, True),
    "RandomGamma": ("RandomGamma", lambda n: tf.random_gamma(tf.stack([n // 2]), [1.0, 2.0]), None, True),
    "RandomPoissonV2": ("RandomPoissonV2", lambda n: tf.random_poisson([1.0, 2.0], tf.stack([n // 2])), None, True),
    "ResizeBilinear": ("ResizeBilinear", lambda n: tf.image.resize_bilinear(tf.ones([1, 2, 2, 1]),
                                                                            tf.stack([n // 4, 4])), [1.0] * 8, True),
    "ResizeNearestNeighbor": ("ResizeNearestNeighbor", lambda n: tf.image.resize_nearest_neighbor(
        tf.ones([1, 2, 2, 1]), tf.stack([n // 4, 4])), [1.0] * 8, True),
    "ResizeBicubic": ("ResizeBicubic", lambda n: tf.image.resize_bicubic(tf.ones([1, 2, 2, 1]),
                                                                         tf.stack([n // 4, 4])), [1.0] * 8, True),
    "ResizeArea": ("ResizeArea", lambda n: tf.image.resize_area(tf.ones([1, 2, 2, 1]), tf.stack([n // 4, 4])),
                   [1.0] * 8, True),
    "Conv2DBackpropInput": ("Conv2DBackpropInput", lambda n: tf.nn.conv2d_backprop_input(
        tf.stack([1, n // 4, 4, 1]), [[[[2.0]]]], ONE4, [1, S, S, 1], "SAME"), [2.0] + [0.0] * 7, True),
    "DepthwiseConv2dNativeBackpropInput": ("DepthwiseConv2dNativeBackpropInput",
                                           lambda n: tf.nn.depthwise_conv2d_native_backprop_input(
                                               tf.stack([1, n // 4, 4, 1]), [[[[2.0]]]], ONE4, [1, S, S, 1], "SAME"),
                                           [2.0] + [0.0] * 7, True),
    "Conv3DBackpropInputV2": ("Conv3DBackpropInputV2", lambda n: tf.nn.conv3d_transpose(
        ONE5, [[[[[2.0]]]]], tf.stack([1, n // 4, 4, 1, 1]), [1, S, S, S, 1], "SAME"), [2.0] + [0.0] * 7, True),
    "Conv2DBackpropFilter": ("Conv2DBackpropFilter", lambda n: tf.nn.conv2d_backprop_filter(
        [[[[3.0]]]], tf.stack([n // 4, 4, 1, 1]), ONE4, [1, 1, 1, 1], "SAME"), None, True),
    "DepthwiseConv2dNativeBackpropFilter": ("DepthwiseConv2dNativeBackpropFilter",
                                            lambda n: tf.nn.depthwise_conv2d_native_backprop_filter(
                                                [[[[3.0]]]], tf.stack([n // 4, 4, 1, 1]), ONE4, [1, 1, 1, 1], "SAME"),
                                            None, True),
    "Conv3DBackpropFilterV2": ("Conv3DBackpropFilterV2", lambda n: tf.nn.conv3d_backprop_filter_v2(
        ONE5, tf.stack([n // 4, 4, 1, 1, 1]), ONE5, [1, 1, 1, 1, 1], "SAME"), None, True),
    "AvgPoolGrad": ("AvgPoolGrad", lambda n: _make("AvgPoolGrad", [tf.stack([1, n // 4, 4, 1]), ONE4], {
        "ksize": [1, 1, 1, 1], "strides": [1, S, S, 1], "padding": "SAME", "data_format": "NHWC", "T": tf.float32}),
        [1.0] + [0.0] * 7, True),
    "AvgPool3DGrad": ("AvgPool3DGrad", lambda n: _make("AvgPool3DGrad", [tf.stack([1, n // 4, 4, 1, 1]), ONE5], {
        "ksize": [1] * 5, "strides": [1, S, S, S, 1], "padding": "SAME", "data_format": "NDHWC", "T": tf.float32}),
        [1.0] + [0.0] * 7, True),
    "StridedSliceGrad": ("StridedSliceGrad", lambda n: _make("StridedSliceGrad", [
        tf.stack([n]), [1], [2], [1], [7.0]], {k: 0 for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                                              "new_axis_mask", "shrink_axis_mask")}),
        [0, 7, 0, 0, 0, 0, 0, 0], True),
    "MatrixDiagV2": ("MatrixDiagV2", lambda n: tf.linalg.diag([1.0, 2.0], num_rows=n // 2, num_cols=2),
                     [1, 0, 0, 2, 0, 0, 0, 0], True),
    "Eye": ("(eye|MatrixDiagV2)", lambda n: tf.eye(n // 2, 2), [1, 0, 0, 1, 0, 0, 0, 0], True),
    "SpaceToBatchND": ("SpaceToBatchND",
                       lambda n: tf.space_to_batch_nd([[[4.0]]], [1], tf.stack([tf.stack([1, n - 2])])),
                       [0, 4, 0, 0, 0, 0, 0, 0], True),
    "DynamicStitch": ("DynamicStitch", lambda n: tf.dynamic_stitch([tf.stack([n - 1]), [0]], [[6.0], [5.0]]),
                      [5, 0, 0, 0, 0, 0, 0, 6], True),
    "SparseTensorDenseMatMul": ("SparseTensorDenseMatMul", lambda n: tf.sparse_tensor_dense_matmul(
        _sparse(_i64(n // 2, 1)), [[1.0, 2.0]]), [1, 2, 0, 0, 0, 0, 0, 0], True),
    "SparseReduceSum": ("SparseReduceSum", lambda n: tf.sparse_reduce_sum(_sparse(_i64(n, 3)), axis=1),
                        [1, 0, 0, 0, 0, 0, 0, 0], True),
    "SparseFillEmptyRows": ("SparseFillEmptyRows", lambda n: tf.sparse.fill_empty_rows(_sparse(_i64(n, 1)), 0.0)[1],
                            [False] + [True] * 7, True),
    "TensorArray": ("TensorListReserve", lambda n: tf.TensorArray(tf.float32, size=n, element_shape=[]).stack(),
                    [0.0] * 8, True),
    "TensorArrayDynamicWrite": ("TensorListSetItem", _ta_write, [0.0] * 7 + [1.0], False),
}


@pytest.mark.parametrize("kind", sorted(k for k, v in VALUED.items() if v[3]))
def test_a_size_from_a_constant_value_is_refused_while_building(kind):
    op_type, build, _, _ = VALUED[kind]
    with tf.Graph().as_default():
        with pytest.raises(errors.ResourceExhaustedError, match=op_type + " " + NAMED):
            build(BIG - 2)   # an int32 past the limit


@pytest.mark.parametrize("kind", sorted(VALUED))
def test_a_size_from_a_fed_value_is_refused_by_the_kernel_and_a_small_one_is_right(kind):
    op_type, build, expected, _ = VALUED[kind]
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])
        out = build(n)
        with tf.Session() as sess:
            with pytest.raises(errors.ResourceExhaustedError, match=op_type + " " + NAMED):
                sess.run(out, {n: BIG - 2})
            got = sess.run(out, {n: 8})
    assert np.size(got) == 8
    if expected is not None and got.dtype == object:
        assert list(np.reshape(got, -1)) == expected
    elif expected is not None:
        np.testing.assert_allclose(np.reshape(got, -1), expected, rtol=1e-6)


@pytest.mark.parametrize("kind", sorted(VALUED))
def test_the_limit_is_configurable_and_exact_for_valued_sizes(kind, small_limit):
    op_type, build, _, _ = VALUED[kind]
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])
        with tf.Session() as sess:
            out = build(n)
            assert np.size(sess.run(out, {n: 1000})) == 1000
            with pytest.raises(errors.ResourceExhaustedError, match=op_type + r" output .* exceeds the limit "
                                                                                r"max_op_output_elements = 1000 "):
                sess.run(out, {n: 1004})


def test_diag_refuses_the_square_of_its_input(small_limit):
    with tf.Graph().as_default():
        with pytest.raises(errors.ResourceExhaustedError, match="Diag " + NAMED):
            tf.diag(tf.ones([32]))   # 1,024 elements from 32
        d = tf.placeholder(tf.float32, [None])
        out = tf.diag(d)
        with tf.Session() as sess:
            with pytest.raises(errors.ResourceExhaustedError, match="Diag " + NAMED):
                sess.run(out, {d: np.ones(32)})
            np.testing.assert_array_equal(sess.run(out, {d: np.arange(31.0)}), np.diag(np.arange(31.0)))


def test_padded_batch_refuses_a_padded_shape_past_the_limit():
    with tf.Graph().as_default():
        big = tf.data.Dataset.from_tensors([1.0]).padded_batch(1, padded_shapes=[BIG])
        small = tf.data.Dataset.from_tensors([1.0]).padded_batch(1, padded_shapes=[3])
        with tf.Session() as sess:
            with pytest.raises(errors.ResourceExhaustedError, match="PaddedBatchDatasetV2 " + NAMED):
                sess.run(big.make_one_shot_iterator().get_next())
            np.testing.assert_array_equal(sess.run(small.make_one_shot_iterator().get_next()), [[1.0, 0.0, 0.0]])


@pytest.mark.parametrize("side", [31, 32])
def test_an_image_header_past_the_limit_is_refused_before_decoding(side, small_limit):
    pytest.importorskip("PIL")
    pixels = (np.arange(side * side) % 251).astype(np.uint8).reshape(side, side, 1)
    with tf.Graph().as_default():
        png = tf.image.encode_png(pixels)
        decoded = tf.image.decode_png(png)
        with tf.Session() as sess:
            if side * side <= 1000:
                np.testing.assert_array_equal(sess.run(decoded), pixels)
            else:
                with pytest.raises(errors.ResourceExhaustedError, match="DecodePng " + NAMED):
                    sess.run(decoded)


@pytest.mark.parametrize("kind", ["ZLIB", "GZIP"])
def test_decode_compressed_round_trips_and_refuses_a_bomb(kind, small_limit):
    pack = (lambda b: gzip.compress(b)) if kind == "GZIP" else zlib.compress
    ok, bomb = bytes(range(256)) * 3 + b"x" * 232, b"\0" * 1001   # 1,000 bytes: at the limit; 1,001: past it
    data = tf.placeholder(tf.string, [None])
    out = tf.io.decode_compressed(data, compression_type=kind)
    with tf.Session() as sess:
        assert list(sess.run(out, {data: [pack(ok), pack(b"")]})) == [ok, b""]
        if kind == "GZIP":   # a file of two members is their concatenation, as gzip reads it
            assert sess.run(out, {data: [pack(b"ab") + pack(b"cd")]})[0] == b"abcd"
        with pytest.raises(errors.ResourceExhaustedError, match="DecodeCompressed output.*max_op_output_elements"):
            sess.run(out, {data: [pack(bomb)]})
        with pytest.raises(errors.InvalidArgumentError, match="Could not decompress"):
            sess.run(out, {data: [pack(ok)[:-6]]})
        assert list(sess.run(out, {data: [pack(ok)]})) == [ok]   # the session stays usable
