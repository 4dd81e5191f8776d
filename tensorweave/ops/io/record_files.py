"""Records of one file, as generators: TFRecords, fixed-length records, text lines. The dataset
sources (TFRecordDataset, FixedLengthRecordDataset, TextLineDataset) and the reader ops both read
files through these, so they fail the same way: a missing file is NotFoundError naming it, a
damaged TFRecord DataLossError naming it."""
from __future__ import annotations

import gzip
import os
import zlib
from typing import Iterator, Optional

import numpy as np

from tensorweave.framework import errors
from tensorweave.ops.io.gfile import as_path, open_file, os_error
from tensorweave.ops.io.tfrecord import RecordFile

_CHUNK = 1 << 16


def tfrecords(path, compression: str = "", node=None) -> Iterator[bytes]:
    """The records of a TFRecord file."""
    yield from RecordFile(path, compression, node)


def _open_stream(path: str, compression: str, node):
    f = open_file(path, "rb", node, node.name if node is not None else None)
    if compression == "GZIP":
        return gzip.GzipFile(fileobj=f)
    if compression == "ZLIB":
        return _ZlibStream(f)
    return f


class _ZlibStream:
    def __init__(self, f):
        self._f, self._d, self._buf = f, zlib.decompressobj(), b""

    def read(self, n: int = -1) -> bytes:
        while (n < 0 or len(self._buf) < n) and not self._d.eof:
            chunk = self._f.read(_CHUNK)
            if not chunk:
                break
            self._buf += self._d.decompress(chunk)
        out, self._buf = (self._buf, b"") if n < 0 else (self._buf[:n], self._buf[n:])
        return out

    def close(self) -> None:
        self._f.close()


def check_record_sizes(node=None, **sizes) -> None:
    """InvalidArgumentError naming the first of a fixed-length reader's sizes out of range, as
    TF's kernels check them: record_bytes must be positive, header_bytes, footer_bytes and
    hop_bytes not negative. A size that is not yet known (a tensor) is checked when it is."""
    for what, value in sizes.items():
        if isinstance(value, (int, np.integer)):
            low = 1 if what == "record_bytes" else 0
            if value < low:
                raise errors.InvalidArgumentError(node, node.name if node is not None else None,
                                                  f"{what} must be {'> 0' if low else '>= 0'}, got {value}")


def fixed_length_records(path, record_bytes: int, header_bytes: int = 0, footer_bytes: int = 0,
                         hop_bytes: int = 0, node=None, strict: bool = True,
                         compression: str = "") -> Iterator[bytes]:
    """The records of a fixed-length record file: after `header_bytes`, records of `record_bytes`
    starting every `hop_bytes` (every record_bytes when 0), up to `footer_bytes` from the end.
    With `strict` (the dataset's rule) a body that is not a whole number of records is
    InvalidArgumentError naming the file; otherwise (the reader's rule) a partial last record is
    dropped."""
    path = as_path(path)
    name = node.name if node is not None else None
    if compression:
        with _open_stream(path, compression, node) as f:
            data = f.read()
        size = len(data)
    else:
        try:
            size = os.path.getsize(path)
        except OSError as e:
            raise os_error(e, path, node, name) from None
        data = None
    body = size - header_bytes - footer_bytes
    if strict and (body < 0 or body % record_bytes):
        raise errors.InvalidArgumentError(
            node, name, f"Excluding the header ({header_bytes} bytes) and footer ({footer_bytes} bytes), input file "
                        f"\"{path}\" has body length {body} bytes, which is not an exact multiple of the record "
                        f"length ({record_bytes} bytes).")
    step = hop_bytes or record_bytes
    limit = size - footer_bytes
    if data is not None:
        pos = header_bytes
        while pos + record_bytes <= limit:
            yield data[pos:pos + record_bytes]
            pos += step
        return
    with open_file(path, "rb", node, name) as f:
        f.seek(header_bytes)
        pos = header_bytes
        while pos + record_bytes <= limit:
            if hop_bytes:
                f.seek(pos)
            rec = f.read(record_bytes)
            if len(rec) < record_bytes:
                return
            yield rec
            pos += step


def text_lines(path, compression: str = "", node=None, skip_header_lines: int = 0) -> Iterator[bytes]:
    """The lines of a text file without their line ends ('\\n' or '\\r\\n')."""
    path = as_path(path)
    f = _open_stream(path, compression, node)
    try:
        for i, line in enumerate(_lines(f)):
            if i >= skip_header_lines:
                yield line
    finally:
        f.close()


def _lines(f) -> Iterator[bytes]:
    rest = b""
    while True:
        chunk = f.read(_CHUNK)
        if not chunk:
            break
        parts = (rest + chunk).split(b"\n")
        rest = parts.pop()
        for p in parts:
            yield p[:-1] if p.endswith(b"\r") else p
    if rest:
        yield rest[:-1] if rest.endswith(b"\r") else rest


def whole_file(path, node=None) -> bytes:
    path = as_path(path)
    with open_file(path, "rb", node, node.name if node is not None else None) as f:
        return f.read()


def compression_of(value: Optional[str]) -> str:
    v = (value or "")
    v = v.decode() if isinstance(v, bytes) else v
    if v.upper() not in ("", "ZLIB", "GZIP"):
        raise ValueError(f'compression_type must be "", "ZLIB" or "GZIP", got {value!r}')
    return v.upper()
