"""One task of the shared-counter test (test_update_exactness.py): a ps that serves, or a worker
that adds 1 to the ps's counter --adds times with use_locking=True and prints, as one JSON line,
every value its increments returned.

    python shared_counter_task.py --ps_hosts=H --worker_hosts=H,H --job_name=worker --task_index=0 --adds=N
"""
from __future__ import annotations

import argparse
import json
import time

import tensorweave as tf


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ps_hosts")
    p.add_argument("--worker_hosts")
    p.add_argument("--job_name")
    p.add_argument("--task_index", type=int)
    p.add_argument("--adds", type=int, default=10000)
    args = p.parse_args()
    cluster = tf.train.ClusterSpec({"ps": args.ps_hosts.split(","), "worker": args.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=args.job_name, task_index=args.task_index)
    if args.job_name == "ps":
        print("SERVING", flush=True)
        server.join()
        return
    with tf.device(tf.train.replica_device_setter(worker_device=f"/job:worker/task:{args.task_index}",
                                                  cluster=cluster)):
        counter = tf.Variable(0, dtype=tf.int64, name="counter")
        arrived = tf.Variable(0, dtype=tf.int64, name="arrived")
    add = tf.assign_add(counter, 1, use_locking=True)
    arrive = tf.assign_add(arrived, 1, use_locking=True)
    sess = tf.Session(server.target)
    if args.task_index == 0:
        sess.run(tf.global_variables_initializer())
    else:
        while len(sess.run(tf.report_uninitialized_variables())):
            time.sleep(0.02)
    sess.run(arrive)
    while sess.run(arrived) < 2:   # both start adding together, so that their updates interleave
        time.sleep(0.005)
    values = [int(sess.run(add)) for _ in range(args.adds)]
    print(json.dumps({"task": args.task_index, "values": values}), flush=True)


if __name__ == "__main__":
    main()
