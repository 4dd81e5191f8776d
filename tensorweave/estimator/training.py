"""tf.estimator.train_and_evaluate, TrainSpec and EvalSpec.

Without a cluster in TF_CONFIG it trains and evaluates in this process: an evaluation after each
new checkpoint (at most every throttle_secs) and after the last one, as TF 1.15's local path.
In a cluster each task does its role's part, by TF_CONFIG's task type:

  ps         serves its variables (tf.train.Server) until every trainer has finished, then exits.
             (TF's ps joins forever, leaving its job to be killed by whoever launched it; ours
             ends: each trainer, when its training ends, puts a token in a queue on every ps;
             a ps leaves once it holds one token per trainer, chief and workers.)
  chief      starts its server, initialises the model (or restores model_dir's checkpoint),
             trains to max_steps, saves checkpoints and summaries.
  worker     starts its server, waits for the chief's model (polling, no fixed delay: TF's
             staggered start of 5 s per worker index applies only when RunConfig's
             experimental_max_worker_delay_secs is set), trains through replica_device_setter.
  master     (legacy layout) trains as the chief and evaluates after its checkpoints.
  evaluator  not in the cluster: after start_delay_secs, evaluates each new checkpoint of
             model_dir, at most every throttle_secs, and stops once it has evaluated one whose
             global step reached max_steps (with max_steps None it runs on, as TF's). A
             checkpoint deleted before it could be restored (keep_checkpoint_max) is skipped.
             After each evaluation the EvalSpec's exporters run (model_dir/export/NAME).

Each process returns from train_and_evaluate by itself when training ends.
"""
from __future__ import annotations

import collections
import copy
import logging
import os
import time

from tensorweave.distributed.server import Server
from tensorweave.distribute.distribute_coordinator import (STANDALONE_CLIENT, get_current_worker_context,
                                                            run_standalone_client, serve_until_workers_done,
                                                            tell_ps_tasks_done)
from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.estimator.estimator import Estimator
from tensorweave.estimator.exporter import Exporter
from tensorweave.estimator.run_config import TaskType, _count_workers, _global_id_in_cluster, tf_config
from tensorweave.framework import errors
from tensorweave.framework.api import GraphKeys
from tensorweave.framework.tf_export import tf_export
from tensorweave.train.basic_session_run_hooks import CheckpointSaverListener, SecondOrStepTimer
from tensorweave.train.checkpoint_management import checkpoint_exists
from tensorweave.train.session_run_hook import SessionRunHook

_log = logging.getLogger("tensorweave")
_DELAY_SECS_PER_WORKER = 5
_TRAINER_JOBS = (TaskType.CHIEF, TaskType.MASTER, TaskType.WORKER)


def _validate_input_fn(input_fn) -> None:
    if not callable(input_fn):
        raise TypeError(f"`input_fn` must be callable, given: {input_fn}")


def _validate_hooks(hooks) -> tuple:
    hooks = tuple(hooks or [])
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError(f"All hooks must be `SessionRunHook` instances, given: {hook}")
    return hooks


def _validate_exporters(exporters) -> tuple:
    if not exporters:
        return ()
    if isinstance(exporters, Exporter):
        exporters = [exporters]
    names = []
    try:
        for exporter in exporters:
            if not isinstance(exporter, Exporter):
                raise TypeError
            if not exporter.name:
                raise ValueError("An Exporter cannot have a name that is `None` or empty. All exporter names: "
                                 f"{[e.name for e in exporters]}")
            if not isinstance(exporter.name, str):
                raise ValueError(f"An Exporter must have a string name. Given: {type(exporter.name)}")
            if exporter.name in names:
                raise ValueError("`exporters` must have unique names. Such a name cannot be `None`. All exporter "
                                 f"names: {[e.name for e in exporters]}")
            names.append(exporter.name)
    except TypeError:
        raise TypeError(f"`exporters` must be an Exporter, an iterable of Exporter, or `None`, found {exporters}."
                        ) from None
    return tuple(exporters)


@tf_export("estimator.TrainSpec")
class TrainSpec(collections.namedtuple("TrainSpec", ["input_fn", "max_steps", "hooks", "saving_listeners"])):
    """tf.estimator.TrainSpec(input_fn, max_steps=None, hooks=None, saving_listeners=None): the
    training half of train_and_evaluate."""

    def __new__(cls, input_fn, max_steps=None, hooks=None, saving_listeners=None):
        _validate_input_fn(input_fn)
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        listeners = tuple(saving_listeners or [])
        for listener in listeners:
            if not isinstance(listener, CheckpointSaverListener):
                raise TypeError(f"All saving_listeners must be `CheckpointSaverListener` instances, given: {listener}")
        return super().__new__(cls, input_fn=input_fn, max_steps=max_steps, hooks=_validate_hooks(hooks),
                               saving_listeners=listeners)


@tf_export("estimator.EvalSpec")
class EvalSpec(collections.namedtuple("EvalSpec", ["input_fn", "steps", "name", "hooks", "exporters",
                                                   "start_delay_secs", "throttle_secs"])):
    """tf.estimator.EvalSpec(input_fn, steps=100, name=None, hooks=None, exporters=None,
    start_delay_secs=120, throttle_secs=600): the evaluation half of train_and_evaluate (steps
    None: until input_fn's input ends)."""

    def __new__(cls, input_fn, steps=100, name=None, hooks=None, exporters=None, start_delay_secs=120,
                throttle_secs=600):
        _validate_input_fn(input_fn)
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"`name` must be string, given: {name}")
        hooks = _validate_hooks(hooks)
        exporters = _validate_exporters(exporters)
        if start_delay_secs < 0:
            raise ValueError(f"Must specify start_delay_secs >= 0, given: {start_delay_secs}")
        if throttle_secs < 0:
            raise ValueError(f"Must specify throttle_secs >= 0, given: {throttle_secs}")
        return super().__new__(cls, input_fn=input_fn, steps=steps, name=name, hooks=hooks, exporters=exporters,
                               start_delay_secs=start_delay_secs, throttle_secs=throttle_secs)


def _assert_eval_spec(eval_spec) -> None:
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError(f"`eval_spec` must have type `tf.estimator.EvalSpec`. Got: {type(eval_spec)}")


@tf_export("estimator.train_and_evaluate")
def train_and_evaluate(estimator, train_spec, eval_spec):
    """tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec): trains and evaluates
    locally, or does this task's part of a cluster's training (TF_CONFIG; see this module).
    Locally returns (the last evaluation's metrics, the exporters' results)."""
    _assert_eval_spec(eval_spec)
    executor = _TrainingExecutor(estimator, train_spec, eval_spec)
    config = estimator.config
    if config._distribute_coordinator_mode == STANDALONE_CLIENT:
        return _train_and_evaluate_standalone_client(estimator, train_spec, eval_spec)
    if config.task_type == TaskType.EVALUATOR and config.task_id > 0:
        raise ValueError("For distributed training, there can only be one `evaluator` task (with task id 0).  Given "
                         f"task id {config.task_id}")
    return executor.run()


def _for_worker_context(estimator, context):
    """A copy of `estimator` whose RunConfig is the worker context's task (TF's
    _init_run_config_from_worker_context): its cluster place, master and chiefness; the evaluator
    knows no cluster."""
    config = copy.deepcopy(estimator._config)   # (a strategy is shared, not copied)
    config._distribute_coordinator_mode = None
    config._service = None
    config._task_type, config._task_id, config._is_chief = context.task_type, context.task_id, context.is_chief
    config._master = config._evaluation_master = context.master_target
    if context.task_type == TaskType.EVALUATOR:
        config._cluster_spec = ClusterSpec({})
        config._num_ps_replicas, config._num_worker_replicas, config._global_id_in_cluster = 0, 0, None
    else:
        cluster = config._cluster_spec = context.cluster_spec
        config._num_ps_replicas = len(cluster.as_dict().get(TaskType.PS, []))
        config._num_worker_replicas = _count_workers(cluster, TaskType.CHIEF)
        config._global_id_in_cluster = _global_id_in_cluster(cluster, context.task_type, context.task_id,
                                                             TaskType.CHIEF)
    local = copy.copy(estimator)
    local._config, local._session_config = config, copy.deepcopy(estimator._session_config)
    return local


def _train_and_evaluate_standalone_client(estimator, train_spec, eval_spec) -> None:
    """train_and_evaluate with RunConfig(experimental_distribute=DistributeConfig(train_distribute=...,
    remote_cluster=...)), TF 1.15's standalone client: this process trains on the remote cluster's
    servers, one thread per chief and worker task (a between-graph strategy), and with an "evaluator"
    job in the cluster evaluates each new checkpoint here, in another thread."""
    config = estimator._config

    def worker_fn(strategy):
        context = get_current_worker_context()
        local = _for_worker_context(estimator, context)
        local._config._train_distribute = strategy
        local.train(input_fn=train_spec.input_fn, max_steps=train_spec.max_steps,
                    hooks=list(train_spec.hooks) if context.is_chief else [])   # (TF's: the hooks on the chief)

    def eval_fn(strategy):
        local = _for_worker_context(estimator, get_current_worker_context())
        local._config._eval_distribute = strategy
        _TrainingExecutor(local, train_spec, eval_spec).run_evaluator()

    run_standalone_client(worker_fn, config.train_distribute, eval_fn, config.eval_distribute, config.cluster_spec,
                          session_config=config.session_config)


_EVALUATED, _MISSING_CHECKPOINT, _NO_NEW_CHECKPOINT = "evaluated", "missing checkpoint", "no new checkpoint"
_EvalResult = collections.namedtuple("_EvalResult", ["status", "metrics", "checkpoint_path"],
                                     defaults=(None, None))


class _Evaluator:
    """Evaluates the latest checkpoint once per new checkpoint, and runs the exporters."""

    def __init__(self, estimator, eval_spec, max_training_steps):
        self._estimator = estimator
        self._eval_spec = eval_spec
        self._max_training_steps = max_training_steps
        self._previous_ckpt_path = None
        self._last_warning_time = 0.0

    def _warn(self, message: str) -> None:
        if time.time() - self._last_warning_time > 600:
            _log.warning(message)
            self._last_warning_time = time.time()

    def evaluate_and_export(self):
        latest = self._estimator.latest_checkpoint()
        if not latest:
            self._warn("Estimator is not trained yet. Will start an evaluation when a checkpoint is ready.")
            return _EvalResult(_MISSING_CHECKPOINT), []
        if latest == self._previous_ckpt_path:
            self._warn("No new checkpoint ready for evaluation. Skip the current evaluation pass as evaluation results "
                       "are expected to be same for the same checkpoint.")
            return _EvalResult(_NO_NEW_CHECKPOINT), []
        try:
            metrics = self._estimator.evaluate(input_fn=self._eval_spec.input_fn, steps=self._eval_spec.steps,
                                               name=self._eval_spec.name, checkpoint_path=latest,
                                               hooks=self._eval_spec.hooks)
        except (errors.NotFoundError, ValueError):   # Saver.restore: ValueError when the files are gone
            if checkpoint_exists(latest):
                raise
            # The trainer deleted it (keep_checkpoint_max) while we restored it; TF's evaluator
            # dies here, ours takes the next one.
            _log.warning("Checkpoint %s was deleted before it could be evaluated; waiting for the next one.", latest)
            return _EvalResult(_NO_NEW_CHECKPOINT), []
        result = _EvalResult(_EVALUATED, metrics, latest)
        final = bool(self._max_training_steps) and metrics[GraphKeys.GLOBAL_STEP] >= self._max_training_steps
        export_base = os.path.join(self._estimator.model_dir, "export")
        exports = [e.export(estimator=self._estimator, export_path=os.path.join(export_base, e.name),
                            checkpoint_path=latest, eval_result=metrics, is_the_final_export=final)
                   for e in self._eval_spec.exporters]
        self._last_warning_time = 0.0
        self._previous_ckpt_path = latest
        return result, exports


class _NewCheckpointListenerForEvaluate(CheckpointSaverListener):
    """Evaluates after each checkpoint but the first (at most every throttle_secs) and after the last."""

    def __init__(self, evaluator: _Evaluator, eval_throttle_secs):
        self._evaluator = evaluator
        self._eval_throttle_secs = eval_throttle_secs
        self.eval_result, self.export_results = None, None

    def begin(self):
        self._timer = SecondOrStepTimer(every_secs=self._eval_throttle_secs)
        self._is_first_run = True

    def after_save(self, session, global_step_value):
        if self._is_first_run:
            self._is_first_run = False
            return
        if self._timer.should_trigger_for_step(global_step_value):
            self._evaluate(global_step_value)
        else:
            _log.info("Skip the current checkpoint eval due to throttle secs (%s secs).", self._eval_throttle_secs)

    def end(self, session, global_step_value):
        if global_step_value != self._timer.last_triggered_step():
            self._evaluate(global_step_value)

    def _evaluate(self, global_step_value) -> None:
        self._timer.update_last_triggered_step(global_step_value)
        self.eval_result, self.export_results = self._evaluator.evaluate_and_export()
        if self.eval_result.status != _EVALUATED:
            raise RuntimeError("There was no new checkpoint after the training. Eval status: "
                               f"{self.eval_result.status}")


class _TrainingExecutor:
    """Runs this task's part of train_and_evaluate (run_<task type>)."""

    def __init__(self, estimator, train_spec, eval_spec):
        if not isinstance(estimator, Estimator):
            raise TypeError(f"`estimator` must have type `tf.estimator.Estimator`. Got: {type(estimator)}")
        if not isinstance(train_spec, TrainSpec):
            raise TypeError(f"`train_spec` must have type `tf.estimator.TrainSpec`. Got: {type(train_spec)}")
        if eval_spec and not isinstance(eval_spec, EvalSpec):
            raise TypeError("`eval_spec` must be either `None` or have type `tf.estimator.EvalSpec`. Got: "
                            f"{type(eval_spec)}")
        self._estimator = estimator
        self._train_spec = train_spec
        self._eval_spec = eval_spec

    def run(self):
        config = self._estimator.config
        if not config.cluster_spec and config.task_type != TaskType.EVALUATOR:
            _log.info("Running training and evaluation locally (non-distributed).")
            return self.run_local()
        if not config.task_type:
            raise ValueError("`estimator.config` must have task_type set. This usually means TF_CONFIG environment is "
                             "not set correctly.")
        if config.task_type == "local":
            raise ValueError("`task.type` in TF_CONFIG cannot be `local`. Leaving `cluster` and `task` properties in "
                             "TF_CONFIG absent triggers train and evaluate `Estimator` locally (non-distributed).")
        runners = {"chief": self.run_chief, "worker": self.run_worker, "master": self.run_master,
                   "evaluator": self.run_evaluator, "ps": self.run_ps}
        if config.task_type not in runners:
            raise ValueError(f"Task type {config.task_type} is not supported. Supported task types are "
                             f"{sorted(runners)}")
        return runners[config.task_type]()

    def run_local(self):
        _log.info("Start train and evaluate loop. The evaluate will happen after every checkpoint. Checkpoint "
                  "frequency is determined based on RunConfig arguments: save_checkpoints_steps %s or "
                  "save_checkpoints_secs %s.", self._estimator.config.save_checkpoints_steps,
                  self._estimator.config.save_checkpoints_secs)
        evaluator = _Evaluator(self._estimator, self._eval_spec, self._train_spec.max_steps)
        listener = _NewCheckpointListenerForEvaluate(evaluator, self._eval_spec.throttle_secs)
        self._estimator.train(input_fn=self._train_spec.input_fn, max_steps=self._train_spec.max_steps,
                              hooks=list(self._train_spec.hooks),
                              saving_listeners=self._train_spec.saving_listeners + (listener,))
        result = listener.eval_result or _EvalResult(_MISSING_CHECKPOINT)
        return result.metrics, listener.export_results

    def run_chief(self):
        self._start_distributed_training(saving_listeners=self._train_spec.saving_listeners)

    def run_worker(self):
        self._start_distributed_training()

    def run_master(self):
        evaluator = _Evaluator(self._estimator, self._eval_spec, self._train_spec.max_steps)
        listeners = self._train_spec.saving_listeners + (
            _NewCheckpointListenerForEvaluate(evaluator, self._eval_spec.throttle_secs),)
        self._start_distributed_training(saving_listeners=listeners)

    def run_ps(self):
        """Serves until every trainer (chief or master, and workers) has put its token in this
        ps's done queue, then stops the server."""
        config = self._estimator.config
        serve_until_workers_done(self._start_std_server(config), config.task_id, config.num_worker_replicas)

    def run_evaluator(self):
        _assert_eval_spec(self._eval_spec)
        if self._eval_spec.start_delay_secs:
            _log.info("Waiting %f secs before starting eval.", self._eval_spec.start_delay_secs)
            time.sleep(self._eval_spec.start_delay_secs)
        evaluator = _Evaluator(self._estimator, self._eval_spec, self._train_spec.max_steps)
        max_steps = self._train_spec.max_steps
        while True:
            start = time.time()
            result, _ = evaluator.evaluate_and_export()
            if result.status == _EVALUATED:
                step = result.metrics.get(GraphKeys.GLOBAL_STEP)
                if step and max_steps and step >= max_steps:
                    _log.info("Exiting evaluation, global_step=%s >= train max_steps=%s", step, max_steps)
                    return
            wait = self._eval_spec.throttle_secs - (time.time() - start)
            if wait > 0:
                _log.info("Waiting %f secs before starting next eval run.", wait)
                time.sleep(wait)
            elif result.status != _EVALUATED:
                time.sleep(0.05)   # throttle_secs 0: look for the next checkpoint without spinning

    def _start_std_server(self, config):
        if not config.cluster_spec or not config.task_type or config.task_id is None:
            raise RuntimeError("Could not start server; be sure to specify cluster_spec, task_type, and task in "
                               "RunConfig or set the TF_CONFIG environment variable.")
        if not config.master:
            jobs = config.cluster_spec.jobs
            if (len(jobs) == 1 and len(config.cluster_spec.job_tasks(jobs[0])) == 1
                    and config.task_type in _TRAINER_JOBS):
                _log.info("Skip starting Tensorflow server as there is only one node in the cluster.")
                return None
            raise RuntimeError("Could not start server; be sure to specify master in RunConfig or set the TF_CONFIG "
                               "environment variable.")
        _log.info("Start Tensorflow server.")
        protocol = config.protocol if config.protocol in (None, "grpc") else None
        return Server(config.cluster_spec, job_name=config.task_type, task_index=config.task_id,
                      config=config.session_config, protocol=protocol)

    def _start_distributed_training(self, saving_listeners=None):
        config = self._estimator.config
        if tf_config().get("environment") != "google":
            self._start_std_server(config)
        if config.task_type == TaskType.WORKER and config.experimental_max_worker_delay_secs is not None:
            delay = min(int(config.experimental_max_worker_delay_secs), (config.task_id + 1) * _DELAY_SECS_PER_WORKER)
            if delay > 0:
                _log.info("Waiting %d secs before starting training.", delay)
                time.sleep(delay)
        self._estimator.train(input_fn=self._train_spec.input_fn, max_steps=self._train_spec.max_steps,
                              hooks=list(self._train_spec.hooks), saving_listeners=saving_listeners)
        self._tell_ps_tasks_done(config)

    @staticmethod
    def _tell_ps_tasks_done(config) -> None:
        """Puts this trainer's token in every ps task's done queue."""
        if config.num_ps_replicas and config.master:
            tell_ps_tasks_done(config.master, config.num_ps_replicas, config.num_worker_replicas,
                               config.global_id_in_cluster)
