"""tf.summary.FileWriter and FileWriterCache, and tf.train.summary_iterator.

Event files are real TensorBoard event files (`events.out.tfevents.<time>.<host>.<pid>.<n>`):
TFRecord-framed Event protos (the `tensorboard` package's own protos, which its reader parses),
written by a thread of the writer's own so that `add_summary` does not wait for the disk.
`tensorboard --logdir DIR` shows them. The framing's crc32c is the C `crc32c` module's
(ops/io/tfrecord.py), not tensorboard's writer's pure-Python one: that one held the GIL for
~0.1 s per graph event in the writer thread, which stalled a training loop's steps.
"""
from __future__ import annotations

import contextlib
import logging
import os
import queue
import socket
import threading
import time
import warnings
from itertools import count

from tensorweave.framework import errors
from tensorweave.framework.graph import Graph, get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import config_pb2, event_pb2, meta_graph_pb2, summary_pb2
from tensorweave.ops.io.gfile import MakeDirs, open_file
from tensorweave.ops.io.tfrecord import frame, tf_record_iterator

Event = event_pb2.Event
tf_export("summary.Event", "Event")(Event)
SessionLog = event_pb2.SessionLog
tf_export("summary.SessionLog", "SessionLog")(SessionLog)
TaggedRunMetadata = event_pb2.TaggedRunMetadata
tf_export("summary.TaggedRunMetadata")(TaggedRunMetadata)
_log = logging.getLogger("tensorweave")


_file_numbers = count()   # (the last part of an event file's name: unique within a process)
_FLUSH, _STOP = object(), object()   # queued after events: flush the file; flush it and end the thread


class _EventFileWriter:
    """One event file: TFRecord-framed Event protos, its file_version event first; events are
    queued (at most `max_queue`) for a daemon thread that writes them and flushes the file
    every `flush_secs` seconds, on `flush()` and on `close()`."""

    def __init__(self, logdir: str, max_queue: int, flush_secs: float, suffix: str):
        MakeDirs(logdir)
        name = "events.out.tfevents.%010d.%s.%s.%s%s" % (time.time(), socket.gethostname(), os.getpid(),
                                                          next(_file_numbers), suffix)
        self.path = os.path.join(logdir, name)
        self._file = open_file(self.path, "wb")
        # The file_version record written and flushed here, before the thread starts, as TF's
        # EventsWriter does on creation: not handed to the thread and waited for (a thread
        # start and two switches, which held up a chief's session creation on a loaded machine).
        try:
            self._file.write(frame(event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2")
                                   .SerializeToString()))
            self._file.flush()
        except OSError as e:
            with contextlib.suppress(OSError):
                self._file.close()
            raise errors.os_error(e, self.path) from None
        self._queue: queue.Queue = queue.Queue(max(int(max_queue), 1))
        self._flush_secs = flush_secs
        self._error = None
        self._reported = False
        self._closed = False
        self._thread = threading.Thread(target=self._write_queued, name="tensorweave-events", daemon=True)
        self._thread.start()

    def _write_queued(self) -> None:
        due = None   # when the written, still unflushed events are to be flushed
        while True:
            got = True
            try:
                item = self._queue.get(timeout=None if due is None else max(due - time.monotonic(), 0.0))
            except queue.Empty:
                item, got = _FLUSH, False
            try:
                if isinstance(item, bytes) and self._error is None:
                    self._file.write(frame(item))
                    due = due or time.monotonic() + self._flush_secs
                if item is _FLUSH or item is _STOP or (due is not None and time.monotonic() >= due):
                    self._file.flush()
                    due = None
            except OSError as e:   # raised to the caller at its next add_event, flush or close
                self._error = e
            finally:
                if got:
                    self._queue.task_done()
            if item is _STOP:
                return

    def _check(self) -> None:
        if self._error is not None:
            self._reported = True
            raise self._error
        if self._closed:
            raise IOError("Writer is closed")

    def add_event(self, event) -> None:
        self._check()
        self._queue.put(event.SerializeToString())

    def flush(self) -> None:
        """Returns once every event added before it is written and the file flushed."""
        self._check()
        self._queue.put(_FLUSH)
        self._queue.join()
        self._check()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put(_STOP)
            self._thread.join()
            if self._error is None:
                self._file.close()
                return
            with contextlib.suppress(OSError):   # (what could not be written, still buffered)
                self._file.close()
            if not self._reported:   # (a failure already raised to the caller is not raised again)
                raise self._error


@contextlib.contextmanager
def _writing(event_writer):
    """A failed write of the event file (the writer thread reports it at the next call) as TF's
    error naming the file: a full disk is ResourceExhaustedError."""
    try:
        yield
    except OSError as e:
        raise errors.os_error(e, event_writer.path) from None


def _run_metadata_bytes(run_metadata) -> bytes:
    """A RunMetadata (ours or a protocol buffer) serialized as TF's RunMetadata proto."""
    if hasattr(run_metadata, "SerializeToString"):
        return run_metadata.SerializeToString()
    proto = config_pb2.RunMetadata()
    for dev in getattr(run_metadata.step_stats, "dev_stats", []):
        d = proto.step_stats.dev_stats.add(device=dev.device)
        for ns in dev.node_stats:
            d.node_stats.add(node_name=ns.node_name, all_start_micros=int(ns.all_start_micros),
                             op_start_rel_micros=int(ns.op_start_rel_micros),
                             op_end_rel_micros=int(ns.op_end_rel_micros),
                             all_end_rel_micros=int(ns.all_end_rel_micros), timeline_label=ns.timeline_label,
                             thread_id=int(ns.thread_id) & 0xffffffff, scheduled_micros=int(ns.scheduled_micros))
    return proto.SerializeToString()


@tf_export("summary.FileWriter")
class FileWriter:
    """tf.summary.FileWriter(logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None,
    filename_suffix=None, session=None): writes Summary protocol buffers (or their serialized
    bytes, as summary ops output them), graphs, session logs and run metadata to an event file
    in `logdir`, asynchronously (at most `max_queue` pending events, flushed every
    `flush_secs`)."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None, filename_suffix=None,
                 session=None):
        if session is not None:
            raise ValueError("FileWriter(session=...) (summary writer resources) is not supported; "
                             "use FileWriter(logdir) with add_summary")
        self._logdir = str(logdir)
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        self._filename_suffix = filename_suffix or ""
        self.event_writer = _EventFileWriter(self._logdir, max_queue, flush_secs, self._filename_suffix)
        self._closed = False
        self._seen_summary_tags: set = set()
        self._session_run_tags: dict = {}
        if graph is not None or graph_def is not None:
            if isinstance(graph, Graph) and graph_def is None:
                # (one GraphDef for both events: a MonitoredSession's writer is made before its
                # graph is finalized, when as_graph_def is not cached)
                graph_def = graph.as_graph_def(add_shapes=True)
                self.add_graph(None, graph_def=graph_def)
                self.add_meta_graph(meta_graph_pb2.MetaGraphDef(graph_def=graph_def))
            else:
                self.add_graph(graph=graph, graph_def=graph_def)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def get_logdir(self) -> str:
        return self._logdir

    def _warn_if_closed(self) -> bool:
        if self._closed:
            warnings.warn("Attempting to use a closed FileWriter. The operation will be a noop unless the FileWriter "
                          "is explicitly reopened.")
        return self._closed

    def _add_event(self, event, step) -> None:
        event.wall_time = time.time()
        if step is not None:
            event.step = int(step)
        self.add_event(event)

    def add_event(self, event) -> None:
        """Writes one Event protocol buffer."""
        if not self._warn_if_closed():
            with _writing(self.event_writer):
                self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None) -> None:
        """Adds a Summary protocol buffer, or its serialized bytes (a summary op's output), at
        `global_step`. A tag's plugin metadata is written with its first value only, as TF does."""
        if isinstance(summary, bytes):
            parsed = summary_pb2.Summary()
            parsed.ParseFromString(summary)
            summary = parsed
        for value in summary.value:
            if not value.HasField("metadata"):
                continue
            if value.tag in self._seen_summary_tags:
                value.ClearField("metadata")
                continue
            self._seen_summary_tags.add(value.tag)
        self._add_event(event_pb2.Event(summary=summary), global_step)

    def add_session_log(self, session_log, global_step=None) -> None:
        """Adds a SessionLog (START, STOP, CHECKPOINT) event."""
        self._add_event(event_pb2.Event(session_log=session_log), global_step)

    def add_graph(self, graph, global_step=None, graph_def=None) -> None:
        """Adds a graph (a tensorweave Graph, or a GraphDef protocol buffer) as TensorBoard shows it."""
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        source = graph if graph is not None else graph_def
        if isinstance(source, Graph):
            proto = source.as_graph_def(add_shapes=True)
        elif hasattr(source, "SerializeToString") and hasattr(source, "node"):
            proto = source
        else:
            raise TypeError("The passed graph must be an instance of `Graph` or the deprecated `GraphDef`")
        self._add_event(event_pb2.Event(graph_def=proto.SerializeToString()), global_step)

    def add_meta_graph(self, meta_graph_def, global_step=None) -> None:
        """Adds a MetaGraphDef protocol buffer."""
        if not isinstance(meta_graph_def, meta_graph_pb2.MetaGraphDef):
            raise TypeError(f"meta_graph_def must be type MetaGraphDef, saw type: {type(meta_graph_def)}")
        self._add_event(event_pb2.Event(meta_graph_def=meta_graph_def.SerializeToString()), global_step)

    def add_run_metadata(self, run_metadata, tag, global_step=None) -> None:
        """Adds a step's RunMetadata (tf.RunMetadata from a traced Session.run) under `tag`."""
        if tag in self._session_run_tags:
            raise ValueError("The provided tag was already used for this event type")
        self._session_run_tags[tag] = True
        tagged = event_pb2.TaggedRunMetadata(tag=tag, run_metadata=_run_metadata_bytes(run_metadata))
        self._add_event(event_pb2.Event(tagged_run_metadata=tagged), global_step)

    def flush(self) -> None:
        """Writes every pending event to disk."""
        if not self._warn_if_closed():
            with _writing(self.event_writer):
                self.event_writer.flush()

    def close(self) -> None:
        """Flushes and closes the event file; `reopen` starts a new one."""
        if not self._closed:
            self._closed = True
            with _writing(self.event_writer):
                self.event_writer.close()

    def reopen(self) -> None:
        """Reopens a closed writer on a new event file in the same logdir."""
        if self._closed:
            self.event_writer = _EventFileWriter(self._logdir, self._max_queue, self._flush_secs,
                                                   self._filename_suffix)
            self._closed = False


@tf_export("summary.FileWriterCache", "train.SummaryWriterCache")
class FileWriterCache:
    """tf.summary.FileWriterCache: one FileWriter per logdir (with the default graph)."""

    _cache: dict = {}
    _lock = threading.RLock()

    @staticmethod
    def clear() -> None:
        """Closes and forgets every cached writer."""
        with FileWriterCache._lock:
            for w in FileWriterCache._cache.values():
                w.close()
            FileWriterCache._cache = {}

    @staticmethod
    def get(logdir) -> FileWriter:
        """The cached FileWriter of `logdir`, created (with the default graph) on first use."""
        with FileWriterCache._lock:
            w = FileWriterCache._cache.get(logdir)
            if w is None:
                w = FileWriterCache._cache[logdir] = FileWriter(logdir, graph=get_default_graph())
            return w


@tf_export("train.summary_iterator")
def summary_iterator(path):
    """tf.train.summary_iterator(path): the Event protocol buffers of an event file, in order
    (its records read as tf_record_iterator reads them: a damaged one is DataLossError naming
    the file and offset)."""
    for record in tf_record_iterator(path):
        yield event_pb2.Event.FromString(record)
