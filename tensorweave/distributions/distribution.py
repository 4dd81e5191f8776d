"""tf.distributions' base (TF 1.15 python/ops/distributions/distribution.py, kullback_leibler.py):
`Distribution`, whose public methods (sample, log_prob, cdf, entropy, mean, ...) open the
distribution's name scope and call the subclass's `_methods`, falling back as TF does (log_prob from
prob, stddev from variance, ...); the reparameterization types; the KL registry; and the helpers the
distributions share (TF's special_math and distribution_util pieces)."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import math

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import control_dependencies, name_scope
from tensorweave.framework.shapes import TensorShape, as_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import constant, identity, reshape, shape
from tensorweave.ops.array.pad import broadcast_dynamic_shape, broadcast_static_shape
from tensorweave.ops.array.sort import where_v2
from tensorweave.ops.debugging.asserts import (assert_less_equal, assert_near, assert_non_negative, assert_positive,
                                              assert_same_float_dtype)
from tensorweave.ops.debugging.printing import Assert
from tensorweave.ops.grouping import with_dependencies
from tensorweave.ops.math.binary import equal, logical_not, maximum, minimum
from tensorweave.ops.math.reduction import reduce_any, reduce_prod, reduce_sum
from tensorweave.ops.math.special import erfc, lgamma
from tensorweave.ops.math.unary import abs, erf, exp, is_nan, log, log1p, sigmoid, sqrt, square
from tensorweave.ops.nn.activations import softmax


@tf_export("distributions.ReparameterizationType")
class ReparameterizationType:
    """How a distribution's samples depend on its parameters: FULLY_REPARAMETERIZED (a sample is a
    differentiable function of them, so gradients flow through `sample()`) or NOT_REPARAMETERIZED.
    Compared by identity."""

    def __init__(self, rep_type):
        self._rep_type = rep_type

    def __repr__(self):
        return f"<Reparameterization Type: {self._rep_type}>"

    def __eq__(self, other):
        return self is other

    __hash__ = object.__hash__


FULLY_REPARAMETERIZED = ReparameterizationType("FULLY_REPARAMETERIZED")
NOT_REPARAMETERIZED = ReparameterizationType("NOT_REPARAMETERIZED")
tf_export("distributions.FULLY_REPARAMETERIZED")(FULLY_REPARAMETERIZED)
tf_export("distributions.NOT_REPARAMETERIZED")(NOT_REPARAMETERIZED)


def _unimplemented(method: str):
    def missing(self, *args, **kwargs):
        raise NotImplementedError(f"{method} is not implemented: {type(self).__name__}")
    return missing


@tf_export("distributions.Distribution")
class Distribution:
    """tf.distributions.Distribution(dtype, reparameterization_type, validate_args, allow_nan_stats,
    parameters=None, graph_parents=None, name=None): the base of TF1's distributions. A subclass
    implements `_sample_n(n, seed)`, `_log_prob(x)` or `_prob(x)`, `_batch_shape()`, ...; every public
    method runs in the scope `<name>/<method>/`. `validate_args` adds run-time checks of parameters
    and values; with `allow_nan_stats=False` an undefined statistic (a Gamma's mode at
    concentration <= 1, ...) fails at run time instead of being NaN."""

    def __init__(self, dtype, reparameterization_type, validate_args, allow_nan_stats, parameters=None,
                 graph_parents=None, name=None):
        graph_parents = list(graph_parents or [])
        for i, t in enumerate(graph_parents):
            if t is None or not hasattr(t, "op"):
                raise ValueError(f"Graph parent item {i} is not a Tensor; {t}.")
        if not name or name[-1] != "/":   # not yet a name scope: make a unique one
            with name_scope(name or type(self).__name__) as name:
                pass
        self._dtype = dtype
        self._reparameterization_type = reparameterization_type
        self._allow_nan_stats = allow_nan_stats
        self._validate_args = validate_args
        self._parameters = parameters
        self._graph_parents = graph_parents
        self._name = name

    @property
    def _parameters(self):
        return self._parameter_dict

    @_parameters.setter
    def _parameters(self, value):   # set from dict(locals()) by subclasses, as in TF: `self` left out
        self._parameter_dict = {k: v for k, v in (value or {}).items() if k not in ("self", "__class__")}

    @classmethod
    def param_shapes(cls, sample_shape, name="DistributionParamShapes"):
        """{parameter name: its shape} for `sample()` to return `sample_shape`, as int32 tensors."""
        with name_scope(name, values=[sample_shape]):
            return cls._param_shapes(sample_shape)

    @classmethod
    def param_static_shapes(cls, sample_shape):
        """param_shapes as TensorShapes; `sample_shape` must be fully defined."""
        if isinstance(sample_shape, TensorShape):
            if not sample_shape.is_fully_defined():
                raise ValueError("TensorShape sample_shape must be fully defined")
            sample_shape = sample_shape.as_list()
        out = {}
        for name, value in cls.param_shapes(sample_shape).items():
            static = constant_value(value)
            if static is None:
                raise ValueError("sample_shape must be a fully-defined TensorShape or list/tuple")
            out[name] = TensorShape(static)
        return out

    @staticmethod
    def _param_shapes(sample_shape):
        raise NotImplementedError("_param_shapes not implemented")

    name = property(lambda self: self._name, doc="The name scope ('Normal/') of the ops this creates.")
    dtype = property(lambda self: self._dtype, doc="The DType of samples and statistics.")
    parameters = property(lambda self: dict(self._parameters),
                          doc="The arguments this distribution was constructed with.")
    reparameterization_type = property(lambda self: self._reparameterization_type)
    allow_nan_stats = property(lambda self: self._allow_nan_stats)
    validate_args = property(lambda self: self._validate_args)

    def copy(self, **override_parameters_kwargs):
        """A new distribution of this type from this one's parameters, some of them overridden."""
        return type(self)(**dict(self.parameters, **override_parameters_kwargs))

    # -- shapes ---------------------------------------------------------------------------------------
    _batch_shape_tensor = _unimplemented("batch_shape_tensor")
    _event_shape_tensor = _unimplemented("event_shape_tensor")

    def _batch_shape(self):
        return TensorShape(None)

    def _event_shape(self):
        return TensorShape(None)

    @property
    def batch_shape(self):
        """The TensorShape of the independent distributions this one holds."""
        return as_shape(self._batch_shape())

    @property
    def event_shape(self):
        """The TensorShape of one sample of one distribution."""
        return as_shape(self._event_shape())

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        with self._name_scope(name):
            if self.batch_shape.is_fully_defined():
                return constant(self.batch_shape.as_list(), dtype=dtypes.int32, name="batch_shape")
            return self._batch_shape_tensor()

    def event_shape_tensor(self, name="event_shape_tensor"):
        with self._name_scope(name):
            if self.event_shape.is_fully_defined():
                return constant(self.event_shape.as_list(), dtype=dtypes.int32, name="event_shape")
            return self._event_shape_tensor()

    def is_scalar_event(self, name="is_scalar_event"):
        with self._name_scope(name):
            return self._is_scalar(self.event_shape, self.event_shape_tensor)

    def is_scalar_batch(self, name="is_scalar_batch"):
        with self._name_scope(name):
            return self._is_scalar(self.batch_shape, self.batch_shape_tensor)

    @staticmethod
    def _is_scalar(static, dynamic):
        if static.ndims is not None:
            return convert_to_tensor(static.ndims == 0)
        return equal(shape(dynamic())[0], 0)

    # -- sampling -------------------------------------------------------------------------------------
    _sample_n = _unimplemented("sample_n")

    def sample(self, sample_shape=(), seed=None, name="sample"):
        """Samples of shape sample_shape + batch_shape + event_shape."""
        with self._name_scope(name, values=[sample_shape]):
            if isinstance(sample_shape, TensorShape):
                sample_shape = sample_shape.as_list()
            sample_shape = convert_to_tensor(sample_shape, dtype=dtypes.int32, name="sample_shape")
            if sample_shape.shape.ndims not in (None, 0, 1):
                raise ValueError("Input is neither scalar nor vector.")
            static = constant_value(sample_shape)
            if sample_shape.shape.ndims != 1:
                sample_shape = (reshape(sample_shape, [-1]) if static is None
                                else constant(np.reshape(static, [1]), name="sample_shape"))
            n = reduce_prod(sample_shape) if static is None else int(np.prod(static))
            samples = self._sample_n(n, seed)
            samples = reshape(samples, concat([sample_shape, shape(samples)[1:]], 0))
            static_shape = (TensorShape(None) if static is None else TensorShape(np.reshape(static, [-1])))
            samples.set_shape(samples.shape.merge_with(
                static_shape.concatenate(self.batch_shape).concatenate(self.event_shape)))
            return samples

    # -- densities: each public method falls back on its pair, as TF's ---------------------------------
    _log_prob, _prob = _unimplemented("log_prob"), _unimplemented("prob")
    _log_cdf, _cdf = _unimplemented("log_cdf"), _unimplemented("cdf")
    _log_survival_function = _unimplemented("log_survival_function")
    _survival_function = _unimplemented("survival_function")
    _quantile = _unimplemented("quantile")

    def _call(self, name, method, fallback=None, via=None, values=()):
        """`method(*values)` in the scope `name`; where it is not implemented, `via(fallback(*values))`
        (TF's pairs: prob from log_prob, stddev from variance, ...), else the first method's error."""
        with self._name_scope(name, values=list(values)):
            values = [convert_to_tensor(v, name="value", preferred_dtype=self.dtype) for v in values]
            try:
                return method(*values)
            except NotImplementedError:
                if fallback is None:
                    raise
                try:
                    return via(fallback(*values))
                except NotImplementedError:
                    pass
                raise

    def log_prob(self, value, name="log_prob"):
        """Log probability density (or mass) of `value`."""
        return self._call(name, self._log_prob, self._prob, log, values=[value])

    def prob(self, value, name="prob"):
        """Probability density (or mass) of `value`."""
        return self._call(name, self._prob, self._log_prob, exp, values=[value])

    def log_cdf(self, value, name="log_cdf"):
        """log P[X <= value]."""
        return self._call(name, self._log_cdf, self._cdf, log, values=[value])

    def cdf(self, value, name="cdf"):
        """P[X <= value]."""
        return self._call(name, self._cdf, self._log_cdf, exp, values=[value])

    def log_survival_function(self, value, name="log_survival_function"):
        """log P[X > value]."""
        return self._call(name, self._log_survival_function, self.cdf, lambda c: log1p(-c), values=[value])

    def survival_function(self, value, name="survival_function"):
        """P[X > value]."""
        return self._call(name, self._survival_function, self.cdf, lambda c: 1. - c, values=[value])

    def quantile(self, value, name="quantile"):
        """The inverse cdf at probability `value`."""
        return self._call(name, self._quantile, values=[value])

    # -- statistics -----------------------------------------------------------------------------------
    _entropy, _mean, _mode = _unimplemented("entropy"), _unimplemented("mean"), _unimplemented("mode")
    _variance, _stddev = _unimplemented("variance"), _unimplemented("stddev")
    _covariance = _unimplemented("covariance")

    def entropy(self, name="entropy"):
        """Shannon entropy in nats."""
        return self._call(name, self._entropy)

    def mean(self, name="mean"):
        return self._call(name, self._mean)

    def mode(self, name="mode"):
        return self._call(name, self._mode)

    def variance(self, name="variance"):
        return self._call(name, self._variance, self._stddev, square)

    def stddev(self, name="stddev"):
        return self._call(name, self._stddev, self._variance, sqrt)

    def covariance(self, name="covariance"):
        """The covariance matrices of vector-valued distributions (batch_shape + event x event)."""
        return self._call(name, self._covariance)

    def cross_entropy(self, other, name="cross_entropy"):
        """H[self, other] = E_self[-log other(X)] = entropy + KL[self || other]."""
        with self._name_scope(name):
            with name_scope(None, "cross_entropy"):
                return self.entropy() + kl_divergence(self, other, allow_nan_stats=self.allow_nan_stats)

    def kl_divergence(self, other, name="kl_divergence"):
        """KL[self || other], from the registered KL of the two types (RegisterKL)."""
        with self._name_scope(name):
            return kl_divergence(self, other, allow_nan_stats=self.allow_nan_stats)

    def __str__(self):
        batch = f", batch_shape={self.batch_shape}" if self.batch_shape.ndims is not None else ""
        event = f", event_shape={self.event_shape}" if self.event_shape.ndims is not None else ""
        return f'tfp.distributions.{type(self).__name__}("{self.name}"{batch}{event}, dtype={self.dtype.name})'

    def __repr__(self):
        return (f"<tfp.distributions.{type(self).__name__} '{self.name}' batch_shape={self.batch_shape} "
                f"event_shape={self.event_shape} dtype={self.dtype.name}>")

    @contextlib.contextmanager
    def _name_scope(self, name=None, values=None):
        with name_scope(self.name):
            with name_scope(name, values=list(values or []) + self._graph_parents) as scope:
                yield scope


class ScalarEvent(Distribution):
    """A distribution of scalars whose batch shape broadcasts its graph parents' shapes (Normal,
    Gamma, Bernoulli, ...)."""

    def _batch_shape(self):
        return functools.reduce(broadcast_static_shape, [t.shape for t in self._graph_parents])

    def _batch_shape_tensor(self):
        return functools.reduce(broadcast_dynamic_shape, [shape(t) for t in self._graph_parents])

    def _event_shape(self):
        return TensorShape([])

    def _event_shape_tensor(self):
        return constant([], dtype=dtypes.int32)


# -- KL divergence --------------------------------------------------------------------------------------
_DIVERGENCES = {}


def _registered_kl(type_a, type_b):
    """The KL function registered for the nearest pair of ancestors of type_a and type_b."""
    best = None
    for i, parent_a in enumerate(type_a.__mro__):
        for j, parent_b in enumerate(type_b.__mro__):
            fn = _DIVERGENCES.get((parent_a, parent_b))
            if fn is not None and (best is None or i + j < best[0]):
                best = (i + j, fn)
    return best and best[1]


@tf_export("distributions.kl_divergence")
def kl_divergence(distribution_a, distribution_b, allow_nan_stats=True, name=None):
    """tf.distributions.kl_divergence(distribution_a, distribution_b, allow_nan_stats=True, name=None):
    KL[a || b] by the function RegisterKL registered for their types (or nearest ancestors);
    NotImplementedError when there is none. With allow_nan_stats=False a NaN fails at run time."""
    kl_fn = _registered_kl(type(distribution_a), type(distribution_b))
    if kl_fn is None:
        raise NotImplementedError(
            "No KL(distribution_a || distribution_b) registered for distribution_a type "
            f"{type(distribution_a).__name__} and distribution_b type {type(distribution_b).__name__}")
    with name_scope("KullbackLeibler"):
        kl_t = kl_fn(distribution_a, distribution_b, name=name)
        if allow_nan_stats:
            return kl_t
        kl_t = identity(kl_t, name="kl")
        with control_dependencies([Assert(logical_not(reduce_any(is_nan(kl_t))), [
                f"KL calculation between {distribution_a.name} and {distribution_b.name} returned NaN values "
                "(and was called with allow_nan_stats=False). Values:", kl_t])]):
            return identity(kl_t, name="checked_kl")


@tf_export("distributions.RegisterKL")
class RegisterKL:
    """tf.distributions.RegisterKL(dist_cls_a, dist_cls_b): a decorator registering
    `kl_fn(a, b, name=None)` as KL[a || b] for those classes (and subclasses without their own)."""

    def __init__(self, dist_cls_a, dist_cls_b):
        self._key = (dist_cls_a, dist_cls_b)

    def __call__(self, kl_fn):
        if not callable(kl_fn):
            raise TypeError(f"kl_fn must be callable, received: {kl_fn}")
        if self._key in _DIVERGENCES:
            raise ValueError(f"KL({self._key[0].__name__} || {self._key[1].__name__}) has already been "
                             f"registered to: {_DIVERGENCES[self._key]}")
        _DIVERGENCES[self._key] = kl_fn
        return kl_fn


# -- helpers the distributions share ----------------------------------------------------------------------
def parameter_tensors(params: dict, validate_args: bool, positive=()) -> list:
    """The parameters as tensors named after them (in the current name scope), one float dtype
    (ValueError otherwise, as TF's assert_same_float_dtype); with validate_args, those named in
    `positive` are checked > 0 at run time, the error naming the parameter."""
    values = {k: convert_to_tensor(v) for k, v in params.items()}
    checks = [assert_positive(values[k], message=f"{k} must be positive") for k in positive] if validate_args else []
    with control_dependencies(checks):
        tensors = [identity(v, name=k) for k, v in values.items()]
    assert_same_float_dtype(tensors)
    return tensors


def checked(tensor, checks):
    """`tensor`, after `checks` (assert ops) have passed."""
    return with_dependencies(checks, tensor) if checks else tensor


def logits_and_probs(logits, probs, multidimensional: bool, validate_args: bool):
    """(logits, probs) from exactly one of them (TF's get_logits_and_probs): log-odds/sigmoid for one
    outcome, log/softmax over the last dimension for several. validate_args checks the probs (at run
    time) and, for several outcomes, that there are at least 2 (at once where the shape is known)."""
    if (probs is None) == (logits is None):
        raise ValueError("Must pass probs or logits, but not both.")
    given, param = (logits, "logits") if probs is None else (probs, "probs")
    given = convert_to_tensor(given, name=param)
    if not given.dtype.is_floating:
        raise TypeError(f"{param} must having floating type.")
    if validate_args and multidimensional and given.shape.ndims is not None:
        events = given.shape.as_list()[-1] if given.shape.ndims else 0
        if events is not None and events < 2:
            raise ValueError(f"A categorical-distribution parameter must have at least 2 events; {param} has "
                             f"shape {given.shape}.")
    if probs is None:
        return given, (softmax(given, name="probs") if multidimensional else sigmoid(given, name="probs"))
    probs = given
    if validate_args:
        one = constant(1., probs.dtype)
        upper = (assert_near(reduce_sum(probs, -1), one, message="probs does not sum to 1.") if multidimensional
                 else assert_less_equal(probs, one, message="probs has components greater than 1."))
        probs = checked(probs, [assert_non_negative(probs, message="probs must be non-negative"), upper])
    with name_scope("logits"):
        return (log(probs) if multidimensional else log(probs) - log1p(-probs)), probs


def gen_new_seed(seed, salt: str):
    """TF's distribution_util.gen_new_seed: a second op seed derived from `seed` (None stays None)."""
    if seed is None:
        return None
    return int(hashlib.md5((str(seed) + salt).encode("utf-8")).hexdigest()[:8], 16) & 0x7FFFFFFF


def log_combinations(n, counts):
    """log(n! / prod(counts!)) over the last dimension of `counts`."""
    return lgamma(n + 1.) - reduce_sum(lgamma(counts + 1.), axis=[-1])


def ndtr(x):
    """The standard normal cdf (TF's special_math.ndtr: erf near 0, erfc in the tails)."""
    w = x * (0.5 * math.sqrt(2.))
    z = abs(w)
    y = where_v2(z < 0.5 * math.sqrt(2.), 1. + erf(w), where_v2(w > 0., 2. - erfc(z), erfc(z)))
    return 0.5 * y


def log_ndtr(x):
    """log of the standard normal cdf, accurate in both tails (TF's special_math.log_ndtr with its
    default series order 3: log1p(-ndtr(-x)) above `upper`, an asymptotic series below `lower`)."""
    lower, upper = (-20., 8.) if x.dtype == dtypes.float64 else (-10., 5.)
    tail_x = minimum(x, lower)
    x2 = square(tail_x)
    series = 1. - 1. / x2 + 3. / square(x2) - 15. / (x2 * square(x2))
    tail = -0.5 * x2 - log(-tail_x) - 0.5 * math.log(2. * math.pi) + log(series)
    return where_v2(x > upper, log1p(-ndtr(-x)),
                    where_v2(x > lower, log(ndtr(maximum(x, lower))), tail))
