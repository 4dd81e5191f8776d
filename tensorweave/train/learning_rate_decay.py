"""TF1 learning-rate schedules: tensors computed from the global step each step."""
from __future__ import annotations

import math

from tensorweave.framework import api, dtypes
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import constant, identity
from tensorweave.ops.array.sort import where
from tensorweave.ops.control_flow.cond import cond
from tensorweave.ops.math.binary import add, equal, greater, maximum, minimum, multiply, pow, subtract, truediv
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.unary import ceil, cos, exp, floor, log, negative, sqrt
from tensorweave.ops.random import random_normal


def _check_step(global_step, fn: str) -> None:
    if global_step is None:
        raise ValueError(f"global_step is required for {fn}.")


def _cast(x, dtype):
    x = convert_to_tensor(x)   # a Variable (the global step) becomes a fresh read
    return x if x.dtype == dtype else cast(x, dtype)


def _lr_and_p(learning_rate, global_step, decay_steps, staircase: bool):
    lr = convert_to_tensor(learning_rate, name="learning_rate")
    dtype = lr.dtype
    p = truediv(_cast(global_step, dtype), _cast(decay_steps, dtype))
    if staircase:
        p = floor(p)
    return lr, dtype, p


@tf_export("train.exponential_decay")
def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase: bool = False, name=None):
    """tf.train.exponential_decay: learning_rate * decay_rate ^ (global_step / decay_steps)
    (the exponent floored when staircase)."""
    _check_step(global_step, "exponential_decay")
    with api.name_scope(name, "ExponentialDecay") as scope:
        lr, dtype, p = _lr_and_p(learning_rate, global_step, decay_steps, staircase)
        return multiply(lr, pow(_cast(decay_rate, dtype), p), name=scope)


@tf_export("train.natural_exp_decay")
def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase: bool = False, name=None):
    """tf.train.natural_exp_decay: learning_rate * exp(-decay_rate * global_step / decay_steps)."""
    _check_step(global_step, "natural_exp_decay")
    with api.name_scope(name, "NaturalExpDecay") as scope:
        lr, dtype, p = _lr_and_p(learning_rate, global_step, decay_steps, staircase)
        exponent = exp(multiply(negative(_cast(decay_rate, dtype)), p))
        return multiply(lr, exponent, name=scope)


@tf_export("train.inverse_time_decay")
def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase: bool = False, name=None):
    """tf.train.inverse_time_decay: learning_rate / (1 + decay_rate * global_step / decay_steps)."""
    _check_step(global_step, "inverse_time_decay")
    with api.name_scope(name, "InverseTimeDecay") as scope:
        lr, dtype, p = _lr_and_p(learning_rate, global_step, decay_steps, staircase)
        denom = add(constant(1, dtype=dtype), multiply(_cast(decay_rate, dtype), p))
        return truediv(lr, denom, name=scope)


@tf_export("train.polynomial_decay")
def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001, power=1.0,
                     cycle: bool = False, name=None):
    """tf.train.polynomial_decay: (lr - end) * (1 - step / decay_steps) ^ power + end, with step
    capped at decay_steps, or (cycle) decay_steps stretched to the next multiple above step."""
    _check_step(global_step, "polynomial_decay")
    with api.name_scope(name, "PolynomialDecay") as scope:
        lr = convert_to_tensor(learning_rate, name="learning_rate")
        dtype = lr.dtype
        end_lr = _cast(end_learning_rate, dtype)
        power = _cast(power, dtype)
        step = _cast(global_step, dtype)
        steps = _cast(decay_steps, dtype)
        if cycle:
            # the first multiple of decay_steps above global_step (1 when the step is 0)
            multiplier = maximum(ceil(truediv(step, steps)),
                                          constant(1, dtype=dtype))
            steps = multiply(steps, multiplier)
        else:
            step = minimum(step, steps)
        p = truediv(step, steps)
        one = constant(1, dtype=dtype)
        return add(multiply(subtract(lr, end_lr),
                                              pow(subtract(one, p), power)),
                            end_lr, name=scope)


@tf_export("train.cosine_decay")
def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """tf.train.cosine_decay: lr * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) /
    decay_steps)) + alpha)."""
    _check_step(global_step, "cosine_decay")
    with api.name_scope(name, "CosineDecay") as scope:
        lr = convert_to_tensor(learning_rate, name="learning_rate")
        dtype = lr.dtype
        steps = _cast(decay_steps, dtype)
        step = minimum(_cast(global_step, dtype), steps)
        fraction = truediv(step, steps)
        c = lambda v: constant(v, dtype=dtype)  # noqa: E731
        cosine = multiply(c(0.5), add(c(1.0), cos(multiply(c(math.pi),
                                                                                              fraction))))
        a = _cast(alpha, dtype)
        decayed = add(multiply(subtract(c(1.0), a), cosine), a)
        return multiply(lr, decayed, name=scope)


@tf_export("train.piecewise_constant", "train.piecewise_constant_decay")
def piecewise_constant(x, boundaries, values, name=None):
    """tf.train.piecewise_constant: values[0] while x <= boundaries[0], values[i] while
    boundaries[i-1] < x <= boundaries[i], values[-1] after the last boundary."""
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with api.name_scope(name, "PiecewiseConstant") as scope:
        x = convert_to_tensor(x)
        b_tensors = []
        for b in boundaries:
            # never converted to x's dtype: 5.5 must not silently become 5 (TF's rule)
            b = convert_to_tensor(b)
            if b.dtype.base_dtype != x.dtype.base_dtype:
                if b.dtype.base_dtype == dtypes.int32 and x.dtype.base_dtype == dtypes.int64:
                    b = cast(b, x.dtype.base_dtype)
                else:
                    raise ValueError(f"Boundaries ({b.dtype.base_dtype}) must have the same dtype as x "
                                     f"({x.dtype.base_dtype}).")
            b_tensors.append(b)
        v_tensors = [convert_to_tensor(v) for v in values]
        for v in v_tensors[1:]:
            if v.dtype.base_dtype != v_tensors[0].dtype.base_dtype:
                raise ValueError(f"Values must have elements all with the same dtype "
                                 f"({v_tensors[0].dtype.base_dtype} vs {v.dtype.base_dtype}).")
        result = v_tensors[0]
        for b, v in zip(b_tensors, v_tensors[1:]):
            result = where(greater(x, b), v, result)
        return identity(result, name=scope)


@tf_export("train.cosine_decay_restarts")
def cosine_decay_restarts(learning_rate, global_step, first_decay_steps, t_mul=2.0, m_mul=1.0, alpha=0.0,
                          name=None):
    """tf.train.cosine_decay_restarts (SGDR): cosine decay restarted every period, the i-th period
    t_mul^i times as long and its peak m_mul^i times as high."""
    _check_step(global_step, "cosine_decay_restarts")
    with api.name_scope(name, "SGDRDecay") as scope:
        lr = convert_to_tensor(learning_rate, name="initial_learning_rate")
        dtype = lr.dtype
        c = lambda v: constant(v, dtype=dtype)  # noqa: E731
        first = _cast(first_decay_steps, dtype)
        alpha_t, t_mul_t, m_mul_t = _cast(alpha, dtype), _cast(t_mul, dtype), _cast(m_mul, dtype)
        fraction = truediv(_cast(global_step, dtype), first)

        def geometric():
            i_restart = floor(truediv(
                log(subtract(c(1.0), multiply(fraction, subtract(c(1.0), t_mul_t)))),
                log(t_mul_t)))
            sum_r = truediv(subtract(c(1.0), pow(t_mul_t, i_restart)),
                                     subtract(c(1.0), t_mul_t))
            return i_restart, truediv(subtract(fraction, sum_r), pow(t_mul_t, i_restart))

        def arithmetic():
            i_restart = floor(fraction)
            return i_restart, subtract(fraction, i_restart)

        if isinstance(t_mul, (int, float)):
            i_restart, done = arithmetic() if t_mul == 1.0 else geometric()
        else:
            i_restart, done = cond(equal(t_mul_t, c(1.0)), arithmetic, geometric)
        m_fac = pow(m_mul_t, i_restart)
        cosine = multiply(multiply(c(0.5), m_fac),
                                   add(c(1.0), cos(multiply(c(math.pi), done))))
        decayed = add(multiply(subtract(c(1.0), alpha_t), cosine), alpha_t)
        return multiply(lr, decayed, name=scope)


def _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta, scope_name, name,
                   noise=None):
    with api.name_scope(name, scope_name) as scope:
        lr = convert_to_tensor(learning_rate, name="learning_rate")
        dtype = lr.dtype
        c = lambda v: constant(v, dtype=dtype)  # noqa: E731
        steps = _cast(decay_steps, dtype)
        step = minimum(_cast(global_step, dtype), steps)
        linear = truediv(subtract(steps, step), steps)
        if noise is not None:
            linear = add(linear, noise(step, dtype))
        fraction = multiply(multiply(c(2.0), _cast(num_periods, dtype)),
                                     truediv(step, steps))
        cosine = multiply(c(0.5), add(c(1.0), cos(multiply(c(math.pi), fraction))))
        decayed = add(multiply(add(_cast(alpha, dtype), linear), cosine),
                               _cast(beta, dtype))
        return multiply(lr, decayed, name=scope)


@tf_export("train.linear_cosine_decay")
def linear_cosine_decay(learning_rate, global_step, decay_steps, num_periods=0.5, alpha=0.0, beta=0.001,
                        name=None):
    """tf.train.linear_cosine_decay: lr * ((alpha + (decay_steps - step) / decay_steps) *
    0.5 * (1 + cos(2 pi num_periods step / decay_steps)) + beta), step capped at decay_steps."""
    _check_step(global_step, "linear_cosine_decay")
    return _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta,
                          "LinearCosineDecay", name)


@tf_export("train.noisy_linear_cosine_decay")
def noisy_linear_cosine_decay(learning_rate, global_step, decay_steps, initial_variance=1.0, variance_decay=0.55,
                              num_periods=0.5, alpha=0.0, beta=0.001, name=None):
    """tf.train.noisy_linear_cosine_decay: linear_cosine_decay with Gaussian noise of variance
    initial_variance / (1 + step)^variance_decay added to the linear part."""
    _check_step(global_step, "noisy_linear_cosine_decay")

    def noise(step, dtype):
        one = constant(1.0, dtype=dtype)
        variance = truediv(_cast(initial_variance, dtype),
                                    pow(add(one, step), _cast(variance_decay, dtype)))
        return random_normal([], stddev=sqrt(variance), dtype=dtype)
    return _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta,
                          "NoisyLinearCosineDecay", name, noise)
