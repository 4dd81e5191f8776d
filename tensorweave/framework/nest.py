"""tf.nest (and tensorflow.python.util.nest): nested structures of lists, tuples, namedtuples and
dicts.

Sequences are lists, tuples and namedtuples; dicts are sequences of their values in sorted key
order, as in TF. Anything else (Tensors, Operations, None, numbers) is a leaf; with
`expand_composites`, a SparseTensor is the sequence (indices, values, dense_shape) and an
IndexedSlices (values, indices, dense_shape), as TF's composite tensors are.
"""
from __future__ import annotations

import collections.abc
from typing import Any, Callable

from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tf_export import tf_export

_COMPOSITES = {SparseTensor: lambda x: [x.indices, x.values, x.dense_shape],
               IndexedSlices: lambda x: [x.values, x.indices] + ([] if x.dense_shape is None else [x.dense_shape])}

def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def is_sequence(x, expand_composites: bool = False) -> bool:
    return (isinstance(x, (list, tuple, collections.abc.Mapping)) and not isinstance(x, (str, bytes))
            or expand_composites and type(x) in _COMPOSITES)


tf_export("nest.is_nested", "python.util.nest.is_sequence", "python.util.nest.is_nested")(is_sequence)


def _children(x) -> list:
    if isinstance(x, collections.abc.Mapping):
        return [x[k] for k in _sorted_keys(x)]
    if type(x) in _COMPOSITES:
        return _COMPOSITES[type(x)](x)
    return list(x)


def _sorted_keys(d) -> list:
    try:
        return sorted(d)
    except TypeError:
        return sorted(d, key=repr)


@tf_export("nest.flatten", "python.util.nest.flatten")
def flatten(structure, expand_composites: bool = False) -> list:
    """All leaves of `structure`, depth first (a leaf alone gives a one-element list)."""
    if not is_sequence(structure, expand_composites):
        return [structure]
    out: list = []
    for c in _children(structure):
        out.extend(flatten(c, expand_composites))
    return out


def _rebuild(template, children: list):
    if isinstance(template, collections.abc.Mapping):
        values = dict(zip(_sorted_keys(template), children))
        return type(template)((k, values[k]) for k in template)
    if _is_namedtuple(template) or type(template) in _COMPOSITES:
        return type(template)(*children)
    if isinstance(template, tuple):
        return tuple(children)
    return list(children)


@tf_export("nest.pack_sequence_as", "python.util.nest.pack_sequence_as")
def pack_sequence_as(structure, flat_sequence: list, expand_composites: bool = False):
    """`flat_sequence` rearranged into the nesting of `structure`."""
    flat = list(flat_sequence)
    if not is_sequence(structure, expand_composites):
        if len(flat) != 1:
            raise ValueError(f"Structure is a scalar but len(flat_sequence) == {len(flat)} > 1")
        return flat[0]

    def build(s, pos: int):
        if not is_sequence(s, expand_composites):
            return flat[pos], pos + 1
        kids = []
        for c in _children(s):
            v, pos = build(c, pos)
            kids.append(v)
        return _rebuild(s, kids), pos

    n = len(flatten(structure, expand_composites))
    if n != len(flat):
        raise ValueError(f"Could not pack sequence. Structure had {n} elements, but flat_sequence had "
                         f"{len(flat)} elements.")
    return build(structure, 0)[0]


@tf_export("nest.map_structure", "python.util.nest.map_structure")
def map_structure(func: Callable, *structure, check_types: bool = True, expand_composites: bool = False):
    """func applied to the leaves of `structure` (one or more structures of the same nesting, leaf
    by leaf), in the nesting of the first."""
    if not structure:
        raise ValueError("Must provide at least one structure")
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types, expand_composites)
    flats = [flatten(s, expand_composites) for s in structure]
    return pack_sequence_as(structure[0], [func(*xs) for xs in zip(*flats)], expand_composites)


@tf_export("nest.assert_same_structure", "python.util.nest.assert_same_structure")
def assert_same_structure(nest1, nest2, check_types: bool = True, expand_composites: bool = False) -> None:
    """Raises ValueError (TF's message) unless `nest1` and `nest2` nest the same way."""
    a, b = nest1, nest2

    def fail(detail: str, cls=ValueError):
        raise cls("The two structures don't have the same nested structure.\n\n"
                         f"First structure: {_describe(a)}\n\nSecond structure: {_describe(b)}\n\n"
                         f"More specifically: {detail}")

    def walk(x, y):
        sx, sy = is_sequence(x, expand_composites), is_sequence(y, expand_composites)
        if sx != sy:
            seq, leaf = (x, y) if sx else (y, x)
            fail(f"Substructure \"{_describe(seq)}\" is a sequence, while substructure "
                 f"\"{_describe(leaf)}\" is not")
        if not sx:
            return
        if check_types:
            tx = dict if isinstance(x, collections.abc.Mapping) else type(x)
            ty = dict if isinstance(y, collections.abc.Mapping) else type(y)
            if tx is not ty:
                fail(f"The two namedtuples don't have the same sequence type. First structure "
                     f"{_describe(x)} has type {tx.__name__}, while second structure {_describe(y)} "
                     f"has type {ty.__name__}", TypeError)
        if isinstance(x, collections.abc.Mapping) and set(x) != set(y):
            fail(f"The two dictionaries don't have the same set of keys. First structure has keys "
                 f"{_sorted_keys(x)}, while second structure has keys {_sorted_keys(y)}")
        cx, cy = _children(x), _children(y)
        if len(cx) != len(cy):
            fail(f"The two structures don't have the same number of elements. First structure: "
                 f"{_describe(x)}, second structure: {_describe(y)}.")
        for u, v in zip(cx, cy):
            walk(u, v)

    walk(a, b)


def _describe(x: Any) -> str:
    return f"type={type(x).__name__} str={x!r}"
