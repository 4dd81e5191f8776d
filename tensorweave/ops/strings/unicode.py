"""Unicode: tf.strings.unicode_transcode and unicode_encode (dense code point tensors), with
TF's error modes ('strict', 'replace' with `replacement_char`, 'ignore')."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.ops.helpers import as_string_tensor, invalid, make_op, string_result
from tensorweave.ops.registry import register
from tensorweave.ops.strings.transform import map_strings

__all__: list = []

_CODECS = {"UTF-8": "utf-8", "UTF-16-BE": "utf-16-be", "UTF-32-BE": "utf-32-be"}
_INPUT_CODECS = dict(_CODECS, **{"US ASCII": "ascii", "ISO-8859-1": "latin-1"})
_ERRORS = ("strict", "replace", "ignore")


def _valid(cp: int) -> bool:
    return 0 <= cp <= 0x10FFFF and not 0xD800 <= cp <= 0xDFFF


def _code_points(node, text: bytes, codec: str, errors: str, replacement: int, index: int) -> list:
    """The code points of `text`, invalid sequences handled per `errors`."""
    out, pos = [], 0
    while pos <= len(text):
        try:
            out.extend(ord(c) for c in text[pos:].decode(codec))
            return out
        except UnicodeDecodeError as e:
            if errors == "strict":
                raise invalid(node, f"Invalid formatting on input string (element {index})") from None
            out.extend(ord(c) for c in text[pos:pos + e.start].decode(codec))
            if errors == "replace":
                out.append(replacement)
            pos += e.end
    return out


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


def unicode_transcode(input, input_encoding, output_encoding, errors="replace", replacement_char=65533,  # noqa: A002
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


register("UnicodeEncodeDense", _encode_infer, _encode_kernel, grad=None, dtypes=(dtypes.int32,), dtype_param="input")


def unicode_encode(input, output_encoding, errors="replace", replacement_char=65533, name=None):  # noqa: A002
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
