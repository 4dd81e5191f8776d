"""tf.train.write_graph: a graph as TensorFlow's GraphDef protocol buffer file (text or binary),
the file TensorBoard and TF's tools read (graph.pbtxt beside checkpoints)."""
from __future__ import annotations

import os

from google.protobuf import text_format

from tensorweave.framework.graph import Graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.checkpoint.bundle import write_atomically


@tf_export("train.write_graph", "io.write_graph")
def write_graph(graph_or_graph_def, logdir, name, as_text=True) -> str:
    """tf.train.write_graph(graph_or_graph_def, logdir, name, as_text=True): writes the graph
    (a Graph, or a GraphDef protocol buffer) to logdir/name, atomically; returns the path."""
    proto = graph_or_graph_def.as_graph_def() if isinstance(graph_or_graph_def, Graph) else graph_or_graph_def
    if not hasattr(proto, "SerializeToString"):
        raise TypeError(f"write_graph needs a tf.Graph or a GraphDef protocol buffer, got {type(graph_or_graph_def)}")
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    data = text_format.MessageToString(proto).encode() if as_text else proto.SerializeToString()

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(data)
    write_atomically(path, write)
    return path
