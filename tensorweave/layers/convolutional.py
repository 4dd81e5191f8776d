"""tf.layers convolution layers: Conv1D/2D/3D, Conv2DTranspose/Conv3DTranspose and
SeparableConv1D/2D with their functional forms, and TF's variable names ("conv1d/kernel",
"separable_conv2d/depthwise_kernel", "conv3d_transpose/bias")."""
from __future__ import annotations

from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import stack
from tensorweave.ops.array.core import expand_dims, shape, squeeze
from tensorweave.ops.nn.activations import bias_add
from tensorweave.ops.nn.conv import conv2d as nn_conv2d, conv2d_transpose as nn_conv2d_transpose
from tensorweave.ops.nn.conv import separable_conv2d as nn_separable_conv2d
from tensorweave.ops.nn.conv3d import conv3d as nn_conv3d, conv3d_transpose as nn_conv3d_transpose
from tensorweave.ops.state.initializers import zeros_initializer
from tensorweave.layers.base import InputSpec, Layer, check_data_format, check_padding, normalize_tuple


_FORMATS = {(1, "channels_last"): "NHWC", (1, "channels_first"): "NCHW", (2, "channels_last"): "NHWC",
            (2, "channels_first"): "NCHW", (3, "channels_last"): "NDHWC", (3, "channels_first"): "NCDHW"}


def full_attr(values, data_format: str) -> list:
    """Per-spatial-axis values as the 2+rank entries of an op attr in `data_format`'s layout."""
    return [1, 1, *values] if data_format == "channels_first" else [1, *values, 1]


def convolve(inputs, kernel, strides, padding: str, data_format: str, dilation_rate):
    """The N-D convolution (rank = len(strides): 1, 2 or 3) of tf.layers and tf.keras.layers; a
    1-D convolution is a 2-D one over a height-1 image, as TF's conv1d. `padding` is 'SAME'/'VALID'."""
    rank = len(strides)
    fmt = _FORMATS[(rank, data_format)]
    padding = padding.upper()
    if rank == 3:
        return nn_conv3d(inputs, kernel, full_attr(strides, data_format), padding, data_format=fmt,
                         dilations=full_attr(dilation_rate, data_format))
    if rank == 2:
        return nn_conv2d(inputs, kernel, full_attr(strides, data_format), padding, data_format=fmt,
                         dilations=full_attr(dilation_rate, data_format))
    axis = 2 if data_format == "channels_first" else 1
    y = nn_conv2d(expand_dims(inputs, axis), expand_dims(kernel, 0), full_attr((1,) + tuple(strides), data_format),
                  padding, data_format=fmt, dilations=full_attr((1,) + tuple(dilation_rate), data_format))
    return squeeze(y, [axis])


def separable_convolve(inputs, depthwise_kernel, pointwise_kernel, strides, padding: str, data_format: str,
                       dilation_rate):
    """Depthwise then pointwise convolution (rank 1 or 2; 1-D as a height-1 image)."""
    rank = len(strides)
    fmt = _FORMATS[(rank, data_format)]
    padding = padding.upper()
    if rank == 2:
        return nn_separable_conv2d(inputs, depthwise_kernel, pointwise_kernel, full_attr(strides, data_format),
                                   padding, rate=tuple(dilation_rate), data_format=fmt)
    axis = 2 if data_format == "channels_first" else 1
    y = nn_separable_conv2d(expand_dims(inputs, axis), expand_dims(depthwise_kernel, 0),
                            expand_dims(pointwise_kernel, 0), full_attr((1,) + tuple(strides), data_format), padding,
                            rate=(1,) + tuple(dilation_rate), data_format=fmt)
    return squeeze(y, [axis])


def bias_and_activation(outputs, bias, activation, data_format: str):
    """outputs + bias along the channel axis, then the activation (either may be None)."""
    if bias is not None:
        outputs = bias_add(outputs, bias, data_format="NCHW" if data_format == "channels_first" else "NHWC")
    return activation(outputs) if activation is not None else outputs


def deconv_length(size, kernel: int, stride: int, padding: str, output_padding=None, dilation: int = 1):
    """The length of a transposed convolution's output axis (Keras's conv_utils.deconv_output_length)."""
    if size is None:
        return None
    padding = padding.lower()
    kernel = kernel + (kernel - 1) * (dilation - 1)
    if output_padding is None:
        if padding == "valid":
            return size * stride + max(kernel - stride, 0)
        if padding == "full":
            return size * stride - (stride + kernel - 2)
        return size * stride
    pad = {"same": kernel // 2, "valid": 0, "full": kernel - 1}[padding]
    return (size - 1) * stride + kernel - 2 * pad + output_padding


def conv_transpose(inputs, kernel, filters: int, kernel_size, strides, padding: str, data_format: str,
                   output_padding=None, dilation_rate=None):
    """The transposed convolution (rank 2 or 3) of tf.layers and tf.keras.layers: kernel
    [*kernel_size, filters, in_channels], output sizes by deconv_length (unknown input sizes from
    the input's dynamic shape)."""
    rank = len(strides)
    first = data_format == "channels_first"
    dyn = shape(inputs)
    static = inputs.shape.as_list()
    sp_axes = list(range(2, 2 + rank) if first else range(1, 1 + rank))
    output_padding = output_padding or (None,) * rank
    dilation_rate = tuple(dilation_rate or (1,) * rank)
    sizes, static_sizes = [], []
    for axis, k, s, op, d in zip(sp_axes, kernel_size, strides, output_padding, dilation_rate):
        length = deconv_length(static[axis], k, s, padding, op, d)
        static_sizes.append(length)
        if length is None:   # the same formula on the dynamic size
            length = (dyn[axis] - 1) * s + deconv_length(1, k, s, padding, op, d)
        sizes.append(length)
    out_shape = [dyn[0], filters, *sizes] if first else [dyn[0], *sizes, filters]
    fmt = _FORMATS[(rank, data_format)]
    if rank == 3:
        outputs = nn_conv3d_transpose(inputs, kernel, stack(out_shape), full_attr(strides, data_format),
                                      padding.upper(), data_format=fmt)
    else:
        outputs = nn_conv2d_transpose(inputs, kernel, stack(out_shape), full_attr(strides, data_format),
                                      padding.upper(), data_format=fmt,
                                      dilations=full_attr(dilation_rate, data_format))
    outputs.set_shape([static[0], filters, *static_sizes] if first else [static[0], *static_sizes, filters])
    return outputs


class _Conv(Layer):
    """The N-D convolution layer (rank 1, 2 or 3): kernel [*kernel_size, in_channels, filters]."""

    rank = 2

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format="channels_last",
                 dilation_rate=1, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=zeros_initializer(), kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        super().__init__(trainable=trainable, name=name, activity_regularizer=activity_regularizer, **kwargs)
        self.filters = int(filters)
        self.kernel_size = normalize_tuple(kernel_size, self.rank, "kernel_size")
        self.strides = normalize_tuple(strides, self.rank, "strides")
        self.padding = check_padding(padding)
        self.data_format = check_data_format(data_format)
        self.dilation_rate = normalize_tuple(dilation_rate, self.rank, "dilation_rate")
        self.activation, self.use_bias = activation, use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer if bias_initializer is not None else zeros_initializer()
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.input_spec = InputSpec(ndim=self.rank + 2)

    @property
    def _channel_axis(self) -> int:
        return 1 if self.data_format == "channels_first" else -1

    def _in_channels(self, input_shape) -> int:
        c = TensorShape(input_shape)[self._channel_axis].value
        if c is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
        return c

    def build(self, input_shape) -> None:
        c = self._in_channels(input_shape)
        self.kernel = self.add_weight("kernel", list(self.kernel_size) + [c, self.filters],
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self._add_bias()
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis: c})

    def _add_bias(self) -> None:
        self.bias = (self.add_weight("bias", [self.filters], initializer=self.bias_initializer,
                                     regularizer=self.bias_regularizer, constraint=self.bias_constraint)
                     if self.use_bias else None)

    def _convolve(self, inputs):
        return convolve(inputs, self.kernel, self.strides, self.padding, self.data_format, self.dilation_rate)

    def _finish(self, outputs):
        return bias_and_activation(outputs, self.bias, self.activation, self.data_format)

    def call(self, inputs):
        return self._finish(self._convolve(inputs))


@tf_export("layers.Conv1D")
class Conv1D(_Conv):
    """tf.layers.Conv1D(filters, kernel_size, strides=1, padding='valid', data_format='channels_last',
    dilation_rate=1, activation=None, use_bias=True, ...): kernel [width, in_channels, filters]."""
    rank = 1


@tf_export("layers.Conv2D")
class Conv2D(_Conv):
    """tf.layers.Conv2D(filters, kernel_size, strides=(1, 1), padding='valid', ...): kernel
    [height, width, in_channels, filters]."""
    rank = 2


@tf_export("layers.Conv3D")
class Conv3D(_Conv):
    """tf.layers.Conv3D(filters, kernel_size, strides=(1, 1, 1), padding='valid', ...): kernel
    [depth, height, width, in_channels, filters]."""
    rank = 3


class _ConvTranspose(_Conv):
    """The transposed convolution (the gradient of a convolution with respect to its input):
    kernel [*kernel_size, filters, in_channels]."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format="channels_last",
                 activation=None, use_bias=True, kernel_initializer=None, bias_initializer=zeros_initializer(),
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, 1, activation, use_bias,
                         kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
                         activity_regularizer, kernel_constraint, bias_constraint, trainable, name, **kwargs)

    def build(self, input_shape) -> None:
        c = self._in_channels(input_shape)
        self.kernel = self.add_weight("kernel", list(self.kernel_size) + [self.filters, c],
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self._add_bias()
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis: c})

    def call(self, inputs):
        return self._finish(conv_transpose(inputs, self.kernel, self.filters, self.kernel_size, self.strides,
                                           self.padding, self.data_format))


@tf_export("layers.Conv2DTranspose")
class Conv2DTranspose(_ConvTranspose):
    """tf.layers.Conv2DTranspose(filters, kernel_size, strides=(1, 1), padding='valid', ...):
    output size input*stride ('same') or input*stride + max(kernel - stride, 0) ('valid')."""
    rank = 2


@tf_export("layers.Conv3DTranspose")
class Conv3DTranspose(_ConvTranspose):
    """tf.layers.Conv3DTranspose(filters, kernel_size, strides=(1, 1, 1), padding='valid', ...)."""
    rank = 3


class _SeparableConv(_Conv):
    """Depthwise convolution (depth_multiplier kernels per input channel) then a pointwise
    (1x1) convolution: variables depthwise_kernel, pointwise_kernel, bias."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format="channels_last",
                 dilation_rate=1, depth_multiplier=1, activation=None, use_bias=True, depthwise_initializer=None,
                 pointwise_initializer=None, bias_initializer=zeros_initializer(), depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None, trainable=True,
                 name=None, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                         None, bias_initializer, None, bias_regularizer, activity_regularizer, None,
                         bias_constraint, trainable, name, **kwargs)
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer, self.pointwise_initializer = depthwise_initializer, pointwise_initializer
        self.depthwise_regularizer, self.pointwise_regularizer = depthwise_regularizer, pointwise_regularizer
        self.depthwise_constraint, self.pointwise_constraint = depthwise_constraint, pointwise_constraint

    def build(self, input_shape) -> None:
        c = self._in_channels(input_shape)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", list(self.kernel_size) + [c, self.depth_multiplier],
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", [1] * self.rank + [c * self.depth_multiplier, self.filters],
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint)
        self._add_bias()
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis: c})

    def call(self, inputs):
        return self._finish(separable_convolve(inputs, self.depthwise_kernel, self.pointwise_kernel, self.strides,
                                               self.padding, self.data_format, self.dilation_rate))


@tf_export("layers.SeparableConv1D")
class SeparableConv1D(_SeparableConv):
    """tf.layers.SeparableConv1D(filters, kernel_size, strides=1, padding='valid', ...,
    depth_multiplier=1, ...)."""
    rank = 1


@tf_export("layers.SeparableConv2D")
class SeparableConv2D(_SeparableConv):
    """tf.layers.SeparableConv2D(filters, kernel_size, strides=(1, 1), padding='valid', ...,
    depth_multiplier=1, ...)."""
    rank = 2


def _conv_fn(cls):
    def fn(inputs, filters, kernel_size, strides=1, padding="valid", data_format="channels_last", dilation_rate=1,
           activation=None, use_bias=True, kernel_initializer=None, bias_initializer=zeros_initializer(),
           kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
        return cls(filters, kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                   kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer, activity_regularizer,
                   kernel_constraint, bias_constraint, trainable, name, _reuse=reuse)(inputs)
    return fn


def _transpose_fn(cls):
    def fn(inputs, filters, kernel_size, strides=1, padding="valid", data_format="channels_last", activation=None,
           use_bias=True, kernel_initializer=None, bias_initializer=zeros_initializer(), kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
           trainable=True, name=None, reuse=None):
        return cls(filters, kernel_size, strides, padding, data_format, activation, use_bias, kernel_initializer,
                   bias_initializer, kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                   bias_constraint, trainable, name, _reuse=reuse)(inputs)
    return fn


def _separable_fn(cls):
    def fn(inputs, filters, kernel_size, strides=1, padding="valid", data_format="channels_last", dilation_rate=1,
           depth_multiplier=1, activation=None, use_bias=True, depthwise_initializer=None, pointwise_initializer=None,
           bias_initializer=zeros_initializer(), depthwise_regularizer=None, pointwise_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None, pointwise_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
        return cls(filters, kernel_size, strides, padding, data_format, dilation_rate, depth_multiplier, activation,
                   use_bias, depthwise_initializer, pointwise_initializer, bias_initializer, depthwise_regularizer,
                   pointwise_regularizer, bias_regularizer, activity_regularizer, depthwise_constraint,
                   pointwise_constraint, bias_constraint, trainable, name, _reuse=reuse)(inputs)
    return fn


def _named(fn, name: str, doc: str):
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


conv1d = _named(_conv_fn(Conv1D), "conv1d", "tf.layers.conv1d(inputs, filters, kernel_size, strides=1, ...): "
                                            "functional Conv1D; variables 'conv1d/kernel', 'conv1d/bias'.")
tf_export("layers.conv1d")(conv1d)
conv2d = _named(_conv_fn(Conv2D), "conv2d", "tf.layers.conv2d(inputs, filters, kernel_size, strides=(1, 1), ...): "
                                            "functional Conv2D; variables 'conv2d/kernel', 'conv2d/bias'.")
tf_export("layers.conv2d")(conv2d)
conv3d = _named(_conv_fn(Conv3D), "conv3d", "tf.layers.conv3d(inputs, filters, kernel_size, strides=(1, 1, 1), "
                                            "...): functional Conv3D.")
tf_export("layers.conv3d")(conv3d)
conv2d_transpose = _named(_transpose_fn(Conv2DTranspose), "conv2d_transpose",
                          "tf.layers.conv2d_transpose(inputs, filters, kernel_size, strides=(1, 1), ...): "
                          "functional Conv2DTranspose.")
tf_export("layers.conv2d_transpose")(conv2d_transpose)
conv3d_transpose = _named(_transpose_fn(Conv3DTranspose), "conv3d_transpose",
                          "tf.layers.conv3d_transpose(inputs, filters, kernel_size, strides=(1, 1, 1), ...): "
                          "functional Conv3DTranspose.")
tf_export("layers.conv3d_transpose")(conv3d_transpose)
separable_conv1d = _named(_separable_fn(SeparableConv1D), "separable_conv1d",
                          "tf.layers.separable_conv1d(inputs, filters, kernel_size, ...): functional SeparableConv1D.")
tf_export("layers.separable_conv1d")(separable_conv1d)
separable_conv2d = _named(_separable_fn(SeparableConv2D), "separable_conv2d",
                          "tf.layers.separable_conv2d(inputs, filters, kernel_size, ...): functional SeparableConv2D.")
tf_export("layers.separable_conv2d")(separable_conv2d)
