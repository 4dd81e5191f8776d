"""Keras's fault tolerance in multi-worker training (TF 1.15's keras/distribute/
multi_worker_training_state.py, MultiWorkerTrainingState), which ModelCheckpoint drives when fit runs
under a multi-worker strategy (in the distribute coordinator's worker context).

At each epoch's end the model's weights and the epoch (the variable `_ckpt_saved_epoch`, which the
model tracks only while the backup is written or read, so the user's own checkpoints do not hold it,
as TF's untrack_vars) are written as a
TensorFlow-format checkpoint `<dirname(filepath)>/backup/training_state` by the worker that
checkpoints (the chief); another worker writes the same to
`<dirname(filepath)>/temp_training_states/<uuid>/training_state` and removes it (every worker saves,
as TF's, where a save reads all workers' values). When fit begins and the backup directory exists
(the job was restarted after a worker failed), the workers that initialise variables
(experimental_should_init: every worker of MultiWorkerMirroredStrategy, the chief of
ParameterServerStrategy) load it, and fit resumes at the epoch after the saved one. A fit that ends
normally removes the backup directory (the chief's).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import uuid

import numpy as np

from tensorweave.distribute.distribute_coordinator import get_current_worker_context
from tensorweave.framework import dtypes
from tensorweave.framework.graph import get_default_graph
from tensorweave.ops.state.variables import Variable
from tensorweave.keras import backend as K

CKPT_SAVED_EPOCH = "_ckpt_saved_epoch"   # the model's attribute, and its name in the backup checkpoint
CKPT_SAVED_EPOCH_UNUSED_VALUE = -1


class MultiWorkerTrainingState:
    """Backs up and restores the training state (weights and epoch) of `model` beside the
    ModelCheckpoint path `original_filepath`, in the current worker context."""

    def __init__(self, model, original_filepath):
        self._context = get_current_worker_context()
        if self._context is None:
            raise ValueError("MultiWorkerTrainingState is only used in multi-worker training (inside the distribute "
                             "coordinator's worker context)")
        self._model = model
        folder = os.path.dirname(original_filepath)
        self._backup_dir = os.path.join(folder, "backup")
        self._backup_filepath = os.path.join(self._backup_dir, "training_state")
        self._temp_root = os.path.join(folder, "temp_training_states")
        # A variable of this worker, on no device of the strategy's (fit runs outside its scope); every
        # worker sets it to the same epoch.
        with K.get_graph().as_default(), get_default_graph().device(None):
            self._ckpt_saved_epoch = Variable(np.int64(CKPT_SAVED_EPOCH_UNUSED_VALUE), dtype=dtypes.int64,
                                              trainable=False, name="ckpt_saved_epoch")
        K.get_session().run(self._ckpt_saved_epoch.initializer)

    def back_up(self, epoch: int) -> None:
        """Saves the weights and `epoch`: the chief to the backup, another worker to a temporary
        directory removed after."""
        K.set_value(self._ckpt_saved_epoch, epoch)
        if self._context.should_checkpoint:
            with self._tracked():
                self._model.save_weights(self._backup_filepath, overwrite=True)
            return
        temp_dir = os.path.join(self._temp_root, str(uuid.uuid4()))
        try:
            with self._tracked():
                self._model.save_weights(os.path.join(temp_dir, "training_state"), overwrite=True)
        finally:
            shutil.rmtree(temp_dir, ignore_errors=True)
            try:
                os.rmdir(self._temp_root)   # (unless another worker's is there now)
            except OSError:
                pass

    def restore(self) -> bool:
        """Loads the backup if there is one and this worker loads checkpoints; whether it did."""
        if not self._context.experimental_should_init or not os.path.exists(self._backup_dir):
            return False
        try:
            with self._tracked():
                self._model.load_weights(self._backup_filepath)
        except (IOError, ValueError) as e:
            raise ValueError(f"Error loading file from {self._backup_filepath}. Reason: {e}") from e
        return True

    def delete_backup(self) -> None:
        """After fit ended normally: the backup is not needed any more (the chief removes it)."""
        if self._context.should_checkpoint:
            shutil.rmtree(self._backup_dir, ignore_errors=True)

    def maybe_load_initial_epoch_from_ckpt(self, initial_epoch: int, mode) -> int:
        """The epoch fit starts at: after the backed-up one when training resumes from a backup,
        else `initial_epoch` (fit's)."""
        epoch = int(K.get_value(self._ckpt_saved_epoch))
        return epoch + 1 if mode == "train" and epoch >= 0 else initial_epoch

    @contextlib.contextmanager
    def _tracked(self):
        """The model tracks the epoch variable inside (saving/load_weights include it)."""
        setattr(self._model, CKPT_SAVED_EPOCH, self._ckpt_saved_epoch)
        try:
            yield
        finally:
            self._model.__dict__.pop(CKPT_SAVED_EPOCH, None)
