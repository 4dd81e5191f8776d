"""Reading checkpoints from Python and initializing variables from them:
tf.train.load_checkpoint, load_variable, list_variables, init_from_checkpoint (ours or
TensorFlow's V2 checkpoints; a directory means its latest checkpoint), and waiting for a
directory's new checkpoints (tf.train.checkpoints_iterator)."""
from __future__ import annotations

import logging
import os
import time

from tensorweave.framework import errors
from tensorweave.framework.api import GraphKeys
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.checkpoint.io_ops import restore_v2
from tensorweave.ops.checkpoint.reader import CheckpointReader, NewCheckpointReader  # noqa: F401
from tensorweave.ops.state.partitioned_variables import PartitionedVariable
from tensorweave.ops.state.variable_ops import assign_variable_op, colocated_with_handle
from tensorweave.ops.state.variable_scope import _get_default_variable_store
from tensorweave.ops.state.variables import Variable
from tensorweave.train.checkpoint_management import latest_checkpoint


def _get_checkpoint_filename(ckpt_dir_or_file) -> str:
    if isinstance(ckpt_dir_or_file, bytes):
        ckpt_dir_or_file = ckpt_dir_or_file.decode()
    if os.path.isdir(ckpt_dir_or_file):
        found = latest_checkpoint(ckpt_dir_or_file)
        if found is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given directory {ckpt_dir_or_file}")
        return found
    return ckpt_dir_or_file


def _wait_for_new_checkpoint(checkpoint_dir, last_checkpoint=None, seconds_to_sleep: float = 1,
                             timeout=None):
    """The directory's latest checkpoint once it is not `last_checkpoint`; None after `timeout`
    seconds without one (TF's wait_for_new_checkpoint)."""
    logging.info("Waiting for new checkpoint at %s", checkpoint_dir)
    stop_time = time.time() + timeout if timeout is not None else None
    while True:
        checkpoint_path = latest_checkpoint(checkpoint_dir)
        if checkpoint_path is not None and checkpoint_path != last_checkpoint:
            logging.info("Found new checkpoint at %s", checkpoint_path)
            return checkpoint_path
        if stop_time is not None and time.time() + seconds_to_sleep > stop_time:
            return None
        time.sleep(seconds_to_sleep)


@tf_export("train.checkpoints_iterator")
def checkpoints_iterator(checkpoint_dir, min_interval_secs: float = 0, timeout=None, timeout_fn=None):
    """tf.train.checkpoints_iterator: yields each new latest checkpoint of `checkpoint_dir` (the
    current one first), at least `min_interval_secs` apart. Waiting longer than `timeout` seconds
    for the next one ends the iteration, unless `timeout_fn` is given: then the iteration ends
    when it returns True and waits on otherwise."""
    checkpoint_path = None
    while True:
        new_checkpoint_path = _wait_for_new_checkpoint(checkpoint_dir, checkpoint_path, timeout=timeout)
        if new_checkpoint_path is None:
            if not timeout_fn:
                logging.info("Timed-out waiting for a checkpoint.")
                return
            if timeout_fn():
                return
            continue
        start = time.time()
        checkpoint_path = new_checkpoint_path
        yield checkpoint_path
        time_to_next = start + min_interval_secs - time.time()
        if time_to_next > 0:
            time.sleep(time_to_next)


@tf_export("train.load_checkpoint", "contrib.framework.load_checkpoint")
def load_checkpoint(ckpt_dir_or_file) -> CheckpointReader:
    """tf.train.load_checkpoint(ckpt_dir_or_file): a CheckpointReader of the checkpoint (a
    directory's latest one)."""
    return CheckpointReader(_get_checkpoint_filename(ckpt_dir_or_file))


@tf_export("train.load_variable", "contrib.framework.load_variable")
def load_variable(ckpt_dir_or_file, name):
    """tf.train.load_variable(ckpt_dir_or_file, name): the saved value of `name` (':0' ignored)."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


@tf_export("train.list_variables", "contrib.framework.list_variables")
def list_variables(ckpt_dir_or_file) -> list:
    """tf.train.list_variables(ckpt_dir_or_file): [(name, shape)], sorted by name."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return [(name, shapes[name]) for name in sorted(shapes)]


def _set_checkpoint_initializer(variable: Variable, ckpt_file: str, tensor_name: str, slice_spec: str,
                                name: str = "checkpoint_initializer") -> None:
    """Makes `variable`'s initializer restore it from the checkpoint (on its own task); each copy's,
    for a variable a tf.distribute strategy mirrors."""
    for copy in variable.values if hasattr(variable, "_saveable_for") else (variable,):
        with colocated_with_handle(copy.handle):
            value = restore_v2(ckpt_file, [tensor_name], [slice_spec], [copy.dtype], name=name)[0]
            value.set_shape(copy.shape)
            copy._init_op = assign_variable_op(copy.handle, value)
        copy._initial_value = value


def _set_variable_or_list_initializer(var, ckpt_file: str, tensor_name: str, shapes: dict) -> None:
    if isinstance(var, (list, PartitionedVariable)):
        parts = list(var)
        for v in parts:
            info = v._get_save_slice_info()
            if info is None:
                raise ValueError(f"{v.name} is listed as a partition of {tensor_name} but has no slice info")
            _set_checkpoint_initializer(v, ckpt_file, tensor_name, info.spec)
        return
    want = var.shape
    have = shapes[tensor_name]
    if want.is_fully_defined() and list(want.as_list()) != list(have):
        raise ValueError(f"Shape of variable {var.name} ({want}) doesn't match with shape of tensor {tensor_name} "
                         f"({have}) from checkpoint reader.")
    _set_checkpoint_initializer(var, ckpt_file, tensor_name, "")


def _collect(name: str) -> object:
    """The variable (or partitioned variable) of `name` in the default graph, or None."""
    store = _get_default_variable_store()
    if name in store._vars:
        return store._vars[name]
    if name in store._partitioned_vars:
        return store._partitioned_vars[name]
    g = get_default_graph()
    found = [v for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES) if v.op.name == name]
    if found:
        return found[0]
    parts = [v for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES)
             if v._get_save_slice_info() is not None and v._get_save_slice_info().full_name == name]
    return parts or None


@tf_export("train.init_from_checkpoint", "contrib.framework.init_from_checkpoint")
def init_from_checkpoint(ckpt_dir_or_file, assignment_map) -> None:
    """tf.train.init_from_checkpoint(ckpt_dir_or_file, assignment_map): replaces the initializers
    of the variables `assignment_map` names so they load from the checkpoint. Keys are checkpoint
    names or scopes ('old/' or 'old/x'), values current variables, names or scopes ('new/');
    '/' for the key or value means the root scope."""
    ckpt_file = _get_checkpoint_filename(ckpt_dir_or_file)
    reader = CheckpointReader(ckpt_file)
    shapes = reader.get_variable_to_shape_map()
    for tensor_name, target in sorted(assignment_map.items(), key=lambda kv: kv[0]):
        if isinstance(target, (Variable, PartitionedVariable, list)) or hasattr(target, "_saveable_for"):
            var = target
        else:
            var = None if "/" in target[-1:] else _collect(target)
        if var is not None:
            if tensor_name not in shapes:
                raise ValueError(f"Tensor {tensor_name} is not found in {ckpt_file} checkpoint "
                                 f"{sorted(shapes)}")
            _set_variable_or_list_initializer(var, ckpt_file, tensor_name, shapes)
            continue
        # a scope: every variable under `target` loads from `tensor_name`'s scope
        scope_vars = tensor_name.rstrip("/") if tensor_name != "/" else ""
        scope_target = target.rstrip("/") if target != "/" else ""
        names = set(_get_default_variable_store()._vars) | set(_get_default_variable_store()._partitioned_vars)
        names |= {v.op.name for v in get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES)
                  if v._get_save_slice_info() is None}
        matched = False
        for var_name in sorted(names):
            if scope_target and not var_name.startswith(scope_target + "/"):
                continue
            if "/part_" in var_name and var_name.rsplit("/part_", 1)[0] in names:
                continue
            rest = var_name[len(scope_target) + 1:] if scope_target else var_name
            full = f"{scope_vars}/{rest}" if scope_vars else rest
            if full not in shapes:
                raise ValueError(f"Tensor {full} (for variable {var_name}) is not found in {ckpt_file} checkpoint")
            _set_variable_or_list_initializer(_collect(var_name), ckpt_file, full, shapes)
            matched = True
        if not matched:
            raise errors.NotFoundError(None, None, f"init_from_checkpoint: no variables under scope '{target}' in the "
                                       "current graph")
