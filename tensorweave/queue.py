"""tf.queue namespace (TF 1.15): the queue classes under their tf.queue names."""
from __future__ import annotations

from tensorweave.ops.data_flow.queues import (  # noqa: F401
    FIFOQueue, PaddingFIFOQueue, PriorityQueue, QueueBase, RandomShuffleQueue)
