"""tf.sets: the sets held in the last dimension of dense or sparse tensors (each index of the
other dimensions is a group; its values, duplicates dropped, are its set). set_size (SetSize),
and intersection, union and difference (DenseToDenseSetOperation, DenseToSparseSetOperation,
SparseToSparseSetOperation) as TF's kernels give them: a SparseTensor whose rows hold each
group's result set sorted ascending, its last dimension the largest result set. Also
tf.edit_distance (EditDistance): the Levenshtein distance between the groups' sequences of two
SparseTensors."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.sparse_tensor import SparseTensor, SparseTensorValue, convert_to_tensor_or_sparse_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import invalid, make_op, string_array
from tensorweave.ops.registry import register

_SET_TYPES = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16, dtypes.string)


def _array(x) -> np.ndarray:
    """A kernel input as an array (a 0-d string may arrive as bytes)."""
    return string_array(x) if isinstance(x, bytes) else np.asarray(x)


def _elements(values: np.ndarray) -> list:
    return [bytes(v) for v in values] if values.dtype == object else values.tolist()


def _dense_groups(node, x, what: str):
    """(group shape, {group index: set}) of a dense input."""
    x = _array(x)
    if x.ndim < 2:
        raise invalid(node, f"{what} should be at least rank 2, got shape {list(x.shape)}")
    rows = x.reshape(-1, x.shape[-1])
    groups = {g: set(_elements(rows[i])) for i, g in enumerate(np.ndindex(*x.shape[:-1]))}
    return tuple(x.shape[:-1]), groups


def _sparse_groups(node, indices, values, shape, validate: bool, what: str):
    """(group shape, {group index: set}) of a sparse input, its indices checked as TF does."""
    indices, shape = np.asarray(indices, np.int64), np.asarray(shape, np.int64).reshape(-1)
    values = _array(values)
    if shape.size < 2:
        raise invalid(node, f"{what} should be at least rank 2, got dense shape {shape.tolist()}")
    if indices.ndim != 2 or indices.shape[1] != shape.size or indices.shape[0] != values.reshape(-1).shape[0]:
        raise invalid(node, f"{what}: indices {list(indices.shape)}, values {list(values.shape)} and shape "
                            f"{shape.tolist()} do not describe one SparseTensor")
    if validate and len(indices):
        if (indices < 0).any() or (indices >= shape).any():
            bad = int(np.nonzero(((indices < 0) | (indices >= shape)).any(1))[0][0])
            raise invalid(node, f"{what}: index {indices[bad].tolist()} is out of bounds of shape {shape.tolist()}")
        rows = [tuple(r) for r in indices.tolist()]
        for i in range(1, len(rows)):
            if rows[i] <= rows[i - 1]:
                raise invalid(node, f"{what}: indices are not in order: {list(rows[i - 1])} then {list(rows[i])}")
    groups: dict = {}
    for row, v in zip(indices.tolist(), _elements(values.reshape(-1))):
        groups.setdefault(tuple(row[:-1]), set()).add(v)
    return tuple(int(d) for d in shape[:-1]), groups


def _set_size_kernel(node, ctx):
    validate = bool(node.attr.get("validate_indices", True))

    def run(indices, values, shape):
        group_shape, groups = _sparse_groups(node, indices, values, shape, validate, "set")
        out = np.zeros(group_shape, np.int32)
        for g, s in groups.items():
            out[g] = len(s)
        return out
    return run


register("SetSize", lambda op: [(dtypes.int32, unknown_shape())], _set_size_kernel, grad=None,
         dtypes={1: ("set_values", _SET_TYPES)})


_OPERATIONS = {"intersection": lambda a, b: a & b, "union": lambda a, b: a | b, "a-b": lambda a, b: a - b,
               "b-a": lambda a, b: b - a}


def _set_operation_kernel(node, ctx):
    operation = node.attr["set_operation"]
    operation = operation.decode() if isinstance(operation, bytes) else operation
    if operation not in _OPERATIONS:
        raise invalid(node, f"Invalid set_operation {operation}.")
    combine, validate = _OPERATIONS[operation], bool(node.attr.get("validate_indices", True))

    def run(*inputs):
        if node.op == "DenseToDenseSetOperation":
            (shape_a, a), (shape_b, b) = _dense_groups(node, inputs[0], "set1"), _dense_groups(node, inputs[1], "set2")
        elif node.op == "DenseToSparseSetOperation":
            shape_a, a = _dense_groups(node, inputs[0], "set1")
            shape_b, b = _sparse_groups(node, *inputs[1:], validate, "set2")
        else:
            shape_a, a = _sparse_groups(node, *inputs[:3], validate, "set1")
            shape_b, b = _sparse_groups(node, *inputs[3:], validate, "set2")
        if shape_a != shape_b:
            raise invalid(node, f"Shape mismatch: the group dimensions of set1 {list(shape_a)} and set2 "
                                f"{list(shape_b)} differ")
        rows, values = [], []
        for g in sorted(set(a) | set(b)):
            result = sorted(combine(a.get(g, set()), b.get(g, set())))
            rows += [g + (j,) for j in range(len(result))]
            values += result
        width = max((r[-1] + 1 for r in rows), default=0)
        dt = dtypes.as_dtype(node.attr["T"])
        out_values = string_array(values) if dt is dtypes.string else np.asarray(values, dt.as_numpy_dtype)
        return (np.asarray(rows, np.int64).reshape(-1, len(shape_a) + 1), out_values.reshape(-1),
                np.asarray(shape_a + (width,), np.int64))
    return run


def _set_operation_infer(op):
    first = op.inputs[0]
    if op.type == "SparseToSparseSetOperation":
        rank = first.shape[0].value if first.shape.ndims == 1 else None
    else:
        rank = first.shape.ndims
    if rank is not None and rank < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {rank} for 'set1'")
    dt = dtypes.as_dtype(op.get_attr("T"))
    return [(dtypes.int64, TensorShape([None, rank])), (dt, TensorShape([None])), (dtypes.int64, TensorShape([rank]))]


for _op, _values_index in (("DenseToDenseSetOperation", 0), ("DenseToSparseSetOperation", 0),
                           ("SparseToSparseSetOperation", 1)):
    register(_op, _set_operation_infer, _set_operation_kernel, grad=None,
             dtypes={_values_index: ("set1" if _values_index == 0 else "set1_values", _SET_TYPES)})


def _sets_pair(a, b):
    a, b = convert_to_tensor_or_sparse_tensor(a, name="a"), convert_to_tensor_or_sparse_tensor(b, name="b")
    da = a.values.dtype if isinstance(a, SparseTensor) else a.dtype
    db = b.values.dtype if isinstance(b, SparseTensor) else b.dtype
    if da != db:
        raise TypeError(f"Types don't match, {da} vs {db}.")
    if da not in _SET_TYPES:
        raise TypeError(f"Invalid dtype {da}.")
    return a, b, da


def _set_operation(a, b, operation: str, validate_indices: bool) -> SparseTensor:
    a, b, dt = _sets_pair(a, b)
    attrs = {"set_operation": operation, "validate_indices": bool(validate_indices), "T": dt}
    if isinstance(a, SparseTensor):
        if not isinstance(b, SparseTensor):
            raise ValueError("Sparse,Dense is not supported, but Dense,Sparse is. Please flip the order of your "
                             "inputs.")
        op = make_op("SparseToSparseSetOperation", [a.indices, a.values, a.dense_shape, b.indices, b.values,
                                                    b.dense_shape], attrs, name="SparseToSparseSetOperation")
    elif isinstance(b, SparseTensor):
        op = make_op("DenseToSparseSetOperation", [a, b.indices, b.values, b.dense_shape], attrs,
                     name="DenseToSparseSetOperation")
    else:
        op = make_op("DenseToDenseSetOperation", [a, b], attrs, name="DenseToDenseSetOperation")
    return SparseTensor(op.outputs[0], op.outputs[1], op.outputs[2])


def _sparse_first(a, b):
    """TF's order for a commutative operation: a dense operand first."""
    return (b, a, True) if isinstance(a, (SparseTensor, SparseTensorValue)) and \
        not isinstance(b, (SparseTensor, SparseTensorValue)) else (a, b, False)


@tf_export("sets.set_size", "sets.size")
def set_size(a, validate_indices=True):
    """tf.sets.set_size(a, validate_indices=True): the number of distinct values in each set
    (the last dimension) of the SparseTensor `a`: int32 of a's dense shape without its last
    dimension."""
    a = convert_to_tensor_or_sparse_tensor(a, name="a")
    if not isinstance(a, SparseTensor):
        raise TypeError(f"Expected `SparseTensor`, got {a}.")
    if a.values.dtype not in _SET_TYPES:
        raise TypeError(f"Invalid dtype {a.values.dtype}.")
    return make_op("SetSize", [a.indices, a.values, a.dense_shape], {"validate_indices": bool(validate_indices)},
                   name="SetSize").outputs[0]


@tf_export("sets.set_intersection", "sets.intersection")
def set_intersection(a, b, validate_indices=True):
    """tf.sets.set_intersection(a, b, validate_indices=True): per group, the values in both
    sets, as a SparseTensor of sorted rows (a dense or sparse, b dense or sparse)."""
    a, b, _ = _sparse_first(a, b)
    return _set_operation(a, b, "intersection", validate_indices)


@tf_export("sets.set_union", "sets.union")
def set_union(a, b, validate_indices=True):
    """tf.sets.set_union(a, b, validate_indices=True): per group, the values in either set."""
    a, b, _ = _sparse_first(a, b)
    return _set_operation(a, b, "union", validate_indices)


@tf_export("sets.set_difference", "sets.difference")
def set_difference(a, b, aminusb=True, validate_indices=True):
    """tf.sets.set_difference(a, b, aminusb=True, validate_indices=True): per group, the values
    of a not in b (or of b not in a when aminusb is False)."""
    a, b, flipped = _sparse_first(a, b)
    return _set_operation(a, b, "a-b" if aminusb != flipped else "b-a", validate_indices)


# -- edit_distance -----------------------------------------------------------------------------------
def _sequences(node, indices, values, shape, what: str):
    """{group index: [values in order of the last index]} of a SparseTensor, and its shape."""
    indices, shape = np.asarray(indices, np.int64), np.asarray(shape, np.int64).reshape(-1)
    values = _array(values)
    if indices.ndim != 2 or indices.shape[1] != shape.size or indices.shape[0] != values.reshape(-1).shape[0]:
        raise invalid(node, f"{what}: indices {list(indices.shape)}, values {list(values.shape)} and shape "
                            f"{shape.tolist()} do not describe one SparseTensor")
    seqs: dict = {}
    for row, v in sorted(zip(indices.tolist(), _elements(values.reshape(-1))), key=lambda rv: rv[0]):
        seqs.setdefault(tuple(row[:-1]), []).append(v)
    return seqs, shape


def _levenshtein(a: list, b: list) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


def _edit_distance_kernel(node, ctx):
    normalize = bool(node.attr["normalize"])

    def run(h_indices, h_values, h_shape, t_indices, t_values, t_shape):
        hyp, hs = _sequences(node, h_indices, h_values, h_shape, "hypothesis")
        truth, ts = _sequences(node, t_indices, t_values, t_shape, "truth")
        if hs.size != ts.size:
            raise invalid(node, f"hypothesis and truth must have the same rank, got {hs.tolist()} and {ts.tolist()}")
        out = np.zeros(np.maximum(hs[:-1], ts[:-1]), np.float32)
        for g in set(hyp) | set(truth):
            h, t = hyp.get(g, []), truth.get(g, [])
            d = _levenshtein(h, t)
            out[g] = d / len(t) if normalize and t else (np.inf if normalize and h else d)
        return out
    return run


def _edit_distance_infer(op):
    rank = op.inputs[2].shape[0].value if op.inputs[2].shape.ndims == 1 else None
    return [(dtypes.float32, TensorShape(None if rank is None else [None] * (rank - 1)))]


register("EditDistance", _edit_distance_infer, _edit_distance_kernel, grad=None)


@tf_export("edit_distance")
def edit_distance(hypothesis, truth, normalize=True, name="edit_distance"):
    """tf.edit_distance(hypothesis, truth, normalize=True, name='edit_distance'): the
    Levenshtein distance between each sequence (the last dimension) of two SparseTensors,
    float32 of their dense shapes without the last dimension (the larger of each); normalized
    by the truth's length (an empty truth: inf, or 0 for an empty hypothesis)."""
    if not isinstance(hypothesis, (SparseTensor, SparseTensorValue)):
        raise TypeError("Hypothesis must be a SparseTensor.")
    if not isinstance(truth, (SparseTensor, SparseTensorValue)):
        raise TypeError("Truth must be a SparseTensor.")
    hypothesis = convert_to_tensor_or_sparse_tensor(hypothesis, name="hypothesis")
    truth = convert_to_tensor_or_sparse_tensor(truth, name="truth")
    if hypothesis.values.dtype != truth.values.dtype:
        raise TypeError(f"Types don't match, {hypothesis.values.dtype} vs {truth.values.dtype}.")
    inputs = [hypothesis.indices, hypothesis.values, hypothesis.dense_shape, truth.indices, truth.values,
              truth.dense_shape]
    return make_op("EditDistance", inputs, {"normalize": bool(normalize), "T": hypothesis.values.dtype},
                   name=name).outputs[0]
