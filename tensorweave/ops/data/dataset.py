"""tf.data.Dataset: a dataset is the `variant` output of a chain of dataset ops (dataset_ops.py)
plus its element structure. Transformations add ops; their functions are traced into FuncGraphs
(like cond bodies) whose captured tensors become inputs of the op. Nothing runs until an
iterator (iterator.py) pulls elements."""
from __future__ import annotations

import contextlib
import os
import warnings
from typing import Callable, Optional


from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.func_graph import FuncGraph, unique_function_name
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.shapes import TensorShape, as_shape
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.data import structure
from tensorweave.ops.data.dataset_ops import register_generator
from tensorweave.ops.data.iterator import Iterator
from tensorweave.ops.helpers import as_string_tensor, make_op
from tensorweave.ops.io import record_files
from tensorweave.ops.math.cast import cast
from tensorweave.ops.random import get_seed


AUTOTUNE = -1
tf_export("data.AUTOTUNE", "data.experimental.AUTOTUNE")(AUTOTUNE)


class DatasetArg:
    """An argument of a traced function that is a dataset (group_by_window's window) of this
    structure."""

    def __init__(self, template, specs: list):
        self.template, self.specs = template, specs


def trace_function(fn: Callable, what: str, args: list, returns_dataset: bool = False, spread: bool = False):
    """fn traced into a FuncGraph: (graph, output structure, output specs), or with returns_dataset
    (graph, its dataset's template, specs). `args`: one (template, specs) per argument, or a
    DatasetArg; with `spread` a single tuple argument is passed as separate arguments (tf.data's
    rule for an element)."""
    if not callable(fn):
        raise TypeError(f"`{what}` must be callable.")
    g = get_default_graph()
    fg = FuncGraph(unique_function_name(g, f"{what}_fn"), g)
    with fg.as_default():
        values = []
        for arg in args:
            if isinstance(arg, DatasetArg):
                values.append(Dataset(fg.add_arg(dtypes.variant, TensorShape([]), name="arg"), arg.template,
                                      arg.specs))
                continue
            template, specs = arg
            tensors = [fg.add_arg(t, s, name="arg") for t, s in zip(structure.component_types(specs),
                                                                     structure.component_shapes(specs))]
            value = structure.pack(template, specs, tensors)
            if any(s.inner for s in specs):   # a window's leaves are datasets
                value = structure.pack_as(template, [Dataset(t, *s.inner) if s.inner else t
                                                     for t, s in zip(structure.flatten(value), specs)])
            values.append(value)
        ret = fn(*values[0]) if spread and len(values) == 1 and type(values[0]) is tuple else fn(*values)
        if returns_dataset:
            if not isinstance(ret, Dataset):
                raise TypeError(f"`{what}` must return a Dataset object.")
            fg.outputs = [ret._variant_tensor]
            return fg, ret._template, ret._specs
        if isinstance(ret, list):
            warnings.warn("Converting the list returned by a dataset function to a tuple.")
            ret = tuple(ret)
        out = structure.normalize(ret)
        fg.outputs = [fg.capture(t) if t.graph is not fg else t for t in structure.components(out)]
        return fg, out, structure.specs_of(out)


def _int64(x, name: str) -> Tensor:
    """A scalar parameter as TF's dataset ops take it: an int64 tensor."""
    if isinstance(x, Tensor):
        return x if x.dtype == dtypes.int64 else cast(x, dtypes.int64)
    return convert_to_tensor(x, dtype=dtypes.int64, name=name)


def _bool(x, name: str) -> Tensor:
    return convert_to_tensor(x, dtype=dtypes.bool, name=name)


def _static_int(x) -> Optional[int]:
    v = constant_value(x) if isinstance(x, Tensor) else x
    return None if v is None else int(v)


@tf_export("data.Dataset")
class Dataset:
    """tf.data.Dataset: a sequence of elements, each a structure of tensors."""

    def __init__(self, variant: Tensor, template, specs: list):
        self._variant_tensor = variant
        self._template = template
        self._specs = specs

    @classmethod
    def _make(cls, op_type: str, inputs: list, template, specs: list, attrs: Optional[dict] = None,
              control: Optional[list] = None) -> "Dataset":
        g = get_default_graph()
        with g.control_dependencies(control) if control else contextlib.nullcontext():
            op = make_op(op_type, inputs, attrs or {}, name=op_type)
        return Dataset(op.outputs[0], template, specs)

    def _derive(self, op_type: str, inputs: list, attrs: Optional[dict] = None) -> "Dataset":
        """A dataset of this one's structure made by `op_type` over it."""
        return Dataset._make(op_type, [self._variant_tensor] + inputs, self._template, self._specs, attrs)

    # -- structure --------------------------------------------------------------------------------
    output_types = property(lambda self: structure.map_specs(self._template, self._specs, lambda s: s.dtype))
    output_shapes = property(lambda self: structure.map_specs(self._template, self._specs, lambda s: s.shape))
    output_classes = property(lambda self: structure.map_specs(
        self._template, self._specs, lambda s: SparseTensor if s.sparse else Tensor))

    def __iter__(self):
        raise RuntimeError("dataset.__iter__() is only supported when eager execution is enabled.")

    def __repr__(self) -> str:
        return f"<Dataset shapes: {self.output_shapes}, types: {self.output_types}>"

    # -- sources ----------------------------------------------------------------------------------
    @staticmethod
    def from_tensors(tensors) -> "Dataset":
        """Dataset.from_tensors(tensors): a dataset of one element, `tensors`."""
        with name_scope(None, "TensorDataset"):
            element = structure.normalize(tensors)
            specs = structure.specs_of(element)
            return Dataset._make("TensorDataset", structure.components(element), element, specs)

    @staticmethod
    def from_tensor_slices(tensors) -> "Dataset":
        """Dataset.from_tensor_slices(tensors): one element per slice along the first dimension of
        every component (which must agree)."""
        with name_scope(None, "TensorSliceDataset"):
            element = structure.normalize(tensors)
            specs = structure.specs_of(element)
            n = None
            for s in specs:
                if s.sparse:
                    raise TypeError("from_tensor_slices of a SparseTensor is not supported")
                if s.shape.ndims == 0:
                    raise ValueError("Unbatching a tensor is only supported for rank >= 1")
                if s.shape.ndims is not None and s.shape[0].value is not None:
                    if n is not None and n != s.shape[0].value:
                        raise ValueError(f"Dimensions {n} and {s.shape[0].value} are not compatible")
                    n = s.shape[0].value
            sliced = [structure.Spec(s.dtype, s.shape[1:] if s.shape.ndims is not None else TensorShape(None))
                      for s in specs]
            return Dataset._make("TensorSliceDataset", structure.components(element), element, sliced)

    @staticmethod
    def range(*args) -> "Dataset":
        """Dataset.range(stop) / range(start, stop[, step]): int64 numbers, like Python's range."""
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Invalid arguments to range: {args}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
        with name_scope(None, "RangeDataset"):
            inputs = [_int64(start, "start"), _int64(stop, "stop"), _int64(step, "step")]
            return Dataset._make("RangeDataset", inputs, 0, [structure.Spec(dtypes.int64, TensorShape([]))])

    @staticmethod
    def zip(datasets) -> "Dataset":
        """Dataset.zip(datasets): a (nested) tuple or dict of datasets as one dataset of tuples
        (dicts) of their elements, as long as the shortest."""
        flat = structure.flatten(datasets)
        if not flat or not all(isinstance(d, Dataset) for d in flat):
            raise TypeError("Dataset.zip takes a (nested) structure of Datasets")
        template = structure.pack_as(datasets, [d._template for d in flat])
        specs = [s for d in flat for s in d._specs]
        return Dataset._make("ZipDataset", [d._variant_tensor for d in flat], template, specs)

    @staticmethod
    def from_generator(generator: Callable, output_types, output_shapes=None, args=None) -> "Dataset":
        """Dataset.from_generator(generator, output_types, output_shapes=None, args=None): the
        elements a Python generator yields (generator(*args) is called for each pass). It runs
        in the process that built the graph."""
        if not callable(generator):
            raise TypeError("`generator` must be callable.")
        specs = structure.specs_from(output_types, output_types, output_shapes)
        key = register_generator(generator)
        with name_scope(None, "GeneratorDataset"):
            arg_tensors = [convert_to_tensor(a, name="args") for a in (args or ())]
            single = not isinstance(output_types, (tuple, dict))
            if isinstance(output_types, dict):
                raise TypeError("from_generator with dict output_types is not supported: use a tuple")
            attrs = {"generator_id": key, "output_types": [s.dtype for s in specs],
                     "output_shapes": [s.shape for s in specs], "single": single}
            return Dataset._make("GeneratorDataset", arg_tensors, output_types, specs, attrs)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None) -> "Dataset":
        """Dataset.list_files(file_pattern, shuffle=None, seed=None): the file names matching a
        glob pattern (or patterns), shuffled unless shuffle=False; InvalidArgumentError when
        nothing matches."""
        with name_scope(None, "list_files"):
            names = make_op("NonEmptyMatchingFiles", [as_string_tensor(file_pattern)],
                            name="matching_files").outputs[0]
            ds = Dataset.from_tensor_slices(names)
            if shuffle is None or shuffle:
                ds = ds.shuffle(2 ** 31 - 1, seed=seed)
            return ds

    # -- element-wise transformations --------------------------------------------------------------
    def _trace(self, fn: Callable, what: str, returns_dataset: bool = False):
        """fn traced into a FuncGraph over this dataset's element: (graph, output template, specs)."""
        return trace_function(fn, what, [(self._template, self._specs)], returns_dataset, spread=True)

    def _with_function(self, op_type: str, fg: FuncGraph, template, specs: list, inputs: list,
                       attrs: dict) -> "Dataset":
        return self._with_functions(op_type, {"f": fg}, template, specs, inputs, attrs)

    def _with_functions(self, op_type: str, functions: dict, template, specs: list, inputs: list,
                        attrs: dict) -> "Dataset":
        """An op over this dataset with FuncGraph attrs `functions` (name -> graph): the captured
        tensors of each follow `inputs`, in order; attr `captures` says how many each has."""
        captured = [list(fg.external_captures) for fg in functions.values()]
        control = [c for fg in functions.values() for c in fg.control_captures]
        attrs = dict(attrs, **functions)
        if len(functions) > 1:
            attrs["captures"] = [len(c) for c in captured]
        inputs = [self._variant_tensor] + inputs + [t for c in captured for t in c]
        return Dataset._make(op_type, inputs, template, specs, attrs, control=control or None)

    def map(self, map_func: Callable, num_parallel_calls=None) -> "Dataset":
        """Dataset.map(map_func, num_parallel_calls=None): map_func over each element (a tuple is
        passed as separate arguments); num_parallel_calls calls run at once, in threads,
        results in order (AUTOTUNE: the CPU count)."""
        with name_scope(None, "MapDataset"):
            fg, template, specs = self._trace(map_func, "map_func")
            calls = _static_int(num_parallel_calls) if num_parallel_calls is not None else 0
            if calls == AUTOTUNE:
                calls = os.cpu_count() or 2
            return self._with_function("MapDataset", fg, template, specs, [], {"num_parallel_calls": calls or 0})

    def map_with_legacy_function(self, map_func: Callable, num_parallel_calls=None) -> "Dataset":
        """Dataset.map_with_legacy_function (TF 1.15, deprecated): map; functions are traced
        alike here."""
        return self.map(map_func, num_parallel_calls)

    def filter_with_legacy_function(self, predicate: Callable) -> "Dataset":
        """Dataset.filter_with_legacy_function (TF 1.15, deprecated): filter."""
        return self.filter(predicate)

    def filter(self, predicate: Callable) -> "Dataset":
        """Dataset.filter(predicate): the elements for which predicate returns a true scalar bool."""
        with name_scope(None, "FilterDataset"):
            fg, _, specs = self._trace(predicate, "predicate")
            if len(specs) != 1 or specs[0].dtype != dtypes.bool or specs[0].shape.ndims not in (None, 0):
                raise ValueError("`predicate` must return a scalar boolean tensor.")
            return self._with_function("FilterDataset", fg, self._template, self._specs, [], {})

    def flat_map(self, map_func: Callable) -> "Dataset":
        """Dataset.flat_map(map_func): the elements of the dataset map_func returns for each
        element, one dataset after another."""
        return self.interleave(map_func, cycle_length=1, block_length=1)

    def interleave(self, map_func: Callable, cycle_length=AUTOTUNE, block_length=1,
                   num_parallel_calls=None) -> "Dataset":
        """Dataset.interleave(map_func, cycle_length=AUTOTUNE, block_length=1,
        num_parallel_calls=None): cycles over `cycle_length` of the datasets map_func returns,
        `block_length` elements from each in turn; with num_parallel_calls each open dataset is
        read ahead by a thread of its own (the order stays the same)."""
        with name_scope(None, "InterleaveDataset"):
            fg, template, specs = self._trace(map_func, "map_func", returns_dataset=True)
            parallel = _static_int(num_parallel_calls) if num_parallel_calls is not None else 0
            inputs = [_int64(cycle_length, "cycle_length"), _int64(block_length, "block_length")]
            return self._with_function("InterleaveDataset", fg, template, specs, inputs,
                                       {"num_parallel_calls": parallel or 0})

    def apply(self, transformation_func: Callable) -> "Dataset":
        """Dataset.apply(transformation_func): transformation_func(self), which must be a Dataset."""
        out = transformation_func(self)
        if not isinstance(out, Dataset):
            raise TypeError("`transformation_func` must return a Dataset.")
        return out

    # -- batching ----------------------------------------------------------------------------------
    def batch(self, batch_size, drop_remainder=False) -> "Dataset":
        """Dataset.batch(batch_size, drop_remainder=False): consecutive elements stacked along a
        new first dimension (the last batch may be smaller unless drop_remainder)."""
        with name_scope(None, "BatchDataset"):
            size = _int64(batch_size, "batch_size")
            n = _static_int(size) if drop_remainder is True else None
            specs = [structure.Spec(s.dtype, TensorShape([n]).concatenate(s.shape), s.sparse) for s in self._specs]
            op_inputs = [size, _bool(drop_remainder, "drop_remainder")]
            return Dataset._make("BatchDatasetV2", [self._variant_tensor] + op_inputs, self._template, specs,
                                 {"leaf_widths": [s.width for s in self._specs]})

    def window(self, size, shift=None, stride=1, drop_remainder=False) -> "Dataset":
        """Dataset.window(size, shift=None, stride=1, drop_remainder=False): a dataset of windows,
        each a nest like the element of datasets (one per component) of up to `size` elements:
        every `stride`-th from a start that moves by `shift` (default: size); the last windows
        may be smaller unless drop_remainder. flat_map(lambda w: w.batch(size)) makes tensors."""
        with name_scope(None, "WindowDataset"):
            inputs = [_int64(size, "size"), _int64(size if shift is None else shift, "shift"),
                      _int64(stride, "stride"), _bool(drop_remainder, "drop_remainder")]
            specs = [structure.Spec(dtypes.variant, TensorShape([]), inner=(0, [s])) for s in self._specs]
            return Dataset._make("WindowDataset", [self._variant_tensor] + inputs, self._template, specs,
                                 {"leaf_widths": [s.width for s in self._specs]})

    def padded_batch(self, batch_size, padded_shapes, padding_values=None, drop_remainder=False) -> "Dataset":
        """Dataset.padded_batch(batch_size, padded_shapes, padding_values=None,
        drop_remainder=False): batches elements padded to `padded_shapes` (None or -1: the
        largest in the batch) with `padding_values` (default 0 / b'')."""
        if any(s.sparse for s in self._specs):
            raise TypeError("padded_batch does not take SparseTensor components")
        with name_scope(None, "PaddedBatchDataset"):
            shapes = structure.flatten(padded_shapes) if structure.flatten(padded_shapes) else []
            if len(shapes) != len(self._specs):
                raise ValueError("padded_shapes must have the structure of the dataset's elements")
            shape_t, full = [], []
            for s, spec in zip(shapes, self._specs):
                if isinstance(s, Tensor):
                    shape_t.append(_int64(s, "padded_shape"))
                    full.append(TensorShape([None] * (spec.shape.ndims or 0)))
                    continue
                ts = as_shape(s)
                if spec.shape.ndims is not None and ts.ndims != spec.shape.ndims:
                    raise ValueError(f"The padded shape {ts} is not compatible with the element shape {spec.shape}")
                shape_t.append(convert_to_tensor([-1 if d is None else d for d in ts.as_list()], dtype=dtypes.int64))
                full.append(ts)
            if padding_values is None:
                pads = [convert_to_tensor(b"" if s.dtype == dtypes.string else 0, dtype=s.dtype) for s in self._specs]
            else:
                pads = [convert_to_tensor(v, dtype=s.dtype) for v, s in zip(structure.flatten(padding_values),
                                                                             self._specs)]
            size = _int64(batch_size, "batch_size")
            n = _static_int(size) if drop_remainder is True else None
            specs = [structure.Spec(s.dtype, TensorShape([n]).concatenate(f)) for s, f in zip(self._specs, full)]
            inputs = [self._variant_tensor, size, _bool(drop_remainder, "drop_remainder")] + shape_t + pads
            return Dataset._make("PaddedBatchDatasetV2", inputs, self._template, specs,
                                 {"num_components": len(self._specs)})

    def unbatch(self) -> "Dataset":
        """Dataset.unbatch(): each element split along its first dimension into that many
        elements (every component's first dimension must agree)."""
        if any(s.sparse for s in self._specs):
            raise TypeError("unbatch does not take SparseTensor components")
        if any(s.shape.ndims == 0 for s in self._specs):
            raise ValueError("Cannot unbatch an input with scalar components.")
        specs = [structure.Spec(s.dtype, s.shape[1:] if s.shape.ndims is not None else TensorShape(None))
                 for s in self._specs]
        with name_scope(None, "UnbatchDataset"):
            return Dataset._make("UnbatchDataset", [self._variant_tensor], self._template, specs)

    # -- order and count ---------------------------------------------------------------------------
    def enumerate(self, start=0) -> "Dataset":
        """Dataset.enumerate(start=0): (index, element) pairs, the index an int64 from `start`."""
        return Dataset.zip((Dataset.range(start, 2 ** 63 - 1), self))

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None) -> "Dataset":
        """Dataset.shuffle(buffer_size, seed=None, reshuffle_each_iteration=None): a random
        order, drawing each element uniformly from a buffer of `buffer_size`; a new order for
        each pass unless reshuffle_each_iteration=False. Seeds follow tf.set_random_seed."""
        with name_scope(None, "ShuffleDataset"):
            s1, s2 = get_seed(seed)
            attrs = {"seed": s1 or 0, "seed2": s2 or 0,
                     "reshuffle_each_iteration": True if reshuffle_each_iteration is None
                     else bool(reshuffle_each_iteration)}
            return self._derive("ShuffleDataset", [_int64(buffer_size, "buffer_size")], attrs)

    def repeat(self, count=None) -> "Dataset":
        """Dataset.repeat(count=None): the dataset `count` times (forever when None or -1)."""
        with name_scope(None, "RepeatDataset"):
            return self._derive("RepeatDataset", [_int64(-1 if count is None else count, "count")])

    def take(self, count) -> "Dataset":
        """Dataset.take(count): the first `count` elements (all when -1)."""
        with name_scope(None, "TakeDataset"):
            return self._derive("TakeDataset", [_int64(count, "count")])

    def skip(self, count) -> "Dataset":
        """Dataset.skip(count): all but the first `count` elements (none when -1)."""
        with name_scope(None, "SkipDataset"):
            return self._derive("SkipDataset", [_int64(count, "count")])

    def shard(self, num_shards, index) -> "Dataset":
        """Dataset.shard(num_shards, index): every num_shards-th element from `index`."""
        with name_scope(None, "ShardDataset"):
            return self._derive("ShardDataset", [_int64(num_shards, "num_shards"), _int64(index, "index")])

    def prefetch(self, buffer_size) -> "Dataset":
        """Dataset.prefetch(buffer_size): a thread reads ahead, keeping `buffer_size` elements
        ready (AUTOTUNE: 2)."""
        with name_scope(None, "PrefetchDataset"):
            return self._derive("PrefetchDataset", [_int64(buffer_size, "buffer_size")])

    def cache(self, filename="") -> "Dataset":
        """Dataset.cache(filename=''): the first complete pass is kept and replayed: in memory, or
        in the file `filename`.tw-cache (written whole, then renamed; read by later passes and
        later sessions)."""
        with name_scope(None, "CacheDataset"):
            return self._derive("CacheDataset", [as_string_tensor(filename, name="filename")])

    def concatenate(self, dataset: "Dataset") -> "Dataset":
        """Dataset.concatenate(dataset): this dataset's elements, then `dataset`'s (same types)."""
        if [(s.dtype, s.sparse) for s in self._specs] != [(s.dtype, s.sparse) for s in dataset._specs]:
            raise TypeError(f"Two datasets to concatenate have different types {self.output_types} and "
                            f"{dataset.output_types}")
        specs = [structure.Spec(a.dtype, a.shape.most_specific_compatible_shape(b.shape), a.sparse)
                 for a, b in zip(self._specs, dataset._specs)]
        with name_scope(None, "ConcatenateDataset"):
            return Dataset._make("ConcatenateDataset", [self._variant_tensor, dataset._variant_tensor],
                                 self._template, specs)

    def reduce(self, initial_state, reduce_func: Callable):
        """Dataset.reduce(initial_state, reduce_func): the state after reduce_func(state, element)
        over every element (a tensor nest like initial_state; its dtypes must not change)."""
        with name_scope(None, "ReduceDataset"):
            fg, template, specs, initial = self._state_function(initial_state, reduce_func, "reduce_func",
                                                                lambda out: out)
            attrs = {"f": fg, "num_state": len(structure.components(initial)),
                     "output_types": structure.component_types(specs),
                     "output_shapes": structure.component_shapes(specs)}
            op = make_op("ReduceDataset", [self._variant_tensor] + structure.components(initial)
                         + list(fg.external_captures), attrs, name="ReduceDataset")
            return structure.pack(template, specs, list(op.outputs))

    def _state_function(self, initial_state, fn: Callable, what: str, state_of: Callable):
        """fn(state, element) traced with the state's shapes relaxed until the state it returns
        (`state_of` its output) fits them: (graph, output structure, specs, initial state)."""
        initial = structure.normalize(initial_state, "initial_state")
        state_specs = structure.specs_of(initial)
        for _ in range(2):
            fg, out, specs = trace_function(fn, what, [(initial, state_specs), (self._template, self._specs)])
            new_state = state_of(out)
            new_specs = structure.specs_of(new_state)
            if len(new_specs) != len(state_specs) or any(
                    (a.dtype, a.sparse) != (b.dtype, b.sparse) for a, b in zip(state_specs, new_specs)):
                raise TypeError(f"The element types for the new state must match the initial state in {what}: "
                                f"expected {[s.dtype.name for s in state_specs]}, got "
                                f"{[s.dtype.name for s in new_specs]}")
            relaxed = [structure.Spec(a.dtype, a.shape.most_specific_compatible_shape(b.shape), a.sparse)
                       for a, b in zip(state_specs, new_specs)]
            if relaxed == state_specs:
                return fg, out, specs, initial
            state_specs = relaxed
        return fg, out, specs, initial

    # -- options ------------------------------------------------------------------------------------
    def with_options(self, options) -> "Dataset":
        """Dataset.with_options(options): this dataset with `options` (a tf.data.Options) merged
        into its inputs' (differing values of one option are a ValueError, as in TF 1)."""
        if not isinstance(options, Options):
            raise TypeError(f"with_options expects a tf.data.Options, got {type(options).__name__}")
        merged = self.options()._merged(options)
        with name_scope(None, "OptionsDataset"):
            ds = self._derive("OptionsDataset", [], {"serialized_options": b""})
        ds._variant_tensor.graph._dataset_options = {**getattr(ds._variant_tensor.graph, "_dataset_options", {}),
                                                     ds._variant_tensor.op.name: merged}
        return ds

    def options(self) -> "Options":
        """Dataset.options(): the tf.data.Options of this dataset and its inputs, merged."""
        recorded = getattr(self._variant_tensor.graph, "_dataset_options", {})
        merged, seen, todo = Options(), set(), [self._variant_tensor.op]
        while todo:
            op = todo.pop()
            if op.name in seen:
                continue
            seen.add(op.name)
            if op.name in recorded:
                merged = merged._merged(recorded[op.name])   # it holds its inputs' options already
                continue
            todo.extend(t.op for t in op.inputs if t.dtype == dtypes.variant)
        return merged

    def _apply_options(self) -> "Dataset":
        """The dataset an iterator runs: with a private thread pool when the options ask for one."""
        threads = self.options().experimental_threading.private_threadpool_size
        if not threads:
            return self
        with name_scope(None, "PrivateThreadPoolDataset"):
            return self._derive("PrivateThreadPoolDataset", [_int64(threads, "num_threads")])

    # -- iterators ---------------------------------------------------------------------------------
    def make_one_shot_iterator(self) -> Iterator:
        """An iterator that starts on its first use and cannot be re-initialized (the dataset may
        not capture placeholders)."""
        return Iterator._for_dataset(self._apply_options(), one_shot=True)

    def make_initializable_iterator(self, shared_name=None) -> Iterator:
        """An iterator whose `initializer` op (re)starts it; the dataset may use placeholders
        fed when the initializer runs."""
        return Iterator._for_dataset(self._apply_options(), one_shot=False, shared_name=shared_name)


# -- tf.data.Options -------------------------------------------------------------------------------
class _OptionsBase:
    """A set of options: each unset (None) until assigned; an unknown name or a value of the wrong
    type is an error, as in TF. Nested option sets are created on first access."""

    _FIELDS: dict = {}   # name -> (type, docstring)

    def __init__(self):
        object.__setattr__(self, "_values", {})

    def __getattr__(self, name):
        fields = type(self)._FIELDS
        if name.startswith("_") or name not in fields:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        kind = fields[name][0]
        if name not in self._values and isinstance(kind, type) and issubclass(kind, _OptionsBase):
            self._values[name] = kind()
        return self._values.get(name)

    def __setattr__(self, name, value):
        fields = type(self)._FIELDS
        if name not in fields:
            raise AttributeError(f"Cannot set the property {name} on {type(self).__name__}.")
        kind = fields[name][0]
        if value is not None and not isinstance(value, kind) or kind is int and isinstance(value, bool):
            raise TypeError(f"Property \"{name}\" must be of type {kind.__name__}, got {type(value).__name__}")
        self._values[name] = value

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and all(getattr(self, f) == getattr(other, f) for f in self._FIELDS)

    def __ne__(self, other) -> bool:
        return not self == other

    __hash__ = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self._values.items())})"

    def _merged(self, other: "_OptionsBase") -> "_OptionsBase":
        out = type(self)()
        for name, (kind, _) in self._FIELDS.items():
            mine, theirs = self._values.get(name), other._values.get(name)
            if isinstance(kind, type) and issubclass(kind, _OptionsBase):
                out._values[name] = (mine or kind())._merged(theirs or kind())
            elif mine is not None and theirs is not None and mine != theirs:
                raise ValueError(f"Cannot merge incompatible values ({mine!r} and {theirs!r}) of option: {name}")
            else:
                out._values[name] = mine if mine is not None else theirs
        return out


_HINT = "a performance hint; accepted and without effect here (the results are the same)"


@tf_export("data.ThreadingOptions", "data.experimental.ThreadingOptions")
class ThreadingOptions(_OptionsBase):
    """tf.data.experimental.ThreadingOptions: the threads a pipeline may use.
    private_threadpool_size: a pool of this many threads for the pipeline: honoured, each parallel
    map runs at most this many calls at once (0: no limit).
    max_intra_op_parallelism: the most threads one op may use: a performance hint without effect
    here (tensorweave's dataset ops run single-threaded)."""
    _FIELDS = {"max_intra_op_parallelism": (int, _HINT), "private_threadpool_size": (int, "honoured")}


@tf_export("data.experimental.OptimizationOptions")
class OptimizationOptions(_OptionsBase):
    """tf.data.experimental.OptimizationOptions: tf.data's graph rewrites (map_fusion,
    map_and_batch_fusion, noop_elimination, autotune, ...). Each is a performance hint, accepted
    and without effect: tensorweave runs the pipeline as written, with the same results."""
    _FIELDS = {k: (bool, _HINT) for k in (
        "apply_default_optimizations", "autotune", "autotune_buffers", "filter_fusion",
        "filter_with_random_uniform_fusion", "hoist_random_uniform", "map_and_batch_fusion", "map_and_filter_fusion",
        "map_fusion", "map_parallelization", "noop_elimination", "parallel_batch", "shuffle_and_repeat_fusion")}
    _FIELDS["autotune_cpu_budget"] = (int, _HINT)


@tf_export("data.experimental.DistributeOptions")
class DistributeOptions(_OptionsBase):
    """tf.data.experimental.DistributeOptions: how a tf.distribute strategy shards the dataset
    (auto_shard, auto_shard_policy: an AutoShardPolicy, num_devices). Recorded only:
    tensorweave's between-graph replication shards with Dataset.shard."""
    _FIELDS = {"auto_shard": (bool, "recorded only"), "auto_shard_policy": (int, "recorded only (an AutoShardPolicy)"),
               "num_devices": (int, "recorded only")}


@tf_export("data.experimental.AutotuneOptions")
class AutotuneOptions(_OptionsBase):
    """tf.data.experimental.AutotuneOptions: tf.data's autotuning (enabled, cpu_budget,
    ram_budget, autotune_algorithm): performance hints, accepted and without effect (AUTOTUNE
    is a fixed rule here)."""
    _FIELDS = {"enabled": (bool, _HINT), "cpu_budget": (int, _HINT), "ram_budget": (int, _HINT),
               "autotune_algorithm": (int, _HINT)}


@tf_export("data.Options")
class Options(_OptionsBase):
    """tf.data.Options: options of a dataset, set with Dataset.with_options and read back with
    Dataset.options() (merged over the dataset's inputs).
    experimental_deterministic: whether elements come in a deterministic order. Honoured, always:
    parallel map and interleave keep the input order (False permits, but does not require,
    another order).
    experimental_threading: a ThreadingOptions (its private_threadpool_size is honoured).
    experimental_optimization (OptimizationOptions), experimental_slack, autotune
    (AutotuneOptions): performance hints, accepted and without effect. experimental_distribute: a
    DistributeOptions, and experimental_external_state_policy (an ExternalStatePolicy): recorded
    only."""
    _FIELDS = {"autotune": (AutotuneOptions, _HINT), "experimental_deterministic": (bool, "honoured"),
               "experimental_distribute": (DistributeOptions, ""),
               "experimental_external_state_policy": (int, "recorded only (an ExternalStatePolicy)"),
               "experimental_optimization": (OptimizationOptions, _HINT), "experimental_slack": (bool, _HINT),
               "experimental_threading": (ThreadingOptions, "")}

def _files_dataset(op_type: str, filenames, inputs: list, default_name: str) -> Dataset:
    with name_scope(None, default_name):
        names = as_string_tensor(filenames, name="filenames")
        if names.shape.ndims not in (None, 0, 1):
            raise ValueError("`filenames` must be a scalar or a vector of strings")
        return Dataset._make(op_type, [names] + inputs, 0, [structure.Spec(dtypes.string, TensorShape([]))])


def _interleaved(files: Dataset, make: Callable, num_parallel_reads) -> Dataset:
    """One record dataset per file, read `num_parallel_reads` files at a time (TF's rule)."""
    return files.interleave(make, cycle_length=num_parallel_reads, block_length=1,
                            num_parallel_calls=num_parallel_reads)


@tf_export("data.TFRecordDataset")
def TFRecordDataset(filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
    """tf.data.TFRecordDataset(filenames, compression_type=None, buffer_size=None,
    num_parallel_reads=None): the records of TFRecord files ('', 'ZLIB', 'GZIP'), file after file,
    or `num_parallel_reads` files interleaved record by record."""
    def one(f):
        return _files_dataset("TFRecordDataset", f, [as_string_tensor(compression_type or "", "compression_type"),
                                                     _int64(buffer_size or 0, "buffer_size")], "TFRecordDataset")
    if num_parallel_reads:
        return _interleaved(Dataset.from_tensor_slices(as_string_tensor(filenames)), one, num_parallel_reads)
    return one(filenames)


@tf_export("data.FixedLengthRecordDataset")
def FixedLengthRecordDataset(filenames, record_bytes, header_bytes=None, footer_bytes=None,
                             buffer_size=None, compression_type=None):
    """tf.data.FixedLengthRecordDataset(filenames, record_bytes, header_bytes=None,
    footer_bytes=None, buffer_size=None): records of `record_bytes` bytes after a header and
    before a footer; a file whose body is not whole records is InvalidArgumentError naming it."""
    header_bytes, footer_bytes = (0 if b is None else b for b in (header_bytes, footer_bytes))
    record_files.check_record_sizes(record_bytes=record_bytes, header_bytes=header_bytes, footer_bytes=footer_bytes)
    inputs = [_int64(header_bytes, "header_bytes"), _int64(record_bytes, "record_bytes"),
              _int64(footer_bytes, "footer_bytes"), _int64(buffer_size or 0, "buffer_size"),
              as_string_tensor(compression_type or "", "compression_type")]
    return _files_dataset("FixedLengthRecordDatasetV2", filenames, inputs, "FixedLengthRecordDataset")


@tf_export("data.TextLineDataset")
def TextLineDataset(filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
    """tf.data.TextLineDataset(filenames, compression_type=None, buffer_size=None): the lines of
    text files, without their line ends."""
    def one(f):
        return _files_dataset("TextLineDataset", f, [as_string_tensor(compression_type or "", "compression_type"),
                                                     _int64(buffer_size or 0, "buffer_size")], "TextLineDataset")
    if num_parallel_reads:
        return _interleaved(Dataset.from_tensor_slices(as_string_tensor(filenames)), one, num_parallel_reads)
    return one(filenames)
