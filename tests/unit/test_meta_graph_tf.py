"""Meta graphs shared with TensorFlow 2.21 (fixtures/record_tf_meta_graphs.py): TF's `.meta` and
checkpoint of a trained MLP import in tensorweave, restore, compute TF's outputs and train
as TF did, with TF's collections; the `.meta` and checkpoint tensorweave wrote, which TF imported,
restored and ran, is what our writers write today, and gives us what it gave TF."""
from __future__ import annotations

import json
import os

import pytest

import tensorweave as tf
from fixtures.recorded import assert_same, collections, decode
from fixtures.tw_graphs import SAVED_MLP_COLLECTIONS, write_saved_mlp
from tensorweave.train.meta_graph import read_meta_graph_file

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_meta_graphs")
with open(os.path.join(HERE, "values.json")) as _f:
    RECORDED = json.load(_f)


def _restored(side: str):
    """(graph, session) with `side`'s (tf/ours) .meta imported and its checkpoint restored by the
    Saver import_meta_graph returns."""
    graph = tf.Graph()
    with graph.as_default():
        saver = tf.train.import_meta_graph(os.path.join(HERE, side, "model.ckpt.meta"))
    sess = tf.Session(graph=graph)
    saver.restore(sess, os.path.join(HERE, side, "model.ckpt"))
    return graph, sess


def _run(sess, side: str):
    rec = RECORDED[side]
    return sess.run(rec["fetches"], {k: decode(v) for k, v in rec["feeds"].items()})


@pytest.mark.parametrize("side", ["tf", "ours"])
def test_meta_graph_restores_and_computes_what_tensorflow_computed(side):
    graph, sess = _restored(side)
    with sess:
        assert_same(_run(sess, side), RECORDED[side]["outputs"])
        if side == "ours":      # what TF's Saver restored from our checkpoint, we restore too
            variables = graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
            assert_same(sess.run(variables), [RECORDED[side]["restored"][v.name] for v in variables])


def test_tensorflow_train_op_takes_the_step_tensorflow_took():
    graph, sess = _restored("tf")
    rec = RECORDED["tf"]
    with sess:
        (train_op,) = graph.get_collection(tf.GraphKeys.TRAIN_OP)
        sess.run(train_op, {k: decode(v) for k, v in rec["feeds"].items()})
        variables = graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
        assert_same(sess.run(variables), [rec["after_one_step"][v.name] for v in variables])


@pytest.mark.parametrize("side", ["tf", "ours"])
def test_collections_come_back_as_tensorflow_saw_them(side):
    graph, sess = _restored(side)
    sess.close()
    assert collections(graph) == RECORDED[side]["collections"]
    trainable = graph.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES)
    assert all(isinstance(v, tf.Variable) for v in trainable)
    assert set(trainable) <= set(graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES))   # one Variable each
    assert graph.get_collection(tf.GraphKeys.GLOBAL_STEP)[0] in graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)


def _differences(fresh, committed) -> list:
    """What differs between two MetaGraphDefs: nodes by name, collections by key, the SaverDef."""
    diff = []
    a, b = ({n.name: n for n in m.graph_def.node} for m in (fresh, committed))
    diff += [f"node {name}: now {a.get(name)} recorded {b.get(name)}" for name in sorted(set(a) | set(b))
             if a.get(name) != b.get(name)]
    diff += [f"collection {key}" for key in sorted(set(fresh.collection_def) | set(committed.collection_def))
             if fresh.collection_def.get(key) != committed.collection_def.get(key)]
    for field in ("saver_def", "meta_info_def"):
        if getattr(fresh, field) != getattr(committed, field):
            diff.append(f"{field}: now {getattr(fresh, field)} recorded {getattr(committed, field)}")
    return diff


def test_the_meta_graph_tensorflow_imported_is_what_we_write_today(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORWEAVE_CHECKPOINT_FORMAT", "tensorflow")
    write_saved_mlp(str(tmp_path))
    ours = os.path.join(HERE, "ours")
    for name in ("model.ckpt.meta", "model.ckpt.index", "model.ckpt.data-00000-of-00001"):
        fresh, committed = (open(os.path.join(d, name), "rb").read() for d in (tmp_path, ours))
        if fresh != committed and name.endswith(".meta"):
            diff = _differences(*(read_meta_graph_file(os.path.join(d, name)) for d in (tmp_path, ours)))
            pytest.fail("our meta graph changed since TF imported it; run record_tf_meta_graphs.py again:\n"
                        + "\n".join(diff[:10]))
        assert fresh == committed, f"{name} changed since TF restored it; run record_tf_meta_graphs.py again"
    meta = read_meta_graph_file(os.path.join(ours, "model.ckpt.meta"))
    assert list(meta.collection_def["sizes"].int64_list.value) == SAVED_MLP_COLLECTIONS["sizes"]
    assert list(meta.collection_def["names"].bytes_list.value) == SAVED_MLP_COLLECTIONS["names"]
    # TF's AssignVariableOp, AssignAddVariableOp, AssignSubVariableOp have no use_locking attribute
    assert not [n.name for n in meta.graph_def.node if "use_locking" in n.attr]
