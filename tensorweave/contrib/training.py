"""tf.contrib.training: the ps load-balancing strategy for replica_device_setter."""
from __future__ import annotations

from tensorweave.train.device_setter import GreedyLoadBalancingStrategy, byte_size_load_fn  # noqa: F401
