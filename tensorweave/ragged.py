"""tf.ragged namespace (TF 1.15 names): RaggedTensorValue and the ops of tensorweave/ops/ragged/."""
from __future__ import annotations

from tensorweave.ops.ragged.factory import (  # noqa: F401
    constant, constant_value, map_flat_values, placeholder, ragged_range as range)
from tensorweave.ops.ragged.ragged_tensor import (  # noqa: F401
    RaggedTensorValue, row_splits_to_segment_ids, segment_ids_to_row_splits)

__all__ = [n for n in dir() if not n.startswith("_") and n != "annotations"]
