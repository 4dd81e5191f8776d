"""tf.distributions' distributions of scalars: Normal, Laplace, StudentT, Uniform, Gamma,
Exponential, Beta, Bernoulli, Categorical, and the KL divergences TF 1.15 registers between them.
Each is TF 1.15's formulas over tensorweave's ops; sampling by the random ops (RandomGamma's
implicit-reparameterization gradient makes Gamma, Beta and StudentT samples differentiable)."""
from __future__ import annotations

import math

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import constant, identity, reshape, shape, transpose
from tensorweave.ops.array.fill import fill, ones, ones_like, zeros_like
from tensorweave.ops.array.sort import where_v2
from tensorweave.ops.debugging.asserts import assert_less
from tensorweave.ops.debugging.printing import Assert
from tensorweave.ops.grouping import with_dependencies
from tensorweave.ops.math.array_composites import sequence_mask
from tensorweave.ops.math.binary import equal, logical_and, logical_or, xlogy
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import argmax, reduce_all, reduce_sum
from tensorweave.ops.math.special import betainc, digamma, igamma, lbeta, lgamma, ndtri
from tensorweave.ops.math.unary import abs, exp, is_nan, log, log1p, rsqrt, sigmoid, sign, sqrt, square
from tensorweave.ops.nn.activations import log_softmax, softmax, softplus
from tensorweave.ops.nn.impl import sigmoid_cross_entropy_with_logits, sparse_softmax_cross_entropy_with_logits
from tensorweave.ops.random import multinomial, random_gamma, random_normal, random_uniform
from tensorweave.distributions.distribution import (FULLY_REPARAMETERIZED, NOT_REPARAMETERIZED, Distribution,
                                                    RegisterKL, ScalarEvent, checked, gen_new_seed,
                                                    log_ndtr, logits_and_probs, ndtr, parameter_tensors)


def _param_shapes(*names):
    """A _param_shapes staticmethod: every named parameter has the sample shape."""
    return staticmethod(lambda sample_shape: {k: convert_to_tensor(sample_shape, dtype=dtypes.int32)
                                              for k in names})


def _nan_where(condition, value, dist, message):
    """`value` where `condition`, NaN elsewhere; with allow_nan_stats=False, `value` after a run-time
    check that `condition` holds everywhere (TF's undefined statistics)."""
    if dist.allow_nan_stats:
        nan = fill(dist.batch_shape_tensor(), np.array(np.nan, dist.dtype.as_numpy_dtype), name="nan")
        return where_v2(condition, value, nan)
    return with_dependencies([Assert(reduce_all(condition), [message])], value)


def _betainc(a, b, x):
    """betainc with its arguments broadcast to one shape (the Betainc op takes equal shapes or scalars)."""
    zero = zeros_like(a + b + x)
    return betainc(a + zero, b + zero, x + zero)


def _sample_shape(dist, n):
    return concat([[n], dist.batch_shape_tensor()], 0)


@tf_export("distributions.Normal")
class Normal(ScalarEvent):
    """tf.distributions.Normal(loc, scale, validate_args=False, allow_nan_stats=True, name="Normal"):
    N(loc, scale^2); samples are loc + scale * z (fully reparameterized)."""

    def __init__(self, loc, scale, validate_args=False, allow_nan_stats=True, name="Normal"):
        parameters = dict(locals())
        with name_scope(name, values=[loc, scale]) as name:
            self._loc, self._scale = parameter_tensors(dict(loc=loc, scale=scale), validate_args, ["scale"])
        super().__init__(self._scale.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._loc, self._scale], name)

    _param_shapes = _param_shapes("loc", "scale")
    loc = property(lambda self: self._loc, doc="The mean.")
    scale = property(lambda self: self._scale, doc="The standard deviation.")

    def _sample_n(self, n, seed=None):
        return random_normal(_sample_shape(self, n), dtype=self.dtype, seed=seed) * self.scale + self.loc

    def _z(self, x):
        with name_scope("standardize", values=[x]):
            return (x - self.loc) / self.scale

    def _log_prob(self, x):
        return -0.5 * square(self._z(x)) - (0.5 * math.log(2. * math.pi) + log(self.scale))

    def _cdf(self, x):
        return ndtr(self._z(x))

    def _log_cdf(self, x):
        return log_ndtr(self._z(x))

    def _survival_function(self, x):
        return ndtr(-self._z(x))

    def _log_survival_function(self, x):
        return log_ndtr(-self._z(x))

    def _quantile(self, p):
        return ndtri(p) * self.scale + self.loc

    def _entropy(self):
        return 0.5 * math.log(2. * math.pi * math.e) + log(self.scale * ones_like(self.loc))

    def _mean(self):
        return self.loc * ones_like(self.scale)

    def _stddev(self):
        return self.scale * ones_like(self.loc)

    _mode = _mean


@RegisterKL(Normal, Normal)
def _kl_normal_normal(a, b, name=None):
    with name_scope(name, "kl_normal_normal", [a.loc, b.loc]):
        ratio = square(a.scale) / square(b.scale)
        return square(a.loc - b.loc) / (2. * square(b.scale)) + 0.5 * (ratio - 1. - log(ratio))


@tf_export("distributions.Laplace")
class Laplace(ScalarEvent):
    """tf.distributions.Laplace(loc, scale, validate_args=False, allow_nan_stats=True, name="Laplace"):
    density exp(-|x - loc| / scale) / (2 scale); fully reparameterized."""

    def __init__(self, loc, scale, validate_args=False, allow_nan_stats=True, name="Laplace"):
        parameters = dict(locals())
        with name_scope(name, values=[loc, scale]) as name:
            self._loc, self._scale = parameter_tensors(dict(loc=loc, scale=scale), validate_args, ["scale"])
            super().__init__(self._loc.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                             [self._loc, self._scale], name)

    _param_shapes = _param_shapes("loc", "scale")
    loc = property(lambda self: self._loc, doc="The location (mean, median and mode).")
    scale = property(lambda self: self._scale, doc="The scale.")

    def _sample_n(self, n, seed=None):
        low = np.nextafter(self.dtype.as_numpy_dtype(-1.), self.dtype.as_numpy_dtype(0.))
        u = random_uniform(_sample_shape(self, n), minval=low, maxval=1., dtype=self.dtype, seed=seed)
        return self.loc - self.scale * sign(u) * log1p(-abs(u))

    def _z(self, x):
        return (x - self.loc) / self.scale

    def _log_prob(self, x):
        return -abs(self._z(x)) - (math.log(2.) + log(self.scale))

    def _cdf(self, x):
        z = self._z(x)
        return 0.5 + 0.5 * sign(z) * (1. - exp(-abs(z)))

    def _log_cdf(self, x):
        return _log_cdf_laplace(self._z(x))

    def _log_survival_function(self, x):
        return _log_cdf_laplace(-self._z(x))

    def _entropy(self):
        return math.log(2.) + 1. + log(self.scale + zeros_like(self.loc))

    def _mean(self):
        return self.loc + zeros_like(self.scale)

    def _stddev(self):
        return math.sqrt(2.) * self.scale + zeros_like(self.loc)

    _mode = _mean


def _log_cdf_laplace(z):
    """log of the standard Laplace cdf, without cancellation in either tail."""
    return where_v2(z < 0., z - math.log(2.), log1p(-0.5 * exp(-abs(z))))


@tf_export("distributions.StudentT")
class StudentT(ScalarEvent):
    """tf.distributions.StudentT(df, loc, scale, validate_args=False, allow_nan_stats=True,
    name="StudentT"): Student's t with `df` degrees of freedom, shifted by loc and scaled by scale;
    mean NaN for df <= 1, variance inf for 1 < df <= 2 (NaN for df <= 1)."""

    def __init__(self, df, loc, scale, validate_args=False, allow_nan_stats=True, name="StudentT"):
        parameters = dict(locals())
        with name_scope(name, values=[df, loc, scale]) as name:
            self._df, self._loc, self._scale = parameter_tensors(dict(df=df, loc=loc, scale=scale), validate_args,
                                                                 ["df"])
        super().__init__(self._scale.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._df, self._loc, self._scale], name)

    _param_shapes = _param_shapes("df", "loc", "scale")
    df = property(lambda self: self._df, doc="The degrees of freedom.")
    loc = property(lambda self: self._loc, doc="The location.")
    scale = property(lambda self: self._scale, doc="The scale.")

    def _sample_n(self, n, seed=None):
        normal = random_normal(_sample_shape(self, n), dtype=self.dtype, seed=seed)
        df = self.df * ones(self.batch_shape_tensor(), dtype=self.dtype)
        gamma = random_gamma([n], 0.5 * df, beta=0.5, dtype=self.dtype, seed=gen_new_seed(seed, "student_t"))
        return normal * rsqrt(gamma / df) * self.scale + self.loc

    def _log_prob(self, x):
        y = (x - self.loc) / self.scale
        return -0.5 * (self.df + 1.) * log1p(square(y) / self.df) - (
            log(abs(self.scale)) + 0.5 * log(self.df) + 0.5 * math.log(math.pi) + lgamma(0.5 * self.df)
            - lgamma(0.5 * (self.df + 1.)))

    def _cdf(self, x):
        y = (x - self.loc) / abs(self.scale)
        neg_cdf = 0.5 * _betainc(0.5 * self.df, 0.5, self.df / (square(y) + self.df))
        return where_v2(y < 0., neg_cdf, 1. - neg_cdf)

    def _entropy(self):
        df = self.df * ones(self.batch_shape_tensor(), dtype=self.dtype)
        half_df_and_half = concat([df[..., None], ones_like(df)[..., None]], -1) / 2.
        return (log(abs(self.scale)) + 0.5 * log(self.df) + lbeta(half_df_and_half)
                + 0.5 * (self.df + 1.) * (digamma(0.5 * (self.df + 1.)) - digamma(0.5 * self.df)))

    def _mean(self):
        mean = self.loc * ones(self.batch_shape_tensor(), dtype=self.dtype)
        return _nan_where(self.df > 1., mean, self, "mean not defined for components of df <= 1")

    def _variance(self):
        defined = self.df > 2.
        var = (ones(self.batch_shape_tensor(), dtype=self.dtype) * square(self.scale) * self.df
               / where_v2(defined, self.df - 2., ones_like(self.df)))
        var = where_v2(defined, var, fill(self.batch_shape_tensor(), np.array(np.inf, self.dtype.as_numpy_dtype)))
        return _nan_where(self.df > 1., var, self, "variance not defined for components of df <= 1")

    def _mode(self):
        return identity(self.loc)


@tf_export("distributions.Uniform")
class Uniform(ScalarEvent):
    """tf.distributions.Uniform(low=0., high=1., validate_args=False, allow_nan_stats=True, name="Uniform"):
    uniform on [low, high); samples are low + (high - low) * u (fully reparameterized)."""

    def __init__(self, low=0., high=1., validate_args=False, allow_nan_stats=True, name="Uniform"):
        parameters = dict(locals())
        with name_scope(name, values=[low, high]) as name:
            self._low, self._high = parameter_tensors(dict(low=low, high=high), False)
            if validate_args:
                self._high = checked(self._high, [assert_less(self._low, self._high,
                                                              message="uniform not defined when low >= high.")])
        super().__init__(self._low.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._low, self._high], name)

    _param_shapes = _param_shapes("low", "high")
    low = property(lambda self: self._low, doc="The lower bound.")
    high = property(lambda self: self._high, doc="The upper bound.")

    def range(self, name="range"):
        """high - low."""
        with self._name_scope(name):
            return self.high - self.low

    def _sample_n(self, n, seed=None):
        return self.low + self.range() * random_uniform(_sample_shape(self, n), dtype=self.dtype, seed=seed)

    def _prob(self, x):
        x = x * ones(self.batch_shape_tensor(), dtype=x.dtype)
        inside = where_v2(logical_or(x < self.low, x >= self.high), zeros_like(x), ones_like(x) / self.range())
        return where_v2(is_nan(x), x, inside)

    def _cdf(self, x):
        x = x * ones(self.batch_shape_tensor(), dtype=x.dtype)
        return where_v2(x >= self.high, ones_like(x), where_v2(x < self.low, zeros_like(x),
                                                                  (x - self.low) / self.range()))

    def _entropy(self):
        return log(self.range())

    def _mean(self):
        return (self.low + self.high) / 2.

    def _variance(self):
        return square(self.range()) / 12.

    def _stddev(self):
        return self.range() / math.sqrt(12.)


@tf_export("distributions.Gamma")
class Gamma(ScalarEvent):
    """tf.distributions.Gamma(concentration, rate, validate_args=False, allow_nan_stats=True, name="Gamma"):
    density rate^c x^(c-1) exp(-rate x) / Gamma(c); samples are differentiable in both parameters
    (RandomGamma's implicit reparameterization gradient). The mode is NaN for concentration <= 1."""

    def __init__(self, concentration, rate, validate_args=False, allow_nan_stats=True, name="Gamma"):
        parameters = dict(locals())
        with name_scope(name, values=[concentration, rate]) as name:
            self._concentration, self._rate = parameter_tensors(
                dict(concentration=concentration, rate=rate), validate_args, ["concentration", "rate"])
        super().__init__(self._concentration.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._concentration, self._rate], name)

    _param_shapes = _param_shapes("concentration", "rate")
    concentration = property(lambda self: self._concentration, doc="The shape parameter.")
    rate = property(lambda self: self._rate, doc="The inverse scale.")

    def _sample_n(self, n, seed=None):
        return random_gamma([n], self.concentration, beta=self.rate, dtype=self.dtype, seed=seed)

    def _valid_sample(self, x):
        return checked(x, [assert_less(0., x, message="x must be positive")] if self.validate_args else [])

    def _log_prob(self, x):
        x = self._valid_sample(x)
        return (xlogy(self.concentration - 1., x) - self.rate * x
                - (lgamma(self.concentration) - self.concentration * log(self.rate)))

    def _cdf(self, x):
        return igamma(self.concentration, self.rate * self._valid_sample(x))

    def _entropy(self):
        return (self.concentration - log(self.rate) + lgamma(self.concentration)
                + (1. - self.concentration) * digamma(self.concentration))

    def _mean(self):
        return self.concentration / self.rate

    def _variance(self):
        return self.concentration / square(self.rate)

    def _stddev(self):
        return sqrt(self.concentration) / self.rate

    def _mode(self):
        return _nan_where(self.concentration > 1., (self.concentration - 1.) / self.rate, self,
                          "mode not defined when any concentration <= 1")


@RegisterKL(Gamma, Gamma)
def _kl_gamma_gamma(g0, g1, name=None):
    with name_scope(name, "kl_gamma_gamma", [g0.concentration, g0.rate, g1.concentration, g1.rate]):
        return ((g0.concentration - g1.concentration) * digamma(g0.concentration)
                + lgamma(g1.concentration) - lgamma(g0.concentration)
                + g1.concentration * log(g0.rate) - g1.concentration * log(g1.rate)
                + g0.concentration * (g1.rate / g0.rate - 1.))


@tf_export("distributions.Exponential")
class Exponential(Gamma):
    """tf.distributions.Exponential(rate, validate_args=False, allow_nan_stats=True, name="Exponential"):
    Gamma(1, rate); samples are -log(u) / rate. KL between two is Gamma's."""

    def __init__(self, rate, validate_args=False, allow_nan_stats=True, name="Exponential"):
        parameters = dict(locals())
        with name_scope(name, values=[rate]) as name:
            self._rate = convert_to_tensor(rate, name="rate")
        super().__init__(ones([], dtype=self._rate.dtype), self._rate, validate_args, allow_nan_stats, name)
        self._parameters = parameters

    _param_shapes = _param_shapes("rate")

    def _log_survival_function(self, x):
        return self._log_prob(x) - log(self.rate)

    def _sample_n(self, n, seed=None):
        tiny = np.finfo(self.dtype.as_numpy_dtype).tiny
        u = random_uniform(concat([[n], shape(self.rate)], 0), minval=tiny, maxval=1., seed=seed, dtype=self.dtype)
        return -log(u) / self.rate


@tf_export("distributions.Beta")
class Beta(ScalarEvent):
    """tf.distributions.Beta(concentration1=None, concentration0=None, validate_args=False,
    allow_nan_stats=True, name="Beta"): density x^(c1-1) (1-x)^(c0-1) / B(c1, c0) on (0, 1); samples
    are g1 / (g1 + g0) of two Gamma samples (fully reparameterized)."""

    def __init__(self, concentration1=None, concentration0=None, validate_args=False, allow_nan_stats=True,
                 name="Beta"):
        parameters = dict(locals())
        with name_scope(name, values=[concentration1, concentration0]) as name:
            self._concentration1, self._concentration0 = parameter_tensors(
                dict(concentration1=concentration1, concentration0=concentration0), validate_args,
                ["concentration1", "concentration0"])
            self._total_concentration = self._concentration1 + self._concentration0
        super().__init__(self._total_concentration.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats,
                         parameters, [self._concentration1, self._concentration0, self._total_concentration], name)

    _param_shapes = _param_shapes("concentration1", "concentration0")
    concentration1 = property(lambda self: self._concentration1, doc="The concentration of a 1 outcome.")
    concentration0 = property(lambda self: self._concentration0, doc="The concentration of a 0 outcome.")
    total_concentration = property(lambda self: self._total_concentration, doc="concentration1 + concentration0.")

    def _sample_n(self, n, seed=None):
        ones_ = ones_like(self.total_concentration)
        g1 = random_gamma([n], ones_ * self.concentration1, dtype=self.dtype, seed=seed)
        g0 = random_gamma([n], ones_ * self.concentration0, dtype=self.dtype, seed=gen_new_seed(seed, "beta"))
        return g1 / (g1 + g0)

    def _log_normalization(self):
        return lgamma(self.concentration1) + lgamma(self.concentration0) - lgamma(self.total_concentration)

    def _log_prob(self, x):
        if self.validate_args:
            x = checked(x, [assert_less(0., x, message="sample must be positive"),
                            assert_less(x, 1., message="sample must be less than `1`.")])
        return (xlogy(self.concentration1 - 1., x) + (self.concentration0 - 1.) * log1p(-x)
                - self._log_normalization())

    def _cdf(self, x):
        return _betainc(self.concentration1, self.concentration0, x)

    def _entropy(self):
        return (self._log_normalization() - (self.concentration1 - 1.) * digamma(self.concentration1)
                - (self.concentration0 - 1.) * digamma(self.concentration0)
                + (self.total_concentration - 2.) * digamma(self.total_concentration))

    def _mean(self):
        return self.concentration1 / self.total_concentration

    def _variance(self):
        return self._mean() * (1. - self._mean()) / (1. + self.total_concentration)

    def _mode(self):
        return _nan_where(logical_and(self.concentration1 > 1., self.concentration0 > 1.),
                          (self.concentration1 - 1.) / (self.total_concentration - 2.), self,
                          "Mode undefined for concentration1 <= 1 or concentration0 <= 1.")


@RegisterKL(Beta, Beta)
def _kl_beta_beta(d1, d2, name=None):
    with name_scope(name, "kl_beta_beta", [d1.concentration1, d1.concentration0, d2.concentration1,
                                           d2.concentration0]):
        return (d2._log_normalization() - d1._log_normalization()
                - digamma(d1.concentration1) * (d2.concentration1 - d1.concentration1)
                - digamma(d1.concentration0) * (d2.concentration0 - d1.concentration0)
                + digamma(d1.total_concentration) * (d2.total_concentration - d1.total_concentration))


@tf_export("distributions.Bernoulli")
class Bernoulli(ScalarEvent):
    """tf.distributions.Bernoulli(logits=None, probs=None, dtype=tf.int32, validate_args=False,
    allow_nan_stats=True, name="Bernoulli"): 1 with probability probs = sigmoid(logits), else 0."""

    def __init__(self, logits=None, probs=None, dtype=dtypes.int32, validate_args=False, allow_nan_stats=True,
                 name="Bernoulli"):
        parameters = dict(locals())
        with name_scope(name) as name:
            self._logits, self._probs = logits_and_probs(logits, probs, False, validate_args)
        super().__init__(dtypes.as_dtype(dtype), NOT_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._logits, self._probs], name)

    _param_shapes = _param_shapes("logits")
    logits = property(lambda self: self._logits, doc="The log-odds of a 1.")
    probs = property(lambda self: self._probs, doc="The probability of a 1.")

    def _sample_n(self, n, seed=None):
        u = random_uniform(_sample_shape(self, n), seed=seed, dtype=self.probs.dtype)
        return cast(u < self.probs, self.dtype)

    def _log_prob(self, event):
        if self.validate_args:
            binary = logical_or(equal(event, zeros_like(event)), equal(event, ones_like(event)))
            event = checked(event, [Assert(reduce_all(binary), ["event must be 0 or 1"])])
        event = cast(event, self.logits.dtype)
        logits = self.logits
        if not (event.shape.is_fully_defined() and logits.shape.is_fully_defined() and event.shape == logits.shape):
            logits, event = ones_like(event) * logits, ones_like(logits) * event
        return -sigmoid_cross_entropy_with_logits(labels=event, logits=logits)

    def _entropy(self):
        return -self.logits * (sigmoid(self.logits) - 1.) + softplus(-self.logits)

    def _mean(self):
        return identity(self.probs)

    def _variance(self):
        return self.probs * (1. - self.probs)

    def _mode(self):
        return cast(self.probs > 0.5, self.dtype)


@RegisterKL(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(a, b, name=None):
    with name_scope(name, "kl_bernoulli_bernoulli", [a.logits, b.logits]):
        return (sigmoid(a.logits) * (softplus(-b.logits) - softplus(-a.logits))
                + sigmoid(-a.logits) * (softplus(b.logits) - softplus(a.logits)))


@tf_export("distributions.Categorical")
class Categorical(Distribution):
    """tf.distributions.Categorical(logits=None, probs=None, dtype=tf.int32, validate_args=False,
    allow_nan_stats=True, name="Categorical"): a class index in [0, K) with probabilities softmax(logits)
    (or probs) over the last dimension; the other dimensions are the batch."""

    def __init__(self, logits=None, probs=None, dtype=dtypes.int32, validate_args=False, allow_nan_stats=True,
                 name="Categorical"):
        parameters = dict(locals())
        with name_scope(name, values=[logits, probs]) as name:
            self._logits, self._probs = logits_and_probs(logits, probs, True, validate_args)
            static = self._logits.shape.with_rank_at_least(1)
            events = static.as_list()[-1] if static.ndims is not None else None
            self._event_size = (constant(events, dtype=dtypes.int32, name="event_size") if events is not None
                                else shape(self._logits)[-1])
        super().__init__(dtypes.as_dtype(dtype), NOT_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._logits, self._probs], name)

    event_size = property(lambda self: self._event_size, doc="The number of classes (a scalar int32 tensor).")
    logits = property(lambda self: self._logits, doc="The log-probabilities (up to a constant) of the classes.")
    probs = property(lambda self: self._probs, doc="The probabilities of the classes.")

    def _batch_shape(self):
        return self.logits.shape[:-1]

    def _batch_shape_tensor(self):
        return shape(self.logits)[:-1]

    def _event_shape(self):
        return TensorShape([])

    def _event_shape_tensor(self):
        return constant([], dtype=dtypes.int32)

    def _sample_n(self, n, seed=None):
        logits_2d = self.logits if self.logits.shape.ndims == 2 else reshape(self.logits, [-1, self.event_size])
        draws = multinomial(logits_2d, n, seed=seed, output_dtype=dtypes.int64 if self.dtype.size > 4 else dtypes.int32)
        draws = reshape(transpose(draws), concat([[n], self.batch_shape_tensor()], 0))
        return cast(draws, self.dtype)

    def _broadcast_event(self, k, params):
        """k (as integers) and params[..., K] broadcast to each other's batch shape (TF's
        _broadcast_cat_event_and_params)."""
        if k.dtype.is_floating:
            k = cast(k, dtypes.int32)
        elif not k.dtype.is_integer:
            raise TypeError(f"`value` should have integer `dtype` or `self.dtype` ({self.dtype})")
        if not (params.shape.ndims is not None and params.shape[:-1].is_fully_defined()
                and k.shape.is_fully_defined() and params.shape[:-1] == k.shape):
            params = params * ones_like(k[..., None], dtype=params.dtype)
            k = k * ones(shape(params)[:-1], dtype=k.dtype)
        return k, params

    def _log_prob(self, k):
        k, logits = self._broadcast_event(k, self.logits)
        return -sparse_softmax_cross_entropy_with_logits(labels=k, logits=logits)

    def _cdf(self, k):
        k, probs = self._broadcast_event(k, self.probs)
        below = sequence_mask(k, self.event_size, dtype=probs.dtype)
        return reduce_sum(below * probs, axis=-1)

    def _entropy(self):
        return -reduce_sum(log_softmax(self.logits) * self.probs, axis=-1)

    def _mode(self):
        mode = cast(argmax(self.logits, axis=-1), self.dtype)
        mode.set_shape(self.batch_shape)
        return mode


@RegisterKL(Categorical, Categorical)
def _kl_categorical_categorical(a, b, name=None):
    with name_scope(name, "kl_categorical_categorical", [a.logits, b.logits]):
        return reduce_sum(softmax(a.logits) * (log_softmax(a.logits) - log_softmax(b.logits)), axis=-1)
