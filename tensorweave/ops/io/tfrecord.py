"""TFRecord files: records framed as (uint64 length, masked crc32c of the length, data, masked
crc32c of the data), optionally inside one ZLIB or GZIP stream. `RecordFile` reads them one
record at a time for the reader op, TFRecordDataset and tf_record_iterator; damage is
DataLossError naming the file and offset, a clean end is None. tf.python_io's writer, iterator
and options live here too."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import struct
import sys
import zlib
from typing import Iterator, Optional

from tensorweave.framework import errors
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.io.gfile import as_path, open_file, os_error


_MASK_DELTA = 0xA282EAD8
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_MAX_LENGTH = (1 << 63) - 1


def crc32c(data, value: int = 0) -> int:
    """The CRC-32C of `data` (bytes-like), continuing the running CRC `value` (the crc32c
    package's C function, loaded at the first call: see _crc32c_function)."""
    if not _CRC32C:
        _CRC32C.append(_crc32c_function())
    return _CRC32C[0](data, value)


_CRC32C: list = []   # the crc32c package's crc32c(data, value), once loaded


def _crc32c_function():
    """crc32c.crc32c, from the package's extension module alone (~0.5 ms of CPU): importing the
    package runs its __init__, which looks its own version up with importlib.metadata (a scan of
    the installed distributions) and imports its command line (argparse), ~20 ms that a chief
    paid before its first step (its event file's first record), and that an Estimator worker or
    ps that has written nothing yet need not pay at all. The package's import when its layout
    is not the one expected."""
    try:
        spec = importlib.util.find_spec("crc32c")   # (finds the package without running its __init__)
        name = "crc32c._crc32c"
        module = sys.modules.get(name)
        if module is None:
            folder = os.path.dirname(spec.origin)
            path = next(os.path.join(folder, f) for f in sorted(os.listdir(folder))
                        if f.startswith("_crc32c.") and f.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)))
            loader = importlib.machinery.ExtensionFileLoader(name, path)
            module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path, loader=loader))
            loader.exec_module(module)
            sys.modules[name] = module   # (the package's own `from ._crc32c import ...` finds it later)
        return module.crc32c
    except (ImportError, AttributeError, OSError, StopIteration, TypeError):
        import crc32c as package   # (a third-party package)
        return package.crc32c


def masked_crc32c(data: bytes) -> int:
    """TFRecord's checksum: crc32c rotated right by 15 bits plus a constant (mod 2**32)."""
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def frame(record: bytes) -> bytes:
    """One record with its TFRecord framing."""
    length = _U64.pack(len(record))
    return b"".join((length, _U32.pack(masked_crc32c(length)), record, _U32.pack(masked_crc32c(record))))


@tf_export("io.TFRecordCompressionType", "python_io.TFRecordCompressionType")
class TFRecordCompressionType:
    """tf.python_io.TFRecordCompressionType."""
    NONE = 0
    ZLIB = 1
    GZIP = 2


_TYPE_NAMES = {TFRecordCompressionType.NONE: "", TFRecordCompressionType.ZLIB: "ZLIB",
               TFRecordCompressionType.GZIP: "GZIP"}


@tf_export("io.TFRecordOptions", "python_io.TFRecordOptions")
class TFRecordOptions:
    """tf.python_io.TFRecordOptions(compression_type=None, ..., compression_level=None): how a
    TFRecord file is compressed ('' / None, 'ZLIB', 'GZIP' or a TFRecordCompressionType)."""

    compression_type_map = {v: k for k, v in _TYPE_NAMES.items()}

    def __init__(self, compression_type=None, flush_mode=None, input_buffer_size=None, output_buffer_size=None,
                 window_bits=None, compression_level=None, compression_method=None, mem_level=None,
                 compression_strategy=None):
        self.compression_type = compression_type
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy
        compression_name(compression_type)   # checked now, as TF does

    @classmethod
    def get_compression_type_string(cls, options) -> str:
        if options is None:
            return ""
        if isinstance(options, TFRecordOptions):
            return compression_name(options.compression_type)
        return compression_name(options)


def compression_name(compression_type) -> str:
    """'' / 'ZLIB' / 'GZIP' for any of TF's spellings of a compression type."""
    if compression_type is None:
        return ""
    if isinstance(compression_type, TFRecordOptions):
        return compression_name(compression_type.compression_type)
    if isinstance(compression_type, bytes):
        compression_type = compression_type.decode()
    if isinstance(compression_type, int) and compression_type in _TYPE_NAMES:
        return _TYPE_NAMES[compression_type]
    if isinstance(compression_type, str) and compression_type.upper() in ("", "ZLIB", "GZIP"):
        return compression_type.upper()
    raise ValueError(f'Unsupported compression type {compression_type!r}: use "", "ZLIB" or "GZIP"')


def _compressor(kind: str, level: Optional[int]):
    level = -1 if level is None else int(level)
    if kind == "ZLIB":
        return zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS)
    if kind == "GZIP":
        return zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    return None


@tf_export("io.TFRecordWriter", "python_io.TFRecordWriter")
class TFRecordWriter:
    """tf.python_io.TFRecordWriter(path, options=None): writes records to a TFRecord file
    (`write`, `flush`, `close`; a context manager)."""

    def __init__(self, path, options=None):
        self._path = as_path(path)
        kind = TFRecordOptions.get_compression_type_string(options)
        level = options.compression_level if isinstance(options, TFRecordOptions) else None
        self._compress = _compressor(kind, level)
        self._f = open_file(self._path, "wb")

    def write(self, record) -> None:
        if self._f is None:
            raise errors.FailedPreconditionError(None, None, f"TFRecordWriter for {self._path} is closed")
        if isinstance(record, str):
            record = record.encode("utf-8")
        data = frame(bytes(record))
        try:
            self._f.write(self._compress.compress(data) if self._compress else data)
        except OSError as e:
            raise os_error(e, self._path) from None

    def flush(self) -> None:
        if self._f is not None:
            try:
                if self._compress:
                    self._f.write(self._compress.flush(zlib.Z_SYNC_FLUSH))
                self._f.flush()
            except OSError as e:
                raise os_error(e, self._path) from None

    def close(self) -> None:
        if self._f is not None:
            f, self._f = self._f, None
            try:
                if self._compress:
                    f.write(self._compress.flush())
                f.close()
            except OSError as e:
                f.close()   # closing again drops what could not be written
                raise os_error(e, self._path) from None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class _Inflating:
    """A read(n) view of a ZLIB or GZIP stream."""

    def __init__(self, f, kind: str, path: str):
        self._f = f
        self._d = zlib.decompressobj(zlib.MAX_WBITS | (16 if kind == "GZIP" else 0))
        self._buf = bytearray()
        self._path = path

    def read(self, n: int) -> bytes:
        while len(self._buf) < n and not self._d.eof:
            chunk = self._f.read(1 << 16)
            if not chunk:
                break
            try:
                self._buf += self._d.decompress(chunk)
            except zlib.error as e:
                raise errors.DataLossError(None, None, f"{self._path}: corrupt compressed data ({e})") from None
            if self._d.eof and self._d.unused_data:   # concatenated gzip members
                rest = self._d.unused_data
                self._d = zlib.decompressobj(zlib.MAX_WBITS | 32)
                self._buf += self._d.decompress(rest)
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def close(self) -> None:
        self._f.close()


class RecordFile:
    """Reads the records of one TFRecord file in order; checks both checksums of each."""

    def __init__(self, path, compression: str = "", node=None, buffer_size: int = 1 << 18):
        self.path = as_path(path)
        self._node = node
        raw = open_file(self.path, "rb", node, node.name if node is not None else None)
        self._f = _Inflating(raw, compression, self.path) if compression else raw
        # A length field is checked before anything is allocated for it: no record is longer
        # than its file (uncompressed), or than 2**63 bytes (compressed: read as it inflates).
        self._max_length = os.fstat(raw.fileno()).st_size if not compression else _MAX_LENGTH
        self.offset = 0

    def _loss(self, what: str) -> errors.DataLossError:
        name = self._node.name if self._node is not None else None
        return errors.DataLossError(self._node, name, f"{what} record at {self.offset} in file {self.path}")

    def read(self) -> Optional[bytes]:
        """The next record, or None at a clean end of file."""
        header = self._f.read(12)
        if not header:
            return None
        if len(header) < 12:
            raise self._loss("truncated")
        (length,) = _U64.unpack_from(header)
        if _U32.unpack_from(header, 8)[0] != masked_crc32c(header[:8]):
            raise self._loss("corrupted")
        if length > self._max_length:
            raise self._loss(f"record size too large ({length} bytes) for the")
        body = self._f.read(length + 4)
        if len(body) < length + 4:
            raise self._loss("truncated")
        data = body[:length]
        if _U32.unpack_from(body, length)[0] != masked_crc32c(data):
            raise self._loss("corrupted")
        self.offset += 16 + length
        return data

    def close(self) -> None:
        self._f.close()

    def __iter__(self) -> Iterator[bytes]:
        try:
            while True:
                rec = self.read()
                if rec is None:
                    return
                yield rec
        finally:
            self.close()


@tf_export("io.tf_record_iterator", "python_io.tf_record_iterator")
def tf_record_iterator(path, options=None) -> Iterator[bytes]:
    """tf.python_io.tf_record_iterator(path, options=None): yields the records of a TFRecord
    file; DataLossError at a damaged record, NotFoundError for a missing file (raised, as in TF,
    when the first record is asked for)."""
    yield from RecordFile(path, TFRecordOptions.get_compression_type_string(options))
