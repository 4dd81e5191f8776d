"""tf.parse_example / tf.parse_single_example: serialized tf.train.Example protos into dense
tensors (FixedLenFeature, FixedLenSequenceFeature) and SparseTensors (VarLenFeature).

One op per call, `ParseExample`, with the feature keys, dtypes and shapes as attrs: its outputs
are the sparse (indices, values, dense_shape) triples then the dense values. Decoding is
protobuf's; a wrong kind or count of values is InvalidArgumentError naming the key and example.
TF's own ParseExample (keys and defaults as inputs) and ParseExampleV2 run too, as a TF
GraphDef or SavedModel holds them (a tf.Estimator's serving graph: TF Serving's classify and
regress), with the same decoding.
"""
from __future__ import annotations

import collections
from typing import Optional

import numpy as np
from google.protobuf import json_format

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.shapes import TensorShape, as_shape
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import as_string_tensor, invalid, make_op, string_array, string_result
from tensorweave.ops.io.example_proto import Example
from tensorweave.ops.registry import register
from tensorweave.ops.sparse.core import sparse_merge


_KINDS = {"float32": "float_list", "int64": "int64_list", "string": "bytes_list"}
_TYPE_WORDS = {"float_list": "float", "int64_list": "int64", "bytes_list": "string"}
_ALLOWED = (dtypes.float32, dtypes.int64, dtypes.string)


@tf_export("io.FixedLenFeature", "FixedLenFeature")
class FixedLenFeature(collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])):
    """tf.FixedLenFeature(shape, dtype, default_value=None): a dense feature of a fixed shape;
    an Example without it takes `default_value` (required when there is none)."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


@tf_export("io.FixedLenSequenceFeature", "FixedLenSequenceFeature")
class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])):
    """tf.FixedLenSequenceFeature(shape, dtype, allow_missing=False, default_value=None): any
    number of values of `shape`, stacked; parse_example pads a batch with `default_value`."""

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


@tf_export("io.VarLenFeature", "VarLenFeature")
class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """tf.VarLenFeature(dtype): any number of values, parsed into a SparseTensor."""


@tf_export("io.SparseFeature", "SparseFeature")
class SparseFeature(collections.namedtuple("SparseFeature",
                                           ["index_key", "value_key", "dtype", "size", "already_sorted"])):
    """tf.SparseFeature(index_key, value_key, dtype, size, already_sorted=False): a SparseTensor
    of dense shape [size] (per example) built from two features of the Example: the int64
    positions under `index_key` and the values under `value_key`. A list of index keys with a
    list of sizes gives a multi-dimensional SparseTensor."""

    def __new__(cls, index_key, value_key, dtype, size, already_sorted=False):
        return super().__new__(cls, index_key, value_key, dtype, size, already_sorted)


def _raw_features(features: dict) -> dict:
    """The features with each SparseFeature replaced by VarLenFeatures of its index and value
    keys, as TF1's parse_example reads them."""
    raw = {k: f for k, f in features.items() if not isinstance(f, SparseFeature)}
    for key, f in features.items():
        if not isinstance(f, SparseFeature):
            continue
        index_keys = f.index_key if isinstance(f.index_key, (list, tuple)) else [f.index_key]
        sizes = f.size if isinstance(f.size, (list, tuple)) else [f.size]
        if not index_keys or len(index_keys) != len(sizes):
            raise ValueError(f"SparseFeature {key}: index_key and size must have the same number of entries, got "
                             f"{f.index_key!r} and {f.size!r}")
        for k, want in [(k, VarLenFeature(dtypes.int64)) for k in index_keys] + [(f.value_key,
                                                                                   VarLenFeature(f.dtype))]:
            have = raw.get(k)
            if have is not None and (not isinstance(have, VarLenFeature)
                                     or dtypes.as_dtype(have.dtype) != dtypes.as_dtype(want.dtype)):
                raise ValueError(f"Conflicting type {have} vs {want.dtype} for feature {k} (of SparseFeature {key}).")
            raw[k] = want
    return raw


def _merge_sparse_features(features: dict, parsed: dict) -> dict:
    """parse_example's result for `features`: SparseFeatures merged from their parsed parts."""
    out = {}
    for key, f in features.items():
        if isinstance(f, SparseFeature):
            several = isinstance(f.index_key, (list, tuple))
            ids = [parsed[k] for k in f.index_key] if several else parsed[f.index_key]
            out[key] = sparse_merge(ids, parsed[f.value_key], f.size, already_sorted=f.already_sorted)
        else:
            out[key] = parsed[key]
    return out


def _check_dtype(key: str, dtype) -> dtypes.DType:
    dt = dtypes.as_dtype(dtype)
    if dt not in _ALLOWED:
        raise ValueError(f"Unsupported dtype {dt.name} for feature {key!r}: use float32, int64 or string")
    return dt


def _default_array(key: str, feat, dt: dtypes.DType, shape: list) -> Optional[np.ndarray]:
    if feat.default_value is None:
        return None
    if dt is dtypes.string:
        arr = np.asarray(feat.default_value, dtype=object)
        arr = np.vectorize(lambda s: s.encode() if isinstance(s, str) else s, otypes=[object])(arr) if arr.size \
            else arr
    else:
        arr = np.asarray(feat.default_value, dtype=dt.as_numpy_dtype)
    if isinstance(feat, FixedLenSequenceFeature):
        return arr.reshape(-1)[:1] if arr.size else None
    size = int(np.prod(shape, dtype=np.int64))
    if arr.size == 1 and size != 1:
        arr = np.full(shape, arr.reshape(-1)[0], dtype=arr.dtype)
    if arr.size != size:
        raise ValueError(f"Default value of feature {key!r} has {arr.size} values; its shape {shape} needs {size}")
    return arr.reshape(shape)


def _split_features(features: dict, single: bool):
    if not features:
        raise ValueError("Missing: features was empty.")
    sparse, dense = [], []
    for key in sorted(features):
        feat = features[key]
        if isinstance(feat, VarLenFeature):
            sparse.append((key, _check_dtype(key, feat.dtype)))
        elif isinstance(feat, (FixedLenFeature, FixedLenSequenceFeature)):
            dt = _check_dtype(key, feat.dtype)
            shape = as_shape(feat.shape)
            if not shape.is_fully_defined():
                raise ValueError(f"All dimensions of shape for feature {key} need to be known but received "
                                 f"{shape}.")
            if isinstance(feat, FixedLenSequenceFeature) and not feat.allow_missing:
                raise ValueError(f"Unsupported: FixedLenSequenceFeature requires allow_missing to be True "
                                 f"(feature {key!r}).")
            dense.append((key, dt, shape.as_list(), isinstance(feat, FixedLenSequenceFeature),
                          _default_array(key, feat, dt, shape.as_list())))
        else:
            raise ValueError(f"Invalid feature {key}:{feat!r}: use FixedLenFeature, FixedLenSequenceFeature or "
                             "VarLenFeature")
    return sparse, dense


# -- the op ------------------------------------------------------------------------------------
def _infer(op):
    single = op.get_attr("single")
    batch = [] if single else [op.inputs[0].shape[0].value if op.inputs[0].shape.ndims == 1 else None]
    out = []
    nsparse = len(op.get_attr("sparse_keys"))
    rank = 1 if single else 2
    sparse_types = op.get_attr("sparse_types")
    out += [(dtypes.int64, TensorShape([None, rank]))] * nsparse
    out += [(dtypes.as_dtype(t), TensorShape([None])) for t in sparse_types]
    out += [(dtypes.int64, TensorShape([rank]))] * nsparse
    for t, shape, seq in zip(op.get_attr("Tdense"), op.get_attr("dense_shapes"), op.get_attr("dense_is_sequence")):
        out.append((dtypes.as_dtype(t), TensorShape(batch + ([None] if seq else []) + list(shape))))
    return out


def _values(node, feature, kind: str, key: str, index: int, np_dt):
    which = feature.WhichOneof("kind")
    if which is None:
        return np.zeros(0, dtype=np_dt)
    if which != kind:
        raise invalid(node, f"Name: <unknown>, Key: {key}, Index: {index}.  Data types don't match. Data type: "
                            f"{_TYPE_WORDS[which]} but expected type: {_TYPE_WORDS[kind]}")
    vals = getattr(feature, kind).value
    if np_dt is object:
        out = np.empty(len(vals), dtype=object)
        out[:] = list(vals)
        return out
    return np.array(vals, dtype=np_dt)


def _parse_serialized(node, serialized, single: bool, sparse_keys, sparse_types, dense_keys, dense_types,
                      dense_shapes, dense_seq, defaults):
    """The outputs of one ParseExample run: the sparse indices, values and shapes, then the dense
    values, of each serialized Example in `serialized` (a scalar when `single`)."""
    sparse_np = [dtypes.as_dtype(t).as_numpy_dtype for t in sparse_types]
    dense_np = [dtypes.as_dtype(t).as_numpy_dtype for t in dense_types]
    ser = string_array(serialized)
    flat = ser.reshape(-1)
    examples = []
    for i, s in enumerate(flat):
        try:
            examples.append(Example.FromString(bytes(s)).features.feature)
        except Exception:  # noqa: BLE001 - protobuf's DecodeError
            raise invalid(node, f"Could not parse example input, value: '{bytes(s)[:64]!r}' "
                                f"(example {i})") from None
    outs_idx, outs_val, outs_shape = [], [], []
    for key, t, np_dt in zip(sparse_keys, sparse_types, sparse_np):
        kind = _KINDS[dtypes.as_dtype(t).name]
        per = [_values(node, fm[key], kind, key, i, np_dt) if key in fm else np.zeros(0, np_dt)
               for i, fm in enumerate(examples)]
        counts = [len(v) for v in per]
        vals = np.concatenate(per) if per else np.zeros(0, np_dt)
        inner = np.concatenate([np.arange(c, dtype=np.int64) for c in counts]) if per else np.zeros(0, np.int64)
        width = max(counts, default=0)
        if single:
            outs_idx.append(inner.reshape(-1, 1))
            outs_shape.append(np.array([width], dtype=np.int64))
        else:
            rows = np.repeat(np.arange(len(per), dtype=np.int64), counts)
            outs_idx.append(np.stack([rows, inner], axis=1) if len(rows) else np.zeros((0, 2), np.int64))
            outs_shape.append(np.array([len(per), width], dtype=np.int64))
        outs_val.append(vals.astype(np_dt, copy=False))
    dense_out = []
    for key, t, shape, seq, np_dt, default in zip(dense_keys, dense_types, dense_shapes, dense_seq, dense_np,
                                                  defaults):
        kind = _KINDS[dtypes.as_dtype(t).name]
        size = int(np.prod(shape, dtype=np.int64))
        rows = []
        for i, fm in enumerate(examples):
            if key not in fm:
                if seq:
                    rows.append(np.zeros([0] + list(shape), dtype=np_dt))
                    continue
                if default is None:
                    raise invalid(node, f"Name: <unknown>, Feature: {key} (data type: {_TYPE_WORDS[kind]}) is "
                                        "required but could not be found.")
                rows.append(np.asarray(default, dtype=np_dt).reshape(shape))
                continue
            v = _values(node, fm[key], kind, key, i, np_dt)
            if seq:
                if size == 0 or len(v) % size:
                    raise invalid(node, f"Name: <unknown>, Key: {key}, Index: {i}.  Number of values is not a "
                                        f"multiple of stride length. Saw {len(v)} values but output shape is: "
                                        f"{shape}")
                rows.append(v.reshape([-1] + list(shape)))
            elif len(v) != size:
                raise invalid(node, f"Name: <unknown>, Key: {key}, Index: {i}.  Number of "
                                    f"{_TYPE_WORDS[kind]} values != expected.  Values size: {len(v)} but output "
                                    f"shape: {shape}")
            else:
                rows.append(v.reshape(shape))
        if seq:
            n = max((len(r) for r in rows), default=0)
            fill = (b"" if np_dt is object else 0) if default is None else default.reshape(-1)[0]
            arr = np.full([len(rows), n] + list(shape), fill, dtype=np_dt)
            for j, r in enumerate(rows):
                arr[j, :len(r)] = r
        else:
            arr = np.stack(rows).astype(np_dt, copy=False) if rows else np.zeros([0] + list(shape), np_dt)
        dense_out.append(arr[0] if single else arr)
    out = outs_idx + outs_val + outs_shape + dense_out
    return out[0] if len(out) == 1 else tuple(out)


def _kernel(node, ctx):
    if "Ndense" in node.attr or "num_sparse" in node.attr:
        return _tf_kernel(node)
    attrs = [node.attr[k] for k in ("single", "sparse_keys", "sparse_types", "dense_keys", "Tdense", "dense_shapes",
                                    "dense_is_sequence", "dense_defaults")]
    return lambda serialized: _parse_serialized(node, serialized, *attrs)


# -- TF's own ParseExample and ParseExampleV2, as a TF GraphDef holds them -------------------------
# Their keys and defaults are inputs, not attributes: (serialized, names, sparse_keys..., dense_keys...,
# dense_defaults...) for ParseExample, (serialized, names, sparse_keys, dense_keys, ragged_keys,
# dense_defaults...) with 1-D key tensors for ParseExampleV2. A dense shape whose first dimension
# is -1 is a FixedLenSequenceFeature's.
def _tf_dense(node) -> tuple:
    shapes = [[-1 if d is None else d for d in TensorShape(s).as_list()] for s in node.attr["dense_shapes"]]
    seq = [bool(s) and s[0] == -1 for s in shapes]
    return [s[1:] if q else s for s, q in zip(shapes, seq)], seq


def _tf_infer(op):
    v2 = op.type == "ParseExampleV2"
    if v2 and op.get_attr("ragged_value_types"):
        raise ValueError(f"{op.name}: ragged features of ParseExampleV2 are not supported by tensorweave")
    single = op.inputs[0].shape.ndims == 0
    batch = [] if single else [op.inputs[0].shape[0].value if op.inputs[0].shape.ndims == 1 else None]
    nsparse = op.get_attr("num_sparse") if v2 else op.get_attr("Nsparse")
    rank = 1 if single else 2
    out = [(dtypes.int64, TensorShape([None, rank]))] * nsparse
    out += [(dtypes.as_dtype(t), TensorShape([None])) for t in op.get_attr("sparse_types")]
    out += [(dtypes.int64, TensorShape([rank]))] * nsparse
    for t, shape in zip(op.get_attr("Tdense"), op.get_attr("dense_shapes")):
        dims = TensorShape(shape).as_list()
        out.append((dtypes.as_dtype(t), TensorShape(batch + [None if d == -1 else d for d in dims])))
    return out


def _tf_kernel_factory(node, ctx):
    return _tf_kernel(node)


def _tf_kernel(node):
    v2 = node.op == "ParseExampleV2"
    nsparse = node.attr["num_sparse"] if v2 else node.attr["Nsparse"]
    sparse_types, dense_types = node.attr["sparse_types"], node.attr["Tdense"]
    ndense = len(dense_types)
    dense_shapes, dense_seq = _tf_dense(node)

    def text(k):
        return k.decode() if isinstance(k, bytes) else str(k)

    def run(serialized, names, *rest):
        if v2:
            sparse_keys = [text(k) for k in np.asarray(rest[0], dtype=object).reshape(-1)]
            dense_keys = [text(k) for k in np.asarray(rest[1], dtype=object).reshape(-1)]
            defaults = rest[3:]
        else:
            sparse_keys = [text(k) for k in rest[:nsparse]]
            dense_keys = [text(k) for k in rest[nsparse:nsparse + ndense]]
            defaults = rest[nsparse + ndense:]
        if len(sparse_keys) != nsparse or len(dense_keys) != ndense:
            raise invalid(node, f"Expected {nsparse} sparse and {ndense} dense keys, got {len(sparse_keys)} and "
                                f"{len(dense_keys)}")
        dense_defaults = []
        for key, d, shape, seq in zip(dense_keys, defaults, dense_shapes, dense_seq):
            d = np.asarray(d)
            if d.size == 0:
                dense_defaults.append(None)
            elif seq:
                dense_defaults.append(d.reshape(-1)[:1])
            else:
                size = int(np.prod(shape, dtype=np.int64))
                if d.size not in (1, size):
                    raise invalid(node, f"dense_defaults[{key}] has {d.size} values; its shape {shape} needs {size}")
                dense_defaults.append(np.broadcast_to(d.reshape(-1), (size,)).reshape(shape) if d.size == 1
                                      else d.reshape(shape))
        return _parse_serialized(node, serialized, np.ndim(serialized) == 0, sparse_keys, sparse_types, dense_keys,
                                 dense_types, dense_shapes, dense_seq, dense_defaults)
    return run


def _infer_either(op):
    return _tf_infer(op) if "Ndense" in op.attrs else _infer(op)


register("ParseExample", _infer_either, _kernel, grad=None, dtypes=(dtypes.string,), dtype_param="serialized")
register("ParseExampleV2", _tf_infer, _tf_kernel_factory, grad=None, dtypes=(dtypes.string,),
         dtype_param="serialized")


def _tf_parse_example(serialized, sparse: list, dense: list):
    """TF's ParseExample op: keys as string inputs, each dense default an input (empty: the
    feature is required), a sequence feature's shape with a first dimension of -1."""
    names = convert_to_tensor(np.zeros(0, object), dtype=dtypes.string)   # TF's example_names: none
    keys = [convert_to_tensor(k.encode(), dtype=dtypes.string) for k in [k for k, _ in sparse] + [d[0] for d in dense]]
    defaults = [convert_to_tensor(default if default is not None else np.zeros(0, dt.as_numpy_dtype), dtype=dt)
                for _, dt, _, _, default in dense]
    inputs = [serialized, names] + keys + defaults
    attrs = {"Nsparse": len(sparse), "Ndense": len(dense), "sparse_types": [t for _, t in sparse],
             "Tdense": [d[1] for d in dense],
             "dense_shapes": [TensorShape(([None] if d[3] else []) + list(d[2])) for d in dense]}
    return make_op("ParseExample", inputs, attrs, name="ParseExample")


def _parse(serialized, features: dict, name, single: bool, default_name: str):
    if not isinstance(features, dict):
        raise TypeError("features must be a dict of feature keys to FixedLenFeature / VarLenFeature")
    requested, features = features, _raw_features(features)
    sparse, dense = _split_features(features, single)
    with name_scope(name, default_name):
        serialized = as_string_tensor(serialized, name="serialized")
        want = 0 if single else 1
        if serialized.shape.ndims not in (None, want):
            raise ValueError(f"{default_name}: serialized must be a {'scalar' if single else 'vector'}, got shape "
                             f"{serialized.shape}")
        if single:
            attrs = {"single": single, "sparse_keys": [k for k, _ in sparse], "sparse_types": [t for _, t in sparse],
                     "dense_keys": [d[0] for d in dense], "Tdense": [d[1] for d in dense],
                     "dense_shapes": [d[2] for d in dense], "dense_is_sequence": [d[3] for d in dense],
                     "dense_defaults": [d[4] for d in dense]}
            op = make_op("ParseExample", [serialized], attrs, name="ParseExample")
        else:   # TF's own op: its graph (and a SavedModel of it) is TensorFlow's, which TF loads
            op = _tf_parse_example(serialized, sparse, dense)
    n = len(sparse)
    outs = op.outputs
    result = {}
    for i, (key, _) in enumerate(sparse):
        result[key] = SparseTensor(outs[i], outs[n + i], outs[2 * n + i])
    for j, d in enumerate(dense):
        result[d[0]] = outs[3 * n + j]
    return _merge_sparse_features(requested, result)


@tf_export("io.parse_example", "parse_example")
def parse_example(serialized, features, name=None, example_names=None) -> dict:
    """tf.parse_example(serialized, features, name=None, example_names=None): a batch (vector) of
    serialized Examples into a dict of dense Tensors ([batch] + shape) and SparseTensors (indices
    [N, 2] of (example, position))."""
    return _parse(serialized, features, name, False, "ParseExample")


@tf_export("io.parse_single_example", "parse_single_example")
def parse_single_example(serialized, features, name=None, example_names=None) -> dict:
    """tf.parse_single_example(serialized, features, name=None, example_names=None): one
    serialized Example (a scalar) into a dict of Tensors of each feature's shape and
    SparseTensors with 1-D indices."""
    return _parse(serialized, features, name, True, "ParseSingleExample")


# -- DecodeJSONExample -------------------------------------------------------------------------
@tf_export("io.decode_json_example", "decode_json_example")
def decode_json_example(json_examples, name=None):
    """tf.decode_json_example(json_examples, name=None): each string, a tf.train.Example in
    protobuf's JSON mapping (json_format.MessageToJson), as the serialized binary Example, in a
    string tensor of the same shape, ready for parse_example. InvalidArgumentError at run time
    for a string that is not such JSON."""
    json_examples = as_string_tensor(json_examples, name="json_examples")
    return make_op("DecodeJSONExample", [json_examples], name=name or "DecodeJSONExample").outputs[0]


def _decode_json_kernel(node, ctx):
    def one(i: int, text: bytes) -> bytes:
        try:
            return json_format.Parse(text, Example()).SerializeToString()
        except json_format.ParseError as e:
            raise invalid(node, f"Error while parsing JSON example {i}: {e}") from None

    def run(x):
        arr = string_array(x)
        return string_result([one(i, bytes(s)) for i, s in enumerate(arr.reshape(-1))], arr.shape)
    return run


register("DecodeJSONExample", lambda op: [(dtypes.string, op.inputs[0].shape)], _decode_json_kernel, grad=None,
         dtypes=(dtypes.string,), dtype_param="json_examples")
