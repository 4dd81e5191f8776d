"""Encoders the summary ops use, with TF's exact rules: histograms over TF's default bucket
limits (a 10% geometric ladder from 1e-12 to 1e20, mirrored for negatives), float images
scaled to uint8 as TF's ImageSummary does, PNG (zlib, no other dependency) and 16-bit PCM WAV
(tensors: ops/tensor_proto.py)."""
from __future__ import annotations

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


def histogram_proto(values: np.ndarray) -> summary_pb2.HistogramProto:
    """TF's Histogram::EncodeToProto of `values` (finite, as float64): runs of empty buckets
    collapse into the last limit of the run."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    counts = np.bincount(np.searchsorted(BUCKET_LIMITS, x, side="right"), minlength=len(BUCKET_LIMITS))
    h = summary_pb2.HistogramProto(min=float(x.min()) if x.size else DBL_MAX,
                                   max=float(x.max()) if x.size else -DBL_MAX, num=float(x.size),
                                   sum=float(np.sum(x)), sum_squares=float(np.dot(x, x)))
    limits, buckets = [], []
    i, n = 0, len(BUCKET_LIMITS)
    while i < n:
        end, count = BUCKET_LIMITS[i], counts[i]
        i += 1
        if count <= 0:
            while i < n and counts[i] <= 0:
                end, count = BUCKET_LIMITS[i], counts[i]
                i += 1
        limits.append(float(end))
        buckets.append(float(count))
    if not limits:
        limits, buckets = [DBL_MAX], [0.0]
    h.bucket_limit.extend(limits)
    h.bucket.extend(buckets)
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
