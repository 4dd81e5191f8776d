"""tf.keras.layers convolution and pooling layers in graph mode: outputs, gradients with respect to
inputs and weights, variable names and output shapes against TF 2.15 (fixtures/keras_layer_cases.py),
channels_first against channels_last, compute_output_shape, and the errors of bad inputs."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from fixtures import keras_layer_cases as cases
from keras_layer_recordings import check_case

L = tf.keras.layers
K = tf.keras.backend
CONV_MODULES = {"tensorweave.keras.layers.convolutional", "tensorweave.keras.layers.pooling",
                "tensorweave.keras.layers.local"}
CONV_CASES = [name for name, case in cases.CASES.items() if getattr(L, case[0]).__module__ in CONV_MODULES]


@pytest.mark.parametrize("name", CONV_CASES)
def test_layer_matches_tf(name):
    check_case(name)


def _to_first(a):
    return np.moveaxis(a, -1, 1)


# (layer class, kwargs, channels_last input shape)
FIRST_VS_LAST = [
    ("Conv1D", dict(filters=2, kernel_size=3, strides=2, padding="same"), (2, 7, 3)),
    ("Conv2D", dict(filters=3, kernel_size=(3, 2), strides=(2, 1), dilation_rate=1), (2, 6, 5, 2)),
    ("Conv2D", dict(filters=2, kernel_size=3, padding="same", dilation_rate=2), (2, 6, 6, 2)),
    ("Conv3D", dict(filters=2, kernel_size=2, padding="same"), (2, 3, 4, 4, 2)),
    ("Conv2DTranspose", dict(filters=2, kernel_size=3, strides=2), (2, 3, 4, 2)),
    ("Conv3DTranspose", dict(filters=2, kernel_size=2, strides=2, padding="same"), (2, 2, 3, 3, 2)),
    ("SeparableConv2D", dict(filters=3, kernel_size=3, padding="same", depth_multiplier=2), (2, 5, 5, 2)),
    ("DepthwiseConv2D", dict(kernel_size=3, depth_multiplier=2, strides=2, padding="same"), (2, 5, 5, 3)),
    ("MaxPooling2D", dict(pool_size=2, padding="same"), (2, 5, 5, 2)),
    ("AveragePooling1D", dict(pool_size=3, strides=2, padding="same"), (2, 7, 2)),
    ("AveragePooling3D", dict(pool_size=2), (2, 4, 4, 4, 2)),
    ("ZeroPadding2D", dict(padding=((1, 0), (2, 1))), (2, 3, 3, 2)),
    ("Cropping3D", dict(cropping=((1, 0), (0, 1), (1, 1))), (2, 3, 3, 4, 1)),
    ("UpSampling2D", dict(size=(2, 3)), (2, 2, 3, 2)),
    ("UpSampling2D", dict(size=2, interpolation="bilinear"), (2, 3, 3, 2)),
    ("UpSampling3D", dict(size=(1, 2, 2)), (2, 2, 2, 2, 1)),
    ("GlobalMaxPooling2D", {}, (2, 3, 4, 2)),
]


@pytest.mark.parametrize("cls,kwargs,shape", FIRST_VS_LAST, ids=[c[0] for c in FIRST_VS_LAST])
def test_channels_first_computes_the_channels_last_result_transposed(cls, kwargs, shape):
    x_last = cases.input_array(shape, 0, "float32")
    first_shape = (shape[0], shape[-1]) + shape[1:-1]
    last = getattr(L, cls)(**kwargs)
    first = getattr(L, cls)(data_format="channels_first", **kwargs)
    p_last = tf.placeholder(tf.float32, (None,) + shape[1:])
    p_first = tf.placeholder(tf.float32, (None,) + first_shape[1:])
    y_last, y_first = last(p_last), first(p_first)
    assert [w.shape.as_list() for w in first.weights] == [w.shape.as_list() for w in last.weights]
    weights = [cases.weight_array(w.name, w.shape.as_list()) for w in last.weights]
    last.set_weights(weights)
    first.set_weights(weights)
    if y_last.shape.ndims > 2:
        assert y_first.shape.as_list() == [None, y_last.shape[-1].value] + y_last.shape.as_list()[1:-1]
    assert first.compute_output_shape(p_first.shape).as_list() == y_first.shape.as_list()
    got_last, got_first = K.get_session().run([y_last, y_first], {p_last: x_last, p_first: _to_first(x_last)})
    np.testing.assert_allclose(got_first, _to_first(got_last) if got_last.ndim > 2 else got_last, rtol=1e-5,
                               atol=1e-6)


def test_compute_output_shape_with_unknown_sizes():
    conv = L.Conv2D(4, 3, strides=2, padding="valid")
    assert conv.compute_output_shape((None, None, 9, 3)).as_list() == [None, None, 4, 4]
    assert L.Conv2DTranspose(2, 3, strides=2).compute_output_shape((None, 4, None, 3)).as_list() == \
        [None, 9, None, 2]
    assert L.MaxPooling1D(3).compute_output_shape((2, 10, 4)).as_list() == [2, 3, 4]
    assert L.Conv1D(5, 3, padding="causal", dilation_rate=2).compute_output_shape((1, 8, 2)).as_list() == [1, 8, 5]
    x = tf.placeholder(tf.float32, [None, None, None, 2])
    y = L.Conv2DTranspose(3, 3, strides=2, padding="same")(x)
    assert y.shape.as_list() == [None, None, None, 3]
    got = K.get_session().run(y, {x: np.ones((1, 3, 5, 2), np.float32)})
    assert got.shape == (1, 6, 10, 3)
    up = L.UpSampling2D(2)(x)
    assert K.get_session().run(up, {x: np.ones((1, 3, 5, 2), np.float32)}).shape == (1, 6, 10, 2)


def test_conv_on_an_input_of_the_wrong_rank_names_the_layer_and_shape():
    with pytest.raises(ValueError, match=r"Input 0 of layer conv2d is incompatible with the layer: expected "
                                         r"ndim=4, found ndim=3. Full shape received: \[None, 28, 28\]"):
        L.Conv2D(2, 3)(tf.keras.Input((28, 28)))
    conv = L.Conv1D(2, 3)
    conv(tf.keras.Input((10, 4)))
    with pytest.raises(ValueError, match=r"layer conv1d.*expected axis -1 of input shape to have value 4"):
        conv(tf.keras.Input((10, 5)))
    with pytest.raises(ValueError, match="channel dimension of the inputs should be defined"):
        L.Conv2D(2, 3)(tf.placeholder(tf.float32, [None, 5, 5, None]))
    with pytest.raises(ValueError, match="`padding` argument must be one of 'valid', 'same'"):
        L.Conv2D(2, 3, padding="causal")
    with pytest.raises(ValueError, match="`kernel_size` argument must be a tuple of 2 integers"):
        L.Conv2D(2, (3, 3, 3))
    with pytest.raises(ValueError, match="Input 0 of layer max_pooling2d is incompatible"):
        L.MaxPooling2D()(tf.keras.Input((4, 4)))
    with pytest.raises(ValueError, match="Stride .* must be greater than output padding"):
        L.Conv2DTranspose(2, 3, strides=1, output_padding=1)


def test_conv_layers_in_a_functional_model_train_their_weights():
    inp = tf.keras.Input((6, 6, 1))
    y = L.Conv2D(2, 3, activation="relu", kernel_initializer="ones")(inp)
    y = L.MaxPooling2D()(y)
    y = L.GlobalAveragePooling2D()(y)
    model = tf.keras.Model(inp, y)
    loss = tf.reduce_sum(model.output)
    train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
    sess = K.get_session()
    x = np.ones((1, 6, 6, 1), np.float32)
    before = sess.run(loss, {inp: x})
    np.testing.assert_allclose(before, 18.0)   # 9 ones per window, 2 filters
    sess.run(train, {inp: x})
    assert sess.run(loss, {inp: x}) < before
