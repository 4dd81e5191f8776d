"""Fusion of elementwise trees (runtime/fusion.py): fused and unfused steps give the same bits,
and what must stay unfused (fetched or control-read intermediates, other devices) does."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import denormals
from tensorweave.ops.helpers import make_op

_SPECIAL = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-45, -1e-45, 3.4e38, -3.4e38, 1.0, -1.0, 0.5, 7.0]


def _config(jit_level: int):
    return tf.ConfigProto(graph_options=tf.GraphOptions(
        optimizer_options=tf.OptimizerOptions(global_jit_level=jit_level)))


def _run_both(fetches, feeds: dict, trace: bool = False):
    """(fused values, unfused values, the node names a traced fused step reports)."""
    out = []
    for level in (tf.OptimizerOptions.DEFAULT, tf.OptimizerOptions.OFF):
        with tf.Session(config=_config(level)) as sess:
            out.append(sess.run(fetches, feeds))
    with tf.Session() as sess:
        meta = tf.RunMetadata()
        sess.run(fetches, feeds, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    names = {ns.node_name for dev in meta.step_stats.dev_stats for ns in dev.node_stats}
    return out[0], out[1], names


def _same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _same_values(a, b) -> bool:
    """The same bits, except that a NaN may be another NaN: when both operands of an op are NaN,
    which one comes out is not fixed even within numpy (its vector loops return the second's,
    its scalar loop the first's: -nan + nan is nan for 20 elements and -nan for 3), nor in TF."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(np.isnan(a), np.isnan(b)):
        return False
    keep = ~np.isnan(a)
    return a[keep].tobytes() == b[keep].tobytes()


def _special_pairs(dtype, n_random: int):
    rng = np.random.default_rng(7)
    sx, sy = np.meshgrid(np.array(_SPECIAL, dtype), np.array(_SPECIAL, dtype))
    x = np.concatenate([sx.ravel(), (rng.standard_normal(n_random) * 10).astype(dtype)])
    y = np.concatenate([sy.ravel(), (rng.standard_normal(n_random) * 10).astype(dtype)])
    return x, y


_BINARY = {"add": tf.add, "sub": tf.subtract, "mul": tf.multiply, "div": tf.realdiv, "max": tf.maximum,
           "min": tf.minimum}
_GRAD_OPS = ("SigmoidGrad", "TanhGrad", "SqrtGrad", "RsqrtGrad", "ReciprocalGrad")
_UNARY = {"neg": tf.negative, "abs": tf.abs, "sqrt": tf.sqrt, "floor": tf.floor, "ceil": tf.ceil,
          "square": tf.square, "relu": tf.nn.relu}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("small", [True, False])   # small inputs: the one-pass program; large: the kernels in turn
def test_each_fused_op_gives_its_kernels_bits_with_nan_inf_and_signed_zeros(dtype, small):
    special = np.array(_SPECIAL, dtype)
    if small:   # every pair of special values by broadcasting a row against a column
        x, y = special, special[:, None]
    else:
        rng = np.random.default_rng(7)
        x = np.concatenate([np.repeat(special, len(special)), (rng.standard_normal(4000) * 10).astype(dtype)])
        y = np.concatenate([np.tile(special, len(special)), (rng.standard_normal(4000) * 10).astype(dtype)])
    px, py = tf.placeholder(dtype, [None] * x.ndim), tf.placeholder(dtype, [None] * y.ndim)
    fetches = {}
    for name, op in _BINARY.items():   # each op between others, so that it fuses into a tree
        fetches[name] = op(px + py, py - px) * py
        fetches[name + "_leaves"] = op(px, py) * 2.0
        for k, c in enumerate((0.0, -0.0, 0.5, np.inf, -np.inf, np.nan)):   # a constant second operand
            fetches[f"{name}_const{k}"] = op(px * py, c) - px
    for name, op in _UNARY.items():
        fetches[name] = -op(px * py)
    for op_type in _GRAD_OPS:   # (y, dy) of one shape
        fetches[op_type] = make_op(op_type, [px + py, py - px]).outputs[0] * py
    with np.errstate(all="ignore"):
        fused, unfused, names = _run_both(fetches, {px: x, py: y})
    for k in fetches:
        assert _same_values(fused[k], unfused[k]), k
    assert sum(n.endswith("/xla_run") for n in names) == len(fetches)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_nan_keeps_its_sign_and_payload_through_a_fused_tree(dtype):
    bits = np.array([0x7FC00001, 0xFFC00123, 0x7F800001], np.uint32) if dtype == np.float32 else \
        np.array([0x7FF8000000000001, 0xFFF8000000000123, 0x7FF0000000000001], np.uint64)
    nans = np.concatenate([bits.view(dtype), np.array([np.nan, -np.nan, 1.0, -0.0], dtype)])
    x = tf.placeholder(dtype, [None])
    y = tf.minimum(tf.maximum(tf.nn.relu(-tf.abs(x * 2.0 + 1.0) / 3.0 - 1.0), -5.0), 5.0)
    z = tf.sqrt(tf.square(x - 0.5)) * tf.floor(x) + tf.ceil(x)
    for values in (nans, np.tile(nans, 40)):   # the one-pass program, and the kernels in turn
        fused, unfused, names = _run_both([y, z], {x: values})
        assert all(_same_bits(f, u) for f, u in zip(fused, unfused))
        assert sum(n.endswith("/xla_run") for n in names) == 2


def test_small_chains_fuse_and_agree_exactly_with_broadcasting():
    for dtype in (np.float32, np.float64):
        a = tf.placeholder(dtype, [None, 3])
        b = tf.placeholder(dtype, [3])
        y = a
        for i in range(40):
            y = tf.maximum(y * 1.5 - b, -2.0) / 3.0 + tf.cast(i, dtype)
        x = np.array([[1, -2, 3], [np.nan, np.inf, -0.0]], dtype)
        fused, unfused, names = _run_both(y, {a: x, b: np.array([0.25, -1, 2], dtype)}, trace=True)
        assert _same_bits(fused, unfused)
        assert any(n.endswith("/xla_run") for n in names)   # it did fuse: the step reports its clusters
        assert not any(n.startswith("truediv") for n in names)


def test_the_200_add_chain_fuses_and_returns_a_scalar_of_its_dtype():
    x = tf.placeholder(tf.float32, [])
    y = x
    for _ in range(200):
        y = y + 1.0
    fused, unfused, names = _run_both(y, {x: 0.1})
    assert _same_bits(fused, unfused) and type(fused) is type(unfused) is np.float32
    assert not any(n.startswith("add") for n in names)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_int_chains_wrap_as_numpy_does(dtype):
    info = np.iinfo(dtype)
    x = tf.placeholder(dtype, [None])
    y = tf.placeholder(dtype, [None])
    z = tf.maximum((x * y + x) - y, tf.negative(x))
    z = tf.minimum(z * 3, y) + tf.nn.relu(x - y)
    vx = np.array([0, 1, -1, info.max, info.min, 5, -7, 3], dtype)
    vy = np.array([info.max, info.max, info.min, 1, -1, 3, 2, -3], dtype)
    fused, unfused, names = _run_both(z, {x: vx, y: vy})
    assert _same_bits(fused, unfused)
    assert any(n.endswith("/xla_run") for n in names)


def test_a_fetched_intermediate_stays_unfused_and_keeps_its_value():
    x = tf.placeholder(tf.float32, [None])
    mid = tf.multiply(x + 1.0, 2.0, name="mid")
    out = tf.subtract(mid * 3.0, 3.0, name="out")
    v = np.array([0.5, -1.5, np.nan], np.float32)
    (f_mid, f_out), (u_mid, u_out), names = _run_both([mid, out], {x: v})
    assert _same_bits(f_mid, u_mid) and _same_bits(f_out, u_out)
    # fetched: mid ends its own tree (x + 1.0, mid), its value kept; out's tree starts from it
    assert names == {"cluster_0/xla_run", "cluster_1/xla_run"}


def test_a_control_dependency_on_an_intermediate_keeps_it_unfused():
    x = tf.placeholder(tf.float32, [])
    mid = tf.add(x * 2.0, 1.0, name="mid")
    with tf.control_dependencies([mid]):
        marker = tf.identity(x, name="marker")
    out = tf.negative(mid - 4.0, name="out")
    fused, unfused, names = _run_both([out, marker], {x: 3.0})
    assert _same_bits(fused[0], unfused[0]) and fused[0] == -3.0
    assert "marker" in names and sum(n.endswith("/xla_run") for n in names) == 2   # mid ends a tree


def test_ops_on_other_devices_do_not_fuse_together():
    x = tf.placeholder(tf.float32, [])
    with tf.device("/cpu:0"):
        a = tf.add(x * 2.0, 1.0, name="a")
    b = tf.subtract(a, 4.0, name="b")
    fused, unfused, names = _run_both(b * 3.0, {x: 3.0})
    assert fused == unfused == 9.0
    assert sum(n.endswith("/xla_run") for n in names) == 2   # the /cpu:0 tree ends at its boundary


def test_global_jit_level_off_runs_every_op():
    x = tf.placeholder(tf.float32, [])
    y = tf.add(x * 2.0, 1.0, name="y")
    with tf.Session(config=_config(tf.OptimizerOptions.OFF)) as sess:
        meta = tf.RunMetadata()
        sess.run(y, {x: 1.0}, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    names = {ns.node_name for dev in meta.step_stats.dev_stats for ns in dev.node_stats}
    assert {"mul", "y"} <= names and not any(n.endswith("/xla_run") for n in names)


def test_a_failing_member_names_its_own_node():
    x = tf.placeholder(tf.float32, [None])
    y = tf.placeholder(tf.float32, [None])
    z = tf.multiply(x + 1.0, y, name="bad_mul") - 2.0
    for level in (tf.OptimizerOptions.DEFAULT, tf.OptimizerOptions.OFF):
        with tf.Session(config=_config(level)) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="bad_mul") as err:
                sess.run(z, {x: np.ones(3, np.float32), y: np.ones(4, np.float32)})
            assert err.value.op == "bad_mul"


def test_a_fed_value_of_another_dtype_gives_the_unfused_result():
    x = tf.placeholder(tf.float64, [None])
    y = (x + 1.0) * 3.0 - x
    fused, unfused, _ = _run_both(y, {x: [1, 2, 3]})
    assert _same_bits(fused, unfused)


def test_gradients_through_fused_trees_agree_exactly():
    x = tf.placeholder(tf.float32, [None])
    w = tf.Variable(np.array([0.5, -1.0, 2.0], np.float32))
    loss = tf.reduce_sum(tf.square(tf.nn.relu(x * w + 1.0) - 0.5) / 3.0)
    grads = tf.gradients(loss, [x, w])
    outs = []
    for level in (tf.OptimizerOptions.DEFAULT, tf.OptimizerOptions.OFF):
        with tf.Session(config=_config(level)) as sess:
            sess.run(w.initializer)
            outs.append(sess.run(grads, {x: np.array([1.0, -3.0, 0.25], np.float32)}))
    assert all(_same_bits(a, b) for a, b in zip(*outs))


def test_xla_compile_false_keeps_a_node_unfused():
    x = tf.placeholder(tf.float32, [])
    a = tf.add(x * 2.0, 1.0, name="a")
    a.op._set_attr("_XlaCompile", False)
    fused, unfused, names = _run_both(a - 3.0, {x: 1.0})
    assert fused == unfused == 0.0 and "a" in names


def test_threads_running_one_plan_at_once_each_get_their_own_values():
    # A QueueRunner's threads share a plan; a numexpr program keeps temporaries in itself.
    import threading
    x = tf.placeholder(tf.float32, [None])
    y = ((x + 1.0) * 3.0 - x) / 2.0
    failures = []
    with tf.Session() as sess:
        def work(seed):
            rng = np.random.default_rng(seed)
            for _ in range(300):
                v = rng.standard_normal(rng.integers(1, 100)).astype(np.float32)
                want = ((v + np.float32(1)) * np.float32(3) - v) / np.float32(2)
                if sess.run(y, {x: v}).tobytes() != want.tobytes():
                    failures.append(seed)
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not failures


def test_relu_and_clip_take_their_operand_trees_in():
    x = tf.placeholder(tf.float32, [None])
    b = tf.placeholder(tf.float32, [None])
    y = tf.clip_by_value(tf.nn.relu(x * 2.0 + b) - 1.5, -1.0, 4.0)
    v = np.array([-3, -0.0, 0.0, 0.5, 1.0, 2.5, np.nan, np.inf, -np.inf], np.float32)
    fused, unfused, names = _run_both(y, {x: v, b: v[::-1].copy()})
    assert _same_bits(fused, unfused)
    assert sum(n.endswith("/xla_run") for n in names) == 1   # one tree: mul, add, relu, sub, minimum, maximum


def test_nested_maxima_stay_a_bounded_expression():
    x = tf.placeholder(tf.float64, [None])
    y = x
    for i in range(30):   # each maximum repeats its first operand's expression four times
        y = tf.maximum(y + 1.0, float(i))
    v = np.array([-100.0, 0.0, np.nan, 7.5], np.float64)
    fused, unfused, names = _run_both(y, {x: v})
    assert _same_bits(fused, unfused)
    assert 1 < sum(n.endswith("/xla_run") for n in names) < 30


def _fused_count(names) -> int:
    return sum(n.endswith("/xla_run") for n in names)


def test_jit_scope_compile_ops_false_keeps_its_ops_unfused():
    x = tf.placeholder(tf.float32, [])
    with tf.contrib.compiler.jit.experimental_jit_scope(compile_ops=False):
        a = tf.add(x * 2.0, 1.0, name="a")
    b = tf.add(a * 3.0, 1.0, name="b")
    fused, unfused, names = _run_both(b, {x: 1.0})
    assert fused == unfused == 10.0
    assert {"mul", "a"} <= names and _fused_count(names) == 1   # b's tree alone
    assert a.op.get_attr("_XlaCompile") is False and a.op.get_attr("_XlaScope") == "jit_scope_0"


def test_jit_scope_ops_fuse_even_with_global_jit_level_off_and_scopes_stay_apart():
    x = tf.placeholder(tf.float32, [])
    with tf.contrib.compiler.jit.experimental_jit_scope():
        a = tf.add(x * 2.0, 1.0, name="a")
    with tf.contrib.compiler.jit.experimental_jit_scope():
        b = tf.add(a * 3.0, 1.0, name="b")
    c = tf.add(b * 5.0, 1.0, name="c")   # outside any scope: OFF leaves it alone
    with tf.Session(config=_config(tf.OptimizerOptions.OFF)) as sess:
        meta = tf.RunMetadata()
        assert sess.run(c, {x: 1.0}, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                        run_metadata=meta) == 51.0
    names = {ns.node_name for dev in meta.step_stats.dev_stats for ns in dev.node_stats}
    assert _fused_count(names) == 2 and {"mul_2", "c"} <= names and not {"a", "b"} & names


def test_jit_scope_takes_a_callable_of_the_node_def():
    x = tf.placeholder(tf.float32, [])
    with tf.contrib.compiler.jit.experimental_jit_scope(compile_ops=lambda node_def: node_def.op != "Mul"):
        a = tf.add(x * 2.0, 1.0, name="a")
        b = tf.subtract(a, 4.0, name="b")
    fused, unfused, names = _run_both(b, {x: 1.0})
    assert fused == unfused == -1.0
    assert "mul" in names and _fused_count(names) == 1   # a and b only


def test_a_worker_task_honours_the_global_jit_level_its_master_sends():
    from tensorweave.distributed.worker import WorkerService
    from tensorweave.framework.graph_def import graph_to_graph_def
    x = tf.placeholder(tf.float32, [], name="x")
    tf.subtract(x * 2.0 + 1.0, 3.0, name="y")
    gd = graph_to_graph_def(tf.get_default_graph())
    svc = WorkerService(tf.train.ClusterSpec({"local": ["localhost:1"]}), "local", 0)
    ran = {}
    for level in (tf.OptimizerOptions.DEFAULT, tf.OptimizerOptions.OFF):
        handle = svc.register_graph(gd, ["x:0"], ["y:0"], [], config={"global_jit_level": level})
        values, trace = svc.run_graph(handle, 1, [np.float32(2.0)], trace=True)
        assert values == [2.0]
        ran[level] = [t["node_name"] for t in trace]
    assert ran == {tf.OptimizerOptions.DEFAULT: ["cluster_0/xla_run"], tf.OptimizerOptions.OFF: ["mul", "add", "y"]}


def test_broadcast_gradients_with_unknown_batch_reduce_as_before_and_a_fetched_shape_stays():
    # each gradient reduces to its input's run-time shape (SumToShape of Shape(input)); the plan
    # reads the input's shape in place: the same values as numpy, whether or not g needs reducing
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.float32, [None, 3])
    b = tf.placeholder(tf.float32, [None])
    z = tf.tanh(x * y) * tf.expand_dims(b, 1)
    gx, gy, gb = tf.gradients(tf.reduce_sum(z), [x, y, b])
    rng = np.random.RandomState(3)
    xv, yv, bv = rng.randn(4, 3).astype(np.float32), rng.randn(1, 3).astype(np.float32), rng.randn(4).astype(np.float32)
    with tf.Session() as sess:
        got = sess.run([gx, gy, gb, tf.shape(x)], {x: xv, y: yv, b: bv})
    d = (1 - np.tanh(xv * yv) ** 2) * bv[:, None]
    np.testing.assert_allclose(got[0], d * yv, rtol=1e-6)
    np.testing.assert_allclose(got[1], (d * xv).sum(0, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(got[2], np.tanh(xv * yv).sum(1), rtol=1e-5)
    assert got[1].shape == (1, 3) and list(got[3]) == [4, 3]


def _conv_bias(relu: bool, channels=3):
    """x (batch unknown) -> Conv2D -> BiasAdd (-> Relu): (x, the bias add, the output)."""
    rng = np.random.default_rng(5)
    x = tf.placeholder(tf.float32, [None, 9, 9, channels])
    w = tf.Variable(rng.standard_normal((3, 3, 3, 8)).astype(np.float32))
    b = tf.Variable(rng.standard_normal(8).astype(np.float32))
    pre = tf.nn.bias_add(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", name="conv"), b, name="bias")
    return x, pre, (tf.nn.relu(pre, name="out") if relu else tf.negative(pre, name="out")), [w, b]


def _traced(sess, fetches, feeds):
    meta = tf.RunMetadata()
    out = sess.run(fetches, feeds, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    return out, {ns.node_name for dev in meta.step_stats.dev_stats for ns in dev.node_stats}


@pytest.mark.parametrize("relu", [True, False])
@pytest.mark.parametrize("special", [False, True])   # a NaN, an inf and a huge value: the ops' own kernels
def test_conv2d_bias_add_and_relu_run_as_one_step_with_the_three_ops_bits(relu, special):
    x, pre, out, variables = _conv_bias(relu)
    v = np.random.default_rng(6).standard_normal((4, 9, 9, 3)).astype(np.float32)
    if special:
        v[0, 0, 0, 0], v[1, 4, 4, 1], v[2, 8, 8, 2] = np.nan, np.inf, 3e38
    loss = tf.reduce_sum(tf.square(out))
    grads = tf.gradients(loss, [x] + variables)   # the bias's gradient reduces to the shape of the fused value
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        fused, names = _traced(sess, [out] + grads, {x: v})
        apart = sess.run([out] + grads + [pre], {x: v})[:-1]   # (the bias add fetched: the ops run one by one)
    assert "conv" not in names and ("bias" in names) != relu   # (the fused step has its last member's name)
    for a, b in zip(fused, apart):
        assert _same_values(a, b)
    assert np.isnan(fused[0]).any() == special


def test_a_convolution_whose_value_is_read_elsewhere_stays_apart():
    x, pre, out, _ = _conv_bias(True)
    conv = pre.op.inputs[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _, names = _traced(sess, [out, conv * 1.0], {x: np.ones((2, 9, 9, 3), np.float32)})
    assert {"conv", "bias", "out"} <= names


def test_a_failing_fused_convolution_names_the_convolution():
    x, pre, out, _ = _conv_bias(True, channels=None)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match="conv") as err:
            sess.run(out, {x: np.ones((2, 9, 9, 4), np.float32)})
    assert err.value.op == "conv"


def _conv_grads(channels=16, shapes=((4, 10, 10), (4, 8, 8))):
    """Conv2DBackpropInput and Conv2DBackpropFilter of one fed out_backprop: (feeds, dx, dw)."""
    rng = np.random.default_rng(8)
    (n, h, w_), (_, oh, ow) = shapes
    x = tf.placeholder(tf.float32, [None, None, None, channels])
    dy = tf.placeholder(tf.float32, [None, None, None, 8])
    w = tf.constant(rng.standard_normal((3, 3, channels, 8)).astype(np.float32))
    dx = tf.nn.conv2d_backprop_input(tf.shape(x), w, dy, [1, 1, 1, 1], "VALID", name="dx")
    dw = tf.nn.conv2d_backprop_filter(x, tf.shape(w), dy, [1, 1, 1, 1], "VALID", name="dw")
    feeds = {x: rng.standard_normal((n, h, w_, channels)).astype(np.float32),
             dy: rng.standard_normal((n, oh, ow, 8)).astype(np.float32)}
    return feeds, dx, dw


@pytest.mark.parametrize("channels", [16, 3])   # 3: oneDNN is not for the input gradient, the kernels run in turn
def test_a_convolutions_two_gradients_run_as_one_step_with_each_ops_bits(channels):
    """(Where oneDNN runs them: each on one thread at once.)"""
    feeds, dx, dw = _conv_grads(channels)
    with tf.Session() as sess:
        together, names = _traced(sess, [dx, dw], feeds)
        apart = [sess.run(dx, feeds), sess.run(dw, feeds)]   # (each plan has one of them)
    assert "dx" not in names and "dw" in names   # (the step has the later member's name)
    for a, b in zip(together, apart):
        assert _same_bits(a, b)


def test_a_convolution_gradient_waited_for_stays_apart():
    feeds, dx, dw = _conv_grads()
    with tf.control_dependencies([dx.op]):
        after = tf.identity(dw)
    with tf.Session() as sess:
        got, names = _traced(sess, [after, dx], feeds)
        alone = sess.run(dw, feeds)
    assert {"dx", "dw"} <= names
    assert _same_bits(got[0], alone)


def test_paired_convolution_gradients_that_disagree_name_the_failing_op():
    feeds, dx, dw = _conv_grads(shapes=((4, 10, 10), (4, 7, 7)))   # out_backprop not the convolution's shape
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as err:
            sess.run([dx, dw], feeds)
    assert err.value.op in ("dx", "dw")   # (whichever of the two ran first)


def _relu_grad_of(grad_ys_fed: bool):
    """x -> Relu -> its gradient for a fed upstream gradient, or through a MaxPool: (x, y, g, dx)."""
    x = tf.placeholder(tf.float32, [8, 64, 64, 8])   # (large enough for oneDNN's kernel: 2^18 elements)
    y = tf.nn.relu(x)
    if grad_ys_fed:
        g = tf.placeholder(tf.float32, [8, 64, 64, 8])
        return x, y, g, tf.gradients(y, x, grad_ys=g)[0]
    pooled = tf.nn.max_pool(y, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    signs = np.sign(np.random.default_rng(11).standard_normal((8, 32, 32, 8))).astype(np.float32)
    loss = tf.reduce_sum(pooled * signs)   # (negative gradients where a window is all zero: -0.0 out)
    return (x, y, *tf.gradients(loss, [y, x]))


def _relu_inputs():
    rng = np.random.default_rng(9)
    v = rng.standard_normal((8, 64, 64, 8)).astype(np.float32)
    v.reshape(-1)[:len(_SPECIAL)] = _SPECIAL   # NaN, inf, signed zeros: in x, so in y, the pooled value and g
    return v


def test_a_relu_gradient_written_over_its_input_gives_relu_grads_bits():
    x, y, g, dx = _relu_grad_of(False)
    v = _relu_inputs()
    with tf.Session() as sess:
        over = sess.run(dx, {x: v})                      # g read by ReluGrad alone: written over
        apart, gv, yv = sess.run([dx, g, y], {x: v})     # g fetched: a new output
    want = np.multiply(gv, yv > 0, dtype=np.float32)
    assert _same_values(over, apart) and _same_values(over, want)
    assert np.signbit(want[want == 0]).any()   # (what tells a multiply from a select)


def test_a_fed_gradient_is_never_written_over():
    x, y, g, dx = _relu_grad_of(True)
    v, gv = _relu_inputs(), np.random.default_rng(10).standard_normal((8, 64, 64, 8)).astype(np.float32)
    kept = gv.copy()
    with tf.Session() as sess:
        got = sess.run(dx, {x: v, g: gv})
    assert _same_bits(gv, kept)
    with denormals.computed_as(True):   # (as kernels compute: a denormal input reads as 0.0)
        assert _same_values(got, np.multiply(gv, np.maximum(v, 0) > 0, dtype=np.float32))


@pytest.mark.parametrize("channels", [16, 3])   # 3: the first layer, whose input needs no gradient
def test_a_convolution_layers_filter_input_and_bias_gradients_run_as_one_step_with_each_ops_bits(channels):
    rng = np.random.default_rng(12)
    x = tf.placeholder(tf.float32, [None, 12, 12, channels])
    w = tf.Variable(rng.standard_normal((3, 3, channels, 16)).astype(np.float32), name="w")
    b = tf.Variable(rng.standard_normal(16).astype(np.float32), name="b")
    y = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, [1, 1, 1, 1], "VALID"), b))
    loss = tf.reduce_sum(y * np.sign(rng.standard_normal((10, 10, 16))).astype(np.float32))
    wanted = [w, b] + ([x] if channels == 16 else [])
    grads = tf.gradients(loss, wanted)
    v = rng.standard_normal((32, 12, 12, channels)).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        together, names = _traced(sess, grads, {x: v})
        apart = [sess.run(g, {x: v}) for g in grads]   # (each plan has one of them)
    members = {op.name for op in tf.get_default_graph().get_operations()
               if op.type in ("Conv2DBackpropFilter", "Conv2DBackpropInput", "BiasAddGrad")}
    assert len(members & names) == 1   # (one step, named for its last member; the input's gradient runs only for 16)
    for a, c in zip(together, apart):
        assert _same_bits(a, c)


@pytest.mark.parametrize("ref", [True, False])
def test_a_variables_value_reaching_a_relu_gradient_is_never_written_over(ref):
    """Through an Identity (of a TF1 variable's ref, or of a resource variable's read): the
    variable keeps its value."""
    rng = np.random.default_rng(14)
    value = rng.standard_normal((8, 64, 64, 8)).astype(np.float32)
    v = tf.Variable(value, use_resource=not ref)
    x = tf.placeholder(tf.float32, [8, 64, 64, 8])
    dx = tf.gradients(tf.nn.relu(x), x, grad_ys=tf.identity(v))[0]
    xv = rng.standard_normal((8, 64, 64, 8)).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = [sess.run(dx, {x: xv}) for _ in range(2)]
        kept = sess.run(v)
    assert _same_bits(kept, value)
    assert _same_bits(got[0], got[1]) and _same_values(got[0], np.multiply(value, xv > 0, dtype=np.float32))
