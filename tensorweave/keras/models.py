"""tf.keras.models: Model, Sequential, and a model's architecture from its config or JSON
(model_from_config, model_from_json), clone_model."""
from __future__ import annotations

import json

from tensorweave import _api
from tensorweave.framework import nest
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K
from tensorweave.keras.engine.base_layer import deserialize
from tensorweave.keras.engine.input_layer import Input, InputLayer
from tensorweave.keras.engine.sequential import Sequential
from tensorweave.keras.engine.training import Model

__getattr__, __dir__ = _api.lazy_attributes(__name__)


@tf_export("keras.models.model_from_config")
def model_from_config(config, custom_objects=None):
    """The model (or layer) a {"class_name", "config"} dict describes, with fresh weights."""
    if isinstance(config, list):
        raise TypeError("`model_from_config` expects a dictionary, not a list. Maybe you meant to use "
                        "`Sequential.from_config(config)`?")
    return deserialize(config, custom_objects=custom_objects)


@tf_export("keras.models.model_from_json")
def model_from_json(json_string, custom_objects=None):
    """The model `Model.to_json()` wrote (architecture only; the weights are fresh)."""
    return deserialize(json.loads(json_string), custom_objects=custom_objects)


def _clone_layer(layer):
    return type(layer).from_config(layer.get_config())


@tf_export("keras.models.clone_model")
def clone_model(model, input_tensors=None, clone_function=None):
    """A copy of a functional or Sequential `model` with new layers (new, uninitialised weights),
    built on new Inputs or on `input_tensors`."""
    clone_function = clone_function or _clone_layer
    if isinstance(model, Sequential):
        layers = [clone_function(layer) for layer in model.layers]
        if input_tensors is not None:
            x = input_tensors[0] if isinstance(input_tensors, (list, tuple)) else input_tensors
            if K.keras_history(x) is None:
                x = Input(tensor=x)
            return Sequential([InputLayer(input_tensor=x, name="input_" + model.layers[0].name)] + layers,
                              name=model.name)
        return Sequential(layers, name=model.name)
    if not isinstance(model, Model) or not model._is_graph_network:
        raise ValueError(f"Expected `model` argument to be a functional `Model` instance, but got a subclass model "
                         f"instead: {model}")
    new_layers = {}
    if input_tensors is None:
        inputs = [Input(batch_shape=layer._batch_input_shape, dtype=layer.dtype, name=layer.name)
                  for layer in model._input_layers]
    else:
        inputs = [x if K.keras_history(x) is not None else Input(tensor=x)
                  for x in model._flatten_to_reference_inputs(input_tensors)]
    tensor_map = {id(x): y for x, y in zip(model.inputs, inputs)}
    for depth in sorted(model._nodes_by_depth, reverse=True):
        for node in model._nodes_by_depth[depth]:
            layer = node.outbound_layer
            if not node.inbound_layers:
                continue
            if layer not in new_layers:
                new_layers[layer] = clone_function(layer)
            computed = [tensor_map[id(x)] for x in nest.flatten(node.input_tensors)]
            if isinstance(node.input_tensors, dict):
                computed = [nest.pack_sequence_as(node.input_tensors, computed)]
            outputs = new_layers[layer](computed[0] if len(computed) == 1 else computed, **node.arguments)
            for x, y in zip(node.output_tensors, outputs if isinstance(outputs, list) else [outputs]):
                tensor_map[id(x)] = y
    nested_inputs = nest.pack_sequence_as(model._nested_inputs, inputs) if nest.is_sequence(model._nested_inputs) \
        else inputs
    return Model(nested_inputs, [tensor_map[id(x)] for x in model.outputs], name=model.name)
