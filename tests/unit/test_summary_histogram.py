"""The histogram summary's encoder (ops/summary/encode.py histogram_proto) gives the very bytes the
first implementation gave (a bucket search per value and a loop over TF's ~1,550 limits, kept
here as the reference, with TF's running sums) on random float32 and float64 tensors over every
magnitude, empty and constant ones, signed zeros, denormals, the largest floats and values on
the bucket limits; and TF's own bytes for large tensors (recorded by
fixtures/record_tf_histograms.py; small ones: test_summary.py)."""
from __future__ import annotations

import base64
import json
import os

import numpy as np
import pytest

from tensorweave.framework.tf_protos import summary_pb2
from tensorweave.ops.summary.encode import BUCKET_LIMITS, DBL_MAX, histogram_proto


def reference_histogram_proto(values) -> summary_pb2.HistogramProto:
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    counts = np.bincount(np.searchsorted(BUCKET_LIMITS, x, side="right"), minlength=len(BUCKET_LIMITS))
    with np.errstate(over="ignore"):
        sums = [float(np.cumsum(x)[-1]), float(np.cumsum(x * x)[-1])] if x.size else [0.0, 0.0]
    h = summary_pb2.HistogramProto(min=float(x.min()) if x.size else DBL_MAX,
                                   max=float(x.max()) if x.size else -DBL_MAX, num=float(x.size),
                                   sum=sums[0], sum_squares=sums[1])
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
    h.bucket_limit.extend(limits)
    h.bucket.extend(buckets)
    return h


def random_tensor(rng: np.random.Generator, dtype) -> np.ndarray:
    """Values of one random kind: normal at a random scale, log-uniform over the type's whole
    range with random signs, raw random bit patterns (finite ones), or a few repeated values."""
    n = int(rng.choice([1, 2, 7, 100, 5000]))
    kind = rng.integers(4)
    if kind == 0:
        x = rng.standard_normal(n) * 10.0 ** rng.uniform(-40, 40)
    elif kind == 1:
        top = np.log10(np.finfo(dtype).max)
        x = 10.0 ** rng.uniform(np.log10(np.finfo(dtype).smallest_subnormal), top, n) * rng.choice([-1, 1], n)
    elif kind == 2:
        bits = rng.integers(0, 2 ** (8 * np.dtype(dtype).itemsize), n, dtype=np.uint64)
        x = bits.astype(np.uint32 if dtype == np.float32 else np.uint64).view(dtype)
        x = x[np.isfinite(x)]
    else:
        x = rng.choice([0.0, -0.0, 1e-12, -1e-12, 1.0, 3.5, -7.25], n)
    with np.errstate(over="ignore"):
        x = np.asarray(x).astype(dtype)
    return x[np.isfinite(x)].reshape(-1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_tensors_encode_as_the_reference_does(dtype):
    rng = np.random.default_rng(26)
    for _ in range(300):
        x = random_tensor(rng, dtype)
        assert histogram_proto(x).SerializeToString() == reference_histogram_proto(x).SerializeToString()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_edge_values_encode_as_the_reference_does(dtype):
    info = np.finfo(dtype)
    cases = [
        np.zeros(0), np.zeros(5), np.full(9, -0.0), np.full(1000, 0.37), np.array([info.max, -info.max, info.max]),
        np.array([info.smallest_subnormal, -info.smallest_subnormal, info.tiny, -info.tiny, 0.0]),
        BUCKET_LIMITS[1:-1],                                              # each limit (as this dtype rounds it)
        np.nextafter(BUCKET_LIMITS[1:-1], 0.0), np.nextafter(BUCKET_LIMITS[1:-1], np.inf),
    ]
    for x in cases:
        with np.errstate(over="ignore"):
            x = np.asarray(x).astype(dtype)
        x = x[np.isfinite(x)]
        assert histogram_proto(x).SerializeToString() == reference_histogram_proto(x).SerializeToString()


def test_every_float32_neighbour_of_a_limit_lands_in_the_searched_bucket():
    # the float32 path's prefix table: the floats either side of each limit, as float32 steps
    limits32 = BUCKET_LIMITS[1:-1].astype(np.float32)
    below, above = np.nextafter(limits32, np.float32(-np.inf)), np.nextafter(limits32, np.float32(np.inf))
    x = np.concatenate([below, limits32, above])
    x = x[np.isfinite(x)]
    assert histogram_proto(x).SerializeToString() == reference_histogram_proto(x).SerializeToString()
    assert histogram_proto(x.reshape(3, -1)).SerializeToString() == reference_histogram_proto(x).SerializeToString()


def tf_recorded_histograms() -> list:
    with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_histograms.json")) as f:
        return json.load(f)


@pytest.mark.parametrize("case", tf_recorded_histograms(), ids=lambda case: case["name"])
def test_large_tensors_encode_as_tensorflow_does(case):
    # TF's HistogramSummary bytes, sum and sum of squares included (TF adds one value after another)
    values = recorded_case_values(case["name"])
    got = summary_pb2.Summary()
    got.value.add(tag="h", histo=histogram_proto(values))
    assert got.SerializeToString() == base64.b64decode(case["summary"])


def recorded_case_values(name: str) -> np.ndarray:
    """The tensors fixtures/record_tf_histograms.py gave TF (the same generator, seed and code)."""
    rng = np.random.default_rng(5)
    cases = {"normal_float32": rng.standard_normal((784, 256)).astype(np.float32),
             "wide_float64": rng.standard_normal(70001) * 10.0 ** rng.uniform(-30, 30, 70001),
             "uniform_float32": rng.uniform(0, 1, (100, 256)).astype(np.float32)}
    return cases[name]


def test_every_float32_of_prefixes_holding_a_limit_lands_in_the_searched_bucket():
    # the float32 path's tables: all 2**16 floats under a 16-bit prefix that holds a limit, for
    # limits spread over the ladder, both signs (and -0.0's prefix, which holds the limit 0)
    limits32 = BUCKET_LIMITS[1:-1].astype(np.float32)
    prefixes = np.unique(limits32[np.isfinite(limits32)].view(np.uint32) >> 16)[::40]
    prefixes = np.append(prefixes, 0x8000).astype(np.uint32)
    for prefix in prefixes:
        x = ((prefix << 16) | np.arange(1 << 16, dtype=np.uint32)).view(np.float32)
        x = x[np.isfinite(x)]
        assert histogram_proto(x).SerializeToString() == reference_histogram_proto(x).SerializeToString()


def test_views_and_other_real_dtypes_encode_as_the_reference_does():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((60, 70)).astype(np.float32) * 100
    for values in (x.T, x[::3, 1::2], x.reshape(-1)[::7], x.astype(np.float16), x.astype(np.int32),
                   x.astype(np.float64)[:, ::-1], np.float32(2.5)):
        assert histogram_proto(values).SerializeToString() == reference_histogram_proto(values).SerializeToString()
