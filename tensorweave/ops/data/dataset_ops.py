"""Dataset ops: each outputs a `variant` whose run-time value is a pipeline.DatasetValue built
from its inputs (scalar parameters are tensors, as TF's; functions are FuncGraphs in attr `f`
whose captured tensors follow the op's own inputs). Building a dataset value runs nothing: the
elements flow only when an iterator pulls them."""
from __future__ import annotations

import os
import threading
from typing import Callable, Iterator

import msgpack
import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.shapes import TensorShape
from tensorweave.ops.data import pipeline
from tensorweave.ops.data.pipeline import NOT_READY, DatasetValue, ElementError, passes
from tensorweave.ops.helpers import check_output_size, string_array
from tensorweave.ops.io import record_files
from tensorweave.ops.io.tfrecord import TFRecordWriter
from tensorweave.ops.random import op_generator
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
    """A dataset function (attr `f`) with its captured values."""

    def __init__(self, node, ctx, captured: tuple):
        self.plan = ctx.function_plan(node.attr["f"])
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
    def __init__(self, make: Callable[[], Iterator]):
        self._make = make

    def elements(self) -> Iterator:
        return self._make()


def _tensor_kernel(node, ctx):
    def run(*components):
        comps = list(components)
        return _Gen(lambda: iter([comps]))
    return run


def _slices(node, comps: list) -> Iterator:
    n = len(np.asarray(comps[0])) if comps and np.ndim(comps[0]) else None
    for i, c in enumerate(comps):
        if np.ndim(c) == 0:
            raise errors.InvalidArgumentError(node, node.name, f"Component {i} of from_tensor_slices is a scalar")
        if len(c) != n:
            raise errors.InvalidArgumentError(node, node.name, f"Dimensions {n} and {len(c)} are not compatible "
                                                               f"(component {i} of from_tensor_slices)")
    for j in range(n or 0):
        yield [c[j] for c in comps]


def _slice_kernel(node, ctx):
    def run(*components):
        comps = [np.asarray(c, dtype=object) if isinstance(c, bytes) else c for c in components]
        return _Gen(lambda: _slices(node, comps))
    return run


def _range_kernel(node, ctx):
    def run(start, stop, step):
        start, stop, step = _int(start), _int(stop), _int(step)
        if step == 0:
            raise errors.InvalidArgumentError(node, node.name, "step must be a non-zero integer.")
        return _Gen(lambda: ([np.int64(i)] for i in range(start, stop, step)))
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
        return _Gen(elements)
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


def _batch_kernel(node, ctx):
    widths = node.attr["leaf_widths"]

    def run(input_ds, batch_size, drop_remainder):
        size, drop = _int(batch_size), bool(drop_remainder)
        return _Gen(lambda: _batches(node, input_ds.elements(), size, drop,
                                     lambda buf: _batch_element(node, buf, widths)))
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
        return _Gen(lambda: _batches(node, input_ds.elements(), _int(batch_size), bool(drop_remainder), make))
    return run


_register("BatchDatasetV2", _batch_kernel)
_register("PaddedBatchDatasetV2", _padded_kernel)


# -- order and count -----------------------------------------------------------------------------
def _shuffle_kernel(node, ctx):
    reshuffle = node.attr["reshuffle_each_iteration"]
    seeded = bool(node.attr.get("seed", 0) or node.attr.get("seed2", 0))

    def run(input_ds, buffer_size):
        size = _int(buffer_size)
        if size <= 0:
            raise errors.InvalidArgumentError(node, node.name, f"buffer_size must be greater than zero, got {size}")
        shared = op_generator(node, ctx) if seeded else np.random.default_rng()
        fixed_seed = int(shared.integers(1 << 62))

        def elements():
            rng = shared if reshuffle else np.random.default_rng(fixed_seed)
            buf: list = []
            source = input_ds.elements()
            for e in source:
                if e is NOT_READY:
                    yield e
                    continue
                buf.append(e)
                if len(buf) == size:
                    break
            for e in source:
                if e is NOT_READY:
                    yield e
                    continue
                j = int(rng.integers(len(buf)))
                yield buf[j]
                buf[j] = e
            while buf:
                j = int(rng.integers(len(buf)))
                buf[j], buf[-1] = buf[-1], buf[j]
                yield buf.pop()
        return _Gen(elements)
    return run


def _repeat_kernel(node, ctx):
    def run(input_ds, count):
        n = _int(count)

        def elements():
            done = 0
            while n < 0 or done < n:
                empty = True
                for e in input_ds.elements():
                    empty = empty and e is NOT_READY
                    yield e
                done += 1
                if empty:   # an empty dataset repeated forever is still empty
                    return
        return _Gen(elements)
    return run


def _take_kernel(node, ctx):
    def run(input_ds, count):
        n = _int(count)

        def elements():
            if n == 0:
                return
            taken = 0
            for e in input_ds.elements():
                yield e
                taken += e is not NOT_READY
                if taken == n:
                    return
        return _Gen(elements)
    return run


def _skip_kernel(node, ctx):
    def run(input_ds, count):
        n = _int(count)

        def elements():
            seen = 0
            for e in input_ds.elements():
                if e is NOT_READY:
                    yield e
                    continue
                seen += 1
                if 0 <= n < seen:
                    yield e
        return _Gen(elements)
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
        def elements():
            i = 0
            for e in input_ds.elements():
                if e is NOT_READY:
                    yield e
                    continue
                if i % n == k:
                    yield e
                i += 1
        return _Gen(elements)
    return run


def _prefetch_kernel(node, ctx):
    def run(input_ds, buffer_size):
        size = _int(buffer_size)
        size = 2 if size < 0 else size   # AUTOTUNE
        if size == 0:
            return input_ds
        return _Gen(lambda: pipeline.run_ahead(input_ds.elements, size, node.name))
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
        return _Gen(on_disk if path else in_memory)
    return run


def _concat_kernel(node, ctx):
    def run(first, second):
        def elements():
            yield from first.elements()
            yield from second.elements()
        return _Gen(elements)
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
        return _Gen(elements)
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
        return _Gen(lambda: pipeline.with_thread_cap(input_ds.elements(), threads)) if threads > 0 else input_ds
    return run


_register("PrivateThreadPoolDataset", _private_threadpool_kernel)
_register("CacheDataset", _cache_kernel, stateful=True)
_register("ConcatenateDataset", _concat_kernel)
_register("ZipDataset", _zip_kernel)
