"""Seed 004's recipe: the same program runs on every machine; TF_CONFIG says which cluster and
which role (ps or worker) this process has; tf.train.replica_device_setter puts the variables on
the ps tasks; model_dir holds the checkpoints, so a second run continues where the first ended.

    tensorweave launch --ps 1 --workers 2 examples/tf_config_trainer.py --model_dir=/tmp/tw_model

A ps joins its server and waits (the launcher stops it when the workers are done). The workers
train a 784-128-10 softmax classifier (an MNIST-shaped problem on synthetic data, no download)
asynchronously in a MonitoredTrainingSession; each prints one JSON line: the global step it
started from, where it ended and its accuracy on held-out data.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

import tensorweave as tf


def synthetic_mnist(n: int, seed: int):
    """n noisy images (784 values in [0, 1]) of 10 fixed random "digit" prototypes, and their labels."""
    prototypes = np.random.RandomState(42).rand(10, 784).astype(np.float32)
    rng = np.random.RandomState(seed)
    y = rng.randint(0, 10, n)
    x = np.clip(prototypes[y] + 0.6 * rng.randn(n, 784), 0.0, 1.0).astype(np.float32)
    return x, y.astype(np.int64)


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", default="/tmp/tensorweave_tf_config_model")
    parser.add_argument("--train_steps", type=int, default=300, help="global step to train to")
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--learning_rate", type=float, default=0.05)
    flags = parser.parse_args(argv[1:])

    config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    if not config.get("cluster"):
        sys.exit("TF_CONFIG must name the cluster and this task (tensorweave launch sets it)")
    cluster = tf.train.ClusterSpec(config["cluster"])
    job, index = config["task"]["type"], int(config["task"]["index"])
    server = tf.train.Server(cluster, job_name=job, task_index=index)
    if job == "ps":
        server.join()
        return 0

    is_chief = job == "chief" or (job == "worker" and index == 0 and "chief" not in config["cluster"])
    train_x, train_y = synthetic_mnist(4096, seed=index)
    test_x, test_y = synthetic_mnist(1000, seed=99)
    with tf.device(tf.train.replica_device_setter(worker_device=f"/job:{job}/task:{index}", cluster=cluster)):
        images = tf.placeholder(tf.float32, [None, 784])
        labels = tf.placeholder(tf.int64, [None])
        hidden = tf.layers.dense(images, 128, activation=tf.nn.relu, name="hidden")
        logits = tf.layers.dense(hidden, 10, name="logits")
        loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.GradientDescentOptimizer(flags.learning_rate).minimize(loss, global_step=global_step)

    hooks = [tf.train.StopAtStepHook(last_step=flags.train_steps)]
    rng = np.random.RandomState(index)
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief, checkpoint_dir=flags.model_dir,
                                           save_checkpoint_steps=50, hooks=hooks) as sess:
        start_step = int(sess.run(global_step))   # restored from model_dir when it holds a checkpoint
        while not sess.should_stop():
            batch = rng.randint(0, len(train_x), flags.batch_size)
            sess.run(train_op, {images: train_x[batch], labels: train_y[batch]})
    with tf.Session(server.target) as sess:
        final_step, acc = sess.run([global_step, accuracy], {images: test_x, labels: test_y})
    print(json.dumps({"job": job, "task": index, "chief": is_chief, "start_step": start_step,
                      "global_step": int(final_step), "test_accuracy": round(float(acc), 4)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
