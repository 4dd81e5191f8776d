"""tf.keras.layers core layers: Dense, Activation, Dropout, Flatten, Reshape, Permute,
RepeatVector, Lambda, Masking, ActivityRegularization (TF 1.15's keras/layers/core.py)."""
from __future__ import annotations

import inspect

import numpy as np

from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import activations, backend as K, constraints, initializers, regularizers
from tensorweave.keras.engine.base_layer import Layer, infer_output_shape, take_weight_options
from tensorweave.keras.utils.generic_utils import deserialize_keras_object
from tensorweave.layers.base import InputSpec, smart_cond
from tensorweave.ops.array.core import identity
from tensorweave.ops.math.linalg import matmul, tensordot
from tensorweave.ops.nn.activations import bias_add
from tensorweave.ops.nn.impl import dropout as nn_dropout


@tf_export("keras.layers.Dense")
class Dense(Layer):
    """Dense(units, activation=None, use_bias=True, kernel_initializer='glorot_uniform',
    bias_initializer='zeros', ...): activation(inputs @ kernel + bias); inputs of rank > 2 are
    contracted on their last axis."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        if "input_shape" not in kwargs and "input_dim" in kwargs:
            kwargs["input_shape"] = (kwargs.pop("input_dim"),)
        super().__init__(activity_regularizer=regularizers.get(activity_regularizer), **kwargs)
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        take_weight_options(self, "kernel", kernel_initializer, kernel_regularizer, kernel_constraint)
        take_weight_options(self, "bias", bias_initializer, bias_regularizer, bias_constraint)
        self.supports_masking = True
        self.input_spec = InputSpec(min_ndim=2)

    def build(self, input_shape) -> None:
        last_dim = TensorShape(input_shape)[-1].value
        if last_dim is None:
            raise ValueError("The last dimension of the inputs to `Dense` should be defined. Found `None`.")
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last_dim})
        self.kernel = self.add_weight("kernel", shape=[last_dim, self.units], initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      dtype=self.dtype, trainable=True)
        self.bias = (self.add_weight("bias", shape=[self.units], initializer=self.bias_initializer,
                                     regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                     dtype=self.dtype, trainable=True) if self.use_bias else None)
        self.built = True

    def call(self, inputs):
        rank = inputs.shape.ndims
        if rank is not None and rank > 2:
            outputs = tensordot(inputs, self.kernel, [[rank - 1], [0]])
            outputs.set_shape(self.compute_output_shape(inputs.shape))
        else:
            outputs = matmul(inputs, self.kernel)
        if self.use_bias:
            outputs = bias_add(outputs, self.bias)
        return self.activation(outputs) if self.activation is not None else outputs

    def compute_output_shape(self, input_shape):
        input_shape = TensorShape(input_shape).with_rank_at_least(2)
        if input_shape[-1].value is None:
            raise ValueError(f"The innermost dimension of input_shape must be defined, but saw: {input_shape}")
        return input_shape[:-1].concatenate(self.units)

    def get_config(self) -> dict:
        config = {"units": self.units, "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                  "kernel_initializer": initializers.serialize(self.kernel_initializer),
                  "bias_initializer": initializers.serialize(self.bias_initializer),
                  "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                  "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                  "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                  "kernel_constraint": constraints.serialize(self.kernel_constraint),
                  "bias_constraint": constraints.serialize(self.bias_constraint)}
        return {**super().get_config(), **config}


@tf_export("keras.layers.Activation")
class Activation(Layer):
    """Activation(activation): applies an activation function ("relu", a callable, ...)."""

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        return {**super().get_config(), "activation": activations.serialize(self.activation)}


@tf_export("keras.layers.Dropout")
class Dropout(Layer):
    """Dropout(rate, noise_shape=None, seed=None): drops units with probability `rate` while
    training (`training=True`, or the learning phase when `training` is not given)."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed
        self.supports_masking = True

    def call(self, inputs, training=None):
        if training is None:
            training = K.learning_phase()
        return smart_cond(training,
                          lambda: nn_dropout(inputs, noise_shape=self._noise_shape(inputs), seed=self.seed,
                                             rate=self.rate),
                          lambda: identity(inputs))

    def _noise_shape(self, inputs):
        """noise_shape with its None entries taken from the inputs' shape (a batch of any size)."""
        if self.noise_shape is None:
            return None
        dims = [d if d is not None else K.shape(inputs)[i] for i, d in enumerate(self.noise_shape)]
        return dims if all(isinstance(d, int) for d in dims) else K.stack(dims)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape, "seed": self.seed}


@tf_export("keras.layers.Flatten")
class Flatten(Layer):
    """Flatten(data_format=None): [batch, ...] -> [batch, prod(...)] (channels_first inputs are
    moved to channels_last first, so the order matches a channels_last model's)."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = (data_format or K.image_data_format()).lower()
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs):
        rank = inputs.shape.ndims
        if self.data_format == "channels_first" and rank is not None and rank > 1:
            inputs = K.permute_dimensions(inputs, [0] + list(range(2, rank)) + [1])
        if rank == 1:
            return K.expand_dims(inputs, 1)
        batch = inputs.shape[0].value
        outputs = K.reshape(inputs, [batch if batch is not None else -1, -1]) if batch is not None \
            else K.batch_flatten(inputs)
        outputs.set_shape(self.compute_output_shape(inputs.shape))
        return outputs

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        if len(dims) == 1:
            return TensorShape(dims + [1])
        rest = dims[1:]
        return TensorShape([dims[0], int(np.prod(rest)) if None not in rest else None])

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format}


@tf_export("keras.layers.Reshape")
class Reshape(Layer):
    """Reshape(target_shape): each sample to `target_shape` (one -1 is inferred)."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(target_shape)

    @staticmethod
    def _fix_unknown_dimension(input_shape, output_shape) -> list:
        output_shape = list(output_shape)
        msg = f"total size of new array must be unchanged, input_shape = {list(input_shape)}, output_shape = " \
              f"{output_shape}"
        known, unknown = 1, None
        for index, dim in enumerate(output_shape):
            if dim < 0:
                if unknown is not None:
                    raise ValueError("Can only specify one unknown dimension.")
                unknown = index
            else:
                known *= dim
        original = int(np.prod(input_shape))
        if unknown is not None:
            if known == 0 or original % known != 0:
                raise ValueError(msg)
            output_shape[unknown] = original // known
        elif original != known:
            raise ValueError(msg)
        return output_shape

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        if None in dims[1:]:
            return TensorShape([dims[0]] + [d if d >= 0 else None for d in self.target_shape])
        return TensorShape([dims[0]] + self._fix_unknown_dimension(dims[1:], self.target_shape))

    def call(self, inputs):
        outputs = K.reshape(inputs, K.concatenate([K.shape(inputs)[:1], K.constant(self.target_shape, "int32")],
                                                  axis=0))
        outputs.set_shape(self.compute_output_shape(inputs.shape))
        return outputs

    def get_config(self) -> dict:
        return {**super().get_config(), "target_shape": self.target_shape}


@tf_export("keras.layers.Permute")
class Permute(Layer):
    """Permute(dims): permutes the non-batch axes (`dims` counts them from 1)."""

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(f"Invalid permutation `dims` for Permute Layer: {dims}. The set of indices in `dims` "
                             "must be consecutive and start from 1.")
        self.input_spec = InputSpec(ndim=len(self.dims) + 1)

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        return TensorShape([dims[0]] + [dims[d] for d in self.dims])

    def call(self, inputs):
        return K.permute_dimensions(inputs, (0,) + self.dims)

    def get_config(self) -> dict:
        return {**super().get_config(), "dims": self.dims}


@tf_export("keras.layers.RepeatVector")
class RepeatVector(Layer):
    """RepeatVector(n): [batch, features] -> [batch, n, features]."""

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = n
        self.input_spec = InputSpec(ndim=2)

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        return TensorShape([dims[0], self.n, dims[1]])

    def call(self, inputs):
        return K.repeat(inputs, self.n)

    def get_config(self) -> dict:
        return {**super().get_config(), "n": self.n}


@tf_export("keras.layers.Lambda")
class Lambda(Layer):
    """Lambda(function, output_shape=None, mask=None, arguments=None): wraps a function of the
    inputs as a layer. A config names a named function (found again through custom_objects);
    a lambda's code is never saved or loaded."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        self.function = function
        self.arguments = dict(arguments or {})
        if mask is not None:
            self.supports_masking = True
        self.mask = mask
        self._output_shape = output_shape
        parameters = inspect.signature(function).parameters
        self._fn_takes_mask = "mask" in parameters
        self._fn_takes_training = "training" in parameters

    def call(self, inputs, mask=None, training=None):
        arguments = dict(self.arguments)
        if self._fn_takes_mask:
            arguments["mask"] = mask
        if self._fn_takes_training:
            arguments["training"] = training
        return self.function(inputs, **arguments)

    def compute_mask(self, inputs, mask=None):
        if callable(self.mask):
            return self.mask(inputs, mask)
        return self.mask

    def compute_output_shape(self, input_shape):
        if self._output_shape is None:
            return infer_output_shape(self.function, input_shape, **self.arguments)
        if callable(self._output_shape):
            return TensorShape(self._output_shape(input_shape))
        return TensorShape([TensorShape(input_shape).as_list()[0]] + list(self._output_shape))

    def get_config(self) -> dict:
        if self.function.__name__ == "<lambda>":
            raise ValueError(f"Lambda layer {self.name} wraps a lambda: its config would have to carry code. Pass a "
                             "named function instead (and give it to from_config through custom_objects).")
        output_shape = self._output_shape
        if callable(output_shape):
            output_shape, output_shape_type = output_shape.__name__, "function"
        else:
            output_shape_type = "raw"
        return {**super().get_config(), "function": self.function.__name__, "function_type": "function",
                "output_shape": output_shape, "output_shape_type": output_shape_type, "arguments": self.arguments}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if config.pop("function_type", "function") != "function":
            raise ValueError("Lambda layer configs holding marshalled code are not loaded (loading code from a file "
                             "runs it); re-create the layer from a named function.")
        config["function"] = deserialize_keras_object(config["function"], custom_objects=custom_objects,
                                                      printable_module_name="function in Lambda layer")
        if config.pop("output_shape_type", "raw") == "function":
            config["output_shape"] = deserialize_keras_object(config["output_shape"], custom_objects=custom_objects,
                                                              printable_module_name="output_shape function in Lambda "
                                                                                    "layer")
        elif config.get("output_shape") is not None:
            config["output_shape"] = tuple(config["output_shape"])
        return cls(**config)


@tf_export("keras.layers.Masking")
class Masking(Layer):
    """Masking(mask_value=0.): timesteps whose features all equal `mask_value` are masked (their
    values zeroed; downstream layers that support masking skip them)."""

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.mask_value = mask_value

    def compute_mask(self, inputs, mask=None):
        return K.any(K.not_equal(inputs, self.mask_value), axis=-1)

    def call(self, inputs):
        boolean_mask = K.any(K.not_equal(inputs, self.mask_value), axis=-1, keepdims=True)
        return inputs * K.cast(boolean_mask, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        return {**super().get_config(), "mask_value": self.mask_value}


@tf_export("keras.layers.ActivityRegularization")
class ActivityRegularization(Layer):
    """ActivityRegularization(l1=0., l2=0.): passes inputs through, adding l1/l2 penalties of
    them (divided by the batch size) to the layer's losses."""

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.supports_masking = True
        self.l1, self.l2 = l1, l2

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        return {**super().get_config(), "l1": self.l1, "l2": self.l2}
