"""tf.keras.Input and tf.keras.layers.InputLayer: the placeholder a functional model starts from
(named "input_1", "input_2", ... per graph), carrying the Keras history of an InputLayer."""
from __future__ import annotations

from tensorweave.framework.dtypes import as_dtype
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K
from tensorweave.keras.engine.base_layer import Layer, Node


@tf_export("keras.layers.InputLayer")
class InputLayer(Layer):
    """InputLayer(input_shape=None, batch_size=None, dtype=None, input_tensor=None, sparse=False,
    name=None): makes a placeholder of [batch_size] + input_shape (or adopts `input_tensor`)."""

    def __init__(self, input_shape=None, batch_size=None, dtype=None, input_tensor=None, sparse=False, name=None,
                 ragged=False, **kwargs):
        if "batch_input_shape" in kwargs:
            batch_input_shape = kwargs.pop("batch_input_shape")
            if input_shape and batch_input_shape:
                raise ValueError("Only provide the input_shape OR batch_input_shape argument to InputLayer, not both "
                                 "at the same time.")
            if batch_input_shape is not None:
                batch_size, input_shape = batch_input_shape[0], tuple(batch_input_shape[1:])
        if kwargs:
            raise ValueError(f"Unrecognized keyword arguments: {sorted(kwargs)}")
        if sparse or ragged:
            raise ValueError("keras.layers.InputLayer: sparse and ragged inputs are not supported; use dense inputs.")
        name = name or f"input_{K.get_uid('input')}"
        if not dtype:
            dtype = K.floatx() if input_tensor is None else K.dtype(input_tensor)
        elif input_tensor is not None and K.dtype(input_tensor) != as_dtype(dtype).name:
            raise ValueError(f"`input_tensor.dtype` differs from `dtype`: {K.dtype(input_tensor)} vs. {dtype}")
        super().__init__(dtype=dtype, name=name)
        self.built = True
        self.sparse, self.ragged = False, False
        self.batch_size = batch_size
        self.supports_masking = True
        if isinstance(input_shape, TensorShape):
            input_shape = tuple(input_shape.as_list())
        elif isinstance(input_shape, int):
            input_shape = (input_shape,)
        if input_tensor is None:
            batch_input_shape = (batch_size,) + tuple(input_shape) if input_shape is not None else None
            input_tensor = K.placeholder(shape=batch_input_shape, dtype=dtype, name=self.name)
            self.is_placeholder = True
            self._batch_input_shape = batch_input_shape
        else:
            self.is_placeholder = False
            self._batch_input_shape = K.int_shape(input_tensor)
        K.set_keras_history(input_tensor, (self, 0, 0))
        Node(self, inbound_layers=[], node_indices=[], tensor_indices=[], input_tensors=[input_tensor],
             output_tensors=[input_tensor])

    @property
    def output_shape(self):
        """[(None, 4)]: an input layer reports the list of its one output's shape, as Keras prints it."""
        return list(self._inbound_nodes[0].output_shapes)

    def get_config(self) -> dict:
        return {"batch_input_shape": self._batch_input_shape, "dtype": self.dtype, "sparse": self.sparse,
                "ragged": self.ragged, "name": self.name}


@tf_export("keras.Input", "keras.layers.Input")
def Input(shape=None, batch_size=None, name=None, dtype=None, sparse=False, tensor=None, ragged=False,
          **kwargs):
    """tf.keras.Input(shape=None, batch_size=None, name=None, dtype=None, sparse=False,
    tensor=None, batch_shape=...): a Keras tensor (a placeholder of [batch_size] + shape) that a
    functional Model takes as an input."""
    batch_shape = kwargs.pop("batch_shape", None)
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {sorted(kwargs)}")
    if shape is not None and batch_shape is not None:
        raise ValueError("Only provide the `shape` OR `batch_shape` argument to Input, not both at the same time.")
    if batch_shape is None and shape is None and tensor is None:
        raise ValueError("Please provide to Input either a `shape` or a `tensor` argument. Note that `shape` does "
                         "not include the batch dimension.")
    if batch_shape is not None:
        layer = InputLayer(batch_input_shape=tuple(batch_shape), name=name, dtype=dtype, sparse=sparse,
                           input_tensor=tensor, ragged=ragged)
    else:
        layer = InputLayer(input_shape=shape, batch_size=batch_size, name=name, dtype=dtype, sparse=sparse,
                           input_tensor=tensor, ragged=ragged)
    return layer._inbound_nodes[0].output_tensors[0]
