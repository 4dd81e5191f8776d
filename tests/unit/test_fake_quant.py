"""Quantization-aware training's fake-quantization ops (tf.fake_quant_with_min_max_args, _vars,
_vars_per_channel, their gradient ops, and tf.quantization's names for them): outputs and
gradients equal to the ones TF 2.21 recorded (fixtures/record_tf_fake_quant.py), TF's nudged
ranges, op types and attributes, and the errors TF gives."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from google.protobuf import text_format

import tensorweave as tf
from fixtures.fake_quant_cases import CASES, ERRORS, case_fetches, resolve
from fixtures.recorded import decode
from unit_helpers import run

_RECORDED = json.load(open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_fake_quant.json")))


@pytest.mark.parametrize("name", sorted(_RECORDED["cases"]))
def test_outputs_and_gradients_match_tensorflow(name):
    values = run(case_fetches(tf, CASES[name]))
    recorded = _RECORDED["cases"][name]
    assert sorted(values) == sorted(recorded)
    for key, arrays in recorded.items():
        assert len(values[key]) == len(arrays)
        for got, want in zip(values[key], map(decode, arrays)):
            assert np.asarray(got).dtype == np.float32 and np.shape(got) == want.shape
            # elementwise results are TF's to the bit; the min/max gradients are sums, in another order
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"{name}: {key}")


@pytest.mark.parametrize("name", sorted(_RECORDED["errors"]))
def test_bad_attributes_and_sizes_fail_as_in_tensorflow(name):
    path, args, kwargs = ERRORS[name]
    y = resolve(tf, path)(*[tf.constant(a) for a in args], **kwargs)
    want = _RECORDED["errors"][name]
    assert want["error"] == "InvalidArgumentError"
    with pytest.raises(tf.errors.InvalidArgumentError) as caught:
        run(y)
    message = str(caught.value)
    assert y.op.type in message
    # TF's kernel text, save for the wording of a size mismatch (TF names it through its elementwise base class)
    assert want["message"] in message or "same size" in message


def test_outputs_are_levels_of_the_nudged_range():
    # [-0.3, 1.1] over 255 steps: 0 falls between levels, so the range moves to put it on one
    x = np.linspace(-1.0, 2.0, 3001).astype(np.float32)
    y = run(tf.fake_quant_with_min_max_args(x, min=-0.3, max=1.1))
    scale = np.float32(1.4) / 255
    zero_point = np.round(0.3 / scale)
    levels = np.unique(y)
    assert 0.0 in levels and len(levels) == 256
    np.testing.assert_allclose(levels.min(), -zero_point * scale, rtol=1e-6)
    np.testing.assert_allclose(levels.max(), (255 - zero_point) * scale, rtol=1e-6)
    np.testing.assert_allclose(np.diff(levels), scale, rtol=1e-3)
    assert np.abs(y - np.clip(x, levels.min(), levels.max())).max() <= scale / 2 + 1e-7


def test_ops_carry_tfs_types_and_attributes():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.quantization.fake_quant_with_min_max_args(x, min=-1.0, max=2.0, num_bits=4, narrow_range=True)
    assert tf.fake_quant_with_min_max_args is tf.quantization.fake_quant_with_min_max_args
    assert y.op.type == "FakeQuantWithMinMaxArgs" and y.shape.as_list() == [None, 3]
    assert [y.op.get_attr(a) for a in ("min", "max", "num_bits", "narrow_range")] == [-1.0, 2.0, 4, True]
    node = [n for n in tf.get_default_graph().as_graph_def().node if n.name == y.op.name][0]
    assert sorted(node.attr) == ["max", "min", "narrow_range", "num_bits"]
    grads = tf.fake_quant_with_min_max_vars_gradient(x, x, -1.0, 1.0)
    assert grads.backprops_wrt_input.shape.as_list() == [None, 3] and grads.backprop_wrt_min.shape.ndims == 0
    per_channel = tf.fake_quant_with_min_max_vars_per_channel_gradient(x, x, [-1.0] * 3, [1.0] * 3)
    assert per_channel.backprop_wrt_max.shape.as_list() == [3]
    assert per_channel[0].op.type == "FakeQuantWithMinMaxVarsPerChannelGradient"


def test_quantization_aware_training_moves_the_range():
    # values beyond the range pull max up and min down (the gradients of the Vars op)
    x = tf.constant(np.array([-3.0, -0.5, 0.2, 2.5], np.float32))
    low, high = tf.Variable(-1.0), tf.Variable(1.0)
    loss = tf.reduce_sum(tf.square(tf.fake_quant_with_min_max_vars(x, low, high) - x))
    step = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(loss)
        for _ in range(20):
            sess.run(step)
        lo, hi, after = sess.run([low, high, loss])
    assert lo < -1.5 and hi > 1.5 and after < before / 4


def test_shape_errors_when_building():
    x = tf.constant(np.zeros([2, 3], np.float32))
    with pytest.raises(ValueError, match="rank 0"):
        tf.fake_quant_with_min_max_vars(x, [-1.0], [1.0])
    with pytest.raises(ValueError, match="must be equal"):
        tf.fake_quant_with_min_max_vars_per_channel(x, [-1.0, -1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="rank 1 to 4"):
        tf.fake_quant_with_min_max_vars_per_channel_gradient(tf.zeros([1] * 5), tf.zeros([1] * 5), [-1.0], [1.0])
    with pytest.raises((TypeError, ValueError)):
        tf.fake_quant_with_min_max_args(tf.constant([1.0], tf.float64))


def test_per_channel_sizes_checked_when_running():
    x, low = tf.placeholder(tf.float32, None), tf.placeholder(tf.float32, None)
    y = tf.fake_quant_with_min_max_vars_per_channel(x, low, [1.0, 1.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="FakeQuantWithMinMaxVarsPerChannel.*min has incorrect "
                                                             "size, expected 3 was 2"):
        run(y, {x: np.zeros([2, 3], np.float32), low: [-1.0, -1.0]})


def test_a_graph_tensorflow_wrote_imports_and_runs_as_tf_ran_it():
    # default attributes (Args' min, max, num_bits) left out, as TF writes them with strip_default_attrs
    recorded = _RECORDED["graph"]
    graph_def = text_format.Parse(recorded["pbtxt"], tf.GraphDef())
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        values = run(list(recorded["fetches"]), {"x:0": decode(recorded["feed"])})
    for got, want in zip(values, recorded["fetches"].values()):
        np.testing.assert_allclose(got, decode(want), rtol=1e-6, atol=1e-6)
