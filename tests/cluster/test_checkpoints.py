"""Checkpoints and partitioned variables on a real cluster of server processes: a variable
split over two ps tasks, trained with sparse updates that run on each part's own ps, saved
sharded (each ps writes its own data file, the client receives no tensor), restored into one
process; and a save SIGKILLed in the middle leaving the previous checkpoint restorable."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tensorweave as tf

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


@pytest.fixture(scope="module")
def cluster(start_cluster_module, module_env):
    module_env.setenv("TENSORWEAVE_CONNECT_TIMEOUT_S", "10")
    return start_cluster_module({"ps": 2, "worker": 1})


def _model(cluster, init):
    """An embedding [12, 4] split over the two ps tasks, a dense bias on the worker's setter
    choice, Adagrad with sparse gradients, and a sharded saver."""
    setter = tf.train.replica_device_setter(cluster=tf.train.ClusterSpec(cluster.spec))
    with tf.device(setter):
        gs = tf.train.get_or_create_global_step()
        emb = tf.get_variable("emb", initializer=tf.constant(init), partitioner=tf.fixed_size_partitioner(2))
        bias = tf.get_variable("bias", [4], initializer=tf.zeros_initializer())
        ids = tf.placeholder(tf.int32, [None], name="ids")
        rows = tf.nn.embedding_lookup(emb, ids, partition_strategy="div")
        loss = tf.reduce_sum(tf.square(rows + bias - 1.0))
        train = tf.train.AdagradOptimizer(0.1).minimize(loss, global_step=gs)
    return emb, bias, gs, ids, train


def _numpy_training(init, batches, lr=0.1):
    emb, bias = init.copy(), np.zeros(4)
    acc_e, acc_b = np.full_like(emb, 0.1), np.full(4, 0.1)
    for ids in batches:
        g_rows = 2 * (emb[ids] + bias - 1.0)
        ge = np.zeros_like(emb)
        np.add.at(ge, ids, g_rows)
        gb = g_rows.sum(0)
        touched = np.unique(ids)
        acc_e[touched] += ge[touched] ** 2
        emb[touched] -= lr * ge[touched] / np.sqrt(acc_e[touched])
        acc_b += gb ** 2
        bias -= lr * gb / np.sqrt(acc_b)
    return emb, bias


def test_partitioned_variable_trains_saves_sharded_and_restores_in_one_process(cluster, tmp_path):
    init = np.arange(48, dtype=np.float32).reshape(12, 4) / 10.0
    batches = [np.array([0, 1, 11, 11]), np.array([6, 7, 2]), np.array([5, 6])]
    with tf.Graph().as_default() as g:
        emb, bias, gs, ids, train = _model(cluster, init)
        parts = list(emb)
        # round robin over the ps tasks (global_step took ps 0): the parts on different tasks
        assert [p.device for p in parts] == ["/job:ps/task:1", "/job:ps/task:0"]
        assert [p.shape.as_list() for p in parts] == [[6, 4], [6, 4]]
        # each part's sparse update runs on the part's own ps
        updates = [op for op in g.get_operations() if op.type == "ResourceSparseApplyAdagrad"]
        assert sorted(op.device for op in updates) == ["/job:ps/task:0", "/job:ps/task:1"]
        saver = tf.train.Saver(sharded=True)
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            for b in batches:
                sess.run(train, {ids: b})
            trained = sess.run([emb.as_tensor(), bias])
            path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=gs)
    want_emb, want_bias = _numpy_training(init, batches)
    np.testing.assert_allclose(trained[0], want_emb, rtol=1e-5)
    np.testing.assert_allclose(trained[1], want_bias, rtol=1e-5)
    assert path == str(tmp_path / "model.ckpt-3")
    names = sorted(os.listdir(tmp_path))
    assert "model.ckpt-3.data-00000-of-00002" in names and "model.ckpt-3.data-00001-of-00002" in names
    assert not [n for n in names if "_temp_" in n]
    # the embedding's two slices are in two files, one per ps; restored whole in one process
    with tf.Graph().as_default():
        emb2 = tf.get_variable("emb", [12, 4])
        bias2 = tf.get_variable("bias", [4])
        acc = tf.get_variable("emb/Adagrad", [12, 4])
        with tf.Session() as sess:
            tf.train.Saver([emb2, bias2, acc]).restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
            got = sess.run([emb2, bias2, acc])
    np.testing.assert_array_equal(got[0], trained[0])
    np.testing.assert_array_equal(got[1], trained[1])
    assert got[2].shape == (12, 4) and (got[2] >= 0.1).all()
    # and into a different partitioning (three parts) in the cluster again
    with tf.Graph().as_default():
        setter = tf.train.replica_device_setter(cluster=tf.train.ClusterSpec(cluster.spec))
        with tf.device(setter):
            emb3 = tf.get_variable("emb", [12, 4], partitioner=tf.fixed_size_partitioner(3))
            bias3 = tf.get_variable("bias", [4])
        with tf.Session(cluster.target("worker", 0)) as sess:
            tf.train.Saver([emb3, bias3], sharded=True).restore(sess, path)
            np.testing.assert_array_equal(sess.run(emb3.as_tensor()), trained[0])


def test_sharded_save_and_restore_move_no_tensor_between_tasks(cluster, tmp_path):
    big = np.random.RandomState(0).randn(256, 1024).astype(np.float32)   # 1 MiB per ps
    with tf.Graph().as_default() as g:
        with tf.device("/job:ps/task:0"):
            tf.Variable(big, name="a")
        with tf.device("/job:ps/task:1"):
            b = tf.Variable(big * 2, name="b")
        saver = tf.train.Saver(sharded=True)
        sd = saver.as_saver_def()
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            prefix = str(tmp_path / "m")
            received = []
            for fetch in (sd.save_tensor_name, g.get_operation_by_name(sd.restore_op_name)):
                meta = tf.RunMetadata()
                sess.run(fetch, {sd.filename_tensor_name: prefix}, run_metadata=meta,
                         options=tf.RunOptions(output_partition_graphs=True))
                parts = meta.partition_graphs
                tasks = {n.device.split("/device:")[0] for p in parts for n in p.node}
                assert {"/job:ps/replica:0/task:0", "/job:ps/replica:0/task:1"} <= tasks
                received += [n.attr for p in parts for n in p.node if n.op == "_Recv"]
            np.testing.assert_array_equal(sess.run(b), big * 2)
    # only the file name (a string) and control edges cross tasks: no tensor of the model
    assert received and all(r["tensor_name"].startswith("^") or r["tensor_type"] == "string" for r in received)
    assert sorted(os.listdir(tmp_path)) == ["m.data-00000-of-00002", "m.data-00001-of-00002", "m.index"]
    np.testing.assert_array_equal(tf.train.NewCheckpointReader(prefix).get_tensor("a"), big)


def test_sharded_save_in_tensorflows_format_from_two_ps_tasks(cluster, tmp_path, monkeypatch):
    """The client chose TF's format (the servers' environments did not): each ps writes a
    TensorBundle shard and MergeV2Checkpoints merges them into one TF index."""
    monkeypatch.setenv("TENSORWEAVE_CHECKPOINT_FORMAT", "tensorflow")
    init = np.arange(48, dtype=np.float32).reshape(12, 4)
    with tf.Graph().as_default():
        emb, bias, gs, ids, train = _model(cluster, init)
        saver = tf.train.Saver(sharded=True)
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train, {ids: [0, 11]})
            trained = sess.run(emb.as_tensor())
            path = saver.save(sess, str(tmp_path / "model.ckpt"), write_meta_graph=False)
    assert sorted(n for n in os.listdir(tmp_path) if n.startswith("model.ckpt")) == [
        "model.ckpt.data-00000-of-00002", "model.ckpt.data-00001-of-00002", "model.ckpt.index"]
    with open(path + ".index", "rb") as f:
        assert f.read()[-8:] == bytes.fromhex("57fb808b247547db")   # the table's magic number
    monkeypatch.delenv("TENSORWEAVE_CHECKPOINT_FORMAT")
    with tf.Graph().as_default():
        emb2 = tf.get_variable("emb", [12, 4], partitioner=tf.fixed_size_partitioner(3))
        with tf.Session() as sess:
            tf.train.Saver([emb2]).restore(sess, path)
            np.testing.assert_array_equal(sess.run(emb2.as_tensor()), trained)


_KILL_SCRIPT = textwrap.dedent("""
    import os, sys
    import numpy as np
    import tensorweave as tf
    directory = sys.argv[1]
    v = tf.Variable(np.zeros((4096, 4096), np.float32), name="v")    # 64 MiB
    step = tf.Variable(0, name="step", dtype=tf.int64)
    bump = [v.assign_add(tf.ones_like(v)), step.assign_add(1)]
    saver = tf.train.Saver(max_to_keep=100)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(bump)
        saver.save(sess, os.path.join(directory, "model.ckpt"), global_step=1, write_meta_graph=False)
        print("SAVED", flush=True)
        sess.run(bump)
        while True:   # keep saving until killed
            saver.save(sess, os.path.join(directory, "model.ckpt"), global_step=2, write_meta_graph=False)
""")


def test_sigkill_during_save_leaves_previous_checkpoint_restorable(tmp_path):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", _KILL_SCRIPT, str(tmp_path)], stdout=subprocess.PIPE, env=env,
                            start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == b"SAVED"
        # kill while the second checkpoint's data file is being written
        deadline = time.monotonic() + 60
        while not any("tempstate" in n for n in os.listdir(tmp_path)):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.001)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    latest = tf.train.latest_checkpoint(str(tmp_path))
    assert latest is not None
    with tf.Graph().as_default():
        v = tf.Variable(np.zeros((4096, 4096), np.float32), name="v")
        step = tf.Variable(0, name="step", dtype=tf.int64)
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, latest)
            got_step, got_v = sess.run([step, v])
    # the state file names a whole checkpoint: step 1's, or step 2's if it was complete
    assert latest.endswith(f"model.ckpt-{got_step}")
    assert (got_v == float(got_step)).all()
