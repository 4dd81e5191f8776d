"""tf.graph_util's GraphDef helpers against what TensorFlow 2.21 returned on the same GraphDefs
(tests/unit/fixtures/tf_graph_defs/graph_util.json, from record_tf_graph_util.py), and a trained
tensorweave MLP frozen, imported into a fresh graph and run."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.recorded import load_graph_def, nodes
from tensorweave.ops.tensor_proto import from_proto

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_graph_defs")
with open(os.path.join(HERE, "graph_util.json")) as _f:
    RECORDED = json.load(_f)


def _graph_def(graph):
    """`graph` as TF's GraphDef proto, as a TF1 program gets it."""
    return graph.as_graph_def()


def load(name: str):
    return load_graph_def(os.path.join(HERE, name), tf.GraphDef())


def recorded_value(name: str) -> np.ndarray:
    v = RECORDED["values"][name]
    return np.array(v["values"], dtype=v["dtype"]).reshape(v["shape"])


class RecordedSession:
    """A session holding the values TF's session gave for the variables (freezing needs only run)."""

    def __init__(self):
        self.fetched = []

    def run(self, fetches):
        self.fetched.append(list(fetches))
        return [recorded_value(name) for name in fetches]


def test_names_in_both_namespaces():
    for name in ("convert_variables_to_constants", "extract_sub_graph", "remove_training_nodes",
                 "must_run_on_cpu", "tensor_shape_from_node_def_name", "import_graph_def"):
        assert getattr(tf.graph_util, name) is getattr(tf.compat.v1.graph_util, name)


@pytest.mark.parametrize("case", sorted(RECORDED["extract"]))
def test_extract_sub_graph_keeps_what_tf_keeps_in_order(case):
    rec = RECORDED["extract"][case]
    graph_def = load(rec["file"])
    before = graph_def.SerializeToString()
    out = tf.graph_util.extract_sub_graph(graph_def, rec["dest"])
    assert [n.name for n in out.node] == rec["nodes"]
    assert isinstance(out, tf.GraphDef) and out.versions == graph_def.versions
    assert graph_def.SerializeToString() == before
    by_name = {n.name: n for n in graph_def.node}
    assert all(n == by_name[n.name] for n in out.node)       # nodes copied unchanged


def test_extract_sub_graph_errors_as_tf():
    errors = RECORDED["errors"]
    graph_def = load("attrs.pbtxt")
    with pytest.raises(TypeError) as e:
        tf.graph_util.extract_sub_graph("x", ["a"])
    assert f"TypeError: {e.value}" == errors["extract_not_graph_def"]
    with pytest.raises(TypeError) as e:
        tf.graph_util.extract_sub_graph(graph_def, "after")
    assert f"TypeError: {e.value}" == errors["extract_str_dest"]
    with pytest.raises(AssertionError) as e:
        tf.graph_util.extract_sub_graph(graph_def, ["nope"])
    assert f"AssertionError: {e.value}" == errors["extract_missing"]
    with pytest.raises(AssertionError) as e:
        tf.graph_util.convert_variables_to_constants(None, graph_def, ["nope"])
    assert f"AssertionError: {e.value}" == errors["freeze_missing_output"]


@pytest.mark.parametrize("case", sorted(RECORDED["remove"]))
def test_remove_training_nodes_as_tf(case):
    rec = RECORDED["remove"][case]
    graph_def = load(rec["file"])
    if isinstance(rec["nodes"], str):       # TF fails: a dropped CheckNumerics left an Identity no input
        with pytest.raises(IndexError) as e:
            tf.graph_util.remove_training_nodes(graph_def, rec["protected"])
        assert f"IndexError: {e.value}" == rec["nodes"]
        return
    out = tf.graph_util.remove_training_nodes(graph_def, rec["protected"])
    assert nodes(out) == rec["nodes"]


@pytest.mark.parametrize("case", sorted(RECORDED["freeze"]))
def test_freezing_tf_written_graph_gives_tf_nodes(case):
    """Ref (VariableV2) and resource (VarHandleOp, ResourceGather) variables; whitelist, blacklist."""
    rec = RECORDED["freeze"][case]
    graph_def = load("variables.pbtxt")
    before = graph_def.SerializeToString()
    sess = RecordedSession()
    out = tf.graph_util.convert_variables_to_constants(sess, graph_def, rec["outputs"], **rec["kwargs"])
    assert sess.fetched == rec["fetched"]
    assert nodes(out, full=True) == rec["nodes"]
    assert out.versions.producer == rec["versions"]
    assert graph_def.SerializeToString() == before
    fetched = dict(zip(("w1", "b1", "w2", "emb"), ("w1:0", "b1:0", "w2/Read/ReadVariableOp:0",
                                                    "emb/Read/ReadVariableOp:0")))
    for node in out.node:
        if node.op == "Const" and node.name in fetched:     # each variable's value, as fetched
            enum, value = from_proto(node.attr["value"].tensor)
            assert enum == node.attr["dtype"].type
            np.testing.assert_array_equal(value, recorded_value(fetched[node.name]))


def test_tf_written_graph_frozen_here_runs_as_tf_ran_its_own_frozen_graph():
    run = RECORDED["frozen_run"]
    frozen = tf.graph_util.convert_variables_to_constants(RecordedSession(), load("variables.pbtxt"),
                                                         ["out", "rows_sum"])
    with tf.Graph().as_default():
        tf.import_graph_def(frozen, name="")
        assert tf.global_variables() == []
        with tf.Session() as sess:
            out, rows_sum = sess.run(["out:0", "rows_sum:0"], {"x:0": np.array(run["feeds"]["x:0"], np.float32),
                                                               "ids:0": np.array(run["feeds"]["ids:0"], np.int32)})
    np.testing.assert_allclose(out, run["out"], rtol=1e-6, atol=1e-6)
    assert float(rows_sum) == run["rows_sum"]


def _trained_mlp():
    rng = np.random.RandomState(0)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        labels = tf.placeholder(tf.float32, [None, 3], name="labels")
        hidden = tf.layers.dense(x, 8, activation=tf.nn.relu, name="hidden")
        logits = tf.layers.dense(hidden, 3, name="logits")
        tf.nn.softmax(logits, name="probs")
        loss = tf.losses.softmax_cross_entropy(labels, logits)
        train = tf.train.AdamOptimizer(0.05).minimize(loss)
        xs = rng.randn(16, 4).astype(np.float32)
        ys = np.eye(3, dtype=np.float32)[rng.randint(0, 3, 16)]
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        for _ in range(5):
            sess.run(train, {x: xs, labels: ys})
    return graph, sess, xs


def test_frozen_tensorweave_mlp_imports_and_runs_without_variables():
    graph, sess, xs = _trained_mlp()
    with graph.as_default(), sess:
        want = sess.run("probs:0", {"x:0": xs})
        kernel = sess.run(graph.get_tensor_by_name("hidden/kernel/read:0"))
        frozen = tf.graph_util.convert_variables_to_constants(sess, _graph_def(graph), ["probs"])
    types = {n.name: n.op for n in frozen.node}
    assert not {"VarHandleOp", "ReadVariableOp", "AssignVariableOp", "VariableV2"} & set(types.values())
    assert types["hidden/kernel"] == types["logits/bias"] == "Const"
    assert not any(name.startswith(("Adam", "gradients", "labels")) for name in types)
    assert list(types)[-1] == "probs"
    with tf.Graph().as_default() as g:
        probs, = tf.import_graph_def(frozen, return_elements=["probs:0"], name="")
        assert tf.global_variables() == [] and tf.trainable_variables() == []
        assert "VarHandleOp" not in {op.type for op in g.get_operations()}
        with tf.Session() as s:
            np.testing.assert_array_equal(s.run(probs, {"x:0": xs}), want)
            np.testing.assert_array_equal(s.run("hidden/kernel:0"), kernel)


def test_whitelist_and_blacklist_keep_the_others_variables():
    graph, sess, _ = _trained_mlp()
    with graph.as_default(), sess:
        graph_def = _graph_def(graph)
        only = tf.graph_util.convert_variables_to_constants(sess, graph_def, ["probs"],
                                                            variable_names_whitelist=["hidden/kernel"])
        but = tf.graph_util.convert_variables_to_constants(sess, graph_def, ["probs"],
                                                           variable_names_blacklist=["hidden/kernel"])
    ops = {n.name: n.op for n in only.node}
    assert ops["hidden/kernel"] == "Const"
    assert ops["hidden/bias"] == ops["logits/kernel"] == ops["logits/bias"] == "VarHandleOp"
    ops = {n.name: n.op for n in but.node}
    assert ops["hidden/kernel"] == "VarHandleOp"
    assert ops["hidden/bias"] == ops["logits/kernel"] == ops["logits/bias"] == "Const"
    # a kept variable's reads stay reads; a frozen one's become Identity of the Const
    reads = {n.input[0]: n.op for n in but.node if n.name.endswith("ReadVariableOp")}
    assert reads["hidden/kernel"] == "ReadVariableOp" and reads["logits/kernel"] == "Identity"


def test_remove_training_nodes_on_tensorweave_graph_splices_identity():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [2], name="x")
        checked = tf.debugging.check_numerics(x, "bad", name="checked")
        y = tf.multiply(tf.stop_gradient(tf.identity(x, name="ident"), name="stopped"), 2.0, name="y")
        tf.add(y, checked, name="z")
        out = tf.graph_util.remove_training_nodes(_graph_def(g), protected_nodes=["z"])
    got = {n.name: list(n.input) for n in out.node}
    assert "checked" not in got and "ident" not in got and "stopped" not in got
    assert got["y"][0] == "x" and got["z"] == ["y"]


def test_must_run_on_cpu_and_tensor_shape():
    with tf.Graph().as_default() as g:
        c = tf.constant([1, 2], name="ints")
        f = tf.constant([1.0], name="floats")
        tf.cast(c, tf.float32, name="cast")
        graph_def = _graph_def(g)
    by_name = {n.name: n for n in graph_def.node}
    assert tf.graph_util.must_run_on_cpu(by_name["ints"]) and tf.graph_util.must_run_on_cpu(c.op)
    assert not tf.graph_util.must_run_on_cpu(by_name["floats"]) and not tf.graph_util.must_run_on_cpu(f.op)
    assert tf.graph_util.must_run_on_cpu(by_name["cast"])
    assert tf.graph_util.tensor_shape_from_node_def_name(g, "ints").as_list() == [2]
    assert tf.graph_util.tensor_shape_from_node_def_name(g, "floats:0").as_list() == [1]
