"""`tensorweave saved_model show` and `run`: TF's saved_model_cli, with its output text.

    tensorweave saved_model show --dir D                       # the tag-sets
    tensorweave saved_model show --dir D --tag_set serve       # the signature keys
    tensorweave saved_model show --dir D --tag_set serve --signature_def S   # one signature's tensors
    tensorweave saved_model show --dir D --all                 # every signature of every MetaGraph, and its ops
    tensorweave saved_model run --dir D --tag_set serve --signature_def S \\
        --inputs 'x=in.npy;y=in.npz[key]' --input_exprs 'z=np.ones((2,3))' --input_examples 'e=[{"f": [1.0]}]' \\
        [--outdir O [--overwrite]]

--inputs reads .npy and .npz files (never pickles). --input_exprs is never evaluated as Python:
each expression is parsed (`ast`) and may hold literals, + - * / between them, and calls of an
allow-list of numpy constructors (np.ones, np.zeros, np.full, np.arange, np.array, np.eye,
np.random.rand, ...) with numpy dtypes; --input_examples also dictionaries. Anything else is an
error naming what is not allowed.
"""
from __future__ import annotations

import ast
import logging
import os
import re
import sys

import numpy as np

from tensorweave.client.session import Session
from tensorweave.framework.graph import Graph
from tensorweave.framework.tf_protos import types_pb2
from tensorweave.ops.io.example_proto import Example
from tensorweave.saved_model import loader
from tensorweave.serving.servable import get_meta_graph_def, tag_set

_log = logging.getLogger("tensorweave")

# numpy functions an --input_exprs expression may call, by their name under `np.`
_NUMPY_CALLS = {name: getattr(np, name) for name in (
    "array", "asarray", "ones", "zeros", "full", "empty", "arange", "linspace", "eye", "identity",
    "ones_like", "zeros_like", "full_like", "reshape", "stack", "concatenate", "tile")}
_NUMPY_CALLS.update({"random." + name: getattr(np.random, name) for name in (
    "rand", "randn", "randint", "random", "uniform", "normal", "seed")})
_NUMPY_DTYPES = {name: getattr(np, name) for name in (
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "bool_", "object_", "bytes_", "str_", "complex64", "complex128")}
_ARITHMETIC = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.true_divide}


# -- show ------------------------------------------------------------------------------------------
def _tensor_info_lines(info, indent: int) -> list:
    pad = "  " * indent
    if info.tensor_shape.unknown_rank:
        shape = "unknown_rank"
    else:
        shape = "(" + ", ".join(str(d.size) for d in info.tensor_shape.dim) + ")"
    return [f"{pad}    dtype: {types_pb2.DataType.Name(info.dtype)}", f"{pad}    shape: {shape}",
            f"{pad}    name: {info.name}"]


def _signature(meta_graph, key: str):
    if key not in meta_graph.signature_def:
        raise ValueError(f'Could not find signature "{key}". Please choose from: '
                         f'{", ".join(meta_graph.signature_def.keys())}')
    return meta_graph.signature_def[key]


def signature_lines(meta_graph, key: str, indent: int = 0) -> list:
    """One signature's inputs, outputs and method, as saved_model_cli prints them."""
    sig = _signature(meta_graph, key)
    pad = "  " * indent
    lines = [f"{pad}The given SavedModel SignatureDef contains the following input(s):"]
    for k, info in sorted(sig.inputs.items()):
        lines += [f"{pad}  inputs['{k}'] tensor_info:"] + _tensor_info_lines(info, indent + 1)
    lines.append(f"{pad}The given SavedModel SignatureDef contains the following output(s):")
    for k, info in sorted(sig.outputs.items()):
        lines += [f"{pad}  outputs['{k}'] tensor_info:"] + _tensor_info_lines(info, indent + 1)
    lines.append(f"{pad}Method name is: {sig.method_name}")
    return lines


def ops_line(meta_graph) -> str:
    """The op types of a MetaGraph's graph and functions (TF prints them as a Python set, in hash
    order; here sorted)."""
    ops = {n.op for n in meta_graph.graph_def.node}
    for f in meta_graph.graph_def.library.function:
        ops.update(n.op for n in f.node_def)
    return (f"The MetaGraph with tag set {list(meta_graph.meta_info_def.tags)} contains the following ops: "
            + "{" + ", ".join(repr(o) for o in sorted(ops)) + "}")


def show(export_dir: str, tags=None, signature_key=None, show_all: bool = False, list_ops: bool = False) -> str:
    """What `saved_model_cli show` prints for these arguments."""
    saved_model = loader.parse_saved_model(export_dir)
    lines: list = []
    if show_all:
        for meta_graph in sorted(saved_model.meta_graphs, key=lambda m: list(m.meta_info_def.tags)):
            lines += ["", f"MetaGraphDef with tag-set: '{', '.join(meta_graph.meta_info_def.tags)}' contains the "
                          "following SignatureDefs:"]
            for key in sorted(meta_graph.signature_def):
                lines += ["", f"signature_def['{key}']:"] + signature_lines(meta_graph, key, indent=1)
            lines.append(ops_line(meta_graph))
    elif tags is None:
        if list_ops:
            lines.append("--list_ops must be paired with a tag-set or with --all.")
        lines.append("The given SavedModel contains the following tag-sets:")
        lines += [repr(", ".join(sorted(t))) for t in sorted(sorted(m.meta_info_def.tags)
                                                              for m in saved_model.meta_graphs)]
    else:
        meta_graph = get_meta_graph_def(saved_model, _tags_arg(tags))
        if list_ops:
            lines.append(ops_line(meta_graph))
        if signature_key is None:
            lines.append("The given SavedModel MetaGraphDef contains SignatureDefs with the following keys:")
            lines += [f'SignatureDef key: "{k}"' for k in sorted(meta_graph.signature_def)]
        else:
            lines += signature_lines(meta_graph, signature_key)
    return "\n".join(lines) + "\n"


def _tags_arg(tags: str) -> str:
    if not tag_set(tags):
        raise ValueError("tag_set must contain at least one non-empty item.")
    return ",".join(t.strip() for t in tags.split(",") if t.strip())


# -- run: inputs -----------------------------------------------------------------------------------
def _split(arg: str, option: str) -> list:
    """'k1=v1;k2=v2' as [(k1, v1), (k2, v2)]."""
    out = []
    for item in filter(None, (arg or "").split(";")):
        if "=" not in item:
            raise RuntimeError(f'--{option} "{arg}" format is incorrect. Please follow"<input_key>=<value>"')
        key, value = item.split("=", 1)
        out.append((key, value))
    return out


def load_input_files(arg: str) -> dict:
    """--inputs 'key=file.npy;key2=file.npz[name]': {key: array}, as saved_model_cli reads them
    (an .npz without [name] must hold one array), with numpy's loader and no pickles."""
    out = {}
    for key, spec in _split(arg, "inputs"):
        m = re.match(r"([^\[\]]+)\[([^\[\]]+)\]$", spec) or re.match(r"([^\[\]]+)$", spec)
        if not m:
            raise RuntimeError(f'--inputs "{key}={spec}" format is incorrect. Please follow"<input_key>=<filename>", '
                               'or"<input_key>=<filename>[<variable_name>]"')
        filename, name = m.group(1), (m.group(2) if m.lastindex == 2 else None)
        data = np.load(filename, allow_pickle=False)
        if isinstance(data, np.ndarray):
            if name:
                _log.warning('Input file %s contains a single ndarray. Name key "%s" ignored.', filename, name)
            out[key] = data
            continue
        with data:
            if name:
                if name not in data.files:
                    raise RuntimeError(f'Input file {filename} does not contain variable with name "{name}".')
                out[key] = data[name]
            elif len(data.files) != 1:
                raise RuntimeError(f"Input file {filename} contains more than one ndarrays. Please specify the name "
                                   "of ndarray to use.")
            else:
                out[key] = data[data.files[0]]
    return out


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _numpy_name(node) -> str:
    """'ones' for np.ones / numpy.ones, 'random.rand' for np.random.rand; '' for anything else."""
    name = _dotted(node)
    for prefix in ("np.", "numpy."):
        if name.startswith(prefix):
            return name[len(prefix):]
    return ""


def _evaluate(node, expr: str):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex, str, bytes, bool, type(None))):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_evaluate(e, expr) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Dict) and None not in node.keys:   # --input_examples' {"feature": [values]}
        return {_evaluate(k, expr): _evaluate(v, expr) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _evaluate(node.operand, expr)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        return _ARITHMETIC[type(node.op)](_evaluate(node.left, expr), _evaluate(node.right, expr))
    if isinstance(node, ast.Attribute) and _numpy_name(node) in _NUMPY_DTYPES:
        return _NUMPY_DTYPES[_numpy_name(node)]
    if isinstance(node, ast.Call) and _numpy_name(node.func) in _NUMPY_CALLS:
        args = [_evaluate(a, expr) for a in node.args]
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                raise ValueError(f'--input_exprs "{expr}": ** arguments are not allowed')
            kwargs[k.arg] = _evaluate(k.value, expr)
        return _NUMPY_CALLS[_numpy_name(node.func)](*args, **kwargs)
    what = ast.get_source_segment(expr, node) or type(node).__name__
    raise ValueError(f'--input_exprs "{expr}": "{what}" is not allowed: an expression holds literals, + - * / and '
                     f"calls of np.{', np.'.join(sorted(_NUMPY_CALLS))} (it is parsed, never evaluated as Python)")


def evaluate_expression(expr: str):
    """An --input_exprs expression's value: literals, arithmetic and allow-listed numpy calls."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as e:
        raise ValueError(f'--input_exprs "{expr}" is not a valid expression: {e.msg}') from None
    return _evaluate(tree.body, expr.strip())


def _example_bytes(features: dict) -> bytes:
    """A tf.Example from {name: [values]}, each list's kind taken from its first value (TF's
    saved_model_cli._create_example_string)."""
    example = Example()
    for name, values in features.items():
        if not isinstance(values, list):
            raise ValueError(f'feature value must be a list, but {name}: "{values}" is {type(values)}')
        feature = example.features.feature[name]
        first = values[0] if values else None
        if isinstance(first, float):
            feature.float_list.value.extend(values)
        elif isinstance(first, str):
            feature.bytes_list.value.extend(v.encode("utf-8") for v in values)
        elif isinstance(first, bytes):
            feature.bytes_list.value.extend(values)
        elif isinstance(first, int):
            feature.int64_list.value.extend(values)
        else:
            raise ValueError(f"Type {type(first)} for value {first} is not supported for tf.train.Feature.")
    return example.SerializeToString()


def load_inputs(inputs: str = "", input_exprs: str = "", input_examples: str = "") -> dict:
    """{input key: value} from the three options; a later option's value for the same key wins,
    as in saved_model_cli."""
    feeds = load_input_files(inputs)
    for key, expr in _split(input_exprs, "input_exprs"):
        if key in feeds:
            _log.warning("input_key %s has been specified with both --inputs and --input_exprs options. Value in "
                         "--input_exprs will be used.", key)
        feeds[key] = evaluate_expression(expr)
    for key, expr in _split(input_examples, "input_examples"):
        examples = evaluate_expression(expr)
        if not isinstance(examples, list):
            raise ValueError(f'tf.Example input must be a list of dictionaries, but "{examples}" is {type(examples)}')
        if key in feeds:
            _log.warning("input_key %s has been specified in multiple options. Value in --input_examples will be "
                         "used.", key)
        feeds[key] = [_example_bytes(e) for e in examples]
    return feeds


# -- run -------------------------------------------------------------------------------------------
def run(export_dir: str, tags: str, signature_key: str, feeds: dict, outdir=None, overwrite: bool = False,
        out=None) -> dict:
    """Runs a signature on `feeds` {input key: value}, printing each output as saved_model_cli
    does and saving it as outdir/<key>.npy; returns {output key: array}."""
    meta_graph = get_meta_graph_def(export_dir, _tags_arg(tags))
    sig = _signature(meta_graph, signature_key)
    for key in feeds:
        if key not in sig.inputs:
            choices = '", "'.join(sig.inputs.keys())
            raise ValueError(f'"{key}" is not a valid input key. Please choose from "{choices}", or use --show option.')
    keys = sorted(sig.outputs)
    out = out or sys.stdout
    with Session(graph=Graph()) as session:
        loader.load(session, tag_set(tags), export_dir)
        values = session.run([sig.outputs[k].name for k in keys], {sig.inputs[k].name: v for k, v in feeds.items()})
    results = {}
    for key, value in zip(keys, values):
        value = np.asarray(value)
        results[key] = value
        print(f"Result for output key {key}:\n{value}", file=out)
        if outdir:
            os.makedirs(outdir, exist_ok=True)
            path = os.path.join(outdir, key + ".npy")
            if not overwrite and os.path.exists(path):
                raise RuntimeError(f'Output file {path} already exists. Add "--overwrite" to overwrite the existing '
                                   "output files.")
            np.save(path, value)
            print(f"Output {key} is saved to {path}", file=out)
    return results
