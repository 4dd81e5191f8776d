"""Graph.as_graph_def(): TF's GraphDef proto of our graph (ops/graph_export.py). Graphs copy with
tf.import_graph_def(g.as_graph_def()) and compute what TensorFlow 2.21 computed from the same
GraphDefs (fixtures/record_tf_import_of_ours.py); add_shapes, from_version, Session.graph_def,
tf.train.write_graph text and binary."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from google.protobuf import text_format

import tensorweave as tf
from fixtures.recorded import assert_same, decode
from fixtures.tw_graphs import BUILDERS, build_attrs, build_cnn, build_cond, build_mlp
from tensorweave.framework.graph_def import graph_to_graph_def
from tensorweave.framework.op_def_registry import OP_DEFS
from tensorweave.ops.registry import load_all
from tensorweave.ops.attr_value_proto import shape_proto
from tensorweave.ops.tf_op_defs import TF_OP_SIGNATURES

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_import_of_ours")
with open(os.path.join(HERE, "values.json")) as _f:
    RECORDED = json.load(_f)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_graph(graph, feeds, fetches, init):
    with tf.Session(graph=graph) as sess:
        if init:
            sess.run(init)
        return sess.run(fetches, feeds)


def copy_of(graph):
    with tf.Graph().as_default() as copy:
        tf.import_graph_def(graph.as_graph_def(), name="")
    return copy


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_tensorflow_imported_our_graph_def_and_computed_the_same(name):
    rec = RECORDED["graphs"][name]
    graph, feeds, fetches, init = BUILDERS[name]()
    # the GraphDef TF imported holds the nodes we still write (re-record if this changes)
    graph_def = graph.as_graph_def()
    assert [[n.name, n.op] for n in graph_def.node] == [[n, op] for n, op, _ in rec["nodes"]]
    assert sorted(f.signature.name for f in graph_def.library.function) == rec["functions"]
    assert fetches == rec["fetches"] and init == rec["init"]
    for k, v in rec["feeds"].items():
        assert decode(v).tolist() == np.asarray(feeds[k]).tolist()
    assert_same(run_graph(graph, feeds, fetches, init), rec["outputs"])
    # tf.import_graph_def(g.as_graph_def()), TF1's graph copy, computes the same
    assert_same(run_graph(copy_of(graph), feeds, fetches, init), rec["outputs"])


def test_round_trip_keeps_every_node_field():
    graph = build_attrs()[0]
    original = graph.as_graph_def()
    copy = copy_of(graph)
    assert copy.as_graph_def() == original
    nodes = {n.name: n for n in original.node}
    assert nodes["suffix"].device == copy.get_operation_by_name("suffix").device != ""
    assert list(nodes["tail"].attr["_class"].list.s) == [b"loc:@total"]
    groups = copy.get_operation_by_name("tail").colocation_groups()
    assert [g.decode() if isinstance(g, bytes) else g for g in groups] == ["loc:@total"]
    assert nodes["total"].input[-1] == "^joined"
    assert [c.name for c in copy.get_operation_by_name("total").control_inputs] == ["joined"]
    assert nodes["n"].attr["dtype"].type == tf.int64.as_datatype_enum
    assert nodes["words"].attr["dtype"].type == tf.string.as_datatype_enum
    assert nodes["joined"].attr["N"].i == 2           # derived from its inputs, as TF writes it
    assert nodes["row"].attr["shrink_axis_mask"].i == 1
    assert [d.size for d in nodes["words"].attr["shape"].shape.dim] == [-1]


def test_every_node_has_the_type_attributes_tensorflow_requires():
    gd = build_mlp()[0].as_graph_def()
    nodes = {n.name: n for n in gd.node}
    assert nodes["h"].attr["T"].type == tf.float32.as_datatype_enum
    assert nodes["label"].attr["T"].type == tf.float32.as_datatype_enum
    assert nodes["label"].attr["output_type"].type == tf.int64.as_datatype_enum
    assert nodes["label"].attr["Tidx"].type == tf.int32.as_datatype_enum


def test_add_shapes_adds_output_shapes_of_ops_with_outputs():
    graph = build_cnn()[0]
    plain, shaped = graph.as_graph_def(), graph.as_graph_def(add_shapes=True)
    assert not any("_output_shapes" in n.attr for n in plain.node)
    for node in shaped.node:
        op = graph.get_operation_by_name(node.name)
        if op.outputs:
            assert list(node.attr["_output_shapes"].list.shape) == [shape_proto(t.shape) for t in op.outputs]
        else:
            assert "_output_shapes" not in node.attr
    pool = next(n for n in shaped.node if n.name == "pool")
    assert [d.size for d in pool.attr["_output_shapes"].list.shape[0].dim] == [-1, 4, 4, 4]
    assert "_output_shapes" not in next(n for n in shaped.node if n.name == "init").attr
    # the rest of each node is the same
    for a, b in zip(plain.node, shaped.node):
        if "_output_shapes" in b.attr:
            del b.attr["_output_shapes"]
        assert a == b


def test_from_version_holds_only_ops_added_since():
    with tf.Graph().as_default() as g:
        a = tf.constant(1.0, name="a")
        version = g.version
        b = tf.identity(a, name="b")
        tf.add(b, 1.0, name="c")
    assert [n.name for n in g.as_graph_def(from_version=version).node] == ["b", "c/y", "c"]
    assert [n.name for n in g.as_graph_def(from_version=0).node] == ["a", "b", "c/y", "c"]
    assert len(g.as_graph_def(from_version=g.version).node) == 0
    assert g.as_graph_def(from_version=version).versions.producer == 27


def test_session_graph_def_is_as_graph_def_with_shapes_when_config_infers_them():
    graph, feeds, fetches, init = build_mlp()
    with tf.Session(graph=graph) as sess:
        assert isinstance(sess.graph_def, tf.GraphDef)
        assert sess.graph_def == graph.as_graph_def()
    config = tf.ConfigProto(graph_options=tf.GraphOptions(infer_shapes=True))
    with tf.Session(graph=graph, config=config) as sess:
        assert sess.graph_def == graph.as_graph_def(add_shapes=True)


@pytest.mark.parametrize("as_text", [True, False])
def test_write_graph_of_session_graph_def_reads_back_as_tf_graph_def(tmp_path, as_text):
    graph, feeds, fetches, init = build_mlp()
    with tf.Session(graph=graph) as sess:
        path = tf.train.write_graph(sess.graph_def, str(tmp_path), "g.pb" + ("txt" if as_text else ""),
                                    as_text=as_text)
        expected = sess.graph_def
    read = tf.GraphDef()
    with open(path, "rb") as f:
        if as_text:
            text_format.Parse(f.read().decode(), read)
        else:
            read.ParseFromString(f.read())
    assert read == expected
    # a Graph writes the same
    path2 = tf.train.write_graph(graph, str(tmp_path), "g2", as_text=as_text)
    with open(path, "rb") as f1, open(path2, "rb") as f2:
        assert f1.read() == f2.read()
    with tf.Graph().as_default() as copy:
        tf.import_graph_def(read, name="")
    assert_same(run_graph(copy, feeds, fetches, init), RECORDED["graphs"]["mlp"]["outputs"])


def test_write_graph_text_of_large_constants_is_protobufs_text(tmp_path):
    # graph.pbtxt of a graph holding a dataset's array (its escapes are computed in numpy, not by
    # protobuf's per-byte loop): the very text protobuf's text_format writes, every byte value
    # among the contents, and a function's node as well as the graph's
    every_byte = np.tile(np.arange(256, dtype=np.uint8), 300)   # (over 64 KB: escaped in numpy)
    with tf.Graph().as_default() as graph:
        tf.constant(every_byte, name="every_byte")
        tf.constant(np.random.RandomState(0).rand(200, 100).astype(np.float32), name="floats")
        tf.constant(np.arange(3.0), name="small")
        reversed_bytes = every_byte[::-1].astype(np.int32)
        tf.cond(tf.placeholder(tf.bool, []), lambda: tf.constant(reversed_bytes) + 1,
                lambda: tf.zeros(reversed_bytes.shape, tf.int32))
    graph_def = graph.as_graph_def(add_shapes=True)
    assert graph_def.library.function
    expected = text_format.MessageToString(graph_def)
    path = tf.train.write_graph(graph_def, str(tmp_path), "graph.pbtxt")
    with open(path, "rb") as f:
        same = f.read().decode() == expected   # (not in the assert: pytest's diff of 1 MB of text takes minutes)
    assert same, "graph.pbtxt differs from text_format.MessageToString's text"
    same = text_format.MessageToString(graph_def) == expected
    assert same, "write_graph changed the GraphDef it wrote"


def test_empty_graph_before_the_op_library_loads():
    code = ("import sys, tensorweave as tf; gd = tf.Graph().as_graph_def(); "
            "print(type(gd).__name__, gd.versions.producer, len(gd.node), 'tensorweave.ops' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["GraphDef", "27", "0", "False"]
    assert tf.Graph().as_graph_def() == tf.GraphDef(versions={"producer": 27})


def test_cond_branches_are_function_defs_of_the_library():
    graph = build_cond()[0]
    gd = graph.as_graph_def()
    library = {f.signature.name: f for f in gd.library.function}
    outer = next(n for n in gd.node if n.op == "If")
    then_name, else_name = outer.attr["then_branch"].func.name, outer.attr["else_branch"].func.name
    assert len(library) == 4 and {then_name, else_name} <= set(library)
    # TF's If: Tcond, Tin (the branches' arguments, in input order), Tout
    assert outer.attr["Tcond"].type == tf.bool.as_datatype_enum
    assert list(outer.attr["Tin"].list.type) == [t.dtype.as_datatype_enum
                                                 for t in graph.get_operation_by_name("y").inputs[1:]]
    assert list(outer.attr["Tout"].list.type) == [tf.float32.as_datatype_enum]
    for name in (then_name, else_name):
        f = library[name]
        assert [a.type for a in f.signature.input_arg] == list(outer.attr["Tin"].list.type)
        assert [a.type for a in f.signature.output_arg] == [tf.float32.as_datatype_enum]
        assert set(f.ret) == {"output_0"}
        args = {a.name for a in f.signature.input_arg}
        nodes = {n.name for n in f.node_def}
        for n in f.node_def:                  # TF's function input names: "arg", "node:out_arg:i", "^node"
            for inp in n.input:
                if inp.startswith("^"):
                    assert inp[1:] in nodes
                elif ":" in inp:
                    node, out_arg, index = inp.split(":")
                    assert node in nodes and out_arg and index.isdigit()
                else:
                    assert inp in args
    inner = next(n for n in library[then_name].node_def if n.op == "If")
    assert inner.attr["then_branch"].func.name in library
    # the runtime's plain GraphDef holds the same bodies
    assert set(graph_to_graph_def(graph).library) == set(library)


def test_file_writer_takes_session_graph_def(tmp_path):
    graph = build_mlp()[0]
    with tf.Session(graph=graph) as sess:
        writer = tf.summary.FileWriter(str(tmp_path), graph_def=sess.graph_def)
        writer.close()
        expected = sess.graph_def
    events = [e for f in os.listdir(tmp_path) for e in tf.train.summary_iterator(os.path.join(tmp_path, f))]
    written = [e.graph_def for e in events if e.graph_def]
    assert len(written) == 1
    read = tf.GraphDef()
    read.ParseFromString(written[0])
    assert read == expected


def test_op_signature_table_names_registered_ops():
    # tools/record_tf_op_defs.py writes only op types tensorweave registers; regenerate it
    # after registering ops, or their GraphDef nodes lack the attributes TF derives
    load_all()
    assert set(TF_OP_SIGNATURES) <= set(OP_DEFS)
    assert {"MatMul", "Conv2D", "If", "ConcatV2", "StringJoin"} <= set(TF_OP_SIGNATURES)
    for inputs, outputs in TF_OP_SIGNATURES.values():
        assert all(":" in arg for arg in inputs + outputs)


def test_finalized_graphs_graph_def_is_a_fresh_copy_that_follows_changes():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(1.0, name="a")
        b = tf.identity(a, name="b")
    g.finalize()
    first = g.as_graph_def()
    first.node[0].name = "changed by the caller"
    del first.node[1:]
    assert [n.name for n in g.as_graph_def().node] == ["a", "b"]
    assert "_output_shapes" in g.as_graph_def(add_shapes=True).node[1].attr   # (each form kept apart)
    assert "_output_shapes" not in g.as_graph_def().node[1].attr
    b.op._add_control_input(a.op)   # (an op changed in a finalized graph, as graph editors do)
    assert list(g.as_graph_def().node[1].input) == ["a", "^a"]
