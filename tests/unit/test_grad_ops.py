"""TF's ops of the gradients of y = f(x) (SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad,
ReciprocalGrad: dy times f'(x), from y and dy): their kernels give TF's bits, tf.gradients builds
first and second derivatives of them as TF does, and a graph TF wrote with them imports and runs
(values recorded from TF 2.21: fixtures/record_tf_grad_ops.py)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.recorded import decode, load_graph_def
from tensorweave.ops.helpers import make_op

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_graph_defs")
with open(os.path.join(HERE, "grad_ops.json")) as _f:
    RECORDED = json.load(_f)
GRAD_OPS = {"SigmoidGrad", "TanhGrad", "SqrtGrad", "RsqrtGrad", "ReciprocalGrad"}
pytestmark = pytest.mark.usefixtures("graph")


@pytest.mark.parametrize("key", sorted(RECORDED["kernels"]))
def test_each_kernel_gives_tfs_bits(key):
    op_type = key.split("/")[0]
    case = RECORDED["kernels"][key]
    y, dy, want = decode(case["y"]), decode(case["dy"]), decode(case["z"])
    py, pdy = tf.placeholder(y.dtype, [None]), tf.placeholder(dy.dtype, [None])
    z = make_op(op_type, [py, pdy]).outputs[0]
    with tf.Session() as sess:
        got = sess.run(z, {py: y, pdy: dy})
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))


def _tf_graph():
    """The recorder's graph, built here: its constants and feed from the same random state."""
    rng = np.random.RandomState(6)
    x = tf.placeholder(tf.float32, [None, 5], name="x")
    c = [tf.constant(rng.standard_normal(5).astype(np.float32)) for _ in range(6)]
    loss = tf.reduce_sum(tf.sigmoid(x) * c[0] + tf.tanh(x - 1.0) * c[1] + tf.sqrt(x) * c[2]
                         + tf.math.rsqrt(x) * c[3] + tf.math.reciprocal(x) * c[4])
    dx = tf.gradients(loss, x)[0]
    ddx = tf.gradients(tf.reduce_sum(dx * c[5]), x)[0]
    return x, rng.uniform(0.2, 3.0, (4, 5)).astype(np.float32), loss, dx, ddx


def test_gradients_are_built_of_the_grad_ops_and_give_tfs_derivatives():
    x, feed, loss, dx, ddx = _tf_graph()
    recorded = RECORDED["graph"]
    np.testing.assert_array_equal(feed, decode(recorded["feeds"]["x:0"]))
    assert GRAD_OPS <= {op.type for op in tf.get_default_graph().get_operations()}
    with tf.Session() as sess:
        got = sess.run([loss, dx, ddx], {x: feed})
    for value, name in zip(got, ("loss:0", "dx:0", "ddx:0")):
        np.testing.assert_allclose(value, decode(recorded["fetches"][name]), rtol=2e-6, atol=1e-6)


def test_a_graph_tf_wrote_with_the_grad_ops_imports_and_runs_as_tf_ran_it():
    recorded = RECORDED["graph"]
    assert GRAD_OPS <= set(recorded["ops"])
    tf.import_graph_def(load_graph_def(os.path.join(HERE, "grad_ops.pb"), tf.GraphDef()), name="")
    assert sorted({op.type for op in tf.get_default_graph().get_operations()}) == recorded["ops"]
    with tf.Session() as sess:
        for name, want in recorded["fetches"].items():
            got = sess.run(name, {k: decode(v) for k, v in recorded["feeds"].items()})
            np.testing.assert_allclose(got, decode(want), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("fn, grad_op", [(tf.sigmoid, "SigmoidGrad"), (tf.tanh, "TanhGrad")])
def test_complex_gradients_conjugate_the_output_as_tf(fn, grad_op):
    """TF's _SigmoidGrad and _TanhGrad pass conj(y) to the op (the derivative's conjugate)."""
    z = np.array([0.3 + 0.4j, -1.2 + 0.1j, 0.5 - 2.0j], np.complex64)
    dy = np.array([1.0 - 0.5j, 0.25 + 2.0j, -1.0 + 0.0j], np.complex64)
    x = tf.placeholder(tf.complex64, [3])
    y = fn(x)
    grad = tf.gradients(y, x, grad_ys=tf.constant(dy))[0]
    assert grad.op.type == grad_op
    with tf.Session() as sess:
        y_value, got = sess.run([y, grad], {x: z})
    derivative = y_value * (1 - y_value) if grad_op == "SigmoidGrad" else 1 - y_value * y_value
    np.testing.assert_allclose(got, dy * np.conj(derivative), rtol=1e-5)
