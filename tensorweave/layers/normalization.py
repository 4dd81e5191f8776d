"""tf.layers.BatchNormalization and tf.layers.batch_normalization."""
from __future__ import annotations

import numpy as np

from tensorweave.framework.api import GraphKeys, add_to_collection, name_scope
from tensorweave.framework.dtypes import float16, float32
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import constant, reshape
from tensorweave.ops.array.fill import ones, zeros
from tensorweave.ops.control_flow.cond import cond
from tensorweave.ops.math.cast import cast
from tensorweave.ops.nn.impl import batch_normalization as nn_batch_normalization, moments
from tensorweave.ops.nn.norm import fused_batch_norm
from tensorweave.ops.state.initializers import ones_initializer, zeros_initializer
from tensorweave.ops.state.variable_ops import assign_sub
from tensorweave.ops.state.variable_scope import get_variable_scope
from tensorweave.layers.base import Layer


def moving_average_update(var, value, momentum):
    """var -= (var - value) * (1 - momentum), under "AssignMovingAvg" (batch normalization's update)."""
    with name_scope(None, "AssignMovingAvg", [var, value]):
        decay = constant(1.0 - momentum, dtype=var.dtype)
        return assign_sub(var, (var - cast(value, var.dtype)) * decay)


def batch_norm(inputs, axis: int, gamma, beta, moving_mean, moving_variance, epsilon: float, fused: bool, training):
    """Batch normalization over every axis but `axis` (non-negative) for tf.layers and
    tf.keras.layers: (outputs, mean, variance) with the batch statistics when `training` (a Python
    bool or a bool tensor choosing by tf.cond) and the moving ones otherwise; mean and variance are
    None when `training` is Python False (nothing to update). The fused kernel (4-D, axis 1 or 3)
    gives the Bessel-corrected batch variance, as TF's."""
    ndims = inputs.shape.ndims
    dim = inputs.shape[axis].value
    gamma = gamma if gamma is not None else ones([dim], inputs.dtype)
    beta = beta if beta is not None else zeros([dim], inputs.dtype)
    if fused:
        fmt = "NHWC" if axis == 3 else "NCHW"

        def train():
            return fused_batch_norm(inputs, gamma, beta, epsilon=epsilon, data_format=fmt, is_training=True)

        def infer():
            y, _, _ = fused_batch_norm(inputs, gamma, beta, mean=moving_mean, variance=moving_variance,
                                       epsilon=epsilon, data_format=fmt, is_training=False)
            return y, convert_to_tensor(moving_mean), convert_to_tensor(moving_variance)
    else:
        axes = [i for i in range(ndims) if i != axis]
        shape = [1] * ndims
        shape[axis] = dim

        def normalize(mean, var):
            return nn_batch_normalization(inputs, reshape(mean, shape), reshape(var, shape), reshape(beta, shape),
                                          reshape(gamma, shape), epsilon)

        def train():
            mean, var = moments(inputs, axes)
            return normalize(mean, var), mean, var

        def infer():
            mean, var = convert_to_tensor(moving_mean), convert_to_tensor(moving_variance)
            return normalize(mean, var), mean, var

    if isinstance(training, (bool, np.bool_, int)):
        if not training:
            return infer()[0], None, None
        return tuple(train())
    return tuple(cond(training, train, infer))


@tf_export("layers.BatchNormalization")
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
        # As TF: the moving statistics are never partitioned (their updates assign them whole).
        scope = get_variable_scope()
        partitioner = scope.partitioner
        scope.set_partitioner(None)
        try:
            self.moving_mean = self.add_weight("moving_mean", [dim], param_dtype, self.moving_mean_initializer,
                                               trainable=False)
            self.moving_variance = self.add_weight("moving_variance", [dim], param_dtype,
                                                   self.moving_variance_initializer, trainable=False)
        finally:
            scope.set_partitioner(partitioner)

    def call(self, inputs, training=False):
        out, mean, var = batch_norm(inputs, self._axis, self.gamma, self.beta, self.moving_mean,
                                    self.moving_variance, self.epsilon, self.fused, training)
        if mean is None:
            return out
        updates = [moving_average_update(self.moving_mean, mean, self.momentum),
                   moving_average_update(self.moving_variance, var, self.momentum)]
        for u in updates:
            add_to_collection(GraphKeys.UPDATE_OPS, u)
        self._updates.extend(updates)
        return out


@tf_export("layers.batch_normalization")
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
