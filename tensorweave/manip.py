"""tf.manip namespace (TF1.15): array manipulation names also found at the top level."""
from __future__ import annotations

from tensorweave.ops.array.core import reshape  # noqa: F401
from tensorweave.ops.array.gather import scatter_nd  # noqa: F401
from tensorweave.ops.array.pad import reverse, roll, tile  # noqa: F401
from tensorweave.ops.array.space import batch_to_space_nd, space_to_batch_nd  # noqa: F401
from tensorweave.ops.math.array_composites import gather_nd  # noqa: F401

__all__ = ["batch_to_space_nd", "gather_nd", "reshape", "reverse", "roll", "scatter_nd", "space_to_batch_nd", "tile"]
