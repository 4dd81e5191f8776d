"""tf.keras.constraints: projections applied to a weight after each optimizer update (MaxNorm,
NonNeg, UnitNorm, MinMaxNorm), with `get` / `serialize` / `deserialize`."""
from __future__ import annotations

from tensorweave import _api
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K
from tensorweave.keras.utils.generic_utils import deserialize_keras_object, serialize_keras_object

__getattr__, __dir__ = _api.lazy_attributes(__name__)


def _norms(w, axis):
    return K.sqrt(K.sum(K.square(w), axis=axis, keepdims=True))


@tf_export("keras.constraints.Constraint")
class Constraint:
    """Base class: `__call__(w)` returns the projected weight."""

    def __call__(self, w):
        return w

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@tf_export("keras.constraints.MaxNorm", "keras.constraints.max_norm")
class MaxNorm(Constraint):
    """Rescales each slice along `axis` whose L2 norm exceeds `max_value` down to it."""

    def __init__(self, max_value=2, axis=0):
        self.max_value, self.axis = max_value, axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        desired = K.clip(norms, 0, self.max_value)
        return w * (desired / (K.epsilon() + norms))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


@tf_export("keras.constraints.NonNeg", "keras.constraints.non_neg")
class NonNeg(Constraint):
    """Zeroes the negative entries."""

    def __call__(self, w):
        return w * K.cast(K.greater_equal(w, 0.0), K.floatx())


@tf_export("keras.constraints.UnitNorm", "keras.constraints.unit_norm")
class UnitNorm(Constraint):
    """Each slice along `axis` scaled to unit L2 norm."""

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        return w / (K.epsilon() + _norms(w, self.axis))

    def get_config(self):
        return {"axis": self.axis}


@tf_export("keras.constraints.MinMaxNorm", "keras.constraints.min_max_norm")
class MinMaxNorm(Constraint):
    """Norms along `axis` moved (at `rate`) into [min_value, max_value]."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        desired = self.rate * K.clip(norms, self.min_value, self.max_value) + (1 - self.rate) * norms
        return w * (desired / (K.epsilon() + norms))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate, "axis": self.axis}


_OBJECTS = {"Constraint": Constraint, "MaxNorm": MaxNorm, "NonNeg": NonNeg, "UnitNorm": UnitNorm,
            "MinMaxNorm": MinMaxNorm, "max_norm": MaxNorm, "non_neg": NonNeg, "unit_norm": UnitNorm,
            "min_max_norm": MinMaxNorm, "maxnorm": MaxNorm, "nonneg": NonNeg, "unitnorm": UnitNorm}


@tf_export("keras.constraints.serialize")
def serialize(constraint):
    return serialize_keras_object(constraint)


@tf_export("keras.constraints.deserialize")
def deserialize(config, custom_objects=None):
    return deserialize_keras_object(config, module_objects=_OBJECTS, custom_objects=custom_objects,
                                    printable_module_name="constraint")


@tf_export("keras.constraints.get")
def get(identifier):
    """None, a name ("max_norm"), a config dict or a callable."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        return deserialize({"class_name": identifier, "config": {}})
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret constraint identifier: {identifier}")
