"""Encoders the summary ops use, with TF's exact rules: histograms over TF's default bucket
limits (a 10% geometric ladder from 1e-12 to 1e20, mirrored for negatives), float images
scaled to uint8 as TF's ImageSummary does, PNG (zlib, no other dependency) and 16-bit PCM WAV
(tensors: ops/tensor_proto.py)."""
from __future__ import annotations

import functools
import struct
import sys
import zlib

import numpy as np

from tensorweave.framework import denormals
from tensorweave.framework.tf_protos import summary_pb2

DBL_MAX = sys.float_info.max


def _default_bucket_limits() -> np.ndarray:
    pos = []
    v = 1.0e-12
    while v < 1.0e20:
        pos.append(v)
        v *= 1.1
    pos.append(DBL_MAX)
    return np.asarray([-x for x in reversed(pos)] + [0.0] + pos)


BUCKET_LIMITS = _default_bucket_limits()


@functools.lru_cache(maxsize=None)
def _prefix_tables(dtype: np.dtype) -> tuple:
    """For each 16-bit prefix of a float32's or float64's bits (the sign, the exponent and the top
    mantissa bits): the bucket index (np.searchsorted(BUCKET_LIMITS, v, side="right")) of the
    prefix's lowest value, and the value of this dtype at or above which the prefix's values fall
    one bucket higher (+inf where all of them fall in one). Within a prefix the values are
    monotonic in their bits and span a ratio of at most 1 + 2**-4, less than the limits' 1.1, so
    at most one limit lies inside (checked here); a float32 compared with the float32 at or above
    a limit compares as it does with the limit itself. Non-finite prefixes index past the last
    bucket (dropped by _bucket_counts)."""
    with denormals.computed_as(False):   # (kept: the same tables whichever thread asks first)
        return _tables(dtype)


def _tables(dtype: np.dtype) -> tuple:
    shift = 8 * dtype.itemsize - 16
    uint = np.dtype(f"u{dtype.itemsize}")
    prefixes = np.arange(1 << 16, dtype=uint) << uint.type(shift)
    with np.errstate(invalid="ignore", over="ignore"):   # (the NaN prefixes; limits past float32's range)
        ends = np.stack([prefixes, prefixes | uint.type((1 << shift) - 1)]).view(dtype).astype(np.float64)
        ends[:, ~np.isfinite(ends).all(axis=0)] = np.inf
        index = np.searchsorted(BUCKET_LIMITS, ends, side="right")
        low = index.min(axis=0)
        step = index.max(axis=0) - low
        assert step.max() <= 1, "a float prefix spans two bucket limits"
        limit64 = BUCKET_LIMITS[np.minimum(low, len(BUCKET_LIMITS) - 1)]
        limit = limit64.astype(dtype)
        limit = np.where(limit < limit64, np.nextafter(limit, dtype.type(np.inf)), limit)   # (float32: round up)
    return low.astype(np.int16), np.where(step == 1, limit, dtype.type(np.inf)).astype(dtype)


def _bucket_counts(values: np.ndarray) -> np.ndarray:
    """How many of `values` (float32 or float64) fall in each bucket: TF's Histogram::Add
    (std::upper_bound over the limits), without a search: each value's bucket is its prefix's
    lowest, plus one where the value is at or above the one limit inside the prefix (_prefix_tables)."""
    flat = values.reshape(-1)
    prefix = flat.view(f"u{flat.itemsize}") >> (8 * flat.itemsize - 16)
    low, limit = _prefix_tables(flat.dtype)
    index = np.take(low, prefix)
    index += flat >= np.take(limit, prefix)
    return np.bincount(index, minlength=len(BUCKET_LIMITS))[:len(BUCKET_LIMITS)]


def histogram_proto(values: np.ndarray) -> summary_pb2.HistogramProto:
    """TF's Histogram::EncodeToProto of `values` (finite): min and max, and the sum and the sum
    of squares accumulated in float64 one value after another, as TF's Histogram::Add does (a
    running sum: the same bits as TF's); runs of empty buckets collapse into the last limit of
    the run. (Non-finite values give a non-finite min or max.)"""
    values = np.asarray(values)
    if values.dtype not in (np.float32, np.float64):
        values = values.astype(np.float64)
    h = summary_pb2.HistogramProto(min=float(values.min()) if values.size else DBL_MAX,
                                   max=float(values.max()) if values.size else -DBL_MAX, num=float(values.size))
    counts = _bucket_counts(values)
    if values.size:
        # The two running sums in one pass: a complex128's real and imaginary parts are added
        # apart, so accumulating value + 1j * value**2 runs both float64 chains side by side.
        pairs = np.empty(values.size, np.complex128)
        parts = pairs.view(np.float64).reshape(-1, 2)
        parts[:, 0] = values.reshape(-1)
        with np.errstate(over="ignore", invalid="ignore"):   # (squares past DBL_MAX are inf, as TF's are)
            np.multiply(parts[:, 0], parts[:, 0], out=parts[:, 1])
            total = np.add.accumulate(pairs, out=pairs)[-1]
        h.sum, h.sum_squares = float(total.real), float(total.imag)
    filled = counts > 0
    kept = filled | np.append(filled[1:], True)   # each filled bucket, and each empty run's last
    h.bucket_limit.extend(BUCKET_LIMITS[kept].tolist())
    h.bucket.extend(counts[kept].astype(np.float64).tolist())
    return h


def normalize_image(values: np.ndarray, bad_color: np.ndarray) -> np.ndarray:
    """One float image [h, w, depth] as uint8, as TF does: all non-negative -> scaled so the
    max is 255; else centred on 128 and scaled by 127/max|v|; non-finite pixels -> bad_color."""
    dtype = values.dtype
    finite = np.isfinite(values).all(axis=-1)
    good = values[finite].astype(np.float32)
    lo = np.float32(good.min()) if good.size else np.float32(np.inf)
    hi = np.float32(good.max()) if good.size else np.float32(-np.inf)
    if lo < 0:
        max_val = max(abs(lo), abs(hi))
        scale = np.float32(0.0) if max_val < 1e-6 else np.float32(127.0) / np.float32(max_val)
        offset = 128.0
    else:
        scale = np.float32(0.0) if hi < 1e-6 else np.float32(255.0) / hi
        offset = 0.0
    scaled = values * dtype.type(scale) + dtype.type(offset)
    with np.errstate(invalid="ignore"):
        out = np.where(finite[..., None], scaled, 0).astype(np.uint8)
    out[~finite] = bad_color[:values.shape[-1]]
    return out


def png(image: np.ndarray) -> bytes:
    """A uint8 image [h, w, 1|3|4] as PNG bytes (grey, RGB or RGBA, 8 bits)."""
    h, w, depth = image.shape
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[depth]
    raw = np.concatenate([np.zeros((h, 1), np.uint8), image.reshape(h, w * depth)], axis=1).tobytes()

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def wav(frames: np.ndarray, sample_rate: int) -> bytes:
    """Float samples [frames, channels] in [-1, 1] as 16-bit little-endian PCM WAV bytes."""
    n, channels = frames.shape
    pcm = np.clip(np.round(frames.astype(np.float32) * np.float32(32768.0)), -32768, 32767).astype("<i2").tobytes()
    header = b"RIFF" + struct.pack("<I", 36 + len(pcm)) + b"WAVE"
    fmt = b"fmt " + struct.pack("<IHHIIHH", 16, 1, channels, sample_rate, sample_rate * channels * 2, channels * 2, 16)
    return header + fmt + b"data" + struct.pack("<I", len(pcm)) + pcm
