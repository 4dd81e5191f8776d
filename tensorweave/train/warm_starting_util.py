"""tf.train.warm_start: initialise some of a new model's variables from another model's checkpoint
(what Estimator's warm_start_from does), through init_from_checkpoint's initializers, or with the
rows (or columns) of a vocabulary remapped to a new vocabulary (tf.estimator.VocabInfo)."""
from __future__ import annotations

import collections
import logging

import numpy as np

from tensorweave.framework.api import GraphKeys
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import constant
from tensorweave.ops.array.gather import scatter_nd
from tensorweave.ops.io.gfile import GFile
from tensorweave.ops.state.variable_ops import assign_variable_op, colocated_with_handle
from tensorweave.ops.state.variables import Variable
from tensorweave.train.checkpoint_utils import init_from_checkpoint, load_checkpoint

_log = logging.getLogger("tensorweave")


def _variables_to_warm_start(vars_to_warm_start) -> list:
    """TF's reading of vars_to_warm_start: a regex over the trainable variables, a list of regexes
    over the global variables, a list of Variables, or None (none)."""
    graph = get_default_graph()
    if isinstance(vars_to_warm_start, str):
        return graph.get_collection(GraphKeys.TRAINABLE_VARIABLES, scope=vars_to_warm_start)
    if vars_to_warm_start is None:
        return []
    if isinstance(vars_to_warm_start, (list, tuple)):
        if all(isinstance(v, str) for v in vars_to_warm_start):
            found = []
            for pattern in vars_to_warm_start:
                found += [v for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES, scope=pattern)
                          if v not in found]
            return found
        if all(isinstance(v, Variable) for v in vars_to_warm_start):
            return list(vars_to_warm_start)
    raise ValueError("vars_to_warm_start must be a `list` of only strings or only Variables, a string, or None; "
                     f"got {vars_to_warm_start!r}.")


@tf_export("train.VocabInfo", "estimator.VocabInfo")
class VocabInfo(collections.namedtuple("VocabInfo", ["new_vocab", "new_vocab_size", "num_oov_buckets", "old_vocab",
                                                     "old_vocab_size", "backup_initializer", "axis"])):
    """tf.estimator.VocabInfo(new_vocab, new_vocab_size, num_oov_buckets, old_vocab, old_vocab_size=-1,
    backup_initializer=None, axis=0): how warm_start remaps a variable whose rows (axis 0) or
    columns (axis 1) follow a vocabulary: the first new_vocab_size tokens of the file new_vocab
    (one a line) take the slice of their token in the old vocabulary file old_vocab (its first
    old_vocab_size tokens; -1: all); tokens not there and the num_oov_buckets OOV slices after them
    get backup_initializer's values (zeros when None)."""

    def __new__(cls, new_vocab, new_vocab_size, num_oov_buckets, old_vocab, old_vocab_size=-1,
                backup_initializer=None, axis=0):
        if axis not in (0, 1):
            raise ValueError(f"The only supported values for the axis argument are 0 and 1.  Provided axis: {axis}")
        return super().__new__(cls, new_vocab, new_vocab_size, num_oov_buckets, old_vocab, old_vocab_size,
                               backup_initializer, axis)


def _read_vocab(path, size: int) -> list:
    """The first `size` tokens (-1: all) of a vocabulary file, one a line."""
    with GFile(path) as f:
        tokens = f.read().splitlines()
    return tokens if size is None or size < 0 else tokens[:size]


def _warm_start_with_vocab(variable: Variable, ckpt, prev_name: str, info: VocabInfo) -> None:
    """Makes `variable` initialise from checkpoint tensor `prev_name` with its vocabulary axis
    remapped as `info` says (TF's load_and_remap_matrix): the missing values, in row-major order,
    are one vector of backup_initializer's."""
    shape = variable.shape.as_list()
    if len(shape) != 2 or None in shape:
        raise ValueError(f"warm_start: var_name_to_vocab_info needs a 2-D variable of known shape; "
                         f"{variable.name} has shape {variable.shape}.")
    if not (info.new_vocab and info.new_vocab_size and ckpt and info.old_vocab):
        raise ValueError("Invalid args: Must provide all of [current_vocab_path, current_vocab_size, prev_ckpt, "
                         f"prev_vocab_path]; got {info} for {variable.name}.")
    if shape[info.axis] != info.new_vocab_size + info.num_oov_buckets:
        raise ValueError(f"warm_start: {variable.name} has {shape[info.axis]} slices along axis {info.axis}, not "
                         f"new_vocab_size + num_oov_buckets = {info.new_vocab_size + info.num_oov_buckets}.")
    old = np.asarray(load_checkpoint(ckpt).get_tensor(prev_name))
    old_index = {token: i for i, token in enumerate(_read_vocab(info.old_vocab, info.old_vocab_size))}
    new_vocab = _read_vocab(info.new_vocab, info.new_vocab_size)
    value = np.zeros(shape, variable.dtype.as_numpy_dtype)
    missing = np.ones(shape, bool)
    moved = np.moveaxis(value, info.axis, 0)   # (views: the vocabulary axis first)
    moved_missing = np.moveaxis(missing, info.axis, 0)
    old_slices = np.moveaxis(old, info.axis, 0)
    for i, token in enumerate(new_vocab):
        j = old_index.get(token)
        if j is not None and j < len(old_slices):
            moved[i] = old_slices[j]
            moved_missing[i] = False
    initial = constant(value)
    holes = np.argwhere(missing)
    if len(holes) and info.backup_initializer is not None:
        backup = info.backup_initializer([len(holes)], dtype=variable.dtype)
        initial = initial + scatter_nd(constant(holes.astype(np.int64)), backup, shape)
    _log.info("Warm-starting variable: %s; current_vocab: %s; prev_vocab: %s; prev_tensor: %s", variable.op.name,
              info.new_vocab, info.old_vocab, prev_name)
    with colocated_with_handle(variable.handle):
        variable._init_op = assign_variable_op(variable.handle, initial)
    variable._initial_value = initial


@tf_export("train.warm_start")
def warm_start(ckpt_to_initialize_from, vars_to_warm_start=".*", var_name_to_vocab_info=None,
               var_name_to_prev_var_name=None) -> None:
    """tf.train.warm_start(ckpt_to_initialize_from, vars_to_warm_start='.*',
    var_name_to_vocab_info=None, var_name_to_prev_var_name=None): makes the chosen variables
    initialise from the checkpoint (a file prefix or a directory's latest), each from the tensor
    of its own name or of var_name_to_prev_var_name[name], remapped to a new vocabulary where
    var_name_to_vocab_info[name] (a VocabInfo) says so."""
    prev_names = dict(var_name_to_prev_var_name or {})
    vocab_infos = dict(var_name_to_vocab_info or {})
    grouped: dict = {}
    for v in _variables_to_warm_start(vars_to_warm_start):
        info = v._get_save_slice_info()
        grouped.setdefault(info.full_name if info is not None else v.op.name, []).append(v)
    used = set()
    for name, parts in sorted(grouped.items()):
        prev = prev_names.get(name, name)
        used.add(name)
        if name in vocab_infos:
            if len(parts) > 1 or parts[0]._get_save_slice_info():
                raise ValueError(f"warm_start: var_name_to_vocab_info for the partitioned variable {name} is not "
                                 "supported by tensorweave.")
            _warm_start_with_vocab(parts[0], ckpt_to_initialize_from, prev, vocab_infos[name])
            continue
        _log.info("Warm-starting variable: %s; prev_var_name: %s", name, prev)
        init_from_checkpoint(ckpt_to_initialize_from, {prev: parts if len(parts) > 1 or
                                                       parts[0]._get_save_slice_info() else parts[0]})
    unused_vocab = set(vocab_infos) - used
    if unused_vocab:
        raise ValueError(f"You provided the following variables in var_name_to_vocab_info that were not used: "
                         f"{unused_vocab}.  Perhaps you misspelled them?  Here is the list of viable variable names: "
                         f"{grouped.keys()}")
    unused = set(prev_names) - used
    if unused:
        raise ValueError(f"You provided the following variables in var_name_to_prev_var_name that were not used: "
                         f"{sorted(unused)}.  Perhaps you misspelled them?  Here is the list of viable variable "
                         f"names: {sorted(grouped)}")
