"""tf.keras.callbacks (TF 1.15, graph mode): the hooks Model.fit/evaluate/predict call at the
start and end of training, each epoch and each batch, with the logs of that moment ("loss", the
metrics, "val_..." at an epoch's end): History (what fit returns), BaseLogger and ProgbarLogger
(which fit adds), ModelCheckpoint, EarlyStopping, TensorBoard (a summary FileWriter),
LearningRateScheduler, ReduceLROnPlateau, CSVLogger, LambdaCallback, TerminateOnNaN,
RemoteMonitor (JSON over HTTP POST)."""
from __future__ import annotations

import collections
import csv
import json
import os
import re
import shutil
import tempfile
import urllib.parse
import urllib.request

import numpy as np

from tensorweave import _api
from tensorweave.distribute.distribute_coordinator import get_current_worker_context
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import summary_pb2
from tensorweave.logging import warning
from tensorweave.ops.array.core import squeeze as _squeezed
from tensorweave.ops.array.core import placeholder
from tensorweave.ops.array.fill import zeros
from tensorweave.ops.math.sequences import range as sequence_range
from tensorweave.ops.state.scatter import scatter_update
from tensorweave.ops.state.variables import Variable, variables_initializer
from tensorweave.summary.summary import histogram, image, merge_all
from tensorweave.train.saver import Saver
from tensorweave.summary.writer import FileWriter
from tensorweave.keras import backend as K
from tensorweave.keras.multi_worker_training_state import MultiWorkerTrainingState
from tensorweave.keras.utils.generic_utils import Progbar

__getattr__, __dir__ = _api.lazy_attributes(__name__)


@tf_export("keras.callbacks.Callback")
class Callback:
    """The base of callbacks: `model` and `params` (epochs, steps, samples, verbose,
    do_validation, metrics) are set by the loop; override the on_* hooks. `_chief_worker_only`
    True: under a multi-worker strategy only the chief runs it (TF's rule)."""

    _chief_worker_only = None

    def __init__(self):
        self.validation_data = None
        self.model = None
        self.params = None

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self.model = model

    def on_batch_begin(self, batch, logs=None):
        """A training batch begins (the same as on_train_batch_begin)."""

    def on_batch_end(self, batch, logs=None):
        """A training batch ended (the same as on_train_batch_end)."""

    def on_epoch_begin(self, epoch, logs=None):
        """An epoch of fit begins."""

    def on_epoch_end(self, epoch, logs=None):
        """An epoch of fit ended; logs has the epoch's loss and metrics, val_ ones after validation."""

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs=logs)

    def on_test_batch_begin(self, batch, logs=None):
        """A batch of evaluate (or of fit's validation) begins."""

    def on_test_batch_end(self, batch, logs=None):
        """A batch of evaluate (or of fit's validation) ended."""

    def on_predict_batch_begin(self, batch, logs=None):
        """A batch of predict begins."""

    def on_predict_batch_end(self, batch, logs=None):
        """A batch of predict ended."""

    def on_train_begin(self, logs=None):
        """fit begins."""

    def on_train_end(self, logs=None):
        """fit ended."""

    def on_test_begin(self, logs=None):
        """evaluate (or fit's validation) begins."""

    def on_test_end(self, logs=None):
        """evaluate (or fit's validation) ended."""

    def on_predict_begin(self, logs=None):
        """predict begins."""

    def on_predict_end(self, logs=None):
        """predict ended."""


class CallbackList:
    """The callbacks of one fit/evaluate/predict, called in order."""

    def __init__(self, callbacks=None):
        self.callbacks = list(callbacks or [])
        self.params = {}
        self.model = None

    def append(self, callback):
        self.callbacks.append(callback)

    def set_params(self, params):
        self.params = params
        for callback in self.callbacks:
            callback.set_params(params)

    def set_model(self, model):
        self.model = model
        for callback in self.callbacks:
            callback.set_model(model)

    def _call_batch_hook(self, mode, hook, batch, logs=None):
        for callback in self.callbacks:
            getattr(callback, f"on_{mode}_batch_{hook}")(batch, logs)

    def _call_begin_hook(self, mode):
        for callback in self.callbacks:
            getattr(callback, f"on_{mode}_begin")(None)

    def _call_end_hook(self, mode):
        for callback in self.callbacks:
            getattr(callback, f"on_{mode}_end")(None)

    def on_epoch_begin(self, epoch, logs=None):
        for callback in self.callbacks:
            callback.on_epoch_begin(epoch, logs if logs is not None else {})

    def on_epoch_end(self, epoch, logs=None):
        for callback in self.callbacks:
            callback.on_epoch_end(epoch, logs if logs is not None else {})

    def __iter__(self):
        return iter(self.callbacks)


def configure_callbacks(callbacks, model, do_validation=False, batch_size=None, epochs=None, steps_per_epoch=None,
                        samples=None, verbose=1, count_mode="steps", mode="train"):
    """The CallbackList of a loop: for fit, BaseLogger first, then the user's, a new History
    (model.history) and, when verbose, a ProgbarLogger; model and params set."""
    if isinstance(callbacks, CallbackList):
        return callbacks
    callbacks = list(callbacks or [])
    if mode == "train":
        model.history = History()
        callbacks = [BaseLogger()] + callbacks + [model.history]
        if verbose:
            callbacks.append(ProgbarLogger(count_mode))
    callback_list = CallbackList(callbacks)
    callback_list.set_model(model)
    metric_names = model.metrics_names
    for callback in callback_list:
        if isinstance(callback, (BaseLogger, ProgbarLogger)):
            callback.stateful_metrics = set(metric_names[1:])
    metrics = []
    if mode != "predict":
        metrics = list(metric_names) + (["val_" + n for n in metric_names] if do_validation else [])
    callback_list.set_params({"batch_size": batch_size, "epochs": epochs, "steps": steps_per_epoch,
                              "samples": samples, "verbose": verbose, "do_validation": do_validation,
                              "metrics": metrics})
    model.stop_training = False
    return callback_list


@tf_export("keras.callbacks.BaseLogger")
class BaseLogger(Callback):
    """Averages the batch values of each epoch (weighted by batch size) into the epoch's logs;
    stateful metrics keep their last value."""

    def __init__(self, stateful_metrics=None):
        super().__init__()
        self.stateful_metrics = set(stateful_metrics or [])

    def on_epoch_begin(self, epoch, logs=None):
        self.seen = 0
        self.totals = {}

    def on_batch_end(self, batch, logs=None):
        logs = logs or {}
        batch_size = logs.get("size", 0)
        self.seen += batch_size * logs.get("num_steps", 1)
        for k, v in logs.items():
            if k in self.stateful_metrics:
                self.totals[k] = v
            elif k in self.totals:
                self.totals[k] += v * batch_size
            else:
                self.totals[k] = v * batch_size

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        for k in self.params["metrics"]:
            if k in self.totals:
                logs[k] = self.totals[k] if k in self.stateful_metrics else self.totals[k] / self.seen


@tf_export("keras.callbacks.History")
class History(Callback):
    """Records each epoch's logs: `history` maps a name ("loss", "val_acc", ...) to its values,
    `epoch` lists the epochs run. Model.fit returns it."""

    def on_train_begin(self, logs=None):
        self.epoch = []
        self.history = {}

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)


@tf_export("keras.callbacks.ProgbarLogger")
class ProgbarLogger(Callback):
    """Prints the progress bar (keras.utils.Progbar) of each epoch: "Epoch i/n" then the samples
    (count_mode "samples") or steps seen, the loss and the metrics."""

    def __init__(self, count_mode="samples", stateful_metrics=None):
        super().__init__()
        if count_mode not in ("samples", "steps"):
            raise ValueError(f"Unknown `count_mode`: {count_mode}")
        self.use_steps = count_mode == "steps"
        self.stateful_metrics = set(stateful_metrics or [])

    def on_train_begin(self, logs=None):
        self.verbose = self.params["verbose"]
        self.epochs = self.params["epochs"]

    def on_epoch_begin(self, epoch, logs=None):
        self.verbose = self.params["verbose"]
        self.seen = 0
        self.target = self.params["steps"] if self.use_steps else self.params["samples"]
        if self.verbose and (self.params.get("epochs") or 1) > 1:
            print(f"Epoch {epoch + 1}/{self.params['epochs']}")
        self.progbar = Progbar(target=self.target, verbose=self.verbose, stateful_metrics=self.stateful_metrics,
                               unit_name="step" if self.use_steps else "sample")
        self.log_values = []

    def on_batch_begin(self, batch, logs=None):
        self.log_values = []

    def on_batch_end(self, batch, logs=None):
        logs = logs or {}
        num_steps = logs.get("num_steps", 1)
        self.seen += num_steps if self.use_steps else logs.get("size", 0) * num_steps
        self.log_values = [(k, logs[k]) for k in self.params["metrics"] if k in logs]
        # the last batch is drawn by on_epoch_end, with the epoch's values
        if self.verbose and (self.target is None or self.seen < self.target):
            self.progbar.update(self.seen, self.log_values)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        self.log_values += [(k, logs[k]) for k in self.params["metrics"] if k in logs]
        if self.verbose:
            self.progbar.update(self.seen, self.log_values)


def _monitor_op(mode, monitor, what):
    """np.less or np.greater: "auto" is greater for accuracies ("acc" in the name, "fmeasure")."""
    if mode not in ("auto", "min", "max"):
        warning("%s mode %s is unknown, fallback to auto mode.", what, mode)
        mode = "auto"
    if mode == "auto":
        mode = "max" if "acc" in monitor or monitor.startswith("fmeasure") else "min"
    return np.greater if mode == "max" else np.less


@tf_export("keras.callbacks.ModelCheckpoint")
class ModelCheckpoint(Callback):
    """Saves the model (model.save) or its weights (model.save_weights) to `filepath`, formatted
    with the epoch (1-based) and the logs ("weights.{epoch:02d}-{val_loss:.2f}.hdf5"): each epoch
    (`period`/save_freq="epoch") or every save_freq samples, or only when `monitor` improved.
    load_weights_on_restart loads the newest file matching filepath when training begins.

    Under a multi-worker strategy it also backs up the weights and the epoch at each epoch's end to
    `<dirname(filepath)>/backup/training_state`; a fit started again after a worker failed loads that
    and resumes at the next epoch; a fit that ends normally removes it (multi_worker_training_state.py)."""

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False, save_weights_only=False,
                 mode="auto", save_freq="epoch", load_weights_on_restart=False, **kwargs):
        super().__init__()
        self.monitor, self.verbose, self.filepath = monitor, verbose, filepath
        self.save_best_only, self.save_weights_only = save_best_only, save_weights_only
        self.save_freq = save_freq
        self.load_weights_on_restart = load_weights_on_restart
        self.period = kwargs.pop("period", 1)
        if kwargs:
            raise TypeError(f"Unexpected keyword argument(s) to ModelCheckpoint: {sorted(kwargs)}")
        if save_freq != "epoch" and not isinstance(save_freq, int):
            raise ValueError(f"Unrecognized save_freq: {save_freq}")
        self.monitor_op = _monitor_op(mode, monitor, "ModelCheckpoint")
        self.best = np.inf if self.monitor_op is np.less else -np.inf
        self.epochs_since_last_save = 0
        self._samples_seen_since_last_saving = 0
        self._current_epoch = 0

    def on_train_begin(self, logs=None):
        context = get_current_worker_context()
        if context is not None:   # multi-worker: back up each epoch, resume from a backup (TF 1.15's fit)
            self.model._training_state = MultiWorkerTrainingState(self.model, self.filepath)
            if self.model._training_state.restore():
                return   # resuming after a failure: not from the user's files
        if self.load_weights_on_restart and (context is None or context.experimental_should_init):
            latest = self._latest_saved_file()
            if latest is not None:
                self.model.load_weights(latest)

    def on_train_end(self, logs=None):
        state = self.model.__dict__.pop("_training_state", None)
        if state is not None:   # fit ended normally: its backup is not needed
            state.delete_backup()

    def _latest_saved_file(self):
        """The most recently written file whose name the filepath's pattern could have made
        (each {...} field standing for any text); of files written at the same time, the last
        by name, as Keras picks."""
        folder, pattern = os.path.split(self.filepath)
        folder = folder or "."
        regex = re.compile("^" + ".*".join(re.escape(part) for part in re.split(r"\{.*?\}", pattern)) + "$")
        found = []
        for name in os.listdir(folder):
            if ".data-" in name:
                continue
            if name.endswith(".index"):   # a TF-format checkpoint is known by its prefix
                name = name[:-len(".index")]
            if regex.match(name):
                found.append(os.path.join(folder, name))
        def written_at(path):
            return os.path.getmtime(path if os.path.exists(path) else path + ".index"), path   # ties: by name

        return max(found, key=written_at) if found else None

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_batch_end(self, batch, logs=None):
        if isinstance(self.save_freq, int):
            self._samples_seen_since_last_saving += (logs or {}).get("size", 1)
            if self._samples_seen_since_last_saving >= self.save_freq:
                self._save_model(self._current_epoch, logs)
                self._samples_seen_since_last_saving = 0

    def on_epoch_end(self, epoch, logs=None):
        self.epochs_since_last_save += 1
        if self.save_freq == "epoch":
            self._save_model(epoch, logs)
        state = self.model.__dict__.get("_training_state")
        if state is not None:
            state.back_up(epoch)

    def _write(self, file_path) -> None:
        """Saves to `file_path`; on a multi-worker strategy's worker that does not checkpoint, to a
        temporary directory removed after (every worker saves, as TF's: a save reads all workers')."""
        context = get_current_worker_context()
        temp_dir = tempfile.mkdtemp() if context is not None and not context.should_checkpoint else None
        if temp_dir is not None:
            file_path = os.path.join(temp_dir, "temp" + os.path.splitext(self.filepath)[1])
        try:
            if self.save_weights_only:
                self.model.save_weights(file_path, overwrite=True)
            else:
                self.model.save(file_path, overwrite=True)
        finally:
            if temp_dir is not None:
                shutil.rmtree(temp_dir, ignore_errors=True)

    def _save_model(self, epoch, logs) -> None:
        logs = logs or {}
        if not isinstance(self.save_freq, int) and self.epochs_since_last_save < self.period:
            return
        self.epochs_since_last_save = 0
        try:
            file_path = self.filepath.format(epoch=epoch + 1, **logs)
        except KeyError as e:
            raise KeyError(f"Failed to format this callback filepath: \"{self.filepath}\". Reason: {e!r} is not in "
                           f"the logs ({sorted(logs)})") from None
        if not self.save_best_only:
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1:05d}: saving model to {file_path}")
            self._write(file_path)
            return
        current = logs.get(self.monitor)
        if current is None:
            warning("Can save best model only with %s available, skipping.", self.monitor)
        elif self.monitor_op(current, self.best):
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1:05d}: {self.monitor} improved from {self.best:0.5f} to {current:0.5f}, "
                      f"saving model to {file_path}")
            self.best = current
            self._write(file_path)
        elif self.verbose > 0:
            print(f"\nEpoch {epoch + 1:05d}: {self.monitor} did not improve from {self.best:0.5f}")


@tf_export("keras.callbacks.EarlyStopping")
class EarlyStopping(Callback):
    """Stops fit when `monitor` has not improved by min_delta for `patience` epochs (or not
    beaten `baseline`); restore_best_weights puts back the weights of the best epoch."""

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto", baseline=None,
                 restore_best_weights=False):
        super().__init__()
        self.monitor, self.patience, self.verbose, self.baseline = monitor, patience, verbose, baseline
        self.min_delta = abs(min_delta)
        self.restore_best_weights = restore_best_weights
        self.best_weights = None
        self.monitor_op = _monitor_op(mode, monitor, "EarlyStopping")
        if self.monitor_op is np.less:
            self.min_delta *= -1
        self.wait = self.stopped_epoch = 0

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def on_epoch_end(self, epoch, logs=None):
        current = (logs or {}).get(self.monitor)
        if current is None:
            warning("Early stopping conditioned on metric `%s` which is not available. Available metrics are: %s",
                    self.monitor, ",".join(logs or {}))
            return
        if self.monitor_op(current - self.min_delta, self.best):
            self.best = current
            self.wait = 0
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            return
        self.wait += 1
        if self.wait >= self.patience:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                if self.verbose > 0:
                    print("Restoring model weights from the end of the best epoch.")
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1:05d}: early stopping")


def _learning_rate(model):
    optimizer = model.optimizer
    if not hasattr(optimizer, "lr"):
        raise ValueError('Optimizer must have a "lr" attribute.')
    return optimizer.lr


@tf_export("keras.callbacks.LearningRateScheduler")
class LearningRateScheduler(Callback):
    """Sets the optimizer's learning rate at each epoch's start to schedule(epoch, lr) (or
    schedule(epoch)); the epoch's logs get "lr"."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        lr_variable = _learning_rate(self.model)
        try:
            lr = self.schedule(epoch, float(K.get_value(lr_variable)))
        except TypeError:   # a schedule of the epoch only (Keras's older signature)
            lr = self.schedule(epoch)
        if not isinstance(lr, (float, np.float32, np.float64)):
            raise ValueError('The output of the "schedule" function should be float.')
        K.set_value(lr_variable, lr)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1:05d}: LearningRateScheduler reducing learning rate to {lr}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = K.get_value(_learning_rate(self.model))


@tf_export("keras.callbacks.ReduceLROnPlateau")
class ReduceLROnPlateau(Callback):
    """Multiplies the learning rate by `factor` (not below min_lr) when `monitor` has not
    improved by min_delta for `patience` epochs, then waits `cooldown` epochs."""

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto", min_delta=1e-4,
                 cooldown=0, min_lr=0, **kwargs):
        super().__init__()
        if "epsilon" in kwargs:
            min_delta = kwargs.pop("epsilon")
            warning("`epsilon` argument is deprecated and will be removed, use `min_delta` instead.")
        if kwargs:
            raise TypeError(f"Unexpected keyword argument(s) to ReduceLROnPlateau: {sorted(kwargs)}")
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor >= 1.0.")
        self.monitor, self.factor, self.min_lr, self.min_delta = monitor, factor, min_lr, min_delta
        self.patience, self.verbose, self.cooldown, self.mode = patience, verbose, cooldown, mode
        self._reset()

    def _reset(self):
        if _monitor_op(self.mode, self.monitor, "Learning Rate Plateau Reducing") is np.less:
            self.monitor_op = lambda a, b: np.less(a, b - self.min_delta)
            self.best = np.inf
        else:
            self.monitor_op = lambda a, b: np.greater(a, b + self.min_delta)
            self.best = -np.inf
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, logs=None):
        self._reset()

    def in_cooldown(self):
        return self.cooldown_counter > 0

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        lr_variable = _learning_rate(self.model)
        logs["lr"] = K.get_value(lr_variable)
        current = logs.get(self.monitor)
        if current is None:
            warning("Reduce LR on plateau conditioned on metric `%s` which is not available. Available metrics are: "
                    "%s", self.monitor, ",".join(logs))
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self.monitor_op(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = float(K.get_value(lr_variable))
                if old_lr > self.min_lr:
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    K.set_value(lr_variable, new_lr)
                    if self.verbose > 0:
                        print(f"\nEpoch {epoch + 1:05d}: ReduceLROnPlateau reducing learning rate to {new_lr}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0


@tf_export("keras.callbacks.CSVLogger")
class CSVLogger(Callback):
    """Writes each epoch's logs as a CSV row ("epoch" then the names, sorted); `append` continues
    an existing file (without a second header)."""

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.sep, self.filename, self.append = separator, filename, append
        self.writer = None
        self.keys = None
        self.append_header = True
        self.csv_file = None

    def on_train_begin(self, logs=None):
        if self.append:
            if os.path.exists(self.filename):
                with open(self.filename) as f:
                    self.append_header = not bool(len(f.readline()))
            mode = "a"
        else:
            mode = "w"
        self.csv_file = open(self.filename, mode, newline="")

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}

        def handle_value(k):
            if isinstance(k, str):
                return k
            if isinstance(k, collections.abc.Iterable) and not (isinstance(k, np.ndarray) and k.ndim == 0):
                return f'"[{", ".join(map(str, k))}]"'
            return k

        if self.keys is None:
            self.keys = sorted(logs.keys())
        if self.model.stop_training:   # NA so that CSV readers do not fail on the last epoch
            logs = {k: logs.get(k, "NA") for k in self.keys}
        if not self.writer:
            class CustomDialect(csv.excel):
                delimiter = self.sep
            self.writer = csv.DictWriter(self.csv_file, fieldnames=["epoch"] + self.keys, dialect=CustomDialect)
            if self.append_header:
                self.writer.writeheader()
        row = collections.OrderedDict({"epoch": epoch})
        row.update((key, handle_value(logs[key])) for key in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs=None):
        self.csv_file.close()
        self.writer = None


@tf_export("keras.callbacks.LambdaCallback")
class LambdaCallback(Callback):
    """A callback of the given functions: on_epoch_begin/end(epoch, logs), on_batch_begin/end(batch,
    logs), on_train_begin/end(logs), and any other on_* hook as a keyword argument."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_batch_begin=None, on_batch_end=None,
                 on_train_begin=None, on_train_end=None, **kwargs):
        super().__init__()
        self.__dict__.update(kwargs)
        for name, fn in (("on_epoch_begin", on_epoch_begin), ("on_epoch_end", on_epoch_end),
                         ("on_batch_begin", on_batch_begin), ("on_batch_end", on_batch_end),
                         ("on_train_begin", on_train_begin), ("on_train_end", on_train_end)):
            if fn is not None:
                setattr(self, name, fn)
            elif name.startswith("on_batch") or name.startswith("on_epoch"):
                setattr(self, name, lambda batch, logs: None)
            else:
                setattr(self, name, lambda logs: None)


@tf_export("keras.callbacks.TerminateOnNaN")
class TerminateOnNaN(Callback):
    """Stops training at the first batch whose loss is NaN or infinite."""

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and (np.isnan(loss) or np.isinf(loss)):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


def _weight_image(w):
    """A weight as Keras draws it: a kernel [1, rows, cols, 1] (the longer side across), a bias
    [1, n, 1, 1], a 1-D convolution kernel one image per output channel; None for other ranks."""
    w_img = _squeezed(w)
    shape = w_img.shape.as_list()
    if len(shape) == 2:
        if shape[0] > shape[1]:
            w_img = K.transpose(w_img)
            shape = shape[::-1]
        return K.reshape(w_img, [1, shape[0], shape[1], 1])
    if len(shape) == 3:
        if K.image_data_format() == "channels_last":
            w_img = K.permute_dimensions(w_img, (2, 0, 1))
            shape = [shape[2], shape[0], shape[1]]
        return K.reshape(w_img, [shape[0], shape[1], shape[2], 1])
    if len(shape) == 1:
        return K.reshape(w_img, [1, shape[0], 1, 1])
    return None


PROJECTOR_CONFIG_FILE = "projector_config.pbtxt"   # what TensorBoard's projector plugin reads in a log dir


def _pbtxt_string(text: str) -> str:
    """A string as protobuf's text format writes it: quoted, C-escaped (bytes past ASCII as octal)."""
    special = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"', ord("'"): "\\'",
               ord("\\"): "\\\\"}
    out = "".join(special.get(b, chr(b) if 32 <= b < 127 else f"\\{b:03o}") for b in text.encode("utf8"))
    return f'"{out}"'


def projector_config_text(embeddings) -> str:
    """The text of a projector_config.pbtxt (a ProjectorConfig in protobuf's text format, as
    projector.visualize_embeddings writes it) for [(tensor_name, metadata_path or None)]."""
    lines = []
    for tensor_name, metadata_path in embeddings:
        lines += ["embeddings {", f"  tensor_name: {_pbtxt_string(tensor_name)}"]
        if metadata_path is not None:
            lines.append(f"  metadata_path: {_pbtxt_string(metadata_path)}")
        lines.append("}")
    return "".join(line + "\n" for line in lines)


def _as_input_list(data, model) -> list:
    """embeddings_data as one array per model input (an array, a list of them, or a dict by input name)."""
    if isinstance(data, dict):
        missing = [name for name in model.input_names if name not in data]
        if missing:
            raise ValueError(f"TensorBoard: embeddings_data has no entry for the model's input(s) {missing}; it has "
                             f"{sorted(data)}.")
        data = [data[name] for name in model.input_names]
    data = [np.asarray(a) for a in (data if isinstance(data, (list, tuple)) else [data])]
    if len(data) != len(model.inputs):
        raise ValueError(f"TensorBoard: embeddings_data holds {len(data)} array(s), but the model has "
                         f"{len(model.inputs)} input(s).")
    return data


@tf_export("keras.callbacks.TensorBoard")
class TensorBoard(Callback):
    """Writes event files for TensorBoard under log_dir (TF 1.15's graph-mode callback): the graph
    (write_graph); each epoch's logs as scalars "epoch_<name>" (step = epoch; with update_freq
    "batch" or a number of samples also "batch_<name>" every so many samples, and the epoch ones
    at the samples seen); every histogram_freq epochs, on each validation batch (step = the
    validation batches seen; validation data is needed), histograms of each layer's weights
    ("dense/kernel_0"), outputs ("dense_out") and, with write_grads, of the total loss's gradient
    for each trainable weight ("dense/kernel_0_grad"), and with write_images each weight drawn as
    an image. With embeddings_freq, every so many epochs the outputs of the layers
    embeddings_layer_names (default: the Embedding layers) for embeddings_data (fed batch_size
    rows at a time) are stored in variables "<layer>_embedding" saved to
    log_dir/keras_embedding.ckpt-<epoch>, and projector_config.pbtxt names them for TensorBoard's
    projector, with embeddings_metadata (a file for all layers, or a dict by layer name) as their
    metadata_path. profile_batch is accepted as Keras's: no profiler traces are written."""

    def __init__(self, log_dir="./logs", histogram_freq=0, batch_size=32, write_graph=True, write_grads=False,
                 write_images=False, embeddings_freq=0, embeddings_layer_names=None, embeddings_metadata=None,
                 embeddings_data=None, update_freq="epoch", profile_batch=2):
        super().__init__()
        self.log_dir, self.histogram_freq, self.batch_size = log_dir, histogram_freq, batch_size
        self.write_graph, self.write_grads, self.write_images = write_graph, write_grads, write_images
        self.embeddings_freq, self.embeddings_layer_names = embeddings_freq, embeddings_layer_names
        self.embeddings_metadata, self.embeddings_data = embeddings_metadata, embeddings_data
        self.update_freq = 1 if update_freq == "batch" else update_freq
        self._chief_worker_only = True   # (under a multi-worker strategy the chief's summaries only)
        self.writer = None
        self.merged = None
        self._samples_seen = self._samples_seen_at_last_write = self._total_batches_seen = 0
        self._total_val_batches_seen = 0

    def _make_histogram_ops(self, model) -> None:
        for layer in model.layers:
            for w in layer.weights:
                name = w.name.replace(":", "_")
                histogram(name, w)
                picture = _weight_image(w) if self.write_images else None
                if picture is not None:
                    image(name, picture)
            if self.write_grads:
                # a Keras optimizer's gradients (clipped as it clips them); a wrapped tf.train optimizer's plain ones
                get_gradients = getattr(model.optimizer, "get_gradients", K.gradients)
                for w in layer.trainable_weights:
                    grad = get_gradients(model.total_loss, [w])[0]
                    histogram(w.name.replace(":", "_") + "_grad",
                              grad.values if type(grad).__name__ == "IndexedSlices" else grad)
            try:
                output = layer.output
            except AttributeError:   # a layer called more than once has no one output
                continue
            if isinstance(output, list):
                for i, out in enumerate(output):
                    histogram(f"{layer.name}_out_{i}", out)
            else:
                histogram(f"{layer.name}_out", output)

    def set_model(self, model):
        self.model = model
        graph = K.get_graph()
        self.writer = FileWriter(self.log_dir, graph if self.write_graph else None)
        with graph.as_default():
            if self.histogram_freq and self.merged is None:
                self._make_histogram_ops(model)
            self.merged = merge_all()
            if self.embeddings_freq and self.embeddings_data is not None:
                self._make_embeddings(model)

    def _make_embeddings(self, model) -> None:
        self.embeddings_data = _as_input_list(self.embeddings_data, model)
        names = self.embeddings_layer_names or [layer.name for layer in model.layers
                                                if type(layer).__name__ == "Embedding"]
        self.batch_id = batch_id = placeholder("int32")
        self.step = step = placeholder("int32")
        self.assign_embeddings, embeddings_vars = [], {}
        for layer in model.layers:
            if layer.name not in names:
                continue
            output = model.get_layer(layer.name).output
            size = int(np.prod(output.shape.as_list()[1:]))
            rows = K.reshape(output, (step, size))
            embedding = Variable(zeros((self.embeddings_data[0].shape[0], size)), name=layer.name + "_embedding")
            embeddings_vars[layer.name] = embedding
            # rows batch_id .. batch_id + step (TF 1.15 assigns the slice embedding[batch_id:batch_id + step])
            self.assign_embeddings.append(scatter_update(embedding, sequence_range(batch_id, batch_id + step), rows))
        unknown = sorted(set(names) - {layer.name for layer in model.layers})
        if unknown:
            raise ValueError(f"TensorBoard: embeddings_layer_names {unknown} are not layers of the model (it has "
                             f"{[layer.name for layer in model.layers]}).")
        K.get_session().run(variables_initializer(list(embeddings_vars.values())))
        self.saver = Saver(list(embeddings_vars.values()))
        metadata = self.embeddings_metadata
        if isinstance(metadata, str):
            metadata = {name: metadata for name in embeddings_vars}
        config = [(v.name, (metadata or {}).get(name)) for name, v in embeddings_vars.items()]
        os.makedirs(self.log_dir, exist_ok=True)
        with open(os.path.join(self.log_dir, PROJECTOR_CONFIG_FILE), "w", encoding="utf-8") as f:
            f.write(projector_config_text(config))

    def _fetch_callback(self, summary) -> None:
        self.writer.add_summary(summary, self._total_val_batches_seen)
        self._total_val_batches_seen += 1

    def _write_scalars(self, step, logs) -> None:
        for name, value in logs.items():
            summary = summary_pb2.Summary()
            item = summary.value.add()
            item.tag = name
            item.simple_value = float(np.asarray(value).item())
            self.writer.add_summary(summary, step)
        self.writer.flush()

    def on_batch_end(self, batch, logs=None):
        logs = logs or {}
        self._samples_seen += logs.get("size", 1)
        if self.update_freq != "epoch" and self._samples_seen - self._samples_seen_at_last_write >= self.update_freq:
            self._write_scalars(self._total_batches_seen, {"batch_" + k: v for k, v in logs.items()
                                                           if k not in ("batch", "size", "num_steps")})
            self._samples_seen_at_last_write = self._samples_seen
        self._total_batches_seen += 1

    def on_epoch_begin(self, epoch, logs=None):
        # the histograms run with the validation batches of this epoch (TF 1.15: fetches of the test function)
        if self.histogram_freq and self.merged is not None and epoch % self.histogram_freq == 0:
            self.model._make_test_function()
            function = self.model.test_function
            if self.merged not in function.fetches:
                function.fetches.append(self.merged)
                function.fetch_callbacks[self.merged] = self._fetch_callback

    def on_epoch_end(self, epoch, logs=None):
        logs = {"epoch_" + k: v for k, v in (logs or {}).items() if k not in ("batch", "size", "num_steps")}
        self._write_scalars(epoch if self.update_freq == "epoch" else self._samples_seen, logs)
        function = getattr(self.model, "test_function", None)
        if self.histogram_freq and function is not None and self.merged in function.fetches:
            function.fetches.remove(self.merged)
            function.fetch_callbacks.pop(self.merged, None)
            self.writer.flush()
        if self.embeddings_freq and self.embeddings_data is None:
            raise ValueError("To visualize embeddings, embeddings_data must be provided.")
        if self.embeddings_freq and epoch % self.embeddings_freq == 0:
            self._write_embeddings(epoch)

    def _write_embeddings(self, epoch) -> None:
        n_samples = self.embeddings_data[0].shape[0]
        session = K.get_session()
        for i in range(0, n_samples, self.batch_size):
            step = min(self.batch_size, n_samples - i)
            feed = {x: data[i:i + step] for x, data in zip(self.model.inputs, self.embeddings_data)}
            feed.update({self.batch_id: i, self.step: step})
            if not isinstance(K.learning_phase(), int):
                feed[K.learning_phase()] = False
            session.run(self.assign_embeddings, feed_dict=feed)
        self.saver.save(session, os.path.join(self.log_dir, "keras_embedding.ckpt"), epoch)

    def on_train_end(self, logs=None):
        self.writer.close()


@tf_export("keras.callbacks.RemoteMonitor")
class RemoteMonitor(Callback):
    """POSTs each epoch's logs (and "epoch") to root + path: as a form field `field` holding the
    JSON (send_as_json=False), or as a JSON body."""

    def __init__(self, root="http://localhost:9000", path="/publish/epoch/end/", field="data", headers=None,
                 send_as_json=False):
        super().__init__()
        self.root, self.path, self.field = root, path, field
        self.headers, self.send_as_json = headers, send_as_json

    def on_epoch_end(self, epoch, logs=None):
        send = {"epoch": epoch}
        for k, v in (logs or {}).items():
            send[k] = v.item() if isinstance(v, (np.ndarray, np.generic)) else v
        if self.send_as_json:
            body, content_type = json.dumps(send).encode(), "application/json"
        else:
            body = urllib.parse.urlencode({self.field: json.dumps(send)}).encode()
            content_type = "application/x-www-form-urlencoded"
        request = urllib.request.Request(self.root + self.path, data=body, method="POST",
                                         headers={"Content-Type": content_type, **(self.headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=10):
                pass
        except OSError:
            warning("Warning: could not reach RemoteMonitor root server at %s", self.root)
