"""tf.layers.Layer and tf.layers.InputSpec: the base every TF1 layer (and RNN cell) builds on.

A layer owns a variable scope chosen on its first call ("dense", "dense_1"), creates its
variables there once (`build`), and reuses them on every later call.
"""
from __future__ import annotations

import re

import numpy as np

from tensorweave.framework import nest
from tensorweave.framework.api import GraphKeys, add_to_collection, get_collection, name_scope
from tensorweave.framework.dtypes import as_dtype
from tensorweave.framework.graph import Tensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import shape
from tensorweave.ops.control_flow.cond import cond
from tensorweave.ops.math.cast import cast
from tensorweave.ops.state.variable_scope import get_variable, variable_scope
from tensorweave.ops.state.variables import trainable_variables


def snake_case(name: str) -> str:
    """A class name as TF names its layers' scopes: "BasicLSTMCell" -> "basic_lstm_cell"."""
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()


def normalize_tuple(value, n: int, name: str) -> tuple:
    """An int or n ints as a tuple of n ints (kernel sizes, strides, dilation rates)."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    try:
        value = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: {value}") from None
    if len(value) != n:
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: {value}")
    return value


def check_data_format(fmt: str) -> str:
    """'channels_last' or 'channels_first' (the layers' spelling of NHWC / NCHW)."""
    fmt = (fmt or "channels_last").lower()
    if fmt not in ("channels_last", "channels_first"):
        raise ValueError(f"The `data_format` argument must be one of 'channels_first', 'channels_last'. "
                         f"Received: {fmt}")
    return fmt


def check_padding(padding: str) -> str:
    p = padding.upper()
    if p not in ("SAME", "VALID"):
        raise ValueError(f"The `padding` argument must be one of 'valid', 'same'. Received: {padding}")
    return p


def smart_cond(pred, true_fn, false_fn):
    """Python bools pick a branch at build time; tensors build a tf.cond."""
    if isinstance(pred, (bool, np.bool_, int, np.integer)):
        return true_fn() if pred else false_fn()
    return cond(pred, true_fn, false_fn)


@tf_export("layers.InputSpec")
class InputSpec:
    """tf.layers.InputSpec(dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None,
    axes=None): what a layer accepts, checked on every call: the rank (exact, at most, at
    least), the dtype, the shape (None for any size) and fixed sizes of some axes ({axis: size})."""

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None, axes=None):
        self.dtype = as_dtype(dtype).name if dtype is not None else None
        self.shape = tuple(shape) if shape is not None else None
        self.ndim = len(shape) if shape is not None else ndim
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.axes = dict(axes or {})

    def __repr__(self) -> str:
        parts = [f"{k}={v}" for k, v in (("dtype", self.dtype), ("shape", self.shape), ("ndim", self.ndim),
                                         ("max_ndim", self.max_ndim), ("min_ndim", self.min_ndim),
                                         ("axes", self.axes or None)) if v is not None]
        return f"InputSpec({', '.join(parts)})"


def _check_input_spec(specs, inputs, layer_name: str) -> None:
    specs = nest.flatten(specs)
    inputs = nest.flatten(inputs)
    if len(inputs) != len(specs):
        raise ValueError(f"Layer {layer_name} expects {len(specs)} inputs, but it received {len(inputs)} "
                         "input tensors.")
    for i, (spec, x) in enumerate(zip(specs, inputs)):
        if spec is None:
            continue
        rank = x.shape.ndims
        what = f"Input {i} of layer {layer_name} is incompatible with the layer:"
        if spec.ndim is not None and rank is not None and rank != spec.ndim:
            raise ValueError(f"{what} expected ndim={spec.ndim}, found ndim={rank}. Full shape received: "
                             f"{x.shape.as_list()}")
        if spec.max_ndim is not None and rank is not None and rank > spec.max_ndim:
            raise ValueError(f"{what} expected max_ndim={spec.max_ndim}, found ndim={rank}")
        if spec.min_ndim is not None and rank is not None and rank < spec.min_ndim:
            raise ValueError(f"{what} : expected min_ndim={spec.min_ndim}, found ndim={rank}. Full shape "
                             f"received: {x.shape.as_list()}")
        if spec.dtype is not None and x.dtype.base_dtype.name != spec.dtype:
            raise ValueError(f"{what} expected dtype={spec.dtype}, found dtype={x.dtype.name}")
        if rank is not None:
            for axis, size in spec.axes.items():
                dim = x.shape[int(axis)].value
                if size is not None and dim not in (size, None):
                    raise ValueError(f"{what} expected axis {axis} of input shape to have value {size} but "
                                     f"received input with shape {x.shape.as_list()}")
            if spec.shape is not None:
                for want, got in zip(spec.shape, x.shape.as_list()):
                    if want is not None and got is not None and want != got:
                        raise ValueError(f"{what} expected shape={spec.shape}, found shape={x.shape.as_list()}")


@tf_export("layers.Layer")
class Layer:
    """tf.layers.Layer(trainable=True, name=None, dtype=None, **kwargs): the base layer. A
    subclass creates its variables in `build(input_shape)` with `add_weight` and computes in
    `call(inputs, ...)`; calling the layer enters its variable scope (picked on the first call,
    "<snake_case class name>" made unique) and checks `input_spec`."""

    def __init__(self, trainable: bool = True, name=None, dtype=None, _reuse=None, _scope=None, **kwargs):
        allowed = {"activity_regularizer", "input_shape", "batch_input_shape", "batch_size", "weights",
                   "_keras_style"}
        for k in kwargs:
            if k not in allowed:
                raise TypeError(f"Keyword argument not understood: {k}")
        self.trainable = trainable
        self._name = name
        self._base_name = name or snake_case(type(self).__name__)
        self.dtype = as_dtype(dtype).base_dtype if dtype is not None else None
        self._reuse = _reuse
        self._scope = _scope
        self.built = False
        self.input_spec = None
        self._variables: list = []
        self._updates: list = []
        self._losses: list = []
        self.activity_regularizer = kwargs.get("activity_regularizer")

    @property
    def name(self) -> str:
        return self._scope.name if self._scope is not None else self._base_name

    @property
    def scope_name(self) -> str:
        if self._scope is None:
            raise ValueError(f"No name available for layer scope because the layer \"{self._base_name}\" has "
                             "not been used yet. The scope name is determined the first time the layer instance "
                             "is called. You must therefore call the layer before querying `scope_name`.")
        return self._scope.name

    @property
    def variables(self) -> list:
        return list(self._variables)

    weights = variables

    @property
    def trainable_variables(self) -> list:
        trainable = set(map(id, trainable_variables()))
        return [v for v in self._variables if id(v) in trainable]

    trainable_weights = trainable_variables

    @property
    def non_trainable_variables(self) -> list:
        trainable = set(map(id, self.trainable_variables))
        return [v for v in self._variables if id(v) not in trainable]

    non_trainable_weights = non_trainable_variables

    @property
    def updates(self) -> list:
        return list(self._updates)

    @property
    def losses(self) -> list:
        """This layer's weight-regularization and activity-regularization losses."""
        return list(self._losses)

    def add_update(self, updates, inputs=None) -> None:
        """Records update ops (run them through `layer.updates` or UPDATE_OPS)."""
        for u in nest.flatten(updates):
            self._updates.append(u)

    def add_loss(self, losses, inputs=None) -> None:
        """Records losses; they also go to the REGULARIZATION_LOSSES collection, as in TF1."""
        for loss in nest.flatten(losses):
            if loss is None:
                continue
            self._losses.append(loss)
            add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)

    def get_updates_for(self, inputs) -> list:
        return self.updates

    def get_losses_for(self, inputs) -> list:
        return self.losses

    def count_params(self) -> int:
        """The number of scalars in this layer's variables (it must be built)."""
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on {self.name}, but the layer isn't built.")
        return int(sum(np.prod(v.shape.as_list()) for v in self._variables))

    def add_weight(self, name: str, shape, dtype=None, initializer=None, regularizer=None, trainable: bool = True,
                   constraint=None, partitioner=None, use_resource=None, synchronization=None, aggregation=None,
                   getter=None):
        """A variable "<layer scope>/<name>" from get_variable (reused on later calls)."""
        before = len(get_collection(GraphKeys.REGULARIZATION_LOSSES))
        v = get_variable(name, shape=shape, dtype=dtype or self.dtype or "float32", initializer=initializer,
                         regularizer=regularizer, trainable=trainable and self.trainable, constraint=constraint,
                         partitioner=partitioner)
        self._losses.extend(get_collection(GraphKeys.REGULARIZATION_LOSSES)[before:])
        if v not in self._variables:
            self._variables.append(v)
        return v

    add_variable = add_weight

    def build(self, input_shape) -> None:
        self.built = True

    def call(self, inputs, **kwargs):
        return inputs

    def _enter_scope(self, scope=None):
        """The layer's variable scope: on the first call `scope` if given, else one named after the
        layer; every later call re-enters it (reusing its variables)."""
        if self._scope is None:
            if self._reuse:
                with variable_scope(scope if scope is not None else self._name or self._base_name) as captured:
                    self._scope = captured
            else:
                with variable_scope(scope if scope is not None else self._name,
                                    default_name=self._base_name) as captured:
                    self._scope = captured
        return variable_scope(self._scope, reuse=True if self.built else self._reuse, auxiliary_name_scope=False)

    def __call__(self, inputs, *args, **kwargs):
        """Builds the layer on its first call, then applies `call`; also `apply`."""
        scope = kwargs.pop("scope", None)
        inputs = nest.map_structure(lambda x: convert_to_tensor(x) if not isinstance(x, Tensor) else x, inputs) \
            if nest.is_sequence(inputs) else convert_to_tensor(inputs)
        with self._enter_scope(scope):
            with name_scope(self._scope.original_name_scope):
                if not self.built:
                    first = nest.flatten(inputs)[0]
                    if self.dtype is None:
                        self.dtype = first.dtype.base_dtype
                    if self.input_spec is not None:
                        _check_input_spec(self.input_spec, inputs, self.name)
                    input_shapes = nest.map_structure(lambda x: x.shape, inputs) if nest.is_sequence(inputs) \
                        else inputs.shape
                    self.build(input_shapes)
                    self.built = True
                if self.input_spec is not None:
                    _check_input_spec(self.input_spec, inputs, self.name)
                outputs = self.call(inputs, *args, **kwargs)
                if self.activity_regularizer is not None:
                    # TF divides by the batch size so that the strength does not depend on it
                    with name_scope("ActivityRegularizer"):
                        for output in nest.flatten(outputs):
                            loss = self.activity_regularizer(output)
                            loss = loss / cast(shape(output)[0], loss.dtype)
                            self.add_loss(loss)
        return outputs

    apply = __call__

    def get_config(self) -> dict:
        return {"name": self.name, "trainable": self.trainable,
                "dtype": self.dtype.name if self.dtype is not None else None}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)

    @property
    def graph(self):
        return self._variables[0].graph if self._variables else None
