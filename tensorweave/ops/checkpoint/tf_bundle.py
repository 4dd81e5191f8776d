"""Reading TensorFlow's own V2 checkpoints, so users bring their models with them.

A V2 checkpoint `prefix` is `prefix.index`, a LevelDB-style sorted table (blocks of
prefix-compressed key/value entries, each block followed by a type byte and a masked crc32c,
a footer pointing at the index block, and a magic number), and `prefix.data-SSSSS-of-NNNNN`
files of raw little-endian tensor bytes. The table's first value (key "") is a
BundleHeaderProto; every other value is a BundleEntryProto (dtype, shape, shard, offset, size,
crc32c, and for a tensor saved in slices, the slices, whose bytes are under keys that
encode (name, slice) with TF's OrderedCode). Protobuf records are decoded here directly from
the wire format: the few fields a checkpoint needs.
"""
from __future__ import annotations

import os
import struct

import crc32c as _crc32c
import numpy as np

from tensorweave.framework import errors
from tensorweave.ops.checkpoint.slices import Entry, Part

_MAGIC = 0xdb4775248b80fb57
_FOOTER = 48

# TF DataType enum -> numpy dtype name (the types a checkpoint can hold here).
TF_DTYPES = {1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8", 7: "string",
             8: "complex64", 9: "int64", 10: "bool", 17: "uint16", 18: "complex128", 19: "float16",
             22: "uint32", 23: "uint64"}


def unmask(masked: int) -> int:
    rot = (masked - 0xa282ead8) & 0xffffffff
    return ((rot >> 17) | (rot << 15)) & 0xffffffff


def mask(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & 0xffffffff) + 0xa282ead8) & 0xffffffff


def _varint(buf: bytes, pos: int) -> tuple:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7f) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes):
    """(field number, wire type, value) of one protobuf message; lengths delimited as bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value = struct.unpack_from("<Q", buf, pos)[0]
            pos += 8
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value = bytes(buf[pos:pos + n])
            pos += n
        elif wire == 5:
            value = struct.unpack_from("<I", buf, pos)[0]
            pos += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield field, wire, value


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _shape(buf: bytes) -> tuple:
    dims = []
    for f, _, v in _fields(buf):
        if f == 2:  # TensorShapeProto.dim
            size = 0
            for f2, _, v2 in _fields(v):
                if f2 == 1:
                    size = _signed(v2)
            dims.append(size)
    return tuple(dims)


def _slice(buf: bytes, full: tuple) -> tuple:
    start, length = [], []
    for f, _, v in _fields(buf):
        if f == 1:  # TensorSliceProto.extent
            s, n = 0, -1
            for f2, _, v2 in _fields(v):
                if f2 == 1:
                    s = _signed(v2)
                elif f2 == 2:
                    n = _signed(v2)
            start.append(s)
            length.append(n)
    length = [full[i] - s if n < 0 else n for i, (s, n) in enumerate(zip(start, length))]
    return tuple(start), tuple(length)


def _entry(buf: bytes) -> dict:
    e = {"dtype": 0, "shape": (), "shard_id": 0, "offset": 0, "size": 0, "crc32c": None, "slices": []}
    for f, _, v in _fields(buf):
        if f == 1:
            e["dtype"] = v
        elif f == 2:
            e["shape"] = _shape(v)
        elif f == 3:
            e["shard_id"] = v
        elif f == 4:
            e["offset"] = v
        elif f == 5:
            e["size"] = v
        elif f == 6:
            e["crc32c"] = v
        elif f == 7:
            e["slices"].append(v)
    return e


# -- OrderedCode keys of slices (TF's EncodeTensorNameSlice) --------------------------------------
_HEADER_BITS = [(0, 0), (0x80, 0), (0xc0, 0), (0xe0, 0), (0xf0, 0), (0xf8, 0), (0xfc, 0), (0xfe, 0),
                (0xff, 0), (0xff, 0x80), (0xff, 0xc0)]


def _num_increasing(v: int) -> bytes:
    body = v.to_bytes((v.bit_length() + 7) // 8, "big") if v else b""
    return bytes([len(body)]) + body


def _signed_num_increasing(v: int) -> bytes:
    x = ~v if v < 0 else v
    if x < 64:
        return bytes([(0x80 ^ v) & 0xff])
    n = x.bit_length() // 7 + 1
    buf = bytearray((v & ((1 << 80) - 1)).to_bytes(10, "big"))[10 - n:]
    buf[0] ^= _HEADER_BITS[n][0]
    buf[1] ^= _HEADER_BITS[n][1]
    return bytes(buf)


def slice_key(name: str, start, length) -> bytes:
    """The table key of the bytes of slice (start, length) of tensor `name`."""
    escaped = name.encode().replace(b"\xff", b"\xff\x00").replace(b"\x00", b"\x00\xff")
    out = bytearray(_num_increasing(0) + escaped + b"\x00\x01" + _num_increasing(len(start)))
    for s, n in zip(start, length):
        out += _signed_num_increasing(s) + _signed_num_increasing(n)
    return bytes(out)


# -- the sorted table -----------------------------------------------------------------------------
def _block(data: bytes, offset: int, size: int, path: str) -> bytes:
    end = offset + size + 5
    if end > len(data):
        raise errors.DataLossError(None, None, f"Checkpoint index {path} is truncated (a block ends at byte "
                                   f"{end}, the file has {len(data)})")
    contents, trailer = data[offset:offset + size], data[offset + size:end]
    if trailer[0] != 0:
        raise errors.DataLossError(None, None, f"Checkpoint index {path} uses block compression {trailer[0]}, "
                                   "which this reader does not support")
    want = unmask(struct.unpack("<I", trailer[1:5])[0])
    if _crc32c.crc32c(contents + trailer[:1]) != want:
        raise errors.DataLossError(None, None, f"Checkpoint index {path}: block checksum mismatch (corrupted file)")
    return contents


def _block_entries(block: bytes):
    num_restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
    limit = len(block) - 4 - 4 * num_restarts
    pos, key = 0, b""
    while pos < limit:
        shared, pos = _varint(block, pos)
        unshared, pos = _varint(block, pos)
        vlen, pos = _varint(block, pos)
        key = key[:shared] + block[pos:pos + unshared]
        pos += unshared
        yield key, block[pos:pos + vlen]
        pos += vlen


def read_table(path: str) -> dict:
    """Every key -> value of a sorted-table file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"Checkpoint index {path} not found") from None
    if len(data) < _FOOTER or struct.unpack("<Q", data[-8:])[0] != _MAGIC:
        raise errors.DataLossError(None, None, f"{path} is not a TensorFlow checkpoint index (bad magic number "
                                   "or truncated)")
    footer = data[-_FOOTER:]
    pos = 0
    _, pos = _varint(footer, pos)      # metaindex handle (unused by checkpoints)
    _, pos = _varint(footer, pos)
    index_off, pos = _varint(footer, pos)
    index_size, pos = _varint(footer, pos)
    table = {}
    for _, handle in _block_entries(_block(data, index_off, index_size, path)):
        off, p = _varint(handle, 0)
        size, _ = _varint(handle, p)
        for k, v in _block_entries(_block(data, off, size, path)):
            table[bytes(k)] = bytes(v)
    return table


def is_tf_index(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            f.seek(-8, os.SEEK_END)
            return struct.unpack("<Q", f.read(8))[0] == _MAGIC
    except OSError:
        return False


class TFBundle:
    """A TensorFlow V2 checkpoint opened for reading: `entries` (name -> Entry) and `load(part)`."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        table = read_table(prefix + ".index")
        header = table.pop(b"", b"")
        self.num_shards = 1
        for f, _, v in _fields(header):
            if f == 1:
                self.num_shards = v
            elif f == 2 and v != 0:
                raise errors.UnimplementedError(None, None, f"Checkpoint {prefix} is big-endian; only "
                                                "little-endian checkpoints are read")
        self.entries: dict = {}
        for key, value in table.items():
            if key[:1] == b"\x00":
                continue  # the bytes of one slice: reached through its tensor's entry
            name = key.decode()
            e = _entry(value)
            dtype = TF_DTYPES.get(e["dtype"])
            if dtype is None:
                raise errors.UnimplementedError(None, None, f"Tensor {name} in checkpoint {prefix} has TF dtype "
                                                f"enum {e['dtype']}, which is not supported")
            if e["slices"]:
                parts = []
                for s in e["slices"]:
                    start, length = _slice(s, e["shape"])
                    raw = table.get(slice_key(name, start, length))
                    if raw is None:
                        raise errors.DataLossError(None, None, f"Checkpoint {prefix}: slice {start}+{length} of "
                                                   f"{name} is listed but its entry is missing")
                    parts.append(Part(start, length, _entry(raw)))
                self.entries[name] = Entry(dtype, e["shape"], tuple(parts), sliced=True)
            else:
                self.entries[name] = Entry(dtype, e["shape"], (Part((0,) * len(e["shape"]), e["shape"], e),))
        self._files: dict = {}

    def _data_path(self, shard: int) -> str:
        return f"{self.prefix}.data-{shard:05d}-of-{self.num_shards:05d}"

    def load(self, part: Part) -> np.ndarray:
        e = part.locator
        path = self._data_path(e["shard_id"])
        try:
            with open(path, "rb") as f:
                f.seek(e["offset"])
                raw = f.read(e["size"])
        except FileNotFoundError:
            raise errors.NotFoundError(None, None, f"Checkpoint data file {path} not found") from None
        if len(raw) != e["size"]:
            raise errors.DataLossError(None, None, f"Checkpoint data file {path} is truncated: wanted {e['size']} "
                                       f"bytes at offset {e['offset']}, got {len(raw)}")
        dtype = TF_DTYPES[e["dtype"]]
        shape = part.length
        if dtype == "string":
            value, crcs = _strings(raw, shape, path)
        else:
            value, crcs = None, (_crc32c.crc32c(raw),)
        if e["crc32c"] is not None and unmask(e["crc32c"]) not in crcs:
            raise errors.DataLossError(None, None, f"Checksum mismatch for a tensor in {path} (corrupted file)")
        if value is not None:
            return value
        return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype).reshape(shape)


def _strings(raw: bytes, shape, path: str) -> tuple:
    """A string tensor's bytes (the varint lengths, a 4-byte checksum of them, then the bytes) ->
    (object array, the crc32c values TF may have recorded: over the lengths (as uint32s in
    recent TF, uint64s in older ones), that checksum and the bytes)."""
    n = int(np.prod(shape, dtype=np.int64))
    lengths, pos = [], 0
    for _ in range(n):
        v, pos = _varint(raw, pos)
        lengths.append(v)
    crcs = tuple(_crc32c.crc32c(raw[pos:], _crc32c.crc32c(np.asarray(lengths, dtype=f).tobytes()))
                 for f in ("<u4", "<u8"))
    pos += 4
    out = np.empty(n, dtype=object)
    for i, ln in enumerate(lengths):
        out[i] = raw[pos:pos + ln]
        pos += ln
    if pos != len(raw):
        raise errors.DataLossError(None, None, f"Malformed string tensor in {path}")
    return out.reshape(shape), crcs
