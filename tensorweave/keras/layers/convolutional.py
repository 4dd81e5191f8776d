"""tf.keras.layers convolution layers (TF 1.15's keras/layers/convolutional.py): Conv1D/2D/3D,
Conv2DTranspose/Conv3DTranspose, SeparableConv1D/2D, DepthwiseConv2D, ZeroPadding1D/2D/3D,
Cropping1D/2D/3D, UpSampling1D/2D/3D. The convolutions are tf.layers' (tensorweave/layers/
convolutional.py); the variables are Keras's ("conv2d/kernel:0", "separable_conv2d/depthwise_kernel:0")."""
from __future__ import annotations

from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import activations, backend as K, constraints, initializers, regularizers
from tensorweave.keras.engine.base_layer import Layer, take_weight_options, weight_options_config
from tensorweave.layers.base import InputSpec, check_data_format, normalize_tuple
from tensorweave.layers.convolutional import bias_and_activation, conv_transpose, convolve, deconv_length
from tensorweave.layers.convolutional import separable_convolve
from tensorweave.ops.array.core import reshape, transpose
from tensorweave.ops.array.pad import pad, tile
from tensorweave.ops.image.resize import resize_bilinear
from tensorweave.ops.nn.conv import depthwise_conv2d


def normalize_data_format(value) -> str:
    """'channels_last' / 'channels_first'; None is the backend's image_data_format()."""
    return check_data_format(value or K.image_data_format())


def normalize_padding(value, allowed=("valid", "same")) -> str:
    padding = str(value).lower()
    if padding not in allowed:
        raise ValueError(f"The `padding` argument must be one of {', '.join(map(repr, allowed))}. Received: {value}")
    return padding


def conv_output_length(length, kernel: int, padding: str, stride: int, dilation: int = 1):
    """The length of a convolution's (or pooling's) output axis (Keras's conv_utils)."""
    if length is None:
        return None
    dilated = kernel + (kernel - 1) * (dilation - 1)
    length = {"same": length, "causal": length, "valid": length - dilated + 1, "full": length + dilated - 1}[padding]
    return (length + stride - 1) // stride


def spatial_axes(rank: int, data_format: str) -> list:
    return list(range(2, 2 + rank)) if data_format == "channels_first" else list(range(1, 1 + rank))


def with_spatial(input_shape, data_format: str, sizes, channels=None) -> TensorShape:
    """`input_shape` with its spatial sizes replaced by `sizes` (and its channels by `channels`)."""
    dims = TensorShape(input_shape).as_list()
    for axis, size in zip(spatial_axes(len(sizes), data_format), sizes):
        dims[axis] = size
    if channels is not None:
        dims[1 if data_format == "channels_first" else -1] = channels
    return TensorShape(dims)


def _spatial_sizes(input_shape, rank: int, data_format: str) -> list:
    dims = TensorShape(input_shape).as_list()
    return [dims[a] for a in spatial_axes(rank, data_format)]


def _add_kernel(layer, prefix: str, shape: tuple):
    """The layer's trainable weight `prefix`_kernel of `shape`, made with its `prefix` options."""
    return layer.add_weight(f"{prefix}_kernel", shape=shape, initializer=getattr(layer, f"{prefix}_initializer"),
                            regularizer=getattr(layer, f"{prefix}_regularizer"),
                            constraint=getattr(layer, f"{prefix}_constraint"), trainable=True, dtype=layer.dtype)


class Conv(Layer):
    """The N-D convolution layer (rank 1, 2 or 3): kernel [*kernel_size, in_channels, filters],
    then bias and activation."""

    rank = 2

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 activation=None, use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, activity_regularizer=regularizers.get(activity_regularizer),
                         **kwargs)
        self.filters = int(filters) if filters is not None else None
        self.kernel_size = normalize_tuple(kernel_size, self.rank, "kernel_size")
        self.strides = normalize_tuple(strides, self.rank, "strides")
        self.padding = normalize_padding(padding, ("valid", "same", "causal") if self.rank == 1 else
                                         ("valid", "same"))
        self.data_format = normalize_data_format(data_format)
        self.dilation_rate = normalize_tuple(dilation_rate, self.rank, "dilation_rate")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        take_weight_options(self, "kernel", kernel_initializer, kernel_regularizer, kernel_constraint)
        take_weight_options(self, "bias", bias_initializer, bias_regularizer, bias_constraint)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    @property
    def _channel_axis(self) -> int:
        return 1 if self.data_format == "channels_first" else -1

    def _in_channels(self, input_shape) -> int:
        channels = TensorShape(input_shape)[self._channel_axis].value
        if channels is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
        return channels

    def _add_bias(self, size: int) -> None:
        self.bias = (self.add_weight("bias", shape=(size,), initializer=self.bias_initializer,
                                     regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                     trainable=True, dtype=self.dtype) if self.use_bias else None)

    def _kernel_shape(self, channels: int) -> tuple:
        return self.kernel_size + (channels, self.filters)

    def build(self, input_shape) -> None:
        channels = self._in_channels(input_shape)
        self.kernel = self.add_weight("kernel", shape=self._kernel_shape(channels),
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, trainable=True, dtype=self.dtype)
        self._add_bias(self.filters)
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis: channels})
        self.built = True

    def _finish(self, outputs):
        return bias_and_activation(outputs, self.bias, self.activation, self.data_format)

    def _causal(self, inputs):
        """(inputs, padding) to convolve: 'causal' pads the past only (output t sees inputs <= t)."""
        if self.padding != "causal":
            return inputs, self.padding
        left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
        return pad(inputs, [[0, 0], [0, 0], [left, 0]] if self.data_format == "channels_first" else
                   [[0, 0], [left, 0], [0, 0]]), "valid"

    def call(self, inputs):
        inputs, padding = self._causal(inputs)
        return self._finish(convolve(inputs, self.kernel, self.strides, padding, self.data_format,
                                     self.dilation_rate))

    def compute_output_shape(self, input_shape):
        sizes = [conv_output_length(n, k, self.padding, s, d) for n, k, s, d in
                 zip(_spatial_sizes(input_shape, self.rank, self.data_format), self.kernel_size, self.strides,
                     self.dilation_rate)]
        return with_spatial(input_shape, self.data_format, sizes, self.filters)

    def get_config(self) -> dict:
        config = {"filters": self.filters, "kernel_size": self.kernel_size, "strides": self.strides,
                  "padding": self.padding, "data_format": self.data_format, "dilation_rate": self.dilation_rate,
                  "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                  "kernel_initializer": initializers.serialize(self.kernel_initializer),
                  "bias_initializer": initializers.serialize(self.bias_initializer),
                  "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                  "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                  "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                  "kernel_constraint": constraints.serialize(self.kernel_constraint),
                  "bias_constraint": constraints.serialize(self.bias_constraint)}
        return {**super().get_config(), **config}


@tf_export("keras.layers.Conv1D", "keras.layers.Convolution1D")
class Conv1D(Conv):
    """Conv1D(filters, kernel_size, strides=1, padding='valid' ('causal' too), data_format=
    'channels_last', dilation_rate=1, activation=None, use_bias=True, ...): kernel [width,
    in_channels, filters] on [batch, steps, channels] inputs."""
    rank = 1

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format="channels_last", **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, **kwargs)


@tf_export("keras.layers.Conv2D", "keras.layers.Convolution2D")
class Conv2D(Conv):
    """Conv2D(filters, kernel_size, strides=(1, 1), padding='valid', data_format=None,
    dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer='glorot_uniform', ...):
    kernel [height, width, in_channels, filters] on 4-D inputs."""
    rank = 2


@tf_export("keras.layers.Conv3D", "keras.layers.Convolution3D")
class Conv3D(Conv):
    """Conv3D(filters, kernel_size, strides=(1, 1, 1), padding='valid', data_format=None, ...):
    kernel [depth, height, width, in_channels, filters] on 5-D inputs."""
    rank = 3


class _ConvTranspose(Conv):
    """The transposed convolution: kernel [*kernel_size, filters, in_channels]; output sizes
    input * stride ('same') or input * stride + max(kernel - stride, 0) ('valid'), or with
    `output_padding` (kernel - 2 * pad + (input - 1) * stride + output_padding)."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None, data_format=None,
                 **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, **kwargs)
        self.output_padding = (normalize_tuple(output_padding, self.rank, "output_padding")
                               if output_padding is not None else None)
        if self.output_padding is not None and any(p >= s for p, s in zip(self.output_padding, self.strides)):
            raise ValueError(f"Stride {self.strides} must be greater than output padding {self.output_padding}")
        if self.rank == 3 and self.dilation_rate != (1, 1, 1):
            raise ValueError(f"Conv3DTranspose takes dilation_rate (1, 1, 1) only (TF's conv3d_transpose has no "
                             f"dilations). Received: {self.dilation_rate}")

    def _kernel_shape(self, channels: int) -> tuple:
        return self.kernel_size + (self.filters, channels)

    def call(self, inputs):
        return self._finish(conv_transpose(inputs, self.kernel, self.filters, self.kernel_size, self.strides,
                                           self.padding, self.data_format, self.output_padding,
                                           self.dilation_rate))

    def compute_output_shape(self, input_shape):
        output_padding = self.output_padding or (None,) * self.rank
        sizes = [deconv_length(n, k, s, self.padding, p, d) for n, k, s, p, d in
                 zip(_spatial_sizes(input_shape, self.rank, self.data_format), self.kernel_size, self.strides,
                     output_padding, self.dilation_rate)]
        return with_spatial(input_shape, self.data_format, sizes, self.filters)

    def get_config(self) -> dict:
        return {**super().get_config(), "output_padding": self.output_padding}


@tf_export("keras.layers.Conv2DTranspose", "keras.layers.Convolution2DTranspose")
class Conv2DTranspose(_ConvTranspose):
    """Conv2DTranspose(filters, kernel_size, strides=(1, 1), padding='valid', output_padding=None,
    data_format=None, activation=None, use_bias=True, ...): the gradient of a Conv2D with respect
    to its input, as a layer."""
    rank = 2


@tf_export("keras.layers.Conv3DTranspose", "keras.layers.Convolution3DTranspose")
class Conv3DTranspose(_ConvTranspose):
    """Conv3DTranspose(filters, kernel_size, strides=(1, 1, 1), padding='valid', output_padding=None,
    data_format=None, ...)."""
    rank = 3


class _SeparableConv(Conv):
    """A depthwise convolution (depth_multiplier kernels per input channel) then a pointwise 1x1
    convolution: weights depthwise_kernel, pointwise_kernel, bias."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 depth_multiplier=1, activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 pointwise_initializer="glorot_uniform", bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                         bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer, bias_constraint=bias_constraint, **kwargs)
        self.depth_multiplier = int(depth_multiplier)
        take_weight_options(self, "depthwise", depthwise_initializer, depthwise_regularizer, depthwise_constraint)
        take_weight_options(self, "pointwise", pointwise_initializer, pointwise_regularizer, pointwise_constraint)

    def build(self, input_shape) -> None:
        channels = self._in_channels(input_shape)
        self.depthwise_kernel = _add_kernel(self, "depthwise", self.kernel_size + (channels, self.depth_multiplier))
        self.pointwise_kernel = _add_kernel(self, "pointwise",
                                            (1,) * self.rank + (channels * self.depth_multiplier, self.filters))
        self._add_bias(self.filters)
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis: channels})
        self.built = True

    def call(self, inputs):
        inputs, padding = self._causal(inputs)
        return self._finish(separable_convolve(inputs, self.depthwise_kernel, self.pointwise_kernel, self.strides,
                                               padding, self.data_format, self.dilation_rate))

    def get_config(self) -> dict:
        config = super().get_config()
        for key in ("kernel_initializer", "kernel_regularizer", "kernel_constraint"):
            config.pop(key)
        return {**config, "depth_multiplier": self.depth_multiplier,
                **weight_options_config(self, "depthwise", "pointwise")}


@tf_export("keras.layers.SeparableConv1D", "keras.layers.SeparableConvolution1D")
class SeparableConv1D(_SeparableConv):
    """SeparableConv1D(filters, kernel_size, strides=1, padding='valid', data_format=None,
    dilation_rate=1, depth_multiplier=1, ...)."""
    rank = 1


@tf_export("keras.layers.SeparableConv2D", "keras.layers.SeparableConvolution2D")
class SeparableConv2D(_SeparableConv):
    """SeparableConv2D(filters, kernel_size, strides=(1, 1), padding='valid', data_format=None,
    dilation_rate=(1, 1), depth_multiplier=1, ...)."""
    rank = 2


@tf_export("keras.layers.DepthwiseConv2D")
class DepthwiseConv2D(Conv2D):
    """DepthwiseConv2D(kernel_size, strides=(1, 1), padding='valid', depth_multiplier=1,
    data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True, ...): each input channel
    convolved with its own depth_multiplier kernels (depthwise_kernel [h, w, in, depth_multiplier];
    in * depth_multiplier output channels)."""

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1, data_format=None,
                 dilation_rate=(1, 1), activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(None, kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                         bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer, bias_constraint=bias_constraint, **kwargs)
        self.depth_multiplier = int(depth_multiplier)
        take_weight_options(self, "depthwise", depthwise_initializer, depthwise_regularizer, depthwise_constraint)

    def build(self, input_shape) -> None:
        channels = self._in_channels(input_shape)
        self.depthwise_kernel = _add_kernel(self, "depthwise", self.kernel_size + (channels, self.depth_multiplier))
        self._add_bias(channels * self.depth_multiplier)
        self.input_spec = InputSpec(ndim=4, axes={self._channel_axis: channels})
        self.built = True

    def call(self, inputs):
        fmt = "NCHW" if self.data_format == "channels_first" else "NHWC"
        strides = [1, 1, *self.strides] if fmt == "NCHW" else [1, *self.strides, 1]
        outputs = depthwise_conv2d(inputs, self.depthwise_kernel, strides, self.padding.upper(),
                                   rate=self.dilation_rate, data_format=fmt)
        return self._finish(outputs)

    def compute_output_shape(self, input_shape):
        shape = super().compute_output_shape(input_shape)
        return with_spatial(shape, self.data_format, _spatial_sizes(shape, 2, self.data_format),
                            self._in_channels(input_shape) * self.depth_multiplier)

    def get_config(self) -> dict:
        config = super().get_config()
        for key in ("filters", "kernel_initializer", "kernel_regularizer", "kernel_constraint"):
            config.pop(key)
        return {**config, "depth_multiplier": self.depth_multiplier, **weight_options_config(self, "depthwise")}


# -- padding, cropping, upsampling ----------------------------------------------------------------
def _pairs(value, rank: int, name: str) -> tuple:
    """An int, `rank` ints or `rank` pairs as `rank` (before, after) pairs."""
    if isinstance(value, int):
        return ((value, value),) * rank
    value = tuple(value)
    if len(value) != rank:
        raise ValueError(f"`{name}` should have {rank} elements. Found: {value}")
    return tuple((v, v) if isinstance(v, int) else normalize_tuple(v, 2, f"{name} entry") for v in value)


class _SpatialEdit(Layer):
    """The base of ZeroPadding/Cropping: per-spatial-axis (before, after) amounts."""

    rank = 2
    _argument = "padding"

    def __init__(self, amounts, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format) if self.rank > 1 else "channels_last"
        setattr(self, self._argument, _pairs(amounts, self.rank, self._argument))
        self.input_spec = InputSpec(ndim=self.rank + 2)

    @property
    def _amounts(self) -> tuple:
        return getattr(self, self._argument)

    def get_config(self) -> dict:
        config = {**super().get_config(), self._argument: self._amounts}
        if self.rank > 1:
            config["data_format"] = self.data_format
        else:
            config[self._argument] = self._amounts[0]
        return config


class _ZeroPadding(_SpatialEdit):
    def call(self, inputs):
        paddings = [[0, 0]] * (self.rank + 2)
        for axis, amount in zip(spatial_axes(self.rank, self.data_format), self._amounts):
            paddings[axis] = list(amount)
        return pad(inputs, paddings)

    def compute_output_shape(self, input_shape):
        sizes = [n + a + b if n is not None else None for n, (a, b) in
                 zip(_spatial_sizes(input_shape, self.rank, self.data_format), self._amounts)]
        return with_spatial(input_shape, self.data_format, sizes)


@tf_export("keras.layers.ZeroPadding1D")
class ZeroPadding1D(_ZeroPadding):
    """ZeroPadding1D(padding=1): zeros before and after the steps axis (an int or (before, after))."""
    rank = 1

    def __init__(self, padding=1, **kwargs):
        super().__init__((padding,) if not isinstance(padding, int) else padding, **kwargs)


@tf_export("keras.layers.ZeroPadding2D")
class ZeroPadding2D(_ZeroPadding):
    """ZeroPadding2D(padding=(1, 1), data_format=None): an int, (rows, cols) or ((top, bottom),
    (left, right)) zeros around the image."""

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(padding, data_format, **kwargs)


@tf_export("keras.layers.ZeroPadding3D")
class ZeroPadding3D(_ZeroPadding):
    """ZeroPadding3D(padding=(1, 1, 1), data_format=None)."""
    rank = 3

    def __init__(self, padding=(1, 1, 1), data_format=None, **kwargs):
        super().__init__(padding, data_format, **kwargs)


class _Cropping(_SpatialEdit):
    _argument = "cropping"

    def call(self, inputs):
        index = [slice(None)] * (self.rank + 2)
        for axis, (a, b) in zip(spatial_axes(self.rank, self.data_format), self._amounts):
            index[axis] = slice(a, -b if b else None)
        return inputs[tuple(index)]

    def compute_output_shape(self, input_shape):
        sizes = [n - a - b if n is not None else None for n, (a, b) in
                 zip(_spatial_sizes(input_shape, self.rank, self.data_format), self._amounts)]
        return with_spatial(input_shape, self.data_format, sizes)


@tf_export("keras.layers.Cropping1D")
class Cropping1D(_Cropping):
    """Cropping1D(cropping=(1, 1)): drops steps from the start and end."""
    rank = 1

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__((cropping,) if not isinstance(cropping, int) else cropping, **kwargs)


@tf_export("keras.layers.Cropping2D")
class Cropping2D(_Cropping):
    """Cropping2D(cropping=((0, 0), (0, 0)), data_format=None): rows and columns dropped at the edges."""

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(cropping, data_format, **kwargs)


@tf_export("keras.layers.Cropping3D")
class Cropping3D(_Cropping):
    """Cropping3D(cropping=((1, 1), (1, 1), (1, 1)), data_format=None)."""
    rank = 3

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(cropping, data_format, **kwargs)


def repeat_elements(x, rep: int, axis: int):
    """Each entry of `axis` repeated `rep` times in place (K.repeat_elements): [a, b] -> [a, a, b, b]."""
    dims = x.shape.as_list()
    ndims = len(dims)
    expanded = K.expand_dims(x, axis + 1)
    tiled = tile(expanded, [1] * (axis + 1) + [rep] + [1] * (ndims - axis - 1))
    dyn = K.shape(x)
    new_shape = [dyn[i] if dims[i] is None else dims[i] for i in range(ndims)]
    new_shape[axis] = new_shape[axis] * rep
    outputs = reshape(tiled, K.stack(new_shape) if any(d is None for d in dims) else new_shape)
    dims[axis] = dims[axis] * rep if dims[axis] is not None else None
    outputs.set_shape(dims)
    return outputs


class _UpSampling(Layer):
    rank = 2

    def __init__(self, size, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format) if self.rank > 1 else "channels_last"
        self.size = normalize_tuple(size, self.rank, "size")
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs):
        for axis, factor in zip(spatial_axes(self.rank, self.data_format), self.size):
            inputs = repeat_elements(inputs, factor, axis)
        return inputs

    def compute_output_shape(self, input_shape):
        sizes = [n * f if n is not None else None for n, f in
                 zip(_spatial_sizes(input_shape, self.rank, self.data_format), self.size)]
        return with_spatial(input_shape, self.data_format, sizes)

    def get_config(self) -> dict:
        return {**super().get_config(), "size": self.size, "data_format": self.data_format}


@tf_export("keras.layers.UpSampling1D")
class UpSampling1D(_UpSampling):
    """UpSampling1D(size=2): each step repeated `size` times."""
    rank = 1

    def __init__(self, size=2, **kwargs):
        super().__init__(size, **kwargs)

    def get_config(self) -> dict:
        return {**Layer.get_config(self), "size": self.size[0]}


@tf_export("keras.layers.UpSampling2D")
class UpSampling2D(_UpSampling):
    """UpSampling2D(size=(2, 2), data_format=None, interpolation='nearest'): rows and columns
    repeated ('nearest') or bilinearly interpolated with half-pixel centres ('bilinear')."""

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(size, data_format, **kwargs)
        if interpolation not in ("nearest", "bilinear"):
            raise ValueError(f"`interpolation` argument should be one of `\"nearest\"` or `\"bilinear\"`. "
                             f"Received: {interpolation}")
        self.interpolation = interpolation

    def call(self, inputs):
        if self.interpolation == "nearest":
            return super().call(inputs)
        first = self.data_format == "channels_first"
        x = transpose(inputs, [0, 2, 3, 1]) if first else inputs
        rows, cols = x.shape.as_list()[1:3]
        if rows is None or cols is None:
            dyn = K.shape(x)
            size = K.stack([dyn[1] * self.size[0], dyn[2] * self.size[1]])
        else:
            size = [rows * self.size[0], cols * self.size[1]]
        y = resize_bilinear(x, size, half_pixel_centers=True)
        return transpose(y, [0, 3, 1, 2]) if first else y

    def get_config(self) -> dict:
        return {**super().get_config(), "interpolation": self.interpolation}


@tf_export("keras.layers.UpSampling3D")
class UpSampling3D(_UpSampling):
    """UpSampling3D(size=(2, 2, 2), data_format=None): each spatial axis repeated."""
    rank = 3

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        super().__init__(size, data_format, **kwargs)
