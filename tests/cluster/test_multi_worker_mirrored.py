"""tf.distribute.experimental.MultiWorkerMirroredStrategy with real worker processes on loopback
(distribute/collective_all_reduce_strategy.py over ops/collective_ops.py): each worker builds its
graph and runs it in a session on its own task, as TF's between-graph workers do. Training on 2
workers equals one process training on the concatenated batch, the mirrored variables are
identical on both (the chief's random initial values broadcast), a worker SIGKILLed during
training fails the other's step with UnavailableError instead of a hang, `tensorweave launch
--workers 2` runs a collective job, and an Estimator trains with RunConfig(train_distribute=MWMS)
through train_and_evaluate."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GLOBAL_BATCH = 8
X = ((np.arange(48, dtype=np.float32).reshape(16, 3) * 7) % 11 - 5) / 4
IDS = (np.arange(16, dtype=np.int64) * 3) % 5
Y = (X @ np.array([[0.5], [-1.0], [2.0]], np.float32) + 0.1 + IDS[:, None] * 0.2).astype(np.float32)


def _optimizer(gpus):
    return tf.train.AdamOptimizer(0.05) if gpus else tf.train.MomentumOptimizer(0.05, 0.9)


def _model(strategy, it, opt):
    """A linear model with an embedding (its gradient IndexedSlices) and `opt`; the replica loss is
    the sum of squares over the global batch size (TF's advice for custom loops), so the summed
    gradients are the global batch's mean's. Initial values random (unseeded)."""
    w = tf.get_variable("w", [3, 1], initializer=tf.random_normal_initializer())
    b = tf.get_variable("b", [1], initializer=tf.random_normal_initializer())
    emb = tf.get_variable("emb", [5, 1], initializer=tf.random_normal_initializer())
    step = tf.train.get_or_create_global_step()

    def replica_step(batch):
        x, ids, y = batch
        pred = tf.matmul(x, w) + b + tf.gather(emb, ids)
        return opt.minimize(tf.reduce_sum(tf.square(pred - y)) / GLOBAL_BATCH, global_step=step)
    train = strategy.group(strategy.experimental_run_v2(replica_step, args=(it.get_next(),)))
    return train, {"w": w, "b": b, "emb": emb}


def _dataset():
    return tf.data.Dataset.from_tensor_slices((X, IDS, Y)).repeat().batch(GLOBAL_BATCH)


def _mwms(spec, job, index, gpus=None):
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(spec), task_type=job, task_id=index, num_accelerators={"GPU": gpus} if gpus else None)
    return tf.distribute.experimental.MultiWorkerMirroredStrategy(cluster_resolver=resolver)


def _run_workers(c, steps, after_step=None, config=None, gpus=None):
    """Each worker of cluster `c` trains `steps` steps in its own thread, graph and session on its
    task; [(initial values, final values, global step, error)] by worker. `after_step(rank, step)`
    returning False stops that worker."""
    spec = c.spec
    out: list = [None] * len(spec["worker"])

    def worker(rank):
        initial = final = gstep = None
        try:
            strategy = _mwms(spec, "worker", rank, gpus)
            assert strategy.num_replicas_in_sync == len(spec["worker"]) * (gpus or 1)
            with tf.Graph().as_default(), strategy.scope():
                it = strategy.make_dataset_iterator(_dataset())
                train, variables = _model(strategy, it, _optimizer(gpus))
                session_config = strategy.update_config_proto(config or tf.ConfigProto())
                with tf.Session(c.target("worker", rank), config=session_config) as sess:
                    sess.run([tf.global_variables_initializer(), it.initializer])
                    initial = sess.run(variables)
                    for i in range(steps):
                        sess.run(train)
                        if after_step is not None and after_step(rank, i) is False:
                            out[rank] = (initial, None, None, None)
                            return
                    final, gstep = sess.run(variables), sess.run(tf.train.get_global_step())
            out[rank] = (initial, final, gstep, None)
        except Exception as e:  # noqa: BLE001 - the test inspects it
            out[rank] = (initial, final, gstep, e)
    threads = [threading.Thread(target=worker, args=(r,), daemon=True) for r in range(len(out))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads), "a worker hung"
    return out


def _single_process(initial, steps, opt):
    """The same training in one process on the whole (concatenated) global batch."""
    with tf.Graph().as_default():
        it = tf.data.make_initializable_iterator(_dataset())
        w = tf.get_variable("w", initializer=tf.constant(initial["w"]))
        b = tf.get_variable("b", initializer=tf.constant(initial["b"]))
        emb = tf.get_variable("emb", initializer=tf.constant(initial["emb"]))
        x, ids, y = it.get_next()
        pred = tf.matmul(x, w) + b + tf.gather(emb, ids)
        train = opt().minimize(tf.reduce_mean(tf.square(pred - y)))
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), it.initializer])
            for _ in range(steps):
                sess.run(train)
            return sess.run({"w": w, "b": b, "emb": emb})


@pytest.mark.parametrize("gpus", [0, 2])
def test_two_workers_train_equal_to_one_process_on_the_concatenated_batch(start_cluster, gpus):
    """With 2 (stand-in) GPUs per worker, 4 replicas: summed on each worker, then between them
    (and Adam, whose beta powers are no slots, instead of Momentum)."""
    c = start_cluster({"worker": 2}, env={"TENSORWEAVE_STANDIN_GPUS": str(gpus)} if gpus else None)
    steps = 6
    results = _run_workers(c, steps, gpus=gpus)
    for initial, final, gstep, err in results:
        if err is not None:
            raise err
        assert gstep == steps
    (init0, final0, _, _), (init1, final1, _, _) = results
    for name in final0:
        np.testing.assert_array_equal(init1[name], init0[name])   # the chief's random values, broadcast
        np.testing.assert_array_equal(final1[name], final0[name])   # mirrored: identical after N steps
    assert not np.allclose(final0["w"], init0["w"])
    want = _single_process(init0, steps, lambda: _optimizer(gpus))
    for name in want:
        np.testing.assert_allclose(final0[name], want[name], rtol=2e-6, atol=2e-6, err_msg=name)


def test_strategy_reads_tf_config_and_sets_the_session_config(monkeypatch):
    spec = {"chief": ["localhost:1"], "worker": ["localhost:2", "localhost:3"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": spec, "task": {"type": "worker", "index": 1}}))
    strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()
    assert strategy.num_replicas_in_sync == 3
    assert strategy.extended.worker_devices == ("/job:worker/replica:0/task:1/device:CPU:0",)
    assert not strategy.extended.should_checkpoint and strategy.extended.experimental_should_init
    config = tf.ConfigProto(allow_soft_placement=True)
    updated = strategy.update_config_proto(config)
    assert list(updated.device_filters) == ["/job:worker/task:1"] and not config.device_filters   # a copy
    assert updated.experimental["collective_group_leader"] == "/job:chief/replica:0/task:0"
    strategy.configure(config)
    assert list(config.device_filters) == ["/job:worker/task:1"] and config.allow_soft_placement
    contrib = tf.contrib.distribute.CollectiveAllReduceStrategy()
    assert contrib.num_replicas_in_sync == 3 and contrib.extended.is_chief is False
    with tf.Graph().as_default(), strategy.scope():
        seen = []
        strategy.make_input_fn_iterator(lambda ctx: seen.append(ctx) or _dataset())
        assert (seen[0].num_input_pipelines, seen[0].input_pipeline_id, seen[0].num_replicas_in_sync) == (3, 2, 3)
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"ps": ["localhost:1"], "worker": ["localhost:2"]},
                                                "task": {"type": "ps", "index": 0}}))
    try:
        tf.distribute.experimental.MultiWorkerMirroredStrategy()
    except ValueError as e:
        assert "'ps'" in str(e)
    else:
        raise AssertionError("a ps task made a MultiWorkerMirroredStrategy")


def test_a_worker_killed_during_training_fails_the_other_with_unavailable(start_cluster):
    """Within the operation timeout; in fact at once: at the first ping of the dead worker, whose
    host refuses the connection, or at the send that the kill cut (no waiting out a ping's
    timeout)."""
    c = start_cluster({"worker": 2})
    killed_at = []

    def after_step(rank, step):
        if rank == 1 and step == 2:
            c.kill("worker", 1)   # SIGKILL, mid-training
            killed_at.append(time.monotonic())
            return False
        return None
    timeout_s = 60
    results = _run_workers(c, 10000, after_step, config=tf.ConfigProto(operation_timeout_in_ms=timeout_s * 1000))
    assert killed_at
    assert time.monotonic() - killed_at[0] < timeout_s
    initial, final, gstep, err = results[0]
    assert isinstance(err, errors.UnavailableError), err
    assert "Collective" in str(err) and "/job:worker/replica:0/task:1" in str(err)
    # found by the first ping of the dead worker, which its host refused, or by the send to it
    # that the kill cut (a loaded machine's turn: the CI run of 1123b47): not by a timeout
    assert "connection refused" in str(err) or "connection lost while sending" in str(err), err


def _launch(args, env, timeout=240):
    env = dict(os.environ, **env)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("TF_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "tensorweave.cli", "launch", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=REPO)


def test_launch_with_workers_and_no_ps_runs_a_collective_job(tmp_path):
    proc = _launch(["--workers", "2", os.path.join(HERE, "mwms_trainer.py"), str(tmp_path)], {})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [json.loads(line.split("] ", 1)[1]) for line in proc.stdout.splitlines() if "{" in line]
    assert sorted(r["task"] for r in lines) == [0, 1]
    assert lines[0]["weights"] == lines[1]["weights"] and lines[0]["step"] == lines[1]["step"] == 5
    assert lines[0]["replicas"] == 2
    # only the chief (worker 0) saved
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-5")
    reader = tf.train.load_checkpoint(str(tmp_path))
    chief = next(r for r in lines if r["task"] == 0)
    np.testing.assert_array_equal(reader.get_tensor("w"), np.array(chief["weights"], np.float32))


@pytest.mark.parametrize("layout", [["--chief", "1", "--workers", "1"], ["--workers", "2"]],
                         ids=["chief and worker", "workers only"])
def test_an_estimator_trains_with_train_distribute_through_train_and_evaluate(tmp_path, layout):
    """A cluster of workers only is TF's multi-worker Estimator tutorial's: worker 0 acts as the chief."""
    proc = _launch([*layout, "--evaluator", "1", os.path.join(HERE, "mwms_trainer.py"), str(tmp_path), "estimator"],
                   {})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = {tuple(r["task"]): r for r in (json.loads(line.split("] ", 1)[1]) for line in proc.stdout.splitlines()
                                           if "{" in line)}
    chief = lines.get(("chief", 0)) or lines[("worker", 0)]
    worker, evaluator = lines[("worker", 0 if "--chief" in layout else 1)], lines[("evaluator", 0)]
    assert evaluator["task"] == ["evaluator", 0]
    evals = [e for f in (tmp_path / "eval").iterdir() for e in tf.train.summary_iterator(str(f))
             if any(v.tag == "mae" for v in e.summary.value)]
    assert evals and max(e.step for e in evals) == 6   # the evaluator evaluated the final checkpoint
    assert chief["is_chief"] and not worker["is_chief"] and chief["replicas"] == worker["replicas"] == 2
    assert chief["weights"] == worker["weights"] and set(chief["weights"]) == {"w", "b"}
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-6")
    reader = tf.train.load_checkpoint(str(tmp_path))
    np.testing.assert_array_equal(reader.get_tensor("w"), np.array(chief["weights"]["w"], np.float32))
