"""`tf.distribute`: TensorFlow's public namespace of that name; here its cluster resolvers
(`tf.distribute.cluster_resolver`), which say where a cluster's tasks are.

Not the distributed runtime: servers, the worker service, the master and the transport are
`tensorweave.distributed`.
"""
from __future__ import annotations

from tensorweave.distribute import cluster_resolver  # noqa: F401
