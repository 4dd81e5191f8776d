"""tf.layers pooling layers: Max/AveragePooling1D, 2D, 3D and their functional forms."""
from __future__ import annotations

from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import expand_dims, squeeze
from tensorweave.ops.nn.pool import avg_pool, max_pool
from tensorweave.ops.nn.pool3d import avg_pool3d, max_pool3d
from tensorweave.layers.convolutional import full_attr
from tensorweave.layers.base import InputSpec, Layer, check_data_format, check_padding, normalize_tuple


def pool(inputs, is_max: bool, pool_size, strides, padding: str, data_format: str):
    """Max or average pooling of rank len(pool_size) (1-D as a height-1 image), for tf.layers and
    tf.keras.layers; `padding` 'valid'/'same' in either case."""
    rank = len(pool_size)
    first = data_format == "channels_first"
    padding = padding.upper()
    if rank == 3:
        op = max_pool3d if is_max else avg_pool3d
        return op(inputs, full_attr(pool_size, data_format), full_attr(strides, data_format), padding,
                  data_format="NCDHW" if first else "NDHWC")
    op = max_pool if is_max else avg_pool
    fmt = "NCHW" if first else "NHWC"
    if rank == 2:
        return op(inputs, ksize=full_attr(pool_size, data_format), strides=full_attr(strides, data_format),
                  padding=padding, data_format=fmt)
    axis = 2 if first else 1
    y = op(expand_dims(inputs, axis), ksize=full_attr((1,) + tuple(pool_size), data_format),
           strides=full_attr((1,) + tuple(strides), data_format), padding=padding, data_format=fmt)
    return squeeze(y, [axis])


class _Pooling(Layer):
    rank = 2
    _max = True

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last", name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size = normalize_tuple(pool_size, self.rank, "pool_size")
        self.strides = normalize_tuple(strides, self.rank, "strides")
        self.padding = check_padding(padding)
        self.data_format = check_data_format(data_format)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs):
        return pool(inputs, self._max, self.pool_size, self.strides, self.padding, self.data_format)


@tf_export("layers.MaxPooling1D")
class MaxPooling1D(_Pooling):
    """tf.layers.MaxPooling1D(pool_size, strides, padding='valid', data_format='channels_last', name=None)."""
    rank, _max = 1, True


@tf_export("layers.MaxPooling2D")
class MaxPooling2D(_Pooling):
    """tf.layers.MaxPooling2D(pool_size, strides, padding='valid', data_format='channels_last', name=None)."""
    rank, _max = 2, True


@tf_export("layers.MaxPooling3D")
class MaxPooling3D(_Pooling):
    """tf.layers.MaxPooling3D(pool_size, strides, padding='valid', data_format='channels_last', name=None)."""
    rank, _max = 3, True


@tf_export("layers.AveragePooling1D")
class AveragePooling1D(_Pooling):
    """tf.layers.AveragePooling1D(pool_size, strides, padding='valid', data_format='channels_last', name=None)."""
    rank, _max = 1, False


@tf_export("layers.AveragePooling2D")
class AveragePooling2D(_Pooling):
    """tf.layers.AveragePooling2D(pool_size, strides, padding='valid', data_format='channels_last', name=None)."""
    rank, _max = 2, False


@tf_export("layers.AveragePooling3D")
class AveragePooling3D(_Pooling):
    """tf.layers.AveragePooling3D(pool_size, strides, padding='valid', data_format='channels_last', name=None)."""
    rank, _max = 3, False


def _pool_fn(cls, name: str):
    def fn(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
        return cls(pool_size, strides, padding, data_format, name)(inputs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"tf.layers.{name}(inputs, pool_size, strides, padding='valid', data_format='channels_last', " \
                 f"name=None): functional {cls.__name__}."
    return fn


max_pooling1d = _pool_fn(MaxPooling1D, "max_pooling1d")
tf_export("layers.max_pooling1d")(max_pooling1d)
max_pooling2d = _pool_fn(MaxPooling2D, "max_pooling2d")
tf_export("layers.max_pooling2d")(max_pooling2d)
max_pooling3d = _pool_fn(MaxPooling3D, "max_pooling3d")
tf_export("layers.max_pooling3d")(max_pooling3d)
average_pooling1d = _pool_fn(AveragePooling1D, "average_pooling1d")
tf_export("layers.average_pooling1d")(average_pooling1d)
average_pooling2d = _pool_fn(AveragePooling2D, "average_pooling2d")
tf_export("layers.average_pooling2d")(average_pooling2d)
average_pooling3d = _pool_fn(AveragePooling3D, "average_pooling3d")
tf_export("layers.average_pooling3d")(average_pooling3d)
