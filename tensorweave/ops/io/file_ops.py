"""Whole files as string tensors: tf.read_file, tf.write_file, tf.matching_files."""
from __future__ import annotations

import os

from tensorweave.framework import dtypes
from tensorweave.framework.api import GraphKeys, name_scope
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import TFNodes, as_string_tensor, invalid, make_op, string_array, string_result
from tensorweave.ops.io.gfile import Glob, as_path, os_error
from tensorweave.ops.registry import register
from tensorweave.ops.state.variables import Variable


def _scalar_path(node, x) -> str:
    arr = string_array(x)
    if arr.ndim != 0:
        raise invalid(node, f"Input filename tensor must be scalar, but had shape: {list(arr.shape)}")
    return as_path(arr[()])


def _read_kernel(node, ctx):
    def run(filename):
        path = _scalar_path(node, filename)
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as e:
            raise os_error(e, path, node, node.name) from None
    return run


register("ReadFile", lambda op: [(dtypes.string, TensorShape([]))], _read_kernel, grad=None, stateful=True,
         dtypes=(dtypes.string,), dtype_param="filename")


@tf_export("io.read_file", "read_file")
def read_file(filename, name=None):
    """tf.read_file(filename, name=None): the whole contents of the file named by a scalar string."""
    t = as_string_tensor(filename)
    return make_op("ReadFile", [t], name=name or "ReadFile").outputs[0]


def _write_kernel(node, ctx):
    def run(filename, contents):
        path = _scalar_path(node, filename)
        data = string_array(contents)
        if data.ndim != 0:
            raise invalid(node, f"Contents tensor must be scalar, but had shape: {list(data.shape)}")
        tmp = f"{path}.tmp{os.getpid()}"
        try:
            parent = os.path.dirname(path)
            if parent:
                os.makedirs(parent, exist_ok=True)
            with open(tmp, "wb") as f:   # written whole, then renamed: never half a file
                f.write(bytes(data[()]))
            os.replace(tmp, path)
        except OSError as e:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise os_error(e, path, node, node.name) from None
    return run


register("WriteFile", lambda op: [], _write_kernel, grad=None, stateful=True,
         dtypes={0: ("filename", (dtypes.string,)), 1: ("contents", (dtypes.string,))})


@tf_export("io.write_file", "write_file")
def write_file(filename, contents, name=None):
    """tf.write_file(filename, contents, name=None): writes scalar string `contents` to the file
    (creating its directory); returns the op."""
    f = as_string_tensor(filename)
    c = as_string_tensor(contents)
    return make_op("WriteFile", [f, c], name=name or "WriteFile")


def _matching_kernel(node, ctx):
    def run(pattern):
        arr = string_array(pattern)
        if arr.ndim > 1:
            raise invalid(node, f"Input patterns tensor must be scalar or vector, but had shape: {list(arr.shape)}")
        names = sorted({p for pat in arr.reshape(-1) for p in Glob(pat)})
        return string_result([n.encode() for n in names], (len(names),))
    return run


register("MatchingFiles", lambda op: [(dtypes.string, TensorShape([None]))], _matching_kernel, grad=None,
         stateful=True, dtypes=(dtypes.string,), dtype_param="pattern")


@tf_export("io.matching_files", "matching_files")
def matching_files(pattern, name=None):
    """tf.matching_files(pattern, name=None): the sorted file names matching a glob pattern (or
    a vector of them)."""
    t = as_string_tensor(pattern)
    return make_op("MatchingFiles", [t], name=name or "MatchingFiles").outputs[0]


def _nonempty_kernel(node, ctx):
    match = _matching_kernel(node, ctx)

    def run(pattern):
        names = match(pattern)
        if not len(names):
            shown = [bytes(p).decode("utf-8", "replace") for p in string_array(pattern).reshape(-1)]
            raise invalid(node, f"No files matched pattern: {', '.join(shown)}")
        return names
    return run


def _nonempty_tf(op) -> list:
    """TF's Dataset.list_files: MatchingFiles, then an Identity after an Assert that some matched."""
    b, int32, string = TFNodes(op), dtypes.int32, dtypes.string
    files = b.node("files", "MatchingFiles", [b.input(0)])
    count = b.node("count", "Size", [files], T=string, out_type=int32)
    matched = b.node("match_not_empty", "Greater", [count, b.const("zero", 0, int32)], T=int32)
    rank = b.node("rank", "Rank", [b.input(0)], T=string)
    axes = b.node("pattern_axes", "Range", [b.const("first_axis", 0, int32), rank, b.const("one", 1, int32)],
                  Tidx=int32)
    patterns = b.node("patterns", "ReduceJoin", [b.input(0), axes], separator=", ")
    prefix = b.const("no_match", "No files matched pattern: ", string)
    message = b.node("message", "StringJoin", [prefix, patterns], N=2)
    checked = b.node("assert_not_empty", "Assert", [matched, message], T=[string], summarize=1)
    b.node(None, "Identity", [files, "^" + checked], T=string)
    return b.nodes


# list_files' source: MatchingFiles that fails when nothing matches
register("NonEmptyMatchingFiles", lambda op: [(dtypes.string, TensorShape([None]))], _nonempty_kernel, grad=None,
         stateful=True, dtypes=(dtypes.string,), dtype_param="pattern", tf_lowering=_nonempty_tf)


@tf_export("io.match_filenames_once", "train.match_filenames_once")
def match_filenames_once(pattern, name=None):
    """tf.train.match_filenames_once(pattern, name=None): a local variable holding the file names
    that matched `pattern` (a glob, or a vector of them) when local variables were initialized."""
    with name_scope(name, "matching_filenames", [pattern]) as scope:
        return Variable(matching_files(pattern), trainable=False, validate_shape=False, name=scope.rstrip("/"),
                        collections=[GraphKeys.LOCAL_VARIABLES])
