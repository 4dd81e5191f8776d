"""An Estimator's train_and_evaluate as TF 1.15's standalone client (RunConfig(experimental_distribute=
DistributeConfig(train_distribute=MultiWorkerMirroredStrategy(), remote_cluster=...))): the test
process, outside the cluster and without TF_CONFIG, trains on two real std server processes
(`python -m tensorweave.distributed.server`, a tf.train.Server each), one thread per worker task, the
variables mirrored on the servers and kept equal by their collective all-reduce; with an "evaluator"
job in remote_cluster, each checkpoint is evaluated in the client. The numbers are plain gradient
descent on the global batch (each worker's shard's batch) from the chief's initial values. With
ParameterServerStrategy the worker threads train asynchronously on the remote ps's variables."""
from __future__ import annotations

import numpy as np

import tensorweave as tf

X = ((np.arange(48, dtype=np.float32).reshape(16, 3) * 7) % 11 - 5) / 4
Y = (X @ np.array([[0.5], [-1.0], [2.0]], np.float32) + 0.1).astype(np.float32)
STEPS, BATCH, LR = 6, 4, 0.1


def model_fn(features, labels, mode):
    w = tf.get_variable("w", [3, 1], initializer=tf.random_normal_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    pred = tf.matmul(features["x"], w) + b
    loss = tf.losses.mean_squared_error(labels, pred)
    train_op = tf.train.GradientDescentOptimizer(LR).minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                      eval_metric_ops={"mae": tf.metrics.mean_absolute_error(labels, pred)})


def input_fn(input_context=None):
    dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
    if input_context is not None:   # each worker its own shard
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return dataset.repeat().batch(BATCH)


def _gradient_descent(w, b):
    """STEPS steps on the global batch: step k takes rows k*BATCH.. of each worker's shard (rows i::2)."""
    shards = [X[i::2] for i in range(2)], [Y[i::2] for i in range(2)]
    for k in range(STEPS):
        rows = slice(k * BATCH % 8, k * BATCH % 8 + BATCH)
        x, y = np.concatenate([s[rows] for s in shards[0]]), np.concatenate([s[rows] for s in shards[1]])
        err = x @ w + b - y
        w, b = w - LR * 2 * x.T @ err / len(x), b - LR * 2 * err.sum(0) / len(x)
    return w, b


def test_train_and_evaluate_as_a_standalone_client_of_remote_std_servers(start_cluster, tmp_path, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    c = start_cluster({"worker": 2})
    remote = {"worker": c.spec["worker"], "evaluator": ["localhost:1"]}   # (evaluates in the client)
    distribute = tf.contrib.distribute.DistributeConfig(
        train_distribute=tf.distribute.experimental.MultiWorkerMirroredStrategy(), remote_cluster=remote)
    config = tf.estimator.RunConfig(experimental_distribute=distribute, save_checkpoints_steps=3,
                                    log_step_count_steps=None)
    assert config.cluster_spec.as_dict() == remote and config.is_chief and config.master == ""
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path), config=config)
    tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(input_fn, max_steps=STEPS),
                                    tf.estimator.EvalSpec(input_fn, steps=2, start_delay_secs=0, throttle_secs=0))
    assert tf.train.load_variable(str(tmp_path), "global_step") == STEPS
    start = tf.train.load_checkpoint(str(tmp_path / "model.ckpt-0"))
    w, b = _gradient_descent(start.get_tensor("w"), start.get_tensor("b"))
    np.testing.assert_allclose(tf.train.load_variable(str(tmp_path), "w"), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tf.train.load_variable(str(tmp_path), "b"), b, rtol=1e-5, atol=1e-6)
    # the evaluator thread evaluated the final checkpoint, in the client
    evals = [e for f in (tmp_path / "eval").iterdir() for e in tf.train.summary_iterator(str(f))
             if any(v.tag == "mae" for v in e.summary.value)]
    assert evals and max(e.step for e in evals) == STEPS
    # the servers saw the training: each holds its mirrored copy of w, equal to the checkpoint's
    for i in range(2):
        with tf.Graph().as_default():
            with tf.device(f"/job:worker/task:{i}"):
                copy = tf.get_variable("w", [3, 1])
            with tf.Session(c.target("worker", i)) as sess:
                np.testing.assert_array_equal(sess.run(copy), tf.train.load_variable(str(tmp_path), "w"))


def test_train_and_evaluate_as_a_standalone_client_with_parameter_server_strategy(start_cluster, tmp_path,
                                                                                  monkeypatch):
    """ParameterServerStrategy through the same client: both worker threads train asynchronously on
    variables that live on the remote ps task; the chief checkpoints them."""
    monkeypatch.delenv("TF_CONFIG", raising=False)
    c = start_cluster({"ps": 1, "worker": 2})
    distribute = tf.contrib.distribute.DistributeConfig(
        train_distribute=tf.distribute.experimental.ParameterServerStrategy(), remote_cluster=c.spec)
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path),
                                 config=tf.estimator.RunConfig(experimental_distribute=distribute,
                                                               save_checkpoints_steps=3, log_step_count_steps=None,
                                                               keep_checkpoint_max=100))   # (the first is read below)
    tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(input_fn, max_steps=2 * STEPS),
                                    tf.estimator.EvalSpec(input_fn, steps=2, start_delay_secs=0, throttle_secs=0))
    assert tf.train.load_variable(str(tmp_path), "global_step") >= 2 * STEPS
    # the chief's first save: model.ckpt-0, unless the other worker thread stepped before the chief's
    # hook saved (on a loaded machine it did)
    start = tf.train.load_checkpoint(tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths[0])
    before, after = (np.mean(np.abs(X @ r.get_tensor("w") + r.get_tensor("b") - Y))
                     for r in (start, tf.train.load_checkpoint(str(tmp_path))))
    assert after < before
    with tf.Graph().as_default():   # the variables live on the ps, trained (a step may have followed the last save)
        with tf.device("/job:ps/task:0"):
            w, b = tf.get_variable("w", [3, 1]), tf.get_variable("b", [1])
        with tf.Session(c.target("ps", 0)) as sess:
            w, b = sess.run([w, b])
    assert np.mean(np.abs(X @ w + b - Y)) < before
