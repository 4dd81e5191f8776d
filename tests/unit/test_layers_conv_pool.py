"""tf.layers convolutions (1-D, 3-D, transposed, separable), pooling 1-D/3-D, Layer and InputSpec:
TF's variable names and shapes, and values against numpy references."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph", "kernels")
RNG = np.random.RandomState(7)


def np_conv(x, k, strides, pads):
    """Channels-last N-D cross-correlation: x [n, *sp, c], k [*ks, c, f]; pads (before, after)."""
    x = np.pad(x, [(0, 0)] + list(pads) + [(0, 0)])
    ks = k.shape[:-2]
    outs = [(s - kk) // st + 1 for s, kk, st in zip(x.shape[1:-1], ks, strides)]
    y = np.zeros([x.shape[0]] + outs + [k.shape[-1]])
    for pos in itertools.product(*(range(o) for o in outs)):
        window = x[(slice(None),) + tuple(slice(p * st, p * st + kk) for p, st, kk in zip(pos, strides, ks))]
        y[(slice(None),) + pos] = np.tensordot(window, k, axes=len(ks) + 1)
    return y


def np_conv_transpose(x, k, strides, out_sizes):
    """'same'-padded transposed conv: x [n, *sp, c], k [*ks, f, c] -> [n, *out, f]."""
    ks = k.shape[:-2]
    full = [(s - 1) * st + kk for s, st, kk in zip(x.shape[1:-1], strides, ks)]
    y = np.zeros([x.shape[0]] + [max(f, o) for f, o in zip(full, out_sizes)] + [k.shape[-2]])
    for pos in itertools.product(*(range(s) for s in x.shape[1:-1])):
        contrib = np.tensordot(x[(slice(None),) + pos], k, axes=[[1], [len(ks) + 1]])   # [n, *ks, f]
        y[(slice(None),) + tuple(slice(p * st, p * st + kk) for p, st, kk in zip(pos, strides, ks))] += contrib
    pads = [max((s - 1) * st + kk - o, 0) // 2 for s, st, kk, o in zip(x.shape[1:-1], strides, ks, out_sizes)]
    return y[(slice(None),) + tuple(slice(p, p + o) for p, o in zip(pads, out_sizes))]


def variables_by_name():
    return {v.op.name: v for v in tf.global_variables()}


def test_conv1d_and_conv3d_names_shapes_values():
    x1 = RNG.randn(2, 9, 3).astype(np.float32)
    x3 = RNG.randn(2, 5, 6, 4, 3).astype(np.float32)
    y1 = tf.layers.conv1d(x1, 4, 3, strides=2, padding="valid")
    y1b = tf.layers.Conv1D(2, 2, padding="same", dilation_rate=2)(x1)
    y3 = tf.layers.conv3d(x3, 5, (2, 3, 2), strides=(1, 2, 1), padding="valid", use_bias=False)
    v = variables_by_name()
    assert v["conv1d/kernel"].shape.as_list() == [3, 3, 4] and v["conv1d/bias"].shape.as_list() == [4]
    assert v["conv1d_1/kernel"].shape.as_list() == [2, 3, 2]
    assert v["conv3d/kernel"].shape.as_list() == [2, 3, 2, 3, 5] and "conv3d/bias" not in v
    assert y1.shape.as_list() == [2, 4, 4] and y1b.shape.as_list() == [2, 9, 2]
    assert y3.shape.as_list() == [2, 4, 2, 3, 5]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.assign(v["conv1d/bias"], [1.0, 2.0, 3.0, 4.0]))
        k1, k1b, k3, a, b, c = sess.run([v["conv1d/kernel"], v["conv1d_1/kernel"], v["conv3d/kernel"], y1, y1b, y3])
    np.testing.assert_allclose(a, np_conv(x1, k1, [2], [(0, 0)]) + [1, 2, 3, 4], rtol=1e-5, atol=1e-5)
    dilated = np.zeros([3, 3, 2], np.float32)
    dilated[0], dilated[2] = k1b[0], k1b[1]
    np.testing.assert_allclose(b, np_conv(x1, dilated, [1], [(1, 1)]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c, np_conv(x3, k3, [1, 2, 1], [(0, 0)] * 3), rtol=1e-4, atol=1e-5)


def test_channels_first_convolutions_equal_channels_last():
    x = RNG.randn(2, 6, 7, 3).astype(np.float32)
    init = tf.constant_initializer(RNG.randn(3, 2, 3, 4))
    last = tf.layers.conv2d(x, 4, (3, 2), strides=2, padding="same", kernel_initializer=init,
                            bias_initializer=tf.constant_initializer([1, 2, 3, 4]))
    first = tf.layers.conv2d(x.transpose(0, 3, 1, 2), 4, (3, 2), strides=2, padding="same", kernel_initializer=init,
                             bias_initializer=tf.constant_initializer([1, 2, 3, 4]), data_format="channels_first")
    x1 = RNG.randn(2, 8, 3).astype(np.float32)
    init1 = tf.constant_initializer(RNG.randn(3, 3, 2))
    l1 = tf.layers.conv1d(x1, 2, 3, kernel_initializer=init1)
    f1 = tf.layers.conv1d(x1.transpose(0, 2, 1), 2, 3, kernel_initializer=init1, data_format="channels_first")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b, c, d = sess.run([last, first, l1, f1])
    np.testing.assert_allclose(a.transpose(0, 3, 1, 2), b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c.transpose(0, 2, 1), d, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("padding", ["same", "valid"])
def test_conv2d_transpose_and_conv3d_transpose(padding):
    x2 = RNG.randn(2, 3, 4, 5).astype(np.float32)
    x3 = RNG.randn(1, 2, 3, 2, 4).astype(np.float32)
    p = tf.placeholder(tf.float32, [None, None, None, 5])
    y2 = tf.layers.conv2d_transpose(x2, 3, (3, 2), strides=(2, 3), padding=padding)
    y2d = tf.layers.conv2d_transpose(p, 3, (3, 2), strides=(2, 3), padding=padding, reuse=True, name="conv2d_transpose")
    y3 = tf.layers.Conv3DTranspose(2, 2, strides=2, padding=padding)(x3)
    v = variables_by_name()
    assert v["conv2d_transpose/kernel"].shape.as_list() == [3, 2, 3, 5]
    assert v["conv3d_transpose/kernel"].shape.as_list() == [2, 2, 2, 2, 4]
    want2 = [3 * 2, 4 * 3] if padding == "same" else [3 * 2 + 1, 4 * 3]
    assert y2.shape.as_list() == [2] + want2 + [3] and y3.shape.as_list() == [1, 4, 6, 4, 2]
    assert y2d.shape.as_list() == [None, None, None, 3]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        k2, k3, a, ad, c = sess.run([v["conv2d_transpose/kernel"], v["conv3d_transpose/kernel"], y2, y2d, y3], {p: x2})
    np.testing.assert_allclose(a, np_conv_transpose(x2, k2, [2, 3], want2), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(a, ad)
    np.testing.assert_allclose(c, np_conv_transpose(x3, k3, [2, 2, 2], [4, 6, 4]), rtol=1e-5, atol=1e-5)


def test_separable_convolutions():
    x2 = RNG.randn(2, 6, 5, 3).astype(np.float32)
    x1 = RNG.randn(2, 7, 3).astype(np.float32)
    y2 = tf.layers.separable_conv2d(x2, 4, 3, padding="same", depth_multiplier=2)
    y1 = tf.layers.SeparableConv1D(5, 2, strides=2)(x1)
    v = variables_by_name()
    assert v["separable_conv2d/depthwise_kernel"].shape.as_list() == [3, 3, 3, 2]
    assert v["separable_conv2d/pointwise_kernel"].shape.as_list() == [1, 1, 6, 4]
    assert v["separable_conv1d/depthwise_kernel"].shape.as_list() == [2, 3, 1]
    assert v["separable_conv1d/pointwise_kernel"].shape.as_list() == [1, 3, 5]
    assert v["separable_conv2d/bias"].shape.as_list() == [4]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        dk2, pk2, dk1, pk1, a, b = sess.run(
            [v["separable_conv2d/depthwise_kernel"], v["separable_conv2d/pointwise_kernel"],
             v["separable_conv1d/depthwise_kernel"], v["separable_conv1d/pointwise_kernel"], y2, y1])

    def separable(x, dk, pk, strides, pads):
        channels = [np_conv(x[..., c:c + 1], dk[..., c:c + 1, :], strides, pads) for c in range(x.shape[-1])]
        depthwise = np.concatenate(channels, -1)
        return np.tensordot(depthwise, pk.reshape(pk.shape[-2], pk.shape[-1]), axes=1)
    np.testing.assert_allclose(a, separable(x2, dk2, pk2, [1, 1], [(1, 1), (1, 1)]), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b, separable(x1, dk1, pk1, [2], [(0, 0)]), rtol=1e-4, atol=1e-5)


def test_pooling_1d_and_3d():
    x1 = RNG.randn(2, 7, 3).astype(np.float32)
    x3 = RNG.randn(2, 4, 5, 6, 2).astype(np.float32)
    m1 = tf.layers.max_pooling1d(x1, 2, 2)
    a1 = tf.layers.AveragePooling1D(3, 2, padding="same")(x1)
    m1f = tf.layers.max_pooling1d(x1.transpose(0, 2, 1), 2, 2, data_format="channels_first")
    m3 = tf.layers.max_pooling3d(x3, 2, 2)
    a3 = tf.layers.average_pooling3d(x3, (2, 1, 3), (2, 1, 3))
    assert m1.shape.as_list() == [2, 3, 3] and a1.shape.as_list() == [2, 4, 3] and m3.shape.as_list() == [2, 2, 2, 3, 2]
    with tf.Session() as sess:
        r_m1, r_a1, r_m1f, r_m3, r_a3 = sess.run([m1, a1, m1f, m3, a3])
    np.testing.assert_allclose(r_m1, x1[:, :6].reshape(2, 3, 2, 3).max(2))
    padded = np.pad(x1, [(0, 0), (1, 1), (0, 0)])
    counts = np.array([2, 3, 3, 2])[None, :, None]
    np.testing.assert_allclose(r_a1, np.stack([padded[:, 2 * i:2 * i + 3].sum(1) for i in range(4)], 1) / counts,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r_m1f, r_m1.transpose(0, 2, 1))
    np.testing.assert_allclose(r_m3, x3[:, :4, :4, :6].reshape(2, 2, 2, 2, 2, 3, 2, 2).max((2, 4, 6)))
    np.testing.assert_allclose(r_a3, x3.reshape(2, 2, 2, 5, 1, 2, 3, 2).mean((2, 4, 6)), rtol=1e-5, atol=1e-6)


def test_input_spec_and_custom_layer():
    with pytest.raises(ValueError, match="expected ndim=4"):
        tf.layers.Conv2D(2, 3)(tf.zeros([2, 5, 3]))
    dense = tf.layers.Dense(3)
    dense(tf.zeros([2, 4]))
    with pytest.raises(ValueError, match="axis -1"):
        dense(tf.zeros([2, 5]))
    spec = tf.layers.InputSpec(ndim=2, axes={-1: 4})
    assert spec.ndim == 2 and spec.axes == {-1: 4}

    class Scale(tf.layers.Layer):
        def build(self, input_shape):
            self.scale = self.add_weight("scale", [input_shape[-1].value], initializer=tf.ones_initializer())
            self.add_update(tf.no_op(name="noop_update"))

        def call(self, inputs):
            self.add_loss(tf.reduce_sum(self.scale))
            return inputs * self.scale

    layer = Scale(name="scaler")
    out = layer(tf.constant([[1.0, 2.0]]))
    layer(tf.constant([[3.0, 4.0]]))
    assert [v.op.name for v in layer.variables] == ["scaler/scale"] and layer.count_params() == 2
    assert len(layer.updates) == 1 and len(layer.losses) == 2
    assert layer.trainable_weights == layer.variables and layer.non_trainable_weights == []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(out), [[1.0, 2.0]])
    with pytest.raises(TypeError, match="Keyword argument not understood"):
        tf.layers.Dense(2, bogus=1)
