"""Graphs TF 1 wrote, imported and run across real server processes: ref variables (VariableV2)
on a ps, the model on a worker reading them through _Send/_Recv, training, the imported Saver,
variables outliving sessions and dropped by Session.reset; a TF 1 while loop on a worker, fed
from the client and read by the ps; a TF 1 cond's dead branch refused at a task boundary."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.ops.helpers import make_op

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "unit", "fixtures",
                        "tf_graph_defs")
with open(os.path.join(FIXTURES, "tf1_train.json")) as _f:
    RECORDED = json.load(_f)
_STATE_OPS = ("VariableV2",)


def decode(v: dict) -> np.ndarray:
    return np.array(v["values"], dtype=v["dtype"]).reshape(v["shape"])


FEEDS = {k: decode(v) for k, v in RECORDED["feeds"].items()}


@pytest.fixture(scope="module")
def cluster(start_cluster_module, module_env):
    module_env.setenv("TENSORWEAVE_CONNECT_TIMEOUT_S", "10")
    return start_cluster_module({"ps": 1, "worker": 1})


def import_on_ps_and_worker() -> tf.Graph:
    """The TF 1 training graph with its variables (and what is colocated with them: their reads,
    assigns and updates) on the ps, everything else on the worker."""
    g = tf.Graph()
    with open(os.path.join(FIXTURES, "tf1_train.pb"), "rb") as f:
        graph_def = tf.GraphDef.FromString(f.read())
    with g.as_default(), tf.device(lambda op: "/job:ps/task:0" if op.type in _STATE_OPS else "/job:worker/task:0"):
        tf.import_graph_def(graph_def, name="")
    return g


def test_ref_variables_on_a_ps_train_save_restore_and_reset(cluster, tmp_path):
    g = import_on_ps_and_worker()
    assert g.get_operation_by_name("w1").device.startswith("/job:ps/task:0")
    assert g.get_operation_by_name("w1/read").device.startswith("/job:ps/task:0")      # colocated
    assert g.get_operation_by_name("MatMul").device.startswith("/job:worker/task:0")
    target = cluster.target("worker", 0)
    recorded = RECORDED["steps"]["sgd"]
    with tf.Session(target, graph=g) as sess:
        sess.run(RECORDED["init"])
        losses = [sess.run(["train_sgd", "loss:0"], FEEDS)[1] for _ in range(3)]
        np.testing.assert_allclose(losses, decode(recorded["losses"]), rtol=1e-5)
        prefix = str(tmp_path / "model")
        sess.run(RECORDED["saver"]["save"], {RECORDED["saver"]["filename"]: prefix})
    with tf.Session(target, graph=g) as sess:      # the variables live on the ps, past the session
        for name, want in recorded["variables"].items():
            np.testing.assert_allclose(sess.run(name + ":0"), decode(want), rtol=1e-5, atol=1e-6, err_msg=name)
    tf.Session.reset(target)
    with tf.Session(target, graph=g) as sess:
        with pytest.raises(errors.FailedPreconditionError, match="uninitialized value w1"):
            sess.run("w1/read:0")
        sess.run(RECORDED["saver"]["restore"], {RECORDED["saver"]["filename"]: prefix})
        assert sess.run("global_step:0") == 3
        np.testing.assert_allclose(sess.run("w2:0"), decode(recorded["variables"]["w2"]), rtol=1e-5, atol=1e-6)
    tf.Session.reset(target)


def test_a_dead_tf1_cond_branch_is_refused_at_a_task_boundary(cluster):
    with tf.Graph().as_default() as g:
        flag = tf.placeholder(tf.bool, [], name="flag")
        with tf.device("/job:ps/task:0"):
            branches = make_op("Switch", [tf.constant([1.0, 2.0]), flag]).outputs
        with tf.device("/job:worker/task:0"):
            taken = tf.identity(branches[1]) * 3.0
    with tf.Session(cluster.target("worker", 0), graph=g) as sess:
        np.testing.assert_array_equal(sess.run(taken, {flag: True}), [3.0, 6.0])
        with pytest.raises(errors.UnimplementedError, match="untaken TF 1 cond branch"):
            sess.run(taken, {flag: False})


def test_a_tf1_while_loop_runs_on_a_worker(cluster):
    """The distributed master folds the loop frame as the local one does; its result crosses tasks."""
    with open(os.path.join(FIXTURES, "tf1_while.json")) as f:
        loops = json.load(f)
    with open(os.path.join(FIXTURES, "tf1_while.pb"), "rb") as f:
        graph_def = tf.GraphDef.FromString(f.read())
    with tf.Graph().as_default() as g:
        with tf.device("/job:worker/task:0"):
            tf.import_graph_def(graph_def, name="")
        with tf.device("/job:ps/task:0"):
            doubled = g.get_tensor_by_name("nested:0") * 2.0
    case = loops["cases"][-1]
    with tf.Session(cluster.target("worker", 0), graph=g) as sess:
        got, nested = sess.run([doubled, "nested:0"], {"x:0": decode(loops["feeds"]["x:0"]), "n:0": case["n"]})
    np.testing.assert_allclose(nested, decode(case["values"]["nested:0"]), rtol=1e-6)
    np.testing.assert_allclose(got, 2 * decode(case["values"]["nested:0"]), rtol=1e-6)
