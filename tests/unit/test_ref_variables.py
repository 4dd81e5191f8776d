"""TF 1 graphs with reference variables (VariableV2, Assign, Apply*, a sharded Saver), as TF 2.21's
compat.v1 writes them under disable_v2_behavior() (fixtures/tf_graph_defs/tf1_train.*, from
fixtures/record_tf_ref_variables.py): imported with tf.import_graph_def, initialised, trained,
saved and restored through the graph's own ops, against what TensorFlow computed."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.recorded import decode, load_graph_def
from tensorweave.framework import errors
from tensorweave.ops.helpers import make_op

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_graph_defs")
with open(os.path.join(HERE, "tf1_train.json")) as _f:
    RECORDED = json.load(_f)
FEEDS = {k: decode(v) for k, v in RECORDED["feeds"].items()}
SAVER = RECORDED["saver"]


def imported_graph() -> tf.Graph:
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(load_graph_def(os.path.join(HERE, "tf1_train.pb"), tf.GraphDef()), name="")
    return g


def assert_variables(sess, recorded: dict) -> None:
    values = sess.run({name: name + ":0" for name in recorded})
    for name, want in recorded.items():
        want = decode(want)
        assert values[name].dtype == want.dtype, name
        np.testing.assert_allclose(values[name], want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_the_graph_holds_tf1_ref_ops():
    g = imported_graph()
    types = {op.type for op in g.get_operations()}
    assert {"VariableV2", "Assign", "AssignAdd", "IsVariableInitialized", "ApplyGradientDescent", "ApplyMomentum",
            "ApplyAdam", "SparseApplyMomentum", "ScatterSub", "ScatterAdd", "ShardedFilename",
            "MergeV2Checkpoints"} <= types
    assert sorted(types) == RECORDED["ops"]
    w1 = g.get_tensor_by_name("w1:0")
    assert w1.dtype == tf.float32 and w1.shape.as_list() == [4, 8]
    # and written out again as TF's GraphDef, it imports the same (its scalar string Consts too)
    with tf.Graph().as_default() as copy:
        tf.import_graph_def(g.as_graph_def(), name="")
    assert [(op.name, op.type) for op in copy.get_operations()] == [(op.name, op.type) for op in g.get_operations()]
    assert copy.get_tensor_by_name("save/filename/input:0").shape.as_list() == []


def test_initializer_then_reads_and_is_variable_initialized():
    g = imported_graph()
    with tf.Session(graph=g) as sess:
        assert bool(sess.run("w1_initialized:0")) is RECORDED["initialized_before"]
        with pytest.raises(errors.FailedPreconditionError) as e:
            sess.run("w1/read:0")
        assert RECORDED["uninitialized_read"].split(": ", 1)[1] in e.value.message
        assert "w1/read" in e.value.message
        sess.run(RECORDED["init"])
        assert bool(sess.run("w1_initialized:0")) is RECORDED["initialized_after"]
        assert_variables(sess, RECORDED["initial"])


@pytest.mark.parametrize("kind", ["sgd", "momentum", "adam"])
def test_three_train_steps_as_tf_took_them(kind):
    """ApplyGradientDescent (with the global step's AssignAdd), ApplyMomentum, ApplyAdam on refs,
    each variable read by MatMul through its `read` Identity, persisting across runs."""
    record = RECORDED["steps"][kind]
    g = imported_graph()
    with tf.Session(graph=g) as sess:
        sess.run(RECORDED["init"])
        losses = [sess.run([RECORDED["train_ops"][kind], "loss:0"], FEEDS)[1] for _ in range(3)]
        np.testing.assert_allclose(losses, decode(record["losses"]), rtol=1e-5)
        np.testing.assert_allclose(sess.run("probs:0", FEEDS), decode(record["probs"]), rtol=1e-5, atol=1e-6)
        assert_variables(sess, record["variables"])


def test_assign_returns_the_new_value_and_checks_its_shape():
    g = imported_graph()
    with tf.Session(graph=g) as sess:
        sess.run(RECORDED["init"])
        new = np.arange(32, dtype=np.float32).reshape(4, 8)
        got = sess.run("assign_w1:0", {"new_w1:0": new})
        np.testing.assert_array_equal(got, new)
        np.testing.assert_array_equal(sess.run("w1:0"), new)
        with pytest.raises(errors.InvalidArgumentError) as e:
            sess.run("assign_w1:0", {"new_w1:0": np.zeros((3, 8), np.float32)})
        assert RECORDED["assign_wrong_shape"].split(": ", 1)[1] in e.value.message
        np.testing.assert_array_equal(sess.run("w1:0"), new)          # unchanged
        # validate_shape=False: the variable takes the new shape
        np.testing.assert_array_equal(sess.run("reshape_w1:0", {"new_w1:0": np.ones((2, 2), np.float32)}),
                                      np.ones((2, 2), np.float32))
        assert sess.run("w1:0").shape == (2, 2)


def test_assign_add_and_sub_return_the_new_value_in_one_run():
    g = imported_graph()
    with tf.Session(graph=g) as sess:
        sess.run(RECORDED["init"])
        b2 = decode(RECORDED["initial"]["b2"])
        np.testing.assert_allclose(sess.run("add_b2:0"), b2 + 1)
        np.testing.assert_allclose(sess.run("add_b2:0"), b2 + 2)
        np.testing.assert_allclose(sess.run("sub_b2:0"), b2 + 1, rtol=1e-6)
        # a consumer run after the update in the same step reads the updated value
        with g.as_default():
            after = tf.identity(g.get_tensor_by_name("b2:0"), name="after_add")
            after.op._add_control_input(g.get_operation_by_name("add_b2"))
        np.testing.assert_allclose(sess.run(after), b2 + 2, rtol=1e-6)


def test_each_session_has_its_own_variables_and_keeps_them_across_runs():
    g = imported_graph()
    with tf.Session(graph=g) as first:
        first.run(RECORDED["init"])
        first.run(RECORDED["train_ops"]["sgd"], FEEDS)
        step = first.run("global_step:0")
        assert step == 1 and first.run("global_step:0") == 1
        with tf.Session(graph=g) as second:
            with pytest.raises(errors.FailedPreconditionError, match="uninitialized value global_step"):
                second.run("global_step:0")


def test_restore_a_tf_checkpoint_through_the_imported_restore_op():
    g = imported_graph()
    with tf.Session(graph=g) as sess:
        sess.run(RECORDED["init"])
        sess.run(SAVER["restore"], {SAVER["filename"]: os.path.join(HERE, "tf1_ckpt")})
        assert_variables(sess, RECORDED["checkpoint"])
        assert_variables(sess, RECORDED["steps"]["momentum"]["variables"])
        # training goes on from the restored values
        sess.run(RECORDED["train_ops"]["sgd"], FEEDS)
        assert sess.run("global_step:0") == RECORDED["checkpoint"]["global_step"]["values"][0] + 1


def test_save_through_the_imported_sharded_saver(tmp_path):
    g = imported_graph()
    prefix = str(tmp_path / "model")
    with tf.Session(graph=g) as sess:
        sess.run(RECORDED["init"])
        for _ in range(2):
            sess.run(RECORDED["train_ops"]["adam"], FEEDS)
        names = sorted(RECORDED["checkpoint"])
        values = dict(zip(names, sess.run([n + ":0" for n in names])))
        assert sess.run(SAVER["save"], {SAVER["filename"]: prefix}) == prefix.encode()
    reader = tf.train.load_checkpoint(prefix)
    assert sorted(reader.get_variable_to_shape_map()) == names
    for name in names:
        np.testing.assert_array_equal(reader.get_tensor(name), values[name])
    with tf.Session(graph=g) as sess:      # and the graph's own restore op reads it back
        sess.run(SAVER["restore"], {SAVER["filename"]: prefix})
        for name in names:
            np.testing.assert_array_equal(sess.run(name + ":0"), values[name])


def test_a_fed_variable_replaces_its_reads_but_cannot_be_assigned():
    g = imported_graph()
    with tf.Session(graph=g) as sess:
        w1 = np.zeros((4, 8), np.float32)
        hidden = sess.run("hidden:0", dict(FEEDS, **{"w1:0": w1, "b1:0": np.ones(8, np.float32)}))
        np.testing.assert_array_equal(hidden, np.ones((6, 8), np.float32))
        with pytest.raises(errors.InvalidArgumentError, match="assign_w1.*must be a reference to a variable"):
            sess.run("assign_w1:0", {"w1:0": w1, "new_w1:0": w1})


@pytest.mark.parametrize("case", RECORDED["broadcast_gradient_args"], ids=lambda c: f"{c[0]}-{c[1]}")
def test_broadcast_gradient_args_as_tf(case):
    """BroadcastGradientArgs, which TF 1's gradients of broadcasting ops (the bias add above) use."""
    with tf.Graph().as_default():
        op = make_op("BroadcastGradientArgs", [tf.constant(case[0], tf.int32), tf.constant(case[1], tf.int32)],
                     {"T": tf.int32})
        with tf.Session() as sess:
            if len(case) == 3:
                with pytest.raises(errors.InvalidArgumentError) as e:
                    sess.run(op.outputs)
                assert case[2].split(": ", 1)[1] in e.value.message
            else:
                r0, r1 = sess.run(op.outputs)
                assert r0.dtype == np.int32 and [r0.tolist(), r1.tolist()] == case[2:]


def test_a_trained_tf1_graph_freezes_and_the_frozen_graph_runs():
    """convert_variables_to_constants reads each VariableV2 through the session: the frozen graph
    holds no variable and computes what the trained one does."""
    g = imported_graph()
    with tf.Session(graph=g) as sess:
        sess.run(RECORDED["init"])
        for _ in range(3):
            sess.run(RECORDED["train_ops"]["momentum"], FEEDS)
        trained = sess.run("probs:0", FEEDS)
        frozen = tf.graph_util.convert_variables_to_constants(sess, g.as_graph_def(), ["probs"])
    assert not {n.op for n in frozen.node} & {"VariableV2", "Assign", "ApplyMomentum"}
    np.testing.assert_allclose(trained, decode(RECORDED["steps"]["momentum"]["probs"]), rtol=1e-5, atol=1e-6)
    with tf.Graph().as_default():
        tf.import_graph_def(frozen, name="")
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run("probs:0", {"x:0": FEEDS["x:0"]}), trained)
