"""The math ops' GPU kernels (issue 25), through a stand-in GPU: each graph pinned to /gpu:0 runs
with its ops placed there (the step stats say so) and gives the numbers the same graph gives on
the CPU; host-memory inputs (reduction axes, in_top_k's k) are copied to the host for them.
(tests/gpu/test_math_kernels.py runs the same kernels on CuPy arrays.)"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.ops import registry
from tensorweave.ops.helpers import make_op

GPU = "/job:localhost/replica:0/task:0/device:GPU:0"
rng = np.random.RandomState(7)
X = rng.uniform(0.1, 0.9, (3, 4)).astype(np.float32)
Y = rng.uniform(0.1, 0.9, (3, 4)).astype(np.float32)
MIXED = np.array([[-2.5, -0.5, 0.0, 0.5], [1.5, 2.5, -1.0, 3.0], [np.nan, np.inf, -np.inf, -7.25]], np.float32)
INTS = np.array([[7, -7, 3, -3], [9, 0, -9, 4], [1, 2, -1, -2]], np.int32)
DIVISORS = np.array([2, -3, 4, -5], np.int32)

# The ops this change gives GPU kernels; every one of them is placed on the GPU by some case below.
MATH_GPU_OPS = {
    "Abs", "Acos", "Acosh", "Add", "AddN", "AddV2", "All", "Any", "ArgMax", "ArgMin", "Asin", "Asinh", "Atan",
    "Atanh", "BatchMatMulV2", "BiasAdd", "BiasAddGrad", "BiasAddV1", "Cast", "Ceil", "Cos", "Cosh", "Div", "DivNoNan",
    "Elu", "EluGrad", "Equal", "Exp", "Expm1", "Floor", "FloorDiv", "FloorMod", "Greater", "GreaterEqual", "InTopKV2",
    "IsFinite", "IsInf", "IsNan", "L2Loss", "LeakyRelu", "LeakyReluGrad", "Less", "LessEqual", "Log", "Log1p",
    "LogSoftmax", "LogicalAnd", "LogicalNot", "LogicalOr", "MatMul", "Max", "Maximum", "Mean", "Min", "Minimum",
    "Mul", "Neg", "NotEqual", "Pow", "Prod", "RealDiv", "Reciprocal", "ReciprocalGrad", "Relu", "Relu6", "Relu6Grad",
    "ReluGrad", "Rint", "Round", "Rsqrt", "RsqrtGrad", "Select", "SelectV2", "Selu", "SeluGrad", "Sigmoid",
    "SigmoidGrad", "Sign", "Sin", "Sinh", "Softmax", "SoftmaxCrossEntropyWithLogits", "Softplus", "SoftplusGrad",
    "SparseSoftmaxCrossEntropyWithLogits", "Sqrt", "SqrtGrad", "Square", "SquaredDifference", "Sub", "Sum", "Tan",
    "Tanh", "TanhGrad",
}


def _unary_cases():
    c = tf.constant
    return [tf.negative(c(MIXED)), tf.abs(c(MIXED)), tf.sign(c(MIXED)), tf.square(c(MIXED)), tf.sqrt(c(X)),
            tf.rsqrt(c(X)), tf.exp(c(X)), tf.expm1(c(X)), tf.log(c(X)), tf.log1p(c(X)), tf.reciprocal(c(X)),
            tf.reciprocal(c(np.array([-2, -1, 1, 2, 5], np.int32))), tf.floor(c(MIXED)), tf.ceil(c(MIXED)),
            tf.round(c(MIXED)), tf.rint(c(MIXED)), tf.tanh(c(MIXED)),
            tf.sigmoid(c(np.array([-100.0, -3.0, 0.0, 2.0, 100.0], np.float32))), tf.sin(c(X)), tf.cos(c(X)),
            tf.tan(c(X)), tf.asin(c(X)), tf.acos(c(X)), tf.atan(c(MIXED)), tf.asinh(c(X)), tf.acosh(c(1 + X)),
            tf.atanh(c(X)), tf.sinh(c(X)), tf.cosh(c(X)), tf.is_nan(c(MIXED)), tf.is_inf(c(MIXED)),
            tf.is_finite(c(MIXED))]


def _binary_cases():
    c = tf.constant
    x, y, ints, divisors = c(X), c(Y), c(INTS), c(DIVISORS)
    return [tf.add(x, y), x + y, tf.subtract(x, y), tf.multiply(x, y), tf.realdiv(x, y), tf.truediv(x, y),
            make_op("Div", [x, y], {"T": tf.float32}).outputs[0],
            make_op("Div", [ints, divisors], {"T": tf.int32}).outputs[0],
            tf.div_no_nan(c(MIXED), c(np.array([0.0, 2.0, -0.0, 4.0], np.float32))),
            tf.floordiv(c(MIXED), y), tf.floordiv(ints, divisors), tf.floormod(c(MIXED), y),
            tf.floormod(ints, divisors),
            tf.maximum(c(MIXED), x), tf.minimum(c(MIXED), x), tf.pow(x, y), tf.pow(ints, c(np.int32(2))),
            tf.squared_difference(x, y), tf.add_n([x, y, x]),
            tf.equal(ints, c(np.int32(3))), tf.not_equal(x, y), tf.less(x, y), tf.less_equal(x, x),
            tf.greater(x, y), tf.greater_equal(c(MIXED), c(np.float32(0.5))),
            tf.logical_and(tf.less(x, y), tf.greater(x, 0.3)), tf.logical_or(tf.less(x, y), tf.greater(x, 0.7)),
            tf.logical_not(tf.less(x, y)),
            tf.where(tf.less(x, y), x, y), tf.where(c(np.array([True, False, True])), x, y),
            tf.where_v2(tf.less(c(X[0]), 0.5), x, c(np.float32(-1)))]


def _cast_and_reduction_cases():
    c = tf.constant
    x, ints, flags = c(X), c(INTS), tf.less(c(X), 0.5)
    return [tf.cast(x * 10, tf.int32), tf.cast(ints, tf.float64), tf.cast(flags, tf.float32),
            tf.cast(c(np.array([1 + 2j, -3.5 + 1j], np.complex64)), tf.float32),
            tf.reduce_sum(x), tf.reduce_sum(x, axis=1), tf.reduce_sum(x, axis=[0], keepdims=True),
            tf.reduce_sum(c(X.astype(np.float16)), axis=0), tf.reduce_mean(x, axis=0), tf.reduce_mean(ints, axis=1),
            tf.reduce_max(x, axis=1), tf.reduce_min(c(MIXED[:2]), axis=0), tf.reduce_prod(x, axis=-1),
            tf.reduce_max(c(np.zeros((0, 3), np.float32)), axis=0), tf.reduce_min(c(np.zeros((2, 0), np.int32)),
                                                                                axis=1, keepdims=True),
            tf.reduce_any(flags, axis=1), tf.reduce_all(flags, axis=0), tf.reduce_all(flags),
            tf.argmax(x, axis=1), tf.argmin(x, axis=0, output_type=tf.int32)]


def _linalg_cases():
    c = tf.constant
    a, b = c(rng.randn(3, 5).astype(np.float32)), c(rng.randn(5, 2).astype(np.float32))
    batch_a, batch_b = c(rng.randn(2, 3, 4)), c(rng.randn(2, 3, 4))
    return [tf.matmul(a, b), tf.matmul(b, a, transpose_a=True, transpose_b=True),
            tf.matmul(c(INTS), c(INTS.T.copy())), tf.matmul(batch_a, batch_b, adjoint_b=True),
            tf.matmul(batch_a, batch_b, transpose_a=True)]


def _nn_cases():
    c = tf.constant
    x4 = c(rng.randn(2, 3, 4, 5).astype(np.float32))
    logits = c(rng.randn(4, 6).astype(np.float32))
    labels = c(np.eye(6, dtype=np.float32)[[0, 3, 5, 1]])
    outs = [tf.nn.bias_add(x4, c(rng.randn(5).astype(np.float32))),
            tf.nn.bias_add(x4, c(rng.randn(3).astype(np.float32)), data_format="NCHW"),
            make_op("BiasAddV1", [x4, c(np.arange(5, dtype=np.float32))],
                    {"T": tf.float32, "data_format": "NHWC"}).outputs[0],   # (its shape function reads data_format)
            tf.nn.softmax(logits), tf.nn.log_softmax(logits), tf.nn.l2_loss(logits),
            tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits),
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=c(np.array([0, 3, 5, 1], np.int32)), logits=logits),
            tf.nn.in_top_k(logits, c(np.array([0, 3, 5, 1], np.int32)), 2)]
    for act in (tf.nn.relu, tf.nn.relu6, tf.nn.elu, tf.nn.selu, tf.nn.softplus,
                lambda v: tf.nn.leaky_relu(v, alpha=0.3)):
        y = act(c(MIXED[:2, :] * 4))
        outs += [y, tf.gradients(tf.reduce_sum(y * c(Y[:2])), [y.op.inputs[0]])[0]]
    for fn in (tf.sigmoid, tf.tanh, tf.sqrt, tf.rsqrt, tf.reciprocal):   # (SigmoidGrad and the like)
        x = c(X)
        outs.append(tf.gradients(tf.reduce_sum(fn(x) * c(Y)), [x])[0])
    for fmt in ("NHWC", "NCHW"):
        outs.append(make_op("BiasAddGrad", [x4], {"T": tf.float32, "data_format": fmt}).outputs[0])
    return outs


def _mlp_loss_gradients():
    """A two-layer MLP's softmax cross-entropy loss and its gradients (tf.gradients)."""
    c = tf.constant
    x = c(rng.randn(8, 5).astype(np.float32))
    w1, b1 = c(rng.randn(5, 7).astype(np.float32) * 0.5), c(np.zeros(7, np.float32))
    w2, b2 = c(rng.randn(7, 3).astype(np.float32) * 0.5), c(np.full(3, 0.1, np.float32))
    labels = c(np.eye(3, dtype=np.float32)[[0, 1, 2, 1, 0, 2, 2, 1]])
    hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1))
    logits = tf.nn.bias_add(tf.matmul(hidden, w2), b2)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits))
    return [loss] + tf.gradients(loss, [w1, b1, w2, b2])


CASES = {"unary": (_unary_cases, False), "binary": (_binary_cases, False),
         "cast_and_reductions": (_cast_and_reduction_cases, False), "linalg": (_linalg_cases, False),
         "nn": (_nn_cases, True), "mlp_gradients": (_mlp_loss_gradients, True)}


def _run(build, device: str, soft: bool):
    """The values of build()'s tensors, built under tf.device(device), and the names of the ops
    each device ran (from the step stats of a FULL_TRACE run)."""
    with tf.Graph().as_default() as g:
        with tf.device(device):
            fetches = build()
        options, metadata = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), tf.RunMetadata()
        with tf.Session(graph=g, config=tf.ConfigProto(allow_soft_placement=soft)) as sess:
            values = sess.run(fetches, options=options, run_metadata=metadata)
        ran = {d.device: {n.node_name for n in d.node_stats} for d in metadata.step_stats.dev_stats}
        ops = {op.name: op.type for op in g.get_operations()}
    return values, ran, ops


@pytest.fixture
def standin_gpu(monkeypatch):
    monkeypatch.setenv("TENSORWEAVE_STANDIN_GPUS", "1")


@pytest.mark.parametrize("case", sorted(CASES))
def test_math_ops_on_the_gpu_match_the_cpu(standin_gpu, case):
    build, soft = CASES[case]
    rng.seed(11)
    cpu_values, _, _ = _run(build, "/cpu:0", soft)
    rng.seed(11)
    gpu_values, ran, ops = _run(build, "/gpu:0", soft)
    assert len(gpu_values) == len(cpu_values)
    for i, (gv, cv) in enumerate(zip(gpu_values, cpu_values)):
        assert type(gv) is not np.ndarray or type(gv) is type(cv), f"fetch {i} came back as {type(gv)}"
        assert np.asarray(gv).dtype == np.asarray(cv).dtype, f"fetch {i}"
        np.testing.assert_array_equal(gv, cv, err_msg=f"{case}: fetch {i}")
    ran_anywhere = set().union(*ran.values())   # (ops no fetch needs are pruned)
    math_ops = {name for name, t in ops.items() if t in MATH_GPU_OPS} & ran_anywhere
    assert math_ops, case
    assert math_ops <= ran.get(GPU, set()), f"not on the GPU: {sorted(math_ops - ran.get(GPU, set()))}"


def test_every_registered_math_op_is_placed_on_the_gpu_by_a_case(standin_gpu):
    assert all(registry.has_kernel(op, "GPU") for op in MATH_GPU_OPS)
    placed = set()
    for build, soft in CASES.values():
        _, ran, ops = _run(build, "/gpu:0", soft)
        placed |= {ops[name] for name in ran.get(GPU, ()) if name in ops}
    assert MATH_GPU_OPS <= placed, sorted(MATH_GPU_OPS - placed)


def test_unpinned_math_ops_go_to_the_gpu_and_soft_placement_keeps_cpu_only_ops(standin_gpu):
    with tf.Graph().as_default() as g:
        x = tf.constant(X)
        y = tf.reduce_sum(tf.nn.softmax(tf.matmul(x, x, transpose_b=True)), axis=1)
        with tf.device("/gpu:0"):
            erf = tf.math.erf(x)   # no GPU kernel (math.erf per element): the CPU's
        options, metadata = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), tf.RunMetadata()
        with tf.Session(graph=g, config=tf.ConfigProto(allow_soft_placement=True)) as sess:
            got, got_erf = sess.run([y, erf], options=options, run_metadata=metadata)
    ran = {d.device: {n.node_name for n in d.node_stats} for d in metadata.step_stats.dev_stats}
    assert {y.op.name, y.op.inputs[0].op.name, "MatMul"} <= ran[GPU]
    assert erf.op.name not in ran[GPU]
    e = np.exp(X @ X.T - (X @ X.T).max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, (e / e.sum(axis=1, keepdims=True)).sum(axis=1), rtol=1e-6)
    assert np.all((got_erf > 0) & (got_erf < 1))


def test_integer_division_by_zero_on_the_gpu_is_tf_error(standin_gpu):
    with tf.Graph().as_default() as g:
        with tf.device("/gpu:0"):
            q = tf.floordiv(tf.constant(INTS), tf.constant(np.array([1, 0, 1, 1], np.int32)))
        with tf.Session(graph=g) as sess:
            with pytest.raises(errors.InvalidArgumentError, match="Integer division by zero"):
                sess.run(q)
