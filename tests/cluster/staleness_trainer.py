"""One worker of a bounded-staleness ps job (tests/cluster/test_bounded_staleness_cluster.py): it
serves its worker task in-process and trains a linear model on the ps with
BoundedStalenessOptimizer in a MonitoredTrainingSession, for --steps of its own.

Besides the model, the ps holds one step counter per worker, which each worker's update adds 1 to
(after its gradients are applied, before its clock advances). At the start of each step (before
its own update) a worker reads all the counters and appends them to --log as a JSON line: its
own count and the others' as it saw them, the record the test checks the bound on."""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

import tensorweave as tf
from tensorweave.train.bounded_staleness import BoundedStalenessOptimizer

X = ((np.arange(48, dtype=np.float32).reshape(16, 3) * 7) % 11 - 5) / 4
Y = X @ np.array([0.5, -1.0, 2.0], np.float32)


class CountingOptimizer(tf.train.GradientDescentOptimizer):
    """Gradient descent that also counts this worker's applied steps in `counts[worker]`."""

    def __init__(self, counts, worker: int):
        super().__init__(0.01)
        self._counts, self._worker = counts, worker

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        update = super().apply_gradients(grads_and_vars, global_step, name)
        with tf.control_dependencies([update]):
            return tf.scatter_add(self._counts, [self._worker], [1]).op


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--cluster", required=True)
    p.add_argument("--task_index", type=int, required=True)
    p.add_argument("--staleness", default="0", help="an int, or 'none' (unbounded)")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--sleep", type=float, default=0.0, help="seconds to sleep before each step (a slow worker)")
    p.add_argument("--worker_timeout", type=float, default=600.0)
    p.add_argument("--log", required=True)
    flags = p.parse_args()
    cluster = json.loads(flags.cluster)
    num_workers, me = len(cluster["worker"]), flags.task_index
    staleness = None if flags.staleness == "none" else int(flags.staleness)
    spec = tf.train.ClusterSpec(cluster)
    server = tf.train.Server(spec, job_name="worker", task_index=me)
    with tf.Graph().as_default(), tf.device(tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{me}", cluster=spec)):
        w = tf.get_variable("w", initializer=tf.zeros([3]))
        counts = tf.get_variable("counts", initializer=tf.zeros([num_workers], tf.int64), trainable=False)
        step = tf.train.get_or_create_global_step()
        seen = counts.read_value()
        with tf.control_dependencies([seen]):   # read before this step's own count is added
            loss = tf.reduce_mean(tf.square(tf.tensordot(tf.constant(X), w, 1) - Y))
        opt = BoundedStalenessOptimizer(CountingOptimizer(counts, me), staleness, num_workers, me,
                                        worker_timeout_secs=flags.worker_timeout)
        train = opt.minimize(loss, global_step=step)
        config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{me}"])
        with tf.train.MonitoredTrainingSession(master=server.target, is_chief=me == 0, config=config,
                                               hooks=[opt.make_session_run_hook()]) as sess, \
                open(flags.log, "a") as log:
            for _ in range(flags.steps):
                time.sleep(flags.sleep)
                counted, _ = sess.run([seen, train])
                log.write(json.dumps({"own": int(counted[me]),
                                      "others": [int(c) for i, c in enumerate(counted) if i != me]}) + "\n")
                log.flush()
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
