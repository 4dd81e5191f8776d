"""tf.estimator.Estimator: trains, evaluates and predicts with a model_fn, each call in a new graph,
through the pieces of tf.train (MonitoredTrainingSession and its hooks, Scaffold, Saver,
evaluate_once); and tf.estimator.WarmStartSettings.

Training state lives in model_dir: checkpoints (every save_checkpoints_steps/secs, and at the
end), the training summaries and graph, `eval/` or `eval_NAME/` event files of each evaluate().
In a cluster (RunConfig from TF_CONFIG) variables go to the ps tasks by replica_device_setter,
the chief initialises, saves and summarises, the other workers wait for it.
"""
from __future__ import annotations

import collections
import contextlib
import copy
import logging
import os
import shutil
import tempfile

import numpy as np

from tensorweave.client.session import Session
from tensorweave.estimator.export import (EXPORT_TAG_MAP, TRAIN_OP_KEY, build_all_signature_defs,
                                          export_outputs_for_mode, get_timestamped_export_dir)
from tensorweave.estimator.model_fn import EstimatorSpec, ModeKeys, fn_args, verify_model_fn_args
from tensorweave.estimator.run_config import RunConfig, TaskType, get_default_session_config
from tensorweave.framework import dtypes, errors
from tensorweave.framework.api import GraphKeys, device
from tensorweave.framework.graph import Graph, Tensor, get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.metrics.means import mean
from tensorweave.ops.checkpoint.bundle import temporary_name
from tensorweave.ops.checkpoint.reader import CheckpointReader
from tensorweave.ops.data.dataset import Dataset
from tensorweave.ops.grouping import group
from tensorweave.ops.random import set_random_seed
from tensorweave.ops.tensor_proto import to_proto
from tensorweave.saved_model.builder import SavedModelBuilder
from tensorweave.summary.summary import Summary, scalar
from tensorweave.summary.writer import FileWriterCache
from tensorweave.train.basic_session_run_hooks import (CheckpointSaverHook, CheckpointSaverListener,
                                                        LoggingTensorHook, NanTensorHook, StepCounterHook,
                                                        StopAtStepHook, SummarySaverHook, global_step_read)
from tensorweave.train.checkpoint_management import latest_checkpoint
from tensorweave.train.checkpoint_utils import list_variables, load_variable
from tensorweave.train.device_setter import STANDARD_PS_OPS, replica_device_setter
from tensorweave.train.evaluation import StopAfterNEvalsHook, evaluate_once, get_or_create_eval_step
from tensorweave.train.monitored_session import ChiefSessionCreator, MonitoredSession, MonitoredTrainingSession
from tensorweave.train.saver import Saver
from tensorweave.train.scaffold import Scaffold
from tensorweave.train.session_run_hook import SessionRunHook
from tensorweave.train.training_util import create_global_step
from tensorweave.train.warm_starting_util import warm_start

_log = logging.getLogger("tensorweave")


@tf_export("estimator.WarmStartSettings")
class WarmStartSettings(collections.namedtuple("WarmStartSettings", [
        "ckpt_to_initialize_from", "vars_to_warm_start", "var_name_to_vocab_info", "var_name_to_prev_var_name"])):
    """tf.estimator.WarmStartSettings(ckpt_to_initialize_from, vars_to_warm_start='.*',
    var_name_to_vocab_info=None, var_name_to_prev_var_name=None): which variables a new model
    takes from which checkpoint (a prefix or a directory) when it has no checkpoint of its own;
    see tf.train.warm_start."""

    def __new__(cls, ckpt_to_initialize_from, vars_to_warm_start=".*", var_name_to_vocab_info=None,
                var_name_to_prev_var_name=None):
        if not ckpt_to_initialize_from:
            raise ValueError("`ckpt_to_initialize_from` MUST be set in WarmStartSettings")
        return super().__new__(cls, ckpt_to_initialize_from, vars_to_warm_start, var_name_to_vocab_info or {},
                               var_name_to_prev_var_name or {})


def _warm_start_settings(warm_start_from):
    if warm_start_from is None:
        return None
    if isinstance(warm_start_from, (str, bytes, os.PathLike)):
        path = os.fsdecode(warm_start_from)
        variables = os.path.join(path, "variables", "variables")
        if os.path.exists(variables + ".index"):   # a SavedModel: its variables checkpoint
            _log.info("Warm-starting from a SavedModel")
            return WarmStartSettings(ckpt_to_initialize_from=variables)
        return WarmStartSettings(ckpt_to_initialize_from=path)
    if isinstance(warm_start_from, WarmStartSettings):
        return warm_start_from
    raise ValueError(f"warm_start_from must be a string or a WarmStartSettings, instead got {type(warm_start_from)}")


def _with_model_dir_and_session_config(config, model_dir) -> RunConfig:
    """The RunConfig an Estimator runs with: the default session config where it has none, and
    model_dir from the constructor, the RunConfig, or a new temporary directory."""
    if config is None:
        config = RunConfig()
        _log.info("Using default config.")
    if not isinstance(config, RunConfig):
        raise ValueError(f"config must be an instance of `RunConfig`, but provided {config}.")
    if config.session_config is None:
        config = config.replace(session_config=get_default_session_config())
    if model_dir is not None:
        model_dir = os.fspath(model_dir)
        if config.model_dir is not None and config.model_dir != model_dir:
            raise ValueError("`model_dir` are set both in constructor and `RunConfig`, but with different values. In "
                             f"constructor: '{model_dir}', in `RunConfig`: '{config.model_dir}' ")
    if model_dir:
        config = config.replace(model_dir=model_dir)
    elif config.model_dir is None:
        model_dir = tempfile.mkdtemp()
        _log.warning("Using temporary folder as model directory: %s", model_dir)
        config = config.replace(model_dir=model_dir)
    return config


def _replica_device_setter(config: RunConfig):
    """Variables on the ps tasks (round robin), everything else on this task."""
    if config.num_ps_replicas <= 0:
        return None
    worker_device = f"/job:{config.task_type}/task:{config.task_id}" if config.task_type else "/job:worker"
    return replica_device_setter(ps_tasks=config.num_ps_replicas, worker_device=worker_device, merge_devices=True,
                                 ps_ops=list(STANDARD_PS_OPS), cluster=config.cluster_spec)


def _check_hooks(hooks) -> list:
    hooks = list(hooks or [])
    for h in hooks:
        if not isinstance(h, SessionRunHook):
            raise TypeError(f"Hooks must be a SessionRunHook, given: {h}")
    return hooks


def _check_listeners(listeners) -> list:
    listeners = list(listeners or [])
    for listener in listeners:
        if not isinstance(listener, CheckpointSaverListener):
            raise TypeError(f"saving_listeners must be a list of CheckpointSaverListener, given: {listener}")
    return listeners


def global_step_of_checkpoint(checkpoint_dir) -> int:
    """The global step saved in checkpoint_dir's latest checkpoint; 0 when there is none."""
    path = latest_checkpoint(checkpoint_dir)
    if not path:
        return 0
    try:
        return int(CheckpointReader(path).get_tensor(GraphKeys.GLOBAL_STEP))
    except (errors.OpError, OSError, ValueError, KeyError):
        return 0


class _DatasetInitializerHook(SessionRunHook):
    """Initialises an input_fn's dataset iterator in every new session."""

    def __init__(self, iterator):
        self._iterator = iterator

    def begin(self):
        self._initializer = self._iterator.initializer

    def after_create_session(self, session, coord):
        session.run(self._initializer)


def _with_loss_metric(spec) -> dict:
    """spec's eval_metric_ops and "loss": the mean of the batch losses."""
    metric_ops = dict(spec.eval_metric_ops)
    if "loss" in metric_ops:
        raise ValueError('Metric with name "loss" is not allowed, because Estimator already defines a default metric '
                         "with the same name.")
    metric_ops["loss"] = mean(spec.loss)
    return metric_ops


def parse_input_fn_result(result):
    """(features, labels or None, input hooks) of what an input_fn returned: a Dataset (of
    features or of (features, labels)), or features, or (features, labels)."""
    hooks = []
    if isinstance(result, Dataset):
        iterator = result.make_initializable_iterator()
        hooks.append(_DatasetInitializerHook(iterator))
        result = iterator.get_next()
    if isinstance(result, (list, tuple)):
        if len(result) != 2:
            raise ValueError("input_fn should return (features, labels) as a len 2 tuple.")
        return result[0], result[1], hooks
    return result, None, hooks


def _dict_to_str(dictionary: dict) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sorted(dictionary.items()) if not isinstance(v, bytes))


def _write_dict_to_summary(output_dir: str, dictionary: dict, current_global_step: int) -> None:
    """The evaluation results as scalars (and serialized Summaries) of step current_global_step in
    output_dir's event file, where TensorBoard reads them."""
    _log.info("Saving dict for global step %d: %s", current_global_step, _dict_to_str(dictionary))
    summary = Summary()
    for key, value in dictionary.items():
        if value is None or key == "global_step":
            continue
        if isinstance(value, (np.floating, float, np.integer, int)) and not isinstance(value, bool):
            summary.value.add(tag=key, simple_value=float(value))
        elif isinstance(value, bytes):
            try:
                parsed = Summary.FromString(value)
            except Exception:  # noqa: BLE001 (a string metric that is not a Summary: skipped, as TF)
                _log.warning("Skipping summary for %s, cannot parse string to Summary.", key)
                continue
            for i, v in enumerate(parsed.value):
                v.tag = f"{key}/{i}"
            summary.value.extend(parsed.value)
        elif isinstance(value, np.ndarray):
            v = summary.value.add(tag=key, node_name=key)
            v.tensor.CopyFrom(to_proto(value))
        else:
            _log.warning("Skipping summary for %s, must be a float, np.float32, np.int64, np.int32 or int or "
                         "np.ndarray or a serialized string of Summary.", key)
    writer = FileWriterCache.get(output_dir)
    writer.add_summary(summary, current_global_step)
    writer.flush()


def _write_checkpoint_path_to_summary(output_dir: str, checkpoint_path: str, current_global_step: int) -> None:
    summary = Summary()
    summary.value.add(tag="checkpoint_path", tensor=to_proto(np.array(checkpoint_path.encode(), dtype=object),
                                                            dtypes.string))
    writer = FileWriterCache.get(output_dir)
    writer.add_summary(summary, current_global_step)
    writer.flush()


@tf_export("estimator.Estimator")
class Estimator:
    """tf.estimator.Estimator(model_fn, model_dir=None, config=None, params=None,
    warm_start_from=None).

    model_fn(features, labels, mode, params, config) (any subset holding `features`) returns an
    EstimatorSpec; input_fn (taking any of params, config, mode) returns a tf.data.Dataset of
    features or (features, labels), or those tensors. model_dir defaults to a new temporary
    directory; warm_start_from is a checkpoint (directory or prefix) or WarmStartSettings,
    used when model_dir has no checkpoint yet."""

    def __init__(self, model_fn, model_dir=None, config=None, params=None, warm_start_from=None):
        self._config = _with_model_dir_and_session_config(config, model_dir)
        self._model_dir = self._config.model_dir
        self._session_config = self._config.session_config
        _log.info("Using config: %s", self._config)
        self._device_fn = self._config.device_fn or _replica_device_setter(self._config)
        if model_fn is None:
            raise ValueError("model_fn must be provided to Estimator.")
        verify_model_fn_args(model_fn, params)
        self._model_fn = model_fn
        self._params = copy.deepcopy(params or {})
        self._warm_start_settings = _warm_start_settings(warm_start_from)

    model_dir = property(lambda self: self._model_dir)
    config = property(lambda self: copy.deepcopy(self._config))
    params = property(lambda self: copy.deepcopy(self._params))

    @property
    def model_fn(self):
        """The model_fn as model_fn(features, labels, mode, config), bound to this Estimator's params."""
        def public_model_fn(features, labels, mode, config):
            return self._call_model_fn(features, labels, mode, config)
        return public_model_fn

    def _check_checkpoint_available(self) -> None:
        if not latest_checkpoint(self._model_dir):
            raise ValueError(f"Could not find trained model in model_dir: {self._model_dir}.")

    def get_variable_value(self, name):
        """The value of variable `name` in the latest checkpoint."""
        self._check_checkpoint_available()
        return load_variable(self._model_dir, name)

    def get_variable_names(self) -> list:
        """The names of the variables in the latest checkpoint."""
        self._check_checkpoint_available()
        return [name for name, _ in list_variables(self._model_dir)]

    def latest_checkpoint(self):
        """The latest checkpoint's path in model_dir, or None."""
        return latest_checkpoint(self._model_dir)

    def eval_dir(self, name=None) -> str:
        """model_dir/eval, or model_dir/eval_NAME: where evaluate(name=NAME) writes its summaries."""
        return os.path.join(self._model_dir, "eval" if not name else "eval_" + name)

    # -- train --------------------------------------------------------------------------------
    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Trains for `steps` more steps, or until the global step reaches `max_steps` (returning
        at once when the latest checkpoint has reached it), or until input_fn's input ends.
        Returns self."""
        if self._config.task_type in (TaskType.EVALUATOR, TaskType.PS):
            raise ValueError("Train has been called wrong configuration. Please use tf.estimator.train_and_evaluate "
                             "which calls proper API according to given configuration. Current configuration: "
                             f"{self._config}.")
        strategy = self._config.train_distribute
        if self._config._distribute_coordinator_mode and strategy.extended.experimental_between_graph:
            raise ValueError(f"`Estimator.train` API is not supported for {type(strategy).__name__} with "
                             "`STANDALONE_CLIENT` mode.")   # (TF's: train_and_evaluate trains a remote_cluster)
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        if max_steps is not None and max_steps <= global_step_of_checkpoint(self._model_dir):
            _log.info("Skipping training since max_steps has already saved.")
            return self
        hooks = _check_hooks(hooks)
        if steps is not None or max_steps is not None:
            hooks.append(StopAtStepHook(steps, max_steps))
        saving_listeners = _check_listeners(saving_listeners)
        loss = self._train_model(input_fn, hooks, saving_listeners)
        _log.info("Loss for final step: %s.", loss)
        return self

    def _call_input_fn(self, input_fn, mode, input_context=None):
        args = fn_args(input_fn)
        kwargs = {}
        if "input_context" in args:   # (a tf.distribute.InputContext under train_distribute)
            kwargs["input_context"] = input_context
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = self.config
        with device("/cpu:0"):
            return input_fn(**kwargs)

    def _call_model_fn(self, features, labels, mode, config):
        args = fn_args(self._model_fn)
        kwargs = {}
        if "labels" in args:
            kwargs["labels"] = labels
        elif labels is not None:
            raise ValueError("model_fn does not take labels, but input_fn returns labels.")
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = config
        _log.info("Calling model_fn.")
        spec = self._model_fn(features=features, **kwargs)
        _log.info("Done calling model_fn.")
        if not isinstance(spec, EstimatorSpec):
            raise ValueError("model_fn should return an EstimatorSpec.")
        return spec

    def _seed_and_create_global_step(self, graph: Graph):
        """Sets the graph-level seed (RunConfig.tf_random_seed) and creates the global step in `graph`."""
        set_random_seed(self._config.tf_random_seed)
        step = create_global_step(graph)
        if not step.dtype.is_integer:
            raise ValueError(f"global_step must be an integer variable, got {step.dtype}")
        return step

    def _train_model(self, input_fn, hooks, saving_listeners):
        if self._config.train_distribute is not None:
            return self._train_model_distributed(self._config.train_distribute, input_fn, hooks, saving_listeners)
        with Graph().as_default() as g, g.device(self._device_fn):
            global_step = self._seed_and_create_global_step(g)
            global_step_read(g)
            features, labels, input_hooks = parse_input_fn_result(self._call_input_fn(input_fn, ModeKeys.TRAIN))
            spec = self._call_model_fn(features, labels, ModeKeys.TRAIN, self.config)
            return self._train_with_estimator_spec(spec, input_hooks, hooks, global_step, saving_listeners)

    def _train_model_distributed(self, strategy, input_fn, hooks, saving_listeners):
        """RunConfig(train_distribute=strategy), as TF 1.15: input_fn builds the dataset each replica
        draws its own batch from, model_fn runs once per replica under the strategy (its optimizer
        sums the replicas' gradients), the logged loss is the replicas' losses summed."""
        strategy.configure(self._session_config)
        with Graph().as_default() as g, strategy.scope():
            global_step = self._seed_and_create_global_step(g)
            global_step_read(g)
            iterator = strategy.make_input_fn_iterator(lambda ctx: self._call_input_fn(input_fn, ModeKeys.TRAIN, ctx))
            batch = iterator.get_next()
            features, labels = batch if isinstance(batch, tuple) and len(batch) == 2 else (batch, None)

            def replica_fn(features, labels):
                spec = self._call_model_fn(features, labels, ModeKeys.TRAIN, self.config)
                return (spec.loss, spec.train_op, list(spec.training_hooks), list(spec.training_chief_hooks),
                        spec.scaffold)
            with strategy._scale_loss_for_estimator_enabled():
                loss, train_op, train_hooks, chief_hooks, scaffold = strategy.extended.call_for_each_replica(
                    replica_fn, args=(features, labels))
            first = strategy.experimental_local_results
            spec = EstimatorSpec(mode=ModeKeys.TRAIN, loss=strategy.reduce("SUM", loss),
                                 train_op=strategy.group(train_op), training_hooks=[first(h)[0] for h in train_hooks],
                                 training_chief_hooks=[first(h)[0] for h in chief_hooks], scaffold=first(scaffold)[0])
            return self._train_with_estimator_spec(spec, [_DatasetInitializerHook(iterator)], hooks, global_step,
                                                   saving_listeners)

    def _train_with_estimator_spec(self, spec, worker_hooks, hooks, global_step, saving_listeners):
        config = self._config
        if self._warm_start_settings and not latest_checkpoint(self._model_dir):
            _log.info("Warm-starting with WarmStartSettings: %s", self._warm_start_settings)
            warm_start(*self._warm_start_settings)
        g = get_default_graph()
        if not any(s.op.name == "loss" for s in g.get_collection(GraphKeys.SUMMARIES)):
            scalar("loss", spec.loss)
        g.add_to_collection(GraphKeys.LOSSES, spec.loss)
        worker_hooks = list(worker_hooks) + list(hooks) + [NanTensorHook(spec.loss)]
        if config.log_step_count_steps is not None:
            worker_hooks.append(LoggingTensorHook({"loss": spec.loss, "step": global_step},
                                                  every_n_iter=config.log_step_count_steps))
        worker_hooks.extend(spec.training_hooks)
        if not (spec.scaffold.saver or g.get_collection(GraphKeys.SAVERS)):
            g.add_to_collection(GraphKeys.SAVERS, Saver(
                sharded=True, max_to_keep=config.keep_checkpoint_max,
                keep_checkpoint_every_n_hours=config.keep_checkpoint_every_n_hours, defer_build=True,
                save_relative_paths=True))
        chief_hooks = []
        saver_hooks = [h for h in worker_hooks + list(spec.training_chief_hooks) if isinstance(h, CheckpointSaverHook)]
        if (config.save_checkpoints_secs or config.save_checkpoints_steps) and not saver_hooks:
            chief_hooks = [CheckpointSaverHook(self._model_dir, save_secs=config.save_checkpoints_secs,
                                               save_steps=config.save_checkpoints_steps, scaffold=spec.scaffold,
                                               save_graph_def=config.checkpoint_save_graph_def)]
            saver_hooks = chief_hooks
        if saving_listeners:
            if not saver_hooks:
                raise ValueError("There should be a CheckpointSaverHook to use saving_listeners. Please set one of the "
                                 "RunConfig.save_checkpoints_steps or RunConfig.save_checkpoints_secs.")
            for listener in saving_listeners:
                if listener not in saver_hooks[0]._listeners:
                    saver_hooks[0]._listeners.append(listener)
        save_summary_steps, log_step_count_steps = config.save_summary_steps, config.log_step_count_steps
        jobs = config.cluster_spec.jobs if config.cluster_spec else []
        if TaskType.WORKER in jobs and TaskType.MASTER in jobs:
            # the legacy layout: the master evaluates, worker 0 writes the summaries and steps/sec
            save_summary_steps, log_step_count_steps = 0, None
            if config.task_type == TaskType.WORKER and config.task_id == 0:
                if config.save_summary_steps and config.save_summary_steps > 0:
                    worker_hooks.append(SummarySaverHook(save_steps=config.save_summary_steps,
                                                         output_dir=self._model_dir, scaffold=spec.scaffold))
                if config.log_step_count_steps and config.log_step_count_steps > 0:
                    worker_hooks.append(StepCounterHook(every_n_steps=config.log_step_count_steps,
                                                        output_dir=self._model_dir))
        with MonitoredTrainingSession(
                master=config.master, is_chief=config.is_chief, checkpoint_dir=self._model_dir,
                scaffold=spec.scaffold, hooks=worker_hooks,
                chief_only_hooks=tuple(chief_hooks) + tuple(spec.training_chief_hooks), save_checkpoint_secs=0,
                save_summaries_steps=save_summary_steps, config=self._session_config,
                max_wait_secs=config.session_creation_timeout_secs,
                log_step_count_steps=log_step_count_steps) as session:
            loss = None
            steps = 0
            while not session.should_stop():
                steps += 1
                _, loss = session.run([spec.train_op, spec.loss])
        if steps == 0:
            _log.warning("Training with estimator made no steps. Perhaps input is empty or misspecified.")
        return loss

    # -- evaluate -----------------------------------------------------------------------------
    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None) -> dict:
        """Evaluates the model of checkpoint_path (default: the latest; none: freshly initialised
        or warm-started) on input_fn's input, for `steps` batches or until it ends. Returns the
        eval_metric_ops' values with `loss` (the mean of the batch losses) and `global_step`, and
        writes them to eval_dir(name) as summaries of that global step."""
        hooks = _check_hooks(hooks) + self._eval_steps_hooks(steps)
        if not checkpoint_path:
            checkpoint_path = latest_checkpoint(self._model_dir)
            if not checkpoint_path:
                _log.info("Could not find trained model in model_dir: %s, running initialization to evaluate.",
                          self._model_dir)
        strategy = self._config.eval_distribute
        if strategy is not None:
            strategy.configure(self._session_config)
        with Graph().as_default(), strategy.scope() if strategy is not None else contextlib.nullcontext():
            scaffold, update_op, eval_dict, all_hooks = self._evaluate_build_graph(input_fn, hooks, checkpoint_path)
            return self._evaluate_run(checkpoint_path, scaffold, update_op, eval_dict, all_hooks, self.eval_dir(name))

    @staticmethod
    def _eval_steps_hooks(steps) -> list:
        if steps is None:
            return []
        if steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        return [StopAfterNEvalsHook(num_evals=steps)]

    def _evaluate_build_graph(self, input_fn, hooks, checkpoint_path):
        """The evaluation graph in the default graph: (scaffold, the metrics' update op, {name:
        value tensor} with loss and global_step, every hook)."""
        global_step = self._seed_and_create_global_step(get_default_graph())
        if self._config.eval_distribute is not None:
            metric_ops, evaluation_hooks, scaffold, input_hooks = self._eval_model_fn_distributed(input_fn)
        else:
            features, labels, input_hooks = parse_input_fn_result(self._call_input_fn(input_fn, ModeKeys.EVAL))
            spec = self._call_model_fn(features, labels, ModeKeys.EVAL, self.config)
            metric_ops, evaluation_hooks, scaffold = _with_loss_metric(spec), spec.evaluation_hooks, spec.scaffold
        update_op = group(*[metric_ops[k][1] for k in sorted(metric_ops)])
        eval_dict = {k: metric_ops[k][0] for k in sorted(metric_ops)}
        self._maybe_warm_start(checkpoint_path)
        if GraphKeys.GLOBAL_STEP in eval_dict:
            raise ValueError("Metric with name `global_step` is not allowed, because Estimator already defines a "
                             "default metric with the same name.")
        eval_dict[GraphKeys.GLOBAL_STEP] = global_step
        all_hooks = list(input_hooks) + list(hooks) + list(evaluation_hooks)
        if scaffold and scaffold.local_init_op:
            get_or_create_eval_step()
            scaffold = Scaffold(local_init_op=group(scaffold.local_init_op, Scaffold.default_local_init_op()),
                                copy_from_scaffold=scaffold)
        return scaffold, update_op, eval_dict, all_hooks

    def _eval_model_fn_distributed(self, input_fn):
        """RunConfig(eval_distribute=strategy), as TF 1.15: each replica draws its own batch from
        input_fn's dataset and runs model_fn; a metric's value reads the replicas' states summed
        (all replicas' batches together), its update op runs every replica's. Returns ({name:
        (value, update op)} with "loss", the first replica's evaluation hooks and scaffold, the
        input hooks)."""
        strategy = self._config.eval_distribute
        iterator = strategy.make_input_fn_iterator(lambda ctx: self._call_input_fn(input_fn, ModeKeys.EVAL))
        batch = iterator.get_next()
        features, labels = batch if isinstance(batch, tuple) and len(batch) == 2 else (batch, None)

        def replica_fn(features, labels):
            spec = self._call_model_fn(features, labels, ModeKeys.EVAL, self.config)
            return _with_loss_metric(spec), list(spec.evaluation_hooks), spec.scaffold
        metric_ops, hooks, scaffold = strategy.extended.call_for_each_replica(replica_fn, args=(features, labels))
        first = strategy.experimental_local_results
        metric_ops = {k: (first(value)[0], strategy.group(update)) for k, (value, update) in metric_ops.items()}
        return metric_ops, [first(h)[0] for h in hooks], first(scaffold)[0], [_DatasetInitializerHook(iterator)]

    def _evaluate_run(self, checkpoint_path, scaffold, update_op, eval_dict, all_hooks, output_dir) -> dict:
        """Runs the evaluation graph once (evaluate_once) and writes its results to output_dir."""
        results = evaluate_once(checkpoint_path=checkpoint_path, master=self._config.evaluation_master,
                                scaffold=scaffold, eval_ops=update_op, final_ops=eval_dict, hooks=all_hooks,
                                config=self._session_config)
        step = int(results[GraphKeys.GLOBAL_STEP])
        _write_dict_to_summary(output_dir, results, step)
        if checkpoint_path:
            _write_checkpoint_path_to_summary(output_dir, checkpoint_path, step)
        return results

    def _maybe_warm_start(self, checkpoint_path) -> None:
        if not checkpoint_path and self._warm_start_settings:
            _log.info("Warm-starting with WarmStartSettings: %s", self._warm_start_settings)
            warm_start(*self._warm_start_settings)

    # -- predict ------------------------------------------------------------------------------
    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None, yield_single_examples=True):
        """Yields the predictions of the model of checkpoint_path (default: the latest) for
        input_fn's features until they end: one example at a time (a dict when predictions are a
        dict), or whole batches with yield_single_examples=False; only predict_keys if given."""
        hooks = _check_hooks(hooks)
        if not checkpoint_path:
            checkpoint_path = latest_checkpoint(self._model_dir)
        if not checkpoint_path:
            _log.info("Could not find trained model in model_dir: %s, running initialization to predict.",
                      self._model_dir)
        with Graph().as_default() as g:
            self._seed_and_create_global_step(g)
            features, _, input_hooks = parse_input_fn_result(self._call_input_fn(input_fn, ModeKeys.PREDICT))
            if not self._reads_input(features):
                _log.warning("Input graph does not use tf.data.Dataset or contain a QueueRunner. That means predict "
                             "yields forever. This is probably a mistake.")
            spec = self._call_model_fn(features, None, ModeKeys.PREDICT, self.config)
            self._maybe_warm_start(checkpoint_path)
            predictions = self._extract_keys(spec.predictions, predict_keys)
            creator = ChiefSessionCreator(checkpoint_filename_with_path=checkpoint_path, master=self._config.master,
                                          scaffold=spec.scaffold, config=self._session_config)
            all_hooks = list(input_hooks) + hooks + list(spec.prediction_hooks)
            with MonitoredSession(session_creator=creator, hooks=all_hooks) as session:
                while not session.should_stop():
                    values = session.run(predictions)
                    if not yield_single_examples:
                        yield values
                    elif not isinstance(predictions, dict):
                        yield from values
                    else:
                        for i in range(self._batch_length(values)):
                            yield {key: value[i] for key, value in values.items()}

    # -- export -------------------------------------------------------------------------------
    def export_saved_model(self, export_dir_base, serving_input_receiver_fn, assets_extra=None, as_text=False,
                           checkpoint_path=None, experimental_mode=ModeKeys.PREDICT):
        """Exports the model of checkpoint_path (default: the latest; else the warm-start
        checkpoint) as a SavedModel in export_dir_base/<timestamp>, tagged "serve": the graph
        serving_input_receiver_fn's receiver feeds, model_fn in PREDICT mode, one signature per
        export output (default: "serving_default", a PredictOutput of the predictions), the
        variables, and assets_extra ({path in assets.extra: source file}) copied in. Returns the
        export directory (bytes, as TF). experimental_mode TRAIN or EVAL exports that mode's graph
        instead, as experimental_export_all_saved_models does."""
        if not serving_input_receiver_fn:
            raise ValueError("An input_receiver_fn must be defined.")
        return self._export_all_saved_models(export_dir_base, {experimental_mode: serving_input_receiver_fn},
                                             assets_extra, as_text, checkpoint_path, strip_default_attrs=True)

    def export_savedmodel(self, export_dir_base, serving_input_receiver_fn, assets_extra=None, as_text=False,
                          checkpoint_path=None, strip_default_attrs=False):
        """The deprecated name of export_saved_model (TF 1.15)."""
        if not serving_input_receiver_fn:
            raise ValueError("An input_receiver_fn must be defined.")
        return self._export_all_saved_models(export_dir_base, {ModeKeys.PREDICT: serving_input_receiver_fn},
                                             assets_extra, as_text, checkpoint_path, strip_default_attrs)

    def experimental_export_all_saved_models(self, export_dir_base, input_receiver_fn_map, assets_extra=None,
                                             as_text=False, checkpoint_path=None):
        """Exports one SavedModel in export_dir_base/<timestamp> holding a meta graph per mode of
        input_receiver_fn_map ({ModeKeys: input_receiver_fn}): TRAIN tagged "train" (signature
        "train": loss, predictions/KEY, metrics/NAME/value|update_op; the train op in the
        saved_model_train_op collection), EVAL tagged "eval" (signature "eval", the same outputs),
        PREDICT tagged "serve" (the serving signatures). A TRAIN or EVAL receiver fn returns a
        SupervisedInputReceiver (build_raw_supervised_input_receiver_fn). The first mode exported
        (TRAIN, EVAL, PREDICT in that order) saves the variables restored from checkpoint_path."""
        return self._export_all_saved_models(export_dir_base, input_receiver_fn_map, assets_extra, as_text,
                                             checkpoint_path, strip_default_attrs=True)

    def _export_all_saved_models(self, export_dir_base, input_receiver_fn_map, assets_extra, as_text,
                                 checkpoint_path, strip_default_attrs) -> bytes:
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if not checkpoint_path:
            if not self._warm_start_settings:
                raise ValueError(f"Couldn't find trained model at {self._model_dir}.")
            checkpoint_path = self._warm_start_settings.ckpt_to_initialize_from
            if os.path.isdir(checkpoint_path):
                checkpoint_path = latest_checkpoint(checkpoint_path)
        export_dir = get_timestamped_export_dir(export_dir_base)
        temp_export_dir = temporary_name(export_dir, "_temp_")   # swept by the next export once its process is gone
        builder = SavedModelBuilder(temp_export_dir)
        save_variables = True
        for mode in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
            if input_receiver_fn_map.get(mode):
                self._add_meta_graph_for_mode(builder, input_receiver_fn_map[mode], checkpoint_path, save_variables,
                                              mode, strip_default_attrs)
                save_variables = False
        if save_variables:
            raise ValueError(f"No valid modes for exporting found. Got {input_receiver_fn_map.keys()}.")
        builder.save(as_text)
        for dest, source in (assets_extra or {}).items():
            target = os.path.join(temp_export_dir, "assets.extra", dest)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(source, target)
        os.rename(temp_export_dir, export_dir)
        _log.info("Exported the model to %s", export_dir)
        return export_dir.encode()

    def _add_meta_graph_for_mode(self, builder, input_receiver_fn, checkpoint_path, save_variables, mode,
                                 strip_default_attrs) -> None:
        """Builds mode's graph from input_receiver_fn's receiver and the model_fn, restores the
        checkpoint into it and adds it to builder (with the variables when save_variables)."""
        with Graph().as_default() as g:
            self._seed_and_create_global_step(g)
            receiver = input_receiver_fn()
            spec = self._call_model_fn(receiver.features, getattr(receiver, "labels", None), mode, self.config)
            export_outputs = export_outputs_for_mode(spec.mode, spec.export_outputs, spec.predictions, spec.loss,
                                                     spec.eval_metric_ops)
            signature_def_map = build_all_signature_defs(
                receiver.receiver_tensors, export_outputs, getattr(receiver, "receiver_tensors_alternatives", None),
                serving_only=mode == ModeKeys.PREDICT)
            local_init_op = spec.scaffold.local_init_op
            if local_init_op is None:
                local_init_op = Scaffold.default_local_init_op()
            saver = spec.scaffold.saver or Saver(sharded=True)
            with Session(config=self._session_config) as session:
                try:
                    saver.restore(session, checkpoint_path)
                except errors.NotFoundError as e:
                    raise ValueError("Could not load all requested variables from checkpoint. Please make sure your "
                                     "model_fn does not expect variables that were not saved in the checkpoint.\n\n"
                                     f"Encountered error with mode `{mode}` while restoring checkpoint "
                                     f"from: `{checkpoint_path}`. Full Traceback:\n\n{e}") from None
                if spec.train_op is not None:   # kept for a trainer of the SavedModel, as TF's builder does
                    g.add_to_collection(TRAIN_OP_KEY, spec.train_op)
                kwargs = dict(tags=EXPORT_TAG_MAP[mode], signature_def_map=signature_def_map,
                              assets_collection=g.get_collection(GraphKeys.ASSET_FILEPATHS), main_op=local_init_op,
                              saver=saver, strip_default_attrs=strip_default_attrs)
                if save_variables:
                    builder.add_meta_graph_and_variables(session, **kwargs)
                else:
                    builder.add_meta_graph(**kwargs)

    @staticmethod
    def _reads_input(features) -> bool:
        leaves = list(features.values()) if isinstance(features, dict) else [features]
        if any(isinstance(t, Tensor) and t.op.type == "IteratorGetNext" for t in leaves):
            return True
        return bool(get_default_graph().get_collection(GraphKeys.QUEUE_RUNNERS))

    @staticmethod
    def _batch_length(values: dict) -> int:
        length = None
        for key, value in values.items():
            length = length or value.shape[0]
            if value.shape[0] != length:
                raise ValueError(f"Batch length of predictions should be same. {key} has different batch length than "
                                 "others.")
        return length

    @staticmethod
    def _extract_keys(predictions, predict_keys):
        if not predict_keys:
            return predictions
        if not isinstance(predictions, dict):
            raise ValueError("predict_keys argument is not valid in case of non-dict predictions.")
        existing = predictions.keys()
        chosen = {k: v for k, v in predictions.items() if k in predict_keys}
        if not chosen:
            raise ValueError(f"Expected to run at least one output from {existing}, provided {predict_keys}.")
        return chosen


@tf_export("estimator.add_metrics")
def add_metrics(estimator, metric_fn) -> Estimator:
    """tf.estimator.add_metrics(estimator, metric_fn): a new Estimator (same model_dir, config and
    warm start) whose evaluation also reports metric_fn's metrics; metric_fn takes any of
    (features, labels, predictions, config) and returns {name: (value, update_op)}."""
    valid = {"features", "labels", "predictions", "config"}
    invalid = list(set(fn_args(metric_fn)) - valid)
    if invalid:
        raise ValueError(f"metric_fn ({metric_fn}) has following not expected args: {invalid}")

    def new_model_fn(features, labels, mode, config):
        spec = estimator.model_fn(features, labels, mode, config)
        if mode != ModeKeys.EVAL:
            return spec
        args = fn_args(metric_fn)
        given = {"features": features, "labels": labels, "predictions": spec.predictions, "config": config}
        metrics = dict(spec.eval_metric_ops or {})
        metrics.update(metric_fn(**{k: v for k, v in given.items() if k in args}))
        return spec._replace(eval_metric_ops=metrics)
    return Estimator(model_fn=new_model_fn, model_dir=estimator.model_dir, config=estimator.config,
                     warm_start_from=estimator._warm_start_settings)
