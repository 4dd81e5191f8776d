"""tf.keras.activations: the activation functions Keras layers take by name, and `get` /
`serialize` / `deserialize` (a function's name and back)."""
from __future__ import annotations

from tensorweave import _api
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K
from tensorweave.keras.utils.generic_utils import deserialize_keras_object
from tensorweave.ops.math import unary
from tensorweave.ops.nn import activations as nn

__getattr__, __dir__ = _api.lazy_attributes(__name__)


@tf_export("keras.activations.softmax")
def softmax(x, axis=-1):
    """Softmax over `axis`; a 1-D input is an error (as in Keras)."""
    if x.shape.ndims == 1:
        raise ValueError(f"Cannot apply softmax to a tensor that is 1D. Received input: {x}")
    return nn.softmax(x, axis=axis)


@tf_export("keras.activations.elu")
def elu(x, alpha=1.0):
    return K.elu(x, alpha)


@tf_export("keras.activations.selu")
def selu(x):
    return nn.selu(x)


@tf_export("keras.activations.softplus")
def softplus(x):
    return nn.softplus(x)


@tf_export("keras.activations.softsign")
def softsign(x):
    return nn.softsign(x)


@tf_export("keras.activations.relu")
def relu(x, alpha=0.0, max_value=None, threshold=0):
    return K.relu(x, alpha=alpha, max_value=max_value, threshold=threshold)


@tf_export("keras.activations.tanh")
def tanh(x):
    return unary.tanh(x)


@tf_export("keras.activations.sigmoid")
def sigmoid(x):
    return unary.sigmoid(x)


@tf_export("keras.activations.exponential")
def exponential(x):
    return unary.exp(x)


@tf_export("keras.activations.hard_sigmoid")
def hard_sigmoid(x):
    return K.hard_sigmoid(x)


@tf_export("keras.activations.linear")
def linear(x):
    return x


_OBJECTS = {f.__name__: f for f in (softmax, elu, selu, softplus, softsign, relu, tanh, sigmoid, exponential,
                                    hard_sigmoid, linear)}


@tf_export("keras.activations.serialize")
def serialize(activation):
    """An activation function's name ("relu")."""
    return activation.__name__


@tf_export("keras.activations.deserialize")
def deserialize(name, custom_objects=None):
    return deserialize_keras_object(name, module_objects=_OBJECTS, custom_objects=custom_objects,
                                    printable_module_name="activation function")


@tf_export("keras.activations.get")
def get(identifier):
    """None -> linear; a name -> that function; a callable as is."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret activation function identifier: {identifier}")
