"""tf.keras.layers.LocallyConnected1D and LocallyConnected2D (TF 1.15's keras/layers/local.py,
implementation=1): a convolution whose weights are not shared, one kernel per output position
(kernel [positions, prod(kernel_size) * in_channels, filters], bias [*output_sizes, filters])."""
from __future__ import annotations

import itertools

from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K
from tensorweave.keras.layers.convolutional import Conv, conv_output_length, spatial_axes, with_spatial
from tensorweave.layers.base import InputSpec


def local_conv(inputs, kernel, kernel_size, strides, output_sizes, data_format: str):
    """K.local_conv: each output position's input patch (flattened in the input's layout) times that
    position's kernel; [batch, *output_sizes, filters] (channels_first: [batch, filters, *sizes])."""
    features, filters = kernel.shape.as_list()[1:]
    rank = len(output_sizes)
    patches = []
    for position in itertools.product(*(range(n) for n in output_sizes)):
        index = [slice(None)] * (2 if data_format == "channels_first" else 1)
        index += [slice(p * s, p * s + k) for p, s, k in zip(position, strides, kernel_size)]
        if data_format == "channels_last":
            index.append(slice(None))
        patches.append(K.reshape(inputs[tuple(index)], (1, -1, features)))
    outputs = K.batch_dot(K.concatenate(patches, axis=0), kernel)   # [positions, batch, filters]
    outputs = K.reshape(outputs, tuple(output_sizes) + (-1, filters))
    spatial = list(range(rank))
    order = [rank, rank + 1] + spatial if data_format == "channels_first" else [rank] + spatial + [rank + 1]
    return K.permute_dimensions(outputs, order)


class _LocallyConnected(Conv):
    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 implementation=1, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, 1, activation, use_bias,
                         kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
                         activity_regularizer, kernel_constraint, bias_constraint, **kwargs)
        if self.padding != "valid":
            raise ValueError(f'Invalid border mode for {type(self).__name__} (only "valid" is supported if '
                             "implementation is 1)")
        if implementation != 1:
            raise ValueError(f"{type(self).__name__} takes implementation=1 (one kernel per output position); "
                             f"got {implementation}")
        self.implementation = implementation

    def _output_sizes(self, input_shape) -> list:
        dims = TensorShape(input_shape).as_list()
        sizes = [conv_output_length(dims[a], k, "valid", s) for a, k, s in
                 zip(spatial_axes(self.rank, self.data_format), self.kernel_size, self.strides)]
        if None in sizes:
            raise ValueError(f"The spatial dimensions of the inputs to {type(self).__name__} should be fully "
                             f"defined. Found shape: {tuple(dims)}")
        return sizes

    def build(self, input_shape) -> None:
        channels = self._in_channels(input_shape)
        self._sizes = self._output_sizes(input_shape)
        positions = 1
        for n in self._sizes:
            positions *= n
        features = channels
        for k in self.kernel_size:
            features *= k
        self.kernel = self.add_weight("kernel", shape=(positions, features, self.filters),
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = (self.add_weight("bias", shape=tuple(self._sizes) + (self.filters,),
                                     initializer=self.bias_initializer, regularizer=self.bias_regularizer,
                                     constraint=self.bias_constraint) if self.use_bias else None)
        dims = TensorShape(input_shape).as_list()
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={a: dims[a] for a in
                                                              spatial_axes(self.rank, self.data_format)} |
                                    {self._channel_axis: channels})
        self.built = True

    def call(self, inputs):
        outputs = local_conv(inputs, self.kernel, self.kernel_size, self.strides, self._sizes, self.data_format)
        if self.bias is not None:
            # Keras's bias_add of a [*sizes, filters] bias: reshaped (not transposed) for channels_first
            bias_shape = tuple(self._sizes) + (self.filters,)
            shape = (1, self.filters) + tuple(self._sizes) if self.data_format == "channels_first" else \
                (1,) + bias_shape
            outputs = outputs + K.reshape(self.bias, shape)
        return self.activation(outputs) if self.activation is not None else outputs

    def compute_output_shape(self, input_shape):
        return with_spatial(input_shape, self.data_format, self._output_sizes(input_shape), self.filters)

    def get_config(self) -> dict:
        config = super().get_config()
        config.pop("dilation_rate")
        return {**config, "implementation": self.implementation}


@tf_export("keras.layers.LocallyConnected1D")
class LocallyConnected1D(_LocallyConnected):
    """LocallyConnected1D(filters, kernel_size, strides=1, padding='valid', data_format=None,
    activation=None, use_bias=True, ...): Conv1D with a separate kernel at every output step."""
    rank = 1


@tf_export("keras.layers.LocallyConnected2D")
class LocallyConnected2D(_LocallyConnected):
    """LocallyConnected2D(filters, kernel_size, strides=(1, 1), padding='valid', data_format=None,
    activation=None, use_bias=True, ...): Conv2D with a separate kernel at every output position."""
    rank = 2
