"""tf.estimator.RunConfig: where an Estimator runs (the cluster and this task, from TF_CONFIG) and
how (checkpoint and summary cadence, session config, seeds).

TF_CONFIG is read as TF 1.15's RunConfig reads it: {"cluster": {job: [addresses]}, "task": {"type",
"index"}, "session_master", "eval_session_master", "model_dir", "service"}. A cluster has one
`chief` (or, in the legacy layout, one `master` and no chief); the `evaluator` task is not part of
the training cluster; without a cluster the task is worker 0. The errors for inconsistent configs
are TF's, word for word (tests/unit/test_run_config.py compares with TF 2.15's recordings).
"""
from __future__ import annotations

import copy
import json
import logging
import os

from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.distribute.distribute_coordinator import STANDALONE_CLIENT
from tensorweave.estimator.model_fn import fn_args
from tensorweave.framework.config import ConfigProto
from tensorweave.framework.tf_export import tf_export
from tensorweave.train.monitored_session import USE_DEFAULT, steps_or_secs

_log = logging.getLogger("tensorweave")
_LOCAL_MASTER = ""
_GRPC_SCHEME = "grpc://"
_SAVE_CKPT_ERR = "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set."
_REPLACEABLE = ["model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps", "save_checkpoints_secs",
                "session_config", "keep_checkpoint_max", "keep_checkpoint_every_n_hours", "log_step_count_steps",
                "train_distribute", "device_fn", "protocol", "eval_distribute", "experimental_distribute",
                "experimental_max_worker_delay_secs", "session_creation_timeout_secs", "checkpoint_save_graph_def"]


class TaskType:
    """The task types of an Estimator cluster."""
    MASTER = "master"
    PS = "ps"
    WORKER = "worker"
    CHIEF = "chief"
    EVALUATOR = "evaluator"


def tf_config() -> dict:
    """The TF_CONFIG environment variable as a dict ({} when unset)."""
    return json.loads(os.environ.get("TF_CONFIG", "") or "{}")


def get_default_session_config() -> ConfigProto:
    """The session config an Estimator uses when its RunConfig has none."""
    return ConfigProto(allow_soft_placement=True)


def _validate_task_type_and_task_id(cluster_spec: ClusterSpec, task_env: dict, chief_task_type: str):
    if chief_task_type != TaskType.WORKER:   # (worker: a cluster of workers, worker 0 the chief, _workers_only)
        if chief_task_type not in cluster_spec.jobs:
            raise ValueError(f'If "cluster" is set in TF_CONFIG, it must have one "{chief_task_type}" node.')
        if len(cluster_spec.job_tasks(chief_task_type)) > 1:
            raise ValueError(f'The "cluster" in TF_CONFIG must have only one "{chief_task_type}" node.')
    task_type = task_env.get("type")
    task_id = task_env.get("index")
    if not task_type:
        raise ValueError('If "cluster" is set in TF_CONFIG, task type must be set.')
    if task_id is None:
        raise ValueError('If "cluster" is set in TF_CONFIG, task index must be set.')
    task_id = int(task_id)
    if task_id < 0:
        raise ValueError("Task index must be non-negative number.")
    if task_type == TaskType.EVALUATOR:
        return task_type, task_id
    note = "Note that these values may be coming from the TF_CONFIG environment variable."
    if task_type not in cluster_spec.jobs:
        raise ValueError(f"{task_type} is not a valid task_type in the cluster_spec:\n{cluster_spec}\n\n{note}")
    if not 0 <= task_id < len(cluster_spec.job_tasks(task_type)):
        raise ValueError(f"{task_id} is not a valid task_id for task_type {task_type} in the cluster_spec:\n"
                         f"{cluster_spec}\n\n{note}")
    return task_type, task_id


def _session_master(cluster_spec: ClusterSpec, task_type: str, task_id: int, config: dict) -> str:
    """TF_CONFIG's session_master; '' for a one-task cluster; else grpc:// and this task's address."""
    if "session_master" in config:
        return config["session_master"]
    jobs = cluster_spec.jobs
    if len(jobs) == 1 and len(cluster_spec.job_tasks(jobs[0])) == 1:
        return _LOCAL_MASTER
    return _GRPC_SCHEME + cluster_spec.job_tasks(task_type)[task_id]


def _global_id_in_cluster(cluster_spec: ClusterSpec, task_type: str, task_id: int, chief_task_type: str) -> int:
    """The task's index over the chief, the other jobs in sorted order, and the ps last."""
    order = [chief_task_type] if chief_task_type in cluster_spec.jobs else []
    order += [t for t in sorted(cluster_spec.jobs) if t not in (chief_task_type, TaskType.PS)]
    if TaskType.PS in cluster_spec.jobs:
        order.append(TaskType.PS)
    next_id = 0
    for t in order:
        if t == task_type:
            return next_id + task_id
        next_id += len(cluster_spec.job_tasks(t))
    raise RuntimeError(f"Internal Error: `task_type` ({task_type}) is not in cluster_spec ({cluster_spec}).")


def _count_workers(cluster_spec: ClusterSpec, chief_task_type: str) -> int:
    jobs = cluster_spec.as_dict()
    return len(jobs.get(TaskType.WORKER, [])) + len(jobs.get(chief_task_type, []))


def _model_dir(config: dict, model_dir):
    if hasattr(model_dir, "__fspath__"):
        model_dir = os.fspath(model_dir)
    if model_dir == "":
        raise ValueError("model_dir should be non-empty.")
    in_config = config.get("model_dir")
    if in_config == "":
        raise ValueError("model_dir in TF_CONFIG should be non-empty.")
    if in_config:
        if model_dir and in_config != model_dir:
            raise ValueError("`model_dir` provided in RunConfig construct, if set, must have the same value as the "
                             f'model_dir in TF_CONFIG. model_dir: {model_dir}\nTF_CONFIG["model_dir"]: {in_config}.\n')
        _log.info("Using model_dir in TF_CONFIG: %s", in_config)
    return model_dir or in_config


def _validate_properties(config: "RunConfig") -> None:
    def check(name, cond, message):
        value = getattr(config, "_" + name)
        if value is not None and not cond(value):
            raise ValueError(message)

    check("model_dir", lambda d: d, "model_dir should be non-empty")
    check("save_summary_steps", lambda s: s >= 0, "save_summary_steps should be >= 0")
    check("save_checkpoints_steps", lambda s: s >= 0, "save_checkpoints_steps should be >= 0")
    check("save_checkpoints_secs", lambda s: s >= 0, "save_checkpoints_secs should be >= 0")
    check("session_config", lambda sc: isinstance(sc, ConfigProto), "session_config must be instance of ConfigProto")
    check("keep_checkpoint_max", lambda k: k >= 0, "keep_checkpoint_max should be >= 0")
    check("keep_checkpoint_every_n_hours", lambda h: h > 0, "keep_checkpoint_every_n_hours should be > 0")
    check("log_step_count_steps", lambda n: n > 0, "log_step_count_steps should be > 0")
    check("tf_random_seed", lambda s: isinstance(s, int), "tf_random_seed must be integer.")
    check("experimental_max_worker_delay_secs", lambda d: isinstance(d, int),
          "experimental_max_worker_delay_secs must be an integer if set.")
    check("session_creation_timeout_secs", lambda t: t > 0, "session_creation_timeout_secs should be > 0")
    check("device_fn", lambda f: callable(f) and set(fn_args(f)) == {"op"},
          'device_fn must be callable with exactly one argument "op".')
    check("protocol", lambda p: p in (None, "grpc", "grpc+verbs"), "protocol should be grpc or grpc+verbs")


@tf_export("estimator.RunConfig")
class RunConfig:
    """tf.estimator.RunConfig(model_dir=None, tf_random_seed=None, save_summary_steps=100,
    save_checkpoints_steps=None, save_checkpoints_secs=600, session_config=None,
    keep_checkpoint_max=5, keep_checkpoint_every_n_hours=10000, log_step_count_steps=100,
    train_distribute=None, device_fn=None, protocol=None, eval_distribute=None,
    experimental_distribute=None, experimental_max_worker_delay_secs=None,
    session_creation_timeout_secs=7200, checkpoint_save_graph_def=True).

    Checkpoints every save_checkpoints_secs (600 when neither is given) or save_checkpoints_steps
    (not both); both None disables them. The distributed properties (cluster_spec, task_type,
    task_id, num_ps_replicas, num_worker_replicas, is_chief, master, evaluation_master,
    global_id_in_cluster, service) come from TF_CONFIG; a task of a cluster gets a session_config
    whose device_filters keep it talking to the ps tasks and itself only. `train_distribute` (a
    tf.distribute strategy) makes train() run model_fn once per replica under it, `eval_distribute`
    evaluate() (each replica its own batch per step, the metrics read over all replicas);
    `experimental_distribute` (a tf.contrib.distribute.DistributeConfig) gives them instead (not
    both ways: ValueError); its remote_cluster with a train_distribute makes this process a
    standalone client of that cluster (cluster_spec; train_and_evaluate trains on its servers:
    distribute_coordinator.run_standalone_client), which TF_CONFIG must not also name."""

    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=USE_DEFAULT, save_checkpoints_secs=USE_DEFAULT, session_config=None,
                 keep_checkpoint_max=5, keep_checkpoint_every_n_hours=10000, log_step_count_steps=100,
                 train_distribute=None, device_fn=None, protocol=None, eval_distribute=None,
                 experimental_distribute=None, experimental_max_worker_delay_secs=None,
                 session_creation_timeout_secs=7200, checkpoint_save_graph_def=True):
        save_checkpoints_steps, save_checkpoints_secs = steps_or_secs(save_checkpoints_steps, save_checkpoints_secs,
                                                                      None, 600)
        if save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError(_SAVE_CKPT_ERR)
        config = tf_config()
        if config:
            _log.info("TF_CONFIG environment variable: %s", config)
        RunConfig._replace(
            self, model_dir=_model_dir(config, model_dir), tf_random_seed=tf_random_seed,
            save_summary_steps=save_summary_steps, save_checkpoints_steps=save_checkpoints_steps,
            save_checkpoints_secs=save_checkpoints_secs, session_config=session_config,
            keep_checkpoint_max=keep_checkpoint_max, keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
            log_step_count_steps=log_step_count_steps, train_distribute=train_distribute, device_fn=device_fn,
            protocol=protocol, eval_distribute=eval_distribute, experimental_distribute=experimental_distribute,
            experimental_max_worker_delay_secs=experimental_max_worker_delay_secs,
            session_creation_timeout_secs=session_creation_timeout_secs,
            checkpoint_save_graph_def=checkpoint_save_graph_def)
        self._distribute_coordinator_mode = None
        self._adopt_experimental_distribute(config)
        if self._distribute_coordinator_mode == STANDALONE_CLIENT:
            # a client outside the cluster: the local settings, the remote cluster (TF's init_run_config)
            self._init_distributed_setting({})
            self._cluster_spec = ClusterSpec(self._experimental_distribute.remote_cluster)
            return
        self._init_distributed_setting(config)
        if not self._session_config and self._cluster_spec:
            RunConfig._replace(self, session_config=self._distributed_session_config())

    def _adopt_experimental_distribute(self, config: dict) -> None:
        """experimental_distribute's strategies become this config's (TF's messages)."""
        distribute = self._experimental_distribute
        if not distribute:
            return
        if distribute.train_distribute:
            if self._train_distribute:
                raise ValueError("Either `train_distribute` or`experimental_distribute.train_distribute` can be set.")
            self._train_distribute = distribute.train_distribute
        if distribute.eval_distribute:
            if self._eval_distribute:
                raise ValueError("Either `eval_distribute` or`experimental_distribute.eval_distribute` can be set.")
            self._eval_distribute = distribute.eval_distribute
        if self._train_distribute and distribute.remote_cluster:
            if config.get("cluster"):
                raise ValueError('Cannot set both "cluster_spec" of TF_CONFIG and '
                                 "`experimental_distribute.remote_cluster`")
            _log.info("RunConfig initialized for Distribute Coordinator with STANDALONE_CLIENT mode")
            self._distribute_coordinator_mode = STANDALONE_CLIENT

    def _distributed_session_config(self):
        filters = {TaskType.MASTER: ["/job:ps", "/job:master"], TaskType.CHIEF: ["/job:ps", "/job:chief"],
                   TaskType.WORKER: ["/job:ps", f"/job:worker/task:{self._task_id}"],
                   TaskType.PS: ["/job:ps", "/job:worker", "/job:chief", "/job:master"]}.get(self._task_type)
        return None if filters is None else ConfigProto(allow_soft_placement=True, device_filters=filters)

    def _init_distributed_setting(self, config: dict) -> None:
        service = config.get("service")
        if service is not None and not isinstance(service, dict):
            raise TypeError(f'If "service" is set in TF_CONFIG, it must be a dict. Given {type(service)}')
        self._service = service
        self._cluster_spec = ClusterSpec(config.get("cluster", {}))
        task_env = config.get("task", {})
        if self._cluster_spec and TaskType.MASTER in self._cluster_spec.jobs:
            self._init_with_master(config, task_env)
        elif self._cluster_spec:
            chief = TaskType.WORKER if self._workers_only() else TaskType.CHIEF
            self._task_type, self._task_id = _validate_task_type_and_task_id(self._cluster_spec, task_env, chief)
            self._evaluation_master = (config.get("eval_session_master", _LOCAL_MASTER)
                                       if self._task_type == TaskType.EVALUATOR else _LOCAL_MASTER)
            if self._task_type != TaskType.EVALUATOR:
                self._master = _session_master(self._cluster_spec, self._task_type, self._task_id, config)
                self._num_ps_replicas = len(self._cluster_spec.as_dict().get(TaskType.PS, []))
                self._num_worker_replicas = _count_workers(self._cluster_spec, TaskType.CHIEF)
                self._global_id_in_cluster = _global_id_in_cluster(self._cluster_spec, self._task_type,
                                                                   self._task_id, chief)
            else:   # the evaluator is not part of the training cluster
                self._cluster_spec = ClusterSpec({})
                self._master = _LOCAL_MASTER
                self._num_ps_replicas = 0
                self._num_worker_replicas = 0
                self._global_id_in_cluster = None
            self._is_chief = self._task_type == chief and self._task_id == 0
        else:
            self._task_type = task_env.get("type", TaskType.WORKER)
            self._task_id = int(task_env.get("index", 0))
            self._global_id_in_cluster = 0
            if self._task_type != TaskType.WORKER:
                raise ValueError('If "cluster" is not set in TF_CONFIG, task type must be WORKER.')
            if self._task_id != 0:
                raise ValueError('If "cluster" is not set in TF_CONFIG, task index must be 0.')
            self._master = config.get("session_master", _LOCAL_MASTER)
            self._evaluation_master = config.get("eval_session_master", _LOCAL_MASTER)
            self._is_chief = True
            self._num_ps_replicas = 0
            self._num_worker_replicas = 1

    def _workers_only(self) -> bool:
        """A cluster of workers without a chief, for a between-graph train_distribute
        (MultiWorkerMirroredStrategy): TF's distribute coordinator lets worker 0 act as the chief."""
        strategy = self._train_distribute
        return strategy is not None and strategy.extended.experimental_between_graph \
            and TaskType.CHIEF not in self._cluster_spec.jobs and TaskType.WORKER in self._cluster_spec.jobs

    def _init_with_master(self, config: dict, task_env: dict) -> None:
        """The legacy layout: a `master` job instead of `chief`."""
        if TaskType.CHIEF in self._cluster_spec.jobs:
            raise ValueError("If `master` node exists in `cluster`, job `chief` is not supported.")
        self._task_type, self._task_id = _validate_task_type_and_task_id(self._cluster_spec, task_env,
                                                                         TaskType.MASTER)
        if self._task_type == TaskType.EVALUATOR:
            raise ValueError("If `master` node exists in `cluster`, task_type `evaluator` is not supported.")
        self._global_id_in_cluster = _global_id_in_cluster(self._cluster_spec, self._task_type, self._task_id,
                                                           TaskType.MASTER)
        self._master = _session_master(self._cluster_spec, self._task_type, self._task_id, config)
        self._evaluation_master = _LOCAL_MASTER
        self._num_ps_replicas = len(self._cluster_spec.as_dict().get(TaskType.PS, []))
        self._num_worker_replicas = _count_workers(self._cluster_spec, TaskType.MASTER)
        self._is_chief = self._task_type == TaskType.MASTER

    cluster_spec = property(lambda self: self._cluster_spec)
    device_fn = property(lambda self: self._device_fn, doc="The device function, or None for Estimator's "
                                                            "replica_device_setter.")
    evaluation_master = property(lambda self: self._evaluation_master)
    is_chief = property(lambda self: self._is_chief)
    master = property(lambda self: self._master)
    num_ps_replicas = property(lambda self: self._num_ps_replicas)
    num_worker_replicas = property(lambda self: self._num_worker_replicas)
    task_id = property(lambda self: self._task_id)
    task_type = property(lambda self: self._task_type)
    global_id_in_cluster = property(lambda self: self._global_id_in_cluster,
                                    doc="The task's index over the whole training cluster: chief first, ps last.")
    service = property(lambda self: self._service)
    experimental_max_worker_delay_secs = property(lambda self: self._experimental_max_worker_delay_secs)
    tf_random_seed = property(lambda self: self._tf_random_seed)
    save_summary_steps = property(lambda self: self._save_summary_steps)
    save_checkpoints_secs = property(lambda self: self._save_checkpoints_secs)
    save_checkpoints_steps = property(lambda self: self._save_checkpoints_steps)
    session_config = property(lambda self: self._session_config)
    checkpoint_save_graph_def = property(lambda self: self._checkpoint_save_graph_def)
    keep_checkpoint_max = property(lambda self: self._keep_checkpoint_max)
    keep_checkpoint_every_n_hours = property(lambda self: self._keep_checkpoint_every_n_hours)
    log_step_count_steps = property(lambda self: self._log_step_count_steps)
    session_creation_timeout_secs = property(lambda self: self._session_creation_timeout_secs)
    model_dir = property(lambda self: self._model_dir)
    train_distribute = property(lambda self: self._train_distribute)
    eval_distribute = property(lambda self: self._eval_distribute)
    experimental_distribute = property(lambda self: self._experimental_distribute)
    protocol = property(lambda self: self._protocol)

    def replace(self, **kwargs) -> "RunConfig":
        """A copy with the given properties replaced (those RunConfig takes, not the
        TF_CONFIG-derived ones); setting one of save_checkpoints_steps/secs clears the other."""
        return RunConfig._replace(copy.deepcopy(self), **kwargs)

    @staticmethod
    def _replace(config: "RunConfig", **kwargs) -> "RunConfig":
        for key, value in kwargs.items():
            if key not in _REPLACEABLE:
                raise ValueError(f"Replacing {key} is not supported. Allowed properties are {_REPLACEABLE}.")
            setattr(config, "_" + key, value)
        steps, secs = config._save_checkpoints_steps, config._save_checkpoints_secs
        if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" in kwargs:
            if steps is not None and secs is not None:
                raise ValueError(_SAVE_CKPT_ERR)
        elif "save_checkpoints_steps" in kwargs and steps is not None:
            config._save_checkpoints_secs = None
        elif "save_checkpoints_secs" in kwargs and secs is not None:
            config._save_checkpoints_steps = None
        _validate_properties(config)
        return config

    def __repr__(self) -> str:
        return f"RunConfig({ {k[1:]: v for k, v in sorted(vars(self).items())} })"
