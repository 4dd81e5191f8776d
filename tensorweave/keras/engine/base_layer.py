"""tf.keras.layers.Layer in graph mode (TF 1.15's Keras): a layer is named when it is made
("dense", "dense_1" per graph), creates its weights in `build` with `add_weight` on its first call
(variables "dense/kernel:0", under the name scope of that call), checks `input_spec` on every
call, and records on its outputs the Keras history (layer, node, tensor index) the functional API
(engine/network.py) follows back to the inputs. Each call made on Keras tensors adds a Node."""
from __future__ import annotations

import contextlib
import inspect
import threading
import weakref

import numpy as np

from tensorweave.framework import nest
from tensorweave.framework.dtypes import as_dtype
from tensorweave.framework.graph import Graph, Tensor, get_default_graph
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import identity
from tensorweave.ops.state.variables import Variable, VariableSynchronization
from tensorweave import keras as keras_namespace
from tensorweave.keras import backend as K, constraints, initializers, layers as layers_namespace, regularizers
from tensorweave.keras.utils.generic_utils import deserialize_keras_object, to_snake_case
from tensorweave.layers.base import InputSpec, _check_input_spec

tf_export("keras.layers.InputSpec")(InputSpec)

_ALLOWED_KWARGS = {"input_shape", "batch_input_shape", "batch_size", "weights", "activity_regularizer",
                   "autocast"}
_LAYER_CLASSES: dict = {}   # tensorweave's Layer subclasses by class name, for deserialize
# Per thread: how deep in layer calls (`layer_depth`) and in networks running their layers
# (`network_depth`; layers called there add no nodes) the current code is.
_CALL_STATE = threading.local()


# Whether each loss and update is conditional on the inputs of the call that made it.
_CONDITIONAL: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def _layer_call():
    _CALL_STATE.layer_depth = getattr(_CALL_STATE, "layer_depth", 0) + 1
    try:
        yield
    finally:
        _CALL_STATE.layer_depth -= 1


def _in_layer_call() -> bool:
    return getattr(_CALL_STATE, "layer_depth", 0) > 0


def _reachable_ops(inputs) -> set:
    """The ops computed from `inputs`, following data edges and control edges forward (a resource
    variable's update returns a read that waits on the update)."""
    seen = set()
    frontier = [op for x in nest.flatten(inputs) if isinstance(x, Tensor) for op in x.consumers()]
    while frontier:
        op = frontier.pop()
        if op in seen:
            continue
        seen.add(op)
        frontier.extend(consumer for y in op.outputs for consumer in y.consumers())
        frontier.extend(op._control_outputs)
    return seen


def _for_inputs(items: list, inputs) -> list:
    """TF 1.15's get_*_for: unconditional items for None, else the conditional ones reachable
    from `inputs`."""
    def conditional(item):
        try:
            return _CONDITIONAL.get(item, False)
        except TypeError:
            return False
    if inputs is None:
        return [x for x in items if not conditional(x)]
    reachable = _reachable_ops(inputs)
    return [x for x in items if conditional(x) and getattr(x, "op", x) in reachable]


def _in_network_call() -> bool:
    return getattr(_CALL_STATE, "network_depth", 0) > 0


@contextlib.contextmanager
def network_call():
    """While a network runs its layers (its own call), those calls record no Keras nodes: the
    network's call is the one node the outer graph sees."""
    _CALL_STATE.network_depth = getattr(_CALL_STATE, "network_depth", 0) + 1
    try:
        yield
    finally:
        _CALL_STATE.network_depth -= 1


def shape_tuple(shape):
    """A TensorShape (or nest of them) as Keras reports shapes: tuples of ints and Nones."""
    if isinstance(shape, (list, tuple)) and not isinstance(shape, TensorShape) and \
            any(isinstance(s, (TensorShape, list, tuple)) for s in shape):
        return [shape_tuple(s) for s in shape]
    shape = TensorShape(shape)
    return tuple(shape.as_list()) if shape.ndims is not None else None


_WEIGHT_OPTIONS = (("initializer", initializers), ("regularizer", regularizers), ("constraint", constraints))


def take_weight_options(layer, prefix: str, initializer, regularizer, constraint) -> None:
    """Sets the layer's `prefix`_initializer, _regularizer and _constraint from its constructor's
    arguments (as initializers.get, regularizers.get and constraints.get make them)."""
    for (kind, module), given in zip(_WEIGHT_OPTIONS, (initializer, regularizer, constraint)):
        setattr(layer, f"{prefix}_{kind}", module.get(given))


def weight_options_config(layer, *prefixes: str) -> dict:
    """The config entries of the layer's initializers, then regularizers, then constraints of
    `prefixes` (each kind in the order of `prefixes`)."""
    return {f"{p}_{kind}": module.serialize(getattr(layer, f"{p}_{kind}")) for kind, module in _WEIGHT_OPTIONS
            for p in prefixes}


def infer_output_shape(fn, input_shape, **kwargs):
    """The static shape(s) of fn(placeholders of `input_shape`), built in a scratch graph."""
    with Graph().as_default():
        if isinstance(input_shape, list) and input_shape and not isinstance(input_shape[0], (int, type(None))):
            x = [K.placeholder(shape=shape_tuple(s)) for s in input_shape]
        else:
            x = K.placeholder(shape=shape_tuple(input_shape))
        y = fn(x, **kwargs)
    return [TensorShape(t.shape) for t in y] if isinstance(y, (list, tuple)) else TensorShape(y.shape)


class Node:
    """One call of `outbound_layer`: the layers, node indices and tensor indices its inputs came
    from, and its input and output tensors (the functional graph's edges)."""

    def __init__(self, outbound_layer, inbound_layers, node_indices, tensor_indices, input_tensors, output_tensors,
                 arguments=None):
        self.outbound_layer = outbound_layer
        self.inbound_layers = inbound_layers
        self.node_indices = node_indices
        self.tensor_indices = tensor_indices
        self.input_tensors = input_tensors
        self.output_tensors = output_tensors
        self.arguments = arguments or {}
        self.input_shapes = nest.map_structure(lambda x: shape_tuple(x.shape), input_tensors)
        self.output_shapes = nest.map_structure(lambda x: shape_tuple(x.shape), output_tensors)
        for layer in nest.flatten(inbound_layers):
            layer._outbound_nodes.append(self)
        outbound_layer._inbound_nodes.append(self)

    def iterate_inbound(self):
        """(inbound layer, node index, tensor index, tensor) for each input."""
        return zip(nest.flatten(self.inbound_layers), nest.flatten(self.node_indices),
                   nest.flatten(self.tensor_indices), nest.flatten(self.input_tensors))


def _unpack_single(values):
    return values[0] if isinstance(values, list) and len(values) == 1 else values


@tf_export("keras.layers.Layer")
class Layer:
    """tf.keras.layers.Layer(trainable=True, name=None, dtype=None, dynamic=False, **kwargs):
    kwargs may be input_shape / batch_input_shape / batch_size (for the first layer of a
    Sequential), weights (set after build) and activity_regularizer. A subclass makes its weights
    in `build(input_shape)` with `add_weight` and computes in `call(inputs, **kwargs)`; a Layer
    assigned to an attribute is tracked (its weights and losses are this layer's too)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith("tensorweave."):   # user classes come through custom_objects, as in Keras
            _LAYER_CLASSES.setdefault(cls.__name__, cls)

    def __init__(self, trainable=True, name=None, dtype=None, dynamic=False, **kwargs):
        for k in kwargs:
            if k not in _ALLOWED_KWARGS:
                raise TypeError(f"Keyword argument not understood: {k}")
        self._trainable = trainable
        self.built = False
        self.input_spec = None
        self.supports_masking = False
        self.stateful = False
        self._dynamic = dynamic
        self._dtype = as_dtype(dtype).base_dtype.name if dtype is not None else None
        self._name = name or K.unique_object_name(to_snake_case(type(self).__name__), zero_based=True)
        self._trainable_weights: list = []
        self._non_trainable_weights: list = []
        self._updates: list = []
        self._losses: list = []
        self._inbound_nodes: list = []
        self._outbound_nodes: list = []
        self._activity_regularizer = regularizers.get(kwargs.get("activity_regularizer"))
        self._initial_weights = kwargs.get("weights")
        if "input_shape" in kwargs or "batch_input_shape" in kwargs:
            if "batch_input_shape" in kwargs:
                batch_input_shape = tuple(kwargs["batch_input_shape"])
            else:
                batch_input_shape = (kwargs.get("batch_size"),) + tuple(kwargs["input_shape"])
            self._batch_input_shape = batch_input_shape

    # -- sublayer tracking --------------------------------------------------------------------
    def __setattr__(self, name, value):
        if not name.startswith("_") or name == "_layers":
            for candidate in nest.flatten(value) if isinstance(value, (list, tuple, dict)) else [value]:
                if isinstance(candidate, Layer) and candidate is not self:
                    tracked = self.__dict__.setdefault("_layers", [])
                    if not any(candidate is t for t in tracked):
                        tracked.append(candidate)
        object.__setattr__(self, name, value)

    def _sublayers(self) -> list:
        return list(self.__dict__.get("_layers", []))

    # -- identity ---------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self):
        return self._dtype

    @property
    def dynamic(self) -> bool:
        return self._dynamic

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value) -> None:
        self._trainable = bool(value)
        for layer in self._sublayers():
            layer.trainable = value

    @property
    def activity_regularizer(self):
        return self._activity_regularizer

    @activity_regularizer.setter
    def activity_regularizer(self, value):
        self._activity_regularizer = value

    # -- weights ----------------------------------------------------------------------------------
    @staticmethod
    def _unique(values: list) -> list:
        seen, out = set(), []
        for v in values:
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        return out

    @property
    def trainable_weights(self) -> list:
        if not self.trainable:
            return []
        return self._unique(self._trainable_weights + [w for layer in self._sublayers()
                                                       for w in layer.trainable_weights])

    @property
    def non_trainable_weights(self) -> list:
        nested = [w for layer in self._sublayers() for w in layer.non_trainable_weights]
        if self.trainable:
            return self._unique(self._non_trainable_weights + nested)
        nested_trainable = [w for layer in self._sublayers() for w in layer.weights]
        return self._unique(self._trainable_weights + self._non_trainable_weights + nested_trainable + nested)

    @property
    def weights(self) -> list:
        """trainable_weights + non_trainable_weights."""
        return self._unique(self.trainable_weights + self.non_trainable_weights)

    variables = weights
    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    def add_weight(self, name=None, shape=None, dtype=None, initializer=None, regularizer=None, trainable=None,
                   constraint=None, partitioner=None, use_resource=None, synchronization=None, aggregation=None,
                   **kwargs):
        """A variable `name` of `shape` made under the layer's name scope ("dense/kernel:0"),
        initialised by `initializer` (a name, config or callable; glorot_uniform for floats, zeros
        for ints and bools), its `regularizer` penalty added to the layer's losses; `synchronization`
        and `aggregation` say how a tf.distribute strategy keeps its copies (ON_READ: not
        trainable, each replica updates its own)."""
        if partitioner is not None:
            raise ValueError("Keras layers do not support `partitioner` in graph mode here; use tf.get_variable.")
        dtype = as_dtype(dtype or self.dtype or K.floatx()).base_dtype
        shape = tuple(TensorShape(shape).as_list()) if shape is not None else ()
        initializer = initializers.get(initializer)
        if initializer is None:
            if dtype.is_floating:
                initializer = initializers.GlorotUniform()
            elif dtype.is_integer or dtype.is_bool or dtype.is_unsigned:
                initializer = initializers.Zeros()
            else:
                raise ValueError(f"An initializer for variable {name} of type {dtype.name} is required for layer "
                                 f"{self.name}")
        trainable = synchronization != VariableSynchronization.ON_READ if trainable is None else bool(trainable)
        variable = Variable(lambda: initializer(shape, dtype=dtype), name=name, dtype=dtype, trainable=trainable,
                            constraint=constraints.get(constraint), synchronization=synchronization,
                            aggregation=aggregation)
        K.track_variable(variable)
        if regularizer is not None:
            with K.name_scope(f"{name}/Regularizer"):
                self.add_loss(regularizers.get(regularizer)(variable))
        (self._trainable_weights if trainable else self._non_trainable_weights).append(variable)
        return variable

    def get_weights(self) -> list:
        """The weights' values (numpy arrays), read through backend.get_session()."""
        return K.batch_get_value(self.weights)

    def set_weights(self, weights) -> None:
        """Sets the weights from numpy arrays, in the order of `weights`."""
        params = self.weights
        if len(params) != len(weights):
            raise ValueError(f'You called `set_weights(weights)` on layer "{self.name}" with a weight list of length '
                             f"{len(weights)}, but the layer was expecting {len(params)} weights. Provided weights: "
                             f"{str(weights)[:50]}...")
        tuples = []
        for p, w in zip(params, weights):
            w = np.asarray(w)
            if tuple(p.shape.as_list()) != w.shape:
                raise ValueError(f"Layer weight shape {tuple(p.shape.as_list())} not compatible with provided weight "
                                 f"shape {w.shape}")
            tuples.append((p, w))
        K.batch_set_value(tuples)

    def count_params(self) -> int:
        """The number of scalars in the weights (the layer must be built)."""
        if not self.built:
            if type(self).build is Layer.build:
                self.built = True
            else:
                raise ValueError(f"You tried to call `count_params` on {self.name}, but the layer isn't built. You "
                                 "can build it manually via: `" + self.name + ".build(batch_input_shape)`.")
        return int(sum(np.prod(w.shape.as_list()) for w in self.weights))

    # -- losses and updates -----------------------------------------------------------------------
    @property
    def losses(self) -> list:
        """Weight-regularization and activity-regularization losses of this layer and its sublayers."""
        return self._unique(self._losses + [loss for layer in self._sublayers() for loss in layer.losses])

    @property
    def updates(self) -> list:
        if not self.trainable and not self.stateful:
            return []
        return self._unique(self._updates + [u for layer in self._sublayers() for u in layer.updates])

    def add_loss(self, losses, inputs=None) -> None:
        """Adds loss tensors (or zero-argument callables). A loss added inside `call` or with
        `inputs` is conditional on the call's inputs (get_losses_for(inputs)); one added elsewhere
        (a weight regularizer in build) is unconditional (get_losses_for(None))."""
        conditional = inputs is not None or _in_layer_call()
        for loss in nest.flatten(losses):
            if loss is None:
                continue
            if callable(loss) and not isinstance(loss, Tensor):
                loss = loss()
            loss = convert_to_tensor(loss) if not isinstance(loss, Tensor) else loss
            self._losses.append(loss)
            _CONDITIONAL[loss] = conditional

    def add_update(self, updates, inputs=None) -> None:
        """Adds update ops (run by the training loop, or through `layer.updates`); those added in
        `call` or with `inputs` are conditional on the inputs, as add_loss's."""
        conditional = inputs is not None or _in_layer_call()
        for u in nest.flatten(updates):
            u = u() if callable(u) and not hasattr(u, "op") else u
            self._updates.append(u)
            _CONDITIONAL[u] = conditional

    def get_losses_for(self, inputs) -> list:
        """The unconditional losses (inputs None), or the conditional ones computed from `inputs`."""
        return _for_inputs(self.losses, inputs)

    def get_updates_for(self, inputs) -> list:
        """The unconditional updates (inputs None), or the conditional ones computed from `inputs`."""
        return _for_inputs(self.updates, inputs)

    # -- the call ---------------------------------------------------------------------------------
    def build(self, input_shape) -> None:
        """Creates the weights; `input_shape` is a TensorShape (a list of them for several inputs)."""
        self.built = True

    def call(self, inputs, **kwargs):
        return inputs

    def compute_output_shape(self, input_shape):
        """The output shape for `input_shape`. Layers with weights override it (TF 1.15 raises
        NotImplementedError for them in graph mode); for a layer without weights it is inferred
        by applying `call` to placeholders of that shape in a scratch graph."""
        if self.weights:
            raise NotImplementedError(f"Layer {type(self).__name__} has weights, so its output shape cannot be "
                                      "inferred in a scratch graph: implement `compute_output_shape`.")
        return infer_output_shape(self.call, input_shape)

    def compute_mask(self, inputs, mask=None):
        """The output mask: the input mask passed on if the layer supports masking, else None."""
        if not self.supports_masking:
            if any(m is not None for m in nest.flatten(mask)):
                raise TypeError(f"Layer {self.name} does not support masking, but was passed an input_mask: {mask}")
            return None
        return mask

    def _call_accepts(self, argument: str) -> bool:
        parameters = inspect.signature(self.call).parameters
        return argument in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())

    def _maybe_build(self, inputs) -> None:
        if self.built:
            return
        if self._dtype is None:
            first = nest.flatten(inputs)[0]
            self._dtype = first.dtype.base_dtype.name if first.dtype.is_floating else K.floatx()
        input_shapes = nest.map_structure(lambda x: x.shape, inputs)
        self.build(input_shapes[0] if isinstance(input_shapes, list) and len(input_shapes) == 1 and
                   not isinstance(inputs, list) else input_shapes)
        self.built = True
        if self._initial_weights is not None:
            self.set_weights(self._initial_weights)
            self._initial_weights = None

    def __call__(self, inputs, *args, **kwargs):
        """Builds the layer on its first call (under the name scope of the call), checks the
        input spec, applies `call` and records the call as a Node when the inputs are Keras
        tensors. Input masks are passed to `call` when it takes `mask`."""
        inputs = nest.map_structure(lambda x: x if isinstance(x, (Tensor, SparseTensor))
                                    or hasattr(x, "_as_graph_element") else convert_to_tensor(x), inputs)
        flat_inputs = nest.flatten(inputs)
        if self.input_spec is not None:
            _check_input_spec(self.input_spec, inputs, self.name)
        input_masks = kwargs.get("mask")
        if input_masks is None:
            masks = [K.keras_mask(x) for x in flat_inputs]
            if any(m is not None for m in masks):
                input_masks = masks[0] if len(masks) == 1 and not isinstance(inputs, (list, tuple)) else masks
                if self._call_accepts("mask"):
                    kwargs["mask"] = input_masks
        graph = flat_inputs[0].graph if flat_inputs and hasattr(flat_inputs[0], "graph") else get_default_graph()
        with graph.as_default(), K.name_scope(self.name):
            if not self.built:
                self._maybe_build(inputs)
                if self.input_spec is not None:   # build may tighten it (Dense fixes the last axis)
                    _check_input_spec(self.input_spec, inputs, self.name)
            with _layer_call():
                outputs = self.call(inputs, *args, **kwargs)
            if outputs is None:
                raise ValueError(f"A layer's `call` method should return a Tensor or a list of Tensors, not None "
                                 f"(layer: {self.name}).")
            input_ids = {id(x) for x in flat_inputs}
            outputs = nest.map_structure(lambda y: identity(y) if id(y) in input_ids else y, outputs)
            if self._activity_regularizer is not None:
                with K.name_scope("ActivityRegularizer"):
                    for y in nest.flatten(outputs):
                        loss = self._activity_regularizer(y)
                        batch = K.cast(K.shape(y)[0], loss.dtype)
                        self.add_loss(loss / batch, inputs=inputs)
            self._set_masks(inputs, outputs, input_masks)
        if not _in_network_call() and all(K.keras_history(x) is not None for x in flat_inputs) and flat_inputs:
            self._add_inbound_node(inputs, outputs, kwargs)
        return outputs

    def _set_masks(self, inputs, outputs, previous_mask) -> None:
        flat_outputs = nest.flatten(outputs)
        if not self.supports_masking and type(self).compute_mask is Layer.compute_mask:
            return   # TF 1.15 drops the mask silently at a layer that does not support masking
        if all(K.keras_mask(y) is not None for y in flat_outputs):
            return   # `call` set the output masks itself
        masks = self.compute_mask(inputs, previous_mask)
        flat_masks = [masks] * len(flat_outputs) if not isinstance(masks, (list, tuple)) else list(masks)
        for y, m in zip(flat_outputs, flat_masks):
            K.set_keras_mask(y, m)

    def _add_inbound_node(self, inputs, outputs, arguments) -> None:
        histories = [K.keras_history(x) for x in nest.flatten(inputs)]
        # the inputs as the call took them: a list, a dict by key (as a DenseFeatures layer takes), else one tensor
        called = list(nest.flatten(inputs)) if isinstance(inputs, (list, tuple)) else \
            inputs if isinstance(inputs, dict) else [inputs]
        node = Node(self, [h[0] for h in histories], [h[1] for h in histories], [h[2] for h in histories], called,
                    list(nest.flatten(outputs)) if isinstance(outputs, (list, tuple)) else [outputs],
                    {k: v for k, v in arguments.items() if k != "mask"})
        node_index = len(self._inbound_nodes) - 1
        for i, y in enumerate(node.output_tensors):
            K.set_keras_history(y, (self, node_index, i))

    # -- connectivity -----------------------------------------------------------------------------
    def _node_attribute(self, node_index: int, attr: str, what: str):
        if not self._inbound_nodes:
            raise RuntimeError(f"The layer has never been called and thus has no defined {what}.")
        if len(self._inbound_nodes) <= node_index:
            raise ValueError(f"Asked to get {what} at node {node_index}, but the layer has only "
                             f"{len(self._inbound_nodes)} inbound nodes.")
        return _unpack_single(getattr(self._inbound_nodes[node_index], attr))

    def _single_node_attribute(self, attr: str, what: str):
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name} is not connected, no {what} to return.")
        if len(self._inbound_nodes) > 1:
            raise AttributeError(f'Layer {self.name} has multiple inbound nodes, hence the notion of "layer {what}" '
                                 f"is ill-defined. Use `get_{what}_at(node_index)` instead.")
        return self._node_attribute(0, attr, what)

    @property
    def input(self):
        """The input tensor(s) of the layer's only call."""
        return self._single_node_attribute("input_tensors", "input")

    @property
    def output(self):
        """The output tensor(s) of the layer's only call."""
        return self._single_node_attribute("output_tensors", "output")

    def _shape_of_all_nodes(self, attr: str, what: str):
        if not self._inbound_nodes:
            raise AttributeError(f"The layer has never been called and thus has no defined {what} shape.")
        shapes = [getattr(node, attr) for node in self._inbound_nodes]
        if all(s == shapes[0] for s in shapes):
            return _unpack_single(shapes[0])
        raise AttributeError(f'The layer "{self.name}" has multiple inbound nodes, with different {what} shapes. '
                             f'Hence the notion of "{what} shape" is ill-defined for the layer. Use '
                             f"`get_{what}_shape_at(node_index)` instead.")

    @property
    def input_shape(self):
        return self._shape_of_all_nodes("input_shapes", "input")

    @property
    def output_shape(self):
        return self._shape_of_all_nodes("output_shapes", "output")

    def get_input_at(self, node_index):
        return self._node_attribute(node_index, "input_tensors", "input")

    def get_output_at(self, node_index):
        return self._node_attribute(node_index, "output_tensors", "output")

    def get_input_shape_at(self, node_index):
        return self._node_attribute(node_index, "input_shapes", "input shape")

    def get_output_shape_at(self, node_index):
        return self._node_attribute(node_index, "output_shapes", "output shape")

    @property
    def inbound_nodes(self) -> list:
        return self._inbound_nodes

    @property
    def outbound_nodes(self) -> list:
        return self._outbound_nodes

    # -- config -----------------------------------------------------------------------------------
    def get_config(self) -> dict:
        """name, trainable, dtype (and batch_input_shape when given): what from_config rebuilds from."""
        config = {"name": self.name, "trainable": self.trainable}
        if hasattr(self, "_batch_input_shape"):
            config["batch_input_shape"] = self._batch_input_shape
        config["dtype"] = self.dtype
        if self.dynamic:
            config["dynamic"] = True
        if type(self).get_config is Layer.get_config:
            parameters = inspect.signature(type(self).__init__).parameters.values()
            extra = [p.name for p in parameters if p.name not in ("self", "dynamic", *config)
                     and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            if extra:   # the config could not rebuild the layer: TF says so rather than save a wrong one
                raise NotImplementedError("Layers with arguments in `__init__` must override `get_config`.")
        return config

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)


@tf_export("keras.layers.serialize")
def serialize(layer) -> dict:
    """{"class_name": "Dense", "config": layer.get_config()}."""
    return {"class_name": type(layer).__name__, "config": layer.get_config()}


@tf_export("keras.layers.deserialize")
def deserialize(config, custom_objects=None):
    """The layer (or model) a {"class_name", "config"} dict describes: custom objects first, then
    Keras's layer classes (tf.keras.layers and the models)."""

    class _Lookup(dict):
        """Layer classes by name: those defined so far, then tf.keras.layers and tf.keras (Model,
        Sequential), whose lazy namespaces import the defining module on first use."""

        def __contains__(self, name):
            return name in _LAYER_CLASSES or any(name in dir(ns) for ns in (layers_namespace, keras_namespace))

        def __getitem__(self, name):
            if name in _LAYER_CLASSES:
                return _LAYER_CLASSES[name]
            return getattr(layers_namespace if name in dir(layers_namespace) else keras_namespace, name)

    return deserialize_keras_object(config, module_objects=_Lookup(), custom_objects=custom_objects,
                                    printable_module_name="layer")
