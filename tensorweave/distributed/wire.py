"""The wire format: one msgpack header (plain data only) plus one raw frame per tensor.

A tensor anywhere inside the header's data (an argument, a result, a Const value inside a
GraphDef attr) is replaced by a msgpack ext value (code 1) holding
``[dtype name, shape, frame index, is numpy scalar]``; its bytes travel as frame
``1 + frame index``, C-contiguous, little-endian as in memory. A tensor of at most
_INLINE_BELOW bytes carries its bytes in place of the frame index (no frame of its own). Receiving builds the array
with ``np.frombuffer`` on the frame (no copy; the array is read-only). String tensors use
one frame: ``n`` uint64 little-endian lengths followed by the concatenated bytes.

Between processes of one host (the Unix-socket path) a large numeric tensor may travel in
shared memory instead (shm.py): the sender passes `shm_put` and the tensor becomes a msgpack
ext value (code 2) ``[dtype name, shape, buffer name, generation]`` with no frame (a part of
a buffer its sender lends, shm.Pool.lend: ``[..., generation, byte offset]``); the
receiver passes `shm` (an shm.Attached) to decode it into a read-only view of the buffer. A
message holding such a reference decoded without `shm` (over tcp) is malformed.

Decoding never trusts the peer: msgpack types, dtype names, shapes, frame indices and byte
lengths are checked, every failure is a `WireError` (an InvalidArgumentError) with a clear
message, and nothing is ever unpickled or evaluated.
"""
from __future__ import annotations

import threading
from typing import Any, Optional, Sequence

import msgpack
import numpy as np

from tensorweave.distributed import shm as _shm
from tensorweave.framework import errors, limits

TENSOR_EXT = 1
SHM_EXT = 2
MAX_NDIM = 64
MAX_HEADER_BYTES = 64 << 20
MAX_STRING_ELEMENTS = 1 << 28

# Numeric dtypes that may travel, by TF name. Object dtypes (resource, variant) never do.
_NUMERIC = {
    "float16": np.float16, "float32": np.float32, "float64": np.float64,
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "bool": np.bool_, "complex64": np.complex64, "complex128": np.complex128,
}
_NP_TO_NAME = {np.dtype(v): k for k, v in _NUMERIC.items()}
_DTYPES = {k: np.dtype(v) for k, v in _NUMERIC.items()}   # (np.dtype(...) per tensor costs)
_LE_U64 = np.dtype("<u8")
_COPY_BELOW = 64 << 10        # tensors up to this many bytes are copied (as zmq would anyway)
_INLINE_BELOW = 256           # tensors up to this many bytes travel inside their descriptor
_tls = threading.local()      # per-thread msgpack Packer/Unpacker for tensor descriptors


class WireError(errors.InvalidArgumentError):
    """A malformed message: it names what was wrong with it."""

    def __init__(self, message: str):
        super().__init__(None, None, f"Malformed message: {message}")


# -- encoding -----------------------------------------------------------------------------------
def _encode_strings(arr: np.ndarray) -> bytes:
    flat = arr.reshape(-1)
    items = []
    for v in flat:
        if isinstance(v, str):
            v = v.encode("utf-8")
        elif isinstance(v, np.bytes_):
            v = bytes(v)
        elif not isinstance(v, (bytes, bytearray, memoryview)):
            raise TypeError(f"A string tensor holds a {type(v).__name__} value, not bytes: {v!r}")
        items.append(bytes(v))
    lengths = np.fromiter((len(b) for b in items), dtype=_LE_U64, count=len(items))
    return lengths.tobytes() + b"".join(items)


def _packer() -> msgpack.Packer:
    # (one kept per thread: a msgpack.packb inside `default` costs far more, docs/PERFORMANCE.md)
    packer = getattr(_tls, "packer", None)
    if packer is None:
        packer = _tls.packer = msgpack.Packer(use_bin_type=True)
    return packer


class Encoder:
    """Collects the tensor frames of one message while packing its header (and, given a
    shared-memory pool, the buffers its large tensors went into: `leases`)."""

    __slots__ = ("frames", "pool", "peer_pid", "leases", "shared_bytes")

    def __init__(self, pool: Optional["_shm.Pool"] = None, peer_pid: int = 0):
        self.frames: list = []
        self.pool = pool
        self.peer_pid = peer_pid
        self.leases: list = []
        self.shared_bytes = 0

    def _tensor(self, value, is_scalar: bool) -> msgpack.ExtType:
        arr = value if type(value) is np.ndarray else np.asarray(value)
        name = _NP_TO_NAME.get(arr.dtype)    # native byte order numeric dtypes: the fast path
        if name is not None and arr.flags.c_contiguous:
            # Small tensors are copied (cheaper than a view); large ones travel zero-copy: the
            # frame aliases the array's memory. Safe because values handed to the transport are
            # snapshots: kernels never mutate inputs and variables replace (never mutate) their
            # stored array on update.
            if arr.nbytes <= _INLINE_BELOW:
                # A tiny tensor travels inside its descriptor: a frame costs more than its bytes.
                return msgpack.ExtType(TENSOR_EXT, _packer().pack([name, list(arr.shape), arr.tobytes(), is_scalar]))
            if arr.nbytes <= _COPY_BELOW:
                frame = arr.tobytes()
            else:
                if self.pool is not None and arr.nbytes >= _shm.MIN_BYTES:
                    ref = self.pool.put(arr, self.peer_pid)
                    if ref is not None:
                        if len(ref) == 2:   # (a lent part, [name, generation, offset], is no lease)
                            self.leases.append(ref)
                        self.shared_bytes += arr.nbytes
                        return msgpack.ExtType(SHM_EXT, _packer().pack([name, list(arr.shape), *ref]))
                frame = memoryview(arr.reshape(-1).view(np.uint8))
        elif arr.dtype.kind in "SUO":
            name = "string"
            if arr.dtype.kind != "O":
                arr = arr.astype(object)
            frame = _encode_strings(arr)
        else:
            name = _NP_TO_NAME.get(arr.dtype.newbyteorder("="))
            if name is None:
                raise TypeError(f"Tensors of numpy dtype {arr.dtype} cannot be sent")
            arr = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("="))
            frame = memoryview(arr.reshape(-1).view(np.uint8)) if arr.size else b""
        idx = len(self.frames)
        self.frames.append(frame)
        return msgpack.ExtType(TENSOR_EXT, _packer().pack([name, list(arr.shape), idx, is_scalar]))

    def default(self, obj):
        if isinstance(obj, np.ndarray):
            return self._tensor(obj, False)
        if isinstance(obj, np.generic):
            name = _NP_TO_NAME.get(obj.dtype)
            if name is not None:   # a numeric scalar (a step's loss, a carried value): in place
                return msgpack.ExtType(TENSOR_EXT, _packer().pack([name, [], obj.tobytes(), True]))
            return self._tensor(obj, True)
        if isinstance(obj, (tuple, list)):
            return list(obj)
        # strict_types: subclasses of plain types (IntEnum, OrderedDict, ...) arrive here.
        for plain in (bool, int, float, str, bytes, dict):
            if isinstance(obj, plain):
                return plain(obj)
        raise TypeError(f"Cannot send a value of type {type(obj).__name__}: {obj!r}")


def encode(header: Any) -> list:
    """Plain data (numpy values anywhere inside) -> [header bytes, tensor frames...]."""
    return encode_shared(header, None)[0]


def encode_shared(header: Any, pool: Optional["_shm.Pool"], peer_pid: int = 0) -> tuple:
    """encode() whose large tensors go into `pool`'s shared-memory buffers (for the receiver
    process `peer_pid`): returns (frames, leases, shared bytes): the leases to give back with
    `pool.release(*lease)` if the message never reaches its receiver, and the bytes in them."""
    enc = Encoder(pool, peer_pid)
    try:
        head = msgpack.packb(header, default=enc.default, use_bin_type=True, strict_types=True)
    except BaseException as e:
        for lease in enc.leases:
            pool.release(*lease)
        if isinstance(e, (TypeError, ValueError, OverflowError)):
            raise errors.InvalidArgumentError(None, None, f"Cannot encode message: {e}") from None
        raise
    return [head] + enc.frames, enc.leases, enc.shared_bytes


# -- decoding -----------------------------------------------------------------------------------
def _buffer(frame) -> memoryview:
    if isinstance(frame, (bytes, bytearray, memoryview)):
        return memoryview(frame)
    return frame.buffer   # zmq.Frame


def _check_shape(shape) -> tuple:
    if not isinstance(shape, list) or len(shape) > MAX_NDIM:
        raise WireError(f"tensor shape must be a list of at most {MAX_NDIM} dimensions, got {shape!r:.100}")
    for d in shape:
        if type(d) is not int or d < 0:
            raise WireError(f"tensor dimension must be a non-negative integer, got {d!r:.50} in {shape!r:.100}")
    return tuple(shape)


def _decode_strings(buf: memoryview, shape: tuple, n: int) -> np.ndarray:
    if n > MAX_STRING_ELEMENTS or n * 8 > len(buf):
        raise WireError(f"string tensor of shape {list(shape)} claims {n} elements but its frame "
                        f"holds {len(buf)} bytes")
    lengths = np.frombuffer(buf, dtype=_LE_U64, count=n)
    total = int(lengths.sum(dtype=np.uint64)) if n else 0
    if 8 * n + total != len(buf) or (n and int(lengths.max()) > len(buf)):
        raise WireError(f"string tensor of shape {list(shape)}: lengths sum to {total} bytes but the "
                        f"frame holds {len(buf) - 8 * n}")
    out = np.empty(n, dtype=object)
    raw = bytes(buf[8 * n:])
    pos = 0
    for i, ln in enumerate(lengths.tolist()):
        out[i] = raw[pos:pos + ln]
        pos += ln
    return out.reshape(shape)


def _decode_tensor(data: bytes, frames: Sequence, used: set):
    try:
        desc = msgpack.unpackb(data, raw=False, use_list=True, strict_map_key=True)
    except Exception as e:  # noqa: BLE001 - any msgpack failure is a malformed message
        raise WireError(f"bad tensor descriptor ({type(e).__name__})") from None
    if not isinstance(desc, list) or len(desc) != 4:
        raise WireError(f"tensor descriptor must be [dtype, shape, frame, scalar], got {desc!r:.100}")
    name, shape, idx, is_scalar = desc
    if is_scalar is True and shape == [] and type(idx) is bytes and type(name) is str:
        npd = _DTYPES.get(name)   # a numeric scalar in place (a fetched loss, a carried value)
        if npd is not None and len(idx) == npd.itemsize:
            return np.frombuffer(idx, npd)[0]
    if not isinstance(name, str):
        raise WireError(f"tensor dtype must be a string, got {name!r:.50}")
    shape = _check_shape(shape)
    if type(is_scalar) is not bool or (is_scalar and shape):
        raise WireError(f"bad scalar flag {is_scalar!r:.30} for shape {list(shape)}")
    if type(idx) is bytes:   # a tiny tensor inside its descriptor
        buf = memoryview(idx)
    else:
        if type(idx) is not int or not 0 <= idx < len(frames) - 1:
            raise WireError(f"tensor frame index {idx!r:.30} is out of range (message has {len(frames) - 1} "
                            "tensor frames)")
        if idx in used:
            raise WireError(f"tensor frame {idx} is referenced twice")
        used.add(idx)
        buf = _buffer(frames[idx + 1])
    n = 1
    for d in shape:
        n *= d
    if name == "string":
        arr = _decode_strings(buf, shape, n)
        return arr[()] if is_scalar else arr
    npd = _DTYPES.get(name)
    if npd is None:
        raise WireError(f"unknown dtype {name!r:.50}")
    itemsize = npd.itemsize
    if n * itemsize != len(buf):
        raise WireError(f"tensor of dtype {name} and shape {list(shape)} needs {n * itemsize} bytes but "
                        f"its frame holds {len(buf)}")
    arr = np.frombuffer(buf, dtype=npd, count=n).reshape(shape) if n else np.empty(shape, dtype=npd)
    if is_scalar:
        return arr[()]
    arr.flags.writeable = False   # it aliases the message's memory
    return arr


def _decode_shared(data: bytes, shm: Optional["_shm.Attached"]):
    if shm is None:
        raise WireError("a tensor in shared memory arrived on a connection that takes none")
    try:
        desc = msgpack.unpackb(data, raw=False, use_list=True, strict_map_key=True)
    except Exception as e:  # noqa: BLE001 - any msgpack failure is a malformed message
        raise WireError(f"bad shared tensor descriptor ({type(e).__name__})") from None
    if not isinstance(desc, list) or len(desc) not in (4, 5):
        raise WireError(f"shared tensor descriptor must be [dtype, shape, buffer, generation(, offset)], "
                        f"got {desc!r:.100}")
    name, shape, buffer, generation = desc[:4]
    offset = desc[4] if len(desc) == 5 else None   # (a part of a buffer its sender lends)
    if offset is not None and (type(offset) is not int or offset < 0):
        raise WireError(f"shared tensor offset must be a non-negative integer, got {offset!r:.30}")
    npd = _NUMERIC.get(name) if isinstance(name, str) else None
    if npd is None:
        raise WireError(f"unknown dtype {name!r:.50} of a shared tensor")
    shape = _check_shape(shape)
    if type(generation) is not int or generation < 0:
        raise WireError(f"shared tensor generation must be a non-negative integer, got {generation!r:.30}")
    n = 1
    for d in shape:
        n *= d
    nbytes = n * np.dtype(npd).itemsize
    if nbytes > limits.value(limits.MESSAGE_BYTES):
        raise WireError(f"a tensor of {nbytes} bytes in shared memory exceeds {limits.MESSAGE_BYTES.name} "
                        f"({limits.value(limits.MESSAGE_BYTES)})")
    try:
        return shm.take(buffer, generation, np.dtype(npd), shape, nbytes, offset)
    except _shm.ShmError as e:
        raise WireError(str(e)) from None


def decode(frames: Sequence, shm: Optional["_shm.Attached"] = None) -> Any:
    """[header bytes, tensor frames...] -> plain data with numpy arrays (read-only, zero-copy);
    `shm` resolves tensors in shared memory (same-host connections only)."""
    if not frames:
        raise WireError("empty message")
    head = _buffer(frames[0])
    if len(head) > MAX_HEADER_BYTES:
        raise WireError(f"header of {len(head)} bytes exceeds the limit of {MAX_HEADER_BYTES}")
    used: set = set()

    def ext_hook(code: int, data: bytes):
        if code == TENSOR_EXT:
            return _decode_tensor(data, frames, used)
        if code == SHM_EXT:
            return _decode_shared(data, shm)
        raise WireError(f"unknown msgpack extension type {code}")

    try:
        out = msgpack.unpackb(head, ext_hook=ext_hook, raw=False, use_list=True, strict_map_key=True)
    except WireError:
        raise
    except Exception as e:  # noqa: BLE001 - garbage of any kind is a malformed message
        raise WireError(f"header is not valid msgpack ({type(e).__name__}: {str(e)[:100]})") from None
    if len(used) != len(frames) - 1:
        raise WireError(f"message carries {len(frames) - 1} tensor frames but its header uses {len(used)}")
    return out


# -- structured field checks for the services -----------------------------------------------
def expect(value, kind, what: str):
    """Checks one decoded field's type; kind is a type or tuple of types (bool is not int)."""
    if type(value) is kind:   # the common case, on every request: one comparison
        return value
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise WireError(f"{what} must be {' or '.join(k.__name__ for k in kinds)}, got bool")
    if not isinstance(value, kinds):
        raise WireError(f"{what} must be {' or '.join(k.__name__ for k in kinds)}, "
                        f"got {type(value).__name__}")
    return value


def expect_str_list(value, what: str) -> list:
    expect(value, list, what)
    for v in value:
        expect(v, str, f"each of {what}")
    return value
