"""TensorFlow's own V2 checkpoints, read and written, so users bring their models with them and
take them back to TensorFlow.

A V2 checkpoint `prefix` is `prefix.index`, a LevelDB-style sorted table (blocks of
prefix-compressed key/value entries, each block followed by a type byte and a masked crc32c,
a footer pointing at the index block, and a magic number), and `prefix.data-SSSSS-of-NNNNN`
files of raw little-endian tensor bytes. The table's first value (key "") is a
BundleHeaderProto; every other value is a BundleEntryProto (dtype, shape, shard, offset, size,
crc32c, and for a tensor saved in slices, the slices, whose bytes are under keys that
encode (name, slice) with TF's OrderedCode). The records are TF's messages
(framework/tf_protos.py). The writer follows TF's BundleWriter, table::TableBuilder and
MergeBundles byte for byte, so an index written here equals TF's.
"""
from __future__ import annotations

import os
import struct

import numpy as np

from google.protobuf.message import DecodeError

from tensorweave.framework import dtypes, errors
from tensorweave.framework.tf_protos import BundleEntryProto, BundleHeaderProto, TensorSliceProto
from tensorweave.ops.checkpoint.bundle import Bundle, data_filename, make_parent, merge_files, write_atomically
from tensorweave.ops.checkpoint.slices import Entry, Part, parse_shape_and_slice, shape_and_slice_string
from tensorweave.ops.io.tfrecord import crc32c

_MAGIC = 0xdb4775248b80fb57
_FOOTER = 48

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


def _dtype_name(enum: int):
    """The numpy dtype name of TF DataType `enum` ("string" for DT_STRING), None for one we do not hold."""
    try:
        dtype = dtypes.as_dtype(enum)
    except (TypeError, ValueError):
        return None
    if dtype.as_datatype_enum != enum:      # a reference type (enum + 100)
        return None
    if dtype == dtypes.string:
        return "string"
    return None if dtype.as_numpy_dtype is object else np.dtype(dtype.as_numpy_dtype).name


def _dtype_enum(name: str):
    """The TF DataType enum of numpy dtype name `name` ("string" included), None for one TF's
    checkpoints do not hold."""
    try:
        return dtypes.as_dtype(name).as_datatype_enum
    except (TypeError, ValueError):
        return None


def _record(message, raw: bytes, what: str):
    try:
        return message.FromString(raw)
    except DecodeError:
        raise errors.DataLossError(None, None, f"{what}: a malformed {message.__name__} record") from None


def _shape(entry) -> tuple:
    return tuple(d.size for d in entry.shape.dim)


def _slice(proto) -> tuple:
    """A TensorSliceProto -> (start, length), length -1 where the slice takes the whole dimension
    (no length recorded), as TF's TensorSlice holds it and as its table key encodes it."""
    return (tuple(x.start for x in proto.extent),
            tuple(x.length if x.HasField("length") else -1 for x in proto.extent))


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
    if crc32c(contents + trailer[:1]) != want:
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
    table = {}
    try:
        pos = 0
        _, pos = _varint(footer, pos)      # metaindex handle (unused by checkpoints)
        _, pos = _varint(footer, pos)
        index_off, pos = _varint(footer, pos)
        index_size, pos = _varint(footer, pos)
        for _, handle in _block_entries(_block(data, index_off, index_size, path)):
            off, p = _varint(handle, 0)
            size, _ = _varint(handle, p)
            for k, v in _block_entries(_block(data, off, size, path)):
                table[bytes(k)] = bytes(v)
    except (ValueError, IndexError, struct.error) as e:   # a varint or block running past its end
        raise errors.DataLossError(None, None, f"Checkpoint index {path} is corrupted ({e})") from None
    return table


def is_tf_index(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            f.seek(-8, os.SEEK_END)
            return struct.unpack("<Q", f.read(8))[0] == _MAGIC
    except OSError:
        return False


def _num_shards(header: bytes, prefix: str) -> int:
    """The data files a checkpoint has, from its BundleHeaderProto (little-endian ones only)."""
    proto = _record(BundleHeaderProto, header, f"Checkpoint index {prefix}.index")
    if proto.endianness != 0:
        raise errors.UnimplementedError(None, None, f"Checkpoint {prefix} is big-endian; only little-endian "
                                        "checkpoints are read")
    return proto.num_shards if header else 1


class TFBundle:
    """A TensorFlow V2 checkpoint opened for reading: `entries` (name -> Entry) and `load(part)`."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        table = read_table(prefix + ".index")
        self.num_shards = _num_shards(table.pop(b"", b""), prefix)
        self.entries: dict = {}
        for key, value in table.items():
            if key[:1] == b"\x00":
                continue  # the bytes of one slice: reached through its tensor's entry
            try:
                name = key.decode()
            except UnicodeDecodeError:
                raise errors.DataLossError(None, None, f"Checkpoint index {prefix}.index is corrupted (a tensor name "
                                           "that is not UTF-8)") from None
            what = f"Checkpoint index {prefix}.index, tensor {name}"
            e = _record(BundleEntryProto, value, what)
            dtype, shape = _dtype_name(e.dtype), _shape(e)
            if dtype is None:
                raise errors.UnimplementedError(None, None, f"Tensor {name} in checkpoint {prefix} has TF dtype "
                                                f"enum {e.dtype}, which is not supported")
            if e.slices:
                parts = []
                for s in e.slices:
                    start, length = _slice(s)
                    raw = table.get(slice_key(name, start, length))
                    length = tuple(d - b if n < 0 else n for d, b, n in zip(shape, start, length))
                    if raw is None:
                        raise errors.DataLossError(None, None, f"Checkpoint {prefix}: slice {start}+{length} of "
                                                   f"{name} is listed but its entry is missing")
                    parts.append(Part(start, length, _record(BundleEntryProto, raw, what)))
                self.entries[name] = Entry(dtype, shape, tuple(parts), sliced=True)
            else:
                self.entries[name] = Entry(dtype, shape, (Part((0,) * len(shape), shape, e),))

    def load(self, part: Part) -> np.ndarray:
        e = part.locator
        path = data_filename(self.prefix, e.shard_id, self.num_shards)
        try:
            with open(path, "rb") as f:
                # the index's size is checked against the file before anything is allocated
                raw = f.read(e.size) if f.seek(e.offset) + e.size <= os.fstat(f.fileno()).st_size else b""
        except FileNotFoundError:
            raise errors.NotFoundError(None, None, f"Checkpoint data file {path} not found") from None
        if len(raw) != e.size:
            raise errors.DataLossError(None, None, f"Checkpoint data file {path} is truncated: wanted {e.size} "
                                       f"bytes at offset {e.offset}, got {len(raw)}")
        dtype = _dtype_name(e.dtype)
        shape = part.length
        if dtype == "string":
            value, crcs = _strings(raw, shape, path)
        else:
            value, crcs = None, (crc32c(raw),)
        if e.crc32c and unmask(e.crc32c) not in crcs:
            raise errors.DataLossError(None, None, f"Checksum mismatch for a tensor in {path} (corrupted file)")
        if value is not None:
            return value
        if len(raw) != int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize:
            raise errors.DataLossError(None, None, f"Checkpoint data file {path}: a tensor of shape {list(shape)} "
                                       f"and dtype {dtype} cannot take {len(raw)} bytes (corrupted index)")
        return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype).reshape(shape)


def _strings(raw: bytes, shape, path: str) -> tuple:
    """A string tensor's bytes (the varint lengths, a 4-byte checksum of them, then the bytes) ->
    (object array, the crc32c values TF may have recorded: over the lengths (as uint32s in
    recent TF, uint64s in older ones), that checksum and the bytes)."""
    n = int(np.prod(shape, dtype=np.int64))
    if n > len(raw):   # every string takes at least its one-byte length
        raise errors.DataLossError(None, None, f"Malformed string tensor in {path}")
    lengths, pos = [], 0
    for _ in range(n):
        v, pos = _varint(raw, pos)
        lengths.append(v)
    crcs = tuple(crc32c(raw[pos:], crc32c(np.asarray(lengths, dtype=f).tobytes()))
                 for f in ("<u4", "<u8"))
    pos += 4
    out = np.empty(n, dtype=object)
    for i, ln in enumerate(lengths):
        out[i] = raw[pos:pos + ln]
        pos += ln
    if pos != len(raw):
        raise errors.DataLossError(None, None, f"Malformed string tensor in {path}")
    return out.reshape(shape), crcs


# -- writing --------------------------------------------------------------------------------------
_BLOCK_SIZE = 256 << 10      # table::Options: a data block is cut once it holds this much,
_RESTART_INTERVAL = 16       # with a restart point every 16 keys (every key in the index block)
_U64 = (1 << 64) - 1


def _put_varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7f | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _header_bytes(num_shards: int) -> bytes:
    """BundleHeaderProto {num_shards, endianness: LITTLE, version {producer: 1}}."""
    header = BundleHeaderProto(num_shards=num_shards)
    header.version.producer = 1
    return header.SerializeToString()


def _slice_proto(start, length):
    """A TensorSliceProto: an empty extent for a whole dimension (length -1), else its start and
    length (the length always written: it is a oneof member)."""
    proto = TensorSliceProto()
    for s, n in zip(start, length):
        extent = proto.extent.add()
        if not (n < 0 and s == 0):
            extent.start, extent.length = s, n
    return proto


def _entry(dtype: int, shape, offset: int = 0, size: int = 0, crc32c: int = 0):
    """A BundleEntryProto (the shape always present, a scalar's empty)."""
    entry = BundleEntryProto(dtype=dtype, offset=offset, size=size, crc32c=crc32c)
    entry.shape.SetInParent()
    entry.shape.dim.extend([entry.shape.Dim(size=d) for d in shape])
    return entry


class _Block:
    """TF's table::BlockBuilder: entries whose keys share a prefix with the previous key store only
    the rest, except at a restart point every `interval` entries; the restart offsets end it."""

    def __init__(self, interval: int):
        self.interval, self.buf, self.restarts, self.last, self.count = interval, bytearray(), [0], b"", 0

    def add(self, key: bytes, value: bytes) -> None:
        shared = 0
        if self.count < self.interval:
            n = min(len(self.last), len(key))
            while shared < n and self.last[shared] == key[shared]:
                shared += 1
        else:
            self.restarts.append(len(self.buf))
            self.count = 0
        self.buf += _put_varint(shared) + _put_varint(len(key) - shared) + _put_varint(len(value))
        self.buf += key[shared:] + value
        self.last, self.count = key, self.count + 1

    def size_estimate(self) -> int:
        return len(self.buf) + 4 * len(self.restarts) + 4

    def finish(self) -> bytes:
        return bytes(self.buf) + struct.pack(f"<{len(self.restarts) + 1}I", *self.restarts, len(self.restarts))


def _separator(start: bytes, limit: bytes) -> bytes:
    """BytewiseComparator's FindShortestSeparator: a short key >= start and < limit."""
    n = 0
    while n < min(len(start), len(limit)) and start[n] == limit[n]:
        n += 1
    if n < min(len(start), len(limit)) and start[n] < 0xff and start[n] + 1 < limit[n]:
        return start[:n] + bytes([start[n] + 1])
    return start


def _successor(key: bytes) -> bytes:
    """BytewiseComparator's FindShortSuccessor: a short key >= `key`."""
    for i, b in enumerate(key):
        if b != 0xff:
            return key[:i] + bytes([b + 1])
    return key


def table_bytes(items) -> bytes:
    """A sorted table of `items` [(key, value)] (sorted by key) as TF's table::TableBuilder writes
    it uncompressed: data blocks, an empty metaindex block, the index block (one entry per data
    block: a separator key and the block's handle), each block followed by its type byte and
    masked crc32c, then the 48-byte footer."""
    out = bytearray()

    def write_block(block: _Block) -> bytes:
        contents = block.finish() + b"\x00"
        handle = _put_varint(len(out)) + _put_varint(len(contents) - 1)
        out.extend(contents + struct.pack("<I", mask(crc32c(contents))))
        return handle

    index, data, pending, last = _Block(1), _Block(_RESTART_INTERVAL), None, b""
    for key, value in items:
        if pending is not None:
            index.add(_separator(last, key), pending)
            pending = None
        data.add(key, value)
        last = key
        if data.size_estimate() >= _BLOCK_SIZE:
            pending, data = write_block(data), _Block(_RESTART_INTERVAL)
    if data.buf:
        pending = write_block(data)
    metaindex = write_block(_Block(_RESTART_INTERVAL))
    if pending is not None:
        index.add(_successor(last), pending)
    footer = (metaindex + write_block(index)).ljust(_FOOTER - 8, b"\x00") + struct.pack("<Q", _MAGIC)
    return bytes(out + footer)


def _write_index(prefix: str, entries: dict, num_shards: int) -> None:
    items = [(b"", _header_bytes(num_shards))] + [(k, e.SerializeToString()) for k, e in sorted(entries.items())]
    raw = table_bytes(items)

    def write(tmp):
        with open(tmp, "wb") as f:
            f.write(raw)
    write_atomically(prefix + ".index", write)


def _tensor_bytes(value: np.ndarray, dtype: str) -> tuple:
    """(the bytes TF's BundleWriter stores for a tensor, their crc32c). A string tensor is the
    varint length of each string, the masked crc32c of the lengths (each as a uint32, TF's
    checksum), then the strings' bytes; any other tensor its little-endian bytes."""
    if dtype != "string":
        raw = memoryview(np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<")).reshape(-1)).cast("B")
        return raw, crc32c(raw)
    items = [x if isinstance(x, bytes) else str(x).encode() for x in value.reshape(-1)]
    sizes = b"".join(struct.pack("<I" if len(x) <= 0xffffffff else "<Q", len(x)) for x in items)
    checksum = struct.pack("<I", mask(crc32c(sizes)))
    strings = b"".join(items)
    raw = b"".join(_put_varint(len(x)) for x in items) + checksum + strings
    return raw, crc32c(strings, crc32c(checksum, crc32c(sizes)))


def write_tf_bundle(prefix: str, items: list, what: str = "SaveV2") -> None:
    """TF's BundleWriter, as its SaveV2 kernel uses it: writes `items` [(name, shape_and_slice,
    array)] as TensorFlow V2 checkpoint `prefix`: one data file holding the tensors' bytes in the
    order given, then the index. A slice (a partition of a variable) is stored under its
    OrderedCode key and listed in its full tensor's entry; a slice covering the whole tensor is
    stored as the tensor, as TF does."""
    make_parent(prefix)
    entries: dict = {}

    def write_data(tmp):
        offset = 0
        with open(tmp, "wb") as f:
            for name, spec, value in items:
                value = np.asarray(value)
                dtype = "string" if value.dtype == object or value.dtype.kind in "SU" else value.dtype.name
                enum = _dtype_enum(dtype)
                if enum is None:
                    raise ValueError(f"{what}: tensor {name} has dtype {dtype}, which this TensorFlow checkpoint "
                                     "writer does not support")
                key = name.encode()
                parsed = parse_shape_and_slice(spec, f"{what} ({name})")
                if parsed is not None:
                    full, start, length = parsed
                    if tuple(value.shape) != tuple(length):
                        raise ValueError(f"{what}: tensor {name} has shape {list(value.shape)} but its slice "
                                         f"'{spec}' has shape {list(length)}")
                    if tuple(length) != tuple(full):
                        whole = [d == "-" for d in spec.strip().split(" ")[-1].split(":")]
                        length = tuple(-1 if w else n for w, n in zip(whole, length))   # TF's full extent
                        tensor = entries.get(key)
                        if tensor is None:
                            tensor = entries[key] = _entry(enum, full)
                        elif not tensor.slices or tensor.dtype != enum or _shape(tensor) != tuple(full):
                            raise ValueError(f"{what}: slices of {name} disagree on dtype or full shape, or it is "
                                             "also saved whole")
                        tensor.slices.append(_slice_proto(start, length))
                        key = slice_key(name, start, length)
                if key in entries:
                    raise ValueError(f"{what}: {name} is saved twice (same slice)")
                raw, crc = _tensor_bytes(value, dtype)
                f.write(raw)
                entries[key] = _entry(enum, value.shape, offset, len(raw), mask(crc))
                offset += len(raw)
    write_atomically(data_filename(prefix, 0, 1), write_data)
    _write_index(prefix, entries, 1)


def merge_tf_bundles(sources: list, destination: str, delete_old_dirs: bool = True) -> None:
    """TF's MergeBundles (MergeV2Checkpoints): the entries of checkpoints `sources` become one
    index at `destination`, the slices of a tensor saved by several shards listed together; each
    data file that holds an entry is renamed (never copied), numbered in the order it is first
    met, and the merged index is written last."""
    merged: dict = {}
    data_files: dict = {}   # a shard's data file -> its number in the merged checkpoint
    for src in sources:
        table = read_table(src + ".index")
        num_shards = _num_shards(table.pop(b"", b""), src)
        for key, value in table.items():
            entry, have = _record(BundleEntryProto, value, f"Checkpoint index {src}.index"), merged.get(key)
            if have is not None:
                if not have.slices or not entry.slices or have.dtype != entry.dtype or have.shape != entry.shape:
                    raise errors.InvalidArgumentError(None, None, f"Duplicate tensor keyed by {key!r} encountered, "
                                                      f"when merging prefix: {src}")
                have.slices.extend(entry.slices)
                continue
            entry.shard_id = data_files.setdefault(data_filename(src, entry.shard_id, num_shards), len(data_files))
            merged[key] = entry
    renames = [(path, data_filename(destination, i, len(data_files))) for path, i in data_files.items()]
    merge_files(sources, destination, renames, lambda: _write_index(destination, merged, len(data_files)),
                delete_old_dirs)


def rewrite_as_tf_bundle(prefix: str) -> None:
    """Rewrites our checkpoint `prefix` (bundle.py) in TF's format, in place: every tensor, or
    every slice of a partitioned one, into one data file. For a SavedModel whose variables a
    user's Saver wrote in ours: TensorFlow reads only its own."""
    ours = Bundle(prefix)
    items = [(name, shape_and_slice_string(e.shape, p.start, p.length) if e.sliced else "", np.array(ours.load(p)))
             for name, e in ours.entries.items() for p in e.parts]
    for i in range(ours.num_data_files):
        os.remove(data_filename(prefix, i, ours.num_data_files))
    os.remove(prefix + ".index")
    write_tf_bundle(prefix, items)
