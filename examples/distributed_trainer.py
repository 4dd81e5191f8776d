"""Between-graph replication with parameter servers (seed 000's trainer): every task runs this
program; ps tasks serve the variables, each worker builds the model with
tf.train.replica_device_setter and trains it in a MonitoredTrainingSession, asynchronously or
(--sync) with tf.train.SyncReplicasOptimizer.

    python examples/distributed_trainer.py --ps_hosts=localhost:2222 \\
        --worker_hosts=localhost:2223,localhost:2224 --job_name=worker --task_index=0
    tensorweave launch --ps 1 --workers 2 examples/distributed_trainer.py \\
        --job_name={job_name} --task_index={task_index} --sync=true

Without --ps_hosts/--worker_hosts the cluster and this task come from TF_CONFIG (as
`tensorweave launch` sets it). The model fits y = x . w + b on synthetic data. Every process
ends on its own: the chief's StopAtStepHook ends training (the other workers, released from
the token queue in sync mode, stop too), each worker then reports on a queue of each ps, and
a ps exits once every worker has. Each worker prints one JSON line with what it saw.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time

import numpy as np

import tensorweave as tf

FEATURES = 10


def make_parser():
    parser = argparse.ArgumentParser()
    parser.register("type", "bool", lambda v: v.lower() == "true")
    parser.add_argument("--ps_hosts", type=str, default="", help="Comma-separated list of hostname:port pairs")
    parser.add_argument("--worker_hosts", type=str, default="", help="Comma-separated list of hostname:port pairs")
    parser.add_argument("--job_name", type=str, default="", help="One of 'ps', 'worker'")
    parser.add_argument("--task_index", type=int, default=0, help="Index of task within the job")
    parser.add_argument("--sync", type="bool", default=False, help="train with SyncReplicasOptimizer")
    parser.add_argument("--replicas_to_aggregate", type=int, default=0, help="sync: default all workers")
    parser.add_argument("--last_step", type=int, default=200)
    parser.add_argument("--learning_rate", type=float, default=0.05)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--same_data", type="bool", default=False, help="every worker gets the same batch")
    parser.add_argument("--checkpoint_dir", type=str, default=None)
    parser.add_argument("--save_checkpoint_steps", type=int, default=None)
    parser.add_argument("--step_delay", type=float, default=0.0, help="seconds to sleep after each step")
    parser.add_argument("--operation_timeout_ms", type=int, default=0,
                        help="ConfigProto.operation_timeout_in_ms of the training session (0: none)")
    parser.add_argument("--verbose", type="bool", default=False, help="log what the sessions do (recoveries, saves)")
    return parser


def cluster_and_task(flags):
    if flags.ps_hosts or flags.worker_hosts:
        cluster = {"ps": flags.ps_hosts.split(","), "worker": flags.worker_hosts.split(",")}
        return cluster, flags.job_name, flags.task_index
    config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    if not config.get("cluster"):
        sys.exit("give --ps_hosts and --worker_hosts, or set TF_CONFIG")
    task = config.get("task", {})
    return config["cluster"], flags.job_name or task.get("type"), int(task.get("index", flags.task_index))


def done_queue(ps_index: int, num_workers: int):
    """The queue on ps task `ps_index` where each worker reports that it finished."""
    with tf.device(f"/job:ps/task:{ps_index}"):
        return tf.FIFOQueue(num_workers, tf.int32, shapes=[()], shared_name=f"done_queue_{ps_index}",
                            name=f"done_queue_{ps_index}")


def true_params():
    rng = np.random.RandomState(1234)
    return rng.randn(FEATURES, 1).astype(np.float32), np.float32(0.5)


def batch(flags, task_index: int):
    w, b = true_params()
    rng = np.random.RandomState(7 if flags.same_data else 100 + task_index)
    x = rng.randn(flags.batch_size, FEATURES).astype(np.float32)
    return x, x.dot(w) + b


def run_ps(server, cluster_spec, task_index):
    # The ps serves until every worker has reported, then ends (rather than join() forever).
    num_workers = cluster_spec.num_tasks("worker")
    with tf.Graph().as_default():
        finished = done_queue(task_index, num_workers).dequeue_many(num_workers)
        with tf.Session(server.target) as sess:
            sess.run(finished)
    print(json.dumps({"job": "ps", "task": task_index, "done": True}), flush=True)
    time.sleep(1.0)   # the replies to the last reports are still on their way out


def run_worker(flags, server, cluster_spec, task_index):
    num_workers = cluster_spec.num_tasks("worker")
    is_chief = task_index == 0
    x_data, y_data = batch(flags, task_index)
    with tf.device(tf.train.replica_device_setter(worker_device=f"/job:worker/task:{task_index}",
                                                  cluster=cluster_spec)):
        global_step = tf.train.get_or_create_global_step()
        w = tf.get_variable("w", [FEATURES, 1], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(x_data), w) + b - tf.constant(y_data)))
        opt = tf.train.GradientDescentOptimizer(flags.learning_rate)
        hooks = [tf.train.StopAtStepHook(last_step=flags.last_step)]
        if flags.sync:
            opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=flags.replicas_to_aggregate or num_workers,
                                                 total_num_replicas=num_workers)
            hooks.append(opt.make_session_run_hook(is_chief))
        train_op = opt.minimize(loss, global_step=global_step)
    report = [done_queue(i, num_workers).enqueue(task_index) for i in range(cluster_spec.num_tasks("ps"))]
    steps = 0
    config = tf.ConfigProto(operation_timeout_in_ms=flags.operation_timeout_ms)
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief,
                                           checkpoint_dir=flags.checkpoint_dir, hooks=hooks,
                                           save_checkpoint_steps=flags.save_checkpoint_steps,
                                           save_checkpoint_secs=None if flags.save_checkpoint_steps else 600,
                                           log_step_count_steps=0, config=config) as mon_sess:
        while not mon_sess.should_stop():
            # mon_sess.run recovers from a lost ps (AbortedError/UnavailableError).
            mon_sess.run(train_op)
            steps += 1
            if flags.step_delay:
                time.sleep(flags.step_delay)
    with tf.Session(server.target) as sess:
        final_step, final_w, final_b, final_loss = sess.run([global_step, w, b, loss])
        try:
            sess.run(report)
        except tf.errors.UnavailableError:
            pass   # every worker has reported and the ps has already gone
    print(json.dumps({"job": "worker", "task": task_index, "local_steps": steps, "global_step": int(final_step),
                      "loss": float(final_loss), "w": final_w.ravel().tolist(), "b": float(final_b)}), flush=True)


def main(_):
    flags = FLAGS
    if flags.verbose:
        logging.basicConfig(format="%(asctime)s %(levelname)s %(message)s")
        logging.getLogger("tensorweave").setLevel(logging.INFO)
    cluster, job_name, task_index = cluster_and_task(flags)
    cluster_spec = tf.train.ClusterSpec(cluster)
    server = tf.train.Server(cluster_spec, job_name=job_name, task_index=task_index)
    if job_name == "ps":
        run_ps(server, cluster_spec, task_index)
    else:
        run_worker(flags, server, cluster_spec, task_index)


if __name__ == "__main__":
    FLAGS, unparsed = make_parser().parse_known_args()
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
