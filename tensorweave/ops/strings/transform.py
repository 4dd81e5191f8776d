"""Element-wise string transforms: tf.substr, tf.strings.length, strip, lower, upper,
tf.regex_replace, tf.strings.regex_full_match. Patterns are RE2 syntax as TF's, run by Python's
`re` (the common subset: RE2 has no backreferences in patterns and neither do TF programs)."""
from __future__ import annotations

import re

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import broadcast_shapes
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import INDEX, as_string_tensor, invalid, make_op, string_array, string_result
from tensorweave.ops.registry import register


_UNITS = ("BYTE", "UTF8_CHAR")


def _check_unit(unit: str) -> str:
    if unit not in _UNITS:
        raise ValueError(f"unit must be one of {_UNITS}, got {unit!r}")
    return unit


def _decode(node, s: bytes, index: int) -> str:
    try:
        return s.decode("utf-8")
    except UnicodeDecodeError:
        raise invalid(node, f"Invalid UTF8 character at index {index}") from None


def map_strings(node, fn, x, out_dtype=None):
    """Applies fn(bytes, index) to each string of x: a string tensor (out_dtype None) or numbers."""
    arr = string_array(x)
    vals = [fn(bytes(s), i) for i, s in enumerate(arr.reshape(-1))]
    if out_dtype is None:
        return string_result(vals, arr.shape)
    return np.array(vals, dtype=out_dtype).reshape(arr.shape)


def _unary(op_type: str, kernel, out_dtype=dtypes.string) -> None:
    register(op_type, lambda op: [(out_dtype, op.inputs[0].shape)], kernel, grad=None, dtypes=(dtypes.string,),
             dtype_param="input")


# -- StringLength --------------------------------------------------------------------------------
def _length_kernel(node, ctx):
    utf8 = node.attr["unit"] == "UTF8_CHAR"
    return lambda x: map_strings(node, (lambda s, i: len(_decode(node, s, i))) if utf8 else (lambda s, i: len(s)),
                                 x, np.int32)


_unary("StringLength", _length_kernel, dtypes.int32)


@tf_export("strings.length")
def length(input, name=None, unit="BYTE"):
    """tf.strings.length(input, name=None, unit='BYTE'): each string's length in bytes or
    ('UTF8_CHAR') in Unicode code points (int32)."""
    t = as_string_tensor(input)
    return make_op("StringLength", [t], {"unit": _check_unit(unit)}, name=name or "StringLength").outputs[0]


# -- StringStrip / StringLower / StringUpper ---------------------------------------------------------
_unary("StringStrip", lambda node, ctx: lambda x: map_strings(node, lambda s, i: s.strip(b" \t\n\v\f\r"), x))


def _case_kernel(method: str):
    def factory(node, ctx):
        if node.attr.get("encoding", "") == "":
            return lambda x: map_strings(node, lambda s, i: getattr(s, method)(), x)
        return lambda x: map_strings(node, lambda s, i: getattr(_decode(node, s, i), method)().encode("utf-8"), x)
    return factory


_unary("StringLower", _case_kernel("lower"))
_unary("StringUpper", _case_kernel("upper"))


@tf_export("strings.strip", "string_strip")
def strip(input, name=None):
    """tf.strings.strip(input, name=None): each string without leading and trailing whitespace."""
    return make_op("StringStrip", [as_string_tensor(input)], name=name or "StringStrip").outputs[0]


string_strip = strip


def _case(op_type: str, input, encoding: str, name):
    if encoding not in ("", "utf-8"):
        raise ValueError(f"encoding must be '' (ASCII) or 'utf-8', got {encoding!r}")
    t = as_string_tensor(input)
    return make_op(op_type, [t], {"encoding": encoding}, name=name or op_type).outputs[0]


@tf_export("strings.lower")
def lower(input, encoding="", name=None):
    """tf.strings.lower(input, encoding='', name=None): lower case (ASCII letters, or all of
    Unicode with encoding='utf-8')."""
    return _case("StringLower", input, encoding, name)


@tf_export("strings.upper")
def upper(input, encoding="", name=None):
    """tf.strings.upper(input, encoding='', name=None): upper case, as lower."""
    return _case("StringUpper", input, encoding, name)


# -- Substr --------------------------------------------------------------------------------------
def _substr_infer(op):
    x, pos, ln = op.inputs
    return [(dtypes.string, broadcast_shapes(broadcast_shapes(x.shape, pos.shape), ln.shape))]


def _substr_kernel(node, ctx):
    utf8 = node.attr.get("unit", "BYTE") == "UTF8_CHAR"

    def run(x, pos, ln):
        arr = string_array(x)
        try:
            arr, pos, ln = np.broadcast_arrays(arr, np.asarray(pos), np.asarray(ln))
        except ValueError:
            raise invalid(node, f"Incompatible shapes: input {list(np.shape(x))}, pos {list(np.shape(pos))}, "
                                f"len {list(np.shape(ln))}") from None
        out = []
        for i, (s, p, n) in enumerate(zip(arr.reshape(-1), pos.reshape(-1), ln.reshape(-1))):
            s = bytes(s)
            text = _decode(node, s, i) if utf8 else s
            size, p, n = len(text), int(p), int(n)
            if abs(p) > size:
                raise invalid(node, f"pos {p} out of range for string b'{s.decode('utf-8', 'replace')}' at index {i}")
            if p < 0:
                p += size
            piece = text[p:p + max(n, 0)]
            out.append(piece.encode("utf-8") if utf8 else piece)
        return string_result(out, arr.shape)
    return run


register("Substr", _substr_infer, _substr_kernel, grad=None,
         dtypes={0: ("input", (dtypes.string,)), 1: ("pos", INDEX), 2: ("len", INDEX)})


@tf_export("strings.substr", "substr")
def substr(input, pos, len, name=None, unit="BYTE"):
    """tf.substr(input, pos, len, name=None, unit='BYTE'): the `len` bytes (or UTF-8 characters)
    of each string from `pos` (negative counts from the end); pos and len broadcast."""
    t = as_string_tensor(input)
    p = convert_to_tensor(pos)
    n = convert_to_tensor(len, dtype=p.dtype)
    return make_op("Substr", [t, p, n], {"unit": _check_unit(unit)}, name=name or "Substr").outputs[0]


# -- RegexReplace / RegexFullMatch ---------------------------------------------------------------
def _compile(node, pattern) -> re.Pattern:
    pat = bytes(string_array(pattern)[()])
    try:
        return re.compile(pat)
    except re.error as e:
        raise invalid(node, f"Invalid pattern: {pat.decode('utf-8', 'replace')}, error: {e}") from None


def _expander(rewrite: bytes):
    """RE2's rewrite string (\\0-\\9 groups, \\\\ a backslash) as a function of a match."""
    parts: list = []
    i = 0
    while i < len(rewrite):
        c = rewrite[i:i + 1]
        if c == b"\\" and i + 1 < len(rewrite):
            nxt = rewrite[i + 1:i + 2]
            parts.append(int(nxt) if nxt.isdigit() else nxt)
            i += 2
        else:
            parts.append(c)
            i += 1
    return lambda m: b"".join(m.group(p) or b"" if isinstance(p, int) else p for p in parts)


def _replace_kernel(node, ctx):
    count = 0 if node.attr["replace_global"] else 1

    def run(x, pattern, rewrite):
        regex = _compile(node, pattern)
        expand = _expander(bytes(string_array(rewrite)[()]))
        return map_strings(node, lambda s, i: regex.sub(expand, s, count=count), x)
    return run


register("RegexReplace", lambda op: [(dtypes.string, op.inputs[0].shape)], _replace_kernel, grad=None,
         dtypes=(dtypes.string,), dtype_param="input")


@tf_export("strings.regex_replace", "regex_replace")
def regex_replace(input, pattern, rewrite, replace_global=True, name=None):
    """tf.regex_replace(input, pattern, rewrite, replace_global=True, name=None): replaces the
    matches of `pattern` (all, or the first) with `rewrite` (\\1 names a group, \\0 the match)."""
    ts = [as_string_tensor(v) for v in (input, pattern, rewrite)]
    return make_op("RegexReplace", ts, {"replace_global": bool(replace_global)}, name=name or "RegexReplace").outputs[0]


def _full_match_kernel(node, ctx):
    def run(x, pattern):
        regex = _compile(node, pattern)
        return map_strings(node, lambda s, i: regex.fullmatch(s) is not None, x, np.bool_)
    return run


register("RegexFullMatch", lambda op: [(dtypes.bool, op.inputs[0].shape)], _full_match_kernel, grad=None,
         dtypes=(dtypes.string,), dtype_param="input")


def _static_full_match_kernel(node, ctx):
    """StaticRegexFullMatch (the pattern an attribute, compiled once), in the Saver graphs TF 1 wrote."""
    pattern = node.attr["pattern"]
    regex = _compile(node, pattern.encode() if isinstance(pattern, str) else pattern)
    return lambda x: map_strings(node, lambda s, i: regex.fullmatch(s) is not None, x, np.bool_)


register("StaticRegexFullMatch", lambda op: [(dtypes.bool, op.inputs[0].shape)], _static_full_match_kernel,
         grad=None, dtypes=(dtypes.string,), dtype_param="input")


@tf_export("strings.regex_full_match")
def regex_full_match(input, pattern, name=None):
    """tf.strings.regex_full_match(input, pattern, name=None): whether each whole string matches.
    A Python string pattern is compiled once, into the op (TF's StaticRegexFullMatch, which
    TF's sharded Saver builds); a tensor pattern is read at every run (RegexFullMatch)."""
    if isinstance(pattern, (str, bytes)):
        pattern = pattern.decode() if isinstance(pattern, bytes) else pattern
        return make_op("StaticRegexFullMatch", [as_string_tensor(input)], {"pattern": pattern},
                       name=name or "StaticRegexFullMatch").outputs[0]
    ts = [as_string_tensor(v) for v in (input, pattern)]
    return make_op("RegexFullMatch", ts, name=name or "RegexFullMatch").outputs[0]
