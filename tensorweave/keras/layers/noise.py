"""tf.keras.layers noise and spatial dropout layers (TF 1.15's keras/layers/noise.py and the
SpatialDropout layers of keras/layers/core.py): GaussianNoise, GaussianDropout, AlphaDropout,
SpatialDropout1D/2D/3D. Each acts while training (`training=True`, or the learning phase when
`training` is not given) and passes its input through otherwise."""
from __future__ import annotations

import numpy as np

from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K
from tensorweave.keras.engine.base_layer import Layer
from tensorweave.keras.layers.convolutional import normalize_data_format
from tensorweave.keras.layers.core import Dropout
from tensorweave.layers.base import InputSpec


class _Noise(Layer):
    _params: tuple = ()

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def _noised(self, inputs):
        return inputs

    def call(self, inputs, training=None):
        return K.in_train_phase(lambda: self._noised(inputs), inputs, training=training)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        return {**super().get_config(), **{p: getattr(self, p) for p in self._params}}


@tf_export("keras.layers.GaussianNoise")
class GaussianNoise(_Noise):
    """GaussianNoise(stddev): adds zero-mean normal noise of `stddev` while training."""
    _params = ("stddev",)

    def __init__(self, stddev, **kwargs):
        super().__init__(**kwargs)
        self.stddev = stddev

    def _noised(self, inputs):
        return inputs + K.random_normal(K.shape(inputs), mean=0.0, stddev=self.stddev, dtype=inputs.dtype)


@tf_export("keras.layers.GaussianDropout")
class GaussianDropout(_Noise):
    """GaussianDropout(rate): multiplies by normal noise of mean 1 and stddev sqrt(rate / (1 - rate))
    while training (identity unless 0 < rate < 1)."""
    _params = ("rate",)

    def __init__(self, rate, **kwargs):
        super().__init__(**kwargs)
        self.rate = rate

    def call(self, inputs, training=None):
        return super().call(inputs, training) if 0 < self.rate < 1 else inputs

    def _noised(self, inputs):
        stddev = float(np.sqrt(self.rate / (1.0 - self.rate)))
        return inputs * K.random_normal(K.shape(inputs), mean=1.0, stddev=stddev, dtype=inputs.dtype)


@tf_export("keras.layers.AlphaDropout")
class AlphaDropout(_Noise):
    """AlphaDropout(rate, noise_shape=None, seed=None): dropout for SELU networks: dropped units set
    to SELU's negative saturation, then an affine map that keeps the inputs' mean and variance."""
    _params = ("rate", "noise_shape", "seed")

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def call(self, inputs, training=None):
        return super().call(inputs, training) if 0 < self.rate < 1 else inputs

    def _noised(self, inputs):
        alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
        alpha_p = -alpha * scale
        rate = self.rate
        shape = self.noise_shape if self.noise_shape is not None else K.shape(inputs)
        kept = K.cast(K.greater_equal(K.random_uniform(shape, seed=self.seed, dtype=inputs.dtype), rate),
                      inputs.dtype)
        a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * rate
        return a * (inputs * kept + alpha_p * (1 - kept)) + b


class _SpatialDropout(Dropout):
    """Dropout of whole channels: one keep/drop draw per sample and channel, shared by every
    spatial position."""

    rank = 1

    def __init__(self, rate, data_format=None, **kwargs):
        super().__init__(rate, **kwargs)
        self.data_format = normalize_data_format(data_format) if self.rank > 1 else "channels_last"
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs, training=None):
        dyn = K.shape(inputs)
        ones = [1] * self.rank
        noise_shape = K.stack([dyn[0], dyn[1], *ones] if self.data_format == "channels_first" else
                              [dyn[0], *ones, dyn[self.rank + 1]])
        return K.in_train_phase(lambda: K.dropout(inputs, self.rate, noise_shape, seed=self.seed), inputs,
                                training=training)

    def get_config(self) -> dict:
        config = super().get_config()
        if self.rank > 1:
            config["data_format"] = self.data_format
        return config


@tf_export("keras.layers.SpatialDropout1D")
class SpatialDropout1D(_SpatialDropout):
    """SpatialDropout1D(rate): drops whole channels of [batch, steps, channels] inputs."""
    rank = 1

    def __init__(self, rate, **kwargs):
        super().__init__(rate, **kwargs)


@tf_export("keras.layers.SpatialDropout2D")
class SpatialDropout2D(_SpatialDropout):
    """SpatialDropout2D(rate, data_format=None): drops whole feature maps of 4-D inputs."""
    rank = 2


@tf_export("keras.layers.SpatialDropout3D")
class SpatialDropout3D(_SpatialDropout):
    """SpatialDropout3D(rate, data_format=None): drops whole feature maps of 5-D inputs."""
    rank = 3
