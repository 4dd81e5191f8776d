"""tf.contrib.slim.utils (contrib/layers' utils): the end points of a model. Slim's layers tag
each output they add to an outputs collection with their scope ("vgg_16/conv1/conv1_1"), and
convert_collection_to_dict turns such a collection into {alias: tensor}, as slim's nets return
their end_points."""
from __future__ import annotations

import weakref
from collections import OrderedDict

from tensorweave.framework.api import add_to_collection, get_collection
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export

# TF sets `tensor.aliases`; our Tensor has __slots__, so the aliases live beside it.
_ALIASES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@tf_export("contrib.slim.utils.append_tensor_alias")
def append_tensor_alias(tensor, alias: str):
    """Adds alias (without a trailing '/') to the aliases of tensor; returns tensor."""
    _ALIASES.setdefault(tensor, []).append(alias[:-1] if alias.endswith("/") else alias)
    return tensor


@tf_export("contrib.slim.utils.collect_named_outputs")
def collect_named_outputs(collections, alias: str, outputs):
    """Tags outputs with alias and adds it to the collections (a name or a list; none when
    empty); returns outputs."""
    if collections:
        append_tensor_alias(outputs, alias)
        for name in [collections] if isinstance(collections, str) else collections:
            add_to_collection(name, outputs)
    return outputs


@tf_export("contrib.slim.utils.get_tensor_aliases")
def get_tensor_aliases(tensor) -> list:
    """The aliases of tensor, or its op's name (its own name when it is not output 0)."""
    if tensor in _ALIASES:
        return list(_ALIASES[tensor])
    return [tensor.op.name] if tensor.name.endswith(":0") else [tensor.name]


@tf_export("contrib.slim.utils.gather_tensors_aliases")
def gather_tensors_aliases(tensors) -> list:
    return [alias for tensor in tensors for alias in get_tensor_aliases(tensor)]


@tf_export("contrib.slim.utils.convert_collection_to_dict")
def convert_collection_to_dict(collection, clear_collection=False) -> OrderedDict:
    """{alias: tensor} of the tensors in collection, in the order they were added (then emptied
    with clear_collection)."""
    out = OrderedDict((alias, tensor) for tensor in get_collection(collection) for alias in get_tensor_aliases(tensor))
    if clear_collection:
        get_default_graph().clear_collection(collection)
    return out


@tf_export("contrib.slim.utils.two_element_tuple")
def two_element_tuple(int_or_tuple) -> tuple:
    """An int, two ints or a 2-D TensorShape as a tuple of two values (height, width)."""
    if isinstance(int_or_tuple, (list, tuple)):
        if len(int_or_tuple) != 2:
            raise ValueError(f"Must be a list with 2 elements: {int_or_tuple}")
        return int(int_or_tuple[0]), int(int_or_tuple[1])
    if isinstance(int_or_tuple, int):
        return int(int_or_tuple), int(int_or_tuple)
    if isinstance(int_or_tuple, TensorShape) and len(int_or_tuple) == 2:
        return int_or_tuple[0], int_or_tuple[1]
    raise ValueError("Must be an int, a list with 2 elements or a TensorShape of length 2")


@tf_export("contrib.slim.utils.last_dimension")
def last_dimension(shape, min_rank=1) -> int:
    """The last dimension of a TensorShape, which must be known and of rank >= min_rank."""
    dims = TensorShape(shape).dims
    if dims is None:
        raise ValueError("dims of shape must be known but is None")
    if len(dims) < min_rank:
        raise ValueError(f"rank of shape must be at least {min_rank} not: {len(dims)}")
    value = dims[-1].value
    if value is None:
        raise ValueError(f"dimension -1 of shape must be known but is None: {shape}")
    return value
