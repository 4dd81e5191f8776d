"""tf.summary: summary ops (each outputs a serialized Summary protocol buffer), merging, and the
event-file writers TensorBoard reads."""
from __future__ import annotations

from tensorweave.summary.summary import *  # noqa: F401,F403
from tensorweave.summary.writer import *  # noqa: F401,F403
