"""tf.io.parse_single_sequence_example / parse_sequence_example: serialized tf.train.SequenceExample
protos into context features (as parse_example's: FixedLenFeature, VarLenFeature) and feature-list
features, one Feature a time step: FixedLenSequenceFeature (dense, [steps] + shape; a batch padded
to its longest list with zeros, with each example's length) and VarLenFeature (a SparseTensor
indexed by step, then position).

TF's ops by their names and signatures: ParseSingleSequenceExample (keys as inputs) and TF1's
ParseSequenceExample (keys as attributes), so their graphs are TensorFlow's."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.shapes import TensorShape, as_shape
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import as_string_tensor, invalid, make_op, string_array
from tensorweave.ops.io.example_proto import SequenceExample
from tensorweave.ops.io.parsing import (_KINDS, _TYPE_WORDS, FixedLenFeature, FixedLenSequenceFeature, VarLenFeature,
                                        _check_dtype, _split_features, _values)
from tensorweave.ops.registry import register


def _text(k) -> str:
    return k.decode() if isinstance(k, bytes) else str(k)


def _sparse_out(per_example: list, np_dt, extra_dims: int):
    """Batched SparseTensor parts of per-example lists of (index prefix tuple, values)."""
    idx, vals, width = [], [], 0
    for b, rows in enumerate(per_example):
        for prefix, v in rows:
            width = max(width, len(v))
            idx.extend((b, *prefix, j) for j in range(len(v)))
            vals.append(v)
    indices = np.array(idx, dtype=np.int64).reshape(-1, 2 + extra_dims)
    values = np.concatenate(vals).astype(np_dt, copy=False) if vals else np.zeros(0, np_dt)
    return indices, values, width


def _parse_batch(node, serialized, context_sparse, context_dense, fl_sparse, fl_dense, missing_ok: set):
    """The batched outputs: context sparse triples, context dense, feature-list sparse triples,
    feature-list dense, their lengths. context_dense: (key, dtype, shape, default or None);
    fl_dense: (key, dtype, shape); sparse: (key, dtype)."""
    flat = string_array(serialized).reshape(-1)
    examples = []
    for i, s in enumerate(flat):
        try:
            examples.append(SequenceExample.FromString(bytes(s)))
        except Exception:  # noqa: BLE001 - protobuf's DecodeError
            raise invalid(node, f"Could not parse example input, value: '{bytes(s)[:64]!r}' (example {i})") from None
    n = len(examples)
    out_idx, out_val, out_shape, dense_out = [], [], [], []
    for key, t in context_sparse:
        np_dt, kind = dtypes.as_dtype(t).as_numpy_dtype, _KINDS[dtypes.as_dtype(t).name]
        per = [[((), _values(node, ex.context.feature[key], kind, key, b, np_dt))] if key in ex.context.feature else []
               for b, ex in enumerate(examples)]
        indices, values, width = _sparse_out(per, np_dt, 0)
        out_idx.append(indices), out_val.append(values), out_shape.append(np.array([n, width], np.int64))
    for key, t, shape, default in context_dense:
        np_dt, kind = dtypes.as_dtype(t).as_numpy_dtype, _KINDS[dtypes.as_dtype(t).name]
        size, rows = int(np.prod(shape, dtype=np.int64)), []
        for b, ex in enumerate(examples):
            if key not in ex.context.feature:
                if default is None:
                    raise invalid(node, f"Name: <unknown>, Context feature '{key}' is required but could not be "
                                        "found.")
                rows.append(np.asarray(default, np_dt).reshape(shape))
                continue
            v = _values(node, ex.context.feature[key], kind, key, b, np_dt)
            if len(v) != size:
                raise invalid(node, f"Name: <unknown>, Key: {key}, Index: 0.  Number of {_TYPE_WORDS[kind]} values "
                                    f"!= expected.  values size: {len(v)} but output shape: {shape}")
            rows.append(v.reshape(shape))
        dense_out.append(np.stack(rows).astype(np_dt, copy=False) if rows else np.zeros([0] + shape, np_dt))
    fl_idx, fl_val, fl_shape, fl_dense_out, lengths = [], [], [], [], []
    for key, t in fl_sparse:
        np_dt, kind = dtypes.as_dtype(t).as_numpy_dtype, _KINDS[dtypes.as_dtype(t).name]
        per, steps = [], 0
        for b, ex in enumerate(examples):
            feats = ex.feature_lists.feature_list[key].feature if key in ex.feature_lists.feature_list else []
            steps = max(steps, len(feats))
            per.append([((s,), _values(node, f, kind, key, b, np_dt)) for s, f in enumerate(feats)])
        indices, values, width = _sparse_out(per, np_dt, 1)
        fl_idx.append(indices), fl_val.append(values), fl_shape.append(np.array([n, steps, width], np.int64))
    for key, t, shape in fl_dense:
        np_dt, kind = dtypes.as_dtype(t).as_numpy_dtype, _KINDS[dtypes.as_dtype(t).name]
        size, rows = int(np.prod(shape, dtype=np.int64)), []
        for b, ex in enumerate(examples):
            if key not in ex.feature_lists.feature_list:
                if key not in missing_ok:
                    raise invalid(node, f"Name: <unknown>, Feature list '{key}' is required but could not be found. "
                                        " Did you mean to include it in feature_list_dense_missing_assumed_empty or "
                                        "feature_list_dense_defaults?")
                rows.append(np.zeros([0] + shape, np_dt))
                continue
            steps = []
            for s, f in enumerate(ex.feature_lists.feature_list[key].feature):
                v = _values(node, f, kind, key, b, np_dt)
                if len(v) != size:
                    raise invalid(node, f"Name: <unknown>, Key: {key}, Index: {s}.  Number of {_TYPE_WORDS[kind]} "
                                        f"values != expected.  values size: {len(v)} but output shape: {shape}")
                steps.append(v.reshape(shape))
            rows.append(np.stack(steps) if steps else np.zeros([0] + shape, np_dt))
        longest = max((len(r) for r in rows), default=0)
        arr = np.full([n, longest] + shape, b"" if np_dt is object else 0, dtype=np_dt)
        for b, r in enumerate(rows):
            arr[b, :len(r)] = r
        fl_dense_out.append(arr)
        lengths.append(np.array([len(r) for r in rows], np.int64))
    return (out_idx, out_val, out_shape, dense_out), (fl_idx, fl_val, fl_shape, fl_dense_out), lengths


# -- TF's ParseSingleSequenceExample: keys and context defaults as inputs ----------------------------
def _single_kernel(node, ctx):
    ncs, ncd = node.attr["Ncontext_sparse"], node.attr["Ncontext_dense"]
    nfs, nfd = node.attr["Nfeature_list_sparse"], node.attr["Nfeature_list_dense"]
    c_shapes = [TensorShape(s).as_list() for s in node.attr["context_dense_shapes"]]
    f_shapes = [TensorShape(s).as_list() for s in node.attr["feature_list_dense_shapes"]]

    def run(serialized, missing_assumed_empty, *rest):
        if np.ndim(serialized) != 0:
            raise invalid(node, f"Expected serialized to be a scalar, got shape: {list(np.shape(serialized))}")
        keys = [_text(k) for k in rest[:ncs + ncd + nfs + nfd]]
        defaults = rest[ncs + ncd + nfs + nfd:ncs + ncd + nfs + nfd + ncd]
        c_sparse = list(zip(keys[:ncs], node.attr["context_sparse_types"]))
        c_dense = [(k, t, s, None if np.size(d) == 0 else np.asarray(d))
                   for k, t, s, d in zip(keys[ncs:ncs + ncd], node.attr["Tcontext_dense"], c_shapes, defaults)]
        f_sparse = list(zip(keys[ncs + ncd:ncs + ncd + nfs], node.attr["feature_list_sparse_types"]))
        f_dense = list(zip(keys[ncs + ncd + nfs:], node.attr["feature_list_dense_types"], f_shapes))
        missing = {_text(k) for k in np.asarray(missing_assumed_empty, dtype=object).reshape(-1)}
        (ci, cv, cs, cd), (fi, fv, fs, fd), _ = _parse_batch(node, np.reshape(serialized, [1]), c_sparse, c_dense,
                                                             f_sparse, f_dense, missing)
        return tuple([i[:, 1:] for i in ci] + cv + [s[1:] for s in cs] + [d[0] for d in cd]
                     + [i[:, 1:] for i in fi] + fv + [s[1:] for s in fs] + [d[0] for d in fd])
    return run


def _outputs_shapes(op, batch: list):
    rank = len(batch)
    out = [(dtypes.int64, TensorShape([None, 1 + rank]))] * op.get_attr("Ncontext_sparse")
    out += [(dtypes.as_dtype(t), TensorShape([None])) for t in op.get_attr("context_sparse_types")]
    out += [(dtypes.int64, TensorShape([1 + rank]))] * op.get_attr("Ncontext_sparse")
    out += [(dtypes.as_dtype(t), TensorShape(batch + TensorShape(s).as_list()))
            for t, s in zip(op.get_attr("Tcontext_dense"), op.get_attr("context_dense_shapes"))]
    out += [(dtypes.int64, TensorShape([None, 2 + rank]))] * op.get_attr("Nfeature_list_sparse")
    out += [(dtypes.as_dtype(t), TensorShape([None])) for t in op.get_attr("feature_list_sparse_types")]
    out += [(dtypes.int64, TensorShape([2 + rank]))] * op.get_attr("Nfeature_list_sparse")
    out += [(dtypes.as_dtype(t), TensorShape(batch + [None] + TensorShape(s).as_list()))
            for t, s in zip(op.get_attr("feature_list_dense_types"), op.get_attr("feature_list_dense_shapes"))]
    return out


register("ParseSingleSequenceExample", lambda op: _outputs_shapes(op, []), _single_kernel, grad=None,
         dtypes=(dtypes.string,), dtype_param="serialized")


# -- TF1's ParseSequenceExample: a batch, keys as attributes, with the feature lists' lengths ------------
def _batch_kernel(node, ctx):
    a = node.attr
    c_shapes = [TensorShape(s).as_list() for s in a["context_dense_shapes"]]
    f_shapes = [TensorShape(s).as_list() for s in a["feature_list_dense_shapes"]]
    missing = set(a.get("feature_list_dense_missing_assumed_empty", []))

    def run(serialized, debug_name, *defaults):
        if np.ndim(serialized) != 1:
            raise invalid(node, f"Expected serialized to be a vector, got shape: {list(np.shape(serialized))}")
        c_sparse = list(zip(a["context_sparse_keys"], a["context_sparse_types"]))
        c_dense = [(k, t, s, None if np.size(d) == 0 else np.asarray(d))
                   for k, t, s, d in zip(a["context_dense_keys"], a["Tcontext_dense"], c_shapes, defaults)]
        f_sparse = list(zip(a["feature_list_sparse_keys"], a["feature_list_sparse_types"]))
        f_dense = list(zip(a["feature_list_dense_keys"], a["feature_list_dense_types"], f_shapes))
        (ci, cv, cs, cd), (fi, fv, fs, fd), lengths = _parse_batch(node, serialized, c_sparse, c_dense, f_sparse,
                                                                   f_dense, missing)
        return tuple(ci + cv + cs + cd + fi + fv + fs + fd + lengths)
    return run


def _batch_shapes(op):
    batch = [op.inputs[0].shape[0].value if op.inputs[0].shape.ndims == 1 else None]
    return _outputs_shapes(op, batch) + [(dtypes.int64, TensorShape(batch))] * op.get_attr("Nfeature_list_dense")


register("ParseSequenceExample", _batch_shapes, _batch_kernel, grad=None, dtypes=(dtypes.string,),
         dtype_param="serialized")


# -- the API -----------------------------------------------------------------------------------------
def _sequence_features(features: dict):
    sparse, dense, missing_ok = [], [], []
    for key in sorted(features or {}):
        feat = features[key]
        if isinstance(feat, VarLenFeature):
            sparse.append((key, _check_dtype(key, feat.dtype)))
        elif isinstance(feat, (FixedLenSequenceFeature, FixedLenFeature)):
            shape = as_shape(feat.shape)
            if not shape.is_fully_defined():
                raise ValueError(f"All dimensions of shape for feature {key} need to be known but received {shape}.")
            if feat.default_value is not None:
                raise ValueError(f"Sequence feature {key!r}: default_value is not supported (TF: "
                                 "feature_list_dense_defaults)")
            dense.append((key, _check_dtype(key, feat.dtype), shape.as_list()))
            if getattr(feat, "allow_missing", False):
                missing_ok.append(key)
        else:
            raise ValueError(f"Invalid sequence feature {key}:{feat!r}: use FixedLenSequenceFeature or VarLenFeature")
    return sparse, dense, missing_ok


def _prepare(context_features, sequence_features):
    if not context_features and not sequence_features:
        raise ValueError("Missing features.")
    c_sparse, c_dense = _split_features(context_features, True) if context_features else ([], [])
    if any(d[3] for d in c_dense):
        raise ValueError("Context features cannot be FixedLenSequenceFeatures")
    f_sparse, f_dense, missing_ok = _sequence_features(sequence_features)
    defaults = [convert_to_tensor(d[4] if d[4] is not None else np.zeros(0, d[1].as_numpy_dtype), dtype=d[1])
                for d in c_dense]
    attrs = {"Ncontext_sparse": len(c_sparse), "Ncontext_dense": len(c_dense), "Nfeature_list_sparse": len(f_sparse),
             "Nfeature_list_dense": len(f_dense), "context_sparse_types": [t for _, t in c_sparse],
             "Tcontext_dense": [d[1] for d in c_dense], "feature_list_dense_types": [t for _, t, _ in f_dense],
             "context_dense_shapes": [TensorShape(d[2]) for d in c_dense],
             "feature_list_sparse_types": [t for _, t in f_sparse],
             "feature_list_dense_shapes": [TensorShape(s) for _, _, s in f_dense]}
    return (c_sparse, c_dense, f_sparse, f_dense, missing_ok), defaults, attrs


def _results(outs, c_sparse, c_dense, f_sparse, f_dense):
    def take(k):
        taken = outs[:k]
        del outs[:k]
        return taken
    ci, cv, cs, cd = take(len(c_sparse)), take(len(c_sparse)), take(len(c_sparse)), take(len(c_dense))
    fi, fv, fs, fd = take(len(f_sparse)), take(len(f_sparse)), take(len(f_sparse)), take(len(f_dense))
    context = {k: SparseTensor(i, v, s) for (k, _), i, v, s in zip(c_sparse, ci, cv, cs)}
    context.update({d[0]: t for d, t in zip(c_dense, cd)})
    sequence = {k: SparseTensor(i, v, s) for (k, _), i, v, s in zip(f_sparse, fi, fv, fs)}
    sequence.update({d[0]: t for d, t in zip(f_dense, fd)})
    return context, sequence


@tf_export("io.parse_single_sequence_example", "parse_single_sequence_example")
def parse_single_sequence_example(serialized, context_features=None, sequence_features=None, example_name=None,
                                  name=None):
    """tf.io.parse_single_sequence_example(serialized, context_features=None, sequence_features=None,
    example_name=None, name=None): one serialized SequenceExample (a scalar) into (context,
    feature_lists) dicts: context features as parse_single_example's; a FixedLenSequenceFeature
    [steps] + shape (a list that is absent is an error unless allow_missing: then 0 steps); a
    sequence VarLenFeature a SparseTensor with indices (step, position)."""
    (c_sparse, c_dense, f_sparse, f_dense, missing_ok), defaults, attrs = _prepare(context_features,
                                                                                   sequence_features)
    with name_scope(name, "ParseSingleSequenceExample"):
        serialized = as_string_tensor(serialized, name="serialized")
        keys = [convert_to_tensor(k.encode(), dtype=dtypes.string) for k in
                [k for k, _ in c_sparse] + [d[0] for d in c_dense] + [k for k, _ in f_sparse]
                + [k for k, _, _ in f_dense]]
        missing = convert_to_tensor(np.array([k.encode() for k in missing_ok], dtype=object).reshape(-1),
                                    dtype=dtypes.string)
        debug = convert_to_tensor((example_name or "").encode(), dtype=dtypes.string)
        op = make_op("ParseSingleSequenceExample", [serialized, missing] + keys + defaults + [debug], attrs,
                     name="ParseSingleSequenceExample")
    return _results(list(op.outputs), c_sparse, c_dense, f_sparse, f_dense)


@tf_export("io.parse_sequence_example", "parse_sequence_example")
def parse_sequence_example(serialized, context_features=None, sequence_features=None, example_names=None,
                           name=None):
    """tf.io.parse_sequence_example(serialized, context_features=None, sequence_features=None,
    example_names=None, name=None): a batch (vector) of serialized SequenceExamples into (context,
    feature_lists, feature_list_lengths): each FixedLenSequenceFeature [batch, longest] + shape,
    padded with zeros (or b''), its length per example in feature_list_lengths; a sequence
    VarLenFeature a SparseTensor with indices (example, step, position)."""
    (c_sparse, c_dense, f_sparse, f_dense, missing_ok), defaults, attrs = _prepare(context_features,
                                                                                   sequence_features)
    attrs.update({"context_sparse_keys": [k for k, _ in c_sparse], "context_dense_keys": [d[0] for d in c_dense],
                  "feature_list_sparse_keys": [k for k, _ in f_sparse],
                  "feature_list_dense_keys": [k for k, _, _ in f_dense],
                  "feature_list_dense_missing_assumed_empty": missing_ok})
    with name_scope(name, "ParseSequenceExample"):
        serialized = as_string_tensor(serialized, name="serialized")
        debug = convert_to_tensor(np.array([n.encode() for n in (example_names or [])], dtype=object).reshape(-1),
                                  dtype=dtypes.string)
        op = make_op("ParseSequenceExample", [serialized, debug] + defaults, attrs, name="ParseSequenceExample")
    outs = list(op.outputs)
    lengths = outs[len(outs) - len(f_dense):]
    context, sequence = _results(outs[:len(outs) - len(f_dense)], c_sparse, c_dense, f_sparse, f_dense)
    return context, sequence, {d[0]: t for d, t in zip(f_dense, lengths)}
