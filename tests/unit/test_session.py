"""The local Session: fetch structures, feeds, errors, defaults, config."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import tensorweave as tf


def test_fetch_structures_are_preserved():
    a = tf.constant(1, name="a")
    b = tf.constant([2.0, 3.0], name="b")
    Pair = collections.namedtuple("Pair", ["x", "y"])
    od = collections.OrderedDict([("z", a), ("w", b)])
    with tf.Session() as sess:
        out = sess.run({"one": a, "pair": Pair(a, [b, (a,)]), "od": od, "name": "a:0", "op": a.op})
    assert out["one"] == 1 and isinstance(out["one"], np.int32)
    assert isinstance(out["pair"], Pair)
    assert out["pair"].x == 1
    np.testing.assert_array_equal(out["pair"].y[0], [2.0, 3.0])
    assert isinstance(out["pair"].y, list) and isinstance(out["pair"].y[1], tuple)
    assert isinstance(out["od"], collections.OrderedDict) and list(out["od"]) == ["z", "w"]
    assert out["name"] == 1
    assert out["op"] is None


def test_a_fetch_structure_run_again_is_mapped_again_when_it_changes():
    # Session.run keeps the mapping of the plain structures a training loop repeats; every run
    # still gets its own structure back: new keys, other tensors, list vs tuple, equal keys of
    # another type, and a tensor made unfetchable since
    a, b = tf.constant(1, name="a"), tf.constant(2.0, name="b")
    step = tf.Variable(0, name="step")
    bump = tf.assign_add(step, 1)
    with tf.Session() as sess:
        sess.run(step.initializer)
        for i in range(1, 4):
            assert sess.run({"caller": [bump, a], "hook": b}) == {"caller": [i, 1], "hook": 2.0}
        assert sess.run({"caller": [bump, a], "hook": b, "more": "a:0"}) == {"caller": [4, 1], "hook": 2.0, "more": 1}
        assert sess.run({"caller": [bump, b], "hook": a}) == {"caller": [5, 2.0], "hook": 1}
        out = sess.run({"caller": (bump, a)})
        assert isinstance(out["caller"], tuple) and out["caller"] == (6, 1)
        assert list(sess.run({1: a})) == [1] and type(next(iter(sess.run({True: a})))) is bool
        assert sess.run([a, b]) == [1, 2.0] and sess.run([b, a]) == [2.0, 1]
        sess.graph.prevent_fetching(b.op)
        with pytest.raises(ValueError, match="not fetchable"):
            sess.run([a, b])


def test_fetch_value_types():
    with tf.Session() as sess:
        s = sess.run(tf.constant("Hello, distributed TensorFlow!"))
        arr = sess.run(tf.constant(["a", "bc"]))
        f = sess.run(tf.constant(1.5))
        i64 = sess.run(tf.constant(3, dtype=tf.int64))
        b = sess.run(tf.constant(True))
    assert s == b"Hello, distributed TensorFlow!"
    assert arr.dtype == object and arr.tolist() == [b"a", b"bc"]
    assert isinstance(f, np.float32) and f == 1.5
    assert isinstance(i64, np.int64)
    assert isinstance(b, np.bool_)


def test_bad_fetches():
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="invalid type"):
            sess.run(None)
        with pytest.raises(TypeError):
            sess.run(3)
        with pytest.raises(ValueError):
            sess.run("nope:0")
    assert tf.Session().run([]) == []


def test_feeds_checked_against_placeholder():
    x = tf.placeholder(tf.float32, [3], name="x")
    y = tf.identity(x)
    with tf.Session() as sess:
        out = sess.run(y, {x: [1, 2, 3]})
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, [1, 2, 3])
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(4,\) for Tensor 'x:0'"):
            sess.run(y, {x: [1, 2, 3, 4]})
        with pytest.raises(TypeError, match="cannot be a tf.Tensor"):
            sess.run(y, {x: tf.constant([1.0, 2.0, 3.0])})
        with pytest.raises(tf.errors.InvalidArgumentError, match="must feed a value for placeholder tensor 'x'"):
            sess.run(y)
        np.testing.assert_array_equal(sess.run(y, {"x:0": np.ones(3)}), np.ones(3))


def test_feed_int_out_of_range():
    x = tf.placeholder(tf.int32, [], name="small")
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="not compatible"):
            sess.run(x, {x: 2 ** 40})


def test_feeding_a_non_placeholder_cuts_the_graph():
    x = tf.placeholder(tf.int32, [], name="x")
    y = x + 1
    z = y + 1
    with tf.Session() as sess:
        assert sess.run(z, {y: 10}) == 11
        assert sess.run([y, z], {y: 10}) == [10, 11]


def test_placeholder_with_default():
    d = tf.placeholder_with_default(tf.constant([1, 2]), shape=[None], name="d")
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(d), [1, 2])
        np.testing.assert_array_equal(sess.run(d, {d: [5, 6, 7]}), [5, 6, 7])


def test_closed_session_and_context_manager():
    c = tf.constant(1)
    sess = tf.Session()
    sess.close()
    with pytest.raises(RuntimeError, match="closed"):
        sess.run(c)


def test_default_session_eval_and_run():
    c = tf.constant(5)
    with pytest.raises(ValueError, match="No default session"):
        c.eval()
    with tf.Session() as sess:
        assert tf.get_default_session() is sess
        assert c.eval() == 5
        c.op.run()
    assert tf.get_default_session() is None
    sess = tf.Session()
    with sess.as_default():
        assert c.eval() == 5
    assert c.eval(session=sess) == 5
    sess.close()


def test_interactive_session():
    c = tf.constant(2) + 1
    sess = tf.InteractiveSession()
    try:
        assert c.eval() == 3
    finally:
        sess.close()
    assert tf.get_default_session() is None


def test_session_on_explicit_graph():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(4)
    with tf.Session(graph=g) as sess:
        assert sess.graph is g
        assert sess.run(c) == 4
    with tf.Session() as other:
        with pytest.raises(ValueError):
            other.run(c)


def test_make_callable():
    x = tf.placeholder(tf.int32, [])
    y = x + 1
    with tf.Session() as sess:
        f = sess.make_callable([y], feed_list=[x])
        assert f(1) == [2]
        assert f(41) == [42]
        with pytest.raises(ValueError):
            f()


def test_local_session_rejects_remote_devices_unless_soft():
    with tf.device("/job:ps/task:0"):
        c = tf.constant(1, name="pinned")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot assign a device for operation pinned"):
            sess.run(c)
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        assert sess.run(c) == 1


def test_config_protos_have_tf_field_names():
    cfg = tf.ConfigProto(device_filters=["/job:ps"], allow_soft_placement=True, log_device_placement=False,
                         operation_timeout_in_ms=5000, intra_op_parallelism_threads=2,
                         inter_op_parallelism_threads=2)
    cfg.gpu_options.allow_growth = True
    assert cfg.gpu_options.allow_growth and cfg.device_filters == ["/job:ps"]
    with pytest.raises(ValueError):
        tf.ConfigProto(no_such_field=1)
    with pytest.raises(AttributeError):
        cfg.no_such_field = 1
    opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, timeout_in_ms=100)
    assert opts.trace_level == 3
    tf.GPUOptions(per_process_gpu_memory_fraction=0.5)
    tf.GraphOptions()


def test_log_device_placement_prints_devices(capfd):
    c = tf.constant(1, name="logged")
    with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as sess:
        sess.run(c + 1)
    err = capfd.readouterr().err
    assert "logged: (Const): /job:localhost/replica:0/task:0" in err
    assert "add: (AddV2): /job:localhost/replica:0/task:0" in err


def test_full_trace_fills_step_stats():
    x = tf.constant(1)
    y = x + 1
    meta = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    names = [n.node_name for d in meta.step_stats.dev_stats for n in d.node_stats]
    assert "add" in names


def test_errors_carry_code_op_and_message():
    err = tf.errors.InvalidArgumentError(None, "myop", "bad")
    assert err.error_code == tf.errors.INVALID_ARGUMENT == 3
    assert err.op == "myop" and err.message == "bad" and str(err) == "bad"
    assert isinstance(err, tf.errors.OpError)
    codes = {tf.errors.CancelledError: 1, tf.errors.UnknownError: 2, tf.errors.DeadlineExceededError: 4,
             tf.errors.NotFoundError: 5, tf.errors.AlreadyExistsError: 6, tf.errors.PermissionDeniedError: 7,
             tf.errors.ResourceExhaustedError: 8, tf.errors.FailedPreconditionError: 9,
             tf.errors.AbortedError: 10, tf.errors.OutOfRangeError: 11, tf.errors.UnimplementedError: 12,
             tf.errors.InternalError: 13, tf.errors.UnavailableError: 14, tf.errors.DataLossError: 15,
             tf.errors.UnauthenticatedError: 16}
    for cls, code in codes.items():
        assert cls(None, None, "m").error_code == code
        assert tf.errors.exception_type_from_error_code(code) is cls


def test_compat_v1_is_the_same_namespace():
    import tensorweave.compat.v1 as v1
    assert v1 is tf
    assert tf.compat.v1 is tf
    tf.disable_eager_execution()
    tf.disable_v2_behavior()
    assert not tf.executing_eagerly()


def test_separate_sessions_plan_independently():
    x = tf.placeholder(tf.float32, [])
    y = x + 1.0
    s1, s2 = tf.Session(), tf.Session()
    assert s1.run(y, {x: 1.0}) == 2.0
    assert s2.run(y, {x: 2.0}) == 3.0
    s1.close()
    s2.close()


def test_local_trace_to_chrome_timeline():
    import json

    from tensorweave.python.client import timeline
    x = tf.constant(1, name="x")
    y = tf.add(x, 2, name="y")
    meta = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    trace = json.loads(timeline.Timeline(meta.step_stats).generate_chrome_trace_format())
    names = {e.get("args", {}).get("name") for e in trace["traceEvents"] if e.get("ph") == "X"}
    assert "y" in names


def test_feeding_a_constant_that_is_also_a_control_input():
    c = tf.constant(1.0, name="c")
    y = c + 1.0
    other = tf.constant(7.0, name="other")
    with tf.control_dependencies([c]):
        z = tf.identity(y)
    with tf.Session() as sess:
        assert sess.run([z, y, other], {c: 5.0}) == [6.0, 6.0, 7.0]


def _ran(sess, fetches, feed=None) -> set:
    meta = tf.RunMetadata()
    sess.run(fetches, feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    return {ns.node_name for dev in meta.step_stats.dev_stats for ns in dev.node_stats}


def test_stateless_ops_read_only_through_control_edges_do_not_run():
    # As TF's dependency optimizer: nobody reads their values, so computing them changes nothing.
    x = tf.placeholder(tf.float32, [2, 2])
    square = tf.square(x, name="square")
    exp = tf.exp(square, name="exp")   # read by nothing but a control edge, and so is square
    total = tf.reduce_sum(x, name="total")
    with tf.control_dependencies([exp]):
        out = tf.identity(total, name="out")
    with tf.Session() as sess:
        ran = _ran(sess, out, {x: np.ones((2, 2))})
        assert {"total", "out"} <= ran and not {"square", "exp"} & ran
        assert {"square", "exp", "out"} <= _ran(sess, [out, exp], {x: np.ones((2, 2))})   # fetched: it runs


def test_control_inputs_that_are_skipped_raise_nothing_but_an_unfed_placeholder_does():
    # Recorded from TensorFlow 2.21 (tf.compat.v1): 9, then "must feed" for the square's placeholder.
    w, z = tf.placeholder(tf.float32, [None]), tf.placeholder(tf.float32, [])
    with tf.control_dependencies([tf.reshape(w, [3])]):   # fails if it runs on 2 elements
        nine = tf.constant(9)
    with tf.control_dependencies([tf.square(z)]):
        eight = tf.constant(8)
    with tf.Session() as sess:
        assert sess.run(nine, {w: [1.0, 2.0]}) == 9
        with pytest.raises(tf.errors.InvalidArgumentError, match="Placeholder"):
            sess.run(eight)


def test_stateful_ops_and_their_inputs_run_as_control_inputs():
    v = tf.Variable(0.0)
    x = tf.placeholder(tf.float32, [])
    bump = tf.assign_add(v, tf.square(x, name="square"))
    check = tf.debugging.assert_positive(x, message="x must be positive")
    with tf.control_dependencies([bump, check]):
        out = tf.identity(x)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert "square" in _ran(sess, out, {x: 3.0})
        assert sess.run(v) == 9.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="x must be positive"):
            sess.run(out, {x: -1.0})


def test_training_skips_the_input_gradient_nobody_reads():
    # minimize() gates each op's gradients with a tuple, so the first conv's input gradient is a
    # control input only: TF never computes it, and neither may we (it is a whole conv's work).
    images = tf.placeholder(tf.float32, [2, 6, 6, 3])
    w = tf.Variable(tf.ones([3, 3, 3, 4]) * 0.1)
    loss = tf.reduce_sum(tf.nn.conv2d(images, w, [1, 1, 1, 1], "SAME") ** 2)
    train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
    rng = np.random.RandomState(0)
    feed = {images: rng.rand(2, 6, 6, 3).astype(np.float32)}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        ran = _ran(sess, train, feed)
        types = {op.type for op in sess.graph.get_operations() if op.name in ran}
        assert "Conv2DBackpropFilter" in types and "Conv2DBackpropInput" not in types
        # the update is still the full gradient step
        before = sess.run(w)
        grad = sess.run(tf.gradients(loss, w)[0], feed)
        sess.run(train, feed)
        np.testing.assert_allclose(sess.run(w), before - 0.01 * grad, rtol=1e-5)
