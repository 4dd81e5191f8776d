"""Unicode: tf.strings.unicode_transcode, unicode_encode (dense code point tensors),
unicode_decode(_with_offsets) and unicode_split(_with_offsets) (RaggedTensors of code points or
characters for inputs of rank >= 1), with TF's error modes ('strict', 'replace' with
`replacement_char`, 'ignore')."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import reshape
from tensorweave.ops.helpers import (TFNodes, as_string_tensor, check_output_size, invalid, make_op, string_array,
                                    string_result)
from tensorweave.ops.ragged.ragged_tensor import split_each
from tensorweave.ops.registry import register
from tensorweave.ops.strings.transform import map_strings


_CODECS = {"UTF-8": "utf-8", "UTF-16-BE": "utf-16-be", "UTF-32-BE": "utf-32-be"}
_INPUT_CODECS = dict(_CODECS, **{"US ASCII": "ascii", "ISO-8859-1": "latin-1"})
_ERRORS = ("strict", "replace", "ignore")


def _valid(cp: int) -> bool:
    return 0 <= cp <= 0x10FFFF and not 0xD800 <= cp <= 0xDFFF


def _decode(node, text: bytes, codec: str, errors: str, replacement: int, index: int) -> tuple:
    """(code points, byte offset where each starts) of `text`, invalid sequences handled per
    `errors` (Python's codecs find the same maximal invalid subparts as ICU)."""
    cps, starts, pos = [], [], 0
    while True:
        try:
            chunk, bad = text[pos:].decode(codec), None
        except UnicodeDecodeError as e:
            if errors == "strict":
                raise invalid(node, f"Invalid formatting on input string (element {index})") from None
            chunk, bad = text[pos:pos + e.start].decode(codec), (pos + e.start, pos + e.end)
        offset = pos
        for ch in chunk:
            cps.append(ord(ch))
            starts.append(offset)
            offset += len(ch.encode(codec, "surrogatepass"))
        if bad is None:
            return cps, starts
        if errors == "replace":
            cps.append(replacement)
            starts.append(bad[0])
        pos = bad[1]


def _code_points(node, text: bytes, codec: str, errors: str, replacement: int, index: int) -> list:
    return _decode(node, text, codec, errors, replacement, index)[0]


def _encode(node, cps, codec: str, errors: str, replacement: int, index: int) -> bytes:
    chars = []
    for cp in cps:
        cp = int(cp)
        if not _valid(cp):
            if errors == "strict":
                raise invalid(node, f"Invalid code point {cp} in element {index}")
            if errors == "ignore":
                continue
            cp = replacement
        chars.append(chr(cp))
    return "".join(chars).encode(codec, "surrogatepass")


def _transcode_kernel(node, ctx):
    src, dst = _INPUT_CODECS[node.attr["input_encoding"]], _CODECS[node.attr["output_encoding"]]
    errors, repl = node.attr["errors"], node.attr["replacement_char"]
    control = node.attr["replace_control_characters"]

    def one(s: bytes, i: int) -> bytes:
        cps = _code_points(node, s, src, errors, repl, i)
        if control:
            cps = [repl if cp < 0x20 else cp for cp in cps]
        return _encode(node, cps, dst, errors, repl, i)
    return lambda x: map_strings(node, one, x)


register("UnicodeTranscode", lambda op: [(dtypes.string, op.inputs[0].shape)], _transcode_kernel, grad=None,
         dtypes=(dtypes.string,), dtype_param="input")


def _text(x) -> str:
    return x.decode() if isinstance(x, bytes) else x


def _check_modes(errors: str, replacement_char: int) -> None:
    if errors not in _ERRORS:
        raise ValueError(f"errors must be one of {_ERRORS}, got {errors!r}")
    if not _valid(int(replacement_char)):
        raise ValueError(f"replacement_char {replacement_char} is not a valid Unicode code point")


@tf_export("strings.unicode_transcode")
def unicode_transcode(input, input_encoding, output_encoding, errors="replace", replacement_char=65533,
                      replace_control_characters=False, name=None):
    """tf.strings.unicode_transcode(input, input_encoding, output_encoding, errors='replace',
    replacement_char=65533, replace_control_characters=False, name=None): each string re-encoded
    (UTF-8, UTF-16-BE, UTF-32-BE; input also 'US ASCII', 'ISO-8859-1')."""
    input_encoding, output_encoding = _text(input_encoding), _text(output_encoding)
    if input_encoding not in _INPUT_CODECS:
        raise ValueError(f"input_encoding must be one of {sorted(_INPUT_CODECS)}, got {input_encoding!r}")
    if output_encoding not in _CODECS:
        raise ValueError(f"output_encoding must be one of {sorted(_CODECS)}, got {output_encoding!r}")
    _check_modes(errors, replacement_char)
    t = as_string_tensor(input)
    attrs = {"input_encoding": input_encoding, "output_encoding": output_encoding, "errors": errors,
             "replacement_char": int(replacement_char), "replace_control_characters": bool(replace_control_characters)}
    return make_op("UnicodeTranscode", [t], attrs, name=name or "UnicodeTranscode").outputs[0]


def _encode_infer(op):
    s = op.inputs[0].shape
    return [(dtypes.string, s[:-1] if s.ndims else unknown_shape())]


def _encode_kernel(node, ctx):
    codec, errors, repl = _CODECS[node.attr["output_encoding"]], node.attr["errors"], node.attr["replacement_char"]

    def run(x):
        arr = np.asarray(x)
        if arr.ndim == 0:
            raise invalid(node, "input must have rank >= 1 (code points along the last axis)")
        rows = arr.reshape(-1, arr.shape[-1])
        return string_result([_encode(node, r, codec, errors, repl, i) for i, r in enumerate(rows)], arr.shape[:-1])
    return run


def _encode_tf(op) -> list:
    """TF's UnicodeEncode of the code points flattened into rows of the last axis' length (row
    splits 0, n, 2n, ...), reshaped to the outer dims."""
    b, int64 = TFNodes(op), dtypes.int64
    attrs = {k: op.get_attr(k) for k in ("output_encoding", "errors", "replacement_char")}
    shape = b.node("shape", "Shape", [b.input(0)], T=dtypes.int32, out_type=int64)
    ends = [b.const(name, [value], int64) for name, value in (("begin", 0), ("end", -1), ("strides", 1))]
    outer = b.node("outer_shape", "StridedSlice", [shape] + ends, T=int64, Index=int64)
    ends = [b.const(name, [value], int64) for name, value in (("last", -1), ("after_last", 0), ("step", 1))]
    row_length = b.node("row_length", "StridedSlice", [shape] + ends, T=int64, Index=int64, end_mask=1,
                        shrink_axis_mask=1)
    zero, one = b.const("zero", 0, int64), b.const("one", 1, int64)
    rows = b.node("rows", "Prod", [outer, b.const("axis", 0, dtypes.int32)], T=int64, Tidx=dtypes.int32)
    row_starts = b.node("row_starts", "Range", [zero, b.node("rows_and_end", "AddV2", [rows, one], T=int64), one],
                        Tidx=int64)
    splits = b.node("row_splits", "Mul", [row_starts, row_length], T=int64)
    values = b.node("values", "Reshape", [b.input(0), b.const("flat", [-1], dtypes.int32)], T=dtypes.int32,
                    Tshape=dtypes.int32)
    encoded = b.node("encoded", "UnicodeEncode", [values, splits], Tsplits=int64, **attrs)
    b.node(None, "Reshape", [encoded, outer], T=dtypes.string, Tshape=int64)
    return b.nodes


register("UnicodeEncodeDense", _encode_infer, _encode_kernel, grad=None, dtypes=(dtypes.int32,), dtype_param="input",
         tf_lowering=_encode_tf)


def _ragged_encode_kernel(node, ctx):
    codec, errors, repl = _CODECS[node.attr["output_encoding"]], node.attr["errors"], node.attr["replacement_char"]

    def run(values, splits):
        values, splits = np.asarray(values), np.asarray(splits).tolist()
        if not splits or splits[0] != 0 or splits[-1] != len(values) or any(a > c for a, c in zip(splits, splits[1:])):
            raise invalid(node, f"input_splits {splits} are not the row splits of {len(values)} code points")
        return string_result([_encode(node, values[a:c], codec, errors, repl, i)
                              for i, (a, c) in enumerate(zip(splits, splits[1:]))], (len(splits) - 1,))
    return run


# TF's UnicodeEncode: one string per row of ragged code points (the form UnicodeEncodeDense is written in)
register("UnicodeEncode", lambda op: [(dtypes.string, TensorShape([None]))], _ragged_encode_kernel, grad=None,
         dtypes={0: ("input_values", (dtypes.int32,)), 1: ("input_splits", (dtypes.int32, dtypes.int64))})


@tf_export("strings.unicode_encode")
def unicode_encode(input, output_encoding, errors="replace", replacement_char=65533, name=None):
    """tf.strings.unicode_encode(input, output_encoding, errors='replace', replacement_char=65533,
    name=None): int32 code points along the last axis of a dense tensor, encoded into strings."""
    output_encoding = _text(output_encoding)
    if output_encoding not in _CODECS:
        raise ValueError(f"output_encoding must be one of {sorted(_CODECS)}, got {output_encoding!r}")
    _check_modes(errors, replacement_char)
    t = convert_to_tensor(input, dtype=dtypes.int32)
    if t.shape.ndims == 0:
        raise ValueError("unicode_encode: input must have rank >= 1")
    attrs = {"output_encoding": output_encoding, "errors": errors, "replacement_char": int(replacement_char)}
    return make_op("UnicodeEncodeDense", [t], attrs, name=name or "UnicodeEncode").outputs[0]


# -- UnicodeDecode / UnicodeDecodeWithOffsets --------------------------------------------------------
def _decode_kernel(with_offsets: bool):
    def factory(node, ctx):
        codec = _INPUT_CODECS[node.attr["input_encoding"]]
        errors, repl = node.attr["errors"], node.attr["replacement_char"]
        control = node.attr["replace_control_characters"]
        splits_np = dtypes.as_dtype(node.attr["Tsplits"]).as_numpy_dtype

        def run(x):
            texts = string_array(x).reshape(-1)
            check_output_size(node, [sum(len(t) for t in texts)])
            decoded = [_decode(node, bytes(t), codec, errors, repl, i) for i, t in enumerate(texts)]
            cps = [cp for d in decoded for cp in d[0]]
            if control:
                cps = [repl if cp < 0x20 else cp for cp in cps]
            splits = np.concatenate([[0], np.cumsum([len(d[0]) for d in decoded])]).astype(splits_np)
            values = np.array(cps, dtype=np.int32)
            if not with_offsets:
                return splits, values
            return splits, values, np.array([o for d in decoded for o in d[1]], dtype=np.int64)
        return run
    return factory


def _decode_infer(with_offsets: bool):
    def infer(op):
        n = op.inputs[0].shape.num_elements()
        outs = [(op.get_attr("Tsplits"), TensorShape([None if n is None else n + 1])),
                (dtypes.int32, TensorShape([None]))]
        return outs + [(dtypes.int64, TensorShape([None]))] if with_offsets else outs
    return infer


register("UnicodeDecode", _decode_infer(False), _decode_kernel(False), grad=None, dtypes=(dtypes.string,),
         dtype_param="input")
register("UnicodeDecodeWithOffsets", _decode_infer(True), _decode_kernel(True), grad=None,
         dtypes=(dtypes.string,), dtype_param="input")


def _decoder(op_type: str, input_encoding, errors, replacement_char, replace_control_characters):
    """A split_each function running one UnicodeDecode(WithOffsets) op over flat strings."""
    input_encoding = _text(input_encoding)
    if input_encoding not in _INPUT_CODECS:
        raise ValueError(f"input_encoding must be one of {sorted(_INPUT_CODECS)}, got {input_encoding!r}")
    _check_modes(errors, replacement_char)
    attrs = {"input_encoding": input_encoding, "errors": errors, "replacement_char": int(replacement_char),
             "replace_control_characters": bool(replace_control_characters), "Tsplits": dtypes.int64}

    def run(flat):
        op = make_op(op_type, [flat], attrs, name=op_type)
        return op.outputs[0], list(op.outputs[1:])
    return run


@tf_export("strings.unicode_decode")
def unicode_decode(input, input_encoding, errors="replace", replacement_char=65533,
                   replace_control_characters=False, name=None):
    """tf.strings.unicode_decode(input, input_encoding, errors='replace', replacement_char=65533,
    replace_control_characters=False, name=None): the int32 code points of each string: a 1-D
    tensor for a scalar input, else a RaggedTensor with one more (ragged) dimension."""
    with name_scope(name, "UnicodeDecode", [input]):
        return split_each(input, _decoder("UnicodeDecode", input_encoding, errors, replacement_char,
                                          replace_control_characters), dtypes.string)[0]


@tf_export("strings.unicode_decode_with_offsets")
def unicode_decode_with_offsets(input, input_encoding, errors="replace", replacement_char=65533,
                                replace_control_characters=False, name=None):
    """tf.strings.unicode_decode_with_offsets(...): (code points, the int64 byte offset in its
    string where each character starts), shaped as unicode_decode's result."""
    with name_scope(name, "UnicodeDecodeWithOffsets", [input]):
        return tuple(split_each(input, _decoder("UnicodeDecodeWithOffsets", input_encoding, errors,
                                                replacement_char, replace_control_characters), dtypes.string))


def _splitter(input_encoding, errors, replacement_char, with_offsets: bool):
    """A split_each function: decode, then encode each code point alone in the same encoding."""
    encoding = _text(input_encoding)
    if encoding not in _CODECS:
        raise ValueError(f"input_encoding must be one of {sorted(_CODECS)}, got {input_encoding!r}")
    decode = _decoder("UnicodeDecodeWithOffsets" if with_offsets else "UnicodeDecode", encoding, errors,
                      replacement_char, False)

    def run(flat):
        splits, outs = decode(flat)
        chars = make_op("UnicodeEncodeDense", [reshape(outs[0], [-1, 1])],
                        {"output_encoding": encoding, "errors": errors, "replacement_char": int(replacement_char)},
                        name="UnicodeEncode").outputs[0]
        return splits, [chars] + outs[1:]
    return run


@tf_export("strings.unicode_split")
def unicode_split(input, input_encoding, errors="replace", replacement_char=65533, name=None):
    """tf.strings.unicode_split(input, input_encoding, errors='replace', replacement_char=65533,
    name=None): each string split into its characters (each a string in input_encoding)."""
    with name_scope(name, "UnicodeSplit", [input]):
        return split_each(input, _splitter(input_encoding, errors, replacement_char, False), dtypes.string)[0]


@tf_export("strings.unicode_split_with_offsets")
def unicode_split_with_offsets(input, input_encoding, errors="replace", replacement_char=65533,
                               name=None):
    """tf.strings.unicode_split_with_offsets(...): (characters, the byte offset where each starts)."""
    with name_scope(name, "UnicodeSplitWithOffsets", [input]):
        return tuple(split_each(input, _splitter(input_encoding, errors, replacement_char, True), dtypes.string))
