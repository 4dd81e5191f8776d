"""tf.data.experimental: the constants TF1 programs pass to tf.data."""
from __future__ import annotations

from tensorweave.ops.data.dataset import AUTOTUNE  # noqa: F401
