"""Keras's object serialization: an object as {"class_name", "config"} and back, resolving names
through a module's objects and the custom objects in scope (keras.utils.generic_utils)."""
from __future__ import annotations

import inspect

from tensorweave.framework.tf_export import tf_export
from tensorweave.layers.base import snake_case

_GLOBAL_CUSTOM_OBJECTS: dict = {}


@tf_export("keras.utils.get_custom_objects")
def get_custom_objects() -> dict:
    """The global dict of custom objects (name -> class or function) deserialization looks in."""
    return _GLOBAL_CUSTOM_OBJECTS


@tf_export("keras.utils.CustomObjectScope")
class CustomObjectScope:
    """`with CustomObjectScope({"MyLayer": MyLayer}):` makes the names resolvable while inside."""

    def __init__(self, *args):
        self.custom_objects = args
        self.backup = None

    def __enter__(self):
        self.backup = dict(_GLOBAL_CUSTOM_OBJECTS)
        for objects in self.custom_objects:
            _GLOBAL_CUSTOM_OBJECTS.update(objects)
        return self

    def __exit__(self, *args):
        _GLOBAL_CUSTOM_OBJECTS.clear()
        _GLOBAL_CUSTOM_OBJECTS.update(self.backup)


@tf_export("keras.utils.custom_object_scope")
def custom_object_scope(*args) -> CustomObjectScope:
    return CustomObjectScope(*args)


def to_snake_case(name: str) -> str:
    """"Dense" -> "dense", "ActivityRegularization" -> "activity_regularization" (Keras's layer
    names: tf.layers' snake_case, with "private" before a leading underscore)."""
    snake = snake_case(name)
    return snake if snake[0] != "_" else "private" + snake


@tf_export("keras.utils.serialize_keras_object")
def serialize_keras_object(instance):
    """A class instance as {"class_name": ..., "config": instance.get_config()}; a function or
    class by its name; None as None."""
    if instance is None:
        return None
    if hasattr(instance, "get_config"):
        return {"class_name": type(instance).__name__, "config": instance.get_config()}
    if hasattr(instance, "__name__"):
        return instance.__name__
    raise ValueError(f"Cannot serialize {instance!r}: it has neither get_config nor a name")


@tf_export("keras.utils.deserialize_keras_object")
def deserialize_keras_object(identifier, module_objects=None, custom_objects=None,
                             printable_module_name: str = "object"):
    """The object a serialized `identifier` names: a {"class_name", "config"} dict is built with
    the class's from_config (or its constructor); a string is looked up (a function, or a class
    that is instantiated without arguments only by callers that want it)."""
    module_objects = {} if module_objects is None else module_objects
    custom_objects = custom_objects or {}

    def lookup(name):
        for table in (custom_objects, _GLOBAL_CUSTOM_OBJECTS, module_objects):
            if name in table:
                return table[name]
        raise ValueError(f"Unknown {printable_module_name}: {name}")

    if isinstance(identifier, dict):
        if "class_name" not in identifier or "config" not in identifier:
            raise ValueError(f"Improper config format: {identifier}")
        cls = lookup(identifier["class_name"])
        config = identifier["config"]
        if hasattr(cls, "from_config"):
            if "custom_objects" in inspect.signature(cls.from_config).parameters:
                return cls.from_config(config, custom_objects=dict(custom_objects))
            with CustomObjectScope(custom_objects):
                return cls.from_config(config)
        with CustomObjectScope(custom_objects):
            return cls(**config)
    if isinstance(identifier, str):
        return lookup(identifier)
    raise ValueError(f"Could not interpret serialized {printable_module_name}: {identifier}")
