"""Dataset ops: each outputs a `variant` whose run-time value is a pipeline.DatasetValue built
from its inputs (scalar parameters are tensors, as TF's; functions are FuncGraphs in attr `f`
whose captured tensors follow the op's own inputs). Building a dataset value runs nothing: the
elements flow only when an iterator pulls them."""
from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from itertools import islice, repeat
from typing import Callable, Iterator

import msgpack
import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.shapes import TensorShape
from tensorweave.ops.data import pipeline
from tensorweave.ops.data.pipeline import INFINITE, NOT_READY, UNKNOWN, DatasetValue, ElementError, passes
from tensorweave.ops.helpers import check_output_size, string_array
from tensorweave.ops.io import decoding, record_files
from tensorweave.ops.io.tfrecord import TFRecordWriter
from tensorweave.ops.registry import register

DATASET_OPS: set = set()     # op types whose output 0 is a dataset (iterators copy them)
_GENERATORS: dict = {}       # id -> Python callable of from_generator (this process only)
_generator_ids = iter(range(1, 1 << 62))
_generator_lock = threading.Lock()


def _register(op_type: str, kernel: Callable, stateful: bool = False) -> None:
    DATASET_OPS.add(op_type)
    register(op_type, lambda op: [(dtypes.variant, TensorShape([]))], kernel, grad=None, stateful=stateful)


def _int(x) -> int:
    return int(np.asarray(x).reshape(()))


class _Function:
    """A dataset function (attr `f`, or `attr`) with its captured values."""

    def __init__(self, node, ctx, captured: tuple, attr: str = "f"):
        self.plan = ctx.function_plan(node.attr[attr])
        self.captured = list(captured)

    def __call__(self, element: list) -> list:
        return self.plan.run(list(element) + self.captured)


def _safe(fn: Callable, element):
    """fn(element), or its failure as the element's ElementError."""
    if passes(element):
        return element
    try:
        return fn(element)
    except Exception as e:  # noqa: BLE001 - the failure belongs to this element
        return pipeline.as_element_error(e)


# -- sources -------------------------------------------------------------------------------------
class _Gen(DatasetValue):
    def __init__(self, make: Callable[[], Iterator], cardinality: int = UNKNOWN):
        self._make = make
        self.cardinality = cardinality

    def elements(self) -> Iterator:
        return self._make()


class _Rows(DatasetValue):
    """A dataset whose elements are rows of whole arrays: `[a[j] for a in arrays]` for each row
    number j that `rows()` yields (from_tensor_slices, and the stages after it that only move
    elements: shuffle, repeat, take, skip, shard). Those stages then move row numbers, and a batch
    of rows is one gather per array (`a.take(rows, axis=0)`) instead of a stack of elements."""

    def __init__(self, arrays: list, rows: Callable[[], Iterator], cardinality: int):
        self.arrays, self.rows, self.cardinality = arrays, rows, cardinality

    def elements(self) -> Iterator:
        arrays = self.arrays
        for j in self.rows():
            yield [a[j] for a in arrays]


def _stage(input_ds: DatasetValue, one_pass: Callable[[Callable[[], Iterator]], Iterator],
           cardinality: int) -> DatasetValue:
    """The dataset of a stage that moves its input's elements without looking into them:
    `one_pass(start)` is a pass over the stage's output given `start()`, which starts a pass over
    its input. Over rows, the stage moves row numbers (see _Rows)."""
    if isinstance(input_ds, _Rows):
        return _Rows(input_ds.arrays, lambda: one_pass(input_ds.rows), cardinality)
    return _Gen(lambda: one_pass(input_ds.elements), cardinality)


def _window_value(items: list) -> DatasetValue:
    """A dataset of the given elements (a window of group_by_window or window)."""
    return _Gen(lambda: iter(items), len(items))


def _tensor_kernel(node, ctx):
    def run(*components):
        comps = list(components)
        return _Gen(lambda: iter([comps]), 1)
    return run


def _slice_rows(node, comps: list) -> Iterator:
    """The row numbers of from_tensor_slices, once its components are checked (at the first)."""
    n = len(np.asarray(comps[0])) if comps and np.ndim(comps[0]) else None
    for i, c in enumerate(comps):
        if np.ndim(c) == 0:
            raise errors.InvalidArgumentError(node, node.name, f"Component {i} of from_tensor_slices is a scalar")
        if len(c) != n:
            raise errors.InvalidArgumentError(node, node.name, f"Dimensions {n} and {len(c)} are not compatible "
                                                               f"(component {i} of from_tensor_slices)")
    yield from range(n or 0)


def _slice_kernel(node, ctx):
    def run(*components):
        comps = [np.asarray(c, dtype=object) if isinstance(c, bytes) else c for c in components]
        return _Rows(comps, lambda: _slice_rows(node, comps), len(comps[0]) if comps and np.ndim(comps[0]) else UNKNOWN)
    return run


def _range_kernel(node, ctx):
    def run(start, stop, step):
        start, stop, step = _int(start), _int(stop), _int(step)
        if step == 0:
            raise errors.InvalidArgumentError(node, node.name, "step must be a non-zero integer.")
        return _Gen(lambda: ([np.int64(i)] for i in range(start, stop, step)), len(range(start, stop, step)))
    return run


def register_generator(fn: Callable) -> int:
    with _generator_lock:
        key = next(_generator_ids)
        _GENERATORS[key] = fn
    return key


def _generator_kernel(node, ctx):
    fn = _GENERATORS.get(node.attr["generator_id"])
    if fn is None:
        raise errors.FailedPreconditionError(node, node.name, "from_generator's Python function lives in the process "
                                                              "that built the dataset, not on this task")
    types = [dtypes.as_dtype(t) for t in node.attr["output_types"]]
    shapes = [TensorShape(s) for s in node.attr["output_shapes"]]
    single = node.attr["single"]

    def convert(value, i: int):
        dt = types[i]
        try:
            if dt is dtypes.string:
                arr = np.asarray(value, dtype=object)
                arr = np.vectorize(lambda s: s.encode() if isinstance(s, str) else bytes(s), otypes=[object])(arr) \
                    if arr.size else arr
            else:
                arr = np.asarray(value)
                if arr.dtype == object or (arr.dtype.kind == "f" and dt.is_integer):
                    raise TypeError
                arr = arr.astype(dt.as_numpy_dtype)
        except (TypeError, ValueError):
            raise errors.InvalidArgumentError(node, node.name, f"`generator` yielded an element that could not be "
                                                               f"converted to the expected type. The expected type "
                                                               f"was {dt.name}, but the yielded element was {value!r}.")
        if not shapes[i].is_compatible_with(arr.shape):
            raise errors.InvalidArgumentError(node, node.name, f"`generator` yielded an element of shape "
                                                               f"{arr.shape} where an element of shape "
                                                               f"{shapes[i]} was expected.")
        return arr[()] if arr.ndim == 0 and dt is not dtypes.string else arr

    def items(args):
        for value in fn(*args):
            flat = [value] if single else list(value) if isinstance(value, (tuple, list)) else None
            if flat is None or len(flat) != len(types):
                yield ElementError(errors.InvalidArgumentError(
                    node, node.name, f"`generator` yielded an element that did not match the expected structure "
                                     f"({len(types)} components): {value!r}"))
                continue
            yield _safe(lambda f: [convert(v, i) for i, v in enumerate(f)], flat)

    def run(*args):
        py_args = [a.decode() if isinstance(a, bytes) else a for a in args]
        return _Gen(lambda: items(py_args))
    return run


def _filenames(node, x) -> list:
    arr = string_array(x)
    if arr.ndim > 1:
        raise errors.InvalidArgumentError(node, node.name, f"filenames must be a scalar or a vector, got shape "
                                                           f"{list(arr.shape)}")
    return [bytes(f) for f in arr.reshape(-1)]


def _files(node, names: list, read: Callable[[bytes], Iterator]) -> Iterator:
    """The records of each file in turn; a file that fails ends with its error as an element."""
    for name in names:
        try:
            for rec in read(name):
                yield [rec]
        except errors.OpError as e:
            yield ElementError(e)


def _tfrecord_kernel(node, ctx):
    def run(filenames, compression, buffer_size):
        names = _filenames(node, filenames)
        kind = record_files.compression_of(bytes(string_array(compression)[()]).decode())
        return _Gen(lambda: _files(node, names, lambda f: record_files.tfrecords(f, kind, node)))
    return run


def _fixed_kernel(node, ctx):
    def run(filenames, header, record, footer, buffer_size, compression):
        names = _filenames(node, filenames)
        h, r, f = _int(header), _int(record), _int(footer)
        record_files.check_record_sizes(node, record_bytes=r, header_bytes=h, footer_bytes=f)
        kind = record_files.compression_of(bytes(string_array(compression)[()]).decode())
        return _Gen(lambda: _files(node, names, lambda n: record_files.fixed_length_records(
            n, r, h, f, node=node, compression=kind)))
    return run


def _text_kernel(node, ctx):
    def run(filenames, compression, buffer_size):
        names = _filenames(node, filenames)
        kind = record_files.compression_of(bytes(string_array(compression)[()]).decode())
        return _Gen(lambda: _files(node, names, lambda n: record_files.text_lines(n, kind, node)))
    return run


_register("TensorDataset", _tensor_kernel)
_register("TensorSliceDataset", _slice_kernel)
_register("RangeDataset", _range_kernel)
_register("GeneratorDataset", _generator_kernel, stateful=True)
_register("TFRecordDataset", _tfrecord_kernel, stateful=True)
_register("FixedLengthRecordDatasetV2", _fixed_kernel, stateful=True)
_register("TextLineDataset", _text_kernel, stateful=True)


# -- element-wise transforms ---------------------------------------------------------------------
def _map_kernel(node, ctx):
    calls = node.attr.get("num_parallel_calls", 0)

    def run(input_ds, *captured):
        fn = _Function(node, ctx, captured)

        def elements():
            source = input_ds.elements()
            if calls and calls > 1:
                return pipeline.parallel_map(source, lambda e: _safe(fn, e), calls, node.name)
            return (_safe(fn, e) for e in source)
        return _Gen(elements, input_ds.cardinality)
    return run


def _filter_kernel(node, ctx):
    def run(input_ds, *captured):
        fn = _Function(node, ctx, captured)

        def keep(element):
            out = fn(element)[0]
            if np.ndim(out) != 0:
                raise errors.InvalidArgumentError(node, node.name, "The predicate of filter must return a scalar "
                                                                   f"bool, got shape {list(np.shape(out))}")
            return bool(out)

        def elements():
            for e in input_ds.elements():
                verdict = _safe(keep, e)
                if passes(verdict):
                    yield verdict
                elif verdict:
                    yield e
        return _Gen(elements)
    return run


def _interleave_kernel(node, ctx):
    parallel = node.attr.get("num_parallel_calls", 0)

    def run(input_ds, cycle_length, block_length, *captured):
        fn = _Function(node, ctx, captured)
        cycle = _int(cycle_length)
        cycle = os.cpu_count() or 2 if cycle <= 0 else cycle
        block = _int(block_length)
        if block <= 0:
            raise errors.InvalidArgumentError(node, node.name, f"block_length must be positive, got {block}")

        def open_one(element):
            if isinstance(element, ElementError):
                return iter([element])
            try:
                ds = fn(element)[0]
            except Exception as e:  # noqa: BLE001
                return iter([pipeline.as_element_error(e)])
            if parallel:
                return pipeline.run_ahead(ds.elements, block, node.name)
            return ds.elements()

        def elements():   # TF's cycle: fixed slots, each opened when the cycle reaches it empty
            source = input_ds.elements()
            slots: list = [None] * cycle
            index = taken = opened = 0
            end_of_input = False
            while not end_of_input or opened:
                it = slots[index]
                if it is not None:
                    try:
                        element = next(it)
                    except StopIteration:
                        slots[index], opened, taken = None, opened - 1, 0
                        index = (index + 1) % cycle
                        continue
                    if element is NOT_READY:
                        yield element
                        continue
                    taken += 1
                    if taken == block:
                        taken, index = 0, (index + 1) % cycle
                    yield element
                elif not end_of_input:
                    try:
                        element = next(source)
                    except StopIteration:
                        end_of_input = True
                        continue
                    if element is NOT_READY:
                        yield element
                        continue
                    slots[index] = open_one(element)
                    opened += 1
                else:
                    taken, index = 0, (index + 1) % cycle
        return _Gen(elements)
    return run


_register("MapDataset", _map_kernel)
_register("FilterDataset", _filter_kernel)
_register("InterleaveDataset", _interleave_kernel)


# -- batching ------------------------------------------------------------------------------------
def _batch_element(node, elements: list, widths: list) -> list:
    out, c = [], 0
    for w in widths:
        if w == 3:
            out.extend(pipeline.batch_sparse([e[c] for e in elements], [e[c + 1] for e in elements],
                                             [e[c + 2] for e in elements]))
        else:
            out.append(pipeline.stack([e[c] for e in elements], f"component {c}"))
        c += w
    return out


def _batches(node, source: Iterator, size: int, drop: bool, make: Callable[[list], list]) -> Iterator:
    if size <= 0:
        raise errors.InvalidArgumentError(node, node.name, f"Batch size must be greater than zero, got {size}")
    buf: list = []
    for e in source:
        if e is NOT_READY:
            yield e
            continue
        if isinstance(e, ElementError):
            buf = []
            yield e
            continue
        buf.append(e)
        if len(buf) == size:
            yield _safe(make, buf)
            buf = []
    if buf and not drop:
        yield _safe(make, buf)


def _row_batches(node, rows: _Rows, size: int, drop: bool) -> Iterator:
    """_batches of rows: each batch gathered from the arrays by its row numbers at once."""
    if size <= 0:
        raise errors.InvalidArgumentError(node, node.name, f"Batch size must be greater than zero, got {size}")
    source = rows.rows()
    while True:
        batch = list(islice(source, size))
        if not batch or len(batch) < size and drop:
            return
        batch = np.array(batch, dtype=np.int64)
        yield [a.take(batch, axis=0) for a in rows.arrays]


def _batched_cardinality(card: int, size: int, drop: bool) -> int:
    if card < 0 or size <= 0:
        return card
    return card // size if drop else -(-card // size)


def _batch_kernel(node, ctx):
    widths = node.attr["leaf_widths"]

    def run(input_ds, batch_size, drop_remainder):
        size, drop = _int(batch_size), bool(drop_remainder)
        card = _batched_cardinality(input_ds.cardinality, size, drop)
        if isinstance(input_ds, _Rows) and all(isinstance(a, np.ndarray) for a in input_ds.arrays) and all(
                w == 1 for w in widths):
            return _Gen(lambda: _row_batches(node, input_ds, size, drop), card)
        return _Gen(lambda: _batches(node, input_ds.elements(), size, drop,
                                     lambda buf: _batch_element(node, buf, widths)), card)
    return run


def _padded_kernel(node, ctx):
    n = node.attr["num_components"]

    def run(input_ds, batch_size, drop_remainder, *rest):
        shapes = [np.asarray(s, np.int64).reshape(-1) for s in rest[:n]]
        values = list(rest[n:])

        def make(buf):
            out = []
            for c in range(n):
                items = [np.asarray(e[c]) if not isinstance(e[c], bytes) else np.asarray(e[c], dtype=object)
                         for e in buf]
                rank = items[0].ndim
                if len(shapes[c]) != rank or any(x.ndim != rank for x in items):
                    raise errors.InvalidArgumentError(node, node.name, f"The padded shape of component {c} has "
                                                                       f"rank {len(shapes[c])}, its elements rank "
                                                                       f"{rank}")
                biggest = np.max([x.shape for x in items], axis=0) if rank else np.zeros(0, np.int64)
                target = [int(b) if s < 0 else int(s) for s, b in zip(shapes[c], biggest)]
                for x in items:
                    if any(d > t for d, t in zip(x.shape, target)):
                        raise errors.InvalidArgumentError(node, node.name, f"Attempted to pad to a smaller size "
                                                                           f"than the input element: {list(x.shape)} "
                                                                           f"> {target} (component {c})")
                check_output_size(node, [len(items)] + target)
                arr = np.full([len(items)] + target, values[c], dtype=items[0].dtype)
                for i, x in enumerate(items):
                    arr[(i,) + tuple(slice(0, d) for d in x.shape)] = x
                out.append(arr)
            return out
        size, drop = _int(batch_size), bool(drop_remainder)
        return _Gen(lambda: _batches(node, input_ds.elements(), size, drop, make),
                    _batched_cardinality(input_ds.cardinality, size, drop))
    return run


def _window_kernel(node, ctx):
    widths = node.attr["leaf_widths"]
    starts = np.cumsum([0] + widths[:-1]).tolist()

    def run(input_ds, size, shift, stride, drop_remainder):
        size, shift, stride, drop = _int(size), _int(shift), _int(stride), bool(drop_remainder)
        for name, v in (("size", size), ("shift", shift), ("stride", stride)):
            if v <= 0:
                raise errors.InvalidArgumentError(node, node.name, f"Window {name} must be positive, got {v}")
        span = (size - 1) * stride + 1

        def as_datasets(window: list) -> list:
            return [_window_value([e[c:c + w] for e in window]) for c, w in zip(starts, widths)]

        def elements():
            source = input_ds.elements()
            buf: list = []
            base = start = 0        # buf[0] is element `base`; the next window starts at `start`
            exhausted = False
            while True:
                while not exhausted and len(buf) < start - base + span:
                    e = next(source, None)
                    if e is None:
                        exhausted = True
                    elif passes(e):
                        yield e
                    else:
                        buf.append(e)
                window = buf[start - base:start - base + span:stride]
                if not window or drop and len(window) < size:
                    return
                yield as_datasets(window)
                start += shift
                cut = min(start - base, len(buf))
                del buf[:cut]
                base += cut
        n = input_ds.cardinality
        if n >= 0:
            n = max(0, (n - span) // shift + 1) if drop and n >= span else 0 if drop else -(-n // shift)
        return _Gen(elements, n)
    return run


_register("BatchDatasetV2", _batch_kernel)
_register("WindowDataset", _window_kernel)
_register("PaddedBatchDatasetV2", _padded_kernel)


# -- order and count -----------------------------------------------------------------------------
_DRAWS = 256   # bounded draws shuffle takes from numpy per call while it streams


def _bounded_draws(rng: np.random.Generator, highs: Iterator) -> Iterator:
    """int(rng.integers(h)) for each h of each array of `highs`, drawn an array per numpy call
    (one call costs as much as ~150 draws of an array). The values, and rng after them, are those
    of one call per draw: closed before its last draw is taken, it rewinds rng to where the draws
    taken would have left it (unless rng was drawn from meanwhile)."""
    for high in highs:
        before = rng.bit_generator.state
        values = rng.integers(high).tolist()
        after, taken = rng.bit_generator.state, 0
        try:
            for taken, v in enumerate(values, 1):
                yield v
        finally:
            if taken < len(values) and rng.bit_generator.state == after:
                rng.bit_generator.state = before
                rng.integers(high[:taken])


def _shuffled(source: Iterator, rng: np.random.Generator, size: int) -> Iterator:
    """source's elements through a shuffle buffer of `size` (TF's ShuffleDataset): each element
    read replaces, and yields, a random one of the buffer; at the end the buffer drains in random
    order."""
    buf: list = []
    for e in source:
        if e is NOT_READY:
            yield e
            continue
        buf.append(e)
        if len(buf) == size:
            break
    with contextlib.closing(_bounded_draws(rng, repeat(np.full(_DRAWS, size)))) as draws:
        for e in source:
            if e is NOT_READY:
                yield e
                continue
            j = next(draws)
            yield buf[j]
            buf[j] = e
    with contextlib.closing(_bounded_draws(rng, [np.arange(len(buf), 0, -1)])) as draws:
        for j in draws:
            buf[j], buf[-1] = buf[-1], buf[j]
            yield buf.pop()


def _shuffle_kernel(node, ctx):
    reshuffle = node.attr["reshuffle_each_iteration"]
    seeds = [int(node.attr.get("seed", 0) or 0), int(node.attr.get("seed2", 0) or 0)]

    def run(input_ds, buffer_size):
        size = _int(buffer_size)
        if size <= 0:
            raise errors.InvalidArgumentError(node, node.name, f"buffer_size must be greater than zero, got {size}")
        # As TF's ShuffleDataset: each dataset made (an iterator's initialization) has its own
        # seed generator, seeded alike every time when the op is, and each pass over it (an
        # epoch of a repeat) takes its seed from it once, at its start, for a generator of its
        # own. So a seeded iterator shuffles alike after every initialization, and no pass's
        # order depends on another's reads (its length, or the timing of concurrent runs).
        source = np.random.default_rng(seeds if any(seeds) else None)
        fixed_seed = int(source.integers(1 << 62))

        def elements(start):
            seed = int(source.integers(1 << 62)) if reshuffle else fixed_seed
            return _shuffled(start(), np.random.default_rng(seed), size)
        return _stage(input_ds, elements, input_ds.cardinality)
    return run


def _repeat_kernel(node, ctx):
    def run(input_ds, count):
        n = _int(count)

        def elements(start):
            done = 0
            while n < 0 or done < n:
                empty = True
                source = start()
                for e in source:
                    yield e
                    if e is not NOT_READY:
                        empty = False
                        break
                yield from source   # (the rest of the pass without a Python step per element)
                done += 1
                if empty:   # an empty dataset repeated forever is still empty
                    return
        card = input_ds.cardinality
        if n == 0 or card == 0:
            card = 0
        elif card == UNKNOWN or card == INFINITE:
            pass
        else:
            card = INFINITE if n < 0 else card * n
        return _stage(input_ds, elements, card)
    return run


def _take_kernel(node, ctx):
    def run(input_ds, count):
        n = _int(count)

        def elements(start):
            if n == 0:
                return
            taken = 0
            for e in start():
                yield e
                taken += e is not NOT_READY
                if taken == n:
                    return
        card = input_ds.cardinality
        if n >= 0 and card != UNKNOWN:
            card = n if card == INFINITE else min(card, n)
        return _stage(input_ds, elements, card)
    return run


def _skip_kernel(node, ctx):
    def run(input_ds, count):
        n = _int(count)

        def elements(start):
            seen = 0
            for e in start():
                if e is NOT_READY:
                    yield e
                    continue
                seen += 1
                if 0 <= n < seen:
                    yield e
        card = input_ds.cardinality
        if card >= 0:
            card = 0 if n < 0 else max(0, card - n)
        return _stage(input_ds, elements, card)
    return run


def _shard_kernel(node, ctx):
    def run(input_ds, num_shards, index):
        n, k = _int(num_shards), _int(index)
        if n <= 0:
            raise errors.InvalidArgumentError(node, node.name, f"Number of shards must be greater than zero (currently "
                                                               f"num_shards = {n}).")
        if not 0 <= k < n:
            raise errors.InvalidArgumentError(node, node.name, f"Index must be between 0 and {n - 1} (currently index "
                                                               f"= {k}).")
        def elements(start):
            i = 0
            for e in start():
                if e is NOT_READY:
                    yield e
                    continue
                if i % n == k:
                    yield e
                i += 1
        card = input_ds.cardinality
        return _stage(input_ds, elements, card // n + (k < card % n) if card >= 0 else card)
    return run


def _prefetch_kernel(node, ctx):
    def run(input_ds, buffer_size):
        size = _int(buffer_size)
        size = 2 if size < 0 else size   # AUTOTUNE
        if size == 0:
            return input_ds
        return _Gen(lambda: pipeline.run_ahead(input_ds.elements, size, node.name), input_ds.cardinality)
    return run


def _encode_element(element: list) -> bytes:
    """One element as msgpack: [dtype, shape, bytes or a list of bytes] per component."""
    parts = []
    for v in element:
        a = np.asarray(v) if not isinstance(v, bytes) else np.asarray(v, dtype=object)
        if a.dtype == object:
            parts.append(["string", list(a.shape), [bytes(x) for x in a.reshape(-1)]])
        else:
            parts.append([a.dtype.str, list(a.shape), np.ascontiguousarray(a).tobytes()])
    return msgpack.packb(parts, use_bin_type=True)


def _decode_element(node, raw: bytes, path: str) -> list:
    try:
        parts = msgpack.unpackb(raw, raw=False)
        out = []
        for dt, shape, data in parts:
            if dt == "string":
                a = np.empty(len(data), dtype=object)
                a[:] = [bytes(x) for x in data]
                a = a.reshape(shape)
                out.append(a[()] if a.ndim == 0 else a)
            else:
                a = np.frombuffer(data, dtype=np.dtype(dt)).reshape(shape)
                out.append(a[()] if a.ndim == 0 else a)
        return out
    except (ValueError, TypeError, msgpack.exceptions.ExtraData) as e:
        raise errors.DataLossError(node, node.name, f"Damaged cache file {path}: {e}") from None


def _cache_kernel(node, ctx):
    def run(input_ds, filename):
        path = bytes(string_array(filename)[()]).decode()
        cached: list = []
        complete = threading.Event()

        def in_memory():
            if complete.is_set():
                yield from cached
                return
            seen = []
            for e in input_ds.elements():
                if e is not NOT_READY:
                    seen.append(e)
                yield e
            if not complete.is_set():
                cached[:] = seen
                complete.set()

        def on_disk():
            final = path + ".tw-cache"
            if os.path.exists(final):
                for rec in record_files.tfrecords(final, "", node):
                    yield _decode_element(node, rec, final)
                return
            tmp = f"{final}.tmp{os.getpid()}.{threading.get_ident()}"
            writer = TFRecordWriter(tmp)
            done = False
            try:
                for e in input_ds.elements():
                    if not passes(e):
                        writer.write(_encode_element(e))
                    yield e
                done = True
            finally:
                writer.close()
                if done:
                    os.replace(tmp, final)   # a cache file exists only once whole
                elif os.path.exists(tmp):
                    os.remove(tmp)
        return _Gen(on_disk if path else in_memory, input_ds.cardinality)
    return run


def _concat_kernel(node, ctx):
    def run(first, second):
        def elements():
            yield from first.elements()
            yield from second.elements()
        a, b = first.cardinality, second.cardinality
        return _Gen(elements, INFINITE if INFINITE in (a, b) else UNKNOWN if UNKNOWN in (a, b) else a + b)
    return run


def _zip_kernel(node, ctx):
    def run(*datasets):
        def elements():
            sources = [d.elements() for d in datasets]
            while True:
                parts = []
                for s in sources:
                    while True:
                        try:
                            part = next(s)
                        except StopIteration:
                            return
                        if part is not NOT_READY:
                            break
                        yield part
                    parts.append(part)
                bad = next((p for p in parts if isinstance(p, ElementError)), None)
                yield bad if bad is not None else [c for p in parts for c in p]
        counts = [d.cardinality for d in datasets]
        known = [c for c in counts if c >= 0]
        card = UNKNOWN if UNKNOWN in counts else min(known) if known else INFINITE
        return _Gen(elements, card)
    return run


_register("ShuffleDataset", _shuffle_kernel, stateful=True)
_register("RepeatDataset", _repeat_kernel)
_register("TakeDataset", _take_kernel)
_register("SkipDataset", _skip_kernel)
_register("ShardDataset", _shard_kernel)
_register("PrefetchDataset", _prefetch_kernel)
_register("OptionsDataset", lambda node, ctx: lambda input_ds: input_ds)   # options act at iterator creation


def _private_threadpool_kernel(node, ctx):
    def run(input_ds, num_threads):
        threads = _int(num_threads)
        if threads <= 0:
            return input_ds
        return _Gen(lambda: pipeline.with_thread_cap(input_ds.elements(), threads), input_ds.cardinality)
    return run


_register("PrivateThreadPoolDataset", _private_threadpool_kernel)
_register("CacheDataset", _cache_kernel, stateful=True)
_register("ConcatenateDataset", _concat_kernel)
_register("ZipDataset", _zip_kernel)


# -- tf.data.experimental's transformations --------------------------------------------------------
def _functions(node, ctx, captured: tuple, names: list) -> list:
    """The dataset functions in attrs `names`, whose captured values follow the op's inputs in
    that order (attr `captures`: how many each has)."""
    out, at = [], 0
    for name, n in zip(names, node.attr["captures"]):
        out.append(_Function(node, ctx, captured[at:at + n], name))
        at += n
    return out


def _unbatch_kernel(node, ctx):
    def split(element):
        n = len(element[0]) if element and np.ndim(element[0]) else 0
        for i, c in enumerate(element):
            if np.ndim(c) == 0 or len(c) != n:
                raise errors.InvalidArgumentError(node, node.name, f"unbatch: component {i} has first dimension "
                                                                   f"{len(c) if np.ndim(c) else 'none (a scalar)'}, "
                                                                   f"component 0 has {n}")
        return [[c[j] for c in element] for j in range(n)]

    def run(input_ds):
        def elements():
            for e in input_ds.elements():
                parts = _safe(split, e)
                if passes(parts):
                    yield parts
                else:
                    yield from parts
        return _Gen(elements)
    return run


def _scan_kernel(node, ctx):
    num_state = node.attr["num_state"]

    def run(input_ds, *rest):
        initial, fn = list(rest[:num_state]), _Function(node, ctx, rest[num_state:])

        def elements():
            state = initial
            for e in input_ds.elements():
                out = _safe(lambda x: fn(state + x), e)
                if passes(out):
                    yield out
                    continue
                state = list(out[:num_state])
                yield list(out[num_state:])
        return _Gen(elements, input_ds.cardinality)
    return run


def _take_while_kernel(node, ctx):
    def run(input_ds, *captured):
        fn = _Function(node, ctx, captured)

        def elements():
            for e in input_ds.elements():
                verdict = _safe(lambda x: [bool(fn(x)[0])], e)
                if passes(verdict):
                    yield verdict
                elif not verdict[0]:
                    return
                else:
                    yield e
        return _Gen(elements)
    return run


def _unique_kernel(node, ctx):
    def run(input_ds):
        def elements():
            seen = set()
            for e in input_ds.elements():
                if passes(e):
                    yield e
                    continue
                key = e[0] if isinstance(e[0], bytes) else np.asarray(e[0]).item()
                if key not in seen:
                    seen.add(key)
                    yield e
        return _Gen(elements)
    return run


def _ignore_errors_kernel(node, ctx):
    def run(input_ds):
        return _Gen(lambda: (e for e in input_ds.elements() if not isinstance(e, ElementError)))
    return run


def _group_by_window_kernel(node, ctx):
    def run(input_ds, *captured):
        key_fn, reduce_fn, size_fn = _functions(node, ctx, captured, ["key_func", "reduce_func", "window_size_func"])

        def key_of(element):
            return [np.int64(key_fn(element)[0])]

        def reduced(key, window: list) -> Iterator:
            try:
                yield from reduce_fn([np.int64(key), _window_value(window)])[0].elements()
            except Exception as e:  # noqa: BLE001 - the failure belongs to this window
                yield pipeline.as_element_error(e)

        def elements():
            groups: dict = {}
            sizes: dict = {}
            for e in input_ds.elements():
                key = _safe(key_of, e)
                if passes(key):
                    yield key
                    continue
                key = int(key[0])
                if key not in sizes:
                    size = _int(size_fn([np.int64(key)])[0])
                    if size <= 0:
                        yield ElementError(errors.InvalidArgumentError(
                            node, node.name, f"group_by_window: window size must be greater than zero, got {size}"))
                        continue
                    sizes[key] = size
                groups.setdefault(key, []).append(e)
                if len(groups[key]) == sizes[key]:
                    yield from reduced(key, groups.pop(key))
            for key in sorted(groups):   # TF flushes the partial windows in key order
                yield from reduced(key, groups.pop(key))
        return _Gen(elements)
    return run


def _group_by_reducer_kernel(node, ctx):
    n_state = node.attr["num_state"]

    def run(input_ds, *captured):
        key_fn, init_fn, reduce_fn, finalize_fn = _functions(
            node, ctx, captured, ["key_func", "init_func", "reduce_func", "finalize_func"])

        def elements():
            states: dict = {}   # in the order keys first appear, the order TF finalizes them
            for e in input_ds.elements():
                if passes(e):
                    yield e
                    continue
                try:
                    key = np.int64(key_fn(e)[0])
                    state = states[int(key)] if int(key) in states else list(init_fn([key]))
                    states[int(key)] = list(reduce_fn(state + list(e)))[:n_state]
                except Exception as err:  # noqa: BLE001 - the failure belongs to this element
                    yield pipeline.as_element_error(err)
            for state in states.values():
                yield _safe(finalize_fn, state)
        return _Gen(elements)
    return run


def _directed_interleave_kernel(node, ctx):
    stop_on_empty = node.attr.get("stop_on_empty_dataset", False)

    def run(selector, *inputs):
        def elements():
            sources = [d.elements() for d in inputs]
            live = [True] * len(sources)
            for choice in selector.elements():
                if passes(choice):
                    yield choice
                    continue
                i = int(np.asarray(choice[0]))
                if not 0 <= i < len(sources):
                    yield ElementError(errors.InvalidArgumentError(
                        node, node.name, f"Selector index out of range: {i} >= {len(sources)}"))
                    return
                while live[i]:
                    try:
                        e = next(sources[i])
                    except StopIteration:
                        live[i] = False
                        break
                    yield e
                    if e is not NOT_READY:
                        break
                if not live[i]:
                    if stop_on_empty or not any(live):
                        return
                    if pipeline.give_up():   # choices of exhausted inputs only: let a cancelled step go
                        yield NOT_READY
        return _Gen(elements)
    return run


def _random_kernel(node, ctx):
    def run(seed, seed2):
        seeds = [_int(seed), _int(seed2)]

        def elements():   # TF's values: uniform 32-bit draws, the same each pass when seeded
            gen = np.random.default_rng(seeds if any(seeds) else None)
            while True:
                yield [np.int64(gen.integers(0, 1 << 32))]
        return _Gen(elements, INFINITE)
    return run


def _dense_to_sparse_batch_kernel(node, ctx):
    def run(input_ds, batch_size, row_shape):
        size, limit = _int(batch_size), [int(d) for d in np.asarray(row_shape).reshape(-1)]

        def make(buf):
            rows, values, biggest = [], [], [0] * len(limit)
            for b, e in enumerate(buf):
                x = np.asarray(e[0]) if not isinstance(e[0], bytes) else np.asarray(e[0], dtype=object)
                if x.ndim != len(limit) or any(0 <= lim < d for d, lim in zip(x.shape, limit)):
                    raise errors.InvalidArgumentError(node, node.name, f"dense_to_sparse_batch: an element of shape "
                                                                       f"{list(x.shape)} does not fit row_shape "
                                                                       f"{limit}")
                biggest = [max(m, d) for m, d in zip(biggest, x.shape)]
                idx = np.indices(x.shape).reshape(x.ndim, -1).T
                rows.append(np.concatenate([np.full((len(idx), 1), b), idx], 1).astype(np.int64))
                values.append(x.reshape(-1))
            shape = [len(buf)] + [m if lim < 0 else lim for m, lim in zip(biggest, limit)]
            return [np.concatenate(rows), np.concatenate(values), np.asarray(shape, np.int64)]
        return _Gen(lambda: _batches(node, input_ds.elements(), size, False, make),
                    _batched_cardinality(input_ds.cardinality, size, False))
    return run


def _assert_cardinality_kernel(node, ctx):
    def run(input_ds, expected):
        n = _int(expected)

        def failure(what: str) -> ElementError:
            return ElementError(errors.FailedPreconditionError(
                node, node.name, f"Input dataset was expected to contain {n} elements but contained {what}."))

        def elements():
            count = 0
            for e in input_ds.elements():
                count += not passes(e)
                if n >= 0 and count > n:
                    yield failure(f"at least {count} elements")
                    return
                yield e
            if count != n:
                yield failure(f"only {count} elements")
        return _Gen(elements, n)
    return run


_register("UnbatchDataset", _unbatch_kernel)
_register("ScanDataset", _scan_kernel)
_register("TakeWhileDataset", _take_while_kernel)
_register("UniqueDataset", _unique_kernel)
_register("IgnoreErrorsDataset", _ignore_errors_kernel)
_register("GroupByWindowDataset", _group_by_window_kernel)
_register("GroupByReducerDataset", _group_by_reducer_kernel)
_register("DirectedInterleaveDataset", _directed_interleave_kernel)
_register("RandomDataset", _random_kernel, stateful=True)
_register("DenseToSparseBatchDataset", _dense_to_sparse_batch_kernel)
_register("AssertCardinalityDataset", _assert_cardinality_kernel)


# -- readers of CSV files and SQL queries -------------------------------------------------------------
def _csv_records(lines: Iterator, quoted: bool) -> Iterator:
    """The records of a CSV file's lines: a quoted field may hold line breaks, as in TF."""
    pending = None
    for line in lines:
        record = line if pending is None else pending + b"\n" + line
        if quoted and record.count(b'"') % 2:
            pending = record
            continue
        pending = None
        yield record
    if pending is not None:
        yield pending   # an unterminated quote: the parser names it


def _csv_kernel(node, ctx):
    """CSVDataset and CSVDatasetV2 (TF's inputs; V2 ends with exclude_cols)."""
    types = [dtypes.as_dtype(t) for t in node.attr["output_types"]]

    def records(path: bytes, kind: str, options: tuple, defaults: list) -> Iterator:
        header, delim, quoted, na, select, exclude = options
        name = path.decode("utf-8", "replace")
        for r, line in enumerate(_csv_records(record_files.text_lines(path, kind, node), quoted)):
            if r < header:
                continue
            where = f"record {r} of {name}"
            try:
                cols = select
                if exclude:
                    width = len(decoding.split_csv(node, line, delim, quoted, where))
                    cols = [c for c in range(width) if c not in exclude]
                fields = decoding.csv_fields(node, line, delim, quoted, cols, len(types), where)
                yield [decoding.csv_value(node, f, d, dt, na, c, where)
                       for c, (f, d, dt) in enumerate(zip(fields, defaults, types))]
            except errors.OpError as e:
                yield ElementError(e)

    def text(x) -> bytes:
        return bytes(string_array(x)[()])

    def run(filenames, compression, buffer_size, header, field_delim, use_quote_delim, na_value, select_cols,
            *rest):
        names = _filenames(node, filenames)
        kind = record_files.compression_of(text(compression).decode())
        defaults = list(rest[:len(types)])
        exclude = set(np.asarray(rest[len(types)]).reshape(-1).tolist()) if len(rest) > len(types) else set()
        options = (bool(header), text(field_delim), bool(use_quote_delim), text(na_value),
                   np.asarray(select_cols).reshape(-1).tolist(), exclude)
        return _Gen(lambda: _files_of(node, names, lambda f: records(f, kind, options, defaults)))
    return run


def _files_of(node, names: list, read: Callable[[bytes], Iterator]) -> Iterator:
    """The elements of each file in turn; a file that fails to open ends with its error."""
    for name in names:
        try:
            yield from read(name)
        except errors.OpError as e:
            yield ElementError(e)


def _sql_value(node, value, dt, col: int):
    if dt is dtypes.string:
        if isinstance(value, (str, bytes)):
            return value.encode() if isinstance(value, str) else value
    elif dt is dtypes.bool:
        if isinstance(value, int):
            return np.bool_(value)
    elif dt.is_integer:
        if isinstance(value, int):
            info = np.iinfo(dt.as_numpy_dtype)
            if info.min <= value <= info.max:
                return dt.as_numpy_dtype(value)
    elif isinstance(value, (int, float)):
        return dt.as_numpy_dtype(value)
    raise errors.InvalidArgumentError(node, node.name, f"SqlDataset: column {col} holds {value!r}, which is not a "
                                                       f"{dt.name}")


def _sql_kernel(node, ctx):
    types = [dtypes.as_dtype(t) for t in node.attr["output_types"]]

    def run(driver, source, query):
        driver = bytes(string_array(driver)[()]).decode()
        if driver != "sqlite":
            raise errors.InvalidArgumentError(node, node.name, f"SqlDataset: the only supported database driver "
                                                               f"is 'sqlite', got {driver!r}")
        path, text = bytes(string_array(source)[()]).decode(), bytes(string_array(query)[()]).decode()

        def elements():
            try:   # read-only, as TF opens it: a query cannot change the database
                db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            except sqlite3.Error as e:
                yield ElementError(errors.InvalidArgumentError(node, node.name, f"SqlDataset: cannot open {path}: "
                                                                                f"{e}"))
                return
            try:
                try:
                    cursor = db.execute(text)
                except sqlite3.Error as e:
                    yield ElementError(errors.InvalidArgumentError(node, node.name, f"SqlDataset: query {text!r} on "
                                                                                    f"{path} failed: {e}"))
                    return
                if len(cursor.description or ()) != len(types):
                    yield ElementError(errors.InvalidArgumentError(
                        node, node.name, f"SqlDataset: the query gives {len(cursor.description or ())} columns, "
                                         f"output_types has {len(types)}"))
                    return
                for row in cursor:
                    yield _safe(lambda r: [_sql_value(node, v, dt, c) for c, (v, dt) in enumerate(zip(r, types))],
                                list(row))
            finally:
                db.close()
        return _Gen(elements)
    return run


_register("CSVDataset", _csv_kernel, stateful=True)
_register("CSVDatasetV2", _csv_kernel, stateful=True)
_register("SqlDataset", _sql_kernel, stateful=True)


# -- ops that run a dataset to its end -------------------------------------------------------------
def _component_outputs(op) -> list:
    return list(zip(op.get_attr("output_types"), op.get_attr("output_shapes")))


def _whole_pass(node, dataset: DatasetValue) -> Iterator:
    """The elements of one pass, an element's failure raised."""
    for e in dataset.elements():
        if isinstance(e, ElementError):
            raise e.error
        if e is not NOT_READY:
            yield e


def _single_element_kernel(node, ctx):
    def run(dataset):
        found = None
        for i, e in enumerate(_whole_pass(node, dataset)):
            if i:
                raise errors.InvalidArgumentError(node, node.name, "Dataset had more than one element.")
            found = e
        if found is None:
            raise errors.InvalidArgumentError(node, node.name, "Dataset was empty.")
        return found[0] if len(found) == 1 else tuple(found)
    return run


def _reduce_kernel(node, ctx):
    num_state = node.attr["num_state"]

    def run(dataset, *rest):
        state, fn = list(rest[:num_state]), _Function(node, ctx, rest[num_state:])
        for e in _whole_pass(node, dataset):
            state = list(fn(state + list(e)))
        return state[0] if len(state) == 1 else tuple(state)
    return run


def _cardinality_kernel(node, ctx):
    return lambda dataset: np.int64(dataset.cardinality)


def _to_tfrecord_kernel(node, ctx):
    def run(dataset, filename, compression):
        path = bytes(string_array(filename)[()]).decode()
        writer = TFRecordWriter(path, bytes(string_array(compression)[()]).decode())
        try:
            for e in _whole_pass(node, dataset):
                if not isinstance(e[0], bytes):
                    raise errors.InvalidArgumentError(node, node.name, "TFRecordWriter writes a dataset of scalar "
                                                                       "strings")
                writer.write(e[0])
        finally:
            writer.close()
    return run


register("DatasetToSingleElement", _component_outputs, _single_element_kernel, grad=None, stateful=True)
register("ReduceDataset", _component_outputs, _reduce_kernel, grad=None, stateful=True)
register("DatasetCardinality", lambda op: [(dtypes.int64, TensorShape([]))], _cardinality_kernel, grad=None)
register("DatasetToTFRecord", lambda op: [], _to_tfrecord_kernel, grad=None, stateful=True)
