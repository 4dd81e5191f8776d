"""tf.train.Saver, with TF1's API, and tf.train.export_meta_graph / import_meta_graph.

The saver builds its save and restore ops once, under the name scope "save": a filename
tensor (`save/Const:0`, fed the checkpoint path), a save tensor and a restore op, whose names
are its SaverDef, so hooks and other programs drive it through any session. With
`sharded=True` the variables are grouped by the device they live on; each group's SaveV2 and
RestoreV2 run on that device (each ps task writes and reads its own shard: tensors never
travel to the client), and a MergeV2Checkpoints on the last device merges the shards' indexes.
`save` then writes the meta graph and, last, the `checkpoint` state file, and deletes
checkpoints beyond max_to_keep (but one every keep_checkpoint_every_n_hours).

max_to_keep holds across restarts: a Saver's first save takes over the checkpoints of its own
series (`save_path` and `save_path-<step>`) that the state file lists, so a trainer restarted
ten times keeps max_to_keep checkpoints, not eleven times as many. TF's Saver forgets them
(unless a SessionManager restores and calls recover_last_checkpoints, which we do too); TF2's
CheckpointManager keeps them, and so do we. Checkpoints of another series in the same directory
(another save_path) are never touched, and an explicit set_last_checkpoints(_with_time) or
recover_last_checkpoints before the first save wins. A save also removes the `_temp_<uuid>`
shard directories of its series that a sharded save killed half-way left behind.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import threading
import time
import uuid
from typing import Optional

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.api import GraphKeys, name_scope
from tensorweave.framework.device import DeviceSpec
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import stack
from tensorweave.ops.array.core import constant, identity, placeholder_with_default
from tensorweave.ops.checkpoint.io_ops import merge_v2_checkpoints, restore_v2, save_v2, sharded_filename
from tensorweave.ops.grouping import group
from tensorweave.ops.strings.join_split import string_join
from tensorweave.train.checkpoint_management import (checkpoint_exists, get_checkpoint_mtimes, get_checkpoint_state,
                                                     meta_graph_filename, remove_checkpoint,
                                                     update_checkpoint_state_internal)
from tensorweave.framework.tf_protos import SaverDef
from tensorweave.train.meta_graph import (MetaGraphDef, export_scoped_meta_graph,
                                          import_scoped_meta_graph_with_return_elements, read_meta_graph_file,
                                          register_proto_function, write_saver_meta_graph)
from tensorweave.train.saveable import SaveableObject, SaveSpec, all_saveable_objects, validate_and_slice_inputs
from tensorweave.train.training_util import global_step as _global_step_value


_log = logging.getLogger("tensorweave")


def _shard_device(device: str) -> str:
    """The task part of a variable's device: its shard's save ops run there."""
    spec = DeviceSpec.from_string(device or "")
    return DeviceSpec(job=spec.job, replica=spec.replica, task=spec.task).to_string()


class BaseSaverBuilder:
    """Builds the save and restore ops of a Saver (TF's BaseSaverBuilder). `checkpoint_format`
    (not TF's) is the format its SaveV2 ops write, `safetensors` or `tensorflow`; None: the one
    TENSORWEAVE_CHECKPOINT_FORMAT names (io_ops.save_v2)."""

    SaveSpec = SaveSpec
    SaveableObject = SaveableObject

    def __init__(self, write_version: int = SaverDef.V2, checkpoint_format: Optional[str] = None):
        self._write_version = write_version
        self._checkpoint_format = checkpoint_format

    def save_op(self, filename_tensor, saveables):
        names, tensors, slices = [], [], []
        for s in saveables:
            for spec in s.specs:
                names.append(spec.name)
                tensors.append(spec.tensor)
                slices.append(spec.slice_spec)
        return save_v2(filename_tensor, names, slices, tensors, checkpoint_format=self._checkpoint_format)

    def bulk_restore(self, filename_tensor, saveables, preferred_shard, restore_sequentially) -> list:
        specs = [spec for s in saveables for spec in s.specs]
        return restore_v2(filename_tensor, [s.name for s in specs], [s.slice_spec for s in specs],
                          [s.dtype for s in specs])

    def _AddSaveOps(self, filename_tensor, saveables):
        save = self.save_op(filename_tensor, saveables)
        with get_default_graph().control_dependencies([save]):
            return identity(filename_tensor, name="control_dependency")

    def _AddShardedSaveOps(self, checkpoint_prefix, per_device):
        # TF 1.15's ops and names: the shards go to <prefix>_temp_<uuid>/part-SSSSS-of-NNNNN.
        g = get_default_graph()
        temp_prefix = string_join([checkpoint_prefix, constant(f"_temp_{uuid.uuid4().hex}/part")])
        num_shards = constant(len(per_device), name="num_shards")
        prefixes, saves = [], []
        last_device = ""
        for shard, (device, saveables) in enumerate(per_device):
            last_device = device
            with g.device(device):
                shard_prefix = sharded_filename(temp_prefix, shard, num_shards)
                prefixes.append(shard_prefix)
                saves.append(self._AddSaveOps(shard_prefix, saveables))
        with g.control_dependencies([s.op for s in saves]), g.device(last_device):
            merge = merge_v2_checkpoints(stack(prefixes), checkpoint_prefix, delete_old_dirs=True)
            with g.control_dependencies([merge]):
                return identity(checkpoint_prefix)

    def _AddRestoreOps(self, filename_tensor, saveables, restore_sequentially, reshape,
                       preferred_shard=-1, name="restore_all"):
        tensors = self.bulk_restore(filename_tensor, saveables, preferred_shard, restore_sequentially)
        assigns, i = [], 0
        for s in saveables:
            n = len(s.specs)
            shapes = None
            if reshape:
                shapes = [s.op.get_shape() for _ in s.specs]
                shapes = [sh.as_list() if sh.is_fully_defined() else None for sh in shapes]
                shapes = None if None in shapes else shapes
            assigns.append(s.restore(tensors[i:i + n], shapes))
            i += n
        return group(*assigns, name=name)

    def _AddShardedRestoreOps(self, filename_tensor, per_device, restore_sequentially, reshape):
        g = get_default_graph()
        restores = []
        for shard, (device, saveables) in enumerate(per_device):
            with g.device(device):
                restores.append(self._AddRestoreOps(filename_tensor, saveables, restore_sequentially, reshape,
                                                    preferred_shard=shard, name="restore_shard"))
        return group(*restores, name="restore_all")

    def _GroupByDevices(self, saveables) -> list:
        per_device: dict = {}
        for s in saveables:
            devices = {_shard_device(spec.device) for spec in s.specs}
            if len(devices) != 1:
                raise ValueError(f"All tensors of a saveable object must be on the same device: {s.name}")
            per_device.setdefault(devices.pop(), []).append(s)
        return sorted(per_device.items(), key=lambda t: t[0])

    def build(self, names_to_saveables, reshape=False, sharded=False, max_to_keep=5,
              keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False, filename="model"):
        return self._build_internal(names_to_saveables, reshape, sharded, max_to_keep, keep_checkpoint_every_n_hours,
                                    name, restore_sequentially, filename)

    def _build_internal(self, names_to_saveables, reshape=False, sharded=False, max_to_keep=5,
                        keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False,
                        filename="model", build_save=True, build_restore=True) -> SaverDef:
        saveables = validate_and_slice_inputs(names_to_saveables)
        if max_to_keep is None:
            max_to_keep = 0
        g = get_default_graph()
        with g.control_dependencies(None), name_scope(name, "save"):
            default = constant(filename or "model", dtype=dtypes.string, name="filename/input")
            filename_tensor = placeholder_with_default(default, shape=(), name="filename")
            filename_tensor = placeholder_with_default(filename_tensor, shape=(), name="Const")
            save_tensor = restore_op = None
            if sharded:
                per_device = self._GroupByDevices(saveables)
                if build_save:
                    save_tensor = self._AddShardedSaveOps(filename_tensor, per_device)
                if build_restore:
                    restore_op = self._AddShardedRestoreOps(filename_tensor, per_device, restore_sequentially, reshape)
            else:
                if build_save:
                    save_tensor = self._AddSaveOps(filename_tensor, saveables)
                if build_restore:
                    restore_op = self._AddRestoreOps(filename_tensor, saveables, restore_sequentially, reshape)
        return SaverDef(filename_tensor_name=filename_tensor.name,
                        save_tensor_name=save_tensor.name if save_tensor is not None else "",
                        restore_op_name=restore_op.name if restore_op is not None else "",
                        max_to_keep=max_to_keep, sharded=bool(sharded),
                        keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours, version=self._write_version)


class BulkSaverBuilder(BaseSaverBuilder):
    """TF's BulkSaverBuilder: one RestoreV2 for all tensors of a shard (what BaseSaverBuilder does)."""


def _prepend_scope(name: str, scope: Optional[str]) -> str:
    if not scope or name.startswith("^"):
        return name
    return f"{scope}/{name}"


def _strip_scope(name: str, scope: Optional[str]) -> str:
    if scope and name.startswith(scope + "/"):
        return name[len(scope) + 1:]
    return name


@tf_export("train.Saver")
class Saver:
    """tf.train.Saver(var_list=None, reshape=False, sharded=False, max_to_keep=5,
    keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False, saver_def=None,
    builder=None, defer_build=False, allow_empty=False, write_version=SaverDef.V2,
    pad_step_number=False, save_relative_paths=False, filename=None).

    Saves and restores variables (a list, or a dict of checkpoint names to variables,
    partition lists or PartitionedVariables; default: every global variable and the
    SAVEABLE_OBJECTS collection) to checkpoints of safetensors data files, or of TensorFlow's
    own V2 format (which TF restores) when TENSORWEAVE_CHECKPOINT_FORMAT=tensorflow is set as the
    saver is built; restores either format."""

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False, saver_def=None,
                 builder=None, defer_build=False, allow_empty=False, write_version=SaverDef.V2,
                 pad_step_number=False, save_relative_paths=False, filename=None):
        if defer_build and var_list:
            raise ValueError("If `var_list` is provided then build cannot be deferred. Either set defer_build=False "
                             "or var_list=None.")
        self._var_list = var_list
        self._reshape = reshape
        self._sharded = sharded
        self._max_to_keep = max_to_keep
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._name = name
        self._restore_sequentially = restore_sequentially
        self.saver_def = saver_def
        self._builder = builder
        self._is_built = False
        self._save_lock = threading.Lock()
        self._allow_empty = allow_empty
        self._is_empty = None
        self._write_version = write_version
        self._pad_step_number = pad_step_number
        self._filename = filename
        self._last_checkpoints: list = []
        self._took_over_earlier = False   # the state file's checkpoints of this series are adopted once
        self._checkpoints_to_be_deleted: list = []
        self._save_relative_paths = save_relative_paths
        self._next_checkpoint_time = None
        if not defer_build:
            self.build()
        if self.saver_def:
            self._check_saver_def()
            self._write_version = self.saver_def.version

    def build(self) -> None:
        """Builds the save/restore ops (call it once when constructed with defer_build=True)."""
        self._build(self._filename, build_save=True, build_restore=True)

    def _build(self, checkpoint_path, build_save: bool, build_restore: bool) -> None:
        if self._is_built:
            return
        self._is_built = True
        if not self.saver_def:
            if self._builder is None:
                self._builder = BulkSaverBuilder(self._write_version)
            if self._var_list is None:
                self._var_list = all_saveable_objects()
            if not self._var_list:
                if self._allow_empty:
                    self._is_empty = True
                    return
                raise ValueError("No variables to save")
            self._is_empty = False
            self.saver_def = self._builder._build_internal(
                self._var_list, reshape=self._reshape, sharded=self._sharded, max_to_keep=self._max_to_keep,
                keep_checkpoint_every_n_hours=self._keep_checkpoint_every_n_hours, name=self._name,
                restore_sequentially=self._restore_sequentially, filename=checkpoint_path,
                build_save=build_save, build_restore=build_restore)
        elif self._name:
            # With a saver_def, `name` is the scope its graph was imported under (TF changes the
            # given SaverDef in place too).
            for f in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
                setattr(self.saver_def, f, _prepend_scope(getattr(self.saver_def, f), self._name))
        self._is_empty = False
        self._check_saver_def()
        self._next_checkpoint_time = time.time() + self.saver_def.keep_checkpoint_every_n_hours * 3600

    def _check_saver_def(self) -> None:
        if not isinstance(self.saver_def, SaverDef):
            raise ValueError(f"saver_def must be a saver_pb2.SaverDef: {self.saver_def}")
        if not self.saver_def.save_tensor_name:
            raise ValueError(f"saver_def must specify the save_tensor_name: {self.saver_def}")
        if not self.saver_def.restore_op_name:
            raise ValueError(f"saver_def must specify the restore_op_name: {self.saver_def}")

    def as_saver_def(self) -> SaverDef:
        """The SaverDef: the names of the filename tensor, save tensor and restore op."""
        return self.saver_def

    def to_proto(self, export_scope=None) -> Optional[SaverDef]:
        """The SaverDef with names relative to `export_scope` (None when outside it)."""
        if export_scope is None:
            return self.saver_def
        names = [self.saver_def.filename_tensor_name, self.saver_def.save_tensor_name, self.saver_def.restore_op_name]
        if not all(n.startswith(export_scope + "/") for n in names):
            return None
        saver_def = SaverDef()
        saver_def.CopyFrom(self.saver_def)
        for f in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
            setattr(saver_def, f, _strip_scope(getattr(saver_def, f), export_scope))
        return saver_def

    @staticmethod
    def from_proto(saver_def, import_scope=None) -> "Saver":
        return Saver(saver_def=saver_def, name=import_scope)

    # -- the kept checkpoints -----------------------------------------------------------------------
    @property
    def last_checkpoints(self) -> list:
        """The kept checkpoints' paths, oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints) -> None:
        if not isinstance(last_checkpoints, list):
            raise TypeError("last_checkpoints must be a list")
        self._last_checkpoints = [(s, np.inf) for s in last_checkpoints]
        self._took_over_earlier = True

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time) -> None:
        """Sets the kept checkpoints from [(path, save time)], oldest first."""
        if not isinstance(last_checkpoints_with_time, list):
            raise TypeError("last_checkpoints_with_time must be a list")
        self._last_checkpoints = list(last_checkpoints_with_time)
        self._took_over_earlier = True

    def _take_over_earlier_checkpoints(self, save_dir: str, latest_filename: str, save_path: str) -> None:
        """Adopts, once, the checkpoints of this saver's series (`save_path`, `save_path-<step>`)
        that the state file lists and that still exist, as older than its own: a restarted
        trainer's max_to_keep then counts them (TF2's CheckpointManager's rule)."""
        if self._took_over_earlier:
            return
        self._took_over_earlier = True
        try:
            state = get_checkpoint_state(save_dir or ".", latest_filename)
        except ValueError:
            return
        if state is None:
            return
        series = os.path.abspath(save_path)
        known = {os.path.abspath(p) for p, _ in self._last_checkpoints}
        earlier = [os.path.normpath(p) for p in state.all_model_checkpoint_paths if os.path.abspath(p) not in known and
                   (os.path.abspath(p) == series or os.path.abspath(p).startswith(series + "-")) and
                   checkpoint_exists(p)]
        if earlier:
            self._last_checkpoints = list(zip(earlier, get_checkpoint_mtimes(earlier))) + self._last_checkpoints

    def recover_last_checkpoints(self, checkpoint_paths) -> None:
        """Takes over `checkpoint_paths` (e.g. a restarted trainer's state file's list) as the kept
        checkpoints, with their files' times, so max_to_keep deletes them in turn."""
        mtimes = get_checkpoint_mtimes(checkpoint_paths)
        self.set_last_checkpoints_with_time(list(zip(checkpoint_paths, mtimes)))

    def _RecordLastCheckpoint(self, latest_save_path: str) -> None:
        if not self.saver_def.max_to_keep:
            return
        self._last_checkpoints = [(p, t) for p, t in self._last_checkpoints if p != latest_save_path]
        self._last_checkpoints.append((latest_save_path, time.time()))
        if len(self._last_checkpoints) > self.saver_def.max_to_keep:
            self._checkpoints_to_be_deleted.append(self._last_checkpoints.pop(0))

    def _MaybeDeleteOldCheckpoints(self, meta_graph_suffix: str = "meta") -> None:
        while self._checkpoints_to_be_deleted:
            path, saved_at = self._checkpoints_to_be_deleted.pop(0)
            if saved_at > self._next_checkpoint_time:   # kept: one every keep_checkpoint_every_n_hours
                self._next_checkpoint_time += self.saver_def.keep_checkpoint_every_n_hours * 3600
                continue
            try:
                remove_checkpoint(path, self.saver_def.version, meta_graph_suffix)
            except OSError as e:
                _log.warning("Ignoring: %s", e)

    # -- save and restore -------------------------------------------------------------------------
    def save(self, sess, save_path, global_step=None, latest_filename=None, meta_graph_suffix="meta",
             write_meta_graph=True, write_state=True, strip_default_attrs=False, save_debug_info=False):
        """Saves the variables to `save_path` (`save_path-<global_step>` when global_step is
        given, an int or a variable/tensor read in `sess`); returns the checkpoint prefix. Writes
        the meta graph `<prefix>.meta` and then the state file `checkpoint` beside it. Saves from
        several threads (a Supervisor's checkpoint thread beside the program's final save) take
        turns, each from reading the step to writing the state file, which so names the later step."""
        with self._save_lock:
            return self._save(sess, save_path, global_step, latest_filename, meta_graph_suffix, write_meta_graph,
                              write_state, strip_default_attrs)

    def _save(self, sess, save_path, global_step, latest_filename, meta_graph_suffix, write_meta_graph, write_state,
              strip_default_attrs):
        if not self._is_built:
            raise RuntimeError("`build()` should be called before save if defer_build==True")
        if latest_filename is None:
            latest_filename = "checkpoint"
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        save_path = save_path.decode() if isinstance(save_path, bytes) else str(save_path)
        if global_step is not None:
            if not isinstance(global_step, (int, np.integer)):
                global_step = _global_step_value(sess, global_step)
            checkpoint_file = f"{save_path}-{int(global_step):08d}" if self._pad_step_number \
                else f"{save_path}-{int(global_step)}"
        else:
            checkpoint_file = save_path
            if os.path.basename(save_path) == latest_filename and not self._sharded:
                raise ValueError(f"'latest_filename' collides with 'save_path': '{latest_filename}' and "
                                 f"'{save_path}'")
        if not hasattr(sess, "run") or not hasattr(sess, "graph"):
            raise TypeError(f"'sess' must be a Session; {sess}")
        parent = os.path.dirname(save_path)
        if parent and not os.path.isdir(parent):
            raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
        model_checkpoint_path = None
        if self._sharded:
            _remove_abandoned_shards(save_path)
        if not self._is_empty:
            model_checkpoint_path = sess.run(self.saver_def.save_tensor_name,
                                             {self.saver_def.filename_tensor_name: checkpoint_file})
            if isinstance(model_checkpoint_path, (bytes, np.bytes_)):
                model_checkpoint_path = model_checkpoint_path.decode()
            model_checkpoint_path = str(model_checkpoint_path)
        if write_meta_graph:
            meta_file = meta_graph_filename(checkpoint_file, meta_graph_suffix)
            with sess.graph.as_default():
                write_saver_meta_graph(meta_file, sess.graph, self.saver_def, strip_default_attrs)
        if model_checkpoint_path is not None and write_state:
            if self.saver_def.max_to_keep:
                self._take_over_earlier_checkpoints(parent, latest_filename, save_path)
            self._RecordLastCheckpoint(model_checkpoint_path)
            update_checkpoint_state_internal(save_dir=parent, model_checkpoint_path=model_checkpoint_path,
                                                all_model_checkpoint_paths=self.last_checkpoints,
                                                latest_filename=latest_filename,
                                                save_relative_paths=self._save_relative_paths)
            self._MaybeDeleteOldCheckpoints(meta_graph_suffix)
        return model_checkpoint_path

    def restore(self, sess, save_path) -> None:
        """Restores the variables from checkpoint `save_path` (ours or TensorFlow's V2).
        ValueError when no checkpoint is there; a missing key is NotFoundError and a shape or
        dtype mismatch InvalidArgumentError, naming the variable."""
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        prefix = save_path.decode() if isinstance(save_path, bytes) else str(save_path)
        if not checkpoint_exists(prefix):
            raise ValueError("The passed save_path is not a valid checkpoint: " + prefix)
        _log.info("Restoring parameters from %s", prefix)
        try:
            sess.run(self.saver_def.restore_op_name, {self.saver_def.filename_tensor_name: prefix})
        except errors.NotFoundError as err:
            raise _wrap_restore_error(err, "a Variable name or other graph key that is missing") from None
        except errors.InvalidArgumentError as err:
            raise _wrap_restore_error(err, "a mismatch between the current graph and the graph") from None

    def export_meta_graph(self, filename=None, collection_list=None, as_text=False, export_scope=None,
                          clear_devices=False, clear_extraneous_savers=False, strip_default_attrs=False,
                          save_debug_info=False) -> MetaGraphDef:
        """The default graph with this saver's SaverDef as a MetaGraphDef, written to `filename`
        when given."""
        return export_meta_graph(filename=filename, saver_def=self.saver_def, collection_list=collection_list,
                                 as_text=as_text, export_scope=export_scope, clear_devices=clear_devices,
                                 clear_extraneous_savers=clear_extraneous_savers,
                                 strip_default_attrs=strip_default_attrs, save_debug_info=save_debug_info)


def _remove_abandoned_shards(save_path: str) -> None:
    """Removes the `<save_path>[-<step>]_temp_<uuid>` directories a sharded save of this series
    left when it was killed before MergeV2Checkpoints (saves of one series do not overlap)."""
    parent, base = os.path.split(save_path)
    abandoned = re.compile(re.escape(base) + r"(-\d+)?_temp_[0-9a-f]{32}")
    try:
        names = os.listdir(parent or ".")
    except OSError:
        return
    for name in names:
        if abandoned.fullmatch(name):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def _wrap_restore_error(err, verbiage: str):
    msg = (f"Restoring from checkpoint failed. This is most likely due to {verbiage} from the checkpoint. Please "
           f"ensure that you have not altered the graph expected based on the checkpoint. Original error:\n\n"
           f"{err.message}")
    return type(err)(err.node_def, err.op, msg)


# Savers travel in meta graphs (the SAVERS collection) as their SaverDefs, as in TF.
register_proto_function(GraphKeys.SAVERS, SaverDef, lambda saver, export_scope=None: saver.to_proto(export_scope),
                        Saver.from_proto)


@tf_export("train.export_meta_graph")
def export_meta_graph(filename=None, meta_info_def=None, graph_def=None, saver_def=None, collection_list=None,
                      as_text=False, graph=None, export_scope=None, clear_devices=False,
                      clear_extraneous_savers=False, strip_default_attrs=False, save_debug_info=False,
                      **kwargs) -> MetaGraphDef:
    """tf.train.export_meta_graph(filename=None, meta_info_def=None, graph_def=None,
    saver_def=None, collection_list=None, as_text=False, graph=None, export_scope=None,
    clear_devices=False, clear_extraneous_savers=False, strip_default_attrs=False): the graph
    (default graph), its collections and saver_def as TF's MetaGraphDef proto, written to
    `filename` when given (binary, or protobuf text with as_text), which TensorFlow reads."""
    meta, _ = export_scoped_meta_graph(
        filename=filename, meta_info_def=meta_info_def, graph_def=graph_def, saver_def=saver_def,
        collection_list=collection_list, as_text=as_text, graph=graph, export_scope=export_scope,
        clear_devices=clear_devices, clear_extraneous_savers=clear_extraneous_savers,
        strip_default_attrs=strip_default_attrs, save_debug_info=save_debug_info, **kwargs)
    return meta


def _import_meta_graph_with_return_elements(meta_graph_or_file, clear_devices=False, import_scope=None,
                                            return_elements=None, **kwargs) -> tuple:
    meta = meta_graph_or_file if isinstance(meta_graph_or_file, MetaGraphDef) \
        else read_meta_graph_file(meta_graph_or_file)
    var_list, returned = import_scoped_meta_graph_with_return_elements(
        meta, clear_devices=clear_devices, import_scope=import_scope, return_elements=return_elements, **kwargs)
    if meta.HasField("saver_def"):
        scope = import_scope
        if var_list:        # the scope the import used (made unique as a name scope is), as TF infers it
            key, v = next(iter(var_list.items()))
            scope = v.name[:-len(key)].rstrip("/") or None
        saver_def = SaverDef()
        saver_def.CopyFrom(meta.saver_def)
        return Saver(saver_def=saver_def, name=scope), returned
    if all_saveable_objects(scope=import_scope):
        return Saver(), returned
    _log.info("Saver not created because there are no variables in the graph to restore")
    return None, returned


@tf_export("train.import_meta_graph")
def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None, **kwargs) -> Optional[Saver]:
    """tf.train.import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None,
    **kwargs): adds the meta graph's ops (binary or text file, ours or TensorFlow's, or a
    MetaGraphDef proto) and collections to the default graph, under import_scope; kwargs go to
    import_scoped_meta_graph (input_map, ...). Returns a Saver built from its saver_def (or over
    all saveable objects when it has none; None when there are none either)."""
    return _import_meta_graph_with_return_elements(meta_graph_or_file, clear_devices, import_scope, **kwargs)[0]
