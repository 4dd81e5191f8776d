"""Nested-structure helpers for control flow (a small subset of TF's `nest`).

Sequences are lists, tuples and namedtuples; dicts are sequences of their values in sorted key
order, as in TF. Anything else (Tensors, Operations, None, numbers) is a leaf.
"""
from __future__ import annotations

import collections.abc
from typing import Any, Callable


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def is_sequence(x) -> bool:
    return isinstance(x, (list, tuple, collections.abc.Mapping)) and not isinstance(x, (str, bytes))


def _children(x) -> list:
    if isinstance(x, collections.abc.Mapping):
        return [x[k] for k in _sorted_keys(x)]
    return list(x)


def _sorted_keys(d) -> list:
    try:
        return sorted(d)
    except TypeError:
        return sorted(d, key=repr)


def flatten(structure) -> list:
    """All leaves of `structure`, depth first (a leaf alone gives a one-element list)."""
    if not is_sequence(structure):
        return [structure]
    out: list = []
    for c in _children(structure):
        out.extend(flatten(c))
    return out


def _rebuild(template, children: list):
    if isinstance(template, collections.abc.Mapping):
        values = dict(zip(_sorted_keys(template), children))
        return type(template)((k, values[k]) for k in template)
    if _is_namedtuple(template):
        return type(template)(*children)
    if isinstance(template, tuple):
        return tuple(children)
    return list(children)


def pack_sequence_as(structure, flat: list):
    """`flat` rearranged into the nesting of `structure`."""
    flat = list(flat)
    if not is_sequence(structure):
        if len(flat) != 1:
            raise ValueError(f"Structure is a scalar but len(flat_sequence) == {len(flat)} > 1")
        return flat[0]

    def build(s, pos: int):
        if not is_sequence(s):
            return flat[pos], pos + 1
        kids = []
        for c in _children(s):
            v, pos = build(c, pos)
            kids.append(v)
        return _rebuild(s, kids), pos

    n = len(flatten(structure))
    if n != len(flat):
        raise ValueError(f"Could not pack sequence. Structure had {n} elements, but flat_sequence had "
                         f"{len(flat)} elements.")
    return build(structure, 0)[0]


def map_structure(fn: Callable, structure, *more):
    flats = [flatten(structure)] + [flatten(m) for m in more]
    return pack_sequence_as(structure, [fn(*xs) for xs in zip(*flats)])


def assert_same_structure(a, b, check_types: bool = True) -> None:
    """Raises ValueError (TF's message) unless `a` and `b` nest the same way."""
    def fail(detail: str, cls=ValueError):
        raise cls("The two structures don't have the same nested structure.\n\n"
                         f"First structure: {_describe(a)}\n\nSecond structure: {_describe(b)}\n\n"
                         f"More specifically: {detail}")

    def walk(x, y):
        sx, sy = is_sequence(x), is_sequence(y)
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
