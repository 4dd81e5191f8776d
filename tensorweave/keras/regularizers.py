"""tf.keras.regularizers: L1L2 (and l1, l2, l1_l2), a weight's penalty added to the layer's
losses, with `get` / `serialize` / `deserialize`."""
from __future__ import annotations

from tensorweave import _api
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K
from tensorweave.keras.utils.generic_utils import deserialize_keras_object, serialize_keras_object

__getattr__, __dir__ = _api.lazy_attributes(__name__)


@tf_export("keras.regularizers.Regularizer")
class Regularizer:
    """Base class: `__call__(x)` returns a scalar penalty."""

    def __call__(self, x):
        return 0.0

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@tf_export("keras.regularizers.L1L2")
class L1L2(Regularizer):
    """l1 * sum(|x|) + l2 * sum(x^2) (no 1/2, unlike tf.nn.l2_loss)."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = K.cast_to_floatx(l1)
        self.l2 = K.cast_to_floatx(l2)

    def __call__(self, x):
        if not self.l1 and not self.l2:
            return K.constant(0.0)
        regularization = 0.0
        if self.l1:
            regularization += self.l1 * K.sum(K.abs(x))
        if self.l2:
            regularization += self.l2 * K.sum(K.square(x))
        return regularization

    def get_config(self):
        return {"l1": float(self.l1), "l2": float(self.l2)}


@tf_export("keras.regularizers.l1")
def l1(l=0.01):  # noqa: E741 (Keras's argument name)
    return L1L2(l1=l)


@tf_export("keras.regularizers.l2")
def l2(l=0.01):  # noqa: E741
    return L1L2(l2=l)


@tf_export("keras.regularizers.l1_l2")
def l1_l2(l1=0.01, l2=0.01):
    return L1L2(l1=l1, l2=l2)


_OBJECTS = {"Regularizer": Regularizer, "L1L2": L1L2, "l1": l1, "l2": l2, "l1_l2": l1_l2}


@tf_export("keras.regularizers.serialize")
def serialize(regularizer):
    return serialize_keras_object(regularizer)


@tf_export("keras.regularizers.deserialize")
def deserialize(config, custom_objects=None):
    return deserialize_keras_object(config, module_objects=_OBJECTS, custom_objects=custom_objects,
                                    printable_module_name="regularizer")


@tf_export("keras.regularizers.get")
def get(identifier):
    """None, a config dict, a name ("l2": l2()), or a callable."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        found = deserialize(identifier)
        return found() if not isinstance(found, Regularizer) else found
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier: {identifier}")
