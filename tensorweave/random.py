"""tf.random namespace (TF1.15): the stateful and stateless random ops and the candidate
samplers."""
from __future__ import annotations

from tensorweave.framework import dtypes as _dtypes
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.nn.candidate_sampling import (  # noqa: F401
    all_candidate_sampler, fixed_unigram_candidate_sampler, learned_unigram_candidate_sampler,
    log_uniform_candidate_sampler, uniform_candidate_sampler)
from tensorweave.ops.random import (  # noqa: F401
    get_seed, multinomial, random_crop as crop, random_gamma as gamma, random_normal as normal,
    random_poisson as poisson, random_shuffle as shuffle, random_uniform as uniform, set_random_seed,
    stateless_categorical, stateless_multinomial, stateless_random_normal as stateless_normal,
    stateless_random_uniform as stateless_uniform, stateless_truncated_normal, truncated_normal)


@tf_export("random.categorical")
def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """tf.random.categorical(logits, num_samples, dtype=None, seed=None, name=None)."""
    return multinomial(logits, num_samples, seed=seed, name=name or "categorical",
                       output_dtype=dtype or _dtypes.int64)
