"""tf.keras layer wrappers as TF 1.15 has them (keras/layers/wrappers.py): Wrapper, TimeDistributed
(a layer applied to every time step of a [batch, time, ...] input) and Bidirectional (an RNN run
forwards and backwards, outputs merged)."""
from __future__ import annotations

import copy
import inspect

from tensorweave.framework import nest
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K
from tensorweave.keras.engine.base_layer import Layer, deserialize as deserialize_layer
from tensorweave.keras.layers.recurrent import _standardize_args
from tensorweave.layers.base import InputSpec
from tensorweave.ops.array.pad import reverse


@tf_export("keras.layers.Wrapper")
class Wrapper(Layer):
    """Wrapper(layer): the base of layers that wrap another `layer` (its weights are the
    wrapper's; built with the wrapper, under the wrapper's name scope)."""

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"Please initialize `{type(self).__name__}` layer with a `Layer` instance. You passed: "
                             f"{layer}")
        self.layer = layer
        super().__init__(**kwargs)

    def build(self, input_shape=None) -> None:
        if not self.layer.built:
            self.layer.build(input_shape)
            self.layer.built = True
        self.built = True

    @property
    def activity_regularizer(self):
        return getattr(self.__dict__.get("layer"), "activity_regularizer", None)

    @activity_regularizer.setter
    def activity_regularizer(self, value):
        pass   # the wrapped layer's regularizer is the one that counts

    def get_config(self) -> dict:
        return {**super().get_config(), "layer": {"class_name": type(self.layer).__name__,
                                                  "config": self.layer.get_config()}}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        layer = deserialize_layer(config.pop("layer"), custom_objects=custom_objects)
        return cls(layer, **config)


@tf_export("keras.layers.TimeDistributed")
class TimeDistributed(Wrapper):
    """TimeDistributed(layer): applies `layer` to each time step of a [batch, time, ...] input
    (the steps folded into the batch), giving [batch, time, ...layer's output]. The inner layer's
    weights are shared by all steps ("time_distributed/kernel:0" for a Dense)."""

    def __init__(self, layer, **kwargs):
        super().__init__(layer, **kwargs)
        self.supports_masking = True

    def build(self, input_shape) -> None:
        input_shape = TensorShape(input_shape)
        if input_shape.ndims is None or input_shape.ndims < 3:
            raise ValueError("`TimeDistributed` Layer should be passed an `input_shape ` with at least 3 "
                             f"dimensions, received: {input_shape}")
        self.input_spec = InputSpec(shape=tuple([None] + input_shape.as_list()[1:]))
        super().build(TensorShape([input_shape[0]]).concatenate(input_shape[2:]))

    def compute_output_shape(self, input_shape):
        input_shape = TensorShape(input_shape)
        child = TensorShape(self.layer.compute_output_shape(TensorShape([input_shape[0]]).concatenate(
            input_shape[2:])))
        return TensorShape([child[0].value, input_shape[1].value]).concatenate(child[1:])

    def call(self, inputs, training=None, mask=None):
        kwargs = {}
        if self.layer._call_accepts("training"):
            kwargs["training"] = training
        input_shape = K.int_shape(inputs)
        input_length = input_shape[1] if input_shape[1] is not None else K.shape(inputs)[1]
        inner = K.reshape(inputs, (-1,) + tuple(input_shape[2:]))
        if mask is not None and self.layer._call_accepts("mask"):
            kwargs["mask"] = K.reshape(mask, (-1,) + tuple(K.int_shape(mask)[2:]))
        y = self.layer(inner, **kwargs)
        output_shape = self.compute_output_shape(inputs.shape).as_list()
        y = K.reshape(y, [-1, input_length] + output_shape[2:]) if input_shape[1] is None else \
            K.reshape(y, (-1, input_length) + tuple(output_shape[2:]))
        y.set_shape(TensorShape([input_shape[0]] + output_shape[1:]))
        return y

    def compute_mask(self, inputs, mask=None):
        return mask


_MERGE_MODES = ("sum", "mul", "ave", "concat", None)


@tf_export("keras.layers.Bidirectional")
class Bidirectional(Wrapper):
    """Bidirectional(layer, merge_mode='concat', weights=None, backward_layer=None): `layer` (an
    RNN) run forwards ("forward_<name>") and over the reversed sequence ("backward_<name>", a
    copy from its config with go_backwards flipped). The backward outputs are put back in time
    order and merged with the forward ones: 'concat' (last axis), 'sum', 'mul', 'ave', or None
    (the list of both). With return_state the forward then backward final states follow."""

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"Please initialize `Bidirectional` layer with a `Layer` instance. You passed: {layer}")
        if backward_layer is not None and not isinstance(backward_layer, Layer):
            raise ValueError(f"`backward_layer` need to be a `tf.keras.layers.Layer` instance. You passed: "
                             f"{backward_layer}")
        if merge_mode not in _MERGE_MODES:
            raise ValueError(f"Invalid merge mode. Merge mode should be one of {{'sum', 'mul', 'ave', 'concat', None}}"
                             f", got {merge_mode!r}")
        super().__init__(layer, **kwargs)
        self.forward_layer = self._recreate_layer_from_config(layer)
        if backward_layer is None:
            self.backward_layer = self._recreate_layer_from_config(layer, go_backwards=True)
        else:
            self.backward_layer = backward_layer
        self._backward_layer_given = backward_layer is not None
        self.forward_layer._name = "forward_" + self.forward_layer.name
        self.backward_layer._name = "backward_" + self.backward_layer.name
        self._verify_layer_config()
        for sub in (self.forward_layer, self.backward_layer):
            if hasattr(sub, "zero_output_for_mask"):
                sub.zero_output_for_mask = sub.return_sequences
        self.merge_mode = merge_mode
        if weights:
            half = len(weights) // 2
            self.forward_layer._initial_weights = weights[:half]
            self.backward_layer._initial_weights = weights[half:]
        self.stateful = layer.stateful
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self.supports_masking = True
        self._trainable = kwargs.get("trainable", layer.trainable)
        self._num_constants = 0
        self.input_spec = layer.input_spec

    @staticmethod
    def _recreate_layer_from_config(layer, go_backwards=False):
        config = layer.get_config()
        if go_backwards:
            config["go_backwards"] = not config["go_backwards"]
        if "custom_objects" not in inspect.signature(type(layer).from_config).parameters:
            return type(layer).from_config(config)
        # the layer's own cell classes (custom ones included) resolve its cell config
        cell = getattr(layer, "cell", None)
        cells = [cell] + list(getattr(cell, "cells", [])) if cell is not None else []
        return type(layer).from_config(config, custom_objects={type(c).__name__: type(c) for c in cells})

    def _verify_layer_config(self) -> None:
        if self.forward_layer.go_backwards == self.backward_layer.go_backwards:
            raise ValueError("Forward layer and backward layer should have different `go_backwards` value.")
        for attr in ("stateful", "return_sequences", "return_state"):
            forward_value, backward_value = getattr(self.forward_layer, attr), getattr(self.backward_layer, attr)
            if forward_value != backward_value:
                raise ValueError(f'Forward layer and backward layer are expected to have the same value for attribute '
                                 f'"{attr}", got "{forward_value}" for forward layer and "{backward_value}" for '
                                 "backward layer")

    def compute_output_shape(self, input_shape):
        output_shape = self.forward_layer.compute_output_shape(input_shape)
        state_shape = None
        if self.return_state:
            state_shape, output_shape = list(output_shape[1:]), output_shape[0]
        output_shape = TensorShape(output_shape)
        if self.merge_mode == "concat":
            dims = output_shape.as_list()
            dims[-1] *= 2
            output_shape = TensorShape(dims)
        elif self.merge_mode is None:
            output_shape = [output_shape, copy.copy(output_shape)]
        if self.return_state:
            outputs = output_shape if self.merge_mode is None else [output_shape]
            return outputs + state_shape + copy.copy(state_shape)
        return output_shape

    def __call__(self, inputs, initial_state=None, constants=None, **kwargs):
        inputs, initial_state, constants = _standardize_args(inputs, initial_state, constants, self._num_constants)
        if initial_state is None and constants is None:
            return super().__call__(inputs, **kwargs)
        if initial_state is not None and len(initial_state) % 2:
            raise ValueError("When passing `initial_state` to a Bidirectional RNN, the state should be a list "
                             f"containing the states of the underlying RNNs. Found: {initial_state}")
        if constants is not None:
            self._num_constants = len(constants)
            self.forward_layer._num_constants = self.backward_layer._num_constants = len(constants)
        additional = list(initial_state or []) + list(constants or [])
        if all(K.is_keras_tensor(t) for t in [inputs] + additional):
            # Keras tensors go in as inputs (the functional graph records them); call splits them again
            original_spec = self.input_spec
            self.input_spec = [None] * (1 + len(additional))
            try:
                return super().__call__([inputs] + additional, **kwargs)
            finally:
                self.input_spec = original_spec
        return super().__call__(inputs, initial_state=initial_state, constants=constants, **kwargs)

    def call(self, inputs, training=None, mask=None, initial_state=None, constants=None):
        kwargs = {}
        if self.layer._call_accepts("training"):
            kwargs["training"] = training
        if self.layer._call_accepts("mask"):
            kwargs["mask"] = mask
        if isinstance(inputs, list) and len(inputs) > 1:
            n_states = len(inputs) - 1 - self._num_constants
            initial_state = inputs[1:1 + n_states] or None
            constants = inputs[1 + n_states:] or None
            inputs = inputs[0]
            if isinstance(mask, list):
                kwargs["mask"] = mask[0]
        if constants is not None:
            kwargs["constants"] = constants
        forward_state = backward_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            forward_state, backward_state = initial_state[:half], initial_state[half:]
        y = self.forward_layer(inputs, initial_state=forward_state, **kwargs)
        y_rev = self.backward_layer(inputs, initial_state=backward_state, **kwargs)
        states = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = reverse(y_rev, [0] if getattr(self.forward_layer, "time_major", False) else [1])
        if self.merge_mode == "concat":
            output = K.concatenate([y, y_rev])
        elif self.merge_mode == "sum":
            output = y + y_rev
        elif self.merge_mode == "ave":
            output = (y + y_rev) / 2
        elif self.merge_mode == "mul":
            output = y * y_rev
        else:
            output = [y, y_rev]
        if self.return_state:
            return (output if self.merge_mode is None else [output]) + states
        return output

    def compute_mask(self, inputs, mask):
        if isinstance(mask, list):
            mask = mask[0]
        if self.return_sequences:
            output_mask = [mask, mask] if not self.merge_mode else mask
        else:
            output_mask = [None, None] if not self.merge_mode else None
        if self.return_state:
            state_mask = [None for _ in nest.flatten(self.forward_layer.states)]
            outputs = output_mask if isinstance(output_mask, list) else [output_mask]
            return outputs + state_mask * 2
        return output_mask

    def reset_states(self) -> None:
        self.forward_layer.reset_states()
        self.backward_layer.reset_states()

    def build(self, input_shape) -> None:
        self.built = True   # the forward and backward layers build on their first call

    def get_config(self) -> dict:
        config = {"merge_mode": self.merge_mode}
        if self._backward_layer_given:
            config["backward_layer"] = {"class_name": type(self.backward_layer).__name__,
                                        "config": self.backward_layer.get_config()}
        return {**super().get_config(), **config}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if "backward_layer" in config:
            config["backward_layer"] = deserialize_layer(config["backward_layer"], custom_objects=custom_objects)
        layer = deserialize_layer(config.pop("layer"), custom_objects=custom_objects)
        return cls(layer, **config)
