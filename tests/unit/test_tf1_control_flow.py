"""TF 1 conditionals (Switch, Merge, RefSwitch: dataflow control flow with dead tensors) and while
loops (Enter, Exit, NextIteration, LoopCond frames) as TF 2.21's compat.v1 writes them under
disable_v2_behavior() (fixtures/tf_graph_defs/tf1_cond.*, tf1_while.*, from
fixtures/record_tf1_control_flow.py): imported with tf.import_graph_def and run for each predicate
or iteration count, against what TensorFlow computed."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.recorded import decode, load_graph_def
from tensorweave.framework import errors

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_graph_defs")
with open(os.path.join(HERE, "tf1_cond.json")) as _f:
    RECORDED = json.load(_f)
with open(os.path.join(HERE, "tf1_while.json")) as _f:
    LOOPS = json.load(_f)
X = decode(RECORDED["feeds"]["x:0"])


def imported_graph(name: str = "tf1_cond.pb") -> tf.Graph:
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(load_graph_def(os.path.join(HERE, name), tf.GraphDef()), name="")
    return g


def assert_close(got, recorded: dict) -> None:
    want = decode(recorded)
    assert np.asarray(got).dtype == want.dtype and np.shape(got) == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_the_graph_holds_tf1_control_flow():
    types = {op.type for op in imported_graph().get_operations()}
    assert sorted(types) == RECORDED["ops"]
    assert {"Switch", "Merge", "RefSwitch"} <= types and "If" not in types


@pytest.mark.parametrize("case", RECORDED["cases"], ids=lambda c: f"p={c['p']},q={c['q']}")
def test_each_branch_as_tf_took_it(case):
    """Arithmetic branches, constant branches (dead through their control edge from the pivot),
    a nested cond and an int32 cond."""
    g = imported_graph()
    with tf.Session(graph=g) as sess:
        names = list(case["values"])
        values = sess.run(names, {"x:0": X, "p:0": case["p"], "q:0": case["q"]})
        for name, value in zip(names, values):
            assert_close(value, case["values"][name])


def test_merge_says_which_branch_ran():
    g = imported_graph()
    with tf.Session(graph=g) as sess:
        for p in (False, True):
            assert sess.run("cond/Merge:1", {"x:0": X, "p:0": p}) == int(p)


def test_batch_norm_behind_is_training_trains_and_infers_as_tf():
    """A fused batch normalisation whose training flag is a cond, its moving averages updated by
    AssignSub on ref variables with a momentum another cond picks."""
    g = imported_graph()
    with tf.Session(graph=g) as sess:
        sess.run("init")
        for i, recorded in enumerate(RECORDED["bn_training"]):
            out, _ = sess.run(["bn_out:0", "update_ops"], {"x:0": X * (i + 1), "p:0": True})
            assert_close(out, recorded)
        for name, recorded in RECORDED["bn_moving"].items():
            assert_close(sess.run(name + ":0"), recorded)
        assert_close(sess.run("bn_out:0", {"x:0": X, "p:0": False}), RECORDED["bn_inference"])
        # inference leaves the moving averages alone (the momentum cond gives decay 0)
        sess.run("update_ops", {"x:0": X * 5, "p:0": False})
        for name, recorded in RECORDED["bn_moving"].items():
            assert_close(sess.run(name + ":0"), recorded)


def test_an_assign_in_an_untaken_branch_does_not_run():
    """cond(p, counter.assign_add(1), counter.read): the AssignAdd takes its variable through a
    RefSwitch, and runs only when p is true."""
    g = imported_graph()
    with tf.Session(graph=g) as sess:
        sess.run("init")
        assert [int(sess.run("count:0", {"p:0": p})) for p in (True, True, False, True)] == RECORDED["count"]


def test_fetching_a_dead_tensor_is_tf_error():
    g = imported_graph()
    with tf.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError, match=r"Retval\[0\] does not have value"):
            sess.run("cond/Switch:1", {"p:0": False})
        assert sess.run("cond/Switch:0", {"p:0": False}) == np.bool_(False)


def test_tf1_cond_has_no_gradient_here():
    g = imported_graph()
    with g.as_default():
        with pytest.raises(LookupError, match="Merge"):
            tf.gradients(g.get_tensor_by_name("arith:0"), g.get_tensor_by_name("x:0"))


# -- while loops ----------------------------------------------------------------------------------
def test_the_loop_graph_holds_tf1_frames():
    types = {op.type for op in imported_graph("tf1_while.pb").get_operations()}
    assert sorted(types) == LOOPS["ops"]
    assert {"Enter", "RefEnter", "Exit", "NextIteration", "LoopCond", "Merge", "Switch", "TensorArrayV3",
            "TensorArrayWriteV3", "TensorArrayReadV3", "TensorArrayScatterV3", "TensorArrayGatherV3"} <= types
    assert "While" not in types


@pytest.mark.parametrize("case", LOOPS["cases"], ids=lambda c: f"n={c['n']}")
def test_each_loop_as_tf_ran_it(case):
    """A loop of two variables, a loop nested in a loop, a cond in a body, maximum_iterations,
    a body that updates a ref variable (RefEnter), a recurrent layer over TensorArrays; no
    iteration, one, four."""
    g = imported_graph("tf1_while.pb")
    x = decode(LOOPS["feeds"]["x:0"])
    with tf.Session(graph=g) as sess:
        sess.run("init")
        names = list(case["values"])
        values = sess.run(names, {"x:0": x, "n:0": case["n"]})
        for name, value in zip(names, values):
            assert_close(value, case["values"][name])
        assert sess.run("total:0") == case["n"]      # the body's AssignAdd ran once per iteration


def test_a_loop_body_updates_its_variable_across_runs_as_tf():
    g = imported_graph("tf1_while.pb")
    with tf.Session(graph=g) as sess:
        sess.run("init")
        for case in LOOPS["cases"]:
            sess.run("bumps:0", {"n:0": case["n"]})
        assert sess.run("total:0") == LOOPS["total"]


def test_a_loop_is_cancelled_by_its_deadline():
    g = imported_graph("tf1_while.pb")
    with tf.Session(graph=g) as sess:
        sess.run("init")
        with pytest.raises(errors.DeadlineExceededError):
            sess.run("loop_steps:0", {"x:0": decode(LOOPS["feeds"]["x:0"]), "n:0": 2 ** 31 - 1},
                     options=tf.RunOptions(timeout_in_ms=200))
