"""tf.train.Checkpoint and tf.train.CheckpointManager in graph mode: object-based checkpoints.

A Checkpoint's dependencies are the objects given to it as keyword arguments (or set as its
attributes): variables, TF1 optimizers, and other Checkpoints. A variable is saved under its path
of attribute names, `model/kernel/.ATTRIBUTES/VARIABLE_VALUE`; an optimizer's non-slot variables
are its dependencies by name (`optimizer/beta1_power/...`) and its slot of a tracked variable is
`<variable's path>/.OPTIMIZER_SLOT/<optimizer's path>/<slot name>/.ATTRIBUTES/VARIABLE_VALUE`;
`_CHECKPOINTABLE_OBJECT_GRAPH` holds TF's TrackableObjectGraph of the whole, so TensorFlow's
tf.train.Checkpoint restores these files into the same objects (and ours restores TF's).
The files are the Saver's (safetensors data, or TensorFlow's own V2 format when
TENSORWEAVE_CHECKPOINT_FORMAT=tensorflow); either restores. Objects reached by more than one path
are saved once, under the first path breadth first (TF's rule); keyword arguments are tracked in
name order, attributes set later after them.
"""
from __future__ import annotations

import inspect
import os
import time
from typing import Optional


from tensorweave.framework import dtypes
from tensorweave.framework.api import device
from tensorweave.framework.graph import get_default_graph, get_default_session
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import TrackableObjectGraph
from tensorweave.ops.array.core import constant
from tensorweave.ops.grouping import no_op
from tensorweave.ops.checkpoint.reader import NewCheckpointReader
from tensorweave.ops.state.variables import Variable, variables_initializer
from tensorweave.train.checkpoint_management import (get_checkpoint_state, remove_checkpoint,
                                                     update_checkpoint_state_internal)
from tensorweave.train.optimizer import Optimizer
from tensorweave.train.saveable import SaveableObject, SaveSpec
from tensorweave.train.saver import Saver

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
_VALUE_SUFFIX = ".ATTRIBUTES/VARIABLE_VALUE"


def _escape(name: str) -> str:
    """TF's escaping of a local name inside a checkpoint key ('/' and '.' are separators)."""
    return name.replace(".", "..").replace("/", ".S")


def _dependencies(obj) -> list:
    """(local name, object) pairs of what `obj` tracks, in TF's order."""
    if isinstance(obj, Checkpoint):
        return list(obj._dependencies.items())
    if isinstance(obj, Optimizer):
        graph = get_default_graph()
        return sorted((name, v) for (name, g), v in obj._non_slot_dict.items() if g is graph)
    return []


class _ObjectGraph:
    """The objects reachable from a root, breadth first: node ids, checkpoint keys, and the
    TrackableObjectGraph proto TF writes beside the values."""

    def __init__(self, root):
        self.nodes, self.paths, ids = [root], {0: []}, {id(root): 0}
        self.proto = TrackableObjectGraph()
        self.proto.nodes.add()
        self.keys: dict = {}   # checkpoint key -> variable
        i = 0
        while i < len(self.nodes):
            for name, child in _dependencies(self.nodes[i]):
                if id(child) not in ids:
                    ids[id(child)] = len(self.nodes)
                    self.paths[len(self.nodes)] = self.paths[i] + [name]
                    self.nodes.append(child)
                    self.proto.nodes.add()
                self.proto.nodes[i].children.add(node_id=ids[id(child)], local_name=name)
            i += 1
        for node_id, obj in enumerate(self.nodes):
            if _is_variable(obj):
                self._add_value(node_id, "/".join(map(_escape, self.paths[node_id])) + "/" + _VALUE_SUFFIX, obj)
        for opt_id, opt in enumerate(list(self.nodes)):
            if isinstance(opt, Optimizer):
                self._add_slots(opt_id, opt, ids)

    def _add_value(self, node_id: int, key: str, variable) -> None:
        self.proto.nodes[node_id].attributes.add(name="VARIABLE_VALUE", full_name=variable.op.name, checkpoint_key=key)
        self.keys[key] = variable

    def _add_slots(self, opt_id: int, opt, ids: dict) -> None:
        opt_path = "/".join(map(_escape, self.paths[opt_id]))
        for slot_name in opt.get_slot_names():
            for var_id, var in enumerate(list(self.nodes)):
                slot = opt.get_slot(var, slot_name) if _is_variable(var) else None
                if slot is None:
                    continue
                slot_id = len(self.nodes)
                self.nodes.append(slot)
                self.proto.nodes.add()
                self.proto.nodes[opt_id].slot_variables.add(original_variable_node_id=var_id, slot_name=slot_name,
                                                             slot_variable_node_id=slot_id)
                var_path = "/".join(map(_escape, self.paths[var_id]))
                self._add_value(slot_id, f"{var_path}/.OPTIMIZER_SLOT/{opt_path}/{_escape(slot_name)}/{_VALUE_SUFFIX}",
                                slot)


@tf_export("train.CheckpointOptions")
class CheckpointOptions:
    """tf.train.CheckpointOptions(experimental_io_device=None, experimental_enable_async_checkpoint=False,
    experimental_write_callbacks=None, enable_async=False, experimental_skip_slot_variables=False,
    experimental_sharding_callback=None): options of Checkpoint.save/write and CheckpointManager.save.
    The save ops run on `experimental_io_device`; each write callback (of no argument, or of the
    path written) runs after a write. Writes are synchronous even when async is asked for: a
    later save or restore sees the files all the same."""

    def __init__(self, experimental_io_device=None, experimental_enable_async_checkpoint=False,
                 experimental_write_callbacks=None, enable_async=False, experimental_skip_slot_variables=False,
                 experimental_sharding_callback=None):
        for callback in experimental_write_callbacks or ():
            if len(inspect.signature(callback).parameters) > 1:
                raise ValueError(f"A checkpoint write callback takes no argument or the path written: {callback}")
        if experimental_sharding_callback is not None:
            raise ValueError("The experimental_sharding_callback checkpoint option must be of type "
                             f"ShardingCallback (TF 2's sharding policies), got {type(experimental_sharding_callback)}")
        self.experimental_io_device = experimental_io_device
        self.enable_async = self.experimental_enable_async_checkpoint = bool(
            experimental_enable_async_checkpoint or enable_async)
        self.experimental_write_callbacks = experimental_write_callbacks
        self.experimental_skip_slot_variables = experimental_skip_slot_variables
        self.experimental_sharding_callback = experimental_sharding_callback


class _ObjectGraphSaveable(SaveableObject):
    """The serialized TrackableObjectGraph, saved as a string scalar; restoring it assigns nothing."""

    def __init__(self, serialized: bytes):
        tensor = constant(serialized, dtype=dtypes.string, name="object_graph")
        super().__init__(tensor, [SaveSpec(tensor, "", OBJECT_GRAPH_KEY)], OBJECT_GRAPH_KEY)

    def restore(self, restored_tensors, restored_shapes):
        return no_op()


def _session(session):
    session = session or get_default_session()
    if session is None:
        raise ValueError("tf.train.Checkpoint in graph mode needs a session: pass `session` or run it under a "
                         "default session (`with tf.Session() as sess:`)")
    return session


def _is_variable(obj) -> bool:
    """A Variable, or a variable a tf.distribute strategy keeps copies of (saved as one)."""
    return isinstance(obj, Variable) or hasattr(obj, "_saveable_for")


@tf_export("train.Checkpoint")
class Checkpoint:
    """tf.train.Checkpoint(**kwargs): groups variables, TF1 optimizers and other Checkpoints
    (its keyword arguments, or attributes set later) for object-based saving and restoring.
    save(file_prefix, session=None) numbers the files with `save_counter` and records them in the
    directory's `checkpoint` file; write(file_prefix, session=None) writes exactly file_prefix;
    restore(save_path) returns a status whose run_restore_ops / initialize_or_restore run the
    restore in a session."""

    def __init__(self, **kwargs):
        object.__setattr__(self, "_dependencies", {})
        object.__setattr__(self, "_save_counter", None)
        object.__setattr__(self, "_savers", {})
        for name, value in sorted(kwargs.items()):   # TF tracks the keyword arguments in name order
            setattr(self, name, value)

    def __setattr__(self, name: str, value) -> None:
        if not name.startswith("_"):
            if not (_is_variable(value) or isinstance(value, (Optimizer, Checkpoint))):
                raise ValueError(f"`Checkpoint` was expecting a trackable object (a Variable, an Optimizer or a "
                                 f"Checkpoint) for {name!r}, got {value!r}")
            self._dependencies[name] = value
        object.__setattr__(self, name, value)

    @property
    def save_counter(self) -> Variable:
        """An int64 variable counting the save() calls (created on first use; saved with the checkpoint)."""
        if self._save_counter is None:
            counter = Variable(0, dtype=dtypes.int64, trainable=False, name="save_counter")
            object.__setattr__(self, "_save_counter", counter)
            self._dependencies["save_counter"] = counter
        return self._save_counter

    def _saver(self, object_graph: _ObjectGraph, io_device: Optional[str]) -> Saver:
        """A Saver of the object graph's keys, built once per structure, graph and I/O device."""
        serialized = object_graph.proto.SerializeToString()
        key = (get_default_graph(), serialized, io_device)
        if key not in self._savers:
            var_list = dict(object_graph.keys)
            with device(io_device):
                var_list[OBJECT_GRAPH_KEY] = _ObjectGraphSaveable(serialized)
                self._savers[key] = Saver(var_list, max_to_keep=None)
        return self._savers[key]

    def write(self, file_prefix, session=None, options=None) -> str:
        """Writes the checkpoint to exactly `file_prefix`, not numbered nor recorded, then runs
        options.experimental_write_callbacks; returns file_prefix."""
        session = _session(session)
        options = options or CheckpointOptions()
        saver = self._saver(_ObjectGraph(self), options.experimental_io_device)
        file_prefix = os.fspath(file_prefix)
        os.makedirs(os.path.dirname(file_prefix) or ".", exist_ok=True)   # TF's bundle writer creates it
        path = saver.save(session, file_prefix, write_meta_graph=False, write_state=False)
        for callback in options.experimental_write_callbacks or ():
            callback(*[path][:len(inspect.signature(callback).parameters)])
        return path

    def save(self, file_prefix, session=None, options=None) -> str:
        """Adds one to save_counter, writes `file_prefix-<save_counter>`, records it as the
        directory's latest checkpoint (the only one its `checkpoint` file lists, as TF's
        Checkpoint.save does), and returns that path."""
        session = _session(session)
        path = self.write(f"{os.fspath(file_prefix)}-{self._next_save_number(session)}", session, options)
        update_checkpoint_state_internal(os.path.dirname(path) or ".", path, [path], save_relative_paths=True)
        return path

    def _next_save_number(self, session) -> int:
        """save_counter after adding one (initialized first when new)."""
        counter = self.save_counter
        if not session.run(counter.is_initialized()):
            session.run(counter.initializer)
        return int(session.run(counter.assign_add(1)))

    def restore(self, save_path) -> "CheckpointLoadStatus":
        """A status of restoring `save_path` (a path from save/write/latest_checkpoint) into the
        tracked objects; None restores nothing (initialize_or_restore then initializes).
        save_counter is restored too, so later saves number on."""
        self.save_counter   # created now to be restored, as TF does
        return CheckpointLoadStatus(self, None if save_path is None else os.fspath(save_path))


class CheckpointLoadStatus:
    """What Checkpoint.restore returns (TF's CheckpointLoadStatus in graph mode)."""

    def __init__(self, checkpoint: Checkpoint, save_path: Optional[str]):
        self._object_graph = _ObjectGraph(checkpoint)
        self._save_path = save_path
        self._saved_keys = set()
        if save_path is not None:
            reader = NewCheckpointReader(save_path)
            self._saved_keys = set(reader.get_variable_to_shape_map()) - {OBJECT_GRAPH_KEY}
        matched = {k: v for k, v in self._object_graph.keys.items() if k in self._saved_keys}
        self._saver = Saver(matched, max_to_keep=None) if matched else None
        self._unmatched = [v for k, v in self._object_graph.keys.items() if k not in self._saved_keys]

    def assert_consumed(self) -> "CheckpointLoadStatus":
        """AssertionError unless every value in the checkpoint and every tracked variable matched."""
        self.assert_existing_objects_matched()
        unused = sorted(self._saved_keys - set(self._object_graph.keys))
        if unused:
            raise AssertionError(f"Unresolved object in checkpoint {self._save_path}: {unused}")
        return self

    def assert_existing_objects_matched(self) -> "CheckpointLoadStatus":
        """AssertionError when a tracked variable has no value in the checkpoint."""
        if self._save_path is not None and self._unmatched:
            names = sorted(v.op.name for v in self._unmatched)
            raise AssertionError(f"Some objects had no value in checkpoint {self._save_path}: {names}")
        return self

    def assert_nontrivial_match(self) -> "CheckpointLoadStatus":
        if self._saver is None:
            raise AssertionError(f"Nothing of checkpoint {self._save_path} matched the tracked objects")
        return self

    def expect_partial(self) -> "CheckpointLoadStatus":
        return self

    def run_restore_ops(self, session=None) -> None:
        """Assigns the checkpoint's values to the variables that have one."""
        if self._saver is not None:
            self._saver.restore(_session(session), self._save_path)

    def initialize_or_restore(self, session=None) -> None:
        """Initializes the variables without a value in the checkpoint and restores the others."""
        session = _session(session)
        if self._unmatched or self._save_path is None:
            session.run(variables_initializer(self._unmatched if self._save_path else
                                              list(self._object_graph.keys.values())))
        self.run_restore_ops(session)


@tf_export("train.CheckpointManager")
class CheckpointManager:
    """tf.train.CheckpointManager(checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
    checkpoint_name='ckpt'): numbered saves of `checkpoint` into `directory`, keeping the
    `max_to_keep` newest (None: all; a checkpoint older than keep_checkpoint_every_n_hours since the
    last one kept is kept too), recorded in the directory's `checkpoint` file, which a new manager
    reads back."""

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name: str = "ckpt", step_counter=None, checkpoint_interval=None, init_fn=None):
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"CheckpointManager manages a tf.train.Checkpoint, got {checkpoint!r}")
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError(f"Expected a positive integer or `None` for `max_to_keep`, got {max_to_keep}.")
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("`step_counter` should be passed if `checkpoint_interval` is not None.")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._keep_seconds = keep_checkpoint_every_n_hours * 3600 if keep_checkpoint_every_n_hours else None
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter = step_counter
        self._checkpoint_interval = checkpoint_interval
        self._last_checkpoint_step = None
        self._init_fn = init_fn
        state = get_checkpoint_state(self._directory)
        self._maybe_delete: dict = {}
        self._last_preserved = time.time()
        self._latest_checkpoint = None
        if state is not None:
            timestamps = list(state.all_model_checkpoint_timestamps or [])
            paths = list(state.all_model_checkpoint_paths)
            if len(timestamps) != len(paths):
                timestamps = [time.time()] * len(paths)
            self._maybe_delete = {self._absolute(p): t for p, t in zip(paths, timestamps)}
            self._last_preserved = state.last_preserved_timestamp or self._last_preserved
            self._latest_checkpoint = self._absolute(state.model_checkpoint_path)

    def _absolute(self, path: str) -> str:
        return path if os.path.isabs(path) else os.path.join(self._directory, path)

    @property
    def directory(self) -> str:
        return self._directory

    @property
    def checkpoint(self) -> Checkpoint:
        return self._checkpoint

    @property
    def checkpoint_interval(self):
        return self._checkpoint_interval

    @property
    def latest_checkpoint(self) -> Optional[str]:
        """The newest checkpoint's prefix, or None."""
        return self._latest_checkpoint

    @property
    def checkpoints(self) -> list:
        """The prefixes of the checkpoints kept, oldest first."""
        return list(self._maybe_delete)

    def _sweep(self) -> None:
        if self._max_to_keep is None:
            return
        while len(self._maybe_delete) > self._max_to_keep:
            path, timestamp = next(iter(self._maybe_delete.items()))
            del self._maybe_delete[path]
            if self._keep_seconds is not None and timestamp - self._keep_seconds > self._last_preserved:
                self._last_preserved = timestamp   # kept for good: no longer managed
                continue
            remove_checkpoint(path)

    def save(self, checkpoint_number=None, check_interval: bool = True, options=None) -> Optional[str]:
        """Saves `checkpoint` as `<directory>/<checkpoint_name>-<n>` (n: checkpoint_number, else the
        checkpoint's save_counter after adding one) in the default session, deletes what
        max_to_keep no longer keeps, and returns the new prefix (None when checkpoint_interval says
        it is not yet time)."""
        session = _session(None)
        if self._checkpoint_interval is not None and check_interval:
            step = int(session.run(self._step_counter) if hasattr(self._step_counter, "op") else self._step_counter)
            if self._last_checkpoint_step is not None and step < self._last_checkpoint_step + self._checkpoint_interval:
                return None
            self._last_checkpoint_step = step
        number = self._checkpoint._next_save_number(session)
        if checkpoint_number is not None:
            number = int(session.run(checkpoint_number) if hasattr(checkpoint_number, "op") else checkpoint_number)
        path = self._checkpoint.write(f"{self._prefix}-{number}", session, options)
        self._latest_checkpoint = path
        self._maybe_delete.pop(path, None)
        self._maybe_delete[path] = time.time()
        self._sweep()
        update_checkpoint_state_internal(self._directory, path, list(self._maybe_delete),
                                         save_relative_paths=True,
                                         all_model_checkpoint_timestamps=list(self._maybe_delete.values()),
                                         last_preserved_timestamp=self._last_preserved)
        return path

    def sync(self) -> None:
        """Waits for outstanding saves: none, tensorweave writes checkpoints synchronously."""

    def restore_or_initialize(self, session=None) -> Optional[str]:
        """Restores the latest checkpoint and returns its path; without one, runs init_fn (or
        initializes the checkpoint's variables) and returns None."""
        session = _session(session)
        if self._latest_checkpoint is not None:
            self._checkpoint.restore(self._latest_checkpoint).initialize_or_restore(session)
            return self._latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        else:
            self._checkpoint.restore(None).initialize_or_restore(session)
        return None
