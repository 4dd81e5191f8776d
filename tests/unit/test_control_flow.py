"""tf.cond / tf.case / tf.while_loop / group / tuple as functional If and While ops."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.graph_def import graph_to_graph_def

from unit_helpers import run


pytestmark = pytest.mark.usefixtures("graph")


# -- cond ------------------------------------------------------------------------------------------
def test_cond_picks_branch_and_runs_only_it():
    p = tf.placeholder(tf.bool, [])
    x = tf.constant(3.0)
    # The untaken branch would fail its Assert: only the taken branch may run.
    def true_fn():
        with tf.control_dependencies([tf.Assert(p, ["true branch ran with p false"])]):
            return x * 2.0
    def false_fn():
        with tf.control_dependencies([tf.Assert(tf.logical_not(p), ["false branch ran with p true"])]):
            return x + 1.0
    r = tf.cond(p, true_fn, false_fn)
    assert r.dtype == tf.float32 and r.shape.as_list() == []
    assert r.op.type == "If" and r.op.name == "cond"
    with tf.Session() as sess:
        assert sess.run(r, {p: True}) == 6.0
        assert sess.run(r, {p: False}) == 4.0


def test_cond_variable_assign_only_in_taken_branch():
    v = tf.Variable(1.0, name="v")
    p = tf.placeholder(tf.bool, [])
    r = tf.cond(p, lambda: tf.assign(v, 10.0), lambda: tf.identity(v.read_value()))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(r, {p: False}) == 1.0
        assert sess.run(v) == 1.0
        assert sess.run(r, {p: True}) == 10.0
        assert sess.run(v) == 10.0


def test_cond_nested_structure_and_captures():
    Pair = collections.namedtuple("Pair", "a b")
    x = tf.placeholder(tf.float32, [None])
    y = tf.constant([1, 2], tf.int32)
    p = tf.placeholder(tf.bool, [])
    r = tf.cond(p, lambda: {"s": Pair(x * 2.0, y), "t": [x]},
                lambda: {"s": Pair(x - 1.0, y * 3), "t": [x + x]})
    assert isinstance(r["s"], Pair) and isinstance(r["t"], list)
    assert r["s"].b.dtype == tf.int32 and r["s"].b.shape.as_list() == [2]
    assert r["s"].a.shape.as_list() == [None]
    xv = np.array([1.0, 2.0, 4.0], np.float32)
    with tf.Session() as sess:
        out = sess.run(r, {x: xv, p: True})
        np.testing.assert_allclose(out["s"].a, xv * 2)
        np.testing.assert_array_equal(out["s"].b, [1, 2])
        out = sess.run(r, {x: xv, p: False})
        np.testing.assert_allclose(out["s"].a, xv - 1)
        np.testing.assert_array_equal(out["s"].b, [3, 6])
        np.testing.assert_allclose(out["t"][0], xv * 2)


def test_cond_output_shape_is_most_specific_compatible():
    p = tf.placeholder(tf.bool, [])
    r = tf.cond(p, lambda: tf.zeros([2, 3]), lambda: tf.ones([4, 3]))
    assert r.shape.as_list() == [None, 3]
    with tf.Session() as sess:
        assert sess.run(r, {p: False}).shape == (4, 3)


def test_cond_singleton_unpacking_and_strict():
    p = tf.constant(True)
    x = tf.constant(1.0)
    assert isinstance(tf.cond(p, lambda: [x], lambda: [x]), tf.Tensor)
    r = tf.cond(p, lambda: [x], lambda: [x], strict=True)
    assert isinstance(r, list) and len(r) == 1


def test_cond_operation_outputs_and_fn1_fn2():
    v = tf.Variable(0, name="counter")
    p = tf.placeholder(tf.bool, [])
    r = tf.cond(p, lambda: tf.group(tf.assign_add(v, 1)), lambda: tf.no_op())
    assert r.dtype == tf.bool
    r2 = tf.cond(p, fn1=lambda: tf.constant(1), fn2=lambda: tf.constant(2))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(r, {p: True})
        assert sess.run(v) == 1
        assert not sess.run(r, {p: False})
        assert sess.run(v) == 1
        assert sess.run(r2, {p: False}) == 2


def test_cond_branch_names_are_scoped():
    p = tf.constant(True)
    tf.cond(p, lambda: tf.add(tf.constant(1), 2, name="inner"), lambda: tf.constant(0))
    r = tf.cond(p, lambda: tf.constant(1), lambda: tf.constant(0), name="mycond")
    assert r.op.name == "mycond"
    branch = tf.get_default_graph().get_operation_by_name("cond").get_attr("then_branch")
    assert any(op.name == "cond/inner" for op in branch.get_operations())
    # Body ops live in the function, not the outer graph.
    assert "cond/inner" not in [op.name for op in tf.get_default_graph().get_operations()]


def test_cond_outer_control_dependency_inside_branch():
    v = tf.Variable(5.0)
    p = tf.placeholder(tf.bool, [])
    with tf.control_dependencies(None):
        upd = tf.assign(v, 7.0)

    def t():
        with tf.control_dependencies([upd]):
            return tf.constant(1.0)
    r = tf.cond(p, t, lambda: tf.constant(2.0))
    assert upd.op in r.op.control_inputs
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(r, {p: True}) == 1.0
        assert sess.run(v) == 7.0


@pytest.mark.parametrize("true_fn,false_fn,exc,text", [
    (lambda: tf.constant(1.0), lambda: tf.constant(1), ValueError, "same type: float32, int32"),
    (lambda: (tf.constant(1), tf.constant(1)), lambda: tf.constant(1), ValueError, "nested structure"),
    (lambda: {"a": tf.constant(1)}, lambda: {"b": tf.constant(1)}, ValueError, "same set of keys"),
    (lambda: None, lambda: tf.constant(1), ValueError, "must have a return value"),
    (lambda: [tf.constant(1)], lambda: (tf.constant(1),), TypeError, "sequence type"),
])
def test_cond_branch_mismatch_errors(true_fn, false_fn, exc, text):
    with pytest.raises(exc) as e:
        tf.cond(tf.constant(True), true_fn, false_fn, name="badcond")
    assert text in str(e.value)
    if exc is ValueError and "return value" not in text:
        assert "badcond" in str(e.value)


def test_cond_argument_errors():
    x = tf.constant(1.0)
    with pytest.raises(TypeError, match="pred must not be a Python bool"):
        tf.cond(True, lambda: x, lambda: x)
    with pytest.raises(TypeError, match="true_fn must be callable"):
        tf.cond(tf.constant(True), 1, lambda: x)
    with pytest.raises(TypeError, match="false_fn argument required"):
        tf.cond(tf.constant(True), lambda: x)
    with pytest.raises(TypeError, match="'If'.*bool.*'intcond'"):
        tf.cond(tf.constant(1), lambda: x, lambda: x, name="intcond")
    with pytest.raises(ValueError, match="rank 0 but is rank 1.*'rankcond'"):
        tf.cond(tf.constant([True]), lambda: x, lambda: x, name="rankcond")
    # A numpy bool is not a Python bool: TF converts it.
    assert run(tf.cond(np.bool_(False), lambda: x, lambda: x + 1.0)) == 2.0


def test_cond_runtime_nonscalar_pred_names_op():
    p = tf.placeholder(tf.bool)
    r = tf.cond(p, lambda: tf.constant(1), lambda: tf.constant(2), name="vcond")
    with pytest.raises(tf.errors.InvalidArgumentError, match="vcond"):
        run(r, {p: [True, False]})


def test_cond_error_in_branch_names_inner_op():
    p = tf.placeholder(tf.bool, [])
    r = tf.cond(p, lambda: tf.identity(tf.placeholder(tf.float32, [], name="unfed")), lambda: tf.constant(0.0))
    assert run(r, {p: False}) == 0.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="unfed"):
        run(r, {p: True})


def test_nested_cond_captures_through_levels():
    a = tf.placeholder(tf.float32, [])
    p = tf.placeholder(tf.bool, [])
    q = tf.placeholder(tf.bool, [])
    r = tf.cond(p, lambda: tf.cond(q, lambda: a * 10.0, lambda: a * 20.0), lambda: a)
    with tf.Session() as sess:
        assert sess.run(r, {a: 2.0, p: True, q: True}) == 20.0
        assert sess.run(r, {a: 2.0, p: True, q: False}) == 40.0
        assert sess.run(r, {a: 2.0, p: False, q: True}) == 2.0


def test_cond_gradient_through_taken_branch():
    x = tf.placeholder(tf.float32, [3])
    w = tf.constant([1.0, 2.0, 3.0])
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: tf.reduce_sum(x * x * w), lambda: tf.reduce_sum(x * 3.0))
    gx, gw = tf.gradients(y, [x, w])
    xv = np.array([1.0, -2.0, 0.5], np.float32)
    with tf.Session() as sess:
        a, b = sess.run([gx, gw], {x: xv, p: True})
        np.testing.assert_allclose(a, 2 * xv * [1, 2, 3], rtol=1e-6)
        np.testing.assert_allclose(b, xv * xv, rtol=1e-6)
        a, b = sess.run([gx, gw], {x: xv, p: False})
        np.testing.assert_allclose(a, [3, 3, 3])
        np.testing.assert_allclose(b, [0, 0, 0])


def test_cond_gradient_finite_difference_and_variable():
    v = tf.Variable(np.array([0.5, -1.0], np.float32))
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: tf.reduce_sum(tf.exp(v) * 2.0), lambda: tf.reduce_sum(v))
    (g,) = tf.gradients(y, [v])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(g, {p: True})
        vv = np.array([0.5, -1.0])
        eps = 1e-3
        fd = [(np.sum(2 * np.exp(vv + eps * e)) - np.sum(2 * np.exp(vv - eps * e))) / (2 * eps)
              for e in np.eye(2)]
        np.testing.assert_allclose(got, fd, rtol=1e-3)
        np.testing.assert_allclose(sess.run(g, {p: False}), [1, 1])


def test_nested_cond_gradient():
    x = tf.placeholder(tf.float32, [])
    p = tf.placeholder(tf.bool, [])
    q = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: tf.cond(q, lambda: x * x, lambda: x * 5.0), lambda: x * 7.0)
    (g,) = tf.gradients(y, [x])
    with tf.Session() as sess:
        assert sess.run(g, {x: 3.0, p: True, q: True}) == pytest.approx(6.0)
        assert sess.run(g, {x: 3.0, p: True, q: False}) == pytest.approx(5.0)
        assert sess.run(g, {x: 3.0, p: False, q: True}) == pytest.approx(7.0)


def test_cond_gradient_sees_the_forward_branchs_random_numbers_and_does_not_draw_again():
    x = tf.placeholder(tf.float32, [6, 500])
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: tf.nn.dropout(x, rate=0.5) * 3.0, lambda: x * 2.0)
    (g,) = tf.gradients(tf.reduce_sum(y), [x])
    (g2,) = tf.gradients(tf.reduce_sum(y * y), [x])   # a second gradient of the same cond
    xv = np.random.default_rng(3).uniform(1, 2, (6, 500)).astype(np.float32)
    with tf.Session() as sess:
        meta = tf.RunMetadata()
        yv, gv, g2v = sess.run([y, g, g2], {x: xv, p: True}, run_metadata=meta,
                               options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))
        kept = yv != 0
        assert 0.4 < kept.mean() < 0.6
        np.testing.assert_array_equal(gv != 0, kept)   # the forward's mask, not a second draw
        np.testing.assert_allclose(gv[kept], 6.0)
        np.testing.assert_allclose(g2v, 2 * yv * gv, rtol=1e-6)
        names = [ns.node_name for dev in meta.step_stats.dev_stats for ns in dev.node_stats]
        assert sum(name.endswith("RandomUniform") for name in names) == 1
        yv, gv = sess.run([y, g], {x: xv, p: False})
        np.testing.assert_array_equal(yv, xv * 2.0)
        np.testing.assert_array_equal(gv, np.full_like(xv, 2.0))


def test_cond_graph_def_library_holds_branches():
    p = tf.placeholder(tf.bool, [])
    tf.cond(p, lambda: tf.cond(p, lambda: tf.constant(1), lambda: tf.constant(2)), lambda: tf.constant(3))
    gd = graph_to_graph_def(tf.get_default_graph())   # the runtime's GraphDef holds the bodies
    assert len(gd.library) == 4
    node = [n for n in gd.node if n.op == "If"][0]
    assert node.attr["then_branch"] in gd.library and node.attr["else_branch"] in gd.library
    # and so does TF's GraphDef, as FunctionDefs
    proto = tf.get_default_graph().as_graph_def()
    library = {f.signature.name for f in proto.library.function}
    assert len(library) == 4
    node = [n for n in proto.node if n.op == "If"][0]
    assert node.attr["then_branch"].func.name in library and node.attr["else_branch"].func.name in library


# -- case -----------------------------------------------------------------------------------------
def test_case_in_order_with_default():
    x = tf.placeholder(tf.int32, [])
    r = tf.case([(tf.less(x, 0), lambda: tf.constant(-1)), (tf.less(x, 10), lambda: tf.constant(1))],
                default=lambda: tf.constant(100))
    with tf.Session() as sess:
        assert [sess.run(r, {x: v}) for v in (-5, 3, 50)] == [-1, 1, 100]


def test_case_exclusive_and_no_default():
    x = tf.placeholder(tf.int32, [])
    r = tf.case([(tf.less(x, 5), lambda: tf.constant(1)), (tf.less(x, 10), lambda: tf.constant(2))],
                exclusive=True)
    r2 = tf.case([(tf.equal(x, 1), lambda: tf.constant(10)), (tf.equal(x, 2), lambda: tf.constant(20))])
    with tf.Session() as sess:
        assert sess.run(r, {x: 7}) == 2
        with pytest.raises(tf.errors.InvalidArgumentError, match="exclusive=True: more than 1 conditions"):
            sess.run(r, {x: 3})
        assert sess.run(r2, {x: 1}) == 10 and sess.run(r2, {x: 2}) == 20
        with pytest.raises(tf.errors.InvalidArgumentError, match="None of conditions evaluated as True") as e:
            sess.run(r2, {x: 3})
        assert "case_assert" in str(e.value)


def test_case_argument_errors():
    with pytest.raises(TypeError, match="pred must be Tensor of type bool"):
        tf.case([(tf.constant(1), lambda: tf.constant(1))])
    with pytest.raises(TypeError, match="must be callable"):
        tf.case([(tf.constant(True), 3)])
    with pytest.raises(TypeError, match="list, tuple, or dict"):
        tf.case(3)


# -- while_loop -------------------------------------------------------------------------------------
def test_while_counting_loop():
    i, s = tf.while_loop(lambda i, s: i < 10, lambda i, s: (i + 1, s + i), [0, 0])
    assert i.op.type == "While" and i.dtype == tf.int32 and i.shape.as_list() == []
    assert run([i, s]) == [10, 45]
    single = tf.while_loop(lambda i: i < 5, lambda i: i + 2, [tf.constant(0)])
    assert isinstance(single, tf.Tensor) and run(single) == 6
    same = tf.while_loop(lambda i: i < 5, lambda i: i + 2, [0], return_same_structure=True)
    assert isinstance(same, list) and len(same) == 1


def test_while_nested_loop_vars_and_captures():
    k = tf.placeholder(tf.float32, [])
    out = tf.while_loop(lambda i, st: i < 3, lambda i, st: (i + 1, {"a": st["a"] * k, "b": (st["b"][0] + 1,)}),
                        [0, {"a": tf.constant(1.0), "b": (tf.constant(0),)}])
    with tf.Session() as sess:
        i, st = sess.run(out, {k: 2.0})
    assert i == 3 and st["a"] == 8.0 and st["b"] == (3,)


def test_while_accumulation_with_shape_invariant():
    i0 = tf.constant(0)
    acc0 = tf.zeros([0], tf.int32)
    _, acc = tf.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, tf.concat([a, tf.expand_dims(i * i, 0)], 0)),
                           [i0, acc0], shape_invariants=[i0.shape, tf.TensorShape([None])])
    assert acc.shape.as_list() == [None]
    np.testing.assert_array_equal(run(acc), [0, 1, 4, 9, 16])


def test_while_maximum_iterations():
    r = tf.while_loop(lambda i: i < 100, lambda i: i + 1, [0], maximum_iterations=7)
    r0 = tf.while_loop(lambda i: i < 100, lambda i: i + 1, [0], maximum_iterations=0)
    m = tf.placeholder(tf.int32, [])
    r3 = tf.while_loop(lambda i: i < 4, lambda i: i + 1, [0], maximum_iterations=m)
    with tf.Session() as sess:
        assert sess.run([r, r0]) == [7, 0]
        assert sess.run(r3, {m: 10}) == 4 and sess.run(r3, {m: 2}) == 2


def test_cond_inside_while_and_while_inside_cond():
    n = tf.placeholder(tf.int32, [])
    # Collatz steps: a cond in every iteration of a loop.
    steps = tf.while_loop(
        lambda x, c: x > 1,
        lambda x, c: (tf.cond(tf.equal(x % 2, 0), lambda: x // 2, lambda: 3 * x + 1), c + 1), [n, 0])[1]
    p = tf.placeholder(tf.bool, [])
    w = tf.cond(p, lambda: tf.while_loop(lambda i: i < n, lambda i: i + 3, [0]), lambda: tf.constant(-1))
    with tf.Session() as sess:
        assert sess.run(steps, {n: 6}) == 8
        assert sess.run(steps, {n: 27}) == 111
        assert sess.run(w, {p: True, n: 10}) == 12
        assert sess.run(w, {p: False, n: 10}) == -1


def test_while_errors():
    i = tf.constant(0)
    with pytest.raises(ValueError, match="enters the loop with shape \\(\\), but has shape \\(1,\\)"):
        tf.while_loop(lambda i: i < 10, lambda i: tf.expand_dims(i, 0), [i])
    with pytest.raises(ValueError, match="same number of elements"):
        tf.while_loop(lambda i: i < 10, lambda i: (i, i), [i])
    with pytest.raises(TypeError, match="LoopCond.*bool.*'badloop'"):
        tf.while_loop(lambda i: i, lambda i: i + 1, [i], name="badloop")
    with pytest.raises(ValueError, match="rank 0 but is rank 1.*'rankloop'"):
        tf.while_loop(lambda i: tf.constant([True]), lambda i: i + 1, [i], name="rankloop")
    with pytest.raises(ValueError, match="shape invariant specified for zeros"):
        tf.while_loop(lambda x: True, lambda x: x, [tf.zeros([2], name="zeros")],
                      shape_invariants=[tf.TensorShape([3])])
    with pytest.raises(ValueError, match="No loop variables provided"):
        tf.while_loop(lambda: True, lambda: 1, [])
    with pytest.raises(TypeError, match="cond must be callable"):
        tf.while_loop(3, lambda i: i, [i])
    with pytest.raises(ValueError, match="maximum_iterations must be a scalar"):
        tf.while_loop(lambda i: i < 3, lambda i: i + 1, [i], maximum_iterations=tf.constant([2]))
    with pytest.raises(TypeError, match="enters the loop with type int32 but has type float32.*'dtloop'"):
        tf.while_loop(lambda i: i < 3, lambda i: tf.cast(i, tf.float32), [i], name="dtloop")


def test_while_runtime_error_names_inner_op():
    lim = tf.placeholder(tf.int32, [])
    r = tf.while_loop(lambda i: i < lim, lambda i: i + tf.identity(tf.placeholder(tf.int32, [], name="missing")),
                      [0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="missing"):
        run(r, {lim: 3})


# -- group / tuple / no_op / identity_n ---------------------------------------------------------------
def test_group_tuple_noop_identity_n():
    v = tf.Variable(0)
    a = tf.assign_add(v, 1)
    b = tf.assign_add(v, 10)
    g = tf.group(a, [b], name="grp")
    assert g.type == "NoOp" and g.name == "grp" and {a.op, b.op} <= set(g.control_inputs)
    assert tf.group().name == "group_deps" and tf.no_op().type == "NoOp"
    x = tf.constant([1, 2])
    t1, t2 = tf.tuple([x, tf.constant(3.0)])
    assert t1.op.type == "Identity" and t1.shape.as_list() == [2] and t1.op.control_inputs
    n1, n2 = tf.identity_n([x, tf.constant(2.5)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(g) is None
        assert sess.run(v) == 11
        np.testing.assert_array_equal(sess.run(t1), [1, 2])
        assert sess.run(n2) == 2.5
    with pytest.raises(TypeError, match="tf.group"):
        tf.group(3)


def test_functional_op_reading_a_variable_is_colocated_with_it():
    v = tf.Variable(1.0, name="v")
    p = tf.placeholder(tf.bool, [])
    r = tf.cond(p, lambda: v * 2.0, lambda: tf.constant(0.0))
    assert "loc:@v" in r.op.get_attr("_class")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(r, {p: True}) == 2.0


def test_while_reads_a_read_only_variable_once_before_the_loop():
    v = tf.Variable(1.0, name="v")
    w = tf.while_loop(lambda i: i < 3.0, lambda i: i + v, [tf.constant(0.0)],
                      shape_invariants=[tf.TensorShape(None)])
    assert not [t for t in w.op.inputs if t.dtype == tf.resource] and "_class" not in w.op.attrs
    read = [t.op for t in w.op.inputs if t.op.type == "ReadVariableOp"]
    assert read and read[0].get_attr("_class") == ["loc:@v"]
    # a variable the body also writes stays a handle, and the loop runs where it lives
    counter = tf.Variable(0.0, name="counter")

    def count(i):
        with tf.control_dependencies([tf.assign_add(counter, 1.0)]):
            return i + 1
    u = tf.while_loop(lambda i: i < 3, count, [0])
    assert [t for t in u.op.inputs if t.dtype == tf.resource] and "loc:@counter" in u.op.get_attr("_class")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(w) == 3.0
        assert sess.run(u) == 3 and sess.run(counter) == 3.0


def test_variable_read_inside_body_keeps_static_shape():
    v = tf.Variable(np.zeros([2, 3], np.float32))
    r = tf.cond(tf.constant(True), lambda: v * 2.0, lambda: tf.zeros([2, 3]))
    assert r.shape.as_list() == [2, 3]
    w = tf.while_loop(lambda i: i < 3.0, lambda i: i + v[0, 0], [tf.constant(0.0)])
    assert w.shape.as_list() == []


def test_debugging_namespace():
    from tensorweave import debugging
    assert debugging.assert_equal is tf.assert_equal and debugging.Assert is tf.Assert
