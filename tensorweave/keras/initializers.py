"""tf.keras.initializers: TF 1.15's Keras initializers are the tf.initializers classes (Keras
names, and stddev/range 0.05 for RandomNormal, RandomUniform and TruncatedNormal), resolved by
name or config with `get` / `serialize` / `deserialize`."""
from __future__ import annotations

from tensorweave import _api
from tensorweave.framework import dtypes
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.state import initializers as _init
from tensorweave.ops.state.initializers import (Constant, GlorotNormal, GlorotUniform, Identity, Initializer, Ones,
                                                Orthogonal, VarianceScaling, Zeros, he_normal, he_uniform,
                                                lecun_normal, lecun_uniform)
from tensorweave.keras.utils.generic_utils import deserialize_keras_object, serialize_keras_object

__getattr__, __dir__ = _api.lazy_attributes(__name__)

tf_export("keras.initializers.Initializer")(Initializer)
tf_export("keras.initializers.Zeros", "keras.initializers.zeros")(Zeros)
tf_export("keras.initializers.Ones", "keras.initializers.ones")(Ones)
tf_export("keras.initializers.Constant", "keras.initializers.constant")(Constant)
tf_export("keras.initializers.VarianceScaling")(VarianceScaling)
tf_export("keras.initializers.Orthogonal", "keras.initializers.orthogonal")(Orthogonal)
tf_export("keras.initializers.Identity", "keras.initializers.identity")(Identity)
tf_export("keras.initializers.GlorotUniform", "keras.initializers.glorot_uniform")(GlorotUniform)
tf_export("keras.initializers.GlorotNormal", "keras.initializers.glorot_normal")(GlorotNormal)
tf_export("keras.initializers.he_normal")(he_normal)
tf_export("keras.initializers.he_uniform")(he_uniform)
tf_export("keras.initializers.lecun_normal")(lecun_normal)
tf_export("keras.initializers.lecun_uniform")(lecun_uniform)


@tf_export("keras.initializers.RandomNormal", "keras.initializers.random_normal", "keras.initializers.normal")
class RandomNormal(_init.RandomNormal):
    """keras.initializers.RandomNormal(mean=0.0, stddev=0.05, seed=None)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None, dtype=dtypes.float32):
        super().__init__(mean=mean, stddev=stddev, seed=seed, dtype=dtype)


@tf_export("keras.initializers.RandomUniform", "keras.initializers.random_uniform", "keras.initializers.uniform")
class RandomUniform(_init.RandomUniform):
    """keras.initializers.RandomUniform(minval=-0.05, maxval=0.05, seed=None)."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None, dtype=dtypes.float32):
        super().__init__(minval=minval, maxval=maxval, seed=seed, dtype=dtype)


@tf_export("keras.initializers.TruncatedNormal", "keras.initializers.truncated_normal")
class TruncatedNormal(_init.TruncatedNormal):
    """keras.initializers.TruncatedNormal(mean=0.0, stddev=0.05, seed=None)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None, dtype=dtypes.float32):
        super().__init__(mean=mean, stddev=stddev, seed=seed, dtype=dtype)


# The names Keras resolves (class names and their snake_case aliases).
_OBJECTS = {cls.__name__: cls for cls in (Zeros, Ones, Constant, VarianceScaling, Orthogonal, Identity,
                                          GlorotUniform, GlorotNormal, RandomNormal, RandomUniform,
                                          TruncatedNormal)}
_OBJECTS.update(zeros=Zeros, zero=Zeros, ones=Ones, one=Ones, constant=Constant, orthogonal=Orthogonal,
                identity=Identity, glorot_uniform=GlorotUniform, glorot_normal=GlorotNormal,
                random_normal=RandomNormal, normal=RandomNormal, random_uniform=RandomUniform,
                uniform=RandomUniform, truncated_normal=TruncatedNormal)
_FUNCTIONS = {"he_normal": he_normal, "he_uniform": he_uniform, "lecun_normal": lecun_normal,
              "lecun_uniform": lecun_uniform}


@tf_export("keras.initializers.serialize")
def serialize(initializer):
    """{"class_name": "GlorotUniform", "config": {"seed": None, "dtype": "float32"}}."""
    return serialize_keras_object(initializer)


@tf_export("keras.initializers.deserialize")
def deserialize(config, custom_objects=None):
    return deserialize_keras_object(config, module_objects=_OBJECTS, custom_objects=custom_objects,
                                    printable_module_name="initializer")


@tf_export("keras.initializers.get")
def get(identifier):
    """An initializer from None, a name ("glorot_uniform", "he_normal", "Zeros"), a config dict
    or a callable (returned as is)."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier in _FUNCTIONS:
            return _FUNCTIONS[identifier]()
        return deserialize({"class_name": identifier, "config": {}})
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier}")
