"""Strings from and to other values: tf.as_string (printf formatting, as TF's), web-safe base64
(tf.encode_base64 / decode_base64) and tf.strings.format (tf.print's formatting of tensors)."""
from __future__ import annotations

import base64
import binascii

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.debugging.printing import summarize_value_v2
from tensorweave.ops.helpers import BOOL, COMPLEX, FLOATS, INTS, as_string_tensor, invalid, make_op, string_result
from tensorweave.ops.registry import register
from tensorweave.ops.strings.transform import map_strings


# -- AsString ------------------------------------------------------------------------------------
def _format_spec(node, dt: dtypes.DType) -> str:
    precision, scientific, shortest = node.attr["precision"], node.attr["scientific"], node.attr["shortest"]
    width, fill = node.attr["width"], node.attr["fill"]
    spec = "%"
    if fill:
        spec += fill
    if width > -1:
        spec += str(width)
    if precision > -1:
        spec += f".{precision}"
    if dt.is_integer:
        return spec + "d"
    return spec + ("g" if shortest else "e" if scientific else "f")


def _as_string_kernel(node, ctx):
    dt = dtypes.as_dtype(node.attr["T"])
    spec = _format_spec(node, dt)
    if dt.is_bool:
        def fmt(v):
            return b"true" if v else b"false"
    elif dt.is_complex:
        def fmt(v):
            return f"({spec % v.real},{spec % v.imag})".encode()
    elif dt.is_integer:
        def fmt(v):
            return (spec % int(v)).encode()
    else:
        def fmt(v):
            return (spec % float(v)).encode()

    def run(x):
        arr = np.asarray(x)
        return string_result([fmt(v) for v in arr.reshape(-1)], arr.shape)
    return run


register("AsString", lambda op: [(dtypes.string, op.inputs[0].shape)], _as_string_kernel, grad=None,
         dtypes=FLOATS + INTS + COMPLEX + BOOL, dtype_param="input")


@tf_export("strings.as_string", "dtypes.as_string", "as_string")
def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="", name=None):
    """tf.as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill='',
    name=None): each number formatted as printf does ('%f' / '%e' / '%g' / '%d', with `width`
    padded by `fill`, one of ' ', '0', '-', '+', '#'); bools as 'true' / 'false'."""
    if fill and (len(fill) > 1 or fill not in " +-0#"):
        raise ValueError(f"Fill argument not supported: \"{fill}\"")
    if scientific and shortest:
        raise ValueError("Cannot select both scientific and shortest notation")
    t = convert_to_tensor(input)
    if precision > -1 and t.dtype.is_integer:
        raise ValueError("Cannot select precision for an integer input")
    attrs = {"T": t.dtype, "precision": int(precision), "scientific": bool(scientific), "shortest": bool(shortest),
             "width": int(width), "fill": fill}
    return make_op("AsString", [t], attrs, name=name or "AsString").outputs[0]


# -- EncodeBase64 / DecodeBase64 -----------------------------------------------------------------
def _encode_kernel(node, ctx):
    pad = node.attr["pad"]

    def one(s: bytes, i: int) -> bytes:
        out = base64.urlsafe_b64encode(s)
        return out if pad else out.rstrip(b"=")
    return lambda x: map_strings(node, one, x)


def _decode_kernel(node, ctx):
    def one(s: bytes, i: int) -> bytes:
        try:
            if s.rstrip(b"=") != s and len(s) % 4:
                raise ValueError("bad padding")
            return base64.urlsafe_b64decode(s.rstrip(b"=") + b"=" * (-len(s.rstrip(b"=")) % 4))
        except (binascii.Error, ValueError):
            raise invalid(node, f"Invalid character found in base64 (element {i}).") from None
    return lambda x: map_strings(node, one, x)


register("EncodeBase64", lambda op: [(dtypes.string, op.inputs[0].shape)], _encode_kernel, grad=None,
         dtypes=(dtypes.string,), dtype_param="input")
register("DecodeBase64", lambda op: [(dtypes.string, op.inputs[0].shape)], _decode_kernel, grad=None,
         dtypes=(dtypes.string,), dtype_param="input")


@tf_export("io.encode_base64", "encode_base64")
def encode_base64(input, pad=False, name=None):
    """tf.encode_base64(input, pad=False, name=None): web-safe base64 ('-' and '_'), '=' padding
    only with pad=True."""
    t = as_string_tensor(input)
    return make_op("EncodeBase64", [t], {"pad": bool(pad)}, name=name or "EncodeBase64").outputs[0]


@tf_export("io.decode_base64", "decode_base64")
def decode_base64(input, name=None):
    """tf.decode_base64(input, name=None): decodes web-safe base64, padded or not."""
    t = as_string_tensor(input)
    return make_op("DecodeBase64", [t], name=name or "DecodeBase64").outputs[0]


# -- StringFormat --------------------------------------------------------------------------------
def _format_kernel(node, ctx):
    template, placeholder, summarize = node.attr["template"], node.attr["placeholder"], node.attr["summarize"]
    pieces = template.split(placeholder)

    def run(*inputs):
        out = [pieces[0]]
        for value, piece in zip(inputs, pieces[1:]):
            out.append(summarize_value_v2(value, summarize))
            out.append(piece)
        return "".join(out).encode("utf-8")
    return run


register("StringFormat", lambda op: [(dtypes.string, TensorShape([]))], _format_kernel, grad=None)


@tf_export("strings.format")
def format(template, inputs, placeholder="{}", summarize=3, name=None):
    """tf.strings.format(template, inputs, placeholder='{}', summarize=3, name=None): a scalar
    string, `template` with each placeholder replaced by the next input formatted as tf.print
    does (`summarize` leading and trailing items per dimension)."""
    if not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    ts = [convert_to_tensor(v) for v in inputs]
    if template.count(placeholder) != len(ts):
        raise ValueError(f"{template.count(placeholder)} placeholder(s) in template does not match {len(ts)} "
                         "tensor(s) provided as input")
    attrs = {"template": template, "placeholder": placeholder, "summarize": int(summarize)}
    return make_op("StringFormat", ts, attrs, name=name or "StringFormat").outputs[0]
