"""TF's version constants (tf.VERSION, tf.version.*): the TensorFlow API tensorweave implements,
and the GraphDef versions of the graphs it writes (Graph.as_graph_def's `versions`)."""
from __future__ import annotations

from tensorweave.framework.tf_export import tf_export

# The API TF 1 programs test for (`tf.VERSION.startswith("1.")`): TF 1.15's, which tensorweave follows.
VERSION = "1.15.0"
# TF's for a build from outside a git checkout.
GIT_VERSION = "unknown"
# The producer version of every GraphDef we write (TF 1.x graphs of this op set carry it); TF writes
# min_consumer only when it is not 0.
GRAPH_DEF_VERSION = 27
GRAPH_DEF_VERSION_MIN_CONSUMER = 0
GRAPH_DEF_VERSION_MIN_PRODUCER = 0
tf_export("VERSION", "version.VERSION")(VERSION)
tf_export("GIT_VERSION", "version.GIT_VERSION")(GIT_VERSION)
tf_export("GRAPH_DEF_VERSION", "version.GRAPH_DEF_VERSION")(GRAPH_DEF_VERSION)
tf_export("GRAPH_DEF_VERSION_MIN_CONSUMER", "version.GRAPH_DEF_VERSION_MIN_CONSUMER")(GRAPH_DEF_VERSION_MIN_CONSUMER)
tf_export("GRAPH_DEF_VERSION_MIN_PRODUCER", "version.GRAPH_DEF_VERSION_MIN_PRODUCER")(GRAPH_DEF_VERSION_MIN_PRODUCER)
