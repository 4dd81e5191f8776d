"""Variable initializers (TF1 `init_ops`): callables `init(shape, dtype=None, partition_info=None)`
returning a tensor, with TF1's class names, arguments, defaults and errors."""
from __future__ import annotations

import math

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import constant
from tensorweave.ops.array.fill import ones, zeros
from tensorweave.ops.random import random_normal, random_orthogonal, random_uniform, truncated_normal


def _assert_float_dtype(dtype) -> dtypes.DType:
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"Expected floating point type, got {dtype!r}.")
    return dtype


def _compute_fans(shape) -> tuple:
    """(fan_in, fan_out) of a weight shape, as TF: conv kernels multiply by the receptive field."""
    shape = [int(d) for d in shape]
    if len(shape) < 1:
        fan_in = fan_out = 1
    elif len(shape) == 1:
        fan_in = fan_out = shape[0]
    elif len(shape) == 2:
        fan_in, fan_out = shape
    else:
        receptive = 1
        for d in shape[:-2]:
            receptive *= d
        fan_in = shape[-2] * receptive
        fan_out = shape[-1] * receptive
    return int(fan_in), int(fan_out)


def _as_list(shape) -> list:
    if isinstance(shape, TensorShape):
        return shape.as_list()
    if np.ndim(shape) == 0:
        return [int(shape)]
    return [int(d) for d in shape]


class Initializer:
    """Base class of initializers: `__call__(shape, dtype=None, partition_info=None)`."""

    def __call__(self, shape, dtype=None, partition_info=None):
        raise NotImplementedError

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)


class _Filled(Initializer):
    """An initializer that fills the shape by `_fill(shape, dtype)` (tf.zeros or tf.ones)."""

    _fill = staticmethod(zeros)

    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return self._fill(_as_list(shape), dtype or self.dtype)

    def get_config(self):
        return {"dtype": self.dtype.name}


@tf_export("initializers.zeros", "zeros_initializer")
class Zeros(_Filled):
    """tf.zeros_initializer(dtype=float32)."""

    _fill = staticmethod(zeros)


@tf_export("initializers.ones", "ones_initializer")
class Ones(_Filled):
    """tf.ones_initializer(dtype=float32)."""

    _fill = staticmethod(ones)


@tf_export("initializers.constant", "constant_initializer")
class Constant(Initializer):
    """tf.constant_initializer(value=0, dtype=float32, verify_shape=False): `value` (a scalar is
    broadcast; a shorter list is padded with its last element, as tf.constant does)."""

    def __init__(self, value=0, dtype=dtypes.float32, verify_shape=False):
        if not (np.isscalar(value) or isinstance(value, (list, tuple, np.ndarray))):
            raise TypeError(f"Invalid type for initial value: {type(value)} (expected Python scalar, list or "
                            "tuple of values, or numpy.ndarray).")
        self.value = value
        self.dtype = dtypes.as_dtype(dtype)
        self._verify_shape = verify_shape

    def __call__(self, shape, dtype=None, partition_info=None, verify_shape=None):
        if verify_shape is None:
            verify_shape = self._verify_shape
        return constant(self.value, dtype=dtype or self.dtype, shape=_as_list(shape),
                                  verify_shape=verify_shape)

    def get_config(self):
        return {"value": self.value, "dtype": self.dtype.name}


@tf_export("initializers.random_uniform", "random_uniform_initializer")
class RandomUniform(Initializer):
    """tf.random_uniform_initializer(minval=0, maxval=None, seed=None, dtype=float32)."""

    def __init__(self, minval=0, maxval=None, seed=None, dtype=dtypes.float32):
        self.minval = minval
        self.maxval = maxval
        self.seed = seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_uniform(_as_list(shape), self.minval, self.maxval, dtype or self.dtype,
                                         seed=self.seed)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed, "dtype": self.dtype.name}


class _MeanStddev(Initializer):
    """An initializer drawing from <_sample>(shape, mean, stddev, dtype, seed=seed)."""

    _sample = staticmethod(random_normal)

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        self.mean = mean
        self.stddev = stddev
        self.seed = seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return self._sample(_as_list(shape), self.mean, self.stddev, dtype or self.dtype, seed=self.seed)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed, "dtype": self.dtype.name}


@tf_export("initializers.random_normal", "random_normal_initializer")
class RandomNormal(_MeanStddev):
    """tf.random_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=float32)."""

    _sample = staticmethod(random_normal)


@tf_export("initializers.truncated_normal", "truncated_normal_initializer")
class TruncatedNormal(_MeanStddev):
    """tf.truncated_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=float32)."""

    _sample = staticmethod(truncated_normal)


@tf_export("initializers.uniform_unit_scaling", "uniform_unit_scaling_initializer")
class UniformUnitScaling(Initializer):
    """tf.uniform_unit_scaling_initializer(factor=1.0, seed=None, dtype=float32) (deprecated in TF):
    uniform in [-sqrt(3/fan_in)*factor, sqrt(3/fan_in)*factor], fan_in the product of all but the
    last dimension."""

    def __init__(self, factor=1.0, seed=None, dtype=dtypes.float32):
        self.factor = factor
        self.seed = seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        shape = _as_list(shape)
        scale_shape = partition_info.full_shape if partition_info is not None else shape
        input_size = 1.0
        for d in scale_shape[:-1]:
            input_size *= float(d)
        input_size = max(input_size, 1.0)
        max_val = math.sqrt(3 / input_size) * self.factor
        return random_uniform(shape, -max_val, max_val, dtype or self.dtype, seed=self.seed)

    def get_config(self):
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


@tf_export("initializers.variance_scaling", "variance_scaling_initializer")
class VarianceScaling(Initializer):
    """tf.variance_scaling_initializer(scale=1.0, mode='fan_in', distribution='truncated_normal',
    seed=None, dtype=float32): samples scaled to variance scale/n, n the fan_in, fan_out or their
    average; truncated normals are corrected for the truncation (stddev / .8796...)."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype=dtypes.float32):
        if scale <= 0.0:
            raise ValueError("`scale` must be positive float.")
        if mode not in {"fan_in", "fan_out", "fan_avg"}:
            raise ValueError(f"Invalid `mode` argument: {mode}")
        distribution = distribution.lower()
        if distribution not in {"normal", "uniform", "truncated_normal", "untruncated_normal"}:
            raise ValueError(f"Invalid `distribution` argument: {distribution}")
        self.scale = scale
        self.mode = mode
        self.distribution = distribution
        self.seed = seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        shape = _as_list(shape)
        dtype = dtypes.as_dtype(dtype or self.dtype)
        scale = self.scale
        scale_shape = partition_info.full_shape if partition_info is not None else shape
        fan_in, fan_out = _compute_fans(scale_shape)
        if self.mode == "fan_in":
            scale /= max(1.0, fan_in)
        elif self.mode == "fan_out":
            scale /= max(1.0, fan_out)
        else:
            scale /= max(1.0, (fan_in + fan_out) / 2.0)
        if self.distribution in ("normal", "truncated_normal"):
            # 0.879... is the stddev of a unit normal truncated to (-2, 2).
            stddev = math.sqrt(scale) / 0.87962566103423978
            return truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_normal(shape, 0.0, math.sqrt(scale), dtype, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_uniform(shape, -limit, limit, dtype, seed=self.seed)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution, "seed": self.seed,
                "dtype": self.dtype.name}


class _Glorot(VarianceScaling):
    """VarianceScaling(scale=1.0, mode='fan_avg') with the subclass's `_distribution`."""

    _distribution = ""

    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(scale=1.0, mode="fan_avg", distribution=self._distribution, seed=seed, dtype=dtype)

    def get_config(self):
        return {"seed": self.seed, "dtype": self.dtype.name}


@tf_export("initializers.glorot_uniform", "glorot_uniform_initializer")
class GlorotUniform(_Glorot):
    """tf.glorot_uniform_initializer(seed=None, dtype=float32): uniform in +-sqrt(6/(fan_in+fan_out))."""

    _distribution = "uniform"


@tf_export("initializers.glorot_normal", "glorot_normal_initializer")
class GlorotNormal(_Glorot):
    """tf.glorot_normal_initializer(seed=None, dtype=float32): truncated normal with
    stddev sqrt(2/(fan_in+fan_out))."""

    _distribution = "truncated_normal"


@tf_export("initializers.orthogonal", "orthogonal_initializer")
class Orthogonal(Initializer):
    """tf.orthogonal_initializer(gain=1.0, seed=None, dtype=float32): a (semi-)orthogonal matrix
    from the QR decomposition of a normal matrix, reshaped to `shape` (rank >= 2)."""

    def __init__(self, gain=1.0, seed=None, dtype=dtypes.float32):
        self.gain = gain
        self.seed = seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        shape = _as_list(shape)
        if len(shape) < 2:
            raise ValueError("The tensor to initialize must be at least two-dimensional")
        return random_orthogonal(shape, self.gain, dtype or self.dtype, seed=self.seed)

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}


@tf_export("initializers.identity")
class Identity(Initializer):
    """tf.initializers.identity(gain=1.0, dtype=float32): gain * I for 2-D shapes."""

    def __init__(self, gain=1.0, dtype=dtypes.float32):
        self.gain = gain
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        shape = _as_list(shape)
        if len(shape) != 2:
            raise ValueError("Identity matrix initializer can only be used for 2D matrices.")
        dtype = dtypes.as_dtype(dtype or self.dtype)
        return constant(self.gain * np.eye(shape[0], shape[1]), dtype=dtype, name="identity")

    def get_config(self):
        return {"gain": self.gain, "dtype": self.dtype.name}


@tf_export("initializers.lecun_normal")
def lecun_normal(seed=None):
    return VarianceScaling(scale=1.0, mode="fan_in", distribution="truncated_normal", seed=seed)


@tf_export("initializers.lecun_uniform")
def lecun_uniform(seed=None):
    return VarianceScaling(scale=1.0, mode="fan_in", distribution="uniform", seed=seed)


@tf_export("initializers.he_normal")
def he_normal(seed=None):
    return VarianceScaling(scale=2.0, mode="fan_in", distribution="truncated_normal", seed=seed)


@tf_export("initializers.he_uniform")
def he_uniform(seed=None):
    return VarianceScaling(scale=2.0, mode="fan_in", distribution="uniform", seed=seed)


zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_uniform_initializer = RandomUniform
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
uniform_unit_scaling_initializer = UniformUnitScaling
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal
orthogonal_initializer = Orthogonal
identity_initializer = Identity
