"""tf.data.Iterator: one-shot, initializable, reinitializable (from_structure) and feedable
(from_string_handle) iterators over datasets (their ops: iterator_ops.py)."""
from __future__ import annotations

import typing

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.func_graph import FuncGraph, unique_function_name
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor_spec import TensorSpec
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.data import structure
from tensorweave.ops.data.dataset_ops import DATASET_OPS
from tensorweave.ops.helpers import as_string_tensor, make_op


def dataset_factory(variant: Tensor) -> FuncGraph:
    """A FuncGraph that rebuilds the dataset of `variant`: its chain of dataset ops copied in,
    every other tensor it reads captured (so the pipeline is built where the iterator runs)."""
    g = get_default_graph()
    fg = FuncGraph(unique_function_name(g, "dataset_factory"), g)
    memo: dict = {}

    def copy(t: Tensor) -> Tensor:
        if t.graph is fg:
            return t
        op = t.op
        if op.type not in DATASET_OPS:
            raise ValueError(f"{t.name} (op {op.type}) is not a dataset")
        if op not in memo:
            inputs = [copy(x) if x.dtype == dtypes.variant else x for x in op.inputs]
            attrs = {k: v for k, v in op._attrs.items() if k != "_class"}
            with fg.control_dependencies(None):
                memo[op] = fg.create_op(op.type, inputs, attrs, name=op.name.rsplit("/", 1)[-1])
        return memo[op].outputs[t.value_index]

    with fg.as_default():
        fg.outputs = [copy(variant)]
    return fg


@tf_export("data.Iterator")
class Iterator:
    """tf.data.Iterator: `get_next()` gives the next element; `initializer` (re)starts it."""

    def __init__(self, handle: Tensor, initializer, template, specs: list):
        self._handle = handle
        self._initializer = initializer
        self._template = template
        self._specs = specs

    # -- construction -----------------------------------------------------------------------------
    @staticmethod
    def _handle_op(op_type: str, inputs: list, template, specs: list, attrs: dict, name: "str | None") -> Tensor:
        attrs = dict(attrs, output_types=structure.component_types(specs),
                     output_shapes=structure.component_shapes(specs))
        return make_op(op_type, inputs, attrs, name=name or op_type).outputs[0]

    @classmethod
    def from_structure(cls, output_types, output_shapes=None, shared_name=None, output_classes=None):
        """Iterator.from_structure(output_types, output_shapes=None, shared_name=None,
        output_classes=None): an iterator not bound to a dataset; `make_initializer(dataset)`
        points it at any dataset of this structure."""
        specs = structure.specs_from(output_types, output_types, output_shapes, output_classes)
        handle = cls._handle_op("IteratorV2", [], output_types, specs,
                                {"shared_name": shared_name or "", "container": ""}, "Iterator")
        return cls(handle, None, output_types, specs)

    @classmethod
    def from_string_handle(cls, string_handle, output_types, output_shapes=None, output_classes=None):
        """Iterator.from_string_handle(string_handle, output_types, output_shapes=None,
        output_classes=None): the iterator whose `string_handle()` value is fed to
        `string_handle` (a scalar string placeholder), chosen at each run."""
        specs = structure.specs_from(output_types, output_types, output_shapes, output_classes)
        handle = cls._handle_op("IteratorFromStringHandleV2", [as_string_tensor(string_handle)], output_types,
                                specs, {}, "IteratorFromStringHandle")
        return cls(handle, None, output_types, specs)

    @classmethod
    def _for_dataset(cls, dataset, one_shot: bool, shared_name: typing.Optional[str] = None) -> "Iterator":
        with name_scope(None, "Iterator"):
            fg = dataset_factory(dataset._variant_tensor)
            captures = list(fg.external_captures)
            if one_shot:
                for t in captures:
                    if t.op.type in ("Placeholder", "PlaceholderWithDefault"):
                        raise ValueError(f"Failed to create a one-shot iterator for a dataset that captures "
                                         f"placeholder {t.name}: use make_initializable_iterator() instead.")
                handle = cls._handle_op("OneShotIterator", captures, dataset._template, dataset._specs,
                                        {"dataset_factory": fg, "shared_name": "", "container": ""},
                                        "OneShotIterator")
                return cls(handle, None, dataset._template, dataset._specs)
            handle = cls._handle_op("IteratorV2", [], dataset._template, dataset._specs,
                                    {"shared_name": shared_name or "", "container": ""}, "Iterator")
            it = cls(handle, None, dataset._template, dataset._specs)
            it._initializer = it._make_initializer(dataset, fg, "MakeIterator")
            return it

    def _make_initializer(self, dataset, fg: FuncGraph, name: str):
        return make_op("MakeIterator", [self._handle] + list(fg.external_captures), {"dataset_factory": fg},
                       name=name)

    def make_initializer(self, dataset, name=None):
        """An op that (re)starts this iterator on `dataset` (same output types and classes)."""
        dataset = dataset._apply_options()
        want = [(s.dtype, s.sparse) for s in self._specs]
        got = [(s.dtype, s.sparse) for s in dataset._specs]
        if want != got:
            raise TypeError(f"Expected output types {self.output_types!r} but got dataset with output types "
                            f"{dataset.output_types!r}.")
        for mine, theirs in zip(self._specs, dataset._specs):
            if not mine.shape.is_compatible_with(theirs.shape):
                raise TypeError(f"Expected output shapes compatible with {self.output_shapes!r} but got dataset "
                                f"with output shapes {dataset.output_shapes!r}.")
        with name_scope(name, "make_initializer"):
            return self._make_initializer(dataset, dataset_factory(dataset._variant_tensor), "MakeIterator")

    # -- use ------------------------------------------------------------------------------------
    @property
    def initializer(self):
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

    def get_next(self, name=None):
        """The next element, as a structure of tensors; OutOfRangeError when the dataset ends."""
        attrs = {"output_types": structure.component_types(self._specs),
                 "output_shapes": structure.component_shapes(self._specs)}
        op = make_op("IteratorGetNext", [self._handle], attrs, name=name or "IteratorGetNext")
        return structure.pack(self._template, self._specs, list(op.outputs))

    def string_handle(self, name=None):
        """A scalar string naming this iterator, for Iterator.from_string_handle."""
        return make_op("IteratorToStringHandle", [self._handle], name=name or "IteratorToStringHandle").outputs[0]

    output_types = property(lambda self: structure.map_specs(self._template, self._specs, lambda s: s.dtype))
    output_shapes = property(lambda self: structure.map_specs(self._template, self._specs, lambda s: s.shape))
    output_classes = property(lambda self: structure.map_specs(
        self._template, self._specs, lambda s: SparseTensor if s.sparse else Tensor))


@tf_export("data.experimental.Optional")
class Optional:
    """tf.data.experimental.Optional: a value that may be missing (a `variant` tensor):
    has_value() a bool tensor, get_value() its tensors (InvalidArgumentError when it has none)."""

    def __init__(self, variant: Tensor, template, specs: list):
        self._variant_tensor, self._template, self._specs = variant, template, specs

    @staticmethod
    def from_value(value) -> "Optional":
        """Optional.from_value(value): an Optional holding `value` (a nest of tensors)."""
        with name_scope(None, "OptionalFromValue"):
            element = structure.normalize(value, "value")
            op = make_op("OptionalFromValue", structure.components(element), name="OptionalFromValue")
            return Optional(op.outputs[0], element, structure.specs_of(element))

    @staticmethod
    def none_from_structure(value_structure) -> "Optional":
        """Optional.none_from_structure(value_structure): an empty Optional whose value would have
        the structure of `value_structure` (a nest of tf.TensorSpec)."""
        specs = [structure.Spec(s.dtype, s.shape) for s in structure.flatten(value_structure)]
        return Optional(make_op("OptionalNone", [], name="OptionalNone").outputs[0], value_structure, specs)

    @property
    def value_structure(self):
        """The structure of the value: a nest of tf.TensorSpec."""
        return structure.map_specs(self._template, self._specs, lambda s: TensorSpec(s.shape, s.dtype))

    def has_value(self, name=None) -> Tensor:
        return make_op("OptionalHasValue", [self._variant_tensor], name=name or "OptionalHasValue").outputs[0]

    def get_value(self, name=None):
        attrs = {"output_types": structure.component_types(self._specs),
                 "output_shapes": structure.component_shapes(self._specs)}
        op = make_op("OptionalGetValue", [self._variant_tensor], attrs, name=name or "OptionalGetValue")
        return structure.pack(self._template, self._specs, list(op.outputs))


@tf_export("data.experimental.get_next_as_optional")
def get_next_as_optional(iterator: Iterator) -> Optional:
    """tf.data.experimental.get_next_as_optional(iterator): the next element as an Optional,
    empty at the end of the dataset instead of OutOfRangeError."""
    attrs = {"output_types": structure.component_types(iterator._specs),
             "output_shapes": structure.component_shapes(iterator._specs)}
    op = make_op("IteratorGetNextAsOptional", [iterator._handle], attrs, name="IteratorGetNextAsOptional")
    return Optional(op.outputs[0], iterator._template, iterator._specs)
