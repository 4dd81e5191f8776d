"""tf.distributions' distributions of vectors (the event is the last dimension): Dirichlet,
DirichletMultinomial and Multinomial, with TF 1.15's formulas and the Dirichlet-Dirichlet KL."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import reshape, shape
from tensorweave.ops.array.diag import matrix_set_diag
from tensorweave.ops.array.fill import fill, ones, ones_like
from tensorweave.ops.array.gather import one_hot
from tensorweave.ops.array.sort import where_v2
from tensorweave.ops.debugging.asserts import assert_equal, assert_less, assert_near, assert_non_negative
from tensorweave.ops.debugging.printing import Assert
from tensorweave.ops.grouping import with_dependencies
from tensorweave.ops.math.array_composites import sequence_mask
from tensorweave.ops.math.binary import equal
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.linalg import matmul
from tensorweave.ops.math.reduction import reduce_all, reduce_max, reduce_sum
from tensorweave.ops.math.special import digamma, lbeta
from tensorweave.ops.math.unary import floor, log, rsqrt, sqrt
from tensorweave.ops.nn.activations import log_softmax
from tensorweave.ops.random import multinomial, random_gamma
from tensorweave.distributions.distribution import (FULLY_REPARAMETERIZED, NOT_REPARAMETERIZED, Distribution,
                                                    RegisterKL, checked, gen_new_seed, log_combinations,
                                                    logits_and_probs, parameter_tensors)


class _VectorEvent(Distribution):
    """Events along the last dimension of `self._event_parent`; the batch is the dimensions before it."""

    def _batch_shape(self):
        return self._event_parent.shape.with_rank_at_least(1)[:-1]

    def _batch_shape_tensor(self):
        return shape(self._event_parent)[:-1]

    def _event_shape(self):
        return self._event_parent.shape.with_rank_at_least(1)[-1:]

    def _event_shape_tensor(self):
        return shape(self._event_parent)[-1:]

    def _covariance(self):
        """-x_i x_j off the diagonal (x: the means times _variance_scale_term), the variances on it."""
        x = self._variance_scale_term() * self._mean()
        return matrix_set_diag(-matmul(x[..., None], x[..., None, :]), self._variance())


def _whole_numbers(x, what: str) -> list:
    """validate_args's checks that `x` holds non-negative whole numbers."""
    return [assert_non_negative(x, message=f"{what} must be non-negative"),
            Assert(reduce_all(equal(x, floor(x))), [f"{what} cannot contain fractional components."])]


def _count_checks(total_count, counts, validate_args: bool, what: str) -> list:
    """validate_args's checks of counts: whole numbers summing to total_count."""
    if not validate_args:
        return []
    return _whole_numbers(counts, "counts") + [
        assert_equal(total_count, reduce_sum(counts, -1), message=f"counts {what}must sum to `total_count`")]


def _whole_count(total_count, validate_args: bool):
    total_count = convert_to_tensor(total_count, name="total_count")
    return checked(total_count, _whole_numbers(total_count, "total_count") if validate_args else [])


def _sample_counts(dist, n, logits, seed):
    """n samples of counts [n, batch..., k]: for each sample and batch member, total_count draws
    from the categorical distribution of its row of `logits` ([n * batch, k], sample-major). The
    most draws any member needs are drawn for every one, the surplus masked out."""
    k = dist.event_shape_tensor()[0]
    n_draws = reshape(dist.total_count * ones(dist.batch_shape_tensor(), dtype=dist.dtype), [1, -1])
    n_draws = cast(reshape(ones(concat([[n], [1]], 0), dtype=dist.dtype) * n_draws, [-1]), dtypes.int32)
    most = reduce_max(n_draws)
    used = sequence_mask(n_draws, most, dtype=dist.dtype)
    counts = reduce_sum(one_hot(multinomial(logits, most, seed=seed), depth=k, dtype=dist.dtype) * used[..., None], -2)
    return reshape(counts, concat([[n], dist.batch_shape_tensor(), [k]], 0))


@tf_export("distributions.Dirichlet")
class Dirichlet(_VectorEvent):
    """tf.distributions.Dirichlet(concentration, validate_args=False, allow_nan_stats=True,
    name="Dirichlet"): distributions over the simplex, density prod(x^(a-1)) / B(a); samples are
    normalized Gamma samples (fully reparameterized)."""

    def __init__(self, concentration, validate_args=False, allow_nan_stats=True, name="Dirichlet"):
        parameters = dict(locals())
        with name_scope(name, values=[concentration]) as name:
            self._concentration, = parameter_tensors(dict(concentration=concentration), validate_args,
                                                     ["concentration"])
            if validate_args:
                self._concentration = checked(self._concentration, [assert_less(
                    1, shape(self._concentration)[-1], message="Concentration parameter must have event_size >= 2.")])
            self._total_concentration = reduce_sum(self._concentration, -1)
        super().__init__(self._concentration.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._concentration, self._total_concentration], name)
        self._event_parent = self._concentration

    concentration = property(lambda self: self._concentration, doc="The concentrations (expected counts).")
    total_concentration = property(lambda self: self._total_concentration, doc="The sum of the concentrations.")

    def _sample_n(self, n, seed=None):
        gamma = random_gamma([n], self.concentration, dtype=self.dtype, seed=seed)
        return gamma / reduce_sum(gamma, -1, keepdims=True)

    def _log_prob(self, x):
        if self.validate_args:
            x = checked(x, [assert_less(0., x, message="samples must be positive"),
                            assert_near(ones([], self.dtype), reduce_sum(x, -1),
                                        message="sample last-dimension must sum to `1`")])
        return reduce_sum((self.concentration - 1.) * log(x), -1) - lbeta(self.concentration)

    def _entropy(self):
        k = cast(self.event_shape_tensor()[0], self.dtype)
        return (lbeta(self.concentration) + (self.total_concentration - k) * digamma(self.total_concentration)
                - reduce_sum((self.concentration - 1.) * digamma(self.concentration), axis=-1))

    def _mean(self):
        return self.concentration / self.total_concentration[..., None]

    def _mode(self):
        """(concentration - 1) / (total - k); NaN for a member with a concentration <= 1 (TF 1.15
        selects whole rows)."""
        k = cast(self.event_shape_tensor()[0], self.dtype)
        mode = (self.concentration - 1.) / (self.total_concentration[..., None] - k)
        if self.allow_nan_stats:
            nan = fill(shape(mode), np.array(np.nan, self.dtype.as_numpy_dtype), name="nan")
            return where_v2(reduce_all(self.concentration > 1., axis=-1, keepdims=True), mode, nan)
        return with_dependencies([assert_less(ones([], self.dtype), self.concentration,
                                              message="Mode undefined when any concentration <= 1")], mode)

    def _variance_scale_term(self):
        return rsqrt(1. + self.total_concentration[..., None])

    def _variance(self):
        scale = self._variance_scale_term()
        x = scale * self._mean()
        return x * (scale - x)


@RegisterKL(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(d1, d2, name=None):
    with name_scope(name, "kl_dirichlet_dirichlet", [d1.concentration, d2.concentration]):
        digamma_diff = digamma(d1.concentration) - digamma(reduce_sum(d1.concentration, -1, keepdims=True))
        return (reduce_sum((d1.concentration - d2.concentration) * digamma_diff, axis=-1)
                - lbeta(d1.concentration) + lbeta(d2.concentration))


@tf_export("distributions.DirichletMultinomial")
class DirichletMultinomial(_VectorEvent):
    """tf.distributions.DirichletMultinomial(total_count, concentration, validate_args=False,
    allow_nan_stats=True, name="DirichletMultinomial"): counts of `total_count` draws among K classes
    whose probabilities are drawn from Dirichlet(concentration)."""

    def __init__(self, total_count, concentration, validate_args=False, allow_nan_stats=True,
                 name="DirichletMultinomial"):
        parameters = dict(locals())
        with name_scope(name, values=[total_count, concentration]) as name:
            self._total_count = _whole_count(total_count, validate_args)
            self._concentration, = parameter_tensors(dict(concentration=concentration), validate_args,
                                                     ["concentration"])
            self._total_concentration = reduce_sum(self._concentration, -1)
        super().__init__(self._concentration.dtype, NOT_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._total_count, self._concentration], name)
        self._event_parent = self._concentration

    total_count = property(lambda self: self._total_count, doc="The number of draws.")
    concentration = property(lambda self: self._concentration, doc="The Dirichlet's concentrations.")
    total_concentration = property(lambda self: self._total_concentration, doc="The sum of the concentrations.")

    def _sample_n(self, n, seed=None):
        gamma = random_gamma([n], self.concentration, dtype=self.dtype, seed=seed)
        logits = reshape(log(gamma), [-1, self.event_shape_tensor()[0]])
        return _sample_counts(self, n, logits, gen_new_seed(seed, "dirichlet_multinomial"))

    def _log_prob(self, counts):
        counts = checked(counts, _count_checks(self.total_count, counts, self.validate_args, "last-dimension "))
        return (lbeta(self.concentration + counts) - lbeta(self.concentration)
                + log_combinations(self.total_count, counts))

    def _mean(self):
        return self.total_count * (self.concentration / self.total_concentration[..., None])

    def _variance_scale_term(self):
        c0 = self.total_concentration[..., None]
        return sqrt((1. + c0 / self.total_count) / (1. + c0))

    def _variance(self):
        scale = self._variance_scale_term()
        x = scale * self._mean()
        return x * (self.total_count * scale - x)


@tf_export("distributions.Multinomial")
class Multinomial(_VectorEvent):
    """tf.distributions.Multinomial(total_count, logits=None, probs=None, validate_args=False,
    allow_nan_stats=True, name="Multinomial"): counts of `total_count` draws among K classes with
    probabilities probs (or softmax(logits)) along the last dimension."""

    def __init__(self, total_count, logits=None, probs=None, validate_args=False, allow_nan_stats=True,
                 name="Multinomial"):
        parameters = dict(locals())
        with name_scope(name, values=[total_count, logits, probs]) as name:
            self._total_count = _whole_count(total_count, validate_args)
            self._logits, self._probs = logits_and_probs(logits, probs, True, validate_args)
            self._mean_val = self._total_count[..., None] * self._probs
        super().__init__(self._probs.dtype, NOT_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._total_count, self._logits, self._probs], name)
        self._event_parent = self._mean_val

    total_count = property(lambda self: self._total_count, doc="The number of draws.")
    logits = property(lambda self: self._logits, doc="The log-probabilities (up to a constant) of the classes.")
    probs = property(lambda self: self._probs, doc="The probabilities of the classes.")

    def _sample_n(self, n, seed=None):
        k = self.event_shape_tensor()[0]
        logits = reshape(self.logits * ones_like(self._mean_val), [1, -1, k])
        logits = reshape(ones(concat([[n], [1], [1]], 0), dtype=self.dtype) * logits, [-1, k])
        return _sample_counts(self, n, logits, seed)

    def _log_prob(self, counts):
        counts = checked(counts, _count_checks(self.total_count, counts, self.validate_args, ""))
        return reduce_sum(counts * log_softmax(self.logits), -1) + log_combinations(self.total_count, counts)

    def _mean(self):
        return 1. * self._mean_val

    def _variance(self):
        p = self.probs * ones_like(self.total_count)[..., None]
        return self._mean_val - self._mean_val * p

    def _covariance(self):
        p = self.probs * ones_like(self.total_count)[..., None]
        return matrix_set_diag(-matmul(self._mean_val[..., None], p[..., None, :]), self._variance())
