"""String hashing into buckets, bit-equal to TensorFlow's: tf.string_to_hash_bucket (TF's
Hash64, a MurmurHash2-64 variant), _fast (FarmHash Fingerprint64) and _strong (SipHash-2-4 with
a 128-bit key); and FingerprintCat64, which feature crosses chain (cross.py). The hashes are
plain Python integer arithmetic, masked to 64 bits. tf.fingerprint (the Fingerprint op) is
Fingerprint64 of each row's bytes."""
from __future__ import annotations

import struct

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import as_string_tensor, invalid, make_op, string_array
from tensorweave.ops.registry import register


_M64 = 0xFFFFFFFFFFFFFFFF
_K0, _K1, _K2 = 0xC3A5C85C97CB3127, 0xB492B66FBE98F273, 0x9AE16A3B2F90404F


def _u64(s: bytes, i: int) -> int:
    return struct.unpack_from("<Q", s, i)[0]


def _u32(s: bytes, i: int) -> int:
    return struct.unpack_from("<I", s, i)[0]


def _rot(v: int, shift: int) -> int:
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & _M64


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _len16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _M64
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M64
    b ^= b >> 47
    return (b * mul) & _M64


def _len0to16(s: bytes, n: int) -> int:
    if n >= 8:
        mul = _K2 + n * 2
        a = (_u64(s, 0) + _K2) & _M64
        b = _u64(s, n - 8)
        c = (_rot(b, 37) * mul + a) & _M64
        d = ((_rot(a, 25) + b) * mul) & _M64
        return _len16(c, d, mul)
    if n >= 4:
        mul = _K2 + n * 2
        return _len16(n + (_u32(s, 0) << 3), _u32(s, n - 4), mul)
    if n > 0:
        y = s[0] + (s[n >> 1] << 8)
        z = n + (s[n - 1] << 2)
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _M64) * _K2) & _M64
    return _K2


def _len17to32(s: bytes, n: int) -> int:
    mul = _K2 + n * 2
    a = (_u64(s, 0) * _K1) & _M64
    b = _u64(s, 8)
    c = (_u64(s, n - 8) * mul) & _M64
    d = (_u64(s, n - 16) * _K2) & _M64
    return _len16((_rot((a + b) & _M64, 43) + _rot(c, 30) + d) & _M64, (a + _rot((b + _K2) & _M64, 18) + c) & _M64,
                  mul)


def _len33to64(s: bytes, n: int) -> int:
    mul = _K2 + n * 2
    a = (_u64(s, 0) * _K2) & _M64
    b = _u64(s, 8)
    c = (_u64(s, n - 8) * mul) & _M64
    d = (_u64(s, n - 16) * _K2) & _M64
    y = (_rot((a + b) & _M64, 43) + _rot(c, 30) + d) & _M64
    z = _len16(y, (a + _rot((b + _K2) & _M64, 18) + c) & _M64, mul)
    e = (_u64(s, 16) * mul) & _M64
    f = _u64(s, 24)
    g = ((y + _u64(s, n - 32)) * mul) & _M64
    h = ((z + _u64(s, n - 24)) * mul) & _M64
    return _len16((_rot((e + f) & _M64, 43) + _rot(g, 30) + h) & _M64, (e + _rot((f + a) & _M64, 18) + g) & _M64,
                  mul)


def _weak32(s: bytes, i: int, a: int, b: int) -> tuple:
    w, x, y, z = _u64(s, i), _u64(s, i + 8), _u64(s, i + 16), _u64(s, i + 24)
    a = (a + w) & _M64
    b = _rot((b + a + z) & _M64, 21)
    c = a
    a = (a + x + y) & _M64
    b = (b + _rot(a, 44)) & _M64
    return (a + z) & _M64, (b + c) & _M64


def fingerprint64(s: bytes) -> int:
    """FarmHash's Fingerprint64 (farmhashna::Hash64)."""
    n = len(s)
    if n <= 16:
        return _len0to16(s, n)
    if n <= 32:
        return _len17to32(s, n)
    if n <= 64:
        return _len33to64(s, n)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _M64
    z = (_shift_mix((y * _K2 + 113) & _M64) * _K2) & _M64
    v = (0, 0)
    w = (0, 0)
    x = (x * _K2 + _u64(s, 0)) & _M64
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    i = 0
    while True:
        x = (_rot((x + y + v[0] + _u64(s, i + 8)) & _M64, 37) * _K1) & _M64
        y = (_rot((y + v[1] + _u64(s, i + 48)) & _M64, 42) * _K1) & _M64
        x ^= w[1]
        y = (y + v[0] + _u64(s, i + 40)) & _M64
        z = (_rot((z + w[0]) & _M64, 33) * _K1) & _M64
        v = _weak32(s, i, (v[1] * _K1) & _M64, (x + w[0]) & _M64)
        w = _weak32(s, i + 32, (z + w[1]) & _M64, (y + _u64(s, i + 16)) & _M64)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = _K1 + ((z & 0xFF) << 1)
    i = last64
    w0 = (w[0] + ((n - 1) & 63)) & _M64
    v0 = (v[0] + w0) & _M64
    w0 = (w0 + v0) & _M64
    v, w = (v0, v[1]), (w0, w[1])
    x = (_rot((x + y + v[0] + _u64(s, i + 8)) & _M64, 37) * mul) & _M64
    y = (_rot((y + v[1] + _u64(s, i + 48)) & _M64, 42) * mul) & _M64
    x ^= (w[1] * 9) & _M64
    y = (y + v[0] * 9 + _u64(s, i + 40)) & _M64
    z = (_rot((z + w[0]) & _M64, 33) * mul) & _M64
    v = _weak32(s, i, (v[1] * mul) & _M64, (x + w[0]) & _M64)
    w = _weak32(s, i + 32, (z + w[1]) & _M64, (y + _u64(s, i + 16)) & _M64)
    z, x = x, z
    return _len16((_len16(v[0], w[0], mul) + _shift_mix(y) * _K0 + z) & _M64,
                  (_len16(v[1], w[1], mul) + x) & _M64, mul)


def fingerprint_cat64(fp1: int, fp2: int) -> int:
    """TF's FingerprintCat64 (core/platform/fingerprint.h): two fingerprints combined into one
    (SparseCross chains it over a cross's features)."""
    mul = 0xC6A4A7935BD1E995
    result = fp1 ^ mul
    result ^= (_shift_mix((fp2 * mul) & _M64) * mul) & _M64
    result = (result * mul) & _M64
    result = (_shift_mix(result) * mul) & _M64
    return _shift_mix(result)


def tf_hash64(s: bytes, seed: int = 0xDECAFCAFFE) -> int:
    """TensorFlow's Hash64 (core/lib/hash): a MurmurHash2-64 variant."""
    m, r = 0xC6A4A7935BD1E995, 47
    n = len(s)
    h = (seed ^ (n * m)) & _M64
    full = n - n % 8
    for i in range(0, full, 8):
        k = (_u64(s, i) * m) & _M64
        k ^= k >> r
        k = (k * m) & _M64
        h = ((h ^ k) * m) & _M64
    rest = n - full
    if rest:
        for j in range(rest - 1, -1, -1):
            h ^= s[full + j] << (8 * j)
        h = (h * m) & _M64
    h ^= h >> r
    h = (h * m) & _M64
    return h ^ (h >> r)


def siphash24(k0: int, k1: int, s: bytes) -> int:
    """SipHash-2-4 of `s` under the 128-bit key (k0, k1)."""
    v0, v1 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D
    v2, v3 = k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573

    def rounds(v0, v1, v2, v3, count):
        for _ in range(count):
            v0 = (v0 + v1) & _M64
            v1 = _rotl(v1, 13) ^ v0
            v0 = _rotl(v0, 32)
            v2 = (v2 + v3) & _M64
            v3 = _rotl(v3, 16) ^ v2
            v0 = (v0 + v3) & _M64
            v3 = _rotl(v3, 21) ^ v0
            v2 = (v2 + v1) & _M64
            v1 = _rotl(v1, 17) ^ v2
            v2 = _rotl(v2, 32)
        return v0, v1, v2, v3

    n = len(s)
    full = n - n % 8
    for i in range(0, full, 8):
        m = _u64(s, i)
        v3 ^= m
        v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 2)
        v0 ^= m
    last = (n & 0xFF) << 56
    for j, byte in enumerate(s[full:]):
        last |= byte << (8 * j)
    v3 ^= last
    v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 2)
    v0 ^= last
    v2 ^= 0xFF
    v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3


def _rotl(v: int, b: int) -> int:
    return ((v << b) | (v >> (64 - b))) & _M64


# -- the ops -------------------------------------------------------------------------------------
def _bucket_kernel(hash_fn):
    def factory(node, ctx):
        buckets = int(node.attr["num_buckets"])
        key = node.attr.get("key")

        def run(x):
            arr = string_array(x)
            if key is not None:
                hashes = [siphash24(int(key[0]), int(key[1]), bytes(s)) % buckets for s in arr.reshape(-1)]
            else:
                hashes = [hash_fn(bytes(s)) % buckets for s in arr.reshape(-1)]
            return np.array(hashes, dtype=np.int64).reshape(arr.shape)
        return run
    return factory


def _infer(op):
    return [(dtypes.int64, op.inputs[0].shape)]


register("StringToHashBucket", _infer, _bucket_kernel(tf_hash64), grad=None, dtypes=(dtypes.string,),
         dtype_param="string_tensor")
register("StringToHashBucketFast", _infer, _bucket_kernel(fingerprint64), grad=None, dtypes=(dtypes.string,),
         dtype_param="input")
register("StringToHashBucketStrong", _infer, _bucket_kernel(None), grad=None, dtypes=(dtypes.string,),
         dtype_param="input")


def _check_buckets(num_buckets) -> int:
    if int(num_buckets) < 1:
        raise ValueError(f"num_buckets must be >= 1, got {num_buckets}")
    return int(num_buckets)


@tf_export("strings.to_hash_bucket", "string_to_hash_bucket")
def string_to_hash_bucket(string_tensor, num_buckets, name=None):
    """tf.string_to_hash_bucket(string_tensor, num_buckets, name=None): TF's Hash64 of each string
    modulo `num_buckets` (int64). Deprecated in TF in favour of _fast; the values are TF's."""
    t = as_string_tensor(string_tensor)
    return make_op("StringToHashBucket", [t], {"num_buckets": _check_buckets(num_buckets)},
                   name=name or "StringToHashBucket").outputs[0]


@tf_export("strings.to_hash_bucket_fast", "string_to_hash_bucket_fast")
def string_to_hash_bucket_fast(input, num_buckets, name=None):
    """tf.string_to_hash_bucket_fast(input, num_buckets, name=None): FarmHash Fingerprint64 of
    each string modulo `num_buckets` (int64)."""
    t = as_string_tensor(input)
    return make_op("StringToHashBucketFast", [t], {"num_buckets": _check_buckets(num_buckets)},
                   name=name or "StringToHashBucketFast").outputs[0]


@tf_export("strings.to_hash_bucket_strong", "string_to_hash_bucket_strong")
def string_to_hash_bucket_strong(input, num_buckets, key, name=None):
    """tf.string_to_hash_bucket_strong(input, num_buckets, key, name=None): SipHash-2-4 of each
    string under `key` (two uint64s) modulo `num_buckets` (int64)."""
    key = [int(k) for k in key]
    if len(key) != 2:
        raise ValueError(f"key must have size 2, got {len(key)}")
    t = as_string_tensor(input)
    return make_op("StringToHashBucketStrong", [t], {"num_buckets": _check_buckets(num_buckets), "key": key},
                   name=name or "StringToHashBucketStrong").outputs[0]


# -- Fingerprint -------------------------------------------------------------------------------------
def _fingerprint_kernel(node, ctx):
    def digest(s: bytes) -> bytes:
        return struct.pack("<Q", fingerprint64(s))

    def run(data, method):
        method = bytes(string_array(method).reshape(-1)[0]) if np.size(string_array(method)) == 1 else None
        if method != b"farmhash64":
            raise invalid(node, f"Unsupported fingerprint method: {method!r}")
        if isinstance(data, bytes) or (isinstance(data, np.ndarray) and data.dtype == object):
            arr = string_array(data)
            if arr.ndim == 0:
                raise invalid(node, "data must have rank at least one, got a scalar")
            rows = arr.reshape(arr.shape[0], -1)
            # one string: its fingerprint; more: the fingerprint of their fingerprints
            out = [digest(bytes(r[0])) if len(r) == 1 else digest(b"".join(digest(bytes(s)) for s in r)) for r in rows]
        else:
            arr = np.ascontiguousarray(data)
            if arr.ndim == 0:
                raise invalid(node, "data must have rank at least one, got a scalar")
            rows = arr.astype(arr.dtype.newbyteorder("<"), copy=False).reshape(arr.shape[0], -1)
            out = [digest(r.tobytes()) for r in rows]
        return np.frombuffer(b"".join(out), np.uint8).reshape(len(out), 8).copy()
    return run


def _fingerprint_infer(op):
    data = op.inputs[0]
    if data.shape.ndims == 0:
        raise ValueError("Shape must be at least rank 1 but is rank 0 for 'data'")
    return [(dtypes.uint8, TensorShape([data.shape[0].value if data.shape.ndims else None, 8]))]


register("Fingerprint", _fingerprint_infer, _fingerprint_kernel, grad=None,
         dtypes={1: ("method", (dtypes.string,))})


@tf_export("fingerprint")
def fingerprint(data, method="farmhash64", name=None):
    """tf.fingerprint(data, method='farmhash64', name=None): a uint8 [batch, 8] fingerprint of
    each row data[i] (FarmHash Fingerprint64 of its bytes, little-endian; for strings of the
    string, or of the strings' fingerprints when a row holds several), TF's bit for bit."""
    data = convert_to_tensor(data, name="data")
    method = convert_to_tensor(method, dtype=dtypes.string, name="method")
    return make_op("Fingerprint", [data, method], {"T": data.dtype}, name=name or "Fingerprint").outputs[0]
