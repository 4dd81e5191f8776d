"""Learning-rate schedules against their TF1 formulas, evaluated at several global steps."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorweave as tf

STEPS = [0, 1, 5, 10, 25, 100, 150]


pytestmark = pytest.mark.usefixtures("graph")


def values(make):
    step = tf.placeholder(tf.int64, [])
    lr = make(step)
    with tf.Session() as sess:
        out = [sess.run(lr, {step: s}) for s in STEPS]
    assert lr.dtype == tf.float32 and lr.shape.as_list() == []
    return np.array(out)


def check(make, formula):
    np.testing.assert_allclose(values(make), [formula(s) for s in STEPS], rtol=1e-5, atol=1e-7)


def test_exponential_decay():
    check(lambda s: tf.train.exponential_decay(0.1, s, 10, 0.5), lambda s: 0.1 * 0.5 ** (s / 10))
    check(lambda s: tf.train.exponential_decay(0.1, s, 10, 0.5, staircase=True),
          lambda s: 0.1 * 0.5 ** (s // 10))


def test_natural_exp_and_inverse_time():
    check(lambda s: tf.train.natural_exp_decay(0.1, s, 10, 0.5), lambda s: 0.1 * math.exp(-0.5 * s / 10))
    check(lambda s: tf.train.natural_exp_decay(0.1, s, 10, 0.5, staircase=True),
          lambda s: 0.1 * math.exp(-0.5 * (s // 10)))
    check(lambda s: tf.train.inverse_time_decay(0.1, s, 10, 0.5), lambda s: 0.1 / (1 + 0.5 * s / 10))
    check(lambda s: tf.train.inverse_time_decay(0.1, s, 10, 0.5, staircase=True),
          lambda s: 0.1 / (1 + 0.5 * (s // 10)))


def test_polynomial_decay():
    def poly(s, cycle=False, power=1.0, end=0.0001):
        steps = 100.0
        if cycle:
            steps = steps * max(math.ceil(s / steps), 1.0)
        else:
            s = min(s, steps)
        return (0.1 - end) * (1 - s / steps) ** power + end
    check(lambda s: tf.train.polynomial_decay(0.1, s, 100), poly)
    check(lambda s: tf.train.polynomial_decay(0.1, s, 100, end_learning_rate=0.01, power=2.0, cycle=True),
          lambda s: poly(s, True, 2.0, 0.01))


def test_cosine_decay():
    def cos(s, alpha):
        frac = min(s, 100) / 100
        return 0.1 * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * frac)) + alpha)
    check(lambda s: tf.train.cosine_decay(0.1, s, 100), lambda s: cos(s, 0.0))
    check(lambda s: tf.train.cosine_decay(0.1, s, 100, alpha=0.2), lambda s: cos(s, 0.2))


def test_piecewise_constant():
    def pw(s):
        return 1.0 if s <= 5 else 0.5 if s <= 100 else 0.1
    check(lambda s: tf.train.piecewise_constant(s, [5, 100], [1.0, 0.5, 0.1]), pw)
    check(lambda s: tf.train.piecewise_constant_decay(s, [5, 100], [1.0, 0.5, 0.1]), pw)   # TF's other name
    with pytest.raises(ValueError, match="The length of boundaries should be 1 less"):
        tf.train.piecewise_constant(tf.constant(1), [5], [1.0])
    with pytest.raises(ValueError, match="Values must have elements all with the same dtype"):
        tf.train.piecewise_constant(tf.constant(1), [5], [1.0, 2])


def test_global_step_variable_and_errors():
    gs = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(0.1, gs, 1, 0.5, name="lr")
    assert lr.op.name == "lr"
    inc = gs.assign_add(3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(inc)
        assert sess.run(lr) == pytest.approx(0.1 * 0.5 ** 3)
    for fn in (tf.train.exponential_decay, tf.train.natural_exp_decay, tf.train.inverse_time_decay):
        with pytest.raises(ValueError, match="global_step is required"):
            fn(0.1, None, 10, 0.5)
    with pytest.raises(ValueError, match="global_step is required for polynomial_decay"):
        tf.train.polynomial_decay(0.1, None, 10)
    with pytest.raises(ValueError, match="global_step is required for cosine_decay"):
        tf.train.cosine_decay(0.1, None, 10)


def test_float64_learning_rate_keeps_dtype():
    lr = tf.train.exponential_decay(tf.constant(0.1, tf.float64), tf.constant(3), 10, 0.5)
    assert lr.dtype == tf.float64


# -- regressions from the audit against TF (values recorded from TF 2.21 compat.v1) ------------
def test_cosine_decay_restarts_and_linear_cosine_decay_match_tf():
    st = tf.placeholder(tf.int32, [])
    cos = tf.train.cosine_decay_restarts(0.1, st, 4, t_mul=2.0, m_mul=0.5, alpha=0.1)
    cos1 = tf.train.cosine_decay_restarts(0.1, st, 4, t_mul=1.0)
    lin = tf.train.linear_cosine_decay(0.1, st, 20, num_periods=2, alpha=0.1, beta=0.01)
    noisy = tf.train.noisy_linear_cosine_decay(0.1, st, 20)
    assert cos.op.name == "SGDRDecay" and lin.op.name == "LinearCosineDecay"
    expected = {0: [0.1, 0.1, 0.111], 3: [0.023180196, 0.014644662, 0.033821691],
                4: [0.055000003, 0.1, 0.009594233], 7: [0.041110378, 0.014644662, 0.026911860],
                12: [0.0325, 0.1, 0.033725422], 13: [0.032283835, 0.085355341, 0.016547108],
                25: [0.011895967, 0.085355341, 0.011]}
    with tf.Session() as s:
        for step, want in expected.items():
            np.testing.assert_allclose(s.run([cos, cos1, lin], {st: step}), want, rtol=1e-5)
        assert np.isfinite(s.run(noisy, {st: 3}))


def test_piecewise_constant_refuses_float_boundaries_for_integer_x():
    step = tf.placeholder(tf.int64, [])
    with pytest.raises(ValueError, match=r"Boundaries \(.*float32.*\) must have the same dtype as x \(.*int64.*\)"):
        tf.train.piecewise_constant(step, [5.0], [1.0, 2.0])
    pw = tf.train.piecewise_constant(step, [5, 15], [1.0, 0.5, 0.1])   # int32 boundaries widen to int64
    with tf.Session() as s:
        assert [s.run(pw, {step: i}) for i in (5, 6, 16)] == pytest.approx([1.0, 0.5, 0.1])
