"""tf.Print, tf.print and tf.Assert, with TF's value formatting (Tensor::SummarizeValue), and tf.timestamp."""
from __future__ import annotations

import logging
import pprint
import sys
import threading
import time

import numpy as np

from tensorweave.framework import dtypes, errors, nest
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor, is_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import TFNodes, same_as_input
from tensorweave.ops.registry import register


_builtin_print = print


# -- formatting ---------------------------------------------------------------------------------
def _format_element(v, v2: bool) -> str:
    if isinstance(v, (bytes, np.bytes_)):
        s = bytes(v).decode("utf-8", "backslashreplace")
        return f'"{s}"' if v2 else s
    if isinstance(v, str):
        return f'"{v}"' if v2 else v
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, np.floating) or isinstance(v, float):
        # C++ StrCat: shortest of %.6g / %.9g (float) or %.15g / %.17g (double) that round-trips.
        short, long_ = (6, 9) if isinstance(v, (np.float32, np.float16)) else (15, 17)
        s = "%.*g" % (short, v)
        if not np.isnan(v) and type(v)(float(s)) != v:
            s = "%.*g" % (long_, v)
        return s
    if isinstance(v, (np.complexfloating, complex)):
        return f"({_format_element(v.real, v2)},{_format_element(v.imag, v2)})"
    return str(v)


def summarize_value(value, summarize: int = 3) -> str:
    """TF1's Tensor::SummarizeValue (as tf.Print and tf.Assert show a tensor): the first
    `summarize` elements (all if negative) in nested brackets, "..." when truncated."""
    arr = np.asarray(value)
    flat = arr.reshape(-1)
    n = flat.size
    limit = n if summarize is None or summarize < 0 else min(summarize, n)
    if arr.ndim == 0:
        return " ".join(_format_element(flat[i], False) for i in range(limit)) + ("..." if n > limit else "")
    shape = arr.shape
    out: list = []
    pos = [0]

    def dim(d: int) -> None:
        if pos[0] >= limit:
            return
        count = shape[d]
        if d == len(shape) - 1:
            for i in range(count):
                if pos[0] >= limit:
                    if d != 0 and i < count:
                        out.append("...")
                    return
                if i > 0:
                    out.append(" ")
                out.append(_format_element(flat[pos[0]], False))
                pos[0] += 1
            return
        for _ in range(count):
            opened = pos[0] < limit
            if opened:
                out.append("[")
            dim(d + 1)
            if pos[0] < limit or opened:
                out.append("]")

    dim(0)
    return "".join(out) + ("..." if n > limit else "")


def summarize_value_v2(value, summarize: int = 3) -> str:
    """tf.print's numpy-like formatting: `summarize` leading and trailing items per dimension."""
    arr = np.asarray(value)
    if arr.ndim == 0:
        return _format_element(arr[()], True)
    edge = arr.size if summarize is None or summarize < 0 else summarize
    nd = arr.ndim
    out: list = []

    def spacing(d: int) -> None:
        if d == nd - 1:
            out.append(" ")
        else:
            out.append("\n" * (nd - d - 1) + " " * (d + 1))

    def dim(d: int, sub) -> None:
        if d == nd:
            out.append(_format_element(sub[()], True))
            return
        out.append("[")
        count = sub.shape[0]
        for i in range(min(edge, count)):
            if i > 0:
                spacing(d)
            dim(d + 1, sub[i])
        if count > 2 * edge:
            spacing(d)
            out.append("...")
        for i in range(max(edge, count - edge), count):
            spacing(d)
            dim(d + 1, sub[i])
        out.append("]")

    dim(0, arr)
    return "".join(out)


def _stream(name: str):
    return sys.stdout if name == "stdout" else sys.stderr


# -- Print (TF1) ----------------------------------------------------------------------------------
@tf_export("Print")
def Print(input_, data, message=None, first_n=None, summarize=None, name=None):
    """tf.Print(input_, data, message=None, first_n=None, summarize=None, name=None): an identity
    of `input_` that, when run, prints `message` followed by each tensor of `data` as "[...]" to
    stderr (at most `first_n` times; `summarize` elements per tensor, default 3)."""
    input_ = convert_to_tensor(input_)
    data = [convert_to_tensor(d) for d in data]
    attrs = {"message": message or "", "first_n": -1 if first_n is None else int(first_n),
             "summarize": 3 if summarize is None else int(summarize)}
    return get_default_graph().create_op("Print", [input_] + data, attrs, name=name or "Print").outputs[0]


def _print_kernel(node, ctx):
    message, first_n, summarize = node.attr["message"], node.attr["first_n"], node.attr["summarize"]
    lock = threading.Lock()
    count = [0]

    def run(x, *data):
        if first_n >= 0:
            with lock:
                if count[0] >= first_n:
                    return x
                count[0] += 1
        text = message + "".join(f"[{summarize_value(d, summarize)}]" for d in data)
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
        return x
    return run


register("Print", same_as_input(), _print_kernel,
         grad=lambda op, g: [g] + [None] * (len(op.inputs) - 1), stateful=True)


# -- print (TF2 style) ----------------------------------------------------------------------------
_STREAMS = {"stderr", "stdout", "log(info)", "log(warning)", "log(error)"}


@tf_export("print")
def print(*inputs, **kwargs):
    """tf.print(*inputs, output_stream=sys.stderr, summarize=3, sep=' ', end='\\n', name=None):
    an op that prints its inputs (tensors and Python values, possibly nested) when run."""
    output_stream = kwargs.pop("output_stream", sys.stderr)
    summarize = kwargs.pop("summarize", 3)
    sep = kwargs.pop("sep", " ")
    end = kwargs.pop("end", "\n")
    name = kwargs.pop("name", None)
    if kwargs:
        raise ValueError(f"Unrecognized keyword arguments for tf.print: {sorted(kwargs)}")
    if output_stream is sys.stdout:
        stream = "stdout"
    elif output_stream is sys.stderr:
        stream = "stderr"
    elif isinstance(output_stream, str) and output_stream in _STREAMS:
        stream = output_stream
    else:
        # logging.info/warning/error, or tf.logging's (tf.compat.v1.logging.info, ...: a module
        # above this layer, known by name)
        level = getattr(output_stream, "__name__", None)
        if getattr(output_stream, "__module__", None) not in ("logging", "tensorweave.logging") \
                or level not in ("info", "warning", "error"):
            raise ValueError(f"Unsupported output stream, logging level, or file: {output_stream}. "
                             "Supported streams are sys.stdout, sys.stderr and logging levels.")
        stream = f"log({level})"
    placeholder = "{}"
    tensors: list = []
    if len(inputs) == 1 and is_tensor(inputs[0]) and inputs[0].dtype == dtypes.string \
            and inputs[0].shape.ndims == 0:
        template = placeholder
        tensors.append(inputs[0])
        raw_single = True
    else:
        raw_single = False
        marker = "\x00TW_PLACEHOLDER\x00"
        templates = []
        for inp in inputs:
            if isinstance(inp, str):
                templates.append(_escaped(inp))
                continue
            parts = []
            for x in nest.flatten(inp):
                if is_tensor(x) or hasattr(x, "_as_graph_element"):
                    tensors.append(convert_to_tensor(x))
                    parts.append(marker)
                else:
                    parts.append(x)
            text = pprint.pformat(nest.pack_sequence_as(inp, parts)) if nest.is_sequence(inp) else (
                marker if parts[0] is marker else str(parts[0]))
            templates.append(_escaped(text).replace(repr(marker), placeholder).replace(marker, placeholder))
        template = sep.join(templates)
    attrs = {"template": template, "summarize": int(summarize), "output_stream": stream, "end": end,
             "raw_single": raw_single}
    return get_default_graph().create_op("PrintV2", tensors, attrs, name=name or "PrintV2")


def _escaped(text: str) -> str:
    """Text as it stands in a PrintV2 template: braces doubled, "{}" marking a tensor."""
    return text.replace("{", "{{").replace("}", "}}")


def template_pieces(template: str) -> list:
    """A PrintV2 template's text between its "{}" (one more than the tensors), braces undoubled."""
    pieces, text, i = [], [], 0
    while i < len(template):
        two = template[i:i + 2]
        if two in ("{{", "}}"):
            text.append(two[0])
        elif two == "{}":
            pieces.append("".join(text))
            text = []
        else:
            text.append(template[i])
            i += 1
            continue
        i += 2
    return pieces + ["".join(text)]


# TF's documented output streams, and where each goes: nothing else (a graph from the wire
# names one of these or is refused, never an arbitrary logger method).
_LOG_LEVELS = {"log(info)": logging.INFO, "log(warning)": logging.WARNING, "log(error)": logging.ERROR}


def _print_v2_kernel(node, ctx):
    # TF's PrintV2 (a GraphDef's, or ours as Graph.as_graph_def writes it) prints one string input
    template, summarize = node.attr.get("template", "{}"), node.attr.get("summarize", 3)
    stream, end = node.attr["output_stream"], node.attr["end"]
    raw_single = node.attr.get("raw_single", "template" not in node.attr)
    if not isinstance(stream, str) or stream not in _STREAMS:
        raise errors.InvalidArgumentError(
            node, node.name, f"{node.name} (PrintV2): output_stream {stream!r} is not one of the supported "
                             f"streams: {', '.join(sorted(_STREAMS))}")
    pieces = template_pieces(template)

    def run(*values):
        if raw_single:
            v = np.asarray(values[0])[()]
            text = v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else str(v)
        else:
            out = [pieces[0]]
            for v, rest in zip(values, pieces[1:]):
                out.append(summarize_value_v2(v, summarize))
                out.append(rest)
            text = "".join(out)
        level = _LOG_LEVELS.get(stream)
        if level is not None:
            logging.getLogger("tensorflow").log(level, text)
            return None
        f = _stream(stream)
        f.write(text + end)
        f.flush()
        return None
    return run


def _print_v2_tf(op) -> list:
    """TF's tf.print: StringFormat of the tensors (the template's text with a placeholder it does
    not hold, as TF's print_v2 picks one), then TF's PrintV2 of that one string."""
    b = TFNodes(op)
    stream = {"output_stream": op.get_attr("output_stream"), "end": op.get_attr("end")}
    if op.get_attr("raw_single"):
        b.node(None, "PrintV2", [b.input(0)], **stream)
        return b.nodes
    pieces = template_pieces(op.get_attr("template"))
    placeholder = "{}"
    while any(placeholder in p for p in pieces):
        placeholder = "{" + placeholder + "}"
    text = b.node("format", "StringFormat", [b.input(i) for i in range(len(op.inputs))],
                  T=[t.dtype for t in op.inputs], template=placeholder.join(pieces), placeholder=placeholder,
                  summarize=op.get_attr("summarize"))
    b.node(None, "PrintV2", [text], **stream)
    return b.nodes


# TF's PrintV2 takes one string (StringFormat's); ours formats its tensors itself, in one kernel
register("PrintV2", lambda op: [], _print_v2_kernel, grad=None, stateful=True, tf_lowering=_print_v2_tf)


# -- Assert ---------------------------------------------------------------------------------------
@tf_export("debugging.Assert", "Assert")
def Assert(condition, data, summarize=None, name=None):
    """tf.Assert(condition, data, summarize=None, name=None): an op that, when run, raises
    InvalidArgumentError "assertion failed: [d0] [d1] ..." if the scalar bool `condition` is
    false (each tensor of `data` shown with `summarize` elements, default 3)."""
    g = get_default_graph()
    with g.name_scope(name or "Assert") as scope:
        condition = convert_to_tensor(condition, name="Condition")
        if condition.dtype != dtypes.bool:
            raise TypeError(f"Input 'condition' of 'Assert' Op has type {condition.dtype.name} that does not "
                            f"match expected type of bool (in '{scope[:-1]}').")
        if condition.shape.ndims not in (None, 0):
            raise ValueError(f"Shape must be rank 0 but is rank {condition.shape.ndims} for '{scope}Assert' "
                             f"(op: 'Assert') with input shapes: {condition.shape}.")
        data = [convert_to_tensor(d) for d in data]
        return g.create_op("Assert", [condition] + data, {"summarize": 3 if summarize is None else int(summarize)},
                           name="Assert")


def _assert_kernel(node, ctx):
    summarize = node.attr["summarize"]

    def run(cond, *data):
        if np.ndim(cond) != 0:
            raise errors.InvalidArgumentError(node, node.name,
                                              f"In[0] should be a scalar: {list(np.shape(cond))}")
        if bool(cond):
            return None
        shown = " ".join(f"[{summarize_value(d, summarize)}]" for d in data)
        raise errors.InvalidArgumentError(node, node.name, f"assertion failed: {shown}")
    return run


register("Assert", lambda op: [], _assert_kernel, grad=None, stateful=True)


# -- Timestamp ---------------------------------------------------------------------------------------
register("Timestamp", lambda op: [(dtypes.float64, TensorShape([]))], lambda node, ctx: lambda: np.float64(time.time()),
         grad=None, stateful=True)


@tf_export("timestamp")
def timestamp(name=None):
    """tf.timestamp(name=None): the time the op runs, in seconds since the epoch (float64); a
    new value at every run (the op is stateful, never folded or cached)."""
    return get_default_graph().create_op("Timestamp", [], {}, name=name or "Timestamp").outputs[0]
