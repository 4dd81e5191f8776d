"""The model that test_object_checkpoints.py checkpoints and fixtures/record_tf_object_checkpoints.py
restored (and wrote) with TensorFlow's tf.train.Checkpoint, defined once: a nested Checkpoint of two
variables, an Adam optimizer with slots and beta powers, one training step, saved once."""
from __future__ import annotations

import os

import numpy as np

KERNEL = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
BIAS = np.array([0.25, -0.5], np.float32)


def build(tf, kernel=KERNEL, bias=BIAS):
    """(checkpoint, train op, {name: variable or slot}) in the default graph, from `tf`
    (tensorweave, or TF's tf.compat.v1)."""
    w = tf.Variable(kernel, name="w", use_resource=True)
    b = tf.Variable(bias, name="b", use_resource=True)
    opt = tf.train.AdamOptimizer(0.1)
    step = opt.minimize(tf.reduce_sum(tf.square(tf.matmul(w, w) + b)))
    ckpt = tf.train.Checkpoint(model=tf.train.Checkpoint(kernel=w, bias=b), optimizer=opt)
    named = {"model/kernel": w, "model/bias": b, "kernel/m": opt.get_slot(w, "m"), "kernel/v": opt.get_slot(w, "v"),
             "bias/m": opt.get_slot(b, "m"), "bias/v": opt.get_slot(b, "v")}
    named.update(zip(("beta1_power", "beta2_power"), opt._get_beta_accumulators()))
    return ckpt, step, named


def write(tf, directory: str) -> str:
    """Trains one step and saves with Checkpoint.save under directory/ckpt; the path written."""
    with tf.Graph().as_default():
        ckpt, step, _ = build(tf)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            return ckpt.save(os.path.join(directory, "ckpt"), session=sess)
