"""SparseCross: the crosses of sparse and dense features row by row (tf.sparse.cross,
tf.sparse.cross_hashed; crossed feature columns; tf.ragged.cross and cross_hashed, whose ragged
inputs enter as their SparseTensors and whose result is the SparseCross's rows). In strings/,
beside the Fingerprint64 its hashed crosses are built from (sparse/ sits below strings/).

Row b of the output holds every combination of one feature from each input's row b, the last
input varying fastest (a row where an input has no feature has none). A string cross joins the
features' text with "_X_" (integers as decimal text); a hashed cross is TF's
FingerprintCat64 chain from `hash_key` over each feature's Fingerprint64 (an int64 feature
enters as itself), modulo num_buckets, bit-equal to TF's."""
from __future__ import annotations

import itertools

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.api import name_scope
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.sparse_tensor import SparseTensor, SparseTensorValue
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import make_op, string_result
from tensorweave.ops.math.cast import cast
from tensorweave.ops.ragged.ragged_tensor import RaggedTensor, convert_to_tensor_or_ragged_tensor
from tensorweave.ops.registry import register
from tensorweave.ops.strings.hashing import fingerprint64, fingerprint_cat64

_M64 = 0xFFFFFFFFFFFFFFFF
DEFAULT_HASH_KEY = 0xDECAFCAFFE   # TF's sparse_ops._DEFAULT_HASH_KEY


def _rows(node, indices, values, batch: int) -> list:
    """A sparse input's features per row, in index order."""
    out = [[] for _ in range(batch)]
    for (row, *_), v in zip(np.asarray(indices).reshape(len(values), -1), values):
        if not 0 <= row < batch:
            raise errors.InvalidArgumentError(node, node.name, f"Invalid row index {row} for a batch of {batch}")
        out[row].append(v)
    return out


def _kernel(node, ctx):
    n_sparse = int(node.attr["N"])
    hashed = bool(node.attr["hashed_output"])
    num_buckets, hash_key = int(node.attr["num_buckets"]), int(node.attr["hash_key"]) & _M64

    def feature(v):
        if isinstance(v, (bytes, np.bytes_)):
            return fingerprint64(bytes(v)) if hashed else bytes(v)
        return int(v) & _M64 if hashed else str(int(v)).encode()

    def run(*inputs):
        indices, values, shapes = inputs[:n_sparse], inputs[n_sparse:2 * n_sparse], inputs[2 * n_sparse:3 * n_sparse]
        dense = inputs[3 * n_sparse:]
        batches = {int(np.asarray(s)[0]) for s in shapes} | {np.asarray(d).shape[0] for d in dense}
        if len(batches) > 1:
            raise errors.InvalidArgumentError(node, node.name, f"Expected batch size {sorted(batches)[0]} got "
                                                               f"{sorted(batches)[-1]}")
        batch = batches.pop() if batches else 0
        columns = [_rows(node, i, [feature(x) for x in np.asarray(v, dtype=object).reshape(-1)], batch)
                   for i, v in zip(indices, values)]
        columns += [[[feature(x) for x in row] for row in np.asarray(d, dtype=object).reshape(batch, -1)]
                    for d in dense]
        out_indices, out_values = [], []
        for b in range(batch):
            for k, combo in enumerate(itertools.product(*(column[b] for column in columns))):
                if hashed:
                    h = hash_key
                    for f in combo:
                        h = fingerprint_cat64(h, f)
                    out_values.append(h % num_buckets if num_buckets > 0 else h % 0x7FFFFFFFFFFFFFFF)
                else:
                    out_values.append(b"_X_".join(combo))
                out_indices.append((b, k))
        width = max((k + 1 for _, k in out_indices), default=0)
        values_out = np.array(out_values, dtype=np.int64) if hashed else string_result(out_values, [len(out_values)])
        return (np.array(out_indices, dtype=np.int64).reshape(-1, 2), values_out,
                np.array([batch, width], dtype=np.int64))
    return run


def _infer(op):
    out = dtypes.int64 if op.get_attr("hashed_output") else dtypes.string
    return [(dtypes.int64, TensorShape([None, 2])), (out, TensorShape([None])), (dtypes.int64, TensorShape([2]))]


register("SparseCross", _infer, _kernel, grad=None)


def _cross(inputs, hashed_output: bool, num_buckets: int, hash_key, name):
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("Inputs must be a list")
    inputs = [SparseTensor.from_value(i) if isinstance(i, SparseTensorValue) else i for i in inputs]
    if not all(isinstance(i, SparseTensor) or hasattr(i, "dtype") for i in inputs):
        raise TypeError("All inputs must be SparseTensors")
    sparse = [i for i in inputs if isinstance(i, SparseTensor)]
    dense = [convert_to_tensor(i) for i in inputs if not isinstance(i, SparseTensor)]

    def as_int64(t):
        return cast(t, dtypes.int64) if t.dtype == dtypes.int32 else t
    values = [as_int64(s.values) for s in sparse]
    dense = [as_int64(d) for d in dense]
    for t in values + dense:
        if t.dtype not in (dtypes.int64, dtypes.string):
            raise TypeError(f"Value passed to parameter 'values' has DataType {t.dtype.name} not in list of allowed "
                            "values: int64, string")
    attrs = {"N": len(sparse), "hashed_output": hashed_output, "num_buckets": int(num_buckets),
             "hash_key": int(DEFAULT_HASH_KEY if hash_key is None else hash_key),
             "sparse_types": [v.dtype for v in values], "dense_types": [d.dtype for d in dense],
             "out_type": dtypes.int64 if hashed_output else dtypes.string, "internal_type":
             dtypes.int64 if hashed_output else dtypes.string}
    op = make_op("SparseCross", [s.indices for s in sparse] + values + [s.dense_shape for s in sparse] + dense, attrs,
                 name=name or "SparseCross")
    return SparseTensor(*op.outputs)


@tf_export("sparse.cross")
def sparse_cross(inputs, name=None):
    """tf.sparse.cross(inputs, name=None): the string crosses of the rank-2 SparseTensors and
    dense Tensors in `inputs`, "a_X_b" per combination of one feature from each, row by row."""
    return _cross(inputs, False, 0, None, name)


@tf_export("sparse.cross_hashed")
def sparse_cross_hashed(inputs, num_buckets=0, hash_key=None, name=None):
    """tf.sparse.cross_hashed(inputs, num_buckets=0, hash_key=None, name=None): as sparse.cross,
    each cross TF's fingerprint of its features modulo num_buckets (int64); 0 buckets: modulo
    2**63 - 1."""
    return _cross(inputs, True, num_buckets, hash_key, name)


def _ragged_cross(inputs, hashed_output: bool, num_buckets: int, hash_key, name):
    """TF's RaggedCross as SparseCross over the inputs' rows (a RaggedTensor enters as its
    to_sparse()), the result's rows made a RaggedTensor again."""
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("Inputs must be a list")
    with name_scope(name, "RaggedCross", inputs):
        converted, nrows, splits_dtypes = [], set(), set()
        for i, t in enumerate(inputs):
            t = SparseTensor.from_value(t) if isinstance(t, (SparseTensor, SparseTensorValue)) else \
                convert_to_tensor_or_ragged_tensor(t)
            if not (t.dtype.is_integer or t.dtype == dtypes.string):
                raise ValueError(f"Unexpected dtype for inputs[{i}]: {t.dtype.name}")
            if isinstance(t, RaggedTensor):
                if t.ragged_rank != 1 or t.flat_values.shape.ndims != 1:
                    raise ValueError("tf.ragged.cross only supports inputs with rank=2")
                splits_dtypes.add(t.row_splits.dtype)
                n = t.row_splits.shape[0].value
                nrows.add(None if n is None else n - 1)
                t = t.to_sparse()
            elif isinstance(t, SparseTensor):
                t.shape.with_rank(2)
            else:
                t.shape.with_rank(2)
                nrows.add(t.shape[0].value)
            converted.append(t)
        known = {n for n in nrows if n is not None}
        if len(known) > 1:
            raise ValueError(f"tf.ragged.cross: inputs must have the same number of rows, got {sorted(known)}")
        crossed = _cross(converted, hashed_output, num_buckets, hash_key, None)
        splits_dtype = dtypes.int32 if splits_dtypes == {dtypes.int32} else dtypes.int64
        return RaggedTensor.from_value_rowids(crossed.values, cast(crossed.indices[:, 0], splits_dtype),
                                              nrows=cast(crossed.dense_shape[0], splits_dtype), validate=False)


@tf_export("ragged.cross")
def ragged_cross(inputs, name=None):
    """tf.ragged.cross(inputs, name=None): row by row, the string crosses ("a_X_b") of the rank-2
    RaggedTensors, SparseTensors and Tensors in `inputs` (integer or string), as a RaggedTensor."""
    return _ragged_cross(inputs, False, 0, None, name)


@tf_export("ragged.cross_hashed")
def ragged_cross_hashed(inputs, num_buckets=0, hash_key=None, name=None):
    """tf.ragged.cross_hashed(inputs, num_buckets=0, hash_key=None, name=None): as ragged.cross,
    each cross TF's fingerprint of its features modulo num_buckets (int64; 0 buckets: modulo
    2**63 - 1), bit-equal to TF's."""
    return _ragged_cross(inputs, True, num_buckets, hash_key, name)
