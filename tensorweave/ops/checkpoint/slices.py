"""Slices of saved tensors: TF's `shape_and_slice` strings ("10 3 0,4:-"), and assembling any
requested slice of a tensor from the slices a checkpoint holds (a partitioned variable is saved
as one slice per partition and may be restored into a different partitioning, or whole)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from tensorweave.framework import errors


@dataclass(frozen=True)
class Part:
    """One stored piece of a saved tensor: its offset and extent in the full tensor, and where
    its bytes are (`locator`, the format's own record)."""
    start: tuple
    length: tuple
    locator: Any


@dataclass(frozen=True)
class Entry:
    """A saved tensor: dtype name, full shape, and the parts that hold it (one part covering the
    whole tensor unless it was saved as slices)."""
    dtype: str
    shape: tuple
    parts: tuple
    sliced: bool = False


def parse_slice(spec: str, rank: int, what: str) -> tuple:
    """'0,4:-' -> (start, length) with length -1 for a whole dimension."""
    dims = spec.split(":") if spec else []
    if len(dims) != rank:
        raise ValueError(f"{what}: slice '{spec}' has {len(dims)} dimensions, expected {rank}")
    start, length = [], []
    for d in dims:
        if d == "-":
            start.append(0)
            length.append(-1)
            continue
        try:
            s, n = (int(x) for x in d.split(","))
        except ValueError:
            raise ValueError(f"{what}: malformed slice '{spec}' (expected 'start,length' or '-' per "
                             "dimension)") from None
        if s < 0 or n < 0:
            raise ValueError(f"{what}: negative start or length in slice '{spec}'")
        start.append(s)
        length.append(n)
    return tuple(start), tuple(length)


def parse_shape_and_slice(spec: str, what: str) -> Optional[tuple]:
    """TF's shape_and_slice: '' (the whole tensor) -> None; 'd0 d1 ... slice' ->
    (full_shape, start, length), lengths made explicit."""
    if isinstance(spec, bytes):
        spec = spec.decode()
    spec = spec.strip()
    if not spec:
        return None
    fields = spec.split(" ")
    try:
        full = tuple(int(x) for x in fields[:-1])
    except ValueError:
        raise ValueError(f"{what}: malformed shape_and_slice '{spec}'") from None
    start, length = parse_slice(fields[-1], len(full), what)
    length = tuple(f - s if n < 0 else n for f, s, n in zip(full, start, length))
    for f, s, n in zip(full, start, length):
        if s + n > f:
            raise ValueError(f"{what}: slice '{spec}' lies outside the full shape {list(full)}")
    return full, start, length


def slice_string(start, length) -> str:
    """(start, length) as TF's slice string '0,4:0,3' (a scalar's is '')."""
    return ":".join(f"{s},{n}" for s, n in zip(start, length))


def shape_and_slice_string(full_shape, start, length) -> str:
    return " ".join(str(d) for d in full_shape) + " " + slice_string(start, length)


def assemble(entry: Entry, name: str, start: tuple, length: tuple, load: Callable, source: str) -> np.ndarray:
    """The block [start, start+length) of saved tensor `name`, copied from the parts that
    overlap it (load(part) -> that part's array). Missing coverage is NotFoundError."""
    if len(start) != len(entry.shape):
        raise errors.InvalidArgumentError(
            None, None, f"Requested slice of {name} has rank {len(start)}, but the tensor in {source} has "
            f"shape {list(entry.shape)}")
    whole = tuple(start) == (0,) * len(start) and tuple(length) == tuple(entry.shape)
    if whole and len(entry.parts) == 1 and tuple(entry.parts[0].length) == tuple(entry.shape):
        return load(entry.parts[0])
    out = None
    covered = 0
    for part in entry.parts:
        lo = [max(a, b) for a, b in zip(start, part.start)]
        hi = [min(a + n, b + m) for a, n, b, m in zip(start, length, part.start, part.length)]
        if any(high <= low for low, high in zip(lo, hi)) and len(start):
            continue
        value = load(part)
        if out is None:
            out = np.empty(length, dtype=value.dtype)
        src = tuple(slice(low - b, high - b) for low, high, b in zip(lo, hi, part.start))
        dst = tuple(slice(low - a, high - a) for low, high, a in zip(lo, hi, start))
        out[dst] = value[src]
        covered += int(np.prod([high - low for low, high in zip(lo, hi)], dtype=np.int64))
    if out is None or covered < int(np.prod(length, dtype=np.int64)):
        raise errors.NotFoundError(
            None, None, f"The slices of {name} in {source} do not cover the requested slice "
            f"{slice_string(start, length)} of shape {list(entry.shape)}")
    return out
