"""tf.random namespace (TF1.15): the stateful and stateless random ops and the candidate
samplers."""
from __future__ import annotations

from tensorweave import _api
from tensorweave.framework import dtypes as _dtypes
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.random import multinomial

__getattr__, __dir__ = _api.lazy_attributes(__name__)   # the names tf.random gathers from elsewhere


@tf_export("random.categorical")
def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """tf.random.categorical(logits, num_samples, dtype=None, seed=None, name=None)."""
    return multinomial(logits, num_samples, seed=seed, name=name or "categorical",
                       output_dtype=dtype or _dtypes.int64)
