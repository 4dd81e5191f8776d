"""The math ops' GPU kernels (issue 25) on CuPy arrays give their CPU kernels' dtypes and values
on numpy arrays (skipped without CuPy or a GPU; tests/unit/test_gpu_math_kernels.py checks their
placement through a stand-in GPU)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.framework.graph_def import NodeDef
from tensorweave.ops import registry

rng = np.random.RandomState(3)
F32 = rng.uniform(0.1, 0.9, (5, 7)).astype(np.float32)
G32 = rng.uniform(0.1, 0.9, (5, 7)).astype(np.float32)
F64 = rng.uniform(-2, 2, (4, 6))
MIXED = np.array([[-2.5, -0.5, 0.0, 0.5], [1.5, 2.5, -1.0, 3.0], [-100.0, 100.0, -7.25, 6.0]], np.float32)
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -1.5], np.float32)
INTS = np.array([[7, -7, 3, -3], [9, 0, -9, 4], [1, 2, -1, -2]], np.int32)
DIVISORS = np.array([2, -3, 4, -5], np.int32)
BOOLS = F32 < 0.5
GRAD = rng.randn(3, 4).astype(np.float32)
X4 = rng.randn(2, 3, 4, 5).astype(np.float32)
LOGITS = rng.randn(6, 5).astype(np.float32)
LABELS = np.array([0, 4, 2, 2, 1, 3], np.int32)

f32, f64, i32 = {"T": "float32"}, {"T": "float64"}, {"T": "int32"}
UNARY = {  # op -> its input
    "Neg": MIXED, "Abs": MIXED, "Sign": MIXED, "Square": MIXED, "Sqrt": F32, "Rsqrt": F32, "Exp": MIXED / 10,
    "Expm1": F32, "Log": F32, "Log1p": F32, "Reciprocal": F32, "Floor": MIXED, "Ceil": MIXED, "Round": MIXED,
    "Rint": MIXED, "Tanh": MIXED, "Sigmoid": MIXED, "Sin": F32, "Cos": F32, "Tan": F32, "Asin": F32, "Acos": F32,
    "Atan": MIXED, "Asinh": MIXED, "Acosh": 1 + F32, "Atanh": F32, "Sinh": F32, "Cosh": F32, "IsNan": SPECIAL,
    "IsInf": SPECIAL, "IsFinite": SPECIAL, "Softmax": LOGITS, "LogSoftmax": LOGITS, "L2Loss": LOGITS,
    "Relu": MIXED, "Relu6": MIXED * 3, "Elu": MIXED, "Selu": MIXED, "Softplus": MIXED,
}
CASES = [(op, {"T": str(x.dtype)}, [x]) for op, x in UNARY.items()] + [
    ("Reciprocal", i32, [np.array([-2, -1, 1, 2, 5], np.int32)]),
    ("Sigmoid", f64, [F64 * 30]), ("Square", i32, [INTS]), ("Abs", i32, [INTS]), ("Neg", f64, [F64]),
    ("LeakyRelu", {"T": "float32", "alpha": 0.3}, [MIXED]),
    ("Add", f32, [F32, G32]), ("Add", f32, [F32, G32[0]]), ("AddV2", f64, [F64, np.float64(1.5)]),
    ("Sub", f32, [F32, G32]), ("Mul", i32, [INTS, DIVISORS]), ("Mul", f32, [F32, np.float32(3)]),
    ("RealDiv", f32, [F32, G32]), ("Div", f32, [F32, G32]), ("Div", i32, [INTS, DIVISORS]),
    ("RealDiv", i32, [INTS, DIVISORS]),
    ("DivNoNan", f32, [MIXED, np.array([0.0, 2.0, -0.0, 4.0], np.float32)]),
    ("FloorDiv", f32, [MIXED, G32[:3, :4]]), ("FloorDiv", i32, [INTS, DIVISORS]),
    ("FloorMod", f32, [MIXED, G32[:3, :4]]), ("FloorMod", i32, [INTS, DIVISORS]),
    ("Maximum", f32, [MIXED, G32[:3, :4]]), ("Minimum", i32, [INTS, DIVISORS]), ("Pow", f32, [F32, G32]),
    ("Pow", i32, [INTS, np.int32(3)]), ("SquaredDifference", f32, [F32, G32]),
    ("Equal", i32, [INTS, np.int32(3)]), ("NotEqual", f32, [F32, G32]), ("Less", f32, [F32, G32]),
    ("LessEqual", f32, [F32, F32]), ("Greater", i32, [INTS, DIVISORS]), ("GreaterEqual", f32, [MIXED, MIXED[0]]),
    ("LogicalAnd", {}, [BOOLS, F32 > 0.3]), ("LogicalOr", {}, [BOOLS, F32 > 0.7]), ("LogicalNot", {}, [BOOLS]),
    ("AddN", {"T": "float32", "N": 3}, [F32, G32, F32]),
    ("Select", f32, [BOOLS, F32, G32]), ("Select", f32, [BOOLS[:, 0], F32, G32]),
    ("Select", f32, [np.bool_(True), F32, G32]), ("SelectV2", f32, [BOOLS[0], F32, np.float32(-1)]),
    ("Cast", {"SrcT": "float32", "DstT": "int32"}, [MIXED]), ("Cast", {"SrcT": "int32", "DstT": "float64"}, [INTS]),
    ("Cast", {"SrcT": "bool", "DstT": "float32"}, [BOOLS]),
    ("Cast", {"SrcT": "complex64", "DstT": "float32"}, [np.array([1 + 2j, -3.5 + 1j], np.complex64)]),
    ("Cast", {"SrcT": "float32", "DstT": "float16"}, [F32]),
    ("MatMul", {"T": "float32", "transpose_a": False, "transpose_b": False}, [F32, G32.T.copy()]),
    ("MatMul", {"T": "float64", "transpose_a": True, "transpose_b": True}, [F64, F64.T[:3].copy()]),
    ("BatchMatMulV2", {"T": "float32", "adj_x": False, "adj_y": True}, [X4, X4]),
    ("BatchMatMulV2", {"T": "float64", "adj_x": True, "adj_y": False}, [F64[None], F64[:, :3]]),
    ("BiasAdd", {"T": "float32", "data_format": "NHWC"}, [X4, rng.randn(5).astype(np.float32)]),
    ("BiasAdd", {"T": "float32", "data_format": "NCHW"}, [X4, rng.randn(3).astype(np.float32)]),
    ("BiasAddV1", {"T": "float32"}, [X4, rng.randn(5).astype(np.float32)]),
    ("BiasAddGrad", {"T": "float32", "data_format": "NHWC"}, [rng.randn(300, 4).astype(np.float32)]),
    ("BiasAddGrad", {"T": "float32", "data_format": "NCHW"}, [X4]),
    ("ReluGrad", f32, [GRAD, MIXED]), ("Relu6Grad", f32, [GRAD, MIXED * 3]), ("EluGrad", f32, [GRAD, MIXED]),
    ("SeluGrad", f32, [GRAD, MIXED]), ("SoftplusGrad", f32, [GRAD, MIXED]),
    ("LeakyReluGrad", {"T": "float32", "alpha": 0.3}, [GRAD, MIXED]),
    ("SigmoidGrad", f32, [MIXED, GRAD]), ("TanhGrad", f32, [MIXED, GRAD]), ("ReciprocalGrad", f32, [MIXED, GRAD]),
    ("SqrtGrad", f32, [np.abs(MIXED) + 0.5, GRAD]), ("RsqrtGrad", f32, [np.abs(MIXED) + 0.5, GRAD]),
    ("SoftmaxCrossEntropyWithLogits", f32, [LOGITS, np.eye(5, dtype=np.float32)[LABELS]]),
    ("SoftmaxCrossEntropyWithLogits", f32, [LOGITS, np.full((1, 5), 0.2, np.float32)]),
    ("SparseSoftmaxCrossEntropyWithLogits", {"T": "float32", "Tlabels": "int32"}, [LOGITS, LABELS]),
    ("InTopKV2", i32, [LOGITS, LABELS, np.int32(2)]),
    ("ArgMax", {"T": "float32", "output_type": "int64"}, [F32, np.int32(1)]),
    ("ArgMin", {"T": "int32", "output_type": "int32"}, [INTS, np.int32(0)]),
]
for _op in ("Sum", "Mean", "Max", "Min", "Prod"):
    CASES += [(_op, {"T": "float32", "keep_dims": False}, [F32, np.array([1], np.int32)]),
              (_op, {"T": "float64", "keep_dims": True}, [F64, np.array([0, 1], np.int64)]),
              (_op, {"T": "int32", "keep_dims": False}, [INTS, np.array(-1, np.int32)])]
CASES += [("Sum", {"T": "float16", "keep_dims": False}, [F32.astype(np.float16), np.array([0], np.int32)]),
          ("Max", {"T": "float32", "keep_dims": False}, [np.zeros((0, 3), np.float32), np.array([0], np.int32)]),
          ("Min", {"T": "int32", "keep_dims": True}, [np.zeros((2, 0), np.int32), np.array([1], np.int32)]),
          ("Any", {"keep_dims": False}, [BOOLS, np.array([1], np.int32)]),
          ("All", {"keep_dims": True}, [BOOLS, np.array([0, 1], np.int32)])]

MATH_GPU_OPS = {op for op, _, _ in CASES}


def _case_id(case) -> str:
    op, attrs, inputs = case
    return f"{op}-" + "-".join(f"{np.asarray(v).dtype}{list(np.shape(v))}" for v in inputs)


def test_cases_cover_the_math_ops_with_gpu_kernels():
    registry.load_all()
    assert all(registry.has_kernel(op, "GPU") for op in MATH_GPU_OPS)
    for op in ("Sum", "Mean", "Max", "Min", "Prod", "Any", "All", "ArgMax", "ArgMin"):
        assert registry.HOST_MEMORY[op] == ((1,), ()), op   # the axis: host memory, as TF's HostMemory
    assert registry.HOST_MEMORY["InTopKV2"] == ((2,), ())


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_gpu_kernel_matches_cpu_kernel(run_both, case):
    op, attrs, inputs = case
    run_both(op, attrs, inputs)


def test_integer_division_by_zero_on_the_gpu_is_an_error(cupy):
    node = NodeDef("floordiv", "FloorDiv", attr={"T": "int32"})
    kernel = registry.kernel_for("FloorDiv", "GPU")(node, None)
    with pytest.raises(errors.InvalidArgumentError, match="Integer division by zero"):
        kernel(cupy.asarray(INTS), cupy.asarray(np.array([1, 0, 1, 1], np.int32)))


def test_sparse_xent_label_out_of_range_on_the_gpu_is_a_nan_row(cupy):
    """TF's documented GPU behaviour (an error on the CPU): NaN loss and gradient rows for the bad
    labels, the other rows as the CPU computes them."""
    node = NodeDef("xent", "SparseSoftmaxCrossEntropyWithLogits", attr={"T": "float32", "Tlabels": "int32"})
    labels = np.array([0, 5, 2, -1, 1, 3], np.int32)
    loss, back = registry.kernel_for("SparseSoftmaxCrossEntropyWithLogits", "GPU")(node, None)(
        cupy.asarray(LOGITS), cupy.asarray(labels))
    loss, back = loss.get(), back.get()
    good = np.array([True, False, True, False, True, True])
    assert np.isnan(loss[~good]).all() and np.isnan(back[~good]).all()
    want_loss, want_back = registry.kernel_for("SparseSoftmaxCrossEntropyWithLogits", "CPU")(node, None)(
        LOGITS[good], labels[good])
    np.testing.assert_allclose(loss[good], want_loss, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(back[good], want_back, rtol=1e-5, atol=1e-6)
    with pytest.raises(errors.InvalidArgumentError, match="outside the valid range"):
        registry.kernel_for("SparseSoftmaxCrossEntropyWithLogits", "CPU")(node, None)(LOGITS, labels)


def _mlp_loss_and_gradients():
    rng = np.random.RandomState(0)
    c = tf.constant
    x, labels = c(rng.randn(64, 20).astype(np.float32)), c(np.eye(10, dtype=np.float32)[rng.randint(0, 10, 64)])
    w1, b1 = c(rng.randn(20, 32).astype(np.float32) * 0.3), c(np.zeros(32, np.float32))
    w2, b2 = c(rng.randn(32, 10).astype(np.float32) * 0.3), c(np.full(10, 0.1, np.float32))
    logits = tf.nn.bias_add(tf.matmul(tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1)), w2), b2)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), tf.argmax(labels, 1)), tf.float32))
    return [loss, accuracy] + tf.gradients(loss, [w1, b1, w2, b2])


def _run_mlp(device: str):
    with tf.Graph().as_default() as g:
        with tf.device(device):
            fetches = _mlp_loss_and_gradients()
        options, metadata = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), tf.RunMetadata()
        with tf.Session(graph=g, config=tf.ConfigProto(allow_soft_placement=True)) as sess:
            values = sess.run(fetches, options=options, run_metadata=metadata)
        types = {op.name: op.type for op in g.get_operations()}
        ran = {d.device.split("/")[-1]: {types[n.node_name] for n in d.node_stats if n.node_name in types}
               for d in metadata.step_stats.dev_stats}
    return values, ran


def test_mlp_gradients_in_a_session_on_the_gpu_match_the_cpu(cupy):
    cpu, _ = _run_mlp("/cpu:0")
    gpu, ran = _run_mlp("/gpu:0")
    assert {"MatMul", "BiasAdd", "Relu", "ReluGrad", "BiasAddGrad", "SoftmaxCrossEntropyWithLogits", "Mean",
            "ArgMax", "Equal", "Cast"} <= ran["device:GPU:0"]
    for g, c in zip(gpu, cpu):
        assert type(g) is type(c) and np.asarray(g).dtype == np.asarray(c).dtype   # fetches come back as numpy
        np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-5)
