"""Graphs with ops TensorFlow lacks, which Graph.as_graph_def writes as TF's ops (the tf_lowering
registered beside each op, ops/registry.py): TensorFlow 2.21 imported and ran them
(fixtures/record_tf_training_of_ours.py), training graphs too (an MLP with a partitioned
embedding, a CNN, an MLP through a tf.cond whose gradient's branches hold such ops: the same
GradientDescent and Adam steps, a sharded Saver's save and restore), and tensorweave computes the
same from its graphs and from the GraphDefs TF ran (read back: TF's ops we register); TF's loader
took our SavedModels of whole training graphs and trained on. Every op type TF lacks is written
as TF's ops."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.recorded import assert_same, decode
from fixtures.tw_graphs import PRINTED, SAVED_TRAINING, TRAINING_BUILDERS, build_lowered, export_trained
from tensorweave.framework.op_def_registry import OP_DEFS
from tensorweave.ops.math.reduction import reduced_shape
from tensorweave.ops.registry import TF_LOWERINGS, load_all
from tensorweave.ops.tf_op_defs import TF_OP_SIGNATURES

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_import_of_ours")
RECORDED = {}
for _file in ("values.json", "training.json"):
    with open(os.path.join(HERE, _file)) as _f:
        RECORDED[_file] = json.load(_f)

def copy_of(graph):
    """tf.import_graph_def(graph.as_graph_def()) into a new graph."""
    with tf.Graph().as_default() as copy:
        tf.import_graph_def(graph.as_graph_def(), name="")
    return copy


def run_all(graph, feeds, runs, checkpoint, folder) -> tuple:
    """Each run's outputs (None for an op), the Saver's prefix (if any) fed as FOLDER/model, and
    the files the save wrote there."""
    if checkpoint:
        feeds = {**feeds, checkpoint: os.path.join(folder, "model")}
    with tf.Session(graph=graph) as sess:
        outputs = [sess.run(names, feeds) for names in runs]
    return outputs, sorted(os.listdir(folder))


@pytest.mark.parametrize("read_back", [False, True])
@pytest.mark.parametrize("name", sorted(TRAINING_BUILDERS))
def test_tensorflow_ran_our_graph_with_ops_it_lacks_and_computed_the_same(name, read_back, tmp_path):
    # the training graphs: TF reported the uninitialized variables, took a GradientDescent and an
    # Adam step from the same values, saved with our sharded Saver and restored: the same loss,
    # variables and files
    rec = RECORDED["training.json"]["graphs"][name]
    graph, feeds, runs, checkpoint = TRAINING_BUILDERS[name]()
    graph_def = graph.as_graph_def()
    assert [[n.name, n.op] for n in graph_def.node] == rec["nodes"]
    function_nodes = [n for f in graph_def.library.function for n in f.node_def]
    assert {n.op for n in list(graph_def.node) + function_nodes} <= set(TF_OP_SIGNATURES)
    assert runs == rec["runs"] and checkpoint == rec["checkpoint"]
    for k, v in rec["feeds"].items():
        assert decode(v).tolist() == np.asarray(feeds[k]).tolist()
    if read_back:       # the GraphDef TF ran, imported by us
        graph = copy_of(graph)
    outputs, files = run_all(graph, feeds, runs, checkpoint, str(tmp_path))
    assert files == rec["checkpoint_files"]
    assert_runs_gave(outputs, rec["outputs"])


def assert_runs_gave(outputs, recorded) -> None:
    for got, want in zip(outputs, recorded, strict=True):
        assert [g is None for g in got] == [w is None for w in want]
        assert_same([g for g in got if g is not None], [w for w in want if w is not None])


@pytest.mark.parametrize("name", SAVED_TRAINING)
def test_tensorflow_loaded_our_saved_model_of_a_training_graph_and_trained_on(name, tmp_path):
    # the TF 1 pattern: trained, then add_meta_graph_and_variables of the whole graph; TF's loader
    # took it (no "Op type not registered") and took an Adam step as our loader's session does
    rec = RECORDED["training.json"]["saved_models"][name]
    feeds, runs = export_trained(name, str(tmp_path / "export"))
    assert runs == rec["runs"]
    with tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
        tf.saved_model.loader.load(sess, ["train"], str(tmp_path / "export"))
        assert_runs_gave([sess.run(names, feeds) for names in runs], rec["outputs"])


def test_tf_print_prints_what_tensorflow_formatted(capfd):
    # TF ran tf.print as StringFormat + PrintV2 of one string: we print that string, from our
    # graph and from the GraphDef TF ran
    rec = RECORDED["training.json"]["graphs"]["lowered"]
    graph, feeds, runs, _ = build_lowered()
    text = decode(rec["printed"]).tolist()
    with tf.Session(graph=graph) as sess:
        sess.run("after_print:0", feeds)
    with tf.Session(graph=copy_of(graph)) as sess:
        assert sess.run(PRINTED, feeds) == text
        sess.run("after_print:0", feeds)
    assert capfd.readouterr().err == (text.decode() + "\n") * 2


def test_tensorflow_has_every_op_type_of_the_graph_defs_it_imported():
    # every node TF imported from our GraphDefs is of a type whose TF OpDef ops/tf_op_defs.py holds
    # (so one we register: the GraphDef reads back)
    imported = {node[1] for record in RECORDED.values() for rec in record["graphs"].values() for node in rec["nodes"]}
    assert imported - set(TF_OP_SIGNATURES) == set()
    assert {"BroadcastGradientArgs", "ShardedFilename", "ResourceScatterAdd", "UnicodeEncode"} <= imported


def test_every_op_type_tensorflow_lacks_is_written_as_tensorflows_ops():
    # an op registered without a TF OpDef (ops/tf_op_defs.py) needs a tf_lowering, or TF refuses
    # every GraphDef holding it ("Op type not registered")
    load_all()
    assert set(OP_DEFS) - set(TF_OP_SIGNATURES) - set(TF_LOWERINGS) == set()


def test_list_files_written_as_tensorflows_ops_reads_back(tmp_path):
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("")
    graph = tf.Graph()
    with graph.as_default():
        patterns = tf.placeholder(tf.string, [None], name="patterns")
        tf.data.Dataset.list_files(patterns, shuffle=False)
    assert "NonEmptyMatchingFiles" not in {n.op for n in graph.as_graph_def().node}
    with tf.Session(graph=copy_of(graph)) as sess:
        fetch = "list_files/matching_files:0"
        found = sess.run(fetch, {"patterns:0": [str(tmp_path / "b*"), str(tmp_path / "a*")]})
        assert found.tolist() == [str(tmp_path / n).encode() for n in ("a.txt", "b.txt")]
        with pytest.raises(tf.errors.InvalidArgumentError, match=f"No files matched pattern: {tmp_path}/c\\*, x"):
            sess.run(fetch, {"patterns:0": [str(tmp_path / "c*"), "x"]})


def test_an_op_tensorflow_lacks_keeps_its_name_device_and_control_inputs():
    graph = tf.Graph()
    with graph.as_default():
        input_shape = tf.placeholder(tf.int32, [None], name="input_shape")
        axes = tf.constant([1, -1], name="axes")
        gate = tf.no_op(name="gate")
        with tf.device("/cpu:0"), tf.control_dependencies([gate]):
            reduced = reduced_shape(input_shape, axes)
    assert reduced.op.type == "ReducedShape" and reduced.op.name == "reduced_shape"
    nodes = graph.as_graph_def(add_shapes=True).node
    lowered = [n for n in nodes if n.name.startswith("reduced_shape")]
    assert lowered[-1].name == "reduced_shape" and lowered[-1].op == "DynamicStitch"
    assert all(n.name.startswith("reduced_shape/") for n in lowered[:-1])
    assert all(n.device == "/device:CPU:0" and n.input[-1] == "^gate" for n in lowered)
    assert [n.name for n in lowered if "_output_shapes" in n.attr] == ["reduced_shape"]
    with tf.Session(graph=copy_of(graph)) as sess:
        assert sess.run("reduced_shape:0", {"input_shape:0": [3, 4, 5]}).tolist() == [3, 1, 1]
