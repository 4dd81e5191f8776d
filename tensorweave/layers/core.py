"""tf.layers core layers: Dense, Dropout, Flatten and their functional forms, with TF's variable
names ("dense/kernel", "dense_1/bias")."""
from __future__ import annotations

from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import stack
from tensorweave.ops.array.core import identity, reshape, shape, transpose
from tensorweave.ops.math.linalg import matmul, tensordot
from tensorweave.ops.nn.activations import bias_add
from tensorweave.ops.nn.impl import dropout as nn_dropout
from tensorweave.ops.state.initializers import zeros_initializer
from tensorweave.layers.base import InputSpec, Layer, check_data_format, smart_cond


@tf_export("layers.Dense")
class Dense(Layer):
    """tf.layers.Dense: outputs = activation(inputs @ kernel + bias)."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable=True,
                 name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units)
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer or zeros_initializer()
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.input_spec = InputSpec(min_ndim=2)

    def build(self, input_shape) -> None:
        last = TensorShape(input_shape)[-1].value
        if last is None:
            raise ValueError("The last dimension of the inputs to `Dense` should be defined. Found `None`.")
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last})
        self.kernel = self.add_weight("kernel", [last, self.units], initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)
        self.bias = (self.add_weight("bias", [self.units], initializer=self.bias_initializer,
                                     regularizer=self.bias_regularizer, constraint=self.bias_constraint)
                     if self.use_bias else None)

    def call(self, inputs):
        rank = inputs.shape.ndims
        if rank is not None and rank > 2:
            outputs = tensordot(inputs, self.kernel, [[rank - 1], [0]])
        else:
            outputs = matmul(inputs, self.kernel)
        if self.bias is not None:
            outputs = bias_add(outputs, self.bias)
        return self.activation(outputs) if self.activation is not None else outputs


@tf_export("layers.Flatten")
class Flatten(Layer):
    """tf.layers.Flatten: reshapes to [batch, -1]."""

    def __init__(self, data_format="channels_last", name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = check_data_format(data_format)

    def call(self, inputs):
        if self.data_format == "channels_first" and inputs.shape.ndims and inputs.shape.ndims > 2:
            perm = [0] + list(range(2, inputs.shape.ndims)) + [1]
            inputs = transpose(inputs, perm)
        batch = inputs.shape[0].value if inputs.shape.ndims else None
        rest = inputs.shape[1:].num_elements() if inputs.shape.ndims else None
        if rest is not None:
            return reshape(inputs, [batch if batch is not None else -1, rest])
        return reshape(inputs, stack([shape(inputs)[0], -1]))


@tf_export("layers.Dropout")
class Dropout(Layer):
    """tf.layers.Dropout(rate=0.5, noise_shape=None, seed=None): active only when training."""

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def call(self, inputs, training=False):
        return smart_cond(training,
                           lambda: nn_dropout(inputs, rate=self.rate, noise_shape=self.noise_shape,
                                                 seed=self.seed),
                           lambda: identity(inputs))


@tf_export("layers.dense")
def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None,
          kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
          bias_constraint=None, trainable=True, name=None, reuse=None):
    """tf.layers.dense: functional form of Dense; variables "dense/kernel" and "dense/bias"."""
    return Dense(units, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                 bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint, trainable,
                 name, _reuse=reuse)(inputs)


@tf_export("layers.flatten")
def flatten(inputs, name=None, data_format="channels_last"):
    """tf.layers.flatten: [batch, ...] -> [batch, prod(...)]."""
    return Flatten(data_format=data_format, name=name)(inputs)


@tf_export("layers.dropout")
def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """tf.layers.dropout: drops units with probability `rate` only when `training` (bool or tensor)."""
    return Dropout(rate, noise_shape, seed, name)(inputs, training=training)
