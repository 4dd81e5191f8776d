"""tf.keras.layers pooling layers (TF 1.15's keras/layers/pooling.py): MaxPooling1D/2D/3D,
AveragePooling1D/2D/3D (tf.layers' pooling, tensorweave/layers/pooling.py) and the global
max/average poolings over every spatial axis, in either data format."""
from __future__ import annotations

from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K
from tensorweave.keras.engine.base_layer import Layer
from tensorweave.keras.layers.convolutional import conv_output_length, normalize_data_format, normalize_padding
from tensorweave.keras.layers.convolutional import spatial_axes, with_spatial
from tensorweave.layers.base import InputSpec, normalize_tuple
from tensorweave.layers.pooling import pool


class Pooling(Layer):
    """Max or average pooling of rank 1, 2 or 3; strides default to the pool size."""

    rank = 2
    _max = True

    def __init__(self, pool_size, strides=None, padding="valid", data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size = normalize_tuple(pool_size, self.rank, "pool_size")
        self.strides = normalize_tuple(strides if strides is not None else pool_size, self.rank, "strides")
        self.padding = normalize_padding(padding)
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs):
        return pool(inputs, self._max, self.pool_size, self.strides, self.padding, self.data_format)

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        sizes = [conv_output_length(dims[a], k, self.padding, s) for a, k, s in
                 zip(spatial_axes(self.rank, self.data_format), self.pool_size, self.strides)]
        return with_spatial(input_shape, self.data_format, sizes)

    def get_config(self) -> dict:
        return {**super().get_config(), "pool_size": self.pool_size, "padding": self.padding,
                "strides": self.strides, "data_format": self.data_format}


class _Pooling1D(Pooling):
    rank = 1

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format="channels_last", **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class _Pooling2D(Pooling):
    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class _Pooling3D(Pooling):
    rank = 3

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


@tf_export("keras.layers.MaxPooling1D", "keras.layers.MaxPool1D")
class MaxPooling1D(_Pooling1D):
    """MaxPooling1D(pool_size=2, strides=None, padding='valid', data_format='channels_last')."""
    _max = True


@tf_export("keras.layers.AveragePooling1D", "keras.layers.AvgPool1D")
class AveragePooling1D(_Pooling1D):
    """AveragePooling1D(pool_size=2, strides=None, padding='valid', data_format='channels_last')."""
    _max = False


@tf_export("keras.layers.MaxPooling2D", "keras.layers.MaxPool2D")
class MaxPooling2D(_Pooling2D):
    """MaxPooling2D(pool_size=(2, 2), strides=None, padding='valid', data_format=None)."""
    _max = True


@tf_export("keras.layers.AveragePooling2D", "keras.layers.AvgPool2D")
class AveragePooling2D(_Pooling2D):
    """AveragePooling2D(pool_size=(2, 2), strides=None, padding='valid', data_format=None)."""
    _max = False


@tf_export("keras.layers.MaxPooling3D", "keras.layers.MaxPool3D")
class MaxPooling3D(_Pooling3D):
    """MaxPooling3D(pool_size=(2, 2, 2), strides=None, padding='valid', data_format=None)."""
    _max = True


@tf_export("keras.layers.AveragePooling3D", "keras.layers.AvgPool3D")
class AveragePooling3D(_Pooling3D):
    """AveragePooling3D(pool_size=(2, 2, 2), strides=None, padding='valid', data_format=None)."""
    _max = False


class GlobalPooling(Layer):
    """The max or mean over every spatial axis: [batch, ..., channels] -> [batch, channels]."""

    rank = 2
    _max = True

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs):
        reduce = K.max if self._max else K.mean
        return reduce(inputs, axis=spatial_axes(self.rank, self.data_format))

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        return TensorShape([dims[0], dims[1] if self.data_format == "channels_first" else dims[-1]])

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format}


class _GlobalPooling1D(GlobalPooling):
    rank = 1

    def __init__(self, data_format="channels_last", **kwargs):
        super().__init__(data_format, **kwargs)


@tf_export("keras.layers.GlobalMaxPooling1D", "keras.layers.GlobalMaxPool1D")
class GlobalMaxPooling1D(_GlobalPooling1D):
    """GlobalMaxPooling1D(data_format='channels_last'): the max over the steps."""
    _max = True


@tf_export("keras.layers.GlobalAveragePooling1D", "keras.layers.GlobalAvgPool1D")
class GlobalAveragePooling1D(_GlobalPooling1D):
    """GlobalAveragePooling1D(data_format='channels_last'): the mean over the steps; with an input
    mask (an Embedding's mask_zero), the mean over the unmasked steps only."""
    _max = False

    def __init__(self, data_format="channels_last", **kwargs):
        super().__init__(data_format, **kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is None:
            return super().call(inputs)
        steps_axis = 2 if self.data_format == "channels_first" else 1
        mask = K.cast(mask, inputs.dtype)
        mask = K.expand_dims(mask, 1 if self.data_format == "channels_first" else 2)
        return K.sum(inputs * mask, axis=steps_axis) / K.sum(mask, axis=steps_axis)

    def compute_mask(self, inputs, mask=None):
        return None


@tf_export("keras.layers.GlobalMaxPooling2D", "keras.layers.GlobalMaxPool2D")
class GlobalMaxPooling2D(GlobalPooling):
    """GlobalMaxPooling2D(data_format=None): the max over rows and columns."""
    _max = True


@tf_export("keras.layers.GlobalAveragePooling2D", "keras.layers.GlobalAvgPool2D")
class GlobalAveragePooling2D(GlobalPooling):
    """GlobalAveragePooling2D(data_format=None): the mean over rows and columns."""
    _max = False


@tf_export("keras.layers.GlobalMaxPooling3D", "keras.layers.GlobalMaxPool3D")
class GlobalMaxPooling3D(GlobalPooling):
    """GlobalMaxPooling3D(data_format=None)."""
    rank, _max = 3, True


@tf_export("keras.layers.GlobalAveragePooling3D", "keras.layers.GlobalAvgPool3D")
class GlobalAveragePooling3D(GlobalPooling):
    """GlobalAveragePooling3D(data_format=None)."""
    rank, _max = 3, False
