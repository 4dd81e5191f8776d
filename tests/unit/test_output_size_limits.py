"""Ops that size their output from their inputs' values refuse, before allocating, an output past
max_op_output_elements (issue 15, defect 7: Tile/Pad/OneHot asked for ~2^31 elements grew a
server past 4 GB). The shape function refuses it when the size is known while the graph is built;
the kernel when it is known only at run time (a fed size, or a graph from the wire)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors, limits

BIG = 2 ** 31   # elements: 8 GiB of float32, past the default limit (2^30)
NAMED = r"output of shape .* exceeds the limit max_op_output_elements = \d+ elements \(TENSORWEAVE_MAX_OP_OUTPUT_ELEMENTS\)"

# op type -> build(n): an op of that type whose output holds n elements (n an int or an int32/int64 tensor)
BUILDERS = {
    "Fill": lambda n: tf.fill(tf.stack([n // 4, 4]), 1.0),
    "zeros": lambda n: tf.zeros(tf.stack([n]), tf.float32),
    "ones": lambda n: tf.ones(tf.stack([n, 1]), tf.int32),
    "Range": lambda n: tf.range(n),
    "LinSpace": lambda n: tf.linspace(0.0, 1.0, n),
    "Tile": lambda n: tf.tile(tf.constant([1.0, 2.0]), tf.stack([n // 2])),
    "Pad": lambda n: tf.pad(tf.constant([1.0]), tf.stack([tf.stack([0, n - 1])])),
    "PadV2": lambda n: tf.pad(tf.constant([[1.0, 2.0]]), tf.stack([[0, 1], tf.stack([0, n // 2 - 2])]),
                              constant_values=3.0),
    "OneHot": lambda n: tf.one_hot([0, 1], n // 2),
    "BroadcastTo": lambda n: tf.broadcast_to(tf.constant(1.0), tf.stack([n])),
    "RandomUniform": lambda n: tf.random_uniform(tf.stack([n])),
    "RandomStandardNormal": lambda n: tf.random_normal(tf.stack([2, n // 2])),
}


@pytest.fixture
def small_limit():
    old = limits.override(limits.OP_OUTPUT_ELEMENTS, 1000)
    yield 1000
    limits.override(limits.OP_OUTPUT_ELEMENTS, old)


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_a_size_known_while_building_is_refused_by_the_shape_function(kind):
    with tf.Graph().as_default():
        with pytest.raises(errors.ResourceExhaustedError, match=NAMED):
            BUILDERS[kind](BIG)


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_a_size_known_only_when_run_is_refused_by_the_kernel(kind):
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int64 if kind == "Range" else tf.int32, [])
        out = BUILDERS[kind](n)
        with tf.Session() as sess:
            with pytest.raises(errors.ResourceExhaustedError, match=NAMED):
                sess.run(out, {n: BIG if kind == "Range" else BIG - 2})
            assert sess.run(tf.size(out), {n: 8}) == 8   # a size within the limit runs


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_the_limit_is_configurable_and_exact(kind, small_limit):
    with tf.Graph().as_default():
        assert np.size(tf.Session().run(BUILDERS[kind](1000))) == 1000
        with pytest.raises(errors.ResourceExhaustedError, match=r"exceeds the limit max_op_output_elements = 1000 "):
            BUILDERS[kind](1004)
