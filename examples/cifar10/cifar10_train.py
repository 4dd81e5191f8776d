"""Distributed CIFAR-10 training, as seed 003 runs it: one process per task, parameters on the ps
tasks, every worker training a replica with MonitoredTrainingSession (asynchronously, or in step
with --sync_replicas, or asynchronously with no worker more than N steps ahead of the slowest with
--staleness=N, a tensorweave extension), the chief saving checkpoints and summaries to --train_dir.

    # a whole local cluster in one command (TF_CONFIG tells each process its task):
    tensorweave launch --ps 1 --workers 2 examples/cifar10/cifar10_train.py --train_dir=/tmp/cifar10_train
    # or by hand, one terminal per task:
    python cifar10_train.py --job_name=ps --task_index=0 --ps_hosts=localhost:2222 \\
        --worker_hosts=localhost:2223,localhost:2224
    python cifar10_train.py --job_name=worker --task_index=0 ...   (and task 1)
    # with no cluster at all, one process trains alone.
    # synchronous all-reduce between the workers instead of parameter servers:
    tensorweave launch --workers 2 examples/cifar10/cifar10_train.py --strategy=multi_worker_mirrored

GPUs (--num_gpus, default: the GPUs this process sees): each worker builds one tower per GPU, its
compute on /gpu:N of its own task and its variables on the ps tasks (on the CPU without a
cluster), and applies the mean of the towers' gradients, as TF's cifar10_multi_gpu_train;
--batch_size is per tower. `tensorweave launch` gives each worker task its share of the GPUs.

--strategy=multi_worker_mirrored (tf.distribute.experimental.MultiWorkerMirroredStrategy, TF 1.15's
recipe for a custom loop in graph mode): a cluster of workers only; each worker serves its task
(tf.train.Server) and builds the same model under the strategy's scope, one replica (on its GPU,
if it sees one, else its CPU) reading its own batches; the optimizer all-reduces the gradients, so
every worker applies the same update and a global step trains on batch_size x workers examples.
Only the chief (worker 0) writes checkpoints and summaries. The cluster comes from TF_CONFIG or
the host flags, as for the ps job.

Runs unchanged on TensorFlow: CIFAR10_BACKEND=tensorflow (see backend.py).
"""
import contextlib
import json
import os
import sys
import time

from backend import BoundedStalenessOptimizer, tf
import cifar10
import cifar10_input

FLAGS = tf.app.flags.FLAGS
tf.app.flags.DEFINE_string("job_name", "", "ps or worker (default: TF_CONFIG's task type)")
tf.app.flags.DEFINE_integer("task_index", -1, "index of this task within its job (default: TF_CONFIG's)")
tf.app.flags.DEFINE_string("ps_hosts", "", "comma-separated host:port of the ps tasks")
tf.app.flags.DEFINE_string("worker_hosts", "", "comma-separated host:port of the worker tasks")
tf.app.flags.DEFINE_string("data_dir", "/tmp/cifar10_data", "CIFAR-10 binary batches (written if missing)")
tf.app.flags.DEFINE_boolean("download", False, "download CIFAR-10 instead of using the embedded stand-in")
tf.app.flags.DEFINE_string("train_dir", "/tmp/cifar10_train", "checkpoints and event files")
tf.app.flags.DEFINE_integer("batch_size", 128, "examples per batch and worker")
tf.app.flags.DEFINE_integer("max_steps", 1800, "global steps to train for")
tf.app.flags.DEFINE_integer("log_frequency", 20, "global steps between progress lines")
tf.app.flags.DEFINE_boolean("sync_replicas", False, "aggregate the workers' gradients each step")
tf.app.flags.DEFINE_integer("staleness", -1, "asynchronous, but no worker more than this many steps ahead of "
                            "the slowest (0: in step; -1: no bound); a tensorweave extension")
tf.app.flags.DEFINE_string("model", "tutorial", "tutorial or xception")
tf.app.flags.DEFINE_integer("xception_middle_repeats", 2, "repeats of Xception's middle flow")
tf.app.flags.DEFINE_integer("save_checkpoint_secs", 60, "seconds between checkpoints")
tf.app.flags.DEFINE_integer("num_gpus", -1, "GPUs (towers) per worker; -1: the GPUs present, 0: CPU only")
tf.app.flags.DEFINE_boolean("log_device_placement", False, "print where each op runs")
tf.app.flags.DEFINE_string("strategy", "", "multi_worker_mirrored: all-reduce between the workers (no ps tasks)")


def cluster_and_task():
    """(cluster dict or None, job name, task index) from the flags, else from TF_CONFIG."""
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    cluster = config.get("cluster")
    if FLAGS.ps_hosts or FLAGS.worker_hosts:
        cluster = {"ps": FLAGS.ps_hosts.split(","), "worker": FLAGS.worker_hosts.split(",")}
    task = config.get("task", {})
    job = FLAGS.job_name or task.get("type", "worker")
    index = FLAGS.task_index if FLAGS.task_index >= 0 else int(task.get("index", 0))
    return cluster, job, index


class ProgressHook(tf.train.SessionRunHook):
    """The chief's progress line (step, examples/s, loss, ETA): redrawn in place on a terminal,
    one plain line per report otherwise (so a log file keeps them all)."""

    def __init__(self, loss, global_step, examples_per_step: int, max_steps: int, every: int):
        self._fetches = {"loss": loss, "step": global_step}
        self._examples_per_step = examples_per_step
        self._max_steps, self._every = max_steps, every
        self._redraw = sys.stdout.isatty() or os.environ.get("TENSORWEAVE_TTY") == "1"

    def begin(self):
        self._last_step, self._last_time, self._started = None, None, time.time()

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self._fetches)

    def after_run(self, run_context, run_values):
        step, loss = int(run_values.results["step"]), float(run_values.results["loss"])
        now = time.time()
        if self._last_step is None:
            self._last_step, self._last_time = step, now
            return
        if step - self._last_step < self._every:
            return
        rate = (step - self._last_step) * self._examples_per_step / max(now - self._last_time, 1e-9)
        steps_per_s = (step - self._last_step) / max(now - self._last_time, 1e-9)
        eta = (self._max_steps - step) / steps_per_s if steps_per_s > 0 else float("inf")
        line = (f"step {step}/{self._max_steps}  {rate:7.0f} examples/s  loss {loss:.3f}  "
                f"ETA {int(eta) // 60}:{int(eta) % 60:02d}")
        print(("\r" + line) if self._redraw else line, end="" if self._redraw else "\n", flush=True)
        self._last_step, self._last_time = step, now

    def end(self, session):
        if self._redraw:
            print(flush=True)


def num_gpus() -> int:
    return FLAGS.num_gpus if FLAGS.num_gpus >= 0 else len(tf.config.experimental.list_physical_devices("GPU"))


def tower_devices(gpus: int, spec, task_index: int) -> list:
    """One device function per tower: variables on the ps tasks (the CPU without a cluster),
    everything else on the tower's GPU of this task; [None] (the enclosing device) without GPUs."""
    if not gpus:
        return [None]
    if spec is None:
        return [tf.train.replica_device_setter(ps_tasks=1, ps_device="/device:CPU:0", worker_device=f"/device:GPU:{i}")
                for i in range(gpus)]
    return [tf.train.replica_device_setter(worker_device=f"/job:worker/task:{task_index}/device:GPU:{i}", cluster=spec)
            for i in range(gpus)]


def check_staleness_flag() -> None:
    """Before anything starts: --staleness where it cannot work."""
    if FLAGS.staleness >= 0 and FLAGS.sync_replicas:
        raise SystemExit("--staleness and --sync_replicas exclude each other (--sync_replicas is synchronous)")
    if FLAGS.staleness >= 0 and FLAGS.strategy:
        raise SystemExit("--staleness bounds a ps job's workers; --strategy trains without ps, in step")
    if FLAGS.staleness >= 0 and BoundedStalenessOptimizer is None:
        raise SystemExit("--staleness needs tensorweave: TensorFlow has no bounded-staleness training")


def bounded_staleness(num_workers: int, task_index: int):
    """--staleness: the function wrapping the optimizer, or None (no bound)."""
    if FLAGS.staleness < 0:
        return None
    return lambda opt: BoundedStalenessOptimizer(opt, FLAGS.staleness, num_workers, task_index)


def build(num_workers: int, task_index: int, devices: list):
    """The training graph of one worker, a tower per device of `devices`: (train_op, hooks)."""
    is_chief = task_index == 0
    global_step = tf.train.get_or_create_global_step()
    with tf.device("/cpu:0"):
        images, labels = cifar10_input.distorted_inputs(FLAGS.data_dir, FLAGS.batch_size * len(devices))
        if len(devices) > 1:
            images, labels = tf.split(images, len(devices)), tf.split(labels, len(devices))
        else:
            images, labels = [images], [labels]
    losses = []
    with tf.variable_scope(tf.get_variable_scope()):
        for i, device in enumerate(devices):
            scope = f"tower_{i}" if len(devices) > 1 else None
            with tf.device(device) if device is not None else contextlib.nullcontext(), \
                    tf.name_scope(scope) if scope else contextlib.nullcontext():
                logits = cifar10.inference(images[i], FLAGS.model, is_training=True,
                                           middle_repeats=FLAGS.xception_middle_repeats)
                losses.append(cifar10.loss(logits, labels[i], scope=scope))
            tf.get_variable_scope().reuse_variables()
    examples = cifar10_input.num_records([os.path.join(FLAGS.data_dir, f) for f in cifar10_input.TRAIN_FILES])
    sync = num_workers if FLAGS.sync_replicas else 0
    train_op, wrapped_opt = cifar10.train(losses, global_step, FLAGS.batch_size * len(devices), examples,
                                       sync_replicas=sync, tower_devices=devices,
                                       wrap_optimizer=bounded_staleness(num_workers, task_index))
    loss = losses[-1]
    hooks = [tf.train.StopAtStepHook(last_step=FLAGS.max_steps), tf.train.NanTensorHook(loss)]
    if wrapped_opt is not None:   # SyncReplicasOptimizer's hook, or BoundedStalenessOptimizer's
        hooks.append(wrapped_opt.make_session_run_hook(is_chief) if sync else wrapped_opt.make_session_run_hook())
    if is_chief:
        # a global step is one worker's batch on each tower, or (sync) that from each worker
        examples_per_step = FLAGS.batch_size * len(devices) * (num_workers if sync else 1)
        hooks.append(ProgressHook(loss, global_step, examples_per_step, FLAGS.max_steps, FLAGS.log_frequency))
    return train_op, hooks


def train_under_strategy(cluster, job: str, task_index: int) -> None:
    """--strategy: TF 1.15's training loop under a distribution strategy in graph mode. Each
    replica reads its own batches and builds the model; its loss is scaled by 1/replicas in
    cifar10.train, so the all-reduced gradients are the global batch's mean's."""
    if FLAGS.strategy != "multi_worker_mirrored":
        raise SystemExit(f"Unknown --strategy={FLAGS.strategy!r}: multi_worker_mirrored, or none for the ps job")
    master, resolver = "", None
    if cluster:   # each worker serves its own task; the collectives run between these servers
        spec = tf.train.ClusterSpec(cluster)
        master = tf.train.Server(spec, job_name=job, task_index=task_index).target
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(spec, task_type=job, task_id=task_index)
    strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
    if len(strategy.extended.worker_devices) > 1:
        # (each replica's loss averages would be variables of their own, which a strategy forbids)
        raise SystemExit(f"--strategy trains one replica per worker, and this worker has "
                         f"{len(strategy.extended.worker_devices)} GPUs: make one visible (CUDA_VISIBLE_DEVICES)")
    is_chief, replicas = strategy.extended.should_checkpoint, strategy.num_replicas_in_sync
    examples = cifar10_input.num_records([os.path.join(FLAGS.data_dir, f) for f in cifar10_input.TRAIN_FILES])
    with tf.Graph().as_default(), strategy.scope():
        global_step = tf.train.get_or_create_global_step()

        def replica_step():
            images, labels = cifar10_input.distorted_inputs(FLAGS.data_dir, FLAGS.batch_size)
            logits = cifar10.inference(images, FLAGS.model, is_training=True,
                                       middle_repeats=FLAGS.xception_middle_repeats)
            loss = cifar10.loss(logits, labels, scope=tf.get_default_graph().get_name_scope() or None)
            train_op, _ = cifar10.train(loss, global_step, FLAGS.batch_size * replicas, examples)
            with tf.control_dependencies([train_op]):
                return tf.identity(loss)
        losses = strategy.extended.call_for_each_replica(replica_step)   # (TF 1.15 and 2.x)
        train_op, loss = strategy.group(losses), strategy.experimental_local_results(losses)[0]
        hooks = [tf.train.StopAtStepHook(last_step=FLAGS.max_steps), tf.train.NanTensorHook(loss)]
        if is_chief:   # a global step is one batch on every replica
            hooks.append(ProgressHook(loss, global_step, FLAGS.batch_size * replicas, FLAGS.max_steps,
                                      FLAGS.log_frequency))
        config = strategy.update_config_proto(tf.ConfigProto(allow_soft_placement=True,
                                                             log_device_placement=FLAGS.log_device_placement))
        # every worker initialises (or restores) its own copies, as a chief; only the chief saves
        with tf.train.MonitoredTrainingSession(master=master, is_chief=True, checkpoint_dir=FLAGS.train_dir,
                                               hooks=hooks,
                                               save_checkpoint_secs=FLAGS.save_checkpoint_secs if is_chief else None,
                                               save_summaries_steps=100 if is_chief else None,
                                               log_step_count_steps=0, config=config) as sess:
            while not sess.should_stop():
                sess.run(train_op)
    if is_chief:
        print(f"Done: {FLAGS.max_steps} steps; checkpoints in {FLAGS.train_dir}", flush=True)


def mode() -> str:
    if FLAGS.strategy:
        return FLAGS.strategy
    if FLAGS.sync_replicas:
        return "synchronous"
    return "asynchronous" + (f" (at most {FLAGS.staleness} steps apart)" if FLAGS.staleness >= 0 else "")


def main(_):
    check_staleness_flag()
    cluster, job, task_index = cluster_and_task()
    is_chief = task_index == 0
    if job == "ps":
        server = tf.train.Server(tf.train.ClusterSpec(cluster), job_name="ps", task_index=task_index)
        server.join()
        return
    what = cifar10_input.prepare_data(FLAGS.data_dir, FLAGS.download,
                                      log=lambda m: print(m, flush=True) if is_chief else None)
    if is_chief:
        print(f"Training the {FLAGS.model} model on {what} ({FLAGS.data_dir}), {mode()}, "
              f"checkpoints in {FLAGS.train_dir}", flush=True)
    if FLAGS.strategy:
        return train_under_strategy(cluster, job, task_index)
    gpus, spec = num_gpus(), None
    if is_chief and gpus:
        print(f"{gpus} GPU tower(s) per worker", flush=True)
    if cluster:
        spec = tf.train.ClusterSpec(cluster)
        server = tf.train.Server(spec, job_name=job, task_index=task_index)
        master, num_workers = server.target, len(cluster["worker"])
        device = tf.train.replica_device_setter(worker_device=f"/job:worker/task:{task_index}", cluster=spec)
    else:
        master, num_workers, device = "", 1, None
    with tf.Graph().as_default(), tf.device(device):
        train_op, hooks = build(num_workers, task_index, tower_devices(gpus, spec, task_index))
        # soft placement: an op without a GPU kernel runs on its task's CPU (as TF's multi-GPU trainer)
        config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=FLAGS.log_device_placement)
        if cluster:
            config.device_filters.extend(["/job:ps", f"/job:worker/task:{task_index}"])
        with tf.train.MonitoredTrainingSession(master=master, is_chief=is_chief, checkpoint_dir=FLAGS.train_dir,
                                               hooks=hooks, save_checkpoint_secs=FLAGS.save_checkpoint_secs,
                                               save_summaries_steps=100, log_step_count_steps=0,
                                               config=config) as sess:
            while not sess.should_stop():
                sess.run(train_op)
    if is_chief:
        print(f"Done: {FLAGS.max_steps} steps; checkpoints in {FLAGS.train_dir}", flush=True)


if __name__ == "__main__":
    tf.app.run()
