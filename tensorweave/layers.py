"""tf.layers: TF1's layer functions and classes, with TF's variable names ("dense/kernel",
"conv2d_1/bias") and batch normalization's moving-average updates in UPDATE_OPS."""
from __future__ import annotations

import re

import numpy as np

from tensorweave.framework.api import GraphKeys, add_to_collection, get_collection, name_scope
from tensorweave.framework.dtypes import as_dtype, float16, float32
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.ops.array.concat import stack
from tensorweave.ops.array.core import constant, identity, reshape, shape, transpose
from tensorweave.ops.array.fill import ones, zeros
from tensorweave.ops.control_flow.cond import cond
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.linalg import matmul, tensordot
from tensorweave.ops.nn.activations import bias_add
from tensorweave.ops.nn.conv import conv2d as nn_conv2d
from tensorweave.ops.nn.impl import batch_normalization as nn_batch_normalization, dropout as nn_dropout, moments
from tensorweave.ops.nn.norm import fused_batch_norm
from tensorweave.ops.state.initializers import ones_initializer, zeros_initializer
from tensorweave.ops.state.variable_ops import assign_sub
from tensorweave.ops.state.variable_scope import get_variable, variable_scope
from tensorweave.ops.nn.pool import avg_pool, max_pool
from tensorweave.ops.state.variables import trainable_variables


def _snake(name: str) -> str:
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()


def _pair(v, name: str) -> tuple:
    if isinstance(v, int):
        return (v, v)
    v = tuple(v)
    if len(v) != 2:
        raise ValueError(f"The `{name}` argument must be a tuple of 2 integers. Received: {v}")
    return v


def _data_format(fmt: str) -> str:
    if fmt not in ("channels_last", "channels_first"):
        raise ValueError(f"The `data_format` argument must be one of 'channels_first', 'channels_last'. "
                         f"Received: {fmt}")
    return "NHWC" if fmt == "channels_last" else "NCHW"


def _padding(padding: str) -> str:
    p = padding.upper()
    if p not in ("SAME", "VALID"):
        raise ValueError(f"The `padding` argument must be one of 'valid', 'same'. Received: {padding}")
    return p


def _smart_cond(pred, true_fn, false_fn):
    """Python bools pick a branch at build time; tensors build a tf.cond."""
    if isinstance(pred, (bool, np.bool_)):
        return true_fn() if pred else false_fn()
    if isinstance(pred, int):
        return true_fn() if pred else false_fn()
    return cond(pred, true_fn, false_fn)


class Layer:
    """Base of tf.layers classes: owns a variable scope chosen on first call ("dense", "dense_1")."""

    def __init__(self, trainable: bool = True, name=None, dtype=None, _reuse=None, _scope=None, **kwargs):
        self.trainable = trainable
        self._name = name
        self._base_name = name or _snake(type(self).__name__)
        self.dtype = as_dtype(dtype) if dtype is not None else None
        self._reuse = _reuse
        self._scope = _scope
        self.built = False
        self._variables: list = []
        self._updates: list = []
        self._losses: list = []
        self.activity_regularizer = kwargs.pop("activity_regularizer", None)

    @property
    def name(self) -> str:
        return self._scope.name if self._scope is not None else self._base_name

    @property
    def variables(self) -> list:
        return list(self._variables)

    weights = variables

    @property
    def trainable_variables(self) -> list:
        return [v for v in self._variables if v in trainable_variables()]

    trainable_weights = trainable_variables

    @property
    def non_trainable_variables(self) -> list:
        trainable = set(map(id, self.trainable_variables))
        return [v for v in self._variables if id(v) not in trainable]

    @property
    def updates(self) -> list:
        return list(self._updates)

    @property
    def losses(self) -> list:
        """This layer's weight-regularization and activity-regularization losses."""
        return list(self._losses)

    def add_weight(self, name: str, shape, dtype=None, initializer=None, regularizer=None, trainable: bool = True,
                   constraint=None):
        before = len(get_collection(GraphKeys.REGULARIZATION_LOSSES))
        v = get_variable(name, shape=shape, dtype=dtype or self.dtype or float32, initializer=initializer,
                         regularizer=regularizer, trainable=trainable and self.trainable,
                         constraint=constraint)
        self._losses.extend(get_collection(GraphKeys.REGULARIZATION_LOSSES)[before:])
        self._variables.append(v)
        return v

    def build(self, input_shape) -> None:
        self.built = True

    def call(self, inputs, **kwargs):
        return inputs

    def __call__(self, inputs, *args, **kwargs):
        inputs = convert_to_tensor(inputs) if not isinstance(inputs, (list, tuple)) else inputs
        if self._scope is None:
            if self._reuse:
                with variable_scope(self._name or self._base_name) as scope:
                    self._scope = scope
            else:
                with variable_scope(self._name, default_name=self._base_name) as scope:
                    self._scope = scope
        with variable_scope(self._scope, reuse=True if self.built else self._reuse,
                            auxiliary_name_scope=False):
            with name_scope(self._scope.original_name_scope):
                if not self.built:
                    if self.dtype is None and hasattr(inputs, "dtype"):
                        self.dtype = inputs.dtype.base_dtype
                    self.build(inputs.shape if hasattr(inputs, "shape") else None)
                    self.built = True
                outputs = self.call(inputs, *args, **kwargs)
                if self.activity_regularizer is not None:
                    # TF divides by the batch size so that the strength does not depend on it
                    with name_scope("ActivityRegularizer"):
                        for output in (outputs if isinstance(outputs, (list, tuple)) else [outputs]):
                            loss = self.activity_regularizer(output)
                            batch = cast(shape(output)[0], loss.dtype)
                            loss = loss / batch
                            self._losses.append(loss)
                            add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
        return outputs

    apply = __call__


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

    def build(self, input_shape) -> None:
        last = TensorShape(input_shape)[-1].value
        if last is None:
            raise ValueError("The last dimension of the inputs to `Dense` should be defined. Found `None`.")
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


class Conv2D(Layer):
    """tf.layers.Conv2D: 2-D convolution with kernel [kh, kw, in, filters] and optional bias."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
                 dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable=True,
                 name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, activity_regularizer=activity_regularizer, **kwargs)
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.strides = _pair(strides, "strides")
        self.padding = _padding(padding)
        self.data_format = _data_format(data_format)
        self.dilation_rate = _pair(dilation_rate, "dilation_rate")
        self.activation, self.use_bias = activation, use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer or zeros_initializer()
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint

    def build(self, input_shape) -> None:
        shape = TensorShape(input_shape)
        channels = shape[-1 if self.data_format == "NHWC" else 1].value
        if channels is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
        self.kernel = self.add_weight("kernel", list(self.kernel_size) + [channels, self.filters],
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = (self.add_weight("bias", [self.filters], initializer=self.bias_initializer,
                                     regularizer=self.bias_regularizer, constraint=self.bias_constraint)
                     if self.use_bias else None)

    def call(self, inputs):
        if self.data_format == "NHWC":
            strides = [1, *self.strides, 1]
            dilations = [1, *self.dilation_rate, 1]
        else:
            strides = [1, 1, *self.strides]
            dilations = [1, 1, *self.dilation_rate]
        outputs = nn_conv2d(inputs, self.kernel, strides=strides, padding=self.padding,
                               data_format=self.data_format, dilations=dilations)
        if self.bias is not None:
            outputs = bias_add(outputs, self.bias, data_format=self.data_format)
        return self.activation(outputs) if self.activation is not None else outputs


class _Pooling2D(Layer):
    _pool = staticmethod(max_pool)

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last", name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size = _pair(pool_size, "pool_size")
        self.strides = _pair(strides, "strides")
        self.padding = _padding(padding)
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        if self.data_format == "NHWC":
            ksize, strides = [1, *self.pool_size, 1], [1, *self.strides, 1]
        else:
            ksize, strides = [1, 1, *self.pool_size], [1, 1, *self.strides]
        return self._pool(inputs, ksize=ksize, strides=strides, padding=self.padding, data_format=self.data_format)


class MaxPooling2D(_Pooling2D):
    """tf.layers.MaxPooling2D(pool_size, strides, padding='valid', data_format='channels_last')."""
    _pool = staticmethod(max_pool)


class AveragePooling2D(_Pooling2D):
    """tf.layers.AveragePooling2D(pool_size, strides, padding='valid', data_format='channels_last')."""
    _pool = staticmethod(avg_pool)


class Flatten(Layer):
    """tf.layers.Flatten: reshapes to [batch, -1]."""

    def __init__(self, data_format="channels_last", name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        if self.data_format == "NCHW" and inputs.shape.ndims and inputs.shape.ndims > 2:
            perm = [0] + list(range(2, inputs.shape.ndims)) + [1]
            inputs = transpose(inputs, perm)
        batch = inputs.shape[0].value if inputs.shape.ndims else None
        rest = inputs.shape[1:].num_elements() if inputs.shape.ndims else None
        if rest is not None:
            return reshape(inputs, [batch if batch is not None else -1, rest])
        return reshape(inputs, stack([shape(inputs)[0], -1]))


class Dropout(Layer):
    """tf.layers.Dropout(rate=0.5, noise_shape=None, seed=None): active only when training."""

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def call(self, inputs, training=False):
        return _smart_cond(training,
                           lambda: nn_dropout(inputs, rate=self.rate, noise_shape=self.noise_shape,
                                                 seed=self.seed),
                           lambda: identity(inputs))


class BatchNormalization(Layer):
    """tf.layers.BatchNormalization: batch statistics when training (moving averages updated through
    UPDATE_OPS), moving statistics otherwise. 4-D inputs over the channel axis use the fused kernel,
    as TF1 does by default, so the moving variance uses the Bessel-corrected batch variance."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True, beta_initializer=None,
                 gamma_initializer=None, moving_mean_initializer=None, moving_variance_initializer=None,
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 renorm=False, renorm_clipping=None, renorm_momentum=0.99, fused=None, trainable=True,
                 virtual_batch_size=None, adjustment=None, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        if renorm or virtual_batch_size or adjustment:
            raise NotImplementedError("batch renormalization, virtual batches and adjustment are not supported")
        self.axis, self.momentum, self.epsilon = axis, momentum, epsilon
        self.center, self.scale, self.fused = center, scale, fused
        self.beta_initializer = beta_initializer or zeros_initializer()
        self.gamma_initializer = gamma_initializer or ones_initializer()
        self.moving_mean_initializer = moving_mean_initializer or zeros_initializer()
        self.moving_variance_initializer = moving_variance_initializer or ones_initializer()
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint

    def build(self, input_shape) -> None:
        shape = TensorShape(input_shape)
        ndims = shape.ndims
        axis = self.axis if self.axis >= 0 else self.axis + ndims
        dim = shape[axis].value
        if dim is None:
            raise ValueError(f"Input has undefined `axis` dimension. Input shape: {shape}")
        self._axis = axis
        self._ndims = ndims
        if self.fused is None:
            self.fused = ndims == 4 and axis in (1, 3)
        param_dtype = float32 if self.dtype in (float16,) else self.dtype
        self.gamma = (self.add_weight("gamma", [dim], param_dtype, self.gamma_initializer, self.gamma_regularizer,
                                      constraint=self.gamma_constraint) if self.scale else None)
        self.beta = (self.add_weight("beta", [dim], param_dtype, self.beta_initializer, self.beta_regularizer,
                                     constraint=self.beta_constraint) if self.center else None)
        self.moving_mean = self.add_weight("moving_mean", [dim], param_dtype, self.moving_mean_initializer,
                                           trainable=False)
        self.moving_variance = self.add_weight("moving_variance", [dim], param_dtype,
                                               self.moving_variance_initializer, trainable=False)

    def _moving_update(self, var, value):
        with name_scope(None, "AssignMovingAvg", [var, value]):
            decay = constant(1.0 - self.momentum, dtype=var.dtype)
            return assign_sub(var, (var - cast(value, var.dtype)) * decay)

    def call(self, inputs, training=False):
        dim = inputs.shape[self._axis].value
        gamma = self.gamma if self.gamma is not None else ones([dim], inputs.dtype)
        beta = self.beta if self.beta is not None else zeros([dim], inputs.dtype)
        if self.fused:
            fmt = "NHWC" if self._axis == 3 else "NCHW"

            def train():
                y, m, v = fused_batch_norm(inputs, gamma, beta, epsilon=self.epsilon, data_format=fmt,
                                                 is_training=True)
                return y, m, v

            def infer():
                y, m, v = fused_batch_norm(inputs, gamma, beta, mean=self.moving_mean,
                                                 variance=self.moving_variance, epsilon=self.epsilon,
                                                 data_format=fmt, is_training=False)
                return y, convert_to_tensor(self.moving_mean), convert_to_tensor(self.moving_variance)
        else:
            axes = [i for i in range(self._ndims) if i != self._axis]
            shape = [1] * self._ndims
            shape[self._axis] = dim

            def normalize(mean, var):
                return nn_batch_normalization(inputs, reshape(mean, shape), reshape(var, shape),
                                                 reshape(beta, shape), reshape(gamma, shape), self.epsilon)

            def train():
                mean, var = moments(inputs, axes)
                return normalize(mean, var), mean, var

            def infer():
                mean = convert_to_tensor(self.moving_mean)
                var = convert_to_tensor(self.moving_variance)
                return normalize(mean, var), mean, var

        if isinstance(training, (bool, np.bool_, int)) and not training:
            return infer()[0]
        if isinstance(training, (bool, np.bool_, int)):
            out, mean, var = train()
        else:
            out, mean, var = cond(training, train, infer)
        updates = [self._moving_update(self.moving_mean, mean), self._moving_update(self.moving_variance, var)]
        for u in updates:
            add_to_collection(GraphKeys.UPDATE_OPS, u)
        self._updates.extend(updates)
        return out


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None,
          kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
          bias_constraint=None, trainable=True, name=None, reuse=None):
    """tf.layers.dense: functional form of Dense; variables "dense/kernel" and "dense/bias"."""
    return Dense(units, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                 bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint, trainable,
                 name, _reuse=reuse)(inputs)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
           dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None,
           kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """tf.layers.conv2d: functional form of Conv2D; variables "conv2d/kernel" and "conv2d/bias"."""
    return Conv2D(filters, kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                  kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
                  activity_regularizer, kernel_constraint, bias_constraint, trainable, name, _reuse=reuse)(inputs)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    """tf.layers.max_pooling2d."""
    return MaxPooling2D(pool_size, strides, padding, data_format, name)(inputs)


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    """tf.layers.average_pooling2d."""
    return AveragePooling2D(pool_size, strides, padding, data_format, name)(inputs)


def flatten(inputs, name=None, data_format="channels_last"):
    """tf.layers.flatten: [batch, ...] -> [batch, prod(...)]."""
    return Flatten(data_format=data_format, name=name)(inputs)


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """tf.layers.dropout: drops units with probability `rate` only when `training` (bool or tensor)."""
    return Dropout(rate, noise_shape, seed, name)(inputs, training=training)


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None, moving_mean_initializer=None,
                        moving_variance_initializer=None, beta_regularizer=None, gamma_regularizer=None,
                        beta_constraint=None, gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99, fused=None,
                        virtual_batch_size=None, adjustment=None):
    """tf.layers.batch_normalization: moving-average updates go to UPDATE_OPS when training."""
    layer = BatchNormalization(axis, momentum, epsilon, center, scale, beta_initializer, gamma_initializer,
                               moving_mean_initializer, moving_variance_initializer, beta_regularizer,
                               gamma_regularizer, beta_constraint, gamma_constraint, renorm, renorm_clipping,
                               renorm_momentum, fused, trainable, virtual_batch_size, adjustment, name,
                               _reuse=reuse)
    return layer(inputs, training=training)
