"""GraphDef function libraries: tf.import_graph_def(g.as_graph_def()) copies graphs with tf.cond and
tf.while_loop (their bodies travel as the library's FunctionDefs and come back as our function
bodies), and the copy computes what the original and numpy compute; GraphDefs TensorFlow 2.21
writes with control flow v2 (If, StatelessIf, While, StatelessWhile; fixtures/
record_tf_control_flow.py) import and compute what TF computed."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.recorded import decode, load_graph_def
from fixtures.tw_graphs import build_while
from tensorweave.framework.func_graph import FuncGraph

X = np.array([1.0, 0.5, 0.25], np.float32)


def copy_of(graph, name=""):
    with tf.Graph().as_default() as copy:
        tf.import_graph_def(graph.as_graph_def(), name=name)
    return copy


def run(graph, fetches, feeds):
    with tf.Session(graph=graph) as sess:
        return sess.run(fetches, feeds)


def build_loops():
    """A while loop whose body captures outer tensors, one bounded by maximum_iterations, a while
    inside a cond, a cond inside a while, and the gradients of the first loop."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        k = tf.constant(2.0, name="k")
        _, acc = tf.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, a * k + x), [0, tf.zeros([3])], name="w")
        tf.identity(acc, name="acc")
        tf.identity(tf.while_loop(lambda j: j < 10, lambda j: j + 1, [0], maximum_iterations=4, name="m"), name="j")
        inner = tf.cond(x[0] > 0, lambda: tf.while_loop(lambda n: n < 3.0, lambda n: n + x[1], [x[2]]),
                        lambda: x[0], name="cw")
        tf.identity(inner, name="r")
        halve = tf.while_loop(lambda i, s: i < 4,
                              lambda i, s: (i + 1, tf.cond(s > 1.0, lambda: s / 2.0, lambda: s + x[0])),
                              [0, tf.reduce_sum(x) * 3.0], name="halve")[1]
        tf.identity(halve, name="h")
        gx, gk = tf.gradients(acc, [x, k])
        tf.identity(gx, name="gx")
        tf.identity(gk, name="gk")
    return g


def loops_in_numpy(x):
    acc = np.zeros(3, np.float32)
    for _ in range(5):
        acc = acc * 2.0 + x
    n = x[2]
    while x[0] > 0 and n < 3.0:
        n = n + x[1]
    s = x.sum() * 3.0
    for _ in range(4):
        s = s / 2.0 if s > 1.0 else s + x[0]
    # acc = x * (1 + 2 + 4 + 8 + 16); d sum(acc)/dk = sum over i of i * k**(i-1) * x summed
    gk = sum(i * 2.0 ** (i - 1) for i in range(1, 5)) * x.sum()
    return {"acc:0": acc, "j:0": 4, "r:0": n if x[0] > 0 else x[0], "h:0": s, "gx:0": np.full(3, 31.0), "gk:0": gk}


def test_copy_of_loops_and_conds_computes_what_the_original_and_numpy_compute():
    g = build_loops()
    fetches = ["acc:0", "j:0", "r:0", "h:0", "gx:0", "gk:0"]
    for x in (X, X * [-1, 1, 1]):
        want = loops_in_numpy(x)
        original = run(g, fetches, {"x:0": x})
        copied = run(copy_of(g), fetches, {"x:0": x})
        for name, a, b in zip(fetches, original, copied):
            np.testing.assert_allclose(a, want[name], rtol=1e-6, err_msg=name)
            np.testing.assert_allclose(b, want[name], rtol=1e-6, err_msg=name)


def test_imported_functions_are_function_bodies_and_the_copy_copies_again():
    g = build_loops()
    copy = copy_of(g, name="imported")
    loop = copy.get_operation_by_name("imported/w")
    assert loop.type == "While"
    body = loop.get_attr("body")
    assert isinstance(body, FuncGraph) and body.outer_graph is copy
    assert [t.dtype for t in body.inputs] == [t.dtype for t in loop.inputs]
    # as TF's While: every input a loop variable; then the values recorded for the gradient
    original = g.get_operation_by_name("w")
    assert loop.get_attr("record_history") and loop.get_attr("num_recorded") == original.get_attr("num_recorded") > 0
    assert len(body.outputs) == len(loop.inputs) + loop.get_attr("num_recorded")
    assert len(loop.outputs) == len(original.outputs) + len(original.inputs) - len(original.get_attr("T"))
    # nested: the cond's branch holds a While whose bodies live in the branch
    branch = copy.get_operation_by_name("imported/cw").get_attr("then_branch")
    nested = next(op for op in branch.get_operations() if op.type == "While")
    assert nested.get_attr("body").outer_graph is branch
    again = copy_of(copy)
    assert run(again, "imported/acc:0", {"imported/x:0": X}).tolist() == (X * 31).tolist()


def test_gradients_of_an_imported_loop_match_the_originals():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        w = tf.constant([0.5, -1.0, 2.0], name="w")
        _, y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, tf.tanh(v * w) + x), [0, x], name="loop")
        tf.identity(y, name="y")
    with tf.Graph().as_default() as copy:
        tf.import_graph_def(g.as_graph_def(), name="")
        y = copy.get_tensor_by_name("y:0")
        grads = tf.gradients(tf.reduce_sum(y * y), [copy.get_tensor_by_name("x:0"), copy.get_tensor_by_name("w:0")])
    with g.as_default():
        want = tf.gradients(tf.reduce_sum(g.get_tensor_by_name("y:0") ** 2), [g.get_tensor_by_name("x:0"),
                                                                              g.get_tensor_by_name("w:0")])
    for got, expected in zip(run(copy, grads, {"x:0": X}), run(g, want, {"x:0": X})):
        np.testing.assert_allclose(got, expected, rtol=1e-5)
    # numpy, by finite differences of the loop in x
    def loop(x):
        v = x.astype(np.float64)
        for _ in range(3):
            v = np.tanh(v * np.array([0.5, -1.0, 2.0])) + x
        return (v * v).sum()
    eps = 1e-6
    numeric = [(loop(X + eps * e) - loop(X - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(run(copy, grads[0], {"x:0": X}), numeric, rtol=1e-4)



def test_copy_of_rnn_training_map_fn_scan_tensor_arrays_and_second_derivatives():
    rng = np.random.RandomState(0)
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(3)
        x = tf.placeholder(tf.float32, [2, 5, 3], name="x")
        out, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(4), x, dtype=tf.float32)
        loss = tf.identity(tf.reduce_sum(out ** 2), name="loss")
        tf.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        squares = tf.map_fn(lambda r: tf.reduce_sum(r * r), x[0])
        sums = tf.scan(lambda a, r: a + r, x[1])
        ta = tf.while_loop(lambda i, t: i < 5, lambda i, t: (i + 1, t.write(i, tf.reduce_mean(x[:, i]))),
                           [0, tf.TensorArray(tf.float32, size=5)])[1]
        z = tf.placeholder(tf.float32, [], name="z")
        w = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, tf.sin(v) * z), [0, z])[1]
        d1 = tf.gradients(w, z)[0]
        d2 = tf.gradients(d1, z)[0]
        init = tf.global_variables_initializer()
    fetches = [loss.name, squares.name, sums.name, ta.stack().name, w.name, d1.name, d2.name]
    feeds = {"x:0": rng.randn(2, 5, 3).astype(np.float32), "z:0": 0.7}
    results = []
    for graph in (g, copy_of(g)):
        with tf.Session(graph=graph) as sess:
            sess.run(init.name)
            sess.run("train", feeds)    # one step through the copied loop's gradient
            results.append(sess.run(fetches, feeds))
    for name, got, want in zip(fetches, results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=name)
    x0 = feeds["x:0"]
    np.testing.assert_allclose(results[1][1], (x0[0] ** 2).sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(results[1][2], np.cumsum(x0[1], axis=0), rtol=1e-5)
    np.testing.assert_allclose(results[1][3], x0.mean(axis=(0, 2)), rtol=1e-5)
    v, dv, ddv = 0.7, 1.0, 0.0      # w = f(f(f(z))) with f(v) = sin(v) * z: forward-mode in numpy
    for _ in range(3):
        v, dv, ddv = (np.sin(v) * 0.7, np.cos(v) * dv * 0.7 + np.sin(v),
                      (-np.sin(v) * dv * dv + np.cos(v) * ddv) * 0.7 + 2 * np.cos(v) * dv)
    np.testing.assert_allclose(results[1][4:], [v, dv, ddv], rtol=1e-5)

def test_one_function_named_by_two_nodes_is_one_body():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.bool, [], name="p")
        x = tf.placeholder(tf.float32, [], name="x")
        tf.cond(p, lambda: x * 2.0, lambda: x - 1.0, name="y")
    graph_def = g.as_graph_def()
    twin = graph_def.node.add()
    twin.CopyFrom(next(n for n in graph_def.node if n.name == "y"))
    twin.name = "twin"
    with tf.Graph().as_default() as copy:
        tf.import_graph_def(graph_def, name="")
    y, twin = copy.get_operation_by_name("y"), copy.get_operation_by_name("twin")
    assert y.get_attr("then_branch") is twin.get_attr("then_branch")
    assert y.get_attr("else_branch") is twin.get_attr("else_branch")
    assert run(copy, ["y:0", "twin:0"], {"p:0": False, "x:0": 5.0}) == [4.0, 4.0]
    # imported twice into one graph: the bodies get names of their own, each computes its own
    with tf.Graph().as_default() as both:
        tf.import_graph_def(graph_def, name="a")
        tf.import_graph_def(graph_def, name="b")
    names = {both.get_operation_by_name(f"{s}/y").get_attr("then_branch").name for s in "ab"}
    assert len(names) == 2
    assert run(both, ["a/y:0", "b/twin:0"], {"a/p:0": True, "a/x:0": 5.0, "b/p:0": False, "b/x:0": 1.0}) == [10.0, 0.0]


def cond_graph_def():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.bool, [], name="p")
        x = tf.placeholder(tf.float32, [], name="x")
        tf.cond(p, lambda: tf.cond(p, lambda: x, lambda: x + 1.0, name="inner"), lambda: x - 1.0, name="y")
    return g.as_graph_def()


def test_a_missing_or_self_calling_function_is_an_error_naming_it():
    graph_def = cond_graph_def()
    outer = next(n for n in graph_def.node if n.name == "y")
    then_name = outer.attr["then_branch"].func.name
    missing = type(graph_def)()
    missing.CopyFrom(graph_def)
    kept = [f for f in missing.library.function if f.signature.name != then_name]
    del missing.library.function[:]
    missing.library.function.extend(kept)
    with tf.Graph().as_default() as g:
        with pytest.raises(ValueError, match=f"Node 'y': attribute 'then_branch' names function '{then_name}', "
                                             "which the GraphDef's library does not define"):
            tf.import_graph_def(missing)
        assert g.get_operations() == []
    # the inner If of the then branch calls the then branch again
    looping = type(graph_def)()
    looping.CopyFrom(graph_def)
    then = next(f for f in looping.library.function if f.signature.name == then_name)
    inner = next(n for n in then.node_def if n.op == "If")
    inner.attr["else_branch"].func.name = then_name
    with tf.Graph().as_default() as g:
        with pytest.raises(ValueError, match=f"Function '{then_name}' calls itself \\({then_name} -> {then_name}\\)"):
            tf.import_graph_def(looping)
        assert g.get_operations() == []


def test_errors_inside_a_function_name_the_node_and_the_function():
    graph_def = cond_graph_def()
    then = next(f for f in graph_def.library.function if any(n.op == "If" for n in f.node_def))
    inner = next(n for n in then.node_def if n.op == "If")
    inner.op = "NoSuchOp"
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.NotFoundError,
                           match=f"'NoSuchOp'.*node '{inner.name}' in function '{then.signature.name}'"):
            tf.import_graph_def(graph_def)


# -- GraphDefs TensorFlow 2.21 wrote with control flow v2 (fixtures/record_tf_control_flow.py) ------
TF_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_graph_defs")
with open(os.path.join(TF_DIR, "control_flow.json")) as _f:
    TF_RECORDED = json.load(_f)


def tf_control_flow():
    return load_graph_def(os.path.join(TF_DIR, "control_flow.pb"), tf.GraphDef())


def feeds_of(case, prefix=""):
    return {prefix + k: decode(v) for k, v in case["feeds"].items()}


def test_tf_functional_control_flow_imports_and_runs_as_tf_ran_it():
    graph_def = tf_control_flow()
    assert {"If", "StatelessIf", "While", "StatelessWhile"} <= set(TF_RECORDED["ops"])
    assert {"StatelessIf", "StatelessWhile", "Assert"} <= set(TF_RECORDED["function_ops"])
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph_def)
    assert {op.type for op in g.get_operations()} >= {"If", "While"}
    fetches = ["import/" + f for f in TF_RECORDED["fetches"]]
    with tf.Session(graph=g) as sess:
        for case in TF_RECORDED["cases"]:
            for name, got, want in zip(fetches, sess.run(fetches, feeds_of(case, "import/")), case["outputs"]):
                want = decode(want)
                assert np.asarray(got).dtype == want.dtype, name
                np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)
        # the Assert inside the taken branch fails the step with TF's message
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run("import/checked:0", {**feeds_of(TF_RECORDED["cases"][0], "import/"), "import/n:0": -1})
        assert TF_RECORDED["assert_error"][0] in str(e.value)


def test_gradients_of_tf_written_while_loop():
    with tf.Graph().as_default() as g:
        tf.import_graph_def(tf_control_flow(), name="")
        x, acc = g.get_tensor_by_name("x:0"), g.get_tensor_by_name("acc:0")
        dx, = tf.gradients(tf.reduce_sum(acc), [x])
    # acc = sum over i < n of x * i * k**(n - 1 - i), k = 1.5
    with tf.Session(graph=g) as sess:
        for case in TF_RECORDED["cases"]:
            feeds = feeds_of(case)
            n = int(feeds["n:0"])
            want = sum(i * 1.5 ** (n - 1 - i) for i in range(n))
            np.testing.assert_allclose(sess.run(dx, feeds), np.full(3, want), rtol=1e-6)


def test_control_outputs_of_a_function_run_before_its_results():
    graph_def = tf_control_flow()
    branch = next(f for f in graph_def.library.function if any(n.op == "Assert" for n in f.node_def))
    check = next(n for n in branch.node_def if n.op == "Assert")
    for node in branch.node_def:        # the Assert ordered by control_ret instead of control inputs
        kept = [i for i in node.input if i != "^" + check.name]
        del node.input[:]
        node.input.extend(kept)
    branch.signature.control_output.append("check")
    branch.control_ret["check"] = check.name
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph_def, name="")
    feeds = feeds_of(TF_RECORDED["cases"][0])
    with tf.Session(graph=g) as sess:
        assert sess.run("checked:0", feeds) == pytest.approx(3.5)
        with pytest.raises(tf.errors.InvalidArgumentError, match="n must not be negative"):
            sess.run("checked:0", {**feeds, "n:0": -1})


def test_function_attributes_and_arguments_tensorweave_cannot_hold_are_refused_by_name():
    graph_def = tf_control_flow()
    body = next(f for f in graph_def.library.function if f.signature.name.startswith("while_body"))
    node = next(n for n in body.node_def if n.op == "AddV2")
    node.attr["T"].placeholder = "T"
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=f"Node '{node.name}' in function '{body.signature.name}' "
                                             "\\(op 'AddV2'\\): attribute 'T' holds a .*placeholder"):
            tf.import_graph_def(graph_def)
    graph_def = tf_control_flow()
    body = next(f for f in graph_def.library.function if f.signature.name.startswith("while_body"))
    arg = body.signature.input_arg[0]
    arg.type_attr = "T"
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=f"Function '{body.signature.name}': argument '{arg.name}' takes its "
                                             "type from an attribute"):
            tf.import_graph_def(graph_def)


# -- our While as TF's (TF 2.21 ran these: fixtures/record_tf_import_of_ours.py, test_as_graph_def.py) ---
def test_our_while_is_written_with_tfs_while_signature():
    graph = build_while()[0]
    graph_def = graph.as_graph_def()
    library = {f.signature.name: f for f in graph_def.library.function}
    loops = [n for n in graph_def.node if n.op == "While"]
    loops += [n for f in library.values() for n in f.node_def if n.op == "While"]
    assert len(loops) == 8
    for node in loops:
        assert {k for k in node.attr if not k.startswith("_")} == {"T", "cond", "body", "output_shapes",
                                                                   "parallel_iterations"}
        types = list(node.attr["T"].list.type)
        assert len(types) == len([i for i in node.input if not i.startswith("^")])
        assert len(node.attr["output_shapes"].list.shape) == len(types)
        cond, body = library[node.attr["cond"].func.name], library[node.attr["body"].func.name]
        assert [a.type for a in cond.signature.input_arg] == types
        assert [a.type for a in body.signature.input_arg] == types == [a.type for a in body.signature.output_arg]
        assert [a.type for a in cond.signature.output_arg] == [tf.bool.as_datatype_enum]
    # the loop bounded by maximum_iterations counts its last loop variable down from the limit
    bounded = next(n for n in graph_def.node if n.name == "while_2")
    assert bounded.input[-1] == "n"
    body = library[bounded.attr["body"].func.name]
    assert {n.op for n in body.node_def} >= {"Sub", "Identity"}


def test_a_loop_without_back_prop_stays_without_after_a_copy():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        tf.identity(tf.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, [x], back_prop=False), name="y")
    assert next(n for n in g.as_graph_def().node if n.op == "While").attr["_back_prop"].b is False
    copy = copy_of(g)
    with copy.as_default():
        assert tf.gradients(copy.get_tensor_by_name("y:0"), copy.get_tensor_by_name("x:0")) == [None]
    assert run(copy, "y:0", {"x:0": 3.0}) == 12.0


def test_if_and_while_without_output_shapes_take_tfs_defaults():
    graph_def = tf_control_flow()
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    for node in nodes:
        if node.op in ("If", "StatelessIf", "While", "StatelessWhile"):
            del node.attr["output_shapes"]
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph_def, name="")
    # TF's shape functions: a While's outputs have its inputs' shapes, an If's are unknown
    loop = g.get_operation_by_name("while_1")
    assert [t.shape.as_list() for t in loop.outputs] == [t.shape.as_list() for t in loop.inputs]
    assert g.get_operation_by_name("cond").outputs[0].shape.ndims is None
    case = TF_RECORDED["cases"][0]
    with tf.Session(graph=g) as sess:
        for got, want in zip(sess.run(TF_RECORDED["fetches"], feeds_of(case)), case["outputs"]):
            np.testing.assert_allclose(got, decode(want), rtol=1e-6)


def test_tf_control_flow_written_back_keeps_every_attribute():
    with tf.Graph().as_default() as g:
        tf.import_graph_def(tf_control_flow(), name="")
    graph_def = g.as_graph_def()
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    # TF refuses an AttrValue holding nothing: TF's empty lists stay lists
    assert all(v.WhichOneof("value") for n in nodes for v in n.attr.values())
    assert any(n.attr["_read_only_resource_inputs"].WhichOneof("value") == "list" for n in nodes
               if "_read_only_resource_inputs" in n.attr)
    # and the copy of the copy computes what TF computed
    with tf.Graph().as_default() as again:
        tf.import_graph_def(graph_def, name="")
    case = TF_RECORDED["cases"][2]
    with tf.Session(graph=again) as sess:
        for got, want in zip(sess.run(TF_RECORDED["fetches"], feeds_of(case)), case["outputs"]):
            np.testing.assert_allclose(got, decode(want), rtol=1e-6)


def test_the_nodes_the_export_adds_to_a_loop_body_keep_clear_of_its_names():
    g = tf.Graph()
    with g.as_default():
        n = tf.placeholder(tf.int32, [], name="n")

        def body(v):
            with tf.name_scope("iteration_limit/"):      # the names the export's count-down nodes take
                return tf.add(v, 1.0, name="one") * tf.constant(2.0, name="count_down")
        tf.identity(tf.while_loop(lambda v: v < 100.0, body, [tf.constant(1.0)], maximum_iterations=n), name="y")
    graph_def = g.as_graph_def()
    body = next(f for f in graph_def.library.function if "body" in f.signature.name)
    names = [node.name for node in body.node_def]
    assert {"iteration_limit/one", "iteration_limit/one_1", "iteration_limit/count_down_1"} <= set(names)
    assert len(names) == len(set(names))
    assert [run(copy_of(g), "y:0", {"n:0": k}) for k in (0, 2, 10)] == [1.0, 10.0, 190.0]
