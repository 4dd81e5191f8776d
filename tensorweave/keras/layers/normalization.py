"""tf.keras.layers.BatchNormalization and LayerNormalization (TF 1.15's keras/layers/
normalization.py). Batch normalization is tf.layers' computation (tensorweave/layers/
normalization.py: fused for 4-D inputs over axis 1 or 3); Keras picks batch or moving statistics
by the `training` argument or, without one, the learning phase, and keeps the moving-average
update ops in the layer's `updates`."""
from __future__ import annotations

from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K, constraints, initializers, regularizers
from tensorweave.keras.engine.base_layer import Layer, take_weight_options
from tensorweave.layers.base import InputSpec
from tensorweave.layers.normalization import batch_norm, moving_average_update
from tensorweave.ops.array.core import reshape
from tensorweave.ops.nn.impl import batch_normalization as nn_batch_normalization, moments
from tensorweave.ops.state.variables import VariableAggregation, VariableSynchronization


def _axes(axis, ndims: int, layer: str) -> list:
    """`axis` (an int or ints, negative from the end) as sorted non-negative axes of an ndims input."""
    axes = [axis] if isinstance(axis, int) else list(axis)
    out = sorted({a + ndims if a < 0 else a for a in axes})
    if any(a < 0 or a >= ndims for a in out):
        raise ValueError(f"Invalid axis for {layer}: {axis} (input has {ndims} dimensions)")
    return out


class _Normalization(Layer):
    """The shared weights of the normalization layers: gamma (scale) and beta (center) over `axis`."""

    def __init__(self, axis, epsilon, center, scale, beta_initializer, gamma_initializer, beta_regularizer,
                 gamma_regularizer, beta_constraint, gamma_constraint, **kwargs):
        super().__init__(**kwargs)
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else axis
        self.epsilon, self.center, self.scale = epsilon, center, scale
        take_weight_options(self, "beta", beta_initializer, beta_regularizer, beta_constraint)
        take_weight_options(self, "gamma", gamma_initializer, gamma_regularizer, gamma_constraint)
        self.supports_masking = True

    def _param_shape(self, input_shape) -> list:
        shape = TensorShape(input_shape)
        if shape.ndims is None:
            raise ValueError(f"Input of {type(self).__name__} has undefined rank: {shape}")
        self._axes = _axes(self.axis, shape.ndims, type(self).__name__)
        dims = [shape[a].value for a in self._axes]
        if None in dims:
            raise ValueError(f"Input has undefined `axis` dimension. Input shape: {shape}")
        self.input_spec = InputSpec(ndim=shape.ndims, axes={a: shape[a].value for a in self._axes})
        return dims

    def _add_scale_and_center(self, param_shape) -> None:
        self.gamma = (self.add_weight("gamma", shape=param_shape, initializer=self.gamma_initializer,
                                      regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
                                      trainable=True) if self.scale else None)
        self.beta = (self.add_weight("beta", shape=param_shape, initializer=self.beta_initializer,
                                     regularizer=self.beta_regularizer, constraint=self.beta_constraint,
                                     trainable=True) if self.center else None)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon, "center": self.center,
                "scale": self.scale, "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                "beta_regularizer": regularizers.serialize(self.beta_regularizer),
                "gamma_regularizer": regularizers.serialize(self.gamma_regularizer),
                "beta_constraint": constraints.serialize(self.beta_constraint),
                "gamma_constraint": constraints.serialize(self.gamma_constraint)}


@tf_export("keras.layers.BatchNormalization")
class BatchNormalization(_Normalization):
    """BatchNormalization(axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
    beta_initializer='zeros', gamma_initializer='ones', moving_mean_initializer='zeros',
    moving_variance_initializer='ones', ..., fused=None): normalizes with the batch's mean and
    variance while training (`training=True`, or the learning phase when `training` is not given)
    and with the moving averages otherwise; `updates` holds the moving averages' update ops
    (moving = moving * momentum + batch * (1 - momentum)), which Model.fit runs. Weights gamma,
    beta, moving_mean, moving_variance."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 renorm=False, renorm_clipping=None, renorm_momentum=0.99, fused=None, trainable=True,
                 virtual_batch_size=None, adjustment=None, name=None, **kwargs):
        if renorm or virtual_batch_size is not None or adjustment is not None:
            raise ValueError("BatchNormalization here takes renorm=False, virtual_batch_size=None and "
                             "adjustment=None (batch renormalization and ghost batches are not available).")
        super().__init__(axis, epsilon, center, scale, beta_initializer, gamma_initializer, beta_regularizer,
                         gamma_regularizer, beta_constraint, gamma_constraint, trainable=trainable, name=name,
                         **kwargs)
        self.momentum = momentum
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.fused = fused

    def build(self, input_shape) -> None:
        param_shape = self._param_shape(input_shape)
        if len(self._axes) != 1:
            raise ValueError(f"BatchNormalization normalizes over one axis here; got axis={self.axis}")
        ndims = TensorShape(input_shape).ndims
        fusable = ndims == 4 and self._axes[0] in (1, 3)
        if self.fused and not fusable:
            raise ValueError(f"Unsupported axis, fused batch norm only supports axis == [1] or axis == [3] of 4-D "
                             f"inputs; got axis={self.axis} on a {ndims}-D input")
        self._fused = fusable if self.fused is None else bool(self.fused)
        self._add_scale_and_center(param_shape)
        # as TF's: under a tf.distribute strategy each replica keeps its own statistics (of its
        # share of the batch); read outside the replicas they are the replicas' mean
        on_read = dict(trainable=False, synchronization=VariableSynchronization.ON_READ,
                       aggregation=VariableAggregation.MEAN)
        self.moving_mean = self.add_weight("moving_mean", shape=param_shape, initializer=self.moving_mean_initializer,
                                           **on_read)
        self.moving_variance = self.add_weight("moving_variance", shape=param_shape,
                                               initializer=self.moving_variance_initializer, **on_read)
        self.built = True

    def call(self, inputs, training=None):
        if training is None:
            training = K.learning_phase()
        outputs, mean, variance = batch_norm(inputs, self._axes[0], self.gamma, self.beta, self.moving_mean,
                                             self.moving_variance, self.epsilon, self._fused, training)
        if mean is not None:
            self.add_update([moving_average_update(self.moving_mean, mean, self.momentum),
                             moving_average_update(self.moving_variance, variance, self.momentum)], inputs)
        return outputs

    def get_config(self) -> dict:
        return {**super().get_config(), "momentum": self.momentum,
                "moving_mean_initializer": initializers.serialize(self.moving_mean_initializer),
                "moving_variance_initializer": initializers.serialize(self.moving_variance_initializer)}


@tf_export("keras.layers.LayerNormalization")
class LayerNormalization(_Normalization):
    """LayerNormalization(axis=-1, epsilon=1e-3, center=True, scale=True, beta_initializer='zeros',
    gamma_initializer='ones', ...): each sample normalized by its own mean and variance over
    `axis`, then scaled by gamma and shifted by beta (shaped like the `axis` dimensions)."""

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(axis, epsilon, center, scale, beta_initializer, gamma_initializer, beta_regularizer,
                         gamma_regularizer, beta_constraint, gamma_constraint, trainable=trainable, name=name,
                         **kwargs)

    def build(self, input_shape) -> None:
        self._add_scale_and_center(self._param_shape(input_shape))
        self.built = True

    def call(self, inputs):
        ndims = inputs.shape.ndims
        broadcast = [1] * ndims
        for a in self._axes:
            broadcast[a] = inputs.shape[a].value

        def _broadcast(v):
            return reshape(v, broadcast) if v is not None and self._axes != [ndims - 1] else v

        mean, variance = moments(inputs, self._axes, keep_dims=True)
        return nn_batch_normalization(inputs, mean, variance, _broadcast(self.beta), _broadcast(self.gamma),
                                      self.epsilon)
