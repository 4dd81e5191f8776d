"""The element structure of a dataset: a nest (tuples, namedtuples, dicts) of Tensors and
SparseTensors. A Python list is one tensor, as in tf.data. Each leaf has a `Spec`; a dense leaf
travels through the pipeline as one array, a sparse leaf as three (indices, values, shape)."""
from __future__ import annotations

import collections.abc
from dataclasses import dataclass

from tensorweave.framework import dtypes
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape, as_shape
from tensorweave.framework.sparse_tensor import SparseTensor, SparseTensorValue
from tensorweave.framework.tensor_conversion import convert_to_tensor


@dataclass(frozen=True)
class Spec:
    """One leaf of an element: its dtype, static shape and whether it is a SparseTensor; a leaf
    that is a dataset (Dataset.window's) is a `variant` with `inner`, its (template, specs)."""
    dtype: dtypes.DType
    shape: TensorShape
    sparse: bool = False
    inner: object = None

    @property
    def width(self) -> int:
        """How many arrays the leaf is in the pipeline."""
        return 3 if self.sparse else 1

    def component_types(self) -> list:
        return [dtypes.int64, self.dtype, dtypes.int64] if self.sparse else [self.dtype]

    def component_shapes(self) -> list:
        if self.sparse:
            n = self.shape.ndims
            return [TensorShape([None, n]), TensorShape([None]), TensorShape([n])]
        return [self.shape]


def _is_struct(x) -> bool:
    return isinstance(x, (tuple, collections.abc.Mapping))


def _keys(d) -> list:
    return sorted(d, key=lambda k: (str(type(k)), k))


def flatten(structure) -> list:
    """The leaves of a tf.data structure: tuples, namedtuples and dicts (by sorted key) nest;
    everything else, lists included, is a leaf."""
    if not _is_struct(structure):
        return [structure]
    kids = [structure[k] for k in _keys(structure)] if isinstance(structure, collections.abc.Mapping) else structure
    return [leaf for k in kids for leaf in flatten(k)]


def pack_as(template, flat: list):
    """`flat` in the nesting of `template`."""
    flat = list(flat)
    if len(flatten(template)) != len(flat):
        raise ValueError(f"The structure has {len(flatten(template))} components but {len(flat)} were given")

    def build(t, pos: int):
        if not _is_struct(t):
            return flat[pos], pos + 1
        if isinstance(t, collections.abc.Mapping):
            vals = {}
            for k in _keys(t):
                vals[k], pos = build(t[k], pos)
            return type(t)((k, vals[k]) for k in t), pos
        kids = []
        for c in t:
            v, pos = build(c, pos)
            kids.append(v)
        return (type(t)(*kids) if hasattr(t, "_fields") else tuple(kids)), pos
    return build(template, 0)[0]


def map_leaves(fn, structure):
    return pack_as(structure, [fn(x) for x in flatten(structure)])


def normalize(value, name: str = "component"):
    """A structure whose leaves are Tensors or SparseTensors (lists and arrays become tensors)."""
    if isinstance(value, (Tensor, SparseTensor)):
        return value
    if isinstance(value, SparseTensorValue):
        return SparseTensor.from_value(value)
    if _is_struct(value):
        return map_leaves(lambda v: normalize(v, name), value)
    return convert_to_tensor(value, name=name)


def leaves(structure) -> list:
    """The Tensor / SparseTensor leaves of a normalized structure, in nest order."""
    return flatten(structure)


def spec_of(leaf) -> Spec:
    if isinstance(leaf, SparseTensor):
        return Spec(leaf.dtype, leaf.shape, True)
    return Spec(leaf.dtype, leaf.shape)


def specs_of(structure) -> list:
    return [spec_of(x) for x in leaves(structure)]


def components(structure) -> list:
    """The tensors a structure's leaves travel as (three for each SparseTensor)."""
    out = []
    for leaf in leaves(structure):
        out.extend([leaf.indices, leaf.values, leaf.dense_shape] if isinstance(leaf, SparseTensor) else [leaf])
    return out


def pack(template, specs: list, tensors: list):
    """The structure of `template` rebuilt from its component tensors."""
    out, i = [], 0
    for spec in specs:
        if spec.sparse:
            out.append(SparseTensor(tensors[i], tensors[i + 1], tensors[i + 2]))
        else:
            out.append(tensors[i])
        i += spec.width
    return pack_as(template, out)


def component_types(specs: list) -> list:
    return [t for s in specs for t in s.component_types()]


def component_shapes(specs: list) -> list:
    return [sh for s in specs for sh in s.component_shapes()]


def map_specs(template, specs: list, fn):
    """A nest like `template` of fn(spec) per leaf (output_types, output_shapes, ...)."""
    return pack_as(template, [fn(s) for s in specs])


def specs_from(template, types, shapes=None, classes=None) -> list:
    """Specs from TF's (output_types, output_shapes, output_classes) nests."""
    flat_types = flatten(types)
    flat_shapes = flatten(shapes) if shapes is not None else [None] * len(flat_types)
    flat_classes = flatten(classes) if classes is not None else [Tensor] * len(flat_types)
    if len(flat_shapes) != len(flat_types) or len(flat_classes) != len(flat_types):
        raise ValueError("output_types, output_shapes and output_classes must have the same structure")
    return [Spec(dtypes.as_dtype(t), TensorShape(None) if s is None else as_shape(s), c is SparseTensor)
            for t, s, c in zip(flat_types, flat_shapes, flat_classes)]
