"""tf.strings.ngrams (TF's StringNGrams kernel): the n-grams of each row of strings, joined with
a separator, optionally padded, for dense and ragged inputs."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.graph import Tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import reshape, shape as shape_of
from tensorweave.ops.helpers import INDEX, check_output_size, make_op, string_array, string_result
from tensorweave.ops.ragged.ragged_tensor import (
    RaggedTensor, check_splits, convert_to_tensor_or_ragged_tensor)
from tensorweave.ops.registry import register


def _as_bytes(s) -> bytes:
    return s.encode() if isinstance(s, str) else bytes(s)


def _ngrams_kernel(node, ctx):
    sep = _as_bytes(node.attr["separator"])
    widths = [int(w) for w in node.attr["ngram_widths"]]
    left, right = _as_bytes(node.attr["left_pad"]), _as_bytes(node.attr["right_pad"])
    pad_attr, preserve = int(node.attr["pad_width"]), bool(node.attr["preserve_short_sequences"])

    def row_ngrams(row: list) -> list:
        out = []
        for w in widths:
            # the padding is never wider than width - 1 (pad_width -1: exactly that)
            pad = min(w - 1 if pad_attr < 0 else pad_attr, w - 1)
            padded = [left] * pad + row + [right] * pad
            out += [sep.join(padded[i:i + w]) for i in range(max(0, len(padded) - w + 1))]
        if preserve and not out and row:
            out.append(sep.join([left] * pad_attr + row + [right] * pad_attr))
        return out

    def run(data, splits):
        data, splits = string_array(data).reshape(-1), np.asarray(splits)
        check_splits(node, [splits], len(data))
        rows = [row_ngrams([bytes(v) for v in data[a:b]]) for a, b in zip(splits[:-1], splits[1:])]
        out_splits = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(splits.dtype)
        check_output_size(node, [int(out_splits[-1])])
        return string_result([g for r in rows for g in r], [int(out_splits[-1])]), out_splits
    return run


def _ngrams_infer(op):
    return [(dtypes.string, TensorShape([None])), (op.inputs[1].dtype, op.inputs[1].shape)]


register("StringNGrams", _ngrams_infer, _ngrams_kernel, grad=None,
         dtypes={0: ("data", (dtypes.string,)), 1: ("data_splits", INDEX)})


@tf_export("strings.ngrams")
def ngrams(data, ngram_width, separator=" ", pad_values=None, padding_width=None,
           preserve_short_sequences=False, name=None):
    """tf.strings.ngrams(data, ngram_width, separator=' ', pad_values=None, padding_width=None,
    preserve_short_sequences=False, name=None): the n-grams (for each width in ngram_width) along
    the innermost dimension, joined by `separator`. pad_values (a string, or a (left, right) pair)
    pads each row by padding_width (default width - 1); preserve_short_sequences keeps a row too
    short for any n-gram as one n-gram. A dense input gives a dense result, a ragged one ragged."""
    if pad_values is None:
        left = right = ""
    elif isinstance(pad_values, (list, tuple)):
        if len(pad_values) != 2 or not all(isinstance(p, (str, bytes)) for p in pad_values):
            raise ValueError("pad_values must be a string, tuple of strings, or None.")
        left, right = pad_values
    elif isinstance(pad_values, (str, bytes)):
        left = right = pad_values
    else:
        raise ValueError("pad_values must be a string, tuple of strings, or None.")
    if padding_width is not None and padding_width < 1:
        raise ValueError("padding_width must be greater than 0.")
    if padding_width is not None and pad_values is None:
        raise ValueError("pad_values must be provided if padding_width is set.")
    widths = list(ngram_width) if isinstance(ngram_width, (list, tuple)) else [ngram_width]
    if any(int(w) < 1 for w in widths):
        raise ValueError(f"All ngram_widths must be greater than 0. Got {ngram_width}")
    attrs = {"separator": separator, "ngram_widths": [int(w) for w in widths], "left_pad": left,
             "right_pad": right, "pad_width": 0 if pad_values is None else (-1 if padding_width is None
                                                                             else int(padding_width)),
             "preserve_short_sequences": bool(preserve_short_sequences)}

    def run(values: Tensor, splits: Tensor):
        op = make_op("StringNGrams", [values, splits], dict(attrs, Tsplits=splits.dtype), name="StringNGrams")
        return op.outputs[0], op.outputs[1]

    with name_scope(name, "StringNGrams", [data]):
        data = convert_to_tensor_or_ragged_tensor(data, dtype=dtypes.string, name="data")
        if isinstance(data, RaggedTensor):
            return _ragged_ngrams(data, run)
        rank = data.shape.ndims
        if rank is None:
            raise ValueError("Rank of data must be known.")
        if rank == 0:
            raise ValueError("Data must have rank>0")
        if rank == 1:
            splits = concat([[0], reshape(shape_of(data, out_type=dtypes.int64)[0], [1])], 0)
            return run(data, splits)[0]
        # a dense input keeps its outer shape; every row has the same number of n-grams
        dense_shape = concat([shape_of(data, out_type=dtypes.int64)[:-1], [-1]], 0)
        result = _ragged_ngrams(RaggedTensor.from_tensor(data, ragged_rank=rank - 1), run)
        return reshape(result.flat_values, dense_shape)


def _ragged_ngrams(rt: RaggedTensor, run) -> RaggedTensor:
    if rt.ragged_rank > 1:
        return rt.with_values(_ragged_ngrams(rt.values, run))
    if rt.values.shape.ndims != 1:
        raise ValueError("ngrams: the values of a ragged input must be a vector of strings")
    values, splits = run(rt.values, rt.row_splits)
    return RaggedTensor.from_row_splits(values, splits, validate=False)
