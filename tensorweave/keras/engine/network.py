"""The Keras functional graph (TF 1.15's engine/network.py): `Model(inputs, outputs)` follows the
Keras history of `outputs` back to `inputs`, orders the layers by depth, and calling the model on
new tensors reruns those layers on them (reusing their variables). A Network is a Layer, so models
nest. Without inputs/outputs it is a subclassed model whose `call` the subclass writes."""
from __future__ import annotations

import collections
import copy
import json

from tensorweave.framework import nest
from tensorweave.framework.shapes import TensorShape
from tensorweave.keras import backend as K
from tensorweave.keras.engine.base_layer import Layer, Node, deserialize, network_call, shape_tuple
from tensorweave.keras.engine.input_layer import InputLayer
from tensorweave.keras.utils import layer_utils

KERAS_VERSION = "2.2.4-tf"   # what TF 1.15 writes into a model's JSON


def _node_key(layer, node_index: int) -> str:
    return f"{layer.name}_ib-{node_index}"


def _should_skip_first_node(layer) -> bool:
    """A nested graph network's first node is its own construction, rebuilt by from_config."""
    return isinstance(layer, Network) and layer._is_graph_network


def _map_graph_network(inputs, outputs):
    """(network node keys, nodes by depth, layers in order, layers by depth) of the graph from
    `inputs` to `outputs`; raises ValueError when an output depends on a tensor that is not one of
    the inputs ("Graph disconnected"), on a cycle, or when two layers share a name."""
    network_nodes = set()
    nodes_depths, layers_depths, layer_indices = {}, {}, {}
    nodes_in_decreasing_depth = []
    finished, in_progress = set(), set()

    def build_map(tensor, layer, node_index):
        node = layer._inbound_nodes[node_index]
        if id(node) in in_progress:
            raise ValueError(f'The tensor {tensor} at layer "{layer.name}" is part of a cycle.')
        if id(node) in finished:
            return
        network_nodes.add(_node_key(layer, node_index))
        layer_indices.setdefault(layer, len(layer_indices))
        in_progress.add(id(node))
        for inbound_layer, inbound_index, _, inbound_tensor in node.iterate_inbound():
            build_map(inbound_tensor, inbound_layer, inbound_index)
        finished.add(id(node))
        in_progress.remove(id(node))
        nodes_in_decreasing_depth.append(node)

    for x in outputs:
        layer, node_index, _ = K.keras_history(x)
        build_map(x, layer, node_index)

    for node in reversed(nodes_in_decreasing_depth):
        depth = max(nodes_depths.setdefault(node, 0), layers_depths.get(node.outbound_layer, 0))
        layers_depths[node.outbound_layer] = depth
        nodes_depths[node] = depth
        for inbound_layer, inbound_index, _, _ in node.iterate_inbound():
            inbound_node = inbound_layer._inbound_nodes[inbound_index]
            nodes_depths[inbound_node] = max(depth + 1, nodes_depths.get(inbound_node, 0))

    for x in inputs:   # inputs that no output depends on still belong to the model
        input_layer = K.keras_history(x)[0]
        if input_layer not in layers_depths:
            layers_depths[input_layer] = 0
            layer_indices[input_layer] = -1
            nodes_depths[input_layer._inbound_nodes[0]] = 0
            network_nodes.add(_node_key(input_layer, 0))

    nodes_by_depth = collections.defaultdict(list)
    for node, depth in nodes_depths.items():
        nodes_by_depth[depth].append(node)
    layers_by_depth = collections.defaultdict(list)
    for layer, depth in layers_depths.items():
        layers_by_depth[depth].append(layer)
    layers = []
    for depth in sorted(layers_by_depth, reverse=True):
        layers.extend(sorted(layers_by_depth[depth], key=lambda x: layer_indices[x]))

    computable = {id(x) for x in inputs}
    accessed = []
    for depth in sorted(nodes_by_depth, reverse=True):
        for node in nodes_by_depth[depth]:
            if not node.inbound_layers:   # an input layer's own node
                continue
            for x in nest.flatten(node.input_tensors):
                if id(x) not in computable:
                    raise ValueError(f'Graph disconnected: cannot obtain value for tensor {x} at layer '
                                     f'"{node.outbound_layer.name}". The following previous layers were accessed '
                                     f"without issue: {accessed}")
            computable.update(id(x) for x in nest.flatten(node.output_tensors))
            accessed.append(node.outbound_layer.name)

    names = [layer.name for layer in layers]
    for name in names:
        if names.count(name) != 1:
            raise ValueError(f'The name "{name}" is used {names.count(name)} times in the model. All layer names '
                             "should be unique.")
    return network_nodes, nodes_by_depth, layers, layers_by_depth


class Network(Layer):
    """A graph of layers: `Network(inputs, outputs, name=None)` (the functional API) or, without
    them, the base of a subclassed model whose layers are its attributes."""

    def __init__(self, *args, **kwargs):
        if len(args) >= 2 or (len(args) == 1 and "outputs" in kwargs) or ("inputs" in kwargs and "outputs" in kwargs):
            self._init_graph_network(*args, **kwargs)
        elif args:
            raise TypeError(f"{type(self).__name__} takes inputs and outputs (a functional model), or only keyword "
                            f"arguments (a subclassed model); got {len(args)} positional argument(s).")
        else:
            self._init_subclassed_network(**kwargs)

    def _init_subclassed_network(self, name=None, **kwargs):
        self._is_graph_network = False
        self.inputs, self.outputs = None, None
        super().__init__(name=name, **kwargs)
        self.__dict__.setdefault("_layers", [])

    def _init_graph_network(self, inputs, outputs, name=None, **kwargs):
        self._is_graph_network = True
        if isinstance(inputs, tuple):
            inputs = list(inputs)
        if isinstance(outputs, tuple):
            outputs = list(outputs)
        if isinstance(outputs, list) and len(outputs) == 1:   # a single-output model returns a tensor
            outputs = outputs[0]
        self._nested_inputs, self._nested_outputs = inputs, outputs
        flat_inputs, flat_outputs = nest.flatten(inputs), nest.flatten(outputs)
        for x in flat_inputs:
            history = K.keras_history(x)
            if history is None or not isinstance(history[0], InputLayer):
                raise ValueError(f"Input tensors to a Model must come from `tf.keras.Input`. Received: {x} (missing "
                                 "previous layer metadata).")
        if len({id(x) for x in flat_inputs}) != len(flat_inputs):
            raise ValueError("The list of inputs passed to the model is redundant. All inputs should only appear "
                             f"once. Found: {flat_inputs}")
        for x in flat_outputs:
            if K.keras_history(x) is None:
                raise ValueError(f"Output tensors to a Model must be the output of a TensorFlow `Layer` (thus holding "
                                 f"past layer metadata). Found: {x}")
        if not hasattr(self, "_name"):
            Layer.__init__(self, name=name, **kwargs)
        self.built = True
        self.inputs, self.outputs = flat_inputs, flat_outputs
        self._input_layers, self._input_coordinates = [], []
        for x in flat_inputs:
            layer, node_index, tensor_index = K.keras_history(x)
            self._input_layers.append(layer)
            self._input_coordinates.append((layer, node_index, tensor_index))
        self._output_layers, self._output_coordinates = [], []
        for x in flat_outputs:
            layer, node_index, tensor_index = K.keras_history(x)
            self._output_layers.append(layer)
            self._output_coordinates.append((layer, node_index, tensor_index))
        (self._network_nodes, self._nodes_by_depth, layers,
         self._layers_by_depth) = _map_graph_network(flat_inputs, flat_outputs)
        self._layers = layers
        self.input_names = [layer.name for layer in self._input_layers]
        self.output_names = [layer.name for layer in self._output_layers]
        self._inbound_nodes, self._outbound_nodes = [], []
        # Keras's own node keeps a dict of inputs or outputs as a dict: `model.input`/`model.output` give it back
        Node(self, inbound_layers=[], node_indices=[], tensor_indices=[],
             input_tensors=inputs if isinstance(inputs, dict) else list(flat_inputs),
             output_tensors=outputs if isinstance(outputs, dict) else list(flat_outputs))

    # -- layers -------------------------------------------------------------------------------------
    @property
    def layers(self) -> list:
        """The model's layers: by depth from the inputs (a graph network), else as assigned."""
        return list(self._layers)

    def _sublayers(self) -> list:
        return list(self.__dict__.get("_layers", []))

    @property
    def state_updates(self) -> list:
        """The updates of the stateful layers (their states' assignments): what evaluate and
        predict run besides the outputs, so the states carry over from one batch to the next."""
        return [u for layer in self.layers if getattr(layer, "stateful", False) for u in layer.updates]

    def reset_states(self) -> None:
        """Zeroes the stored states of every stateful layer of the model (TF's Network.reset_states)."""
        for layer in self.layers:
            if getattr(layer, "stateful", False) and hasattr(layer, "reset_states"):
                layer.reset_states()

    @property
    def weights(self) -> list:
        """Every layer's weights, layer by layer (the order get_weights/set_weights and the
        saved files use), then the network's own."""
        return self._unique([w for layer in self._sublayers() for w in layer.weights] +
                            self._trainable_weights + self._non_trainable_weights)

    variables = weights

    def get_layer(self, name=None, index=None):
        """The layer called `name`, or at position `index` of `layers`."""
        if index is not None:
            if len(self.layers) <= index:
                raise ValueError(f"Was asked to retrieve layer at index {index} but model only has "
                                 f"{len(self.layers)} layers.")
            return self.layers[index]
        if not name:
            raise ValueError("Provide either a layer name or layer index.")
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}")

    @property
    def stateful(self) -> bool:
        return any(getattr(layer, "stateful", False) for layer in self._sublayers())

    @stateful.setter
    def stateful(self, value) -> None:
        pass   # a network is stateful when one of its layers is

    # -- calling --------------------------------------------------------------------------------
    def _maybe_build(self, inputs) -> None:
        """A subclassed network builds its layers in its first real call (no dummy call); a
        `build` the subclass wrote runs first, as a layer's does."""
        if self.built:
            return
        build_owner = next(c for c in type(self).__mro__ if "build" in c.__dict__)
        if not build_owner.__module__.startswith("tensorweave.keras.engine."):
            super()._maybe_build(inputs)
        self._build_input_shape = nest.map_structure(lambda x: shape_tuple(x.shape), inputs)
        self.built = True

    def build(self, input_shape) -> None:
        """Builds a subclassed model by calling it on placeholders of `input_shape`."""
        if self._is_graph_network:
            self.built = True
            return
        if input_shape is None:
            raise ValueError("Input shape must be defined when calling build on a model subclass network.")
        if isinstance(input_shape, list) and all(isinstance(s, (list, tuple, TensorShape)) for s in input_shape):
            x = [K.placeholder(shape=tuple(TensorShape(s).as_list())) for s in input_shape]
        else:
            x = K.placeholder(shape=tuple(TensorShape(input_shape).as_list()))
        self._build_input_shape = input_shape
        self.call(x)   # outside the model's name scope, as TF: "dense/kernel:0"
        self.built = True

    def call(self, inputs, training=None, mask=None):
        """Runs the graph's layers on `inputs` (reusing their weights)."""
        if not self._is_graph_network:
            raise NotImplementedError("When subclassing the `Model` class, you should implement a `call` method.")
        return self._run_internal_graph(inputs, training=training, mask=mask)

    def _set_masks(self, inputs, outputs, previous_mask) -> None:
        """The layers inside already set the masks of the network's outputs."""

    def _flatten_to_reference_inputs(self, inputs) -> list:
        """`inputs` in the order of `self.inputs`: a dict by the keys of the dict of Inputs the model
        was built on, or by the input layers' names (Keras maps a dict onto a list of Inputs by
        name); a dict without those keys, and anything else, in nest.flatten order, as TF."""
        if isinstance(inputs, dict):
            nested = self._nested_inputs
            names = sorted(nested) if isinstance(nested, dict) else [layer.name for layer in self._input_layers]
            if all(name in inputs for name in names):
                return [inputs[name] for name in names]
        return nest.flatten(inputs)

    def _run_internal_graph(self, inputs, training=None, mask=None):
        flat = self._flatten_to_reference_inputs(inputs)
        if len(flat) != len(self.inputs):
            raise ValueError(f"Layer {self.name} expects {len(self.inputs)} inputs, but it received {len(flat)} input "
                             "tensors.")
        tensor_map = {id(x): y for x, y in zip(self.inputs, flat)}
        masks = nest.flatten(mask) if mask is not None else []
        input_masks = {id(x): m for x, m in zip(self.inputs, masks) if m is not None}   # masks given to the call
        with network_call():
            for depth in sorted(self._nodes_by_depth, reverse=True):
                for node in self._nodes_by_depth[depth]:
                    layer = node.outbound_layer
                    flat_inputs = nest.flatten(node.input_tensors)
                    if not node.inbound_layers or not all(id(x) in tensor_map for x in flat_inputs):
                        continue
                    computed = [tensor_map[id(x)] for x in flat_inputs]
                    kwargs = dict(node.arguments)
                    if training is not None and "training" not in kwargs and layer._call_accepts("training"):
                        kwargs["training"] = training
                    given = [input_masks.get(id(x)) for x in flat_inputs]
                    if any(m is not None for m in given) and layer._call_accepts("mask"):
                        kwargs["mask"] = given[0] if len(given) == 1 else given
                    if isinstance(node.input_tensors, dict):   # the layer takes its dict back
                        computed = nest.pack_sequence_as(node.input_tensors, computed)
                    elif len(computed) == 1:
                        computed = computed[0]
                    outputs = layer(computed, **kwargs)
                    for x, y in zip(node.output_tensors, nest.flatten(outputs)):
                        tensor_map[id(x)] = y
        return nest.pack_sequence_as(self._nested_outputs, [tensor_map[id(x)] for x in self.outputs])

    def compute_output_shape(self, input_shape):
        """The output shapes for `input_shape`, through each layer's compute_output_shape."""
        if not self._is_graph_network:
            return super().compute_output_shape(input_shape)
        shapes = input_shape if isinstance(input_shape, list) and len(self.inputs) > 1 else [input_shape]
        shape_map = {id(x): TensorShape(s) for x, s in zip(self.inputs, shapes)}
        for depth in sorted(self._nodes_by_depth, reverse=True):
            for node in self._nodes_by_depth[depth]:
                if not node.inbound_layers:
                    continue
                known = [shape_map[id(x)] for x in nest.flatten(node.input_tensors)]
                if isinstance(node.input_tensors, dict):
                    known = [nest.pack_sequence_as(node.input_tensors, known)]
                out = node.outbound_layer.compute_output_shape(known[0] if len(known) == 1 else known)
                outs = out if isinstance(out, list) else [out]
                for x, s in zip(node.output_tensors, outs):
                    shape_map[id(x)] = TensorShape(s)
        result = [shape_map[id(x)] for x in self.outputs]
        return result[0] if len(result) == 1 else result

    # -- summary and config -------------------------------------------------------------------------
    def summary(self, line_length=None, positions=None, print_fn=None) -> None:
        """Prints the layers, their output shapes and parameter counts, as Keras does."""
        if not self.built:
            raise ValueError("This model has not yet been built. Build the model first by calling `build()` or "
                             "calling `fit()` with some data, or specify an `input_shape` argument in the first "
                             "layer(s) for automatic build.")
        layer_utils.print_summary(self, line_length=line_length, positions=positions, print_fn=print_fn)

    def get_config(self) -> dict:
        """The functional graph as Keras serializes it: name, layers (class, config, inbound
        nodes as [layer name, node index, tensor index, kwargs]), input_layers, output_layers."""
        if not self._is_graph_network:
            raise NotImplementedError(f"Layer {type(self).__name__} is a subclassed Model: its get_config is the "
                                      "subclass's to write (as in Keras).")
        conversion = {}
        for layer in self.layers:
            kept = 1 if _should_skip_first_node(layer) else 0
            for index in range(len(layer._inbound_nodes)):
                key = _node_key(layer, index)
                if key in self._network_nodes:
                    conversion[key] = kept
                    kept += 1
        layer_configs = []
        for layer in self.layers:
            inbound = []
            for index, node in enumerate(layer._inbound_nodes):
                if _node_key(layer, index) not in self._network_nodes or not node.inbound_layers:
                    continue
                entries = [[inbound_layer.name, conversion.get(_node_key(inbound_layer, node_id), 0), tensor_id,
                            copy.deepcopy(node.arguments)]
                           for inbound_layer, node_id, tensor_id, _ in node.iterate_inbound()]
                # a call on a dict is saved as a dict of entries by key, as Keras saves it
                inbound.append(nest.pack_sequence_as(node.input_tensors, entries)
                               if isinstance(node.input_tensors, dict) else entries)
            layer_configs.append({"name": layer.name, "class_name": type(layer).__name__,
                                  "config": layer.get_config(), "inbound_nodes": inbound})

        def coordinates(coords, nested):
            out = [[layer.name, conversion[_node_key(layer, node_index)], tensor_index]
                   for layer, node_index, tensor_index in coords]
            out = nest.pack_sequence_as(nested, out) if nest.is_sequence(nested) else out
            return out if isinstance(out, (list, dict)) else [out]

        return {"name": self.name, "layers": layer_configs,
                "input_layers": coordinates(self._input_coordinates, self._nested_inputs),
                "output_layers": coordinates(self._output_coordinates, self._nested_outputs)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Rebuilds the layers and reconnects them as the config's inbound nodes say."""
        created = {}
        pending = collections.OrderedDict()   # layer name -> node data not yet applied

        def process_node(layer, node_data) -> bool:
            inputs = []
            kwargs = {}
            entries = [node_data[k] for k in sorted(node_data)] if isinstance(node_data, dict) else node_data
            for inbound_name, inbound_index, tensor_index, *rest in entries:
                inbound = created[inbound_name]
                if len(inbound._inbound_nodes) <= inbound_index:
                    return False
                inputs.append(nest.flatten(inbound._inbound_nodes[inbound_index].output_tensors)[tensor_index])
                kwargs = rest[0] if rest else {}
            if isinstance(node_data, dict):   # a call on a dict of tensors by key
                layer(dict(zip(sorted(node_data), inputs)), **kwargs)
            else:
                layer(inputs[0] if len(inputs) == 1 else inputs, **kwargs)
            return True

        for layer_data in config["layers"]:
            layer = deserialize({"class_name": layer_data["class_name"], "config": layer_data["config"]},
                                custom_objects=custom_objects)
            created[layer_data["name"]] = layer
            pending[layer_data["name"]] = list(layer_data["inbound_nodes"])
        while any(pending.values()):
            progressed = False
            for name, nodes in pending.items():
                while nodes and process_node(created[name], nodes[0]):
                    nodes.pop(0)
                    progressed = True
            if not progressed:
                raise ValueError(f"Could not reconnect the layers of model {config.get('name')}: a node's inputs "
                                 "never become available (the config is inconsistent).")

        def tensors(coords):
            if isinstance(coords, dict):   # a model built on a dict of Inputs
                return {key: tensors([coords[key]])[0] for key in coords}
            out = []
            for layer_name, node_index, tensor_index in coords:
                node = created[layer_name]._inbound_nodes[node_index]
                out.append(nest.flatten(node.output_tensors)[tensor_index])
            return out

        inputs, outputs = tensors(config["input_layers"]), tensors(config["output_layers"])
        return cls(inputs=inputs, outputs=outputs, name=config.get("name"))

    def to_json(self, **kwargs) -> str:
        """The model's architecture as JSON (class_name, config, keras_version, backend)."""
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config(),
                           "keras_version": KERAS_VERSION, "backend": "tensorflow"}, default=_json_default, **kwargs)


def _json_default(obj):
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, TensorShape):
        return obj.as_list()
    if hasattr(obj, "name") and hasattr(obj, "as_numpy_dtype"):
        return obj.name
    raise TypeError(f"Not JSON Serializable: {obj!r}")
