"""tf.random namespace (TF1.15)."""
from __future__ import annotations

from tensorweave.framework import dtypes as _dtypes
from tensorweave.ops.random import (  # noqa: F401
    get_seed, multinomial, random_crop as crop, random_gamma as gamma, random_normal as normal,
    random_poisson as poisson, random_shuffle as shuffle, random_uniform as uniform, set_random_seed,
    truncated_normal)


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """tf.random.categorical(logits, num_samples, dtype=None, seed=None, name=None)."""
    return multinomial(logits, num_samples, seed=seed, name=name or "categorical",
                       output_dtype=dtype or _dtypes.int64)
