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
def _float32_prefix_buckets() -> np.ndarray:
    """For each 16-bit prefix of a float32's bits (sign, exponent, the top 7 mantissa bits), the
    bucket index (np.searchsorted(BUCKET_LIMITS, v, side="right")) that every float32 with that
    prefix falls in, or -1 where the 2**16 floats of the prefix straddle a bucket limit (about 1 in
    40 prefixes) or are not finite. Within a prefix the values are monotonic in their bits, so
    equal indices at its two ends mean the same index for all of it."""
    prefixes = np.arange(1 << 16, dtype=np.uint32) << 16
    with np.errstate(invalid="ignore"):   # (the NaN prefixes, dropped below)
        lo = np.searchsorted(BUCKET_LIMITS, prefixes.view(np.float32).astype(np.float64), side="right")
        hi = np.searchsorted(BUCKET_LIMITS, (prefixes | 0xFFFF).view(np.float32).astype(np.float64), side="right")
    finite = (prefixes & 0x7F800000) != 0x7F800000
    return np.where((lo == hi) & finite, lo, -1).astype(np.int16)


def _bucket_counts(values: np.ndarray) -> np.ndarray:
    """How many of `values` (float32 or float64) fall in each bucket: TF's Histogram::Add
    (std::upper_bound over the limits). float32 tensors (the common case) look their bucket up by
    the top 16 bits of each value, and search only the values whose prefix straddles a limit."""
    if values.dtype == np.float32:
        flat = values.reshape(-1)
        index = np.take(_float32_prefix_buckets(), flat.view(np.uint32) >> 16)
        straddling = np.flatnonzero(index < 0)
        index[straddling] = np.searchsorted(BUCKET_LIMITS, flat[straddling].astype(np.float64), side="right")
    else:
        index = np.searchsorted(BUCKET_LIMITS, values.reshape(-1), side="right")
    return np.bincount(index, minlength=len(BUCKET_LIMITS))[:len(BUCKET_LIMITS)]


def histogram_proto(values: np.ndarray) -> summary_pb2.HistogramProto:
    """TF's Histogram::EncodeToProto of `values` (finite): min and max, and the sum and the sum
    of squares accumulated in float64 one value after another, as TF's Histogram::Add does (a
    running sum: the same bits as TF's); runs of empty buckets collapse into the last limit of
    the run."""
    values = np.asarray(values)
    x = values.astype(np.float64).reshape(-1)   # (a copy: the running sums below overwrite it)
    counts = _bucket_counts(values if values.dtype == np.float32 else x)
    h = summary_pb2.HistogramProto(min=float(x.min()) if x.size else DBL_MAX,
                                   max=float(x.max()) if x.size else -DBL_MAX, num=float(x.size))
    if x.size:
        with np.errstate(over="ignore"):   # (squares past DBL_MAX are inf, as TF's are)
            squares = x * x
            h.sum = float(np.add.accumulate(x, out=x)[-1])
            h.sum_squares = float(np.add.accumulate(squares, out=squares)[-1])
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
