"""tf.keras.Sequential: a linear stack of layers. With an input shape on its first layer it is a
functional graph from the start; otherwise it builds when first called (its variables then live
under the model's name scope, "sequential/dense/kernel:0")."""
from __future__ import annotations

import copy

from tensorweave.framework import nest
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras.engine.base_layer import Layer, deserialize
from tensorweave.keras.engine.input_layer import Input, InputLayer
from tensorweave.keras.engine.training import Model
from tensorweave.keras.utils.layer_utils import get_source_inputs


def _input_shape_and_dtype(layer):
    """The batch input shape and dtype a first layer declares; a nested graph model's are its
    first layer's (down to the deepest one)."""
    while getattr(layer, "_is_graph_network", False) or isinstance(layer, Sequential):
        if not layer.layers:
            raise ValueError("An empty Model cannot be used as a Layer.")
        layer = layer._layers[0]
    return getattr(layer, "_batch_input_shape", None), layer.dtype


@tf_export("keras.Sequential", "keras.models.Sequential")
class Sequential(Model):
    """tf.keras.Sequential(layers=None, name=None): `add` appends a layer, `pop` removes the last."""

    def __init__(self, layers=None, name=None):
        super().__init__(name=name)
        self.supports_masking = True
        self._build_input_shape = None
        if layers:
            for layer in layers:
                self.add(layer)

    @property
    def layers(self) -> list:
        """The layers added (without the InputLayer Keras puts under the first one)."""
        layers = list(self._layers)
        return layers[1:] if layers and isinstance(layers[0], InputLayer) else layers

    def add(self, layer) -> None:
        """Appends `layer`; the model is a graph network once the first layer knows its input shape."""
        if not isinstance(layer, Layer):
            raise TypeError(f"The added layer must be an instance of class Layer. Found: {layer}")
        self.built = False
        set_inputs = False
        if not self._layers:
            if isinstance(layer, InputLayer):
                set_inputs = True
            else:
                batch_shape, dtype = _input_shape_and_dtype(layer)
                if batch_shape:
                    x = Input(batch_shape=batch_shape, dtype=dtype, name=layer.name + "_input")
                    layer(x)
                    set_inputs = True
            if set_inputs:
                outputs = nest.flatten(layer._inbound_nodes[-1].output_tensors)
                if len(outputs) != 1:
                    raise ValueError("All layers in a Sequential model should have a single output tensor. For "
                                     "multi-output layers, use the functional API.")
                self.outputs = [outputs[0]]
                self.inputs = get_source_inputs(self.outputs[0])
        elif self.outputs:
            output = layer(self.outputs[0])
            if len(nest.flatten(output)) != 1:
                raise TypeError("All layers in a Sequential model should have a single output tensor. For "
                                "multi-output layers, use the functional API.")
            self.outputs = [output]
        if self.outputs:
            self._init_graph_network(self.inputs, self.outputs, name=self.name)
        else:
            self._layers.append(layer)

    def pop(self) -> None:
        """Removes the last layer."""
        if not self.layers:
            raise TypeError("There are no layers in the model.")
        if not self._is_graph_network:
            self._layers.pop()
            self.built = False
            return
        last = self._layers.pop()
        if not self.layers:
            self.outputs, self.inputs, self.built = None, None, False
            self._is_graph_network = False
            self._layers = []
            return
        for layer in self._layers:
            layer._outbound_nodes = [n for n in layer._outbound_nodes if n.outbound_layer is not last]
        self.outputs = [self.layers[-1].output]
        self._init_graph_network(self.inputs, self.outputs, name=self.name)

    def build(self, input_shape=None) -> None:
        if self._is_graph_network:
            self.built = True
            return
        if input_shape is None:
            raise ValueError("You must provide an `input_shape` argument.")
        super().build(tuple(input_shape))

    def call(self, inputs, training=None, mask=None):
        if self._is_graph_network:
            return super().call(inputs, training=training, mask=mask)
        outputs = inputs
        for layer in self.layers:
            kwargs = {}
            if training is not None and layer._call_accepts("training"):
                kwargs["training"] = training
            outputs = layer(outputs, **kwargs)
        return outputs

    def _set_inputs_from_data(self, names: list, shapes: list, dtypes: list, as_dict: bool) -> None:
        """A dict of features builds a Sequential only through a first layer that takes one (a
        DenseFeatures or SequenceFeatures layer), as Keras checks."""
        if as_dict and not getattr(self.layers[0] if self.layers else None, "_is_feature_layer", False):
            raise ValueError("Passing a dictionary input to a Sequential Model which doesn't have FeatureLayer as the "
                             "first layer is an error.")
        super()._set_inputs_from_data(names, shapes, dtypes, as_dict)

    def compute_output_shape(self, input_shape):
        shape = input_shape
        for layer in self.layers:
            shape = layer.compute_output_shape(shape)
        return shape

    def get_config(self) -> dict:
        config = {"name": self.name,
                  "layers": copy.deepcopy([{"class_name": type(layer).__name__, "config": layer.get_config()}
                                           for layer in self.layers])}
        if self._build_input_shape is not None and not self._is_graph_network:
            config["build_input_shape"] = self._build_input_shape
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        if isinstance(config, dict):
            name, build_input_shape, layer_configs = config.get("name"), config.get("build_input_shape"), \
                config["layers"]
        else:
            name, build_input_shape, layer_configs = None, None, config
        model = cls(name=name)
        for layer_config in layer_configs:
            model.add(deserialize(layer_config, custom_objects=custom_objects))
        if not model.inputs and isinstance(build_input_shape, (list, tuple)):   # a dict's builds on data, as TF
            model.build(build_input_shape)
        return model
