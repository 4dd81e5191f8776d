"""Reader ops: stateful readers, resources of their task like queues, that take file names
(work units) from a queue and produce (key, value) records: FixedLengthRecordReader,
TFRecordReader (with compression), TextLineReader, WholeFileReader, IdentityReader.

A reader reads one work unit at a time; when it is done it dequeues the next (blocking, as a
dequeue does; a closed, empty queue is OutOfRangeError). A file that fails (missing, damaged) is
TF's error naming it, and the reader drops that file so the next read goes on with the next.
Keys are TF's: "file:record number" (FixedLength, TextLine: 1-based line), "file:offset"
(TFRecord), the file name (WholeFile), the work unit itself (Identity).
"""
from __future__ import annotations

import threading
from typing import Callable, Iterator, Optional

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.data_flow.waiting import interruption
from tensorweave.ops.helpers import invalid, make_op, string_array, string_result
from tensorweave.ops.io import record_files
from tensorweave.ops.io.tfrecord import RecordFile, TFRecordOptions
from tensorweave.ops.registry import register


class ReaderResource:
    """A reader's state: the work unit in progress and its record generator, and counters."""

    def __init__(self, name: str, records: Callable[[bytes, object], Iterator]):
        self.name = name
        self._records = records          # (work unit, node) -> iterator of (key, value)
        self._lock = threading.Lock()
        self._current: Optional[Iterator] = None
        self.produced = 0
        self.completed = 0

    def _acquire(self, step, node) -> None:
        while not self._lock.acquire(timeout=0.05):
            err = interruption(step, node, f"reader '{self.name}'")
            if err is not None:
                raise err

    def _next_work(self, step, node, queue) -> None:
        work = queue.dequeue_many(step, node, 1)[0][0]
        self._current = self._records(bytes(string_array(work)[()]), node)

    def read(self, step, node, queue, n: int) -> list:
        """Up to `n` (key, value) records, all from one work unit (at least one)."""
        self._acquire(step, node)
        try:
            out: list = []
            while len(out) < n:
                if self._current is None:
                    if out:
                        break
                    self._next_work(step, node, queue)
                try:
                    out.append(next(self._current))
                except StopIteration:
                    self._current = None
                    self.completed += 1
                except errors.OpError:
                    self._current = None   # the damaged file is dropped: the next read moves on
                    self.completed += 1
                    raise
            self.produced += len(out)
            return out
        finally:
            self._lock.release()

    def reset(self) -> None:
        with self._lock:
            self._current = None
            self.produced = self.completed = 0

    def close_on_reset(self) -> None:
        self._current = None


def _numbered(work: bytes, values: Iterator, start: int = 0) -> Iterator:
    for i, v in enumerate(values, start):
        yield work + b":" + str(i).encode(), v


def _fixed_records(node) -> Callable:
    a = node.attr
    kind = record_files.compression_of(a.get("encoding", ""))

    record_files.check_record_sizes(node, **{k: a[k] for k in ("record_bytes", "header_bytes", "footer_bytes",
                                                                "hop_bytes")})

    def records(work: bytes, n):
        return _numbered(work, record_files.fixed_length_records(
            work, a["record_bytes"], a["header_bytes"], a["footer_bytes"], a["hop_bytes"], node=n, strict=False,
            compression=kind))
    return records


def _tfrecords(node) -> Callable:
    kind = record_files.compression_of(node.attr.get("compression_type", ""))

    def records(work: bytes, n):
        f = RecordFile(work, kind, n)
        while True:
            offset = f.offset
            rec = f.read()
            if rec is None:
                f.close()
                return
            yield work + b":" + str(offset).encode(), rec
    return records


def _text_lines(node) -> Callable:
    skip = node.attr.get("skip_header_lines", 0)
    return lambda work, n: _numbered(work, record_files.text_lines(work, node=n, skip_header_lines=skip), skip + 1)


def _whole_file(node) -> Callable:
    return lambda work, n: iter([(work, record_files.whole_file(work, n))])


def _identity(node) -> Callable:
    return lambda work, n: iter([(work, work)])


_KINDS = {"FixedLengthRecordReaderV2": _fixed_records, "TFRecordReaderV2": _tfrecords,
          "TextLineReaderV2": _text_lines, "WholeFileReaderV2": _whole_file, "IdentityReaderV2": _identity}


def _reader_kernel(node, ctx):
    name = node.attr.get("shared_name") or node.name
    res = ctx.resources.lookup_or_create(node.attr.get("container", ""), name,
                                         lambda: ReaderResource(name, _KINDS[node.op](node)))
    return lambda: res


for _op_type in _KINDS:
    register(_op_type, lambda op: [(dtypes.resource, TensorShape([]))], _reader_kernel, grad=None, stateful=True)


def _read_kernel(node, ctx):
    def run(step, reader, queue):
        key, value = reader.read(step, node, queue, 1)[0]
        return key, value
    return run


def _read_up_to_kernel(node, ctx):
    def run(step, reader, queue, num_records):
        n = int(np.asarray(num_records))
        if n <= 0:
            raise invalid(node, f"num_records must be positive, got {n}")
        recs = reader.read(step, node, queue, n)
        return string_result([k for k, _ in recs], (len(recs),)), string_result([v for _, v in recs], (len(recs),))
    return run


register("ReaderReadV2", lambda op: [(dtypes.string, TensorShape([])), (dtypes.string, TensorShape([]))],
         _read_kernel, grad=None, stateful=True, needs_step=True, blocking=True)
register("ReaderReadUpToV2", lambda op: [(dtypes.string, TensorShape([None])), (dtypes.string, TensorShape([None]))],
         _read_up_to_kernel, grad=None, stateful=True, needs_step=True, blocking=True)
register("ReaderNumRecordsProducedV2", lambda op: [(dtypes.int64, TensorShape([]))],
         lambda node, ctx: lambda r: np.int64(r.produced), grad=None, stateful=True)
register("ReaderNumWorkUnitsCompletedV2", lambda op: [(dtypes.int64, TensorShape([]))],
         lambda node, ctx: lambda r: np.int64(r.completed), grad=None, stateful=True)
register("ReaderResetV2", lambda op: [], lambda node, ctx: lambda r: r.reset(), grad=None, stateful=True)


# -- the Python classes ----------------------------------------------------------------------------
def _queue_handle(queue) -> Tensor:
    ref = getattr(queue, "queue_ref", queue)
    if not isinstance(ref, Tensor) or ref.dtype != dtypes.resource:
        raise TypeError(f"A reader reads from a queue (or its queue_ref), not {queue!r}")
    return ref


@tf_export("ReaderBase")
class ReaderBase:
    """tf.ReaderBase: `read(queue)` gives the next (key, value) record, taking work units (file
    names) from `queue` as needed; `read_up_to(queue, num_records)`; counters and reset."""

    def __init__(self, reader_ref: Tensor, supports_serialize: bool = False):
        self._reader_ref = reader_ref
        self._supports_serialize = supports_serialize

    reader_ref = property(lambda self: self._reader_ref)
    supports_serialize = property(lambda self: self._supports_serialize)

    @classmethod
    def _make(cls, op_type: str, attrs: dict, name: Optional[str]):
        attrs = dict(attrs, container="", shared_name="")
        return make_op(op_type, [], attrs, name=name or op_type.replace("V2", "")).outputs[0]

    def read(self, queue, name=None):
        """(key, value): scalar strings of the next record."""
        with name_scope(name, "ReaderRead"):
            op = make_op("ReaderReadV2", [self._reader_ref, _queue_handle(queue)], name="ReaderReadV2")
        return op.outputs[0], op.outputs[1]

    def read_up_to(self, queue, num_records, name=None):
        """(keys, values): vectors of up to `num_records` records from one work unit."""
        with name_scope(name, "ReaderReadUpTo"):
            n = convert_to_tensor(num_records, dtype=dtypes.int64, name="num_records")
            op = make_op("ReaderReadUpToV2", [self._reader_ref, _queue_handle(queue), n], name="ReaderReadUpToV2")
        return op.outputs[0], op.outputs[1]

    def num_records_produced(self, name=None):
        return make_op("ReaderNumRecordsProducedV2", [self._reader_ref],
                       name=name or "ReaderNumRecordsProducedV2").outputs[0]

    def num_work_units_completed(self, name=None):
        return make_op("ReaderNumWorkUnitsCompletedV2", [self._reader_ref],
                       name=name or "ReaderNumWorkUnitsCompletedV2").outputs[0]

    def reset(self, name=None):
        """An op returning the reader to its initial state (counters included)."""
        return make_op("ReaderResetV2", [self._reader_ref], name=name or "ReaderResetV2")


@tf_export("FixedLengthRecordReader")
class FixedLengthRecordReader(ReaderBase):
    """tf.FixedLengthRecordReader(record_bytes, header_bytes=None, footer_bytes=None,
    hop_bytes=None, name=None, encoding=None): records of `record_bytes` after `header_bytes`,
    starting every `hop_bytes` (default: back to back), ending `footer_bytes` before the end; a
    partial last record is dropped. encoding: '' or 'ZLIB' / 'GZIP'."""

    def __init__(self, record_bytes, header_bytes=None, footer_bytes=None, hop_bytes=None, name=None, encoding=None):
        sizes = {"record_bytes": int(record_bytes), "header_bytes": int(header_bytes or 0),
                 "footer_bytes": int(footer_bytes or 0), "hop_bytes": int(hop_bytes or 0)}
        record_files.check_record_sizes(**sizes)
        attrs = dict(sizes, encoding=record_files.compression_of(encoding))
        super().__init__(self._make("FixedLengthRecordReaderV2", attrs, name))


@tf_export("TFRecordReader")
class TFRecordReader(ReaderBase):
    """tf.TFRecordReader(name=None, options=None): the records of TFRecord files
    (options: a TFRecordOptions or compression type)."""

    def __init__(self, name=None, options=None):
        attrs = {"compression_type": TFRecordOptions.get_compression_type_string(options)}
        super().__init__(self._make("TFRecordReaderV2", attrs, name))


@tf_export("TextLineReader")
class TextLineReader(ReaderBase):
    """tf.TextLineReader(skip_header_lines=None, name=None): lines without their line ends,
    after skipping `skip_header_lines` of each file."""

    def __init__(self, skip_header_lines=None, name=None):
        super().__init__(self._make("TextLineReaderV2", {"skip_header_lines": int(skip_header_lines or 0)}, name))


@tf_export("WholeFileReader")
class WholeFileReader(ReaderBase):
    """tf.WholeFileReader(name=None): each file whole, keyed by its name."""

    def __init__(self, name=None):
        super().__init__(self._make("WholeFileReaderV2", {}, name))


@tf_export("IdentityReader")
class IdentityReader(ReaderBase):
    """tf.IdentityReader(name=None): each work unit as both key and value."""

    def __init__(self, name=None):
        super().__init__(self._make("IdentityReaderV2", {}, name))
