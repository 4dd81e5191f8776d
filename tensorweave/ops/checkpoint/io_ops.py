"""The checkpoint ops: SaveV2, RestoreV2, MergeV2Checkpoints, ShardedFilename and ShardedFilespec
(TF's names and signatures). A sharded Saver names each shard's temporary checkpoint with
ShardedFilename, as TF 1.15's does, so TensorFlow imports its graph.

They run wherever they are placed: the Saver puts each shard's SaveV2 / RestoreV2 on the task
that holds its variables, so tensors are read and written where they live and only file names
cross tasks. Paths must be reachable from those tasks (a shared filesystem), as in TF.

SaveV2 writes our format (safetensors data files, a JSON index) unless the program that built it
ran with TENSORWEAVE_CHECKPOINT_FORMAT=tensorflow: then TensorFlow's own (a TensorBundle), which
TF's Saver restores. The choice is made once, when the op is built, and travels in its
`_checkpoint_format` attr, so every task of a sharded save writes the same format whatever its
own environment; RestoreV2 and MergeV2Checkpoints tell the format by the index file.
"""
from __future__ import annotations

import os

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.ops.checkpoint import bundle
from tensorweave.ops.checkpoint.bundle import merge_bundles, write_bundle
from tensorweave.ops.checkpoint.reader import SAFETENSORS, TENSORFLOW, CheckpointReader, checkpoint_format
from tensorweave.ops.checkpoint.tf_bundle import merge_tf_bundles, write_tf_bundle
from tensorweave.ops.helpers import invalid, make_op
from tensorweave.ops.registry import register


def _text(value) -> str:
    value = value.item() if isinstance(value, np.ndarray) else value
    return value.decode() if isinstance(value, bytes) else str(value)


def _texts(values) -> list:
    return [_text(v) for v in np.asarray(values, dtype=object).reshape(-1)]


def _strings(values, name: str):
    return convert_to_tensor(values, dtype=dtypes.string, name=name)


# -- SaveV2 ---------------------------------------------------------------------------------------
FORMAT_ENV = "TENSORWEAVE_CHECKPOINT_FORMAT"
_WRITERS = {SAFETENSORS: write_bundle, TENSORFLOW: write_tf_bundle}
_MERGERS = {SAFETENSORS: merge_bundles, TENSORFLOW: merge_tf_bundles}


def format_setting() -> str:
    """The format SaveV2 ops built now write: TENSORWEAVE_CHECKPOINT_FORMAT, `safetensors` (the
    default: data files anyone opens with the safetensors package) or `tensorflow` (TF's own
    TensorBundle, for checkpoints TensorFlow restores)."""
    setting = os.environ.get(FORMAT_ENV, "").strip().lower() or SAFETENSORS
    if setting not in _WRITERS:
        raise ValueError(f"{FORMAT_ENV}={setting!r}: expected one of {', '.join(_WRITERS)}")
    return setting


def save_v2(prefix, tensor_names, shape_and_slices, tensors, name=None, checkpoint_format=None):
    """Writes `tensors` as checkpoint `prefix` (data file and index), each under its name and
    slice (shape_and_slices[i]: '' for a whole tensor, TF's 'd0 d1 start,len:...' for a slice),
    in the format `checkpoint_format` names (`safetensors` or `tensorflow`; None: the one
    TENSORWEAVE_CHECKPOINT_FORMAT names, format_setting). A SavedModel's saver passes
    `tensorflow`: its variables are TF's whatever the environment says."""
    tensors = [convert_to_tensor(t) for t in tensors]
    attrs = {"dtypes": [t.dtype for t in tensors]}
    setting = checkpoint_format or format_setting()
    if setting not in _WRITERS:
        raise ValueError(f"checkpoint_format={setting!r}: expected one of {', '.join(_WRITERS)}")
    if setting != SAFETENSORS:   # ours is what an op without the attr writes: graphs as before
        attrs["_checkpoint_format"] = setting
    return make_op("SaveV2", [convert_to_tensor(prefix, dtype=dtypes.string), _strings(tensor_names, "tensor_names"),
                              _strings(shape_and_slices, "shape_and_slices")] + tensors, attrs, name=name or "SaveV2")


def _save_infer(op):
    n = len(op.inputs) - 3
    for i, what in ((1, "tensor_names"), (2, "shape_and_slices")):
        shape = op.inputs[i].shape
        if shape.ndims is not None and (shape.ndims != 1 or shape[0].value not in (None, n)):
            raise ValueError(f"SaveV2: {what} must be a vector of {n} strings, got shape {shape}")
    return []


def _save_kernel(node, ctx):
    write = _WRITERS.get(node.attr.get("_checkpoint_format", SAFETENSORS))
    if write is None:
        raise invalid(node, f"unknown checkpoint format {node.attr['_checkpoint_format']!r}")

    def save(prefix, names, specs, *tensors):
        names, specs = _texts(names), _texts(specs)
        if len(names) != len(tensors) or len(specs) != len(tensors):
            raise invalid(node, f"Got {len(tensors)} tensors, {len(names)} names and {len(specs)} slice specs")
        try:
            try:
                write(_text(prefix), list(zip(names, specs, tensors)), node.name)
            except OSError as e:
                raise errors.os_error(e, e.filename or _text(prefix)) from None
        except ValueError as e:
            raise invalid(node, str(e)) from None
        except errors.OpError as e:   # a full disk is ResourceExhaustedError naming the file, as in TF
            raise type(e)(node, node.name, f"{node.name}: writing checkpoint {_text(prefix)} failed on "
                          f"{ctx.task or 'this task'}: {e.message}") from None
    return save


register("SaveV2", _save_infer, _save_kernel, grad=None, stateful=True, dtypes={0: ("prefix", (dtypes.string,))})


# -- RestoreV2 ------------------------------------------------------------------------------------
def restore_v2(prefix, tensor_names, shape_and_slices, dtypes_, name=None) -> list:
    """The tensors `tensor_names` (or their slices) read from checkpoint `prefix` (ours or
    TensorFlow's), one output per dtype of `dtypes_`."""
    return make_op("RestoreV2", [convert_to_tensor(prefix, dtype=dtypes.string),
                                 _strings(tensor_names, "tensor_names"),
                                 _strings(shape_and_slices, "shape_and_slices")],
                   {"dtypes": [dtypes.as_dtype(d) for d in dtypes_]}, name=name or "RestoreV2").outputs


def _restore_infer(op):
    return [(dtypes.as_dtype(d), unknown_shape()) for d in op.get_attr("dtypes")]


def _restore_kernel(node, ctx):
    wanted = [dtypes.as_dtype(d) for d in node.attr["dtypes"]]

    def restore(prefix, names, specs):
        names, specs, prefix = _texts(names), _texts(specs), _text(prefix)
        if len(names) != len(wanted) or len(specs) != len(wanted):
            raise invalid(node, f"Got {len(names)} names and {len(specs)} slice specs for {len(wanted)} dtypes")
        try:
            reader = CheckpointReader(prefix)
            out = []
            for name, spec, dtype in zip(names, specs, wanted):
                stored = reader.dtype_name(name)
                if dtypes.as_dtype(stored) != dtype:
                    raise errors.InvalidArgumentError(
                        node, node.name, f"tensor_name = {name}; expected dtype {dtype.name} does not equal "
                        f"original dtype {stored} (checkpoint {prefix})")
                value = reader.read(name, spec)
                value.flags.writeable = False   # fresh and never mutated: an assign can keep it uncopied
                out.append(value)
        except errors.OpError as e:
            raise type(e)(node, node.name, e.message) from None
        except ValueError as e:
            raise invalid(node, str(e)) from None
        return tuple(out) if len(out) != 1 else out[0]
    return restore


register("RestoreV2", _restore_infer, _restore_kernel, grad=None, stateful=True,
         dtypes={0: ("prefix", (dtypes.string,))})


# -- MergeV2Checkpoints ---------------------------------------------------------------------------
def merge_v2_checkpoints(checkpoint_prefixes, destination_prefix, delete_old_dirs: bool = True, name=None):
    """Merges the per-shard checkpoints `checkpoint_prefixes` into `destination_prefix`: their
    data files are renamed, their indexes merged into one (written last)."""
    return make_op("MergeV2Checkpoints", [_strings(checkpoint_prefixes, "checkpoint_prefixes"),
                                          convert_to_tensor(destination_prefix, dtype=dtypes.string)],
                   {"delete_old_dirs": bool(delete_old_dirs)}, name=name or "MergeV2Checkpoints")


def _merge_kernel(node, ctx):
    delete_old_dirs = bool(node.attr.get("delete_old_dirs", True))

    def merge(prefixes, destination):
        prefixes = _texts(prefixes)
        if not prefixes:
            raise invalid(node, "no checkpoint_prefixes to merge")
        try:
            _MERGERS[checkpoint_format(prefixes[0], node.name)](prefixes, _text(destination), delete_old_dirs)
        except errors.OpError as e:
            raise type(e)(node, node.name, f"{node.name}: {e.message}") from None
        except OSError as e:
            err = errors.os_error(e, e.filename or _text(destination))
            raise type(err)(node, node.name, f"{node.name}: merging into {_text(destination)} failed: "
                            f"{err.message}") from None
    return merge


register("MergeV2Checkpoints", lambda op: [], _merge_kernel, grad=None, stateful=True,
         dtypes={0: ("checkpoint_prefixes", (dtypes.string,))})


# -- ShardedFilename ------------------------------------------------------------------------------
def sharded_filename(basename, shard, num_shards, name=None):
    """TF's ShardedFilename: `basename-SSSSS-of-NNNNN`, the prefix shard `shard` of a sharded save
    writes to (the Saver's basename is the checkpoint prefix plus a temporary '_temp_<uuid>/part')."""
    return make_op("ShardedFilename", [convert_to_tensor(basename, dtype=dtypes.string),
                                       convert_to_tensor(shard, dtype=dtypes.int32),
                                       convert_to_tensor(num_shards, dtype=dtypes.int32)],
                   name=name or "ShardedFilename").outputs[0]


def _scalar_int(node, value, what: str) -> int:
    if np.ndim(value) != 0:
        raise invalid(node, f"{what} must be a scalar, got shape {list(np.shape(value))}")
    return int(value)


def _sharded_filename_kernel(node, ctx):
    def sharded(basename, shard, num_shards):
        return bundle.sharded_filename(_text(basename), _scalar_int(node, shard, "shard"),
                                       _scalar_int(node, num_shards, "num_shards")).encode()
    return sharded


def _sharded_filespec_kernel(node, ctx):
    return lambda basename, num_shards: \
        f"{_text(basename)}-?????-of-{_scalar_int(node, num_shards, 'num_shards'):05d}".encode()


def _string_scalar(op):
    return [(dtypes.string, TensorShape([]))]


register("ShardedFilename", _string_scalar, _sharded_filename_kernel, grad=None,
         dtypes={0: ("basename", (dtypes.string,)), 1: ("shard", (dtypes.int32,)),
                 2: ("num_shards", (dtypes.int32,))})
register("ShardedFilespec", _string_scalar, _sharded_filespec_kernel, grad=None,
         dtypes={0: ("basename", (dtypes.string,)), 1: ("num_shards", (dtypes.int32,))})
