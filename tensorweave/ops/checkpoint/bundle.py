"""Our checkpoint format: `prefix.data-SSSSS-of-NNNNN` safetensors files and a JSON
`prefix.index`, so that anyone can open a checkpoint with the safetensors package alone.

The index says, for each saved name, its dtype, full shape and the parts that hold it: a whole
tensor is one part; a partitioned variable is one part per saved slice (its offset and extent
in the full tensor, TF's save_slice_info). Each part names its data file, its key in that file
(the name, or `name:slice` for a slice) and the crc32c of its bytes. A string tensor is stored
as its concatenated bytes (uint8) plus `key#lengths` (int64); dtypes safetensors lacks are
stored as raw bytes (uint8) and restored from the index's dtype.

Every file is written under a temporary name and renamed into place, the index last: a reader
never sees a half-written file under a checkpoint's name. Temporaries name their writer's host and
process, so the next write in their directory removes those a killed writer left.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import uuid
from typing import Optional

import numpy as np
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file

from tensorweave.framework import dtypes, errors
from tensorweave.ops.checkpoint.slices import Entry, Part, parse_shape_and_slice, slice_string
from tensorweave.ops.io.tfrecord import crc32c

FORMAT = "tensorweave-checkpoint"
_SAFETENSORS_DTYPES = {"bool", "uint8", "int8", "int16", "uint16", "float16", "int32", "uint32", "float32",
                       "float64", "int64", "uint64", "complex64"}
VERSION = 1


def data_filename(prefix: str, shard: int, num_shards: int) -> str:
    """TF's data file name: prefix.data-00000-of-00002."""
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def sharded_filename(basename: str, shard: int, num_shards: int) -> str:
    """TF's ShardedFilename: basename-00000-of-00002."""
    return f"{basename}-{shard:05d}-of-{num_shards:05d}"


# A temporary name carries the host and process id of its writer, so that whoever writes in its
# directory next can tell a temporary of a writer that died (kill -9 mid-save) from one still
# being written, and removes it: a killed save leaves nothing behind for long.
_TEMPORARY = re.compile(r"(\.tempstate-|_temp_)(?P<host>(?:(?!\.tempstate-|_temp_).)+)-(?P<pid>\d+)-[0-9a-f]{32}$")


def temporary_name(path: str, marker: str = ".tempstate-") -> str:
    """A fresh temporary sibling of `path`, named for this process (see sweep_temporaries)."""
    return f"{path}{marker}{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # another user's process
        return True
    return True


def sweep_temporaries(directory: str) -> None:
    """Removes the temporaries (files or directories) in `directory` that processes of this host
    which are gone left behind. Another host's are left alone: its processes cannot be asked."""
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return
    host = socket.gethostname()
    for name in names:
        m = _TEMPORARY.search(name)
        if m is None or m.group("host") != host or _alive(int(m.group("pid"))):
            continue
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.remove(path)
            except OSError:
                pass


def _saved_errno(e: Exception) -> Optional[int]:
    """The errno in a SafetensorError's message (its Rust io::Error says "(os error 28)")."""
    m = re.search(r"os error (\d+)", str(e))
    return int(m.group(1)) if m else None


def write_atomically(path: str, write, own_directory: bool = False) -> None:
    """write(temporary path), then rename it to `path`. The temporary is a sibling of `path` named
    for this process; with own_directory, a file in a directory of that name, for a writer that
    makes hidden temporaries of its own beside its target (safetensors). Either is removed when
    the write fails and swept by the next write in this directory if a kill leaves it behind. A
    failure to write is TF's error naming `path` (a full disk or quota ResourceExhaustedError)."""
    directory = os.path.dirname(path)
    sweep_temporaries(directory)
    tmp_dir = temporary_name(path) if own_directory else None
    tmp = os.path.join(tmp_dir, os.path.basename(path)) if tmp_dir else temporary_name(path)
    done = False
    try:
        if tmp_dir:
            os.mkdir(tmp_dir)
        try:
            write(tmp)
        except SafetensorError as e:
            code = _saved_errno(e)
            if code is None:
                raise
            raise OSError(code, os.strerror(code)) from None
        os.replace(tmp, path)
        done = True
    except OSError as e:
        raise errors.os_error(e, path) from None
    finally:
        if tmp_dir:
            shutil.rmtree(tmp_dir, ignore_errors=True)
        elif not done:
            try:
                os.remove(tmp)
            except OSError:
                pass


def write_text_atomically(path: str, text: str) -> None:
    def write(tmp):
        with open(tmp, "w") as f:
            f.write(text)
    write_atomically(path, write)


def make_parent(prefix: str) -> None:
    """Creates the checkpoint's directory, as TF's bundle writer does (a shard's temporary
    directory, or a directory only the saving task sees)."""
    parent = os.path.dirname(prefix)
    if parent:
        os.makedirs(parent, exist_ok=True)


def _encode(array: np.ndarray, key: str, out: dict) -> tuple:
    """Adds `array` under `key` to `out` (safetensors arrays); returns (dtype name, crc32c)."""
    if array.dtype == object or array.dtype.kind in "SU":
        items = [x if isinstance(x, bytes) else str(x).encode() for x in array.reshape(-1)]
        out[key] = np.frombuffer(b"".join(items), dtype=np.uint8)
        out[key + "#lengths"] = np.asarray([len(x) for x in items], dtype=np.int64)
        return "string", crc32c(out[key].tobytes(), crc32c(out[key + "#lengths"].tobytes()))
    value = np.ascontiguousarray(array)
    out[key] = value
    return value.dtype.name, crc32c(memoryview(value.reshape(-1)).cast("B"))


def write_bundle(prefix: str, items: list, what: str = "SaveV2") -> None:
    """Writes `items` [(name, shape_and_slice, array)] as checkpoint `prefix` (one data file)."""
    make_parent(prefix)
    arrays: dict = {}
    entries: dict = {}
    for name, spec, value in items:
        value = np.asarray(value)
        parsed = parse_shape_and_slice(spec, f"{what} ({name})")
        if parsed is None:
            full, start, length, key = value.shape, (0,) * value.ndim, value.shape, name
        else:
            full, start, length = parsed
            key = f"{name}:{slice_string(start, length)}"
            if tuple(value.shape) != tuple(length):
                raise ValueError(f"{what}: tensor {name} has shape {list(value.shape)} but its slice "
                                 f"'{spec}' has shape {list(length)}")
        if key in arrays:
            raise ValueError(f"{what}: {name} is saved twice (same slice)")
        dtype, crc = _encode(value, key, arrays)
        part = {"start": list(start), "length": list(length), "file": 0, "key": key, "crc32c": crc}
        entry = entries.setdefault(name, {"dtype": dtype, "shape": list(full), "sliced": parsed is not None,
                                          "parts": []})
        if entry["dtype"] != dtype or entry["shape"] != list(full):
            raise ValueError(f"{what}: slices of {name} disagree on dtype or full shape")
        entry["parts"].append(part)
    # dtypes safetensors does not know travel as raw bytes; the index keeps the dtype
    safe_arrays = {k: a if a.dtype.name in _SAFETENSORS_DTYPES else a.reshape(-1).view(np.uint8)
                   for k, a in arrays.items()}
    write_atomically(data_filename(prefix, 0, 1), lambda tmp: save_file(safe_arrays, tmp, metadata={
        "format": FORMAT}), own_directory=True)
    write_index(prefix, {"format": FORMAT, "version": VERSION, "num_data_files": 1, "entries": entries})


def write_index(prefix: str, index: dict) -> None:
    write_text_atomically(prefix + ".index", json.dumps(index, sort_keys=True))


def read_index(prefix: str) -> dict:
    path = prefix + ".index"
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"Checkpoint index {path} not found") from None
    try:
        index = json.loads(raw)
    except ValueError:
        raise errors.DataLossError(None, None, f"Checkpoint index {path} is truncated or corrupted (not valid "
                                   "JSON)") from None
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise errors.DataLossError(None, None, f"{path} is not a tensorweave checkpoint index")
    _check_index(index, path)
    return index


def is_our_index(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(1) == b"{"
    except OSError:
        return False


def merge_bundles(sources: list, destination: str, delete_old_dirs: bool = True) -> None:
    """TF's MergeV2Checkpoints: the data files of checkpoints `sources` become those of
    `destination` (renamed, never copied) and their indexes one merged index, written last."""
    indexes = [read_index(p) for p in sources]
    total = sum(ix["num_data_files"] for ix in indexes)
    merged: dict = {}
    renames = []
    base = 0
    for src, ix in zip(sources, indexes):
        n = ix["num_data_files"]
        for i in range(n):
            renames.append((data_filename(src, i, n), data_filename(destination, base + i, total)))
        for name, entry in ix["entries"].items():
            parts = [dict(p, file=p["file"] + base) for p in entry["parts"]]
            have = merged.get(name)
            if have is None:
                merged[name] = dict(entry, parts=parts)
            elif have["sliced"] and entry["sliced"] and have["dtype"] == entry["dtype"] and \
                    have["shape"] == entry["shape"]:
                have["parts"].extend(parts)
            else:
                raise errors.InvalidArgumentError(None, None, f"MergeV2Checkpoints: {name} is saved by more than "
                                                  f"one shard ({', '.join(sources)})")
        base += n
    merge_files(sources, destination, renames, lambda: write_index(destination, {
        "format": FORMAT, "version": VERSION, "num_data_files": total, "entries": merged}), delete_old_dirs)


def merge_files(sources: list, destination: str, renames: list, write_merged_index, delete_old_dirs: bool) -> None:
    """The file moves of a MergeV2Checkpoints, either format: renames the shards' data files
    (`renames`: [(source, destination)]) into place, calls write_merged_index() (the index comes
    last), removes the shards' indexes and, with delete_old_dirs, their temporary directories."""
    make_parent(destination)
    for src, dst in renames:
        try:
            os.replace(src, dst)
        except FileNotFoundError:
            raise errors.NotFoundError(None, None, f"MergeV2Checkpoints: data file {src} not found") from None
    write_merged_index()
    for src in sources:
        os.remove(src + ".index")
    if delete_old_dirs:   # the shards' temporary directories, never the destination's
        keep = os.path.abspath(os.path.dirname(destination) or ".")
        for d in {os.path.abspath(os.path.dirname(src) or ".") for src in sources} - {keep}:
            shutil.rmtree(d, ignore_errors=True)


def _count(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _counts(x) -> bool:
    return isinstance(x, list) and all(_count(v) for v in x)


def _known_dtype(name) -> bool:
    if name == "string":
        return True
    try:
        return isinstance(name, str) and dtypes.as_dtype(name) is not None
    except (TypeError, ValueError, KeyError):
        return False


def _check_index(index: dict, path: str) -> None:
    """DataLossError naming the index file when its JSON is not a checkpoint index's shape: the
    reader then never meets a key that is not a string or a shape that is not a list of sizes."""
    def bad(what: str):
        return errors.DataLossError(None, None, f"Checkpoint index {path} is corrupted: {what}")
    files = index.get("num_data_files")
    if not _count(files) or files < 1:
        raise bad(f"num_data_files is {files!r}")
    entries = index.get("entries")
    if not isinstance(entries, dict):
        raise bad("it has no entries")
    for name, e in entries.items():
        if not isinstance(e, dict) or not _known_dtype(e.get("dtype")) or not _counts(e.get("shape")) or \
                not isinstance(e.get("parts"), list) or not e["parts"]:
            raise bad(f"the entry of {name} is malformed")
        for p in e["parts"]:
            if not isinstance(p, dict) or not isinstance(p.get("key"), str) or not _count(p.get("crc32c")) or \
                    not _count(p.get("file")) or p["file"] >= files or not _counts(p.get("start")) or \
                    not _counts(p.get("length")) or not len(p["start"]) == len(p["length"]) == len(e["shape"]):
                raise bad(f"a part of {name} is malformed")


class Bundle:
    """One of our checkpoints opened for reading: `entries` (name -> Entry) and `load(part)`."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        index = read_index(prefix)
        self.num_data_files = index["num_data_files"]
        self.entries = {}
        for name, e in index["entries"].items():
            parts = tuple(Part(tuple(p["start"]), tuple(p["length"]), dict(p, dtype=e["dtype"])) for p in e["parts"])
            self.entries[name] = Entry(e["dtype"], tuple(e["shape"]), parts, bool(e.get("sliced")))
        self._files: dict = {}

    def _open(self, i: int):
        f = self._files.get(i)
        if f is None:
            path = data_filename(self.prefix, i, self.num_data_files)
            try:
                f = self._files[i] = safe_open(path, framework="np")
            except (SafetensorError, OSError, ValueError) as e:
                # (asked after the open: a writer rotating its checkpoints may delete the file in between)
                if not os.path.exists(path):
                    raise errors.NotFoundError(None, None, f"Checkpoint data file {path} not found") from None
                raise errors.DataLossError(None, None, f"Checkpoint data file {path} is truncated or corrupted: "
                                           f"{e}") from None
        return f

    def load(self, part: Part) -> np.ndarray:
        loc = part.locator
        path = data_filename(self.prefix, loc["file"], self.num_data_files)
        f = self._open(loc["file"])
        key = loc["key"]
        dtype = loc["dtype"]
        try:
            raw = f.get_tensor(key)
            lengths = f.get_tensor(key + "#lengths") if dtype == "string" else None
        except (SafetensorError, OSError, ValueError) as e:
            raise errors.DataLossError(None, None, f"Checkpoint data file {path}: cannot read {key}: {e}") from None
        if dtype == "string":
            crc = crc32c(raw.tobytes(), crc32c(lengths.tobytes()))
        else:
            crc = crc32c(memoryview(np.ascontiguousarray(raw).reshape(-1)).cast("B"))
        if crc != loc["crc32c"]:
            raise errors.DataLossError(None, None, f"Checkpoint data file {path}: checksum mismatch for {key} "
                                       "(corrupted file)")
        shape = tuple(part.length)
        count = int(np.prod(part.length, dtype=np.int64))
        fits = len(lengths) == count and int(lengths.sum()) == raw.size if dtype == "string" \
            else raw.nbytes == count * np.dtype(dtype).itemsize
        if not fits:
            raise errors.DataLossError(None, None, f"Checkpoint data file {path}: {key} holds {raw.nbytes} bytes, "
                                       f"which is not a {dtype} tensor of shape {list(part.length)} (corrupted "
                                       "index)")
        if dtype == "string":
            out = np.empty(len(lengths), dtype=object)
            ends = np.cumsum(lengths)
            buf = raw.tobytes()
            for i, (s, e) in enumerate(zip(ends - lengths, ends)):
                out[i] = buf[s:e]
            return out.reshape(shape)
        if raw.dtype.name != dtype:
            raw = raw.reshape(-1).view(dtype)
        return raw.reshape(shape)
