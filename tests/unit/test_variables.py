"""tf.Variable: naming, lifecycle, updates, errors, collections and per-session state."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf


def test_names_and_properties(graph):
    v = tf.Variable(1.0)
    v1 = tf.Variable([1, 2], name="w")
    v2 = tf.Variable(2.0)
    assert v.name == "Variable:0" and v2.name == "Variable_1:0" and v1.name == "w:0"
    assert v.op.name == "Variable" and v.op.type == "VarHandleOp"
    assert v.initializer.name == "Variable/Assign"
    assert v.initial_value.name == "Variable/initial_value:0"
    assert v.dtype == tf.float32 and v1.dtype == tf.int32
    assert v.shape == tf.TensorShape([]) and v1.get_shape().as_list() == [2]
    assert v.graph is graph
    with tf.name_scope("scope"):
        s = tf.Variable(tf.zeros([3]), name="v")
    assert s.name == "scope/v:0" and s.initializer.name == "scope/v/Assign"
    assert repr(s) == "<tf.Variable 'scope/v:0' shape=(3,) dtype=float32>"


def test_initialize_read_and_fetch(graph):
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(v)
        np.testing.assert_array_equal(out, [[1, 2], [3, 4]])
        assert out.dtype == np.float32
        np.testing.assert_array_equal(v.eval(), [[1, 2], [3, 4]])
        np.testing.assert_array_equal(sess.run(v.value()), out)
        np.testing.assert_array_equal(sess.run(v.read_value()), out)
        np.testing.assert_array_equal(sess.run(tf.convert_to_tensor(v)), out)


def test_callable_initial_value_and_dtype(graph):
    v = tf.Variable(lambda: tf.constant([1, 2, 3]), dtype=tf.int32, name="c")
    assert v.initial_value.name == "c/Initializer/Const:0"
    assert v.initial_value.op.get_attr("_class") == ["loc:@c"]
    d = tf.Variable(3, dtype=tf.float64)
    assert d.dtype == tf.float64
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(v), [1, 2, 3])
        assert sess.run(d) == 3.0 and sess.run(d).dtype == np.float64


def test_assign_family(graph):
    v = tf.Variable([1.0, 2.0])
    a = v.assign([5.0, 6.0])
    aa = v.assign_add([1.0, 1.0])
    s = tf.assign_sub(v, [0.5, 0.5])
    op = v.assign([0.0, 0.0], read_value=False)
    assert isinstance(a, tf.Tensor) and a.name == "Assign:0"
    assert aa.name == "AssignAdd:0" and s.name == "AssignSub:0"
    assert isinstance(op, tf.Operation) and op.type == "AssignVariableOp"
    named = tf.assign(v, [9.0, 9.0], name="update")
    assert named.name == "update:0"
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(a), [5, 6])
        np.testing.assert_array_equal(sess.run(aa), [6, 7])
        np.testing.assert_array_equal(sess.run(aa), [7, 8])
        np.testing.assert_array_equal(sess.run(s), [6.5, 7.5])
        assert sess.run(op) is None
        np.testing.assert_array_equal(sess.run(v), [0, 0])
        np.testing.assert_array_equal(sess.run(tf.assign_add(v, [1.0, 2.0])), [1, 2])
        np.testing.assert_array_equal(sess.run(named), [9, 9])


def test_scatter_family(graph):
    v = tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2))
    up = tf.scatter_update(v, [0, 2], [[10.0, 11.0], [12.0, 13.0]])
    add = tf.scatter_add(v, [1, 1], [[1.0, 1.0], [2.0, 2.0]])  # duplicates accumulate
    sub = tf.scatter_sub(v, [3], [[1.0, 2.0]])
    method = v.scatter_update(tf.IndexedSlices(tf.constant([[0.0, 0.0]]), tf.constant([3])))
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(up), [[10, 11], [2, 3], [12, 13], [6, 7]])
        np.testing.assert_array_equal(sess.run(add), [[10, 11], [5, 6], [12, 13], [6, 7]])
        np.testing.assert_array_equal(sess.run(sub), [[10, 11], [5, 6], [12, 13], [5, 5]])
        np.testing.assert_array_equal(sess.run(method)[3], [0, 0])
        bad = tf.scatter_update(v, [7], [[1.0, 1.0]], name="bad_scatter")
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad_scatter") as e:
            sess.run(bad)
        assert "indices[0] = 7 is not in [0, 4)" in str(e.value)


def test_sparse_read_and_gather(graph):
    v = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3))
    rows = v.sparse_read([3, 0, 3])
    assert rows.shape.as_list() == [3, 3] and rows.op.type == "ResourceGather"
    assert rows.op.get_attr("_class") == ["loc:@Variable"]
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(rows), np.arange(12).reshape(4, 3)[[3, 0, 3]])


def test_uninitialized_read_names_variable(graph):
    v = tf.Variable(1.0, name="weights")
    y = v + 1.0
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError) as e:
            sess.run(y)
        assert "Attempting to use uninitialized value weights" in str(e.value)
        assert "ReadVariableOp" in str(e.value)
        with pytest.raises(tf.errors.FailedPreconditionError, match="weights"):
            sess.run(v.assign_add(1.0))


def test_assign_shape_errors(graph):
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(ValueError, match="incompatible"):
        v.assign([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="int32"):
        v.assign(tf.constant([1, 2]))  # dtype mismatch
    p = tf.placeholder(tf.float32)
    a = tf.assign(v, p, name="assign_fed")
    add = v.assign_add(p, name="add_fed")
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match="assign_fed") as e:
            sess.run(a, {p: [1.0, 2.0, 3.0]})
        assert "wrong shape" in str(e.value)
        with pytest.raises(tf.errors.InvalidArgumentError, match="add_fed"):
            sess.run(add, {p: [1.0]})
        np.testing.assert_array_equal(sess.run(v), [1, 2])


def test_validate_shape_false_allows_reshape(graph):
    v = tf.Variable([1.0, 2.0], validate_shape=False)
    assert v.shape.ndims is None
    p = tf.placeholder(tf.float32)
    a = tf.assign(v, p, validate_shape=False)
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(a, {p: [[1.0], [2.0], [3.0]]}), [[1], [2], [3]])


def test_constructor_errors(graph):
    with pytest.raises(ValueError, match="initial_value must be specified"):
        tf.Variable()
    with pytest.raises(ValueError, match="must be a list, tuple, or set"):
        tf.Variable(1.0, collections="foo")
    with pytest.raises(ValueError, match="must have a shape specified"):
        tf.Variable(tf.placeholder(tf.float32))
    with pytest.raises(ValueError, match="constraint"):
        tf.Variable(1.0, constraint=3)


def test_collections(graph):
    a = tf.Variable(1.0)
    b = tf.Variable(1.0, trainable=False)
    c = tf.Variable(1.0, collections=[tf.GraphKeys.LOCAL_VARIABLES])
    d = tf.Variable(1.0, collections=["custom"], trainable=True)
    assert tf.global_variables() == [a, b] == tf.all_variables()
    assert tf.trainable_variables() == [a, c, d]  # trainable defaults to True, as in TF
    assert tf.local_variables() == [c]
    assert tf.get_collection("custom") == [d]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert list(sess.run(tf.report_uninitialized_variables())) == [b"Variable_2"]
        sess.run(tf.local_variables_initializer())
        assert sess.run(tf.report_uninitialized_variables()).shape == (0,)
        assert sess.run(tf.is_variable_initialized(d)) == False  # noqa: E712
        sess.run(tf.variables_initializer([d]))
        assert sess.run(tf.is_variable_initialized(d)) == True  # noqa: E712


def test_initializer_op_names(graph):
    tf.Variable(1.0)
    g_init = tf.global_variables_initializer()
    l_init = tf.local_variables_initializer()
    assert g_init.name == "init" and l_init.name == "init_1"
    assert tf.variables_initializer([], name="empty").name == "empty"
    assert tf.initialize_all_variables().name == "init_2"


def test_sessions_have_separate_state(graph):
    v = tf.Variable(0.0)
    inc = v.assign_add(1.0)
    s1, s2 = tf.Session(), tf.Session()
    try:
        s1.run(v.initializer)
        s2.run(v.initializer)
        s1.run(inc)
        s1.run(inc)
        assert s1.run(v) == 2.0
        assert s2.run(v) == 0.0
    finally:
        s1.close()
        s2.close()


def test_control_dependencies_order_fresh_reads(graph):
    v = tf.Variable(1.0)
    upd = v.assign(5.0)
    with tf.control_dependencies([upd]):
        after = v + 0.0
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(after) == 5.0


def test_operators_delegate_to_value(graph):
    v = tf.Variable([1.0, 2.0])
    w = tf.Variable([[1.0], [1.0]])
    row = tf.Variable([[1.0, 2.0]])
    exprs = [v + 1, 1 - v, v * v, -v, v / 2.0, v < 1.5, row @ w, v[1]]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(exprs)
    np.testing.assert_allclose(out[0], [2, 3])
    np.testing.assert_allclose(out[1], [0, -1])
    np.testing.assert_allclose(out[2], [1, 4])
    np.testing.assert_allclose(out[3], [-1, -2])
    np.testing.assert_allclose(out[4], [0.5, 1])
    np.testing.assert_array_equal(out[5], [True, False])
    np.testing.assert_allclose(out[6], [[3]])
    assert out[7] == 2.0


def test_python_protocol_errors(graph):
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(TypeError, match="not iterable"):
        iter(v)
    with pytest.raises(TypeError):
        bool(v)
    with pytest.raises(ValueError, match="Incompatible type conversion"):
        tf.convert_to_tensor(v, dtype=tf.int32)


def test_initialized_value_and_load(graph):
    a = tf.Variable([1.0, 2.0])
    b = tf.Variable(a.initialized_value() * 2.0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(b), [2, 4])
        a.load([7.0, 8.0], sess)
        np.testing.assert_array_equal(sess.run(a), [7, 8])


def test_count_up_to(graph):
    v = tf.Variable(0, dtype=tf.int64)
    c = v.count_up_to(2)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert [sess.run(c), sess.run(c)] == [0, 1]
        with pytest.raises(tf.errors.OutOfRangeError, match="Reached limit of 2"):
            sess.run(c)


def test_colocation_and_device(graph):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0)
    with tf.device("/job:worker/task:0"):
        y = v * 2.0
    read = y.op.inputs[0].op
    assert v.device == "/job:ps/task:0"
    assert read.type == "ReadVariableOp" and read.device == "/job:ps/task:0"
    assert read.get_attr("_class") == ["loc:@Variable"]
    assert y.op.device == "/job:worker/task:0"


def test_gradient_through_variable(graph):
    v = tf.Variable([1.0, 2.0, 3.0])
    loss = tf.reduce_sum(v * v)
    (g,) = tf.gradients(loss, [v])
    emb = tf.Variable(np.ones((5, 2), np.float32))
    rows = tf.reduce_sum(emb.sparse_read([1, 3, 1]))
    (ge,) = tf.gradients(rows, [emb])
    assert isinstance(ge, tf.IndexedSlices)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(g), [2, 4, 6])
        vals, idx = sess.run([ge.values, ge.indices])
        np.testing.assert_array_equal(idx, [1, 3, 1])
        np.testing.assert_allclose(vals, np.ones((3, 2)))


def test_variable_def_round_trip(graph):
    v = tf.Variable(3.0, name="rt")
    d = v.to_proto()
    assert d.variable_name == "rt:0" and d.initializer_name == "rt/Assign"
    w = tf.Variable.from_proto(d)
    assert w.name == "rt:0" and w.initializer is v.initializer
    with tf.Session() as sess:
        sess.run(w.initializer)
        assert sess.run(w) == 3.0


# -- scatter_mul/div/max/min and scatter_nd_* (values recorded from TensorFlow) -----------------
def _run_seq(v, ops):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        for o in ops:
            s.run(o)
        return s.run(v)


def test_scatter_mul_div_max_min(graph):
    v = tf.Variable([1., 2., 3.])
    out = _run_seq(v, [tf.scatter_mul(v, [0, 0], [9., 2.]), tf.scatter_div(v, [1], [4.]),
                       tf.scatter_max(v, [2, 1], [10., -5.]), tf.scatter_min(v, [0], [-1.])])
    np.testing.assert_allclose(out, [-1., 0.5, 10.])
    w = tf.Variable([7, -7, 3])
    np.testing.assert_array_equal(_run_seq(w, [tf.scatter_div(w, [0, 1], [2, 2]), tf.scatter_mul(w, [2], [5])]),
                                  [3, -3, 15])   # integer division truncates, as TF's kernel
    m = tf.Variable([[1., 2.], [3., 4.]])
    np.testing.assert_allclose(_run_seq(m, [tf.scatter_mul(m, [1], [[2., 3.]]), tf.scatter_max(m, [0], [[5., 0.]])]),
                               [[5., 2.], [6., 12.]])
    r = tf.scatter_mul(v, [1], [5.])
    assert r.dtype == tf.float32 and r.shape.as_list() == [3]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        np.testing.assert_allclose(s.run(r), [1., 10., 3.])
        with pytest.raises(tf.errors.InvalidArgumentError, match="ResourceScatterMul"):
            s.run(tf.scatter_mul(v, [3], [5.]))


def test_scatter_nd_update_add_sub(graph):
    v = tf.Variable([1., 2., 3., 4.])
    out = _run_seq(v, [tf.scatter_nd_update(v, [[0], [2]], [9., 8.]), tf.scatter_nd_add(v, [[1], [1]], [5., 1.]),
                       tf.scatter_nd_sub(v, [[3]], [1.])])
    np.testing.assert_allclose(out, [9., 8., 8., 3.])
    m = tf.Variable(np.zeros((3, 2), np.float32))
    out = _run_seq(m, [tf.scatter_nd_update(m, [[1]], [[1., 2.]]), tf.scatter_nd_add(m, [[0, 1], [2, 0]], [5., 6.])])
    np.testing.assert_allclose(out, [[0., 5.], [1., 2.], [6., 0.]])
    w = tf.Variable([1., 2., 3.])
    out = _run_seq(w, [w.scatter_nd_update([[0]], [7.]), w.scatter_nd_add([[1]], [1.]), w.scatter_nd_sub([[2]], [1.])])
    np.testing.assert_allclose(out, [7., 3., 2.])
    with pytest.raises(ValueError, match="ResourceScatterNdUpdate"):
        tf.scatter_nd_update(v, [[1]], [5., 6.])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match="ResourceScatterNdUpdate"):
            s.run(tf.scatter_nd_update(v, [[7]], [5.]))


# -- sparse updates write their rows into the variable (TF's copy-on-write) ------------------------
def test_a_sparse_update_allocates_its_rows_not_a_copy_of_the_variable(graph, traced_peak):
    rows, width = 16_384, 512   # 32 MiB
    v = tf.Variable(tf.zeros([rows, width]))
    ids = tf.placeholder(tf.int32, [8])
    scatter = tf.scatter_add(v, ids, tf.ones([8, width])).op   # (the op alone: a fetched value is a copy)
    nd = tf.scatter_nd_sub(v, tf.reshape(ids, [8, 1]), tf.ones([8, width])).op
    sgd = tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(tf.nn.embedding_lookup(v, ids)))
    picked = np.array([3, 5, 5, 700, 9_000, 16_383, 0, 1], np.int32)
    with tf.Session() as sess:
        sess.run(v.initializer)
        for op in (scatter, nd, sgd):
            sess.run(op, {ids: picked})   # (the first update after a read may copy: the initializer's value)
            assert traced_peak(lambda: sess.run(op, {ids: picked})) < rows * width * 4 // 8, op.name
        got = sess.run(v)
    want = np.zeros([rows, width], np.float32)
    for _ in range(2):
        np.add.at(want, picked, 1.0)
        np.subtract.at(want, picked, 1.0)
        np.add.at(want, picked, -0.5)
    np.testing.assert_array_equal(got, want)


def test_a_sparse_update_after_a_whole_read_in_its_step_writes_in_place(graph, traced_peak):
    """From its second run, the step lets go of the value read once its last reader has run
    (runtime/executor.py), so the update that follows it in the same step writes its rows into
    the variable; the read's reader saw the value before the update."""
    rows, width = 16_384, 512   # 32 MiB
    v = tf.Variable(tf.ones([rows, width]))
    total = tf.reduce_sum(v.read_value())
    with tf.control_dependencies([total]):
        scatter = tf.scatter_add(v, [3, 5], tf.ones([2, width])).op
    config = tf.ConfigProto(inter_op_parallelism_threads=1, use_per_session_threads=True)   # (the serial run)
    with tf.Session(config=config) as sess:
        sess.run(v.initializer)
        assert sess.run([total, scatter])[0] == rows * width   # (the first run shows the plan the values' sizes)
        for k in (1, 2):
            totals = []
            assert traced_peak(lambda: totals.append(sess.run([total, scatter])[0])) < rows * width * 4 // 8
            assert totals == [rows * width + 2 * width * k]
        np.testing.assert_array_equal(sess.run(v)[[0, 3, 5]], [[1] * width, [4] * width, [4] * width])


def test_a_value_read_before_a_sparse_update_keeps_its_numbers(graph):
    v = tf.Variable(tf.zeros([4, 3]))
    before = v.read_value()
    with tf.control_dependencies([before]):
        scatter = tf.scatter_add(v, [1, 2], tf.ones([2, 3]))
    sgd = tf.train.GradientDescentOptimizer(1.0).minimize(tf.reduce_sum(tf.gather(v, [0])))
    with tf.Session() as sess:
        sess.run(v.initializer)
        held = sess.run(v)   # a fetched value is the user's: no later update writes into it
        same_step, _ = sess.run([before, scatter])
        sess.run(sgd)
        np.testing.assert_array_equal(held, np.zeros([4, 3]))
        np.testing.assert_array_equal(same_step, np.zeros([4, 3]))
        np.testing.assert_array_equal(sess.run(v), [[-1] * 3, [1] * 3, [1] * 3, [0] * 3])


def test_reads_beside_sparse_updates_see_whole_values(graph):
    """A read on another thread gets the value before an update or after it, never one half
    written: the update writes into the array only while no one holds it, and readers wait."""
    import threading
    rows, width = 4_096, 256
    v = tf.Variable(tf.zeros([rows, width]))
    fill = tf.placeholder(tf.float32, [])
    every_row = np.arange(rows, dtype=np.int32)
    update = tf.scatter_update(v, every_row, tf.fill([rows, width], fill))
    read = v.read_value()
    torn, stop = [], threading.Event()
    with tf.Session() as sess:
        sess.run(v.initializer)

        def reader():
            while not stop.is_set():
                a = sess.run(read)
                if not (a == a[0, 0]).all():
                    torn.append(np.unique(a))

        threads = [threading.Thread(target=reader) for _ in range(2)]
        for t in threads:
            t.start()
        try:
            for k in range(1, 150):
                sess.run(update, {fill: float(k)})
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert sess.run(read)[0, 0] == 149.0
    assert not torn, f"reads saw values half written: {torn[:3]}"


def test_sparse_updates_from_two_threads_lose_nothing(graph):
    """Two sessions' steps updating the same rows at once (Hogwild, use_locking=False): every
    step's rows land (each sparse update holds the variable's lock while it writes)."""
    import threading
    v = tf.Variable(tf.zeros([50_000, 64]))
    ids = tf.constant(np.arange(0, 50_000, 7, dtype=np.int32))
    train = tf.train.GradientDescentOptimizer(1.0).minimize(tf.reduce_sum(tf.nn.embedding_lookup(v, ids)))
    with tf.Session() as sess:
        sess.run(v.initializer)

        def steps():
            for _ in range(60):
                sess.run(train)
        threads = [threading.Thread(target=steps) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        got = sess.run(v)
    want = np.zeros([50_000, 64], np.float32)
    want[::7] = -120.0
    np.testing.assert_array_equal(got, want)
