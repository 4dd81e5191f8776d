"""tf.estimator's exporters: what an EvalSpec's `exporters` do after each evaluation of
train_and_evaluate (export the evaluated checkpoint as a SavedModel under model_dir/export/NAME):
LatestExporter (every time, keeping the newest exports_to_keep), FinalExporter (after the final
evaluation only) and BestExporter (when the evaluation beats the best so far, by compare_fn over
the metrics, the earlier ones read back from the eval event files)."""
from __future__ import annotations

import glob
import logging
import os
import shutil

from tensorweave.estimator.model_fn import fn_args
from tensorweave.framework.tf_export import tf_export
from tensorweave.summary.writer import summary_iterator

_log = logging.getLogger("tensorweave")


@tf_export("estimator.Exporter")
class Exporter:
    """tf.estimator.Exporter: the base class of EvalSpec's exporters: a `name` (the directory
    under model_dir/export) and export(estimator, export_path, checkpoint_path, eval_result,
    is_the_final_export), returning what it exported or None."""

    @property
    def name(self):
        raise NotImplementedError(f"{type(self).__name__} defines no `name`.")

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        raise NotImplementedError(f"{type(self).__name__} defines no `export`.")


class _SavedModelExporter(Exporter):
    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False):
        self._name = name
        self._serving_input_receiver_fn = serving_input_receiver_fn
        self._assets_extra = assets_extra
        self._as_text = as_text

    @property
    def name(self):
        return self._name

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        return estimator.export_saved_model(export_path, self._serving_input_receiver_fn,
                                            assets_extra=self._assets_extra, as_text=self._as_text,
                                            checkpoint_path=checkpoint_path)


def _check_exports_to_keep(exports_to_keep, message: str) -> None:
    if exports_to_keep is not None and exports_to_keep <= 0:
        raise ValueError(message)


def _garbage_collect_exports(export_dir_base: str, exports_to_keep) -> None:
    """Deletes all but the newest exports_to_keep timestamped exports under export_dir_base."""
    if exports_to_keep is None:
        return
    versions = sorted(int(n) for n in os.listdir(export_dir_base) if len(n) == 10 and n.isdigit()) \
        if os.path.isdir(export_dir_base) else []
    for version in versions[:-exports_to_keep]:
        shutil.rmtree(os.path.join(export_dir_base, str(version)), ignore_errors=True)


@tf_export("estimator.LatestExporter")
class LatestExporter(Exporter):
    """tf.estimator.LatestExporter(name, serving_input_receiver_fn, assets_extra=None,
    as_text=False, exports_to_keep=5): exports after every evaluation, keeping the newest
    exports_to_keep exports (None: all)."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False, exports_to_keep=5):
        self._saved_model_exporter = _SavedModelExporter(name, serving_input_receiver_fn, assets_extra, as_text)
        _check_exports_to_keep(exports_to_keep, "`exports_to_keep`, if provided, must be positive number")
        self._exports_to_keep = exports_to_keep

    @property
    def name(self):
        return self._saved_model_exporter.name

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        result = self._saved_model_exporter.export(estimator, export_path, checkpoint_path, eval_result,
                                                   is_the_final_export)
        _garbage_collect_exports(export_path, self._exports_to_keep)
        return result


@tf_export("estimator.FinalExporter")
class FinalExporter(Exporter):
    """tf.estimator.FinalExporter(name, serving_input_receiver_fn, assets_extra=None,
    as_text=False): exports once, after the evaluation of the final checkpoint."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False):
        self._saved_model_exporter = _SavedModelExporter(name, serving_input_receiver_fn, assets_extra, as_text)

    @property
    def name(self):
        return self._saved_model_exporter.name

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        if not is_the_final_export:
            return None
        _log.info("Performing the final export in the end of training.")
        return self._saved_model_exporter.export(estimator, export_path, checkpoint_path, eval_result,
                                                 is_the_final_export)


def _loss_smaller(best_eval_result, current_eval_result) -> bool:
    """BestExporter's default compare_fn: the current evaluation's loss is smaller."""
    if not best_eval_result or "loss" not in best_eval_result:
        raise ValueError("best_eval_result cannot be empty or no loss is found in it.")
    if not current_eval_result or "loss" not in current_eval_result:
        raise ValueError("current_eval_result cannot be empty or no loss is found in it.")
    return best_eval_result["loss"] > current_eval_result["loss"]


@tf_export("estimator.BestExporter")
class BestExporter(Exporter):
    """tf.estimator.BestExporter(name='best_exporter', serving_input_receiver_fn=None,
    event_file_pattern='eval/*.tfevents.*', compare_fn=<loss smaller>, assets_extra=None,
    as_text=False, exports_to_keep=5): exports when compare_fn(best_eval_result,
    current_eval_result) says the evaluation beats the best one so far (the first time: the best
    of the model's event files matching event_file_pattern)."""

    def __init__(self, name="best_exporter", serving_input_receiver_fn=None, event_file_pattern="eval/*.tfevents.*",
                 compare_fn=_loss_smaller, assets_extra=None, as_text=False, exports_to_keep=5):
        if compare_fn is None:
            raise ValueError("`compare_fn` must not be None.")
        args = set(fn_args(compare_fn))
        for needed in ("best_eval_result", "current_eval_result"):
            if needed not in args:
                raise ValueError(f"compare_fn ({compare_fn}) must include {needed} argument.")
        unexpected = list(args - {"best_eval_result", "current_eval_result"})
        if unexpected:
            raise ValueError(f"compare_fn ({compare_fn}) has following not expected args: {unexpected}")
        self._compare_fn = compare_fn
        self._saved_model_exporter = _SavedModelExporter(name, serving_input_receiver_fn, assets_extra, as_text)
        self._event_file_pattern = event_file_pattern
        self._model_dir = None
        self._best_eval_result = None
        self._has_exported = False
        _check_exports_to_keep(exports_to_keep, "`exports_to_keep`, if provided, must be a positive number. Got "
                                                f"{exports_to_keep}")
        self._exports_to_keep = exports_to_keep

    @property
    def name(self):
        return self._saved_model_exporter.name

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        if self._model_dir != estimator.model_dir and self._event_file_pattern:
            _log.info("Loading best metric from event files.")
            self._model_dir = estimator.model_dir
            self._best_eval_result = self._get_best_eval_result(os.path.join(self._model_dir,
                                                                             self._event_file_pattern))
        if (self._best_eval_result is None or not self._has_exported
                or self._compare_fn(best_eval_result=self._best_eval_result, current_eval_result=eval_result)):
            _log.info("Performing best model export.")
            self._best_eval_result = eval_result
            result = self._saved_model_exporter.export(estimator, export_path, checkpoint_path, eval_result,
                                                       is_the_final_export)
            _garbage_collect_exports(export_path, self._exports_to_keep)
            self._has_exported = True
            return result
        return None

    def _get_best_eval_result(self, pattern: str):
        best = None
        for path in glob.glob(pattern):
            for event in summary_iterator(path):
                if not event.HasField("summary"):
                    continue
                result = {v.tag: v.simple_value for v in event.summary.value if v.HasField("simple_value")}
                if result and (best is None or self._compare_fn(best, result)):
                    best = result
        return best
