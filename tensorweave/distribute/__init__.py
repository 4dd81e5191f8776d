"""`tf.distribute`: TensorFlow's public namespace of that name; here its cluster resolvers
(`tf.distribute.cluster_resolver`), which say where a cluster's tasks are.

Not the distributed runtime: servers, the worker service, the master and the transport are
`tensorweave.distributed`.
"""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
