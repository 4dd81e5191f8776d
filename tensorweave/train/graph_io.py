"""tf.train.write_graph: a graph as TensorFlow's GraphDef protocol buffer file (text or binary),
the file TensorBoard and TF's tools read (graph.pbtxt beside checkpoints)."""
from __future__ import annotations

import os

import numpy as np
from google.protobuf import text_encoding, text_format

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
    data = graph_text(proto).encode() if as_text else proto.SerializeToString()

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(data)
    write_atomically(path, write)
    return path


# Each byte's text-format escape (protobuf's CEscape: octal for the unprintable), padded to 4 bytes
# with NULs, which no escape holds
_ESCAPE_WORDS = np.frombuffer(b"".join(text_encoding.CEscape(bytes([b]), False).encode("ascii").ljust(4, b"\0")
                                       for b in range(256)), "<u4")
_LARGE_CONTENT = 1 << 16


def escaped_bytes(data: bytes) -> str:
    """text_encoding.CEscape(data, False), as a text-format bytes field is written, in numpy:
    protobuf's loops over the bytes in Python (~50 ns a byte: 0.3 s for a dataset's 6 MB
    constant, which graph.pbtxt holds)."""
    return _ESCAPE_WORDS[np.frombuffer(data, np.uint8)].tobytes().translate(None, b"\0").decode("ascii")


def _tensors(graph_def) -> list:
    """The TensorProto attribute values of a GraphDef's nodes and of its functions' nodes, in order."""
    nodes = list(graph_def.node) + [node for function in graph_def.library.function for node in function.node_def]
    return [attr.tensor for node in nodes for attr in node.attr.values() if attr.HasField("tensor")]


def graph_text(proto) -> str:
    """text_format.MessageToString(proto), the same text: a GraphDef's large tensor contents are
    printed as markers, then replaced by their escaped_bytes."""
    if proto.DESCRIPTOR.name != "GraphDef":
        return text_format.MessageToString(proto)
    large = [(i, t.tensor_content) for i, t in enumerate(_tensors(proto)) if len(t.tensor_content) >= _LARGE_CONTENT]
    if not large:
        return text_format.MessageToString(proto)
    copy = type(proto)()
    copy.CopyFrom(proto)
    tensors = _tensors(copy)
    for i, _ in large:
        tensors[i].tensor_content = f"tensorweave-content-{i}".encode()
    text = text_format.MessageToString(copy)
    for i, content in large:
        text = text.replace(f'"tensorweave-content-{i}"', '"' + escaped_bytes(content) + '"', 1)
    return text
