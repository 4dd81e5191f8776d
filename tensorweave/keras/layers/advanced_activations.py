"""tf.keras.layers advanced activations (TF 1.15's keras/layers/advanced_activations.py):
LeakyReLU, PReLU (a learned slope per unit), ELU, ThresholdedReLU, Softmax, ReLU."""
from __future__ import annotations

from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K, constraints, initializers, regularizers
from tensorweave.keras.engine.base_layer import Layer, take_weight_options
from tensorweave.layers.base import InputSpec


class _Activation(Layer):
    """A shape-preserving activation that passes masks on; `_params` are its config entries."""

    _params: tuple = ()

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), **{p: getattr(self, p) for p in self._params}}


@tf_export("keras.layers.LeakyReLU")
class LeakyReLU(_Activation):
    """LeakyReLU(alpha=0.3): x for x >= 0, alpha * x below."""
    _params = ("alpha",)

    def __init__(self, alpha=0.3, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs):
        return K.relu(inputs, alpha=self.alpha)


@tf_export("keras.layers.PReLU")
class PReLU(_Activation):
    """PReLU(alpha_initializer='zeros', alpha_regularizer=None, alpha_constraint=None,
    shared_axes=None): x for x >= 0, alpha * x below, with a learned `alpha` per unit (of shape
    input_shape[1:], size 1 along `shared_axes`)."""

    def __init__(self, alpha_initializer="zeros", alpha_regularizer=None, alpha_constraint=None, shared_axes=None,
                 **kwargs):
        super().__init__(**kwargs)
        take_weight_options(self, "alpha", alpha_initializer, alpha_regularizer, alpha_constraint)
        if shared_axes is None:
            self.shared_axes = None
        elif isinstance(shared_axes, (list, tuple)):
            self.shared_axes = list(shared_axes)
        else:
            self.shared_axes = [shared_axes]

    def build(self, input_shape) -> None:
        dims = TensorShape(input_shape).as_list()
        param_shape = dims[1:]
        for axis in self.shared_axes or ():
            param_shape[axis - 1] = 1
        if None in param_shape:
            raise ValueError(f"Layer {self.name}: PReLU needs the non-batch axes known (or shared); input shape "
                             f"{tuple(dims)}")
        self.alpha = self.add_weight("alpha", shape=param_shape, initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer, constraint=self.alpha_constraint)
        self.input_spec = InputSpec(ndim=len(dims), axes={i: dims[i] for i in range(1, len(dims))
                                                          if i not in (self.shared_axes or ())})
        self.built = True

    def call(self, inputs):
        return K.relu(inputs) - self.alpha * K.relu(-inputs)

    def get_config(self) -> dict:
        return {**super().get_config(), "alpha_initializer": initializers.serialize(self.alpha_initializer),
                "alpha_regularizer": regularizers.serialize(self.alpha_regularizer),
                "alpha_constraint": constraints.serialize(self.alpha_constraint), "shared_axes": self.shared_axes}


@tf_export("keras.layers.ELU")
class ELU(_Activation):
    """ELU(alpha=1.0): x for x > 0, alpha * (exp(x) - 1) below."""
    _params = ("alpha",)

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs):
        return K.elu(inputs, self.alpha)


@tf_export("keras.layers.ThresholdedReLU")
class ThresholdedReLU(_Activation):
    """ThresholdedReLU(theta=1.0): x where x > theta, 0 elsewhere."""
    _params = ("theta",)

    def __init__(self, theta=1.0, **kwargs):
        super().__init__(**kwargs)
        self.theta = float(theta)

    def call(self, inputs):
        return inputs * K.cast(K.greater(inputs, self.theta), inputs.dtype)


@tf_export("keras.layers.Softmax")
class Softmax(_Activation):
    """Softmax(axis=-1): the softmax along `axis`."""
    _params = ("axis",)

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs):
        return K.softmax(inputs, axis=self.axis)


@tf_export("keras.layers.ReLU")
class ReLU(_Activation):
    """ReLU(max_value=None, negative_slope=0, threshold=0): x for threshold <= x < max_value,
    max_value above, negative_slope * (x - threshold) below the threshold."""
    _params = ("max_value", "negative_slope", "threshold")

    def __init__(self, max_value=None, negative_slope=0, threshold=0, **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0.0:
            raise ValueError(f"max_value of Relu layer cannot be negative value: {max_value}")
        if negative_slope < 0.0:
            raise ValueError(f"negative_slope of Relu layer cannot be negative value: {negative_slope}")
        self.max_value = float(max_value) if max_value is not None else None
        self.negative_slope = float(negative_slope)
        self.threshold = float(threshold)

    def call(self, inputs):
        if self.max_value is None or self.threshold == 0:
            return K.relu(inputs, alpha=self.negative_slope, max_value=self.max_value, threshold=self.threshold)
        # Keras clips the thresholded part to [0, max_value] (backend.relu here clips from the threshold)
        outputs = K.minimum(K.relu(inputs, threshold=self.threshold), self.max_value)
        if self.negative_slope:
            outputs = outputs - self.negative_slope * K.relu(self.threshold - inputs)
        return outputs
