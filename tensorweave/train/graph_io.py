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
    chunks = graph_text_chunks(proto) if as_text else [proto.SerializeToString()]

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.writelines(chunks)
    write_atomically(path, write)
    return path


# Each byte's text-format escape (protobuf's CEscape: octal for the unprintable), padded to 4 bytes
# with NULs, which no escape holds
_ESCAPE_WORDS = np.frombuffer(b"".join(text_encoding.CEscape(bytes([b]), False).encode("ascii").ljust(4, b"\0")
                                       for b in range(256)), "<u4")
_LARGE_CONTENT = 1 << 16


def escaped_bytes(data: bytes) -> bytes:
    """text_encoding.CEscape(data, False), as a text-format bytes field is written, in numpy and
    as ASCII bytes: protobuf's loops over the bytes in Python (~50 ns a byte: 0.3 s for a
    dataset's 6 MB constant, which graph.pbtxt holds)."""
    return _ESCAPE_WORDS[np.frombuffer(data, np.uint8)].tobytes().translate(None, b"\0")


def _tensors(graph_def) -> list:
    """The TensorProto attribute values of a GraphDef's nodes and of its functions' nodes, in order."""
    nodes = list(graph_def.node) + [node for function in graph_def.library.function for node in function.node_def]
    return [attr.tensor for node in nodes for attr in node.attr.values() if attr.HasField("tensor")]


def graph_text_chunks(proto) -> list:
    """text_format.MessageToString(proto) as UTF-8 bytes, in pieces to be written one after
    another: a GraphDef's large tensor contents are printed as markers, and the file gets their
    escaped_bytes in the markers' places (no copy of the whole text: for a dataset's constant
    it is ~3 bytes a byte, 18 MB for 6 MB, which a chief writes before its first step)."""
    large = [] if proto.DESCRIPTOR.name != "GraphDef" else \
        [(i, t.tensor_content) for i, t in enumerate(_tensors(proto)) if len(t.tensor_content) >= _LARGE_CONTENT]
    if not large:
        return [text_format.MessageToString(proto).encode()]
    copy = type(proto)()
    copy.CopyFrom(proto)
    tensors = _tensors(copy)
    for i, _ in large:
        tensors[i].tensor_content = f"tensorweave-content-{i}".encode()
    text = text_format.MessageToString(copy).encode()
    marked = sorted((text.index(f'"tensorweave-content-{i}"'.encode()), i, content) for i, content in large)
    chunks, done = [], 0
    for at, i, content in marked:
        chunks += [text[done:at], b'"', escaped_bytes(content), b'"']
        done = at + len(f'"tensorweave-content-{i}"')
    chunks.append(text[done:])
    return chunks
