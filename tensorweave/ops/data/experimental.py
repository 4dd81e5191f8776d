"""tf.data.experimental: the transformations (functions of a dataset, for Dataset.apply), the
sources (CsvDataset, SqlDataset, RandomDataset, Counter), the readers that build whole input
pipelines (make_csv_dataset, make_batched_features_dataset) and the functions that run a dataset
(get_single_element, cardinality, TFRecordWriter), over the ops of dataset_ops.py."""
from __future__ import annotations

import collections
import csv
import enum
from typing import Callable

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.device import DeviceSpec
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_spec import TensorSpec
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.fill import zeros
from tensorweave.ops.array.gather import one_hot
from tensorweave.ops.array.sort import searchsorted
from tensorweave.ops.data import structure
from tensorweave.ops.data.dataset import (Dataset, DatasetArg, TFRecordDataset, _bool, _int64, _static_int,
                                          trace_function)
from tensorweave.ops.data.pipeline import INFINITE, UNKNOWN
from tensorweave.ops.helpers import as_string_tensor, make_op
from tensorweave.ops.io import decoding, gfile
from tensorweave.ops.io.parsing import parse_example
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.binary import maximum
from tensorweave.ops.math.reduction import cumsum, reduce_max, reduce_sum
from tensorweave.ops.random import get_seed

INFINITE_CARDINALITY, UNKNOWN_CARDINALITY = INFINITE, UNKNOWN
tf_export("data.INFINITE_CARDINALITY", "data.experimental.INFINITE_CARDINALITY")(INFINITE_CARDINALITY)
tf_export("data.UNKNOWN_CARDINALITY", "data.experimental.UNKNOWN_CARDINALITY")(UNKNOWN_CARDINALITY)
SHARD_HINT = -1
tf_export("data.experimental.SHARD_HINT")(SHARD_HINT)


@tf_export("data.experimental.TensorStructure")
def TensorStructure(dtype, shape) -> TensorSpec:
    """tf.data.experimental.TensorStructure(dtype, shape): TF 1.15's name for
    tf.TensorSpec(shape, dtype)."""
    return TensorSpec(shape, dtype)


# -- the option enums ------------------------------------------------------------------------------
@tf_export("data.experimental.AutoShardPolicy")
class AutoShardPolicy(enum.IntEnum):
    """tf.data.experimental.AutoShardPolicy: how tf.distribute shards a dataset (OFF, AUTO, FILE,
    DATA, HINT); DistributeOptions.auto_shard_policy records it."""
    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


@tf_export("data.experimental.ExternalStatePolicy")
class ExternalStatePolicy(enum.IntEnum):
    """tf.data.experimental.ExternalStatePolicy: what checkpointing an iterator does with state
    it cannot save (WARN, IGNORE, FAIL); Options.experimental_external_state_policy records it."""
    WARN = 0
    IGNORE = 1
    FAIL = 2


@tf_export("data.experimental.AutotuneAlgorithm")
class AutotuneAlgorithm(enum.IntEnum):
    """tf.data.experimental.AutotuneAlgorithm: tf.data's autotuning algorithms (a performance
    hint; AUTOTUNE here is a fixed rule: the CPU count for map, 2 for prefetch)."""
    DEFAULT = 0
    HILL_CLIMB = 1
    GRADIENT_DESCENT = 2
    MAX_PARALLELISM = 3
    STAGE_BASED = 4


# -- transformations (for Dataset.apply) -------------------------------------------------------------
def _check_key_func(specs: list, what: str) -> None:
    if len(specs) != 1 or specs[0].dtype != dtypes.int64 or specs[0].sparse or specs[0].shape.ndims not in (None, 0):
        raise ValueError(f"{what}: `key_func` must return a single tf.int64 scalar tensor, got "
                         f"{[(s.dtype.name, str(s.shape)) for s in specs]}")


@tf_export("data.experimental.unbatch")
def unbatch():
    """tf.data.experimental.unbatch(): Dataset.unbatch as a transformation."""
    return lambda dataset: dataset.unbatch()


@tf_export("data.experimental.enumerate_dataset")
def enumerate_dataset(start=0):
    """tf.data.experimental.enumerate_dataset(start=0): Dataset.enumerate as a transformation."""
    return lambda dataset: dataset.enumerate(start)


@tf_export("data.experimental.ignore_errors")
def ignore_errors(log_warning=False):
    """tf.data.experimental.ignore_errors(): the dataset without the elements whose making failed
    (a map function's error, a damaged record)."""
    return _without_errors


def _without_errors(dataset: Dataset) -> Dataset:
    with name_scope(None, "IgnoreErrorsDataset"):
        return dataset._derive("IgnoreErrorsDataset", [])


@tf_export("data.experimental.unique")
def unique():
    """tf.data.experimental.unique(): each distinct element once, in order of first appearance
    (elements are one int32, int64 or string tensor)."""
    def apply(dataset):
        specs = dataset._specs
        if len(specs) != 1 or specs[0].sparse or specs[0].dtype not in (dtypes.int32, dtypes.int64, dtypes.string):
            raise TypeError(f"unique: the dataset's elements must be one int32, int64 or string tensor, got "
                            f"{dataset.output_types}")
        with name_scope(None, "UniqueDataset"):
            return dataset._derive("UniqueDataset", [])
    return apply


@tf_export("data.experimental.scan")
def scan(initial_state, scan_func: Callable):
    """tf.data.experimental.scan(initial_state, scan_func): scan_func(state, element) returns
    (new_state, output); the dataset of the outputs, the state carried from element to element."""
    def apply(dataset):
        with name_scope(None, "ScanDataset"):
            def state_of(out):
                if not isinstance(out, tuple) or len(out) != 2:
                    raise TypeError("scan: `scan_func` must return a pair (new_state, output_element)")
                return out[0]
            fg, out, specs, initial = dataset._state_function(initial_state, scan_func, "scan_func", state_of)
            num_state = len(structure.components(initial))
            n = len(structure.specs_of(out[0]))
            return dataset._with_function("ScanDataset", fg, out[1], specs[n:], structure.components(initial),
                                          {"num_state": num_state})
    return apply


@tf_export("data.experimental.take_while")
def take_while(predicate: Callable):
    """tf.data.experimental.take_while(predicate): the elements up to the first for which
    predicate returns False."""
    def apply(dataset):
        with name_scope(None, "TakeWhileDataset"):
            fg, _, specs = dataset._trace(predicate, "predicate")
            if len(specs) != 1 or specs[0].dtype != dtypes.bool or specs[0].shape.ndims not in (None, 0):
                raise ValueError("take_while: `predicate` must return a scalar boolean tensor.")
            return dataset._with_function("TakeWhileDataset", fg, dataset._template, dataset._specs, [], {})
    return apply


@tf_export("data.experimental.group_by_window")
def group_by_window(key_func: Callable, reduce_func: Callable, window_size=None, window_size_func=None):
    """tf.data.experimental.group_by_window(key_func, reduce_func, window_size=None,
    window_size_func=None): elements grouped by key_func (an int64 scalar); each window of
    `window_size` elements of one key (window_size_func(key) when given) becomes the dataset
    reduce_func(key, window_dataset), whose elements are the output. At the end the partial
    windows are reduced, in key order."""
    if (window_size is None) == (window_size_func is None):
        raise ValueError("group_by_window: exactly one of window_size and window_size_func must be given")
    if window_size_func is None:
        size = window_size

        def window_size_func(key):
            return convert_to_tensor(size, dtypes.int64)

    def apply(dataset):
        with name_scope(None, "GroupByWindowDataset"):
            key_fg, _, key_specs = dataset._trace(key_func, "key_func")
            _check_key_func(key_specs, "group_by_window")
            key_arg = (0, [structure.Spec(dtypes.int64, TensorShape([]))])
            size_fg, _, size_specs = trace_function(window_size_func, "window_size_func", [key_arg])
            if len(size_specs) != 1 or size_specs[0].dtype != dtypes.int64:
                raise ValueError("group_by_window: `window_size_func` must return a single tf.int64 scalar tensor")
            window = DatasetArg(dataset._template, dataset._specs)
            reduce_fg, template, specs = trace_function(reduce_func, "reduce_func", [key_arg, window],
                                                        returns_dataset=True)
            functions = {"key_func": key_fg, "reduce_func": reduce_fg, "window_size_func": size_fg}
            return dataset._with_functions("GroupByWindowDataset", functions, template, specs, [], {})
    return apply


@tf_export("data.experimental.Reducer")
class Reducer:
    """tf.data.experimental.Reducer(init_func, reduce_func, finalize_func): for group_by_reducer,
    the state of a key starts as init_func(key), takes reduce_func(state, element) for each of its
    elements, and ends as finalize_func(state)."""

    def __init__(self, init_func: Callable, reduce_func: Callable, finalize_func: Callable):
        self.init_func, self.reduce_func, self.finalize_func = init_func, reduce_func, finalize_func


@tf_export("data.experimental.group_by_reducer")
def group_by_reducer(key_func: Callable, reducer: Reducer):
    """tf.data.experimental.group_by_reducer(key_func, reducer): one element per key (an int64
    scalar of key_func), reducer's final state of that key's elements, in order of the keys'
    first appearance, after the input ends."""
    def apply(dataset):
        with name_scope(None, "GroupByReducerDataset"):
            key_fg, _, key_specs = dataset._trace(key_func, "key_func")
            _check_key_func(key_specs, "group_by_reducer")
            key_arg = (0, [structure.Spec(dtypes.int64, TensorShape([]))])
            init_fg, state, state_specs = trace_function(reducer.init_func, "init_func", [key_arg])
            reduce_fg, new_state, new_specs = trace_function(
                reducer.reduce_func, "reduce_func", [(state, state_specs), (dataset._template, dataset._specs)])
            if [s.dtype for s in new_specs] != [s.dtype for s in state_specs]:
                raise TypeError(f"group_by_reducer: `reduce_func` returns a state of types "
                                f"{[s.dtype.name for s in new_specs]}, `init_func` one of "
                                f"{[s.dtype.name for s in state_specs]}")
            final_fg, out, specs = trace_function(reducer.finalize_func, "finalize_func", [(state, state_specs)],
                                                  spread=True)
            functions = {"key_func": key_fg, "init_func": init_fg, "reduce_func": reduce_fg,
                         "finalize_func": final_fg}
            return dataset._with_functions("GroupByReducerDataset", functions, out, specs, [],
                                           {"num_state": len(state_specs)})
    return apply


@tf_export("data.experimental.bucket_by_sequence_length")
def bucket_by_sequence_length(element_length_func: Callable, bucket_boundaries, bucket_batch_sizes,
                              padded_shapes=None, padding_values=None, pad_to_bucket_boundary=False,
                              no_padding=False, drop_remainder=False):
    """tf.data.experimental.bucket_by_sequence_length(element_length_func, bucket_boundaries,
    bucket_batch_sizes, ...): elements put in buckets by length (bucket i holds
    boundaries[i-1] <= length < boundaries[i]), each batched by its bucket_batch_sizes[i] with
    padded_batch (to the longest in the batch, or to boundary - 1 with pad_to_bucket_boundary;
    plain batch with no_padding). With pad_to_bucket_boundary the elements must be shorter than
    the last boundary (the last bucket's are padded to its longest)."""
    boundaries = list(bucket_boundaries)
    sizes = list(bucket_batch_sizes)
    if len(sizes) != len(boundaries) + 1:
        raise ValueError(f"len(bucket_batch_sizes) must equal len(bucket_boundaries) + 1, got {len(sizes)} and "
                         f"{len(boundaries)}")
    if any(b <= a for a, b in zip(boundaries, boundaries[1:])):
        raise ValueError(f"bucket_boundaries must be increasing, got {boundaries}")
    edges = np.asarray(boundaries, np.int64)

    def key_func(*element):
        length = cast(element_length_func(*element), dtypes.int64)
        return cast(searchsorted(convert_to_tensor(edges), length[None], side="right")[0], dtypes.int64)

    def window_size_func(key):
        return convert_to_tensor(np.asarray(sizes, np.int64))[key]

    def apply(dataset):
        shapes = padded_shapes if padded_shapes is not None else dataset.output_shapes

        def reduce_func(key, window):
            if no_padding:
                return window.batch(window_size_func(key), drop_remainder=drop_remainder)
            if not pad_to_bucket_boundary:
                return window.padded_batch(window_size_func(key), shapes, padding_values, drop_remainder)
            limit = convert_to_tensor(np.asarray(boundaries + [0], np.int64))[key] - 1

            def bounded(shape):   # TF's rule: each unknown dimension padded to the bucket's boundary - 1
                if TensorShape(shape).ndims is None:
                    raise ValueError("bucket_by_sequence_length: pad_to_bucket_boundary needs elements of known rank")
                dims = TensorShape(shape).as_list()
                if not dims:
                    return convert_to_tensor(np.zeros(0, np.int64))
                return concat([limit[None] if d is None else convert_to_tensor([d], dtypes.int64) for d in dims], 0)
            return window.padded_batch(window_size_func(key), structure.map_leaves(bounded, shapes),
                                       padding_values, drop_remainder)
        return dataset.apply(group_by_window(key_func, reduce_func, window_size_func=window_size_func))
    return apply


@tf_export("data.experimental.dense_to_sparse_batch")
def dense_to_sparse_batch(batch_size, row_shape):
    """tf.data.experimental.dense_to_sparse_batch(batch_size, row_shape): batches of
    `batch_size` elements (of rank len(row_shape), each dimension <= row_shape's) as one
    SparseTensor of dense shape [batch] + row_shape holding every entry of every element (a -1 in
    row_shape: the largest in the batch)."""
    def apply(dataset):
        specs = dataset._specs
        if len(specs) != 1 or specs[0].sparse:
            raise TypeError("dense_to_sparse_batch: the elements must be one dense tensor")
        shape = TensorShape([None]).concatenate(TensorShape([None if d < 0 else d for d in row_shape])
                                                if not isinstance(row_shape, Tensor) else TensorShape(None))
        with name_scope(None, "DenseToSparseBatchDataset"):
            row = row_shape if isinstance(row_shape, Tensor) else np.asarray(list(row_shape), np.int64)
            inputs = [dataset._variant_tensor, _int64(batch_size, "batch_size"), _int64(row, "row_shape")]
            return Dataset._make("DenseToSparseBatchDataset", inputs, dataset._template,
                                 [structure.Spec(specs[0].dtype, shape, True)])
    return apply


@tf_export("data.experimental.map_and_batch", "data.experimental.map_and_batch_with_legacy_function")
def map_and_batch(map_func: Callable, batch_size, num_parallel_batches=None, drop_remainder=False,
                  num_parallel_calls=None):
    """tf.data.experimental.map_and_batch(map_func, batch_size, num_parallel_batches=None,
    drop_remainder=False, num_parallel_calls=None): map then batch (num_parallel_batches batches'
    calls, or num_parallel_calls calls, at once)."""
    if num_parallel_batches is not None and num_parallel_calls is not None:
        raise ValueError("The `num_parallel_batches` and `num_parallel_calls` arguments are mutually exclusive.")
    calls = num_parallel_calls
    if num_parallel_batches is not None:
        calls = _static_int(num_parallel_batches) * (_static_int(batch_size) or 1)
    return lambda dataset: dataset.map(map_func, calls).batch(batch_size, drop_remainder)


@tf_export("data.experimental.parallel_interleave")
def parallel_interleave(map_func: Callable, cycle_length, block_length=1, sloppy=False, buffer_output_elements=None,
                        prefetch_input_elements=None):
    """tf.data.experimental.parallel_interleave(map_func, cycle_length, block_length=1,
    sloppy=False, ...): Dataset.interleave with each of the `cycle_length` open datasets read
    ahead by a thread; the order is always the deterministic one (sloppy permits another)."""
    return lambda dataset: dataset.interleave(map_func, cycle_length, block_length, num_parallel_calls=cycle_length)


@tf_export("data.experimental.shuffle_and_repeat")
def shuffle_and_repeat(buffer_size, count=None, seed=None):
    """tf.data.experimental.shuffle_and_repeat(buffer_size, count=None, seed=None): shuffle (a
    new order each pass) then repeat `count` times (forever when None)."""
    return lambda dataset: dataset.shuffle(buffer_size, seed, reshuffle_each_iteration=True).repeat(count)


@tf_export("data.experimental.parse_example_dataset")
def parse_example_dataset(features: dict, num_parallel_calls=1, deterministic=None):
    """tf.data.experimental.parse_example_dataset(features, num_parallel_calls=1): a dataset of
    vectors of serialized Examples parsed with tf.parse_example into dicts of features."""
    if features is None:
        raise ValueError("Argument `features` is required, but not specified.")
    return lambda dataset: dataset.map(lambda serialized: parse_example(serialized, features), num_parallel_calls)


@tf_export("data.experimental.assert_cardinality")
def assert_cardinality(expected_cardinality):
    """tf.data.experimental.assert_cardinality(expected_cardinality): the dataset, whose
    iteration fails (FailedPreconditionError) when it has more or fewer elements; its
    cardinality is then known."""
    def apply(dataset):
        with name_scope(None, "AssertCardinalityDataset"):
            return dataset._derive("AssertCardinalityDataset", [_int64(expected_cardinality, "cardinality")])
    return apply


@tf_export("data.experimental.cardinality")
def cardinality(dataset: Dataset) -> Tensor:
    """tf.data.experimental.cardinality(dataset): a scalar int64 tensor, the number of elements
    when known without iterating (INFINITE_CARDINALITY for a repeat(), UNKNOWN_CARDINALITY after
    a filter or interleave, or for files), as TF computes it."""
    return _cardinality_of(dataset)


def _cardinality_of(dataset: Dataset) -> Tensor:
    return make_op("DatasetCardinality", [dataset._variant_tensor], name="DatasetCardinality").outputs[0]


@tf_export("data.experimental.pad_to_cardinality")
def pad_to_cardinality(cardinality, mask_key="valid"):
    """tf.data.experimental.pad_to_cardinality(cardinality, mask_key='valid'): a dataset of dict
    elements padded with elements of zeros to `cardinality` elements; `mask_key` (True for the
    real ones) tells them apart. The element shapes must be fully defined."""
    def apply(dataset):
        if not isinstance(dataset._template, dict) or mask_key in dataset._template:
            raise ValueError(f"pad_to_cardinality: the elements must be dicts without the key {mask_key!r}")
        if any(s.sparse or not s.shape.is_fully_defined() for s in dataset._specs):
            raise ValueError("pad_to_cardinality: the elements' shapes must be fully defined and dense")
        real = dataset.map(lambda x: dict(x, **{mask_key: True}))
        filler = structure.pack_as(dataset._template, [zeros(s.shape, s.dtype) for s in dataset._specs])
        padding = _int64(cardinality, "cardinality") - _cardinality_of(dataset)
        fill = Dataset.from_tensors(dict(filler, **{mask_key: False})).repeat(padding)
        return real.concatenate(fill).apply(assert_cardinality(cardinality))
    return apply


@tf_export("data.experimental.copy_to_device")
def copy_to_device(target_device, source_device="/cpu:0"):
    """tf.data.experimental.copy_to_device(target_device, source_device='/cpu:0'): the dataset
    on another device of this task; tensorweave's devices are CPUs, where the copy is the
    dataset itself (a GPU device is a ValueError)."""
    for d in (target_device, source_device):
        _check_cpu(d, "copy_to_device")
    return lambda dataset: dataset


@tf_export("data.experimental.prefetch_to_device")
def prefetch_to_device(device, buffer_size=None):
    """tf.data.experimental.prefetch_to_device(device, buffer_size=None): prefetch into `device`
    (a CPU of this task here: Dataset.prefetch; a GPU device is a ValueError)."""
    _check_cpu(device, "prefetch_to_device")
    return lambda dataset: dataset.prefetch(-1 if buffer_size is None else buffer_size)


def _check_cpu(device: str, what: str) -> None:
    spec = DeviceSpec.from_string(device)
    if (spec.device_type or "CPU").upper() != "CPU":
        raise ValueError(f"{what}: device {device!r} is not a CPU; tensorweave runs datasets on CPUs")


# -- choosing among datasets -------------------------------------------------------------------------
def _directed_interleave(selector: Dataset, datasets: list, stop_on_empty_dataset: bool) -> Dataset:
    if not datasets or not all(isinstance(d, Dataset) for d in datasets):
        raise TypeError("`datasets` must be a non-empty list of Datasets")
    first = datasets[0]
    for d in datasets[1:]:
        if [(s.dtype, s.sparse) for s in d._specs] != [(s.dtype, s.sparse) for s in first._specs]:
            raise TypeError(f"All datasets must have the same type: {first.output_types} and {d.output_types}")
    specs = first._specs
    for d in datasets[1:]:
        specs = [structure.Spec(a.dtype, a.shape.most_specific_compatible_shape(b.shape), a.sparse)
                 for a, b in zip(specs, d._specs)]
    with name_scope(None, "DirectedInterleaveDataset"):
        return Dataset._make("DirectedInterleaveDataset", [selector._variant_tensor] + [d._variant_tensor
                                                                                        for d in datasets],
                             first._template, specs, {"stop_on_empty_dataset": bool(stop_on_empty_dataset)})


@tf_export("data.experimental.choose_from_datasets")
def choose_from_datasets(datasets, choice_dataset: Dataset, stop_on_empty_dataset=False) -> Dataset:
    """tf.data.experimental.choose_from_datasets(datasets, choice_dataset): for each int64 i of
    choice_dataset, the next element of datasets[i]; an exhausted one is skipped (the end with
    stop_on_empty_dataset), and the result ends with choice_dataset or when all are exhausted."""
    if not isinstance(choice_dataset, Dataset) or [(s.dtype, s.sparse, s.shape.ndims) for s in choice_dataset._specs] \
            not in ([(dtypes.int64, False, 0)], [(dtypes.int64, False, None)]):
        raise TypeError("`choice_dataset` must be a dataset of scalar tf.int64 tensors")
    return _directed_interleave(choice_dataset, list(datasets), stop_on_empty_dataset)


@tf_export("data.experimental.sample_from_datasets")
def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False) -> Dataset:
    """tf.data.experimental.sample_from_datasets(datasets, weights=None, seed=None): each element
    from datasets[i] drawn with probability weights[i] (normalized; uniform when None; weights
    may be a dataset of weight vectors, one per element); an exhausted dataset is skipped."""
    datasets = list(datasets)
    n = len(datasets)
    with name_scope(None, "sample_from_datasets"):
        def pick(w, r):
            w = cast(w, dtypes.float64)
            cdf = cumsum(w / reduce_sum(w))
            u = cast(r, dtypes.float64) / float(1 << 32)
            return cast(searchsorted(cdf[:-1], u[None], side="right")[0], dtypes.int64)

        randoms = RandomDataset(seed)
        if isinstance(weights, Dataset):
            selector = Dataset.zip((weights, randoms)).map(pick)
        else:
            w = convert_to_tensor(np.full(n, 1.0 / n) if weights is None else weights, name="weights")
            if w.shape.ndims is not None and w.shape.as_list() != [n]:
                raise ValueError(f"sample_from_datasets: weights must be a vector of {n} (one per dataset), got shape "
                                 f"{w.shape}")
            selector = randoms.map(lambda r: pick(w, r))
        return _directed_interleave(selector, datasets, stop_on_empty_dataset)


@tf_export("data.experimental.rejection_resample")
def rejection_resample(class_func: Callable, target_dist, initial_dist=None, seed=None):
    """tf.data.experimental.rejection_resample(class_func, target_dist, initial_dist=None,
    seed=None): (class, element) pairs whose classes (class_func: an int32/int64 scalar) follow
    target_dist: each element is kept with probability proportional to target / initial for its
    class, the initial distribution given or estimated from the classes seen so far."""
    target = np.asarray(target_dist, np.float64)

    def apply(dataset):
        k = len(target)
        classed = dataset.map(lambda *x: (class_func(*x), x[0] if len(x) == 1 else x))
        if initial_dist is not None:
            ratio = target / np.maximum(np.asarray(initial_dist, np.float64), 1e-30)
            probs = convert_to_tensor(ratio / ratio.max())
            weighted = classed.map(lambda c, x: (c, x, probs[c]))
        else:   # the initial distribution estimated from the classes seen so far (unseen ones: never drawn yet)
            def count(seen, pair):
                seen = seen + one_hot(pair[0], k, dtype=dtypes.int64)
                est = cast(seen, dtypes.float64) / cast(reduce_sum(seen), dtypes.float64)
                ratio = convert_to_tensor(target) / maximum(est, 1e-30) * cast(est > 0, dtypes.float64)
                return seen, (pair[0], pair[1], ratio[pair[0]] / reduce_max(ratio))
            weighted = classed.apply(scan(np.zeros(k, np.int64), count))
        draws = Dataset.zip((weighted, RandomDataset(seed)))
        kept = draws.filter(lambda cxp, r: cast(r, dtypes.float64) / float(1 << 32) < cxp[2])
        return kept.map(lambda cxp, r: (cxp[0], cxp[1]))
    return apply


# -- sources ---------------------------------------------------------------------------------------------
@tf_export("data.experimental.RandomDataset")
def RandomDataset(seed=None) -> Dataset:
    """tf.data.experimental.RandomDataset(seed=None): an endless dataset of pseudorandom int64
    values (uniform 32-bit draws), the same each pass when seeded (seeds follow tf.set_random_seed)."""
    s1, s2 = get_seed(seed)
    with name_scope(None, "RandomDataset"):
        return Dataset._make("RandomDataset", [_int64(s1 or 0, "seed"), _int64(s2 or 0, "seed2")], 0,
                             [structure.Spec(dtypes.int64, TensorShape([]))])


@tf_export("data.experimental.Counter")
def Counter(start=0, step=1, dtype=dtypes.int64) -> Dataset:
    """tf.data.experimental.Counter(start=0, step=1, dtype=tf.int64): start, start + step, ...
    forever."""
    with name_scope(None, "counter"):
        start, step = _int64(start, "start"), _int64(step, "step")
        limit = np.int64(2 ** 63 - 1) if (_static_int(step) or 1) > 0 else np.int64(-2 ** 63)
        ds = Dataset.range(start, limit, step)
        dtype = dtypes.as_dtype(dtype)
        return ds if dtype == dtypes.int64 else ds.map(lambda x: cast(x, dtype))


@tf_export("data.experimental.from_list")
def from_list(elements, name=None) -> Dataset:
    """tf.data.experimental.from_list(elements): a dataset of the given elements (each a nest of
    the same structure, its leaves of one shape and dtype each)."""
    elements = list(elements)
    if not elements:
        raise ValueError("Invalid `elements`. `elements` should not be empty.")
    flat = [structure.flatten(e) for e in elements]
    if any(len(f) != len(flat[0]) for f in flat):
        raise ValueError("Invalid `elements`. All elements must have the same structure.")
    columns = [np.stack([np.asarray(f[i]) for f in flat]) for i in range(len(flat[0]))]
    return Dataset.from_tensor_slices(structure.pack_as(elements[0], columns))


@tf_export("data.experimental.CsvDataset")
def CsvDataset(filenames, record_defaults, compression_type=None, buffer_size=None, header=False, field_delim=",",
               use_quote_delim=True, na_value="", select_cols=None, exclude_cols=None) -> Dataset:
    """tf.data.experimental.CsvDataset(filenames, record_defaults, compression_type=None,
    buffer_size=None, header=False, field_delim=',', use_quote_delim=True, na_value='',
    select_cols=None): one tuple a line of CSV files, a tensor per column of record_defaults'
    types (a DType or an empty default: the column is required). A bad field is an
    InvalidArgumentError naming the file and record."""
    if select_cols is not None and exclude_cols is not None:
        raise ValueError("CsvDataset: select_cols and exclude_cols cannot both be given")
    decoding.check_csv_options(select_cols, len(record_defaults), field_delim)
    with name_scope(None, "CsvDataset"):
        defaults = decoding.csv_defaults(record_defaults, "CsvDataset")
        specs = [structure.Spec(d.dtype, TensorShape([])) for d in defaults]
        inputs = [as_string_tensor(filenames, name="filenames"),
                  as_string_tensor(compression_type or "", "compression_type"), _int64(buffer_size or 0, "buffer_size"),
                  _bool(header, "header"), as_string_tensor(field_delim, "field_delim"),
                  _bool(use_quote_delim, "use_quote_delim"), as_string_tensor(na_value, "na_value"),
                  _int64(np.asarray(select_cols or [], np.int64), "select_cols")] + defaults
        op_type = "CSVDataset"
        if exclude_cols is not None:   # TF's V2 op: exclude_cols after the defaults
            op_type = "CSVDatasetV2"
            inputs.append(_int64(np.asarray(exclude_cols, np.int64), "exclude_cols"))
        attrs = {"output_types": [d.dtype for d in defaults], "output_shapes": [s.shape for s in specs]}
        return Dataset._make(op_type, inputs, tuple(range(len(specs))), specs, attrs)


@tf_export("data.experimental.SqlDataset")
def SqlDataset(driver_name, data_source_name, query, output_types) -> Dataset:
    """tf.data.experimental.SqlDataset(driver_name, data_source_name, query, output_types): one
    tuple a row of a SQL query; driver_name 'sqlite' (Python's sqlite3, the database opened
    read-only), a column that does not fit its output type is InvalidArgumentError."""
    types = tuple(dtypes.as_dtype(t) for t in structure.flatten(output_types))
    with name_scope(None, "SqlDataset"):
        inputs = [as_string_tensor(driver_name, "driver_name"), as_string_tensor(data_source_name, "data_source_name"),
                  as_string_tensor(query, "query")]
        return Dataset._make("SqlDataset", inputs, output_types, [structure.Spec(t, TensorShape([])) for t in types],
                             {"output_types": list(types)})


# -- running a dataset -----------------------------------------------------------------------------------
@tf_export("data.experimental.get_single_element")
def get_single_element(dataset: Dataset):
    """tf.data.experimental.get_single_element(dataset): the only element of `dataset` as
    tensors (InvalidArgumentError when it has none or more than one)."""
    if not isinstance(dataset, Dataset):
        raise TypeError("`dataset` must be a `tf.data.Dataset` object.")
    attrs = {"output_types": structure.component_types(dataset._specs),
             "output_shapes": structure.component_shapes(dataset._specs)}
    op = make_op("DatasetToSingleElement", [dataset._variant_tensor], attrs, name="DatasetToSingleElement")
    return structure.pack(dataset._template, dataset._specs, list(op.outputs))


@tf_export("data.experimental.TFRecordWriter")
class TFRecordWriter:
    """tf.data.experimental.TFRecordWriter(filename, compression_type=None): `write(dataset)` is
    an op that writes a dataset of scalar strings as a TFRecord file."""

    def __init__(self, filename, compression_type=None):
        self._filename = as_string_tensor(filename, "filename")
        self._compression = as_string_tensor(compression_type or "", "compression_type")

    def write(self, dataset: Dataset):
        if [(s.dtype, s.shape.ndims) for s in dataset._specs] not in ([(dtypes.string, 0)], [(dtypes.string, None)]):
            raise TypeError(f"TFRecordWriter.write: the dataset must have scalar string elements, got "
                            f"{dataset.output_types} {dataset.output_shapes}")
        return make_op("DatasetToTFRecord", [dataset._variant_tensor, self._filename, self._compression],
                       name="DatasetToTFRecord")


# -- input pipelines from files --------------------------------------------------------------------------
def _epochs_and_batches(dataset: Dataset, batch_size, num_epochs, shuffle: bool, buffer: int, seed,
                        drop_final: bool) -> Dataset:
    if shuffle:
        dataset = dataset.apply(shuffle_and_repeat(buffer, num_epochs, seed))
    elif num_epochs != 1:
        dataset = dataset.repeat(num_epochs)
    return dataset.batch(batch_size, drop_remainder=drop_final)


def _infer_csv_type(text: str, na_value: str, prev):
    """TF's rule: the narrowest of int32, int64, float32, float64 (finite), string that this value
    and the column's earlier ones parse as."""
    if text in ("", na_value):
        return prev
    order = [dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64, dtypes.string]
    for t in order[order.index(prev) if prev is not None else 0:]:
        try:
            if t.is_integer:
                info = np.iinfo(t.as_numpy_dtype)
                if info.min <= int(text) <= info.max:
                    return t
            elif t.is_floating:
                with np.errstate(over="ignore"):
                    if t.as_numpy_dtype(text) < np.inf:
                        return t
            else:
                return t
        except (ValueError, OverflowError):
            continue
    return dtypes.string


def _csv_rows(path: str, delim: str, count: int, skip_header: bool) -> list:
    with gfile.GFile(path, "r") as f:
        rows = csv.reader(f, delimiter=delim)
        out = []
        for i, row in enumerate(rows):
            if i > count:
                break
            out.append(row)
    return out[1:] if skip_header else out


@tf_export("data.experimental.make_csv_dataset")
def make_csv_dataset(file_pattern, batch_size, column_names=None, column_defaults=None, label_name=None,
                     select_columns=None, field_delim=",", use_quote_delim=True, na_value="", header=True,
                     num_epochs=None, shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                     prefetch_buffer_size=None, num_parallel_reads=None, sloppy=False, num_rows_for_inference=100,
                     compression_type=None, ignore_errors=False):
    """tf.data.experimental.make_csv_dataset(file_pattern, batch_size, column_names=None,
    column_defaults=None, label_name=None, select_columns=None, ...): batches of CSV rows as
    dicts {column name: values} ((features, labels) with label_name). Column names come from the
    first file's header, types and defaults (0 / '') from its first num_rows_for_inference rows
    unless given; files are shuffled, rows shuffled and repeated num_epochs times (forever when
    None; then the last partial batch is dropped)."""
    files = sorted(f for p in ([file_pattern] if isinstance(file_pattern, str) else file_pattern)
                   for f in gfile.Glob(p))
    if not files:
        raise ValueError(f"make_csv_dataset: no files match {file_pattern!r}")
    if column_names is None:
        if not header:
            raise ValueError("Cannot infer column names without a header line.")
        column_names = _csv_rows(files[0], field_delim, 0, False)[0]
    column_names = list(column_names)
    if len(set(column_names)) != len(column_names):
        raise ValueError(f"make_csv_dataset: column names are not unique: {column_names}")
    select = None
    if select_columns is not None:
        select = sorted(c if isinstance(c, int) else column_names.index(c) for c in select_columns
                        if isinstance(c, int) or c in column_names)
        if len(select) != len(select_columns):
            raise ValueError(f"make_csv_dataset: select_columns {select_columns} names columns not in {column_names}")
        column_names = [column_names[i] for i in select]
    if label_name is not None and label_name not in column_names:
        raise ValueError(f"`label_name` provided must be one of the columns: {column_names}")
    if column_defaults is None:
        types = [None] * len(column_names)
        for row in _csv_rows(files[0], field_delim, num_rows_for_inference, header):
            picked = [row[i] for i in select] if select else row
            types = [_infer_csv_type(v, na_value, t) for v, t in zip(picked, types)]
        column_defaults = [np.asarray([b""], object) if (t or dtypes.string) == dtypes.string
                           else np.zeros(1, t.as_numpy_dtype) for t in types]
        column_defaults = [convert_to_tensor(d, dtype=t or dtypes.string) for d, t in zip(column_defaults, types)]
    if len(column_defaults) != len(column_names):
        raise ValueError(f"make_csv_dataset: {len(column_defaults)} column_defaults for {len(column_names)} columns")

    def read(filename):
        rows = CsvDataset(filename, column_defaults, compression_type, header=header, field_delim=field_delim,
                          use_quote_delim=use_quote_delim, na_value=na_value, select_cols=select)
        return _without_errors(rows) if ignore_errors else rows

    def to_dict(*columns):
        features = collections.OrderedDict(zip(column_names, columns))
        if label_name is None:
            return features
        label = features.pop(label_name)
        return features, label

    names = Dataset.from_tensor_slices(files)
    names = names.shuffle(len(files), shuffle_seed) if shuffle else names
    dataset = names.interleave(read, cycle_length=num_parallel_reads or 1,
                                                              num_parallel_calls=num_parallel_reads)
    dataset = _epochs_and_batches(dataset, batch_size, num_epochs, shuffle, shuffle_buffer_size, shuffle_seed,
                                  num_epochs is None)
    return dataset.map(to_dict).prefetch(-1 if prefetch_buffer_size is None else prefetch_buffer_size)


@tf_export("data.experimental.make_batched_features_dataset")
def make_batched_features_dataset(file_pattern, batch_size, features, reader=None, label_key=None, reader_args=None,
                                  num_epochs=None, shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                                  prefetch_buffer_size=None, reader_num_threads=None, parser_num_threads=None,
                                  sloppy_ordering=False, drop_final_batch=False):
    """tf.data.experimental.make_batched_features_dataset(file_pattern, batch_size, features,
    reader=TFRecordDataset, label_key=None, ...): batches of tf.Example records from the files,
    parsed with tf.parse_example into dicts ((features, label) with label_key); files and
    records shuffled unless shuffle=False, num_epochs passes (forever when None)."""
    reader = reader or TFRecordDataset
    dataset = Dataset.list_files(file_pattern, shuffle=shuffle, seed=shuffle_seed).interleave(
        lambda f: reader(f, *(reader_args or [])), cycle_length=reader_num_threads or 1,
        num_parallel_calls=reader_num_threads)
    dataset = _epochs_and_batches(dataset, batch_size, num_epochs, shuffle, shuffle_buffer_size, shuffle_seed,
                                  drop_final_batch)
    dataset = dataset.apply(parse_example_dataset(features, parser_num_threads))
    if label_key is not None:
        if label_key not in features:
            raise ValueError(f"The `label_key` provided ({label_key}) must be one of the `features` keys.")
        dataset = dataset.map(lambda x: ({k: v for k, v in x.items() if k != label_key}, x[label_key]))
    return dataset.prefetch(-1 if prefetch_buffer_size is None else prefetch_buffer_size)
